//! The dialects whose schemas are standard JSON Schema already, read as
//! they are: OpenAI (`parameters`), Anthropic (`input_schema`) and MCP
//! (`inputSchema`, also inside `tools/list` results, JSON-RPC responses and
//! LiveMCPBench's per-server captures).

use serde_json::{Map, Value};

use super::{esc, no_arguments, spec_err, Found, Read, ToolSet};
use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    OpenAi,
    Anthropic,
    Mcp,
}

impl Kind {
    fn schema_key(self) -> &'static str {
        match self {
            Kind::OpenAi => "parameters",
            Kind::Anthropic => "input_schema",
            Kind::Mcp => "inputSchema",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Kind::OpenAi => "OpenAI",
            Kind::Anthropic => "Anthropic",
            Kind::Mcp => "MCP",
        }
    }
}

pub(super) fn read(set: &ToolSet, root: &Value, kind: Kind) -> Result<Read, Error> {
    let mut read = Read::default();
    match root {
        Value::Array(items) => list(set, items, "", kind, &mut read)?,
        Value::Object(o) => {
            if kind == Kind::Mcp {
                if let Some(e) = o.get("error") {
                    return Err(spec_err(
                        set,
                        "/error",
                        &format!("a JSON-RPC error response, not a tools/list result: {e}"),
                    ));
                }
                if let Some(r) = o.get("result") {
                    let Some(Value::Array(items)) = r.get("tools") else {
                        return Err(spec_err(
                            set,
                            "/result",
                            "expected a tools/list result ({\"tools\": [...]})",
                        ));
                    };
                    read.base = "/result/tools".into();
                    list(set, items, "/result/tools", kind, &mut read)?;
                    return Ok(read);
                }
                if let Some(Value::Object(servers)) = o.get("tools") {
                    read.base = "/tools".into();
                    servers_of(set, servers, "/tools", &mut read)?;
                    return Ok(read);
                }
            }
            match o.get("tools") {
                Some(Value::Array(items)) => {
                    read.base = "/tools".into();
                    list(set, items, "/tools", kind, &mut read)?;
                }
                Some(_) => return Err(spec_err(set, "/tools", "\"tools\" must be an array")),
                None if o.contains_key("name") || o.contains_key("function") => {
                    read.tools.push(tool(set, o, "", kind)?);
                }
                None => {
                    return Err(spec_err(
                        set,
                        "",
                        "expected a JSON array of tools (or an object with a \"tools\" array)",
                    ));
                }
            }
        }
        _ => return Err(spec_err(set, "", "expected a JSON array of tools")),
    }
    Ok(read)
}

fn list(
    set: &ToolSet,
    items: &[Value],
    base: &str,
    kind: Kind,
    read: &mut Read,
) -> Result<(), Error> {
    for (i, item) in items.iter().enumerate() {
        let at = format!("{base}/{i}");
        let Some(obj) = item.as_object() else {
            return Err(spec_err(set, &at, "a tool must be a JSON object"));
        };
        // A LiveMCPBench server entry: {name, ..., "tools": {KEY: {"tools": [...]}}}.
        if kind == Kind::Mcp {
            if let Some(Value::Object(servers)) = obj.get("tools") {
                servers_of(set, servers, &format!("{at}/tools"), read)?;
                continue;
            }
            if let (Some(Value::Array(tools)), true) =
                (obj.get("tools"), obj.contains_key("server_name"))
            {
                read.aggregate = true;
                list(set, tools, &format!("{at}/tools"), kind, read)?;
                continue;
            }
        }
        read.tools.push(tool(set, obj, &at, kind)?);
    }
    Ok(())
}

/// `{KEY: {"server_name": ..., "tools": [...]}, ...}` (or `{KEY: [...]}`):
/// the tools of several MCP servers.
fn servers_of(
    set: &ToolSet,
    servers: &Map<String, Value>,
    at: &str,
    read: &mut Read,
) -> Result<(), Error> {
    read.aggregate = true;
    for (key, server) in servers {
        let here = format!("{at}/{}", esc(key));
        match server {
            Value::Array(tools) => list(set, tools, &here, Kind::Mcp, read)?,
            Value::Object(s) => match s.get("tools") {
                Some(Value::Array(tools)) => {
                    list(set, tools, &format!("{here}/tools"), Kind::Mcp, read)?
                }
                _ => {
                    return Err(spec_err(
                        set,
                        &here,
                        "an MCP server entry must have a \"tools\" array",
                    ))
                }
            },
            _ => {
                return Err(spec_err(
                    set,
                    &here,
                    "an MCP server entry must be an object with a \"tools\" array",
                ))
            }
        }
    }
    Ok(())
}

/// One tool object at `at`.
fn tool(set: &ToolSet, obj: &Map<String, Value>, at: &str, kind: Kind) -> Result<Found, Error> {
    let (func, at) = match (kind, obj.get("function")) {
        (Kind::OpenAi, Some(Value::Object(f))) => {
            check_type(set, obj, at, "function")?;
            (f, format!("{at}/function"))
        }
        (Kind::OpenAi, Some(_)) => {
            return Err(spec_err(
                set,
                &format!("{at}/function"),
                "\"function\" must be an object",
            ))
        }
        (Kind::OpenAi, None) => {
            check_type(set, obj, at, "function")?;
            (obj, at.to_string())
        }
        (Kind::Anthropic, _) => {
            check_type(set, obj, at, "custom")?;
            (obj, at.to_string())
        }
        (Kind::Mcp, _) => (obj, at.to_string()),
    };
    let entry = at.clone();
    let name = name_of(set, func, &at)?;
    let description = func
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    let key = kind.schema_key();
    let (parameters, pointer) = match func.get(key) {
        Some(p) => (p.clone(), format!("{at}/{key}")),
        None if kind == Kind::OpenAi => (no_arguments(), at.clone()),
        None => {
            return Err(spec_err(
                set,
                &at,
                &format!("the {} tool {name:?} has no {key:?}", kind.label()),
            ))
        }
    };
    Ok(Found {
        name,
        name_at: format!("{entry}/name"),
        entry,
        description,
        parameters,
        pointer,
    })
}

/// A `type` member, when present, must be `expected`.
fn check_type(
    set: &ToolSet,
    obj: &Map<String, Value>,
    at: &str,
    expected: &str,
) -> Result<(), Error> {
    match obj.get("type") {
        Some(t) if t != expected => Err(spec_err(
            set,
            &format!("{at}/type"),
            &format!("unsupported tool type {t} (expected \"{expected}\")"),
        )),
        _ => Ok(()),
    }
}

/// The `name` member of a tool object at `at`.
pub(super) fn name_of(set: &ToolSet, obj: &Map<String, Value>, at: &str) -> Result<String, Error> {
    match obj.get("name") {
        Some(Value::String(n)) => Ok(n.clone()),
        Some(_) => Err(spec_err(
            set,
            &format!("{at}/name"),
            "the tool name must be a string",
        )),
        None => Err(spec_err(set, at, "the tool has no \"name\"")),
    }
}
