//! Crossing the DFA with the vocab: the mask of every state.
//!
//! The token trie holds every text token's bytes, flattened in depth-first
//! order: node `i` has a byte, a depth, the tokens that end there, and
//! `end[i]`, the index just past its subtree. For a state `s` the walk keeps
//! one DFA state per depth; a node whose byte leads to the dead state is
//! skipped with its whole subtree in one step (`i = end[i]`). Because the
//! DFA is trimmed, a token is allowed exactly when its walk stays alive, so
//! the set of nodes visited is the set of live token prefixes, never the
//! whole vocabulary unless the state really allows it.
//!
//! States are split between threads; masks are deduplicated per thread and
//! then numbered in state order, so the result does not depend on timing.

use std::collections::HashMap;

use crate::dfa::{Dfa, DEAD};
use crate::error::{Error, ErrorKind};
use crate::vocab::{TokenText, Vocab};

/// All text tokens in a flat depth-first trie.
pub struct TokenTrie {
    byte: Vec<u8>,
    depth: Vec<u16>,
    end: Vec<u32>,
    tok_start: Vec<u32>,
    toks: Vec<u32>,
    max_depth: usize,
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
        t
    }

    pub fn nodes(&self) -> usize {
        self.byte.len()
    }

    /// Sets the bit of every token that can be read from `state`; returns
    /// the number of trie nodes visited.
    pub fn walk(&self, dfa: &Dfa, state: u32, stack: &mut Vec<u32>, mask: &mut [u32]) -> usize {
        stack.clear();
        stack.resize(self.max_depth + 1, DEAD);
        stack[0] = state;
        let mut visited = 0;
        let mut i = 0;
        let n = self.byte.len();
        while i < n {
            visited += 1;
            let d = self.depth[i] as usize;
            let next = dfa.next(stack[d - 1], self.byte[i]);
            if next == DEAD {
                i = self.end[i] as usize;
                continue;
            }
            stack[d] = next;
            for &t in &self.toks[self.tok_start[i] as usize..self.tok_start[i + 1] as usize] {
                mask[(t >> 5) as usize] |= 1 << (t & 31);
            }
            i += 1;
        }
        visited
    }
}

/// The distinct masks and, per state, the index of its mask.
pub struct Masks {
    pub masks: Vec<Vec<u32>>,
    pub state_mask: Vec<u32>,
    pub trie_nodes: usize,
    pub nodes_visited: usize,
}

/// Computes every state's mask. EOS tokens are allowed exactly in
/// accepting states. Fails if a live state allows no token at all (the
/// vocabulary cannot write the bytes the grammar needs there), except the
/// states that are not `served` (see `Machine::served_states`), whose mask
/// is empty.
pub fn masks(
    dfa: &Dfa,
    text: &TokenText<'_>,
    vocab: &Vocab,
    served: &[bool],
    mask_words: usize,
    threads: usize,
) -> Result<Masks, Error> {
    let trie = TokenTrie::new(text);
    let n = dfa.n_states();
    let threads = threads.clamp(1, 64).min(n);
    let chunk = n.div_ceil(threads);
    let results: Vec<(Vec<Vec<u32>>, Vec<u32>, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let trie = &trie;
                #[allow(clippy::needless_range_loop)]
                scope.spawn(move || {
                    let mut local: HashMap<Vec<u32>, u32> = HashMap::new();
                    let mut list: Vec<Vec<u32>> = Vec::new();
                    let mut ids = Vec::new();
                    let mut stack = Vec::new();
                    let mut visited = 0;
                    for s in (k * chunk)..((k + 1) * chunk).min(n) {
                        let mut mask = vec![0u32; mask_words];
                        if s as u32 != DEAD && served[s] {
                            visited += trie.walk(dfa, s as u32, &mut stack, &mut mask);
                            if dfa.accept[s] {
                                for &t in &vocab.eos {
                                    mask[(t >> 5) as usize] |= 1 << (t & 31);
                                }
                            }
                        }
                        let id = *local.entry(mask.clone()).or_insert_with(|| {
                            list.push(mask);
                            list.len() as u32 - 1
                        });
                        ids.push(id);
                    }
                    (list, ids, visited)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });

    let mut global: HashMap<&[u32], u32> = HashMap::new();
    let mut order: Vec<(usize, u32)> = Vec::new();
    let mut state_mask = Vec::with_capacity(n);
    let mut visited = 0;
    for (k, (list, ids, v)) in results.iter().enumerate() {
        visited += v;
        for &local in ids {
            let mask = list[local as usize].as_slice();
            let next = order.len() as u32;
            let id = *global.entry(mask).or_insert_with(|| {
                order.push((k, local));
                next
            });
            state_mask.push(id);
        }
    }
    let masks: Vec<Vec<u32>> = order
        .iter()
        .map(|&(k, l)| results[k].0[l as usize].clone())
        .collect();

    for s in 1..n {
        if !served[s] {
            continue;
        }
        if masks[state_mask[s] as usize].iter().all(|&w| w == 0) {
            let (example, next) = example_path(dfa, s as u32);
            return Err(Error::new(
                ErrorKind::Grammar,
                format!(
                    "incompatible vocabulary: after the text {:?} the grammar needs one of the bytes {} \
                     but no token of the vocabulary starts with any of them",
                    show_path(&example),
                    next
                ),
            ));
        }
    }
    Ok(Masks {
        masks,
        state_mask,
        trie_nodes: trie.nodes(),
        nodes_visited: visited,
    })
}

/// A path of the grammar as text: entry selectors dropped, special tokens
/// shown by id.
fn show_path(bytes: &[u8]) -> String {
    use crate::format::{ENTRY_ESCAPE, SPECIAL_ESCAPE};
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            ENTRY_ESCAPE => i += 2,
            SPECIAL_ESCAPE if i + 3 < bytes.len() => {
                let id = u32::from_be_bytes([0, bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
                out.extend(format!("<special token {id}>").into_bytes());
                i += 4;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The shortest text leading to `target`, and the bytes that continue from it.
fn example_path(dfa: &Dfa, target: u32) -> (Vec<u8>, String) {
    let n = dfa.n_states();
    let mut parent: Vec<Option<(u32, u8)>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::from([dfa.start]);
    seen[dfa.start as usize] = true;
    while let Some(s) = queue.pop_front() {
        if s == target {
            break;
        }
        for b in 0..=255u8 {
            let t = dfa.next(s, b);
            if t != DEAD && !seen[t as usize] {
                seen[t as usize] = true;
                parent[t as usize] = Some((s, b));
                queue.push_back(t);
            }
        }
    }
    let mut path = Vec::new();
    let mut s = target;
    while let Some((p, b)) = parent[s as usize] {
        path.push(b);
        s = p;
    }
    path.reverse();
    let next: Vec<String> = (0..=255u8)
        .filter(|&b| dfa.next(target, b) != DEAD)
        .take(8)
        .map(|b| format!("{:?}", b as char))
        .collect();
    (path, next.join(", "))
}
