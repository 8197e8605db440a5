//! The machine: BYTE_CLASSES, TRANSITIONS and STATES.

use super::header::Counts;
use super::layout::{self, sec, shape, STATE_ACCEPTING};
use super::Source;
use crate::error::Error;

/// The DFA over bytes: each byte's class, the transitions as rows of a
/// shared shape and their targets ([`layout::shape`]) and per state its
/// mask id and accepting flag.
#[derive(Clone, Copy, Debug)]
pub struct Dfa<'a> {
    /// BYTE_CLASSES' first 256 bytes: the class of each byte value.
    pub classes: &'a [u8],
    /// The rest of BYTE_CLASSES: the row shapes, [`shape::stride`] bytes
    /// each.
    pub shapes: &'a [u8],
    /// The number of byte classes (1–256).
    pub n_classes: u32,
    /// TRANSITIONS: per state its row start, then the rows
    /// ([`sec::TRANSITIONS`]).
    pub transitions: &'a [u32],
    /// STATES: bit 31 accepting ([`STATE_ACCEPTING`]), bits 0–30 the mask id.
    pub states: &'a [u32],
}

impl<'a> Dfa<'a> {
    /// Reads and checks the three sections: byte classes below the class
    /// count; whole shapes, each numbering at most its own target count;
    /// every row start past the row-start table with a whole row inside
    /// the section, its shape in range and its targets live states; the
    /// dead state without moves; every mask id below the mask count and
    /// the dead state not accepting.
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let n_classes = c.n_classes;
        let nc = n_classes as usize;
        let section = src.bytes(sec::BYTE_CLASSES);
        if section.len() < 256 {
            return Err(Error::section(
                sec::BYTE_CLASSES,
                "is shorter than its 256 byte classes",
            ));
        }
        let (classes, shapes) = section.split_at(256);
        if let Some((b, &k)) = classes.iter().enumerate().find(|(_, &k)| k as usize >= nc) {
            return Err(Error::range(
                "byte class of byte",
                b as u64,
                k as u64,
                nc as u64,
            ));
        }
        let stride = shape::stride(n_classes);
        if shapes.len() % stride != 0 {
            return Err(Error::section(
                sec::BYTE_CLASSES,
                "does not end on a whole row shape",
            ));
        }
        for (i, sh) in shapes.chunks_exact(stride).enumerate() {
            if let Some(&k) = sh[1..].iter().find(|&&k| k > sh[0]) {
                return Err(Error::range(
                    "target number of row shape",
                    i as u64,
                    k as u64,
                    sh[0] as u64 + 1,
                ));
            }
        }
        let n_shapes = shapes.len() / stride;
        let transitions = src.words(sec::TRANSITIONS, None)?;
        let n = c.n_states;
        if transitions.len() < n {
            return Err(Error::section(
                sec::TRANSITIONS,
                "is shorter than its row starts",
            ));
        }
        for (s, &row) in transitions[..n].iter().enumerate() {
            let row = row as usize;
            let Some(&k) = transitions.get(row).filter(|_| row >= n) else {
                return Err(Error::range(
                    "row of state",
                    s as u64,
                    row as u64,
                    transitions.len() as u64,
                ));
            };
            let k = k as usize;
            if k >= n_shapes {
                return Err(Error::range(
                    "row shape of state",
                    s as u64,
                    k as u64,
                    n_shapes as u64,
                ));
            }
            let targets = shapes[k * stride] as usize;
            let Some(ts) = transitions.get(row + 1..row + 1 + targets) else {
                return Err(Error::range(
                    "row end of state",
                    s as u64,
                    (row + 1 + targets) as u64,
                    transitions.len() as u64 + 1,
                ));
            };
            if let Some(&t) = ts
                .iter()
                .find(|&&t| t == layout::DEAD_STATE || t as usize >= n)
            {
                return Err(Error::range(
                    "transition of state",
                    s as u64,
                    t as u64,
                    n as u64,
                ));
            }
        }
        let states = src.words(sec::STATES, Some(n))?;
        let dfa = Dfa {
            classes,
            shapes,
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

    /// The row of `state` (`None` out of range).
    #[inline]
    fn row(&self, state: u32) -> Option<Row<'a>> {
        Row::of(
            self.shapes,
            self.transitions,
            self.n_classes,
            self.states.len(),
            state,
        )
    }

    /// The state reached from `state` on byte class `class` (0: dead, or
    /// out of range).
    #[inline]
    fn step(&self, state: u32, class: u32) -> u32 {
        self.row(state)
            .map_or(layout::DEAD_STATE, |r| r.target(class as usize))
    }

