//! The vocab: each token id's exact bytes, or its mark as a special token.
//!
//! A model emits token ids; the DFA reads bytes. The crossing is only sound
//! if every token's bytes are exactly what the tokenizer decodes it to, so
//! this module refuses vocabularies it cannot map (WordPiece, whose `##`
//! continuations and normalization lose the bytes) instead of guessing.
//!
//! - Byte-level BPE (GPT-2, Llama 3, Qwen2.5, SmolLM2): token strings are
//!   written in GPT-2's printable alphabet for the 256 bytes; invert it.
//! - SentencePiece style (Mistral, Llama 2): `▁` stands for a space and
//!   `<0xNN>` tokens are raw bytes (byte fallback); other tokens are UTF-8.
//! - Added tokens: a *special* added token (`"special": true`) is never
//!   text; it matches only its id. A non-special added token
//!   (`"special": false`) decodes to its content, so it is a text token
//!   with the bytes the decoder makes of that content: Gemma's `\n`,
//!   `\n\n`, runs of spaces and `<unusedN>`, Qwen2.5's `<tool_call>`. A
//!   format's `token("<tool_call>")` then finds no special token by that
//!   name and falls back to the text, which that added token (and any other
//!   spelling of the same bytes) matches.
//!
//! A `tokenizer.json` is read by `hf` (its vocabulary, added tokens and
//! decoder, without building the tokenizer), a GGUF file by `gguf`.

mod gguf;
mod hf;

pub use gguf::is_gguf;
pub use hf::{read_tokenizer_json, ReadTokens};

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, ErrorKind};

/// One token of the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A text token and its exact bytes.
    Text(Vec<u8>),
    /// A special token (a special added token, a GGUF control token),
    /// named; it never matches text.
    Special(String),
    /// An id the tokenizer leaves unused.
    Unused,
}

/// How the token bytes were recovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VocabKind {
    /// Byte-level BPE (GPT-2's byte-to-character map).
    ByteLevel,
    /// SentencePiece: `▁` for a space and `<0xHH>` byte-fallback tokens.
    SentencePiece,
    /// Tokens given as their raw bytes.
    Raw,
}

impl VocabKind {
    /// The kind in words, as the metadata and `tooldec inspect` show it.
    pub fn name(self) -> &'static str {
        match self {
            VocabKind::ByteLevel => "byte-level BPE",
            VocabKind::SentencePiece => "SentencePiece (▁ and byte fallback)",
            VocabKind::Raw => "raw bytes",
        }
    }
}

/// The most tokens a vocabulary, and the most ids a mask, may have: the
/// ids a special token's marker addresses (2^24; the largest tokenizers
/// have a few hundred thousand).
pub const MAX_TOKENS: usize = tooldec_runtime::layout::reserved::MAX_MARKED_ID as usize + 1;

/// The longest token: the token trie keeps each node's depth in 16 bits
/// (real tokens are at most a few hundred bytes).
pub const MAX_TOKEN_BYTES: usize = u16::MAX as usize;

/// A tokenizer's tokens as bytes, with its end-of-sequence tokens.
#[derive(Debug, Clone)]
pub struct Vocab {
    /// The tokens, by id.
    pub tokens: Vec<Token>,
    /// The end-of-sequence tokens.
    pub eos: Vec<u32>,
    /// How the tokens' bytes were recovered.
    pub kind: VocabKind,
    /// The decoder drops one leading space of the output (SentencePiece
    /// tokenizers that prepend `▁`): the first token of an output may carry
    /// a space the text does not show, so the grammar allows one.
    pub leading_space: bool,
    /// What the vocabulary is, for the summary and the artifact metadata.
    pub label: String,
}

impl Vocab {
    /// A vocabulary from token bytes; `eos` ids must be special tokens.
    pub fn from_tokens(tokens: Vec<Token>, eos: Vec<u32>, label: &str) -> Result<Vocab, Error> {
        let mut v = Vocab {
            tokens,
            eos: Vec::new(),
            kind: VocabKind::Raw,
            leading_space: false,
            label: label.to_string(),
        };
        v.set_eos(eos)?;
        Ok(v)
    }

