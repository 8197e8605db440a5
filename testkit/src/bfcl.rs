//! The Berkeley Function-Calling Leaderboard (BFCL v4) question files.

use std::path::Path;

use serde_json::Value;

use crate::data::{parse_json, read_text};

/// One line of a BFCL question file, its functions converted.
#[derive(Debug, Clone)]
pub struct BfclSet {
    /// The line's `id` (e.g. `multiple_0`).
    pub id: String,
    /// The converted functions (bare OpenAI form `{name, description, parameters}`).
    pub tools: Vec<Value>,
    /// `tools` as compiler input text (a JSON array).
    pub text: String,
}

/// Converts a BFCL schema to standard JSON Schema, recursively:
/// `dict` → `object`, `float` → `number`, `tuple` → `array`, and the
/// non-standard `optional` key is dropped. Everything else is kept (a
/// BFCL type `any` stays; the compiler refuses it).
pub fn convert_schema(schema: &Value) -> Value {
    let Value::Object(obj) = schema else {
        return schema.clone();
    };
    let mut out = serde_json::Map::with_capacity(obj.len());
    for (k, v) in obj {
        let nv = match k.as_str() {
            "optional" => continue,
            // BFCL's `any`: no type constraint at all.
            "type" if v == "any" => continue,
            "type" => match v {
                Value::String(t) => Value::String(convert_type(t).to_string()),
                Value::Array(ts) => Value::Array(
                    ts.iter()
                        .map(|t| match t {
                            Value::String(t) => Value::String(convert_type(t).to_string()),
                            other => other.clone(),
                        })
                        .collect(),
                ),
                other => other.clone(),
            },
            "properties" => match v {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(n, s)| (n.clone(), convert_schema(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" => match v {
                Value::Array(items) => Value::Array(items.iter().map(convert_schema).collect()),
                other => convert_schema(other),
            },
            "additionalProperties" => convert_schema(v),
            _ => v.clone(),
        };
        out.insert(k.clone(), nv);
    }
    Value::Object(out)
}

fn convert_type(t: &str) -> &str {
    match t {
        "dict" => "object",
        "float" => "number",
        "tuple" => "array",
        other => other,
    }
}

/// Converts one BFCL function doc `{name, description, parameters}`.
pub fn convert_function(f: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let Value::Object(o) = f {
        for (k, v) in o {
            if k == "parameters" {
                out.insert(k.clone(), convert_schema(v));
            } else {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// The non-empty lines of a BFCL JSONL file as `(id, line value)`.
fn jsonl(path: &Path) -> Vec<(String, Value)> {
    let text = read_text(path);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v = parse_json(line, &format!("{}:{}", path.display(), i + 1));
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{}:{}: no \"id\"", path.display(), i + 1))
            .to_string();
        out.push((id, v));
    }
    out
}

/// Loads a BFCL JSONL question file: one converted tool set per line.
pub fn load_sets(path: &Path) -> Vec<BfclSet> {
    jsonl(path)
        .into_iter()
        .map(|(id, v)| {
            let funcs = v
                .get("function")
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("{}: {id}: no \"function\" array", path.display()));
            let tools: Vec<Value> = funcs.iter().map(convert_function).collect();
            let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
            BfclSet { id, tools, text }
        })
        .collect()
}

/// One ground-truth line: `(id, [{tool_name: {param: [acceptable values]}}])`.
pub fn load_answers(path: &Path) -> Vec<(String, Vec<Value>)> {
    jsonl(path)
        .into_iter()
        .map(|(id, v)| {
            let gt = v
                .get("ground_truth")
                .and_then(Value::as_array)
                .unwrap_or_else(|| panic!("{}: {id}: no \"ground_truth\"", path.display()))
                .clone();
            (id, gt)
        })
        .collect()
}
