//! The machine: BYTE_CLASSES, TRANSITIONS and STATES.

use super::header::Counts;
use super::layout::{self, sec, slot, STATE_ACCEPTING};
use super::Source;
use crate::error::Error;

/// The DFA over bytes: each byte's class, the transitions as overlaid
/// sparse rows ([`layout::slot`]) and per state its mask id and accepting
/// flag.
#[derive(Clone, Copy, Debug)]
pub struct Dfa<'a> {
    /// BYTE_CLASSES: the class of each byte value (256 bytes).
    pub classes: &'a [u8],
    /// The number of byte classes (1–256): the width of a row.
    pub n_classes: u32,
    /// TRANSITIONS: per state its row start, then the slots
    /// ([`sec::TRANSITIONS`]).
    pub transitions: &'a [u32],
    /// STATES: bit 31 accepting ([`STATE_ACCEPTING`]), bits 0–30 the mask id.
    pub states: &'a [u32],
}

impl<'a> Dfa<'a> {
    /// Reads and checks the three sections: byte classes below the class
    /// count; every row start past the row-start table with a whole row
    /// inside the section; every slot empty or a class below the class
    /// count with a live target below the state count; the dead state
    /// without moves; every mask id below the mask count and the dead
    /// state not accepting.
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let n_classes = c.n_classes;
        let nc = n_classes as usize;
        let classes = src.bytes(sec::BYTE_CLASSES);
        if classes.len() != 256 {
            return Err(Error::field(
                "byte class table length",
                256,
                classes.len() as u64,
            ));
        }
        if let Some((b, &k)) = classes.iter().enumerate().find(|(_, &k)| k as usize >= nc) {
            return Err(Error::range(
                "byte class of byte",
                b as u64,
                k as u64,
                nc as u64,
            ));
        }
        let transitions = src.words(sec::TRANSITIONS, None)?;
        let n = c.n_states;
        if transitions.len() < n + nc {
            return Err(Error::section(
                sec::TRANSITIONS,
                "is shorter than its row starts and one row",
            ));
        }
        let last_start = (transitions.len() - nc) as u64;
        for (s, &row) in transitions[..n].iter().enumerate() {
            if (row as usize) < n || row as u64 > last_start {
                return Err(Error::range(
                    "row start of state",
                    s as u64,
                    row as u64,
                    last_start + 1,
                ));
            }
        }
        for (i, &w) in transitions.iter().enumerate().skip(n) {
            let (class, target) = (w >> slot::CLASS_SHIFT, w & slot::TARGET);
            if w == 0 {
                continue;
            }
            if class as usize >= nc {
                return Err(Error::range(
                    "class of slot",
                    i as u64,
                    class as u64,
                    nc as u64,
                ));
            }
            if target == layout::DEAD_STATE || target as usize >= n {
                return Err(Error::range(
                    "transition of slot",
                    i as u64,
                    target as u64,
                    n as u64,
                ));
            }
        }
        let states = src.words(sec::STATES, Some(n))?;
        let dfa = Dfa {
            classes,
            n_classes,
            transitions,
            states,
        };
        if let Some(t) = (0..n_classes)
            .map(|k| dfa.step(layout::DEAD_STATE, k))
            .find(|&t| t != layout::DEAD_STATE)
        {
            return Err(Error::field(
                "transition out of the dead state",
                0,
                t as u64,
            ));
        }
        for (i, &w) in states.iter().enumerate() {
            let mask = w & !STATE_ACCEPTING;
            if mask as usize >= c.n_masks {
                return Err(Error::range(
                    "mask id of state",
                    i as u64,
                    mask as u64,
                    c.n_masks as u64,
                ));
            }
        }
        if states[0] & STATE_ACCEPTING != 0 {
            return Err(Error::field("accepting flag of the dead state", 0, 1));
        }
        Ok(dfa)
    }

    /// The state reached from `state` on byte class `class` (0: dead, or
    /// out of range). Two dependent loads: the row start, then the slot.
    #[inline]
    fn step(&self, state: u32, class: u32) -> u32 {
        if state as usize >= self.states.len() {
            return layout::DEAD_STATE;
        }
        let t = self.transitions;
        let Some(&row) = t.get(state as usize) else {
            return layout::DEAD_STATE;
        };
        match t.get(row as usize + class as usize) {
            Some(&w) => slot::target_on(w, class),
            None => layout::DEAD_STATE,
        }
    }

    /// The state reached from `state` on `byte` (0: dead, or out of range).
    #[inline]
    pub(crate) fn next_state(&self, state: u32, byte: u8) -> u32 {
        let class = self.classes.get(byte as usize).copied().unwrap_or(0);
        self.step(state, class as u32)
    }

    /// Walks `bytes` from `state`; `None` if the walk dies. A token's
    /// bytes often stay in one state (string bodies, free text), so the row
    /// start is read again only when the state changes.
    #[inline]
    pub(crate) fn walk(&self, mut state: u32, bytes: &[u8]) -> Option<u32> {
        if state as usize >= self.states.len() {
            return None;
        }
        let classes: &[u8; 256] = self.classes.try_into().ok()?;
        let t = self.transitions;
        let mut row = *t.get(state as usize)? as usize;
        for &b in bytes {
            let class = classes[b as usize] as u32;
            let next = slot::target_on(*t.get(row + class as usize)?, class);
            if next == layout::DEAD_STATE {
                return None;
            }
            if next != state {
                state = next;
                row = *t.get(state as usize)? as usize;
            }
        }
        Some(state)
    }

    /// Whether `state` accepts (false out of range).
    #[inline]
    pub(crate) fn is_accepting(&self, state: u32) -> bool {
        self.states
            .get(state as usize)
            .is_some_and(|w| w & STATE_ACCEPTING != 0)
    }

    /// The mask id `state` serves without a budget.
    #[inline]
    pub(crate) fn mask_id(&self, state: u32) -> Option<u32> {
        self.states
            .get(state as usize)
            .map(|w| w & !STATE_ACCEPTING)
    }

    /// The one text byte that leads on from `state`, if exactly one does:
    /// `None` when there is a choice, no way on, or only a reserved byte
    /// (a special token or an entry selector, never text).
    pub(crate) fn only_byte(&self, state: u32) -> Option<u8> {
        let mut live = (0..self.n_classes).filter(|&k| self.step(state, k) != layout::DEAD_STATE);
        let class = live.next()?;
        if live.next().is_some() {
            return None;
        }
        let mut bytes = (0..=255u8).filter(|&b| self.classes[b as usize] as u32 == class);
        let byte = bytes.next()?;
        (bytes.next().is_none() && !layout::reserved::is_reserved(byte)).then_some(byte)
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.bytes(sec::BYTE_CLASSES, self.classes);
        out.words(sec::TRANSITIONS, self.transitions);
        out.words(sec::STATES, self.states);
    }

    /// The TRANSITIONS section for a dense `states × n_classes` table
    /// (row 0 the dead state, all zeros): the live moves of each state
    /// overlaid by row displacement ([`layout::slot`]). Refused past
    /// [`layout::MAX_STATES`] states or 4 GiB.
    #[cfg(feature = "std")]
    pub fn pack(dense: &[u32], n_classes: u32) -> Result<std::vec::Vec<u32>, super::WriteError> {
        let nc = (n_classes as usize).max(1);
        Dfa::pack_rows(dense.len() / nc, n_classes, |s, out| {
            let row = &dense[s * nc..(s + 1) * nc];
            out.extend(
                row.iter()
                    .enumerate()
                    .filter(|(_, &t)| t != 0)
                    .map(|(k, &t)| (k, t)),
            );
        })
    }

    /// [`Dfa::pack`] for `n_states` rows given by their live moves:
    /// `row(s, out)` appends state `s`'s `(class, target)` moves, classes
    /// ascending, targets never the dead state, to `out` (which it finds
    /// empty). The same rows give the same words, however they are held.
    #[cfg(feature = "std")]
    pub fn pack_rows(
        n_states: usize,
        n_classes: u32,
        row: impl Fn(usize, &mut std::vec::Vec<(usize, u32)>),
    ) -> Result<std::vec::Vec<u32>, super::WriteError> {
        if n_states > layout::MAX_STATES {
            return Err(super::WriteError::States(n_states));
        }
        pack::Packer::default().pack(n_states, (n_classes as usize).max(1), row)
    }
}

