//! The compiler's own tokenizer.json reader (`vocab/hf.rs`) against the
//! `tokenizers` crate.
//!
//! The reader parses only the vocabulary, the added tokens and the decoder;
//! the token table must still be exactly what `tokenizers` gives, or a
//! serving engine's fingerprint (from its loaded tokenizer) would disagree.
//! The oracle is the reader it replaced, kept here as it was: it loads the
//! whole tokenizer with `tokenizers` and reads `get_vocab(true)`,
//! `get_added_tokens_decoder()` and the re-serialized decoder.
//!
//! - `shared_tokenizers_read_as_tokenizers_does`: every
//!   `tokenizers/*/tokenizer.json` under `TOOLDEC_DATA`, token by token
//!   (kind and bytes), with the vocabulary kind, the leading-space rule and
//!   the fingerprint; WordPiece is refused by both. Without `TOOLDEC_DATA`
//!   it prints a skip line and passes; set with a file missing, it fails.
//! - `corner_cases_read_as_tokenizers_does`: small files on the corners of
//!   `tokenizers`' loading (added-token ids, repeated entries, Unigram,
//!   Metaspace, WordLevel, untyped models), without the data.

use std::collections::HashMap;

use serde_json::{json, Value};
use tooldec_compiler::vocab::{read_tokenizer_json, ReadTokens, Token, Vocab, VocabKind};
use tooldec_testkit::loaded::eos_for;
use tooldec_testkit::{data_dir, data_file};

/// The shared tokenizers: each must be there when `TOOLDEC_DATA` is set
/// (any other folder found beside them is checked too).
const SHARED: [&str; 8] = [
    "gpt2",
    "llama-3.2",
    "qwen2.5",
    "mistral-v0.1",
    "smollm2-135m",
    "gpt-oss",
    "gemma-3",
    "bert-minilm-wordpiece",
];

#[test]
fn shared_tokenizers_read_as_tokenizers_does() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the tokenizer.json reader against tokenizers");
        return;
    }
    let root = data_file("tokenizers");
    let mut names: Vec<String> = SHARED.iter().map(|s| s.to_string()).collect();
    for entry in std::fs::read_dir(&root).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().join("tokenizer.json").exists() && !names.contains(&name) {
            names.push(name);
        }
    }
    let mut refused = Vec::new();
    for name in &names {
        let path = data_file(&format!("tokenizers/{name}/tokenizer.json"));
        let json = std::fs::read_to_string(&path).unwrap();
        let shown = path.display().to_string();
        let new = read_tokenizer_json(&json, &shown).map_err(|e| e.message().to_string());
        let old = oracle(&json, &shown);
        match (new, old) {
            (Ok(new), Ok(old)) => {
                same_table(name, &new, &old);
                // The public entry points read the same table.
                let fp = Vocab::fingerprint_tokenizer_json(&json).unwrap();
                assert_eq!(fp, fingerprint(&old.tokens), "{name}: fingerprint");
                let vocab = Vocab::from_tokenizer_json(&path, &eos_for(name))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(vocab.tokens, old.tokens, "{name}: from_tokenizer_json");
                assert_eq!(vocab.fingerprint(), fp, "{name}");
                println!(
                    "[{name}] {} tokens ({} special, {} unused), {}, leading space {}: same as tokenizers",
                    old.tokens.len(),
                    count(&old.tokens, |t| matches!(t, Token::Special(_))),
                    count(&old.tokens, |t| *t == Token::Unused),
                    old.kind.name(),
                    old.leading_space
                );
            }
            (Err(new), Err(old)) => {
                assert_eq!(new, old, "{name}: the refusals differ");
                println!("[{name}] refused by both: {new}");
                refused.push(name.clone());
            }
            (new, old) => panic!(
                "{name}: the reader gives {:?}, tokenizers {:?}",
                new.map(|r| r.tokens.len()),
                old.map(|r| r.tokens.len())
            ),
        }
    }
    assert!(
        refused.iter().any(|n| n == "bert-minilm-wordpiece"),
        "the WordPiece tokenizer was not refused"
    );
    let e = Vocab::fingerprint_tokenizer_json(
        &std::fs::read_to_string(data_file("tokenizers/bert-minilm-wordpiece/tokenizer.json"))
            .unwrap(),
    )
    .unwrap_err();
    assert!(e.message().contains("WordPiece"), "{e}");
}

