//! Minimization: merging the states of a [`Dfa`] that have the same
//! language (and the same colour along every path, where states carry
//! colours).
//!
//! Partition refinement on the *partial* transition function: moves into
//! the dead state are left out. A trimmed tool-set DFA sends most of its
//! `states x classes` moves there, and the dense Hopcroft this replaced
//! spent most of its time on them (DESIGN.md §12).

#[cfg(test)]
use crate::automaton::dfa::Dfa;
use crate::automaton::dfa::UNREACHED;
use crate::automaton::packed::PackedDfa;
use crate::automaton::sparse::SparseDfa;
use crate::error::Limit;
use crate::parallel::{fill_parts, in_parts, parts};

/// The tests' dense-table forms.
#[cfg(test)]
impl Dfa {
    /// Merges states with equal languages (see [`SparseDfa::minimize`]).
    /// Returns the new number of each old state ([`UNREACHED`] for none).
    pub fn minimize(&mut self) -> Result<Vec<u32>, Limit> {
        let (dfa, new_of) = SparseDfa::from_dense(self).minimize(1)?;
        *self = dfa.to_dense();
        Ok(new_of)
    }

    /// [`SparseDfa::minimize_colored`] on a dense table. Returns the new
    /// number of each old state, and each new state's colour.
    pub fn minimize_colored(&mut self, colors: &[u32]) -> Result<(Vec<u32>, Vec<u32>), Limit> {
        let (dfa, new_of, color) = SparseDfa::from_dense(self).minimize_colored(colors, 1)?;
        *self = dfa.to_dense();
        Ok((new_of, color))
    }
}

impl SparseDfa {
    /// Merges states with equal languages. Call after
    /// [`SparseDfa::prune`]; the result is trimmed and numbered as
    /// [`SparseDfa::quotient`] does. Returns it and the new number of each
    /// old state ([`UNREACHED`] for none), which carries what is known per
    /// state across. `threads` share the signature rounds (see
    /// [`SparseDfa::refine`]); the result is the same for any number.
    pub fn minimize(&self, threads: usize) -> Result<(PackedDfa, Vec<u32>), Limit> {
        let keys: Vec<u32> = (0..self.accept.len())
            .map(|s| self.end_key(s) | self.accept[s] as u32)
            .collect();
        let blocks = self.refine(&keys, threads)?;
        self.quotient(&blocks, threads)
    }

    /// Bit 1 of a state's key when it ends a call: a state that ends a
    /// call never merges with one that does not, whatever their languages,
    /// since a matcher that stops after its first call tells them apart.
    fn end_key(&self, s: usize) -> u32 {
        (self.call_end.get(s).copied().unwrap_or(false) as u32) << 1
    }

    /// [`SparseDfa::minimize`] keeping states of different colours apart
    /// (`colors`: one per state, 0 = none; the dead state's is 0): the
    /// coarsest quotient in which merged states have the same language and
    /// the same colour along every path. Returns it, the new number of
    /// each old state, and each new state's colour.
    pub fn minimize_colored(
        &self,
        colors: &[u32],
        threads: usize,
    ) -> Result<(PackedDfa, Vec<u32>, Vec<u32>), Limit> {
        let keys: Vec<u32> = colors
            .iter()
            .zip(&self.accept)
            .enumerate()
            .map(|(s, (&c, &a))| {
                // Colours index a table of at most one entry per state.
                assert!(c < 1 << 30, "colour {c} out of range");
                c << 2 | self.end_key(s) | a as u32
            })
            .collect();
        let blocks = self.refine(&keys, threads)?;
        drop(keys);
        let (dfa, new_of) = self.quotient(&blocks, threads)?;
        let mut color = vec![0; dfa.n_states()];
        for (&m, &c) in new_of.iter().zip(colors) {
            if m != UNREACHED {
                color[m as usize] = c;
            }
        }
        Ok((dfa, new_of, color))
    }

