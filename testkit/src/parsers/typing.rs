//! How the upstream XML-style parsers turn a raw parameter value (text)
//! into a JSON value, by the tool's schema: each function follows one
//! upstream parser's conversion, named in its comment. Python's `int()`,
//! `float()`, `json.loads` and `ast.literal_eval` are approximated by
//! [`py_int`], [`py_float`], [`serde_json`] and [`super::pylit`].

use serde_json::{Map, Number, Value};

use super::pylit;

/// The `properties` of tool `name`'s parameters in an OpenAI-form tool
/// list (bare or wrapped in `{"type": "function", "function": ...}`).
pub fn tool_properties<'t>(tools: &'t [Value], name: &str) -> Option<&'t Map<String, Value>> {
    tools
        .iter()
        .map(|t| t.get("function").unwrap_or(t))
        .find(|f| f.get("name").and_then(Value::as_str) == Some(name))
        .and_then(|f| f.get("parameters"))
        .and_then(|p| p.get("properties"))
        .and_then(Value::as_object)
}

/// Python's `int(s)`: surrounding whitespace, a sign, digits with single
/// underscores between them. Exact in 64 bits, else a double.
pub fn py_int(s: &str) -> Option<Value> {
    let t = s.trim();
    let (neg, digits) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|c| c.is_ascii_digit() || c == b'_')
    {
        return None;
    }
    let d = digits.replace('_', "");
    let d = d.trim_start_matches('0');
    let text = if d.is_empty() {
        "0".to_string()
    } else if neg {
        format!("-{d}")
    } else {
        d.to_string()
    };
    serde_json::from_str::<Value>(&text).ok()
}

/// Python's `float(s)`: surrounding whitespace, decimal and exponent
/// forms, `inf`/`nan` (returned as such: the callers decide).
pub fn py_float(s: &str) -> Option<f64> {
    let t = s.trim().replace('_', "");
    let lower = t.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    if matches!(body, "inf" | "infinity" | "nan") {
        return lower.parse().ok();
    }
    if !t
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    t.parse().ok()
}

/// `val if val != int(val) else int(val)` (the number branch of several
/// parsers), as JSON; `None` for infinities and NaN (Python raises).
pub fn float_or_int(f: f64) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    if f.fract() == 0.0 {
        if f.abs() < 9.2e18 {
            return Some(Value::from(f as i64));
        }
        // json.dumps(int(f)) writes all the digits; a JSON reader gets a
        // double back.
        return Number::from_f64(f).map(Value::Number);
    }
    Number::from_f64(f).map(Value::Number)
}

/// `json.loads(s)` (surrounding whitespace allowed).
pub fn json_loads(s: &str) -> Option<Value> {
    serde_json::from_str(s.trim()).ok()
}

/// vLLM `Qwen3CoderToolParser._convert_param_value`
/// (vllm/tool_parsers/qwen3coder_tool_parser.py @ 00d0a333ba9b8e40eb35fc0b54b4ae96114f30b3).
pub fn qwen3_coder_value(value: &str, param: &str, props: Option<&Map<String, Value>>) -> Value {
    let raw = || Value::String(value.to_string());
    let Some(schema) = props.and_then(|p| p.get(param)) else {
        return raw();
    };
    let (ty, allows_null) = match schema {
        Value::Object(o) if o.contains_key("type") => {
            // str(param_config[name]["type"]).strip().lower()
            let t = match &o["type"] {
                Value::String(s) => s.trim().to_lowercase(),
                other => python_repr(other).to_lowercase(),
            };
            let null = t == "null";
            (t, null)
        }
        Value::Object(o) if o.contains_key("anyOf") => {
            let mut t = "string".to_string();
            let mut picked = false;
            let mut null = false;
            for opt in o["anyOf"].as_array().into_iter().flatten() {
                if let Some(ot) = opt.get("type") {
                    let ot = match ot {
                        Value::String(s) => s.trim().to_lowercase(),
                        other => python_repr(other).to_lowercase(),
                    };
                    if ot == "null" {
                        null = true;
                    } else if !picked {
                        t = ot;
                        picked = true;
                    }
                }
            }
            (t, null)
        }
        _ => ("string".to_string(), false),
    };
    let lower = value.to_lowercase();
    if allows_null && (lower == "null" || lower == "none") {
        return Value::Null;
    }
    if ["string", "str", "text", "varchar", "char", "enum"].contains(&ty.as_str()) {
        return raw();
    }
    if lower == "null" || lower == "none" {
        return Value::Null;
    }
    if ["int", "uint", "long", "short", "unsigned"]
        .iter()
        .any(|p| ty.starts_with(p))
    {
        return py_int(value).unwrap_or_else(raw);
    }
    if ty.starts_with("num") || ty.starts_with("float") {
        return py_float(value).and_then(float_or_int).unwrap_or_else(raw);
    }
    if ["boolean", "bool", "binary"].contains(&ty.as_str()) {
        return Value::Bool(lower == "true");
    }
    let container = ["object", "array", "arr"].contains(&ty.as_str())
        || ty.starts_with("dict")
        || ty.starts_with("list");
    if container {
        if let Some(v) = json_loads(value) {
            if let Value::String(s) = &v {
                return pylit::literal_eval(s).unwrap_or(v);
            }
            return v;
        }
    }
    match pylit::literal_eval(value) {
        Ok(Value::String(s)) if container => pylit::literal_eval(&s).unwrap_or(Value::String(s)),
        Ok(v) => v,
        Err(_) => raw(),
    }
}

