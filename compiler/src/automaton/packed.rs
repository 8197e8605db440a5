//! The minimized DFA as the crossing reads it: its rows as a shared shape
//! and their targets, the row shapes in the artifact's very bytes and the
//! rows as words, which the writer encodes as TRANSITIONS' columns
//! (`codec::Rows::section`, `runtime/FORMAT.md`, `layout::shape`).
//!
//! Why not the dense `states × classes` table of [`Dfa`]: a tool set's DFA
//! sends most moves to the dead state, and at 10,000 distinct tools the
//! dense table of the minimized machine was 1.14 GB (2.78 million states ×
//! 103 classes) against 50 MB as rows; it was the largest allocation of
//! the compile from the quotient to the end, a third of its page faults,
//! and the writer read it again to encode it. Encoded once, the crossing
//! walks a table a twentieth the size and the writer packs it. A move
//! reads the row start, the row's shape index, the shape's byte for the
//! class (a table small enough to stay in cache) and the target beside the
//! shape index.

use tooldec_runtime::codec::{Row, Rows};

use crate::automaton::dfa::{Dfa, Moves, DEAD};
use crate::automaton::sparse::SparseDfa;
use crate::error::Limit;

/// A deterministic automaton over byte classes, by its live moves encoded
/// as the artifact stores them. State 0 is the dead state; numbering and
/// acceptance are as in [`Dfa`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedDfa {
    /// The class of each byte.
    pub classes: [u8; 256],
    /// The number of byte classes.
    pub n_classes: usize,
    /// The row shapes and the rows as words.
    rows: Rows,
    /// Whether each state accepts.
    pub accept: Vec<bool>,
    /// The start state.
    pub start: u32,
}

impl PackedDfa {
    /// Encodes `accept.len()` states whose live moves `row(s, out)` appends
    /// to `out` (classes ascending, no move to the dead state). Fails past
    /// what the format addresses (2^24 states, 255 targets a state, 4 GiB).
    pub fn pack(
        classes: [u8; 256],
        n_classes: usize,
        accept: Vec<bool>,
        start: u32,
        row: impl Fn(usize, &mut Vec<(usize, u32)>),
    ) -> Result<PackedDfa, Limit> {
        let rows = Rows::encode(accept.len(), n_classes as u32, row).map_err(Limit::Layout)?;
        Ok(PackedDfa {
            classes,
            n_classes,
            rows,
            accept,
            start,
        })
    }

    /// The encoded form of live moves.
    pub fn of_sparse(dfa: &SparseDfa) -> Result<PackedDfa, Limit> {
        PackedDfa::pack(
            dfa.classes,
            dfa.n_classes,
            dfa.accept.clone(),
            dfa.start,
            |s, out| {
                let (cs, ts) = dfa.moves(s as u32);
                out.extend(cs.iter().zip(ts).map(|(&c, &t)| (c as usize, t)));
            },
        )
    }

    /// The dense table (for tests and small machines).
    pub fn to_dense(&self) -> Dfa {
        let mut sparse = SparseDfa::building(self.classes, self.n_classes);
        for s in 1..self.n_states() as u32 {
            for (c, t) in self.moves(s) {
                sparse.push_move(c, t);
            }
            sparse.push_row();
        }
        sparse.accept = self.accept.clone();
        sparse.start = self.start;
        sparse.to_dense()
    }

    /// The number of states, the dead state included.
    pub fn n_states(&self) -> usize {
        self.accept.len()
    }

    /// The state `s` moves to on class `c` ([`DEAD`] out of range).
    #[inline]
    pub fn target(&self, s: u32, c: usize) -> u32 {
        self.row(s).target(c)
    }

    /// The state `s` moves to on `byte`.
    #[inline]
    pub fn next(&self, s: u32, byte: u8) -> u32 {
        self.target(s, self.classes[byte as usize] as usize)
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

    /// The row of `s` (no moves for a state out of range).
    #[inline]
    pub fn row(&self, s: u32) -> Row<'_> {
        self.rows.row(self.n_classes as u32, self.n_states(), s)
    }

    /// The live moves of `s`, `(class, target)` in class order.
    pub fn moves(&self, s: u32) -> impl Iterator<Item = (usize, u32)> + '_ {
        let row = self.row(s);
        (0..row.classes())
            .map(move |c| (c, row.target(c)))
            .filter(|&(_, t)| t != DEAD)
    }

    /// The BYTE_CLASSES row shapes and the rows as words.
    pub fn rows(&self) -> &Rows {
        &self.rows
    }

    /// Bytes held: what the compile's memory account charges for it.
    pub fn bytes(&self) -> usize {
        self.rows.transitions.len() * 4 + self.rows.shapes.len() + self.accept.len()
    }
}

impl Moves for &PackedDfa {
    #[inline]
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        self.next(s, byte)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::minimize::tests::random_dfa;

    #[test]
    fn packed_moves_are_the_dense_tables() {
        for seed in 1..40u64 {
            let dense = random_dfa(seed, 1 + seed as usize * 3, 2 + seed as usize % 13);
            let packed = PackedDfa::of_sparse(&SparseDfa::from_dense(&dense)).unwrap();
            assert_eq!(packed.to_dense(), dense, "seed {seed}");
            for s in 0..dense.n_states() as u32 {
                for b in 0..=255u8 {
                    assert_eq!(packed.next(s, b), dense.next(s, b), "seed {seed}");
                }
                let live: Vec<(usize, u32)> = (0..dense.n_classes)
                    .map(|c| (c, dense.trans[s as usize * dense.n_classes + c]))
                    .filter(|m| m.1 != DEAD)
                    .collect();
                assert_eq!(packed.moves(s).collect::<Vec<_>>(), live);
            }
            // The writer copies what the runtime's encoder makes of the
            // dense table.
            let rows = Rows::of_dense(&dense.trans, dense.n_classes as u32).unwrap();
            assert_eq!(packed.rows(), &rows);
            assert_eq!(packed.next(dense.n_states() as u32, b'a'), DEAD);
        }
    }
}
