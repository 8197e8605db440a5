//! The reader on hand-written tables, without an artifact: each encoding,
//! its edge cases, several calls, text around them.

use serde_json::{json, Value};

use super::*;

fn lit(s: &str) -> Node {
    Node::Lit(s.into())
}
fn seq(v: Vec<Node>) -> Node {
    Node::Seq(v)
}
fn special(id: u32, name: &str) -> Node {
    Node::Special(id, name.into())
}
fn star(n: Node) -> Node {
    Node::Repeat(Box::new(n), 0, None)
}
fn tool(body: Vec<Node>) -> Node {
    Node::Tool(Box::new(seq(body)))
}
fn p(name: &str, required: bool, kinds: &[Kind]) -> Param {
    Param {
        name: name.into(),
        required,
        kinds: kinds.to_vec(),
    }
}

/// Two tools: `get_weather(city: string, days?: integer, unit?: string|null)`
/// and `get_weather_now(city: string)`.
fn params() -> Vec<Vec<Param>> {
    vec![
        vec![
            p("city", true, &[Kind::String]),
            p("days", false, &[Kind::Integer]),
            p("unit", false, &[Kind::String, Kind::Null]),
        ],
        vec![p("city", true, &[Kind::String])],
    ]
}

fn reader(rules: Vec<(&str, Node)>) -> Reader {
    let table = Table {
        rules: rules
            .iter()
            .map(|(n, b)| Rule {
                name: n.to_string(),
                body: b.clone(),
            })
            .collect(),
        leading_space: false,
        params: params(),
    };
    let meta = json!({"tools": ["get_weather", "get_weather_now"], "read": table});
    let entries = rules.iter().map(|(n, _)| n.to_string()).collect();
    Reader::from_meta(&meta.to_string(), entries).unwrap()
}

fn read(r: &Reader, text: &str) -> Value {
    let calls = r.parse(&r.entries[0], &r.text_bytes(text)).unwrap();
    serde_json::from_str(&to_json(&calls)).unwrap()
}

#[test]
fn hermes_json_args_with_text_around_and_several_calls() {
    let call = tool(vec![
        special(7, "<tool_call>"),
        lit("\n{\"name\": "),
        Node::NameJson,
        lit(", \"arguments\": "),
        Node::Args,
        lit("}\n"),
        special(8, "</tool_call>"),
    ]);
    let r = reader(vec![(
        "start",
        seq(vec![
            Node::Text(vec![special(7, "<tool_call>")]),
            call.clone(),
            star(seq(vec![lit("\n"), call])),
        ]),
    )]);
    let text = "Let me {check} \"this\".<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa\\\"ris}\", \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather_now\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>";
    assert_eq!(
        read(&r, text),
        json!([
            {"name": "get_weather", "arguments": {"city": "Pa\"ris}", "days": 3}},
            {"name": "get_weather_now", "arguments": {"city": "Lyon"}}
        ])
    );
    // The marker bytes are what the text's names become.
    assert!(r.text_bytes("<tool_call>").starts_with(&[0xFF, 0, 0, 7]));
}

#[test]
fn react_bare_name_prefix_of_another() {
    let r = reader(vec![(
        "start",
        seq(vec![
            lit("Thought: "),
            Node::Text(vec![lit("\nAction: ")]),
            lit("\n"),
            tool(vec![
                lit("Action: "),
                Node::Name,
                lit("\nAction Input: "),
                Node::Args,
            ]),
        ]),
    )]);
    let text = "Thought: get_weather_now is not it\nAction: get_weather\nAction Input: {\"city\": \"Paris\", \"days\": 2}";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}])
    );
    let text = "Thought: x\nAction: get_weather_now\nAction Input: {\"city\": \"Nice\"}";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather_now", "arguments": {"city": "Nice"}}])
    );
}

