//! The argument encodings against hand-written schemas: each writes the
//! values its schema allows, spelled its own way, and nothing else.

use serde_json::{json, Value};

use super::{JsonOptions, Lowering, Spelling};
use crate::automaton::dfa::Dfa;
use crate::automaton::expr::Expr;
use crate::automaton::nfa;
use crate::spec;

fn dfa(e: &Expr) -> Dfa {
    let n = nfa::build(e, 1_000_000).expect("nfa");
    Dfa::determinize(&n, 200_000).expect("dfa")
}

fn arguments(schema: &Value, spelling: Spelling) -> Dfa {
    let tools = json!([{"name": "f", "parameters": schema}]).to_string();
    let set = spec::parse("tools.json", &tools).expect("tools");
    let mut l = Lowering::spelled(&set, JsonOptions::default(), spelling);
    dfa(&l
        .tool_arguments(0)
        .unwrap_or_else(|e| panic!("{schema}: {e}")))
}

fn xml() -> Spelling {
    Spelling::Xml {
        open: Expr::lit("<p="),
        mid_string: Expr::lit(">"),
        mid_other: Expr::lit(">"),
        close: Expr::lit("</p>\n"),
        stops: vec!["</p>".into(), "<p".into()],
    }
}

fn dsml() -> Spelling {
    Spelling::Xml {
        open: Expr::lit("<p "),
        mid_string: Expr::lit(" s>"),
        mid_other: Expr::lit(" j>"),
        close: Expr::lit("</p>"),
        stops: vec!["</p>".into(), "<p".into()],
    }
}

fn gemma() -> Spelling {
    Spelling::Gemma {
        quote: Expr::lit("<|\"|>"),
        quote_text: "<|\"|>".into(),
    }
}

#[track_caller]
fn check(schema: Value, spelling: Spelling, yes: &[&str], no: &[&str]) {
    let d = arguments(&schema, spelling);
    for t in yes {
        assert!(d.accepts(t.as_bytes()), "{schema} should accept {t:?}");
    }
    for t in no {
        assert!(!d.accepts(t.as_bytes()), "{schema} should reject {t:?}");
    }
}

fn weather() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1},
            "hourly": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "note": {"type": ["string", "null"]}
        },
        "required": ["city"]
    })
}

#[test]
fn python_keyword_arguments() {
    check(
        weather(),
        Spelling::Python,
        &[
            "city='Paris'",
            "city=\"Paris\"",
            "city='Paris', unit='celsius', days=3",
            "city='It\\'s', hourly=True",
            "city=\"It's\", hourly=False",
            "city='a\"b', tags=['x', \"y\"]",
            "city='x', where={'lat': 1.5}",
            "city='x', where={\"lat\": -2}",
            "city='x', note=None",
            "city='line\\nbreak\\ttab\\\\'",
            "city='\\x01'",
            "city='caf\u{e9}'",
        ],
        &[
            "",
            "city=Paris",
            "city='Paris',unit='kelvin'",
            "city='x', days=0",
            "city='x', hourly=true",
            "city='x', note=null",
            "city='it's'",
            "city='a\nb'",
            "city='\\u0001'",
            "city='x', where={lat: 1}",
            "unit='celsius', city='x'",
        ],
    );
}

#[test]
fn python_strings_keep_their_constraints() {
    let schema = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[a-z']{2,3}$"},
            "day": {"type": "string", "format": "date"},
            "pick": {"enum": ["it's", "a\"b", "two\nlines"]}
        },
        "required": ["code", "day", "pick"]
    });
    check(
        schema,
        Spelling::Python,
        &[
            "code='ab', day='2024-02-29', pick='it\\'s'",
            "code=\"a'b\", day=\"2024-12-31\", pick=\"it's\"",
            "code='a\\'b', day='2024-01-01', pick='a\"b'",
            "code='abc', day='2024-01-01', pick='two\\nlines'",
        ],
        &[
            "code='abcd', day='2024-01-01', pick='a\"b'",
            "code='ab', day='2023-02-29', pick='a\"b'",
            "code='ab', day='2024-01-01', pick='its'",
            "code='ab', day='2024-01-01', pick='two\nlines'",
        ],
    );
}

