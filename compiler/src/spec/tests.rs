//! Unit tests of the dialect readers on small inline inputs (the fixtures
//! and the real data are in `tests/dialects.rs`).

use serde_json::json;

use super::*;

fn names(set: &ToolSet) -> Vec<&str> {
    set.names()
}

#[test]
fn spec_detects_each_dialect() {
    let cases: &[(&str, Dialect)] = &[
        (
            r#"[{"name": "a", "parameters": {"type": "object"}}]"#,
            Dialect::OpenAi,
        ),
        (
            r#"{"tools": [{"type": "function", "function": {"name": "a"}}]}"#,
            Dialect::OpenAi,
        ),
        (
            r#"[{"name": "a", "input_schema": {"type": "object"}}]"#,
            Dialect::Anthropic,
        ),
        (
            r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}"#,
            Dialect::Mcp,
        ),
        (
            r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}"#,
            Dialect::Mcp,
        ),
        (
            r#"[{"name": "a", "parameters": {"type": "dict", "properties": {}}}]"#,
            Dialect::Bfcl,
        ),
        (
            "{\"id\": \"x_0\", \"function\": []}\n{\"id\": \"x_1\", \"function\": []}",
            Dialect::Bfcl,
        ),
        (r#"{"query": "q", "api_list": []}"#, Dialect::ToolBench),
        (
            r#"[{"tool_name": "t", "api_name": "a"}]"#,
            Dialect::ToolBench,
        ),
        (r#"{"openapi": "3.1.0", "paths": {}}"#, Dialect::OpenApi),
        (r#"["f(a, b)"]"#, Dialect::Signatures),
        (r#"{"<add>": 0}"#, Dialect::Signatures),
        ("f(a)\ng(b)", Dialect::Signatures),
    ];
    for (text, want) in cases {
        assert_eq!(detect("t", text).unwrap(), *want, "{text}");
    }
}

#[test]
fn spec_openai_forms() {
    let set = parse(
        "t.json",
        r#"[{"type": "function", "name": "a", "parameters": {"type": "object"}}, {"name": "b"}]"#,
    )
    .unwrap();
    assert_eq!(names(&set), ["a", "b"]);
    assert_eq!(set.tools[0].pointer, "/0/parameters");
    assert_eq!(set.tools[1].parameters, no_arguments());
    let e = parse("t.json", r#"[{"type": "web_search", "name": "a"}]"#).unwrap_err();
    assert!(e.to_string().contains("(at /0/type)"), "{e}");
}

#[test]
fn spec_single_objects() {
    let set = parse(
        "t.json",
        r#"{"name": "a", "inputSchema": {"type": "object"}}"#,
    )
    .unwrap();
    assert_eq!(names(&set), ["a"]);
    assert_eq!(set.tools[0].pointer, "/inputSchema");
    let set = parse(
        "t.json",
        r#"{"id": "simple_0", "function": [{"name": "f"}]}"#,
    )
    .unwrap();
    assert_eq!(set.tools[0].pointer, "/function/0");
    let e = parse("t.json", r#"{"jsonrpc": "2.0", "error": {"code": -1}}"#).unwrap_err();
    assert!(e.to_string().contains("JSON-RPC error"), "{e}");
}

#[test]
fn spec_bfcl_types() {
    let text = r#"[{"name": "f", "parameters": {"type": "dict", "properties": {
        "a": {"type": "float"}, "b": {"type": "any"}, "c": {"type": ["str", "int"]},
        "d": {"type": "array", "items": {"type": "dict", "properties": {"e": {"type": "bool"}}}}}}}]"#;
    let set = parse("t.json", text).unwrap();
    assert_eq!(
        set.tools[0].parameters,
        json!({"type": "object", "properties": {
            "a": {"type": "number"}, "b": {}, "c": {"type": ["string", "integer"]},
            "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "boolean"}}}}}})
    );
    // A JavaScript function without an id is recognized by its types.
    let text = r#"[{"name": "g", "parameters": {"type": "dict", "properties": {"s": {"type": "String"}, "n": {"type": "float"}}}}]"#;
    let set = parse("t.json", text).unwrap();
    assert_eq!(
        set.tools[0].parameters["properties"],
        json!({"s": {"type": "string"}, "n": {"type": ["number", "string"]}})
    );
}

#[test]
fn spec_toolbench_names() {
    use super::toolbench::{standardize, tool_name};
    assert_eq!(
        standardize("Kick.com API | Kick API"),
        "kick_com_api_kick_api"
    );
    assert_eq!(
        standardize("__Get  Chat__User (like) "),
        "get_chat_user_like"
    );
    assert_eq!(standardize("4D Results"), "get_4d_results");
    assert_eq!(standardize("天气 API"), "天气_api");
    assert_eq!(tool_name("id", "Ab"), "is_id_for_ab");
    let long = tool_name(
        "RegSHO Threshold Securities List",
        "Investors Exchange (IEX) Trading",
    );
    assert_eq!(
        long,
        "sho_threshold_securities_list_for_investors_exchange_iex_trading"
    );
    assert_eq!(long.chars().count(), 64);
}

#[test]
fn spec_toolbench_repeated_parameter() {
    let text = r#"{"api_list": [{"tool_name": "T", "api_name": "A",
        "required_parameters": [{"name": "id", "type": "STRING"}, {"name": "array[]", "type": "STRING"}],
        "optional_parameters": [{"name": "array[]", "type": "NUMBER"}]}]}"#;
    let set = parse("t.json", text).unwrap();
    assert_eq!(
        set.tools[0].parameters,
        json!({"type": "object", "properties": {"is_id": {"type": "string"}, "array": {"type": "number"}}, "required": ["is_id", "array"]})
    );
}

