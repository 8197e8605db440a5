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
//! The DFA is the subset construction's, built lazily state by state as
//! walks reach it ([`LazyDfa`]): the moves of the pruned DFA, so the same
//! masks, without determinizing a large grammar before its first mask.
//! Its fewest bytes to acceptance come from the NFA, as does the check of
//! which bytes its moves take.

use std::sync::{Arc, Mutex, MutexGuard};

use super::regions::Regions;
use super::{walk_from, Found, Prepared, Start};
use crate::automaton::dfa::{Moves, DEAD};
use crate::automaton::lazy::LazyDfa;
use crate::automaton::nfa::Nfa;
use crate::lower::call_format::ENTRY_ESCAPE;
use crate::vocab::{TokenText, Vocab};

/// A grammar's masks, computed state by state as they are asked for.
pub struct OnDemand {
    /// Behind a lock: walks build its states, and matchers of one pending
    /// compile may serve from several threads.
    dfa: Mutex<LazyDfa<Arc<Nfa>>>,
    regions: Regions,
    prepared: Arc<Prepared>,
    /// Entry names, their states, and whether each stops after its first
    /// call.
    entries: Vec<(String, u32, bool)>,
    specials: Vec<u32>,
    mask_words: usize,
    exact: bool,
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
    /// Masks of the grammar of `nfa` with the entry names `entries` (and
    /// per entry whether it stops after its first call) and the special
    /// tokens `specials`, over `prepared`'s token trie, building at most
    /// `max_states` DFA states; `None` when the grammar accepts nothing
    /// (the full compile says so).
    pub fn new(
        nfa: Arc<Nfa>,
        entries: &[String],
        stops: &[bool],
        specials: Vec<u32>,
        prepared: Arc<Prepared>,
        mask_words: usize,
        max_states: usize,
    ) -> Option<OnDemand> {
        let mut dfa = LazyDfa::new(nfa, max_states)?;
        let start = dfa.start();
        let entries = entries
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let stop = stops.get(k).copied().unwrap_or(false);
                match entries.len() {
                    1 => (name.clone(), start, stop),
                    _ => (
                        name.clone(),
                        dfa.walk(start, &[ENTRY_ESCAPE, k as u8]),
                        stop,
                    ),
                }
            })
            .collect();
        let used = dfa.bytes_used(ENTRY_ESCAPE);
        let exact = (0..ENTRY_ESCAPE as usize).all(|b| !used[b] || prepared.single[b]);
        let (classes, _) = dfa.classes();
        Some(OnDemand {
            regions: Regions::classes(classes),
            dfa: Mutex::new(dfa),
            prepared,
            entries,
            specials,
            mask_words,
            exact,
        })
    }

    /// Whether the masks computed here are the artifact's (see the module
    /// documentation); when false, [`OnDemand::fill`] refuses to answer.
    pub fn exact(&self) -> bool {
        self.exact
    }

    /// The state of entry `name` (`None`: the default entry) and whether
    /// the entry stops after its first call, if it is one and an output
    /// can be completed from it within `left` tokens for certain (`None`:
    /// no budget). The fewest bytes to acceptance are the same for an entry
    /// that stops: a shortest completion ends at the first call's end.
    pub fn start(&self, name: Option<&str>, left: Option<u32>) -> Option<(u32, bool)> {
        let &(_, s, stops) = match name {
            None => self.entries.first()?,
            Some(name) => self.entries.iter().find(|e| e.0 == name)?,
        };
        (s != DEAD && self.exact && left.is_none_or(|n| self.lock().bytes_left(s) <= n))
            .then_some((s, stops))
    }

    /// The words of a mask (the artifact's `mask_words`).
    pub fn mask_words(&self) -> usize {
        self.mask_words
    }

    /// Whether `s` accepts.
    pub fn accepts(&self, s: u32) -> bool {
        self.lock().accepts(s)
    }

    /// DFA states built so far (the dead state included).
    pub fn states_built(&self) -> usize {
        self.lock().n_states()
    }

    fn lock(&self) -> MutexGuard<'_, LazyDfa<Arc<Nfa>>> {
        // A walk only adds whole states: a panicking one leaves it usable.
        self.dfa.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the mask of `s` with `left` tokens left (`None`: no budget)
    /// into `out` (at least the artifact's mask words), as the artifact's
    /// matcher would (one of an entry that stops after its first call,
    /// with `stops`); false, with `out` undefined, when only the artifact
    /// can tell.
    pub fn fill(
        &self,
        s: u32,
        left: Option<u32>,
        stops: bool,
        vocab: &Vocab,
        out: &mut [u32],
    ) -> bool {
        if !self.exact || out.len() < self.mask_words {
            return false;
        }
        out.fill(0);
        let mut dfa = self.lock();
        let (end, doubt) = dfa.ends_call(s);
        if stops && doubt {
            return false;
        }
        if left != Some(0) && !(stops && end) {
            let p = &*self.prepared;
            let region = if p.use_regions {
                self.regions
                    .key_in(&mut *dfa, s)
                    .map(|(key, states)| (p.regions.inside(&key, &p.trie), states))
            } else {
                None
            };
            let region = region.as_ref().map(|(i, st)| (&**i, st.as_slice()));
            let mut stack = Vec::new();
            // The states tokens lead to, for the budget (checked after the
            // walk, which holds the DFA).
            let mut reached = Vec::new();
            let start = Start::region(region);
            let mut moves = Stopping {
                dfa: &mut dfa,
                stops,
                doubt: false,
            };
            walk_from(&p.trie, &mut moves, start, s, &mut stack, |next, found| {
                if left.is_some() {
                    reached.push(next);
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
            if moves.doubt {
                return false;
            }
            let most = left.map_or(u32::MAX, |n| n - 1);
            if dfa.overflowed() || reached.iter().any(|&t| dfa.bytes_left(t) > most) {
                return false;
            }
        }
        if dfa.accepts(s) {
            for &t in &vocab.eos {
                out[(t >> 5) as usize] |= 1 << (t & 31);
            }
        }
        true
    }

    /// What `token` does from `s` with `left` tokens left (`None`: no
    /// budget), as the artifact's matcher would decide (one of an entry
    /// that stops after its first call, with `stops`).
    pub fn step(&self, s: u32, token: u32, left: Option<u32>, stops: bool, vocab: &Vocab) -> Step {
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
        let mut dfa = self.lock();
        let mut moves = Stopping {
            dfa: &mut dfa,
            stops,
            doubt: false,
        };
        let next = match text.get(token) {
            Some(bytes) => moves.walk_bytes(s, bytes),
            None => DEAD,
        };
        if moves.doubt || dfa.overflowed() {
            return Step::Unknown;
        }
        match (next, left) {
            (DEAD, _) => Step::Refused,
            (_, None) => Step::To(next),
            (_, Some(n)) if dfa.bytes_left(next) < n => Step::To(next),
            _ => Step::Unknown,
        }
    }
}

/// The lazy DFA's moves as a matcher of an entry that stops after its
/// first call takes them (with `stops`): none out of a state that ends a
/// call, so a token whose bytes go on past a call's end is not allowed
/// (the artifact's stop gates), while one that ends there is. `doubt` is
/// set when a walk reaches a state where that would not be the entry's
/// language (`LazyDfa::ends_call`): then only the artifact can tell.
struct Stopping<'a> {
    dfa: &'a mut LazyDfa<Arc<Nfa>>,
    stops: bool,
    doubt: bool,
}

impl Moves for Stopping<'_> {
    #[inline]
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        if !self.stops {
            return self.dfa.step(s, byte);
        }
        if self.dfa.ends_call(s).0 {
            return DEAD;
        }
        let next = self.dfa.step(s, byte);
        self.doubt |= self.dfa.ends_call(next).1;
        next
    }
}
