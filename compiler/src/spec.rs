//! Parsing a tool list: the OpenAI function-calling form, either
//! `{"type": "function", "function": {name, description, parameters}}` or the
//! bare `{name, description, parameters}`, in a JSON array (or an object with
//! a `tools` array).

use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::locate;

/// One tool: its name and its arguments schema.
#[derive(Debug, Clone)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    /// The JSON Schema of the arguments (`{}`-equivalent when absent).
    pub parameters: Value,
    /// JSON pointer of `parameters` in the source file.
    pub pointer: String,
}

/// A parsed tool list, with its source kept for error positions.
#[derive(Debug, Clone)]
pub struct ToolSet {
    pub file: String,
    pub text: String,
    pub tools: Vec<Tool>,
}

impl ToolSet {
    /// "FILE:LINE:COL (at POINTER)" for messages.
    pub fn place(&self, pointer: &str) -> String {
        let shown = if pointer.is_empty() { "/" } else { pointer };
        match locate::position(&self.text, pointer) {
            Some((l, c)) => format!("{}:{l}:{c} (at {shown})", self.file),
            None => format!("{} (at {shown})", self.file),
        }
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// A JSON Schema document on its own, as a one-tool set whose "parameters"
/// are the whole document (pointer ""), for [`crate::compile_schema`]. The
/// tool is named after the file.
pub fn schema_document(file: &str, text: &str) -> Result<ToolSet, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Json,
            format!("{file}:{}:{}: invalid JSON: {e}", e.line(), e.column()),
        )
    })?;
    Ok(ToolSet {
        file: file.to_string(),
        text: text.to_string(),
        tools: vec![Tool {
            name: file.to_string(),
            description: None,
            parameters: value,
            pointer: String::new(),
        }],
    })
}

/// Parses `text` (the contents of `file`) as a tool list.
pub fn parse(file: &str, text: &str) -> Result<ToolSet, Error> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        Error::new(
            ErrorKind::Json,
            format!("{file}:{}:{}: invalid JSON: {e}", e.line(), e.column()),
        )
    })?;
    let mut set = ToolSet {
        file: file.to_string(),
        text: text.to_string(),
        tools: Vec::new(),
    };
    let (items, base) = match &value {
        Value::Array(items) => (items, String::new()),
        Value::Object(o) => match o.get("tools") {
            Some(Value::Array(items)) => (items, "/tools".to_string()),
            _ => {
                return Err(spec_err(
                    &set,
                    "",
                    "expected a JSON array of tools (or an object with a \"tools\" array)",
                ));
            }
        },
        _ => return Err(spec_err(&set, "", "expected a JSON array of tools")),
    };
    if items.is_empty() {
        return Err(spec_err(&set, &base, "the tool list is empty"));
    }
    let mut tools = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{base}/{i}");
        let Some(obj) = item.as_object() else {
            return Err(spec_err(&set, &at, "a tool must be a JSON object"));
        };
        let (func, at) = match obj.get("function") {
            Some(Value::Object(f)) => {
                if let Some(t) = obj.get("type") {
                    if t != "function" {
                        return Err(spec_err(
                            &set,
                            &format!("{at}/type"),
                            &format!("unsupported tool type {t} (expected \"function\")"),
                        ));
                    }
                }
                (f, format!("{at}/function"))
            }
            Some(_) => {
                return Err(spec_err(
                    &set,
                    &format!("{at}/function"),
                    "\"function\" must be an object",
                ))
            }
            None => (obj, at),
        };
        let name = match func.get("name") {
            Some(Value::String(n)) => n.clone(),
            Some(_) => {
                return Err(spec_err(
                    &set,
                    &format!("{at}/name"),
                    "the tool name must be a string",
                ))
            }
            None => return Err(spec_err(&set, &at, "the tool has no \"name\"")),
        };
        if name.is_empty() {
            return Err(spec_err(
                &set,
                &format!("{at}/name"),
                "the tool name is empty",
            ));
        }
        if let Some(c) = name.chars().find(|c| c.is_control()) {
            return Err(spec_err(
                &set,
                &format!("{at}/name"),
                &format!("the tool name {name:?} contains the control character {c:?}"),
            ));
        }
        let description = func
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string);
        let (parameters, pointer) = match func.get("parameters") {
            Some(p) => (p.clone(), format!("{at}/parameters")),
            None => (
                serde_json::json!({"type": "object", "properties": {}}),
                at.clone(),
            ),
        };
        tools.push(Tool {
            name,
            description,
            parameters,
            pointer,
        });
    }
    for (i, t) in tools.iter().enumerate() {
        if let Some(j) = tools[..i].iter().position(|u| u.name == t.name) {
            let at = tools[i]
                .pointer
                .rsplit_once('/')
                .map_or("", |p| p.0)
                .to_string();
            return Err(spec_err(
                &set,
                &at,
                &format!(
                    "duplicate tool name {:?}: tools #{j} and #{i} have the same name",
                    t.name
                ),
            ));
        }
    }
    set.tools = tools;
    Ok(set)
}

fn spec_err(set: &ToolSet, pointer: &str, msg: &str) -> Error {
    Error::new(ErrorKind::Spec, format!("{}: {msg}", set.place(pointer)))
}
