//! Signature lists: tools written as `name(a, b)` (optionally `: what it
//! does`), as ToolkenGPT and the ToolDec papers write them. Accepted:
//!
//! - a text file, one signature per line (`#` lines are comments);
//! - a JSON array of signatures, or of `[name, signature]` /
//!   `[signature, description]` pairs;
//! - a JSON object of signatures: `{"P17": "location(name): gets ..."}`
//!   (KAMEL's `api_desc.json`; the key is the record's id),
//!   `{"location(name): gets ...": 4}` (KAMEL's `name_func_dict.json`), or
//!   `{"<add>": 0}` (FuncQA's `func_dict.json`).
//!
//! Parameters become properties in order, required unless they have a
//! default (`b=2`). Their type is the annotation's (`a: int`; `int`,
//! `float`, `str`, `bool`, `list`, `dict`, `any` and their usual synonyms),
//! else `string`: KAMEL's arguments are entity names and titles.
//!
//! A bare `<name>` (no parameter list) is a ToolkenGPT FuncQA toolken: the
//! data calls these math operations with 1 to 5 numbers
//! (`<add>(147, 354)`, `<sqrt>(16)`, `<add>(1, 2, 3, 4, 5)`), so such a tool
//! takes numbers `x1` to `x5`, `x1` required. A bare name without brackets
//! says nothing about the arguments and is an error.
//!
//! Keyed objects are several records (KAMEL maps 234 relations onto 229
//! signatures): a signature repeated identically is kept once.

use serde_json::{json, Map, Value};

use super::source::{Layout, Source};
use super::{esc, spec_err, Found, Read, ToolSet};
use crate::error::Error;

/// How many numbers a bare `<name>` toolken takes at most.
const BARE_MAX_ARGS: usize = 5;

/// A parsed signature.
#[derive(Debug, Clone, PartialEq)]
struct Sig {
    name: String,
    /// `None` for a bare `<name>`.
    params: Option<Vec<Param>>,
    description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct Param {
    name: String,
    schema: Value,
    optional: bool,
}

/// Whether `s` is shaped like a signature: a bracketed toolken `<name>`,
/// or a name followed by `(`. (Whether it is a good one is for the reader
/// to say, with a precise error.)
pub(super) fn looks_like(s: &str) -> bool {
    let s = s.trim();
    if let Some(r) = s.strip_prefix('<') {
        return r
            .find('>')
            .is_some_and(|i| i > 0 && r[..i].chars().all(name_char));
    }
    match s.find('(') {
        Some(i) => {
            let name = s[..i].trim_end();
            !name.is_empty() && name.chars().all(name_char)
        }
        None => false,
    }
}

/// Whether an object is a map of signatures (keys or string values).
pub(super) fn is_map(o: &Map<String, Value>) -> bool {
    !o.is_empty()
        && o.iter().all(|(k, v)| match v {
            Value::String(s) => looks_like(s) || looks_like(k),
            Value::Number(_) => looks_like(k),
            _ => false,
        })
}

pub(super) fn read(set: &ToolSet, src: &Source) -> Result<Read, Error> {
    let mut read = Read::default();
    match &src.root {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("/{i}");
                let (sig, name) = match item {
                    Value::String(s) => (sig_at(set, s, &at)?, None),
                    Value::Array(pair) if pair.len() == 2 => {
                        let (Some(a), Some(b)) = (pair[0].as_str(), pair[1].as_str()) else {
                            return Err(spec_err(
                                set,
                                &at,
                                "a signature pair must hold two strings",
                            ));
                        };
                        if !a.contains('(') && looks_like(b) {
                            let name = a.trim();
                            let name = name
                                .strip_prefix('<')
                                .and_then(|n| n.strip_suffix('>'))
                                .unwrap_or(name);
                            (sig_at(set, b, &format!("{at}/1"))?, Some(name.to_string()))
                        } else if looks_like(a) {
                            let mut sig = sig_at(set, a, &format!("{at}/0"))?;
                            if sig.description.is_none() && !b.trim().is_empty() {
                                sig.description = Some(b.trim().to_string());
                            }
                            (sig, None)
                        } else {
                            return Err(spec_err(
                                set,
                                &at,
                                "expected [name, signature] or [signature, description]",
                            ));
                        }
                    }
                    _ => {
                        let what = if src.layout == Layout::Lines {
                            "line"
                        } else {
                            "item"
                        };
                        return Err(spec_err(
                            set,
                            &at,
                            &format!(
                                "a signature list {what} must be a string like \"name(a, b)\""
                            ),
                        ));
                    }
                };
                read.tools.push(found(sig, name, &at));
            }
        }
        Value::Object(o) => {
            read.aggregate = true;
            for (k, v) in o {
                let at = format!("/{}", esc(k));
                let sig = match v {
                    Value::String(s) if looks_like(s) => sig_at(set, s, &at)?,
                    Value::String(s) => {
                        let mut sig = sig_at(set, k, &at)?;
                        if sig.description.is_none() && !s.trim().is_empty() {
                            sig.description = Some(s.trim().to_string());
                        }
                        sig
                    }
                    Value::Number(_) => sig_at(set, k, &at)?,
                    _ => {
                        return Err(spec_err(
                            set,
                            &at,
                            "a signature map's values must be signatures (strings) or indices (numbers)",
                        ))
                    }
                };
                read.tools.push(found(sig, None, &at));
            }
        }
        _ => return Err(spec_err(
            set,
            "",
            "expected a signature list (an array of \"name(a, b)\" strings, or an object of them)",
        )),
    }
    Ok(read)
}

