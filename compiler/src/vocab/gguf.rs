//! The vocabulary of a GGUF model file (llama.cpp's format), read from its
//! `tokenizer.ggml.*` metadata, so llama.cpp users can compile without a
//! `tokenizer.json`.
//!
//! Only the metadata block at the head of the file is read, through a
//! buffered reader: a model of several GiB costs a few MiB of reads. Every
//! length in the file is checked against the bytes the file still has before
//! anything is allocated, so a corrupt or hostile header gives an error that
//! names the key and the byte offset, never an allocation of its claimed size.
//!
//! Token bytes follow the tokenizer model:
//! - `gpt2` (byte-level BPE: GPT-2, Llama 3, Qwen2.5, SmolLM2): the token
//!   strings are in GPT-2's printable alphabet; invert it.
//! - `llama` (SentencePiece: Llama 2, Mistral): `▁` is a space, byte tokens
//!   (type 6) are `<0xNN>`; the decoder drops the space it prepends unless
//!   `tokenizer.ggml.add_space_prefix` is false.
//!
//! Token types: 1 normal and 6 byte are text; 2 unknown and 3 control are
//! special (as special added tokens are for `tokenizer.json`: they match
//! only their id); 5 unused is unused. 4 user-defined is text, its bytes
//! the token string as it stands: the GGUF form of a non-special added
//! token (llama.cpp's converter writes `"special": false` added tokens as
//! user-defined, with SentencePiece's `▁` already turned into spaces), and
//! llama.cpp's `token_to_piece` renders a user-defined token as its text,
//! special or not, with no byte-level or `▁` decoding.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::error::{Error, ErrorKind};
use crate::vocab::{byte_level_inverse, parse_byte_token, Token, Vocab, VocabKind};

/// The four bytes every GGUF file starts with.
pub const MAGIC: &[u8; 4] = b"GGUF";

/// Deepest nesting of arrays in a metadata value.
const MAX_ARRAY_DEPTH: u32 = 4;

/// Whether the file starts with the GGUF magic.
pub fn is_gguf(path: &Path) -> bool {
    let mut head = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && &head == MAGIC
}

/// A metadata value, with only what a vocabulary needs kept: numbers, bools,
/// strings, and arrays of them.
#[derive(Debug, Clone, PartialEq)]
enum Meta {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
    Array(Vec<Meta>),
    /// An array that was skipped (keys the vocabulary does not read).
    Skipped,
}

/// The metadata keys a vocabulary needs.
#[derive(Debug, Default)]
struct TokenizerMeta {
    model: Option<String>,
    tokens: Option<Vec<String>>,
    types: Option<Vec<i128>>,
    eos: Vec<(String, u32)>,
    add_space_prefix: Option<bool>,
    name: Option<String>,
}

struct Reader<R> {
    inner: R,
    pos: u64,
    len: u64,
    shown: String,
}

