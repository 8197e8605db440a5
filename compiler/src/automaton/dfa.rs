//! Determinization, trimming and minimization.
//!
//! A [`Dfa`] is a dense table over byte equivalence classes. State 0 is the
//! dead state (every move leads back to it); after pruning it is the only
//! state from which acceptance cannot be reached, so "the walk is not
//! dead" and "the walk can still be completed" mean the same thing, which is
//! what lets the vocabulary crossing prune on the dead state alone.
//!
//! Dense tables serve the lowering's small machines and the tests. A
//! compile's pipeline works on [`SparseDfa`] (live moves only) from the
//! subset construction to minimization, whose quotient is packed
//! ([`crate::automaton::packed::PackedDfa`]); the dense pruning and the
//! tests' minimization go through them, so each step has one
//! implementation.

use std::collections::HashMap;

use crate::automaton::nfa::Nfa;
use crate::automaton::region::Labels;
use crate::automaton::sparse::SparseDfa;
use crate::automaton::subsets::{subsets, Sets, BATCH};
use crate::error::Limit;
use crate::parallel::{in_parts, parts};

/// The dead state: every move from it leads back to it, and it never accepts.
pub const DEAD: u32 = 0;

/// Where a renumbering maps a state that no walk from the start reaches.
pub const UNREACHED: u32 = u32::MAX;

/// A hasher for keys made of words (state sets): a multiply and a rotate
/// per 8 bytes, where the standard SipHash spends several rounds. Keys
/// here come from the grammar, not from an adversary choosing collisions,
/// and the state bound caps any table.
#[derive(Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (self.0.rotate_left(5) ^ n as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by words, hashed by [`WordHasher`].
pub(crate) type WordMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;

/// What a walk needs of a deterministic automaton: the move from a state
/// on a byte. A built [`Dfa`] reads its table; a lazy one
/// ([`crate::automaton::lazy::LazyDfa`]) builds the state's row first.
pub trait Moves {
    /// The state `s` moves to on `byte` ([`DEAD`] when it cannot).
    fn step(&mut self, s: u32, byte: u8) -> u32;

    /// Walks `bytes` from `s`, stopping at the dead state.
    fn walk_bytes(&mut self, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            s = self.step(s, b);
            if s == DEAD {
                break;
            }
        }
        s
    }
}

impl Moves for &Dfa {
    #[inline]
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        self.next(s, byte)
    }
}

impl<M: Moves + ?Sized> Moves for &mut M {
    #[inline]
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        (**self).step(s, byte)
    }
}

/// Byte classes of `nfa`'s ranges, and their number: bytes that no range
/// boundary separates behave the same.
pub(crate) fn byte_classes(nfa: &Nfa) -> ([u8; 256], usize) {
    let mut boundary = [false; 257];
    for &(lo, hi, _) in nfa.all_ranges() {
        boundary[lo as usize] = true;
        boundary[hi as usize + 1] = true;
    }
    let mut classes = [0u8; 256];
    let mut n = 0usize;
    for b in 0..256 {
        if b > 0 && boundary[b] {
            n += 1;
        }
        classes[b] = n as u8;
    }
    (classes, n + 1)
}

/// A deterministic automaton over byte classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dfa {
    /// The class of each byte.
    pub classes: [u8; 256],
    /// The number of byte classes (the row width of `trans`).
    pub n_classes: usize,
    /// `n_states * n_classes` next states.
    pub trans: Vec<u32>,
    /// Whether each state accepts.
    pub accept: Vec<bool>,
    /// The start state.
    pub start: u32,
}

impl Dfa {
    /// A small hand-drawn automaton for tests. `moves` reads like
    /// `"1a2 2b1"`: from state, byte, to state (single digits); bytes get
    /// classes in order of first use, state 0 is dead and state 1 starts.
    #[cfg(test)]
    pub(crate) fn drawn(moves: &str, accept: Vec<bool>) -> Dfa {
        let mut classes = [0u8; 256];
        let mut k = 1;
        for m in moves.split(' ') {
            let b = m.as_bytes()[1] as usize;
            if classes[b] == 0 {
                classes[b] = k as u8;
                k += 1;
            }
        }
        let n = accept.len();
        let mut d = Dfa {
            classes,
            n_classes: k,
            trans: vec![DEAD; n * k],
            accept,
            start: 1,
        };
        for m in moves.split(' ').map(str::as_bytes) {
            let (from, b, to) = ((m[0] - b'0') as usize, m[1] as usize, (m[2] - b'0') as u32);
            d.trans[from * k + classes[b] as usize] = to;
        }
        d
    }

    /// The number of states, the dead state included.
    pub fn n_states(&self) -> usize {
        self.accept.len()
    }

