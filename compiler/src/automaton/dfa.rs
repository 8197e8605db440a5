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

/// The largest cyclic component [`Dfa::merge_bottom_up`] puts in canonical
/// form (the cost is quadratic in its size); larger ones are left to
/// Hopcroft.
pub const MERGE_SCC_MAX: usize = 48;

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

/// FNV-1a over a slice of words.
fn hash_u32s(xs: &[u32]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in xs {
        h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
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
        // Byte classes: bytes no range boundary separates behave the same.
        let mut boundary = [false; 257];
        for st in &nfa.states {
            for &(lo, hi, _) in &st.ranges {
                boundary[lo as usize] = true;
                boundary[hi as usize + 1] = true;
            }
        }
        let mut classes = [0u8; 256];
        let mut n_classes = 0usize;
        for b in 0..256 {
            if b > 0 && boundary[b] {
                n_classes += 1;
            }
            classes[b] = n_classes as u8;
        }
        let n_classes = n_classes + 1;

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
        while next < sets.len() {
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

    /// Carries the labels of this DFA's states (as [`Dfa::determinize_labeled`]
    /// gives them) to `min`, a DFA of the same language made from this one
    /// by trimming and minimizing: walking both in step from their starts
    /// pairs every live state here with the state it became there, and a
    /// state there gets the union of the labels of the states it stands for.
    pub fn carry_labels(&self, labels: &[Vec<u32>], min: &Dfa) -> Vec<Vec<u32>> {
        let mut out: Vec<Vec<u32>> = vec![Vec::new(); min.n_states()];
        let mut seen = vec![false; self.n_states()];
        // One byte per class of this DFA: its classes refine min's.
        let mut reps = vec![0u8; self.n_classes];
        for b in (0..=255u8).rev() {
            reps[self.classes[b as usize] as usize] = b;
        }
        let mut stack = vec![(self.start, min.start)];
        seen[self.start as usize] = true;
        while let Some((p, m)) = stack.pop() {
            out[m as usize].extend_from_slice(&labels[p as usize]);
            for &b in &reps {
                let (p2, m2) = (self.next(p, b), min.next(m, b));
                if m2 != DEAD && !seen[p2 as usize] {
                    seen[p2 as usize] = true;
                    stack.push((p2, m2));
                }
            }
        }
        for l in &mut out {
            l.sort_unstable();
            l.dedup();
        }
        out
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

    /// Renumbers states in breadth-first order from the start (dead = 0,
    /// start = 1), dropping unreachable ones. The order depends only on the
    /// language's structure, so equal inputs give identical tables.
    pub fn renumber(&mut self) {
        let n = self.n_states();
        let k = self.n_classes;
        let mut new_id = vec![u32::MAX; n];
        new_id[DEAD as usize] = DEAD;
        let mut order = vec![DEAD];
        let mut queue = VecDeque::from([self.start]);
        new_id[self.start as usize] = 1;
        order.push(self.start);
        while let Some(s) = queue.pop_front() {
            for c in 0..k {
                let t = self.trans[s as usize * k + c];
                if new_id[t as usize] == u32::MAX {
                    new_id[t as usize] = order.len() as u32;
                    order.push(t);
                    queue.push_back(t);
                }
            }
        }
        let mut trans = Vec::with_capacity(order.len() * k);
        for &s in &order {
            trans.extend(
                self.trans[s as usize * k..(s as usize + 1) * k]
                    .iter()
                    .map(|&t| new_id[t as usize]),
            );
        }
        self.accept = order.iter().map(|&s| self.accept[s as usize]).collect();
        self.trans = trans;
        self.start = 1;
        self.compact_classes();
    }

    /// Merges byte classes whose columns became identical. Class ids are
    /// counted in `u16` so that [`Dfa::minimize_colored`]'s extra class
    /// (the last column, which no byte maps to) may be a 257th: byte
    /// classes, numbered first, stay below 256.
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

    /// Merges states with equal languages: first bottom-up over strongly
    /// connected components ([`Dfa::merge_bottom_up`]), which is linear and
    /// does most of the work on tool sets (identical argument machines,
    /// shared name suffixes), then Hopcroft's partition refinement on what
    /// is left, which makes the result exactly minimal.
    /// Call after [`Dfa::trim`]; the result is trimmed and renumbered.
    pub fn minimize(&mut self) {
        self.merge_bottom_up();
        self.hopcroft();
    }

    /// A sound, linear-time pre-pass of minimization. Components of the
    /// transition graph are visited sinks first (Tarjan's order), so when a
    /// component is reached every state it leads out to already has its
    /// final class. A state that is its own component gets the class of
    /// any earlier state with the same acceptance and the same classes of
    /// targets; a cyclic component of at most [`MERGE_SCC_MAX`] states is
    /// written in a canonical form (the least breadth-first encoding over
    /// its possible roots, targets outside as classes) and shares classes
    /// with an earlier component of the same form. Only equivalent states
    /// are merged; those it misses (say, a loop equal to a state it exits
    /// to) are left for Hopcroft.
    ///
    /// One function on purpose: Tarjan's iterative walk, the per-component
    /// canonical encoding and the class table share their state (the
    /// stack, the low links, the classes so far), and the order of those
    /// steps is the soundness argument above; split, that argument would be
    /// spread over functions that each hold part of the walk.
    pub fn merge_bottom_up(&mut self) {
        let n = self.n_states();
        let k = self.n_classes;
        if n <= 2 {
            return;
        }
        const NONE: u32 = u32::MAX;
        const LOCAL: u32 = 1 << 31;
        let mut class_of = vec![NONE; n];
        let mut reps: Vec<u32> = vec![DEAD];
        class_of[DEAD as usize] = 0;
        // Single states: signature hash -> first class; chains for collisions.
        let mut single: HashMap<u64, u32> = HashMap::new();
        let mut chain: Vec<u32> = vec![NONE];
        // Cyclic components: canonical encoding -> classes in encoding order.
        let mut cyclic: HashMap<Vec<u32>, Vec<u32>> = HashMap::new();

        // Iterative Tarjan.
        let mut index = vec![NONE; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut stack: Vec<u32> = Vec::new();
        let mut call: Vec<(u32, u32)> = Vec::new();
        let mut next_index = 0u32;
        let mut comp: Vec<u32> = Vec::new();
        let mut sig: Vec<u32> = Vec::with_capacity(k + 1);
        let mut order: Vec<u32> = Vec::new();
        let mut best: Vec<u32> = Vec::new();
        let mut best_order: Vec<u32> = Vec::new();
        let mut enc: Vec<u32> = Vec::new();
        let mut local = vec![NONE; n];
        let row = |s: u32| -> &[u32] { &self.trans[s as usize * k..(s as usize + 1) * k] };
        for root in 1..n as u32 {
            if index[root as usize] != NONE {
                continue;
            }
            call.push((root, 0));
            index[root as usize] = next_index;
            low[root as usize] = next_index;
            next_index += 1;
            stack.push(root);
            on_stack[root as usize] = true;
            while let Some(&mut (v, ref mut ci)) = call.last_mut() {
                if (*ci as usize) < k {
                    let w = row(v)[*ci as usize];
                    *ci += 1;
                    if w == DEAD {
                        continue;
                    }
                    if index[w as usize] == NONE {
                        index[w as usize] = next_index;
                        low[w as usize] = next_index;
                        next_index += 1;
                        stack.push(w);
                        on_stack[w as usize] = true;
                        call.push((w, 0));
                    } else if on_stack[w as usize] {
                        low[v as usize] = low[v as usize].min(index[w as usize]);
                    }
                    continue;
                }
                call.pop();
                if let Some(&(u, _)) = call.last() {
                    low[u as usize] = low[u as usize].min(low[v as usize]);
                }
                if low[v as usize] != index[v as usize] {
                    continue;
                }
                comp.clear();
                loop {
                    let w = stack.pop().expect("Tarjan stack");
                    on_stack[w as usize] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                let s0 = comp[0];
                let self_loop = row(s0).contains(&s0);
                if comp.len() == 1 && !self_loop {
                    // Acyclic state: look its signature up.
                    sig.clear();
                    sig.push(self.accept[s0 as usize] as u32);
                    sig.extend(row(s0).iter().map(|&t| class_of[t as usize]));
                    let h = hash_u32s(&sig);
                    let mut cand = single.get(&h).copied().unwrap_or(NONE);
                    while cand != NONE {
                        let r = reps[cand as usize];
                        if self.accept[r as usize] as u32 == sig[0]
                            && row(r)
                                .iter()
                                .zip(&sig[1..])
                                .all(|(&t, &c)| class_of[t as usize] == c)
                        {
                            break;
                        }
                        cand = chain[cand as usize];
                    }
                    if cand == NONE {
                        cand = reps.len() as u32;
                        reps.push(s0);
                        chain.push(single.get(&h).copied().unwrap_or(NONE));
                        single.insert(h, cand);
                    }
                    class_of[s0 as usize] = cand;
                    continue;
                }
                if comp.len() > MERGE_SCC_MAX {
                    for &s in &comp {
                        class_of[s as usize] = reps.len() as u32;
                        reps.push(s);
                        chain.push(NONE);
                    }
                    continue;
                }
                // Canonical form of a small cyclic component: the least
                // breadth-first encoding over all roots. `local` numbers the
                // component's states (UNSEEN before the walk reaches them);
                // it is NONE for every state outside.
                const UNSEEN: u32 = NONE - 1;
                best.clear();
                for &r in &comp {
                    for &s in &comp {
                        local[s as usize] = UNSEEN;
                    }
                    local[r as usize] = 0;
                    order.clear();
                    order.push(r);
                    enc.clear();
                    let mut i = 0;
                    let mut complete = true;
                    while i < order.len() {
                        let s = order[i];
                        i += 1;
                        enc.push(self.accept[s as usize] as u32);
                        for &t in row(s) {
                            let lt = local[t as usize];
                            if lt == UNSEEN {
                                local[t as usize] = order.len() as u32;
                                enc.push(LOCAL | order.len() as u32);
                                order.push(t);
                            } else if lt != NONE {
                                enc.push(LOCAL | lt);
                            } else {
                                enc.push(class_of[t as usize]);
                            }
                        }
                        // Already greater than the best prefix: stop.
                        if !best.is_empty() && enc.as_slice() > &best[..enc.len()] {
                            complete = false;
                            break;
                        }
                    }
                    if complete && (best.is_empty() || enc < best) {
                        std::mem::swap(&mut best, &mut enc);
                        best_order.clear();
                        best_order.extend_from_slice(&order);
                    }
                }
                for &s in &comp {
                    local[s as usize] = NONE;
                }
                match cyclic.get(&best) {
                    Some(classes) => {
                        for (&s, &c) in best_order.iter().zip(classes) {
                            class_of[s as usize] = c;
                        }
                    }
                    None => {
                        let mut classes = Vec::with_capacity(best_order.len());
                        for &s in &best_order {
                            class_of[s as usize] = reps.len() as u32;
                            classes.push(reps.len() as u32);
                            reps.push(s);
                            chain.push(NONE);
                        }
                        cyclic.insert(best.clone(), classes);
                    }
                }
            }
        }
        drop((index, low, on_stack, single, chain, cyclic, local));
        if reps.len() == n {
            return;
        }
        let mut trans = Vec::with_capacity(reps.len() * k);
        for &r in &reps {
            trans.extend(row(r).iter().map(|&t| class_of[t as usize]));
        }
        self.accept = reps.iter().map(|&r| self.accept[r as usize]).collect();
        self.start = class_of[self.start as usize];
        self.trans = trans;
        self.renumber();
    }

    /// Hopcroft's partition refinement: merges states with equal languages.
    /// Kept whole, as the textbook algorithm reads: the partition, the
    /// splitter worklist and the inverse transitions are one data structure
    /// updated together.
    fn hopcroft(&mut self) {
        let n = self.n_states();
        let k = self.n_classes;
        if n <= 2 {
            return;
        }
        // Inverse transitions, per class, as CSR over target states.
        let mut inv_start = vec![0u32; k * (n + 1)];
        for s in 0..n {
            for c in 0..k {
                let t = self.trans[s * k + c] as usize;
                inv_start[c * (n + 1) + t + 1] += 1;
            }
        }
        for c in 0..k {
            let row = &mut inv_start[c * (n + 1)..(c + 1) * (n + 1)];
            for i in 1..=n {
                row[i] += row[i - 1];
            }
        }
        let mut inv = vec![0u32; n * k];
        {
            let mut fill = inv_start.clone();
            for s in 0..n {
                for c in 0..k {
                    let t = self.trans[s * k + c] as usize;
                    let slot = &mut fill[c * (n + 1) + t];
                    inv[c * n + *slot as usize] = s as u32;
                    *slot += 1;
                }
            }
        }

        // Blocks are ranges of `elems`; `loc` is each state's position.
        let mut elems: Vec<u32> = (0..n as u32).collect();
        elems.sort_by_key(|&s| !self.accept[s as usize]);
        let mut loc = vec![0usize; n];
        for (i, &s) in elems.iter().enumerate() {
            loc[s as usize] = i;
        }
        let n_accept = self.accept.iter().filter(|&&a| a).count();
        let mut block_of = vec![0u32; n];
        let mut blocks: Vec<(usize, usize)> = Vec::new(); // [start, end)
        let mut marked: Vec<usize> = Vec::new(); // marked count per block
        if n_accept > 0 {
            blocks.push((0, n_accept));
            marked.push(0);
        }
        if n_accept < n {
            blocks.push((n_accept, n));
            marked.push(0);
        }
        for (b, &(lo, hi)) in blocks.iter().enumerate() {
            for &s in &elems[lo..hi] {
                block_of[s as usize] = b as u32;
            }
        }
        let mut in_work = vec![false; blocks.len() * k];
        let mut work: Vec<(u32, u16)> = Vec::new();
        for b in 0..blocks.len() {
            for c in 0..k {
                in_work[b * k + c] = true;
                work.push((b as u32, c as u16));
            }
        }
        let mut preds = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        while let Some((b, c)) = work.pop() {
            let (b, c) = (b as usize, c as usize);
            in_work[b * k + c] = false;
            preds.clear();
            let (lo, hi) = blocks[b];
            for &t in &elems[lo..hi] {
                let row = c * (n + 1);
                let (a, z) = (
                    inv_start[row + t as usize] as usize,
                    inv_start[row + t as usize + 1] as usize,
                );
                preds.extend_from_slice(&inv[c * n + a..c * n + z]);
            }
            touched.clear();
            for &s in &preds {
                let sb = block_of[s as usize] as usize;
                let (start, _) = blocks[sb];
                let m = marked[sb];
                let pos = loc[s as usize];
                if pos < start + m {
                    continue; // already marked
                }
                if m == 0 {
                    touched.push(sb as u32);
                }
                // Swap s into the marked prefix of its block.
                let other = elems[start + m];
                elems.swap(pos, start + m);
                loc[other as usize] = pos;
                loc[s as usize] = start + m;
                marked[sb] += 1;
            }
            for &sb in &touched {
                let sb = sb as usize;
                let (start, end) = blocks[sb];
                let m = marked[sb];
                marked[sb] = 0;
                if m == end - start {
                    continue;
                }
                // Split: the marked prefix becomes a new block.
                let nb = blocks.len();
                blocks.push((start, start + m));
                marked.push(0);
                blocks[sb] = (start + m, end);
                for &s in &elems[start..start + m] {
                    block_of[s as usize] = nb as u32;
                }
                in_work.extend(std::iter::repeat_n(false, k));
                let small = if m <= end - start - m { nb } else { sb };
                for c2 in 0..k {
                    if in_work[sb * k + c2] {
                        in_work[nb * k + c2] = true;
                        work.push((nb as u32, c2 as u16));
                    } else {
                        in_work[small * k + c2] = true;
                        work.push((small as u32, c2 as u16));
                    }
                }
            }
        }

        // Rebuild with one state per block, the dead state's block first.
        let dead_block = block_of[DEAD as usize] as usize;
        let mut id_of_block = vec![u32::MAX; blocks.len()];
        id_of_block[dead_block] = DEAD;
        let mut next_id = 1;
        let mut rep = vec![DEAD as usize];
        for (s, &b) in block_of.iter().enumerate() {
            let b = b as usize;
            if id_of_block[b] == u32::MAX {
                id_of_block[b] = next_id;
                next_id += 1;
                rep.push(s);
            }
        }
        let mut trans = Vec::with_capacity(rep.len() * k);
        for &s in &rep {
            trans.extend(
                (0..k).map(|c| id_of_block[block_of[self.trans[s * k + c] as usize] as usize]),
            );
        }
        self.accept = rep.iter().map(|&s| self.accept[s]).collect();
        self.start = id_of_block[block_of[self.start as usize] as usize];
        self.trans = trans;
        self.renumber();
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

impl Dfa {
    /// Carries one colour per state (as [`Dfa::carry_labels`] carries
    /// labels) to `other`, a DFA in which every state stands for states of
    /// this one with a single colour (a renumbering, or a quotient that
    /// kept colours apart).
    pub fn carry_colors(&self, colors: &[u32], other: &Dfa) -> Vec<u32> {
        let labels: Vec<Vec<u32>> = colors.iter().map(|&c| vec![c]).collect();
        self.carry_labels(&labels, other)
            .into_iter()
            .map(|l| l.iter().copied().max().unwrap_or(0))
            .collect()
    }

    /// [`Dfa::minimize`] keeping states of different colours apart
    /// (`colors`: one per state, 0 = none, `n_colors` in all): the coarsest
    /// quotient in which merged states have the same language and the same
    /// colour along every path. Returns each new state's colour.
    ///
    /// Done by the plain minimizer on an extended machine: an extra byte
    /// class that no byte maps to leads each coloured state into a chain of
    /// `n_colors` states, colour `c` entering it so that `n_colors - c`
    /// steps on that class remain, so different colours give different
    /// languages. Afterwards the colours are read back off the extra class
    /// and the class and the chain are dropped.
    pub fn minimize_colored(&mut self, colors: &[u32], n_colors: usize) -> Vec<u32> {
        let n = self.n_states();
        let k = self.n_classes;
        let m = n_colors.saturating_sub(1) as u32;
        if m == 0 || !colors.iter().any(|&c| c != 0) {
            self.minimize();
            return vec![0; self.n_states()];
        }
        let k2 = k + 1;
        let chain = n as u32; // X_0 .. X_m at n .. n + m
        let mut trans = Vec::with_capacity((n + m as usize + 1) * k2);
        for (s, &c) in colors.iter().enumerate().take(n) {
            trans.extend_from_slice(&self.trans[s * k..(s + 1) * k]);
            trans.push(if c == 0 || s == DEAD as usize {
                DEAD
            } else {
                chain + c - 1
            });
        }
        for j in 0..=m {
            trans.extend(std::iter::repeat_n(DEAD, k));
            trans.push(if j < m { chain + j + 1 } else { DEAD });
        }
        self.trans = trans;
        self.n_classes = k2;
        self.accept.extend((0..=m).map(|j| j == m));
        self.minimize();
        // The extra class: the one no byte maps to.
        let k2 = self.n_classes;
        let mut used = vec![false; k2];
        for &c in self.classes.iter() {
            used[c as usize] = true;
        }
        let Some(x) = (0..k2).find(|&c| !used[c]) else {
            // Every colour was trimmed away with its states.
            return vec![0; self.n_states()];
        };
        // Steps left on the extra class from each state (memoized).
        let n2 = self.n_states();
        const UNKNOWN: u32 = u32::MAX;
        let mut left = vec![UNKNOWN; n2];
        let mut path = Vec::new();
        for s in 0..n2 {
            let mut t = s as u32;
            path.clear();
            while left[t as usize] == UNKNOWN {
                let next = self.trans[t as usize * k2 + x];
                if next == DEAD {
                    left[t as usize] = 0;
                    break;
                }
                path.push(t);
                t = next;
            }
            let mut l = left[t as usize];
            for &p in path.iter().rev() {
                l += 1;
                left[p as usize] = l;
            }
        }
        let with_x = self.clone();
        // colour c enters X_{c-1}, from which m - (c - 1) steps remain.
        let colors_x: Vec<u32> = (0..n2)
            .map(|s| match self.trans[s * k2 + x] {
                DEAD => 0,
                t => m + 1 - left[t as usize],
            })
            .collect();
        let mut trans = Vec::with_capacity(n2 * (k2 - 1));
        for s in 0..n2 {
            let row = &self.trans[s * k2..(s + 1) * k2];
            trans.extend(
                row.iter()
                    .enumerate()
                    .filter(|&(c, _)| c != x)
                    .map(|(_, &t)| t),
            );
        }
        for c in self.classes.iter_mut() {
            if *c as usize > x {
                *c -= 1;
            }
        }
        self.trans = trans;
        self.n_classes = k2 - 1;
        self.renumber();
        with_x.carry_colors(&colors_x, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random DFA over `k` classes, doubled: a new start state leads to
    /// two copies of one random automaton (by the first two classes), and
    /// some moves of the second copy cross into the first. The copies'
    /// states are pairwise equivalent, so there is much to merge, in
    /// acyclic parts and in loops alike. Odd seeds add the crossing moves
    /// (which the pre-pass may leave to Hopcroft); even seeds keep the
    /// copies exact.
    fn random_dfa(seed: u64, m: usize, k: usize) -> Dfa {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let k = k.max(2);
        let n = 2 + 2 * m;
        let mut trans = vec![DEAD; n * k];
        let mut accept = vec![false; n];
        // Template state i (0..m) is state 2 + i in copy one, 2 + m + i in two.
        for i in 0..m {
            accept[2 + i] = next() % 3 == 0;
            accept[2 + m + i] = accept[2 + i];
            for c in 0..k {
                let r = next();
                if r % 4 == 0 {
                    continue;
                }
                let j = (r >> 8) as usize % m;
                trans[(2 + i) * k + c] = (2 + j) as u32;
                let cross = seed % 2 == 1 && (r >> 40) % 3 == 0;
                trans[(2 + m + i) * k + c] = if cross { 2 + j } else { 2 + m + j } as u32;
            }
        }
        trans[k] = 2;
        trans[k + 1] = (2 + m) as u32;
        let mut classes = [0u8; 256];
        for (b, c) in classes.iter_mut().enumerate() {
            *c = (b % k) as u8;
        }
        Dfa {
            classes,
            n_classes: k,
            trans,
            accept,
            start: 1,
        }
    }

    /// Whether two DFAs accept the same language (product reachability).
    fn same_language(a: &Dfa, b: &Dfa) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![(a.start, b.start)];
        while let Some((s, t)) = todo.pop() {
            if !seen.insert((s, t)) {
                continue;
            }
            if a.accept[s as usize] != b.accept[t as usize] {
                return false;
            }
            for byte in 0..=255u8 {
                todo.push((a.next(s, byte), b.next(t, byte)));
            }
        }
        true
    }

    #[test]
    fn bottom_up_merge_keeps_the_language_and_hopcroft_finishes_it() {
        let mut shrunk = 0;
        for seed in 0..300u64 {
            let n = 1 + (seed as usize * 7) % 30;
            let k = 2 + (seed as usize) % 3;
            let mut d = random_dfa(seed, n, k);
            if !d.trim() {
                continue;
            }
            let mut merged = d.clone();
            merged.merge_bottom_up();
            assert!(merged.n_states() <= d.n_states());
            shrunk += (merged.n_states() < d.n_states()) as usize;
            if seed % 2 == 0 {
                // Exact copies: the pre-pass alone folds them into one.
                assert!(
                    merged.n_states() <= 2 + (d.n_states() - 2) / 2,
                    "seed {seed}: {} states left of {}",
                    merged.n_states(),
                    d.n_states()
                );
            }
            assert!(
                same_language(&d, &merged),
                "seed {seed}: merge changed the language"
            );
            let mut full = d.clone();
            full.hopcroft();
            merged.hopcroft();
            assert_eq!(
                merged, full,
                "seed {seed}: the minimal DFA depends on the pre-pass"
            );
        }
        assert!(
            shrunk >= 150,
            "only {shrunk} random DFAs had states to merge"
        );
    }

    /// Colour-keeping minimization: the language is the minimal DFA's,
    /// every state reached by a word has the colour of the state the
    /// original reaches by it, and states are merged as far as colours
    /// allow (no more states than original, no fewer than plain).
    #[test]
    fn colored_minimization_keeps_colours_and_language() {
        for seed in 0..200u64 {
            let n = 1 + (seed as usize * 5) % 25;
            // Every tenth with all 256 byte classes: the extra class is a
            // 257th.
            let k = if seed % 10 == 0 {
                256
            } else {
                2 + (seed as usize) % 3
            };
            let mut d = random_dfa(seed, n, k);
            if !d.trim() {
                continue;
            }
            let n_colors = 1 + (seed as usize % 4);
            let colors: Vec<u32> = (0..d.n_states())
                .map(|s| {
                    if s == 0 {
                        0
                    } else {
                        ((s as u64 * 2654435761 + seed) % n_colors as u64) as u32
                    }
                })
                .collect();
            let mut plain = d.clone();
            plain.minimize();
            let mut col = d.clone();
            let got = col.minimize_colored(&colors, n_colors);
            assert!(same_language(&d, &col), "seed {seed}: language changed");
            assert!(col.n_states() >= plain.n_states(), "seed {seed}");
            assert!(col.n_states() <= d.n_states(), "seed {seed}");
            // Colours along every pair of states reached by one word.
            let mut seen = std::collections::HashSet::new();
            let mut todo = vec![(d.start, col.start)];
            while let Some((s, t)) = todo.pop() {
                if !seen.insert((s, t)) {
                    continue;
                }
                assert_eq!(colors[s as usize], got[t as usize], "seed {seed}");
                for byte in 0..=255u8 {
                    let (s2, t2) = (d.next(s, byte), col.next(t, byte));
                    assert_eq!(s2 == DEAD, t2 == DEAD, "seed {seed}");
                    if s2 != DEAD {
                        todo.push((s2, t2));
                    }
                }
            }
            // Without colours it is the plain minimization.
            let mut none = d.clone();
            let z = none.minimize_colored(&vec![0; d.n_states()], 1);
            assert_eq!(none, plain, "seed {seed}");
            assert!(z.iter().all(|&c| c == 0));
        }
    }

    #[test]
    fn identical_loops_merge_before_hopcroft() {
        // Two copies of `a*b` behind `x` and `y`: the pre-pass alone merges
        // the copies (one loop state, one final state).
        let mut classes = [0u8; 256];
        for (b, c) in [(b'x', 1u8), (b'y', 2), (b'a', 3), (b'b', 4)] {
            classes[b as usize] = c;
        }
        let k = 5;
        // states: 0 dead, 1 start, 2/3 loops, 4/5 finals.
        let mut trans = vec![DEAD; 6 * k];
        trans[k + 1] = 2;
        trans[k + 2] = 3;
        trans[2 * k + 3] = 2;
        trans[2 * k + 4] = 4;
        trans[3 * k + 3] = 3;
        trans[3 * k + 4] = 5;
        let accept = vec![false, false, false, false, true, true];
        let mut d = Dfa {
            classes,
            n_classes: k,
            trans,
            accept,
            start: 1,
        };
        let before = d.clone();
        d.merge_bottom_up();
        assert_eq!(d.n_states(), 4, "dead, start, loop, final");
        assert!(same_language(&before, &d));
    }
}
