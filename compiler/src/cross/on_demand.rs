//! Masks computed on demand, before the crossing: the first steps of a new
//! tool set served while its artifact is still being built.
//!
//! The artifact's mask of a state `s` (without a budget) is the set of
//! tokens whose bytes lead from `s` to a state from which some *token*
//! sequence reaches acceptance, plus the end-of-sequence tokens when `s`
//! accepts. On the pruned DFA, every state a token reaches can reach
//! acceptance by *bytes*; when every text byte the grammar can take is
//! also a token on its own, those bytes are a token sequence (a special
//! token's reserved bytes are the token itself), so the two sets agree and
//! one walk of the token trie from `s` gives the artifact's mask exactly.
//! [`OnDemand::exact`] checks that condition (true for byte-level BPE and
//! byte-fallback vocabularies); where it fails nothing is served early.
//!
//! A budget needs each token's distance to acceptance, which only the whole
//! crossing knows. The fewest *bytes* to acceptance bound it from above
//! (each byte is a token), so a token whose next state is at most `left -
//! 1` bytes from acceptance certainly fits; a mask with any other token is
//! [`None`] here, and the caller waits for the artifact.
//!
//! The DFA is the subset construction's, pruned but not minimized: the
//! same language from each state, so the same masks.

use std::collections::VecDeque;
use std::sync::{Arc, OnceLock};

use super::regions::Regions;
use super::{walk_from, Found, Prepared};
use crate::automaton::dfa::{Dfa, DEAD};
use crate::automaton::machine::entry_state;
use crate::lower::call_format::ENTRY_ESCAPE;
use crate::vocab::{TokenText, Vocab};

/// A grammar's masks, computed state by state as they are asked for.
pub struct OnDemand {
    dfa: Dfa,
    regions: Regions,
    prepared: Arc<Prepared>,
    /// Entry names and their states.
    entries: Vec<(String, u32)>,
    specials: Vec<u32>,
    mask_words: usize,
    exact: bool,
    /// Per state the fewest bytes to acceptance, made on first use.
    bytes_left: OnceLock<Vec<u32>>,
}

/// What a token does from a state, as [`OnDemand::step`] can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The token is not allowed.
    Refused,
    /// The token leads to this state.
    To(u32),
    /// An end-of-sequence token, allowed: the output is complete.
    End,
    /// Whether it fits the budget needs the artifact.
    Unknown,
}

impl OnDemand {
    /// Masks of `dfa` (determinized, not yet pruned) with the entry names
    /// `entries` and the special tokens `specials`, over `prepared`'s token
    /// trie; `None` when the grammar accepts nothing (the full compile
    /// says so).
    pub fn new(
        mut dfa: Dfa,
        entries: &[String],
        specials: Vec<u32>,
        prepared: Arc<Prepared>,
        mask_words: usize,
    ) -> Option<OnDemand> {
        if !dfa.prune() {
            return None;
        }
        let entries = entries
            .iter()
            .enumerate()
            .map(|(k, name)| (name.clone(), entry_state(&dfa, entries.len(), k)))
            .collect();
        let exact = singles_cover(&dfa, &prepared.single);
        Some(OnDemand {
            regions: Regions::of(&dfa),
            dfa,
            prepared,
            entries,
            specials,
            mask_words,
            exact,
            bytes_left: OnceLock::new(),
        })
    }

    /// Whether the masks computed here are the artifact's (see the module
    /// documentation); when false, [`OnDemand::fill`] refuses to answer.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The state of entry `name` (`None`: the default entry), if it is one
    /// and an output can be completed from it within `left` tokens for
    /// certain (`None`: no budget).
    pub fn start(&self, name: Option<&str>, left: Option<u32>) -> Option<u32> {
        let s = match name {
            None => self.entries.first()?.1,
            Some(name) => self.entries.iter().find(|e| e.0 == name)?.1,
        };
        (s != DEAD && self.exact && left.is_none_or(|n| self.bytes_left()[s as usize] <= n))
            .then_some(s)
    }

    /// The words of a mask (the artifact's `mask_words`).
    pub fn mask_words(&self) -> usize {
        self.mask_words
    }

    /// Whether `s` accepts.
    pub fn accepts(&self, s: u32) -> bool {
        self.dfa.accept[s as usize]
    }

