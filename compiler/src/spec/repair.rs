//! Repairs of sloppy tool lists (`ParseOptions::repair`): what real specs
//! get wrong in a way that has one clear reading. Each repair changes the
//! schema in place and says what it did and where, for the compile summary
//! and the artifact's metadata (`repaired`); anything with two readings is
//! left for lowering to refuse, as without repair.
//!
//! - A number keyword written as a string that is a JSON number
//!   (`"maximum": "50"`, the Spotify OpenAPI spec) is that number.
//! - An `enum` of non-array values on an array schema (BFCL-live tools write
//!   the allowed items there; as JSON Schema reads it, no array is allowed)
//!   is the `enum` of its items, when the items have none of their own.
//! - A tool repeated under the same name with identical parameters is kept
//!   once (in `finish`, which knows the other tools).

use serde_json::{Map, Value};

use crate::lower::json::escape_pointer as escape;

/// Keywords whose value is a number (or a count).
const NUMBER_KEYWORDS: [&str; 11] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// Keywords whose value is a schema.
const SCHEMA_KEYWORDS: [&str; 11] = [
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a list of schemas.
const SCHEMA_LIST_KEYWORDS: [&str; 5] = ["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value maps names to schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Deepest schema nesting walked (deeper parts are left as they are; the
/// lowering bounds its own depth).
const MAX_DEPTH: usize = 128;

/// Repairs `schema` (at JSON pointer `at`) in place; one line per repair,
/// prefixed by `tool`.
pub(super) fn schema(tool: &str, schema: &mut Value, at: &str, out: &mut Vec<String>) {
    walk(tool, schema, at, 0, out);
}

fn walk(tool: &str, v: &mut Value, at: &str, depth: usize, out: &mut Vec<String>) {
    let Some(obj) = v.as_object_mut() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    numbers(tool, obj, at, out);
    array_enum(tool, obj, at, out);
    for k in SCHEMA_KEYWORDS {
        if let Some(sub) = obj.get_mut(k).filter(|s| s.is_object()) {
            walk(tool, sub, &format!("{at}/{k}"), depth + 1, out);
        }
    }
    for k in SCHEMA_LIST_KEYWORDS {
        if let Some(Value::Array(list)) = obj.get_mut(k) {
            for (i, sub) in list.iter_mut().enumerate() {
                walk(tool, sub, &format!("{at}/{k}/{i}"), depth + 1, out);
            }
        }
    }
    for k in SCHEMA_MAP_KEYWORDS {
        if let Some(Value::Object(map)) = obj.get_mut(k) {
            for (name, sub) in map.iter_mut() {
                walk(
                    tool,
                    sub,
                    &format!("{at}/{k}/{}", escape(name)),
                    depth + 1,
                    out,
                );
            }
        }
    }
}

/// `"maximum": "50"` read as `50`: a string that parses as a finite JSON
/// number, nothing else ("fifty", "50 items" stay and are refused).
fn numbers(tool: &str, obj: &mut Map<String, Value>, at: &str, out: &mut Vec<String>) {
    for k in NUMBER_KEYWORDS {
        let Some(Value::String(s)) = obj.get(k) else {
            continue;
        };
        let Ok(n) = serde_json::from_str::<serde_json::Number>(s.trim()) else {
            continue;
        };
        if n.as_f64().is_none_or(|x| !x.is_finite()) {
            continue;
        }
        out.push(format!(
            "tool {tool:?} at {at}/{k}: the string {s:?} read as the number {n}"
        ));
        obj.insert(k.to_string(), Value::Number(n));
    }
}

/// An array schema's `enum` of non-array values moved to its items.
fn array_enum(tool: &str, obj: &mut Map<String, Value>, at: &str, out: &mut Vec<String>) {
    let is_array = match obj.get("type") {
        Some(Value::String(t)) => t == "array",
        _ => false,
    };
    let Some(Value::Array(values)) = obj.get("enum") else {
        return;
    };
    if !is_array || values.is_empty() || values.iter().any(Value::is_array) {
        return;
    }
    let items = obj
        .entry("items")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(items) = items.as_object_mut() else {
        return; // the pre-2020 list form: two readings
    };
    if items.contains_key("enum") || items.contains_key("const") {
        return;
    }
    let Some(values) = obj.remove("enum") else {
        return;
    };
    let n = values.as_array().map_or(0, Vec::len);
    if let Some(Value::Object(items)) = obj.get_mut("items") {
        items.insert("enum".to_string(), values);
    }
    out.push(format!(
        "tool {tool:?} at {at}/enum: the {n} values of an array's enum read as the enum of its items"
    ));
}
