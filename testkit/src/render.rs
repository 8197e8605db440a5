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

/// A JSON number as Python writes it (`repr`, and so `json.dumps`): an
/// integer as is; a float with its shortest digits, in fixed notation
/// (always with a `.`, `100.0`) when its decimal exponent is in -4..16,
/// else as `1.5e-07` / `1e+16` (signed exponent of at least two digits).
pub fn python_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    if (-4..16).contains(&e) {
        let fixed = format!("{f}");
        if fixed.contains('.') {
            fixed
        } else {
            format!("{fixed}.0")
        }
    } else {
        format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

/// JSON as Python's `json.dumps(v, ensure_ascii=False)` writes it:
/// [`spaced`] with Python's spelling of floats ([`python_number`]).
pub fn python_json(v: &Value) -> String {
    match v {
        Value::Number(n) => python_number(n),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, x)| format!("{}: {}", serde_json::to_string(k).unwrap(), python_json(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_json).collect::<Vec<_>>().join(", ")
        ),
        other => serde_json::to_string(other).unwrap(),
    }
}

/// A string as a Python literal, as `repr()` writes it: single quotes
/// unless the text holds `'` and no `"`; `\\`, `\n`, `\r`, `\t` and other
/// control characters escaped.
pub fn python_str(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::new();
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7F => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// A JSON value as a Python literal (`repr()` of what `json.loads`
/// gives): `True`/`False`/`None`, strings by [`python_str`], `, ` and
/// `: ` separators.
pub fn python_value(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Number(n) => python_number(n),
        Value::String(s) => python_str(s),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, x)| format!("{}: {}", python_str(k), python_value(x)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A JSON value in Gemma 4's spelling as its template writes it: bare
/// keys in sorted order (`dictsort`), strings between `<|"|>` quotes, no
/// spaces; numbers without an exponent (which Gemma's readers take for a
/// string).
pub fn gemma_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("<|\"|>{s}<|\"|>"),
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            let f = n.as_f64().unwrap_or(0.0);
            let s = format!("{f}");
            if s.contains('.') {
                s
            } else {
                format!("{s}.0")
            }
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            format!(
                "{{{}}}",
                keys.iter()
                    .map(|k| format!("{k}:{}", gemma_value(&o[k.as_str()])))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(gemma_value).collect::<Vec<_>>().join(",")
        ),

        other => other.to_string(),
    }
}

/// A value as the XML-style chat templates write it between tags: a
/// string as is, anything else as JSON (HF's `tojson`: [`python_json`]).
pub fn xml_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => python_json(other),
    }
}

/// One call to render: name and arguments (a JSON object).
pub type Call = (String, Value);

