//! A DFA built state by state as walks reach it: the first masks of a new
//! tool set need a few dozen states of a DFA that may have millions.
//!
//! [`LazyDfa`] is the subset construction of [`crate::automaton::dfa`]
//! run on demand over the NFA states that can still reach acceptance
//! (found once, by a backward search of the NFA). Leaving the others out
//! changes no state's language, and a move whose target set is then empty
//! is the dead state: exactly the moves the pruned eager DFA
//! ([`Dfa::prune`](crate::automaton::dfa::Dfa::prune)) keeps. So every
//! walk, acceptance and distance here is the pruned DFA's, although state
//! numbers differ (states are numbered as walks reach them, and two sets
//! that differed only in dead NFA states are one state here).
//!
//! The same backward search gives each NFA state its fewest bytes to
//! acceptance; a set's is the least of its members' (its language is the
//! union of theirs), so budgets need no search of the DFA either.

use std::collections::VecDeque;

use crate::automaton::dfa::{byte_classes, Moves, WordMap, DEAD};
use crate::automaton::nfa::Nfa;
use crate::automaton::subsets::{ClassRuns, Targets};

/// A row not built yet.
const UNBUILT: u32 = u32::MAX;

/// The subset construction of an NFA, built as it is walked.
pub struct LazyDfa<N> {
    nfa: N,
    /// Per NFA state its fewest bytes to acceptance (`u32::MAX`: none).
    nfa_left: Vec<u32>,
    classes: [u8; 256],
    n_classes: usize,
    /// Per DFA state its NFA states (the live ones, sorted).
    sets: Vec<Box<[u32]>>,
    index: WordMap<Box<[u32]>, u32>,
    /// `n_states * n_classes` moves, [`UNBUILT`] in rows not built yet.
    trans: Vec<u32>,
    accept: Vec<bool>,
    /// Per NFA state: 1 when it ends a call ([`Nfa::call_ends`]), 2 when a
    /// run there could be before its first call's end
    /// ([`Nfa::first_call_runs`]); empty when no state ends a call.
    nfa_calls: Vec<u8>,
    /// Per DFA state: 1 when it ends a call, 3 when it also holds a state
    /// that could be a run before its first call's end (see `ends_call`).
    calls: Vec<u8>,
    /// Per DFA state its fewest bytes to acceptance.
    left: Vec<u32>,
    /// Per DFA state its number of bytes that do not lead to the dead
    /// state (0 until its row is built).
    live: Vec<u32>,
    /// Per class its number of bytes.
    class_bytes: Vec<u32>,
    /// The buffers a row is expanded with.
    runs: ClassRuns,
    start: u32,
    max_states: usize,
    /// Set when a move would pass `max_states`: from then on every
    /// unbuilt move is dead, and the walks that depend on it are wrong,
    /// so callers check [`LazyDfa::overflowed`] after each walk.
    overflow: bool,
    /// Scratch for closures.
    stack: Vec<u32>,
    seen: Vec<u32>,
    stamp: u32,
}

impl<N: AsRef<Nfa>> LazyDfa<N> {
    /// The DFA of `nfa`, its start state built; `None` when no output is
    /// accepted at all. At most `max_states` states are ever built.
    pub fn new(nfa: N, max_states: usize) -> Option<LazyDfa<N>> {
        let n = nfa.as_ref();
        let nfa_left = bytes_left(n);
        let (classes, n_classes) = byte_classes(n);
        let mut class_bytes = vec![0u32; n_classes];
        for &c in &classes {
            class_bytes[c as usize] += 1;
        }
        let start = n.start;
        let seen = vec![0; n.len()];
        let mut nfa_calls = Vec::new();
        if !n.call_ends.is_empty() {
            nfa_calls = n
                .first_call_runs()
                .iter()
                .map(|&d| (d as u8) << 1)
                .collect();
            for &e in &n.call_ends {
                nfa_calls[e as usize] |= 1;
            }
        }
        let mut d = LazyDfa {
            nfa,
            nfa_left,
            classes,
            n_classes,
            sets: vec![Box::default()],
            index: WordMap::default(),
            trans: vec![DEAD; n_classes],
            accept: vec![false],
            nfa_calls,
            calls: vec![0],
            left: vec![u32::MAX],
            live: vec![0],
            runs: ClassRuns::default(),
            class_bytes,
            start: DEAD,
            max_states,
            overflow: false,
            stack: Vec::new(),
            seen,
            stamp: 0,
        };
        d.index.insert(Box::default(), DEAD);
        let mut set = vec![start];
        d.start = d.state_of(&mut set);
        (d.start != DEAD).then_some(d)
    }

