//! Parsers for the outputs of the shipped call formats, written by hand
//! from the formats' descriptions (the comments of `grammars/formats/*.tdg`)
//! and not derived from their grammars: string scanning for the fixed text,
//! [`serde_json`] for every JSON part.
//!
//! Each parser takes a whole decoded output and returns its calls as
//! `(tool name, arguments)`; the arguments are a JSON object, except for
//! [`toolken`], where they are a JSON array of positional values (map them
//! onto the tool's parameters with [`positional_to_object`]). A parser
//! checks the shape only; tool names and argument schemas are the caller's
//! to check (e.g. with [`crate::schema::ToolValidators`]).
//!
//! Every parser first drops one optional leading space: a SentencePiece
//! vocabulary may write one before the output (the grammar allows it), and
//! its decoder may or may not show it.
//!
//! [`reply`] is the tolerant reading of a model's free reply (any spacing,
//! any JSON member order) that the evaluation scores with; these strict
//! parsers check what a grammar writes.
//!
//! [`models`] holds the parsers of the model formats (qwen3, qwen3-coder,
//! glm-4.5/4.7, deepseek-r1/v3.1/v3.2, kimi-k2, gpt-oss, llama3's new
//! entries, llama-pythonic, mistral and mistral-v11, minimax-m2, granite,
//! gemma4), each written from the upstream vLLM or SGLang parser of that
//! model (file and commit in its doc) and reading the tool list to type
//! XML-style raw values as the upstream parser does ([`typing`]); Python
//! literals are read by [`pylit`]. [`parser_with_tools`] is the one table
//! of every (format, entry).

use serde_json::Value;

pub mod models;
pub mod pylit;
pub mod reply;
pub mod typing;

/// The calls of one output: `(tool name, arguments)`.
pub type Calls = Vec<(String, Value)>;

/// Drops one optional leading space.
pub fn strip_space(text: &str) -> &str {
    text.strip_prefix(' ').unwrap_or(text)
}

/// The byte length of the one JSON value at the start of `s`, by scanning:
/// a string to its closing quote, an object or array to its matching
/// bracket (strings inside skipped), anything else (number, `true`,
/// `false`, `null`) as the longest run of `[A-Za-z0-9+.-]`. Whether the
/// extent is valid JSON is for `serde_json` to say ([`take_json`]).
fn json_extent(s: &str) -> Result<usize, String> {
    let b = s.as_bytes();
    let string_end = |mut i: usize| -> Result<usize, String> {
        // `i` is just after the opening quote.
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return Ok(i + 1),
                _ => i += 1,
            }
        }
        Err(format!("unterminated JSON string in {s:?}"))
    };
    match b.first() {
        None => Err("expected a JSON value, found the end of the text".into()),
        Some(b'"') => string_end(1),
        Some(b'{') | Some(b'[') => {
            let mut depth = 0usize;
            let mut i = 0;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = string_end(i + 1)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            Err(format!("unclosed JSON object or array in {s:?}"))
        }
        Some(_) => {
            let n = b
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
                .count();
            if n == 0 {
                Err(format!("expected a JSON value at {:?}", preview(s)))
            } else {
                Ok(n)
            }
        }
    }
}

/// The start of `s`, for messages.
fn preview(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Parses the one JSON value at the start of `s` (strict `serde_json` on
/// its extent, found by scanning brackets and quotes); returns it and the
/// rest of `s`.
pub fn take_json(s: &str) -> Result<(Value, &str), String> {
    let n = json_extent(s)?;
    let v: Value = serde_json::from_str(&s[..n])
        .map_err(|e| format!("invalid JSON {:?}: {e}", preview(&s[..n])))?;
    Ok((v, &s[n..]))
}

/// A position in a text being parsed.
struct Cursor<'a> {
    rest: &'a str,
}

impl<'a> Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Cursor {
            rest: strip_space(text),
        }
    }

    /// Consumes `lit` if the text goes on with it.
    fn eat(&mut self, lit: &str) -> bool {
        match self.rest.strip_prefix(lit) {
            Some(r) => {
                self.rest = r;
                true
            }
            None => false,
        }
    }

    /// Consumes `lit` or fails.
    fn expect(&mut self, lit: &str) -> Result<(), String> {
        if self.eat(lit) {
            Ok(())
        } else {
            Err(format!("expected {lit:?}, found {:?}", preview(self.rest)))
        }
    }

    fn json(&mut self) -> Result<Value, String> {
        let (v, rest) = take_json(self.rest)?;
        self.rest = rest;
        Ok(v)
    }

    fn json_string(&mut self) -> Result<String, String> {
        match self.json()? {
            Value::String(s) => Ok(s),
            other => Err(format!("expected a JSON string, found {other}")),
        }
    }

    fn json_object(&mut self) -> Result<Value, String> {
        match self.json()? {
            v @ Value::Object(_) => Ok(v),
            other => Err(format!("expected a JSON object, found {other}")),
        }
    }

    /// Everything up to the first `delim` (consumed too), or an error.
    fn until(&mut self, delim: &str) -> Result<&'a str, String> {
        let i = self
            .rest
            .find(delim)
            .ok_or_else(|| format!("no {delim:?} in {:?}", preview(self.rest)))?;
        let before = &self.rest[..i];
        self.rest = &self.rest[i + delim.len()..];
        Ok(before)
    }

    fn end(&self) -> Result<(), String> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "unexpected text at the end: {:?}",
                preview(self.rest)
            ))
        }
    }
}