    /// Writes the mask of `s` with `left` tokens left (`None`: no budget)
    /// into `out` (at least the artifact's mask words), as the artifact's
    /// matcher would; false, with `out` undefined, when only the artifact
    /// can tell.
    pub fn fill(&self, s: u32, left: Option<u32>, vocab: &Vocab, out: &mut [u32]) -> bool {
        if !self.exact || out.len() < self.mask_words {
            return false;
        }
        out.fill(0);
        if left != Some(0) {
            let bytes_left = left.map(|_| self.bytes_left());
            let most = left.map_or(u32::MAX, |n| n - 1);
            let mut sure = true;
            let p = &*self.prepared;
            let region = if p.use_regions {
                self.regions
                    .key(&self.dfa, s)
                    .map(|(key, states)| (p.regions.inside(&key, &p.trie), states))
            } else {
                None
            };
            let region = region.as_ref().map(|(i, st)| (&**i, st.as_slice()));
            let mut stack = Vec::new();
            walk_from(&p.trie, &self.dfa, region, s, &mut stack, |next, found| {
                if bytes_left.is_some_and(|b| b[next as usize] > most) {
                    sure = false;
                    return;
                }
                match found {
                    Found::Ids(ids) => {
                        for &t in ids {
                            out[(t >> 5) as usize] |= 1 << (t & 31);
                        }
                    }
                    Found::Inside(toks) => toks.or_into(out),
                }
            });
            if !sure {
                return false;
            }
        }
        if self.accepts(s) {
            for &t in &vocab.eos {
                out[(t >> 5) as usize] |= 1 << (t & 31);
            }
        }
        true
    }

    /// What `token` does from `s` with `left` tokens left (`None`: no
    /// budget), as the artifact's matcher would decide.
    pub fn step(&self, s: u32, token: u32, left: Option<u32>, vocab: &Vocab) -> Step {
        if vocab.eos.contains(&token) {
            return if self.accepts(s) {
                Step::End
            } else {
                Step::Refused
            };
        }
        if !self.exact {
            return Step::Unknown;
        }
        if left == Some(0) {
            return Step::Refused;
        }
        let text = TokenText::new(vocab, &self.specials);
        let next = match text.get(token) {
            Some(bytes) => self.dfa.walk(s, bytes),
            None => DEAD,
        };
        match (next, left) {
            (DEAD, _) => Step::Refused,
            (_, None) => Step::To(next),
            (_, Some(n)) if self.bytes_left()[next as usize] < n => Step::To(next),
            _ => Step::Unknown,
        }
    }

    /// Per state the fewest bytes to acceptance (`u32::MAX`: none), by a
    /// backward breadth-first search; made once, on the first budget.
    fn bytes_left(&self) -> &[u32] {
        self.bytes_left.get_or_init(|| {
            let (dfa, k) = (&self.dfa, self.dfa.n_classes);
            let n = dfa.n_states();
            let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
            for s in 1..n {
                for &t in &dfa.trans[s * k..(s + 1) * k] {
                    if t != DEAD && t as usize != s {
                        preds[t as usize].push(s as u32);
                    }
                }
            }
            let mut queue: VecDeque<u32> =
                (1..n as u32).filter(|&s| dfa.accept[s as usize]).collect();
            let mut dist = vec![u32::MAX; n];
            for &s in &queue {
                dist[s as usize] = 0;
            }
            while let Some(t) = queue.pop_front() {
                for &p in &preds[t as usize] {
                    if dist[p as usize] == u32::MAX {
                        dist[p as usize] = dist[t as usize] + 1;
                        queue.push_back(p);
                    }
                }
            }
            dist
        })
    }
}

/// Whether every text byte (below [`ENTRY_ESCAPE`]) that some move of
/// `dfa` takes is a token on its own (`single`); bytes of one class move
/// alike, so a class is checked once.
fn singles_cover(dfa: &Dfa, single: &[bool; 256]) -> bool {
    let k = dfa.n_classes;
    let mut used = vec![false; k];
    for row in dfa.trans.chunks_exact(k.max(1)).skip(1) {
        for (c, &t) in row.iter().enumerate() {
            used[c] |= t != DEAD;
        }
    }
    (0..ENTRY_ESCAPE).all(|b| !used[dfa.classes[b as usize] as usize] || single[b as usize])
}
