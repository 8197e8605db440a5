//! The tool names as a trie whose edges are tokens: each name split by the
//! tokenizer (or by longest match over the artifact's token bytes), each
//! token an edge between the DFA states it walks between, so names share
//! nodes where the minimized DFA shares states.

use std::collections::{BTreeSet, HashMap, HashSet};

use tooldec_runtime::layout::reserved;

use super::edges::Node;
use super::parts::Class;
use super::Ctx;
use crate::view::{Tokenizer, View};

/// The name trie of an overview.
pub(super) struct NameTrie {
    /// The states where names begin.
    pub roots: Vec<u32>,
    /// The trie's nodes: the roots and the name states tokens lead to.
    pub nodes: BTreeSet<u32>,
    /// `(from, to, label, tooltip)`: one edge per token of a name.
    pub token_edges: BTreeSet<(u32, Node, String, String)>,
    /// Per trie node, the first bytes of the tokens drawn from it.
    pub token_first: HashMap<u32, HashSet<u8>>,
    /// How many name walks have bytes no token spells from there.
    pub unsplit: usize,
}

impl Ctx<'_, '_> {
    /// Each tool's name from each state where names begin, one edge per
    /// token.
    pub(super) fn name_trie(&self, tokenizer: Option<&Tokenizer>) -> NameTrie {
        let view = self.view;
        let m = self.m;
        let st = self.st;
        let roots: Vec<u32> = m
            .order
            .iter()
            .copied()
            .filter(|&s| {
                st.class[s as usize] == Class::Name
                    && (m.is_entry(s)
                        || m.preds[s as usize]
                            .iter()
                            .any(|&(p, ..)| st.class[p as usize] != Class::Name))
            })
            .collect();
        let mut trie: BTreeSet<u32> = roots.iter().copied().collect();
        let mut token_edges: BTreeSet<(u32, Node, String, String)> = BTreeSet::new();
        let mut token_first: HashMap<u32, HashSet<u8>> = HashMap::new();
        let mut splitter = Splitter::new(view, tokenizer);
        let mut unsplit = 0usize;
        for &root in &roots {
            for name in &view.tools {
                let quoted = serde_json::to_string(name).unwrap_or_default();
                let forms = [name.as_bytes(), quoted.as_bytes()];
                let Some(form) = forms.iter().find(|f| view.g.walk(root, f).is_some()) else {
                    continue;
                };
                let pieces = splitter.split(root, form);
                if pieces.iter().any(|p| p.1.is_none()) {
                    unsplit += 1;
                }
                let mut cur = root;
                for (bytes, tok) in pieces {
                    let Some(next) = view.g.walk(cur, &bytes) else {
                        break;
                    };
                    token_first
                        .entry(cur)
                        .or_default()
                        .extend(bytes.first().copied());
                    let (label, tip) = match tok {
                        Some(t) => (view.token(t), format!("token {t}")),
                        None => (
                            self.show_bytes(&bytes),
                            "bytes no single token spells".into(),
                        ),
                    };
                    if st.class[next as usize] == Class::Name {
                        trie.insert(next);
                        token_edges.insert((cur, Node::Trie(next), label, tip));
                    } else {
                        for (t, _) in self.targets(next, None) {
                            token_edges.insert((cur, t, label.clone(), tip.clone()));
                        }
                    }
                    cur = next;
                }
            }
        }
        NameTrie {
            roots,
            nodes: trie,
            token_edges,
            token_first,
            unsplit,
        }
    }
}

/// Splits a tool name into the tokens a model would write it with.
pub(super) struct Splitter<'a, 'v, 'g> {
    view: &'v View<'g>,
    tokenizer: Option<&'a Tokenizer>,
    /// The artifact's tokens by their bytes (built on first use).
    by_bytes: Option<(HashMap<&'g [u8], u32>, usize)>,
}

impl<'a, 'v, 'g> Splitter<'a, 'v, 'g> {
    pub fn new(view: &'v View<'g>, tokenizer: Option<&'a Tokenizer>) -> Self {
        Splitter {
            view,
            tokenizer,
            by_bytes: None,
        }
    }

    /// `form`'s pieces from `start`, each a token (or bytes no token
    /// spells), every one walking on from where the previous ended.
    pub fn split(&mut self, start: u32, form: &[u8]) -> Vec<(Vec<u8>, Option<u32>)> {
        let g = &self.view.g;
        if let (Some(tok), Ok(text)) = (self.tokenizer, std::str::from_utf8(form)) {
            if let Ok(ids) = tok.encode(text) {
                let mut cur = Some(start);
                let mut pieces = Vec::new();
                for &t in &ids {
                    let bytes = g.token_bytes(t).unwrap_or(&[]);
                    cur = cur.and_then(|s| {
                        if bytes.is_empty() {
                            None
                        } else {
                            g.walk(s, bytes)
                        }
                    });
                    pieces.push((bytes.to_vec(), Some(t)));
                }
                if cur.is_some()
                    && pieces
                        .iter()
                        .flat_map(|p| p.0.iter().copied())
                        .eq(form.iter().copied())
                {
                    return pieces;
                }
            }
        }
        let (map, longest) = self.by_bytes.get_or_insert_with(|| {
            let mut map: HashMap<&'g [u8], u32> = HashMap::new();
            let mut longest = 0;
            for t in 0..g.token_count() as u32 {
                if let Some(b) = g.token_bytes(t) {
                    if b.first() != Some(&reserved::SPECIAL) {
                        longest = longest.max(b.len());
                        map.entry(b).or_insert(t);
                    }
                }
            }
            (map, longest)
        });
        let mut pieces = Vec::new();
        let mut cur = start;
        let mut i = 0;
        while i < form.len() {
            let rest = &form[i..];
            let found = (1..=rest.len().min(*longest)).rev().find_map(|l| {
                let t = *map.get(&rest[..l])?;
                Some((l, t, g.walk(cur, &rest[..l])?))
            });
            match found {
                Some((l, t, next)) => {
                    pieces.push((rest[..l].to_vec(), Some(t)));
                    cur = next;
                    i += l;
                }
                None => {
                    // No token spells the rest from here: its bytes.
                    pieces.push((rest.to_vec(), None));
                    break;
                }
            }
        }
        pieces
    }
}
