//! Regions: which part of a call each state of the machine writes.
//!
//! The lowering wraps the parts a person names, the free text of a format,
//! the tool names, what follows a tool's name, each tool's arguments and
//! each property's name and value, in [`Expr::Tag`](crate::automaton::expr::Expr::Tag).
//! The NFA builder turns the nesting of tags into a tree of [`Region`]s
//! (a property inside a property inside a tool's arguments) and gives every
//! NFA state the region it was built in; a DFA state's regions are those of
//! its NFA states that read a byte, carried through minimization. The
//! artifact keeps the tree and each state's regions in its metadata
//! ([`crate::artifact::meta`] spells them), which is what `tooldec
//! inspect`, `explain` and `draw` read: they are a description of the
//! machine, never used to serve a mask.

use serde_json::Value;

/// The root region: text the format itself writes (its literals).
pub const FORMAT: u32 = 0;

/// What part of a call a tagged expression writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tag {
    /// Free text of a format rule (`text_except`).
    Text {
        /// The format rule whose free text it is.
        rule: String,
    },
    /// The tools' names (the trie of names; with `name_json`, its quotes).
    Name,
    /// What a call writes after the tool's name, for these tools (by index).
    Call {
        /// The tools, by index in the tool list.
        tools: Vec<u32>,
    },
    /// The arguments of these tools: tools with equal schemas share one
    /// argument machine.
    Args {
        /// The tools, by index in the tool list.
        tools: Vec<u32>,
    },
    /// A property's name, quotes included.
    Key {
        /// The property's name.
        name: String,
    },
    /// A property's value; `ty` is what its schema says it is.
    Value {
        /// The property's name.
        name: String,
        /// What its schema says it is (see [`schema_type`]).
        ty: String,
    },
}

impl Tag {
    /// Tags that start a new branch at the root wherever they occur: the
    /// parts of a format are not nested in one another.
    pub fn is_top(&self) -> bool {
        matches!(self, Tag::Text { .. } | Tag::Name | Tag::Call { .. })
    }
}

/// A node of the region tree: a tag and the region it occurs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    /// The region it occurs in (the root is its own parent).
    pub parent: u32,
    /// `None` for the root ([`FORMAT`]).
    pub tag: Option<Tag>,
}

impl Region {
    /// The root region ([`FORMAT`]): text the format itself writes.
    pub fn root() -> Region {
        Region {
            parent: FORMAT,
            tag: None,
        }
    }
}

/// Each state's regions: a sorted list per state, each distinct list held
/// once. At 10,000 distinct tools the 5.87 M states of the subset
/// construction share 94,724 lists; a list apiece was 5.87 M
/// allocations, and the end of determinization (the compile's peak then)
/// took 1.80 GB instead of 1.50.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// The distinct lists, in the order of the first state that has each.
    sets: Vec<Vec<u32>>,
    /// Each state's list, as an index into `sets`.
    of: Vec<u32>,
}

impl Labels {
    /// The labels of states that have these lists, in state order.
    pub fn of_lists<L: AsRef<[u32]>>(lists: impl IntoIterator<Item = L>) -> Labels {
        let mut b = LabelsBuilder::default();
        for l in lists {
            b.push(l.as_ref());
        }
        b.finish()
    }

    /// Parts labelled on their own, consecutive states each, as one.
    pub fn concat(parts: Vec<Labels>) -> Labels {
        let mut parts = parts.into_iter();
        let Some(mut b) = parts.next().map(LabelsBuilder::from) else {
            return Labels::default();
        };
        for part in parts {
            // A part's lists are in its own first-use order, so taking them
            // in turn keeps the whole in first-use order too.
            let ids: Vec<u32> = part.sets.iter().map(|l| b.intern(l)).collect();
            b.labels.of.extend(part.of.iter().map(|&k| ids[k as usize]));
        }
        b.finish()
    }

    /// The number of states labelled.
    pub fn len(&self) -> usize {
        self.of.len()
    }

