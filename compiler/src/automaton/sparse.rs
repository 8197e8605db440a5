//! The DFA between determinization and minimization, stored by its live
//! moves alone.
//!
//! A tool set's subset construction sends most of its `states x classes`
//! moves to the dead state (a name or key state has one or two live moves
//! among a hundred classes; only string bodies have many): at 10,000
//! distinct tools, 5.9 million states over 121 classes held a 2.8 GB dense
//! table for 56 million live moves. [`SparseDfa`] keeps each state's live
//! moves, in class order, and nothing else; trimming, minimization and the
//! quotient read it, and the minimized machine is packed as the artifact
//! stores it ([`crate::automaton::packed::PackedDfa`], what the crossing
//! and the writer read). DESIGN.md §3 records what it bought.

use std::collections::VecDeque;

use crate::automaton::dfa::{Dfa, DEAD, UNREACHED};
use crate::automaton::packed::PackedDfa;
use crate::error::Limit;

/// A deterministic automaton over byte classes, by its live moves: per
/// state, the classes whose move does not lead to the dead state, in
/// ascending order, with their targets. State 0 is the dead state (no
/// moves); numbering and acceptance are as in [`Dfa`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseDfa {
    /// The class of each byte.
    pub classes: [u8; 256],
    /// The number of byte classes.
    pub n_classes: usize,
    /// Per state where its moves start in `class` and `target`, and the
    /// end (`n_states + 1` entries).
    row: Vec<usize>,
    /// Each move's class.
    class: Vec<u8>,
    /// Each move's target (never [`DEAD`]).
    target: Vec<u32>,
    /// Whether each state accepts.
    pub accept: Vec<bool>,
    /// Whether each state ends a call (its subset holds an
    /// [`Expr::CallEnd`](crate::automaton::expr::Expr::CallEnd) state);
    /// empty when the grammar marks none.
    pub call_end: Vec<bool>,
    /// Some state that ends a call could also hold a run before its first
    /// call's end ([`Nfa::first_call_runs`]): then no entry may stop after
    /// its first call.
    ///
    /// [`Nfa::first_call_runs`]: crate::automaton::nfa::Nfa::first_call_runs
    pub call_mixed: bool,
    /// The start state.
    pub start: u32,
}

impl SparseDfa {
    /// An automaton with only the dead state, whose rows are added in
    /// state order by [`SparseDfa::push_row`].
    pub(crate) fn building(classes: [u8; 256], n_classes: usize) -> SparseDfa {
        SparseDfa {
            classes,
            n_classes,
            row: vec![0, 0],
            class: Vec::new(),
            target: Vec::new(),
            accept: Vec::new(),
            call_end: Vec::new(),
            call_mixed: false,
            start: 1,
        }
    }

    /// Adds a move of the state whose row is being built (the one after
    /// the last finished row); classes must ascend.
    pub(crate) fn push_move(&mut self, class: usize, target: u32) {
        debug_assert!(target != DEAD && class < self.n_classes);
        self.class.push(class as u8);
        self.target.push(target);
    }

    /// The target of the last move added, if it has class `class`.
    pub(crate) fn last_move(&self, class: usize) -> Option<u32> {
        let past = self.class.len();
        (past > *self.row.last().expect("rows") && self.class[past - 1] as usize == class)
            .then(|| self.target[past - 1])
    }

    /// Finishes the row being built.
    pub(crate) fn push_row(&mut self) {
        self.row.push(self.class.len());
    }

    /// The number of states, the dead state included (after building,
    /// the number of rows).
    pub fn n_states(&self) -> usize {
        self.row.len() - 1
    }

    /// The number of live moves.
    pub fn n_moves(&self) -> usize {
        self.target.len()
    }

    /// The live moves of `s`: their classes (ascending) and targets.
    pub fn moves(&self, s: u32) -> (&[u8], &[u32]) {
        let (a, z) = (self.row[s as usize], self.row[s as usize + 1]);
        (&self.class[a..z], &self.target[a..z])
    }

