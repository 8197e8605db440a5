//! A Hugging Face `tokenizer.json` read for its token table alone.
//!
//! The `tokenizers` crate builds the whole tokenizer (every merge, the
//! added-token matchers, the pre-tokenizer's regexes) and takes 0.5–2.7 s
//! on the shared tokenizers, while the token table needs only
//! `model.type`, `model.vocab`, `added_tokens` and `decoder`. This reader
//! parses those with `serde_json` and skips everything else unbuilt
//! ([`IgnoredAny`]); vocabulary strings without escapes stay borrowed from
//! the text.
//!
//! The table must be exactly the one `tokenizers` (0.22) gives through
//! `get_vocab(true)` and `get_added_tokens_decoder()`, so that the
//! fingerprint a serving engine computes from its loaded tokenizer agrees.
//! `tests/vocab_reader.rs` keeps the `tokenizers`-based reader this one
//! replaced as an oracle and compares the two on every shared tokenizer and
//! on corner cases. What that takes from `tokenizers`:
//!
//! - An added token's id is not the `id` written beside it (`tokenizers`
//!   only warns when they differ): it is the id the model's vocabulary gives
//!   its content, else the next free id after the model's, counted from the
//!   number of distinct vocabulary entries, in file order.
//! - An added token with empty content, or equal in every field to an
//!   earlier one, is skipped; one whose content repeats with other flags
//!   keeps the content's id and replaces the earlier token there.
//! - A key repeated in a BPE or WordLevel vocabulary takes its last id; a
//!   piece repeated in a Unigram list its last position. The ids left
//!   behind, and any other id no token names, are unused; the table ends at
//!   the highest id named.
//! - A decoder is read as `tokenizers` re-serializes it: only `Sequence`
//!   nests, and Metaspace's `prepend_scheme` defaults to `always`, a legacy
//!   `"add_prefix_space": false` requiring `never`.
//!
//! What `tokenizers` validates in the parts this reader skips (merges,
//! normalizer, pre-tokenizer, post-processor, padding) is not checked.
//! Where two distinct vocabulary keys name one id, `tokenizers`' answer
//! depends on its hash order; here the later key in the file wins.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{byte_level_inverse, parse_byte_token, Token, VocabKind};
use crate::error::{Error, ErrorKind};

// The most token ids a tokenizer.json may name (the largest shared
// tokenizer, Gemma-3, has 262,145).
use super::MAX_TOKENS;

/// A tokenizer's tokens as bytes, and how they were recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTokens {
    /// The tokens, by id.
    pub tokens: Vec<Token>,
    /// How the tokens' bytes were recovered.
    pub kind: VocabKind,
    /// The decoder drops one leading space of the output (see
    /// [`super::Vocab::leading_space`]).
    pub leading_space: bool,
}