    /// The start state.
    pub fn start(&self) -> u32 {
        self.start
    }

    /// Whether `s` accepts.
    pub fn accepts(&self, s: u32) -> bool {
        self.accept[s as usize]
    }

    /// Whether `s` ends a call (its subset holds an `Expr::CallEnd`
    /// state), and whether it could also hold a run before its first
    /// call's end, where an entry that stops after its first call cannot
    /// be served from it (`Nfa::first_call_runs`).
    pub fn ends_call(&self, s: u32) -> (bool, bool) {
        let c = self.calls[s as usize];
        (c & 1 != 0, c == 3)
    }

    /// The fewest bytes from `s` to acceptance (`u32::MAX` for the dead
    /// state).
    pub fn bytes_left(&self, s: u32) -> u32 {
        self.left[s as usize]
    }

    /// States built so far, the dead state included.
    pub fn n_states(&self) -> usize {
        self.accept.len()
    }

    /// Whether a move was refused for the state bound: walks since may
    /// have missed states.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// The byte classes: bytes that no NFA range separates.
    pub fn classes(&self) -> (&[u8; 256], usize) {
        (&self.classes, self.n_classes)
    }

    /// The moves of `s`, one per class, its row built first if need be.
    pub fn row(&mut self, s: u32) -> &[u32] {
        let k = self.n_classes;
        if self.trans[s as usize * k] == UNBUILT {
            self.build_row(s);
        }
        &self.trans[s as usize * k..(s as usize + 1) * k]
    }

    /// The number of bytes on which `s` moves to a live state.
    pub fn live_bytes(&mut self, s: u32) -> u32 {
        self.row(s);
        self.live[s as usize]
    }

