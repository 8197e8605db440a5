//! Call formats: the text around the tool name and its arguments.
//!
//! `react` is ToolLLM/ToolBench's
//! `Thought: <free text>\nAction: <tool name>\nAction Input: <JSON arguments>`
//! followed by end of sequence. The thought may span lines; it ends at the
//! first line that begins with `Action: `, so no line of the thought may
//! begin with it. After `Action: ` the tool names form a trie, and each name
//! continues into that tool's own argument machine.

use crate::error::{Error, ErrorKind};
use crate::expr::Expr;

/// The call formats this compiler knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    React,
}

impl Format {
    pub fn parse(name: &str) -> Result<Format, Error> {
        match name {
            "react" => Ok(Format::React),
            other => Err(Error::new(
                ErrorKind::Usage,
                format!("unknown format {other:?} (known: react)"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::React => "react",
        }
    }

    /// The whole grammar, given each tool's name and argument machine.
    pub fn lower(self, tools: Vec<(String, Expr)>) -> Result<Expr, Error> {
        match self {
            Format::React => react(tools),
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

fn react(tools: Vec<(String, Expr)>) -> Result<Expr, Error> {
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
    // One "Action Input" line per distinct (shared) argument machine.
    let mut lines: std::collections::HashMap<*const Expr, Expr> = std::collections::HashMap::new();
    let calls = Expr::Trie(
        tools
            .into_iter()
            .map(|(name, args)| {
                let line = |args: Expr| Expr::seq([Expr::lit("\nAction Input: "), args]);
                let branch = match &args {
                    Expr::Shared(rc) => lines
                        .entry(std::rc::Rc::as_ptr(rc))
                        .or_insert_with(|| Expr::shared(line(args.clone())))
                        .clone(),
                    _ => line(args),
                };
                (name.into_bytes(), branch)
            })
            .collect(),
    );
    Ok(Expr::seq([thought, Expr::lit("\nAction: "), calls]))
}