impl<R: Read> Reader<R> {
    fn err(&self, what: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::Vocab,
            format!("{}: byte {}: {what}", self.shown, self.pos),
        )
    }

    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, Error> {
        if n > self.len - self.pos {
            return Err(self.err(format!(
                "{what} claims {n} bytes but the file has {} left",
                self.len - self.pos
            )));
        }
        let mut buf = vec![0u8; n as usize];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| self.err(format!("{what}: {e}")))?;
        self.pos += n;
        Ok(buf)
    }

    fn skip(&mut self, n: u64, what: &str) -> Result<(), Error> {
        if n > self.len - self.pos {
            return Err(self.err(format!(
                "{what} claims {n} bytes but the file has {} left",
                self.len - self.pos
            )));
        }
        let copied = std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink())
            .map_err(|e| self.err(format!("{what}: {e}")))?;
        if copied != n {
            return Err(self.err(format!("{what}: the file ends early")));
        }
        self.pos += n;
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Error> {
        let b = self.bytes(N as u64, what)?;
        let mut a = [0u8; N];
        a.copy_from_slice(&b);
        Ok(a)
    }

    fn u32(&mut self, what: &str) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64, Error> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn string(&mut self, what: &str) -> Result<String, Error> {
        let n = self.u64(what)?;
        let at = self.pos;
        let b = self.bytes(n, what)?;
        String::from_utf8(b).map_err(|_| {
            Error::new(
                ErrorKind::Vocab,
                format!("{}: byte {at}: {what} is not UTF-8", self.shown),
            )
        })
    }

    /// Size in bytes of a fixed-size value type, or None for strings and arrays.
    fn fixed_size(&self, ty: u32, what: &str) -> Result<Option<u64>, Error> {
        Ok(match ty {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            8 | 9 => None,
            _ => return Err(self.err(format!("{what}: unknown value type {ty}"))),
        })
    }

    /// One value of type `ty`; arrays are kept only when `keep`.
    fn value(&mut self, ty: u32, what: &str, keep: bool, depth: u32) -> Result<Meta, Error> {
        Ok(match ty {
            0 => Meta::Int(self.array::<1>(what)?[0] as i128),
            1 => Meta::Int(self.array::<1>(what)?[0] as i8 as i128),
            2 => Meta::Int(u16::from_le_bytes(self.array(what)?) as i128),
            3 => Meta::Int(i16::from_le_bytes(self.array(what)?) as i128),
            4 => Meta::Int(u32::from_le_bytes(self.array(what)?) as i128),
            5 => Meta::Int(i32::from_le_bytes(self.array(what)?) as i128),
            6 => Meta::Float(f32::from_le_bytes(self.array(what)?) as f64),
            7 => match self.array::<1>(what)?[0] {
                0 => Meta::Bool(false),
                1 => Meta::Bool(true),
                b => return Err(self.err(format!("{what}: bool byte {b}"))),
            },
            8 => Meta::Str(self.string(what)?),
            9 => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(self.err(format!(
                        "{what}: arrays nested deeper than {MAX_ARRAY_DEPTH}"
                    )));
                }
                let elem = self.u32(what)?;
                let count = self.u64(what)?;
                let least = self.fixed_size(elem, what)?.unwrap_or(8);
                if count
                    .checked_mul(least)
                    .is_none_or(|n| n > self.len - self.pos)
                {
                    return Err(self.err(format!(
                        "{what}: an array of {count} elements cannot fit in the {} bytes left",
                        self.len - self.pos
                    )));
                }
                match (keep, self.fixed_size(elem, what)?) {
                    (false, Some(size)) => {
                        self.skip(count * size, what)?;
                        Meta::Skipped
                    }
                    (false, None) => {
                        for _ in 0..count {
                            self.value(elem, what, false, depth + 1)?;
                        }
                        Meta::Skipped
                    }
                    (true, _) => {
                        // Kept arrays are the token tables: refuse more
                        // entries than a vocabulary may have before
                        // building them (each entry is a `Meta`, many
                        // times a byte of the file).
                        if count > super::MAX_TOKENS as u64 {
                            return Err(self.err(format!(
                                "{what}: {count} entries, above the {} tokens a vocabulary may have",
                                super::MAX_TOKENS
                            )));
                        }
                        let mut items = Vec::with_capacity(count.min(1 << 20) as usize);
                        for _ in 0..count {
                            items.push(self.value(elem, what, true, depth + 1)?);
                        }
                        Meta::Array(items)
                    }
                }
            }
            10 => Meta::Int(u64::from_le_bytes(self.array(what)?) as i128),
            11 => Meta::Int(i64::from_le_bytes(self.array(what)?) as i128),
            12 => Meta::Float(f64::from_le_bytes(self.array(what)?)),
            _ => return Err(self.err(format!("{what}: unknown value type {ty}"))),
        })
    }
}

/// The elements of an array value through `f`; `None` if `v` is not an
/// array or an element does not convert.
fn array_of<T>(v: Meta, f: impl Fn(Meta) -> Option<T>) -> Option<Vec<T>> {
    match v {
        Meta::Array(items) => items.into_iter().map(f).collect(),
        _ => None,
    }
}

