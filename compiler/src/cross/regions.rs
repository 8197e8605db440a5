//! Regions: the part of a token walk that stays where walks are long.
//!
//! From a state inside a string body, a free-text region or a digit run,
//! almost every token of the vocabulary is allowed, and the plain walk
//! visits almost the whole trie (274,518 nodes for Llama-3.2) for each such
//! state and each pass. But what a token does while it stays among a few
//! states depends only on those states' own transitions, not on the rest
//! of the grammar: every string property of every tool has the same body.
//! So the walk from a state `s` is split in two:
//!
//! - **Inside** its *region* (`s` and the states its wide moves reach, see
//!   [`Regions::region`]): the tokens whose bytes never leave the region,
//!   grouped by the region state they end in, and the trie nodes where a
//!   walk leaves it for a live state outside (the *exits*). This depends
//!   only on the region's transitions, written as a canonical key over
//!   bytes (independent of state numbers and byte classes), so it is
//!   computed once per key and kept in a [`RegionCache`] that outlives one
//!   compile.
//! - **Outside**: from each exit, the exit node's subtree is walked on the
//!   real DFA from the state the walk left for, as the plain walk would.
//!
//! Every token path either stays inside the region (first part) or leaves
//! it at exactly one first node (second part), so together they are the
//! plain walk's result, token for token, whatever the region: the choice
//! of region only decides how much is cached. A region is at most
//! [`MAX_REGION_STATES`] states, so its key costs at most `256 × 64` steps.

use std::sync::{Arc, Mutex};

use super::trie::TokenTrie;
use crate::automaton::dfa::{WordMap, DEAD};
use crate::automaton::packed::PackedDfa;

/// The most states of one region.
pub const MAX_REGION_STATES: usize = 64;

/// A move stays inside a region when it takes at least [`WIDE_MOVE`] bytes
/// to one state (whitespace, hex digits, a string body's characters), or
/// when the state it reaches has at least [`WIDE_STATE`] live bytes (a
/// UTF-8 continuation, a string body, free text, digits). A frame's or a
/// key's literal text, and the state after a string's closing quote, have
/// few live bytes and are reached by one: regions stop at the structure
/// around a value, so their keys do not depend on it and are shared.
const WIDE_STATE: u32 = 16;
const WIDE_MOVE: u32 = 4;

/// Encoding codes besides region-local indices.
const CODE_DEAD: u32 = 0xFFFF;
const CODE_EXIT: u32 = 0xFFFE;

/// What a region's discovery and key read of an automaton: each state's
/// moves as byte runs, and its number of live bytes. A built [`PackedDfa`]'s
/// were read once by [`Regions::of`]; a lazy one builds rows as they are
/// asked for.
pub trait Rows {
    /// The number of bytes on which `s` moves to a live state.
    fn live_bytes(&mut self, s: u32) -> u32;
    /// The moves of `s` as runs of bytes to one state, `(first byte,
    /// target)` in byte order, into `out`; `class_runs` are the bytes as
    /// runs of one class (see [`Regions`]).
    fn byte_runs(&mut self, s: u32, class_runs: &[(u8, u32)], out: &mut Vec<(u8, u32)>);
}

/// Appends the moves of a state (`row(class)`: its target on a class) as
/// byte runs to one state.
fn row_runs(row: impl Fn(usize) -> u32, class_runs: &[(u8, u32)], out: &mut Vec<(u8, u32)>) {
    let first = out.len();
    for &(b, class) in class_runs {
        let t = row(class as usize);
        if out.len() == first || out[out.len() - 1].1 != t {
            out.push((b, t));
        }
    }
}

/// The bytes each run of `runs` (one state's, see [`Rows::byte_runs`])
/// covers, with its target.
fn run_widths(runs: &[(u8, u32)]) -> impl Iterator<Item = (u32, u32)> + '_ {
    runs.iter().enumerate().map(|(i, &(b, t))| {
        let end = runs.get(i + 1).map_or(256, |&(next, _)| next as u32);
        (t, end - b as u32)
    })
}

