//! The shipped call formats' languages, checked on whole texts through the
//! runtime's entry points: what each format and entry accepts and rejects.
//! Special tokens and triggers are checked at token boundaries with small
//! hand-made vocabularies.

use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, ErrorKind, Options};
use tooldec_runtime::Artifact;

fn weather() -> spec::ToolSet {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap()
}

fn build(format: &str, vocab: &Vocab) -> Artifact {
    let opts = Options {
        format: CallFormat::load(format).unwrap(),
        ..Options::default()
    };
    let out =
        compile(&weather(), vocab, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{format}: {e}"));
    Artifact::from_bytes(&out.artifact).unwrap()
}

fn artifact(format: &str) -> Artifact {
    build(format, &Vocab::builtin_gpt2().unwrap())
}

/// Whether entry `entry` accepts `text` as a whole output.
fn accepts(a: &Artifact, entry: &str, text: &str) -> bool {
    let g = a.grammar();
    let mut m = g
        .matcher_at(entry)
        .unwrap_or_else(|| panic!("no entry {entry}"));
    m.accept_bytes(text.as_bytes()) && m.is_accepting()
}

const PARIS: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const UTC: &str =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";

#[test]
fn entries_are_recorded_and_the_first_is_the_default() {
    let a = artifact("hermes");
    let g = a.grammar();
    let names: Vec<&str> = g.entries().map(|e| e.0).collect();
    assert_eq!(
        names,
        ["start", "calls", "call", "auto", "required", "one", "auto-one"]
    );
    assert_eq!(g.entry_state("start"), Some(g.start_state()));
    assert!(g.matcher_at("nope").is_none());
    let meta: serde_json::Value = serde_json::from_str(g.metadata()).unwrap();
    assert_eq!(meta["format"], "hermes");
    assert_eq!(
        meta["entries"],
        serde_json::json!(["start", "calls", "call", "auto", "required", "one", "auto-one"])
    );
    // One entry only: no selector state.
    let one = Options {
        format: CallFormat::load("hermes")
            .unwrap()
            .only_entry("call")
            .unwrap(),
        ..Options::default()
    };
    let out = compile(
        &weather(),
        &Vocab::builtin_gpt2().unwrap(),
        &one,
        &mut |_| {},
    )
    .unwrap();
    let a1 = Artifact::from_bytes(&out.artifact).unwrap();
    assert_eq!(a1.grammar().entries().count(), 1);
    assert!(a1.grammar().state_count() < g.state_count());
    let e = CallFormat::load("hermes")
        .unwrap()
        .only_entry("nope")
        .unwrap_err();
    assert!(e.to_string().contains("start, calls, call"), "{e}");
    // The default entry alone, as `--print-regex` and a request use it.
    let hermes = CallFormat::load("hermes").unwrap();
    assert_eq!(
        hermes.only_default_entry(),
        hermes.only_entry("start").unwrap()
    );
    assert_eq!(hermes.only_default_entry().entries(), ["start"]);
}

#[test]
fn hermes_entries() {
    let a = artifact("hermes");
    assert!(accepts(&a, "call", PARIS));
    assert!(accepts(&a, "call", UTC));
    assert!(!accepts(&a, "call", &format!("{PARIS}\n{UTC}")));
    assert!(accepts(&a, "calls", &format!("{PARIS}\n{UTC}\n{PARIS}")));
    assert!(
        !accepts(&a, "calls", &format!("{PARIS}{UTC}")),
        "calls sit on their own lines"
    );
    assert!(
        !accepts(&a, "calls", &format!("{PARIS}\n")),
        "no trailing separator"
    );
    assert!(accepts(&a, "start", PARIS), "the text may be empty");
    assert!(accepts(
        &a,
        "start",
        &format!("Let me check.\n{PARIS}\n{UTC}")
    ));
    assert!(!accepts(&a, "start", "Just text, no call."));
    assert!(!accepts(&a, "calls", &format!("Sure! {PARIS}")));
    for bad in [
        "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>",
        "<tool_call>\n{\"name\":\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        "",
    ] {
        assert!(!accepts(&a, "call", bad), "{bad:?}");
    }
}

#[test]
fn react_entries() {
    let one = "Thought: two things.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}";
    let two = format!("{one}\nAction: get_time\nAction Input: {{\"timezone\": \"UTC\"}}");
    let a = artifact("react");
    assert!(accepts(&a, "start", one));
    assert!(!accepts(&a, "start", &two));
    assert!(accepts(&a, "parallel", one));
    assert!(accepts(&a, "parallel", &two));
    assert!(!accepts(&a, "parallel", &format!("{one}\nThought: more")));
    assert!(accepts(
        &a,
        "start",
        "Thought: line one\nAction? no\nAction: get_time\nAction Input: {\"timezone\": \"UTC\"}"
    ));
    assert!(!accepts(
        &a,
        "start",
        "Thought: a\nAction: nope\nAction: get_time\nAction Input: {\"timezone\": \"UTC\"}"
    ));
}

#[test]
fn llama3_mistral_json() {
    let call = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
    let a = artifact("llama3");
    assert!(accepts(&a, "start", call));
    assert!(!accepts(
        &a,
        "start",
        &call.replace("parameters", "arguments")
    ));

    let one = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
    let two = "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}";
    // GPT-2 has no [TOOL_CALLS] special token: the text stands in.
    let m = artifact("mistral");
    assert!(accepts(&m, "start", &format!("[TOOL_CALLS][{one}]")));
    assert!(accepts(&m, "start", &format!("[TOOL_CALLS][{one}, {two}]")));
    assert!(!accepts(&m, "start", &format!("[{one}]")));
    assert!(!accepts(&m, "start", "[TOOL_CALLS][]"));

    let j = artifact("json");
    assert!(accepts(&j, "start", one));
    assert!(accepts(&j, "start", &format!("[{one}]")));
    assert!(accepts(&j, "start", &format!("[{one}, {two}]")));
    assert!(!accepts(&j, "start", &format!("{one}\n{two}")));
    assert!(accepts(&j, "call", one));
    assert!(!accepts(&j, "call", &format!("[{one}]")));
}

fn math() -> spec::ToolSet {
    let text = r#"[
      {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}},
      {"type": "function", "function": {"name": "sqrt", "parameters": {"type": "object",
        "properties": {"x": {"type": "number"}}, "required": ["x"]}}},
      {"type": "function", "function": {"name": "round", "parameters": {"type": "object",
        "properties": {"digits": {"type": "integer"}, "x": {"type": "number"}}, "required": ["x"]}}}
    ]"#;
    spec::parse("math.json", text).unwrap()
}