    /// The live moves of a dense table, numbering kept.
    pub fn from_dense(dfa: &Dfa) -> SparseDfa {
        let k = dfa.n_classes;
        let mut out = SparseDfa::building(dfa.classes, k);
        out.row.truncate(1);
        for row in dfa.trans.chunks_exact(k.max(1)) {
            for (c, &t) in row.iter().enumerate() {
                if t != DEAD {
                    out.push_move(c, t);
                }
            }
            out.push_row();
        }
        out.accept = dfa.accept.clone();
        out.start = dfa.start;
        out
    }

    /// The dense table, numbering kept.
    pub fn to_dense(&self) -> Dfa {
        let k = self.n_classes;
        let mut trans = vec![DEAD; self.n_states() * k];
        for s in 0..self.n_states() {
            let (cs, ts) = self.moves(s as u32);
            for (&c, &t) in cs.iter().zip(ts) {
                trans[s * k + c as usize] = t;
            }
        }
        Dfa {
            classes: self.classes,
            n_classes: k,
            trans,
            accept: self.accept.clone(),
            start: self.start,
        }
    }

    /// Drops every move into a state from which no accepting state is
    /// reachable, keeping state numbers (what a walk needs). Returns false
    /// if the language is empty.
    pub fn prune(&mut self) -> bool {
        let live = self.co_reachable();
        if !live[self.start as usize] {
            return false;
        }
        if live[1..].iter().all(|&l| l) {
            // The usual case: the subset construction made no state that
            // cannot finish, and no move needs dropping.
            return true;
        }
        let mut kept = 0;
        let mut start = 0;
        for s in 0..self.n_states() {
            let past = self.row[s + 1];
            for i in start..past {
                if live[self.target[i] as usize] {
                    self.class[kept] = self.class[i];
                    self.target[kept] = self.target[i];
                    kept += 1;
                }
            }
            start = past;
            self.row[s + 1] = kept;
        }
        self.class.truncate(kept);
        self.target.truncate(kept);
        true
    }