#[test]
fn positional_with_omitted_optionals_and_calls_in_text() {
    let call = seq(vec![
        special(3, "<T>"),
        tool(vec![Node::Name, lit("("), Node::ArgsPositional, lit(")")]),
        lit("="),
    ]);
    let text_ = Node::Text(vec![special(3, "<T>")]);
    let r = reader(vec![(
        "start",
        seq(vec![star(seq(vec![text_.clone(), call])), text_]),
    )]);
    let text = "It is <T>get_weather(\"Paris, FR\", 3)=sunny, and <T>get_weather(\"Lyon\")=rain; <T>get_weather(\"a\",4, null)=x.";
    assert_eq!(
        read(&r, text),
        json!([
            {"name": "get_weather", "arguments": {"city": "Paris, FR", "days": 3}},
            {"name": "get_weather", "arguments": {"city": "Lyon"}},
            {"name": "get_weather", "arguments": {"city": "a", "days": 4, "unit": null}}
        ])
    );
}

#[test]
fn python_keyword_arguments() {
    let r = reader(vec![(
        "start",
        seq(vec![
            lit("["),
            tool(vec![Node::Name, lit("("), Node::ArgsPython, lit(")")]),
            lit("]"),
        ]),
    )]);
    let text = r#"[get_weather(city='Pa\'ris\n\x01 "q"', days=3, unit=None)]"#;
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "Pa'ris\n\u{1} \"q\"", "days": 3, "unit": null}}])
    );
    let text = r#"[get_weather(city="it's", days=-2)]"#;
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "it's", "days": -2}}])
    );
    // Nested literals.
    let v = values::Python::new(b"{'a': [True, False, None, 1.5], 'b': {}}")
        .value(0, 0)
        .unwrap()
        .0;
    assert_eq!(v, json!({"a": [true, false, null, 1.5], "b": {}}));
}

#[test]
fn gemma_object_with_quote_token_and_text_quote() {
    let body = |q: Node| {
        seq(vec![
            lit("call:"),
            tool(vec![Node::Name, Node::ArgsGemma(Box::new(q))]),
        ])
    };
    let r = reader(vec![("start", body(special(9, "<|\"|>")))]);
    let text = "call:get_weather{city:<|\"|>Pa\"ri{s}, \\n<|\"|>,days:3,unit:null}";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "Pa\"ri{s}, \\n", "days": 3, "unit": null}}])
    );
    let r = reader(vec![("start", body(lit("<|\"|>")))]);
    let v = values::Gemma::new(b"{a:[1,<|\"|>x<|\"|>,{b:true,n:None}],c:-1.5e3}", b"<|\"|>")
        .object(0, 0)
        .unwrap()
        .0;
    assert_eq!(
        v,
        json!({"a": [1, "x", {"b": true, "n": null}], "c": -1.5e3})
    );
    assert_eq!(
        read(&r, "call:get_weather_now{city:<|\"|>Nice<|\"|>}"),
        json!([{"name": "get_weather_now", "arguments": {"city": "Nice"}}])
    );
}

#[test]
fn xml_raw_strings_typed_by_kinds() {
    let xml = Xml {
        open: lit("<parameter="),
        mid_string: lit(">\n"),
        mid_other: lit(">\n"),
        close: lit("\n</parameter>\n"),
        stop: "</parameter>".into(),
    };
    let r = reader(vec![(
        "start",
        seq(vec![
            Node::Text(vec![lit("<tool_call>")]),
            tool(vec![
                lit("<tool_call>\n<function="),
                Node::Name,
                lit(">\n"),
                Node::ArgsXml(Box::new(xml)),
                lit("</function>\n</tool_call>"),
            ]),
        ]),
    )]);
    let text = "Sure.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint \"Étienne\" <b>\n2 lines\n</parameter>\n<parameter=days>\n12\n</parameter>\n<parameter=unit>\nnull\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "Saint \"Étienne\" <b>\n2 lines", "days": 12, "unit": null}}])
    );
    // A string-only parameter keeps JSON-looking text as a string; one
    // that allows null too reads a string that is not null as a string.
    let text = "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n</function>\n</tool_call>";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "42", "unit": "celsius"}}])
    );
}