fn toolken(vocab: &Vocab) -> Artifact {
    let opts = Options {
        format: CallFormat::load("toolken").unwrap(),
        ..Options::default()
    };
    Artifact::from_bytes(
        &compile(&math(), vocab, &opts, &mut |_| {})
            .unwrap()
            .artifact,
    )
    .unwrap()
}

#[test]
fn toolken_text_calls_and_positional_arguments() {
    let a = toolken(&Vocab::builtin_gpt2().unwrap());
    for ok in [
        "",
        "No tool needed.",
        "147+354=<T>add(147, 354)=501 bananas.",
        "<T>add(1,2)=3 and <T>sqrt(16)=4.",
        // Required first, then the optional one, which may be left out.
        "<T>round(3.14159, 2)=3.14",
        "<T>round(3.14159)=3",
    ] {
        assert!(accepts(&a, "start", ok), "{ok:?}");
    }
    for bad in [
        "<T>add(1)=",
        "<T>add(1, 2, 3)=",
        "<T>mul(1, 2)=",
        "<T>add(\"1\", 2)=",
        "<T>sqrt(4)",
        "<T>sqrt(4)=<T>",
    ] {
        assert!(!accepts(&a, "start", bad), "{bad:?}");
    }
    assert!(accepts(&a, "call", "<T>add(1, 2)="));
}

/// A byte-level vocabulary of single bytes, a few words, and specials.
fn small_vocab(extra: &[&str], specials: &[&str]) -> Vocab {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    for t in extra {
        tokens.push(Token::Text(t.as_bytes().to_vec()));
    }
    for s in specials {
        tokens.push(Token::Special(s.to_string()));
    }
    tokens.push(Token::Special("<eos>".into()));
    let eos = tokens.len() as u32 - 1;
    Vocab::from_tokens(tokens, vec![eos], "small").unwrap()
}

fn id(v: &Vocab, s: &str) -> u32 {
    v.resolve(s).unwrap()
}

fn tokens_of(v: &Vocab, parts: &[&str]) -> Vec<u32> {
    parts.iter().map(|p| id(v, p)).collect()
}