/// A built DFA's live bytes and byte runs.
struct Built<'a> {
    regions: &'a Regions,
}

impl Rows for Built<'_> {
    fn live_bytes(&mut self, s: u32) -> u32 {
        self.regions.live[s as usize]
    }
    fn byte_runs(&mut self, s: u32, _: &[(u8, u32)], out: &mut Vec<(u8, u32)>) {
        out.clear();
        out.extend_from_slice(self.regions.runs_of(s));
    }
}

impl<N: AsRef<crate::automaton::nfa::Nfa>> Rows for crate::automaton::lazy::LazyDfa<N> {
    fn live_bytes(&mut self, s: u32) -> u32 {
        crate::automaton::lazy::LazyDfa::live_bytes(self, s)
    }
    fn byte_runs(&mut self, s: u32, class_runs: &[(u8, u32)], out: &mut Vec<(u8, u32)>) {
        out.clear();
        let row = crate::automaton::lazy::LazyDfa::row(self, s);
        row_runs(|c| row[c], class_runs, out);
    }
}

/// What the regions of one DFA's states are computed from (the DFA is
/// passed to each call, so that an on-demand walk can keep this beside it).
pub struct Regions {
    /// Per state its number of live bytes.
    live: Vec<u32>,
    /// The bytes 0 to 255 as runs of one class, `(first byte, class)`: a
    /// key is read run by run instead of byte by byte.
    class_runs: Vec<(u8, u32)>,
    /// Per state of a built DFA its moves as byte runs (see
    /// [`Rows::byte_runs`]), `runs_at` (`n + 1` offsets) into `runs`.
    /// Why: a state belongs to the regions of its neighbours too, a dozen
    /// keys in a string body, and reading its row run by run over all
    /// the classes for each was most of the keys' cost at 10,000 tools.
    runs: Vec<(u8, u32)>,
    runs_at: Vec<u32>,
}

impl Regions {
    /// The byte counts of `dfa`'s classes, and its states' live bytes and
    /// byte runs, `threads` parts of the states at a time (the same tables
    /// for any number).
    pub fn of(dfa: &PackedDfa, threads: usize) -> Regions {
        let mut r = Regions::classes(&dfa.classes);
        let n = dfa.n_states();
        let rows_of = |rows: std::ops::Range<usize>| {
            let (mut runs, mut ends, mut live) = (Vec::new(), Vec::new(), Vec::new());
            for s in rows {
                let first = runs.len();
                let row = dfa.row(s as u32);
                row_runs(|c| row.target(c), &r.class_runs, &mut runs);
                live.push(
                    run_widths(&runs[first..])
                        .filter(|&(t, _)| t != DEAD)
                        .map(|(_, w)| w)
                        .sum(),
                );
                ends.push(runs.len() as u32);
            }
            vec![(runs, ends, live)]
        };
        // Below a few thousand rows a thread costs more than it saves.
        let parts = crate::parallel::parts(n, 4096, threads.clamp(1, 64));
        let done = crate::parallel::in_parts(n, parts, rows_of);
        let (mut runs, mut runs_at, mut live) =
            (Vec::new(), Vec::with_capacity(n + 1), Vec::with_capacity(n));
        runs_at.push(0);
        for (part, ends, part_live) in done {
            let base = runs.len() as u32;
            runs.extend_from_slice(&part);
            runs_at.extend(ends.iter().map(|&e| base + e));
            live.extend_from_slice(&part_live);
        }
        (r.runs, r.runs_at, r.live) = (runs, runs_at, live);
        r
    }

    /// The moves of state `s` of the DFA these were made of, as byte runs
    /// (see [`Rows::byte_runs`]).
    pub fn runs_of(&self, s: u32) -> &[(u8, u32)] {
        let s = s as usize;
        &self.runs[self.runs_at[s] as usize..self.runs_at[s + 1] as usize]
    }