    /// The state `s` moves to on `byte`.
    pub fn next(&self, s: u32, byte: u8) -> u32 {
        self.trans[s as usize * self.n_classes + self.classes[byte as usize] as usize]
    }

    /// Walks `bytes` from `s`, stopping at the dead state.
    pub fn walk(&self, s: u32, bytes: &[u8]) -> u32 {
        let mut moves = self;
        moves.walk_bytes(s, bytes)
    }

    /// Whether the DFA accepts `bytes` from its start state.
    pub fn accepts(&self, bytes: &[u8]) -> bool {
        self.accept[self.walk(self.start, bytes) as usize]
    }

    /// Subset construction. Fails beyond `max_states` DFA states.
    pub fn determinize(nfa: &Nfa, max_states: usize) -> Result<Dfa, Limit> {
        Dfa::subsets(nfa, max_states, false).map(|(dfa, _)| dfa)
    }

    /// [`Dfa::determinize`], with each state's regions: the sorted regions
    /// of its NFA states that read a byte (see [`crate::automaton::region`]).
    pub fn determinize_labeled(nfa: &Nfa, max_states: usize) -> Result<(Dfa, Labels), Limit> {
        Dfa::subsets(nfa, max_states, true)
    }

    /// [`Dfa::determinize_labeled`] by live moves ([`SparseDfa`]: what
    /// trimming and minimization read), and each state's tool-name colour
    /// ([`NameColors`]): which tool names its trie nodes can still become.
    pub fn determinize_named(
        nfa: &Nfa,
        max_states: usize,
        threads: usize,
    ) -> Result<(SparseDfa, Labels, NameColors), Limit> {
        let (dfa, labels, sets) = subsets(nfa, max_states, true, threads)?;
        let colors = NameColors::of(nfa, &sets, parts(sets.len(), BATCH, threads));
        Ok((dfa, labels, colors))
    }

    fn subsets(nfa: &Nfa, max_states: usize, labeled: bool) -> Result<(Dfa, Labels), Limit> {
        subsets(nfa, max_states, labeled, 1).map(|(d, l, _)| (d.to_dense(), l))
    }

    #[cfg(test)]
    /// Sends every move into a state from which no accepting state is
    /// reachable to the dead state, and drops every state that is then
    /// unreachable from the start, renumbering as [`Dfa::renumber`] does.
    /// Returns false if the language is empty.
    pub fn trim(&mut self) -> bool {
        if !self.prune() {
            return false;
        }
        self.renumber();
        true
    }

    /// Sends every move into a state from which no accepting state is
    /// reachable to the dead state, keeping state numbers (what a walk
    /// needs, without the tests' trimming and renumbering). Returns false if the
    /// language is empty.
    pub fn prune(&mut self) -> bool {
        let mut sparse = SparseDfa::from_dense(self);
        if !sparse.prune() {
            return false;
        }
        *self = sparse.to_dense();
        true
    }

    /// Renumbers states in depth-first preorder from the start, classes
    /// in order (dead = 0, start = 1), dropping unreachable ones. The
    /// order depends only on the language's structure, so equal inputs
    /// give identical tables.
    /// Returns the new number of each old state ([`UNREACHED`] for the
    /// dropped).
    #[cfg(test)]
    pub fn renumber(&mut self) -> Vec<u32> {
        let identity: Vec<u32> = (0..self.n_states() as u32).collect();
        self.quotient(&identity)
    }

    /// Replaces the DFA by one state per block of `block_of` (each state's
    /// block; the states of a block must be interchangeable: the same
    /// acceptance, moves into the same blocks, the dead state's block
    /// holding only states with no way to acceptance), renumbered as
    /// [`Dfa::renumber`] does. Returns the new number of each old state.
    #[cfg(test)]
    pub fn quotient(&mut self, block_of: &[u32]) -> Vec<u32> {
        let (dfa, new_of) = SparseDfa::from_dense(self)
            .quotient(block_of, 1)
            .expect("a test's machine fits the format");
        *self = dfa.to_dense();
        new_of
    }

