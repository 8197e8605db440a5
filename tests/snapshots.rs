//! insta snapshots of readable dumps of small compiled grammars: header,
//! states with byte-range transitions, and each state's allowed tokens.
//! The vocabulary is hand-written (every byte plus a few pieces), so the
//! snapshots do not depend on any tokenizer file.

use tooldec_compiler::artifact::dump::dump;
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::JsonOptions;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;

fn vocab() -> Vocab {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    for piece in [
        "Thought: ",
        "\nAction: ",
        "\nAction Input: ",
        "add",
        "neg",
        "{\"a\":",
        ",\"b\":",
        "{\"x\":",
        "true",
        "false",
        "12",
    ] {
        tokens.push(Token::Text(piece.as_bytes().to_vec()));
    }
    tokens.push(Token::Special("</s>".into()));
    let eos = tokens.len() as u32 - 1;
    Vocab::from_tokens(tokens, vec![eos], "bytes and pieces").unwrap()
}

fn compiled_dump(example: &str, max_ws: u32) -> String {
    let path = format!(
        "{}/../grammars/examples/{example}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let set = spec::parse(example, &text).unwrap();
    let opts = Options {
        json: JsonOptions {
            max_ws,
            ..JsonOptions::default()
        },
        ..Options::default()
    };
    let out = compile(&set, &vocab(), &opts, &mut |_| {}).unwrap();
    let art = Artifact::from_bytes(&out.artifact).unwrap();
    dump(&art.grammar())
}

#[test]
fn tiny_compact() {
    insta::assert_snapshot!(compiled_dump("tiny.json", 0));
}

#[test]
fn tiny_with_whitespace() {
    insta::assert_snapshot!(compiled_dump("tiny.json", 1));
}

/// The hand-written vocabulary plus the special tokens some formats use.
fn vocab_with_specials() -> Vocab {
    let mut v = vocab();
    let eos = v.tokens.pop().unwrap();
    for s in ["<tool_call>", "</tool_call>", "[TOOL_CALLS]"] {
        v.tokens.push(Token::Special(s.into()));
    }
    v.tokens.push(eos);
    let id = v.tokens.len() as u32 - 1;
    Vocab::from_tokens(v.tokens, vec![id], "bytes, pieces and specials").unwrap()
}

/// A shipped format's grammar as parsed (canonical form), then the summary
/// of its DFA compiled for tiny.json: sizes, entries, special tokens used.
fn format_summary(name: &str) -> String {
    let format = tooldec_compiler::CallFormat::load(name).unwrap();
    let mut out = format.grammar.pretty();
    let path = format!(
        "{}/../grammars/examples/tiny.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let set = spec::parse("tiny.json", &std::fs::read_to_string(path).unwrap()).unwrap();
    let opts = Options {
        format,
        json: JsonOptions {
            max_ws: 0,
            ..JsonOptions::default()
        },
        ..Options::default()
    };
    let compiled = compile(&set, &vocab_with_specials(), &opts, &mut |_| {}).unwrap();
    let r = &compiled.report;
    let art = Artifact::from_bytes(&compiled.artifact).unwrap();
    let g = art.grammar();
    let meta: serde_json::Value = serde_json::from_str(g.metadata()).unwrap();
    let accepting = (1..g.state_count() as u32)
        .filter(|&s| g.is_accepting_state(s))
        .count();
    out.push_str(&format!(
        "---\nNFA {} -> DFA {} -> minimized {} states ({} accepting), {} byte classes, {} distinct masks\n",
        r.nfa_states, r.dfa_states, r.min_states, accepting, r.classes, r.masks
    ));
    for (entry, state) in g.entries() {
        out.push_str(&format!("entry {entry}: state {state}\n"));
    }
    out.push_str(&format!(
        "special tokens used: {}\n",
        meta["grammar_specials"]
    ));
    out
}

#[test]
fn format_react() {
    insta::assert_snapshot!(format_summary("react"));
}

#[test]
fn format_hermes() {
    insta::assert_snapshot!(format_summary("hermes"));
}

#[test]
fn format_llama3() {
    insta::assert_snapshot!(format_summary("llama3"));
}

#[test]
fn format_mistral() {
    insta::assert_snapshot!(format_summary("mistral"));
}

#[test]
fn format_json() {
    insta::assert_snapshot!(format_summary("json"));
}

#[test]
fn format_toolken() {
    insta::assert_snapshot!(format_summary("toolken"));
}

#[test]
fn format_qwen3() {
    insta::assert_snapshot!(format_summary("qwen3"));
}

#[test]
fn format_qwen3_coder() {
    insta::assert_snapshot!(format_summary("qwen3-coder"));
}

#[test]
fn format_glm_45() {
    insta::assert_snapshot!(format_summary("glm-4.5"));
}

#[test]
fn format_glm_47() {
    insta::assert_snapshot!(format_summary("glm-4.7"));
}

#[test]
fn format_deepseek_r1() {
    insta::assert_snapshot!(format_summary("deepseek-r1"));
}

#[test]
fn format_deepseek_v31() {
    insta::assert_snapshot!(format_summary("deepseek-v3.1"));
}

#[test]
fn format_deepseek_v32() {
    insta::assert_snapshot!(format_summary("deepseek-v3.2"));
}

#[test]
fn format_kimi_k2() {
    insta::assert_snapshot!(format_summary("kimi-k2"));
}

#[test]
fn format_gpt_oss() {
    insta::assert_snapshot!(format_summary("gpt-oss"));
}

#[test]
fn format_llama_pythonic() {
    insta::assert_snapshot!(format_summary("llama-pythonic"));
}

#[test]
fn format_mistral_v11() {
    insta::assert_snapshot!(format_summary("mistral-v11"));
}

#[test]
fn format_minimax_m2() {
    insta::assert_snapshot!(format_summary("minimax-m2"));
}

#[test]
fn format_granite() {
    insta::assert_snapshot!(format_summary("granite"));
}

#[test]
fn format_gemma4() {
    insta::assert_snapshot!(format_summary("gemma4"));
}
