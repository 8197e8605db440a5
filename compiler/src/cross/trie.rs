//! The vocabulary's text tokens as one flat trie, and the walks over it.

use crate::automaton::dfa::{Moves, DEAD};
use crate::automaton::packed::PackedDfa;
use crate::vocab::TokenText;

/// No token starts with this byte (see `TokenTrie::root_at`).
const NO_ROOT: u32 = u32::MAX;

/// All text tokens in a flat depth-first trie.
pub struct TokenTrie {
    pub(super) byte: Vec<u8>,
    pub(super) depth: Vec<u16>,
    pub(super) end: Vec<u32>,
    tok_start: Vec<u32>,
    toks: Vec<u32>,
    pub(super) max_depth: usize,
    /// The first-level nodes (one per first byte): `(byte, node, end)`.
    /// A walk checks each against the state's row here, in a table that
    /// stays in cache, instead of hopping across the whole trie from one
    /// first-level node to the next (most states allow a few first bytes).
    roots: Vec<(u8, u32, u32)>,
    /// Per byte its entry in `roots`, or [`NO_ROOT`] when no token starts
    /// with it: a walk given its state's byte runs jumps to the roots of
    /// the live bytes alone.
    root_at: [u32; 256],
    /// Token ids are below this (the vocabulary's token count).
    pub(super) n_tokens: usize,
}

impl TokenTrie {
    pub fn new(text: &TokenText<'_>) -> TokenTrie {
        let mut entries: Vec<(&[u8], u32)> = (0..text.len() as u32)
            .filter_map(|id| text.get(id).map(|b| (b, id)))
            .collect();
        entries.sort_unstable();
        let mut t = TokenTrie {
            byte: Vec::new(),
            depth: Vec::new(),
            end: Vec::new(),
            tok_start: Vec::new(),
            toks: Vec::new(),
            max_depth: 0,
            roots: Vec::new(),
            root_at: [NO_ROOT; 256],
            n_tokens: text.len(),
        };
        let mut path: Vec<u32> = Vec::new(); // node index per depth - 1
        let mut prev: &[u8] = &[];
        for (bytes, id) in entries {
            let common = prev.iter().zip(bytes).take_while(|(a, b)| a == b).count();
            while path.len() > common {
                let node = path.pop().unwrap_or(0);
                t.end[node as usize] = t.byte.len() as u32;
            }
            for (d, &b) in bytes.iter().enumerate().skip(common) {
                path.push(t.byte.len() as u32);
                t.byte.push(b);
                t.depth.push(d as u16 + 1);
                t.end.push(0);
                t.tok_start.push(t.toks.len() as u32);
            }
            t.max_depth = t.max_depth.max(bytes.len());
            // Tokens ending at the last node; nodes are created in order, so
            // tokens of a node are contiguous in `toks`.
            t.toks.push(id);
            prev = bytes;
        }
        while let Some(node) = path.pop() {
            t.end[node as usize] = t.byte.len() as u32;
        }
        t.tok_start.push(t.toks.len() as u32);
        let mut i = 0;
        while i < t.byte.len() {
            t.root_at[t.byte[i] as usize] = t.roots.len() as u32;
            t.roots.push((t.byte[i], i as u32, t.end[i]));
            i = t.end[i] as usize;
        }
        t
    }

    /// The first-level nodes `(byte, node, end)` a walk from a state
    /// tries, in byte order: every one, or given the state's moves as byte
    /// runs (`(first byte, target)`, see `regions::Rows::byte_runs`) only
    /// those of its live bytes. Why: most states allow a byte or two, and
    /// checking each of the ~250 first bytes against the row was most of
    /// a walk's time (DESIGN.md §5).
    fn first_nodes<'r>(
        &'r self,
        runs: Option<&'r [(u8, u32)]>,
    ) -> impl Iterator<Item = (u8, u32, u32)> + 'r {
        let all = runs.is_none().then(|| self.roots.iter().copied());
        let live = runs.map(|runs| {
            runs.iter()
                .enumerate()
                .filter(|(_, &(_, t))| t != DEAD)
                .flat_map(move |(i, &(b, _))| {
                    let end = runs.get(i + 1).map_or(256, |&(next, _)| next as usize);
                    (b as usize..end).filter_map(|byte| {
                        let r = self.root_at[byte];
                        (r != NO_ROOT).then(|| self.roots[r as usize])
                    })
                })
        });
        all.into_iter().flatten().chain(live.into_iter().flatten())
    }

    pub fn nodes(&self) -> usize {
        self.byte.len()
    }

    /// Per byte, whether some token is that byte alone.
    pub fn single_bytes(&self) -> [bool; 256] {
        let mut single = [false; 256];
        // The roots are the depth-1 nodes, each followed by its subtree.
        let mut i = 0;
        while i < self.byte.len() {
            single[self.byte[i] as usize] = !self.tokens(i).is_empty();
            i = self.end[i] as usize;
        }
        single
    }

    /// The tokens that end at node `i`.
    pub(super) fn tokens(&self, i: usize) -> &[u32] {
        &self.toks[self.tok_start[i] as usize..self.tok_start[i + 1] as usize]
    }

    /// Calls `f(next, tokens)` for every trie node whose bytes lead from
    /// `state` to the live state `next`, with the tokens that end there (at
    /// least one); returns the number of trie nodes visited. `runs`, when
    /// known, are `state`'s moves as byte runs: then only the first bytes
    /// it moves on are tried.
    pub fn walk_with(
        &self,
        mut dfa: impl Moves,
        state: u32,
        runs: Option<&[(u8, u32)]>,
        stack: &mut Vec<u32>,
        mut f: impl FnMut(u32, &[u32]),
    ) -> usize {
        let mut visited = 0;
        for (b, from, to) in self.first_nodes(runs) {
            visited += match dfa.step(state, b) {
                DEAD => 1,
                _ => self.walk_subtree(&mut dfa, from as usize, to as usize, state, stack, &mut f),
            };
        }
        visited
    }

    /// [`TokenTrie::walk_with`] over the nodes `from..to` only, a run of
    /// whole subtrees of one depth (the whole trie, or one node's
    /// subtree): `state` is the state before the first node's byte.
    pub(super) fn walk_subtree(
        &self,
        mut dfa: impl Moves,
        from: usize,
        to: usize,
        state: u32,
        stack: &mut Vec<u32>,
        mut f: impl FnMut(u32, &[u32]),
    ) -> usize {
        if from >= to {
            return 0;
        }
        // Every node reads the entry its parent (or `state`) wrote, so the
        // stack needs no clearing between walks.
        if stack.len() <= self.max_depth {
            stack.resize(self.max_depth + 1, DEAD);
        }
        stack[self.depth[from] as usize - 1] = state;
        let mut visited = 0;
        let mut i = from;
        while i < to {
            visited += 1;
            let d = self.depth[i] as usize;
            let next = dfa.step(stack[d - 1], self.byte[i]);
            if next == DEAD {
                i = self.end[i] as usize;
                continue;
            }
            stack[d] = next;
            let toks = self.tokens(i);
            if !toks.is_empty() {
                f(next, toks);
            }
            i += 1;
        }
        visited
    }
}

