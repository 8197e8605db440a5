//! The machine: BYTE_CLASSES, TRANSITIONS and STATES.

#[cfg(feature = "std")]
use super::column;
use super::column::{Column, Head};
use super::header::Counts;
use super::layout::{self, sec, shape};
use super::Source;
use crate::error::Error;

/// STATES flag bit: the state accepts.
const STATE_ACCEPTS: u32 = 1;
/// STATES flag bit: the state ends a call ([`super::layout::ENTRY_STOPS`]).
const STATE_ENDS_CALL: u32 = 2;
/// STATES flag bit: a token from the state can run past a call's end, so
/// a matcher that stops after its first call checks each token's walk.
const STATE_STOP_GATE: u32 = 4;

/// A state's STATES flags, as the compiler gives them.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateFlags {
    /// The text before it is a complete output.
    pub accepting: bool,
    /// It ends a call: an entry that stops after its first call allows
    /// only the end of sequence here.
    pub ends_call: bool,
    /// A token from it can run past a call's end.
    pub stop_gate: bool,
    /// Its loop set's number + 1 in LOOPS (0: none).
    pub loop_set: u32,
}

/// The STATES flag bits below a state's loop set number.
const FLAG_BITS: u32 = 3;

/// The DFA over bytes: each byte's class, the transitions as rows of a
/// shared shape and their targets ([`layout::shape`]) and per state its
/// mask id and flags, the per-state tables as [`Column`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dfa<'a> {
    /// BYTE_CLASSES' first 256 bytes: the class of each byte value.
    pub classes: &'a [u8],
    /// The rest of BYTE_CLASSES: the row shapes, [`shape::stride`] bytes
    /// each.
    pub shapes: &'a [u8],
    /// The number of byte classes (1–256).
    pub n_classes: u32,
    /// TRANSITIONS' bytes ([`sec::TRANSITIONS`]).
    pub transitions: &'a [u8],
    /// STATES' bytes ([`sec::STATES`]).
    pub states: &'a [u8],
    /// Per state its row: `(first target, shape)`.
    rows: Column<'a>,
    /// The rows' targets, row after row.
    targets: Column<'a>,
    /// Per state `(accepting, mask id)`.
    flags: Column<'a>,
}

