//! The lowering against hand-written schemas: what each keyword accepts
//! and rejects, byte for byte on the DFA of the schema on its own.

use serde_json::{json, Value};

use super::JsonOptions;
use crate::{build_schema_dfa, spec, Options};

fn machine(schema: &Value, json: JsonOptions) -> Result<crate::automaton::dfa::Dfa, crate::Error> {
    let text = schema.to_string();
    let set = spec::schema_document("schema.json", &text)?;
    let opts = Options {
        json,
        ..Options::default()
    };
    Ok(build_schema_dfa(&set, &opts, &mut |_| {})?.0.dfa.to_dense())
}

fn strict() -> JsonOptions {
    JsonOptions {
        open_objects: true,
        ..JsonOptions::default()
    }
}

/// Asserts which texts the schema's machine accepts.
#[track_caller]
fn check(schema: Value, yes: &[&str], no: &[&str]) {
    check_with(schema, strict(), yes, no)
}

#[track_caller]
fn check_with(schema: Value, opts: JsonOptions, yes: &[&str], no: &[&str]) {
    let dfa = machine(&schema, opts).unwrap_or_else(|e| panic!("{schema}: {e}"));
    for t in yes {
        assert!(dfa.accepts(t.as_bytes()), "{schema} should accept {t}");
    }
    for t in no {
        assert!(!dfa.accepts(t.as_bytes()), "{schema} should reject {t}");
    }
}

#[track_caller]
fn refused(schema: Value, needle: &str) {
    match machine(&schema, strict()) {
        Ok(_) => panic!("{schema} should be refused"),
        Err(e) => assert!(e.to_string().contains(needle), "{schema}: {e}"),
    }
}

#[test]
fn type_lists_and_untyped_values() {
    check(
        json!({"type": ["string", "null"]}),
        &["\"a\"", "null"],
        &["1", "true", "{}"],
    );
    check(
        json!({}),
        &["1", "\"a\"", "[1,{\"a\":null}]", "{}"],
        &["", "nul"],
    );
    check(json!(true), &["[]", "false"], &["tru"]);
    // Keywords of one kind leave the others free.
    check(
        json!({"minLength": 2}),
        &["\"ab\"", "1", "null"],
        &["\"a\""],
    );
    check(json!({"type": "integer"}), &["0", "-12"], &["1.5", "\"1\""]);
}

#[test]
fn enum_and_const_of_any_value() {
    check(
        json!({"enum": [1, "a", null, [1, 2], {"k": true}]}),
        &[
            "1",
            "1.0",
            "\"a\"",
            "null",
            "[1, 2]",
            "[1,2]",
            "{\"k\": true}",
        ],
        &["2", "\"b\"", "[2,1]", "{\"k\":false}"],
    );
    check(json!({"const": 2.5}), &["2.5"], &["2", "2.50"]);
    check(
        json!({"type": "string", "enum": ["a", 1, "bb"], "maxLength": 1}),
        &["\"a\""],
        &["1", "\"bb\""],
    );
}

#[test]
fn objects_required_and_additional() {
    let s = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]});
    check(
        s.clone(),
        &[
            "{\"a\":1}",
            "{\"a\": 1, \"b\": \"x\"}",
            "{\"a\":1,\"zz\":null}",
        ],
        &["{}", "{\"b\":\"x\"}", "{\"a\":\"1\"}", "{\"a\":1,\"a\":2}"],
    );
    // Tool mode: closed unless said otherwise.
    check_with(
        s,
        JsonOptions::default(),
        &["{\"a\":1}"],
        &["{\"a\":1,\"zz\":null}"],
    );
    check(
        json!({"properties": {"a": {}}, "additionalProperties": false}),
        &["{\"a\":1}", "{}"],
        &["{\"b\":1}"],
    );
    check(
        json!({"properties": {"a": {}}, "additionalProperties": {"type": "boolean"}}),
        &["{\"a\":1,\"b\":true}"],
        &["{\"b\":1}"],
    );
    // An extra key is never a declared one in disguise.
    check(
        json!({"properties": {"a": {"type": "integer"}}}),
        &["{\"ab\":\"x\"}", "{\"b\":\"x\"}"],
        &["{\"a\":\"x\"}"],
    );
}

#[test]
fn property_counts_and_dependencies() {
    check(
        json!({"properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": false, "minProperties": 2, "maxProperties": 2}),
        &["{\"a\":1,\"b\":2}", "{\"a\":1,\"c\":2}"],
        &["{\"a\":1}", "{\"a\":1,\"b\":2,\"c\":3}"],
    );
    check(
        json!({"type": "object", "maxProperties": 1}),
        &["{}", "{\"x\":1}"],
        &["{\"x\":1,\"y\":2}"],
    );
    check(
        json!({"properties": {"a": {}, "b": {}}, "required": ["a"], "dependentRequired": {"a": ["b"]}}),
        &["{\"a\":1,\"b\":2}"],
        &["{\"a\":1}"],
    );
}

