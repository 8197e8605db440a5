//! LOOPS: the sets of tokens whose bytes lead a state back to itself, as
//! bitsets a matcher tests before it walks a token; each state names its
//! set in STATES (beside the mask id the fill reads, so the test costs no
//! load the fill has not made). Why: `accept_token` walks a token's bytes
//! through the DFA, and a state change costs three dependent loads (its
//! row, the row's shape, the target); a token of a string body or of free
//! text often changes state byte after byte (UTF-8 sequences) and comes
//! back where it started, and at 128k tokens such tokens were the slower
//! half of the steps of a walk. A set is stored once however many states
//! share it (every string body of a tool list shares one), and at most
//! [`MAX_SETS`] are stored: the states whose set would be another walk
//! their tokens as before.
//!
//! Words, little-endian; empty when no state has a set:
//!
//! | words | what |
//! |---|---|
//! | 2 | `m`, the number of sets; `w`, the words of each (the masks') |
//! | `m · w` | the sets, `w` words each: bit `t % 32` of word `t / 32` set when token `t` loops |

use super::header::Counts;
use super::layout::sec;
use super::Source;
use crate::error::Error;

/// The most sets a payload stores (each is a dense mask's words).
pub const MAX_SETS: usize = 64;

/// The LOOPS section, borrowed; `words` empty when there is none.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loops<'a> {
    /// The section's words.
    pub words: &'a [u32],
}

impl<'a> Loops<'a> {
    /// The number of sets the section `words` says it holds (0 when
    /// absent): what STATES' loop set numbers are checked against.
    pub(crate) fn set_count_in(words: &[u32]) -> usize {
        words.first().map_or(0, |&m| m as usize)
    }

    /// Reads and checks the section (absent: empty): at most
    /// [`MAX_SETS`] sets of the masks' width that fill the section
    /// exactly and hold no token at or past the token count.
    pub(crate) fn read(src: &Source<'a>, mask_width: u32, c: &Counts) -> Result<Self, Error> {
        let words = src.words(sec::LOOPS, None)?;
        let t = Loops { words };
        if !words.is_empty() {
            t.check(mask_width, c)
                .map_err(|why| Error::section(sec::LOOPS, why))?;
        }
        Ok(t)
    }

    fn check(&self, mask_width: u32, c: &Counts) -> Result<(), &'static str> {
        let (m, w) = match self.words {
            [m, w, ..] => (*m as usize, *w as usize),
            _ => return Err("is shorter than its counts"),
        };
        if w != (mask_width as usize).div_ceil(32) {
            return Err("has sets of another width than the masks");
        }
        if m > MAX_SETS {
            return Err("has more sets than a payload may store");
        }
        if self.words.len() != 2 + m * w {
            return Err("does not end with its last set");
        }
        let n = c.n_tokens as usize;
        let past = |set: usize| (n..w * 32).any(|tok| self.contains(set as u32 + 1, tok as u32));
        if (0..m).any(past) {
            return Err("has a set with a token at or past the token count");
        }
        Ok(())
    }

    /// The words of set `set` (its number + 1, as STATES gives it): empty
    /// for 0 and out of range.
    #[inline]
    fn set(&self, set: u32) -> &'a [u32] {
        let w = self.words.get(1).map_or(0, |&w| w as usize);
        let Some(i) = (set as usize).checked_sub(1) else {
            return &[];
        };
        let at = 2 + i * w;
        self.words.get(at..at + w).unwrap_or_default()
    }

    /// Whether set `set` (its number + 1; 0: none) holds `token`.
    #[inline]
    pub fn contains(&self, set: u32, token: u32) -> bool {
        self.set(set)
            .get((token >> 5) as usize)
            .is_some_and(|&x| x >> (token & 31) & 1 == 1)
    }

    /// The number of sets.
    pub fn set_count(&self) -> usize {
        Loops::set_count_in(self.words)
    }

    /// How many tokens set `set` (its number + 1) holds.
    pub fn count(&self, set: u32) -> usize {
        self.set(set).iter().map(|x| x.count_ones() as usize).sum()
    }

    /// The section's words (nothing when no state has a set).
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::LOOPS, self.words);
    }
}

/// Builds LOOPS.
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct LoopsBuilder {
    words: std::vec::Vec<u32>,
}

#[cfg(feature = "std")]
impl LoopsBuilder {
    /// The section of `sets`, each `words` words (nothing when there are
    /// none); at most [`MAX_SETS`].
    pub fn new(sets: &[std::vec::Vec<u32>], words: usize) -> LoopsBuilder {
        debug_assert!(sets.len() <= MAX_SETS && sets.iter().all(|s| s.len() == words));
        if sets.is_empty() {
            return LoopsBuilder::default();
        }
        let mut out = std::vec![sets.len() as u32, words as u32];
        out.extend(sets.iter().flatten());
        LoopsBuilder { words: out }
    }

    /// The section, borrowed.
    pub fn loops(&self) -> Loops<'_> {
        Loops { words: &self.words }
    }
}
