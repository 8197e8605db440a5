//! Rendering values and tool calls as text: the workspace's one JSON
//! renderer besides `serde_json`'s compact form ([`spaced`], used by the
//! real-data tests and the conformance report's second serialization), and
//! BFCL's ground truth fitted to the grammar's shape.

use serde_json::Value;

/// JSON with `", "` and `": "` separators (Python's `json.dumps` default
/// style): `{"a": 1, "b": [1, 2]}`.
pub fn spaced(v: &Value) -> String {
    let mut out = String::new();
    spaced_into(v, &mut out);
    out
}

fn spaced_into(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k).unwrap());
                out.push_str(": ");
                spaced_into(x, out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                spaced_into(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&serde_json::to_string(other).unwrap()),
    }
}

/// A ReAct call text: `Thought: I will call the tool.\nAction: NAME\nAction Input: ARGS`.
pub fn react_call(name: &str, args_text: &str) -> String {
    format!("Thought: I will call the tool.\nAction: {name}\nAction Input: {args_text}")
}

/// Resolves a BFCL ground-truth value: inside dicts every value is a
/// list of acceptable values, of which the first is taken (`""` means
/// "leave it out"); lists are mapped element-wise.
pub fn resolve_ground_truth(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, alts) in o {
                let first = match alts {
                    Value::Array(a) => match a.first() {
                        Some(f) => f,
                        None => continue,
                    },
                    other => other,
                };
                if first == "" {
                    continue;
                }
                out.insert(k.clone(), resolve_ground_truth(first));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(resolve_ground_truth).collect()),
        other => other.clone(),
    }
}

/// Fits a value to the schema's shape as the grammar writes it: object
/// members in declared order (an undeclared member is an error: the
/// grammar's objects are closed), integral floats under `integer` as
/// integers, arrays element-wise.
pub fn conform(schema: &Value, v: &Value) -> Result<Value, String> {
    let ty = schema.get("type").and_then(Value::as_str);
    match v {
        Value::Number(n) if ty == Some("integer") && !(n.is_i64() || n.is_u64()) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Ok(Value::from(f as i64))
            } else {
                Ok(v.clone())
            }
        }
        Value::Object(o) if ty == Some("object") || schema.get("properties").is_some() => {
            let empty = serde_json::Map::new();
            let props = schema
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            for k in o.keys() {
                if !props.contains_key(k) {
                    return Err(format!(
                        "member {k:?} is not declared (the grammar's objects are closed)"
                    ));
                }
            }
            let mut out = serde_json::Map::new();
            for (k, sub) in props {
                if let Some(x) = o.get(k) {
                    out.insert(k.clone(), conform(sub, x)?);
                }
            }
            Ok(Value::Object(out))
        }
        Value::Array(a) => match schema.get("items") {
            Some(items) if items.is_object() => Ok(Value::Array(
                a.iter()
                    .map(|x| conform(items, x))
                    .collect::<Result<_, _>>()?,
            )),
            _ => Ok(v.clone()),
        },
        _ => Ok(v.clone()),
    }
}

/// The arguments of a BFCL ground-truth call, in the tool schema's
/// declared property order (see [`resolve_ground_truth`], [`conform`]).
pub fn ground_truth_args(parameters: &Value, call_args: &Value) -> Result<Value, String> {
    let resolved = resolve_ground_truth(call_args);
    conform(parameters, &resolved)
}
