//! Reading tool calls back: the artifact that constrained an output turns
//! it into OpenAI-style `tool_calls`,
//! `[{"name": ..., "arguments": {...}}]`, arguments as typed JSON.
//!
//! 1. The output (token ids, or text in which a special token the grammar
//!    uses is spelled by its name) becomes the bytes the DFA walks.
//! 2. The DFA must accept them from the entry ([`ReadError::Rejected`]
//!    says where it stopped otherwise).
//! 3. The format's rules, kept in META's `read` key ([`Table`]), are run
//!    over the bytes ([`program`]) and each `tool { }` they pass becomes
//!    a call; its arguments are read from whatever encoding the format
//!    writes ([`values`]) and typed by the tool's parameters.
//!
//! ```no_run
//! let art = tooldec_runtime::Artifact::open("weather.tdm").unwrap();
//! let g = art.grammar();
//! let reader = tooldec_read::Reader::new(&g).unwrap();
//! let calls = reader.read_text(&g, None, "Thought: ...").unwrap();
//! println!("{}", tooldec_read::to_json(&calls));
//! ```

pub mod program;
pub mod table;
pub mod values;

use serde::Deserialize;
use serde_json::{Map, Value};
use tooldec_runtime::Grammar;

pub use table::{Kind, Node, Param, Rule, Table, Xml};

use program::{Event, Program, RunError, XmlMode};

/// The default bound on the steps of one read.
pub const MAX_STEPS: usize = 10_000_000;

/// One call: the tool's name and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The tool's name.
    pub name: String,
    /// The arguments, in the order they were written.
    pub arguments: Map<String, Value>,
}

impl Call {
    /// `{"name": ..., "arguments": {...}}`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("arguments".into(), Value::Object(self.arguments.clone()));
        Value::Object(m)
    }
}

/// The calls as a JSON array of `{"name": ..., "arguments": {...}}`.
pub fn to_json(calls: &[Call]) -> String {
    Value::Array(calls.iter().map(Call::to_value).collect()).to_string()
}