    /// The state reached from `state` on `byte` (0: dead, or out of range).
    #[inline]
    pub(crate) fn next_state(&self, state: u32, byte: u8) -> u32 {
        let class = self.classes.get(byte as usize).copied().unwrap_or(0);
        self.step(state, class as u32)
    }

    /// Walks `bytes` from `state`; `None` if the walk dies. A token's
    /// bytes often stay in one state (string bodies, free text), so the row
    /// is read again only when the state changes.
    #[inline]
    pub(crate) fn walk(&self, mut state: u32, bytes: &[u8]) -> Option<u32> {
        let classes: &[u8; 256] = self.classes.try_into().ok()?;
        let mut row = self.row(state)?;
        for &b in bytes {
            let next = row.target(classes[b as usize] as usize);
            if next == layout::DEAD_STATE {
                return None;
            }
            if next != state {
                state = next;
                row = self.row(state)?;
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
        out.byte_parts(sec::BYTE_CLASSES, &[self.classes, self.shapes]);
        out.words(sec::TRANSITIONS, self.transitions);
        out.words(sec::STATES, self.states);
    }
}

/// One state's row, as the runtime and the compiler read it: its shape's
/// byte per class, and its words from the shape index on (so that target
/// number `k` is word `k`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Row<'a> {
    shape: &'a [u8],
    words: &'a [u32],
}

impl<'a> Row<'a> {
    /// The row of `state` among `n_states` in `transitions`, its shape in
    /// `shapes` (`None` when anything is out of range).
    #[inline]
    pub fn of(
        shapes: &'a [u8],
        transitions: &'a [u32],
        n_classes: u32,
        n_states: usize,
        state: u32,
    ) -> Option<Row<'a>> {
        if state as usize >= n_states {
            return None;
        }
        let row = *transitions.get(state as usize)? as usize;
        let stride = shape::stride(n_classes);
        let at = (*transitions.get(row)? as usize).checked_mul(stride)?;
        Some(Row {
            shape: shapes.get(at + 1..at.checked_add(stride)?)?,
            words: transitions.get(row..)?,
        })
    }

    /// The state this row leads to on class `class` (dead for none, or out
    /// of range).
    #[inline]
    pub fn target(&self, class: usize) -> u32 {
        match self.shape.get(class) {
            Some(&k) if k != 0 => self
                .words
                .get(k as usize)
                .copied()
                .unwrap_or(layout::DEAD_STATE),
            _ => layout::DEAD_STATE,
        }
    }

    /// The number of classes the row has a byte for.
    #[inline]
    pub fn classes(&self) -> usize {
        self.shape.len()
    }
}

/// The row shapes and TRANSITIONS words of a machine, built a row at a
/// time ([`layout::shape`]): what [`Dfa::shapes`] and [`Dfa::transitions`]
/// borrow when a payload is written.
#[cfg(feature = "std")]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rows {
    /// The row shapes, [`shape::stride`] bytes each.
    pub shapes: std::vec::Vec<u8>,
    /// The row starts, then the rows.
    pub transitions: std::vec::Vec<u32>,
}

#[cfg(feature = "std")]
impl Rows {
    /// The rows of a dense `states × n_classes` table (row 0 the dead
    /// state, all zeros).
    pub fn of_dense(dense: &[u32], n_classes: u32) -> Result<Rows, super::WriteError> {
        let nc = (n_classes as usize).max(1);
        Rows::encode(dense.len() / nc, n_classes, |s, out| {
            let row = &dense[s * nc..(s + 1) * nc];
            out.extend(
                row.iter()
                    .enumerate()
                    .filter(|(_, &t)| t != 0)
                    .map(|(k, &t)| (k, t)),
            );
        })
    }

