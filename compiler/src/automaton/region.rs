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
