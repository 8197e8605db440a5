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
    assert_eq!(names, ["start", "calls", "call"]);
    assert_eq!(g.entry_state("start"), Some(g.start_state()));
    assert!(g.matcher_at("nope").is_none());
    let meta: serde_json::Value = serde_json::from_str(g.metadata()).unwrap();
    assert_eq!(meta["format"], "hermes");
    assert_eq!(
        meta["entries"],
        serde_json::json!(["start", "calls", "call"])
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