#[test]
fn xml_four_argument_form() {
    let xml = Xml {
        open: seq(vec![special(5, "<｜DSML｜"), lit("parameter name=\"")]),
        mid_string: lit("\" string=\"true\">"),
        mid_other: lit("\" string=\"false\">"),
        close: seq(vec![special(6, "</｜DSML｜"), lit("parameter>\n")]),
        stop: "</｜DSML｜".into(),
    };
    let r = reader(vec![(
        "start",
        tool(vec![
            lit("invoke name=\""),
            Node::Name,
            lit("\">\n"),
            Node::ArgsXml(Box::new(xml)),
        ]),
    )]);
    let text = "invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">3</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n";
    assert_eq!(
        read(&r, text),
        json!([{"name": "get_weather", "arguments": {"city": "3", "days": 3}}])
    );
}

#[test]
fn classes_regexes_alternation_and_bounded_repeats() {
    let r = reader(vec![(
        "start",
        seq(vec![
            Node::Regex("[0-9]{1,3}".into()),
            Node::Class("[:;]".into()),
            Node::Repeat(Box::new(lit(" ")), 0, Some(2)),
            Node::Alt(vec![
                tool(vec![lit("A "), Node::Name, lit(" "), Node::Args]),
                tool(vec![lit("B "), Node::Name]),
            ]),
        ]),
    )]);
    assert_eq!(
        read(&r, "12;  A get_weather {\"city\":\"x\"}"),
        json!([{"name": "get_weather", "arguments": {"city": "x"}}])
    );
    assert_eq!(
        read(&r, "7:B get_weather_now"),
        json!([{"name": "get_weather_now", "arguments": {}}])
    );
    assert_eq!(
        r.parse("start", b"1234:B get_weather_now"),
        Err(ReadError::NoParse)
    );
}

#[test]
fn leading_space_and_no_calls() {
    let mut r = reader(vec![("start", seq(vec![Node::Text(vec![lit("<")])]))]);
    assert_eq!(read(&r, "just text"), json!([]));
    r = {
        let mut t = r.table.clone();
        t.leading_space = true;
        t.rules[0].body = tool(vec![Node::Name]);
        let meta = json!({"tools": ["get_weather", "get_weather_now"], "read": t});
        Reader::from_meta(&meta.to_string(), vec!["start".into()]).unwrap()
    };
    assert_eq!(
        read(&r, " get_weather"),
        json!([{"name": "get_weather", "arguments": {}}])
    );
}

#[test]
fn work_is_bounded() {
    // (text "x")* text over a long text: memoized, then a step bound.
    let r = reader(vec![(
        "start",
        seq(vec![
            star(seq(vec![Node::Text(vec![lit("<")]), lit("x")])),
            Node::Text(vec![lit("<")]),
            lit("!"),
        ]),
    )]);
    let text = "x".repeat(300);
    assert_eq!(r.parse("start", text.as_bytes()), Err(ReadError::NoParse));
    let mut small = reader(vec![("start", seq(vec![Node::Text(vec![]), lit("!")]))]);
    small.max_steps = 10;
    assert_eq!(
        small.parse("start", "y".repeat(100).as_bytes()),
        Err(ReadError::Limit(10))
    );
}

#[test]
fn missing_table_and_bad_entries_are_errors() {
    let e = Reader::from_meta(r#"{"tools":["a"]}"#, vec!["start".into()]).err();
    assert!(matches!(e, Some(ReadError::NoTable(_))), "{e:?}");
    let meta = json!({"tools": ["a"], "read": {"rules": [], "params": [[]]}});
    let e = Reader::from_meta(&meta.to_string(), vec!["start".into()]).err();
    assert!(matches!(e, Some(ReadError::NoTable(_))), "{e:?}");
    let r = reader(vec![("start", lit("x"))]);
    assert!(matches!(
        r.entry(Some("nope")),
        Err(ReadError::UnknownEntry { .. })
    ));
}
