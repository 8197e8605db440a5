//! Recognizing a tool file's dialect from its shape.
//!
//! Each list item is classified by the keys only one dialect uses
//! (`api_list`, `inputSchema`, `input_schema`, a `function` array, ...);
//! a bare `{name, parameters}` is OpenAI unless its schema uses a BFCL type
//! name (`dict`, `float`, `tuple`, `any`, Java/JavaScript types). All the
//! decisive items of a list must agree.

use serde_json::Value;

use super::source::{Layout, Source};
use super::{bfcl, signatures, spec_err, Dialect, ToolSet};
use crate::error::Error;

pub(super) fn detect(set: &ToolSet, src: &Source) -> Result<Dialect, Error> {
    if src.layout == Layout::Lines {
        return Ok(Dialect::Signatures);
    }
    match &src.root {
        Value::Object(o) => {
            if o.contains_key("openapi")
                || o.contains_key("swagger")
                || (o.contains_key("paths") && o.contains_key("info"))
            {
                return Ok(Dialect::OpenApi);
            }
            if o.contains_key("jsonrpc") || o.get("result").is_some_and(Value::is_object) {
                return Ok(Dialect::Mcp);
            }
            match o.get("tools") {
                Some(Value::Array(items)) => return list(set, items, "/tools"),
                Some(Value::Object(_)) => return Ok(Dialect::Mcp),
                _ => {}
            }
            if signatures::is_map(o) {
                return Ok(Dialect::Signatures);
            }
            Ok(item(&src.root).map_or(Dialect::OpenAi, |(d, _)| d))
        }
        Value::Array(items) => list(set, items, ""),
        _ => Ok(Dialect::OpenAi),
    }
}

/// The dialect of a list's items.
fn list(set: &ToolSet, items: &[Value], base: &str) -> Result<Dialect, Error> {
    let mut strong: Option<(Dialect, usize)> = None;
    for (i, v) in items.iter().enumerate() {
        let Some((d, decisive)) = item(v) else {
            continue;
        };
        if !decisive {
            continue;
        }
        match strong {
            None => strong = Some((d, i)),
            Some((s, j)) if s != d => {
                return Err(spec_err(
                    set,
                    base,
                    &format!(
                        "the list mixes tool dialects: #{j} is {s}, #{i} is {d} (choose one with --dialect)"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(strong.map_or(Dialect::OpenAi, |(d, _)| d))
}

/// The dialect one item is written in, and whether that is decisive.
fn item(v: &Value) -> Option<(Dialect, bool)> {
    match v {
        Value::Object(o) => {
            let has = |k: &str| o.contains_key(k);
            if has("api_list") || has("api_name") {
                return Some((Dialect::ToolBench, true));
            }
            match o.get("function") {
                Some(Value::Array(_)) => return Some((Dialect::Bfcl, true)),
                Some(Value::Object(_)) => return Some((Dialect::OpenAi, true)),
                _ => {}
            }
            if has("involved_classes") || has("question") {
                return Some((Dialect::Bfcl, true));
            }
            if has("inputSchema")
                || has("server_name")
                || o.get("tools").is_some_and(Value::is_object)
            {
                return Some((Dialect::Mcp, true));
            }
            if has("input_schema") {
                return Some((Dialect::Anthropic, true));
            }
            if let Some(p) = o.get("parameters") {
                if bfcl::uses_bfcl_types(p) {
                    return Some((Dialect::Bfcl, true));
                }
                return Some((Dialect::OpenAi, false));
            }
            has("name").then_some((Dialect::OpenAi, false))
        }
        Value::String(s) if signatures::looks_like(s) => Some((Dialect::Signatures, true)),
        Value::Array(pair)
            if pair.len() == 2
                && pair.iter().all(Value::is_string)
                && pair
                    .iter()
                    .any(|s| s.as_str().is_some_and(signatures::looks_like)) =>
        {
            Some((Dialect::Signatures, true))
        }
        _ => None,
    }
}