    /// What the per-state tables hold, for the compile's memory account.
    fn bytes(&self) -> usize {
        self.runs.len() * 8 + (self.runs_at.len() + self.live.len()) * 4
    }

    /// What the byte classes `classes` alone give: for a lazy DFA, which
    /// counts its states' live bytes and reads its rows itself.
    pub fn classes(classes: &[u8; 256]) -> Regions {
        let mut class_runs: Vec<(u8, u32)> = Vec::new();
        for (b, &c) in classes.iter().enumerate() {
            if class_runs.last().is_none_or(|&(_, last)| last != c as u32) {
                class_runs.push((b as u8, c as u32));
            }
        }
        Regions {
            live: Vec::new(),
            class_runs,
            runs: Vec::new(),
            runs_at: Vec::new(),
        }
    }

    /// The region of `s`: the states reached from `s` by moves that stay
    /// inside (see [`WIDE_STATE`]), breadth-first in byte order, at most
    /// [`MAX_REGION_STATES`], `s` first, into `k.members`. False when that
    /// is `s` alone and `s` does not move to itself: the plain walk is as
    /// cheap.
    fn region(&self, dfa: &mut impl Rows, s: u32, k: &mut KeyScratch) -> bool {
        let KeyScratch {
            runs,
            widths,
            members,
            ..
        } = k;
        members.clear();
        members.push(s);
        let mut looped = false;
        let mut i = 0;
        while i < members.len() && members.len() < MAX_REGION_STATES {
            dfa.byte_runs(members[i], &self.class_runs, runs);
            widths.clear();
            for (t, width) in run_widths(runs).filter(|&(t, _)| t != DEAD) {
                match widths.iter_mut().find(|w| w.0 == t) {
                    Some(w) => w.1 += width,
                    None => widths.push((t, width)),
                }
            }
            for &(t, width) in widths.iter() {
                if width < WIDE_MOVE && dfa.live_bytes(t) < WIDE_STATE {
                    continue;
                }
                looped |= t == s;
                if !members.contains(&t) && members.len() < MAX_REGION_STATES {
                    members.push(t);
                }
            }
            i += 1;
        }
        members.len() > 1 || looped
    }

    /// The canonical key of the region of `s`, and the region's states
    /// in the key's order; `None` when `s` has no region. States are
    /// renumbered breadth-first from `s` over bytes 0 to 255; per state
    /// the key lists runs of bytes with the same code (a local index,
    /// [`CODE_DEAD`] or [`CODE_EXIT`]) as `byte << 16 | code`, behind the
    /// run count. The key holds every move between the region's states, so
    /// the walk inside the region is a function of the key. Over any
    /// [`Rows`]: a built DFA's, or a lazy DFA's.
    pub fn key_in(&self, dfa: &mut impl Rows, s: u32) -> Option<(Vec<u32>, Vec<u32>)> {
        let mut k = KeyScratch::default();
        let mut states = Vec::new();
        self.key_into(dfa, s, &mut k, &mut states)
            .then_some((k.key, states))
    }

    /// [`Regions::key_in`] with the key left in `k.key` and the states
    /// appended to `states`, and every other buffer reused from one call to
    /// the next: a key per state with a region (70,745 at 1,000 tools)
    /// spent a third of its time growing fresh vectors. False (nothing
    /// appended) when `s` has no region.
    fn key_into(
        &self,
        dfa: &mut impl Rows,
        s: u32,
        k: &mut KeyScratch,
        states: &mut Vec<u32>,
    ) -> bool {
        if !self.region(dfa, s, k) {
            return false;
        }
        let KeyScratch {
            runs, members, key, ..
        } = k;
        // Both looked up once per run: a scan of up to 64 states each was
        // most of the key's cost at 10,000 tools.
        let mut inside = StateIndex::default();
        for (i, &m) in members.iter().enumerate() {
            inside.insert(m, i as u32);
        }
        let mut local = StateIndex::default();
        local.insert(s, 0);
        // This key's states are `states[first..]`, numbered from 0.
        let first = states.len();
        states.push(s);
        key.clear();
        let mut i = first;
        while i < states.len() {
            // Runs in byte order, so states are numbered in byte order,
            // whatever the classes' numbering.
            dfa.byte_runs(states[i], &self.class_runs, runs);
            let at = key.len();
            key.push(0);
            let mut last = u32::MAX;
            for &(b, t) in runs.iter() {
                let code = if t == DEAD {
                    CODE_DEAD
                } else if let Some(j) = local.get(t) {
                    j
                } else if inside.get(t).is_some() {
                    let j = (states.len() - first) as u32;
                    local.insert(t, j);
                    states.push(t);
                    j
                } else {
                    CODE_EXIT
                };
                if code != last {
                    key.push((b as u32) << 16 | code);
                    key[at] += 1;
                    last = code;
                }
            }
            i += 1;
        }
        true
    }
}