/// Feeds tokens one by one, each allowed by the mask before it.
fn feed(a: &Artifact, entry: &str, toks: &[u32]) -> bool {
    let g = a.grammar();
    let mut m = g.matcher_at(entry).unwrap();
    let mut mask = vec![0u32; g.mask_words()];
    for &t in toks {
        m.fill_mask(&mut mask);
        let allowed = mask[(t / 32) as usize] >> (t % 32) & 1 == 1;
        if allowed != m.is_allowed(t) {
            panic!("mask and matcher disagree on token {t}");
        }
        if !m.accept_token(t) {
            return false;
        }
    }
    m.is_accepting()
}

#[test]
fn special_token_trigger_matches_only_its_id() {
    // "<T>" is both a special token and writable as text.
    let v = small_vocab(&["<T>", "add", "(1, 2)=", "x<", "T>", "3"], &["<T>"]);
    let a = toolken(&v);
    let special = v
        .tokens
        .iter()
        .position(|t| *t == Token::Special("<T>".into()))
        .unwrap() as u32;
    let text_t = id(&v, "<T>");
    assert_ne!(special, text_t);
    let call = tokens_of(&v, &["add", "(1, 2)="]);
    let mut ok = vec![special];
    ok.extend(&call);
    assert!(feed(&a, "start", &ok));
    // The trigger's text is plain text and does not switch to tool mode...
    // Its name spelled as text is neither a trigger nor allowed in the
    // text: decoded output could not tell it from the token.
    let g = a.grammar();
    let m = g.matcher();
    assert!(!m.is_allowed(text_t));
    assert!(
        !feed(&a, "call", &[text_t]),
        "a call starts with the special token only"
    );
    assert!(!feed(&a, "start", &tokens_of(&v, &["x<", "T>"])));
    assert!(feed(&a, "start", &tokens_of(&v, &["x<", "3"])));
    // The special token's id serves the grammar's reserved bytes.
    assert_eq!(g.token_bytes(special).map(|b| b[0]), Some(0xFF));
    // Text bytes cannot stand in for it.
    let mut m = g.matcher();
    assert!(!m.accept_bytes(&[0xFF]));
}

#[test]
fn text_trigger_across_token_boundaries() {
    // Without a special <T>, the trigger is text: it may come split over
    // tokens, or inside a token that also ends the free text.
    let v = small_vocab(
        &[
            "<", "T", ">", "<T", "T>", "ok <", "ok <T>", "add", "(1, 2)=",
        ],
        &[],
    );
    let a = toolken(&v);
    let call = ["add", "(1, 2)="];
    for split in [
        vec!["<", "T", ">"],
        vec!["<T", ">"],
        vec!["<", "T>"],
        vec!["ok <", "T>"],
        vec!["ok <T>"],
    ] {
        let mut parts = split.clone();
        parts.extend(call);
        assert!(feed(&a, "start", &tokens_of(&v, &parts)), "{parts:?}");
    }
    // The trigger's start in the text must be followed through: after
    // "ok <" only "T..." continues the call or other text.
    let g = a.grammar();
    let mut m = g.matcher();
    assert!(m.accept_token(id(&v, "ok <")));
    assert!(m.is_accepting(), "text may end with '<'");
    assert!(m.accept_token(id(&v, "T>")));
    assert!(!m.is_accepting(), "after the trigger a call must follow");
    assert!(!m.is_allowed(id(&v, "(1, 2)=")));
    assert!(m.is_allowed(id(&v, "add")));
}

#[test]
fn special_tokens_in_hermes_where_the_vocabulary_has_them() {
    let v = small_vocab(&[], &["<tool_call>", "</tool_call>"]);
    let a = build("hermes", &v);
    let g = a.grammar();
    let open = v
        .tokens
        .iter()
        .position(|t| *t == Token::Special("<tool_call>".into()))
        .unwrap() as u32;
    let close = v
        .tokens
        .iter()
        .position(|t| *t == Token::Special("</tool_call>".into()))
        .unwrap() as u32;
    let body = "\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n";
    let mut toks = vec![open];
    toks.extend(body.bytes().map(u32::from));
    toks.push(close);
    assert!(feed(&a, "call", &toks));
    // Spelled as text, the tags are refused.
    assert!(!accepts(&a, "call", UTC));
    // Free text before the call may not spell "<tool_call>" either.
    let mut m = g.matcher_at("start").unwrap();
    assert!(!m.accept_bytes(b"I will use <tool_call> now: "));
    assert!(m.accept_bytes(b"I will use <tool_call now: "));
    assert!(toks.iter().all(|&t| m.accept_token(t)));
    assert!(m.is_accepting());
}

