//! The subset construction: an NFA to a [`SparseDfa`], each DFA state a
//! set of NFA states, each set stored once.

use crate::automaton::dfa::{byte_classes, DEAD};
use crate::automaton::nfa::Nfa;
use crate::automaton::region::{Labels, LabelsBuilder};
use crate::automaton::sparse::SparseDfa;
use crate::error::Limit;
use crate::parallel::{in_parts, parts};

/// The NFA state sets of a subset construction, by DFA state: one flat
/// buffer of sorted sets and an open-addressing table of their ids keyed
/// by content. (A map from owned sets to ids, beside a list of the same
/// sets, held each set twice with two allocations: at 10,000 distinct
/// tools, 5.9 million sets.)
pub(crate) struct Sets {
    items: Vec<u32>,
    /// Per set where it starts in `items`, and the end.
    start: Vec<usize>,
    /// Per set its hash's low word, to grow the table without rehashing
    /// sets (the table never has more slots than a word numbers; a word
    /// rather than the whole hash was 18 MB of the compile's peak, the end
    /// of this construction, at 10,000 distinct tools).
    hash: Vec<u32>,
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
        self.start.len() - 1
    }

    /// Drops the lookup table once every set is known: only the sets are
    /// read afterwards (labels, colours), and the table and hashes were a
    /// fifth of what the construction holds at its end, the compile's peak
    /// at scale. No set can be looked up or added after this.
    fn seal(&mut self) {
        self.hash = Vec::new();
        self.slots = Vec::new();
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
                id if self.hash[id as usize - 1] == hash as u32 && self.get(id - 1) == set => {
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
        self.hash.push(hash as u32);
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
            + self.hash.capacity() * 4
            + self.slots.len() * 4
    }
}

/// The targets of one DFA state's moves, class by class, from its NFA
/// states' ranges as runs of classes (classes are numbered in byte order,
/// so a range covers a run of them). The targets only change at a class
/// where some range starts, or the one after where some range ends: every
/// other class moves as the class before it, with no closure or lookup.
/// Why: a string body's ranges cover ~90 classes, and pushing each target
/// into every class's bucket, then comparing neighbouring buckets, was
/// the expansion's largest cost. The subset construction and the lazy DFA
/// both expand through it.
#[derive(Default)]
pub(crate) struct ClassRuns {
    /// `(first class, last class, target)`.
    spans: Vec<(u8, u8, u32)>,
    /// The spans covering the class a sweep is at, `(last, target)`.
    active: Vec<(u8, u32)>,
    /// Per class, whether some span starts there or ended just before.
    changes: Vec<bool>,
    set: Vec<u32>,
}

/// The targets of one class in a [`ClassRuns::sweep`].
pub(crate) enum Targets<'s> {
    /// Those of the spans covering the class (not empty), which may
    /// differ from the class before's; the callee may overwrite them (a
    /// closure in place).
    New(&'s mut Vec<u32>),
    /// The same as the class before's (not empty).
    Same,
}

impl ClassRuns {
    /// Empty, for a state over `k` classes.
    pub(crate) fn start(&mut self, k: usize) {
        self.spans.clear();
        self.changes.clear();
        self.changes.resize(k, false);
    }

    /// A range of the state: classes `first..=last` move to `target`.
    pub(crate) fn add(&mut self, first: u8, last: u8, target: u32) {
        self.spans.push((first, last, target));
        self.changes[first as usize] = true;
        if let Some(after) = self.changes.get_mut(last as usize + 1) {
            *after = true;
        }
    }

