//! The ToolkenGPT data (`tools/toolkengpt/data`) as tool lists: FuncQA's
//! 13 math tools and KAMEL's 234 relations, with the calls found in the
//! data. The `toolken` call format's outputs are read by
//! [`crate::parsers::toolken`].

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::data::{parse_json, read_text};

/// A `<name>(args)=result` call found in the FuncQA data, in its
/// original spelling.
#[derive(Debug, Clone)]
pub struct FoundCall {
    /// Where it was found (`funcqa_oh.json #3`, `template_mh/llama_func.txt`).
    pub source: String,
    pub name: String,
    /// The argument values, when all are JSON numbers; else why not.
    pub args: Result<Vec<Value>, String>,
    /// The call as written, `<name>(...)=` (up to the first `)`, and
    /// the `=` when there is one).
    pub span: String,
}

/// FuncQA converted: its tools and what the data says about them.
#[derive(Debug, Clone)]
pub struct FuncQa {
    /// OpenAI-style tools (`{"type": "function", "function": ...}`), in
    /// `func_dict.json` order.
    pub tools: Vec<Value>,
    /// Per tool: (fewest, most) arguments among its well-formed calls.
    pub arity: BTreeMap<String, (usize, usize)>,
    /// Every call found in the question files and templates.
    pub calls: Vec<FoundCall>,
    /// The one-hop questions: (question, `func`).
    pub one_hop: Vec<(String, String)>,
    /// The multi-hop questions: (question, `calculation` steps).
    pub multi_hop: Vec<(String, Vec<String>)>,
    /// The templates' answer lines (`A: ...`) that hold calls.
    pub template_answers: Vec<(String, String)>,
}

/// The tool names of `func_dict.json` (`{"<add>": 0, ...}`) by index.
fn func_names(path: &Path) -> Vec<String> {
    let v = parse_json(&read_text(path), &path.display().to_string());
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{}: not a JSON object", path.display()));
    let mut named: Vec<(u64, String)> = obj
        .iter()
        .map(|(k, i)| {
            let name = k
                .strip_prefix('<')
                .and_then(|k| k.strip_suffix('>'))
                .unwrap_or_else(|| panic!("{}: key {k:?} is not <name>", path.display()));
            let i = i
                .as_u64()
                .unwrap_or_else(|| panic!("{}: index of {k:?} is not a number", path.display()));
            (i, name.to_string())
        })
        .collect();
    named.sort();
    for (pos, (i, name)) in named.iter().enumerate() {
        assert_eq!(*i as usize, pos, "{}: {name} has index {i}", path.display());
    }
    named.into_iter().map(|(_, n)| n).collect()
}

/// Every `<name>(...)` of the known tools in `text`: the arguments are
/// the text up to the first `)`, which must be followed by `=`, split
/// at commas, each (trimmed) a JSON number.
pub fn find_calls(text: &str, names: &[String], source: &str) -> Vec<FoundCall> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let Some(name) = names.iter().find(|n| {
            rest.strip_prefix(n.as_str())
                .is_some_and(|r| r.starts_with(">("))
        }) else {
            continue;
        };
        let after = &rest[name.len() + 2..];
        let close = after.find(')');
        let span_len = close.map_or(after.len(), |j| {
            j + 1 + after[j + 1..].starts_with('=') as usize
        });
        let span = format!("<{name}>({}", &after[..span_len]);
        let args = match close {
            None => Err("no closing parenthesis".to_string()),
            Some(j) if !after[j + 1..].starts_with('=') => Err(format!(
                "the arguments {:?} are not followed by \")=\"",
                &after[..=j]
            )),
            Some(j) => after[..j]
                .split(',')
                .map(|a| match serde_json::from_str::<Value>(a.trim()) {
                    Ok(v @ Value::Number(_)) => Ok(v),
                    _ => Err(format!("argument {a:?} is not a JSON number")),
                })
                .collect(),
        };
        out.push(FoundCall {
            source: source.to_string(),
            name: name.clone(),
            args,
            span,
        });
    }
    out
}

