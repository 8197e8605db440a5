//! Serializing instances the way the machine writes them.
//!
//! The machine generates an object's declared properties in the schema's
//! declared order. JSON object member order carries no meaning, so before an
//! instance is serialized its members are reordered to follow the schema:
//! every key of every `properties` object of the whole schema document, in
//! document order (first occurrence wins), gets a global rank; members are
//! sorted by rank, members without one last in their original order. The
//! value is the same; only its spelling changes.
//!
//! One global rank cannot suit every object when two `properties` objects
//! declare the same names in different orders (BFCL's `anyOf` of functions:
//! `year` before `actor_name` in one, after it in another). So a second
//! order is tried too, per object: the members declared by the
//! `properties` object that declares the most of them in its order, then
//! the others by the global rank. Candidates are first the `properties`
//! objects found under a property of the same name as the member holding
//! the instance object (the schema of `"f": {...}` is found under
//! `"properties": {"f": ...}`, through `anyOf`, `items` and the like); ties
//! go to the one declaring the fewest names, then to the first.
//! An instance form counts as accepted when either order is accepted: both
//! are the same value, so this is as strict for invalid instances as for
//! valid ones.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Keywords whose values are data, not schemas: their keys are not
/// property declarations.
const DATA_KEYWORDS: &[&str] = &["enum", "const", "default", "examples"];

/// The global rank of property names in a schema document, and each
/// `properties` object's names in order.
#[derive(Debug, Clone, Default)]
pub struct Rank {
    global: HashMap<String, usize>,
    /// Each `properties` object's names, with the name of the property
    /// whose schema holds it (`None` at the root and in definitions).
    lists: Vec<(Option<String>, Vec<String>)>,
}

impl Rank {
    /// Ranks every key of every `properties` object of `schema`: a
    /// `properties` object's keys in order when it is reached, then the
    /// schemas inside it; objects' members in document order.
    pub fn of_schema(schema: &Value) -> Rank {
        let mut rank = Rank::default();
        rank.visit(schema, None);
        rank
    }

    fn visit(&mut self, v: &Value, parent: Option<&str>) {
        match v {
            Value::Object(o) => {
                for (k, x) in o {
                    if DATA_KEYWORDS.contains(&k.as_str()) {
                        continue;
                    }
                    match (k.as_str(), x) {
                        ("properties", Value::Object(props)) => {
                            for name in props.keys() {
                                let n = self.global.len();
                                self.global.entry(name.clone()).or_insert(n);
                            }
                            if !props.is_empty() {
                                self.lists.push((
                                    parent.map(str::to_string),
                                    props.keys().cloned().collect(),
                                ));
                            }
                            for (name, s) in props {
                                self.visit(s, Some(name));
                            }
                        }
                        ("$defs" | "definitions", _) => self.visit(x, None),
                        _ => self.visit(x, parent),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| self.visit(x, parent)),
            _ => {}
        }
    }

    /// The rank of `key`, if declared anywhere.
    pub fn get(&self, key: &str) -> Option<usize> {
        self.global.get(key).copied()
    }

    /// The names of the `properties` object that declares the most of
    /// `keys`, among those under a property named `parent` if any declares
    /// one of them, else among all (ties: fewest names, then first).
    fn best_list<'k>(
        &self,
        keys: impl Iterator<Item = &'k String> + Clone,
        parent: Option<&str>,
    ) -> Option<&[String]> {
        let pick = |under_parent: bool| {
            let mut best: Option<(&Vec<String>, usize)> = None;
            for (p, l) in &self.lists {
                if under_parent && p.as_deref() != parent {
                    continue;
                }
                let n = keys.clone().filter(|k| l.contains(k)).count();
                let better = best.is_none_or(|(b, bn)| n > bn || (n == bn && l.len() < b.len()));
                if n > 0 && better {
                    best = Some((l, n));
                }
            }
            best.map(|(l, _)| l.as_slice())
        };
        pick(true).or_else(|| pick(false))
    }
}

/// `v` with every object's members in the order of the `properties`
/// object that declares the most of them, then the rest by `rank` (stable;
/// unranked members last, in their original order).
pub fn reorder_local(v: &Value, rank: &Rank) -> Value {
    reorder_under(v, rank, None)
}

/// [`reorder_local`] for a value held by the member `parent`.
fn reorder_under(v: &Value, rank: &Rank, parent: Option<&str>) -> Value {
    match v {
        Value::Object(o) => {
            let list = rank.best_list(o.keys(), parent);
            let mut members: Vec<(usize, &String, &Value)> =
                o.iter().enumerate().map(|(i, (k, x))| (i, k, x)).collect();
            members.sort_by_key(|&(i, k, _)| {
                match list.and_then(|l| l.iter().position(|n| n == k)) {
                    Some(p) => (0, p, i),
                    None => (1, rank.get(k).unwrap_or(usize::MAX), i),
                }
            });
            let mut out = Map::with_capacity(members.len());
            for (_, k, x) in members {
                out.insert(k.clone(), reorder_under(x, rank, Some(k)));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| reorder_under(x, rank, parent)).collect()),
        other => other.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tooldec_testkit::render::spaced;

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
        // Per object: {"y", "a"} is declared by b's properties, in that order.
        let r = reorder_local(&v, &rank);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"b":{"y":[{"z":3,"b":2,"w":0}],"a":1},"a":2,"x":1}"#
        );
    }

    #[test]
    fn the_local_order_follows_the_best_declaration() {
        // BFCL_multiple_118's shape: "year" before "actor_name" in the first
        // function, after it in the second.
        let schema = json!({"anyOf": [
            {"properties": {"s": {"properties": {"company": {}, "year": {}}}}},
            {"properties": {"f": {"properties": {"actor_name": {}, "year": {}, "category": {}}}}}
        ]});
        let rank = Rank::of_schema(&schema);
        let v = json!({"f": {"year": 2010, "category": "", "actor_name": "L"}});
        assert_eq!(
            serde_json::to_string(&reorder(&v, &rank)).unwrap(),
            r#"{"f":{"year":2010,"actor_name":"L","category":""}}"#
        );
        assert_eq!(
            serde_json::to_string(&reorder_local(&v, &rank)).unwrap(),
            r#"{"f":{"actor_name":"L","year":2010,"category":""}}"#
        );
        // BFCL_multiple_36's shape: both functions declare all three names;
        // the one under the member's own name decides.
        let schema = json!({"anyOf": [
            {"properties": {"acc": {"properties": {"v": {}, "t": {}, "d": {}}}}},
            {"properties": {"rest": {"properties": {"d": {}, "t": {}, "v": {}}}}}
        ]});
        let rank = Rank::of_schema(&schema);
        let v = json!({"rest": {"v": 0, "t": 4, "d": 20}});
        assert_eq!(
            serde_json::to_string(&reorder_local(&v, &rank)).unwrap(),
            r#"{"rest":{"d":20,"t":4,"v":0}}"#
        );
    }
}