#[test]
fn python_refuses_a_parameter_that_is_no_identifier() {
    let tools = json!([{"name": "f", "parameters": {
        "type": "object", "properties": {"user-id": {"type": "string"}}}}])
    .to_string();
    let set = spec::parse("tools.json", &tools).expect("tools");
    let mut l = Lowering::spelled(&set, JsonOptions::default(), Spelling::Python);
    let e = l.tool_arguments(0).expect_err("refused");
    assert!(e.to_string().contains("not a Python identifier"), "{e}");
}

#[test]
fn xml_parameters_raw_strings_and_json_values() {
    check(
        weather(),
        xml(),
        &[
            "<p=city>Paris</p>\n",
            "<p=city>New \"York\"\nline two</p>\n<p=unit>celsius</p>\n<p=days>3</p>\n",
            "<p=city>a<b>c</p>\n<p=tags>[\"x\", \"y\"]</p>\n",
            "<p=city>x</p>\n<p=where>{\"lat\": 1.5}</p>\n",
            "<p=city>x</p>\n<p=hourly>true</p>\n",
            "<p=city>x</p>\n<p=note>null</p>\n",
            "<p=city>x</p>\n<p=note>null or not</p>\n",
            "<p=city>back\\slash</p>\n",
            "<p=city>a b</p>\n",
        ],
        &[
            "",
            "<p=city>\"Paris\"</p>",
            "<p=city>a</p>b</p>\n",
            "<p=city>x</p>\n<p=unit>kelvin</p>\n",
            "<p=city>x</p>\n<p=unit>\"celsius\"</p>\n",
            "<p=city>x</p>\n<p=days>0</p>\n",
            "<p=city>x</p>\n<p=hourly>True</p>\n",
            "<p=unit>celsius</p>\n<p=city>x</p>\n",
            "<p=city> x</p>\n",
            "<p=city>x\n</p>\n",
            "<p=city>x\u{a0}</p>\n",
        ],
    );
}

#[test]
fn xml_strings_keep_their_constraints() {
    let schema = json!({
        "type": "object",
        "properties": {
            "code": {"type": "string", "maxLength": 3},
            "day": {"type": "string", "format": "date"},
            "word": {"type": "string", "pattern": "^\"[a-z]+\"$"}
        },
        "required": ["code", "day", "word"]
    });
    check(
        schema,
        xml(),
        &["<p=code>a\nb</p>\n<p=day>2024-02-29</p>\n<p=word>\"ok\"</p>\n"],
        &[
            "<p=code>abcd</p>\n<p=day>2024-02-29</p>\n<p=word>\"ok\"</p>\n",
            "<p=code>ab</p>\n<p=day>2024-02-30</p>\n<p=word>\"ok\"</p>\n",
            "<p=code>ab</p>\n<p=day>2024-02-29</p>\n<p=word>ok</p>\n",
            "<p=code>a\\nb</p>\n<p=day>2024-02-29</p>\n<p=word>\"ok\"</p>\n",
        ],
    );
}

#[test]
fn xml_marks_string_and_json_values_apart() {
    check(
        weather(),
        dsml(),
        &[
            "<p city s>Paris</p>",
            "<p city s>x</p><p days j>2</p>",
            "<p city s>x</p><p note s>null</p>",
            "<p city s>x</p><p note j>null</p>",
        ],
        &[
            "<p city j>\"Paris\"</p>",
            "<p city s>x</p><p days s>2</p>",
            "<p city s>x</p><p unit j>\"celsius\"</p>",
        ],
    );
}