    /// Calls `each(class, targets)` for every class with targets, in
    /// class order.
    pub(crate) fn sweep(&mut self, mut each: impl FnMut(usize, Targets<'_>)) {
        // The spans by first class, and those covering the class at hand
        // (scanning every span at every change was quadratic in a state
        // of 10,000 names' first bytes).
        self.spans.sort_unstable_by_key(|&(first, _, _)| first);
        self.active.clear();
        let mut next = 0;
        let mut live = false;
        for c in 0..self.changes.len() {
            if !self.changes[c] {
                if live {
                    each(c, Targets::Same);
                }
                continue;
            }
            let c8 = c as u8;
            self.active.retain(|&(last, _)| last >= c8);
            while let Some(&(first, last, t)) = self.spans.get(next) {
                if first != c8 {
                    break;
                }
                self.active.push((last, t));
                next += 1;
            }
            self.set.clear();
            self.set.extend(self.active.iter().map(|&(_, t)| t));
            live = !self.set.is_empty();
            if live {
                each(c, Targets::New(&mut self.set));
            }
        }
    }

    /// Bytes held, for the memory account.
    fn bytes(&self) -> usize {
        self.spans.capacity() * 8
            + self.active.capacity() * 8
            + self.changes.capacity()
            + self.set.capacity() * 4
    }
}

/// One thread's working space for expanding DFA states: a stamp per NFA
/// state for the closures, their stack, the state's ranges by class and
/// the set being closed.
struct Scratch {
    seen: Vec<u32>,
    stamp: u32,
    stack: Vec<u32>,
    runs: ClassRuns,
    n_classes: usize,
    set: Vec<u32>,
}

impl Scratch {
    fn new(nfa: &Nfa, n_classes: usize) -> Scratch {
        Scratch {
            seen: vec![u32::MAX; nfa.len()],
            stamp: 0,
            stack: Vec::new(),
            runs: ClassRuns::default(),
            n_classes,
            set: Vec::new(),
        }
    }

    /// Bytes held, for the memory account (a stamp per NFA state).
    fn bytes(&self) -> usize {
        self.seen.capacity() * 4
            + self.stack.capacity() * 4
            + self.set.capacity() * 4
            + self.runs.bytes()
    }

    /// Replaces `self.set` by its epsilon closure, sorted.
    fn close(&mut self, nfa: &Nfa) {
        let mut set = std::mem::take(&mut self.set);
        self.close_set(nfa, &mut set);
        self.set = set;
    }

    /// Replaces `set` by its epsilon closure, sorted.
    fn close_set(&mut self, nfa: &Nfa, set: &mut Vec<u32>) {
        self.stamp += 1;
        let (seen, stamp, stack) = (&mut self.seen, self.stamp, &mut self.stack);
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
            for &t in nfa.eps(s) {
                if seen[t as usize] != stamp {
                    seen[t as usize] = stamp;
                    stack.push(t);
                }
            }
        }
        set.sort_unstable();
    }
}

/// The moves of expanded DFA states, before their targets have ids: per
/// state its moves in class order, each the class and either [`SAME`]
/// (the previous class's target) or the index of its target set.
#[derive(Default)]
struct Expanded {
    /// Per state, where its moves end in `moves`.
    ends: Vec<usize>,
    /// `(class, SAME or target set index)`.
    moves: Vec<(u8, u32)>,
    /// The target sets, each sorted, one after another.
    items: Vec<u32>,
    /// Per target set, where it ends in `items`.
    set_end: Vec<usize>,
    /// Per target set, its hash ([`Sets::hash_of`]).
    hashes: Vec<u64>,
}

/// A move to the same target as the move of the class before it.
const SAME: u32 = u32::MAX;

impl Expanded {
    fn clear(&mut self) {
        self.ends.clear();
        self.moves.clear();
        self.items.clear();
        self.set_end.clear();
        self.hashes.clear();
    }

    fn set(&self, i: u32) -> &[u32] {
        let start = if i == 0 {
            0
        } else {
            self.set_end[i as usize - 1]
        };
        &self.items[start..self.set_end[i as usize]]
    }

    fn bytes(&self) -> usize {
        self.ends.capacity() * 8
            + self.moves.capacity() * 8
            + self.items.capacity() * 4
            + self.set_end.capacity() * 8
            + self.hashes.capacity() * 8
    }

    /// Expands the DFA state whose NFA states are `from`: per class the
    /// closure of its targets, hashed ([`ClassRuns`]).
    fn push(&mut self, nfa: &Nfa, classes: &[u8; 256], from: &[u32], sc: &mut Scratch) {
        let mut runs = std::mem::take(&mut sc.runs);
        runs.start(sc.n_classes);
        for &s in from {
            for &(lo, hi, t) in nfa.ranges(s) {
                runs.add(classes[lo as usize], classes[hi as usize], t);
            }
        }
        runs.sweep(|c, targets| match targets {
            Targets::Same => self.moves.push((c as u8, SAME)),
            Targets::New(set) => {
                sc.close_set(nfa, set);
                self.moves.push((c as u8, self.hashes.len() as u32));
                self.hashes.push(Sets::hash_of(set));
                self.items.extend_from_slice(set);
                self.set_end.push(self.items.len());
            }
        });
        sc.runs = runs;
        self.ends.push(self.moves.len());
    }
}