/// Converts FuncQA (`dir` = `.../toolkengpt/data/funcqa`). Each tool
/// takes numbers `x1..xM` of which `x1..xm` are required, `m` and `M`
/// the fewest and most arguments of its well-formed calls in the data
/// (`funcqa_oh.json` `func`, `funcqa_mh.json` `calculation`, and the
/// `template_*/llama_func.txt` prompts). Panics if a tool has no
/// well-formed call.
pub fn funcqa(dir: &Path) -> FuncQa {
    let names = func_names(&dir.join("func_dict.json"));
    let mut calls = Vec::new();
    let load = |f: &str| -> Vec<Value> {
        let p = dir.join(f);
        match parse_json(&read_text(&p), &p.display().to_string()) {
            Value::Array(a) => a,
            _ => panic!("{}: not a JSON array", p.display()),
        }
    };
    let field = |q: &Value, k: &str, f: &str, i: usize| -> String {
        q.get(k)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{f} #{i}: no string {k:?}"))
            .to_string()
    };
    let mut one_hop = Vec::new();
    for (i, q) in load("funcqa_oh.json").iter().enumerate() {
        let func = field(q, "func", "funcqa_oh.json", i);
        calls.extend(find_calls(&func, &names, &format!("funcqa_oh.json #{i}")));
        one_hop.push((field(q, "question", "funcqa_oh.json", i), func));
    }
    let mut multi_hop = Vec::new();
    for (i, q) in load("funcqa_mh.json").iter().enumerate() {
        let steps: Vec<String> = q
            .get("calculation")
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("funcqa_mh.json #{i}: no \"calculation\" array"))
            .iter()
            .map(|s| {
                s.as_str()
                    .expect("a calculation step is a string")
                    .to_string()
            })
            .collect();
        for s in &steps {
            calls.extend(find_calls(s, &names, &format!("funcqa_mh.json #{i}")));
        }
        multi_hop.push((field(q, "question", "funcqa_mh.json", i), steps));
    }
    let mut template_answers = Vec::new();
    for t in ["template_oh/llama_func.txt", "template_mh/llama_func.txt"] {
        let text = read_text(&dir.join(t));
        calls.extend(find_calls(&text, &names, t));
        for line in text.lines() {
            if let Some(a) = line.strip_prefix("A: ") {
                if !find_calls(a, &names, t).is_empty() {
                    template_answers.push((t.to_string(), a.to_string()));
                }
            }
        }
    }
    let mut arity: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for c in &calls {
        if let Ok(a) = &c.args {
            let e = arity.entry(c.name.clone()).or_insert((a.len(), a.len()));
            e.0 = e.0.min(a.len());
            e.1 = e.1.max(a.len());
        }
    }
    let tools = names
        .iter()
        .map(|n| {
            let (lo, hi) = *arity
                .get(n)
                .unwrap_or_else(|| panic!("FuncQA tool {n} has no well-formed call in the data"));
            let props: serde_json::Map<String, Value> = (1..=hi)
                .map(|k| (format!("x{k}"), json!({"type": "number"})))
                .collect();
            let required: Vec<String> = (1..=lo).map(|k| format!("x{k}")).collect();
            json!({"type": "function", "function": {
                "name": n,
                "description": format!("FuncQA's <{n}> operation on {lo} to {hi} numbers"),
                "parameters": {"type": "object", "properties": props, "required": required},
            }})
        })
        .collect();
    FuncQa {
        tools,
        arity,
        calls,
        one_hop,
        multi_hop,
        template_answers,
    }
}

/// Rewrites FuncQA's `<name>(` tool tags as the toolken trigger form
/// `<T>name(`.
pub fn to_trigger_form(text: &str, names: &[String]) -> String {
    let mut out = text.to_string();
    for n in names {
        out = out.replace(&format!("<{n}>("), &format!("<T>{n}("));
    }
    out
}

/// KAMEL converted.
#[derive(Debug, Clone)]
pub struct Kamel {
    /// One tool per distinct relation name, in `api_desc.json` order,
    /// each parameter a required string.
    pub tools: Vec<Value>,
    /// Relation id → tool name (all relations, duplicates included).
    pub relation_tool: BTreeMap<String, String>,
    /// Relations whose name an earlier relation already had:
    /// (relation id, its description, the id kept).
    pub duplicates: Vec<(String, String, String)>,
    /// How many relations `api_desc.json` lists.
    pub relations: usize,
}

/// Converts KAMEL's `api_desc.json` (`"P17": "location(name): gets
/// ..."`): the tool `location`, with the parameters in the parentheses
/// (split at `", "`) as required strings, and the text after `": "` as
/// its description. A name seen before is left out (recorded in
/// [`Kamel::duplicates`]). Panics on an entry not of that shape.
pub fn kamel(api_desc: &Path) -> Kamel {
    let v = parse_json(&read_text(api_desc), &api_desc.display().to_string());
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{}: not a JSON object", api_desc.display()));
    let mut tools = Vec::new();
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    let mut relation_tool = BTreeMap::new();
    let mut duplicates = Vec::new();
    for (id, desc) in obj {
        let desc = desc
            .as_str()
            .unwrap_or_else(|| panic!("{id}: the description is not a string"));
        fn bad(id: &str, desc: &str) -> ! {
            panic!("KAMEL {id}: {desc:?} is not `name(params): description`")
        }
        let Some((sig, text)) = desc.split_once(": ") else {
            bad(id, desc)
        };
        let Some((name, params)) = sig.split_once('(') else {
            bad(id, desc)
        };
        let Some(params) = params.strip_suffix(')') else {
            bad(id, desc)
        };
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            bad(id, desc);
        }
        let params: Vec<&str> = params.split(", ").collect();
        if params.iter().any(|p| p.is_empty() || p.contains(' ')) {
            bad(id, desc);
        }
        relation_tool.insert(id.clone(), name.to_string());
        if let Some(kept) = first.get(name) {
            duplicates.push((id.clone(), desc.to_string(), kept.clone()));
            continue;
        }
        first.insert(name.to_string(), id.clone());
        let props: serde_json::Map<String, Value> = params
            .iter()
            .map(|p| (p.to_string(), json!({"type": "string"})))
            .collect();
        assert_eq!(props.len(), params.len(), "{id}: a parameter is repeated");
        tools.push(json!({"type": "function", "function": {
            "name": name,
            "description": text,
            "parameters": {"type": "object", "properties": props, "required": params},
        }}));
    }
    Kamel {
        tools,
        relation_tool,
        duplicates,
        relations: obj.len(),
    }
}