    /// Whether no state is labelled.
    pub fn is_empty(&self) -> bool {
        self.of.is_empty()
    }

    /// Each state's list index, and the distinct lists they index.
    pub fn parts(&self) -> (&[u32], &[Vec<u32>]) {
        (&self.of, &self.sets)
    }

    /// Each state's regions, in state order.
    pub fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.of.iter().map(|&k| self.sets[k as usize].as_slice())
    }

    /// The labels of the states a renumbering makes: state `m`'s regions
    /// are the union of those of the states `s` with `new_of[s] == m`
    /// (`skip` marks the states it drops). Most new states stand for old
    /// states of one list, which is taken whole; only the rest are joined.
    pub fn carried(&self, new_of: &[u32], n: usize, skip: impl Fn(u32) -> bool) -> Labels {
        const NONE: u32 = u32::MAX;
        const MIXED: u32 = u32::MAX - 1;
        let mut one = vec![NONE; n];
        let mut mixed: Vec<(u32, u32)> = Vec::new();
        for (&k, &m) in self.of.iter().zip(new_of) {
            if skip(m) {
                continue;
            }
            let slot = &mut one[m as usize];
            match *slot {
                NONE => *slot = k,
                x if x == k => {}
                MIXED => mixed.push((m, k)),
                x => {
                    mixed.extend([(m, x), (m, k)]);
                    *slot = MIXED;
                }
            }
        }
        mixed.sort_unstable();
        mixed.dedup();
        let mut b = LabelsBuilder::default();
        let mut union = Vec::new();
        let mut at = 0;
        for (m, &k) in one.iter().enumerate() {
            match k {
                NONE => b.push(&[]),
                MIXED => {
                    union.clear();
                    while at < mixed.len() && mixed[at].0 as usize == m {
                        union.extend_from_slice(&self.sets[mixed[at].1 as usize]);
                        at += 1;
                    }
                    union.sort_unstable();
                    union.dedup();
                    b.push(&union);
                }
                k => b.push(&self.sets[k as usize]),
            }
        }
        b.finish()
    }
}

/// Builds [`Labels`] one state at a time.
#[derive(Debug, Default)]
pub(crate) struct LabelsBuilder {
    labels: Labels,
    ids: std::collections::HashMap<Vec<u32>, u32>,
}

impl From<Labels> for LabelsBuilder {
    fn from(labels: Labels) -> LabelsBuilder {
        let ids = (labels.sets.iter().cloned()).zip(0u32..).collect();
        LabelsBuilder { labels, ids }
    }
}

impl LabelsBuilder {
    /// The next state's regions, sorted.
    pub fn push(&mut self, l: &[u32]) {
        let k = self.intern(l);
        self.labels.of.push(k);
    }

    fn intern(&mut self, l: &[u32]) -> u32 {
        if let Some(&k) = self.ids.get(l) {
            return k;
        }
        let k = self.labels.sets.len() as u32;
        self.labels.sets.push(l.to_vec());
        self.ids.insert(l.to_vec(), k);
        k
    }

    /// The labels pushed.
    pub fn finish(self) -> Labels {
        self.labels
    }
}

/// Where region `r` is, outermost first, for a message: "the arguments
/// of tool "get_weather" > the value of "city" (string)". `tool` names a
/// tool by its index.
pub fn describe(regions: &[Region], r: u32, tool: impl Fn(u32) -> String) -> String {
    let mut path = Vec::new();
    let mut at = r;
    // The tree's depth bounds the walk; the guard against a cycle is free.
    for _ in 0..regions.len() {
        let Some(region) = regions.get(at as usize) else {
            break;
        };
        if let Some(tag) = &region.tag {
            let tools = |ts: &[u32]| match ts {
                [t] => format!("tool {}", tool(*t)),
                ts => format!("{} tools", ts.len()),
            };
            path.push(match tag {
                Tag::Text { rule } => format!("the free text of rule {rule:?}"),
                Tag::Name => "the tool names".to_string(),
                Tag::Call { tools: ts } => format!("the call of {}", tools(ts)),
                Tag::Args { tools: ts } => format!("the arguments of {}", tools(ts)),
                Tag::Key { name } => format!("the name of {name:?}"),
                Tag::Value { name, ty } if ty.is_empty() => format!("the value of {name:?}"),
                Tag::Value { name, ty } => format!("the value of {name:?} ({ty})"),
            });
        }
        if at == FORMAT {
            break;
        }
        at = region.parent;
    }
    if path.is_empty() {
        return "the text of the format".to_string();
    }
    path.reverse();
    path.join(" > ")
}

