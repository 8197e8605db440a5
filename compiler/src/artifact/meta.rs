//! META, the artifact's metadata section: one JSON object that says what
//! the artifact was compiled from (the generator, the call format and its
//! entries, the tools, the vocabulary, the options) and, unless compiled
//! with `--no-regions`, where each state is in a call (the region tree and
//! each state's regions, see [`crate::automaton::region`]).
//!
//! [`Meta`] is the one place its keys are written and read: the compiler
//! writes it with [`Meta::to_json_string`], `tooldec inspect`, `explain`
//! and `draw` read it back with [`Meta::from_artifact_text`]. Nothing here
//! serves a mask: the runtime never needs META to match. The one key the
//! `no_std` runtime reads is `vocab.label` (its own small scanner in
//! `tooldec_runtime`'s loader, to name the vocabulary in a fingerprint
//! mismatch); renaming [`VocabMeta::label`] or moving it out of `vocab`
//! means changing that scanner too.
//!
//! The text is deterministic (no paths, no times) and its key order is
//! the field order below (serde_json keeps insertion order in this
//! workspace): changing either changes every artifact's bytes and the
//! golden files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::automaton::region::{Labels, Region, Tag};
use crate::lower::json::Whitespace;
use crate::spec::ToolSet;
use crate::vocab::Vocab;
use crate::{Machine, Options};

/// The artifact's metadata. Every field has a default when read, so that
/// an artifact written before a key existed still reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// `tooldec-compile` and the compiler's version.
    pub generator: String,
    /// The call format's name (`react`, `hermes`, ...).
    pub format: String,
    /// The call format's entry rules; the first is the default.
    pub entries: Vec<String>,
    /// The special tokens (by id) the grammar uses.
    pub grammar_specials: Vec<u32>,
    /// The tools' names, in tool order.
    pub tools: Vec<String>,
    /// The vocabulary compiled against.
    pub vocab: VocabMeta,
    /// The options that shaped the grammar.
    pub options: OptionsMeta,
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// What `--repair` changed in the tool list, one line each (absent
    /// when nothing was).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<String>,
    /// What reading a call back needs (`tooldec_read`, `tooldec parse`):
    /// the format's rules with its tokens resolved, and each tool's
    /// parameters. Read by `tooldec_read::Reader` together with `tools`;
    /// absent in artifacts written before it existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<tooldec_read::Table>,
    /// The region tree, one entry per region in id order; absent under
    /// `--no-regions` (read it with [`Meta::regions`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regions: Option<Vec<RegionMeta>>,
    /// Each state's regions; present with `regions`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_regions: Option<StateRegions>,
}

/// The region tree (by region id) and each state's regions (by state, each
/// sorted), as [`Meta::regions`] reads them.
pub type RegionTable = (Vec<Region>, Vec<Vec<u32>>);

/// META's `vocab`: what the tokenizer was.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VocabMeta {
    /// Where the vocabulary came from, for people (a file name, or the
    /// built-in's name). The runtime's loader reads this key.
    pub label: String,
    /// The tokenizer family, e.g. `byte-level BPE`.
    pub kind: String,
    /// Whether the tokenizer prefixes text with a space.
    pub leading_space: bool,
    /// Special tokens' names by id.
    pub specials: BTreeMap<u32, String>,
}

/// META's `options`: the JSON lowering options and the default budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[allow(missing_docs)] // each is the `JsonOptions` field of the same name
pub struct OptionsMeta {
    pub max_ws: u32,
    /// Absent when free (artifacts from before the option read as free).
    #[serde(skip_serializing_if = "is_free")]
    pub whitespace: Whitespace,
    pub max_depth: usize,
    pub open_objects: bool,
    pub any_order: usize,
    pub max_recursion: usize,
    pub any_depth: usize,
    pub max_count: u32,
    pub relax: bool,
    /// `--max-tokens`, the budget every matcher starts with.
    pub max_tokens: Option<u32>,
}

fn is_free(w: &Whitespace) -> bool {
    *w == Whitespace::Free
}

/// One region of META's region tree: `{"kind": ..., <fields>, "parent": p}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionMeta {
    /// What part of a call the region is.
    #[serde(flatten)]
    pub kind: RegionKind,
    /// The region it occurs in (the root's is itself, [`FORMAT`](crate::automaton::region::FORMAT)).
    pub parent: u32,
}