    /// Merges byte classes whose columns became identical (what the
    /// quotient's merging of classes is tested against).
    #[cfg(test)]
    pub(crate) fn compact_classes(&mut self) {
        let n = self.n_states();
        let k = self.n_classes;
        // Each column's hash in one pass over the rows, then equal hashes
        // confirmed column against column: no column is copied.
        let mut hash = vec![0xcbf2_9ce4_8422_2325u64; k];
        for row in self.trans.chunks_exact(k.max(1)) {
            for (h, &t) in hash.iter_mut().zip(row) {
                *h = (*h ^ t as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        let same =
            |a: usize, b: usize| (0..n).all(|s| self.trans[s * k + a] == self.trans[s * k + b]);
        let mut first_of: HashMap<u64, Vec<usize>> = HashMap::new();
        let mut remap = vec![0u16; k];
        let mut kept: Vec<usize> = Vec::new();
        for c in 0..k {
            let firsts = first_of.entry(hash[c]).or_default();
            match firsts.iter().find(|&&f| same(f, c)) {
                Some(&f) => remap[c] = remap[f],
                None => {
                    remap[c] = kept.len() as u16;
                    kept.push(c);
                    firsts.push(c);
                }
            }
        }
        if kept.len() == k {
            return;
        }
        // In place, row by row: `kept` ascends, so each read (row `s`,
        // column `kept[j] >= j`) is at or past the write (`s * nk + j`).
        // A second table would double the largest allocation of a big
        // compile for a moment (1.3 GB at 10,000 distinct tools).
        let nk = kept.len();
        let mut w = 0;
        for s in 0..n {
            for &c in &kept {
                self.trans[w] = self.trans[s * k + c];
                w += 1;
            }
        }
        self.trans.truncate(w);
        self.trans.shrink_to_fit();
        for b in self.classes.iter_mut() {
            *b = remap[*b as usize] as u8;
        }
        self.n_classes = nk;
    }
}

/// The tool-name colour of each DFA state: 0 for a state that holds no
/// node of a tool-name trie, else an index into `classes`, whose entry
/// says which tools the name being written can still become (`live`:
/// the tools whose names pass through one of its trie nodes) and which
/// tools' names end here (`end`). A one-tool matcher for tool `t` may move
/// from `q` to `q'` only if `t` is live at `q'` when `q'` is coloured, and
/// `t`'s name ends at `q` when `q` is coloured and `q'` is not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameColors {
    /// Per state its colour.
    pub color: Vec<u32>,
    /// Per colour `(live, end)`, tool indices ascending; entry 0 (no name)
    /// is empty.
    pub classes: Vec<(Vec<u32>, Vec<u32>)>,
}

impl NameColors {
    /// Colours of the subset construction's states (`sets`: each DFA
    /// state's NFA states): states with the same trie nodes share one.
    fn of(nfa: &Nfa, sets: &Sets, threads: usize) -> NameColors {
        let mut color = vec![0u32; sets.len()];
        let mut classes: Vec<(Vec<u32>, Vec<u32>)> = vec![(Vec::new(), Vec::new())];
        if nfa.names.is_empty() {
            return NameColors { color, classes };
        }
        // One word per NFA state, read in set order (see `subsets`).
        let name_of = nfa.names_by_state();
        // The trie nodes of each state that has some: a pass over every
        // set's NFA states, shared by the threads (35 of the 220 ms of
        // determinizing 1,000 tools on one).
        let named = in_parts(sets.len(), threads, |ids| {
            ids.filter_map(|d| {
                let nodes: Vec<u32> = sets
                    .get(d as u32)
                    .iter()
                    .map(|&s| name_of[s as usize])
                    .filter(|&n| n != crate::automaton::nfa::NO_NAME)
                    .collect();
                (!nodes.is_empty()).then_some((d, nodes))
            })
            .collect()
        });
        // A state's colour depends only on its nodes: most states have one
        // (58,058 of 58,058 at 1,000 tools), looked up by node number.
        let mut by_node = vec![u32::MAX; nfa.names.len()];
        let mut by_nodes: WordMap<Vec<u32>, u32> = WordMap::default();
        let mut by_class: WordMap<(Vec<u32>, Vec<u32>), u32> = WordMap::default();
        for (d, nodes) in named {
            let known = match nodes[..] {
                [n] => by_node[n as usize],
                _ => by_nodes.get(&nodes).copied().unwrap_or(u32::MAX),
            };
            if known != u32::MAX {
                color[d] = known;
                continue;
            }
            let mut live: Vec<u32> = Vec::new();
            let mut end: Vec<u32> = Vec::new();
            for &n in &nodes {
                let node = &nfa.names[n as usize];
                live.extend_from_slice(&node.live);
                end.extend(node.end);
            }
            live.sort_unstable();
            live.dedup();
            end.sort_unstable();
            end.dedup();
            let next = classes.len() as u32;
            let c = *by_class.entry((live, end)).or_insert_with_key(|k| {
                classes.push(k.clone());
                next
            });
            match nodes[..] {
                [n] => by_node[n as usize] = c,
                _ => {
                    by_nodes.insert(nodes, c);
                }
            }
            color[d] = c;
        }
        NameColors { color, classes }
    }

    /// Whether any state has a colour.
    pub fn any(&self) -> bool {
        self.color.iter().any(|&c| c != 0)
    }
}
