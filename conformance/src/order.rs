//! Serializing instances the way the machine writes them.
//!
//! The machine generates an object's declared properties in the schema's
//! declared order. JSON object member order carries no meaning, so before an
//! instance is serialized its members are reordered to follow the schema:
//! every key of every `properties` object of the whole schema document, in
//! document order (first occurrence wins), gets a global rank; members are
//! sorted by rank, members without one last in their original order. The
//! value is the same; only its spelling changes.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Keywords whose values are data, not schemas: their keys are not
/// property declarations.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// The global rank of property names in a schema document.
#[derive(Debug, Clone, Default)]
pub struct Rank(HashMap<String, usize>);

impl Rank {
    /// Ranks every key of every `properties` object of `schema`: a
    /// `properties` object's keys in order when it is reached, then the
    /// schemas inside it; objects' members in document order.
    pub fn of_schema(schema: &Value) -> Rank {
        let mut rank = Rank::default();
        rank.visit(schema);
        rank
    }

    fn visit(&mut self, v: &Value) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    if DATA_KEYWORDS.contains(&k.as_str()) {
                        continue;
                    }
                    match (k.as_str(), x) {
                        ("properties", Value::Object(props)) => {
                            for name in props.keys() {
                                let n = self.0.len();
                                self.0.entry(name.clone()).or_insert(n);
                            }
                            for s in props.values() {
                                self.visit(s);
                            }
                        }
                        _ => self.visit(x),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.visit(x)),
            _ => {}
        }
    }

    /// The rank of `key`, if declared anywhere.
    pub fn get(&self, key: &str) -> Option<usize> {
        self.0.get(key).copied()
    }
}

/// `v` with every object's members sorted by `rank` (stable; unranked
/// members last, in their original order).
pub fn reorder(v: &Value, rank: &Rank) -> Value {
    match v {
        Value::Object(o) => {
            let mut members: Vec<(usize, &String, &Value)> =
                o.iter().enumerate().map(|(i, (k, x))| (i, k, x)).collect();
            members.sort_by_key(|&(i, k, _)| (rank.get(k).unwrap_or(usize::MAX), i));
            let mut out = Map::with_capacity(members.len());
            for (_, k, x) in members {
                out.insert(k.clone(), reorder(x, rank));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| reorder(x, rank)).collect()),
        other => other.clone(),
    }
}

/// JSON with one space after each `:` and `,` (Python's `json.dumps`
/// default style): `{"a": 1, "b": [1, 2]}`.
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
                out.push_str(&serde_json::to_string(k).expect("a string serializes"));
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
        other => out.push_str(&serde_json::to_string(other).expect("a JSON value serializes")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ranks_follow_the_document() {
        let schema = json!({
            "$defs": {"p": {"properties": {"z": {}, "a": {}}}},
            "properties": {"b": {"properties": {"y": {}, "a": {}}}, "a": {}},
            "enum": [{"q": 1}]
        });
        let rank = Rank::of_schema(&schema);
        assert_eq!(rank.get("z"), Some(0));
        assert_eq!(rank.get("a"), Some(1));
        assert_eq!(rank.get("b"), Some(2));
        assert_eq!(rank.get("y"), Some(3));
        assert_eq!(rank.get("q"), None);
        let v = json!({"x": 1, "b": {"a": 1, "y": [{"b": 2, "w": 0, "z": 3}]}, "a": 2});
        let r = reorder(&v, &rank);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"a":2,"b":{"a":1,"y":[{"z":3,"b":2,"w":0}]},"x":1}"#
        );
        assert_eq!(
            spaced(&r),
            r#"{"a": 2, "b": {"a": 1, "y": [{"z": 3, "b": 2, "w": 0}]}, "x": 1}"#
        );
    }
}