/// A region's `kind` and the fields that go with it: [`Tag`] spelled for
/// META, with `format` for the root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[allow(missing_docs)] // the fields are those of `Tag`'s variant of the same name
pub enum RegionKind {
    /// The root: text the format itself writes.
    Format,
    /// See [`Tag::Text`].
    Text { rule: String },
    /// See [`Tag::Name`].
    Name,
    /// See [`Tag::Call`].
    Call { tools: Vec<u32> },
    /// See [`Tag::Args`].
    Args { tools: Vec<u32> },
    /// See [`Tag::Key`].
    Key { name: String },
    /// See [`Tag::Value`].
    Value {
        name: String,
        #[serde(rename = "type")]
        ty: String,
    },
}

/// META's `state_regions`: each distinct set of regions once (`sets`), and
/// the states' sets in state order as runs `[set index, number of
/// states]` (`runs`). Runs because neighbouring states share their
/// regions: at 10,000 tools 2.78 million states make 275,733 runs, and a
/// set per state was 19.3 MB of JSON, most of META.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StateRegions {
    /// The distinct sets of regions, each sorted.
    pub sets: Vec<Vec<u32>>,
    /// The states' sets, `(index into sets, run length)` in state order.
    pub runs: Vec<(usize, usize)>,
}

impl Meta {
    /// The metadata of an artifact compiled from `set` against `vocab`.
    pub(crate) fn of(set: &ToolSet, vocab: &Vocab, opts: &Options, machine: &Machine) -> Meta {
        let j = &opts.json;
        let mut meta = Meta {
            generator: concat!("tooldec-compile ", env!("CARGO_PKG_VERSION")).to_string(),
            format: opts.format.name.clone(),
            entries: machine.entries.iter().map(|(n, _)| n.clone()).collect(),
            grammar_specials: machine.specials.clone(),
            tools: set.names().into_iter().map(str::to_string).collect(),
            vocab: VocabMeta {
                label: vocab.label.clone(),
                kind: vocab.kind.name().to_string(),
                leading_space: vocab.leading_space,
                specials: vocab
                    .specials()
                    .into_iter()
                    .map(|(id, name)| (id, name.to_string()))
                    .collect(),
            },
            options: OptionsMeta {
                max_ws: j.max_ws,
                whitespace: j.whitespace,
                max_depth: j.max_depth,
                open_objects: j.open_objects,
                any_order: j.any_order,
                max_recursion: j.max_recursion,
                any_depth: j.any_depth,
                max_count: j.max_count,
                relax: j.relax,
                max_tokens: opts.max_tokens,
            },
            relaxed: machine.relaxed.clone(),
            repaired: set.repairs.clone(),
            read: Some(read::table(set, vocab, opts, machine)),
            regions: None,
            state_regions: None,
        };
        if opts.regions {
            meta.set_regions(&machine.regions, &machine.labels);
        }
        meta
    }

    /// Reads META's text (`Grammar::metadata`).
    pub fn from_artifact_text(text: &str) -> Result<Meta, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// META's text as the artifact stores it (compact JSON).
    pub fn to_json_string(&self) -> String {
        serde_json::to_string(self).expect("META holds only strings, numbers and lists")
    }

    /// Sets the region tree and each state's regions: the distinct lists in
    /// the order of the first state that has each, and runs of states with
    /// the same list.
    pub(crate) fn set_regions(&mut self, regions: &[Region], labels: &Labels) {
        self.regions = Some(regions.iter().map(RegionMeta::from).collect());
        let (of, lists) = labels.parts();
        let mut ids = vec![usize::MAX; lists.len()];
        let mut sets = Vec::new();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &k in of {
            let id = &mut ids[k as usize];
            if *id == usize::MAX {
                *id = sets.len();
                sets.push(lists[k as usize].clone());
            }
            match runs.last_mut() {
                Some((last, n)) if *last == *id => *n += 1,
                _ => runs.push((*id, 1)),
            }
        }
        self.state_regions = Some(StateRegions { sets, runs });
    }

    /// The region tree and each of the `n_states` states' regions, checked
    /// (parents before children, indices in range); `None` when the
    /// artifact was compiled without them (`--no-regions`).
    pub fn regions(&self, n_states: usize) -> Result<Option<RegionTable>, String> {
        let Some(list) = &self.regions else {
            return Ok(None);
        };
        let mut regions = Vec::with_capacity(list.len());
        for (i, r) in list.iter().enumerate() {
            if r.parent as usize >= list.len() {
                return Err(format!("region {i}: no valid parent"));
            }
            if i > 0 && r.parent as usize >= i {
                return Err(format!("region {i}: its parent comes after it"));
            }
            regions.push(Region {
                parent: r.parent,
                tag: r.kind.clone().into(),
            });
        }
        if regions.is_empty() {
            return Err("\"regions\" is empty".into());
        }
        let labels = self.state_labels(n_states, regions.len())?;
        Ok(Some((regions, labels)))
    }