/// The buffers of one thread's region keys.
#[derive(Default)]
struct KeyScratch {
    runs: Vec<(u8, u32)>,
    widths: Vec<(u32, u32)>,
    members: Vec<u32>,
    key: Vec<u32>,
}

/// A map from the states of one region (at most [`MAX_REGION_STATES`]) to
/// small numbers, on the stack: open addressing over twice as many slots.
struct StateIndex {
    keys: [u32; 2 * MAX_REGION_STATES],
    values: [u32; 2 * MAX_REGION_STATES],
}

impl Default for StateIndex {
    fn default() -> StateIndex {
        StateIndex {
            keys: [u32::MAX; 2 * MAX_REGION_STATES],
            values: [0; 2 * MAX_REGION_STATES],
        }
    }
}

impl StateIndex {
    /// The slot of `state`, or the empty slot where it would go.
    fn slot(&self, state: u32) -> usize {
        let n = self.keys.len();
        let mut i = (state.wrapping_mul(0x9E37_79B1) >> 16) as usize % n;
        while self.keys[i] != state && self.keys[i] != u32::MAX {
            i = (i + 1) % n;
        }
        i
    }

    fn get(&self, state: u32) -> Option<u32> {
        let i = self.slot(state);
        (self.keys[i] == state).then_some(self.values[i])
    }

    /// Adds `state` (at most [`MAX_REGION_STATES`] in all, so a slot is
    /// always free).
    fn insert(&mut self, state: u32, value: u32) {
        let i = self.slot(state);
        self.keys[i] = state;
        self.values[i] = value;
    }
}

/// Per state with a region, its inside walk and the region's states in the
/// walk's local order: looked up once per compile, then read by every pass.
/// The states' lists are held end to end in one vector: a vector apiece
/// was millions of allocations at 10,000 tools.
pub struct Walks {
    /// Per state an index into `list`, `u32::MAX` when it has no region.
    of: Vec<u32>,
    /// The walk, and where its region's states end in `states` (they
    /// start where the previous entry's end; [`MAX_REGION_STATES`] per
    /// served state, and at most 2^24 states, fit a `u32`).
    list: Vec<(Arc<Inside>, u32)>,
    states: Vec<u32>,
    /// The states' byte runs, which the regions were found with: a walk
    /// outside any region starts from its state's live bytes alone.
    runs: Option<Regions>,
}