/// The calls part of an output in a model format, as the model's chat
/// template writes an assistant message's `tool_calls` (`json` renders
/// argument objects: compact or [`spaced`]). `None` for a format this
/// function does not know, or a call list the format cannot hold.
pub fn calls_text(format: &str, calls: &[Call], json: fn(&Value) -> String) -> Option<String> {
    let obj = |args: &Value| -> Vec<(String, Value)> {
        args.as_object()
            .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    let nj = |n: &str| serde_json::to_string(n).unwrap();
    let each = |f: &dyn Fn(&str, &Value) -> String, sep: &str| -> String {
        calls
            .iter()
            .map(|(n, a)| f(n, a))
            .collect::<Vec<_>>()
            .join(sep)
    };
    if calls.is_empty() {
        return None;
    }
    Some(match format {
        "react" => format!(
            "Thought: I will call the tool.\n{}",
            each(
                &|n, a| format!("Action: {n}\nAction Input: {}", json(a)),
                "\n"
            )
        ),
        "json" if calls.len() == 1 => each(
            &|n, a| format!("{{\"name\": {}, \"arguments\": {}}}", nj(n), json(a)),
            "",
        ),
        "json" => format!(
            "[{}]",
            each(
                &|n, a| format!("{{\"name\": {}, \"arguments\": {}}}", nj(n), json(a)),
                ", "
            )
        ),
        "qwen3" | "hermes" => each(
            &|n, a| {
                format!(
                    "<tool_call>\n{{\"name\": {}, \"arguments\": {}}}\n</tool_call>",
                    nj(n),
                    json(a)
                )
            },
            "\n",
        ),
        "qwen3-coder" => each(
            &|n, a| {
                let params: String = obj(a)
                    .iter()
                    .map(|(k, v)| format!("<parameter={k}>\n{}\n</parameter>\n", xml_value(v)))
                    .collect();
                format!("<tool_call>\n<function={n}>\n{params}</function>\n</tool_call>")
            },
            "\n",
        ),
        "glm-4.5" => each(
            &|n, a| {
                let params: String = obj(a)
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "<arg_key>{k}</arg_key>\n<arg_value>{}</arg_value>\n",
                            xml_value(v)
                        )
                    })
                    .collect();
                format!("<tool_call>{n}\n{params}</tool_call>")
            },
            "\n",
        ),
        "glm-4.7" => each(
            &|n, a| {
                let params: String = obj(a)
                    .iter()
                    .map(|(k, v)| {
                        format!(
                            "<arg_key>{k}</arg_key><arg_value>{}</arg_value>",
                            xml_value(v)
                        )
                    })
                    .collect();
                format!("<tool_call>{n}{params}</tool_call>")
            },
            "",
        ),
        "deepseek-r1" => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            each(
                &|n, a| {
                    format!(
                    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{}\n```<｜tool▁call▁end｜>",
                    json(a)
                )
                },
                "\n"
            )
        ),
        "deepseek-v3.1" => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            each(
                &|n, a| format!(
                    "<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
                    json(a)
                ),
                ""
            )
        ),
        "deepseek-v3.2" => format!(
            "<｜DSML｜function_calls>\n{}\n</｜DSML｜function_calls>",
            each(
                &|n, a| {
                    let params: String = obj(a)
                        .iter()
                        .map(|(k, v)| {
                            format!(
                                "<｜DSML｜parameter name=\"{k}\" string=\"{}\">{}</｜DSML｜parameter>\n",
                                v.is_string(),
                                xml_value(v)
                            )
                        })
                        .collect();
                    format!("<｜DSML｜invoke name=\"{n}\">\n{params}</｜DSML｜invoke>")
                },
                "\n"
            )
        ),
        "kimi-k2" => {
            let mut s = String::from("<|tool_calls_section_begin|>");
            for (i, (n, a)) in calls.iter().enumerate() {
                s.push_str(&format!(
                    "<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{}<|tool_call_end|>",
                    json(a)
                ));
            }
            s.push_str("<|tool_calls_section_end|>");
            s
        }
        "minimax-m2" => format!(
            "<minimax:tool_call>\n{}\n</minimax:tool_call>",
            each(
                &|n, a| {
                    let params: String = obj(a)
                        .iter()
                        .map(|(k, v)| {
                            format!("<parameter name=\"{k}\">{}</parameter>\n", xml_value(v))
                        })
                        .collect();
                    format!("<invoke name=\"{n}\">\n{params}</invoke>")
                },
                "\n"
            )
        ),
        // Harmony: a call ends the turn (`<|call|>`), one per output.
        "gpt-oss" if calls.len() > 1 => return None,
        "gpt-oss" => each(
            &|n, a| {
                format!(
                    "<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>{}<|call|>",
                    json(a)
                )
            },
            "<|start|>assistant",
        ),
        "llama3" => each(
            &|n, a| format!("{{\"name\": {}, \"parameters\": {}}}", nj(n), json(a)),
            "; ",
        ),
        "llama-pythonic" => format!(
            "[{}]",
            each(
                &|n, a| {
                    let kw: Vec<String> = obj(a)
                        .iter()
                        .map(|(k, v)| format!("{k}={}", python_value(v)))
                        .collect();
                    format!("{n}({})", kw.join(", "))
                },
                ", "
            )
        ),
        "mistral" => format!(
            "[TOOL_CALLS][{}]",
            each(
                &|n, a| format!("{{\"name\": {}, \"arguments\": {}}}", nj(n), json(a)),
                ", "
            )
        ),
        "mistral-v11" => each(&|n, a| format!("[TOOL_CALLS]{n}[ARGS]{}", json(a)), ""),
        "granite" => format!(
            "<tool_call>[{}]",
            each(
                &|n, a| format!("{{\"name\": {}, \"arguments\": {}}}", nj(n), json(a)),
                ", "
            )
        ),
        "gemma4" => each(
            &|n, a| format!("<|tool_call>call:{n}{}<tool_call|>", gemma_value(a)),
            "",
        ),
        _ => return None,
    })
}

/// JSON as Python's `json.dumps(v, indent=n)` writes it (floats by
/// [`python_number`]): one member or
/// element per line, `n` spaces per level, `","` and `": "` separators,
/// empty containers as `{}` and `[]`.
pub fn indented(v: &Value, n: usize) -> String {
    fn go(v: &Value, n: usize, level: usize, out: &mut String) {
        let pad = |l: usize| " ".repeat(n * l);
        match v {
            Value::Object(o) if !o.is_empty() => {
                out.push_str("{\n");
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    out.push_str(&pad(level + 1));
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(": ");
                    go(x, n, level + 1, out);
                }
                out.push('\n');
                out.push_str(&pad(level));
                out.push('}');
            }
            Value::Array(a) if !a.is_empty() => {
                out.push_str("[\n");
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    out.push_str(&pad(level + 1));
                    go(x, n, level + 1, out);
                }
                out.push('\n');
                out.push_str(&pad(level));
                out.push(']');
            }
            Value::Number(x) => out.push_str(&python_number(x)),
            other => out.push_str(&serde_json::to_string(other).unwrap()),
        }
    }
    let mut out = String::new();
    go(v, n, 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_spellings() {
        let n = |v: Value| python_json(&v);
        assert_eq!(n(json!(1.256e-6)), "1.256e-06");
        assert_eq!(n(json!(1e16)), "1e+16");
        assert_eq!(n(json!(100.0)), "100.0");
        assert_eq!(n(json!(0.0001)), "0.0001");
        assert_eq!(n(json!(1.5e300)), "1.5e+300");
        assert_eq!(n(json!({"a": [1, 2.5]})), "{\"a\": [1, 2.5]}");
        assert_eq!(
            python_value(&json!({"k": "it's", "n": null})),
            "{'k': \"it's\", 'n': None}"
        );
        assert_eq!(
            indented(&json!({"a": [1], "b": {}}), 4),
            "{\n    \"a\": [\n        1\n    ],\n    \"b\": {}\n}"
        );
    }
}
