//! Call formats: the text around the tool name and its arguments.
//!
//! `react` is ToolLLM/ToolBench's
//! `Thought: <free text>\nAction: <tool name>\nAction Input: <JSON arguments>`
//! followed by end of sequence. The thought may span lines; it ends at the
//! first line that begins with `Action: `, so no line of the thought may
//! begin with it. After `Action: ` the tool names form a trie, and each name
//! continues into that tool's own argument machine.
//!
//! `hermes` is the JSON-in-tags form of Hermes, Qwen2.5 and SmolLM2's chat
//! templates: `<tool_call>\n{"name": "<tool name>", "arguments": <JSON
//! arguments>}\n</tool_call>`, the name spelled as a JSON string.
//!
//! With `parallel`, one or more calls: in `react` further
//! `\nAction: ...\nAction Input: ...` pairs follow the first, in `hermes`
//! further `\n<tool_call>...</tool_call>` blocks.

use crate::error::{Error, ErrorKind};
use crate::expr::Expr;

/// The call formats this compiler knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    React,
    Hermes,
}

impl Format {
    pub fn parse(name: &str) -> Result<Format, Error> {
        match name {
            "react" => Ok(Format::React),
            "hermes" => Ok(Format::Hermes),
            other => Err(Error::new(
                ErrorKind::Usage,
                format!("unknown format {other:?} (known: react, hermes)"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::React => "react",
            Format::Hermes => "hermes",
        }
    }

    /// The whole grammar, given each tool's name and argument machine;
    /// with `parallel`, one or more calls instead of exactly one.
    pub fn lower(self, tools: Vec<(String, Expr)>, parallel: bool) -> Result<Expr, Error> {
        match self {
            Format::React => react(tools, parallel),
            Format::Hermes => Ok(hermes(tools, parallel)),
        }
    }
}

const ACTION: &str = "Action: ";

/// Any Unicode scalar value but `\n`.
fn line_char() -> Expr {
    Expr::CharClass(vec![('\0', '\t'), ('\u{b}', '\u{10FFFF}')])
}

/// A line (without its `\n`) that does not begin with `Action: `: a proper
/// prefix of it, or such a prefix followed by a character that differs
/// from the next one of `Action: `, then anything.
fn line_not_action() -> Expr {
    let p = ACTION.as_bytes();
    let mut alts = Vec::new();
    for i in 0..p.len() {
        let differs = Expr::CharClass(
            [('\0', '\t'), ('\u{b}', '\u{10FFFF}')]
                .iter()
                .flat_map(|&(lo, hi)| split_out(lo, hi, p[i] as char))
                .collect(),
        );
        alts.push(Expr::seq([
            Expr::Bytes(p[..i].to_vec()),
            Expr::opt(Expr::seq([differs, Expr::star(line_char())])),
        ]));
    }
    Expr::alt(alts)
}

/// The range `lo..=hi` without `c`.
fn split_out(lo: char, hi: char, c: char) -> Vec<(char, char)> {
    if c < lo || c > hi {
        return vec![(lo, hi)];
    }
    let mut out = Vec::new();
    if c > lo {
        out.push((lo, char::from_u32(c as u32 - 1).unwrap_or(lo)));
    }
    if c < hi {
        out.push((char::from_u32(c as u32 + 1).unwrap_or(hi), hi));
    }
    out
}

/// `first` then any number of `sep first`: one or more calls.
fn one_or_more(call: Expr, sep: &str, parallel: bool) -> Expr {
    if parallel {
        Expr::seq([call.clone(), Expr::star(Expr::seq([Expr::lit(sep), call]))])
    } else {
        call
    }
}

/// A trie over `keys`, each continuing into `wrap(args)`; tools that share
/// an argument machine share one wrapped copy of it.
fn call_trie(tools: Vec<(Vec<u8>, Expr)>, wrap: impl Fn(Expr) -> Expr) -> Expr {
    let mut wrapped: std::collections::HashMap<*const Expr, Expr> =
        std::collections::HashMap::new();
    Expr::Trie(
        tools
            .into_iter()
            .map(|(key, args)| {
                let branch = match &args {
                    Expr::Shared(rc) => wrapped
                        .entry(std::rc::Rc::as_ptr(rc))
                        .or_insert_with(|| Expr::shared(wrap(args.clone())))
                        .clone(),
                    _ => wrap(args),
                };
                (key, branch)
            })
            .collect(),
    )
}

fn hermes(tools: Vec<(String, Expr)>, parallel: bool) -> Expr {
    let keys = tools
        .into_iter()
        .map(|(name, args)| {
            let quoted = serde_json::to_string(&name).unwrap_or_default();
            (quoted.into_bytes(), args)
        })
        .collect();
    let trie = call_trie(keys, |args| {
        Expr::seq([
            Expr::lit(", \"arguments\": "),
            args,
            Expr::lit("}\n</tool_call>"),
        ])
    });
    let call = Expr::seq([Expr::lit("<tool_call>\n{\"name\": "), trie]);
    one_or_more(call, "\n", parallel)
}

fn react(tools: Vec<(String, Expr)>, parallel: bool) -> Result<Expr, Error> {
    for (name, _) in &tools {
        if name.contains('\n') {
            return Err(Error::new(
                ErrorKind::Spec,
                format!("tool name {name:?} contains a newline, which ends the Action line"),
            ));
        }
    }
    let thought = Expr::seq([
        Expr::lit("Thought: "),
        Expr::star(line_char()),
        Expr::star(Expr::seq([Expr::lit("\n"), line_not_action()])),
    ]);
    let keys = tools
        .into_iter()
        .map(|(n, a)| (n.into_bytes(), a))
        .collect();
    // One "Action Input" line per distinct (shared) argument machine.
    let trie = call_trie(keys, |args| {
        Expr::seq([Expr::lit("\nAction Input: "), args])
    });
    let calls = one_or_more(Expr::seq([Expr::lit("Action: "), trie]), "\n", parallel);
    Ok(Expr::seq([thought, Expr::lit("\n"), calls]))
}