/// `{"name": <JSON string>, "<key>": <JSON object>}`, the call object of
/// the JSON formats (`key` is `arguments`, or `parameters` for Llama 3).
fn name_args_object(c: &mut Cursor<'_>, key: &str) -> Result<(String, Value), String> {
    c.expect("{\"name\": ")?;
    let name = c.json_string()?;
    c.expect(&format!(", \"{key}\": "))?;
    let args = c.json_object()?;
    c.expect("}")?;
    Ok((name, args))
}

/// ReAct: `Thought: <text>\nAction: <name>\nAction Input: <JSON object>`.
pub mod react {
    use super::*;

    const ACTION: &str = "\nAction: ";

    /// `Action: <name>\nAction Input: <JSON object>` at the cursor; the
    /// name runs to the end of its line.
    fn call(c: &mut Cursor<'_>) -> Result<(String, Value), String> {
        c.expect("Action: ")?;
        let name = c.until("\n")?;
        if name.is_empty() {
            return Err("empty tool name".into());
        }
        c.expect("Action Input: ")?;
        Ok((name.to_string(), c.json_object()?))
    }

    /// Entry `parallel`: the thought (any text not containing
    /// `"\nAction: "`), then one or more calls separated by `"\n"`.
    pub fn parse_parallel(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        c.expect("Thought: ")?;
        let thought_len = c
            .rest
            .find(ACTION)
            .ok_or("no line beginning with \"Action: \" after the thought")?;
        c.rest = &c.rest[thought_len + 1..];
        let mut calls = vec![call(&mut c)?];
        while c.eat("\n") {
            calls.push(call(&mut c)?);
        }
        c.end()?;
        Ok(calls)
    }

    /// Entry `start`: like [`parse_parallel`] with exactly one call.
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let calls = parse_parallel(text)?;
        if calls.len() != 1 {
            return Err(format!("{} calls where one is expected", calls.len()));
        }
        Ok(calls)
    }

    /// The final-answer marker of LangChain's ReAct prompt.
    const FINAL: &str = "Final Answer:";

    /// Entry `auto`: the thought, then one action (as [`parse_start`]) or
    /// a line `Final Answer: <text>` and no action. As LangChain's
    /// `ReActSingleInputOutputParser.parse`
    /// (libs/langchain/langchain/agents/output_parsers/react_single_input.py)
    /// an output holding both a parseable action and `Final Answer:` is
    /// refused.
    pub fn parse_auto(text: &str) -> Result<Calls, String> {
        let body = strip_space(text);
        if body.contains(ACTION) {
            let calls = parse_start(text)?;
            if body.contains(FINAL) {
                return Err(
                    "both an action and \"Final Answer:\" (LangChain's ReAct parser refuses it)"
                        .into(),
                );
            }
            return Ok(calls);
        }
        let mut c = Cursor::new(text);
        c.expect("Thought: ")?;
        if !c.rest.contains(&format!("\n{FINAL} ")) {
            return Err("neither an action nor a \"Final Answer: \" line".into());
        }
        Ok(Vec::new())
    }
}

/// Hermes: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`.
pub mod hermes {
    use super::*;

    const OPEN: &str = "<tool_call>";

    fn call(c: &mut Cursor<'_>) -> Result<(String, Value), String> {
        c.expect(OPEN)?;
        c.expect("\n")?;
        let call = name_args_object(c, "arguments")?;
        c.expect("\n</tool_call>")?;
        Ok(call)
    }

    fn calls(c: &mut Cursor<'_>) -> Result<Calls, String> {
        let mut out = vec![call(c)?];
        while c.eat("\n") {
            out.push(call(c)?);
        }
        c.end()?;
        Ok(out)
    }

