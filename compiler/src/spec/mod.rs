//! Parsing a tool list, in any of the dialects tools are published in:
//! OpenAI function calling, Anthropic, MCP (`tools/list` results and
//! LiveMCPBench server captures), BFCL question files (JSON Lines, Python,
//! Java and JavaScript types), ToolBench / RapidAPI `api_list`s, OpenAPI 3
//! operations, and signature lists (`multiply(a, b)`, ToolkenGPT's FuncQA
//! and KAMEL files). Every dialect becomes the same [`ToolSet`]: tool names
//! and standard JSON Schema `parameters` objects. `docs/DIALECTS.md` lists
//! each dialect's shapes and mapping decisions.
//!
//! Where a dialect's schema is converted in place (BFCL types), the
//! converted schema keeps the source's structure, so JSON pointers found by
//! the lowering still point into the file; where it is synthesized
//! (ToolBench, OpenAPI, signatures), [`Tool::pointer`] is the tool's source
//! entry and positions fall back to the nearest part of the pointer that
//! exists in the source.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::error::{Error, ErrorKind};

mod bfcl;
mod detect;
pub(crate) mod locate;
mod openapi;
mod plain;
mod repair;
mod signatures;
mod source;
mod toolbench;

/// One tool: its name and its arguments schema.
#[derive(Debug, Clone)]
pub struct Tool {
    /// The name a call uses.
    pub name: String,
    /// Its description, when the list gives one.
    pub description: Option<String>,
    /// The JSON Schema of the arguments (`{}`-equivalent when absent).
    pub parameters: Value,
    /// JSON pointer of `parameters` in the source file; for a schema the
    /// dialect synthesizes (ToolBench, OpenAPI, signatures), the pointer of
    /// the tool's source entry.
    pub pointer: String,
}

/// A parsed tool list, with its source kept for error positions.
#[derive(Debug, Clone)]
pub struct ToolSet {
    /// The file it came from, for messages.
    pub file: String,
    /// The file's text, for error positions.
    pub text: String,
    /// The tools, in file order.
    pub tools: Vec<Tool>,
    /// What `ParseOptions::repair` changed, one line each (empty without
    /// it, or when nothing needed it).
    pub repairs: Vec<String>,
}

impl ToolSet {
    /// "FILE:LINE:COL (at POINTER)" for messages. In a JSON Lines file the
    /// pointer's first token is the value's index and the line is the file's;
    /// a pointer into a synthesized schema is placed at the nearest part of
    /// it that exists in the source (the tool's entry).
    pub fn place(&self, pointer: &str) -> String {
        let shown = if pointer.is_empty() { "/" } else { pointer };
        match source::position(&self.text, pointer) {
            Some((l, c)) => format!("{}:{l}:{c} (at {shown})", self.file),
            None => format!("{} (at {shown})", self.file),
        }
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// The tool-list dialects [`parse_as`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dialect {
    /// Recognize the dialect from the file's shape ([`detect`]).
    #[default]
    Auto,
    /// `{"type": "function", "function": {name, description, parameters}}`
    /// or bare `{name, description, parameters}`.
    OpenAi,
    /// `{name, description, input_schema}`.
    Anthropic,
    /// `{name, description, inputSchema}`: a list, a `tools/list` result, a
    /// JSON-RPC response, or LiveMCPBench's per-server captures.
    Mcp,
    /// Berkeley Function-Calling Leaderboard question files (JSON Lines)
    /// and function docs, with BFCL's type names.
    Bfcl,
    /// ToolBench / RapidAPI `api_list` entries (queries, or the entries).
    ToolBench,
    /// OpenAPI 3: one tool per operation.
    OpenApi,
    /// Signature lists: `multiply(a, b)`, ToolkenGPT's FuncQA and KAMEL.
    Signatures,
}

impl Dialect {
    /// Every dialect, `Auto` first.
    pub const ALL: [Dialect; 8] = [
        Dialect::Auto,
        Dialect::OpenAi,
        Dialect::Anthropic,
        Dialect::Mcp,
        Dialect::Bfcl,
        Dialect::ToolBench,
        Dialect::OpenApi,
        Dialect::Signatures,
    ];

    /// The name `--dialect` takes.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Auto => "auto",
            Dialect::OpenAi => "openai",
            Dialect::Anthropic => "anthropic",
            Dialect::Mcp => "mcp",
            Dialect::Bfcl => "bfcl",
            Dialect::ToolBench => "toolbench",
            Dialect::OpenApi => "openapi",
            Dialect::Signatures => "signatures",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dialect {
    type Err = Error;

    fn from_str(s: &str) -> Result<Dialect, Error> {
        let low = s.trim().to_ascii_lowercase();
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == low)
            .ok_or_else(|| {
                let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.name()).collect();
                Error::new(
                    ErrorKind::Usage,
                    format!("unknown dialect {s:?} (expected {})", names.join(", ")),
                )
            })
    }
}

