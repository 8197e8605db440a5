//! Scoring a reply: the papers' syntax error, tool-name accuracy, and BFCL's
//! AST match against `possible_answer`.

use serde_json::Value;
use tooldec_testkit::parsers::{reply, Calls};
use tooldec_testkit::schema::ToolValidators;

use crate::prompt::CallFormat;

/// One call of a reply: the tool name and the arguments as written.
pub type Call = (String, Value);

/// Reads a reply in `format` with the workspace's tolerant reading of
/// model replies ([`reply`]: written from the format descriptions, not
/// derived from the grammar, and tolerant of spacing and member order,
/// which are no syntax error in the papers' sense).
pub fn parse_reply(format: CallFormat, text: &str) -> Result<Calls, String> {
    match format {
        CallFormat::React => reply::react(text),
        CallFormat::Hermes => reply::hermes(text),
    }
}

/// Why a reply is a syntax error, or `None`: every call it makes parses,
/// names an existing tool and has arguments valid under that tool's schema
/// (the papers' definition, applied to each call of a parallel reply).
pub fn syntax_error(parsed: &Result<Calls, String>, validators: &ToolValidators) -> Option<String> {
    let calls = match parsed {
        Ok(c) => c,
        Err(e) => return Some(format!("unparseable: {e}")),
    };
    for (name, args) in calls {
        if let Err(e) = validators.check(name, args) {
            return Some(e);
        }
    }
    None
}

/// The called names equal the ground truth's, as multisets.
pub fn names_match(calls: &[Call], ground_truth: &[Value]) -> bool {
    let mut got: Vec<&str> = calls.iter().map(|(name, _)| name.as_str()).collect();
    let mut want: Vec<&str> = ground_truth
        .iter()
        .filter_map(|g| g.as_object()?.keys().next().map(String::as_str))
        .collect();
    got.sort_unstable();
    want.sort_unstable();
    got == want
}

/// BFCL's string normalization: drop spaces and `,./-_*^`, lowercase, and
/// read `'` as `"`.
fn standardize(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .flat_map(char::to_lowercase)
        .map(|c| if c == '\'' { '"' } else { c })
        .collect()
}

/// Whether `got` equals one acceptable value `want` (numbers by value,
/// an integer standing for a float; strings normalized; lists element-wise;
/// dicts key by key against their own acceptable lists).
fn value_matches(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::String(b)) => standardize(a) == standardize(b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_matches(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.keys().all(|k| b.contains_key(k))
                && b.iter().all(|(k, alts)| match a.get(k) {
                    Some(v) => acceptable(v, alts),
                    None => optional(alts),
                })
        }
        (a, b) => a == b,
    }
}

/// `alts` is the list of acceptable values of one parameter.
fn acceptable(got: &Value, alts: &Value) -> bool {
    match alts {
        Value::Array(list) => list.iter().any(|w| value_matches(got, w)),
        single => value_matches(got, single),
    }
}

/// The parameter may be left out (`""` is among its acceptable values).
fn optional(alts: &Value) -> bool {
    alts.as_array()
        .is_some_and(|l| l.iter().any(|v| v.as_str() == Some("")))
}

/// One call against one ground-truth entry `{name: {param: [values]}}`.
fn call_matches((name_got, args_got): &Call, expected: &Value) -> bool {
    let Some((name, params)) = expected.as_object().and_then(|o| o.iter().next()) else {
        return false;
    };
    let (Some(params), Some(args)) = (params.as_object(), args_got.as_object()) else {
        return false;
    };
    name_got == name
        && args.keys().all(|k| params.contains_key(k))
        && params.iter().all(|(k, alts)| match args.get(k) {
            Some(v) => acceptable(v, alts),
            None => optional(alts),
        })
}

/// BFCL's AST check: as many calls as the ground truth, matched one to one
/// in any order.
pub fn ast_match(calls: &[Call], ground_truth: &[Value]) -> bool {
    fn assign(calls: &[Call], gt: &[Value], used: &mut Vec<bool>, i: usize) -> bool {
        if i == gt.len() {
            return true;
        }
        for j in 0..calls.len() {
            if !used[j] && call_matches(&calls[j], &gt[i]) {
                used[j] = true;
                if assign(calls, gt, used, i + 1) {
                    return true;
                }
                used[j] = false;
            }
        }
        false
    }
    calls.len() == ground_truth.len()
        && assign(calls, ground_truth, &mut vec![false; calls.len()], 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, args: Value) -> Call {
        (name.into(), args)
    }

    #[test]
    fn ast_accepts_alternatives_optional_and_int_for_float() {
        let gt =
            vec![json!({"f": {"x": [7.0], "unit": ["cm", ""], "city": ["New York, NY", "NYC"]}})];
        assert!(ast_match(
            &[call("f", json!({"x": 7, "city": "new york ny"}))],
            &gt
        ));
        assert!(ast_match(
            &[call("f", json!({"x": 7.0, "unit": "cm", "city": "NYC"}))],
            &gt
        ));
        assert!(!ast_match(
            &[call("f", json!({"x": 8, "city": "NYC"}))],
            &gt
        ));
        assert!(
            !ast_match(&[call("f", json!({"city": "NYC"}))], &gt),
            "x is required"
        );
        assert!(!ast_match(
            &[call("f", json!({"x": 7, "city": "NYC", "extra": 1}))],
            &gt
        ));
        assert!(!ast_match(
            &[call("g", json!({"x": 7, "city": "NYC"}))],
            &gt
        ));
    }

    #[test]
    fn ast_parallel_any_order_one_to_one() {
        let gt = vec![json!({"f": {"a": [1]}}), json!({"f": {"a": [2]}})];
        let two = [call("f", json!({"a": 2})), call("f", json!({"a": 1}))];
        assert!(ast_match(&two, &gt));
        assert!(!ast_match(
            &[call("f", json!({"a": 1})), call("f", json!({"a": 1}))],
            &gt
        ));
        assert!(!ast_match(&two[..1], &gt));
        assert!(names_match(&two, &gt));
        assert!(!names_match(&two[..1], &gt));
    }

    #[test]
    fn ast_nested_dicts_and_lists() {
        let gt = vec![json!({"f": {"d": [{"k": ["v", "w"], "o": [""]}], "l": [[1, 2]]}})];
        assert!(ast_match(
            &[call("f", json!({"d": {"k": "W"}, "l": [1, 2]}))],
            &gt
        ));
        assert!(!ast_match(
            &[call("f", json!({"d": {"k": "z"}, "l": [1, 2]}))],
            &gt
        ));
        assert!(!ast_match(
            &[call("f", json!({"d": {"k": "v"}, "l": [2, 1]}))],
            &gt
        ));
    }

    #[test]
    fn syntax_error_needs_known_tool_and_valid_args() {
        let v = ToolValidators::new(&[json!({"name": "f", "parameters": {"type": "object",
            "properties": {"a": {"type": "integer"}}, "required": ["a"]}})]);
        assert_eq!(
            syntax_error(&Ok(vec![call("f", json!({"a": 1}))]), &v),
            None
        );
        assert!(syntax_error(&Ok(vec![call("g", json!({"a": 1}))]), &v).is_some());
        assert!(syntax_error(&Ok(vec![call("f", json!({"a": "x"}))]), &v).is_some());
        assert!(syntax_error(&Ok(vec![call("f", json!({}))]), &v).is_some());
        assert!(syntax_error(&Err("bad".into()), &v).is_some());
    }
}
