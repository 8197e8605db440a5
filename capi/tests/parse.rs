//! Reading calls back from C: `tests/c/parse.c`, compiled against the
//! header and `libtooldec.a`, reads a ReAct output of the weather example
//! as text and as token ids through `tooldec_artifact_parse_text` and
//! `_parse_tokens` (sizing the buffer first), and the error paths; every
//! line is compared with the Rust reader (`tooldec_read`).

mod common;

use std::path::Path;

use common::{compile_c, run, write_file};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{compile, spec, CallFormat, Options};
use tooldec_runtime::Artifact;

#[test]
fn c_reads_calls_back_like_rust() {
    let path = "../grammars/examples/weather.json";
    let tools = spec::parse(path, &std::fs::read_to_string(path).unwrap()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        format: CallFormat::load("react").unwrap(),
        ..Options::default()
    };
    let bytes = compile(&tools, &vocab, &opts, &mut |_| {})
        .unwrap()
        .artifact;
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let art_path = dir.join("parse-weather-react.tdm");
    write_file(&art_path, &bytes);

    let text = "Thought: Lyon, three days.\nAction: search_flights\nAction Input: {\"from\": \"LYS\", \"to\": \"Ré \\\"<x>\\\"\", \"passengers\": 2, \"stops\": [1, 2]}";
    let text_path = dir.join("parse-text.txt");
    write_file(&text_path, text.as_bytes());
    // Token ids: longest match over the vocabulary's bytes.
    let ids = split(&vocab, text.as_bytes());
    let ids_path = dir.join("parse-ids.txt");
    let list: Vec<String> = ids.iter().map(u32::to_string).collect();
    write_file(&ids_path, list.join(",").as_bytes());

    let art = Artifact::from_bytes(&bytes).unwrap();
    let g = art.grammar();
    let reader = tooldec_read::Reader::new(&g).unwrap();
    let json = tooldec_read::to_json(&reader.read_text(&g, None, text).unwrap());
    assert_eq!(
        json,
        r#"[{"name":"search_flights","arguments":{"from":"LYS","to":"Ré \"<x>\"","passengers":2,"stops":[1,2]}}]"#
    );
    let entries: Vec<&str> = g.entries().map(|(n, _)| n).collect();
    let entries = entries.join(", ");
    let cut = reader
        .read_text(&g, None, &text[..text.len() - 2])
        .unwrap_err()
        .to_string();

    let program = compile_c("parse", &[common::capi_dir().join("tests/c/parse.c")], &[]);
    let out = run(&program, &[&art_path, &text_path, &ids_path]);
    let want = format!(
        "size TOOLDEC_ERR_BUFFER_TOO_SMALL {n}\ntext TOOLDEC_OK {n} {json}\ntokens TOOLDEC_OK {n} {json}\ncut TOOLDEC_ERR_REJECTED {cut}\nentry TOOLDEC_ERR_NO_ENTRY the artifact has no entry \"nope\"; its entries: {entries}\nnull TOOLDEC_ERR_NULL\n",
        n = json.len()
    );
    assert_eq!(out, want);
}

fn split(vocab: &Vocab, s: &[u8]) -> Vec<u32> {
    let by: std::collections::HashMap<&[u8], u32> = vocab
        .tokens
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Token::Text(b) => Some((b.as_slice(), i as u32)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let n = (1..=(s.len() - i).min(16))
            .rev()
            .find(|&n| by.contains_key(&s[i..i + n]))
            .unwrap();
        out.push(by[&s[i..i + n]]);
        i += n;
    }
    out
}