impl Walks {
    /// The walks of the served states of `dfa` that have a region (found
    /// with `regions`, made of `dfa`), each key looked up in `cache`
    /// (computed there when new), `threads` at a time.
    pub fn new(
        dfa: &PackedDfa,
        regions: Regions,
        served: &[bool],
        cache: &RegionCache,
        trie: &TokenTrie,
        threads: usize,
        held: usize,
    ) -> Result<Walks, crate::error::Limit> {
        // The byte runs are held through the walks' search.
        let held = held + regions.bytes();
        let roots: Vec<u32> = (1..dfa.n_states() as u32)
            .filter(|&s| served[s as usize])
            .collect();
        // Per block, each root's walk and its states' count, and the
        // states end to end.
        let (blocks, _) = super::par_blocks(
            roots.len(),
            threads,
            |_| held,
            KeyScratch::default,
            |range, k| {
                let mut built = Built { regions: &regions };
                let mut states = Vec::new();
                let walks = range
                    .map(|i| {
                        let before = states.len();
                        regions
                            .key_into(&mut built, roots[i], k, &mut states)
                            .then(|| (cache.inside(&k.key, trie), states.len() - before))
                    })
                    .collect::<Vec<_>>();
                (walks, states)
            },
        )?;
        let mut of = vec![u32::MAX; dfa.n_states()];
        let mut list = Vec::new();
        let mut states = Vec::new();
        let mut roots = roots.iter();
        for (_, (walks, part)) in blocks {
            states.extend_from_slice(&part);
            // The block's walks first: zip asks its first side first, and
            // a root taken after the block's last walk would be lost.
            for (w, &s) in walks.into_iter().zip(roots.by_ref()) {
                if let Some((inside, n)) = w {
                    let start = list.last().map_or(0, |w: &(Arc<Inside>, u32)| w.1);
                    of[s as usize] = list.len() as u32;
                    list.push((inside, start + n as u32));
                }
            }
        }
        Ok(Walks {
            of,
            list,
            states,
            runs: Some(regions),
        })
    }

    /// No regions: every walk is plain.
    pub fn none(n_states: usize) -> Walks {
        Walks {
            of: vec![u32::MAX; n_states],
            list: Vec::new(),
            states: Vec::new(),
            runs: None,
        }
    }

    /// The moves of `s` as byte runs (see [`Rows::byte_runs`]), when
    /// kept.
    pub fn runs(&self, s: u32) -> Option<&[(u8, u32)]> {
        Some(self.runs.as_ref()?.runs_of(s))
    }

    /// The inside walk from `s` and its region's states, if it has one.
    pub fn get(&self, s: u32) -> Option<(&Inside, &[u32])> {
        let i = *self.of.get(s as usize)? as usize;
        let (inside, end) = self.list.get(i)?;
        let start = i.checked_sub(1).map_or(0, |p| self.list[p].1);
        Some((inside, &self.states[start as usize..*end as usize]))
    }
}

/// The tokens of one end of an inside walk.
pub enum Toks {
    /// A bitset over token ids (for ends with many tokens).
    Bits(Vec<u32>),
    /// The ids, ascending.
    List(Vec<u32>),
}

impl Toks {
    /// Sets the tokens' bits in `mask`.
    pub fn or_into(&self, mask: &mut [u32]) {
        match self {
            Toks::Bits(bits) => {
                for (m, b) in mask.iter_mut().zip(bits) {
                    *m |= b;
                }
            }
            Toks::List(ids) => {
                for &t in ids {
                    mask[(t >> 5) as usize] |= 1 << (t & 31);
                }
            }
        }
    }

    fn bytes(&self) -> usize {
        4 * match self {
            Toks::Bits(b) => b.len(),
            Toks::List(l) => l.len(),
        }
    }
}

/// The inside part of the walks from one region's first state (see the
/// module documentation), in the key's local state numbers.
pub struct Inside {
    /// Per local state that some token ends in: its tokens.
    pub ends: Vec<(u32, Toks)>,
    /// `(trie node, local state before its byte)` where a walk leaves the
    /// region for a state that is not dead.
    pub exits: Vec<(u32, u32)>,
}

