//! ToolBench / StableToolBench test queries (RapidAPI `api_list` form).

use std::path::PathBuf;

use serde_json::Value;

use crate::data::{data_file, parse_json, read_text};

/// The folder of the test query files, relative to the data directory.
pub const QUERY_DIR: &str = "tools/toolbench/StableToolBench/solvable_queries/test_instruction";

/// Why APIs were left out of the conversion.
#[derive(Debug, Clone, Default)]
pub struct SkipCounts {
    /// A parameter of type ARRAY, OBJECT or an unknown type.
    pub unsupported_type: usize,
    /// Two parameters with the same name.
    pub duplicate_param: usize,
    /// The standardized name is empty.
    pub empty_name: usize,
    /// A second API with the same converted name (within the scope).
    pub duplicate_name: usize,
}

/// One query's API list as a tool set.
#[derive(Debug, Clone)]
pub struct QuerySet {
    /// `FILE#query_id`.
    pub id: String,
    /// Converted tools (bare OpenAI form).
    pub tools: Vec<Value>,
    /// `tools` as compiler input text.
    pub text: String,
}

/// ToolBench's name standardization, simplified: lowercase, every char
/// outside `[a-z0-9_]` becomes `_`, runs of `_` collapse to one, and
/// leading/trailing `_` are trimmed.
pub fn standardize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().flat_map(char::to_lowercase) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            c
        } else {
            '_'
        };
        if c == '_' && out.ends_with('_') {
            continue;
        }
        out.push(c);
    }
    out.trim_matches('_').to_string()
}

/// The tool name ToolBench gives an API: `{api}_for_{tool}`.
pub fn tool_name(api_name: &str, tool_name: &str) -> String {
    format!("{}_for_{}", standardize(api_name), standardize(tool_name))
}

fn param_type(t: &str) -> Option<&'static str> {
    let up = t.to_ascii_uppercase();
    if up == "STRING"
        || up.starts_with("DATE")
        || up.starts_with("TIME")
        || up == "BINARY"
        || up == "ENUM"
    {
        Some("string")
    } else if up == "NUMBER" {
        Some("number")
    } else if up == "BOOLEAN" {
        Some("boolean")
    } else {
        None
    }
}

/// Converts one `api_list` entry to a tool, or says why it is skipped.
pub fn convert_api(api: &Value, skips: &mut SkipCounts) -> Option<Value> {
    let s = |k: &str| api.get(k).and_then(Value::as_str).unwrap_or("");
    let name = tool_name(s("api_name"), s("tool_name"));
    if standardize(s("api_name")).is_empty() || standardize(s("tool_name")).is_empty() {
        skips.empty_name += 1;
        return None;
    }
    let mut props = serde_json::Map::new();
    let mut required = Vec::new();
    for (list, req) in [
        ("required_parameters", true),
        ("optional_parameters", false),
    ] {
        let Some(params) = api.get(list).and_then(Value::as_array) else {
            continue;
        };
        for p in params {
            let pname = p.get("name").and_then(Value::as_str).unwrap_or("");
            let ptype = p.get("type").and_then(Value::as_str).unwrap_or("");
            let Some(ty) = param_type(ptype) else {
                skips.unsupported_type += 1;
                return None;
            };
            if props.contains_key(pname) {
                skips.duplicate_param += 1;
                return None;
            }
            let mut schema = serde_json::Map::new();
            schema.insert("type".into(), ty.into());
            if let Some(d) = p.get("description").and_then(Value::as_str) {
                if !d.is_empty() {
                    schema.insert("description".into(), d.into());
                }
            }
            props.insert(pname.to_string(), Value::Object(schema));
            if req {
                required.push(Value::String(pname.to_string()));
            }
        }
    }
    let mut parameters = serde_json::Map::new();
    parameters.insert("type".into(), "object".into());
    parameters.insert("properties".into(), Value::Object(props));
    parameters.insert("required".into(), Value::Array(required));
    let mut tool = serde_json::Map::new();
    tool.insert("name".into(), name.into());
    tool.insert(
        "description".into(),
        s("api_description").to_string().into(),
    );
    tool.insert("parameters".into(), Value::Object(parameters));
    Some(Value::Object(tool))
}

/// The query files, sorted by name, with their parsed queries.
pub fn query_files() -> Vec<(String, Vec<Value>)> {
    let dir = data_file(QUERY_DIR);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no *.json query files in {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let v = parse_json(&read_text(&p), &p.display().to_string());
            let Value::Array(queries) = v else {
                panic!("{}: expected a JSON array of queries", p.display());
            };
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, queries)
        })
        .collect()
}

/// The first `n` APIs, unique by converted tool name, across the query
/// files in sorted order; with the counts of APIs left out.
pub fn unique_apis(n: usize) -> (Vec<Value>, SkipCounts) {
    let mut skips = SkipCounts::default();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (_, queries) in query_files() {
        for q in &queries {
            for api in q
                .get("api_list")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if out.len() >= n {
                    return (out, skips);
                }
                let Some(tool) = convert_api(api, &mut skips) else {
                    continue;
                };
                let name = tool["name"].as_str().unwrap().to_string();
                if seen.insert(name) {
                    out.push(tool);
                }
            }
        }
    }
    (out, skips)
}

/// Every query's API list as a tool set (names deduplicated within a
/// list; queries whose APIs were all skipped are left out).
pub fn query_sets() -> (Vec<QuerySet>, SkipCounts) {
    let mut skips = SkipCounts::default();
    let mut out = Vec::new();
    for (file, queries) in query_files() {
        for (i, q) in queries.iter().enumerate() {
            let qid = q
                .get("query_id")
                .map(|v| v.to_string())
                .unwrap_or_else(|| format!("#{i}"));
            let mut seen = std::collections::HashSet::new();
            let mut tools = Vec::new();
            for api in q
                .get("api_list")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(tool) = convert_api(api, &mut skips) else {
                    continue;
                };
                if seen.insert(tool["name"].as_str().unwrap().to_string()) {
                    tools.push(tool);
                } else {
                    skips.duplicate_name += 1;
                }
            }
            if tools.is_empty() {
                continue;
            }
            let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
            out.push(QuerySet {
                id: format!("{file}#{qid}"),
                tools,
                text,
            });
        }
    }
    (out, skips)
}