#[test]
fn a_special_token_that_is_eos_cannot_be_in_a_format() {
    let mut v = small_vocab(&[], &["[TOOL_CALLS]"]);
    v.eos = vec![v.resolve("[TOOL_CALLS]").unwrap()];
    let opts = Options {
        format: CallFormat::load("mistral").unwrap(),
        ..Options::default()
    };
    let Err(e) = compile(&weather(), &v, &opts, &mut |_| {}) else {
        panic!("an EOS special token was accepted in a format")
    };
    assert_eq!(e.kind(), ErrorKind::CallFormat);
    assert!(e.to_string().contains("end-of-sequence"), "{e}");
}

#[test]
fn multi_turn_react_with_reset_and_inserted_text() {
    let a = artifact("react");
    let g = a.grammar();
    let mut m = g.matcher();
    assert!(m.accept_bytes(
        b"Thought: first the weather.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}"
    ));
    assert!(m.is_accepting());
    // The engine runs the tool and starts the next turn at the entry again.
    assert!(m.reset_to("start"));
    assert!(m.accept_bytes(b"Thought: now the time.\nAction: "));
    assert!(
        !m.accept_bytes(b"Observation"),
        "refused bytes leave the state"
    );
    assert!(m.accept_bytes(b"get_time\nAction Input: {\"timezone\": \"UTC\"}"));
    assert!(m.is_accepting());
    assert!(!m.reset_to("nope"));
    assert!(m.is_accepting(), "a failed reset changes nothing");
}

#[test]
fn format_names_and_unknown_is_a_usage_error() {
    for name in CallFormat::shipped_names() {
        assert_eq!(CallFormat::load(name).unwrap().name, name);
    }
    let e = CallFormat::load("xml").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Usage);
    assert!(
        e.to_string()
            .contains("react, hermes, llama3, mistral, json, toolken"),
        "{e}"
    );
}

/// Splits `text` into token ids of `v` (a [`small_vocab`]): each marker in
/// `specials` as its special token, every other byte as its byte token.
fn tokenize_small(v: &Vocab, specials: &[&str], text: &str) -> Vec<u32> {
    let ids: Vec<(&[u8], u32)> = specials
        .iter()
        .map(|s| {
            let i = v
                .tokens
                .iter()
                .position(|t| *t == Token::Special(s.to_string()))
                .unwrap_or_else(|| panic!("no special {s}"));
            (s.as_bytes(), i as u32)
        })
        .collect();
    let mut out = Vec::new();
    let mut rest = text.as_bytes();
    'outer: while let Some(&b) = rest.first() {
        for (s, i) in &ids {
            if let Some(r) = rest.strip_prefix(*s) {
                out.push(*i);
                rest = r;
                continue 'outer;
            }
        }
        out.push(u32::from(b));
        rest = &rest[1..];
    }
    out
}

/// Checks a shipped format on whole texts, per entry: on the built-in GPT-2
/// vocabulary (every marker spelled as text), and on a small vocabulary that
/// has the markers as special tokens (the texts cut at them).
fn check_format(format: &str, markers: &[&str], cases: &[(&str, &str, bool)]) {
    let a = artifact(format);
    let names: Vec<&str> = a.grammar().entries().map(|e| e.0).collect();
    for (entry, text, want) in cases {
        assert!(names.contains(entry), "{format}: no entry {entry}");
        assert_eq!(
            accepts(&a, entry, text),
            *want,
            "{format} {entry} (text markers): {text:?}"
        );
    }
    let v = small_vocab(&[], markers);
    let a = build(format, &v);
    for (entry, text, want) in cases {
        let toks = tokenize_small(&v, markers, text);
        assert_eq!(
            feed(&a, entry, &toks),
            *want,
            "{format} {entry} (special markers): {text:?}"
        );
    }
}

/// The entries of a format without reasoning, and of one with it.
const PLAIN_ENTRIES: [&str; 4] = ["auto", "required", "one", "auto-one"];
const THINK_ENTRIES: [&str; 8] = [
    "auto",
    "required",
    "one",
    "auto-one",
    "think-auto",
    "think-required",
    "think-one",
    "think-auto-one",
];