/// Python's `str()` of a JSON-loaded list of type names, e.g.
/// `['string', 'null']`.
fn python_repr(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{s}'"),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

/// vLLM `Glm4MoeModelToolParser.extract_tool_calls`'s value handling
/// (vllm/tool_parsers/glm4_moe_tool_parser.py @ 5a314e9e8178996f4a9b12b801ef532fe3462f86):
/// the value is `.strip()`ped; unless the property's `type` is exactly
/// `"string"`, `_deserialize`: `json.loads`, else `ast.literal_eval`, else
/// the text.
pub fn glm_value(value: &str, param: &str, props: Option<&Map<String, Value>>) -> Value {
    let v = value.trim();
    let is_string = props
        .and_then(|p| p.get(param))
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        == Some("string");
    if is_string {
        return Value::String(v.to_string());
    }
    json_loads(v)
        .or_else(|| pylit::literal_eval(v).ok())
        .unwrap_or_else(|| Value::String(v.to_string()))
}

/// vLLM `MinimaxM2ToolParser._extract_types_from_schema`.
fn minimax_types(schema: Option<&Value>) -> Vec<String> {
    let Some(Value::Object(o)) = schema else {
        return vec!["string".into()];
    };
    let mut types: Vec<String> = Vec::new();
    let mut add = |t: &str| {
        if !types.iter().any(|x| x == t) {
            types.push(t.to_string());
        }
    };
    match o.get("type") {
        Some(Value::String(s)) => add(s),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).for_each(&mut add),
        _ => {}
    }
    if let Some(Value::Array(e)) = o.get("enum") {
        for v in e {
            add(match v {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            });
        }
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(choices)) = o.get(k) {
            for c in choices {
                for t in minimax_types(Some(c)) {
                    add(&t);
                }
            }
        }
    }
    if types.is_empty() {
        vec!["string".into()]
    } else {
        types
    }
}

/// vLLM `MinimaxM2ToolParser._convert_param_value_with_types`
/// (vllm/tool_parsers/minimax_m2_tool_parser.py @ 9412856add437f03009a0804f61f3bed6731ddeb):
/// `null`/`none`/`nil` (any case) is null whatever the type; then the
/// schema's types in the order integer, number, boolean, object, array,
/// string; then `json.loads`, else the text.
pub fn minimax_value(value: &str, param: &str, props: Option<&Map<String, Value>>) -> Value {
    let lower = value.to_lowercase();
    if ["null", "none", "nil"].contains(&lower.as_str()) {
        return Value::Null;
    }
    let types: Vec<String> = minimax_types(props.and_then(|p| p.get(param)))
        .into_iter()
        .map(|t| t.to_lowercase())
        .collect();
    let has = |t: &str| types.iter().any(|x| x == t);
    for t in [
        "integer", "int", "number", "float", "boolean", "bool", "object", "array", "string", "str",
        "text",
    ] {
        if !has(t) {
            continue;
        }
        match t {
            "string" | "str" | "text" => return Value::String(value.to_string()),
            "integer" | "int" => {
                if let Some(v) = py_int(value) {
                    return v;
                }
            }
            "number" | "float" => {
                if let Some(v) = py_float(value).and_then(float_or_int) {
                    return v;
                }
            }
            "boolean" | "bool" => match lower.trim() {
                "true" | "1" | "yes" | "on" => return Value::Bool(true),
                "false" | "0" | "no" | "off" => return Value::Bool(false),
                _ => {}
            },
            _ => {
                if let Some(v) = json_loads(value) {
                    return v;
                }
            }
        }
    }
    json_loads(value).unwrap_or_else(|| Value::String(value.to_string()))
}

/// DeepSeek V3.2's DSML parameter (SGLang
/// `DeepSeekV32Detector._parse_parameters_from_xml`,
/// python/sglang/srt/function_call/deepseekv32_detector.py @ d51fbf8ccf562f0b7a6516ae230ebb2fae3fffb4):
/// the value is `.strip()`ped; `string="true"` keeps the text, otherwise
/// `json.loads`, else the text. (vLLM's deepseekv32_tool_parser.py @
/// fe3771baa0a0c2bb9c0738c702f10a2301e89366 keeps every value as text,
/// unstripped, in its non-streaming path.)
pub fn dsml_value(value: &str, is_string: bool) -> Value {
    let v = value.trim();
    if is_string {
        Value::String(v.to_string())
    } else {
        json_loads(v).unwrap_or_else(|| Value::String(v.to_string()))
    }
}