fn sig_at(set: &ToolSet, s: &str, at: &str) -> Result<Sig, Error> {
    let sig = parse_sig(s).map_err(|m| spec_err(set, at, &format!("{s:?}: {m}")))?;
    if sig.params.is_none() && !s.trim_start().starts_with('<') {
        return Err(spec_err(
            set,
            at,
            &format!(
                "{s:?} has no parameter list: write name(a, b) (a bare <name> is a FuncQA toolken taking numbers)"
            ),
        ));
    }
    Ok(sig)
}

fn found(sig: Sig, name: Option<String>, at: &str) -> Found {
    let (props, required): (Map<String, Value>, Vec<Value>) = match &sig.params {
        Some(params) => (
            params
                .iter()
                .map(|p| (p.name.clone(), p.schema.clone()))
                .collect(),
            params
                .iter()
                .filter(|p| !p.optional)
                .map(|p| Value::String(p.name.clone()))
                .collect(),
        ),
        None => (
            (1..=BARE_MAX_ARGS)
                .map(|k| (format!("x{k}"), json!({"type": "number"})))
                .collect(),
            vec![json!("x1")],
        ),
    };
    let mut parameters = Map::new();
    parameters.insert("type".into(), "object".into());
    parameters.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        parameters.insert("required".into(), Value::Array(required));
    }
    Found {
        name: name.unwrap_or(sig.name),
        name_at: at.to_string(),
        entry: at.to_string(),
        description: sig.description,
        parameters: Value::Object(parameters),
        pointer: at.to_string(),
    }
}

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '.' | '-' | '$')
}

/// Parses `name(params) [-> type] [: description]` or `<name> [: description]`.
fn parse_sig(s: &str) -> Result<Sig, String> {
    let s = s.trim();
    let (name, rest) = if let Some(r) = s.strip_prefix('<') {
        let end = r.find('>').ok_or("unclosed <")?;
        (&r[..end], &r[end + 1..])
    } else {
        let end = s.find(|c: char| !name_char(c)).unwrap_or(s.len());
        (&s[..end], &s[end..])
    };
    if name.is_empty() {
        return Err("no tool name".into());
    }
    if !name.chars().all(name_char) {
        return Err(format!("{name:?} is not a tool name"));
    }
    let mut rest = rest.trim_start();
    let mut params = None;
    if let Some(r) = rest.strip_prefix('(') {
        let close = matching_close(r).ok_or("unclosed parenthesis")?;
        params = Some(parse_params(&r[..close])?);
        rest = r[close + 1..].trim_start();
        if let Some(r) = rest.strip_prefix("->") {
            // A return annotation: up to the description.
            rest = r.find(':').map_or("", |i| &r[i..]);
        }
    }
    let description = if rest.is_empty() {
        None
    } else if let Some(d) = rest.strip_prefix(':') {
        let d = d.trim();
        (!d.is_empty()).then(|| d.to_string())
    } else {
        return Err(format!("unexpected {rest:?} after the signature"));
    };
    Ok(Sig {
        name: name.to_string(),
        params,
        description,
    })
}

