//! BFCL (Berkeley Function-Calling Leaderboard) tool docs: question files
//! (JSON Lines, each line `{id, question, function: [...]}`), function-doc
//! files (`multi_turn_func_doc/*.json`, one function per line), or a JSON
//! array of either.
//!
//! BFCL's schemas use their own type names; they are converted in place
//! (only `type` values change and the non-standard `optional` key is
//! dropped), so pointers into the converted schema are pointers into the
//! file:
//!
//! - Python: `dict` → `object`, `float` → `number`, `tuple` → `array`,
//!   `any` (and `""`) → no `type` (any value); also `str`, `int`, `bool`,
//!   `list`.
//! - Java and JavaScript (`simple_java_*` / `simple_javascript_*` lines, or
//!   a function using a Java/JavaScript type name): BFCL asks for each
//!   argument as source code, and its ground truth holds either the literal's
//!   value (`3`, `true`, `[1, 2]`, `{"k": ...}`) or, for any type, an
//!   expression such as a variable or constant name (`"mapController"`,
//!   `"ResultSet.TYPE_SCROLL_INSENSITIVE"` for an `integer`). So each
//!   non-string type `T` becomes `[T, "string"]`: the value, or a string
//!   holding the expression. `String`/`char` → `string`; `boolean`/`Boolean`
//!   → `boolean`; `integer`/`int`/`long`/`short`/`byte`/`Bigint` →
//!   `integer`; `float`/`double` → `number`; `Array`/`ArrayList`/`List`/
//!   `Set`/`Queue`/`Stack`/`array`/`tuple` → `array`;
//!   `HashMap`/`Hashtable`/`Map`/`dict` → `object`; `any`/`Object`/`""` →
//!   any value. The parameters object itself stays `object`.
//!
//! Unknown type names are kept: the lowering reports them with their pointer.

use serde_json::{Map, Value};

use super::{no_arguments, plain, spec_err, Found, Read, ToolSet};
use crate::error::Error;

/// Type names only Java/JavaScript functions use in BFCL.
const SOURCE_ONLY: &[&str] = &[
    "String",
    "Boolean",
    "char",
    "Character",
    "long",
    "Long",
    "short",
    "Short",
    "byte",
    "Byte",
    "double",
    "Double",
    "Float",
    "Integer",
    "Bigint",
    "BigInteger",
    "BigDecimal",
    "HashMap",
    "Hashtable",
    "Map",
    "TreeMap",
    "ArrayList",
    "LinkedList",
    "List",
    "Array",
    "Set",
    "HashSet",
    "Queue",
    "Stack",
    "Deque",
    "Object",
];

/// Python-side BFCL type names that are not JSON Schema's.
const PYTHON_ONLY: &[&str] = &[
    "dict", "float", "tuple", "any", "", "str", "int", "bool", "list",
];

pub(super) fn read(set: &ToolSet, root: &Value) -> Result<Read, Error> {
    let mut read = Read::default();
    match root {
        Value::Array(items) => {
            // Several questions are several lists; function docs are one.
            let questions = items.iter().filter(|v| v.get("function").is_some()).count();
            read.aggregate = questions > 1;
            for (i, item) in items.iter().enumerate() {
                entry(set, item, &format!("/{i}"), &mut read)?;
            }
        }
        Value::Object(_) => entry(set, root, "", &mut read)?,
        _ => {
            return Err(spec_err(
                set,
                "",
                "expected BFCL questions (JSON Lines of {\"id\", \"question\", \"function\": [...]}) or function docs",
            ))
        }
    }
    Ok(read)
}

/// One line (or array item): a question with a `function` array, or one
/// function doc.
fn entry(set: &ToolSet, item: &Value, at: &str, read: &mut Read) -> Result<(), Error> {
    let Some(obj) = item.as_object() else {
        return Err(spec_err(
            set,
            at,
            "a BFCL entry must be a JSON object (a question or a function doc)",
        ));
    };
    match obj.get("function") {
        Some(Value::Array(funcs)) => {
            let id = obj.get("id").and_then(Value::as_str).unwrap_or("");
            let lang_by_id = source_language(id);
            for (j, f) in funcs.iter().enumerate() {
                let here = format!("{at}/function/{j}");
                read.tools.push(function(set, f, &here, lang_by_id)?);
            }
            Ok(())
        }
        Some(_) => Err(spec_err(
            set,
            &format!("{at}/function"),
            "\"function\" must be an array of function docs",
        )),
        None if obj.contains_key("name") => {
            read.tools.push(function(set, item, at, false)?);
            Ok(())
        }
        None if obj.contains_key("involved_classes") => Err(spec_err(
            set,
            at,
            "this BFCL question has no \"function\" array: its tools are the classes in \"involved_classes\", whose docs are the files in multi_turn_func_doc/ (parse those)",
        )),
        None => Err(spec_err(
            set,
            at,
            "expected a BFCL question (with a \"function\" array) or a function doc (with a \"name\")",
        )),
    }
}

/// Whether a BFCL id names a Java or JavaScript category (`simple_java_3`).
fn source_language(id: &str) -> bool {
    id.split('_').any(|t| t == "java" || t == "javascript")
}