    /// The coarsest partition of the states in which blockmates have the
    /// same keys and move on the same classes into the same blocks: each
    /// state's block, where states in one block have the same language
    /// and the same keys along every word, and states in different blocks
    /// do not.
    ///
    /// Three steps, each cheaper than the next would be alone:
    /// - hashes of `SIGNATURE_ROUNDS` Moore rounds (`signatures`, on the
    ///   `threads`) give a first partition, finer than "equal keys" and
    ///   coarser than the answer;
    /// - blocks split by each state's moves into the blocks of the moment
    ///   (`settle_hashed`), re-hashing only the states some move of
    ///   which now leads into a renumbered block, until no block splits;
    /// - a linear check that blockmates' moves agree (`stable`). A hash
    ///   collision could leave two different states together (never
    ///   separate equal ones), so if the check fails, the partition
    ///   refinement of Valmari and Lehtinen (`settle_cords`) finishes
    ///   the job from there, exactly.
    ///
    /// Fails only on the compile's limits ([`crate::limits`]).
    pub fn refine(&self, keys: &[u32], threads: usize) -> Result<Vec<u32>, Limit> {
        self.refine_with(keys, SIGNATURE_ROUNDS, Settle::Hashed, threads)
    }

    /// [`SparseDfa::refine`] from the signatures of `rounds` Moore rounds
    /// (any number gives the same answer, only sooner or later), settled
    /// as `settle` says (both give the same answer).
    fn refine_with(
        &self,
        keys: &[u32],
        rounds: usize,
        settle: Settle,
        threads: usize,
    ) -> Result<Vec<u32>, Limit> {
        let n = self.n_states();
        // The account: the automaton, each state's predecessors, the
        // blocks' partition, the signatures and the sorted lists (twice,
        // while merged).
        let held = self.bytes() + self.n_moves() * 4 + n * 80;
        crate::limits::check("minimize", held)?;
        let sig = self.signatures(keys, rounds, threads);
        // Sorted as one array (a sort by a key read through the state
        // number was 0.9 s of 5.9 million states at 10,000 tools).
        let mut keyed: Vec<(u64, u32, u32)> = (0..n).map(|s| (sig[s], keys[s], s as u32)).collect();
        drop(sig);
        par_sort(&mut keyed, threads);
        // Grouped by key as well as hash: a collision of signatures never
        // puts states of different keys together.
        let mut blocks = Partition::grouped(keyed.iter().map(|&(h, k, s)| (s, (h, k))));
        drop(keyed);
        #[cfg(test)]
        if settle == Settle::HashedOnly {
            self.settle_hashed(&mut blocks, threads, held)?;
            return Ok(blocks.set_of());
        }
        if settle == Settle::Hashed {
            self.settle_hashed(&mut blocks, threads, held)?;
            let block = blocks.set_of();
            if self.stable(&block, threads) {
                return Ok(block);
            }
        }
        self.settle_cords(blocks)
    }

    /// Splits `blocks` until blockmates' moves hash alike: each round
    /// hashes the waiting states' moves (class and target block), splits
    /// every block whose waiting states differ from its other states, and
    /// sets waiting the predecessors of the states whose block number
    /// changed (no other state's hash can have changed). A split gives
    /// the new number to its smaller side, so a state is renumbered at
    /// most `log n` times: the rounds together touch `O(m log n)` moves,
    /// and after the first (every state) only the frontier of the last
    /// splits, where a Moore round reads every move every time.
    fn settle_hashed(
        &self,
        blocks: &mut Partition,
        threads: usize,
        held: usize,
    ) -> Result<(), Limit> {
        let n = self.n_states();
        let preds = Preds::of(self);
        // Per block the hash of its states that are not waiting (they all
        // have it: their targets' blocks have not changed since).
        let mut block_hash = vec![0u64; blocks.len()];
        let mut waiting: Vec<u32> = (0..n as u32).collect();
        let mut listed = vec![false; n];
        let mut hashed: Vec<(u32, u64, u32)> = Vec::new();
        let mut moved: Vec<u32> = Vec::new();
        while !waiting.is_empty() {
            crate::limits::check("minimize", held)?;
            self.hash_moves(blocks, &waiting, threads, &mut hashed);
            par_sort(&mut hashed, threads);
            for run in hashed.chunk_by(|a, b| a.0 == b.0) {
                split_block(blocks, &mut block_hash, run, &mut moved);
            }
            waiting.clear();
            for &s in &moved {
                for &p in preds.of_state(s) {
                    if !listed[p as usize] {
                        listed[p as usize] = true;
                        waiting.push(p);
                    }
                }
            }
            for &p in &waiting {
                listed[p as usize] = false;
            }
            moved.clear();
        }
        Ok(())
    }

