//! Added tokens that are not special are text (issue 20).
//!
//! A tokenizer's added tokens with `"special": false` decode to their
//! content: Gemma-3 writes every newline, double newline, run of spaces and
//! HTML tag with one, and Qwen2.5 writes `<tool_call>` and `</tool_call>`
//! so. The compiler reads them as text tokens with the bytes the decoder
//! makes of their content, so:
//!
//! - `gemma3_react_and_hermes`: ground-truth calls (the weather tools and
//!   the first BFCL multiple lines), with thoughts and preambles holding
//!   newlines, double newlines, runs of spaces and HTML tags, tokenized by
//!   Gemma-3's own tokenizer, are accepted token by token by artifacts
//!   compiled with `--format react` and `--format hermes`, and end where
//!   EOS is allowed;
//! - `qwen2_5_hermes`: the same with Qwen2.5 and hermes, where
//!   `<tool_call>` is tokenized as its added token, now plain text to the
//!   grammar (the format's `token("<tool_call>")` falls back to the text);
//! - `added_tokens_decode_to_their_bytes`: on every shared tokenizer, each
//!   non-special added token's bytes are what `tokenizers` decodes its id
//!   to, and each special one stays special; prints how many added tokens
//!   are text.
//!
//! All read `TOOLDEC_DATA` (see `tooldec_testkit::data_dir`): unset, they
//! print a skip line and pass; set with a file missing, they fail.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{compile, spec, CallFormat, Options};
use tooldec_runtime::{Artifact, Grammar};
use tooldec_testkit::loaded::{cache_cell, tokenizer, Cache};
use tooldec_testkit::{bfcl, data_dir, data_file, render, schema};

const BFCL_MULTIPLE: &str = "tools/bfcl/BFCL_v4_multiple.json";
const BFCL_MULTIPLE_ANSWERS: &str = "tools/bfcl/possible_answer/BFCL_v4_multiple.json";
/// How many BFCL multiple lines the Gemma-3 and Qwen2.5 checks add to the
/// weather tools.
const BFCL_LINES: usize = 4;

/// The shared tokenizers with an added-token table.
const TOKENIZERS: [&str; 7] = [
    "gpt2",
    "llama-3.2",
    "qwen2.5",
    "mistral-v0.1",
    "smollm2-135m",
    "gpt-oss",
    "gemma-3",
];

fn skip(label: &str) -> bool {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping {label}");
        return true;
    }
    false
}