/// Row displacement for [`Dfa::pack`]: first fit, densest rows first.
#[cfg(feature = "std")]
mod pack {
    use super::super::WriteError;
    use super::slot;
    use std::collections::HashMap;
    use std::vec::Vec;

    /// How many positions a row may try before it is placed past everything
    /// placed so far: bounds the work on adversarial rows. With the search
    /// resumed per shape, 608 of 177,049 rows reach it at 1,000 tools.
    const TRIES: usize = 1024;

    /// A growable bitset.
    #[derive(Default)]
    struct Bits(Vec<u64>);

    impl Bits {
        fn get(&self, i: usize) -> bool {
            self.0.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1)
        }

        fn set(&mut self, i: usize) {
            if i / 64 >= self.0.len() {
                self.0.resize(i / 64 + 1, 0);
            }
            self.0[i / 64] |= 1 << (i % 64);
        }

        /// The first clear position at or after `i`.
        fn next_clear(&self, i: usize) -> usize {
            let mut w = i / 64;
            let mut word = match self.0.get(w) {
                Some(&x) => !x & (!0u64 << (i % 64)),
                None => return i,
            };
            loop {
                if word != 0 {
                    return 64 * w + word.trailing_zeros() as usize;
                }
                w += 1;
                match self.0.get(w) {
                    Some(&x) => word = !x,
                    None => return 64 * w,
                }
            }
        }
    }

    /// The slots placed so far and where to look next.
    #[derive(Default)]
    pub(super) struct Packer {
        slots: Vec<u32>,
        /// Slots taken, and row starts used (distinct, so that a slot of
        /// another row never names this row's class at this position).
        taken: Bits,
        used: Bits,
        /// No slot below this one is free.
        first_free: usize,
        /// The end of everything placed: every slot and row start from
        /// here on is free.
        end: usize,
        /// Per set of live classes, the row start of the last row placed
        /// with it: positions before it that failed that set fail it for
        /// good (places only fill up), so the next row of it starts after.
        shapes: HashMap<Vec<u8>, usize>,
    }

    impl Packer {
        pub(super) fn pack(
            mut self,
            n: usize,
            nc: usize,
            live: impl Fn(usize, &mut Vec<(usize, u32)>),
        ) -> Result<Vec<u32>, WriteError> {
            let mut moves = Vec::new();
            let count = |s: usize, moves: &mut Vec<(usize, u32)>| {
                moves.clear();
                live(s, moves);
                moves.len()
            };
            // Densest rows first (they need the most room), ties by state:
            // states bucketed by their number of moves (at most `nc`).
            let counts: Vec<usize> = (0..n).map(|s| count(s, &mut moves)).collect();
            let mut at = std::vec![0usize; nc + 2];
            for &c in &counts {
                at[nc - c.min(nc) + 1] += 1;
            }
            for i in 1..at.len() {
                at[i] += at[i - 1];
            }
            let mut order = std::vec![0usize; n];
            for (s, &c) in counts.iter().enumerate() {
                let bucket = &mut at[nc - c.min(nc)];
                order[*bucket] = s;
                *bucket += 1;
            }
            let mut rows = std::vec![0usize; n];
            for s in order {
                count(s, &mut moves);
                rows[s] = self.place(&moves);
            }
            let last_row = rows.iter().copied().max().unwrap_or(0);
            self.slots.resize(self.slots.len().max(last_row + nc), 0);
            // The row starts count from the section's start, past themselves.
            let too_large = |_| WriteError::TooLarge(4 * (n + self.slots.len()) as u64);
            let mut out = Vec::with_capacity(n + self.slots.len());
            for r in rows {
                out.push(u32::try_from(n + r).map_err(too_large)?);
            }
            out.extend_from_slice(&self.slots);
            Ok(out)
        }

        /// Places one row (its live `(class, target)` moves, ascending) and
        /// returns its start.
        fn place(&mut self, moves: &[(usize, u32)]) -> usize {
            let row = match moves.first() {
                None => self.used.next_clear(0),
                Some(&(k0, _)) => {
                    let shape: Vec<u8> = moves.iter().map(|&(k, _)| k as u8).collect();
                    let from = self.shapes.get(&shape).map_or(0, |&r| r + 1);
                    let row = self.first_fit(moves, self.first_free.max(from + k0));
                    self.shapes.insert(shape, row);
                    row
                }
            };
            self.used.set(row);
            for &(k, t) in moves {
                self.taken.set(row + k);
                if row + k >= self.slots.len() {
                    self.slots.resize(row + k + 1, 0);
                }
                self.slots[row + k] = slot::new(k as u32, t);
                self.end = self.end.max(row + k + 1);
            }
            self.first_free = self.taken.next_clear(self.first_free);
            row
        }

        /// The first row start at which the row's first move lands on a
        /// free slot at or after `at`, and all its moves fit; after
        /// [`TRIES`] positions, the end.
        fn first_fit(&self, moves: &[(usize, u32)], at: usize) -> usize {
            let k0 = moves[0].0;
            let mut at = self.taken.next_clear(at);
            for _ in 0..TRIES {
                let row = at - k0;
                if !self.used.get(row) && moves.iter().all(|&(k, _)| !self.taken.get(row + k)) {
                    return row;
                }
                at = self.taken.next_clear(at + 1);
            }
            self.end
        }
    }
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// A dense table of `n` states over `nc` classes, row 0 dead, each
    /// state with about `1 / sparsity` of its classes live.
    fn random_table(n: usize, nc: usize, sparsity: u64, seed: u64) -> Vec<u32> {
        let mut x = seed;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut t = std::vec![0u32; n * nc];
        for cell in t.iter_mut().skip(nc) {
            if next() % sparsity == 0 {
                *cell = 1 + (next() % (n as u64 - 1)) as u32;
            }
        }
        t
    }

    /// Packs `dense` and checks every (state, class) reads back, with
    /// distinct row starts; returns the section's length.
    fn round_trip(dense: &[u32], nc: usize) -> usize {
        let section = Dfa::pack(dense, nc as u32).unwrap();
        let n = dense.len() / nc;
        let states = std::vec![0u32; n];
        let classes = [0u8; 256];
        let dfa = Dfa {
            classes: &classes,
            n_classes: nc as u32,
            transitions: &section,
            states: &states,
        };
        for s in 0..n {
            for k in 0..nc {
                assert_eq!(
                    dfa.step(s as u32, k as u32),
                    dense[s * nc + k],
                    "state {s} class {k}"
                );
            }
        }
        let mut rows = section[..n].to_vec();
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), n, "row starts are distinct");
        assert!(section[..n]
            .iter()
            .all(|&r| r as usize >= n && r as usize + nc <= section.len()));
        section.len()
    }

    #[test]
    fn packed_rows_read_back_as_the_dense_table() {
        for (n, nc, sparsity, seed) in [
            (2, 1, 1, 1),
            (50, 3, 2, 2),
            (500, 97, 20, 3),
            (2000, 256, 64, 4),
            (300, 40, 1, 5),
        ] {
            round_trip(&random_table(n, nc, sparsity, seed), nc);
        }
    }

    #[test]
    fn many_rows_of_one_shape_pack_densely() {
        // 10,000 states, each with the same two live classes: first fit
        // resumed per shape interleaves them instead of trying the same
        // taken places again (the table would otherwise grow by a row per
        // state).
        let (n, nc) = (10_000, 50);
        let mut dense = std::vec![0u32; n * nc];
        for s in 1..n {
            dense[s * nc + 3] = (s as u32 % (n as u32 - 1)) + 1;
            dense[s * nc + 40] = 1;
        }
        let len = round_trip(&dense, nc);
        assert!(
            len <= n + 3 * n + nc,
            "{len} words for {n} states with 2 moves each"
        );
    }

    #[test]
    fn too_many_states_are_refused() {
        let dense = std::vec![0u32; layout::MAX_STATES + 1];
        assert_eq!(
            Dfa::pack(&dense, 1),
            Err(super::super::WriteError::States(layout::MAX_STATES + 1))
        );
    }
}
