//! Reading a tool file's text: one JSON value, a sequence of JSON values
//! (JSON Lines, read as an array of the values), or, for signature lists,
//! plain text lines. And the reverse: the line and column of a JSON pointer
//! in any of these layouts.

use serde::de::IgnoredAny;
use serde_json::Value;

use super::{Dialect, ToolSet};
use crate::error::{Error, ErrorKind};
use crate::spec::locate;

/// How the file's text is laid out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Layout {
    /// One JSON value.
    Json,
    /// Several JSON values (JSON Lines): `root` is the array of them and a
    /// pointer's first token is the value's index.
    Seq,
    /// Not JSON: text lines (a signature list); `root` is the array of the
    /// non-empty lines, a pointer `/k` the k-th of them.
    Lines,
}

/// A tool file read.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub root: Value,
    pub layout: Layout,
}

/// Reads the file's text. JSON first; several values make a sequence; a
/// text that does not start like a JSON array or object may be a signature
/// list (for `Auto` and `Signatures`).
pub(super) fn read(set: &ToolSet, dialect: Dialect) -> Result<Source, Error> {
    let text = set.text.as_str();
    let file = set.file.as_str();
    let mut values = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        match stream.next() {
            None => break,
            Some(Ok(v)) => values.push(v),
            Some(Err(e)) => {
                let first = text.trim_start().chars().next();
                let json_like = matches!(first, Some('{' | '['));
                if values.is_empty()
                    && !json_like
                    && matches!(dialect, Dialect::Auto | Dialect::Signatures)
                {
                    let lines = text_lines(text).filter(|lines| {
                        dialect == Dialect::Signatures
                            || lines
                                .iter()
                                .all(|l| l.as_str().is_some_and(super::signatures::looks_like))
                    });
                    if let Some(lines) = lines {
                        return Ok(Source {
                            root: Value::Array(lines),
                            layout: Layout::Lines,
                        });
                    }
                }
                let at = if values.is_empty() {
                    String::new()
                } else {
                    format!(" (at /{})", values.len())
                };
                return Err(Error::new(
                    ErrorKind::Json,
                    format!("{file}:{}:{}{at}: invalid JSON: {e}", e.line(), e.column()),
                ));
            }
        }
    }
    match values.len() {
        0 => {
            let e = serde_json::from_str::<Value>(text).expect_err("no JSON value");
            Err(Error::new(
                ErrorKind::Json,
                format!("{file}:{}:{}: invalid JSON: {e}", e.line(), e.column()),
            ))
        }
        1 => Ok(Source {
            root: values.pop().expect("one value"),
            layout: Layout::Json,
        }),
        _ => Ok(Source {
            root: Value::Array(values),
            layout: Layout::Seq,
        }),
    }
}

/// The non-empty, non-comment (`#`) lines of a text, trimmed, as JSON strings.
fn text_lines(text: &str) -> Option<Vec<Value>> {
    let lines: Vec<Value> = line_starts(text)
        .into_iter()
        .map(|(_, l)| Value::String(l.trim().to_string()))
        .collect();
    (!lines.is_empty()).then_some(lines)
}

/// (1-based line number, line) of the non-empty, non-comment lines.
fn line_starts(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .map(|(i, l)| (i + 1, l))
        .collect()
}

/// 1-based (line, column) of the value at `pointer`, or of the nearest
/// ancestor that exists in the text, in whichever layout the text has.
pub(super) fn position(text: &str, pointer: &str) -> Option<(usize, usize)> {
    let layout = layout_of(text);
    let mut p = pointer;
    loop {
        if let Some(pos) = exact(text, &layout, p) {
            return Some(pos);
        }
        if p.is_empty() {
            return None;
        }
        p = p.rsplit_once('/').map_or("", |(head, _)| head);
    }
}

/// The layout with what positions need: the start offsets of a sequence's
/// values.
enum Found {
    Json,
    Seq(Vec<usize>),
    Lines,
}

fn layout_of(text: &str) -> Found {
    let first = text.trim_start().chars().next();
    match first {
        Some('{' | '[') => match value_starts(text) {
            Some(starts) if starts.len() > 1 => Found::Seq(starts),
            _ => Found::Json,
        },
        None => Found::Json,
        Some(_) => {
            if serde_json::from_str::<IgnoredAny>(text).is_ok() {
                Found::Json
            } else {
                Found::Lines
            }
        }
    }
}

/// Byte offsets where the text's top-level JSON values start, or `None` if
/// the text is not a sequence of JSON values.
fn value_starts(text: &str) -> Option<Vec<usize>> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<IgnoredAny>();
    let mut starts = Vec::new();
    let mut prev_end = 0;
    while let Some(r) = stream.next() {
        r.ok()?;
        let end = stream.byte_offset();
        let skipped = text[prev_end..end].len() - text[prev_end..end].trim_start().len();
        starts.push(prev_end + skipped);
        prev_end = end;
    }
    Some(starts)
}

fn exact(text: &str, layout: &Found, pointer: &str) -> Option<(usize, usize)> {
    match layout {
        Found::Json => locate::position(text, pointer),
        Found::Seq(starts) => {
            if pointer.is_empty() {
                return Some(line_col(text, starts[0]));
            }
            let rest = pointer.strip_prefix('/')?;
            let (first, rest) = match rest.split_once('/') {
                Some((f, r)) => (f, format!("/{r}")),
                None => (rest, String::new()),
            };
            let k: usize = first.parse().ok()?;
            let start = *starts.get(k)?;
            let end = starts.get(k + 1).copied().unwrap_or(text.len());
            let (l, c) = locate::position(&text[start..end], &rest)?;
            let (bl, bc) = line_col(text, start);
            Some(if l == 1 {
                (bl, bc + c - 1)
            } else {
                (bl + l - 1, c)
            })
        }
        Found::Lines => {
            let lines = line_starts(text);
            if pointer.is_empty() {
                return lines.first().map(|&(n, l)| (n, indent(l)));
            }
            let k: usize = pointer.strip_prefix('/')?.parse().ok()?;
            lines.get(k).map(|&(n, l)| (n, indent(l)))
        }
    }
}

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count() + 1
}

/// 1-based (line, column in characters) of byte offset `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}
