//! Determinization, trimming and minimization.
//!
//! A [`Dfa`] is a dense table over byte equivalence classes. State 0 is the
//! dead state (every move leads back to it); after [`Dfa::trim`] it is the
//! only state from which acceptance cannot be reached, so "the walk is not
//! dead" and "the walk can still be completed" mean the same thing, which is
//! what lets the vocabulary crossing prune on the dead state alone.

use std::collections::{HashMap, VecDeque};

use crate::automaton::nfa::Nfa;
use crate::error::Limit;

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
    for st in &nfa.states {
        for &(lo, hi, _) in &st.ranges {
            boundary[lo as usize] = true;
            boundary[hi as usize + 1] = true;
        }
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
    /// The number of states, the dead state included.
    pub fn n_states(&self) -> usize {
        self.accept.len()
    }

    /// The state `s` moves to on `byte`.
    pub fn next(&self, s: u32, byte: u8) -> u32 {
        self.trans[s as usize * self.n_classes + self.classes[byte as usize] as usize]
    }

    /// Walks `bytes` from `s`, stopping at the dead state.
    pub fn walk(&self, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            s = self.next(s, b);
            if s == DEAD {
                break;
            }
        }
        s
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
    pub fn determinize_labeled(
        nfa: &Nfa,
        max_states: usize,
    ) -> Result<(Dfa, Vec<Vec<u32>>), Limit> {
        Dfa::subsets(nfa, max_states, true)
    }

    /// [`Dfa::determinize_labeled`], and each state's tool-name colour
    /// ([`NameColors`]): which tool names its trie nodes can still become.
    pub fn determinize_named(
        nfa: &Nfa,
        max_states: usize,
    ) -> Result<(Dfa, Vec<Vec<u32>>, NameColors), Limit> {
        let (dfa, labels, sets) = Dfa::subsets_kept(nfa, max_states, true)?;
        let colors = NameColors::of(nfa, &sets);
        Ok((dfa, labels, colors))
    }

    fn subsets(nfa: &Nfa, max_states: usize, labeled: bool) -> Result<(Dfa, Vec<Vec<u32>>), Limit> {
        Dfa::subsets_kept(nfa, max_states, labeled).map(|(d, l, _)| (d, l))
    }

    #[allow(clippy::type_complexity)]
    fn subsets_kept(
        nfa: &Nfa,
        max_states: usize,
        labeled: bool,
    ) -> Result<(Dfa, Vec<Vec<u32>>, Vec<Vec<u32>>), Limit> {
        let (classes, n_classes) = byte_classes(nfa);

        let mut stack = Vec::new();
        let mut seen = vec![u32::MAX; nfa.states.len()];
        let mut stamp = 0u32;
        let mut closure = |set: &mut Vec<u32>| {
            stamp += 1;
            stack.clear();
            for &s in set.iter() {
                if seen[s as usize] != stamp {
                    seen[s as usize] = stamp;
                    stack.push(s);
                }
            }
            set.clear();
            while let Some(s) = stack.pop() {
                set.push(s);
                for &t in &nfa.states[s as usize].eps {
                    if seen[t as usize] != stamp {
                        seen[t as usize] = stamp;
                        stack.push(t);
                    }
                }
            }
            set.sort_unstable();
        };

        let mut sets: Vec<Vec<u32>> = vec![Vec::new()];
        let mut index: WordMap<Vec<u32>, u32> = WordMap::default();
        index.insert(Vec::new(), DEAD);
        let mut start_set = vec![nfa.start];
        closure(&mut start_set);
        index.insert(start_set.clone(), 1);
        sets.push(start_set);
        let mut trans = vec![DEAD; 2 * n_classes];
        let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); n_classes];
        let mut set = Vec::new();
        let mut next = 1usize;
        // The memory account: the NFA, each set twice (the list and the
        // index) with its overhead, and the table.
        let row_bytes = n_classes * 4 + 2 * std::mem::size_of::<Vec<u32>>() + 16;
        let mut held = nfa.states.len() * crate::automaton::nfa::STATE_BYTES + 2 * row_bytes;
        while next < sets.len() {
            if let Err(limit) = crate::limits::check("determinize", held) {
                // Where the construction was: the region of the first NFA
                // state of the set being expanded that reads a byte.
                let region = sets[next]
                    .iter()
                    .map(|&s| &nfa.states[s as usize])
                    .find(|st| !st.ranges.is_empty())
                    .map(|st| st.region);
                return Err(region.map_or(limit, |r| limit.in_region(r)));
            }
            for b in buckets.iter_mut() {
                b.clear();
            }
            for &s in &sets[next] {
                for &(lo, hi, t) in &nfa.states[s as usize].ranges {
                    for bucket in
                        &mut buckets[classes[lo as usize] as usize..=classes[hi as usize] as usize]
                    {
                        bucket.push(t);
                    }
                }
            }
            for c in 0..n_classes {
                if buckets[c].is_empty() {
                    continue;
                }
                // Neighbouring classes mostly move alike (a string body's
                // characters): the same targets, pushed in the same order,
                // make the same state, without a closure or a lookup.
                if c > 0 && buckets[c] == buckets[c - 1] {
                    trans[next * n_classes + c] = trans[next * n_classes + c - 1];
                    continue;
                }
                set.clear();
                set.extend_from_slice(&buckets[c]);
                closure(&mut set);
                let id = match index.get(&set) {
                    Some(&id) => id,
                    None => {
                        if sets.len() >= max_states {
                            return Err(Limit::DfaStates(max_states));
                        }
                        let id = sets.len() as u32;
                        held += row_bytes + 8 * set.len();
                        index.insert(set.clone(), id);
                        sets.push(set.clone());
                        trans.extend(std::iter::repeat_n(DEAD, n_classes));
                        id
                    }
                };
                trans[next * n_classes + c] = id;
            }
            next += 1;
        }
        let accept = sets
            .iter()
            .map(|s| s.binary_search(&nfa.accept).is_ok())
            .collect();
        let labels = if labeled {
            sets.iter()
                .map(|set| {
                    let mut l: Vec<u32> = set
                        .iter()
                        .map(|&s| &nfa.states[s as usize])
                        .filter(|st| !st.ranges.is_empty())
                        .map(|st| st.region)
                        .collect();
                    l.sort_unstable();
                    l.dedup();
                    l
                })
                .collect()
        } else {
            Vec::new()
        };
        let dfa = Dfa {
            classes,
            n_classes,
            trans,
            accept,
            start: 1,
        };
        Ok((dfa, labels, sets))
    }

    /// Sends every state that is unreachable from the start, or from which
    /// no accepting state is reachable, to the dead state, and drops it.
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
    /// needs, without [`Dfa::trim`]'s renumbering). Returns false if the
    /// language is empty.
    pub fn prune(&mut self) -> bool {
        let (n, k) = (self.n_states(), self.n_classes);
        let live = self.co_reachable();
        if !live[self.start as usize] {
            return false;
        }
        if live[1..].iter().all(|&l| l) {
            // The usual case: the subset construction made no state that
            // cannot finish, and no move needs redirecting.
            return true;
        }
        for s in 0..n {
            for c in 0..k {
                if !live[self.trans[s * k + c] as usize] {
                    self.trans[s * k + c] = DEAD;
                }
            }
        }
        true
    }

    /// Per state, whether an accepting state is reachable from it (the
    /// dead state never). Sweeps the table from the last state to the
    /// first, marking a state once a move reaches a marked one: states are
    /// numbered in discovery order, so most reach acceptance through
    /// higher numbers and a sweep or two settles them. What a few sweeps
    /// leave unsettled goes backwards over predecessor lists.
    fn co_reachable(&self) -> Vec<bool> {
        const SWEEPS: usize = 6;
        let (n, k) = (self.n_states(), self.n_classes);
        let mut live = self.accept.clone();
        live[DEAD as usize] = false;
        for _ in 0..SWEEPS {
            let mut changed = false;
            for s in (1..n).rev() {
                if !live[s]
                    && self.trans[s * k..(s + 1) * k]
                        .iter()
                        .any(|&t| live[t as usize])
                {
                    live[s] = true;
                    changed = true;
                }
            }
            if !changed {
                return live;
            }
        }
        self.spread_back(&mut live);
        live
    }

    /// Marks every state from which a marked state is reachable, by a
    /// backward search over predecessor lists in CSR form (moves into the
    /// dead state and self-loops, the bulk of a sparse table, left out).
    fn spread_back(&self, live: &mut [bool]) {
        let (n, k) = (self.n_states(), self.n_classes);
        let mut start = vec![0u32; n + 1];
        for s in 0..n {
            for c in 0..k {
                let t = self.trans[s * k + c] as usize;
                if t != DEAD as usize && t != s {
                    start[t + 1] += 1;
                }
            }
        }
        for i in 1..=n {
            start[i] += start[i - 1];
        }
        let mut preds = vec![0u32; start[n] as usize];
        let mut fill = start.clone();
        for s in 0..n {
            for c in 0..k {
                let t = self.trans[s * k + c] as usize;
                if t != DEAD as usize && t != s {
                    preds[fill[t] as usize] = s as u32;
                    fill[t] += 1;
                }
            }
        }
        drop(fill);
        let mut queue: VecDeque<u32> = (0..n as u32).filter(|&s| live[s as usize]).collect();
        while let Some(s) = queue.pop_front() {
            let (a, z) = (start[s as usize] as usize, start[s as usize + 1] as usize);
            for &p in &preds[a..z] {
                if !live[p as usize] {
                    live[p as usize] = true;
                    queue.push_back(p);
                }
            }
        }
    }

    /// Renumbers states in depth-first preorder from the start, classes
    /// in order (dead = 0, start = 1), dropping unreachable ones. The
    /// order depends only on the language's structure, so equal inputs
    /// give identical tables.
    /// Returns the new number of each old state ([`UNREACHED`] for the
    /// dropped).
    pub fn renumber(&mut self) -> Vec<u32> {
        let identity: Vec<u32> = (0..self.n_states() as u32).collect();
        self.quotient(&identity)
    }

    /// Replaces the DFA by one state per block of `block_of` (each state's
    /// block; the states of a block must be interchangeable: the same
    /// acceptance, moves into the same blocks, the dead state's block
    /// holding only states with no way to acceptance), renumbered as
    /// [`Dfa::renumber`] does. Returns the new number of each old state.
    pub fn quotient(&mut self, block_of: &[u32]) -> Vec<u32> {
        let k = self.n_classes;
        let n_blocks = block_of.iter().max().map_or(0, |&b| b as usize + 1);
        let mut rep = vec![0u32; n_blocks];
        for (s, &b) in block_of.iter().enumerate().rev() {
            rep[b as usize] = s as u32;
        }
        let row = |s: u32| &self.trans[s as usize * k..(s as usize + 1) * k];
        let mut new_of_block = vec![UNREACHED; n_blocks];
        let (dead, start) = (block_of[DEAD as usize], block_of[self.start as usize]);
        new_of_block[dead as usize] = DEAD;
        new_of_block[start as usize] = 1;
        let mut order = vec![dead, start];
        // Depth first (preorder, classes in order): the states along a
        // path get consecutive numbers, so a token's walk at serving time
        // reads neighbouring row starts, slots and distances instead of
        // one cache line (and page) per byte. Each frame is a block and
        // the next class to look at.
        let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
        while let Some(top) = stack.last_mut() {
            let (b, c) = *top;
            if c == k {
                stack.pop();
                continue;
            }
            top.1 += 1;
            let t = row(rep[b as usize])[c];
            let tb = block_of[t as usize] as usize;
            if new_of_block[tb] == UNREACHED {
                new_of_block[tb] = order.len() as u32;
                order.push(tb as u32);
                stack.push((tb as u32, 0));
            }
        }
        let mut trans = Vec::with_capacity(order.len() * k);
        for &b in &order {
            let r = row(rep[b as usize]);
            trans.extend(
                r.iter()
                    .map(|&t| new_of_block[block_of[t as usize] as usize]),
            );
        }
        self.accept = order
            .iter()
            .map(|&b| self.accept[rep[b as usize] as usize])
            .collect();
        self.trans = trans;
        self.start = 1;
        self.compact_classes();
        block_of.iter().map(|&b| new_of_block[b as usize]).collect()
    }

    /// Merges byte classes whose columns became identical.
    fn compact_classes(&mut self) {
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
        let nk = kept.len();
        let mut trans = Vec::with_capacity(n * nk);
        for s in 0..n {
            trans.extend(kept.iter().map(|&c| self.trans[s * k + c]));
        }
        for b in self.classes.iter_mut() {
            *b = remap[*b as usize] as u8;
        }
        self.trans = trans;
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
    fn of(nfa: &Nfa, sets: &[Vec<u32>]) -> NameColors {
        let mut color = vec![0u32; sets.len()];
        let mut classes: Vec<(Vec<u32>, Vec<u32>)> = vec![(Vec::new(), Vec::new())];
        if nfa.names.is_empty() {
            return NameColors { color, classes };
        }
        let mut by_nodes: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut by_class: HashMap<(Vec<u32>, Vec<u32>), u32> = HashMap::new();
        let mut nodes = Vec::new();
        for (d, set) in sets.iter().enumerate() {
            nodes.clear();
            nodes.extend(
                set.iter()
                    .map(|&s| nfa.states[s as usize].name)
                    .filter(|&n| n != crate::automaton::nfa::NO_NAME),
            );
            if nodes.is_empty() {
                continue;
            }
            if let Some(&c) = by_nodes.get(&nodes) {
                color[d] = c;
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
            by_nodes.insert(nodes.clone(), c);
            color[d] = c;
        }
        NameColors { color, classes }
    }

    /// Whether any state has a colour.
    pub fn any(&self) -> bool {
        self.color.iter().any(|&c| c != 0)
    }
}