#[test]
fn spec_openapi_rewrites_and_refs() {
    let text = r##"{"openapi": "3.1.0", "paths": {
        "/a/{x}/b": {"post": {
            "parameters": [{"name": "x", "in": "path", "schema": {"type": "string"}},
                           {"name": "q", "in": "query", "required": true, "content": {"application/json": {"schema": {"type": "integer"}}}}],
            "requestBody": {"content": {"application/vnd.api+json": {"schema": {"$ref": "#/components/schemas/N"}}}}}}},
        "components": {"schemas": {"N": {"type": ["object", "null"], "properties": {"next": {"$ref": "#/components/schemas/N"}, "m": {"$ref": "#/components/schemas/M"}}},
                                   "M": {"type": "integer", "exclusiveMinimum": 3}}}}"##;
    let set = parse("t.json", text).unwrap();
    assert_eq!(names(&set), ["post_a_x_b"]);
    assert_eq!(
        set.tools[0].parameters,
        json!({"type": "object",
            "properties": {"x": {"type": "string"}, "q": {"type": "integer"}, "body": {"$ref": "#/$defs/N"}},
            "required": ["x", "q"],
            "$defs": {
                "N": {"type": ["object", "null"], "properties": {"next": {"$ref": "#/$defs/N"}, "m": {"$ref": "#/$defs/M"}}},
                "M": {"type": "integer", "exclusiveMinimum": 3}}})
    );
    let bad = r##"{"openapi": "3.0.3", "paths": {"/a": {"get": {"parameters": [{"$ref": "#/p"}]}}}, "p": {"$ref": "#/p"}}"##;
    let e = parse("t.json", bad).unwrap_err();
    assert!(e.to_string().contains("reference cycle"), "{e}");
    let body = r##"{"openapi": "3.0.3", "paths": {"/a": {"post": {"requestBody": {"content": {"text/plain": {}}}}}}}"##;
    let e = parse("t.json", body).unwrap_err();
    assert!(e.to_string().contains("no JSON media type"), "{e}");
}