#[test]
fn every_shipped_format_has_the_tool_choice_entries() {
    let old = [
        ("react", vec!["start", "parallel"]),
        ("hermes", vec!["start", "calls", "call"]),
        ("llama3", vec!["start"]),
        ("mistral", vec!["start"]),
        ("json", vec!["start", "call"]),
        ("toolken", vec!["start", "call"]),
    ];
    for name in CallFormat::shipped_names() {
        let f = CallFormat::load(name).unwrap();
        let entries = f.entries();
        if let Some((_, first)) = old.iter().find(|o| o.0 == name) {
            // The old entries stay first, in their order; then the shared ones.
            assert_eq!(&entries[..first.len()], &first[..], "{name}");
            for e in PLAIN_ENTRIES {
                assert!(entries.iter().any(|x| x == e), "{name}: no {e}");
            }
        } else if entries.len() == THINK_ENTRIES.len() {
            assert_eq!(entries, THINK_ENTRIES, "{name}");
        } else {
            assert_eq!(entries, PLAIN_ENTRIES, "{name}");
        }
    }
}

#[test]
fn qwen3_blocks_and_reasoning() {
    let paris = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    let utc = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";
    check_format(
        "qwen3",
        &["<tool_call>", "</tool_call>", "</think>"],
        &[
            (
                "auto",
                &format!("Let me look that up.\n{paris}\n{utc}"),
                true,
            ),
            ("auto", "Just an answer.", true),
            ("required", &format!("{paris}\n{utc}"), true),
            ("required", &format!("Sure.\n{paris}"), false),
            ("one", paris, true),
            ("one", &format!("{paris}\n{utc}"), false),
            (
                "think-one",
                &format!("The user wants the weather.\n</think>\n\n{paris}"),
                true,
            ),
            ("think-auto", "Easy.\n</think>\n\nIt is sunny.", true),
            ("think-required", "Easy.\n</think>\n\nIt is sunny.", false),
            ("auto-one", &format!("Let me look that up.\n{paris}"), true),
            ("auto-one", "Just an answer.", true),
            (
                "auto-one",
                &format!("Let me look that up.\n{paris}\n{utc}"),
                false,
            ),
            (
                "think-auto-one",
                &format!("Easy.\n</think>\n\n{paris}"),
                true,
            ),
            (
                "think-auto-one",
                &format!("Easy.\n</think>\n\n{paris}\n{utc}"),
                false,
            ),
        ],
    );
}

#[test]
fn qwen3_coder_parameters() {
    let call = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>";
    let utc = "<tool_call>\n<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n</function>\n</tool_call>";
    check_format(
        "qwen3-coder",
        &["<tool_call>", "</tool_call>", "</think>"],
        &[
            ("auto", &format!("I'll check.\n\n{call}\n{utc}"), true),
            ("required", &format!("\n{call}\n{utc}"), true),
            ("required", &format!("{call}{utc}"), true),
            ("one", call, true),
            // A string value is raw text: multi-line, quotes as they are.
            (
                "one",
                "<tool_call>\n<function=get_time>\n<parameter=timezone>\nEurope/\"Paris\"\nline 2\n</parameter>\n</function>\n</tool_call>",
                true,
            ),
            // A number is JSON.
            (
                "one",
                "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>",
                false,
            ),
            ("think-required", &format!("Need it.\n</think>\n\n{call}"), true),
        ],
    );
}

#[test]
fn glm_arg_pairs_with_and_without_newlines() {
    let markers = [
        "<tool_call>",
        "</tool_call>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "</think>",
    ];
    let c45 = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>";
    let t45 = "<tool_call>get_time\n<arg_key>timezone</arg_key>\n<arg_value>UTC</arg_value>\n</tool_call>";
    check_format(
        "glm-4.5",
        &markers,
        &[
            ("auto", &format!("Let me check.\n{c45}\n{t45}"), true),
            ("required", &format!("\n{c45}\n{t45}"), true),
            ("one", c45, true),
            ("one", &c45.replace('\n', ""), false),
            ("think-one", &format!("Weather.</think>\n{c45}"), true),
        ],
    );
    let c47 = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>3</arg_value></tool_call>";
    let t47 =
        "<tool_call>get_time<arg_key>timezone</arg_key><arg_value>UTC</arg_value></tool_call>";
    check_format(
        "glm-4.7",
        &markers,
        &[
            ("auto", &format!("Let me check.{c47}{t47}"), true),
            ("required", &format!("{c47}{t47}"), true),
            ("one", c47, true),
            ("one", c45, false),
            ("think-auto", "Weather.</think>It is sunny.", true),
        ],
    );
}