    /// Per state of `states`, `(its block, the hash of its moves' classes
    /// and target blocks, the state)`, into `out`; on the threads when
    /// there are many.
    fn hash_moves(
        &self,
        blocks: &Partition,
        states: &[u32],
        threads: usize,
        out: &mut Vec<(u32, u64, u32)>,
    ) {
        let one = |states: &[u32], out: &mut [(u32, u64, u32)]| {
            for (&s, o) in states.iter().zip(out) {
                let (cs, ts) = self.moves(s);
                let h = cs.iter().zip(ts).fold(0, |h, (&c, &t)| {
                    mix(mix(h, c as u64), blocks.set_of_elem(t) as u64)
                });
                *o = (blocks.set_of_elem(s), h, s);
            }
        };
        out.clear();
        out.resize(states.len(), (0, 0, 0));
        let parts = parts(states.len(), PARALLEL_ROUND, threads);
        fill_parts(out, 1, parts, |first, out| {
            one(&states[first..first + out.len()], out)
        });
    }

    /// Whether blockmates move on the same classes into the same blocks
    /// (`block`: each state's), checked against each block's first state.
    fn stable(&self, block: &[u32], threads: usize) -> bool {
        let n = self.n_states();
        let n_blocks = block.iter().max().map_or(0, |&b| b as usize + 1);
        let mut first = vec![0u32; n_blocks];
        for s in (0..n as u32).rev() {
            first[block[s as usize] as usize] = s;
        }
        let agrees = |s: usize| {
            let s = s as u32;
            let (cs, ts) = self.moves(s);
            let (rc, rt) = self.moves(first[block[s as usize] as usize]);
            cs == rc
                && ts
                    .iter()
                    .zip(rt)
                    .all(|(&t, &r)| block[t as usize] == block[r as usize])
        };
        in_parts(n, parts(n, PARALLEL_ROUND, threads), |mut states| {
            vec![states.all(agrees)]
        })
        .into_iter()
        .all(|ok| ok)
    }

    /// Partition refinement on the partial transition function (Valmari
    /// and Lehtinen's formulation of Hopcroft's algorithm) from `blocks`:
    /// blocks of states and "cords" of moves (same class, targets in one
    /// block) split each other until stable, always scanning the smaller
    /// half of a split. Only live moves exist, so the work is `O(m log n)`
    /// over the `m` live moves, not over `states x classes`; but every
    /// block is scanned once even when nothing is left to split.
    fn settle_cords(&self, mut blocks: Partition) -> Result<Vec<u32>, Limit> {
        let n = self.n_states();
        let mut moves = Moves::of(self);
        // The account: the automaton, the moves (four words each, with the
        // cords' partition) and the blocks' partition.
        let held = self.bytes() + moves.len() * 29 + n * 24;
        crate::limits::check("minimize", held)?;
        let mut every = crate::limits::Every::new(256);
        let by_class = std::mem::take(&mut moves.by_class);
        let mut cords = Partition::grouped(by_class.iter().map(|&t| (t, moves.class[t as usize])));
        // Block 0 never splits anything: the other blocks, and the cords
        // of every class (which split "has a move" from "has none"), say
        // all it would.
        let (mut b, mut c) = (1, 0);
        while c < cords.len() {
            every.tick("minimize", || held)?;
            for &t in cords.set(c) {
                blocks.mark(moves.tail[t as usize]);
            }
            blocks.split();
            c += 1;
            while b < blocks.len() {
                for &s in blocks.set(b) {
                    for &t in moves.arriving(s) {
                        cords.mark(t);
                    }
                }
                cords.split();
                b += 1;
            }
        }
        Ok(blocks.set_of())
    }
}

/// How [`SparseDfa::refine_with`] settles the first partition.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Settle {
    /// Hashed rounds, checked, and the cords only if the check fails.
    Hashed,
    /// The cords alone (the tests compare the ways).
    #[cfg(test)]
    Cords,
    /// Hashed rounds alone, unchecked (the tests see that they settle
    /// without the cords' help).
    #[cfg(test)]
    HashedOnly,
}

