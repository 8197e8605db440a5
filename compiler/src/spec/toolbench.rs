//! ToolBench / StableToolBench (RapidAPI) `api_list` entries:
//! `{tool_name, api_name, api_description, required_parameters,
//! optional_parameters}`, each parameter `{name, type, description,
//! default}`. Accepted: one query `{query, api_list}`, an array of queries,
//! or an array of api entries.
//!
//! Names follow ToolBench's own conversion (`api_json_to_openai_json`, the
//! names in StableToolBench's answer files): the tool is
//! `change_name(standardize(api_name)) + "_for_" + standardize(tool_name)`,
//! its last 64 characters; a parameter is `change_name(standardize(name))`.
//! `standardize` turns every character other than `[A-Za-z0-9_^]` and
//! U+4E00–U+9FA5 into `_`, collapses runs of `_`, lowercases, trims `_`, and
//! prefixes `get_` to a leading digit; `change_name` prefixes `is_` to
//! `from`, `class`, `return`, `false`, `true`, `id` and `and`.
//!
//! Types (every spelling in the shared data): `STRING`/`string`, `ENUM` (no
//! values given), `DATE (YYYY-MM-DD)`, `TIME (24-hour HH:MM)`, `BINARY`,
//! `ARRAY` and `OBJECT` → `string` (RapidAPI sends them as query/form text,
//! "a comma-delimited list"; ToolBench maps them to string too); `NUMBER` →
//! `number` (ToolBench says integer, but 146 defaults in the data are
//! decimals such as latitudes); `BOOLEAN` → `boolean`. Any other type is an
//! error naming its pointer.
//!
//! Two parameters that standardize to one name (`array[]` twice) become
//! one, the later's schema in the earlier's place (ToolBench builds a
//! Python dict), required if either is. The schema is synthesized, so the
//! tool's pointer is its `api_list` entry.

use serde_json::{Map, Value};

use super::{spec_err, Found, Read, ToolSet};
use crate::error::Error;

pub(super) fn read(set: &ToolSet, root: &Value) -> Result<Read, Error> {
    let mut read = Read::default();
    match root {
        Value::Object(q) if q.contains_key("api_list") => query(set, q, "", &mut read)?,
        Value::Object(_) => read.tools.push(api(set, root, "")?),
        Value::Array(items) => {
            let queries = items.iter().filter(|v| v.get("api_list").is_some()).count();
            read.aggregate = queries > 1;
            for (i, item) in items.iter().enumerate() {
                let at = format!("/{i}");
                match item {
                    Value::Object(q) if q.contains_key("api_list") => {
                        query(set, q, &at, &mut read)?
                    }
                    Value::Object(q) if q.contains_key("query") || q.contains_key("query_id") => {
                        return Err(spec_err(
                            set,
                            &at,
                            "this ToolBench query has no \"api_list\" (an open-domain query names no tools)",
                        ))
                    }
                    _ => read.tools.push(api(set, item, &at)?),
                }
            }
        }
        _ => {
            return Err(spec_err(
                set,
                "",
                "expected ToolBench queries (with \"api_list\") or api entries",
            ))
        }
    }
    Ok(read)
}

fn query(set: &ToolSet, q: &Map<String, Value>, at: &str, read: &mut Read) -> Result<(), Error> {
    let Some(Value::Array(apis)) = q.get("api_list") else {
        return Err(spec_err(
            set,
            &format!("{at}/api_list"),
            "\"api_list\" must be an array",
        ));
    };
    if read.base.is_empty() && read.tools.is_empty() {
        read.base = format!("{at}/api_list");
    }
    for (j, a) in apis.iter().enumerate() {
        read.tools.push(api(set, a, &format!("{at}/api_list/{j}"))?);
    }
    Ok(())
}