/// What the reader must agree with the oracle on, for one file.
enum Want {
    /// The same table, or the same refusal word for word.
    Same,
    /// Both refuse (`tokenizers` cannot load it; the messages differ).
    BothRefuse,
}

#[test]
fn corner_cases_read_as_tokenizers_does() {
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true,
        "use_regex": true});
    let sp = json!({"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]});
    let metaspace = |extra: Value| {
        let mut d = json!({"type": "Metaspace", "replacement": "\u{2581}"});
        d.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        d
    };
    let bpe_vocab = json!({"a": 0, "b": 1, "\u{120}": 2, "\u{120}a": 3, "\u{10a}": 4});
    let bpe = |vocab: &Value| json!({"type": "BPE", "vocab": vocab, "merges": []});
    let sp_vocab = json!({"<unk>": 0, "<0x0A>": 1, "\u{2581}": 2, "a": 3, "\u{2581}a": 4});
    let unigram = json!({"type": "Unigram", "unk_id": 0, "byte_fallback": true,
        "vocab": [["<unk>", 0.0], ["\u{2581}a", -1.0], ["<0x41>", -2.0], ["b", -3.0], ["\u{2581}a", -4.0]]});
    let wordlevel = json!({"type": "WordLevel", "unk_token": "[UNK]",
        "vocab": {"[UNK]": 0, "\u{2581}x": 1, "y": 2}});
    let many_added = vec![
        added(99, "b", false),       // in the model: takes its id
        added(0, "<s>", true),       // new: the next id after the model's
        added(3, "", true),          // empty: skipped
        added(1, "<pad>", true),     // new
        added(7, "<s>", false),      // same content, other flags: replaces <s>
        added(7, "<s>", true),       // equal to the first <s>: skipped
        added(2, "a b", false),      // a space, outside the byte-level alphabet
        added(5, "\u{120}x", false), // inside it
    ];
    let cases: Vec<(&str, String, Want)> = vec![
        (
            "byte-level with added tokens",
            file(many_added.clone(), &byte_level, &bpe(&bpe_vocab)),
            Want::Same,
        ),
        (
            "SentencePiece-style with added tokens",
            file(
                vec![
                    added(0, "<unk>", true),
                    added(9, "\n", false),
                    added(9, "\u{2581}\u{2581}", false),
                ],
                &sp,
                &bpe(&sp_vocab),
            ),
            Want::Same,
        ),
        (
            "Unigram, a piece repeated",
            file(
                vec![added(0, "<unk>", true), added(0, "<extra>", false)],
                &sp,
                &unigram,
            ),
            Want::Same,
        ),
        (
            "Metaspace",
            file(vec![], &metaspace(json!({})), &unigram),
            Want::Same,
        ),
        (
            "Metaspace, prepend never",
            file(
                vec![],
                &metaspace(json!({"prepend_scheme": "never"})),
                &unigram,
            ),
            Want::Same,
        ),
        (
            "Metaspace, prepend first",
            file(
                vec![],
                &metaspace(json!({"prepend_scheme": "first"})),
                &unigram,
            ),
            Want::Same,
        ),
        (
            "Metaspace, legacy add_prefix_space true",
            file(
                vec![],
                &metaspace(json!({"add_prefix_space": true})),
                &unigram,
            ),
            Want::Same,
        ),
        (
            "Metaspace, legacy add_prefix_space false with never",
            file(
                vec![],
                &metaspace(json!({"add_prefix_space": false, "prepend_scheme": "never"})),
                &unigram,
            ),
            Want::Same,
        ),
        (
            "Metaspace, legacy add_prefix_space false alone",
            file(
                vec![],
                &metaspace(json!({"add_prefix_space": false})),
                &unigram,
            ),
            Want::BothRefuse,
        ),
        (
            "WordLevel with Metaspace",
            file(
                vec![added(0, "[UNK]", true), added(0, "[X]", true)],
                &metaspace(json!({})),
                &wordlevel,
            ),
            Want::Same,
        ),
        (
            "an untyped BPE model",
            file(
                vec![],
                &byte_level,
                &json!({"vocab": bpe_vocab, "merges": []}),
            ),
            Want::Same,
        ),
        (
            "sparse ids, a repeated key, an added token over a model id",
            file(
                vec![added(0, "<s>", true), added(0, "<pad>", true)],
                &byte_level,
                &json!("MODEL"),
            )
            .replace(
                "\"MODEL\"",
                r#"{"type": "BPE", "vocab": {"a": 7, "b": 1, "a": 0, "c": 4}, "merges": []}"#,
            ),
            Want::Same,
        ),
        (
            "keys in another order, escapes, repeated top-level keys",
            format!(
                r#"{{"model": {{"type": "BPE", "vocab": {{"z": 0}}, "merges": []}}, "decoder": null, "added_tokens": [{}],
                   "decoder": {}, "model": {{"merges": [], "vocab": {{"\u0120\"": 0, "\\n": 1}}, "type": "BPE"}}}}"#,
                added(0, "<s>", true),
                byte_level
            ),
            Want::Same,
        ),
        (
            "WordPiece",
            file(
                vec![],
                &json!({"type": "WordPiece", "prefix": "##", "cleanup": true}),
                &json!({"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                    "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "a": 1, "##b": 2}}),
            ),
            Want::Same,
        ),
        (
            "no decoder",
            file(vec![], &Value::Null, &bpe(&bpe_vocab)),
            Want::Same,
        ),
        (
            "a BPE decoder",
            file(
                vec![],
                &json!({"type": "BPEDecoder", "suffix": "</w>"}),
                &bpe(&bpe_vocab),
            ),
            Want::Same,
        ),
        (
            "a token outside the byte-level alphabet",
            file(vec![], &byte_level, &bpe(&json!({"a b": 0}))),
            Want::Same,
        ),
        (
            "such a token under an added one",
            file(
                vec![added(0, "a b", true)],
                &byte_level,
                &bpe(&json!({"a b": 0, "c": 1})),
            ),
            Want::Same,
        ),
        (
            "an unknown decoder",
            file(vec![], &json!({"type": "Magic"}), &bpe(&bpe_vocab)),
            Want::BothRefuse,
        ),
        (
            "an unknown model",
            file(vec![], &byte_level, &json!({"type": "Magic", "vocab": {}})),
            Want::BothRefuse,
        ),
        (
            "a BPE model without merges",
            file(
                vec![],
                &byte_level,
                &json!({"type": "BPE", "vocab": bpe_vocab}),
            ),
            Want::BothRefuse,
        ),
        (
            "an added token without its flags",
            file(
                vec![json!({"id": 5, "content": "x"})],
                &byte_level,
                &bpe(&bpe_vocab),
            ),
            Want::BothRefuse,
        ),
        (
            "version 2.0",
            file(vec![], &byte_level, &bpe(&bpe_vocab)).replace("\"1.0\"", "\"2.0\""),
            Want::BothRefuse,
        ),
        ("not JSON", "{\"model\": ".into(), Want::BothRefuse),
    ];
    for (what, json, want) in &cases {
        let new = read_tokenizer_json(json, "t.json").map_err(|e| e.message().to_string());
        let old = oracle(json, "t.json");
        match (want, new, old) {
            (Want::Same, Ok(new), Ok(old)) => {
                same_table(what, &new, &old);
                assert_eq!(
                    Vocab::fingerprint_tokenizer_json(json).unwrap(),
                    fingerprint(&old.tokens),
                    "{what}"
                );
            }
            (Want::Same, Err(new), Err(old)) => assert_eq!(new, old, "{what}"),
            (Want::BothRefuse, Err(_), Err(_)) => {}
            (_, new, old) => panic!("{what}: the reader gives {new:?}, tokenizers {old:?}\n{json}"),
        }
    }
}