/// Why an output was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// META has no `read` key (or it does not check).
    NoTable(String),
    /// The artifact has no such entry.
    UnknownEntry {
        /// The entry asked for.
        entry: String,
        /// The artifact's entries.
        entries: Vec<String>,
    },
    /// A token id the artifact does not have.
    BadToken(u32),
    /// The DFA refuses the output: after `at` bytes (of `len`) nothing can
    /// follow; `at == len` means the output is cut short.
    Rejected {
        /// The bytes walked before the refusal.
        at: usize,
        /// The output's length in bytes.
        len: usize,
        /// The end of the text that was accepted (lossy UTF-8, reserved
        /// bytes shown as `⟨id⟩`).
        context: String,
        /// The token (index into the ids) holding the refused byte, when
        /// reading token ids.
        token: Option<usize>,
    },
    /// Accepted, but the format's rules found no parse (a bug: the DFA and
    /// the rules disagree).
    NoParse,
    /// Reading took more steps than the bound.
    Limit(usize),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NoTable(why) => write!(
                f,
                "the artifact cannot read calls back ({why}); recompile it with this version of tooldec-compile"
            ),
            ReadError::UnknownEntry { entry, entries } => write!(
                f,
                "the artifact has no entry {entry:?}; its entries: {}",
                entries.join(", ")
            ),
            ReadError::BadToken(t) => write!(f, "token id {t} is not in the artifact's vocabulary"),
            ReadError::Rejected {
                at, len, context, ..
            } if at == len => write!(
                f,
                "rejected: the output ends before the call is complete ({len} bytes; text so far `{context}`)"
            ),
            ReadError::Rejected { at, context, token, .. } => {
                write!(f, "rejected at byte {at}")?;
                if let Some(t) = token {
                    write!(f, " (token {})", t + 1)?;
                }
                write!(f, ": nothing the format allows continues `{context}`")
            }
            ReadError::NoParse => write!(
                f,
                "the machine accepts the output but its rules give no reading of it (please report this)"
            ),
            ReadError::Limit(n) => write!(f, "reading the output took more than {n} steps"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The keys of META this crate reads: `tools` (the names, written by the
/// compiler's `Meta`) and `read`.
#[derive(Deserialize)]
struct MetaView {
    #[serde(default)]
    tools: Vec<String>,
    read: Option<Table>,
}

/// What reading an artifact's outputs needs, built once per artifact.
pub struct Reader {
    table: Table,
    tools: Vec<String>,
    entries: Vec<String>,
    program: Program,
    /// The bound on the steps of one read.
    pub max_steps: usize,
}

impl Reader {
    /// The reader of `g`'s outputs, from its META.
    pub fn new(g: &Grammar<'_>) -> Result<Reader, ReadError> {
        let entries: Vec<String> = g.entries().map(|(n, _)| n.to_string()).collect();
        Reader::from_meta(g.metadata(), entries)
    }

    /// The reader of META's text, for these entries.
    pub fn from_meta(meta: &str, entries: Vec<String>) -> Result<Reader, ReadError> {
        let view: MetaView =
            serde_json::from_str(meta).map_err(|e| ReadError::NoTable(format!("META: {e}")))?;
        let table = view
            .read
            .ok_or_else(|| ReadError::NoTable("its META has no \"read\" key".into()))?;
        if table.params.len() != view.tools.len() {
            return Err(ReadError::NoTable(format!(
                "\"read\" lists {} tools, \"tools\" {}",
                table.params.len(),
                view.tools.len()
            )));
        }
        let program = Program::new(&table, &view.tools, &entries).map_err(ReadError::NoTable)?;
        Ok(Reader {
            table,
            tools: view.tools,
            entries,
            program,
            max_steps: MAX_STEPS,
        })
    }

    /// The table read from META.
    pub fn table(&self) -> &Table {
        &self.table
    }

    fn entry<'a>(&'a self, entry: Option<&'a str>) -> Result<&'a str, ReadError> {
        match entry {
            None => self
                .entries
                .first()
                .map(String::as_str)
                .ok_or_else(|| ReadError::NoTable("no entries".into())),
            Some(e) if self.entries.iter().any(|x| x == e) => Ok(e),
            Some(e) => Err(ReadError::UnknownEntry {
                entry: e.to_string(),
                entries: self.entries.clone(),
            }),
        }
    }

    /// The bytes the DFA walks for `text`: each special token the grammar
    /// uses, spelled by its name, becomes its marker.
    pub fn text_bytes(&self, text: &str) -> Vec<u8> {
        let s = text.as_bytes();
        let mut out = Vec::with_capacity(s.len());
        let mut i = 0;
        'outer: while i < s.len() {
            for (marker, name) in &self.program.specials {
                if !name.is_empty() && s[i..].starts_with(name.as_bytes()) {
                    out.extend_from_slice(marker);
                    i += name.len();
                    continue 'outer;
                }
            }
            out.push(s[i]);
            i += 1;
        }
        out
    }

    /// Reads the calls of a text output.
    pub fn read_text(
        &self,
        g: &Grammar<'_>,
        entry: Option<&str>,
        text: &str,
    ) -> Result<Vec<Call>, ReadError> {
        self.read_bytes(g, entry, &self.text_bytes(text), None)
    }

    /// Reads the calls of an output given as token ids (an end-of-sequence
    /// token ends it).
    pub fn read_tokens(
        &self,
        g: &Grammar<'_>,
        entry: Option<&str>,
        tokens: &[u32],
    ) -> Result<Vec<Call>, ReadError> {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for (i, &t) in tokens.iter().enumerate() {
            if g.is_eos(t) {
                if i + 1 < tokens.len() {
                    // Anything after the end of sequence is refused.
                    let at = bytes.len();
                    return Err(rejected(&bytes, at, bytes.len() + 1, Some(i + 1)));
                }
                break;
            }
            let b = g.token_bytes(t).ok_or(ReadError::BadToken(t))?;
            starts.push(bytes.len());
            bytes.extend_from_slice(b);
        }
        self.read_bytes(g, entry, &bytes, Some(&starts))
    }

    /// Reads the calls of the bytes the DFA walks; `token_starts` (where
    /// each token's bytes begin) names the refused token.
    pub fn read_bytes(
        &self,
        g: &Grammar<'_>,
        entry: Option<&str>,
        bytes: &[u8],
        token_starts: Option<&[usize]>,
    ) -> Result<Vec<Call>, ReadError> {
        let entry = self.entry(entry)?;
        let (mut state, stops) = g.entry(entry).ok_or_else(|| ReadError::UnknownEntry {
            entry: entry.to_string(),
            entries: self.entries.clone(),
        })?;
        for (i, &b) in bytes.iter().enumerate() {
            // An entry that stops after its first call takes no byte after
            // a call's end (as its matcher).
            let next = if stops && g.ends_call(state) {
                0
            } else {
                g.next_state(state, b)
            };
            if next == 0 {
                let token = token_starts.map(|s| s.partition_point(|&x| x <= i).saturating_sub(1));
                return Err(rejected(bytes, i, bytes.len(), token));
            }
            state = next;
        }
        if !g.is_accepting_state(state) {
            return Err(rejected(bytes, bytes.len(), bytes.len(), None));
        }
        self.parse(entry, bytes)
    }

    /// Reads the calls of `bytes` from `entry` by the rules alone, without
    /// asking the DFA first.
    pub(crate) fn parse(&self, entry: &str, bytes: &[u8]) -> Result<Vec<Call>, ReadError> {
        let events = self
            .program
            .run(entry, bytes, self.max_steps)
            .map_err(|e| match e {
                RunError::NoParse => ReadError::NoParse,
                RunError::Limit(n) => ReadError::Limit(n),
            })?;
        Ok(self.calls(events, bytes))
    }

    /// The calls a run's events describe.
    fn calls(&self, events: Vec<Event>, bytes: &[u8]) -> Vec<Call> {
        let mut calls = Vec::new();
        let mut tool: Option<usize> = None;
        let mut args = Map::new();
        let mut key: Option<String> = None;
        let mut positional: Vec<Value> = Vec::new();
        for ev in events {
            match ev {
                Event::Start => {
                    tool = None;
                    args = Map::new();
                    positional.clear();
                }
                Event::Tool(t) => tool = Some(t),
                Event::Object(m) => args.extend(m),
                Event::Positional(v) => positional = v,
                Event::XmlKey(k) => key = Some(k),
                Event::XmlValue(from, to, mode) => {
                    let raw = String::from_utf8_lossy(&bytes[from..to]).into_owned();
                    let k = key.take().unwrap_or_default();
                    let v = self.xml_value(tool, &k, raw, mode);
                    args.insert(k, v);
                }
                Event::End => {
                    let Some(t) = tool else { continue };
                    if !positional.is_empty() {
                        for (p, v) in self
                            .table
                            .positional(t)
                            .into_iter()
                            .zip(positional.drain(..))
                        {
                            args.insert(p.name.clone(), v);
                        }
                    }
                    calls.push(Call {
                        name: self.tools[t].clone(),
                        arguments: std::mem::take(&mut args),
                    });
                }
            }
        }
        calls
    }

    /// An XML value typed by the parameter: a raw string, JSON, or (the
    /// three-argument form) JSON when it parses as a kind the parameter
    /// allows other than string, else a string.
    fn xml_value(&self, tool: Option<usize>, key: &str, raw: String, mode: XmlMode) -> Value {
        let param = tool.and_then(|t| self.table.params.get(t)?.iter().find(|p| p.name == key));
        match mode {
            XmlMode::Raw => Value::String(raw),
            XmlMode::Json => serde_json::from_str(raw.trim()).unwrap_or(Value::String(raw)),
            XmlMode::Either => match param {
                Some(p) if !p.allows_other() => Value::String(raw),
                Some(p) => values::typed_raw(&raw, p.allows_string(), |v| p.allows_value(v)),
                None => values::typed_raw(&raw, true, |_| true),
            },
        }
    }
}

/// The refusal at byte `at` of `bytes`.
fn rejected(bytes: &[u8], at: usize, len: usize, token: Option<usize>) -> ReadError {
    ReadError::Rejected {
        at,
        len,
        context: shown(&bytes[..at.min(bytes.len())]),
        token,
    }
}

/// The end of `bytes` for a message: at most 80 characters, markers as
/// `⟨id⟩`.
fn shown(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(id) = tooldec_runtime::layout::reserved::marked_id(&bytes[i..]) {
            out.push_str(&format!("⟨{id}⟩"));
            i += 4;
            continue;
        }
        let end = (i + 1..=bytes.len())
            .find(|&e| std::str::from_utf8(&bytes[i..e]).is_ok())
            .unwrap_or(i + 1);
        out.push_str(&String::from_utf8_lossy(&bytes[i..end]));
        i = end;
    }
    let n = out.chars().count();
    if n > 80 {
        let tail: String = out.chars().skip(n - 80).collect();
        format!("...{tail}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests;
