//! META's `read` key: what reading a call back needs beyond the DFA. The
//! compiler fills it (`tooldec_compiler::artifact::meta`), this crate reads
//! and checks it; [`Table`] is the one type that spells it.

use serde::{Deserialize, Serialize};

/// The call format's rules, resolved against the vocabulary, and each
/// tool's parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Table {
    /// The format's rules, in file order.
    pub rules: Vec<Rule>,
    /// The vocabulary's decoder drops a leading space, so every entry may
    /// begin with one.
    pub leading_space: bool,
    /// Per tool (in META's `tools` order), its top-level parameters in the
    /// schema's `properties` order.
    pub params: Vec<Vec<Param>>,
}

/// One rule of the format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Its name (entry names are rule names).
    pub name: String,
    /// Its expression.
    pub body: Node,
}

/// An expression of the format language with `token(...)` resolved: a
/// special token the grammar uses is [`Node::Special`], any other is text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    /// Literal text.
    Lit(String),
    /// A character class, as written (`[a-z]`).
    Class(String),
    /// A regular expression (regex-syntax, Unicode).
    Regex(String),
    /// A special token: its id and its name.
    Special(u32, String),
    /// Free text that contains none of the triggers (a special trigger
    /// excludes its name spelled as text too).
    Text(Vec<Node>),
    /// One tool: the body once, with that tool's parts.
    Tool(Box<Node>),
    /// The tool's name as is.
    Name,
    /// The tool's name as a JSON string.
    NameJson,
    /// The arguments as a JSON object.
    Args,
    /// The arguments as comma-separated JSON values.
    ArgsPositional,
    /// The arguments as Python keyword arguments.
    ArgsPython,
    /// The arguments as a Gemma 4 object; the node is its string quote.
    ArgsGemma(Box<Node>),
    /// The arguments as XML-style parameters.
    ArgsXml(Box<Xml>),
    /// Another rule, by name.
    Ref(String),
    /// Each in turn.
    Seq(Vec<Node>),
    /// Any one.
    Alt(Vec<Node>),
    /// `min` to `max` (`None`: unbounded) repetitions.
    Repeat(Box<Node>, u32, Option<u32>),
}

/// `args_xml(OPEN, MID_STRING, MID_OTHER, CLOSE)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Xml {
    /// Before the key.
    pub open: Node,
    /// Between the key and a raw string value.
    pub mid_string: Node,
    /// Between the key and a JSON value (equal to `mid_string` in the
    /// three-argument form).
    pub mid_other: Node,
    /// After the value.
    pub close: Node,
    /// The text a raw string value never contains (CLOSE's tag).
    pub stop: String,
}

/// One top-level parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Whether the schema requires it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The JSON kinds its schema allows ([`Kind`] names); empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<Kind>,
}

/// A JSON kind, as JSON Schema's `type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Kind {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl Param {
    /// Whether the schema allows a string.
    pub fn allows_string(&self) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&Kind::String)
    }

    /// Whether the schema allows some kind other than a string.
    pub fn allows_other(&self) -> bool {
        self.kinds.is_empty() || self.kinds.iter().any(|&k| k != Kind::String)
    }

    /// Whether `v` (parsed JSON) is of a kind the schema allows, other than
    /// a string.
    pub fn allows_value(&self, v: &serde_json::Value) -> bool {
        use serde_json::Value as V;
        let ok = |k: Kind| self.kinds.is_empty() || self.kinds.contains(&k);
        match v {
            V::Null => ok(Kind::Null),
            V::Bool(_) => ok(Kind::Boolean),
            V::Number(n) => ok(Kind::Number) || (ok(Kind::Integer) && (n.is_i64() || n.is_u64())),
            V::String(_) => false,
            V::Array(_) => ok(Kind::Array),
            V::Object(_) => ok(Kind::Object),
        }
    }
}

impl Table {
    /// Tool `i`'s parameters in positional order: the required ones, then
    /// the optional ones, each group in the schema's order.
    pub fn positional(&self, tool: usize) -> Vec<&Param> {
        let ps = self.params.get(tool).map(Vec::as_slice).unwrap_or(&[]);
        ps.iter()
            .filter(|p| p.required)
            .chain(ps.iter().filter(|p| !p.required))
            .collect()
    }
}