impl<'a> Dfa<'a> {
    /// The machine of these sections, its columns' heads read from them:
    /// constant time, never panics (sections that were not checked give
    /// wrong moves or none, never an out-of-bounds read).
    pub fn view(
        classes: &'a [u8],
        shapes: &'a [u8],
        n_classes: u32,
        transitions: &'a [u8],
        states: &'a [u8],
    ) -> Dfa<'a> {
        let rows = Column::view(transitions, 0);
        let heads = [
            rows.head(),
            Column::view(transitions, rows.end()).head(),
            Column::view(states, 0).head(),
        ];
        Dfa::with_heads(classes, shapes, n_classes, transitions, states, heads)
    }

    /// The machine of these sections with the columns' heads that
    /// [`Dfa::heads`] gave when they were read: no load from the sections.
    #[inline]
    pub(crate) fn with_heads(
        classes: &'a [u8],
        shapes: &'a [u8],
        n_classes: u32,
        transitions: &'a [u8],
        states: &'a [u8],
        [rows, targets, flags]: [Head; 3],
    ) -> Dfa<'a> {
        Dfa {
            classes,
            shapes,
            n_classes,
            transitions,
            states,
            rows: Column::at(transitions, rows),
            targets: Column::at(transitions, targets),
            flags: Column::at(states, flags),
        }
    }

    /// The heads of the rows, the targets and STATES.
    pub(crate) fn heads(&self) -> [Head; 3] {
        [self.rows.head(), self.targets.head(), self.flags.head()]
    }

    /// The number of states.
    #[inline]
    pub fn n_states(&self) -> usize {
        self.flags.len()
    }

    /// Reads and checks the three sections: byte classes below the class
    /// count; whole shapes, each numbering at most its own target count;
    /// a row per state whose shape is in range and whose targets are
    /// inside the target column and live states; the dead state without
    /// moves; a mask id per state below the mask count and the dead state
    /// not accepting.
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
        let n = c.n_states;
        let transitions = src.bytes(sec::TRANSITIONS);
        let rows = Column::read(transitions, 0, sec::TRANSITIONS)?;
        let targets = Column::read(transitions, rows.end(), sec::TRANSITIONS)?;
        if targets.end() != transitions.len() {
            return Err(Error::section(
                sec::TRANSITIONS,
                "does not end with its target column",
            ));
        }
        if rows.len() != n {
            return Err(Error::field(
                "rows in TRANSITIONS",
                n as u64,
                rows.len() as u64,
            ));
        }
        check_rows(rows, targets, shapes, stride, n)?;
        let states = src.bytes(sec::STATES);
        let flags = Column::read(states, 0, sec::STATES)?;
        if flags.end() != states.len() || flags.len() != n {
            return Err(Error::field(
                "states in STATES",
                n as u64,
                flags.len() as u64,
            ));
        }
        // The loop set numbers after the three flag bits: at most
        // `loops::MAX_SETS`, 7 bits.
        if !matches!(flags.split(), 1 | 3..=10) {
            return Err(Error::section(
                sec::STATES,
                "has flags of neither one bit (accepting) nor three (accepting, ends a call, stop gate) and a loop set number",
            ));
        }
        let n_sets = super::loops::Loops::set_count_in(src.words(sec::LOOPS, None)?);
        let heads = [rows.head(), targets.head(), flags.head()];
        let dfa = Dfa::with_heads(classes, shapes, n_classes, transitions, states, heads);
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
        for (i, (bits, mask)) in flags.pairs().enumerate() {
            if bits & (STATE_ENDS_CALL | STATE_ACCEPTS) == STATE_ENDS_CALL {
                return Err(Error::field(
                    "accepting flag of a state that ends a call",
                    1,
                    0,
                ));
            }
            if mask as usize >= c.n_masks {
                return Err(Error::range(
                    "mask id of state",
                    i as u64,
                    mask as u64,
                    c.n_masks as u64,
                ));
            }
            if (bits >> FLAG_BITS) as usize > n_sets {
                return Err(Error::range(
                    "loop set of state (number + 1)",
                    i as u64,
                    (bits >> FLAG_BITS) as u64,
                    n_sets as u64 + 1,
                ));
            }
        }
        if flags.pair(0).0 != 0 {
            return Err(Error::field("accepting flag of the dead state", 0, 1));
        }
        Ok(dfa)
    }

    /// The row of `state` (`None` out of range).
    #[inline]
    fn row(&self, state: u32) -> Option<StateRow<'a>> {
        if state as usize >= self.rows.len() {
            return None;
        }
        let (first, k) = self.rows.pair(state as usize);
        let stride = shape::stride(self.n_classes);
        let at = (k as usize).checked_mul(stride)?;
        Some(StateRow {
            shape: self.shapes.get(at + 1..at.checked_add(stride)?)?,
            targets: self.targets,
            first: first as usize,
        })
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
        self.flags.pair(state as usize).0 & STATE_ACCEPTS != 0
    }

    /// Whether `state` ends a call (false out of range, and in an artifact
    /// where no state does).
    #[inline]
    pub(crate) fn ends_call(&self, state: u32) -> bool {
        self.flags.pair(state as usize).0 & STATE_ENDS_CALL != 0
    }

    /// Whether a token from `state` can run past a call's end.
    #[inline]
    pub(crate) fn stop_gate(&self, state: u32) -> bool {
        self.flags.pair(state as usize).0 & STATE_STOP_GATE != 0
    }

    /// The number + 1 of `state`'s loop set in LOOPS (0: none, or out of
    /// range).
    #[inline]
    pub(crate) fn loop_set(&self, state: u32) -> u32 {
        self.flags.pair(state as usize).0 >> FLAG_BITS
    }

    /// The mask id `state` serves without a budget.
    #[inline]
    pub(crate) fn mask_id(&self, state: u32) -> Option<u32> {
        ((state as usize) < self.flags.len()).then(|| self.flags.pair(state as usize).1)
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
        out.bytes(sec::TRANSITIONS, self.transitions);
        out.bytes(sec::STATES, self.states);
    }

    /// STATES for states `(flags, mask id)`: flags of one bit when no
    /// state ends a call (every artifact without an entry that stops after
    /// its first call) or has a loop set, three when some state ends a
    /// call, and three and the loop set numbers' width when some state has
    /// one.
    #[cfg(feature = "std")]
    pub fn states_section(states: impl Iterator<Item = (StateFlags, u32)>) -> std::vec::Vec<u8> {
        let states: std::vec::Vec<(StateFlags, u32)> = states.collect();
        let widest = states.iter().map(|s| s.0.loop_set).max().unwrap_or(0);
        let split = if widest > 0 {
            FLAG_BITS + column::bits(widest as u64)
        } else if states.iter().any(|s| s.0.ends_call) {
            FLAG_BITS
        } else {
            1
        };
        let values: std::vec::Vec<u64> = states
            .iter()
            .map(|&(f, mask)| {
                let bit = |on: bool, b: u32| if on { b } else { 0 };
                let bits = bit(f.accepting, STATE_ACCEPTS)
                    | bit(f.ends_call, STATE_ENDS_CALL)
                    | bit(f.stop_gate, STATE_STOP_GATE)
                    | f.loop_set << FLAG_BITS;
                column::join(bits & ((1 << split) - 1), mask, split)
            })
            .collect();
        let mut out = std::vec::Vec::new();
        column::push(&mut out, &values, split);
        super::le_bytes(&out)
    }
}

