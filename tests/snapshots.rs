//! insta snapshots of readable dumps of small compiled grammars: header,
//! states with byte-range transitions, and each state's allowed tokens.
//! The vocabulary is hand-written (every byte plus a few pieces), so the
//! snapshots do not depend on any tokenizer file.

use tooldec_compiler::dump::dump;
use tooldec_compiler::json::JsonOptions;
use tooldec_compiler::vocab::{Token, Vocab};
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