/// One api entry at `at`.
fn api(set: &ToolSet, a: &Value, at: &str) -> Result<Found, Error> {
    let Some(obj) = a.as_object() else {
        return Err(spec_err(
            set,
            at,
            "a ToolBench api entry must be a JSON object",
        ));
    };
    let text = |k: &str| -> Result<&str, Error> {
        match obj.get(k) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(spec_err(
                set,
                &format!("{at}/{k}"),
                &format!("\"{k}\" must be a string"),
            )),
            None => Err(spec_err(
                set,
                at,
                &format!("the ToolBench api entry has no \"{k}\""),
            )),
        }
    };
    let name = tool_name(text("api_name")?, text("tool_name")?);
    let description = match obj.get("api_description") {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        _ => None,
    };
    let mut props = Map::new();
    let mut required: Vec<String> = Vec::new();
    for (list, req) in [
        ("required_parameters", true),
        ("optional_parameters", false),
    ] {
        let params = match obj.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(p)) => p,
            Some(_) => {
                return Err(spec_err(
                    set,
                    &format!("{at}/{list}"),
                    &format!("\"{list}\" must be an array"),
                ))
            }
        };
        for (k, p) in params.iter().enumerate() {
            let here = format!("{at}/{list}/{k}");
            let Some(p) = p.as_object() else {
                return Err(spec_err(set, &here, "a parameter must be a JSON object"));
            };
            let Some(Value::String(raw)) = p.get("name") else {
                return Err(spec_err(set, &here, "the parameter has no string \"name\""));
            };
            let pname = change_name(standardize(raw));
            if pname.is_empty() {
                return Err(spec_err(
                    set,
                    &format!("{here}/name"),
                    &format!("the parameter name {raw:?} standardizes to an empty name"),
                ));
            }
            let ty = match p.get("type") {
                Some(Value::String(t)) => match param_type(t) {
                    Some(ty) => ty,
                    None => {
                        return Err(spec_err(
                            set,
                            &format!("{here}/type"),
                            &format!(
                                "unknown ToolBench parameter type {t:?} (known: STRING, NUMBER, BOOLEAN, ENUM, DATE (YYYY-MM-DD), TIME (24-hour HH:MM), BINARY, ARRAY, OBJECT)"
                            ),
                        ))
                    }
                },
                _ => {
                    return Err(spec_err(
                        set,
                        &here,
                        "the parameter has no string \"type\"",
                    ))
                }
            };
            let mut schema = Map::new();
            schema.insert("type".into(), ty.into());
            if let Some(Value::String(d)) = p.get("description") {
                if !d.trim().is_empty() {
                    schema.insert("description".into(), d.trim().into());
                }
            }
            props.insert(pname.clone(), Value::Object(schema));
            if req && !required.contains(&pname) {
                required.push(pname);
            }
        }
    }
    let mut parameters = Map::new();
    parameters.insert("type".into(), "object".into());
    parameters.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        parameters.insert(
            "required".into(),
            Value::Array(required.into_iter().map(Value::String).collect()),
        );
    }
    Ok(Found {
        name,
        name_at: format!("{at}/api_name"),
        entry: at.to_string(),
        description,
        parameters: Value::Object(parameters),
        pointer: at.to_string(),
    })
}

fn param_type(t: &str) -> Option<&'static str> {
    let up = t.trim().to_ascii_uppercase();
    Some(match up.as_str() {
        "STRING"
        | "ENUM"
        | "DATE"
        | "DATE (YYYY-MM-DD)"
        | "TIME"
        | "TIME (24-HOUR HH:MM)"
        | "BINARY"
        | "ARRAY"
        | "OBJECT" => "string",
        "NUMBER" => "number",
        "BOOLEAN" => "boolean",
        _ => return None,
    })
}

/// ToolBench's tool name for an API: `{api}_for_{tool}`, its last 64
/// characters.
pub fn tool_name(api_name: &str, tool_name: &str) -> String {
    let full = format!(
        "{}_for_{}",
        change_name(standardize(api_name)),
        standardize(tool_name)
    );
    let n = full.chars().count();
    full.chars().skip(n.saturating_sub(64)).collect()
}

/// ToolBench's `standardize`.
pub fn standardize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let keep = c.is_ascii_alphanumeric()
            || c == '_'
            || c == '^'
            || ('\u{4e00}'..='\u{9fa5}').contains(&c);
        let c = if keep { c.to_ascii_lowercase() } else { '_' };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_matches('_');
    if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        format!("get_{trimmed}")
    } else {
        trimmed.to_string()
    }
}

/// ToolBench's `change_name`: Python keywords and `id` get an `is_` prefix.
fn change_name(name: String) -> String {
    if ["from", "class", "return", "false", "true", "id", "and"].contains(&name.as_str()) {
        format!("is_{name}")
    } else {
        name
    }
}