/// The token table of a Hugging Face `tokenizer.json` given as its text:
/// what [`super::Vocab::from_tokenizer_json`] and
/// [`super::Vocab::fingerprint_tokenizer_json`] share. `shown` names the
/// file in errors.
pub fn read_tokenizer_json(json: &str, shown: &str) -> Result<ReadTokens, Error> {
    let verr = |msg: String| Error::new(ErrorKind::Vocab, format!("{shown}: {msg}"));
    let file: File<'_> = serde_json::from_str(json).map_err(|e| json_error(shown, &e))?;
    if let Some(v) = file.version.as_deref() {
        if v != "1.0" {
            return Err(verr(format!(
                "unknown tokenizer.json version {v:?} (only \"1.0\" exists)"
            )));
        }
    }
    let model = file
        .model
        .ok_or_else(|| verr("there is no \"model\"".into()))?;
    let decoder = file.decoder.unwrap_or(Value::Null);
    let decoders = flatten(&decoder).map_err(verr)?;
    let model_type = model.model_type().map_err(verr)?;
    if model_type == ModelType::WordPiece {
        return Err(verr(
            "WordPiece vocabularies cannot be mapped to exact bytes (\"##\" continuations and \
             normalization lose them); tooldec needs a generative model's BPE or SentencePiece tokenizer"
                .into(),
        ));
    }
    let has = |t: &str| decoders.iter().any(|d| type_of(d) == Some(t));
    let kind = if has("ByteLevel") {
        VocabKind::ByteLevel
    } else if has("ByteFallback") || has("Metaspace") || decoders.iter().any(is_metaspace_replace) {
        VocabKind::SentencePiece
    } else {
        return Err(verr(format!(
            "cannot recover token bytes: the decoder ({}) is neither byte-level nor SentencePiece-style",
            describe(&decoders)
        )));
    };
    let byte_fallback = has("ByteFallback");
    let leading_space = kind == VocabKind::SentencePiece
        && decoders.iter().any(|d| match type_of(d) {
            Some("Strip") => d.get("start").and_then(Value::as_u64).unwrap_or(0) > 0,
            Some("Metaspace") => metaspace_prepends(d).unwrap_or(false),
            _ => false,
        });

    let entries = model.entries(model_type).map_err(verr)?;
    // `tokenizers` keeps the model's vocabulary in a hash map: a repeated
    // key keeps its last id.
    let mut index: HashMap<&str, u32> = HashMap::with_capacity(entries.len());
    for (text, id) in &entries {
        index.insert(text, *id);
    }
    let repeated = index.len() != entries.len();
    // The first id `tokenizers` gives an added token the model lacks.
    let model_len = match model_type {
        ModelType::Unigram => entries.len(),
        _ => index.len(),
    };
    let added = added_ids(&file.added_tokens, &index, model_len).map_err(verr)?;
    let n = index
        .values()
        .chain(added.keys())
        .max()
        .map_or(0, |&m| m as usize + 1);
    if n > MAX_TOKENS {
        // A table this size is a corrupt file, not a model: refuse it
        // rather than allocate gigabytes of unused ids.
        return Err(verr(format!(
            "token id {} is beyond the {MAX_TOKENS} ids tooldec reads",
            n - 1
        )));
    }

    let mut tokens = vec![Token::Unused; n];
    let mut is_added = vec![false; n];
    for &id in added.keys() {
        is_added[id as usize] = true;
    }
    let byte_level = ByteLevelTable::new();
    for (text, id) in &entries {
        // A repeated key's earlier ids may lie past the table: test it first.
        if (repeated && index.get(&**text) != Some(id)) || is_added[*id as usize] {
            continue;
        }
        tokens[*id as usize] = Token::Text(if kind == VocabKind::ByteLevel {
            byte_level.decode(text).map_err(|c| {
                verr(format!(
                    "token {id} {text:?} has the character {c:?}, outside the byte-level alphabet"
                ))
            })?
        } else {
            piece_bytes(text, byte_fallback)
        });
    }
    for (&id, a) in &added {
        tokens[id as usize] = if a.special {
            Token::Special(a.content.clone())
        } else {
            Token::Text(added_text(&a.content, kind, byte_fallback, &byte_level))
        };
    }
    Ok(ReadTokens {
        tokens,
        kind,
        leading_space,
    })
}

/// The added tokens by the id `tokenizers` gives them (see the module
/// notes: the written `id` is not it).
fn added_ids<'t>(
    added: &'t [Added],
    index: &HashMap<&str, u32>,
    model_len: usize,
) -> Result<BTreeMap<u32, &'t Added>, String> {
    let mut by_content: HashMap<&str, u32> = HashMap::new();
    let mut by_id = BTreeMap::new();
    let mut seen = HashSet::new();
    let mut next_id = u32::try_from(model_len).map_err(|_| "the vocabulary is too large")?;
    for a in added {
        if a.content.is_empty() || !seen.insert(a.key()) {
            continue;
        }
        let content = a.content.as_str();
        let id = match by_content.get(content).or_else(|| index.get(content)) {
            Some(&id) => id,
            None => {
                let id = next_id;
                next_id = next_id
                    .checked_add(1)
                    .ok_or("the added tokens run past the largest token id")?;
                id
            }
        };
        by_content.insert(content, id);
        by_id.insert(id, a);
    }
    Ok(by_id)
}