    /// Each state's regions from `state_regions`, checked against the
    /// artifact's state count and the number of regions.
    fn state_labels(&self, n_states: usize, n_regions: usize) -> Result<Vec<Vec<u32>>, String> {
        let Some(sr) = &self.state_regions else {
            return Err("\"state_regions\": bad \"sets\"".into());
        };
        if sr.sets.iter().flatten().any(|&r| r as usize >= n_regions) {
            return Err("\"state_regions\": bad \"sets\"".into());
        }
        let listed = sr
            .runs
            .iter()
            .try_fold(0usize, |sum, &(_, n)| sum.checked_add(n));
        if listed != Some(n_states) {
            return Err(format!(
                "\"state_regions\" runs list {} states, the artifact has {n_states}",
                listed.map_or("too many".to_string(), |n| n.to_string())
            ));
        }
        let mut labels = Vec::with_capacity(n_states);
        for &(i, n) in &sr.runs {
            let set = sr
                .sets
                .get(i)
                .ok_or_else(|| "\"state_regions\": a run names no set".to_string())?;
            labels.extend(std::iter::repeat_n(set, n).cloned());
        }
        Ok(labels)
    }
}

/// META's `read`: the [`tooldec_read::Table`] of a compiled format.
mod read {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::Value;
    use tooldec_read::{Kind, Param, Table};

    use crate::lower::call_format::{Node, Part, Rules};
    use crate::spec::ToolSet;
    use crate::vocab::Vocab;
    use crate::{Machine, Options};

    type R = tooldec_read::Node;

    /// The table: rules with `token(...)` resolved as the lowering did (a
    /// special token the grammar uses, by id, else text), and each tool's
    /// top-level parameters (`properties` order, `required`, kinds).
    pub(super) fn table(set: &ToolSet, vocab: &Vocab, opts: &Options, machine: &Machine) -> Table {
        let names = vocab.specials();
        let used: BTreeMap<&str, u32> = machine
            .specials
            .iter()
            .filter_map(|id| names.get(id).map(|n| (*n, *id)))
            .collect();
        Table {
            rules: rules(&opts.format.grammar, &used),
            leading_space: vocab.leading_space,
            params: set.tools.iter().map(|t| params(&t.parameters)).collect(),
        }
    }

    fn rules(g: &Rules, used: &BTreeMap<&str, u32>) -> Vec<tooldec_read::Rule> {
        g.rules
            .iter()
            .map(|r| tooldec_read::Rule {
                name: r.name.clone(),
                body: node(&r.body, used),
            })
            .collect()
    }

    fn token(name: &str, used: &BTreeMap<&str, u32>) -> R {
        match used.get(name) {
            Some(&id) => R::Special(id, name.to_string()),
            None => R::Lit(name.to_string()),
        }
    }

    fn node(n: &Node, used: &BTreeMap<&str, u32>) -> R {
        let all = |v: &[Node]| v.iter().map(|x| node(x, used)).collect::<Vec<_>>();
        match n {
            Node::Lit(s) => R::Lit(s.clone()),
            Node::Class(s, _) => R::Class(s.clone()),
            Node::Regex(s, _) => R::Regex(s.clone()),
            Node::Special(s, _) | Node::Token(s, _) => token(s, used),
            Node::Text(t, _) => R::Text(all(t)),
            Node::Tool(b, _) => R::Tool(Box::new(node(b, used))),
            Node::Part(p, _) => match p {
                Part::Name => R::Name,
                Part::NameJson => R::NameJson,
                // A JSON object either way: the reader needs no line rule.
                Part::Args | Part::ArgsInline => R::Args,
                Part::ArgsPositional => R::ArgsPositional,
                Part::ArgsPython => R::ArgsPython,
                Part::ArgsGemma => R::ArgsGemma(Box::new(token("<|\"|>", used))),
                // args_xml is a Node::Xml.
                Part::ArgsXml => R::Seq(Vec::new()),
            },
            Node::Xml(x, _) => R::ArgsXml(Box::new(tooldec_read::Xml {
                open: node(&x.open, used),
                mid_string: node(&x.mid_string, used),
                mid_other: node(&x.mid_other, used),
                close: node(&x.close, used),
                stop: x.stop().unwrap_or_default(),
            })),
            Node::Ref(r, _) => R::Ref(r.clone()),
            Node::Seq(v) => R::Seq(all(v)),
            Node::Alt(v) => R::Alt(all(v)),
            Node::Repeat(x, min, max) => R::Repeat(Box::new(node(x, used)), *min, *max),
        }
    }