/// What to do when two different tools have the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Collisions {
    /// An error naming both tools' places.
    #[default]
    Error,
    /// Keep the first; rename each later one `NAME_2`, `NAME_3`, ... (the
    /// first suffix that no tool of the file uses).
    Rename,
}

/// How [`parse_with`] reads a tool list.
#[derive(Debug, Clone, Copy, Default)]
pub struct ParseOptions {
    /// Which dialect to read (default: detected from the shape).
    pub dialect: Dialect,
    /// What to do with tools of the same name.
    pub collisions: Collisions,
    /// Repair what has one clear reading (`spec/repair.rs`): number
    /// keywords written as strings, an array's `enum` meant for its items,
    /// a tool repeated identically. Each repair is listed in
    /// [`ToolSet::repairs`].
    pub repair: bool,
}

/// A JSON Schema document on its own, as a one-tool set whose "parameters"
/// are the whole document (pointer ""), for [`crate::compile_schema`]. The
/// tool is named after the file.
pub fn schema_document(file: &str, text: &str) -> Result<ToolSet, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Json,
            format!("{file}:{}:{}: invalid JSON: {e}", e.line(), e.column()),
        )
    })?;
    Ok(ToolSet {
        file: file.to_string(),
        text: text.to_string(),
        tools: vec![Tool {
            name: file.to_string(),
            description: None,
            parameters: value,
            pointer: String::new(),
        }],
        repairs: Vec::new(),
    })
}

/// Parses `text` (the contents of `file`) as a tool list, recognizing its
/// dialect. Two different tools with one name are an error.
pub fn parse(file: &str, text: &str) -> Result<ToolSet, Error> {
    parse_with(file, text, &ParseOptions::default())
}

/// Parses `text` as a tool list in `dialect` ([`Dialect::Auto`]: recognized).
pub fn parse_as(file: &str, text: &str, dialect: Dialect) -> Result<ToolSet, Error> {
    parse_with(
        file,
        text,
        &ParseOptions {
            dialect,
            ..ParseOptions::default()
        },
    )
}

/// The dialect [`Dialect::Auto`] reads `text` as.
pub fn detect(file: &str, text: &str) -> Result<Dialect, Error> {
    let set = empty_set(file, text);
    let src = source::read(&set, Dialect::Auto)?;
    detect::detect(&set, &src)
}

/// Parses `text` as a tool list with explicit options.
pub fn parse_with(file: &str, text: &str, opts: &ParseOptions) -> Result<ToolSet, Error> {
    let mut set = empty_set(file, text);
    let src = source::read(&set, opts.dialect)?;
    let dialect = match opts.dialect {
        Dialect::Auto => detect::detect(&set, &src)?,
        d => d,
    };
    let read = match dialect {
        Dialect::Auto | Dialect::OpenAi => plain::read(&set, &src.root, plain::Kind::OpenAi)?,
        Dialect::Anthropic => plain::read(&set, &src.root, plain::Kind::Anthropic)?,
        Dialect::Mcp => plain::read(&set, &src.root, plain::Kind::Mcp)?,
        Dialect::Bfcl => bfcl::read(&set, &src.root)?,
        Dialect::ToolBench => toolbench::read(&set, &src.root)?,
        Dialect::OpenApi => openapi::read(&set, &src.root)?,
        Dialect::Signatures => signatures::read(&set, &src)?,
    };
    let mut read = read;
    if opts.repair {
        set.repairs = repair_all(&mut read);
    }
    set.tools = finish(&set, read, opts.collisions)?;
    Ok(set)
}

/// `ParseOptions::repair` on what a reader found: each schema's repairs,
/// and a tool repeated identically in one list kept once (as aggregated
/// lists always do; `finish` drops the repeats).
fn repair_all(read: &mut Read) -> Vec<String> {
    let mut out = Vec::new();
    for f in &mut read.tools {
        repair::schema(&f.name, &mut f.parameters, &f.pointer, &mut out);
    }
    if !read.aggregate {
        let mut first: HashMap<(&str, String), usize> = HashMap::new();
        for (i, f) in read.tools.iter().enumerate() {
            match first.entry((f.name.as_str(), canonical(&f.parameters))) {
                std::collections::hash_map::Entry::Occupied(j) => out.push(format!(
                    "tool {:?} at {}: tool #{i} repeats tool #{} identically, kept once",
                    f.name,
                    f.entry,
                    j.get()
                )),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(i);
                }
            }
        }
        read.aggregate = true;
    }
    out
}