    /// Walks `bytes` from `s`, stopping at the dead state.
    pub fn walk(&mut self, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            s = self.step(s, b);
            if s == DEAD {
                break;
            }
        }
        s
    }

    /// Which bytes below `limit` some move between live states takes, as
    /// the pruned DFA's moves would show (see [`crate::cross::OnDemand`]):
    /// the bytes on NFA moves from a state the start reaches into a state
    /// that can reach acceptance. A DFA move on a byte between live states
    /// has such an NFA move under it, and such an NFA move is under the
    /// DFA move from the set that holds its source.
    pub fn bytes_used(&self, limit: u8) -> [bool; 256] {
        let nfa = self.nfa.as_ref();
        let mut used = [false; 256];
        let mut reached = vec![false; nfa.len()];
        let mut stack = vec![nfa.start];
        reached[nfa.start as usize] = true;
        while let Some(q) = stack.pop() {
            let moves = nfa.eps(q).iter().copied();
            let ranges = nfa.ranges(q).iter().map(|r| r.2);
            for t in moves.chain(ranges) {
                if !reached[t as usize] && self.nfa_left[t as usize] != u32::MAX {
                    reached[t as usize] = true;
                    stack.push(t);
                }
            }
            for &(lo, hi, t) in nfa.ranges(q) {
                if self.nfa_left[t as usize] != u32::MAX && lo < limit {
                    for b in lo..=hi.min(limit - 1) {
                        used[b as usize] = true;
                    }
                }
            }
        }
        used
    }

    /// Builds the row of `s`: per class, the closure of its members'
    /// targets, live ones only.
    fn build_row(&mut self, s: u32) {
        let k = self.n_classes;
        let mut runs = std::mem::take(&mut self.runs);
        runs.start(k);
        let nfa = self.nfa.as_ref();
        for &q in self.sets[s as usize].iter() {
            for &(lo, hi, t) in nfa.ranges(q) {
                if self.nfa_left[t as usize] != u32::MAX {
                    runs.add(self.classes[lo as usize], self.classes[hi as usize], t);
                }
            }
        }
        let row = s as usize * k;
        self.trans[row..row + k].fill(DEAD);
        let mut live = 0;
        runs.sweep(|c, targets| {
            let t = match targets {
                Targets::Same => self.trans[row + c - 1],
                Targets::New(set) => self.state_of(set),
            };
            if t != DEAD {
                live += self.class_bytes[c];
            }
            self.trans[row + c] = t;
        });
        self.runs = runs;
        self.live[s as usize] = live;
    }

    /// The state of the closure of `set` (which this overwrites), made if
    /// new; the dead state for an empty closure, and when the bound is hit.
    fn state_of(&mut self, set: &mut Vec<u32>) -> u32 {
        self.close(set);
        if set.is_empty() {
            return DEAD;
        }
        if let Some(&id) = self.index.get(set.as_slice()) {
            return id;
        }
        if self.sets.len() >= self.max_states {
            self.overflow = true;
            return DEAD;
        }
        let nfa = self.nfa.as_ref();
        let id = self.sets.len() as u32;
        let key: Box<[u32]> = set.as_slice().into();
        self.accept.push(key.binary_search(&nfa.accept).is_ok());
        let calls = if self.nfa_calls.is_empty() {
            0
        } else {
            let any = key.iter().fold(0, |a, &q| a | self.nfa_calls[q as usize]);
            // Doubt counts only where the state ends a call.
            if any & 1 != 0 {
                any
            } else {
                0
            }
        };
        self.calls.push(calls);
        self.left.push(
            key.iter()
                .map(|&q| self.nfa_left[q as usize])
                .min()
                .unwrap_or(u32::MAX),
        );
        self.live.push(0);
        self.index.insert(key.clone(), id);
        self.sets.push(key);
        self.trans
            .extend(std::iter::repeat_n(UNBUILT, self.n_classes));
        id
    }

    /// Replaces `set` by the sorted epsilon closure of its live states.
    fn close(&mut self, set: &mut Vec<u32>) {
        let nfa = self.nfa.as_ref();
        self.stamp += 1;
        let stamp = self.stamp;
        self.stack.clear();
        for &q in set.iter() {
            if self.seen[q as usize] != stamp {
                self.seen[q as usize] = stamp;
                self.stack.push(q);
            }
        }
        set.clear();
        while let Some(q) = self.stack.pop() {
            if self.nfa_left[q as usize] != u32::MAX {
                set.push(q);
            }
            for &t in nfa.eps(q) {
                if self.seen[t as usize] != stamp {
                    self.seen[t as usize] = stamp;
                    self.stack.push(t);
                }
            }
        }
        set.sort_unstable();
    }
}

impl<N: AsRef<Nfa>> Moves for LazyDfa<N> {
    fn step(&mut self, s: u32, byte: u8) -> u32 {
        let c = self.classes[byte as usize] as usize;
        self.row(s)[c]
    }
}