/// What a constrained walk reads besides the trie: the automaton, the
/// range of every tool, and `step(from, to)`, one byte move's range of
/// tools (`None`: every tool).
pub(super) struct Constrained<'d, S> {
    pub dfa: &'d PackedDfa,
    pub all: (u32, u32),
    pub step: S,
}

type Stack = Vec<(u32, u32, u32, bool)>;

/// The nodes a constrained walk covers.
pub(super) enum Nodes<'r> {
    /// The nodes `from..to`: one node's subtree.
    Subtree(usize, usize),
    /// The whole trie, with the state's byte runs when known (see
    /// [`TokenTrie::walk_with`]).
    Whole(Option<&'r [(u8, u32)]>),
}

impl TokenTrie {
    /// [`TokenTrie::walk_with`], also passing each node's constraint for a
    /// one-tool matcher: the rank range `[lo, hi)` of the tools whose
    /// matcher may take the node's bytes from `state` (ranges intersect
    /// along the walk). Over one subtree's nodes, as
    /// [`TokenTrie::walk_subtree`], or over the whole trie, its first
    /// bytes found in the roots table as [`TokenTrie::walk_with`] finds
    /// them (the first-level nodes lie a subtree apart, a cache miss each).
    pub(super) fn walk_constrained<S: Fn(u32, u32) -> Option<(u32, u32)>>(
        &self,
        how: &Constrained<'_, S>,
        nodes: Nodes<'_>,
        state: u32,
        stack: &mut Stack,
        mut f: impl FnMut(u32, (u32, u32), bool),
    ) -> usize {
        let runs = match nodes {
            Nodes::Subtree(from, to) => {
                return self.walk_nodes(how, (from, to), state, stack, &mut f)
            }
            Nodes::Whole(runs) => runs,
        };
        let mut visited = 0;
        for (b, from, to) in self.first_nodes(runs) {
            visited += match how.dfa.next(state, b) {
                DEAD => 1,
                _ => self.walk_nodes(how, (from as usize, to as usize), state, stack, &mut f),
            };
        }
        visited
    }

    /// [`TokenTrie::walk_constrained`] over the nodes `from..to`.
    fn walk_nodes<S: Fn(u32, u32) -> Option<(u32, u32)>>(
        &self,
        how: &Constrained<'_, S>,
        (from, to): (usize, usize),
        state: u32,
        stack: &mut Stack,
        f: &mut impl FnMut(u32, (u32, u32), bool),
    ) -> usize {
        let Constrained { dfa, all, step } = how;
        if from >= to {
            return 0;
        }
        if stack.len() <= self.max_depth {
            stack.resize(self.max_depth + 1, (DEAD, 0, 0, false));
        }
        stack[self.depth[from] as usize - 1] = (state, all.0, all.1, false);
        let mut visited = 0;
        let mut i = from;
        while i < to {
            visited += 1;
            let d = self.depth[i] as usize;
            let (prev, lo, hi, touched) = stack[d - 1];
            let next = dfa.next(prev, self.byte[i]);
            let s = if next == DEAD {
                None
            } else {
                Some(step(prev, next))
            };
            let (a, b, t) = match s {
                None => (0, 0, touched),
                Some(None) => (all.0, all.1, touched),
                Some(Some((a, b))) => (a, b, true),
            };
            let (lo, hi) = (lo.max(a), hi.min(b));
            if next == DEAD || lo >= hi {
                i = self.end[i] as usize;
                continue;
            }
            stack[d] = (next, lo, hi, t);
            if self.tok_start[i] != self.tok_start[i + 1] {
                f(next, (lo, hi), t);
            }
            i += 1;
        }
        visited
    }
}