/// A tool as a dialect reader found it.
#[derive(Debug, Clone)]
struct Found {
    name: String,
    /// Where the name is written (for name errors).
    name_at: String,
    /// The tool's source entry (for collision errors).
    entry: String,
    description: Option<String>,
    parameters: Value,
    /// [`Tool::pointer`].
    pointer: String,
}

/// What a dialect reader returns.
#[derive(Debug, Default)]
struct Read {
    tools: Vec<Found>,
    /// The tools come from several independent lists (BFCL questions, ToolBench
    /// queries, MCP servers, keyed signature records): a tool repeated
    /// identically is kept once. In one list a repeated name is an error.
    aggregate: bool,
    /// Where the list is (for "empty" errors).
    base: String,
}

fn empty_set(file: &str, text: &str) -> ToolSet {
    ToolSet {
        file: file.to_string(),
        text: text.to_string(),
        tools: Vec::new(),
        repairs: Vec::new(),
    }
}

/// `v` as JSON text with every object's keys sorted: equal texts for
/// values `==` calls equal.
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    write(&m[k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// Checks names, drops identical repeats of aggregated lists, and applies
/// the collision policy.
fn finish(set: &ToolSet, read: Read, collisions: Collisions) -> Result<Vec<Tool>, Error> {
    if read.tools.is_empty() {
        return Err(spec_err(set, &read.base, "the tool list is empty"));
    }
    for f in &read.tools {
        check_name(set, &f.name, &f.name_at)?;
    }
    // Names a renamed tool must not take: every name of the file.
    let mut taken: HashSet<String> = read.tools.iter().map(|f| f.name.clone()).collect();
    // Source name -> (index in `read.tools`, index in `out`) of the tools
    // kept under it.
    let mut by_name: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    // The (name, parameters) pairs kept, parameters in a canonical text
    // (keys sorted, as `Value`'s equality ignores their order): a file of
    // thousands of tools under one name is linear, not quadratic.
    let mut kept: HashSet<(&str, String)> = HashSet::new();
    // Per source name, the next suffix a rename tries.
    let mut next_suffix: HashMap<&str, u64> = HashMap::new();
    let mut out: Vec<Tool> = Vec::with_capacity(read.tools.len());
    for (i, f) in read.tools.iter().enumerate() {
        let mut name = f.name.clone();
        let params = if read.aggregate {
            canonical(&f.parameters)
        } else {
            String::new()
        };
        if let Some(prev) = by_name.get(f.name.as_str()) {
            if read.aggregate && kept.contains(&(f.name.as_str(), params.clone())) {
                continue;
            }
            let (j, _) = prev[0];
            match collisions {
                Collisions::Error => {
                    let first = &read.tools[j];
                    let msg = if read.aggregate {
                        format!(
                            "tool name {:?} names two different tools, #{i} here and #{j} at {}: their parameters differ (rename one, or read with collisions renamed: spec::Collisions::Rename)",
                            f.name,
                            set.place(&first.entry),
                        )
                    } else {
                        format!(
                            "duplicate tool name {:?}: tools #{j} and #{i} have the same name (#{j} at {})",
                            f.name,
                            set.place(&first.entry),
                        )
                    };
                    return Err(spec_err(set, &f.entry, &msg));
                }
                Collisions::Rename => {
                    let k = next_suffix.entry(f.name.as_str()).or_insert(2);
                    loop {
                        let candidate = format!("{}_{k}", f.name);
                        *k += 1;
                        if !taken.contains(&candidate) {
                            name = candidate;
                            break;
                        }
                    }
                    taken.insert(name.clone());
                }
            }
        }
        by_name
            .entry(f.name.as_str())
            .or_default()
            .push((i, out.len()));
        if read.aggregate {
            kept.insert((f.name.as_str(), params));
        }
        out.push(Tool {
            name,
            description: f.description.clone(),
            parameters: f.parameters.clone(),
            pointer: f.pointer.clone(),
        });
    }
    Ok(out)
}

fn check_name(set: &ToolSet, name: &str, at: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(spec_err(set, at, "the tool name is empty"));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(spec_err(
            set,
            at,
            &format!("the tool name {name:?} contains the control character {c:?}"),
        ));
    }
    Ok(())
}

fn spec_err(set: &ToolSet, pointer: &str, msg: &str) -> Error {
    Error::new(ErrorKind::Spec, format!("{}: {msg}", set.place(pointer)))
}

/// `key` escaped as a JSON pointer token.
fn esc(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `{"type": "object", "properties": {}}`: the arguments of a tool without
/// parameters.
fn no_arguments() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

#[cfg(test)]
mod tests;