#[test]
fn gemma_sorts_keys_as_its_template_does() {
    let schema = json!({
        "type": "object",
        "properties": {"b": {"type": "integer"}, "A": {"type": "integer"}, "c": {"type": "integer"}},
        "required": ["b", "A", "c"]
    });
    check(schema, gemma(), &["{A:1,b:2,c:3}"], &["{b:2,A:1,c:3}"]);
}

#[test]
fn gemma_objects() {
    check(
        weather(),
        gemma(),
        &[
            "{city:<|\"|>Paris<|\"|>}",
            "{city:<|\"|>New \"York\"\n<|\"|>,days:3,unit:<|\"|>celsius<|\"|>}",
            "{city:<|\"|>x<|\"|>,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]}",
            "{city:<|\"|>x<|\"|>,note:null,where:{lat:1.5}}",
            "{city:<|\"|>x<|\"|>,hourly:false}",
            "{city:<|\"|>x<|\"|>,note:None}",
            "{city:<|\"|>x<|\"|>,where:{lat:-2.25}}",
        ],
        &[
            "{\"city\":\"Paris\"}",
            "{city:<|\"|>Paris<|\"|>, days:3}",
            "{city:<|\"|>a<|\"|>b<|\"|>}",
            "{city:<|\"|>x<|\"|>,unit:<|\"|>kelvin<|\"|>}",
            "{city:<|\"|>x<|\"|>,where:{lat:1e5}}",
        ],
    );
}

/// The respelling is exact: on random strings, a string's constraints
/// accept its JSON spelling exactly when they accept its Python spelling,
/// and its raw text unless that begins or ends with whitespace.
#[test]
fn respelling_agrees_with_json_on_random_strings() {
    let schemas = [
        json!({"type": "string", "pattern": "^[a-c\"\\\\\n']{0,4}$"}),
        json!({"type": "string", "minLength": 2, "maxLength": 3}),
        json!({"type": "string", "format": "date"}),
        json!({"enum": ["a\"b", "c\\d", "e\nf", "g'h"]}),
    ];
    let alphabet = [
        'a', 'b', 'c', '"', '\\', '\n', '\'', '\u{1}', '\u{e9}', '-', '0', '2',
    ];
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for schema in schemas {
        let wrap = json!({"type": "object", "properties": {"s": schema}, "required": ["s"]});
        let json_d = arguments(&wrap, Spelling::Json);
        let raw_d = arguments(&wrap, xml());
        let py_d = arguments(&wrap, Spelling::Python);
        let mut agreed = 0;
        for k in 0..4000 {
            let len = (next() % 6) as usize;
            let picks = ["a\"b", "c\\d", "e\nf", "g'h", "ab", "a\nb"];
            let s: String = if k % 5 == 1 {
                picks[(next() % picks.len() as u64) as usize].to_string()
            } else if k % 4 == 0 {
                // Dates, which `format: date` accepts now and then.
                format!("2024-0{}-2{}", 1 + next() % 3, next() % 10)
            } else {
                (0..len)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect()
            };
            let j = json_d
                .accepts(format!("{{\"s\":{}}}", serde_json::to_string(&s).unwrap()).as_bytes());
            let r = raw_d.accepts(format!("<p=s>{s}</p>\n").as_bytes());
            let py = python_repr(&s, '\'');
            let p = py_d.accepts(format!("s={py}").as_bytes());
            // Raw XML values never begin or end with whitespace.
            let space = |c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c);
            let trimmed = !s.starts_with(space) && !s.ends_with(space);
            assert_eq!(j && trimmed, r, "{wrap}: {s:?} json {j} raw {r}");
            assert_eq!(j, p, "{wrap}: {s:?} json {j} python {py} {p}");
            agreed += j as u32;
        }
        assert!(agreed > 0, "{wrap}: no random string was accepted");
    }
}

/// Python's spelling of `s` quoted with `q`, as written by hand here.
fn python_repr(s: &str, q: char) -> String {
    let mut out = String::from(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}