    /// Per state, whether an accepting state is reachable from it (the
    /// dead state never). Sweeps the states from the last to the first,
    /// marking a state once a move reaches a marked one: the subset
    /// construction numbers states in discovery order, so most reach
    /// acceptance through higher numbers and a sweep or two settles them.
    /// What a few sweeps leave unsettled goes backwards over predecessor
    /// lists.
    fn co_reachable(&self) -> Vec<bool> {
        const SWEEPS: usize = 6;
        let mut live = self.accept.clone();
        live[DEAD as usize] = false;
        for _ in 0..SWEEPS {
            let mut changed = false;
            for s in (1..self.n_states()).rev() {
                if !live[s] && self.moves(s as u32).1.iter().any(|&t| live[t as usize]) {
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
    /// backward search over predecessor lists (self-loops left out).
    fn spread_back(&self, live: &mut [bool]) {
        let n = self.n_states();
        let mut start = vec![0u32; n + 1];
        for s in 0..n {
            for &t in self.moves(s as u32).1 {
                if t as usize != s {
                    start[t as usize + 1] += 1;
                }
            }
        }
        for i in 1..=n {
            start[i] += start[i - 1];
        }
        let mut preds = vec![0u32; start[n] as usize];
        let mut fill = start.clone();
        for s in 0..n {
            for &t in self.moves(s as u32).1 {
                if t as usize != s {
                    preds[fill[t as usize] as usize] = s as u32;
                    fill[t as usize] += 1;
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

    /// The packed DFA with one state per block of `block_of` (each state's
    /// block; the states of a block must be interchangeable: the same
    /// acceptance, moves into the same blocks, the dead state's block
    /// holding only states with no way to acceptance), numbered depth
    /// first from the start, classes in order, unreached blocks dropped,
    /// and byte classes whose columns became equal merged. Returns it and
    /// the new number of each old state ([`UNREACHED`] for the dropped).
    ///
    /// The numbering depends only on the quotient's language structure,
    /// so equal inputs give identical tables, whichever states stand for
    /// their blocks and however many `threads` lay out the rows. Fails
    /// past what the artifact format addresses.
    pub fn quotient(
        &self,
        block_of: &[u32],
        threads: usize,
    ) -> Result<(PackedDfa, Vec<u32>), Limit> {
        let k = self.n_classes;
        let n_blocks = block_of.iter().max().map_or(0, |&b| b as usize + 1);
        let mut rep = vec![0u32; n_blocks];
        for (s, &b) in block_of.iter().enumerate().rev() {
            rep[b as usize] = s as u32;
        }
        let mut new_of_block = vec![UNREACHED; n_blocks];
        let (dead, start) = (block_of[DEAD as usize], block_of[self.start as usize]);
        new_of_block[dead as usize] = DEAD;
        new_of_block[start as usize] = 1;
        let mut order = vec![dead, start];
        // Depth first (preorder, classes in order): the states along a
        // path get consecutive numbers, so a token's walk at serving time
        // reads neighbouring row starts, rows and distances instead of
        // one cache line (and page) per byte. Each frame is a block and
        // the index of its representative's next move; moves into the
        // dead state, which a dense row would also visit, number nothing.
        let mut stack: Vec<(u32, usize)> = vec![(start, 0)];
        while let Some(top) = stack.last_mut() {
            let (b, i) = *top;
            let targets = self.moves(rep[b as usize]).1;
            let Some(&t) = targets.get(i) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            let tb = block_of[t as usize] as usize;
            if new_of_block[tb] == UNREACHED {
                new_of_block[tb] = order.len() as u32;
                order.push(tb as u32);
                stack.push((tb as u32, 0));
            }
        }
        // Rows in parts on the threads, laid out once: the class merge
        // reads each row twice and the encoder once more, where reading a
        // row through `order`, `rep` and this DFA's row offsets was three
        // dependent cache misses (at 10,000 tools, the merge 0.71 s, the
        // format-5 packing 2.0 s).
        let mut quotient = SparseDfa::building(self.classes, k);
        quotient.row.truncate(1);
        let parts = crate::parallel::parts(order.len(), PARALLEL_ROWS, threads);
        let done = crate::parallel::in_parts(order.len(), parts, |range| {
            let (mut class, mut target, mut ends) = (Vec::new(), Vec::new(), Vec::new());
            for new in range {
                let (cs, ts) = self.moves(rep[order[new] as usize]);
                class.extend_from_slice(cs);
                target.extend(
                    ts.iter()
                        .map(|&t| new_of_block[block_of[t as usize] as usize]),
                );
                ends.push(class.len());
            }
            vec![(class, target, ends)]
        });
        for (class, target, ends) in done {
            let base = quotient.class.len();
            quotient.class.extend_from_slice(&class);
            quotient.target.extend_from_slice(&target);
            quotient.row.extend(ends.iter().map(|&e| base + e));
        }
        quotient.accept = order
            .iter()
            .map(|&b| self.accept[rep[b as usize] as usize])
            .collect();
        quotient.merge_classes();
        let packed = PackedDfa::of_sparse(&quotient)?;
        let new_of = block_of.iter().map(|&b| new_of_block[b as usize]).collect();
        Ok((packed, new_of))
    }

    /// Bytes held: what the compile's memory account charges for it.
    pub fn bytes(&self) -> usize {
        self.row.len() * 8 + self.target.len() * 5 + self.accept.len()
    }

    /// Merges the byte classes whose columns are equal (see
    /// [`merged_classes`]), in place: a merged class's moves in a row
    /// equal its first class's, so each row's remapped moves are sorted
    /// and their repeats dropped.
    fn merge_classes(&mut self) {
        let (k, n) = (self.n_classes, self.n_states());
        let row = |s: usize| {
            let (cs, ts) = self.moves(s as u32);
            cs.iter().zip(ts).map(|(&c, &t)| (c as usize, t))
        };
        let (remap, nk) =
            merged_classes(k, n, row).unwrap_or_else(|| exact_merged_classes(k, n, row));
        if nk == k {
            return;
        }
        let mut moves: Vec<(u16, u32)> = Vec::new();
        let mut w = 0;
        for s in 0..n {
            let (a, z) = (self.row[s], self.row[s + 1]);
            moves.clear();
            moves.extend((a..z).map(|i| (remap[self.class[i] as usize], self.target[i])));
            if !moves.is_sorted() {
                moves.sort_unstable();
            }
            moves.dedup();
            self.row[s] = w;
            for &(c, t) in &moves {
                (self.class[w], self.target[w]) = (c as u8, t);
                w += 1;
            }
        }
        self.row[n] = w;
        self.class.truncate(w);
        self.target.truncate(w);
        self.classes = self.classes.map(|c| remap[c as usize] as u8);
        self.n_classes = nk;
    }
}

/// The fewest states for which a quotient's rows are laid out on several
/// threads.
const PARALLEL_ROWS: usize = 1 << 16;

/// The byte classes of a table of `n` rows over `k` classes, given by
/// their live moves (`row(s)`: `(class, target)`, the dead state's row 0
/// empty), with equal columns merged: each class's new class and their
/// number. Kept classes are the first of their columns, in class order,
/// as [`Dfa::compact_classes`] numbers them. Columns are compared by a
/// hash and a count of their live moves, then every live move of a merged
/// class is checked against the class it merges into; `None` if two
/// different columns collided (the caller then compacts the dense table).
fn merged_classes<I: Iterator<Item = (usize, u32)>>(
    k: usize,
    n: usize,
    row: impl Fn(usize) -> I,
) -> Option<(Vec<u16>, usize)> {
    let mut hash = vec![0u64; k];
    let mut count = vec![0u32; k];
    for s in 1..n {
        for (c, t) in row(s) {
            let x = (s as u64) << 32 | t as u64;
            hash[c] = (hash[c].rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
            count[c] += 1;
        }
    }
    // Per class the first class of its (hash, count), itself if new.
    let mut first: std::collections::HashMap<(u64, u32), usize> = Default::default();
    let into: Vec<usize> = (0..k)
        .map(|c| *first.entry((hash[c], count[c])).or_insert(c))
        .collect();
    // A merged column has as many live moves as its first one, so each of
    // them matching the first's move in its row makes them equal.
    let mut target = vec![DEAD; k];
    for s in 1..n {
        for (c, t) in row(s) {
            target[c] = t;
        }
        let same = row(s).all(|(c, t)| target[into[c]] == t);
        for (c, _) in row(s) {
            target[c] = DEAD;
        }
        if !same {
            return None;
        }
    }
    let mut remap = vec![0u16; k];
    let mut kept = 0;
    for c in 0..k {
        if into[c] == c {
            remap[c] = kept;
            kept += 1;
        } else {
            remap[c] = remap[into[c]];
        }
    }
    Some((remap, kept as usize))
}

/// [`merged_classes`] by comparing whole columns, for when two different
/// columns collided there: each class's column as its `(row, target)`
/// moves, equal columns found by a map.
fn exact_merged_classes<I: Iterator<Item = (usize, u32)>>(
    k: usize,
    n: usize,
    row: impl Fn(usize) -> I,
) -> (Vec<u16>, usize) {
    let mut column: Vec<Vec<(u32, u32)>> = vec![Vec::new(); k];
    for s in 1..n {
        for (c, t) in row(s) {
            column[c].push((s as u32, t));
        }
    }
    let mut first: std::collections::HashMap<&[(u32, u32)], u16> = Default::default();
    let mut remap = vec![0u16; k];
    for (c, col) in column.iter().enumerate() {
        let kept = first.len() as u16;
        remap[c] = *first.entry(col).or_insert(kept);
    }
    let nk = first.len();
    (remap, nk)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// states: 0 dead, 1 start; 1 -a-> 2 (accepts), 1 -b-> 3 -a-> 4 (a
    /// loop of two states that never accept: cannot finish), 2 -a-> 2.
    fn dead_ends() -> Dfa {
        Dfa::drawn(
            "1a2 1b3 2a2 3a4 4a3",
            vec![false, false, true, false, false],
        )
    }

    #[test]
    fn dense_and_sparse_hold_the_same_table() {
        let d = dead_ends();
        let s = SparseDfa::from_dense(&d);
        assert_eq!(s.n_states(), 5);
        assert_eq!(s.n_moves(), 5, "only the live moves are kept");
        assert_eq!(s.moves(1), (&[1u8, 2][..], &[2u32, 3][..]));
        assert_eq!(s.to_dense(), d);
    }

    #[test]
    fn pruning_drops_the_moves_into_states_that_cannot_finish() {
        let mut s = SparseDfa::from_dense(&dead_ends());
        assert!(s.prune());
        // The loop 3 <-> 4 never accepts: the move into it and its own
        // moves go; state numbers stay.
        assert_eq!(s.n_states(), 5);
        assert_eq!(s.moves(1), (&[1u8][..], &[2u32][..]));
        assert_eq!(s.moves(3), (&[][..], &[][..]));
        assert_eq!(s.moves(4), (&[][..], &[][..]));
        assert_eq!(s.moves(2), (&[1u8][..], &[2u32][..]));
        let mut none = s.clone();
        none.accept[2] = false;
        assert!(!none.prune(), "nothing accepts");
    }

    #[test]
    fn the_quotient_numbers_depth_first_and_drops_the_unreached() {
        let mut s = SparseDfa::from_dense(&dead_ends());
        assert!(s.prune());
        let identity: Vec<u32> = (0..5).collect();
        let (d, new_of) = s.quotient(&identity, 1).unwrap();
        assert_eq!(new_of, vec![DEAD, 1, 2, UNREACHED, UNREACHED]);
        assert_eq!(d.n_states(), 3);
        assert!(d.accepts(b"aaa") && !d.accepts(b"b") && !d.accepts(b""));
        // `b` no longer moves anywhere: its class merges with the bytes
        // that never did.
        assert_eq!(d.classes[b'b' as usize], d.classes[b'z' as usize]);
    }

    #[test]
    fn merged_classes_are_what_compacting_the_dense_table_gives() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        for _ in 0..200 {
            let n = 2 + next(30) as usize;
            let k = 1 + next(12) as usize;
            // Each class copies an earlier column or gets its own, so that
            // equal columns are common; row 0 is the dead state.
            let own: Vec<Option<usize>> = (0..k)
                .map(|c| (c > 0 && next(2) == 0).then(|| next(c as u64) as usize))
                .collect();
            let mut trans = vec![DEAD; n * k];
            for s in 1..n {
                for c in 0..k {
                    trans[s * k + c] = match own[c] {
                        Some(f) => trans[s * k + f],
                        None if next(3) == 0 => next(n as u64) as u32,
                        None => DEAD,
                    };
                }
            }
            let mut classes = [0u8; 256];
            for (b, c) in classes.iter_mut().enumerate() {
                *c = (b % k) as u8;
            }
            let dense = Dfa {
                classes,
                n_classes: k,
                trans,
                accept: vec![false; n],
                start: 1,
            };
            let sparse = SparseDfa::from_dense(&dense);
            let rows = |s: usize| {
                let (cs, ts) = sparse.moves(s as u32);
                cs.iter().zip(ts).map(|(&c, &t)| (c as usize, t))
            };
            let mut want = dense.clone();
            want.compact_classes();
            let hashed = merged_classes(k, n, rows).expect("no collision");
            // The exact comparison, what a collision falls back on.
            for (remap, nk) in [hashed, exact_merged_classes(k, n, rows)] {
                assert_eq!(nk, want.n_classes);
                let got: Vec<u8> = classes.iter().map(|&c| remap[c as usize] as u8).collect();
                assert_eq!(got, want.classes.to_vec());
            }
        }
    }
}
