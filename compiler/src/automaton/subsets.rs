//! The subset construction: an NFA to a [`SparseDfa`], each DFA state a
//! set of NFA states, each set stored once.

use crate::automaton::dfa::{byte_classes, DEAD};
use crate::automaton::nfa::Nfa;
use crate::automaton::sparse::SparseDfa;
use crate::error::Limit;

/// The NFA state sets of a subset construction, by DFA state: one flat
/// buffer of sorted sets and an open-addressing table of their ids keyed
/// by content. (A map from owned sets to ids, beside a list of the same
/// sets, held each set twice with two allocations: at 10,000 distinct
/// tools, 5.9 million sets.)
pub(crate) struct Sets {
    items: Vec<u32>,
    /// Per set where it starts in `items`, and the end.
    start: Vec<usize>,
    /// Per set its hash, to grow the table without rehashing sets.
    hash: Vec<u64>,
    /// Set id + 1 per slot, 0 for an empty slot; a power of two long,
    /// at most half full.
    slots: Vec<u32>,
}

impl Sets {
    fn new() -> Sets {
        Sets {
            items: Vec::new(),
            start: vec![0],
            hash: Vec::new(),
            slots: vec![0; 1024],
        }
    }

    /// The number of sets.
    pub(crate) fn len(&self) -> usize {
        self.hash.len()
    }

    /// Set `id`.
    pub(crate) fn get(&self, id: u32) -> &[u32] {
        &self.items[self.start[id as usize]..self.start[id as usize + 1]]
    }

    /// The sets, by id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u32]> {
        (0..self.len() as u32).map(|id| self.get(id))
    }

    fn hash_of(set: &[u32]) -> u64 {
        let mut h = set.len() as u64;
        for &x in set {
            h = (h.rotate_left(5) ^ x as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        h ^ h >> 29
    }

    /// The id of `set`, or the slot where it would go.
    fn find(&self, set: &[u32], hash: u64) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                id if self.hash[id as usize - 1] == hash && self.get(id - 1) == set => {
                    return Ok(id - 1)
                }
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Adds `set` (not present) at `slot` from [`Sets::find`]; its id.
    fn insert(&mut self, set: &[u32], hash: u64, slot: usize) -> u32 {
        let id = self.len() as u32;
        self.items.extend_from_slice(set);
        self.start.push(self.items.len());
        self.hash.push(hash);
        self.slots[slot] = id + 1;
        if 2 * self.len() > self.slots.len() {
            self.grow();
        }
        id
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; self.slots.len() * 2];
        let mask = slots.len() - 1;
        for (id, &h) in self.hash.iter().enumerate() {
            let mut i = h as usize & mask;
            while slots[i] != 0 {
                i = (i + 1) & mask;
            }
            slots[i] = id as u32 + 1;
        }
        self.slots = slots;
    }

    /// Bytes held, for the memory account.
    fn bytes(&self) -> usize {
        self.items.capacity() * 4
            + self.start.capacity() * 8
            + self.hash.capacity() * 8
            + self.slots.len() * 4
    }
}

/// Subset construction: the DFA, each state's regions when `labeled` (the
/// sorted regions of its NFA states that read a byte, see
/// [`crate::automaton::region`]), and each state's NFA states. Fails
/// beyond `max_states` DFA states and on the compile's limits.
pub(crate) fn subsets(
    nfa: &Nfa,
    max_states: usize,
    labeled: bool,
) -> Result<(SparseDfa, Vec<Vec<u32>>, Sets), Limit> {
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

    let mut sets = Sets::new();
    let empty = sets.find(&[], Sets::hash_of(&[])).expect_err("new");
    sets.insert(&[], Sets::hash_of(&[]), empty);
    let mut set = vec![nfa.start];
    closure(&mut set);
    let h = Sets::hash_of(&set);
    let slot = sets.find(&set, h).expect_err("new");
    sets.insert(&set, h, slot);
    let mut dfa = SparseDfa::building(classes, n_classes);
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); n_classes];
    let mut next = 1usize;
    // The memory account: the NFA, the sets and the moves.
    let nfa_bytes = nfa.states.len() * crate::automaton::nfa::STATE_BYTES;
    while next < sets.len() {
        let held = nfa_bytes + sets.bytes() + dfa.bytes();
        if let Err(limit) = crate::limits::check("determinize", held) {
            // Where the construction was: the region of the first NFA
            // state of the set being expanded that reads a byte.
            let region = sets
                .get(next as u32)
                .iter()
                .map(|&s| &nfa.states[s as usize])
                .find(|st| !st.ranges.is_empty())
                .map(|st| st.region);
            return Err(region.map_or(limit, |r| limit.in_region(r)));
        }
        for b in buckets.iter_mut() {
            b.clear();
        }
        for &s in sets.get(next as u32) {
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
                let t = dfa.last_move(c - 1).expect("the previous class moved");
                dfa.push_move(c, t);
                continue;
            }
            set.clear();
            set.extend_from_slice(&buckets[c]);
            closure(&mut set);
            let h = Sets::hash_of(&set);
            let id = match sets.find(&set, h) {
                Ok(id) => id,
                Err(slot) => {
                    if sets.len() >= max_states {
                        return Err(Limit::DfaStates(max_states));
                    }
                    sets.insert(&set, h, slot)
                }
            };
            debug_assert!(id != DEAD, "a closure of targets is never empty");
            dfa.push_move(c, id);
        }
        dfa.push_row();
        next += 1;
    }
    dfa.accept = sets
        .iter()
        .map(|s| s.binary_search(&nfa.accept).is_ok())
        .collect();
    let labels = if labeled {
        // One word per NFA state, read in set order: the states themselves
        // (moves and all) are ten times larger and would be read at random.
        let reads: Vec<u32> = nfa
            .states
            .iter()
            .map(|st| {
                if st.ranges.is_empty() {
                    u32::MAX
                } else {
                    st.region
                }
            })
            .collect();
        sets.iter()
            .map(|set| {
                let mut l: Vec<u32> = set
                    .iter()
                    .map(|&s| reads[s as usize])
                    .filter(|&r| r != u32::MAX)
                    .collect();
                l.sort_unstable();
                l.dedup();
                l
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok((dfa, labels, sets))
}
