//! Bad input gets an error that says what and where: file, line:column,
//! JSON pointer, tool. These are the messages users see.

use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::JsonOptions;
use tooldec_compiler::{compile, spec, ErrorKind, Options};

fn err_of(text: &str) -> (ErrorKind, String) {
    let result = spec::parse("tools.json", text).and_then(|set| {
        let vocab = Vocab::from_tokens(
            (0..=255u8)
                .map(|b| Token::Text(vec![b]))
                .chain([Token::Special("<eos>".into())])
                .collect(),
            vec![256],
            "bytes",
        )?;
        let opts = Options {
            json: JsonOptions {
                max_depth: 3,
                ..JsonOptions::default()
            },
            ..Options::default()
        };
        compile(&set, &vocab, &opts, &mut |_| {})
    });
    match result {
        Ok(_) => panic!("compiled, but should have failed: {text}"),
        Err(e) => (e.kind(), e.to_string()),
    }
}

#[track_caller]
fn check(text: &str, kind: ErrorKind, needles: &[&str]) {
    let (k, msg) = err_of(text);
    assert_eq!(k, kind, "{msg}");
    for n in needles {
        assert!(msg.contains(n), "{msg:?} lacks {n:?}");
    }
}

#[test]
fn syntax_errors_give_line_and_column() {
    check(
        "[\n  {\"name\": \"a\",,}\n]",
        ErrorKind::Json,
        &["tools.json:2:", "invalid JSON"],
    );
}

#[test]
fn shape_errors_give_pointer_and_position() {
    check("{\"x\": 1}", ErrorKind::Spec, &["expected a JSON array"]);
    check("[]", ErrorKind::Spec, &["empty"]);
    check(
        "[\n {\"description\": \"no name\"}\n]",
        ErrorKind::Spec,
        &["tools.json:2:2 (at /0)", "no \"name\""],
    );
    check(
        "[{\"name\": \"a\"},\n {\"name\": \"a\"}]",
        ErrorKind::Spec,
        &["duplicate tool name \"a\"", "#0 and #1"],
    );
    check(
        "[{\"name\": \"a\\nb\"}]",
        ErrorKind::Spec,
        &["control character"],
    );
    check(
        "[{\"type\": \"retrieval\", \"function\": {\"name\": \"a\"}}]",
        ErrorKind::Spec,
        &["/0/type", "unsupported tool type"],
    );
}

#[test]
fn unsupported_keywords_name_tool_and_pointer() {
    let text = r#"[
  {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object",
    "properties": {"q": {"type": "array", "uniqueItems": true}}
  }}}
]"#;
    check(
        text,
        ErrorKind::Unsupported,
        &[
            "tools.json:4:",
            "/0/function/parameters/properties/q/uniqueItems",
            "tool \"lookup\"",
            "\"uniqueItems\"",
            "--relax",
        ],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"v": {"type": "string", "pattern": "a(?=b)"}}}}]"#,
        ErrorKind::Unsupported,
        &["/0/parameters/properties/v/pattern", "look"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"v": {"oneOf": [{"type": "integer"}, {"minimum": 1}]}}}}]"#,
        ErrorKind::Unsupported,
        &["/0/parameters/properties/v/oneOf", "branches 0 and 1"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"v": {"$ref": "https://example.com/s.json"}}}}]"#,
        ErrorKind::Unsupported,
        &["/0/parameters/properties/v/$ref", "not local"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"v": {"not": {"minimum": 3}}}}}]"#,
        ErrorKind::Unsupported,
        &["/0/parameters/properties/v/not", "excludes whole types"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"v": {"type": "string", "format": "regex"}}}}]"#,
        ErrorKind::Unsupported,
        &["/0/parameters/properties/v/format", "\"regex\""],
    );
}

#[test]
fn contradictory_schemas_are_refused() {
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {}, "required": ["ghost"], "additionalProperties": false}}]"#,
        ErrorKind::Schema,
        &["tool \"t\"", "/0/parameters", "accepts no value"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"n": {"type": "integer", "enum": ["a", 1.5]}}, "required": ["n"]}}]"#,
        ErrorKind::Schema,
        &["/0/parameters", "accepts no value"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "string"}}]"#,
        ErrorKind::Schema,
        &["must describe a JSON object"],
    );
    check(
        r#"[{"name": "t", "parameters": {"type": "object", "properties": {"n": {"type": "date"}}}}]"#,
        ErrorKind::Schema,
        &["unknown type \"date\""],
    );
    check(
        r##"[{"name": "t", "parameters": {"type": "object", "properties": {"n": {"$ref": "#/$defs/missing"}}}}]"##,
        ErrorKind::Schema,
        &["/0/parameters/properties/n/$ref", "points at nothing"],
    );
}

#[test]
fn bounds_are_errors_not_exhaustion() {
    let deep = r#"[{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "object", "properties":
        {"b": {"type": "object", "properties": {"c": {"type": "object", "properties": {"d": {"type": "object",
        "properties": {"e": {"type": "integer"}}}}}}}}}}}}]"#;
    check(deep, ErrorKind::Limit, &["deeper than 3", "--max-depth"]);

    let set = spec::parse("t.json", r#"[{"name": "t", "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}]"#).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let tight = Options {
        max_states: 20,
        ..Options::default()
    };
    let e = compile(&set, &vocab, &tight, &mut |_| {}).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.to_string().contains("exceeds 20 states"), "{e}");
    let narrow = Options {
        mask_width: Some(100),
        ..Options::default()
    };
    let e = compile(&set, &vocab, &narrow, &mut |_| {}).err().unwrap();
    assert!(
        e.to_string()
            .contains("smaller than the tokenizer's 50257 tokens"),
        "{e}"
    );
}

#[test]
fn a_vocabulary_that_cannot_write_the_grammar_is_refused() {
    let set = spec::parse("t.json", r#"[{"name": "t"}]"#).unwrap();
    // No token contains the letter 'A', which "\nAction: " needs.
    let tokens = (0..=255u8)
        .filter(|&b| b != b'A')
        .map(|b| Token::Text(vec![b]))
        .chain([Token::Special("<eos>".into())])
        .collect();
    let vocab = Vocab::from_tokens(tokens, vec![255], "no A").unwrap();
    let e = compile(&set, &vocab, &Options::default(), &mut |_| {})
        .err()
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Grammar);
    assert!(
        e.to_string().contains("incompatible vocabulary") && e.to_string().contains("'A'"),
        "{e}"
    );
}

#[test]
fn eos_must_be_a_special_token() {
    let tokens = vec![Token::Text(b"a".to_vec()), Token::Special("<eos>".into())];
    let e = Vocab::from_tokens(tokens.clone(), vec![0], "x")
        .err()
        .unwrap();
    assert!(e.to_string().contains("is a text token"), "{e}");
    assert!(Vocab::from_tokens(tokens, vec![5], "x").is_err());
}
