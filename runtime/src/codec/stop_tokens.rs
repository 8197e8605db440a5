//! STOP_TOKENS: per stop gate, the tokens that run past a call's end from
//! it, which a matcher of an entry that stops after its first call clears
//! from the stored mask. Listed, not found when serving: at a gate inside
//! a JSON value (ReAct's call ends with its arguments' `}`) the stored
//! mask holds most of the vocabulary, and walking each of its tokens took
//! milliseconds; the list holds the few (`"}\n`, `}\n\n` ...) that run past.
//! Gates share lists (at 10,000 tools in ReAct with Llama-3.2: 89,648
//! gates, 13 distinct lists of up to 19 tokens; 5.8 MB stored per gate,
//! 0.7 MB shared). Empty when no state is a stop gate.
//!
//! Words, little-endian:
//!
//! | words | what |
//! |---|---|
//! | 2 | `n`, the number of stop gates; `m`, the number of lists |
//! | `n` | the gates' states, strictly ascending |
//! | `n` | per gate its list (below `m`) |
//! | `m + 1` | per list the offset of its first token below (the first 0, the last the tokens' length) |
//! | tokens | per list its token ids, strictly ascending |

use super::header::Counts;
use super::layout::sec;
use super::Source;
use crate::error::Error;

/// The STOP_TOKENS section, borrowed; `words` empty when there is none.
#[derive(Clone, Copy, Debug, Default)]
pub struct StopTokens<'a> {
    /// The section's words.
    pub words: &'a [u32],
}

impl<'a> StopTokens<'a> {
    /// Reads and checks the section (absent: empty): whole parts, the
    /// states ascending and below the state count, each gate's list below
    /// the list count, the offsets ascending from 0 to the tokens' length,
    /// each list's tokens ascending and below the token count.
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let words = src.words(sec::STOP_TOKENS, None)?;
        let t = StopTokens { words };
        if !words.is_empty() {
            t.check(c)
                .map_err(|why| Error::section(sec::STOP_TOKENS, why))?;
        }
        Ok(t)
    }

    fn check(&self, c: &Counts) -> Result<(), &'static str> {
        let (states, lists, offsets, tokens) =
            self.parts().ok_or("is shorter than its counts say")?;
        if states.windows(2).any(|w| w[0] >= w[1]) {
            return Err("lists gate states out of order");
        }
        if lists.iter().any(|&l| l as usize + 1 >= offsets.len()) {
            return Err("names a list beyond the list count");
        }
        if states.last().is_some_and(|&s| s as usize >= c.n_states) {
            return Err("lists a state beyond the state count");
        }
        if offsets.first() != Some(&0)
            || offsets.last().map(|&o| o as usize) != Some(tokens.len())
            || offsets.windows(2).any(|w| w[0] > w[1])
        {
            return Err("has token offsets out of order or not ending at the list's end");
        }
        for w in offsets.windows(2) {
            let list = &tokens[w[0] as usize..w[1] as usize];
            if list.windows(2).any(|p| p[0] >= p[1]) {
                return Err("holds a list's tokens out of order");
            }
            if list.last().is_some_and(|&t| t >= c.n_tokens) {
                return Err("lists a token beyond the token count");
            }
        }
        Ok(())
    }

    /// The gates' states, their lists, the lists' offsets and the tokens.
    #[allow(clippy::type_complexity)]
    fn parts(&self) -> Option<(&'a [u32], &'a [u32], &'a [u32], &'a [u32])> {
        let w = self.words;
        let (n, m) = (*w.first()? as usize, *w.get(1)? as usize);
        let states = w.get(2..2 + n)?;
        let lists = w.get(2 + n..2 + 2 * n)?;
        let offsets = w.get(2 + 2 * n..3 + 2 * n + m)?;
        let tokens = w.get(3 + 2 * n + m..)?;
        Some((states, lists, offsets, tokens))
    }

    /// The tokens that run past a call's end from `state` (none when it is
    /// not a stop gate).
    #[inline]
    pub fn of(&self, state: u32) -> &'a [u32] {
        let Some((states, lists, offsets, tokens)) = self.parts() else {
            return &[];
        };
        let Ok(i) = states.binary_search(&state) else {
            return &[];
        };
        // The loader checked the list ids and the offsets.
        let l = lists[i] as usize;
        match (offsets.get(l), offsets.get(l + 1)) {
            (Some(&a), Some(&e)) => tokens.get(a as usize..e as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    /// Whether `token` runs past a call's end from `state`.
    #[inline]
    pub fn runs_past(&self, state: u32, token: u32) -> bool {
        self.of(state).binary_search(&token).is_ok()
    }

    /// The section's words (nothing when there are no gates).
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::STOP_TOKENS, self.words);
    }
}

/// Builds STOP_TOKENS.
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct StopTokensBuilder {
    words: std::vec::Vec<u32>,
}

#[cfg(feature = "std")]
impl StopTokensBuilder {
    /// The section of `gates`: `(state, its tokens)`, states ascending,
    /// each list ascending; equal lists stored once, numbered in order of
    /// first use; nothing when there are none.
    pub fn new(gates: &[(u32, std::vec::Vec<u32>)]) -> StopTokensBuilder {
        if gates.is_empty() {
            return StopTokensBuilder::default();
        }
        let mut ids: std::collections::HashMap<&[u32], u32> = std::collections::HashMap::new();
        let mut distinct: std::vec::Vec<&[u32]> = std::vec::Vec::new();
        let of: std::vec::Vec<u32> = gates
            .iter()
            .map(|g| {
                *ids.entry(&g.1).or_insert_with(|| {
                    distinct.push(&g.1);
                    distinct.len() as u32 - 1
                })
            })
            .collect();
        let mut words = std::vec![gates.len() as u32, distinct.len() as u32];
        words.extend(gates.iter().map(|g| g.0));
        words.extend_from_slice(&of);
        let mut at = 0u32;
        words.push(0);
        for list in &distinct {
            at += list.len() as u32;
            words.push(at);
        }
        for list in &distinct {
            words.extend_from_slice(list);
        }
        StopTokensBuilder { words }
    }

    /// The section as built.
    pub fn stop_tokens(&self) -> StopTokens<'_> {
        StopTokens { words: &self.words }
    }
}