/// The fewest unexpanded states for which expanding them on several
/// threads pays for starting the threads (a state takes ~1 us).
const PARALLEL_MIN: usize = 512;
/// The most states expanded at once: bounds the expanded sets held (and
/// the fewest states a per-state pass shares among the threads).
pub(crate) const BATCH: usize = 8192;
/// States per chunk of a batch: threads take chunks as they finish, so
/// that uneven states even out.
const CHUNK: usize = 256;

/// Subset construction: the DFA, each state's regions when `labeled` (the
/// sorted regions of its NFA states that read a byte, see
/// [`crate::automaton::region`]), and each state's NFA states. Fails
/// beyond `max_states` DFA states and on the compile's limits.
///
/// States are expanded in id order, their new target sets numbered in
/// the order met, as one thread would. With `threads > 1`, once enough
/// states wait, a batch of them is expanded (gathered, closed, hashed:
/// most of the work) on the threads, chunk by chunk, and numbered in
/// order on this thread while the threads expand the next batch (the
/// states already known past it): the same ids as one thread gives,
/// since a state's expansion depends on its set alone (DESIGN.md §12:
/// numbering beside the expansion, and chunks rather than one part per
/// thread).
pub(crate) fn subsets(
    nfa: &Nfa,
    max_states: usize,
    labeled: bool,
    threads: usize,
) -> Result<(SparseDfa, Labels, Sets), Limit> {
    let (classes, n_classes) = byte_classes(nfa);
    let threads = threads.clamp(1, 64);
    // One thread's space; the others' once a batch is large enough.
    let mut scratch = vec![Scratch::new(nfa, n_classes)];
    // One state's expansion, and the chunks of the batch being numbered
    // and of the one being expanded.
    let mut one = Expanded::default();
    let (mut ready, mut spare): (Vec<Expanded>, Vec<Expanded>) = Default::default();
    let mut batch = Batch::default();

    let mut sets = Sets::new();
    let empty = sets.find(&[], Sets::hash_of(&[])).expect_err("new");
    sets.insert(&[], Sets::hash_of(&[]), empty);
    let sc = &mut scratch[0];
    sc.set.clear();
    sc.set.push(nfa.start);
    sc.close(nfa);
    let h = Sets::hash_of(&sc.set);
    let slot = sets.find(&sc.set, h).expect_err("new");
    sets.insert(&sc.set, h, slot);
    let mut dfa = SparseDfa::building(classes, n_classes);
    let mut next = 1usize;
    // States past `next` already expanded, in `ready`.
    let mut expanded = 0usize;
    // The memory account: the NFA, the sets, the moves, the batches and
    // the threads' scratch spaces.
    let nfa_bytes = nfa.bytes();
    while next < sets.len() {
        let batch_bytes: usize = ready
            .iter()
            .chain(&spare)
            .map(Expanded::bytes)
            .sum::<usize>()
            + scratch.iter().map(Scratch::bytes).sum::<usize>()
            + one.bytes()
            + batch.bytes();
        let held = nfa_bytes + sets.bytes() + dfa.bytes() + batch_bytes;
        if let Err(limit) = crate::limits::check("determinize", held) {
            // Where the construction was: the region of the first NFA
            // state of the set being expanded that reads a byte.
            let region = sets
                .get(next as u32)
                .iter()
                .find(|&&s| !nfa.ranges(s).is_empty())
                .map(|&s| nfa.region(s));
            return Err(region.map_or(limit, |r| limit.in_region(r)));
        }
        if expanded == 0 {
            let waiting = sets.len() - next;
            if threads == 1 || waiting < PARALLEL_MIN {
                one.clear();
                one.push(nfa, &classes, sets.get(next as u32), &mut scratch[0]);
                number(&one, &mut sets, &mut dfa, max_states)?;
                next += 1;
                continue;
            }
            // Half of them when few, so that the other half is expanded
            // beside this half's numbering.
            expanded = if waiting >= 2 * PARALLEL_MIN {
                (waiting / 2).min(BATCH)
            } else {
                waiting
            };
            while scratch.len() < threads {
                scratch.push(Scratch::new(nfa, n_classes));
            }
            batch.copy(&sets, next..next + expanded);
            let job = Expand {
                nfa,
                classes: &classes,
                batch: &batch,
            };
            job.run(&mut scratch, &mut ready, || Ok(()))?;
        }
        // The states known past the ready batch are expanded beside its
        // numbering.
        let after = next + expanded;
        let known = (sets.len() - after).min(BATCH);
        if known >= PARALLEL_MIN {
            batch.copy(&sets, after..after + known);
            let job = Expand {
                nfa,
                classes: &classes,
                batch: &batch,
            };
            job.run(&mut scratch, &mut spare, || {
                ready
                    .iter()
                    .try_for_each(|ex| number(ex, &mut sets, &mut dfa, max_states))
            })?;
            std::mem::swap(&mut ready, &mut spare);
            expanded = known;
        } else {
            for ex in &ready {
                number(ex, &mut sets, &mut dfa, max_states)?;
            }
            expanded = 0;
        }
        next = after;
    }
    // The construction's buffers (each thread's stamps are a word per NFA
    // state) go before the labels are built beside the sets.
    drop((scratch, one, ready, spare, batch));
    sets.seal();
    crate::heap::give_back(sets.len() * 16);
    dfa.accept = sets
        .iter()
        .map(|s| s.binary_search(&nfa.accept).is_ok())
        .collect();
    if !nfa.call_ends.is_empty() {
        let ends = &nfa.call_ends;
        dfa.call_end = sets
            .iter()
            .map(|s| s.iter().any(|q| ends.binary_search(q).is_ok()))
            .collect();
        let doubt = nfa.first_call_runs();
        dfa.call_mixed = sets
            .iter()
            .zip(&dfa.call_end)
            .any(|(s, &end)| end && s.iter().any(|&q| doubt[q as usize]));
    }
    let labels = if labeled {
        // One word per NFA state, read in set order: the states themselves
        // (moves and all) are ten times larger and would be read at random.
        let reads: Vec<u32> = (0..nfa.len() as u32)
            .map(|s| {
                if nfa.ranges(s).is_empty() {
                    u32::MAX
                } else {
                    nfa.region(s)
                }
            })
            .collect();
        let label = |ids: std::ops::Range<usize>| {
            let mut b = LabelsBuilder::default();
            let mut l = Vec::new();
            for id in ids {
                l.clear();
                let regions = sets.get(id as u32).iter().map(|&s| reads[s as usize]);
                l.extend(regions.filter(|&r| r != u32::MAX));
                l.sort_unstable();
                l.dedup();
                b.push(&l);
            }
            vec![b.finish()]
        };
        // Millions of states at 10,000 tools: the threads share them.
        Labels::concat(in_parts(
            sets.len(),
            parts(sets.len(), BATCH, threads),
            label,
        ))
    } else {
        Labels::default()
    };
    Ok((dfa, labels, sets))
}