/// What a schema says a value is, in a word or two: its `type`s, or
/// `enum`/`const`, or nothing when it does not say.
pub fn schema_type(schemas: &[&Value]) -> String {
    for s in schemas {
        let ty = match s.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join("|"),
            _ => String::new(),
        };
        match (s.get("enum"), s.get("const")) {
            (Some(Value::Array(e)), _) if !ty.is_empty() && !ty.contains('|') => {
                return format!("one of {} {ty}s", e.len())
            }
            (Some(Value::Array(e)), _) => return format!("one of {} values", e.len()),
            (_, Some(_)) => return "a constant".into(),
            _ if !ty.is_empty() => return ty,
            _ => {}
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::Labels;

    /// A few hundred states' lists drawn from a handful of distinct ones
    /// (a linear congruential sequence: no test depends on its quality).
    fn lists(n: usize, seed: u64) -> Vec<Vec<u32>> {
        let pool: [&[u32]; 6] = [&[], &[0], &[0, 3], &[1], &[2, 5, 7], &[3]];
        let mut x = seed;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                pool[(x >> 33) as usize % pool.len()].to_vec()
            })
            .collect()
    }

    #[test]
    fn lists_are_held_once_in_first_use_order() {
        let all = lists(300, 7);
        let l = Labels::of_lists(&all);
        assert_eq!(l.len(), all.len());
        assert!(l.iter().eq(all.iter().map(Vec::as_slice)));
        let (of, sets) = l.parts();
        assert!(sets.len() <= 6);
        // The first state with each list names it before any later one.
        let mut next = 0;
        for &k in of {
            assert!(k <= next, "list {k} used before list {next}");
            next = next.max(k + 1);
        }
    }

    #[test]
    fn parts_join_as_the_whole() {
        let all = lists(257, 11);
        let whole = Labels::of_lists(&all);
        for cut in [vec![0, 257], vec![0, 1, 257], vec![0, 100, 101, 200, 257]] {
            let parts = cut
                .windows(2)
                .map(|w| Labels::of_lists(&all[w[0]..w[1]]))
                .collect();
            assert_eq!(Labels::concat(parts), whole, "cut at {cut:?}");
        }
        assert_eq!(Labels::concat(Vec::new()), Labels::default());
    }

    #[test]
    fn carried_labels_are_the_unions_of_what_each_state_stands_for() {
        let all = lists(400, 3);
        let l = Labels::of_lists(&all);
        // 40 new states; old state s goes to s % 37 (some share one list,
        // most mix several), every tenth is dropped, and 37..40 get none.
        const DROP: u32 = u32::MAX;
        let new_of: Vec<u32> = (0..400u32)
            .map(|s| if s % 10 == 9 { DROP } else { s % 37 })
            .collect();
        let carried = l.carried(&new_of, 40, |m| m == DROP);
        let mut want = vec![Vec::new(); 40];
        for (s, &m) in new_of.iter().enumerate() {
            if m != DROP {
                want[m as usize].extend_from_slice(&all[s]);
            }
        }
        for w in &mut want {
            w.sort_unstable();
            w.dedup();
        }
        assert_eq!(carried, Labels::of_lists(&want));
    }
}