    /// The top-level parameters: first the root's own `properties` in
    /// order (as `args_positional` orders them, `json::tool_positional`
    /// reading the same keys), then the names declared under the root's
    /// applicators (`allOf`, `anyOf`, `oneOf`, local `$ref`,
    /// `if`/`then`/`else`, `dependentSchemas`) and those that `required`
    /// names without declaring, which `args_xml` writes too.
    fn params(schema: &Value) -> Vec<Param> {
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut declared = declared(schema, schema, 0);
        for name in &required {
            if !declared.iter().any(|(n, _)| n == name) {
                // Typed by additionalProperties (absent: any value).
                let k = match schema.get("additionalProperties") {
                    Some(extra) => kinds(extra, schema, 0),
                    None => None,
                };
                declared.push((name.to_string(), k));
            }
        }
        declared
            .into_iter()
            .map(|(name, k)| Param {
                required: required.contains(&name.as_str()),
                name,
                kinds: k.map_or_else(Vec::new, |k| k.into_iter().collect()),
            })
            .collect()
    }

    /// Names and kinds (`None`: any) that `s` declares for the object it
    /// describes, in order: its `properties`, met with those of its
    /// `allOf` and `$ref`, joined with those of its alternatives.
    fn declared(s: &Value, root: &Value, depth: usize) -> Vec<(String, Option<BTreeSet<Kind>>)> {
        let mut out: Vec<(String, Option<BTreeSet<Kind>>)> = Vec::new();
        if depth > 16 {
            return out;
        }
        let Some(obj) = s.as_object() else {
            return out;
        };
        let add =
            |out: &mut Vec<(String, Option<BTreeSet<Kind>>)>, name: &str, k, all: bool| match out
                .iter_mut()
                .find(|(n, _)| n == name)
            {
                Some((_, have)) if all => *have = meet(have.take(), k),
                Some((_, have)) => *have = join(have.take(), k),
                None => out.push((name.to_string(), k)),
            };
        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                add(&mut out, name, kinds(sub, root, 0), true);
            }
        }
        let mut all: Vec<&Value> = obj
            .get("allOf")
            .and_then(Value::as_array)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        if let Some(target) = obj
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| root.pointer(p))
        {
            all.push(target);
        }
        for b in all {
            for (name, k) in declared(b, root, depth + 1) {
                add(&mut out, &name, k, true);
            }
        }
        let mut any: Vec<&Value> = ["anyOf", "oneOf"]
            .iter()
            .filter_map(|key| obj.get(*key).and_then(Value::as_array))
            .flatten()
            .collect();
        any.extend(
            ["if", "then", "else"]
                .iter()
                .filter_map(|key| obj.get(*key)),
        );
        if let Some(d) = obj.get("dependentSchemas").and_then(Value::as_object) {
            any.extend(d.values());
        }
        for b in any {
            for (name, k) in declared(b, root, depth + 1) {
                add(&mut out, &name, k, false);
            }
        }
        out
    }

    /// Either set's kinds (`None`: any).
    fn join(a: Option<BTreeSet<Kind>>, b: Option<BTreeSet<Kind>>) -> Option<BTreeSet<Kind>> {
        let (mut a, b) = (a?, b?);
        a.extend(b);
        Some(a)
    }

    const ALL: [Kind; 7] = [
        Kind::Null,
        Kind::Boolean,
        Kind::Integer,
        Kind::Number,
        Kind::String,
        Kind::Array,
        Kind::Object,
    ];

    fn kind_of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Boolean,
            Value::Number(n) if n.is_i64() || n.is_u64() => Kind::Integer,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    /// Both sets' kinds, an integer being a number.
    fn meet(a: Option<BTreeSet<Kind>>, b: Option<BTreeSet<Kind>>) -> Option<BTreeSet<Kind>> {
        let (a, b) = match (a, b) {
            (None, x) | (x, None) => return x,
            (Some(a), Some(b)) => (a, b),
        };
        let has = |s: &BTreeSet<Kind>, k: Kind| {
            s.contains(&k) || (k == Kind::Integer && s.contains(&Kind::Number))
        };
        Some(
            ALL.into_iter()
                .filter(|&k| has(&a, k) && has(&b, k))
                .collect(),
        )
    }

    /// The JSON kinds `s` allows (`None`: any), over `type`, `nullable`,
    /// `enum`/`const`, local `$ref`s, `anyOf`/`oneOf` and `allOf`: what
    /// `args_xml` needs to type a raw value.
    fn kinds(s: &Value, root: &Value, depth: usize) -> Option<BTreeSet<Kind>> {
        if depth > 16 {
            return None;
        }
        let Some(obj) = s.as_object() else {
            return (s == &Value::Bool(false)).then(BTreeSet::new);
        };
        let mut out: Option<BTreeSet<Kind>> = None;
        if let Some(t) = obj.get("type") {
            let names: Vec<&str> = match t {
                Value::String(n) => vec![n],
                Value::Array(v) => v.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let mut set: BTreeSet<Kind> = names
                .iter()
                .filter_map(|n| serde_json::from_value(Value::String(n.to_string())).ok())
                .collect();
            if obj.get("nullable") == Some(&Value::Bool(true)) {
                set.insert(Kind::Null);
            }
            out = Some(set);
        }
        let literals: Option<Vec<&Value>> = match (obj.get("enum"), obj.get("const")) {
            (_, Some(c)) => Some(vec![c]),
            (Some(Value::Array(v)), None) => Some(v.iter().collect()),
            _ => None,
        };
        if let Some(l) = literals {
            out = meet(out, Some(l.into_iter().map(kind_of).collect()));
        }
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            if let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p)) {
                out = meet(out, kinds(target, root, depth + 1));
            }
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(v)) = obj.get(key) {
                let mut union = Some(BTreeSet::new());
                for b in v {
                    union = match (union, kinds(b, root, depth + 1)) {
                        (Some(mut u), Some(k)) => {
                            u.extend(k);
                            Some(u)
                        }
                        _ => None,
                    };
                }
                out = meet(out, union);
            }
        }
        if let Some(Value::Array(v)) = obj.get("allOf") {
            for b in v {
                out = meet(out, kinds(b, root, depth + 1));
            }
        }
        out
    }
}