/// A serde_json error as a message naming the file and, where serde_json
/// knows it, the line and column.
fn json_error(shown: &str, e: &serde_json::Error) -> Error {
    let text = e.to_string();
    let msg = if e.line() == 0 {
        format!("{shown}: cannot read the tokenizer: {text}")
    } else {
        let at = format!(" at line {} column {}", e.line(), e.column());
        format!(
            "{shown}:{}:{}: cannot read the tokenizer: {}",
            e.line(),
            e.column(),
            text.strip_suffix(&at).unwrap_or(&text)
        )
    };
    Error::new(ErrorKind::Vocab, msg)
}

/// The bytes of a SentencePiece-style piece: `<0xNN>` is byte NN where the
/// decoder has byte fallback, and `▁` is a space.
fn piece_bytes(text: &str, byte_fallback: bool) -> Vec<u8> {
    match byte_fallback.then(|| parse_byte_token(text)).flatten() {
        Some(b) => vec![b],
        None => text.replace('\u{2581}', " ").into_bytes(),
    }
}

/// The bytes a non-special added token decodes to: what the tokenizer's
/// decoder makes of its content, as `tokenizers`' `decode` passes it.
///
/// - Byte-level: the decoder maps a token through GPT-2's alphabet when
///   every character is in it and keeps its UTF-8 otherwise
///   (`tokenizers`' `ByteLevel::decode_chain`). Printable ASCII maps to
///   itself, so `<tool_call>` is its own bytes either way, and content
///   with a space or a newline (outside the alphabet) is its UTF-8; unlike
///   a vocabulary token, no character is an error.
/// - SentencePiece style: as a vocabulary token (`▁` a space, `<0xNN>` a
///   byte): Gemma's added runs of `▁` decode to runs of spaces.
fn added_text(
    content: &str,
    kind: VocabKind,
    byte_fallback: bool,
    byte_level: &ByteLevelTable,
) -> Vec<u8> {
    match kind {
        VocabKind::ByteLevel => byte_level
            .decode(content)
            .unwrap_or_else(|_| content.as_bytes().to_vec()),
        VocabKind::SentencePiece => piece_bytes(content, byte_fallback),
        VocabKind::Raw => content.as_bytes().to_vec(),
    }
}

/// GPT-2's byte-level alphabet inverted into an array: its characters are
/// all below U+0144, and a lookup per character of 100k–200k tokens is
/// where a hash map would cost.
struct ByteLevelTable(Vec<Option<u8>>);

impl ByteLevelTable {
    fn new() -> ByteLevelTable {
        let inverse = byte_level_inverse();
        let len = inverse.keys().map(|&c| c as usize + 1).max().unwrap_or(0);
        let mut table = vec![None; len];
        for (&c, &b) in &inverse {
            table[c as usize] = Some(b);
        }
        ByteLevelTable(table)
    }

    /// The bytes of a byte-level token, or its first character outside the
    /// alphabet.
    fn decode(&self, text: &str) -> Result<Vec<u8>, char> {
        text.chars()
            .map(|c| self.0.get(c as usize).copied().flatten().ok_or(c))
            .collect()
    }
}

/// The leaves of a decoder (a `Sequence`'s parts, recursively), checked
/// as far as `tokenizers` would refuse to load them where that changes
/// what this reader concludes.
fn flatten(d: &Value) -> Result<Vec<&Value>, String> {
    const KNOWN: [&str; 10] = [
        "BPEDecoder",
        "ByteLevel",
        "WordPiece",
        "Metaspace",
        "CTC",
        "Sequence",
        "Replace",
        "Fuse",
        "Strip",
        "ByteFallback",
    ];
    match d {
        Value::Null => Ok(Vec::new()),
        Value::Object(_) => match type_of(d) {
            Some("Sequence") => {
                let parts = d
                    .get("decoders")
                    .and_then(Value::as_array)
                    .ok_or("the decoder Sequence has no \"decoders\" list")?;
                let mut out = Vec::new();
                for p in parts {
                    out.extend(flatten(p)?);
                }
                Ok(out)
            }
            Some("Metaspace") => {
                metaspace_prepends(d)?;
                Ok(vec![d])
            }
            Some(t) if KNOWN.contains(&t) => Ok(vec![d]),
            Some(t) => Err(format!("unknown decoder type {t:?}")),
            None => Err("a decoder has no \"type\"".into()),
        },
        _ => Err(format!("the decoder is not an object: {d}")),
    }
}