/// The NFA sets of a batch of DFA states, copied out of the [`Sets`] so
/// that threads read them while this thread adds sets.
#[derive(Default)]
struct Batch {
    items: Vec<u32>,
    /// Per state where its set ends in `items`.
    ends: Vec<usize>,
}

impl Batch {
    /// The sets of states `ids`.
    fn copy(&mut self, sets: &Sets, ids: std::ops::Range<usize>) {
        let (lo, hi) = (sets.start[ids.start], sets.start[ids.end]);
        self.items.clear();
        self.items.extend_from_slice(&sets.items[lo..hi]);
        self.ends.clear();
        self.ends
            .extend(sets.start[ids.start + 1..=ids.end].iter().map(|&e| e - lo));
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.items[start..self.ends[i]]
    }

    fn bytes(&self) -> usize {
        self.items.capacity() * 4 + self.ends.capacity() * 8
    }
}

/// The expansion of one [`Batch`].
struct Expand<'a> {
    nfa: &'a Nfa,
    classes: &'a [u8; 256],
    batch: &'a Batch,
}

impl Expand<'_> {
    /// Expands the batch into `out`, one [`Expanded`] per [`CHUNK`] of
    /// states in order, on one thread per scratch space; this thread
    /// first runs `first` (numbering the batch before) and then takes
    /// chunks too. Returns what `first` returned.
    fn run(
        &self,
        scratch: &mut [Scratch],
        out: &mut Vec<Expanded>,
        first: impl FnOnce() -> Result<(), Limit>,
    ) -> Result<(), Limit> {
        let n = self.batch.len();
        out.resize_with(n.div_ceil(CHUNK), Expanded::default);
        let chunks = std::sync::Mutex::new(out.iter_mut().enumerate());
        let take = |sc: &mut Scratch| loop {
            let next = chunks.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, ex)) = next else {
                break;
            };
            ex.clear();
            for j in i * CHUNK..((i + 1) * CHUNK).min(n) {
                ex.push(self.nfa, self.classes, self.batch.get(j), sc);
            }
        };
        std::thread::scope(|scope| {
            let (mine, others) = scratch.split_first_mut().expect("a scratch space");
            for sc in others {
                scope.spawn(|| take(sc));
            }
            let done = first();
            if done.is_ok() {
                take(mine);
            }
            done
        })
    }
}