#[test]
fn any_order_objects() {
    let opts = JsonOptions {
        any_order: 3,
        ..JsonOptions::default()
    };
    check_with(
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {}}, "required": ["a", "b"]}),
        opts,
        &[
            "{\"b\":1,\"a\":2}",
            "{\"c\":null,\"a\":1,\"b\":2}",
            "{\"a\":1,\"b\":2}",
        ],
        &["{\"b\":1}", "{\"a\":1,\"b\":2,\"a\":3}"],
    );
}

#[test]
fn arrays() {
    check(
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
        &["[1]", "[1, 2, 3]"],
        &["[]", "[1,2,3,4]", "[\"a\"]"],
    );
    check(
        json!({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false}),
        &["[]", "[1]", "[1,\"a\"]"],
        &["[1,\"a\",null]", "[\"a\"]"],
    );
    check(
        json!({"items": [{"type": "integer"}], "additionalItems": {"type": "string"}, "minItems": 2}),
        &["[1,\"a\"]", "[1,\"a\",\"b\"]"],
        &["[1]", "[1,2]"],
    );
    check(json!({"type": "array"}), &["[]", "[1,[2,{}]]"], &["[1,]"]);
}

#[test]
fn strings() {
    check(
        json!({"type": "string", "minLength": 2, "maxLength": 3}),
        &["\"ab\"", "\"a\\n\"", "\"\u{1F600}x\""],
        &["\"a\"", "\"abcd\""],
    );
    check(
        json!({"type": "string", "pattern": "^[a-z]+$"}),
        &["\"abc\""],
        &["\"\"", "\"aB\""],
    );
    check(
        json!({"type": "string", "pattern": "b"}),
        &["\"abc\""],
        &["\"ac\""],
    );
    check(
        json!({"type": "string", "format": "date"}),
        &["\"2024-02-29\""],
        &["\"2023-02-29\"", "\"x\""],
    );
    // Unknown formats are annotations.
    check(
        json!({"type": "string", "format": "x-color"}),
        &["\"red\""],
        &[],
    );
}

#[test]
fn numbers() {
    check(
        json!({"type": "integer", "minimum": -3, "exclusiveMaximum": 10, "multipleOf": 3}),
        &["-3", "0", "9"],
        &["-6", "10", "12", "1"],
    );
    check(
        json!({"type": "number", "minimum": 0.5, "maximum": 2}),
        &["0.5", "1", "2", "2.0", "1.25"],
        &["0.49", "2.01", "-1"],
    );
    check(
        json!({"type": "number", "multipleOf": 0.5}),
        &["1", "1.5", "-2.0"],
        &["1.25"],
    );
    check(
        json!({"type": "number", "not": {"type": "integer"}}),
        &["1.5"],
        &["1", "2"],
    );
}

#[test]
fn combinators() {
    check(
        json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 5}]}),
        &["\"x\"", "7"],
        &["3", "null"],
    );
    check(
        json!({"allOf": [{"type": "integer"}, {"minimum": 2}, {"maximum": 4}]}),
        &["2", "4"],
        &["1", "5", "3.5"],
    );
    check(
        json!({"type": "object", "properties": {"a": {}, "b": {}}, "anyOf": [{"required": ["a"]}, {"required": ["b"]}], "additionalProperties": false}),
        &["{\"a\":1}", "{\"b\":1}", "{\"a\":1,\"b\":2}"],
        &["{}"],
    );
    // allOf with additionalProperties false in one part forbids the other's names.
    check(
        json!({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]}),
        &["{\"a\":1}"],
        &["{\"b\":1}"],
    );
    check(
        json!({"oneOf": [{"type": "string"}, {"type": "array"}]}),
        &["\"x\"", "[]"],
        &["1"],
    );
    check(
        json!({"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "b"}}, "required": ["kind"]}
        ]}),
        &["{\"kind\":\"a\",\"x\":1}", "{\"kind\":\"b\"}"],
        &["{\"kind\":\"c\"}"],
    );
    refused(
        json!({"oneOf": [{"type": "integer"}, {"minimum": 2}]}),
        "oneOf",
    );
    // Without a type, both branches accept every non-object: not disjoint.
    refused(
        json!({"oneOf": [
            {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"properties": {"kind": {"const": "b"}}, "required": ["kind"]}
        ]}),
        "oneOf",
    );
    check(
        json!({"type": ["integer", "string"], "not": {"type": "string"}}),
        &["1"],
        &["\"a\""],
    );
}