/// Per NFA state the fewest bytes to its accepting state (`u32::MAX`:
/// none): a breadth-first search backwards in which an epsilon move costs
/// nothing (a deque, epsilon predecessors to the front).
fn bytes_left(nfa: &Nfa) -> Vec<u32> {
    let n = nfa.len();
    // Predecessors as offsets into one list, `(source, cost)`.
    let mut count = vec![0u32; n + 1];
    for q in 0..n as u32 {
        for &t in nfa.eps(q) {
            count[t as usize + 1] += 1;
        }
        for r in nfa.ranges(q) {
            count[r.2 as usize + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let mut fill = count.clone();
    let mut preds = vec![(0u32, 0u32); count[n] as usize];
    for q in 0..n as u32 {
        let eps = nfa.eps(q).iter().map(|&t| (t, 0));
        for (t, cost) in eps.chain(nfa.ranges(q).iter().map(|r| (r.2, 1))) {
            preds[fill[t as usize] as usize] = (q, cost);
            fill[t as usize] += 1;
        }
    }
    let mut left = vec![u32::MAX; n];
    let mut queue = VecDeque::from([nfa.accept]);
    left[nfa.accept as usize] = 0;
    while let Some(t) = queue.pop_front() {
        let d = left[t as usize];
        for &(q, cost) in &preds[count[t as usize] as usize..count[t as usize + 1] as usize] {
            if d + cost < left[q as usize] {
                left[q as usize] = d + cost;
                if cost == 0 {
                    queue.push_front(q);
                } else {
                    queue.push_back(q);
                }
            }
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::Dfa;
    use crate::automaton::expr::Expr;
    use crate::automaton::nfa;

    fn lit(s: &str) -> Expr {
        Expr::Bytes(s.as_bytes().to_vec())
    }

    fn star(e: Expr) -> Expr {
        Expr::Repeat {
            expr: Box::new(e),
            min: 0,
            max: None,
        }
    }

    /// Fewest bytes to acceptance per state of an eager DFA.
    fn eager_left(dfa: &Dfa) -> Vec<u32> {
        let n = dfa.n_states();
        let mut left: Vec<u32> = (0..n)
            .map(|s| if dfa.accept[s] { 0 } else { u32::MAX })
            .collect();
        loop {
            let mut changed = false;
            for s in 1..n {
                for b in 0..=255u8 {
                    let t = dfa.next(s as u32, b) as usize;
                    if t != DEAD as usize && left[t] != u32::MAX && left[t] + 1 < left[s] {
                        left[s] = left[t] + 1;
                        changed = true;
                    }
                }
            }
            if !changed {
                return left;
            }
        }
    }

    /// Every byte string up to `depth` bytes over `alphabet` walks alike
    /// in the lazy DFA and the pruned eager one: dead at the same point,
    /// accepting alike, the same distance to acceptance.
    fn same_walks(expr: &Expr, alphabet: &[u8], depth: usize) {
        let nfa = nfa::build(expr, 100_000).unwrap();
        let mut eager = Dfa::determinize(&nfa, 100_000).unwrap();
        assert!(eager.prune());
        let dist = eager_left(&eager);
        let mut lazy = LazyDfa::new(&nfa, 100_000).unwrap();
        let mut frontier = vec![(eager.start, lazy.start())];
        for _ in 0..depth {
            let mut next = Vec::new();
            for &(e, l) in &frontier {
                for &b in alphabet {
                    let (e2, l2) = (eager.next(e, b), lazy.step(l, b));
                    assert_eq!(e2 == DEAD, l2 == DEAD, "byte {b} from {e}/{l}");
                    if e2 == DEAD {
                        continue;
                    }
                    assert_eq!(eager.accept[e2 as usize], lazy.accepts(l2));
                    assert_eq!(dist[e2 as usize], lazy.bytes_left(l2));
                    next.push((e2, l2));
                }
            }
            next.sort_unstable();
            next.dedup();
            frontier = next;
        }
        assert!(!lazy.overflowed());
        let used = lazy.bytes_used(255);
        for b in 0..255u8 {
            let eager_used = (1..eager.n_states() as u32).any(|s| eager.next(s, b) != DEAD);
            assert_eq!(used[b as usize], eager_used, "byte {b}");
        }
    }

    #[test]
    fn walks_like_the_pruned_dfa() {
        // Alternatives that die (`ab` then a dead branch), loops, and a
        // dead end that only pruning removes.
        let dead_end = Expr::Seq(vec![lit("x"), Expr::Alt(vec![])]);
        let e = Expr::Alt(vec![
            Expr::Seq(vec![lit("ab"), star(lit("c")), lit("d")]),
            Expr::Seq(vec![lit("a"), dead_end]),
            Expr::Seq(vec![star(Expr::Alt(vec![lit("a"), lit("b")])), lit("cc")]),
        ]);
        same_walks(&e, b"abcdx", 7);
    }

    #[test]
    fn an_empty_language_has_no_dfa() {
        let nothing = Expr::Seq(vec![lit("a"), Expr::Alt(vec![])]);
        let nfa = nfa::build(&nothing, 1000).unwrap();
        assert!(LazyDfa::new(&nfa, 1000).is_none());
    }

    #[test]
    fn the_state_bound_is_reported() {
        let e = Expr::Seq(vec![lit("abcdefgh")]);
        let nfa = nfa::build(&e, 1000).unwrap();
        let mut lazy = LazyDfa::new(&nfa, 4).unwrap();
        assert_eq!(lazy.walk(lazy.start(), b"abcdefgh"), DEAD);
        assert!(lazy.overflowed());
    }
}