#[test]
fn deepseek_sections() {
    let markers = [
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁calls▁end｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁sep｜>",
        "</think>",
    ];
    let r1 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"timezone\": \"UTC\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    check_format(
        "deepseek-r1",
        &markers,
        &[
            ("auto", &format!("Sure.{r1}"), true),
            ("required", r1, true),
            ("one", r1, false),
            ("think-required", &format!("Hmm.\n</think>\n\n{r1}"), true),
        ],
    );
    let v31 = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{\"timezone\": \"UTC\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    check_format(
        "deepseek-v3.1",
        &markers,
        &[
            ("auto", &format!("Sure.{v31}"), true),
            ("required", v31, true),
            ("one", v31, false),
            ("one", r1, false),
            ("think-auto", &format!("Hmm.</think>{v31}"), true),
        ],
    );
    let v32 = "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n<｜DSML｜parameter name=\"city\" string=\"true\">Paris</｜DSML｜parameter>\n<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"timezone\" string=\"true\">UTC</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>";
    check_format(
        "deepseek-v3.2",
        &["</think>"],
        &[
            ("auto", &format!("Let me check.\n\n{v32}"), true),
            ("required", &format!("\n\n{v32}"), true),
            ("required", v32, true),
            ("one", v32, false),
            ("think-required", &format!("Hmm.</think>\n\n{v32}"), true),
            // string="true" marks a raw string, string="false" JSON.
            (
                "required",
                &v32.replace("\"days\" string=\"false\"", "\"days\" string=\"true\""),
                false,
            ),
        ],
    );
}