/// The two tables are equal, or the first differences are shown.
fn same_table(what: &str, new: &ReadTokens, old: &ReadTokens) {
    let diffs: Vec<String> = (0..new.tokens.len().max(old.tokens.len()))
        .filter(|&i| new.tokens.get(i) != old.tokens.get(i))
        .take(10)
        .map(|i| {
            format!(
                "  {i}: reader {:?}, tokenizers {:?}",
                new.tokens.get(i),
                old.tokens.get(i)
            )
        })
        .collect();
    assert!(
        diffs.is_empty(),
        "{what}: {} tokens against {}; first differences:\n{}",
        new.tokens.len(),
        old.tokens.len(),
        diffs.join("\n")
    );
    assert_eq!(new.kind, old.kind, "{what}: kind");
    assert_eq!(
        new.leading_space, old.leading_space,
        "{what}: leading space"
    );
}

fn count(tokens: &[Token], f: impl Fn(&Token) -> bool) -> usize {
    tokens.iter().filter(|t| f(t)).count()
}

fn added(id: u32, content: &str, special: bool) -> Value {
    json!({"id": id, "content": content, "single_word": false, "lstrip": false,
        "rstrip": false, "normalized": false, "special": special})
}

fn file(added_tokens: Vec<Value>, decoder: &Value, model: &Value) -> String {
    json!({"version": "1.0", "truncation": null, "padding": null,
        "added_tokens": added_tokens, "normalizer": null, "pre_tokenizer": null,
        "post_processor": null, "decoder": decoder, "model": model})
    .to_string()
}