/// Each state's row checked: its shape in range, its targets inside the
/// target column and live states below `n`.
fn check_rows(
    rows: Column<'_>,
    targets: Column<'_>,
    shapes: &[u8],
    stride: usize,
    n: usize,
) -> Result<(), Error> {
    let n_shapes = shapes.len() / stride;
    for (s, (first, k)) in rows.pairs().enumerate() {
        let k = k as usize;
        if k >= n_shapes {
            return Err(Error::range(
                "row shape of state",
                s as u64,
                k as u64,
                n_shapes as u64,
            ));
        }
        let first = first as usize;
        let end = first + shapes[k * stride] as usize;
        if end > targets.len() {
            return Err(Error::range(
                "row end of state",
                s as u64,
                end as u64,
                targets.len() as u64 + 1,
            ));
        }
        if let Some(t) = (first..end)
            .map(|i| targets.get(i))
            .find(|&t| t == layout::DEAD_STATE as u64 || t >= n as u64)
        {
            return Err(Error::range("transition of state", s as u64, t, n as u64));
        }
    }
    Ok(())
}

/// A state's row in an artifact: its shape's byte per class, and where
/// its targets start in the target column (target number `k` is value
/// `first + k - 1`).
#[derive(Clone, Copy, Debug)]
struct StateRow<'a> {
    shape: &'a [u8],
    targets: Column<'a>,
    first: usize,
}

impl StateRow<'_> {
    /// The state this row leads to on class `class` (dead for none, or out
    /// of range).
    #[inline]
    fn target(&self, class: usize) -> u32 {
        match self.shape.get(class) {
            Some(&k) if k != 0 => self.targets.get(self.first + k as usize - 1) as u32,
            _ => layout::DEAD_STATE,
        }
    }
}

/// One state's row in [`Rows`], the compiler's working form: its shape's
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

/// The row shapes and rows of a machine, built a row at a time
/// ([`layout::shape`]), as the compiler walks them: per state a word, its
/// row's start, then the rows, each its shape's index and its targets, a
/// word each. Words, not columns: the crossing reads a move for every
/// node of every token-trie walk, and a word is one load where a column's
/// value is a load, a multiply and two shifts. [`Rows::section`] encodes
/// them as the artifact's TRANSITIONS.
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

    /// TRANSITIONS for these rows of `n_states` states over `n_classes`: a
    /// column of each state's `(first target, shape)` and a column of the
    /// targets, row after row.
    pub fn section(&self, n_classes: u32, n_states: usize) -> std::vec::Vec<u8> {
        let words = &self.transitions;
        let mut rows = std::vec::Vec::with_capacity(n_states);
        let mut targets = std::vec::Vec::with_capacity(words.len().saturating_sub(2 * n_states));
        let stride = shape::stride(n_classes);
        for &start in &words[..n_states] {
            let start = start as usize;
            let k = words[start];
            let g = self.shapes[k as usize * stride] as usize;
            rows.push((targets.len() as u64, k));
            targets.extend(words[start + 1..start + 1 + g].iter().map(|&t| t as u64));
        }
        let split = column::bits(targets.len() as u64);
        let rows: std::vec::Vec<u64> = rows
            .into_iter()
            .map(|(first, k)| column::join(first as u32, k, split))
            .collect();
        let mut out = std::vec::Vec::new();
        column::push(&mut out, &rows, split);
        column::push(&mut out, &targets, 0);
        super::le_bytes(&out)
    }

    /// The row of `state`, one of `n_states` over `n_classes` (empty out
    /// of range).
    #[inline]
    pub fn row(&self, n_classes: u32, n_states: usize, state: u32) -> Row<'_> {
        Row::of(&self.shapes, &self.transitions, n_classes, n_states, state).unwrap_or_default()
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
        // Every third state accepts; with several states, one of those ends
        // a call and the state before it is a stop gate.
        let flags = |s: usize| StateFlags {
            accepting: s % 3 == 1,
            ends_call: s == 4,
            stop_gate: s == 3,
            loop_set: (s % 5 == 2) as u32 * (1 + s as u32 % 3),
        };
        let states = Dfa::states_section((0..n).map(|s| (flags(s), s as u32)));
        let transitions = rows.section(nc as u32, n);
        let classes = [0u8; 256];
        let dfa = Dfa::view(&classes, &rows.shapes, nc as u32, &transitions, &states);
        assert_eq!(dfa.n_states(), n);
        for s in 0..n {
            assert_eq!(dfa.mask_id(s as u32), Some(s as u32));
            assert_eq!(dfa.is_accepting(s as u32), s % 3 == 1);
            assert_eq!(dfa.ends_call(s as u32), s == 4);
            assert_eq!(dfa.stop_gate(s as u32), s == 3);
            assert_eq!(dfa.loop_set(s as u32), flags(s).loop_set);
            for k in 0..nc {
                assert_eq!(
                    dfa.step(s as u32, k as u32),
                    dense[s * nc + k],
                    "state {s} class {k}"
                );
                assert_eq!(
                    rows.row(nc as u32, n, s as u32).target(k),
                    dense[s * nc + k],
                    "state {s} class {k} (words)"
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