    /// The built-in GPT-2 vocabulary (`r50k_base`, shipped by `tiktoken-rs`),
    /// with `<|endoftext|>` (50256) as end of sequence.
    pub fn builtin_gpt2() -> Result<Vocab, Error> {
        let bpe = tiktoken_rs::r50k_base_singleton();
        let mut tokens = Vec::with_capacity(50257);
        for rank in 0..50256u32 {
            let bytes = bpe.decode_bytes(&[rank]).map_err(|e| {
                Error::new(
                    ErrorKind::Vocab,
                    format!("built-in GPT-2 vocabulary: token {rank}: {e:?}"),
                )
            })?;
            tokens.push(Token::Text(bytes));
        }
        tokens.push(Token::Special("<|endoftext|>".into()));
        let mut v = Vocab::from_tokens(tokens, vec![50256], "gpt2 (built-in r50k_base)")?;
        v.kind = VocabKind::ByteLevel;
        Ok(v)
    }

    /// Loads a Hugging Face `tokenizer.json`. End-of-sequence tokens come
    /// from `eos` (token strings or ids) or, when empty, from the
    /// `eos_token` of a `tokenizer_config.json` next to it.
    pub fn from_tokenizer_json(path: &Path, eos: &[String]) -> Result<Vocab, Error> {
        let shown = path.display().to_string();
        let verr = |msg: String| Error::new(ErrorKind::Vocab, format!("{shown}: {msg}"));
        let json =
            std::fs::read_to_string(path).map_err(|e| verr(format!("cannot read it: {e}")))?;
        let label = path
            .parent()
            .and_then(|p| p.file_name())
            .map_or(shown.clone(), |n| n.to_string_lossy().into_owned());
        let from_config = || {
            let name = eos_from_config(path).ok_or_else(|| {
                verr("no end-of-sequence token known: there is no tokenizer_config.json with \"eos_token\" \
                      next to it; pass --eos TOKEN"
                    .into())
            })?;
            Ok((name, "eos_token of tokenizer_config.json: "))
        };
        Vocab::from_json_text(&json, &shown, &label, eos, from_config)
    }

    /// A Hugging Face `tokenizer.json` given as text (what an engine's
    /// loaded tokenizer serializes to), named `name` in errors and the
    /// label, with the end-of-sequence tokens `eos` (strings or ids; at
    /// least one: there is no `tokenizer_config.json` to read).
    pub fn from_tokenizer_json_text(
        json: &str,
        name: &str,
        eos: &[String],
    ) -> Result<Vocab, Error> {
        Vocab::from_json_text(json, name, name, eos, || {
            Err(Error::new(
                ErrorKind::Vocab,
                format!("{name}: no end-of-sequence token given"),
            ))
        })
    }