#[test]
fn spec_positions_in_json_lines_and_text() {
    let text = "{\"a\": 1}\n\n  {\"b\": [1, {\"c\": 2}]}\n";
    assert_eq!(source::position(text, "/1/b/1/c"), Some((3, 19)));
    assert_eq!(source::position(text, "/1"), Some((3, 3)));
    // A pointer into something the source does not have: its nearest part.
    assert_eq!(source::position(text, "/1/b/1/properties/x"), Some((3, 13)));
    let text = "# comment\nf(a)\n\n   g(b)\n";
    assert_eq!(source::position(text, "/1"), Some((4, 4)));
    assert_eq!(source::position(text, "/0/properties/a"), Some((2, 1)));
}

#[test]
fn spec_rename_collisions() {
    let opts = ParseOptions {
        collisions: Collisions::Rename,
        ..ParseOptions::default()
    };
    let text = r#"[{"name": "a"}, {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}, {"name": "a"}]"#;
    let set = parse_with("t.json", text, &opts).unwrap();
    assert_eq!(names(&set), ["a", "a_2", "a_3"]);
}

#[test]
fn repair_fixes_what_has_one_reading() {
    let text = r#"[
        {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
          "properties": {"limit": {"type": "integer", "maximum": "50", "minimum": " 1 "},
                         "market": {"type": "array", "enum": ["US", "FR"]},
                         "note": {"type": "string", "maxLength": "fifty"}}}}},
        {"type": "function", "function": {"name": "ping"}},
        {"type": "function", "function": {"name": "ping"}}
    ]"#;
    let repaired = ParseOptions {
        repair: true,
        ..ParseOptions::default()
    };
    let set = parse_with("t.json", text, &repaired).unwrap();
    assert_eq!(names(&set), ["search", "ping"]);
    let limit = &set.tools[0].parameters["properties"]["limit"];
    assert_eq!(limit["maximum"], serde_json::json!(50));
    assert_eq!(limit["minimum"], serde_json::json!(1));
    let market = &set.tools[0].parameters["properties"]["market"];
    assert_eq!(market.get("enum"), None);
    assert_eq!(market["items"]["enum"], serde_json::json!(["US", "FR"]));
    // Not a number: left for lowering to refuse.
    assert_eq!(
        set.tools[0].parameters["properties"]["note"]["maxLength"],
        serde_json::json!("fifty")
    );
    assert_eq!(set.repairs.len(), 4, "{:#?}", set.repairs);
    assert!(
        set.repairs[0].contains("/0/function/parameters/properties/limit/minimum"),
        "{:?}",
        set.repairs
    );
    assert!(set
        .repairs
        .iter()
        .any(|r| r.contains("repeats tool #1 identically")));
    // Without repair: the strings stay, and the repeated name is an error.
    let e = parse_with("t.json", text, &ParseOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("duplicate tool name \"ping\""),
        "{e}"
    );
}

#[test]
fn repair_leaves_what_has_two_readings() {
    let repaired = ParseOptions {
        repair: true,
        ..ParseOptions::default()
    };
    // Two tools under one name with different parameters: still refused.
    let text = r#"[{"name": "a"}, {"name": "a", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}}]"#;
    assert!(parse_with("t.json", text, &repaired).is_err());
    // An array enum with arrays in it, or items with an enum of their own.
    let text = r#"[{"name": "a", "parameters": {"type": "object", "properties": {
        "p": {"type": "array", "enum": [["x"], "y"]},
        "q": {"type": "array", "enum": ["x"], "items": {"enum": ["y"]}}}}}]"#;
    let set = parse_with("t.json", text, &repaired).unwrap();
    assert!(set.repairs.is_empty(), "{:?}", set.repairs);
    assert_eq!(
        set.tools[0].parameters["properties"]["p"]["enum"],
        serde_json::json!([["x"], "y"])
    );
}