    /// Entry `call`: exactly one call.
    pub fn parse_call(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        let one = call(&mut c)?;
        c.end()?;
        Ok(vec![one])
    }

    /// Entry `calls`: one or more calls separated by `"\n"`.
    pub fn parse_calls(text: &str) -> Result<Calls, String> {
        calls(&mut Cursor::new(text))
    }

    /// Entry `start`: free text not containing `<tool_call>`, then the
    /// calls as in [`parse_calls`].
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        let i = c.rest.find(OPEN).ok_or("no <tool_call>")?;
        c.rest = &c.rest[i..];
        calls(&mut c)
    }
}

/// Llama 3.1/3.2 JSON tool calling: `{"name": ..., "parameters": {...}}`.
pub mod llama3 {
    use super::*;

    /// Entry `start`: one call object.
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        let one = name_args_object(&mut c, "parameters")?;
        c.end()?;
        Ok(vec![one])
    }
}

/// After `[`: one or more call objects separated by `", "`, then `]`.
fn call_array_rest(c: &mut Cursor<'_>) -> Result<Calls, String> {
    let mut out = vec![name_args_object(c, "arguments")?];
    while c.eat(", ") {
        out.push(name_args_object(c, "arguments")?);
    }
    c.expect("]")?;
    Ok(out)
}

/// Mistral v3: `[TOOL_CALLS][` call (`, ` call)* `]`.
pub mod mistral {
    use super::*;

    /// Entry `start`.
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        c.expect("[TOOL_CALLS][")?;
        let out = call_array_rest(&mut c)?;
        c.end()?;
        Ok(out)
    }
}

/// Bare JSON: one call object, or an array of them.
pub mod json {
    use super::*;

    /// Entry `call`: exactly one `{"name": ..., "arguments": {...}}`.
    pub fn parse_call(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        let one = name_args_object(&mut c, "arguments")?;
        c.end()?;
        Ok(vec![one])
    }

    /// Entry `auto`: the calls as in [`parse_start`] when the output is
    /// that, else plain text (no call): text that starts like a call and
    /// is not one (a SentencePiece vocabulary's `▁{` decodes to `{`) is
    /// text, as a serving parser that falls back to content reads it.
    pub fn parse_auto(text: &str) -> Result<Calls, String> {
        Ok(parse_start(text).unwrap_or_default())
    }

    /// Entry `auto-one`: one call object as in [`parse_call`], else plain
    /// text, read as [`parse_auto`] reads it.
    pub fn parse_auto_one(text: &str) -> Result<Calls, String> {
        Ok(parse_call(text).unwrap_or_default())
    }

    /// Entry `start`: one call object, or `[` one or more separated by
    /// `", "` `]`.
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        if !c.eat("[") {
            let one = name_args_object(&mut c, "arguments")?;
            c.end()?;
            return Ok(vec![one]);
        }
        let out = call_array_rest(&mut c)?;
        c.end()?;
        Ok(out)
    }
}

/// ToolkenGPT style: free text where each `<T>` starts a call
/// `name(v1, v2, ...)=` with positional JSON values.
pub mod toolken {
    use super::*;

    /// The trigger.
    pub const TRIGGER: &str = "<T>";

    /// One call right after a trigger: the name up to `(`, JSON values
    /// separated by `,` and an optional single space, then `)=`.
    fn call(c: &mut Cursor<'_>) -> Result<(String, Value), String> {
        let name = c.until("(")?;
        if name.is_empty()
            || name
                .chars()
                .any(|ch| ch.is_whitespace() || "()=,<>\"".contains(ch))
        {
            return Err(format!("bad tool name {name:?}"));
        }
        let mut values = Vec::new();
        if !c.eat(")=") {
            loop {
                values.push(c.json()?);
                if c.eat(")=") {
                    break;
                }
                c.expect(",")?;
                c.eat(" ");
            }
        }
        Ok((name.to_string(), Value::Array(values)))
    }

    /// Entry `start`: scans for every `<T>`; each must begin a well-formed
    /// call. The text around the calls is free (possibly empty).
    pub fn parse_start(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        let mut out = Vec::new();
        while let Some(i) = c.rest.find(TRIGGER) {
            c.rest = &c.rest[i + TRIGGER.len()..];
            out.push(call(&mut c).map_err(|e| format!("call #{}: {e}", out.len() + 1))?);
        }
        Ok(out)
    }

    /// Entry `required`: as [`parse_start`] with at least one call.
    pub fn parse_required(text: &str) -> Result<Calls, String> {
        let calls = parse_start(text)?;
        if calls.is_empty() {
            return Err("no call".into());
        }
        Ok(calls)
    }