fn read_meta(path: &Path) -> Result<TokenizerMeta, Error> {
    let shown = path.display().to_string();
    let file = File::open(path)
        .map_err(|e| Error::new(ErrorKind::Io, format!("{shown}: cannot open: {e}")))?;
    let len = file
        .metadata()
        .map_err(|e| Error::new(ErrorKind::Io, format!("{shown}: {e}")))?
        .len();
    let mut r = Reader {
        inner: BufReader::with_capacity(1 << 16, file),
        pos: 0,
        len,
        shown,
    };
    let magic: [u8; 4] = r.array("the magic")?;
    if &magic != MAGIC {
        return Err(r.err(format!(
            "not a GGUF file (it starts with {magic:02x?}, not \"GGUF\")"
        )));
    }
    let version = r.u32("the version")?;
    match version {
        2 | 3 => {}
        1 => return Err(r.err("GGUF version 1 (32-bit lengths) is not supported; convert the model with a current llama.cpp")),
        v if v.swap_bytes() <= 3 => return Err(r.err("a big-endian GGUF file; only little-endian files are supported")),
        v => return Err(r.err(format!("unknown GGUF version {v}"))),
    }
    let _tensors = r.u64("the tensor count")?;
    let kv_count = r.u64("the metadata count")?;
    // Each entry takes at least a key length, a type and a one-byte value.
    if kv_count.checked_mul(13).is_none_or(|n| n > r.len - r.pos) {
        return Err(r.err(format!(
            "{kv_count} metadata entries cannot fit in the file"
        )));
    }
    let mut m = TokenizerMeta::default();
    for i in 0..kv_count {
        let key = r.string(&format!("metadata key {i}"))?;
        let ty = r.u32(&key)?;
        let keep = matches!(
            key.as_str(),
            "tokenizer.ggml.tokens" | "tokenizer.ggml.token_type"
        );
        let at = r.pos;
        let v = r.value(ty, &key, keep, 0)?;
        let wrong = |want: &str| {
            Error::new(
                ErrorKind::Vocab,
                format!("{}: byte {at}: {key} should be {want}", r.shown),
            )
        };
        match key.as_str() {
            "tokenizer.ggml.model" => match v {
                Meta::Str(s) => m.model = Some(s),
                _ => return Err(wrong("a string")),
            },
            "general.name" => {
                if let Meta::Str(s) = v {
                    m.name = Some(s);
                }
            }
            "tokenizer.ggml.tokens" => {
                let strings = array_of(v, |x| match x {
                    Meta::Str(s) => Some(s),
                    _ => None,
                });
                m.tokens = Some(strings.ok_or_else(|| wrong("an array of strings"))?);
            }
            "tokenizer.ggml.token_type" => {
                let ints = array_of(v, |x| match x {
                    Meta::Int(t) => Some(t),
                    _ => None,
                });
                m.types = Some(ints.ok_or_else(|| wrong("an array of integers"))?);
            }
            "tokenizer.ggml.eos_token_id"
            | "tokenizer.ggml.eot_token_id"
            | "tokenizer.ggml.eom_token_id" => match v {
                Meta::Int(id) if (0..=u32::MAX as i128).contains(&id) => {
                    m.eos.push((key.clone(), id as u32))
                }
                _ => return Err(wrong("a token id")),
            },
            "tokenizer.ggml.add_space_prefix" => match v {
                Meta::Bool(b) => m.add_space_prefix = Some(b),
                _ => return Err(wrong("a bool")),
            },
            _ => {}
        }
    }
    Ok(m)
}