fn type_of(d: &Value) -> Option<&str> {
    d.get("type").and_then(Value::as_str)
}

/// Whether a Metaspace decoder drops a leading space, as `tokenizers` reads
/// it: `prepend_scheme` (default `always`) is not `never`; a legacy
/// `"add_prefix_space": false` is accepted only beside `never`.
fn metaspace_prepends(d: &Value) -> Result<bool, String> {
    let scheme = match d.get("prepend_scheme") {
        None => "always",
        Some(v) => v
            .as_str()
            .filter(|s| ["first", "never", "always"].contains(s))
            .ok_or_else(|| format!("Metaspace decoder: unknown prepend_scheme {v}"))?,
    };
    if d.get("add_prefix_space") == Some(&Value::Bool(false)) && scheme != "never" {
        return Err(
            "Metaspace decoder: \"add_prefix_space\": false does not match prepend_scheme".into(),
        );
    }
    Ok(scheme != "never")
}

fn is_metaspace_replace(d: &&Value) -> bool {
    type_of(d) == Some("Replace")
        && d.pointer("/pattern/String").and_then(Value::as_str) == Some("\u{2581}")
}

fn describe(decoders: &[&Value]) -> String {
    let types: Vec<&str> = decoders.iter().filter_map(|d| type_of(d)).collect();
    if types.is_empty() {
        "none".into()
    } else {
        types.join(", ")
    }
}

/// What this reader keeps of a tokenizer.json. A key given twice keeps its
/// last value, as in `tokenizers`.
#[derive(Default)]
struct File<'a> {
    version: Option<Cow<'a, str>>,
    added_tokens: Vec<Added>,
    model: Option<Model<'a>>,
    decoder: Option<Value>,
}

impl<'de> Deserialize<'de> for File<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = File<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tokenizer.json object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<File<'de>, A::Error> {
                let mut file = File::default();
                while let Some(Str(key)) = map.next_key()? {
                    match &*key {
                        "version" => file.version = Some(map.next_value::<Str>()?.0),
                        "added_tokens" => file.added_tokens = map.next_value()?,
                        "model" => file.model = Some(map.next_value()?),
                        "decoder" => file.decoder = map.next_value()?,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(file)
            }
        }
        d.deserialize_map(V)
    }
}

/// An entry of `added_tokens`. Every field `tokenizers` requires is
/// required; the flags matter only to tell repeated entries apart.
#[derive(serde::Deserialize)]
struct Added {
    #[serde(rename = "id")]
    _id: u32,
    content: String,
    single_word: bool,
    lstrip: bool,
    rstrip: bool,
    normalized: bool,
    special: bool,
}

