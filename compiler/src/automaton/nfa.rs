//! Lowering [`Expr`] to a byte NFA with epsilon moves.
//!
//! The compiler works in continuation-passing style: `compile(e, next)`
//! returns a state from which the strings of `e` lead to `next`. Building
//! right to left needs no patching of dangling edges, and it makes sharing
//! exact: a [`Expr::Shared`] node compiled twice with the same continuation
//! is the same NFA fragment (memoized on the pair), while the same node with
//! different continuations gets separate copies, so sharing never merges two
//! languages.

use std::collections::HashMap;

use regex_syntax::utf8::Utf8Sequences;
use smallvec::SmallVec;

use crate::automaton::dfa::WordMap;
use crate::automaton::expr::Expr;
use crate::automaton::region::{Region, Tag, FORMAT};
use crate::error::Limit;

/// One state as the builder holds it: epsilon moves and byte-range moves.
/// Most states have one range or a few epsilon moves, held inline: at
/// 10,000 distinct tools (10 M states) a heap list each was ~400 MB and
/// ten million allocations. [`Builder::freeze`] lays the finished states
/// out as an [`Nfa`]'s arrays.
#[derive(Debug, Clone, Default)]
struct NState {
    /// Epsilon moves: states reached without reading a byte.
    eps: SmallVec<[u32; 4]>,
    /// Byte moves: `(lo, hi, to)` on a byte in `lo..=hi`.
    ranges: SmallVec<[(u8, u8, u32); 2]>,
    /// The region it was built in (see [`crate::automaton::region`]).
    region: u32,
    /// For a node of a tool-name trie, its index in [`Nfa::names`];
    /// [`NO_NAME`] otherwise.
    name: u32,
}

/// [`NState::name`] of a state that is not a node of a tool-name trie.
pub const NO_NAME: u32 = u32::MAX;

/// A node of a tool-name trie: the tools (by index) whose names pass
/// through it, and the tool whose name ends at it.
#[derive(Debug, Clone, Default)]
pub struct NameNode {
    /// The tools whose trie keys have this node's prefix (ascending).
    pub live: Vec<u32>,
    /// The tool whose key is exactly this node's prefix.
    pub end: Option<u32>,
}

/// A byte NFA with a single start and a single accepting state, frozen:
/// each state's moves are a slice of one array per kind, found through
/// a row of offsets. Why: the subset construction reads the NFA from start
/// to end, and at 10,000 distinct tools the builder's states (56 bytes
/// each, inline lists with room to grow, plus the lists that spilled)
/// were 0.5 GB at the compile's peak, the end of determinization; these
/// arrays are under half that (DESIGN.md §3).
#[derive(Debug, Clone)]
pub struct Nfa {
    /// Per state where its epsilon moves start in `eps_to`; one more
    /// entry, the end.
    eps_at: Vec<u32>,
    eps_to: Vec<u32>,
    /// Per state where its byte moves start in `moves`; one more entry.
    moves_at: Vec<u32>,
    /// Byte moves: `(lo, hi, to)` on a byte in `lo..=hi`.
    moves: Vec<(u8, u8, u32)>,
    /// Per state the region it was built in (see
    /// [`crate::automaton::region`]).
    region: Vec<u32>,
    /// Per state its index in [`Nfa::names`] for a node of a tool-name
    /// trie (a [`Tag::Name`] region's [`Expr::Trie`]), [`NO_NAME`]
    /// otherwise.
    name: Vec<u32>,
    /// The start state.
    pub start: u32,
    /// The one accepting state.
    pub accept: u32,
    /// The states built for [`Expr::CallEnd`], ascending: a DFA state
    /// holding one ends a call.
    pub call_ends: Vec<u32>,
    /// The states built for [`Expr::CallStart`].
    pub call_starts: Vec<u32>,
    /// The region tree of the expression's tags; region 0 is the root.
    pub regions: Vec<Region>,
    /// The nodes of tool-name tries ([`Nfa::names_by_state`] indexes them): branch
    /// `i` of a trie in a [`Tag::Name`] region is tool `i`.
    pub names: Vec<NameNode>,
}