    /// What both constructors share: the table of `json`, labelled, and
    /// its EOS from `eos` or, when empty, the name `default_eos` gives
    /// (with the context of its errors).
    fn from_json_text(
        json: &str,
        shown: &str,
        label: &str,
        eos: &[String],
        default_eos: impl FnOnce() -> Result<(String, &'static str), Error>,
    ) -> Result<Vocab, Error> {
        let verr = |msg: String| Error::new(ErrorKind::Vocab, format!("{shown}: {msg}"));
        let ReadTokens {
            tokens,
            kind,
            leading_space,
        } = read_tokenizer_json(json, shown)?;
        let n = tokens.len();
        let mut v = Vocab {
            tokens,
            eos: Vec::new(),
            kind,
            leading_space,
            label: format!("{label} ({n} tokens, {})", kind.name()),
        };
        let eos_ids = if eos.is_empty() {
            let (name, context) = default_eos()?;
            vec![v
                .resolve(&name)
                .map_err(|e| verr(format!("{context}{e}")))?]
        } else {
            eos.iter()
                .map(|e| v.resolve(e))
                .collect::<Result<Vec<_>, _>>()
                .map_err(verr)?
        };
        v.set_eos(eos_ids)?;
        Ok(v)
    }

    /// The id of a token given as a number or as its exact string.
    pub fn resolve(&self, name: &str) -> Result<u32, String> {
        if let Ok(id) = name.parse::<u32>() {
            if (id as usize) < self.tokens.len() {
                return Ok(id);
            }
            return Err(format!(
                "token id {id} is beyond the vocabulary ({} tokens)",
                self.tokens.len()
            ));
        }
        let found = self.tokens.iter().position(|t| match t {
            Token::Special(s) => s == name,
            Token::Text(b) => b == name.as_bytes(),
            Token::Unused => false,
        });
        found
            .map(|i| i as u32)
            .ok_or_else(|| format!("no token {name:?} in the vocabulary"))
    }

    /// Every constructor ends here, so it also holds the size bound.
    pub(crate) fn set_eos(&mut self, mut eos: Vec<u32>) -> Result<(), Error> {
        if self.tokens.len() > MAX_TOKENS {
            return Err(Error::new(
                ErrorKind::Vocab,
                format!(
                    "{} tokens: an artifact addresses at most {MAX_TOKENS} token ids",
                    self.tokens.len()
                ),
            ));
        }
        let long = self.tokens.iter().enumerate().find_map(|(id, t)| match t {
            Token::Text(b) if b.len() > MAX_TOKEN_BYTES => Some((id, b.len())),
            _ => None,
        });
        if let Some((id, len)) = long {
            return Err(Error::new(
                ErrorKind::Vocab,
                format!(
                    "token {id} is {len} bytes: tokens of at most {MAX_TOKEN_BYTES} bytes are read"
                ),
            ));
        }
        eos.sort_unstable();
        eos.dedup();
        if eos.is_empty() {
            return Err(Error::new(
                ErrorKind::Vocab,
                "at least one end-of-sequence token is needed",
            ));
        }
        for &id in &eos {
            match self.tokens.get(id as usize) {
                Some(Token::Special(_)) => {}
                Some(Token::Text(b)) => {
                    return Err(Error::new(
                        ErrorKind::Vocab,
                        format!(
                            "end-of-sequence token {id} ({:?}) is a text token; EOS must be a special token",
                            String::from_utf8_lossy(b)
                        ),
                    ))
                }
                _ => return Err(Error::new(ErrorKind::Vocab, format!("end-of-sequence token {id} does not exist"))),
            }
        }
        self.eos = eos;
        Ok(())
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The bytes of a text token.
    pub fn bytes(&self, id: u32) -> Option<&[u8]> {
        match self.tokens.get(id as usize) {
            Some(Token::Text(b)) if !b.is_empty() => Some(b),
            _ => None,
        }
    }

    /// SHA-256 over the token table: a tag per token (text, special, unused),
    /// its length and its bytes (the name, for special tokens); the hash
    /// `tooldec_runtime::Fingerprint` defines, which engines compute from
    /// their own tokenizer.
    pub fn fingerprint(&self) -> [u8; 32] {
        fingerprint_of(&self.tokens)
    }

    /// The vocabulary fingerprint of a Hugging Face `tokenizer.json` given
    /// as text (what `tokenizers.Tokenizer.to_str()` returns): the same
    /// bytes [`Vocab::fingerprint`] gives for [`Vocab::from_tokenizer_json`]
    /// of that file, read by the same code. For a serving engine that holds
    /// a tokenizer, not its file; no end-of-sequence token is needed.
    pub fn fingerprint_tokenizer_json(json: &str) -> Result<[u8; 32], Error> {
        Ok(fingerprint_of(
            &read_tokenizer_json(json, "tokenizer.json")?.tokens,
        ))
    }

    /// Special token names by id, for the metadata.
    pub fn specials(&self) -> BTreeMap<u32, &str> {
        self.tokens
            .iter()
            .enumerate()
            .filter_map(|(i, t)| match t {
                Token::Special(s) => Some((i as u32, s.as_str())),
                _ => None,
            })
            .collect()
    }
}

/// The fingerprint of a token table (see [`Vocab::fingerprint`]).
fn fingerprint_of(tokens: &[Token]) -> [u8; 32] {
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

/// `<0xNN>` → NN.
pub(crate) fn parse_byte_token(s: &str) -> Option<u8> {
    let hex = s.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// GPT-2's byte-to-printable-character table, inverted.
pub(crate) fn byte_level_inverse() -> std::collections::HashMap<char, u8> {
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

fn eos_from_config(tokenizer: &Path) -> Option<String> {
    let config = tokenizer.with_file_name("tokenizer_config.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(config).ok()?).ok()?;
    match v.get("eos_token")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content")?.as_str().map(str::to_string),
        _ => None,
    }
}

/// Each token's bytes as the grammar reads them.
///
/// Text tokens are their text, except that a text token holding byte `0xFE`
/// or `0xFF` has none: those bytes never occur in UTF-8 and the grammar
/// reserves them (entry selectors, special tokens), so such a token can
/// never be allowed and must not walk into a reserved path. A special token
/// the grammar uses reads as its reserved byte string
/// ([`crate::lower::call_format::special_marker`]); other special tokens have none.
pub struct TokenText<'a> {
    vocab: &'a Vocab,
    markers: std::collections::HashMap<u32, [u8; 4]>,
}

impl<'a> TokenText<'a> {
    /// The grammar's view of `vocab`, with `specials` (the special tokens
    /// the grammar uses) read as their reserved byte strings.
    pub fn new(vocab: &'a Vocab, specials: &[u32]) -> TokenText<'a> {
        TokenText {
            vocab,
            markers: specials
                .iter()
                .filter_map(|&id| Some((id, crate::lower::call_format::special_marker(id)?)))
                .collect(),
        }
    }

    /// The number of tokens.
    pub fn len(&self) -> usize {
        self.vocab.len()
    }

    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.vocab.is_empty()
    }

    /// The bytes token `id` stands for in the grammar, if any.
    pub fn get(&self, id: u32) -> Option<&[u8]> {
        if let Some(m) = self.markers.get(&id) {
            return Some(m);
        }
        self.vocab.bytes(id).filter(|b| {
            !b.iter()
                .any(|&x| x >= crate::lower::call_format::ENTRY_ESCAPE)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn added(id: u32, content: &str, special: bool) -> Value {
        serde_json::json!({"id": id, "content": content, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": special})
    }

    /// A byte-level BPE tokenizer.json: `<|endoftext|>` a special added
    /// token, `<tool_call>` (as in Qwen2.5), `a b` (a space, outside GPT-2's
    /// alphabet) and `Ġx` (inside it) non-special added tokens.
    fn byte_level(tool_call_special: bool) -> String {
        serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [
                added(5, "<|endoftext|>", true),
                added(6, "<tool_call>", tool_call_special),
                added(7, "a b", false),
                added(8, "\u{120}x", false),
            ],
            "normalizer": null,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "post_processor": null,
            "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
                "vocab": {"a": 0, "b": 1, "\u{120}": 2, "\u{120}a": 3, "\u{10a}": 4},
                "merges": ["\u{120} a"]}
        })
        .to_string()
    }

    /// A Gemma-style tokenizer.json (SentencePiece-converted BPE with byte
    /// fallback): `<pad>` and `<eos>` special; `\n`, `▁▁` and `<unused0>`
    /// added but not special.
    fn gemma_like() -> String {
        serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null,
            "added_tokens": [
                added(0, "<pad>", true),
                added(1, "<eos>", true),
                added(6, "\n", false),
                added(7, "\u{2581}\u{2581}", false),
                added(8, "<unused0>", false),
            ],
            "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u{2581}"},
            "pre_tokenizer": null,
            "post_processor": null,
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"}]},
            "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
                "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": true,
                "vocab": {"<pad>": 0, "<eos>": 1, "<0x0A>": 2, "\u{2581}": 3, "a": 4, "\u{2581}a": 5,
                    "\n": 6, "\u{2581}\u{2581}": 7},
                "merges": ["\u{2581} a"]}
        })
        .to_string()
    }

    fn write(name: &str, json: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tooldec-vocab-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, json).unwrap();
        p
    }

    #[test]
    fn text_reads_as_the_file_does() {
        let json = byte_level(false);
        let path = write("text-and-file.json", &json);
        let eos = ["<|endoftext|>".to_string()];
        let from_file = Vocab::from_tokenizer_json(&path, &eos).unwrap();
        let from_text = Vocab::from_tokenizer_json_text(&json, "engine", &eos).unwrap();
        assert_eq!(from_text.tokens, from_file.tokens);
        assert_eq!(from_text.eos, from_file.eos);
        assert_eq!(from_text.fingerprint(), from_file.fingerprint());
        assert!(
            from_text.label.starts_with("engine ("),
            "{}",
            from_text.label
        );
        // Text has no tokenizer_config.json beside it: EOS must be given.
        let e = Vocab::from_tokenizer_json_text(&json, "engine", &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("engine: no end-of-sequence token given"),
            "{e}"
        );
        let e = Vocab::from_tokenizer_json_text("{", "engine", &eos).unwrap_err();
        assert!(e.to_string().starts_with("engine:1:"), "{e}");
    }

    /// Each non-special added token's bytes are what the tokenizer decodes
    /// its id to.
    fn decodes_as_tokenizers_does(json: &str, v: &Vocab, ids: &[u32]) {
        let tok: tokenizers::Tokenizer = json.parse().unwrap();
        for &id in ids {
            let decoded = tok.decode(&[id], false).unwrap();
            assert_eq!(
                v.tokens[id as usize],
                Token::Text(decoded.clone().into_bytes()),
                "token {id}: tokenizers decodes it to {decoded:?}"
            );
        }
    }

    #[test]
    fn non_special_added_tokens_are_text() {
        let json = byte_level(false);
        let v = Vocab::from_tokenizer_json(&write("bl.json", &json), &["<|endoftext|>".into()])
            .unwrap();
        assert_eq!(v.kind, VocabKind::ByteLevel);
        assert_eq!(
            v.tokens,
            vec![
                Token::Text(b"a".to_vec()),
                Token::Text(b"b".to_vec()),
                Token::Text(b" ".to_vec()),
                Token::Text(b" a".to_vec()),
                Token::Text(b"\n".to_vec()),
                Token::Special("<|endoftext|>".into()),
                Token::Text(b"<tool_call>".to_vec()),
                Token::Text(b"a b".to_vec()),
                Token::Text(b" x".to_vec()),
            ]
        );
        assert_eq!(v.eos, vec![5]);
        assert_eq!(v.specials(), BTreeMap::from([(5, "<|endoftext|>")]));
        decodes_as_tokenizers_does(&json, &v, &[6, 7, 8]);
        // The tokenizer writes `<tool_call>` as that one added token.
        let tok: tokenizers::Tokenizer = json.parse().unwrap();
        assert_eq!(tok.encode("<tool_call>", false).unwrap().get_ids(), &[6]);
        // A name resolves to the text token; EOS must still be special.
        assert_eq!(v.resolve("<tool_call>"), Ok(6));
        let e = Vocab::from_tokenizer_json(&write("bl.json", &json), &["<tool_call>".into()])
            .unwrap_err();
        assert!(e.message().contains("is a text token"), "{e}");
        // Marked special, the same token is special again.
        let v = Vocab::from_tokenizer_json(
            &write("bl-special.json", &byte_level(true)),
            &["<|endoftext|>".into()],
        )
        .unwrap();
        assert_eq!(v.tokens[6], Token::Special("<tool_call>".into()));
    }

    #[test]
    fn gemma_style_added_tokens_decode_through_the_decoder() {
        let json = gemma_like();
        let v = Vocab::from_tokenizer_json(&write("gemma.json", &json), &["<eos>".into()]).unwrap();
        assert_eq!(v.kind, VocabKind::SentencePiece);
        assert!(!v.leading_space);
        assert_eq!(v.tokens[0], Token::Special("<pad>".into()));
        assert_eq!(v.tokens[1], Token::Special("<eos>".into()));
        assert_eq!(v.tokens[2], Token::Text(b"\n".to_vec()));
        assert_eq!(v.tokens[6], Token::Text(b"\n".to_vec()));
        // An added run of `▁` is a run of spaces, as the decoder says.
        assert_eq!(v.tokens[7], Token::Text(b"  ".to_vec()));
        // A placeholder decodes to its name, so it is that text.
        assert_eq!(v.tokens[8], Token::Text(b"<unused0>".to_vec()));
        assert_eq!(v.eos, vec![1]);
        decodes_as_tokenizers_does(&json, &v, &[6, 7, 8]);
        let tok: tokenizers::Tokenizer = json.parse().unwrap();
        assert_eq!(tok.encode("a\na", false).unwrap().get_ids(), &[4, 6, 4]);
    }

    #[test]
    fn the_fingerprint_sees_added_text() {
        let json = byte_level(false);
        let v = Vocab::from_tokenizer_json(&write("fp.json", &json), &["<|endoftext|>".into()])
            .unwrap();
        let fp = Vocab::fingerprint_tokenizer_json(&json).unwrap();
        // The serving side's fingerprint (from the JSON text) is the
        // compiler's, and the same every time.
        assert_eq!(fp, v.fingerprint());
        assert_eq!(fp, Vocab::fingerprint_tokenizer_json(&json).unwrap());
        // By hand: the runtime's builder fed the table.
        let mut f = tooldec_runtime::Fingerprint::new(9);
        for t in ["a", "b", " ", " a", "\n"] {
            f.push_text(t.as_bytes());
        }
        f.push_special("<|endoftext|>");
        for t in ["<tool_call>", "a b", " x"] {
            f.push_text(t.as_bytes());
        }
        assert_eq!(fp, f.finish());
        // A special <tool_call> is another vocabulary.
        assert_ne!(
            fp,
            Vocab::fingerprint_tokenizer_json(&byte_level(true)).unwrap()
        );
    }
}