/// Numbers the target sets of expanded states, in order, and adds their
/// rows to `dfa`: a set met before gets its id, a new one the next id.
fn number(
    ex: &Expanded,
    sets: &mut Sets,
    dfa: &mut SparseDfa,
    max_states: usize,
) -> Result<(), Limit> {
    let mut at = 0;
    for &end in &ex.ends {
        for &(c, target) in &ex.moves[at..end] {
            let c = c as usize;
            if target == SAME {
                let t = dfa.last_move(c - 1).expect("the previous class moved");
                dfa.push_move(c, t);
                continue;
            }
            let (set, h) = (ex.set(target), ex.hashes[target as usize]);
            let id = match sets.find(set, h) {
                Ok(id) => id,
                Err(slot) => {
                    if sets.len() >= max_states {
                        return Err(Limit::DfaStates(max_states));
                    }
                    sets.insert(set, h, slot)
                }
            };
            debug_assert!(id != DEAD, "a closure of targets is never empty");
            dfa.push_move(c, id);
        }
        dfa.push_row();
        at = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::expr::Expr;

    #[test]
    fn threads_number_the_states_as_one_thread_does() {
        // Hundreds of alternatives of one shape, so that hundreds of
        // states wait at once (parallel batches), with string bodies
        // (many classes moving alike) and shared suffixes.
        let calls = (0..600).map(|i| {
            Expr::seq([
                Expr::lit(&format!("tool_{i}(\"")),
                Expr::star(Expr::alt([Expr::lit("a"), Expr::lit("b"), Expr::lit("z")])),
                Expr::lit(if i % 3 == 0 { "\", 1)" } else { "\")" }),
            ])
        });
        let nfa = crate::automaton::nfa::build(&Expr::alt(calls), 1 << 20).unwrap();
        let (one, one_labels, one_sets) = subsets(&nfa, 1 << 20, true, 1).unwrap();
        assert!(one.n_states() > 2 * PARALLEL_MIN);
        for threads in [2, 3, 8] {
            let (dfa, labels, sets) = subsets(&nfa, 1 << 20, true, threads).unwrap();
            assert_eq!(dfa, one, "{threads} threads");
            assert_eq!(labels, one_labels);
            assert!(sets.iter().eq(one_sets.iter()));
        }
    }

    /// A frontier of thousands of states: batches of many chunks, each
    /// numbered while the next is expanded.
    #[test]
    fn batches_numbered_beside_the_next_expansion_number_as_one_thread() {
        let calls = (0..6_000).map(|i| {
            Expr::seq([
                Expr::lit(&format!("f{i:04}(")),
                Expr::star(Expr::alt([Expr::lit("x"), Expr::lit("y")])),
                Expr::lit(&format!("){i}")),
            ])
        });
        let nfa = crate::automaton::nfa::build(&Expr::alt(calls), 1 << 22).unwrap();
        let (one, one_labels, one_sets) = subsets(&nfa, 1 << 22, true, 1).unwrap();
        assert!(one.n_states() > 2 * BATCH, "{} states", one.n_states());
        for threads in [2, 3, 8] {
            let (dfa, labels, sets) = subsets(&nfa, 1 << 22, true, threads).unwrap();
            assert_eq!(dfa, one, "{threads} threads");
            assert_eq!(labels, one_labels);
            assert!(sets.iter().eq(one_sets.iter()));
        }
    }
}