/// Splits the block of `run` (waiting states of one block with their
/// moves' hashes, sorted by hash) into one block per hash, the block's
/// other states keeping its hash (`block_hash`, extended for each new
/// block). The states given a new block number go to `moved`.
fn split_block(
    blocks: &mut Partition,
    block_hash: &mut Vec<u64>,
    run: &[(u32, u64, u32)],
    moved: &mut Vec<u32>,
) {
    let x = run[0].0;
    let others = blocks.set(x as usize).len() - run.len();
    let groups = || run.chunk_by(|a, b| a.1 == b.1);
    // The hash that stays unmarked: the other states', or when all are
    // waiting the largest group's (fewest renumbered).
    let stays = if others > 0 {
        block_hash[x as usize]
    } else {
        groups().max_by_key(|g| g.len()).expect("a run")[0].1
    };
    let mut rest = x;
    for g in groups().filter(|g| g[0].1 != stays) {
        for &(_, _, s) in g {
            blocks.mark(s);
        }
        let new = blocks.len() as u32;
        blocks.split_noting(|e| moved.push(e));
        block_hash.push(0);
        let at = blocks.set_of_elem(g[0].2);
        block_hash[at as usize] = g[0].1;
        if at == rest {
            // The group kept the number; the rest went to the new block.
            rest = new;
        }
    }
    block_hash[rest as usize] = stays;
}

/// Per state, the states with a live move into it.
struct Preds {
    start: Vec<u32>,
    from: Vec<u32>,
}

impl Preds {
    fn of(dfa: &SparseDfa) -> Preds {
        let n = dfa.n_states();
        let mut start = vec![0u32; n + 1];
        for s in 0..n as u32 {
            for &t in dfa.moves(s).1 {
                start[t as usize + 1] += 1;
            }
        }
        prefix_sums(&mut start);
        let mut next = start.clone();
        let mut from = vec![0u32; dfa.n_moves()];
        for s in 0..n as u32 {
            for &t in dfa.moves(s).1 {
                from[next[t as usize] as usize] = s;
                next[t as usize] += 1;
            }
        }
        Preds { start, from }
    }

    /// The states with a move into `s` (once per move).
    fn of_state(&self, s: u32) -> &[u32] {
        &self.from[self.start[s as usize] as usize..self.start[s as usize + 1] as usize]
    }
}

/// Moore rounds hashed before refinement. Each round is one linear pass
/// over the moves and separates states that differ within one more
/// symbol, which the refinement loop would otherwise split one random
/// cord mark at a time. 16 took the 10,000-tool distinct set's
/// minimization from 46 s to 21.7 s (1.55 M of its 2.76 M final blocks
/// found up front); 48 rounds found 2.6 M but cost more than they saved.
const SIGNATURE_ROUNDS: usize = 16;

impl SparseDfa {
    /// Per state a hash of its key, whether it has a live move on each
    /// class, and (after `rounds` rounds) its targets' hashes: states
    /// with different hashes differ in language or keys, so the hashes
    /// are a valid first partition for [`SparseDfa::refine`] (a
    /// collision only leaves refinement more to split).
    fn signatures(&self, keys: &[u32], rounds: usize, threads: usize) -> Vec<u64> {
        let n = self.n_states();
        let mut h: Vec<u64> = (0..n as u32)
            .map(|s| {
                let (cs, _) = self.moves(s);
                cs.iter().fold(mix(0, keys[s as usize] as u64), |h, &c| {
                    mix(h, c as u64 | 1 << 40)
                })
            })
            .collect();
        let mut next = vec![0u64; n];
        // A round reads only the last one's hashes, so its states split
        // into parts that threads compute alone.
        let parts = parts(n, PARALLEL_ROUND, threads);
        for _ in 0..rounds {
            let last = &h;
            fill_parts(&mut next, 1, parts, |first, out| {
                self.round(last, first, out)
            });
            std::mem::swap(&mut h, &mut next);
        }
        h
    }

    /// One Moore round for the states from `first` on, one per entry of
    /// `out`: each state's hash with its moves' classes and targets'
    /// hashes in `h`.
    fn round(&self, h: &[u64], first: usize, out: &mut [u64]) {
        for (s, o) in (first as u32..).zip(out) {
            let (cs, ts) = self.moves(s);
            *o = cs.iter().zip(ts).fold(h[s as usize], |acc, (&c, &t)| {
                mix(mix(acc, c as u64), h[t as usize])
            });
        }
    }
}

/// The fewest states for which a signature round is split among threads.
const PARALLEL_ROUND: usize = 1 << 16;

