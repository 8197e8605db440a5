//! Regions: which part of a call each state of the machine writes.
//!
//! The lowering wraps the parts a person names, the free text of a format,
//! the tool names, what follows a tool's name, each tool's arguments and
//! each property's name and value, in [`Expr::Tag`](crate::automaton::expr::Expr::Tag).
//! The NFA builder turns the nesting of tags into a tree of [`Region`]s
//! (a property inside a property inside a tool's arguments) and gives every
//! NFA state the region it was built in; a DFA state's regions are those of
//! its NFA states that read a byte, carried through minimization. The
//! artifact keeps the tree and each state's regions in its metadata, which
//! is what `tooldec inspect`, `explain` and `draw` read: they are a
//! description of the machine, never used to serve a mask.

use serde_json::{json, Value};

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

/// The metadata form of the region tree: one object per region, in id
/// order, `{"parent": p, "kind": k, ...}`.
pub fn to_json(regions: &[Region]) -> Value {
    Value::Array(
        regions
            .iter()
            .map(|r| {
                let mut o = match &r.tag {
                    None => json!({"kind": "format"}),
                    Some(Tag::Text { rule }) => json!({"kind": "text", "rule": rule}),
                    Some(Tag::Name) => json!({"kind": "name"}),
                    Some(Tag::Call { tools }) => json!({"kind": "call", "tools": tools}),
                    Some(Tag::Args { tools }) => json!({"kind": "args", "tools": tools}),
                    Some(Tag::Key { name }) => json!({"kind": "key", "name": name}),
                    Some(Tag::Value { name, ty }) => {
                        json!({"kind": "value", "name": name, "type": ty})
                    }
                };
                o["parent"] = json!(r.parent);
                o
            })
            .collect(),
    )
}

/// Each state's regions in metadata form: `sets` lists each distinct set
/// of regions once, `states` gives each state's set by index.
pub fn states_to_json(labels: &[Vec<u32>]) -> Value {
    let mut ids: std::collections::HashMap<&[u32], usize> = std::collections::HashMap::new();
    let mut sets: Vec<&[u32]> = Vec::new();
    let states: Vec<usize> = labels
        .iter()
        .map(|l| {
            *ids.entry(l.as_slice()).or_insert_with(|| {
                sets.push(l);
                sets.len() - 1
            })
        })
        .collect();
    json!({"sets": sets, "states": states})
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

/// Reads the region tree back from metadata ([`to_json`]); `what` names
/// the artifact for errors.
pub fn from_json(v: &Value) -> Result<Vec<Region>, String> {
    let list = v.as_array().ok_or("\"regions\" is not a list")?;
    let mut out = Vec::with_capacity(list.len());
    for (i, r) in list.iter().enumerate() {
        let bad = |what: &str| format!("region {i}: {what}");
        let parent = r
            .get("parent")
            .and_then(Value::as_u64)
            .filter(|&p| (p as usize) < list.len())
            .ok_or_else(|| bad("no valid parent"))? as u32;
        let text = |k: &str| -> Result<String, String> {
            r.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| bad(&format!("no {k:?}")))
        };
        let tools = || -> Result<Vec<u32>, String> {
            r.get("tools")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().map(|t| t.as_u64().map(|t| t as u32)).collect())
                .ok_or_else(|| bad("no \"tools\""))
        };
        let tag = match r.get("kind").and_then(Value::as_str) {
            Some("format") => None,
            Some("text") => Some(Tag::Text {
                rule: text("rule")?,
            }),
            Some("name") => Some(Tag::Name),
            Some("call") => Some(Tag::Call { tools: tools()? }),
            Some("args") => Some(Tag::Args { tools: tools()? }),
            Some("key") => Some(Tag::Key {
                name: text("name")?,
            }),
            Some("value") => Some(Tag::Value {
                name: text("name")?,
                ty: text("type")?,
            }),
            other => return Err(bad(&format!("unknown kind {other:?}"))),
        };
        if i > 0 && parent as usize >= i {
            return Err(bad("its parent comes after it"));
        }
        out.push(Region { parent, tag });
    }
    if out.is_empty() {
        return Err("\"regions\" is empty".into());
    }
    Ok(out)
}

/// Reads each state's regions back from metadata ([`states_to_json`]).
pub fn states_from_json(
    v: &Value,
    n_states: usize,
    n_regions: usize,
) -> Result<Vec<Vec<u32>>, String> {
    let sets: Vec<Vec<u32>> = v
        .get("sets")
        .and_then(Value::as_array)
        .and_then(|a| {
            a.iter()
                .map(|s| {
                    s.as_array()?
                        .iter()
                        .map(|r| {
                            r.as_u64()
                                .filter(|&r| (r as usize) < n_regions)
                                .map(|r| r as u32)
                        })
                        .collect::<Option<Vec<u32>>>()
                })
                .collect()
        })
        .ok_or("\"state_regions\": bad \"sets\"")?;
    let states = v
        .get("states")
        .and_then(Value::as_array)
        .ok_or("\"state_regions\": no \"states\"")?;
    if states.len() != n_states {
        return Err(format!(
            "\"state_regions\" lists {} states, the artifact has {n_states}",
            states.len()
        ));
    }
    states
        .iter()
        .map(|s| {
            s.as_u64()
                .and_then(|i| sets.get(i as usize))
                .cloned()
                .ok_or_else(|| "\"state_regions\": a state names no set".to_string())
        })
        .collect()
}