impl Added {
    /// What `tokenizers` compares to skip a repeated added token.
    fn key(&self) -> (&str, [bool; 5]) {
        (
            &self.content,
            [
                self.single_word,
                self.lstrip,
                self.rstrip,
                self.normalized,
                self.special,
            ],
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModelType {
    Bpe,
    WordPiece,
    WordLevel,
    Unigram,
}

/// The parts of `model` this reader needs; `merges` and the rest are
/// skipped, with their presence noted where `tokenizers` requires them or
/// tells an untyped model by them.
#[derive(Default)]
struct Model<'a> {
    model_type: Option<Cow<'a, str>>,
    vocab: Option<RawVocab<'a>>,
    unk_id: Option<Value>,
    merges: bool,
    unk_token: bool,
    continuing_subword_prefix: bool,
    max_input_chars_per_word: bool,
}

impl<'a> Model<'a> {
    fn model_type(&self) -> Result<ModelType, String> {
        let map = matches!(self.vocab, Some(RawVocab::Map(_)));
        match self.model_type.as_deref() {
            Some("BPE") => Ok(ModelType::Bpe),
            Some("WordPiece") => Ok(ModelType::WordPiece),
            Some("WordLevel") => Ok(ModelType::WordLevel),
            Some("Unigram") => Ok(ModelType::Unigram),
            Some(t) => Err(format!(
                "unknown model type {t:?} (BPE, WordPiece, WordLevel and Unigram exist)"
            )),
            // Files from before `type` was written: `tokenizers` tries each
            // model in this order and keeps the first whose fields fit.
            None if map && self.merges => Ok(ModelType::Bpe),
            None if map
                && self.unk_token
                && self.continuing_subword_prefix
                && self.max_input_chars_per_word =>
            {
                Ok(ModelType::WordPiece)
            }
            None if map && self.unk_token => Ok(ModelType::WordLevel),
            None if matches!(self.vocab, Some(RawVocab::List(_))) => Ok(ModelType::Unigram),
            None => Err(
                "the model has no \"type\" and is none of BPE, WordPiece, WordLevel or Unigram"
                    .into(),
            ),
        }
    }

    /// The vocabulary as (text, id) in file order; a Unigram piece's id is
    /// its position.
    fn entries(self, model_type: ModelType) -> Result<Vec<(Cow<'a, str>, u32)>, String> {
        let name = match model_type {
            ModelType::Bpe => "BPE",
            ModelType::WordPiece => "WordPiece",
            ModelType::WordLevel => "WordLevel",
            ModelType::Unigram => "Unigram",
        };
        let vocab = self
            .vocab
            .ok_or_else(|| format!("the {name} model has no \"vocab\""))?;
        match (model_type, vocab) {
            (ModelType::Unigram, RawVocab::List(pieces)) => {
                let n = pieces.len();
                match self.unk_id {
                    None | Some(Value::Null) => {}
                    Some(v) => match v.as_u64() {
                        Some(u) if (u as usize) < n => {}
                        _ => {
                            return Err(format!(
                                "the Unigram model's unk_id {v} is not a token of its {n}"
                            ))
                        }
                    },
                }
                let mut out = Vec::with_capacity(n);
                for (i, p) in pieces.into_iter().enumerate() {
                    let id = u32::try_from(i).map_err(|_| "the vocabulary is too large")?;
                    out.push((p, id));
                }
                Ok(out)
            }
            (ModelType::Unigram, RawVocab::Map(_)) => {
                Err("the Unigram model's \"vocab\" is not a list of [piece, score]".into())
            }
            (_, RawVocab::List(_)) => Err(format!(
                "the {name} model's \"vocab\" is not an object of token to id"
            )),
            (_, RawVocab::Map(pairs)) => {
                if model_type == ModelType::Bpe && !self.merges {
                    return Err("the BPE model has no \"merges\"".into());
                }
                if model_type == ModelType::WordLevel && !self.unk_token {
                    return Err("the WordLevel model has no \"unk_token\"".into());
                }
                Ok(pairs)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Model<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Model<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tokenizer model object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Model<'de>, A::Error> {
                let mut m = Model::default();
                while let Some(Str(key)) = map.next_key()? {
                    let present = match &*key {
                        "type" => {
                            m.model_type = Some(map.next_value::<Str>()?.0);
                            continue;
                        }
                        "vocab" => {
                            m.vocab = Some(map.next_value()?);
                            continue;
                        }
                        "unk_id" => {
                            m.unk_id = Some(map.next_value()?);
                            continue;
                        }
                        "merges" => &mut m.merges,
                        "unk_token" => &mut m.unk_token,
                        "continuing_subword_prefix" => &mut m.continuing_subword_prefix,
                        "max_input_chars_per_word" => &mut m.max_input_chars_per_word,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    *present = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

/// `model.vocab`: an object of token to id (BPE, WordPiece, WordLevel) or
/// a list of `[piece, score]` (Unigram), whichever the file holds; the
/// model's type may come after it.
enum RawVocab<'a> {
    Map(Vec<(Cow<'a, str>, u32)>),
    List(Vec<Cow<'a, str>>),
}

impl<'de> Deserialize<'de> for RawVocab<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawVocab<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of token to id, or a list of [piece, score]")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawVocab<'de>, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some((Str(text), id)) = map.next_entry::<Str, u32>()? {
                    out.push((text, id));
                }
                Ok(RawVocab::Map(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawVocab<'de>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                while let Some((Str(piece), _score)) = seq.next_element::<(Str, f64)>()? {
                    out.push(piece);
                }
                Ok(RawVocab::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON string, borrowed from the text unless it has escapes.
struct Str<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn added(id: u32, content: &str, special: bool) -> Value {
        json!({"id": id, "content": content, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": special})
    }

    fn byte_level_decoder() -> Value {
        json!({"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true})
    }

    fn bpe(vocab: Value) -> Value {
        json!({"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": false,
            "vocab": vocab, "merges": []})
    }

    fn file(added_tokens: Vec<Value>, decoder: Value, model: Value) -> String {
        json!({"version": "1.0", "truncation": null, "padding": null,
            "added_tokens": added_tokens, "normalizer": null, "pre_tokenizer": null,
            "post_processor": null, "decoder": decoder, "model": model})
        .to_string()
    }

    fn read(json: &str) -> Result<ReadTokens, String> {
        read_tokenizer_json(json, "t.json").map_err(|e| e.to_string())
    }

    fn text(s: &str) -> Token {
        Token::Text(s.as_bytes().to_vec())
    }

    fn special(s: &str) -> Token {
        Token::Special(s.into())
    }

    /// A byte-level tokenizer written by hand, with the keys in an unusual
    /// order, escapes in the vocabulary and merges in the old string form.
    const HAND_WRITTEN: &str = r#"{
  "model": {
    "vocab": {"a": 0, "\u0120": 1, "\u0120a": 2, "\"": 3, "\u010a": 4},
    "merges": ["\u0120 a"],
    "type": "BPE"
  },
  "decoder": {"type": "ByteLevel"},
  "added_tokens": [
    {"id": 5, "content": "<|end|>", "single_word": false, "lstrip": false,
     "rstrip": false, "normalized": false, "special": true}
  ],
  "post_processor": {"type": "TemplateProcessing", "single": [{"Sequence": {"id": "A", "type_id": 0}}]},
  "version": "1.0"
}"#;

    #[test]
    fn a_hand_written_file() {
        let r = read(HAND_WRITTEN).unwrap();
        assert_eq!(r.kind, VocabKind::ByteLevel);
        assert!(!r.leading_space);
        assert_eq!(
            r.tokens,
            vec![
                text("a"),
                text(" "),
                text(" a"),
                text("\""),
                text("\n"),
                special("<|end|>")
            ]
        );
    }

    #[test]
    fn malformed_json_names_the_file_and_position() {
        for (json, at) in [
            ("{\"model\": {\"type\": \"BPE\",}}", "t.json:1:26: "),
            ("{\n  \"model\": {\"vocab\": [1,]}\n}", "t.json:2:"),
            ("", "t.json:1:0: "),
            ("[]", "t.json:1:"),
            ("{\"model\": {}} trailing", "t.json:1:15: "),
        ] {
            let e = read(json).unwrap_err();
            assert!(
                e.starts_with(at) && e.contains("cannot read the tokenizer"),
                "{json:?}: {e}"
            );
            assert!(!e.contains(" at line "), "position given twice: {e}");
        }
    }

    /// A file cut anywhere is an error, never a panic.
    #[test]
    fn every_prefix_of_a_file_is_an_error() {
        for end in 0..HAND_WRITTEN.len() {
            if let Some(prefix) = HAND_WRITTEN.get(..end) {
                let e = read(prefix).unwrap_err();
                assert!(e.starts_with("t.json:"), "{e}");
            }
        }
    }

    #[test]
    fn missing_and_mistyped_fields() {
        let dec = byte_level_decoder();
        let vocab = json!({"a": 0});
        for (json, want) in [
            (
                json!({"decoder": dec}).to_string(),
                "t.json: there is no \"model\"",
            ),
            (
                file(vec![], dec.clone(), json!({"type": "BPE", "merges": []})),
                "the BPE model has no \"vocab\"",
            ),
            (
                file(vec![], dec.clone(), json!({"type": "BPE", "vocab": vocab})),
                "the BPE model has no \"merges\"",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "WordLevel", "vocab": vocab}),
                ),
                "the WordLevel model has no \"unk_token\"",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "Unigram", "vocab": vocab}),
                ),
                "not a list of [piece, score]",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "BPE", "vocab": [["a", 0.0]], "merges": []}),
                ),
                "not an object of token to id",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "Unigram", "vocab": [["a", 0.0]], "unk_id": 1}),
                ),
                "unk_id 1 is not a token",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "Tiktoken", "vocab": vocab}),
                ),
                "unknown model type \"Tiktoken\"",
            ),
            (
                file(vec![], dec.clone(), json!({"vocab": vocab})),
                "the model has no \"type\"",
            ),
            (
                file(
                    vec![json!({"id": 1, "content": "x", "special": true})],
                    dec.clone(),
                    bpe(vocab.clone()),
                ),
                "missing field `single_word`",
            ),
            (
                file(vec![], dec.clone(), bpe(json!({"a": -1}))),
                "invalid value: integer `-1`",
            ),
            (
                file(
                    vec![],
                    dec.clone(),
                    json!({"type": "Unigram", "vocab": [["a"]]}),
                ),
                "invalid length 1",
            ),
            (
                json!({"version": "2.0", "decoder": dec, "model": bpe(vocab.clone())}).to_string(),
                "unknown tokenizer.json version \"2.0\"",
            ),
            (
                file(vec![], json!({"type": "Sequence"}), bpe(vocab.clone())),
                "the decoder Sequence has no \"decoders\" list",
            ),
            (
                file(vec![], json!({"type": "Magic"}), bpe(vocab.clone())),
                "unknown decoder type \"Magic\"",
            ),
            (
                file(
                    vec![],
                    json!({"add_prefix_space": true}),
                    bpe(vocab.clone()),
                ),
                "a decoder has no \"type\"",
            ),
            (
                file(vec![], dec.clone(), bpe(json!({"a": 1 << 30}))),
                "token id 1073741824 is beyond",
            ),
        ] {
            let e = read(&json).unwrap_err();
            assert!(e.starts_with("t.json"), "{e}");
            assert!(e.contains(want), "{json}: {e} (wanted {want:?})");
        }
    }

    #[test]
    fn wordpiece_and_other_decoders_are_refused() {
        let wordpiece = json!({"type": "WordPiece", "unk_token": "[UNK]",
            "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
            "vocab": {"[UNK]": 0, "a": 1, "##b": 2}});
        let e = read(&file(
            vec![],
            json!({"type": "WordPiece", "prefix": "##"}),
            wordpiece,
        ))
        .unwrap_err();
        assert!(
            e.starts_with("t.json: WordPiece vocabularies cannot"),
            "{e}"
        );
        // Untyped, as files from before `type` was written.
        let legacy = json!({"unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": {"a": 0}});
        let e = read(&file(vec![], byte_level_decoder(), legacy)).unwrap_err();
        assert!(e.contains("WordPiece vocabularies cannot"), "{e}");
        for (decoder, named) in [
            (Value::Null, "(none)"),
            (
                json!({"type": "BPEDecoder", "suffix": "</w>"}),
                "(BPEDecoder)",
            ),
            (
                json!({"type": "Sequence", "decoders": [{"type": "Fuse"}, {"type": "CTC"}]}),
                "(Fuse, CTC)",
            ),
        ] {
            let e = read(&file(vec![], decoder, bpe(json!({"a": 0})))).unwrap_err();
            assert!(
                e.contains(&format!(
                    "the decoder {named} is neither byte-level nor SentencePiece-style"
                )),
                "{e}"
            );
        }
        let e = read(&file(vec![], byte_level_decoder(), bpe(json!({"a b": 0})))).unwrap_err();
        assert!(
            e.contains("token 0 \"a b\" has the character ' ', outside the byte-level alphabet"),
            "{e}"
        );
    }

    /// Added tokens take the ids `tokenizers` gives them, not the ones
    /// written beside them.
    #[test]
    fn added_token_ids_are_the_models_or_the_next() {
        let tokens = vec![
            added(9, "b", false),    // in the model: its id, 1
            added(0, "<s>", true),   // new: the first id after the model's, 3
            added(3, "", true),      // empty: skipped
            added(1, "<pad>", true), // new: 4
            added(7, "<s>", false),  // same content, other flags: id 3, now text
            added(7, "<s>", true),   // equal to the first <s>: skipped
        ];
        // `json!` would merge the repeated key "a": the model is written out.
        // Its last id counts, so the model has 3 entries (a 0, b 1, c 4),
        // leaves a hole at 2, and the new added tokens take 3 and 4, the
        // second over the model's "c".
        let model = r#"{"type": "BPE", "vocab": {"a": 5, "b": 1, "a": 0, "c": 4}, "merges": []}"#;
        let json = file(tokens, byte_level_decoder(), json!("MODEL")).replace("\"MODEL\"", model);
        assert_eq!(
            read(&json).unwrap().tokens,
            vec![
                text("a"),
                text("b"),
                Token::Unused,
                text("<s>"),
                special("<pad>")
            ]
        );
    }

    #[test]
    fn unigram_ids_are_positions() {
        let model = json!({"type": "Unigram", "unk_id": 0, "byte_fallback": true,
            "vocab": [["<unk>", 0.0], ["\u{2581}a", -1.5], ["<0x41>", -2], ["b", -3.0], ["\u{2581}a", -4.0]]});
        let decoder = json!({"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u{2581}"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]});
        let r = read(&file(vec![added(0, "<unk>", true)], decoder, model)).unwrap();
        assert_eq!(r.kind, VocabKind::SentencePiece);
        assert!(r.leading_space);
        // "▁a" is given twice: the later position holds it, the earlier is unused.
        assert_eq!(
            r.tokens,
            vec![
                special("<unk>"),
                Token::Unused,
                text("A"),
                text("b"),
                text(" a")
            ]
        );
    }

    #[test]
    fn metaspace_leading_space() {
        let vocab = json!({"\u{2581}a": 0, "<0x41>": 1});
        for (decoder, leading) in [
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}"}),
                Ok(true),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "first"}),
                Ok(true),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "never"}),
                Ok(false),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "add_prefix_space": true}),
                Ok(true),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "add_prefix_space": false,
                "prepend_scheme": "never"}),
                Ok(false),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "add_prefix_space": false}),
                Err("does not match prepend_scheme"),
            ),
            (
                json!({"type": "Metaspace", "replacement": "\u{2581}", "prepend_scheme": "sometimes"}),
                Err("unknown prepend_scheme \"sometimes\""),
            ),
        ] {
            match (
                read(&file(vec![], decoder.clone(), bpe(vocab.clone()))),
                leading,
            ) {
                (Ok(r), Ok(leading)) => {
                    assert_eq!(r.kind, VocabKind::SentencePiece);
                    assert_eq!(r.leading_space, leading, "{decoder}");
                    // No byte fallback: `<0x41>` is its text.
                    assert_eq!(r.tokens, vec![text(" a"), text("<0x41>")]);
                }
                (Err(e), Err(want)) => assert!(e.contains(want), "{decoder}: {e}"),
                (got, want) => panic!("{decoder}: {got:?}, wanted {want:?}"),
            }
        }
    }

    /// A second key at the top level replaces the first, as in `tokenizers`.
    #[test]
    fn a_repeated_top_level_key_keeps_its_last_value() {
        let json = format!(
            r#"{{"decoder": null, "model": {}, "decoder": {}, "model": {}}}"#,
            bpe(json!({"z": 0, "y": 1})),
            byte_level_decoder(),
            bpe(json!({"a": 0}))
        );
        assert_eq!(read(&json).unwrap().tokens, vec![text("a")]);
    }
}
