//! Determinization, trimming and minimization.
//!
//! A [`Dfa`] is a dense table over byte equivalence classes. State 0 is the
//! dead state (every move leads back to it); after [`Dfa::trim`] it is the
//! only state from which acceptance cannot be reached, so "the walk is not
//! dead" and "the walk can still be completed" mean the same thing, which is
//! what lets the vocabulary crossing prune on the dead state alone.

use std::collections::{HashMap, VecDeque};

use crate::error::Limit;
use crate::nfa::Nfa;

pub const DEAD: u32 = 0;

/// A deterministic automaton over byte classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dfa {
    /// The class of each byte.
    pub classes: [u8; 256],
    pub n_classes: usize,
    /// `n_states * n_classes` next states.
    pub trans: Vec<u32>,
    pub accept: Vec<bool>,
    pub start: u32,
}

impl Dfa {
    pub fn n_states(&self) -> usize {
        self.accept.len()
    }

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
        let mut index: HashMap<Vec<u32>, u32> = HashMap::new();
        index.insert(Vec::new(), DEAD);
        let mut start_set = vec![nfa.start];
        closure(&mut start_set);
        index.insert(start_set.clone(), 1);
        sets.push(start_set);
        let mut trans = vec![DEAD; 2 * n_classes];
        let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); n_classes];
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
                let mut set = std::mem::take(&mut buckets[c]);
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
                buckets[c] = set;
            }
            next += 1;
        }
        let accept = sets
            .iter()
            .map(|s| s.binary_search(&nfa.accept).is_ok())
            .collect();
        Ok(Dfa {
            classes,
            n_classes,
            trans,
            accept,
            start: 1,
        })
    }

    /// Sends every state that is unreachable from the start, or from which
    /// no accepting state is reachable, to the dead state, and drops it.
    /// Returns false if the language is empty.
    pub fn trim(&mut self) -> bool {
        let n = self.n_states();
        let k = self.n_classes;
        // Co-reachable: backwards from accepting states.
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        for s in 0..n {
            for c in 0..k {
                let t = self.trans[s * k + c] as usize;
                preds[t].push(s as u32);
            }
        }
        let mut live = vec![false; n];
        let mut queue: VecDeque<u32> = (0..n as u32).filter(|&s| self.accept[s as usize]).collect();
        for &s in &queue {
            live[s as usize] = true;
        }
        while let Some(s) = queue.pop_front() {
            for &p in &preds[s as usize] {
                if !live[p as usize] {
                    live[p as usize] = true;
                    queue.push_back(p);
                }
            }
        }
        live[DEAD as usize] = false;
        if !live[self.start as usize] {
            return false;
        }
        for s in 0..n {
            for c in 0..k {
                if !live[self.trans[s * k + c] as usize] {
                    self.trans[s * k + c] = DEAD;
                }
            }
        }
        self.renumber();
        true
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

    /// Merges byte classes whose columns became identical.
    fn compact_classes(&mut self) {
        let n = self.n_states();
        let k = self.n_classes;
        let mut column_id: HashMap<Vec<u32>, u8> = HashMap::new();
        let mut remap = vec![0u8; k];
        let mut kept = Vec::new();
        for (c, slot) in remap.iter_mut().enumerate() {
            let col: Vec<u32> = (0..n).map(|s| self.trans[s * k + c]).collect();
            let next = column_id.len() as u8;
            *slot = *column_id.entry(col).or_insert_with(|| {
                kept.push(c);
                next
            });
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
            *b = remap[*b as usize];
        }
        self.trans = trans;
        self.n_classes = nk;
    }

    /// Hopcroft's partition refinement: merges states with equal languages.
    /// Call after [`Dfa::trim`]; the result is trimmed and renumbered.
    pub fn minimize(&mut self) {
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