/// Sorts `v` (of distinct items, so that the order is unique) on up to
/// two threads: the halves apart, then merged.
fn par_sort<T: Ord + Copy + Send>(v: &mut Vec<T>, threads: usize) {
    if threads < 2 || v.len() < PARALLEL_ROUND {
        v.sort_unstable();
        return;
    }
    let mid = v.len() / 2;
    let (low, high) = v.split_at_mut(mid);
    std::thread::scope(|scope| {
        scope.spawn(|| high.sort_unstable());
        low.sort_unstable();
    });
    let (low, high) = v.split_at(mid);
    let mut merged = Vec::with_capacity(v.len());
    let (mut i, mut j) = (0, 0);
    while i < low.len() && j < high.len() {
        if high[j] < low[i] {
            merged.push(high[j]);
            j += 1;
        } else {
            merged.push(low[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&low[i..]);
    merged.extend_from_slice(&high[j..]);
    *v = merged;
}

/// One step of a signature's hash.
fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// The live moves of a DFA (those not into the dead state), numbered as
/// the automaton lists them (by source state, then class), with each
/// state's incoming moves and the moves in class order. Numbering by
/// source keeps a state's moves together in the cords' partition: a
/// string body's hundred self-loops, marked together whenever its block
/// is scanned, then touch a few cache lines instead of a hundred
/// (numbered class by class they lay a class's whole move count apart).
struct Moves {
    /// Per move its source state.
    tail: Vec<u32>,
    /// Per move its class.
    class: Vec<u8>,
    /// The moves by class, ascending within a class.
    by_class: Vec<u32>,
    /// Per state, where its incoming moves start in `incoming`.
    in_start: Vec<u32>,
    /// Moves by target state.
    incoming: Vec<u32>,
}

impl Moves {
    fn of(dfa: &SparseDfa) -> Moves {
        let (n, k) = (dfa.n_states(), dfa.n_classes);
        let m = dfa.n_moves();
        let mut class_start = vec![0u32; k + 1];
        let mut in_start = vec![0u32; n + 1];
        let mut tail = Vec::with_capacity(m);
        let mut class = Vec::with_capacity(m);
        for s in 0..n as u32 {
            let (cs, ts) = dfa.moves(s);
            for (&c, &t) in cs.iter().zip(ts) {
                class_start[c as usize + 1] += 1;
                in_start[t as usize + 1] += 1;
            }
            tail.extend(std::iter::repeat_n(s, cs.len()));
            class.extend_from_slice(cs);
        }
        prefix_sums(&mut class_start);
        prefix_sums(&mut in_start);
        let mut by_class = vec![0u32; m];
        let mut incoming = vec![0u32; m];
        let mut next_in = in_start.clone();
        let mut i = 0u32;
        for s in 0..n as u32 {
            let (cs, ts) = dfa.moves(s);
            for (&c, &t) in cs.iter().zip(ts) {
                by_class[class_start[c as usize] as usize] = i;
                class_start[c as usize] += 1;
                incoming[next_in[t as usize] as usize] = i;
                next_in[t as usize] += 1;
                i += 1;
            }
        }
        Moves {
            tail,
            class,
            by_class,
            in_start,
            incoming,
        }
    }

    fn len(&self) -> usize {
        self.tail.len()
    }

    /// The moves into state `s`.
    fn arriving(&self, s: u32) -> &[u32] {
        let (a, z) = (self.in_start[s as usize], self.in_start[s as usize + 1]);
        &self.incoming[a as usize..z as usize]
    }
}

fn prefix_sums(xs: &mut [u32]) {
    for i in 1..xs.len() {
        xs[i] += xs[i - 1];
    }
}

/// A refinable partition of `0..n`: each set is a range of `elems`, its
/// marked elements first. [`Partition::split`] separates the marked from
/// the unmarked part of every set marked since the last split, giving the
/// new set number to the smaller part, so that a set once scanned is only
/// ever scanned again through halves of it.
struct Partition {
    elems: Vec<u32>,
    /// Per element, its index in `elems` and its set: read together by
    /// every mark, so one cache line rather than two.
    place: Vec<Place>,
    /// Per set, its range of `elems` and how many of it are marked (read
    /// together by every mark and split).
    sets: Vec<Span>,
    /// The sets with marked elements.
    touched: Vec<u32>,
}

#[derive(Clone, Copy, Default)]
struct Place {
    at: u32,
    set: u32,
}

#[derive(Clone, Copy)]
struct Span {
    first: u32,
    past: u32,
    marked: u32,
}

impl Partition {
    /// One set per run of equal keys in `order` (all of `0..n`, each
    /// with its key).
    fn grouped<K: PartialEq>(order: impl ExactSizeIterator<Item = (u32, K)>) -> Partition {
        let n = order.len();
        let mut p = Partition {
            place: vec![Place::default(); n],
            sets: Vec::new(),
            touched: Vec::new(),
            elems: Vec::with_capacity(n),
        };
        let mut last = None;
        for (i, (e, key)) in order.enumerate() {
            if last.as_ref() != Some(&key) {
                if let Some(last) = p.sets.last_mut() {
                    last.past = i as u32;
                }
                p.sets.push(Span {
                    first: i as u32,
                    past: n as u32,
                    marked: 0,
                });
                last = Some(key);
            }
            p.elems.push(e);
            p.place[e as usize] = Place {
                at: i as u32,
                set: p.sets.len() as u32 - 1,
            };
        }
        p
    }

    fn len(&self) -> usize {
        self.sets.len()
    }

    fn set(&self, s: usize) -> &[u32] {
        let Span { first, past, .. } = self.sets[s];
        &self.elems[first as usize..past as usize]
    }

    /// Each element's set.
    fn set_of(&self) -> Vec<u32> {
        self.place.iter().map(|p| p.set).collect()
    }

    fn mark(&mut self, e: u32) {
        let Place { at: i, set: s } = self.place[e as usize];
        let span = &mut self.sets[s as usize];
        let j = span.first + span.marked;
        if i < j {
            return;
        }
        if span.marked == 0 {
            self.touched.push(s);
        }
        span.marked += 1;
        let other = self.elems[j as usize];
        self.elems.swap(i as usize, j as usize);
        self.place[other as usize].at = i;
        self.place[e as usize].at = j;
    }

    /// The set of element `e`.
    fn set_of_elem(&self, e: u32) -> u32 {
        self.place[e as usize].set
    }

    fn split(&mut self) {
        self.split_noting(|_| {});
    }

    /// [`Partition::split`], calling `moved` with each element given a
    /// new set number.
    fn split_noting(&mut self, mut moved: impl FnMut(u32)) {
        while let Some(s) = self.touched.pop() {
            let z = self.sets.len();
            let span = &mut self.sets[s as usize];
            let mid = span.first + span.marked;
            span.marked = 0;
            if mid == span.past {
                continue;
            }
            let new = if mid - span.first <= span.past - mid {
                let new = Span {
                    first: span.first,
                    past: mid,
                    marked: 0,
                };
                span.first = mid;
                new
            } else {
                let new = Span {
                    first: mid,
                    past: span.past,
                    marked: 0,
                };
                span.past = mid;
                new
            };
            self.sets.push(new);
            for i in new.first..new.past {
                let e = self.elems[i as usize];
                self.place[e as usize].set = z as u32;
                moved(e);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::automaton::dfa::DEAD;

    /// A random DFA over `k` classes, doubled: a new start state leads to
    /// two copies of one random automaton (by the first two classes), and
    /// some moves of the second copy cross into the first. The copies'
    /// states are pairwise equivalent, so there is much to merge, in
    /// acyclic parts and in loops alike. Odd seeds add the crossing moves
    /// (so equivalent states sit in different loops); even seeds keep the
    /// copies exact.
    pub(crate) fn random_dfa(seed: u64, m: usize, k: usize) -> Dfa {
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

    fn accept_keys(d: &Dfa) -> Vec<u32> {
        d.accept.iter().map(|&a| a as u32).collect()
    }

    fn colored_keys(d: &Dfa, colors: &[u32]) -> Vec<u32> {
        colors
            .iter()
            .zip(&d.accept)
            .map(|(&c, &a)| c << 1 | a as u32)
            .collect()
    }

    /// Whether states `s` and `t` of `d` see the same keys along every
    /// word (product reachability).
    fn equivalent(d: &Dfa, keys: &[u32], s: u32, t: u32) -> bool {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![(s, t)];
        while let Some((s, t)) = todo.pop() {
            if !seen.insert((s, t)) {
                continue;
            }
            if keys[s as usize] != keys[t as usize] {
                return false;
            }
            for c in 0..d.n_classes {
                let k = d.n_classes;
                todo.push((d.trans[s as usize * k + c], d.trans[t as usize * k + c]));
            }
        }
        true
    }

    /// No two states of `d` are equivalent: nothing is left to merge.
    fn assert_minimal(d: &Dfa, keys: &[u32], seed: u64) {
        for s in 0..d.n_states() as u32 {
            for t in s + 1..d.n_states() as u32 {
                assert!(
                    !equivalent(d, keys, s, t),
                    "seed {seed}: states {s} and {t} are equivalent"
                );
            }
        }
    }

    #[test]
    fn minimization_keeps_the_language_and_leaves_nothing_to_merge() {
        let mut shrunk = 0;
        for seed in 0..300u64 {
            let n = 1 + (seed as usize * 7) % 30;
            let k = 2 + (seed as usize) % 3;
            let mut d = random_dfa(seed, n, k);
            if !d.trim() {
                continue;
            }
            let mut min = d.clone();
            let new_of = min.minimize().unwrap();
            shrunk += (min.n_states() < d.n_states()) as usize;
            if seed % 2 == 0 {
                // Exact copies fold into one.
                assert!(
                    min.n_states() <= 2 + (d.n_states() - 2) / 2,
                    "seed {seed}: {} states left of {}",
                    min.n_states(),
                    d.n_states()
                );
            }
            assert!(same_language(&d, &min), "seed {seed}: language changed");
            assert_minimal(&min, &accept_keys(&min), seed);
            // The map sends every state to one with its language.
            for s in 1..d.n_states() as u32 {
                let mut from = d.clone();
                from.start = s;
                let mut to = min.clone();
                to.start = new_of[s as usize];
                assert!(same_language(&from, &to), "seed {seed}: state {s}");
            }
            // Minimizing again changes nothing.
            let mut again = min.clone();
            again.minimize().unwrap();
            assert_eq!(again, min, "seed {seed}");
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
            // Every tenth with all 256 byte classes.
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
            plain.minimize().unwrap();
            let mut col = d.clone();
            let (new_of, got) = col.minimize_colored(&colors).unwrap();
            assert_minimal(&col, &colored_keys(&col, &got), seed);
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
                assert_eq!(new_of[s as usize], t, "seed {seed}: the map");
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
            let (_, z) = none.minimize_colored(&vec![0; d.n_states()]).unwrap();
            assert_eq!(none, plain, "seed {seed}");
            assert!(z.iter().all(|&c| c == 0));
        }
    }

    /// Threads compute a signature round in parts: every part's hashes
    /// are those one thread computes (an automaton above the size where
    /// rounds are split).
    #[test]
    fn threads_give_one_threads_signatures() {
        let mut d = random_dfa(8, PARALLEL_ROUND + 4_321, 4);
        assert!(d.trim());
        let sparse = SparseDfa::from_dense(&d);
        assert!(
            sparse.n_states() >= PARALLEL_ROUND,
            "{} states: too few to split",
            sparse.n_states()
        );
        let keys: Vec<u32> = (0..sparse.n_states() as u32).map(|s| s % 5).collect();
        let one = sparse.signatures(&keys, 6, 1);
        for threads in [2, 3, 8] {
            assert!(
                sparse.signatures(&keys, 6, threads) == one,
                "{threads} threads"
            );
        }
    }

    /// Each state's block renamed by first appearance, so that two
    /// partitions compare equal whatever their block numbers.
    fn canonical(blocks: &[u32]) -> Vec<u32> {
        let mut name = std::collections::HashMap::new();
        blocks
            .iter()
            .map(|b| {
                let next = name.len() as u32;
                *name.entry(*b).or_insert(next)
            })
            .collect()
    }

    /// The settling, not the signatures, guarantees the answer: starting
    /// from the keys alone (0 rounds, where it does all the splitting) or
    /// from a few rounds, hashed or by cords, gives the same blocks as
    /// the default, and they are the equivalence classes. With colours as
    /// keys, so that keys are more than two.
    #[test]
    fn any_rounds_and_either_settling_give_the_same_blocks() {
        for seed in 0..200u64 {
            let n = 1 + (seed as usize * 11) % 40;
            let mut d = random_dfa(seed, n, 2 + (seed as usize) % 4);
            if !d.trim() {
                continue;
            }
            let keys: Vec<u32> = (0..d.n_states() as u32)
                .map(|s| (s % (1 + seed as u32 % 3)) << 1 | d.accept[s as usize] as u32)
                .collect();
            let sparse = SparseDfa::from_dense(&d);
            let want = sparse.refine(&keys, 1).unwrap();
            assert!(sparse.stable(&want, 1), "seed {seed}");
            for rounds in [0, 1, 2, 5] {
                for settle in [Settle::Hashed, Settle::Cords, Settle::HashedOnly] {
                    let got = sparse.refine_with(&keys, rounds, settle, 1).unwrap();
                    assert_eq!(
                        canonical(&want),
                        canonical(&got),
                        "seed {seed}, {rounds} rounds, {settle:?}"
                    );
                }
            }
            for s in 1..want.len() as u32 {
                for t in s + 1..want.len() as u32 {
                    assert_eq!(
                        want[s as usize] == want[t as usize],
                        equivalent(&d, &keys, s, t),
                        "seed {seed}: states {s} and {t}"
                    );
                }
            }
        }
    }

    /// The check that decides whether the cords must finish the job: it
    /// refuses a partition with blockmates that move into different
    /// blocks (the keys alone, where minimization merges less than they
    /// group) and one with blockmates that move on different classes.
    #[test]
    fn the_stability_check_finds_blockmates_that_differ() {
        let mut refused = 0;
        for seed in 0..100u64 {
            let mut d = random_dfa(seed, 5 + seed as usize % 20, 3);
            if !d.trim() {
                continue;
            }
            let sparse = SparseDfa::from_dense(&d);
            let keys: Vec<u32> = d.accept.iter().map(|&a| a as u32).collect();
            let want = sparse.refine(&keys, 1).unwrap();
            let by_key: Vec<u32> = (0..d.n_states())
                .map(|s| u32::from(s > 0) + keys[s])
                .collect();
            let n_want = want.iter().collect::<std::collections::HashSet<_>>().len();
            let n_key = by_key
                .iter()
                .collect::<std::collections::HashSet<_>>()
                .len();
            assert_eq!(sparse.stable(&by_key, 1), n_want == n_key, "seed {seed}");
            refused += (n_want != n_key) as usize;
        }
        assert!(refused >= 50, "only {refused} partitions to refuse");
        // States 2 and 3 both accept, but only 2 moves on `b`.
        let d = Dfa::drawn("1a2 1c3 2b2", vec![false, false, true, true]);
        let sparse = SparseDfa::from_dense(&d);
        assert!(!sparse.stable(&[0, 1, 2, 2], 1));
        assert!(sparse.stable(&[0, 1, 2, 3], 1));
    }

    /// Threads hash the settling's first round and check stability in
    /// parts: the same blocks as one thread, on an automaton above the
    /// size where the work is split.
    #[test]
    fn threads_give_one_threads_blocks() {
        let mut d = random_dfa(9, PARALLEL_ROUND + 4_321, 4);
        assert!(d.trim());
        let sparse = SparseDfa::from_dense(&d);
        assert!(sparse.n_states() >= PARALLEL_ROUND);
        let keys: Vec<u32> = (0..sparse.n_states() as u32).map(|s| s % 3).collect();
        let one = canonical(&sparse.refine(&keys, 1).unwrap());
        let cords = sparse.refine_with(&keys, 4, Settle::Cords, 1).unwrap();
        assert_eq!(canonical(&cords), one, "hashed and cords");
        for threads in [1, 2] {
            let hashed = sparse.refine_with(&keys, 4, Settle::HashedOnly, threads);
            assert_eq!(canonical(&hashed.unwrap()), one, "hashed alone");
        }
        for threads in [2, 3] {
            let got = sparse.refine(&keys, threads).unwrap();
            assert!(sparse.stable(&got, threads));
            assert_eq!(canonical(&got), one, "{threads} threads");
        }
    }

    #[test]
    fn identical_loops_merge() {
        // Two copies of `a*b` behind `x` and `y` fold into one loop state
        // and one final state.
        // states: 0 dead, 1 start, 2/3 loops, 4/5 finals.
        let accept = vec![false, false, false, false, true, true];
        let mut d = Dfa::drawn("1x2 1y3 2a2 2b4 3a3 3b5", accept);
        let before = d.clone();
        let new_of = d.minimize().unwrap();
        assert_eq!(d.n_states(), 4, "dead, start, loop, final");
        assert_eq!(new_of[2], new_of[3]);
        assert_eq!(new_of[4], new_of[5]);
        assert!(same_language(&before, &d));
    }
}