#[test]
fn refs_and_recursion() {
    check(
        json!({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/$defs/pos"}}),
        &["[1,2]"],
        &["[0]"],
    );
    let tree = json!({
        "definitions": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}, "additionalProperties": false}},
        "$ref": "#/definitions/node"
    });
    check(
        tree.clone(),
        &["{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":3}]}]}"],
        &["{\"v\":\"x\"}"],
    );
    // Beyond the bound the recursion is cut off: a subset.
    let deep = "{\"kids\":[{\"kids\":[{\"kids\":[{\"kids\":[{}]}]}]}]}";
    check_with(
        tree,
        JsonOptions {
            max_recursion: 2,
            ..strict()
        },
        &["{\"kids\":[{}]}"],
        &[deep],
    );
    refused(json!({"$ref": "other.json#/a"}), "not local");
    refused(json!({"$ref": "#/nowhere"}), "points at nothing");
}

#[test]
fn refusals_and_relax() {
    refused(json!({"type": "array", "uniqueItems": true}), "uniqueItems");
    refused(json!({"not": {"minimum": 3}}), "not");
    refused(json!({"type": "string", "pattern": "(?=a)"}), "pattern");
    let relaxed = JsonOptions {
        relax: true,
        ..strict()
    };
    check_with(
        json!({"type": "array", "uniqueItems": true, "items": {"type": "integer"}}),
        relaxed,
        &["[1,1]"],
        &["[\"a\"]"],
    );
    let text = json!({"type": "array", "uniqueItems": true}).to_string();
    let set = spec::schema_document("s.json", &text).unwrap();
    let opts = Options {
        json: relaxed,
        ..Options::default()
    };
    let lowered = crate::lower_schema(&set, &opts).unwrap();
    assert_eq!(lowered.relaxed.len(), 1, "{:?}", lowered.relaxed);
    assert!(lowered.relaxed[0].contains("uniqueItems"));
}

#[test]
fn nullable_and_annotations() {
    check(
        json!({"type": "string", "nullable": true, "description": "d", "x-vendor": 1, "examples": ["a"]}),
        &["null", "\"a\""],
        &["1"],
    );
}

#[test]
fn whitespace_is_bounded() {
    check(
        json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}}),
        &["{ \"a\" : [ 1 , 2 ] }", "{\n  \"a\": [1]\n}"],
        &["{     \"a\":[]}"],
    );
}

/// `dumps` accepts exactly Python's `json.dumps` spacing: `", "`, `": "`,
/// nothing inside brackets, at every depth and in free values too.
#[test]
fn dumps_whitespace_is_exactly_json_dumps() {
    let dumps = JsonOptions {
        whitespace: super::Whitespace::Dumps,
        ..strict()
    };
    check_with(
        json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "integer"}},
            "b": {"type": "object", "properties": {"c": {"type": "boolean"}}},
            "d": {},
            "e": {"enum": [{"x": [1, 2]}]}
        }}),
        dumps,
        &[
            "{\"a\": [1, 2], \"b\": {\"c\": true}}",
            "{\"a\": []}",
            "{}",
            "{\"d\": {\"k\": [null, \"v\"]}}",
            "{\"e\": {\"x\": [1, 2]}}",
            // Inside strings, spaces are content.
            "{\"d\": \" a ,b \"}",
        ],
        &[
            "{\"a\":[1,2]}",
            "{ \"a\": [1, 2]}",
            "{\"a\" : [1, 2]}",
            "{\"a\": [1,2]}",
            "{\"a\": [ 1, 2 ]}",
            "{\"a\": [1, 2] }",
            "{\"a\":  [1, 2]}",
            "{\"a\": [1, 2],\n \"b\": {\"c\": true}}",
            "{\"d\": {\"k\":[]}}",
            "{\"e\": {\"x\":[1, 2]}}",
        ],
    );
}

#[test]
fn a_state_explosion_names_the_part_responsible() {
    let schema = json!({
        "type": "object",
        "properties": {
            "ok": {"type": "string"},
            "big": {"type": "object", "properties": {
                "s": {"type": "string", "pattern": "^(a|b)*a(a|b){12}$"}
            }}
        }
    });
    let text = serde_json::to_string_pretty(&schema).unwrap();
    let set = spec::schema_document("big.json", &text).unwrap();
    let opts = Options {
        max_states: 2000,
        ..Options::default()
    };
    let err = build_schema_dfa(&set, &opts, &mut |_| {})
        .err()
        .expect("the bound is exceeded");
    let msg = err.to_string();
    assert_eq!(err.kind(), crate::ErrorKind::Limit, "{msg}");
    assert!(
        msg.contains("responsible: big.json:") && msg.contains("(at /properties/big/properties/s)"),
        "{msg}"
    );
}