#[test]
fn kimi_k2_sections_and_ids() {
    let markers = [
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "</think>",
    ];
    let two = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{\"timezone\": \"UTC\"}<|tool_call_end|><|tool_calls_section_end|>";
    check_format(
        "kimi-k2",
        &markers,
        &[
            ("auto", &format!("Let me check.{two}"), true),
            ("required", two, true),
            ("one", two, false),
            ("required", &two.replace(":1<", ":9999<"), true),
            ("required", &two.replace(":1<", ":10000<"), false),
            ("required", &two.replace(":1<", ":01<"), false),
            ("think-one", "Hmm.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:3<|tool_call_argument_begin|>{\"timezone\": \"UTC\"}<|tool_call_end|><|tool_calls_section_end|>", true),
        ],
    );
}

#[test]
fn gpt_oss_harmony_headers() {
    let markers = [
        "<|start|>",
        "<|end|>",
        "<|message|>",
        "<|channel|>",
        "<|constrain|>",
        "<|call|>",
    ];
    let analysis = "<|channel|>analysis<|message|>User wants the weather.<|end|><|start|>assistant";
    let call = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    let call_role = " to=functions.get_weather<|channel|>commentary <|constrain|>json<|message|>{\"city\": \"Paris\"}<|call|>";
    check_format(
        "gpt-oss",
        &markers,
        &[
            ("auto", &format!("{analysis}{call}"), true),
            ("auto", &format!("{analysis}<|channel|>final<|message|>It is sunny."), true),
            ("auto", &format!("{analysis}<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant{call}"), true),
            ("required", call, true),
            ("required", call_role, true),
            ("required", &call.replace(" <|constrain|>json", ""), true),
            ("required", &call.replace(" <|constrain|>json", " json"), true),
            ("required", &call.replace(" <|constrain|>", "<|constrain|>"), true),
            ("required", &format!("{analysis}<|channel|>final<|message|>No."), false),
            ("one", &format!("{call}{call}"), false),
            ("think-one", &format!("Weather.<|end|><|start|>assistant{call}"), true),
            ("think-auto", "Hi.<|end|><|start|>assistant<|channel|>final<|message|>Hello.", true),
        ],
    );
}

#[test]
fn llama_json_and_pythonic() {
    let one = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
    let utc = "{\"name\": \"get_time\", \"parameters\": {\"timezone\": \"UTC\"}}";
    check_format(
        "llama3",
        &["<|python_tag|>"],
        &[
            ("start", one, true),
            ("start", &format!("<|python_tag|>{one}"), false),
            ("auto", one, true),
            ("auto", "It is sunny.", true),
            ("auto", "{not a call", false),
            ("required", &format!("<|python_tag|>{one}; {utc}"), true),
            ("one", &format!("<|python_tag|>{one}"), true),
            ("one", &format!("{one}; {utc}"), false),
        ],
    );
    let list = "[get_weather(city='Paris', days=3), get_time(timezone=\"UTC\")]";
    check_format(
        "llama-pythonic",
        &["<|python_start|>", "<|python_end|>"],
        &[
            ("auto", list, true),
            ("auto", "It is sunny.", true),
            ("required", list, true),
            ("required", &format!("<|python_start|>{list}<|python_end|>"), true),
            ("one", "[get_weather(city='Paris')]", true),
            ("one", list, false),
            ("one", "[search_flights(from='SFO', to='JFK', flexible={'days': 2, 'nearby': True}, note=None)]", true),
            ("one", "[get_weather(city=Paris)]", false),
        ],
    );
}

#[test]
fn mistral_v11_calls() {
    let two = "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{\"timezone\": \"UTC\"}";
    check_format(
        "mistral-v11",
        &["[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[/THINK]"],
        &[
            ("auto", &format!("Sure.{two}"), true),
            ("auto", "Sure.", true),
            ("required", two, true),
            (
                "one",
                "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Paris\"}",
                true,
            ),
            (
                "one",
                "[TOOL_CALLS]get_weather[CALL_ID]a1b2[ARGS]{\"city\": \"Paris\"}",
                false,
            ),
            ("one", two, false),
            ("think-required", &format!("Weather.[/THINK]{two}"), true),
        ],
    );
}

#[test]
fn minimax_m2_invokes() {
    let block = "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">3</parameter>\n</invoke>\n<invoke name=\"get_time\">\n<parameter name=\"timezone\">UTC</parameter>\n</invoke>\n</minimax:tool_call>";
    check_format(
        "minimax-m2",
        &["<minimax:tool_call>", "</minimax:tool_call>", "</think>"],
        &[
            ("auto", &format!("Let me check.\n{block}"), true),
            ("required", block, true),
            ("one", block, false),
            (
                "think-required",
                &format!("Hmm.\n</think>\n\n{block}"),
                true,
            ),
        ],
    );
}

#[test]
fn granite_lists() {
    let list = "[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}]";
    check_format(
        "granite",
        &["<|tool_call|>"],
        &[
            ("auto", &format!("<|tool_call|>{list}"), true),
            ("auto", "It is sunny.", true),
            ("required", &format!("<|tool_call|>{list}"), true),
            ("required", &format!("<tool_call>{list}"), true),
            ("required", list, false),
            (
                "one",
                "<|tool_call|>[{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}]",
                true,
            ),
            ("one", &format!("<|tool_call|>{list}"), false),
        ],
    );
}

#[test]
fn gemma4_calls() {
    let markers = ["<|tool_call>", "<tool_call|>", "<|\"|>", "<channel|>"];
    let w = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>";
    let t = "<|tool_call>call:get_time{timezone:<|\"|>UTC<|\"|>}<tool_call|>";
    check_format(
        "gemma4",
        &markers,
        &[
            ("auto", &format!("Sure.{w}{t}"), true),
            ("required", &format!("{w}{t}"), true),
            ("one", w, true),
            ("one", &format!("{w}{t}"), false),
            // Keys sorted, as Gemma 4's template writes them (dictsort).
            (
                "one",
                "<|tool_call>call:search_flights{flexible:{days:2,nearby:true},from:<|\"|>SFO<|\"|>,stops:[0,1],to:<|\"|>JFK<|\"|>}<tool_call|>",
                true,
            ),
            (
                "one",
                "<|tool_call>call:search_flights{from:<|\"|>SFO<|\"|>,to:<|\"|>JFK<|\"|>,stops:[0,1],flexible:{days:2,nearby:true}}<tool_call|>",
                false,
            ),
            ("one", "<|tool_call>call:get_weather{city:\"Paris\"}<tool_call|>", false),
            ("think-one", &format!("thought\nWeather.\n<channel|>{w}"), true),
        ],
    );
}

#[test]
fn old_formats_gain_the_tool_choice_entries() {
    let hermes = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    check_format(
        "hermes",
        &["<tool_call>", "</tool_call>"],
        &[
            ("auto", "Only text.", true),
            ("auto", &format!("Text.\n{hermes}"), true),
            ("start", "Only text.", false),
            ("required", &format!("{hermes}\n{hermes}"), true),
            ("one", hermes, true),
            ("auto-one", "Only text.", true),
            ("auto-one", &format!("Text.\n{hermes}"), true),
            ("auto-one", &format!("Text.\n{hermes}\n{hermes}"), false),
        ],
    );
    let m = "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]";
    check_format(
        "mistral",
        &["[TOOL_CALLS]"],
        &[
            ("auto", "Only text.", true),
            ("auto", &format!("Text.{m}"), true),
            ("required", m, true),
            ("one", m, true),
            ("auto-one", &format!("Text.{m}"), true),
            ("auto-one", "Only text.", true),
            (
                "auto-one",
                "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]",
                false,
            ),
        ],
    );
    let j = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
    check_format(
        "json",
        &[],
        &[
            ("auto", j, true),
            ("auto", &format!("[{j}, {j}]"), true),
            ("auto", "Only text.", true),
            ("required", &format!("[{j}]"), true),
            ("one", j, true),
            ("one", &format!("[{j}]"), false),
            ("auto-one", j, true),
            ("auto-one", "Only text.", true),
            ("auto-one", &format!("[{j}, {j}]"), false),
        ],
    );
    let thought = "Thought: two things.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}";
    check_format(
        "react",
        &[],
        &[
            ("auto", thought, true),
            ("auto", "Thought: I know.\nFinal Answer: It is sunny.", true),
            ("auto", "It is sunny.", false),
            (
                "required",
                &format!("{thought}\nAction: get_time\nAction Input: {{\"timezone\": \"UTC\"}}"),
                true,
            ),
            ("one", thought, true),
            ("auto-one", thought, true),
            (
                "auto-one",
                &format!("{thought}\nAction: get_time\nAction Input: {{\"timezone\": \"UTC\"}}"),
                false,
            ),
        ],
    );
}

#[test]
fn toolken_tool_choice_entries() {
    let a = toolken(&Vocab::builtin_gpt2().unwrap());
    for (entry, text, want) in [
        ("auto", "No tool needed.", true),
        ("auto", "147+354=<T>add(147, 354)=501 bananas.", true),
        ("required", "No tool needed.", false),
        ("required", "<T>add(1,2)=3 and <T>sqrt(16)=4.", true),
        ("one", "147+354=<T>add(147, 354)=501 bananas.", true),
        ("one", "<T>add(1,2)=3 and <T>sqrt(16)=4.", false),
        ("auto-one", "No tool needed.", true),
        ("auto-one", "147+354=<T>add(147, 354)=501 bananas.", true),
        ("auto-one", "<T>add(1,2)=3 and <T>sqrt(16)=4.", false),
    ] {
        assert_eq!(accepts(&a, entry, text), want, "{entry} {text:?}");
    }
}

/// Kimi-K2 numbers its calls across the whole conversation
/// (`functions.NAME:IDX`): a later turn, restarted at an entry with
/// `reset_to` after the engine's inserted text, goes on counting where the
/// last stopped; DSML and Qwen3-Coder restart the same way.
#[test]
fn multi_turn_running_counters_and_reset() {
    let a = artifact("kimi-k2");
    let g = a.grammar();
    let call = |name: &str, idx: u32, args: &str| {
        format!(
            "<|tool_call_begin|>functions.{name}:{idx}<|tool_call_argument_begin|>{args}<|tool_call_end|>"
        )
    };
    let mut m = g.matcher_at("required").unwrap();
    let first = format!(
        "<|tool_calls_section_begin|>{}{}<|tool_calls_section_end|>",
        call("get_weather", 0, "{\"city\": \"Paris\"}"),
        call("get_time", 1, "{\"timezone\": \"UTC\"}")
    );
    assert!(m.accept_bytes(first.as_bytes()));
    assert!(m.is_accepting());
    // The engine inserts the tool results and starts the next turn.
    assert!(m.reset_to("auto"));
    let second = format!(
        "Checking once more.<|tool_calls_section_begin|>{}<|tool_calls_section_end|>",
        call("get_weather", 2, "{\"city\": \"Rome\"}")
    );
    assert!(m.accept_bytes(second.as_bytes()));
    assert!(m.is_accepting());
    assert!(m.reset_to("one"));
    let bad = format!(
        "<|tool_calls_section_begin|>{}",
        call("get_weather", 7, "{\"city\": 3}")
    );
    assert!(
        !m.accept_bytes(bad.as_bytes()),
        "a mistyped argument is refused"
    );

    for (format, entry, turn) in [
        (
            "qwen3-coder",
            "required",
            "<tool_call>\n<function=get_time>\n<parameter=timezone>\nUTC\n</parameter>\n</function>\n</tool_call>",
        ),
        (
            "deepseek-v3.2",
            "required",
            "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_time\">\n<｜DSML｜parameter name=\"timezone\" string=\"true\">UTC</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
        ),
    ] {
        let a = artifact(format);
        let g = a.grammar();
        let mut m = g.matcher_at(entry).unwrap();
        for k in 0..3 {
            assert!(m.accept_bytes(turn.as_bytes()), "{format}: turn {k}");
            assert!(m.is_accepting(), "{format}: turn {k}");
            assert!(m.reset_to(entry));
        }
    }
}