impl Nfa {
    /// The number of states.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Whether it has no states (never, once built: the accepting state
    /// is one).
    pub fn is_empty(&self) -> bool {
        self.region.is_empty()
    }

    /// The states `s` reaches without reading a byte.
    #[inline]
    pub fn eps(&self, s: u32) -> &[u32] {
        let s = s as usize;
        &self.eps_to[self.eps_at[s] as usize..self.eps_at[s + 1] as usize]
    }

    /// The byte moves of `s`: `(lo, hi, to)` on a byte in `lo..=hi`.
    #[inline]
    pub fn ranges(&self, s: u32) -> &[(u8, u8, u32)] {
        let s = s as usize;
        &self.moves[self.moves_at[s] as usize..self.moves_at[s + 1] as usize]
    }

    /// The region `s` was built in.
    #[inline]
    pub fn region(&self, s: u32) -> u32 {
        self.region[s as usize]
    }

    /// Every state's byte moves, end to end.
    pub fn all_ranges(&self) -> &[(u8, u8, u32)] {
        &self.moves
    }

    /// Per state its index in [`Nfa::names`], [`NO_NAME`] if it is not a
    /// node of a tool-name trie.
    pub fn names_by_state(&self) -> &[u32] {
        &self.name
    }

    /// Per state, whether a DFA state that ends a call and holds it could
    /// also hold a run still before its first call's end, which an entry
    /// that stops there would cut off: an [`Expr::CallStart`] state (a
    /// first call could begin there), or a state that reads a byte, is
    /// reached from the start without passing an [`Expr::CallEnd`] state,
    /// and is not reached from one by epsilon moves.
    ///
    /// The last condition spares the states a call's end leads to at once
    /// (the separator, and the next call's first state where the separator
    /// may be empty). No run before its first call's end can be there:
    /// the separator's states lead only to the next call (`Expr::Apart`
    /// keeps them apart), and a run about to begin its first call passes a
    /// [`Expr::CallStart`] state, which is itself flagged.
    pub fn first_call_runs(&self) -> Vec<bool> {
        let n = self.len();
        let mut after = vec![false; n];
        let mut stack: Vec<u32> = self.call_ends.clone();
        while let Some(s) = stack.pop() {
            if !after[s as usize] {
                after[s as usize] = true;
                stack.extend(self.eps(s).iter().copied());
            }
        }
        let mut seen = vec![false; n];
        for &e in &self.call_ends {
            seen[e as usize] = true;
        }
        if !seen[self.start as usize] {
            seen[self.start as usize] = true;
            stack.push(self.start);
        }
        let mut doubt = vec![false; n];
        while let Some(s) = stack.pop() {
            doubt[s as usize] = !after[s as usize] && !self.ranges(s).is_empty();
            let next = self.eps(s).iter().copied();
            for t in next.chain(self.ranges(s).iter().map(|m| m.2)) {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        for &s in &self.call_starts {
            doubt[s as usize] = true;
        }
        doubt
    }

    /// Whether the accepting state is reachable from every state: then
    /// every state of its subset construction but the dead one (a
    /// nonempty set) can finish, and that DFA needs no pruning. Built
    /// right to left, most states' moves lead to states built before them
    /// (lower numbers), and a trie's nodes to states built after them, so
    /// sweeps upwards and downwards in turn settle it in a few; a state
    /// that cannot finish, or one that four sweeps leave unsettled,
    /// answers false (the DFA is then pruned). Why: at 10,000 distinct
    /// tools pruning the DFA took 0.27 s (six sweeps over its 11 million
    /// moves, then a backward search) to find that every state finishes;
    /// three sweeps here take a fifth of that.
    pub fn all_finish(&self) -> bool {
        const SWEEPS: usize = 4;
        let n = self.len();
        let mut done = vec![false; n];
        done[self.accept as usize] = true;
        let mut left = n - 1;
        for k in 0..SWEEPS {
            let before = left;
            let mut visit = |s: u32| {
                if done[s as usize] {
                    return;
                }
                let eps = self.eps(s).iter().copied();
                if eps
                    .chain(self.ranges(s).iter().map(|m| m.2))
                    .any(|t| done[t as usize])
                {
                    done[s as usize] = true;
                    left -= 1;
                }
            };
            // Downwards every other sweep: a trie's nodes lead upwards.
            if k % 2 == 0 {
                (0..n as u32).for_each(&mut visit);
            } else {
                (0..n as u32).rev().for_each(&mut visit);
            }
            if left == 0 || left == before {
                break;
            }
        }
        left == 0
    }

    /// The bytes its arrays hold.
    pub fn bytes(&self) -> usize {
        (self.eps_at.len() + self.eps_to.len() + self.moves_at.len()) * 4
            + self.moves.len() * 8
            + (self.region.len() + self.name.len()) * 4
    }
}

impl AsRef<Nfa> for Nfa {
    /// Itself: so that a lazy DFA can hold an NFA, a reference or an `Arc`.
    fn as_ref(&self) -> &Nfa {
        self
    }
}

/// [`Builder::pure`]'s key: a hash of a state's region and moves, a
/// multiply per word (lengths apart, so that the two lists cannot run
/// into each other).
fn pure_key(region: u32, eps: &[u32], ranges: &[(u8, u8, u32)]) -> u64 {
    let mix = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    let mut h = mix(
        region as u64,
        (eps.len() as u64) << 32 | ranges.len() as u64,
    );
    for &e in eps {
        h = mix(h, e as u64);
    }
    for &(lo, hi, to) in ranges {
        h = mix(h, (lo as u64) << 40 | (hi as u64) << 32 | to as u64);
    }
    h
}

/// The most states [`Builder::pure`] remembers; it forgets them all when
/// full. Equal suffixes are built close together (a character class, a
/// string body, one value's alternatives), so a table that stays in the
/// caches finds nearly all of them; one over every state of a large
/// grammar doubled the lowering's time with cache misses.
const PURE_TABLE: usize = 1 << 16;

/// What one state holds while the NFA is built, its short move lists
/// included: the builder's account against a compile's memory budget
/// (the frozen NFA is smaller).
pub const STATE_BYTES: usize = std::mem::size_of::<NState>() + 8;

/// Compiles `expr`; fails with [`Limit`] beyond `max_states` NFA states.
pub fn build(expr: &Expr, max_states: usize) -> Result<Nfa, Limit> {
    let mut b = Builder {
        states: Vec::new(),
        max_states,
        every: crate::limits::Every::new(4096),
        memo: HashMap::new(),
        regions: vec![Region::root()],
        region_ids: HashMap::new(),
        region: FORMAT,
        names: Vec::new(),
        pure: WordMap::default(),
        call_ends: Vec::new(),
        call_starts: Vec::new(),
    };
    let accept = b.add()?;
    let start = b.compile(expr, accept)?;
    b.freeze(start, accept)
}

struct Builder {
    states: Vec<NState>,
    max_states: usize,
    every: crate::limits::Every,
    /// Shared fragments by (node, continuation, region): a fragment built
    /// in another region is another copy, so every state has one region.
    memo: HashMap<(*const Expr, u32, u32), u32>,
    regions: Vec<Region>,
    region_ids: HashMap<(u32, Tag), u32>,
    /// The region states are being built in.
    region: u32,
    names: Vec<NameNode>,
    /// The states built by [`Builder::pure`], by the hash of their moves
    /// and region.
    pure: WordMap<u64, u32>,
    /// The states built for [`Expr::CallEnd`].
    call_ends: Vec<u32>,
    /// The states built for [`Expr::CallStart`].
    call_starts: Vec<u32>,
}

impl Builder {
    /// The finished states as an [`Nfa`]'s arrays, each state's builder
    /// lists freed as it is copied. Fails when the moves outnumber the
    /// offsets' word (only a state bound raised far past the default
    /// allows that).
    fn freeze(self, start: u32, accept: u32) -> Result<Nfa, Limit> {
        let n = self.states.len();
        let (n_eps, n_moves) = self
            .states
            .iter()
            .fold((0, 0), |(e, m), st| (e + st.eps.len(), m + st.ranges.len()));
        if n_eps.max(n_moves) > u32::MAX as usize {
            return Err(Limit::NfaStates(n));
        }
        let mut nfa = Nfa {
            eps_at: Vec::with_capacity(n + 1),
            eps_to: Vec::with_capacity(n_eps),
            moves_at: Vec::with_capacity(n + 1),
            moves: Vec::with_capacity(n_moves),
            region: Vec::with_capacity(n),
            name: Vec::with_capacity(n),
            start,
            accept,
            call_ends: {
                let mut ends = self.call_ends;
                ends.sort_unstable();
                ends.dedup();
                ends
            },
            call_starts: self.call_starts,
            regions: self.regions,
            names: self.names,
        };
        nfa.eps_at.push(0);
        nfa.moves_at.push(0);
        for st in self.states {
            nfa.eps_to.extend_from_slice(&st.eps);
            nfa.moves.extend_from_slice(&st.ranges);
            // Checked above: the offsets fit a word.
            nfa.eps_at.push(nfa.eps_to.len() as u32);
            nfa.moves_at.push(nfa.moves.len() as u32);
            nfa.region.push(st.region);
            nfa.name.push(st.name);
        }
        Ok(nfa)
    }

    fn add(&mut self) -> Result<u32, Limit> {
        if self.states.len() >= self.max_states {
            return Err(Limit::NfaStates(self.max_states));
        }
        let n = self.states.len();
        self.every.tick("lower", || n * STATE_BYTES)?;
        self.states.push(NState {
            region: self.region,
            name: NO_NAME,
            ..NState::default()
        });
        Ok((self.states.len() - 1) as u32)
    }

    fn add_range(&mut self, lo: u8, hi: u8, next: u32) -> Result<u32, Limit> {
        self.pure(SmallVec::new(), smallvec::smallvec![(lo, hi, next)])
    }

    fn add_eps(&mut self, targets: Vec<u32>) -> Result<u32, Limit> {
        self.pure(targets.into(), SmallVec::new())
    }

    /// A state with exactly these moves in the current region: the one
    /// built before with the same moves and region if there is one, else a
    /// new one. Built right to left, equal states are equal suffixes
    /// (the endings of a character class's UTF-8 sequences, the last hex
    /// digits of a string's `\u` escapes, the end of a literal); built
    /// apart, the subset construction made a DFA state per copy of what is
    /// one state of the minimal DFA. Sharing them changes no language: a
    /// state made here is never changed afterwards (the states that are,
    /// a loop's head, a trie's nodes and an automaton's states, come from
    /// [`Builder::add`]). A hash collision only builds a state apart.
    fn pure(
        &mut self,
        eps: SmallVec<[u32; 4]>,
        ranges: SmallVec<[(u8, u8, u32); 2]>,
    ) -> Result<u32, Limit> {
        let key = pure_key(self.region, &eps, &ranges);
        if let Some(&s) = self.pure.get(&key) {
            let st = &self.states[s as usize];
            if st.region == self.region && st.eps == eps && st.ranges == ranges {
                return Ok(s);
            }
        }
        let s = self.add()?;
        let st = &mut self.states[s as usize];
        st.eps = eps;
        st.ranges = ranges;
        if self.pure.len() >= PURE_TABLE {
            self.pure.clear();
        }
        self.pure.entry(key).or_insert(s);
        Ok(s)
    }

    fn compile(&mut self, e: &Expr, next: u32) -> Result<u32, Limit> {
        match e {
            Expr::Empty => Ok(next),
            // A state of its own, never shared with an equal epsilon move:
            // it marks where a call ends.
            Expr::CallEnd => {
                let s = self.add()?;
                self.states[s as usize].eps.push(next);
                self.call_ends.push(s);
                Ok(s)
            }
            // States of their own too, the first recorded.
            Expr::CallStart | Expr::Apart => {
                let s = self.add()?;
                self.states[s as usize].eps.push(next);
                if matches!(e, Expr::CallStart) {
                    self.call_starts.push(s);
                }
                Ok(s)
            }
            Expr::Bytes(bytes) => {
                let mut s = next;
                for &b in bytes.iter().rev() {
                    s = self.add_range(b, b, s)?;
                }
                Ok(s)
            }
            Expr::ByteClass(ranges) => self.pure(
                SmallVec::new(),
                ranges.iter().map(|&(lo, hi)| (lo, hi, next)).collect(),
            ),
            Expr::CharClass(ranges) => {
                let mut entries = Vec::new();
                for &(lo, hi) in ranges {
                    for seq in Utf8Sequences::new(lo, hi) {
                        let mut s = next;
                        for r in seq.as_slice().iter().rev() {
                            s = self.add_range(r.start, r.end, s)?;
                        }
                        entries.push(s);
                    }
                }
                self.add_eps(entries)
            }
            Expr::Seq(parts) => {
                let mut s = next;
                for p in parts.iter().rev() {
                    s = self.compile(p, s)?;
                }
                Ok(s)
            }
            Expr::Alt(parts) => {
                let mut entries = Vec::with_capacity(parts.len());
                for p in parts {
                    entries.push(self.compile(p, next)?);
                }
                self.add_eps(entries)
            }
            Expr::Repeat { expr, min, max } => {
                let mut s = match max {
                    Some(max) => {
                        let mut s = next;
                        for _ in *min..*max {
                            let body = self.compile(expr, s)?;
                            s = self.add_eps(vec![body, next])?;
                        }
                        s
                    }
                    None => {
                        let looped = self.add()?;
                        let body = self.compile(expr, looped)?;
                        self.states[looped as usize].eps = smallvec::smallvec![body, next];
                        looped
                    }
                };
                for _ in 0..*min {
                    s = self.compile(expr, s)?;
                }
                Ok(s)
            }
            Expr::Trie(branches) => {
                let root = self.add()?;
                // A tool-name trie labels its nodes with the tools that
                // pass through them (what a one-tool matcher checks).
                let named = self.regions[self.region as usize].tag == Some(Tag::Name);
                let label = |b: &mut Builder, node: u32, tool: usize, end: bool| {
                    if !named {
                        return;
                    }
                    let st = &mut b.states[node as usize];
                    if st.name == NO_NAME {
                        st.name = b.names.len() as u32;
                        b.names.push(NameNode::default());
                    }
                    let n = &mut b.names[st.name as usize];
                    n.live.push(tool as u32);
                    if end {
                        n.end = Some(tool as u32);
                    }
                };
                let mut children: HashMap<(u32, u8), u32> = HashMap::new();
                for (i, (key, branch)) in branches.iter().enumerate() {
                    let mut node = root;
                    label(self, node, i, key.is_empty());
                    for (j, &b) in key.iter().enumerate() {
                        node = match children.get(&(node, b)) {
                            Some(&child) => child,
                            None => {
                                let child = self.add()?;
                                self.states[node as usize].ranges.push((b, b, child));
                                children.insert((node, b), child);
                                child
                            }
                        };
                        label(self, node, i, j + 1 == key.len());
                    }
                    let tail = self.compile(branch, next)?;
                    self.states[node as usize].eps.push(tail);
                }
                Ok(root)
            }
            Expr::Tag(tag, inner) => {
                let parent = if tag.is_top() { FORMAT } else { self.region };
                let key = (parent, Tag::clone(tag));
                let id = match self.region_ids.get(&key) {
                    Some(&id) => id,
                    None => {
                        let id = self.regions.len() as u32;
                        self.regions.push(Region {
                            parent,
                            tag: Some(key.1.clone()),
                        });
                        self.region_ids.insert(key, id);
                        id
                    }
                };
                let outer = std::mem::replace(&mut self.region, id);
                let s = self.compile(inner, next);
                self.region = outer;
                s
            }
            Expr::Automaton(a) => {
                let key = (std::rc::Rc::as_ptr(a) as *const Expr, next, self.region);
                if let Some(&s) = self.memo.get(&key) {
                    return Ok(s);
                }
                let base = self.states.len() as u32;
                for _ in 0..a.edges.len() {
                    self.add()?;
                }
                for (s, edges) in a.edges.iter().enumerate() {
                    let st = &mut self.states[base as usize + s];
                    st.ranges = edges
                        .iter()
                        .map(|&(lo, hi, t)| (lo, hi, base + t))
                        .collect();
                    if a.accepting[s] {
                        st.eps.push(next);
                    }
                }
                let s = base + a.start;
                self.memo.insert(key, s);
                Ok(s)
            }
            Expr::Shared(inner) => {
                let key = (std::rc::Rc::as_ptr(inner), next, self.region);
                if let Some(&s) = self.memo.get(&key) {
                    return Ok(s);
                }
                let s = self.compile(inner, next)?;
                self.memo.insert(key, s);
                Ok(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::Dfa;

    /// The states of the subset construction of `e`, and of its minimal DFA.
    fn sizes(e: &Expr) -> (usize, usize) {
        let nfa = build(e, 1 << 20).unwrap();
        let mut dfa = Dfa::determinize(&nfa, 1 << 20).unwrap();
        let n = dfa.n_states();
        dfa.minimize().unwrap();
        (n, dfa.n_states())
    }

    /// Equal suffixes are built once (`Builder::pure`), so a JSON string,
    /// with its UTF-8 sequences and its `\u` escapes and surrogate pairs,
    /// determinizes to its minimal DFA. Built apart, each sequence's
    /// ending made DFA states of its own (38 states for 23).
    #[test]
    fn a_json_string_determinizes_to_its_minimal_dfa() {
        let (dfa, min) = sizes(&crate::lower::json::json_string());
        assert_eq!(dfa, min);
    }

    /// Whether every NFA state finishes, against pruning its subset
    /// construction: when it says so, pruning drops no move (what lets the
    /// compile skip it); a grammar with a branch that cannot finish says
    /// otherwise, and pruning there drops that branch.
    #[test]
    fn all_finish_answers_whether_pruning_has_work() {
        let names: Vec<(Vec<u8>, Expr)> = ["get_weather", "get_time", "set_alarm", "g"]
            .iter()
            .map(|n| (n.as_bytes().to_vec(), Expr::star(Expr::lit("ab"))))
            .collect();
        let finishing = [
            crate::lower::json::json_string(),
            Expr::seq([Expr::lit("x"), Expr::Trie(names), Expr::lit("y")]),
            Expr::star(Expr::alt([
                Expr::lit("a"),
                Expr::repeat(Expr::lit("b"), 2, Some(4)),
            ])),
        ];
        let stuck = Expr::alt([
            Expr::lit("ok"),
            Expr::seq([Expr::lit("no"), Expr::ByteClass(Vec::new())]),
        ]);
        for (e, all) in finishing.iter().map(|e| (e, true)).chain([(&stuck, false)]) {
            let nfa = build(e, 1 << 12).unwrap();
            assert_eq!(nfa.all_finish(), all, "{e:?}");
            let (dfa, _, _) = crate::automaton::subsets::subsets(&nfa, 1 << 12, false, 1).unwrap();
            let mut pruned = dfa.clone();
            assert!(pruned.prune());
            assert_eq!(pruned == dfa, all, "{e:?}");
        }
    }

    /// States in different regions are never shared: the same suffix
    /// tagged two ways is built twice.
    #[test]
    fn equal_suffixes_in_two_regions_are_built_apart() {
        let key = |name: &str| Tag::Key { name: name.into() };
        let e = Expr::alt([
            Expr::Tag(std::rc::Rc::new(key("a")), Box::new(Expr::lit("xyz"))),
            Expr::Tag(std::rc::Rc::new(key("b")), Box::new(Expr::lit("xyz"))),
        ]);
        let nfa = build(&e, 1 << 10).unwrap();
        assert_eq!(nfa.all_ranges().len(), 6);
        let one = build(&Expr::alt([Expr::lit("xyz"), Expr::lit("xyz")]), 1 << 10).unwrap();
        assert_eq!(one.all_ranges().len(), 3);
    }
}