    /// The rows of `n_states` states given by their live moves: `row(s,
    /// out)` appends state `s`'s `(class, target)` moves, classes
    /// ascending, targets never the dead state, to `out` (which it finds
    /// empty). Shapes are numbered in order of first use and a row's
    /// targets in class order, so the same moves give the same bytes.
    /// Refused past [`layout::MAX_STATES`] states, a state with more than
    /// [`shape::MAX_TARGETS`] targets, or 4 GiB.
    pub fn encode(
        n_states: usize,
        n_classes: u32,
        row: impl Fn(usize, &mut std::vec::Vec<(usize, u32)>),
    ) -> Result<Rows, super::WriteError> {
        use super::WriteError;
        use std::collections::HashMap;
        use std::vec::Vec;
        if n_states > layout::MAX_STATES {
            return Err(WriteError::States(n_states));
        }
        let stride = shape::stride(n_classes);
        let mut shapes = Vec::new();
        // A shape by its live `(class, number)` pairs: a few bytes to hash
        // where the shape itself is a byte per class.
        let mut ids: HashMap<Vec<u8>, u32> = HashMap::new();
        let mut words = std::vec![0u32; n_states];
        let (mut moves, mut key, mut targets) = (Vec::new(), Vec::new(), Vec::new());
        for s in 0..n_states {
            moves.clear();
            row(s, &mut moves);
            key.clear();
            targets.clear();
            for &(class, t) in &moves {
                let k = match targets.iter().position(|&x| x == t) {
                    Some(i) => i + 1,
                    None => {
                        targets.push(t);
                        targets.len()
                    }
                };
                if k > shape::MAX_TARGETS {
                    return Err(WriteError::Targets(s));
                }
                key.extend([class as u8, k as u8]);
            }
            let id = match ids.get(&key[..]) {
                Some(&id) => id,
                None => {
                    let id = (shapes.len() / stride) as u32;
                    let at = shapes.len();
                    shapes.resize(at + stride, 0);
                    shapes[at] = targets.len() as u8;
                    for pair in key.chunks_exact(2) {
                        shapes[at + 1 + pair[0] as usize] = pair[1];
                    }
                    ids.insert(key.clone(), id);
                    id
                }
            };
            let start = u32::try_from(words.len())
                .map_err(|_| WriteError::TooLarge(4 * words.len() as u64))?;
            words[s] = start;
            words.push(id);
            words.extend_from_slice(&targets);
        }
        if u32::try_from(words.len()).is_err() {
            return Err(WriteError::TooLarge(4 * words.len() as u64));
        }
        Ok(Rows {
            shapes,
            transitions: words,
        })
    }

    /// The row of `state`, one of `n_states` over `n_classes` (empty out
    /// of range).
    #[inline]
    pub fn row(&self, n_classes: u32, n_states: usize, state: u32) -> Row<'_> {
        Row::of(&self.shapes, &self.transitions, n_classes, n_states, state).unwrap_or_default()
    }

    /// The machine these rows are, with `states`.
    #[cfg(test)]
    fn dfa<'a>(&'a self, classes: &'a [u8], n_classes: u32, states: &'a [u32]) -> Dfa<'a> {
        Dfa {
            classes,
            shapes: &self.shapes,
            n_classes,
            transitions: &self.transitions,
            states,
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

    /// Encodes `dense` and checks every (state, class) reads back; returns
    /// the rows.
    fn round_trip(dense: &[u32], nc: usize) -> Rows {
        let rows = Rows::of_dense(dense, nc as u32).unwrap();
        let n = dense.len() / nc;
        let states = std::vec![0u32; n];
        let classes = [0u8; 256];
        let dfa = rows.dfa(&classes, nc as u32, &states);
        for s in 0..n {
            for k in 0..nc {
                assert_eq!(
                    dfa.step(s as u32, k as u32),
                    dense[s * nc + k],
                    "state {s} class {k}"
                );
            }
        }
        assert_eq!(dfa.step(n as u32, 0), layout::DEAD_STATE);
        assert_eq!(dfa.step(1, nc as u32), layout::DEAD_STATE);
        rows
    }

    #[test]
    fn rows_read_back_as_the_dense_table() {
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
    fn rows_of_one_kind_share_a_shape() {
        // 10,000 states, each but the first two moving on two classes to
        // itself and on 40 to state 1 (which has no moves): one shape,
        // three words a row.
        let (n, nc) = (10_000, 50);
        let mut dense = std::vec![0u32; n * nc];
        for s in 2..n {
            dense[s * nc + 3] = s as u32;
            dense[s * nc + 4] = s as u32;
            for k in 10..50 {
                dense[s * nc + k] = 1;
            }
        }
        let rows = round_trip(&dense, nc);
        // The empty shape (the dead state, state 1), and the one all
        // others share.
        assert_eq!(rows.shapes.len(), 2 * shape::stride(nc as u32));
        assert_eq!(rows.transitions.len(), n + 2 + 3 * (n - 2));
    }

    #[test]
    fn too_many_states_or_targets_are_refused() {
        let dense = std::vec![0u32; layout::MAX_STATES + 1];
        assert_eq!(
            Rows::of_dense(&dense, 1),
            Err(super::super::WriteError::States(layout::MAX_STATES + 1))
        );
        // A state with a distinct target on each of 256 classes.
        let mut dense = std::vec![0u32; 2 * 256];
        for k in 0..256 {
            dense[256 + k] = 1;
        }
        let mut wide = std::vec![0u32; 300 * 256];
        for k in 0..256 {
            wide[256 + k] = 2 + k as u32;
        }
        assert!(Rows::of_dense(&dense, 256).is_ok());
        assert_eq!(
            Rows::of_dense(&wide, 256),
            Err(super::super::WriteError::Targets(1))
        );
    }
}