impl From<&Region> for RegionMeta {
    fn from(r: &Region) -> RegionMeta {
        let kind = match r.tag.clone() {
            None => RegionKind::Format,
            Some(Tag::Text { rule }) => RegionKind::Text { rule },
            Some(Tag::Name) => RegionKind::Name,
            Some(Tag::Call { tools }) => RegionKind::Call { tools },
            Some(Tag::Args { tools }) => RegionKind::Args { tools },
            Some(Tag::Key { name }) => RegionKind::Key { name },
            Some(Tag::Value { name, ty }) => RegionKind::Value { name, ty },
        };
        RegionMeta {
            kind,
            parent: r.parent,
        }
    }
}

impl From<RegionKind> for Option<Tag> {
    fn from(k: RegionKind) -> Option<Tag> {
        Some(match k {
            RegionKind::Format => return None,
            RegionKind::Text { rule } => Tag::Text { rule },
            RegionKind::Name => Tag::Name,
            RegionKind::Call { tools } => Tag::Call { tools },
            RegionKind::Args { tools } => Tag::Args { tools },
            RegionKind::Key { name } => Tag::Key { name },
            RegionKind::Value { name, ty } => Tag::Value { name, ty },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::region::FORMAT;

    #[test]
    fn regions_read_back_as_written() {
        let regions = vec![
            Region::root(),
            Region {
                parent: FORMAT,
                tag: Some(Tag::Name),
            },
            Region {
                parent: 1,
                tag: Some(Tag::Value {
                    name: "city".into(),
                    ty: "string".into(),
                }),
            },
        ];
        let labels = vec![vec![], vec![0], vec![0], vec![1, 2], vec![0]];
        let mut meta = Meta::default();
        meta.set_regions(&regions, &Labels::of_lists(&labels));
        let text = meta.to_json_string();
        assert!(text.ends_with(
            r#""regions":[{"kind":"format","parent":0},{"kind":"name","parent":0},{"kind":"value","name":"city","type":"string","parent":1}],"state_regions":{"sets":[[],[0],[1,2]],"runs":[[0,1],[1,2],[2,1],[1,1]]}}"#
        ), "{text}");
        let back = Meta::from_artifact_text(&text).unwrap();
        assert_eq!(back, meta);
        assert_eq!(back.regions(5).unwrap(), Some((regions, labels)));
        assert!(back.regions(4).is_err());
        assert!(back.regions(6).is_err());
    }

    #[test]
    fn an_artifact_without_regions_reads() {
        let meta = Meta::from_artifact_text(r#"{"format":"react","tools":["a"]}"#).unwrap();
        assert_eq!(meta.tools, ["a"]);
        assert_eq!(meta.regions(3).unwrap(), None);
    }
}