fn function(set: &ToolSet, f: &Value, at: &str, source: bool) -> Result<Found, Error> {
    let Some(obj) = f.as_object() else {
        return Err(spec_err(set, at, "a function doc must be a JSON object"));
    };
    let name = plain::name_of(set, obj, at)?;
    let description = obj
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (parameters, pointer) = match obj.get("parameters") {
        Some(p) => {
            let source = source || uses_source_types(p);
            let mut p = p.clone();
            convert(&mut p, source, true);
            (p, format!("{at}/parameters"))
        }
        None => (no_arguments(), at.to_string()),
    };
    Ok(Found {
        name,
        name_at: format!("{at}/name"),
        entry: at.to_string(),
        description,
        parameters,
        pointer,
    })
}

/// Whether a schema uses a type name of BFCL's (Python, Java or JavaScript)
/// that JSON Schema does not have.
pub(super) fn uses_bfcl_types(schema: &Value) -> bool {
    any_type(schema, &|t| {
        PYTHON_ONLY.contains(&t) || SOURCE_ONLY.contains(&t)
    })
}

fn uses_source_types(schema: &Value) -> bool {
    any_type(schema, &|t| SOURCE_ONLY.contains(&t))
}

fn any_type(schema: &Value, pred: &dyn Fn(&str) -> bool) -> bool {
    let Value::Object(o) = schema else {
        return false;
    };
    let here = match o.get("type") {
        Some(Value::String(t)) => pred(t),
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str().is_some_and(pred)),
        _ => false,
    };
    here || children(o).any(|c| any_type(c, pred))
}

/// The subschemas BFCL schemas nest: property schemas, `items`,
/// `additionalProperties`, and the combinators.
fn children(o: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    let props = o
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|p| p.values());
    let single = ["items", "additionalProperties"]
        .into_iter()
        .filter_map(|k| o.get(k));
    let lists = ["items", "anyOf", "oneOf", "allOf"]
        .into_iter()
        .filter_map(|k| o.get(k).and_then(Value::as_array))
        .flatten();
    props.chain(single).chain(lists)
}

/// Converts a BFCL schema to JSON Schema in place.
fn convert(schema: &mut Value, source: bool, root: bool) {
    let Value::Object(o) = schema else {
        return;
    };
    o.remove("optional");
    if let Some(t) = o.get("type").cloned() {
        let mapped = match &t {
            Value::String(s) => map_type(s, source, root),
            Value::Array(ts) => {
                let mut out: Vec<Value> = Vec::new();
                let mut any = false;
                for t in ts {
                    match t.as_str().map(|s| map_type(s, source, root)) {
                        Some(Some(Value::Array(more))) => out.extend(more),
                        Some(Some(v)) => out.push(v),
                        Some(None) => any = true,
                        None => out.push(t.clone()),
                    }
                }
                let mut dedup: Vec<Value> = Vec::new();
                for v in out {
                    if !dedup.contains(&v) {
                        dedup.push(v);
                    }
                }
                (!any).then_some(Value::Array(dedup))
            }
            other => Some(other.clone()),
        };
        match mapped {
            Some(v) => {
                o.insert("type".to_string(), v);
            }
            None => {
                o.remove("type");
            }
        }
    }
    if let Some(Value::Object(props)) = o.get_mut("properties") {
        for p in props.values_mut() {
            convert(p, source, false);
        }
    }
    for k in ["items", "additionalProperties"] {
        match o.get_mut(k) {
            Some(v @ Value::Object(_)) => convert(v, source, false),
            Some(Value::Array(vs)) if k == "items" => {
                for v in vs {
                    convert(v, source, false);
                }
            }
            _ => {}
        }
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(vs)) = o.get_mut(k) {
            for v in vs {
                convert(v, source, false);
            }
        }
    }
}

/// The JSON Schema `type` for a BFCL type name; `None` for any value.
fn map_type(t: &str, source: bool, root: bool) -> Option<Value> {
    let base = if source {
        match t {
            "String" | "string" | "str" | "char" | "Character" => "string",
            "boolean" | "Boolean" | "bool" => "boolean",
            "integer" | "int" | "Integer" | "long" | "Long" | "short" | "Short" | "byte"
            | "Byte" | "Bigint" | "BigInteger" => "integer",
            "float" | "Float" | "double" | "Double" | "number" | "BigDecimal" => "number",
            "Array" | "ArrayList" | "LinkedList" | "List" | "Set" | "HashSet" | "Queue"
            | "Stack" | "Deque" | "array" | "tuple" | "list" => "array",
            "HashMap" | "Hashtable" | "Map" | "TreeMap" | "dict" | "object" => "object",
            "any" | "Object" | "" => return None,
            other => return Some(Value::String(other.to_string())),
        }
    } else {
        match t {
            "dict" => "object",
            "float" => "number",
            "tuple" | "list" => "array",
            "str" => "string",
            "int" => "integer",
            "bool" => "boolean",
            "any" | "" => return None,
            other => return Some(Value::String(other.to_string())),
        }
    };
    if source && !root && base != "string" {
        Some(serde_json::json!([base, "string"]))
    } else {
        Some(Value::String(base.to_string()))
    }
}
