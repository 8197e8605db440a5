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
//! - Added tokens (special or not) are never text: a special token matches
//!   only its id. So `<tool_call>` in a Qwen vocabulary is never produced by
//!   writing its letters.

mod gguf;

pub use gguf::is_gguf;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::error::{Error, ErrorKind};

/// One token of the vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A text token and its exact bytes.
    Text(Vec<u8>),
    /// A special or added token, named; it never matches text.
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
        let tok = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| verr(format!("cannot load tokenizer: {e}")))?;
        let ReadTokens {
            tokens,
            kind,
            leading_space,
        } = read_tokens(&tok, &shown)?;
        let n = tokens.len();
        let mut v = Vocab {
            tokens,
            eos: Vec::new(),
            kind,
            leading_space,
            label: String::new(),
        };
        v.label = format!(
            "{} ({} tokens, {})",
            path.parent()
                .and_then(|p| p.file_name())
                .map_or(shown.clone(), |n| n.to_string_lossy().into_owned()),
            n,
            kind.name()
        );
        let eos_ids = if eos.is_empty() {
            let name = eos_from_config(path).ok_or_else(|| {
                verr("no end-of-sequence token known: there is no tokenizer_config.json with \"eos_token\" \
                      next to it; pass --eos TOKEN"
                    .into())
            })?;
            vec![v
                .resolve(&name)
                .map_err(|e| verr(format!("eos_token of tokenizer_config.json: {e}")))?]
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

    pub(crate) fn set_eos(&mut self, mut eos: Vec<u32>) -> Result<(), Error> {
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
        let shown = "tokenizer.json";
        let tok: tokenizers::Tokenizer = json.parse().map_err(|e| {
            Error::new(
                ErrorKind::Vocab,
                format!("{shown}: cannot load tokenizer: {e}"),
            )
        })?;
        Ok(fingerprint_of(&read_tokens(&tok, shown)?.tokens))
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

/// A tokenizer's tokens as bytes, and how they were recovered.
struct ReadTokens {
    tokens: Vec<Token>,
    kind: VocabKind,
    leading_space: bool,
}

/// Each token of a loaded Hugging Face tokenizer as bytes: what
/// [`Vocab::from_tokenizer_json`] and
/// [`Vocab::fingerprint_tokenizer_json`] share. `shown` names the tokenizer
/// in errors.
fn read_tokens(tok: &tokenizers::Tokenizer, shown: &str) -> Result<ReadTokens, Error> {
    let verr = |msg: String| Error::new(ErrorKind::Vocab, format!("{shown}: {msg}"));
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
        let token = if let Some(a) = added.get(&id) {
            Token::Special(a.content.clone())
        } else if kind == VocabKind::ByteLevel {
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
        } else if let Some(b) = byte_fallback.then(|| parse_byte_token(text)).flatten() {
            Token::Text(vec![b])
        } else {
            Token::Text(text.replace('\u{2581}', " ").into_bytes())
        };
        tokens[id as usize] = token;
    }
    for (&id, a) in &added {
        if (id as usize) < n {
            tokens[id as usize] = Token::Special(a.content.clone());
        }
    }
    Ok(ReadTokens {
        tokens,
        kind,
        leading_space,
    })
}

/// A decoder and, for `Sequence`, its parts.
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
                .map(|&id| (id, crate::lower::call_format::special_marker(id)))
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