/// The index of the `)` closing an already opened `(`.
fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => return Some(i),
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// Splits at top-level occurrences of `sep`.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_params(s: &str) -> Result<Vec<Param>, String> {
    let mut out: Vec<Param> = Vec::new();
    if s.trim().is_empty() {
        return Ok(out);
    }
    for piece in split_top(s, ',') {
        let piece = piece.trim();
        if piece.is_empty() {
            return Err("an empty parameter".into());
        }
        if piece == "*" || piece == "/" {
            continue;
        }
        if piece.starts_with('*') {
            return Err(format!("variadic parameter {piece:?} is not supported"));
        }
        let (decl, default) = match split_top(piece, '=').as_slice() {
            [d] => (*d, None),
            [d, v] => (*d, Some(v.trim())),
            _ => return Err(format!("cannot read the parameter {piece:?}")),
        };
        let (name, ty) = match decl.split_once(':') {
            Some((n, t)) => (n.trim(), Some(t.trim())),
            None => (decl.trim(), None),
        };
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("{name:?} is not a parameter name"));
        }
        if out.iter().any(|p| p.name == name) {
            return Err(format!("the parameter {name:?} is repeated"));
        }
        let schema = match ty {
            None => json!({"type": "string"}),
            Some(t) => match type_of(t) {
                Some(Some(t)) => json!({ "type": t }),
                Some(None) => json!({}),
                None => return Err(format!("unknown parameter type {t:?}")),
            },
        };
        out.push(Param {
            name: name.to_string(),
            schema,
            optional: default.is_some(),
        });
    }
    Ok(out)
}

/// The JSON Schema type of an annotation; `Some(None)` for any value.
fn type_of(t: &str) -> Option<Option<&'static str>> {
    let base = t.split(['[', '<']).next().unwrap_or(t).trim();
    Some(Some(match base.to_ascii_lowercase().as_str() {
        "int" | "integer" | "long" => "integer",
        "float" | "double" | "number" | "decimal" => "number",
        "str" | "string" | "text" | "char" => "string",
        "bool" | "boolean" => "boolean",
        "list" | "array" | "tuple" | "sequence" | "set" => "array",
        "dict" | "object" | "map" | "mapping" => "object",
        "any" => return Some(None),
        _ => return None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_parse() {
        let s = parse_sig("location(name): gets the country").unwrap();
        assert_eq!(s.name, "location");
        assert_eq!(s.description.as_deref(), Some("gets the country"));
        assert_eq!(s.params.as_ref().unwrap()[0].name, "name");
        let s = parse_sig("f(a: int, b: List[int] = [1, 2], c='x,y') -> int: does").unwrap();
        let p = s.params.unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].schema, json!({"type": "integer"}));
        assert_eq!(p[1].schema, json!({"type": "array"}));
        assert!(p[1].optional && p[2].optional && !p[0].optional);
        assert_eq!(s.description.as_deref(), Some("does"));
        let s = parse_sig("<add>").unwrap();
        assert_eq!((s.name.as_str(), s.params), ("add", None));
        assert!(parse_sig("f(a, a)").is_err());
        assert!(parse_sig("f(*args)").is_err());
        assert!(parse_sig("f(a: Foo)").is_err());
        assert!(parse_sig("f(a").is_err());
        assert!(parse_sig("hello world(a)").is_err());
        assert!(looks_like("year_of(title/name)"));
        assert!(!looks_like("P17"));
        assert!(!looks_like("gets the country (of x)"));
    }
}