/// The fingerprint of a token table, as `Vocab::fingerprint` defines it.
fn fingerprint(tokens: &[Token]) -> [u8; 32] {
    let mut f = tooldec_runtime::Fingerprint::new(tokens.len() as u32);
    for t in tokens {
        match t {
            Token::Text(b) => f.push_text(b),
            Token::Special(s) => f.push_special(s),
            Token::Unused => f.push_unused(),
        }
    }
    f.finish()
}

// The oracle: the compiler's reader before `vocab/hf.rs`, unchanged but
// for returning its error as text.

fn oracle(json: &str, shown: &str) -> Result<ReadTokens, String> {
    let tok: tokenizers::Tokenizer = json
        .parse()
        .map_err(|e| format!("{shown}: cannot load tokenizer: {e}"))?;
    read_tokens(&tok, shown)
}

fn read_tokens(tok: &tokenizers::Tokenizer, shown: &str) -> Result<ReadTokens, String> {
    let verr = |msg: String| format!("{shown}: {msg}");
    let model = serde_json::to_value(tok.get_model()).map_err(|e| verr(e.to_string()))?;
    let model_type = model
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let decoder = tok
        .get_decoder()
        .and_then(|d| serde_json::to_value(d).ok())
        .unwrap_or(Value::Null);
    let decoders = flatten(&decoder);
    let has = |t: &str| {
        decoders
            .iter()
            .any(|d| d.get("type").and_then(Value::as_str) == Some(t))
    };
    if model_type == "WordPiece" {
        return Err(verr(
            "WordPiece vocabularies cannot be mapped to exact bytes (\"##\" continuations and \
             normalization lose them); tooldec needs a generative model's BPE or SentencePiece tokenizer"
                .into(),
        ));
    }
    let kind = if has("ByteLevel") {
        VocabKind::ByteLevel
    } else if has("ByteFallback") || has("Metaspace") || decoders.iter().any(is_metaspace_replace) {
        VocabKind::SentencePiece
    } else {
        return Err(verr(format!(
            "cannot recover token bytes: the decoder ({}) is neither byte-level nor SentencePiece-style",
            describe(&decoder)
        )));
    };
    let byte_fallback = has("ByteFallback");
    let leading_space = kind == VocabKind::SentencePiece
        && decoders.iter().any(|d| {
            let ty = d.get("type").and_then(Value::as_str);
            (ty == Some("Strip") && d.get("start").and_then(Value::as_u64).unwrap_or(0) > 0)
                || (ty == Some("Metaspace")
                    && d.get("prepend_scheme")
                        .and_then(Value::as_str)
                        .unwrap_or("always")
                        != "never")
        });

    let added = tok.get_added_tokens_decoder();
    let vocab = tok.get_vocab(true);
    let n = vocab.values().copied().max().map_or(0, |m| m as usize + 1);
    let mut tokens = vec![Token::Unused; n];
    let unicode_to_byte = byte_level_inverse();
    for (text, &id) in &vocab {
        if added.contains_key(&id) {
            continue; // below
        }
        let token = if kind == VocabKind::ByteLevel {
            let mut bytes = Vec::with_capacity(text.len());
            for c in text.chars() {
                match unicode_to_byte.get(&c) {
                    Some(&b) => bytes.push(b),
                    None => {
                        return Err(verr(format!(
                            "token {id} {text:?} has the character {c:?}, outside the byte-level alphabet"
                        )))
                    }
                }
            }
            Token::Text(bytes)
        } else {
            Token::Text(piece_bytes(text, byte_fallback))
        };
        tokens[id as usize] = token;
    }
    for (&id, a) in &added {
        if (id as usize) < n {
            tokens[id as usize] = if a.special {
                Token::Special(a.content.clone())
            } else {
                Token::Text(added_text(
                    &a.content,
                    kind,
                    byte_fallback,
                    &unicode_to_byte,
                ))
            };
        }
    }
    Ok(ReadTokens {
        tokens,
        kind,
        leading_space,
    })
}

