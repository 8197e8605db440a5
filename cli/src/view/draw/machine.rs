//! The served part of the DFA, as drawing reads it: the states the entries
//! reach, their moves as byte runs (the entry selector never drawn), the
//! moves into each state, and which entries reach each state.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use tooldec_runtime::layout::reserved;

use crate::view::View;

/// Whitespace between JSON tokens.
pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Whether `b` can be a byte of a value or key in a state where one may
/// begin: neither whitespace nor a byte the structure around values reads
/// (`}` `]` `,` `:` `)`, which never begin a value).
pub(super) fn is_value_byte(b: u8) -> bool {
    !is_ws(b) && !matches!(b, b'}' | b']' | b',' | b':' | b')')
}

/// Bytes `lo..=hi` lead from one state to `to`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub lo: u8,
    pub hi: u8,
    pub to: u32,
}

impl Run {
    pub fn bytes(self) -> std::ops::RangeInclusive<u8> {
        self.lo..=self.hi
    }

    pub fn single(self) -> Option<u8> {
        (self.lo == self.hi).then_some(self.lo)
    }
}

/// The runs of a state grouped by target, as byte sets, in target order.
pub(super) fn by_target(runs: &[Run]) -> BTreeMap<u32, [bool; 256]> {
    let mut out: BTreeMap<u32, [bool; 256]> = BTreeMap::new();
    for r in runs {
        let set = out.entry(r.to).or_insert([false; 256]);
        for b in r.bytes() {
            set[b as usize] = true;
        }
    }
    out
}

/// The served part of the DFA: the states the entries reach, their moves
/// as byte runs, and which entries reach each.
pub(super) struct ServedDfa {
    pub n: usize,
    /// The reached states, in id order.
    pub order: Vec<u32>,
    pub runs: Vec<Vec<Run>>,
    /// Per state: `(predecessor, lo, hi)` over reached predecessors.
    pub preds: Vec<Vec<(u32, u8, u8)>>,
    pub accepting: Vec<bool>,
    /// Per state: the id of the set of entries that reach it.
    pub reach: Vec<u32>,
    /// Per reach id: the entries (indices into `entries`).
    pub reach_sets: Vec<Vec<usize>>,
    pub entries: Vec<(String, u32)>,
}

impl ServedDfa {
    pub fn new(view: &View<'_>) -> ServedDfa {
        let g = &view.g;
        let n = g.state_count();
        let mut entries: Vec<(String, u32)> = g
            .entries()
            .filter(|&(_, s)| s != 0 && (s as usize) < n)
            .map(|(name, s)| (name.to_string(), s))
            .collect();
        if entries.is_empty() {
            let s = g.start_state();
            if s != 0 && (s as usize) < n {
                entries.push(("start".into(), s));
            }
        }
        let (reached, runs) = served_runs(view, &entries);
        let order: Vec<u32> = (0..n as u32).filter(|&s| reached[s as usize]).collect();
        let mut preds: Vec<Vec<(u32, u8, u8)>> = vec![Vec::new(); n];
        for &s in &order {
            for r in &runs[s as usize] {
                preds[r.to as usize].push((s, r.lo, r.hi));
            }
        }
        let accepting = (0..n as u32).map(|s| g.is_accepting_state(s)).collect();
        let (reach, reach_sets) = reach_sets(n, &order, &runs, &entries);
        ServedDfa {
            n,
            order,
            runs,
            preds,
            accepting,
            reach,
            reach_sets,
            entries,
        }
    }

    /// The one byte and state `s` moves on, if it has exactly one move.
    pub fn single_out(&self, s: u32) -> Option<(u8, u32)> {
        match self.runs[s as usize].as_slice() {
            [r] => r.single().map(|b| (b, r.to)),
            _ => None,
        }
    }

    pub fn is_entry(&self, s: u32) -> bool {
        self.entries.iter().any(|&(_, e)| e == s)
    }

    /// Entries, for labels: "entry `start`".
    pub fn entries_label(&self, entries: &BTreeSet<usize>) -> String {
        let names: Vec<String> = entries
            .iter()
            .map(|&k| format!("`{}`", self.entries[k].0))
            .collect();
        match names.len() {
            0 => "no entry".into(),
            1 => format!("entry {}", names[0]),
            _ => format!("entries {}", names.join(", ")),
        }
    }
}

/// The states reached from `entries` (breadth first) and each reached
/// state's moves as runs of bytes to one state; the entry selector byte
/// is never a move.
fn served_runs(view: &View<'_>, entries: &[(String, u32)]) -> (Vec<bool>, Vec<Vec<Run>>) {
    let g = &view.g;
    let n = g.state_count();
    let mut reached = vec![false; n];
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); n];
    let mut queue: VecDeque<u32> = VecDeque::new();
    for &(_, s) in entries {
        if !reached[s as usize] {
            reached[s as usize] = true;
            queue.push_back(s);
        }
    }
    while let Some(s) = queue.pop_front() {
        let mut r: Vec<Run> = Vec::new();
        for b in 0..=255u8 {
            if b == reserved::ENTRY {
                continue;
            }
            let t = g.next_state(s, b);
            if t == 0 || t as usize >= n {
                continue;
            }
            if let Some(last) = r.last_mut() {
                if last.to == t && u16::from(last.hi) + 1 == u16::from(b) {
                    last.hi = b;
                    continue;
                }
            }
            r.push(Run {
                lo: b,
                hi: b,
                to: t,
            });
            if !reached[t as usize] {
                reached[t as usize] = true;
                queue.push_back(t);
            }
        }
        runs[s as usize] = r;
    }
    (reached, runs)
}

/// Which entries reach each state: per state an id of its set of entries,
/// and per id the set (entry indices), numbered in state order.
fn reach_sets(
    n: usize,
    order: &[u32],
    runs: &[Vec<Run>],
    entries: &[(String, u32)],
) -> (Vec<u32>, Vec<Vec<usize>>) {
    let words = entries.len().div_ceil(64).max(1);
    let mut bits = vec![0u64; n * words];
    for (k, &(_, s)) in entries.iter().enumerate() {
        let (w, bit) = (k / 64, 1u64 << (k % 64));
        let mut queue = VecDeque::from([s]);
        bits[s as usize * words + w] |= bit;
        while let Some(u) = queue.pop_front() {
            for r in &runs[u as usize] {
                let slot = &mut bits[r.to as usize * words + w];
                if *slot & bit == 0 {
                    *slot |= bit;
                    queue.push_back(r.to);
                }
            }
        }
    }
    let mut ids: HashMap<Vec<u64>, u32> = HashMap::new();
    let mut reach_sets: Vec<Vec<usize>> = Vec::new();
    let mut reach = vec![0u32; n];
    for &s in order {
        let key = bits[s as usize * words..(s as usize + 1) * words].to_vec();
        let id = *ids.entry(key.clone()).or_insert_with(|| {
            reach_sets.push(
                (0..entries.len())
                    .filter(|&k| key[k / 64] >> (k % 64) & 1 == 1)
                    .collect(),
            );
            reach_sets.len() as u32 - 1
        });
        reach[s as usize] = id;
    }
    (reach, reach_sets)
}