impl Vocab {
    /// Loads the vocabulary of a GGUF model file from its `tokenizer.ggml.*`
    /// metadata. End-of-sequence tokens come from `eos` (token strings or
    /// ids) or, when empty, from the file's `eos_token_id`, `eot_token_id`
    /// and `eom_token_id` (the tokens llama.cpp stops on).
    pub fn from_gguf(path: &Path, eos: &[String]) -> Result<Vocab, Error> {
        let shown = path.display().to_string();
        let verr = |msg: String| Error::new(ErrorKind::Vocab, format!("{shown}: {msg}"));
        let m = read_meta(path)?;
        let model = m.model.ok_or_else(|| {
            verr("no tokenizer.ggml.model in the metadata: the file carries no tokenizer".into())
        })?;
        let kind = match model.as_str() {
            "gpt2" => VocabKind::ByteLevel,
            "llama" => VocabKind::SentencePiece,
            "bert" => {
                return Err(verr(
                    "tokenizer model \"bert\" is WordPiece, which cannot be mapped to exact bytes; \
                     tooldec needs a generative model's BPE or SentencePiece tokenizer"
                        .into(),
                ))
            }
            other => {
                return Err(verr(format!(
                    "tokenizer model {other:?} is not supported (only \"gpt2\", byte-level BPE, and \"llama\", SentencePiece)"
                )))
            }
        };
        let names = m
            .tokens
            .ok_or_else(|| verr("no tokenizer.ggml.tokens in the metadata".into()))?;
        let types = m.types.unwrap_or_default();
        if !types.is_empty() && types.len() != names.len() {
            return Err(verr(format!(
                "tokenizer.ggml.token_type has {} entries for {} tokens",
                types.len(),
                names.len()
            )));
        }
        let unicode_to_byte = byte_level_inverse();
        let mut tokens = Vec::with_capacity(names.len());
        for (id, text) in names.into_iter().enumerate() {
            let ty = types.get(id).copied().unwrap_or(1);
            let token = match ty {
                2 | 3 => Token::Special(text),
                4 => Token::Text(text.into_bytes()),
                5 => Token::Unused,
                6 => match parse_byte_token(&text) {
                    Some(b) => Token::Text(vec![b]),
                    None if kind == VocabKind::ByteLevel => {
                        Token::Text(byte_level_bytes(&text, &unicode_to_byte).map_err(|c| {
                            verr(format!("token {id} {text:?} has the character {c:?}, outside the byte-level alphabet"))
                        })?)
                    }
                    None => {
                        return Err(verr(format!(
                            "token {id} {text:?} is a byte token but not of the form <0xNN>"
                        )))
                    }
                },
                1 => match kind {
                    VocabKind::ByteLevel => {
                        Token::Text(byte_level_bytes(&text, &unicode_to_byte).map_err(|c| {
                            verr(format!("token {id} {text:?} has the character {c:?}, outside the byte-level alphabet"))
                        })?)
                    }
                    _ => Token::Text(text.replace('\u{2581}', " ").into_bytes()),
                },
                t => {
                    return Err(verr(format!(
                        "token {id} {text:?} has the unknown token type {t}"
                    )))
                }
            };
            tokens.push(token);
        }
        let n = tokens.len();
        let mut v = Vocab {
            tokens,
            eos: Vec::new(),
            kind,
            leading_space: kind == VocabKind::SentencePiece && m.add_space_prefix.unwrap_or(true),
            label: String::new(),
        };
        let file = path
            .file_name()
            .map_or(shown.clone(), |f| f.to_string_lossy().into_owned());
        v.label = match &m.name {
            Some(name) => format!("{name} ({file}, {n} tokens, {})", kind.name()),
            None => format!("{file} ({n} tokens, {})", kind.name()),
        };
        let eos_ids = if eos.is_empty() {
            if m.eos.is_empty() {
                return Err(verr(
                    "no end-of-sequence token known: the metadata has no tokenizer.ggml.eos_token_id; \
                     pass --eos TOKEN"
                        .into(),
                ));
            }
            let mut ids = Vec::new();
            for (key, id) in &m.eos {
                match v.tokens.get(*id as usize) {
                    Some(Token::Special(_)) => ids.push(*id),
                    // An end-of-turn id that points at text would make that
                    // text end the output; only the main EOS is required.
                    _ if key != "tokenizer.ggml.eos_token_id" => {}
                    _ => ids.push(*id),
                }
            }
            ids
        } else {
            eos.iter()
                .map(|e| v.resolve(e))
                .collect::<Result<Vec<_>, _>>()
                .map_err(verr)?
        };
        v.set_eos(eos_ids).map_err(|e| verr(e.to_string()))?;
        Ok(v)
    }
}