fn piece_bytes(text: &str, byte_fallback: bool) -> Vec<u8> {
    match byte_fallback.then(|| parse_byte_token(text)).flatten() {
        Some(b) => vec![b],
        None => text.replace('\u{2581}', " ").into_bytes(),
    }
}

fn added_text(
    content: &str,
    kind: VocabKind,
    byte_fallback: bool,
    unicode_to_byte: &HashMap<char, u8>,
) -> Vec<u8> {
    match kind {
        VocabKind::ByteLevel => content
            .chars()
            .map(|c| unicode_to_byte.get(&c).copied())
            .collect::<Option<Vec<u8>>>()
            .unwrap_or_else(|| content.as_bytes().to_vec()),
        VocabKind::SentencePiece => piece_bytes(content, byte_fallback),
        VocabKind::Raw => content.as_bytes().to_vec(),
    }
}

fn flatten(d: &Value) -> Vec<&Value> {
    match d.get("decoders").and_then(Value::as_array) {
        Some(parts) => parts.iter().flat_map(flatten).collect(),
        None if d.is_object() => vec![d],
        None => Vec::new(),
    }
}

fn is_metaspace_replace(d: &&Value) -> bool {
    d.get("type").and_then(Value::as_str) == Some("Replace")
        && d.pointer("/pattern/String").and_then(Value::as_str) == Some("\u{2581}")
}

fn describe(d: &Value) -> String {
    let types: Vec<&str> = flatten(d)
        .iter()
        .filter_map(|d| d.get("type").and_then(Value::as_str))
        .collect();
    if types.is_empty() {
        "none".into()
    } else {
        types.join(", ")
    }
}

fn parse_byte_token(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

fn byte_level_inverse() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut chars: Vec<u32> = printable.clone();
    let mut extra = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    printable
        .iter()
        .zip(&chars)
        .filter_map(|(&b, &c)| Some((char::from_u32(c)?, b as u8)))
        .collect()
}