impl Inside {
    /// Walks the trie inside the region described by `key`.
    fn walk(key: &[u32], trie: &TokenTrie) -> Inside {
        // The key back to a table: code per (local state, byte).
        let mut table: Vec<u32> = Vec::new();
        let mut at = 0;
        while at < key.len() {
            let runs = key[at] as usize;
            let row = table.len();
            table.resize(row + 256, 0);
            for r in 0..runs {
                let (b, code) = (key[at + 1 + r] >> 16, key[at + 1 + r] & 0xFFFF);
                let stop = if r + 1 < runs {
                    key[at + 2 + r] >> 16
                } else {
                    256
                };
                table[row + b as usize..row + stop as usize].fill(code);
            }
            at += 1 + runs;
        }
        let n_local = table.len() / 256;
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); n_local];
        let mut exits = Vec::new();
        let mut stack = vec![0u32; trie.max_depth + 1];
        let mut i = 0;
        let n = trie.byte.len();
        while i < n {
            let d = trie.depth[i] as usize;
            let q = stack[d - 1];
            match table[q as usize * 256 + trie.byte[i] as usize] {
                CODE_DEAD => i = trie.end[i] as usize,
                CODE_EXIT => {
                    exits.push((i as u32, q));
                    i = trie.end[i] as usize;
                }
                code => {
                    stack[d] = code;
                    lists[code as usize].extend_from_slice(trie.tokens(i));
                    i += 1;
                }
            }
        }
        let words = trie.n_tokens.div_ceil(32);
        let ends = lists
            .into_iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(|(q, mut l)| {
                // A bitset costs `words` words; a list one per token.
                let toks = if l.len() > words {
                    let mut bits = vec![0u32; words];
                    Toks::List(l).or_into(&mut bits);
                    Toks::Bits(bits)
                } else {
                    l.sort_unstable();
                    Toks::List(l)
                };
                (q as u32, toks)
            })
            .collect();
        Inside { ends, exits }
    }

    fn bytes(&self) -> usize {
        self.ends.iter().map(|(_, t)| t.bytes() + 8).sum::<usize>() + 8 * self.exits.len()
    }
}

/// Inside walks by key, for one token trie, bounded in memory: when an
/// insertion would pass the bound, the cache is emptied first (a compile
/// in progress keeps the entries it holds).
pub struct RegionCache {
    held: Mutex<Held>,
    limit: usize,
}

/// The entries and the bytes they take, under one lock.
#[derive(Default)]
struct Held {
    map: WordMap<Vec<u32>, Arc<Inside>>,
    bytes: usize,
}

impl RegionCache {
    /// An empty cache holding at most about `limit` bytes.
    pub fn new(limit: usize) -> RegionCache {
        RegionCache {
            held: Mutex::new(Held::default()),
            limit,
        }
    }

    /// The inside walk for `key` over `trie`, from the cache or computed
    /// (outside the lock: two threads may both compute a new key, and the
    /// results are equal).
    pub fn inside(&self, key: &[u32], trie: &TokenTrie) -> Arc<Inside> {
        if let Some(hit) = self.lock().map.get(key) {
            return hit.clone();
        }
        let inside = Arc::new(Inside::walk(key, trie));
        let size = inside.bytes() + 4 * key.len();
        let mut held = self.lock();
        if held.bytes + size > self.limit {
            *held = Held::default();
        }
        if size <= self.limit && !held.map.contains_key(key) {
            held.map.insert(key.to_vec(), inside.clone());
            held.bytes += size;
        }
        inside
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        *self.lock() = Held::default();
    }

    /// Bytes held.
    pub fn held(&self) -> usize {
        self.lock().bytes
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        // A panic elsewhere cannot leave the cache half-written: each
        // change is made under one lock, by calls that do not panic.
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A full region's states (spread and clustered ids, as minimization
    /// numbers them) map back to their numbers; others are absent.
    #[test]
    fn state_index_holds_a_full_region() {
        for ids in [
            (0..MAX_REGION_STATES as u32).collect::<Vec<_>>(),
            (0..MAX_REGION_STATES as u32).map(|i| i * 65_536).collect(),
            (0..MAX_REGION_STATES as u32)
                .map(|i| 1_000_003 * i + 7)
                .collect(),
        ] {
            let mut index = StateIndex::default();
            for (i, &s) in ids.iter().enumerate() {
                index.insert(s, i as u32);
            }
            for (i, &s) in ids.iter().enumerate() {
                assert_eq!(index.get(s), Some(i as u32));
            }
            assert_eq!(index.get(ids[MAX_REGION_STATES - 1] + 1), None);
        }
    }
}