fn weather() -> spec::ToolSet {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The artifact of `set` (named `id`) in `format` for tokenizer `tok`,
/// compiled once per binary.
fn compiled(tok: &str, vocab: &Vocab, format: &str, id: &str, set: &spec::ToolSet) -> Arc<Vec<u8>> {
    static CACHE: Cache<Arc<Vec<u8>>> = OnceLock::new();
    cache_cell(&CACHE, format!("{tok}\0{format}\0{id}"))
        .get_or_init(|| {
            let opts = Options {
                format: CallFormat::load(format).unwrap(),
                zstd_level: None,
                ..Options::default()
            };
            let out = compile(set, vocab, &opts, &mut |_| {})
                .unwrap_or_else(|e| panic!("{tok} {format} {id}: {e}"));
            Arc::new(out.artifact)
        })
        .clone()
}

/// A call and the tools it is for.
struct Call {
    set: String,
    name: String,
    args: Value,
}

/// The weather calls, then the ground truth of the first BFCL multiple
/// lines (in the grammar's closed-object shape, valid per the schema).
fn calls() -> (Vec<(String, spec::ToolSet)>, Vec<Call>) {
    let mut sets = vec![("weather".to_string(), weather())];
    let mut out = vec![
        Call {
            set: "weather".into(),
            name: "get_weather".into(),
            args: json!({"city": "New  York", "unit": "celsius", "days": 3}),
        },
        Call {
            set: "weather".into(),
            name: "search_flights".into(),
            args: json!({"from": "CDG", "to": "JFK", "passengers": 2, "stops": [1, 2],
                "flexible": {"days": 1, "nearby": true}}),
        },
        Call {
            set: "weather".into(),
            name: "get_time".into(),
            args: json!({"timezone": "Europe/Paris", "format24": false}),
        },
    ];
    let bfcl_sets = bfcl::load_sets(&data_file(BFCL_MULTIPLE));
    let answers = bfcl::load_answers(&data_file(BFCL_MULTIPLE_ANSWERS));
    for (set, (aid, gt)) in bfcl_sets.iter().zip(&answers).take(BFCL_LINES) {
        assert_eq!(&set.id, aid, "question and answer files are out of step");
        let validators = schema::ToolValidators::new(&set.tools);
        for call in gt.iter().filter_map(Value::as_object) {
            for (name, call_args) in call {
                let Some(tool) = set.tools.iter().find(|t| t["name"] == name.as_str()) else {
                    continue;
                };
                let params = tool
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
                let Ok(args) = render::ground_truth_args(&params, call_args) else {
                    continue;
                };
                if validators.check(name, &args).is_err() {
                    continue;
                }
                out.push(Call {
                    set: set.id.clone(),
                    name: name.clone(),
                    args,
                });
            }
        }
        let parsed = spec::parse(&set.id, &set.text)
            .unwrap_or_else(|e| panic!("{}: the converted tool list does not parse: {e}", set.id));
        sets.push((set.id.clone(), parsed));
    }
    assert!(
        out.len() > 3,
        "no BFCL ground truth fits: the first {BFCL_LINES} lines gave no call"
    );
    (sets, out)
}

/// Thoughts for react's `start` entry: newlines, double newlines, runs of
/// spaces and HTML tags (all added tokens of Gemma-3).
const THOUGHTS: [&str; 3] = [
    "I will call the tool.",
    "The user asks twice.\n\nI will call the tool.",
    "Plan:\n\n    1. <b>look it up</b>\n    2. answer\n\n\nNow.",
];

/// Preambles for hermes' `start` entry.
const PREAMBLES: [&str; 3] = ["", "Let me check.\n\n", "Sure  <b>now</b>:\n\n\n"];

fn react_text(thought: &str, name: &str, args: &str) -> String {
    format!("Thought: {thought}\nAction: {name}\nAction Input: {args}")
}

fn hermes_call(name: &str, args: &str) -> String {
    format!(
        "<tool_call>\n{{\"name\": {}, \"arguments\": {args}}}\n</tool_call>",
        serde_json::to_string(name).unwrap()
    )
}

/// The texts of one call, by (format, entry).
fn texts(format: &str, c: &Call) -> Vec<(&'static str, String)> {
    let forms = [
        serde_json::to_string(&c.args).unwrap(),
        render::spaced(&c.args),
    ];
    let mut out = Vec::new();
    for args in &forms {
        match format {
            "react" => {
                for t in THOUGHTS {
                    out.push(("start", react_text(t, &c.name, args)));
                }
                let one = format!("Action: {}\nAction Input: {args}", c.name);
                out.push(("parallel", format!("Thought: Two.\n\n{one}\n{one}")));
            }
            "hermes" => {
                let call = hermes_call(&c.name, args);
                for p in PREAMBLES {
                    out.push(("start", format!("{p}{call}")));
                }
                out.push(("call", call.clone()));
                out.push(("calls", format!("{call}\n{call}")));
            }
            _ => unreachable!(),
        }
    }
    out
}

/// Feeds every text of every call through its artifact; returns the ids
/// the real tokenizer wrote, all texts together.
fn check_all(tok: &str, format: &str) -> BTreeSet<u32> {
    let loaded = tokenizer(tok);
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let (sets, calls) = calls();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    let mut n = 0;
    for (id, set) in &sets {
        let artifact = compiled(tok, vocab, format, id, set);
        let art = Artifact::from_bytes(&artifact).unwrap();
        let g = art.grammar();
        let mut words = vec![0u32; g.mask_words()];
        for c in calls.iter().filter(|c| &c.set == id) {
            for (entry, text) in texts(format, c) {
                n += 1;
                let m = g.matcher_at(entry).unwrap();
                match tooldec_testkit::check_text(&g, m, hf, &mut words, &text) {
                    Ok(ids) => seen.extend(ids),
                    Err(e) => failures.push(format!("{id} {entry}: {e}\ntext: {text:?}")),
                }
            }
        }
    }
    println!(
        "[{tok}] {format}: {n} texts of {} calls over {} tool sets; {} failures",
        calls.len(),
        sets.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "[{tok}] {format}: {} of {n} texts refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
    seen
}

/// The id of the added token whose content is `content`.
fn added_id(hf: &tokenizers::Tokenizer, content: &str) -> u32 {
    hf.get_added_tokens_decoder()
        .iter()
        .find(|(_, a)| a.content == content)
        .map(|(&id, _)| id)
        .unwrap_or_else(|| panic!("no added token {content:?}"))
}

/// Whether token `t` is allowed after `prefix` from entry `entry`.
fn allowed_after(g: &Grammar<'_>, entry: &str, prefix: &str, t: u32) -> bool {
    let mut m = g.matcher_at(entry).unwrap();
    assert!(m.accept_bytes(prefix.as_bytes()), "{prefix:?} refused");
    let mut words = vec![0u32; g.mask_words()];
    m.fill_mask(&mut words);
    words[(t >> 5) as usize] & (1 << (t & 31)) != 0
}

#[test]
fn gemma3_react_and_hermes() {
    if skip("Gemma-3 with react and hermes") {
        return;
    }
    let loaded = tokenizer("gemma-3");
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let newline = added_id(hf, "\n");
    let double = added_id(hf, "\n\n");
    let bold = added_id(hf, "<b>");
    let unused = added_id(hf, "<unused0>");
    let turn = added_id(hf, "<start_of_turn>");
    assert_eq!(vocab.tokens[newline as usize], Token::Text(b"\n".to_vec()));
    assert_eq!(
        vocab.tokens[turn as usize],
        Token::Special("<start_of_turn>".into())
    );
    assert!(matches!(
        vocab.tokens[vocab.eos[0] as usize],
        Token::Special(_)
    ));
    let spaces: BTreeSet<u32> = (2..=31)
        .map(|k| added_id(hf, &"\u{2581}".repeat(k)))
        .collect();
    for &s in &spaces {
        assert!(
            matches!(&vocab.tokens[s as usize], Token::Text(b) if b.iter().all(|&x| x == b' ')),
            "token {s}: {:?}",
            vocab.tokens[s as usize]
        );
    }

    for format in ["react", "hermes"] {
        let seen = check_all("gemma-3", format);
        // The texts did go through the added tokens.
        for (what, id) in [("\\n", newline), ("\\n\\n", double), ("<b>", bold)] {
            assert!(seen.contains(&id), "{format}: no text used {what} ({id})");
        }
        assert!(
            !seen.is_disjoint(&spaces),
            "{format}: no text used a run of spaces"
        );
    }

    // In react's thought, the added tokens are text like any other; the
    // special tokens are not.
    let artifact = compiled("gemma-3", vocab, "react", "weather", &weather());
    let art = Artifact::from_bytes(&artifact).unwrap();
    let g = art.grammar();
    for t in [newline, double, bold, unused] {
        assert!(allowed_after(&g, "start", "Thought: ", t), "token {t}");
    }
    assert!(!allowed_after(&g, "start", "Thought: ", turn));
}

#[test]
fn qwen2_5_hermes() {
    if skip("Qwen2.5 with hermes") {
        return;
    }
    let loaded = tokenizer("qwen2.5");
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let open = added_id(hf, "<tool_call>");
    let close = added_id(hf, "</tool_call>");
    assert_eq!(
        vocab.tokens[open as usize],
        Token::Text(b"<tool_call>".to_vec())
    );
    assert_eq!(
        vocab.tokens[close as usize],
        Token::Text(b"</tool_call>".to_vec())
    );
    // The tokenizer writes the tags as their added tokens.
    let enc = hf.encode("<tool_call>\n{}\n</tool_call>", false).unwrap();
    assert_eq!(enc.get_ids().first(), Some(&open));
    assert_eq!(enc.get_ids().last(), Some(&close));

    let seen = check_all("qwen2.5", "hermes");
    assert!(seen.contains(&open) && seen.contains(&close));

    // The format finds no special token by that name: it uses none, and
    // the tag's added token and its spelling in pieces are both allowed.
    let artifact = compiled("qwen2.5", vocab, "hermes", "weather", &weather());
    let art = Artifact::from_bytes(&artifact).unwrap();
    let g = art.grammar();
    assert!(tooldec_testkit::served::grammar_specials(&g).is_empty());
    assert!(allowed_after(&g, "call", "", open));
    let lt = vocab.resolve("<").unwrap();
    assert!(allowed_after(&g, "call", "", lt));
    // After free text, the tag's added token and its bytes lead to the
    // same state: the start of a call.
    let mut by_token = g.matcher_at("start").unwrap();
    assert!(by_token.accept_bytes(b"Hi "));
    let mut by_bytes = by_token;
    assert!(by_token.accept_token(open));
    assert!(by_bytes.accept_bytes(b"<tool_call>"));
    assert_eq!(by_token.state(), by_bytes.state());
}

#[test]
fn added_tokens_decode_to_their_bytes() {
    if skip("the added tokens of every shared tokenizer") {
        return;
    }
    for tok in TOKENIZERS {
        let loaded = tokenizer(tok);
        let (vocab, hf) = (&loaded.0, &loaded.1);
        let added = hf.get_added_tokens_decoder();
        let (mut text, mut special) = (0, 0);
        for (&id, a) in &added {
            let got = &vocab.tokens[id as usize];
            if a.special {
                special += 1;
                assert_eq!(got, &Token::Special(a.content.clone()), "{tok} {id}");
                continue;
            }
            text += 1;
            // Single-token decoding is exact unless the decoder drops a
            // leading space (Mistral's `Strip`).
            if !vocab.leading_space {
                let decoded = hf.decode(&[id], false).unwrap();
                assert_eq!(
                    got,
                    &Token::Text(decoded.clone().into_bytes()),
                    "{tok} {id} {:?}: tokenizers decodes it to {decoded:?}",
                    a.content
                );
            }
        }
        println!(
            "[{tok}] {} added tokens: {special} special, {text} text; fingerprint {}",
            added.len(),
            vocab.fingerprint()[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        // The serving side's fingerprint, from the tokenizer's JSON, agrees.
        let json = std::fs::read_to_string(data_file(&format!("tokenizers/{tok}/tokenizer.json")))
            .unwrap();
        assert_eq!(
            Vocab::fingerprint_tokenizer_json(&json).unwrap(),
            vocab.fingerprint(),
            "{tok}"
        );
    }
}