    /// Entry `one`: as [`parse_start`] with exactly one call.
    pub fn parse_one(text: &str) -> Result<Calls, String> {
        let calls = parse_start(text)?;
        if calls.len() != 1 {
            return Err(format!("{} calls where one is expected", calls.len()));
        }
        Ok(calls)
    }

    /// Entry `auto-one`: as [`parse_start`] with at most one call.
    pub fn parse_auto_one(text: &str) -> Result<Calls, String> {
        let calls = parse_start(text)?;
        if calls.len() > 1 {
            return Err(format!(
                "{} calls where at most one is allowed",
                calls.len()
            ));
        }
        Ok(calls)
    }

    /// Entry `call`: exactly `<T>name(values)=`.
    pub fn parse_call(text: &str) -> Result<Calls, String> {
        let mut c = Cursor::new(text);
        c.expect(TRIGGER)?;
        let one = call(&mut c)?;
        c.end()?;
        Ok(vec![one])
    }
}

/// A format parser: text to calls.
pub type Parser = fn(&str) -> Result<Calls, String>;

/// The parser of `format`'s entry `entry`, or `None` for a pair with none.
pub fn parser_for(format: &str, entry: &str) -> Option<Parser> {
    Some(match (format, entry) {
        ("react", "start") => react::parse_start,
        ("react", "parallel") => react::parse_parallel,
        ("react", "auto") => react::parse_auto,
        ("react", "auto-one") => react::parse_auto,
        ("react", "required") => react::parse_parallel,
        ("react", "one") => react::parse_start,
        ("hermes", "start") => hermes::parse_start,
        ("hermes", "calls") => hermes::parse_calls,
        ("hermes", "call") => hermes::parse_call,
        ("llama3", "start") => llama3::parse_start,
        ("mistral", "start") => mistral::parse_start,
        ("json", "start") => json::parse_start,
        ("json", "call") => json::parse_call,
        ("json", "auto") => json::parse_auto,
        ("json", "auto-one") => json::parse_auto_one,
        ("json", "required") => json::parse_start,
        ("json", "one") => json::parse_call,
        ("toolken", "start") => toolken::parse_start,
        ("toolken", "call") => toolken::parse_call,
        ("toolken", "auto") => toolken::parse_start,
        ("toolken", "auto-one") => toolken::parse_auto_one,
        ("toolken", "required") => toolken::parse_required,
        ("toolken", "one") => toolken::parse_one,
        _ => return None,
    })
}

/// A parser of one (format, entry) that may read the tool list (the
/// XML-style formats type raw values by the tool's schema, as their
/// upstream parsers do).
#[derive(Clone, Copy)]
pub enum ToolsParser {
    /// A parser of the text alone ([`parser_for`]).
    Plain(Parser),
    /// A model format's entry ([`models::entry_parser`]).
    Entry(models::EntryParser),
}

impl ToolsParser {
    /// Parses a whole output; `tools` in OpenAI form (bare or wrapped).
    pub fn parse(&self, text: &str, tools: &[Value]) -> Result<Calls, String> {
        match self {
            ToolsParser::Plain(p) => p(text),
            ToolsParser::Entry(e) => e.parse(text, tools),
        }
    }
}

/// The parser of `format`'s entry `entry`: the old entries of the first
/// six formats ([`parser_for`]), then every model format's `auto`,
/// `required`, `one` and `think-*` entries ([`models::entry_parser`]).
pub fn parser_with_tools(format: &str, entry: &str) -> Option<ToolsParser> {
    parser_for(format, entry)
        .map(ToolsParser::Plain)
        .or_else(|| models::entry_parser(format, entry).map(ToolsParser::Entry))
}

/// The parameter names of a tool's `parameters` schema in positional
/// order: the required ones first, then the optional ones, each group in
/// the order of `properties`.
pub fn positional_order(parameters: &Value) -> Vec<String> {
    let empty = serde_json::Map::new();
    let props = parameters
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = parameters
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (req, opt): (Vec<&String>, Vec<&String>) =
        props.keys().partition(|k| required.contains(&k.as_str()));
    req.into_iter().chain(opt).cloned().collect()
}

/// Maps positional values onto the parameters (see [`positional_order`])
/// as a JSON object; more values than parameters is an error (missing
/// required ones are for the schema validator to find).
pub fn positional_to_object(parameters: &Value, values: &[Value]) -> Result<Value, String> {
    let order = positional_order(parameters);
    if values.len() > order.len() {
        return Err(format!(
            "{} positional values for {} parameters",
            values.len(),
            order.len()
        ));
    }
    Ok(Value::Object(
        order.into_iter().zip(values.iter().cloned()).collect(),
    ))
}