fn byte_level_bytes(
    text: &str,
    table: &std::collections::HashMap<char, u8>,
) -> Result<Vec<u8>, char> {
    text.chars()
        .map(|c| table.get(&c).copied().ok_or(c))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF metadata writer for hand-made fixtures.
    #[derive(Default)]
    struct Gguf {
        kvs: Vec<u8>,
        count: u64,
    }

    fn string(out: &mut Vec<u8>, s: &str) {
        out.extend((s.len() as u64).to_le_bytes());
        out.extend(s.as_bytes());
    }

    impl Gguf {
        fn key(&mut self, k: &str, ty: u32) -> &mut Vec<u8> {
            self.count += 1;
            string(&mut self.kvs, k);
            self.kvs.extend(ty.to_le_bytes());
            &mut self.kvs
        }
        fn str(mut self, k: &str, v: &str) -> Self {
            string(self.key(k, 8), v);
            self
        }
        fn u32(mut self, k: &str, v: u32) -> Self {
            self.key(k, 4).extend(v.to_le_bytes());
            self
        }
        fn bool(mut self, k: &str, v: bool) -> Self {
            self.key(k, 7).push(v as u8);
            self
        }
        fn strings(mut self, k: &str, v: &[&str]) -> Self {
            let out = self.key(k, 9);
            out.extend(8u32.to_le_bytes());
            out.extend((v.len() as u64).to_le_bytes());
            for s in v {
                string(out, s);
            }
            self
        }
        fn i32s(mut self, k: &str, v: &[i32]) -> Self {
            let out = self.key(k, 9);
            out.extend(5u32.to_le_bytes());
            out.extend((v.len() as u64).to_le_bytes());
            for x in v {
                out.extend(x.to_le_bytes());
            }
            self
        }
        fn bytes(&self, version: u32) -> Vec<u8> {
            let mut out = b"GGUF".to_vec();
            out.extend(version.to_le_bytes());
            out.extend(0u64.to_le_bytes());
            out.extend(self.count.to_le_bytes());
            out.extend(&self.kvs);
            // Stand-in tensor data, which the reader never touches.
            out.extend([0u8; 32]);
            out
        }
    }

    fn write(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tooldec-gguf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn spm() -> Gguf {
        Gguf::default()
            .str("general.architecture", "llama")
            .str("general.name", "tiny spm")
            .u32("llama.context_length", 4096)
            .str("tokenizer.ggml.model", "llama")
            .strings(
                "tokenizer.ggml.tokens",
                &[
                    "<unk>",
                    "<s>",
                    "</s>",
                    "<0x0A>",
                    "\u{2581}hello",
                    "world",
                    "[INST]",
                    "<unused0>",
                    "\n\n",
                    "  ",
                    "\u{2581}\u{2581}",
                ],
            )
            .i32s(
                "tokenizer.ggml.token_type",
                &[2, 3, 3, 6, 1, 1, 3, 5, 4, 4, 4],
            )
            .strings("tokenizer.ggml.merges", &["\u{2581} h", "h e"])
            .u32("tokenizer.ggml.bos_token_id", 1)
            .u32("tokenizer.ggml.eos_token_id", 2)
    }

    #[test]
    fn sentencepiece_tokens() {
        let p = write("spm.gguf", &spm().bytes(3));
        assert!(is_gguf(&p));
        let v = Vocab::from_gguf(&p, &[]).unwrap();
        assert_eq!(v.kind, VocabKind::SentencePiece);
        assert!(v.leading_space);
        assert_eq!(v.eos, vec![2]);
        assert_eq!(
            v.tokens,
            vec![
                Token::Special("<unk>".into()),
                Token::Special("<s>".into()),
                Token::Special("</s>".into()),
                Token::Text(b"\n".to_vec()),
                Token::Text(b" hello".to_vec()),
                Token::Text(b"world".to_vec()),
                Token::Special("[INST]".into()),
                Token::Unused,
                // User-defined tokens are their text as it stands, as
                // llama.cpp renders them: no `▁` decoding.
                Token::Text(b"\n\n".to_vec()),
                Token::Text(b"  ".to_vec()),
                Token::Text("\u{2581}\u{2581}".as_bytes().to_vec()),
            ]
        );
        assert!(
            v.label.starts_with("tiny spm (spm.gguf, 11 tokens"),
            "{}",
            v.label
        );
        // Version 2 has the same layout.
        let p2 = write("spm2.gguf", &spm().bytes(2));
        assert_eq!(Vocab::from_gguf(&p2, &[]).unwrap().tokens, v.tokens);
        // An explicit EOS wins; a text EOS is refused.
        let v = Vocab::from_gguf(&p, &["[INST]".into()]).unwrap();
        assert_eq!(v.eos, vec![6]);
        let e = Vocab::from_gguf(&p, &["world".into()]).unwrap_err();
        assert!(e.message().contains("text token"), "{e}");
        let e = Vocab::from_gguf(&p, &["8".into()]).unwrap_err();
        assert!(e.message().contains("text token"), "{e}");
        let off = write(
            "nospace.gguf",
            &spm()
                .bool("tokenizer.ggml.add_space_prefix", false)
                .bytes(3),
        );
        assert!(!Vocab::from_gguf(&off, &[]).unwrap().leading_space);
    }

    #[test]
    fn byte_level_tokens() {
        let g = Gguf::default()
            .str("tokenizer.ggml.model", "gpt2")
            .strings(
                "tokenizer.ggml.tokens",
                &[
                    "\u{120}hi",
                    "\u{10a}",
                    "<|im_end|>",
                    "<|eot|>",
                    "<tool_call>",
                    "\u{120}x",
                ],
            )
            .i32s("tokenizer.ggml.token_type", &[1, 1, 3, 3, 4, 4])
            .u32("tokenizer.ggml.eos_token_id", 2)
            .u32("tokenizer.ggml.eot_token_id", 3);
        let p = write("bpe.gguf", &g.bytes(3));
        let v = Vocab::from_gguf(&p, &[]).unwrap();
        assert_eq!(v.kind, VocabKind::ByteLevel);
        assert!(!v.leading_space);
        assert_eq!(v.tokens[0], Token::Text(b" hi".to_vec()));
        assert_eq!(v.tokens[1], Token::Text(b"\n".to_vec()));
        // User-defined (Qwen2.5's `<tool_call>`): the text as it stands,
        // never through the byte-level alphabet.
        assert_eq!(v.tokens[4], Token::Text(b"<tool_call>".to_vec()));
        assert_eq!(v.tokens[5], Token::Text("\u{120}x".as_bytes().to_vec()));
        assert_eq!(v.eos, vec![2, 3]);
    }

    fn message(bytes: &[u8], name: &str) -> String {
        match Vocab::from_gguf(&write(name, bytes), &[]) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn refusals_say_what_and_where() {
        let m = message(&spm().bytes(1), "v1.gguf");
        assert!(m.contains("version 1"), "{m}");
        let mut be = spm().bytes(3);
        be[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(message(&be, "be.gguf").contains("big-endian"));
        assert!(message(b"GGML....", "magic.gguf").contains("not a GGUF file"));
        let bert = Gguf::default()
            .str("tokenizer.ggml.model", "bert")
            .strings("tokenizer.ggml.tokens", &["[CLS]"]);
        assert!(message(&bert.bytes(3), "bert.gguf").contains("WordPiece"));
        let none = Gguf::default().str("general.name", "no tokenizer");
        assert!(message(&none.bytes(3), "none.gguf").contains("no tokenizer.ggml.model"));
        let noeos = Gguf::default()
            .str("tokenizer.ggml.model", "gpt2")
            .strings("tokenizer.ggml.tokens", &["a"]);
        assert!(message(&noeos.bytes(3), "noeos.gguf").contains("--eos"));
        let badtype = Gguf::default()
            .str("tokenizer.ggml.model", "gpt2")
            .u32("tokenizer.ggml.tokens", 7);
        let m = message(&badtype.bytes(3), "badtype.gguf");
        assert!(
            m.contains("tokenizer.ggml.tokens should be an array of strings")
                && m.contains("byte "),
            "{m}"
        );
    }

    #[test]
    fn claimed_sizes_are_checked_before_allocating() {
        // An array that claims 2^60 strings: an error, not an allocation.
        let mut g = Gguf::default().str("tokenizer.ggml.model", "gpt2");
        let out = g.key("tokenizer.ggml.tokens", 9);
        out.extend(8u32.to_le_bytes());
        out.extend((1u64 << 60).to_le_bytes());
        let m = message(&g.bytes(3), "huge.gguf");
        assert!(m.contains("cannot fit"), "{m}");
        // A string that claims more bytes than the file has.
        let mut g = Gguf::default();
        let out = g.key("general.name", 8);
        out.extend(u64::MAX.to_le_bytes());
        let m = message(&g.bytes(3), "longstr.gguf");
        assert!(m.contains("claims") && m.contains("general.name"), "{m}");
    }

    #[test]
    fn every_truncation_is_an_error() {
        let full = spm().bytes(3);
        // Drop the stand-in tensor data: every shorter prefix cuts the metadata.
        let meta = &full[..full.len() - 32];
        for n in 0..meta.len() {
            let p = write("cut.gguf", &meta[..n]);
            assert!(
                Vocab::from_gguf(&p, &[]).is_err(),
                "a file cut at byte {n} was accepted"
            );
        }
        assert!(Vocab::from_gguf(&write("whole.gguf", meta), &[]).is_ok());
    }
}
