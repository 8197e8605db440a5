//! Hostile inputs for the compiler, and the check each must pass. Shared by
//! the seeded stable-Rust fuzzer (`tests/compile_fuzz.rs`) and the
//! cargo-fuzz target `compile` (`fuzz/fuzz_targets/compile.rs`), both by
//! `#[path]`.
//!
//! A [`Case`] is drawn from a [`Source`]: a seeded generator, or
//! libFuzzer's bytes (every choice reads one byte, zeros once they run
//! out, and choice 0 is always the simplest, so short inputs stay small).
//! It holds a tool list (OpenAI shape, JSON Schemas using every keyword the
//! compiler reads, odd names and bounds, sometimes malformed), a call
//! format (shipped, a test fixture, or mutated `.tdg` text), a small
//! vocabulary and the options.
//!
//! [`check`] compiles it and demands `Ok` or an `Err` with a message, never
//! a panic. An artifact must load and serve: random masked walks from its
//! entries end, read back (`tooldec_read`) to calls of the listed tools
//! whose arguments the `jsonschema` crate accepts (unless the compile
//! relaxed something, which `--relax` allows to over-approximate).
#![allow(dead_code)]

use std::collections::{BTreeSet, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tooldec_compiler::call_format::{Rules, SHIPPED};
use tooldec_compiler::spec::{self, Collisions, ParseOptions};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{
    compile, compile_schema, CallFormat, Compiler, ErrorKind, JsonOptions, Limits, Options,
};
use tooldec_read::Reader;
use tooldec_runtime::{Artifact, Grammar};
use tooldec_testkit::walk::{SplitMix64, Walker};

// ---------------------------------------------------------------- sources

/// Where the generator's choices come from.
pub trait Source {
    /// A number below `n` (0 when `n` is 0 or 1).
    fn below(&mut self, n: u64) -> u64;
}

/// A seeded generator (the stable fuzzer).
pub struct Seeded(pub SplitMix64);

impl Source for Seeded {
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            0
        } else {
            self.0.below(n)
        }
    }
}

/// libFuzzer's bytes: one per small choice, four per large one; zeros
/// once they run out.
pub struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data, at: 0 }
    }

    fn byte(&mut self) -> u64 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b as u64
    }
}

impl Source for Bytes<'_> {
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let v = if n <= 256 {
            self.byte()
        } else {
            (0..4).fold(0, |acc, i| acc | (self.byte() << (8 * i)))
        };
        v % n
    }
}

// ------------------------------------------------------------------ cases

/// The call format of a case.
#[derive(Debug, Clone)]
pub enum FormatSpec {
    /// A shipped format by name.
    Shipped(String),
    /// A format file's text (a fixture, mutated or synthetic).
    Text { name: String, text: String },
}

/// One generated input: everything a compile takes.
#[derive(Debug, Clone)]
pub struct Case {
    /// The tool list file's text.
    pub tools: String,
    /// Compile the first tool's parameters alone as a schema document
    /// (`compile_schema`) instead of the tool list.
    pub schema_only: bool,
    pub rename_collisions: bool,
    pub format: FormatSpec,
    /// Keep only this entry (an index into the format's entries, modulo).
    pub only_entry: Option<usize>,
    pub tokens: Vec<Token>,
    pub eos: Vec<u32>,
    pub json: JsonOptions,
    /// Mask width as `vocab.len() + k` (negative: narrower, refused).
    pub mask_extra: Option<i64>,
    pub max_tokens: Option<u32>,
    pub regions: bool,
    pub compressed: bool,
    /// Also compile with a [`Compiler`] (the per-request API, which reuses
    /// its parts): the same bytes are due.
    pub reuse: bool,
}

/// Bounds that keep every case fast.
pub const MAX_STATES: usize = 20_000;
pub const MAX_NFA_STATES: usize = 200_000;
/// The compile's time and memory bounds: a case that reaches them ends
/// with a `Limit` error, and must end soon after (see [`check`]).
pub const TIME_LIMIT: Duration = Duration::from_secs(1);
pub const MEMORY_LIMIT: usize = 512 << 20;
/// The longest a compile may take: after a state bound, blaming the part
/// of the schema responsible runs on a clock of its own (a second
/// [`TIME_LIMIT`]); then some slack for a loaded machine. Multiplied by
/// `TOOLDEC_FUZZ_SLOWDOWN` (a sanitizer build runs a few times slower).
pub const TIME_BOUND: Duration = Duration::from_millis(2 * 1000 + 1500);

fn time_bound() -> Duration {
    static BOUND: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| {
        let k = std::env::var("TOOLDEC_FUZZ_SLOWDOWN")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .unwrap_or(1);
        TIME_BOUND * k.max(1)
    })
}

impl Case {
    /// A case with the defaults: the tool list `tools` in `format`, over
    /// every byte, a few pieces and an EOS.
    pub fn simple(tools: &str, format: &str) -> Case {
        let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
        for p in ["{\"", "\": ", ", \"", "\"}", "null", "true", "Action: "] {
            tokens.push(Token::Text(p.as_bytes().to_vec()));
        }
        tokens.push(Token::Special("</s>".into()));
        Case {
            tools: tools.to_string(),
            schema_only: false,
            rename_collisions: false,
            format: FormatSpec::Shipped(format.to_string()),
            only_entry: None,
            eos: vec![tokens.len() as u32 - 1],
            tokens,
            json: JsonOptions::default(),
            mask_extra: None,
            max_tokens: None,
            regions: true,
            compressed: false,
            reuse: false,
        }
    }

    /// The case in a few lines: the vocabulary as the bytes it lacks, its
    /// other tokens and its EOS.
    pub fn describe(&self) -> String {
        let missing: Vec<u8> = (0..=255u8)
            .filter(|b| {
                !self
                    .tokens
                    .iter()
                    .any(|t| matches!(t, Token::Text(v) if v.as_slice() == [*b]))
            })
            .collect();
        let others: Vec<String> = self
            .tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| !matches!(t, Token::Text(v) if v.len() == 1))
            .map(|(i, t)| match t {
                Token::Text(v) => format!("{i}:{:?}", String::from_utf8_lossy(v)),
                Token::Special(s) => format!("{i}:special {s:?}"),
                Token::Unused => format!("{i}:unused"),
            })
            .collect();
        let format = match &self.format {
            FormatSpec::Shipped(n) => format!("shipped {n:?}"),
            FormatSpec::Text { name, text } => format!("{name:?}, text {text:?}"),
        };
        format!(
            "tools: {}\nschema_only: {}, rename_collisions: {}\nformat: {format}, only_entry: {:?}\n\
             vocab: {} tokens, lacking bytes {missing:?}; others {}; eos {:?}\n\
             json: {:?}\nmask_extra {:?}, max_tokens {:?}, regions {}, compressed {}, reuse {}",
            self.tools,
            self.schema_only,
            self.rename_collisions,
            self.only_entry,
            self.tokens.len(),
            others.join(", "),
            self.eos,
            self.json,
            self.mask_extra,
            self.max_tokens,
            self.regions,
            self.compressed,
            self.reuse
        )
    }

    /// The format's text, for vocabulary pieces and special names.
    pub fn format_text(&self) -> &str {
        match &self.format {
            FormatSpec::Shipped(n) => SHIPPED
                .iter()
                .find(|s| s.0 == n.as_str())
                .map_or("", |s| s.2),
            FormatSpec::Text { text, .. } => text,
        }
    }

    /// The compile's options (the format loaded, bounds small).
    pub fn options(&self, vocab_len: usize) -> Result<Options, String> {
        let format = match &self.format {
            FormatSpec::Shipped(name) => CallFormat::load(name),
            FormatSpec::Text { name, text } => {
                Rules::parse(&format!("{name}.tdg"), text).map(|grammar| CallFormat {
                    name: name.clone(),
                    grammar,
                })
            }
        }
        .map_err(|e| e.to_string())?;
        let format = match self.only_entry {
            Some(i) => {
                let entries = format.entries();
                if entries.is_empty() {
                    format
                } else {
                    format
                        .only_entry(&entries[i % entries.len()])
                        .map_err(|e| e.to_string())?
                }
            }
            None => format,
        };
        let mask_width = self
            .mask_extra
            .map(|k| (vocab_len as i64 + k).max(0) as u32);
        // Every field is set, yet keep the update: fields may be added.
        #[allow(clippy::needless_update)]
        Ok(Options {
            format,
            json: self.json,
            max_states: MAX_STATES,
            max_nfa_states: MAX_NFA_STATES,
            mask_width,
            zstd_level: self.compressed.then_some(1),
            threads: 1,
            max_tokens: self.max_tokens,
            regions: self.regions,
            limits: Limits {
                time: Some(TIME_LIMIT),
                memory: Some(MEMORY_LIMIT),
                ..Limits::engine()
            },
            ..Options::default()
        })
    }
}

// ------------------------------------------------------------- generator

/// Numbers at the edges: zero, small, powers of two around 2^31, 2^32,
/// 2^53 and 2^64, negative, fractional, tiny and huge.
const EDGE_NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "5",
    "10",
    "-1",
    "0.5",
    "100",
    "255",
    "256",
    "1000",
    "4096",
    "65536",
    "2147483647",
    "2147483648",
    "4294967296",
    "9007199254740992",
    "9007199254740993",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "-2",
    "-2147483648",
    "-9007199254740993",
    "1.5",
    "-0.5",
    "0.1",
    "0.25",
    "0.001",
    "1e-9",
    "123.456",
    "1e308",
    "-1e308",
    "1.7976931348623157e308",
    "5e-324",
    "1e20",
    "3.0",
    "-0.0",
    "0.30000000000000004",
];

/// Counts for lengths and item numbers: mostly small, sometimes hostile.
const EDGE_COUNTS: &[&str] = &[
    "0",
    "1",
    "2",
    "255",
    "256",
    "257",
    "1000",
    "4096",
    "4097",
    "2147483648",
    "4294967296",
    "9007199254740992",
    "-1",
    "1.5",
    "1e308",
    "\"3\"",
    "null",
];

const MULTIPLES: &[&str] = &[
    "1",
    "2",
    "3",
    "7",
    "10",
    "0.5",
    "0.1",
    "0.25",
    "0.01",
    "0.001",
    "2.5",
    "0.3",
    "1.1",
    "3.7",
    "1e-9",
    "1e308",
    "1e-300",
    "9007199254740993",
    "0",
    "-1",
];

const FORMATS: &[&str] = &[
    "date",
    "date-time",
    "time",
    "email",
    "uuid",
    "ipv4",
    "ipv6",
    "hostname",
    "duration",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "idn-email",
    "idn-hostname",
    "json-pointer",
    "relative-json-pointer",
    "uri-template",
    "regex",
    "int32",
    "password",
    "",
    "DATE",
];

const NAMES: &[&str] = &[
    "city",
    "get_weather",
    "a",
    "b",
    "unit",
    "days",
    "query",
    "limit",
    "x_1",
    "name",
    "arguments",
    "type",
    "properties",
    "$ref",
    "parameters",
    "constructor",
];

const ODD_NAMES: &[&str] = &[
    "a b",
    "a\"b",
    "a\\b",
    "a\nb",
    "a\u{0}b",
    "\u{7f}",
    "<tool_call>",
    "</parameter>",
    "<parameter=x>",
    "a=b",
    "f(x)",
    "a,b",
    "'",
    "}",
    "{",
    "a.b",
    "a/b",
    "~0",
    "%25",
    "Action: ",
    "\n",
    " ",
    "-",
    "0",
    "None",
    "True",
];

const UNICODE_NAMES: &[&str] = &[
    "météo",
    "天气",
    "😀",
    "naïve",
    "Ω",
    "\u{200B}zw",
    "ａｂ",
    "e\u{301}",
    "\u{FEFF}bom",
    "\u{2028}",
    "ǅ",
    "𝔘",
];

/// Characters for random text: ASCII, JSON's specials, controls, and
/// multi-byte characters of every UTF-8 length.
const CHARS: &[char] = &[
    'a',
    'b',
    'z',
    'A',
    '0',
    '9',
    '_',
    ' ',
    '-',
    '.',
    '"',
    '\\',
    '/',
    '\n',
    '\t',
    '\u{0}',
    '\u{1f}',
    '<',
    '>',
    '=',
    '{',
    '}',
    '[',
    ']',
    ',',
    ':',
    '\'',
    'é',
    'ß',
    '中',
    '😀',
    '\u{2028}',
    '\u{FEFF}',
    '\u{10FFFF}',
];

/// Pieces of format text that the mutations insert.
const TDG_SNIPPETS: &[&str] = &[
    "tool { name args }",
    "tool { name_json args_inline }",
    "tool { name \"(\" args_positional \")\" }",
    "tool { name \"(\" args_python \")\" }",
    "tool { name args_gemma }",
    "tool { name args_xml(\"<p=\", \">\", \"</p>\") }",
    "tool { args name }",
    "text()",
    "text_except(\"x\")",
    "text_except(\"aa\", \"a\")",
    "special(\"<x>\")",
    "token(\"<tool_call>\")",
    "special(\"</s>\")",
    "{0,1000}",
    "{1001}",
    "{3,1}",
    "*",
    "+",
    "?",
    "entry x = \"a\";",
    "y = y;",
    "/[a-z]+/",
    "/(?=a)/",
    "[^\\n]",
    "\"\\u{1F600}\"",
    "\"\\u{D800}\"",
    "|",
    "(",
    ")",
    ";",
    "\"",
    "name",
    "args",
    "entry",
];

/// A case generator over a [`Source`].
pub struct Gen<'s> {
    src: &'s mut dyn Source,
    /// Hostile choices allowed (else the case is plausible, so that most
    /// cases compile and get walked).
    wild: bool,
    /// Schema nodes made so far (bounds the tool list's size).
    nodes: usize,
    /// The `$defs` names of the tool being made.
    defs: Vec<String>,
}

impl<'s> Gen<'s> {
    pub fn new(src: &'s mut dyn Source) -> Self {
        Gen {
            src,
            wild: true,
            nodes: 0,
            defs: Vec::new(),
        }
    }

    fn n(&mut self, k: usize) -> usize {
        self.src.below(k as u64) as usize
    }

    /// True about once in `k` (never on a source of zeros).
    fn rare(&mut self, k: usize) -> bool {
        self.n(k) == k - 1
    }

    /// Like [`Gen::rare`], for hostile choices: never in a tame case.
    fn odd(&mut self, k: usize) -> bool {
        self.wild && self.rare(k)
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.n(xs.len())]
    }

    fn lit(&mut self, xs: &[&str]) -> Value {
        let s: &str = xs[self.n(xs.len())];
        serde_json::from_str(s).expect("literal JSON")
    }

    fn text(&mut self, max: usize) -> String {
        let len = self.n(max + 1);
        (0..len).map(|_| *self.pick(CHARS)).collect()
    }

    fn name(&mut self) -> String {
        let k = self.n(16);
        let k = if self.wild || k == 11 { k } else { k % 10 };
        match k {
            0..=9 => {
                let base = self.pick(NAMES).to_string();
                match self.n(4) {
                    3 => format!("{base}{}", self.n(3)),
                    _ => base,
                }
            }
            10 => String::new(),
            11 => self.pick(UNICODE_NAMES).to_string(),
            12 => self.pick(ODD_NAMES).to_string(),
            13 => {
                let len = *self.pick(&[64usize, 255, 256, 1000, 5000]);
                "n".repeat(len)
            }
            14 => self.text(8),
            _ => self.pick(&["0", "1e3", "-1", "null", "true"]).to_string(),
        }
    }

    fn number(&mut self) -> Value {
        match self.n(3) {
            0 => json!(self.n(20) as i64 - 5),
            _ => self.lit(EDGE_NUMBERS),
        }
    }

    fn count(&mut self) -> Value {
        match self.n(6) {
            0..=4 => json!(self.n(6)),
            _ if self.wild => self.lit(EDGE_COUNTS),
            _ => self.lit(&EDGE_COUNTS[..7]),
        }
    }

    /// Any JSON value, for `enum`, `const`, `default`.
    fn value(&mut self, depth: usize) -> Value {
        match self.n(if depth > 2 { 5 } else { 8 }) {
            0 => Value::String(self.text(6)),
            1 => self.number(),
            2 => Value::Null,
            3 => Value::Bool(self.n(2) == 1),
            4 => Value::String(self.name()),
            5 => Value::Array((0..self.n(3)).map(|_| self.value(depth + 1)).collect()),
            6 => {
                let mut m = Map::new();
                for _ in 0..self.n(3) {
                    let k = self.name();
                    let v = self.value(depth + 1);
                    m.insert(k, v);
                }
                Value::Object(m)
            }
            _ => Value::String(String::new()),
        }
    }

    // -- ECMA-262 patterns

    pub fn pattern(&mut self) -> String {
        let mut s = String::new();
        if self.n(3) == 1 {
            s.push('^');
        }
        // Nested counted groups of Unicode classes make large automata
        // (each refused after a second): mostly in wild cases.
        let depth = if self.wild { 2 } else { 1 };
        s += &self.regex_alt(depth);
        if self.n(3) == 1 {
            s.push('$');
        }
        if self.odd(12) {
            // A huge counted repeat of everything, or nested counts.
            let q = *self.pick(&["{1000}", "{4096}", "{0,65535}", "{100}{100}", "{2,}"]);
            s = format!("(?:{s}){q}");
        }
        s
    }

    fn regex_alt(&mut self, depth: usize) -> String {
        let k = 1 + self.n(2) + usize::from(self.rare(6)) * 3;
        (0..k)
            .map(|_| self.regex_seq(depth))
            .collect::<Vec<_>>()
            .join("|")
    }

    fn regex_seq(&mut self, depth: usize) -> String {
        let k = 1 + self.n(4);
        let mut s = String::new();
        for _ in 0..k {
            s += &self.regex_atom(depth);
            s += &self.quantifier();
        }
        s
    }

    fn regex_atom(&mut self, depth: usize) -> String {
        match self.n(16) {
            0 | 1 => self
                .pick(&["a", "b", "x", "Z", "0", "7", "_", "-", " ", ","])
                .to_string(),
            2 => self
                .pick(&[
                    "\\.", "\\*", "\\+", "\\?", "\\(", "\\)", "\\[", "\\]", "\\{", "\\}", "\\|",
                    "\\\\", "\\/", "\\^", "\\$", "\\-",
                ])
                .to_string(),
            3 | 4 => self
                .pick(&[
                    "[a-z]",
                    "[A-Z0-9_]",
                    "[^0-9]",
                    "[abc]",
                    "[\\d\\s]",
                    "[^\\w]",
                    "[a-zA-Z\\-]",
                    "[\\u00e0-\\u00ff]",
                    "[😀-😂]",
                    "[\\b]",
                    "[^]",
                    "[]",
                    "[-a]",
                    "[.]",
                    "[\\/]",
                    "[^\\s\\S]",
                    "[\\u{1F600}-\\u{1F64F}]",
                    "[^\"\\\\]",
                ])
                .to_string(),
            5 => self
                .pick(&["\\d", "\\D", "\\w", "\\W", "\\s", "\\S"])
                .to_string(),
            6 => ".".to_string(),
            7 => self
                .pick(&[
                    "é",
                    "中",
                    "😀",
                    "\\u00e9",
                    "\\u{1F600}",
                    "\\uD83D\\uDE00",
                    "\\x41",
                    "\\t",
                    "\\n",
                    "\\cJ",
                    "\\0",
                    "\\v",
                    "\\f",
                    "\\r",
                    "\\u2028",
                    "\\\"",
                ])
                .to_string(),
            8 => self
                .pick(&[
                    "\\p{L}",
                    "\\p{Lu}",
                    "\\P{N}",
                    "\\p{Script=Greek}",
                    "\\p{Nd}",
                ])
                .to_string(),
            9 | 10 if depth > 0 => {
                let open = *self.pick(&["(", "(?:", "(?<g>"]);
                format!("{open}{})", self.regex_alt(depth - 1))
            }
            11 if self.odd(3) => self
                .pick(&[
                    "(?=a)",
                    "(?!a)",
                    "(?<=a)",
                    "\\b",
                    "\\B",
                    "(a)\\1",
                    "\\k<x>",
                    "(?i)a",
                    "{",
                    "}",
                    "]",
                    "\\a",
                    "[\\d-z]",
                    "a{,3}",
                    "\\uD800",
                    "^*",
                    "(",
                    "\\",
                    "[z-a]",
                    "\\p{Nope}",
                ])
                .to_string(),
            12 => self.pick(&["^", "$"]).to_string(),
            _ => self.pick(&["a", "b", "c", "1"]).to_string(),
        }
    }

    fn quantifier(&mut self) -> String {
        let q = match self.n(14) {
            0..=6 => return String::new(),
            7 => "?".to_string(),
            8 => "*".to_string(),
            9 => "+".to_string(),
            10 => format!("{{{}}}", self.rep_count()),
            11 => format!("{{{},}}", self.rep_count()),
            _ => {
                let a = self.rep_count();
                let b = if self.odd(8) {
                    a.saturating_sub(1)
                } else {
                    a + self.rep_count()
                };
                format!("{{{a},{b}}}")
            }
        };
        if self.rare(5) {
            q + "?"
        } else {
            q
        }
    }

    fn rep_count(&mut self) -> u64 {
        if self.odd(10) {
            *self.pick(&[
                100,
                1000,
                4096,
                5000,
                65535,
                65536,
                100_000,
                1 << 31,
                1 << 32,
            ])
        } else {
            self.n(5) as u64
        }
    }

    // -- schemas

    fn maybe(
        &mut self,
        o: &mut Map<String, Value>,
        key: &str,
        k: usize,
        v: impl FnOnce(&mut Self) -> Value,
    ) {
        if self.n(k) == 1 {
            let v = v(self);
            o.insert(key.to_string(), v);
        }
    }

    /// A schema at nesting `depth`.
    pub fn schema(&mut self, depth: usize) -> Value {
        self.nodes += 1;
        let leaf = depth >= 5 || self.nodes > 30;
        let kind = if leaf { self.n(7) } else { self.n(18) };
        let mut o = Map::new();
        match kind {
            0 => self.string_schema(&mut o),
            1 => self.number_schema(&mut o, "integer"),
            2 => self.number_schema(&mut o, "number"),
            3 => {
                o.insert("type".into(), json!("boolean"));
            }
            4 => {
                o.insert("type".into(), json!("null"));
            }
            5 => {
                let k = self.n(4);
                let mut vs: Vec<Value> = (0..k + 1).map(|_| self.value(0)).collect();
                if self.odd(6) {
                    vs.clear();
                }
                if self.odd(6) {
                    let v = vs.first().cloned().unwrap_or(Value::Null);
                    vs.push(v);
                }
                let strings = vs.iter().all(Value::is_string);
                o.insert("enum".into(), Value::Array(vs));
                if self.n(3) == 1 && (strings || self.wild) {
                    o.insert("type".into(), json!("string"));
                }
                if self.odd(10) {
                    o.insert("enum".into(), json!("a"));
                }
            }
            6 => {
                let v = self.value(0);
                o.insert("const".into(), v);
            }
            7 | 8 => self.object_schema(&mut o, depth),
            9 | 10 => self.array_schema(&mut o, depth),
            11..=13 => {
                let key = *self.pick(&["anyOf", "oneOf", "allOf"]);
                let k = 1 + self.n(3);
                let mut subs: Vec<Value> = if self.wild {
                    (0..k).map(|_| self.schema(depth + 1)).collect()
                } else if key == "allOf" {
                    // One kind, so that the conjunction may hold.
                    let kind = self.n(4);
                    (0..k).map(|_| self.kind_schema(kind, depth + 1)).collect()
                } else {
                    // Distinct kinds, so that oneOf branches stay apart.
                    let first = self.n(4);
                    (0..k.min(4))
                        .map(|i| self.kind_schema((first + i) % 4, depth + 1))
                        .collect()
                };
                if self.odd(12) {
                    subs.clear();
                }
                o.insert(key.into(), Value::Array(subs));
                if self.n(3) == 1 {
                    let t = *self.pick(&["object", "string", "integer"]);
                    o.insert("type".into(), json!(t));
                }
                if self.odd(12) {
                    o.insert(key.into(), json!({}));
                }
            }
            14 => {
                let r = self.reference();
                o.insert("$ref".into(), r);
                if self.rare(4) {
                    o.insert("description".into(), json!("a sibling of $ref"));
                    let t = *self.pick(&["string", "object", "integer"]);
                    o.insert("type".into(), json!(t));
                }
            }
            15 => {
                let k = 1 + self.n(3);
                let all = [
                    "string", "integer", "number", "boolean", "null", "array", "object",
                ];
                let ts: Vec<Value> = (0..k).map(|_| json!(*self.pick(&all))).collect();
                o.insert("type".into(), Value::Array(ts));
                self.maybe(&mut o, "minLength", 3, Self::count);
                self.maybe(&mut o, "maximum", 3, Self::number);
                self.maybe(&mut o, "maxItems", 3, Self::count);
                if self.n(3) == 1 {
                    let p = self.schema(depth + 1);
                    o.insert("items".into(), p);
                }
            }
            16 => {
                return match self.n(if self.wild { 6 } else { 4 }) {
                    0 => json!({}),
                    1 => json!(true),
                    2 => json!(false),
                    3 => json!({"not": {"type": "string"}}),
                    4 => json!({"if": {"type": "string"}, "then": {"minLength": 1}}),
                    _ => {
                        let v = self.value(0);
                        if v.is_object() {
                            json!(5)
                        } else {
                            v
                        }
                    }
                };
            }
            _ if !self.wild => self.string_schema(&mut o),
            _ => {
                // Unknown keywords, annotations, and type names that are not.
                o.insert(
                    "type".into(),
                    json!(*self.pick(&["string", "str", "int", "Integer", ""])),
                );
                o.insert("x-vendor".into(), json!({"$ref": "#/nowhere"}));
                o.insert("title".into(), json!(5));
            }
        }
        // Siblings any schema may carry.
        if self.n(6) == 1 {
            let d = self.text(12);
            o.insert("description".into(), json!(d));
        }
        if self.rare(8) {
            o.insert("nullable".into(), json!(true));
        }
        if self.rare(10) {
            let v = self.value(0);
            o.insert("default".into(), v);
        }
        if self.rare(14) {
            let t = *self.pick(&["null", "string", "integer", "object"]);
            o.insert("not".into(), json!({"type": t}));
        }
        if self.odd(30) {
            o.insert("uniqueItems".into(), json!(true));
        }
        Value::Object(o)
    }

    /// A schema of one kind: string, integer, object or array.
    fn kind_schema(&mut self, kind: usize, depth: usize) -> Value {
        self.nodes += 1;
        let mut o = Map::new();
        match kind {
            0 => self.string_schema(&mut o),
            1 => self.number_schema(&mut o, "integer"),
            2 => self.object_schema(&mut o, depth),
            _ => self.array_schema(&mut o, depth),
        }
        Value::Object(o)
    }

    fn string_schema(&mut self, o: &mut Map<String, Value>) {
        o.insert("type".into(), json!("string"));
        self.maybe(o, "minLength", 4, Self::count);
        self.maybe(o, "maxLength", 3, Self::count);
        if self.n(3) == 1 {
            let p = self.pattern();
            o.insert("pattern".into(), json!(p));
        }
        if self.n(3) == 1 {
            let f = *self.pick(FORMATS);
            o.insert("format".into(), json!(f));
        }
        if self.odd(10) {
            o.insert("pattern".into(), json!(5));
        }
    }

    fn number_schema(&mut self, o: &mut Map<String, Value>, t: &str) {
        o.insert("type".into(), json!(t));
        for key in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
            if self.n(4) == 1 {
                let v = if key.starts_with("exclusive") && self.rare(6) {
                    json!(self.n(2) == 1)
                } else {
                    self.number()
                };
                o.insert(key.into(), v);
            }
        }
        if self.n(3) == 1 {
            let m = if self.wild {
                self.lit(MULTIPLES)
            } else {
                self.lit(&MULTIPLES[..MULTIPLES.len() - 2])
            };
            o.insert("multipleOf".into(), m);
        }
        if self.rare(12) {
            o.insert(
                "format".into(),
                json!(*self.pick(&["int32", "int64", "double", "date"])),
            );
        }
    }

    fn object_schema(&mut self, o: &mut Map<String, Value>, depth: usize) {
        if self.n(8) != 7 {
            o.insert("type".into(), json!("object"));
        }
        let k = if self.rare(10) {
            6 + self.n(6)
        } else {
            self.n(4)
        };
        let mut props = Map::new();
        let mut names = Vec::new();
        for _ in 0..k {
            let name = self.name();
            let s = self.schema(depth + 1);
            names.push(name.clone());
            props.insert(name, s);
        }
        if k > 0 || self.n(2) == 1 {
            o.insert("properties".into(), Value::Object(props));
        }
        if !names.is_empty() && self.n(2) == 1 {
            let mut req: Vec<Value> = names
                .iter()
                .filter(|_| self.n(2) == 1)
                .map(|n| json!(n))
                .collect();
            if self.odd(8) {
                req.push(json!("not_declared"));
            }
            if self.odd(10) {
                if let Some(first) = req.first().cloned() {
                    req.push(first);
                }
            }
            o.insert("required".into(), Value::Array(req));
        }
        match self.n(6) {
            1 => {
                o.insert("additionalProperties".into(), json!(false));
            }
            2 => {
                o.insert("additionalProperties".into(), json!(true));
            }
            3 => {
                let s = self.schema(depth + 1);
                o.insert("additionalProperties".into(), s);
            }
            _ => {}
        }
        if self.rare(8) {
            o.insert("minProperties".into(), self.count());
        }
        if self.rare(8) {
            o.insert("maxProperties".into(), self.count());
        }
        if self.rare(10) {
            let p = self.pattern();
            let s = self.schema(depth + 1);
            let mut m = Map::new();
            m.insert(p, s);
            o.insert("patternProperties".into(), Value::Object(m));
        }
        if self.rare(10) {
            let p = self.pattern();
            o.insert("propertyNames".into(), json!({"pattern": p}));
        }
        if self.rare(12) && names.len() >= 2 {
            let mut m = Map::new();
            m.insert(names[0].clone(), json!([names[1].clone()]));
            o.insert("dependentRequired".into(), Value::Object(m));
        }
        if self.rare(16) {
            o.insert("unevaluatedProperties".into(), json!(false));
        }
    }

    fn array_schema(&mut self, o: &mut Map<String, Value>, depth: usize) {
        o.insert("type".into(), json!("array"));
        match self.n(8) {
            0 => {}
            1 => {
                o.insert("items".into(), json!(false));
            }
            2 => {
                let k = 1 + self.n(3);
                let items: Vec<Value> = (0..k).map(|_| self.schema(depth + 1)).collect();
                o.insert("items".into(), Value::Array(items));
                match self.n(3) {
                    1 => {
                        o.insert("additionalItems".into(), json!(false));
                    }
                    2 => {
                        let s = self.schema(depth + 1);
                        o.insert("additionalItems".into(), s);
                    }
                    _ => {}
                }
            }
            3 => {
                let k = 1 + self.n(3);
                let items: Vec<Value> = (0..k).map(|_| self.schema(depth + 1)).collect();
                o.insert("prefixItems".into(), Value::Array(items));
                if self.n(2) == 1 {
                    let s = self.schema(depth + 1);
                    o.insert("items".into(), s);
                } else if self.n(2) == 1 {
                    o.insert("items".into(), json!(false));
                }
            }
            _ => {
                let s = self.schema(depth + 1);
                o.insert("items".into(), s);
            }
        }
        self.maybe(o, "minItems", 3, Self::count);
        self.maybe(o, "maxItems", 3, Self::count);
        if self.odd(16) {
            o.insert("contains".into(), json!({"type": "integer"}));
        }
        if self.rare(16) {
            o.insert("unevaluatedItems".into(), json!(false));
        }
    }

    fn reference(&mut self) -> Value {
        let pick = self.n(if self.wild { 12 } else { 8 });
        if pick < 6 && !self.defs.is_empty() {
            let d = self.pick(&self.defs.clone()).clone();
            return json!(format!("#/$defs/{}", pointer_escape(&d)));
        }
        if !self.wild {
            return json!("#");
        }
        match pick {
            6 | 7 => json!("#"),
            8 => json!("#/$defs/missing"),
            9 => json!(*self.pick(&[
                "#/properties/a",
                "#/definitions/x",
                "#/$defs/a%20b",
                "#/$defs/~0x",
                "#/$defs/~1",
                "#/$defs/%",
                "#/$defs//",
            ])),
            10 => json!(*self.pick(&[
                "http://example.com/s.json",
                "#anchor",
                "other.json#/a",
                "",
                "#/",
                "##",
            ])),
            _ => json!(5),
        }
    }

    /// A tool's `parameters`: mostly an object, sometimes anything.
    fn parameters(&mut self) -> Value {
        self.defs.clear();
        let n_defs = if self.n(3) == 1 { 1 + self.n(3) } else { 0 };
        for i in 0..n_defs {
            let d = if self.rare(6) {
                self.name()
            } else {
                format!("d{i}")
            };
            self.defs.push(d);
        }
        let object = |g: &mut Self, depth| {
            let mut o = Map::new();
            g.object_schema(&mut o, depth);
            Value::Object(o)
        };
        let mut root_def = None;
        let mut root = match self.n(12) {
            0..=8 => object(self, 0),
            // Applicators at the root, over objects.
            9 => {
                let key = *self.pick(&["anyOf", "allOf", "oneOf"]);
                let subs: Vec<Value> = (0..1 + self.n(2)).map(|_| object(self, 1)).collect();
                let mut o = Map::new();
                o.insert(key.into(), Value::Array(subs));
                Value::Object(o)
            }
            10 if !self.defs.is_empty() => {
                root_def = Some(object(self, 1));
                json!({"$ref": format!("#/$defs/{}", pointer_escape(&self.defs[0]))})
            }
            _ if !self.wild => object(self, 0),
            10 | 11 if self.n(2) == 0 => self.schema(0),
            _ => self.lit(&["5", "\"x\"", "[]", "null", "true", "false", "[{}]"]),
        };
        if self.odd(20) {
            root = self.deep(&root);
        }
        if n_defs > 0 {
            let mut defs = Map::new();
            for d in self.defs.clone() {
                let s = match root_def.take() {
                    Some(s) => s,
                    None => self.schema(1),
                };
                defs.insert(d, s);
            }
            if let Value::Object(o) = &mut root {
                let key = if self.rare(4) { "definitions" } else { "$defs" };
                o.insert(key.into(), Value::Object(defs));
            }
        }
        if self.odd(25) {
            root = self.ref_chain(root);
        }
        root
    }

    /// `inner` under many levels of one wrapper.
    fn deep(&mut self, inner: &Value) -> Value {
        let levels = *self.pick(&[20usize, 33, 40, 60]);
        let wrap = self.n(5);
        let mut v = inner.clone();
        for _ in 0..levels {
            v = match wrap {
                0 => json!({"type": "array", "items": v}),
                1 => json!({"anyOf": [v]}),
                2 => json!({"allOf": [v]}),
                3 => json!({"type": "object", "properties": {"a": v}, "required": ["a"]}),
                _ => json!({"oneOf": [v, {"type": "null"}]}),
            };
        }
        v
    }

    /// A root that is the end of a long chain of `$ref`s through `$defs`.
    fn ref_chain(&mut self, root: Value) -> Value {
        let cyclic = self.rare(3);
        let len = *self.pick(&[10usize, 100, 1000, 5000]);
        let mut defs = Map::new();
        for i in 0..len {
            let next = if i + 1 == len {
                if cyclic {
                    json!({"$ref": "#/$defs/c0"})
                } else {
                    root.clone()
                }
            } else {
                json!({"$ref": format!("#/$defs/c{}", i + 1)})
            };
            defs.insert(format!("c{i}"), next);
        }
        json!({"$defs": defs, "$ref": "#/$defs/c0"})
    }

    fn tool(&mut self) -> Value {
        let name = self.name();
        let mut f = Map::new();
        if self.odd(30) {
            f.insert("name".into(), json!(5));
        } else if !self.odd(40) {
            f.insert("name".into(), json!(name));
        }
        match self.n(4) {
            0 => {}
            1 => {
                f.insert("description".into(), json!(self.text(20)));
            }
            2 => {
                f.insert("description".into(), json!("Gets it."));
            }
            _ => {
                if self.odd(4) {
                    f.insert("description".into(), json!(["not", "a string"]));
                }
            }
        }
        if !self.rare(15) {
            let p = self.parameters();
            f.insert("parameters".into(), p);
        }
        if self.rare(10) {
            f.insert("strict".into(), json!(true));
        }
        match self.n(12) {
            11 => Value::Object(f),
            10 if self.wild => json!({"type": "other", "function": f}),
            _ => json!({"type": "function", "function": f}),
        }
    }

    /// The tool list's text: a JSON array of tools, sometimes malformed.
    pub fn tools_text(&mut self) -> String {
        self.nodes = 0;
        let k = if self.rare(20) {
            *self.pick(&[6usize, 12, 0][..if self.wild { 3 } else { 2 }])
        } else {
            1 + self.n(3)
        };
        let mut tools = Vec::new();
        for i in 0..k {
            if i > 0 && self.odd(6) {
                // A duplicate name, with the same or another schema.
                let mut t: Value = tools.last().cloned().unwrap_or(json!({}));
                if self.n(2) == 1 {
                    if let Some(f) = t.get_mut("function") {
                        f["parameters"] = json!({"type": "object", "properties": {}});
                    }
                }
                tools.push(t);
            } else {
                tools.push(self.tool());
            }
        }
        let list = Value::Array(tools);
        let list = match self.n(20) {
            19 => json!({"tools": list}),
            18 if self.wild => json!({"functions": list}),
            _ => list,
        };
        let text = if self.n(2) == 1 {
            serde_json::to_string_pretty(&list).expect("serializable")
        } else {
            serde_json::to_string(&list).expect("serializable")
        };
        if self.odd(12) {
            self.malform(text)
        } else {
            text
        }
    }

    /// Breaks JSON text: cut, spliced, or replaced by non-JSON.
    fn malform(&mut self, text: String) -> String {
        match self.n(6) {
            0 => {
                let at = self.n(text.len() + 1);
                cut_at_char(&text, at).to_string()
            }
            1 => {
                let at = self.n(text.len() + 1);
                let at = char_floor(&text, at);
                let junk = *self.pick(&["\u{0}", "}", "]", ",", "\"", "\\", "NaN", "1e999", "//"]);
                format!("{}{junk}{}", &text[..at], &text[at..])
            }
            2 => self
                .pick(&[
                    "",
                    " ",
                    "[",
                    "{}",
                    "null",
                    "[1, 2]",
                    "\"tools\"",
                    "[[]]",
                    "\u{FEFF}[]",
                ])
                .to_string(),
            3 => format!("{text}{text}"),
            4 => "[".repeat(5000),
            _ => format!("{text} trailing"),
        }
    }

    // -- formats

    fn format(&mut self) -> FormatSpec {
        let k = self.n(12);
        let k = match k {
            9 | 10 if !self.wild => 11,
            k => k,
        };
        match k {
            0..=7 => FormatSpec::Shipped(self.pick(SHIPPED).0.to_string()),
            8 => {
                let (name, text) = *self.pick(FIXTURES);
                FormatSpec::Text {
                    name: name.to_string(),
                    text: text.to_string(),
                }
            }
            9 | 10 => {
                let (name, text) = if self.n(2) == 0 {
                    let s = self.pick(SHIPPED);
                    (s.0, s.2)
                } else {
                    *self.pick(FIXTURES)
                };
                let mut text = strip_comments(text);
                for _ in 0..1 + self.n(3) {
                    text = self.mutate_tdg(&text);
                }
                FormatSpec::Text {
                    name: format!("{name}-mutated"),
                    text,
                }
            }
            _ => FormatSpec::Text {
                name: "synthetic".into(),
                text: self.synthetic_tdg(),
            },
        }
    }

    fn mutate_tdg(&mut self, text: &str) -> String {
        let at = char_floor(text, self.n(text.len() + 1));
        let end = char_floor(text, (at + self.n(40)).min(text.len()));
        match self.n(5) {
            0 => format!("{}{}", &text[..at], &text[end..]),
            1 => format!("{}{}{}", &text[..end], &text[at..end], &text[end..]),
            2 | 3 => {
                let s = *self.pick(TDG_SNIPPETS);
                format!("{}{s}{}", &text[..at], &text[at..])
            }
            _ => {
                let c = *self.pick(CHARS);
                let next = text[at..].chars().next().map_or(at, |d| at + d.len_utf8());
                format!("{}{c}{}", &text[..at], &text[next..])
            }
        }
    }

    fn synthetic_tdg(&mut self) -> String {
        let prefix = *self.pick(&[
            "",
            "\"Call: \"",
            "token(\"<tool_call>\")",
            "special(\"<x>\")",
            "text_except(\"@\") \"@\"",
        ]);
        let name = *self.pick(&["name", "name_json", "name \" \"", ""]);
        let args = *self.pick(&[
            "args",
            "args_inline",
            "\"(\" args_positional \")\"",
            "\"(\" args_python \")\"",
            "args_gemma",
            "args_xml(\"<p=\", \">\", \"</p>\")",
            "args_xml(\"<p=\", \">\", \" s>\", \"</p>\")",
            "",
        ]);
        let rep = *self.pick(&["", "*", "+", "{2}", "{0,3}", "{1000}"]);
        format!("entry start = {prefix} (tool {{ {name} {args} }}){rep};\nentry one = tool {{ {name} \" \" {args} }};\n")
    }

    // -- vocabularies

    fn vocab(&mut self, texts: &[&str]) -> (Vec<Token>, Vec<u32>) {
        let mut tokens: Vec<Token> = Vec::new();
        let mode = self.n(if self.wild { 10 } else { 30 });
        for b in 0..=255u8 {
            let keep = match mode {
                8 => self.n(40) != 0,
                9 => b.is_ascii_graphic() || b == b' ' || b == b'\n',
                _ => true,
            };
            if keep {
                tokens.push(Token::Text(vec![b]));
            }
        }
        if self.rare(20) {
            tokens.push(Token::Unused);
        }
        // Pieces cut from the tool list and the format, and a pool.
        for _ in 0..self.n(48) {
            let src = texts[self.n(texts.len())].as_bytes();
            if src.is_empty() {
                continue;
            }
            let at = self.n(src.len());
            let len = 1 + self.n(12);
            let piece = src[at..(at + len).min(src.len())].to_vec();
            tokens.push(Token::Text(piece));
        }
        for _ in 0..self.n(10) {
            let p: &[u8] = match self.n(14) {
                0 => b"{\"",
                1 => b"\": ",
                2 => b", \"",
                3 => b"\"}",
                4 => b"null",
                5 => b"  ",
                6 => b"\n",
                7 => "é".as_bytes(),
                8 => "😀".as_bytes(),
                9 => &[0xF0, 0x9F],
                10 => &[0xFF],
                11 => &[0xFE, 0x00, 0x00],
                12 => b"",
                _ => b"\\u00",
            };
            tokens.push(Token::Text(p.to_vec()));
        }
        // The special tokens a format names, some of the time.
        if self.n(2) == 1 {
            for name in special_names(texts.last().copied().unwrap_or("")) {
                if self.n(3) != 0 {
                    let at = self.n(tokens.len() + 1);
                    tokens.insert(at, Token::Special(name));
                }
            }
        }
        if self.odd(8) {
            tokens.push(Token::Special("<|x|>".into()));
            tokens.push(Token::Special("<|x|>".into()));
        }
        let eos_at = if self.rare(6) {
            self.n(tokens.len() + 1)
        } else {
            tokens.len()
        };
        tokens.insert(eos_at, Token::Special("</s>".into()));
        let eos = match self.n(if self.wild { 24 } else { 21 }) {
            23 => Vec::new(),
            22 => vec![0],
            21 => vec![tokens.len() as u32 + 5],
            20 => {
                tokens.push(Token::Special("<|eot|>".into()));
                vec![eos_at as u32, tokens.len() as u32 - 1]
            }
            _ => vec![eos_at as u32],
        };
        (tokens, eos)
    }

    fn json_options(&mut self) -> JsonOptions {
        let d = JsonOptions::default();
        if self.n(3) == 0 {
            return JsonOptions {
                max_ws: self.n(3) as u32,
                ..d
            };
        }
        let max_depth = *self.pick(&[32, 8, 4, 2, 1, 0][..if self.wild { 6 } else { 4 }]);
        let any_depth = *self.pick(&[3, 0, 1, 2]);
        JsonOptions {
            max_ws: self.n(5) as u32,
            // `dumps` has its own tests (lower/json/tests.rs); a draw here
            // would change every generated case after it.
            whitespace: d.whitespace,
            max_depth,
            open_objects: self.n(4) == 1,
            any_order: *self.pick(&[0, 0, 1, 2, 3, 8, 9][..if self.wild { 7 } else { 5 }]),
            max_recursion: *self.pick(&[3, 0, 1, 2]),
            // Options out of their bounds are refused (a `Usage` error):
            // only in wild cases.
            any_depth: if self.wild {
                any_depth
            } else {
                any_depth.min(max_depth)
            },
            max_count: *self.pick(&[256, 0, 1, 8, 64, 100_000][..if self.wild { 6 } else { 5 }]),
            relax: self.n(4) == 1,
        }
    }

    /// One case.
    pub fn case(&mut self) -> Case {
        self.wild = self.n(10) >= 7;
        let tools = self.tools_text();
        let format = self.format();
        let format_text = match &format {
            FormatSpec::Shipped(n) => SHIPPED
                .iter()
                .find(|s| s.0 == n.as_str())
                .map_or("", |s| s.2),
            FormatSpec::Text { text, .. } => text.as_str(),
        }
        .to_string();
        let only_entry = if self.n(4) == 3 {
            None
        } else {
            Some(self.n(16))
        };
        let (tokens, eos) = self.vocab(&[&tools, &format_text]);
        let json = self.json_options();
        Case {
            schema_only: self.rare(10),
            rename_collisions: self.n(2) == 1,
            format,
            only_entry,
            tokens,
            eos,
            json,
            mask_extra: match self.n(16) {
                15 if self.wild => Some(-1),
                13 | 14 => Some(self.n(70) as i64),
                _ => None,
            },
            max_tokens: match self.n(12) {
                11 if self.wild => Some(self.n(60) as u32),
                10 => Some(1 << 30),
                _ => None,
            },
            regions: self.n(4) != 3,
            compressed: self.n(4) == 3,
            reuse: self.n(4) == 3,
            tools,
        }
    }
}

/// The test fixtures' formats: argument encodings no shipped format uses.
pub const FIXTURES: &[(&str, &str)] = &[
    ("xml3", include_str!("fixtures/formats/xml3.tdg")),
    ("xml4", include_str!("fixtures/formats/xml4.tdg")),
    ("pythonic", include_str!("fixtures/formats/pythonic.tdg")),
    ("gemma", include_str!("fixtures/formats/gemma.tdg")),
];

fn strip_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names in `special("...")` and `token("...")` of a format's text.
fn special_names(text: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    for key in ["special(\"", "token(\""] {
        for (i, _) in text.match_indices(key) {
            let rest = &text[i + key.len()..];
            if let Some(end) = rest.find('"') {
                out.insert(rest[..end].replace("\\\"", "\""));
            }
        }
    }
    out.into_iter().collect()
}

fn char_floor(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn cut_at_char(s: &str, at: usize) -> &str {
    &s[..char_floor(s, at)]
}

fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

// -------------------------------------------------------------- the check

/// What one case did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The compile's result: `Ok` or the error's kind.
    pub result: String,
    /// The error's message, for a refusal.
    pub message: String,
    pub compile_time: Duration,
    pub walks: usize,
    pub calls: usize,
    /// Calls whose arguments were checked against the schema.
    pub validated: usize,
    /// Calls not checked: the compile relaxed, or no validator could be
    /// built for the schema (see [`validator`]).
    pub unvalidated: usize,
    /// Symptoms of open findings (see [`REPEATED_KEY`] and the constants
    /// after it), counted, not failed.
    pub known: Vec<&'static str>,
}

// The findings of `tests/compile_fuzz.rs` that are open, and that the
// fuzzers would otherwise hit again and again, get a constant here naming
// the symptom, which the check pushes to `Outcome::known` where it sees
// it. None is open now.

thread_local! {
    static PANIC_AT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Keeps the place of the last panic on this thread, for the report.
fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            PANIC_AT.with(|p| *p.borrow_mut() = Some(at));
            previous(info);
        }));
    });
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    let msg = e
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    let at = PANIC_AT.with(|p| p.borrow_mut().take()).unwrap_or_default();
    format!("panic at {at}: {msg}")
}

struct Built {
    set: spec::ToolSet,
    vocab: Vocab,
    artifact: Vec<u8>,
    relaxed: bool,
    entries: Vec<String>,
    mask_width: usize,
}

/// Parses and compiles; `Ok(Err(message))` for a refusal.
fn build(case: &Case) -> Result<Built, (String, String)> {
    let err = |kind: &str, e: String| (kind.to_string(), e);
    let set = if case.schema_only {
        // The first tool's parameters as a schema document.
        let doc = serde_json::from_str::<Value>(&case.tools)
            .ok()
            .and_then(|v| {
                let first = v.as_array()?.first()?.clone();
                first
                    .get("function")
                    .unwrap_or(&first)
                    .get("parameters")
                    .cloned()
            })
            .map(|p| p.to_string())
            .unwrap_or_else(|| case.tools.clone());
        spec::schema_document("schema.json", &doc).map_err(|e| err("Json", e.to_string()))?
    } else {
        let opts = ParseOptions {
            collisions: if case.rename_collisions {
                Collisions::Rename
            } else {
                Collisions::Error
            },
            ..ParseOptions::default()
        };
        spec::parse_with("tools.json", &case.tools, &opts)
            .map_err(|e| err(&format!("{:?}", e.kind()), e.to_string()))?
    };
    let vocab = Vocab::from_tokens(case.tokens.clone(), case.eos.clone(), "fuzz")
        .map_err(|e| err(&format!("{:?}", e.kind()), e.to_string()))?;
    let opts = case
        .options(vocab.len())
        .map_err(|e| err("CallFormat", e))?;
    let out = if case.schema_only {
        compile_schema(&set, &vocab, &opts, &mut |_| {})
    } else {
        compile(&set, &vocab, &opts, &mut |_| {})
    }
    .map_err(|e| err(&format!("{:?}", e.kind()), e.to_string()))?;
    let entries = if case.schema_only {
        Vec::new()
    } else {
        opts.format.entries()
    };
    Ok(Built {
        set,
        mask_width: opts.mask_width.map_or(vocab.len(), |w| w as usize),
        vocab,
        artifact: out.artifact,
        relaxed: !out.report.relaxed.is_empty(),
        entries,
    })
}

/// Compiles `case` and checks what comes out; `walks` random walks per
/// artifact, seeded by `seed`. `Err` describes a finding.
pub fn check(case: &Case, walks: usize, seed: u64) -> Result<Outcome, String> {
    install_hook();
    let t = Instant::now();
    let built = catch_unwind(AssertUnwindSafe(|| build(case)));
    let mut out = Outcome {
        compile_time: t.elapsed(),
        ..Outcome::default()
    };
    if out.compile_time > time_bound() {
        let how = match &built {
            Ok(Ok(_)) => "Ok".to_string(),
            Ok(Err((kind, msg))) => format!("{kind}: {msg}"),
            Err(_) => "a panic".to_string(),
        };
        return Err(format!(
            "the compile took {:.1?}, past its time limit of {TIME_LIMIT:?} (twice that, with \
             blame, and slack: {:?}) ({how})",
            out.compile_time,
            time_bound()
        ));
    }
    let built = match built {
        Err(p) => return Err(format!("the compile panicked: {}", panic_text(&*p))),
        Ok(Err((kind, msg))) => {
            if msg.trim().is_empty() {
                return Err(format!("a {kind} error with an empty message"));
            }
            out.result = kind;
            out.message = msg;
            return Ok(out);
        }
        Ok(Ok(b)) => b,
    };
    out.result = "Ok".into();
    match catch_unwind(AssertUnwindSafe(|| {
        serve(case, &built, walks, seed, &mut out)
    })) {
        Err(p) => Err(format!(
            "serving the artifact panicked: {}",
            panic_text(&*p)
        )),
        Ok(Err(e)) => Err(e),
        Ok(Ok(())) => Ok(out),
    }
}

/// The text `ids` spell: special tokens by name, EOS left out.
fn decode(vocab: &Vocab, g: &Grammar<'_>, ids: &[u32]) -> Result<String, String> {
    let mut bytes = Vec::new();
    for &t in ids {
        if g.is_eos(t) {
            continue;
        }
        match vocab.tokens.get(t as usize) {
            Some(Token::Text(b)) => bytes.extend_from_slice(b),
            Some(Token::Special(name)) => bytes.extend_from_slice(name.as_bytes()),
            _ => {
                return Err(format!(
                    "the walk took token {t}, which is unused or past the vocabulary"
                ))
            }
        }
    }
    String::from_utf8(bytes).map_err(|e| format!("an accepted output is not UTF-8: {e}"))
}

fn serve(case: &Case, b: &Built, walks: usize, seed: u64, out: &mut Outcome) -> Result<(), String> {
    let art = Artifact::from_bytes(&b.artifact)
        .map_err(|e| format!("the artifact does not load: {e}"))?;
    let g = art.grammar();
    if g.token_count() != b.vocab.len() || g.mask_width() != b.mask_width {
        return Err(format!(
            "the artifact has {} tokens, mask width {}; the vocabulary {} and {}",
            g.token_count(),
            g.mask_width(),
            b.vocab.len(),
            b.mask_width
        ));
    }
    if g.vocab_fingerprint() != &b.vocab.fingerprint() {
        return Err("the artifact's vocabulary fingerprint is not the vocabulary's".into());
    }
    if case.reuse && !case.schema_only {
        let opts = case.options(b.vocab.len())?;
        match Compiler::new(b.vocab.clone()).compile_bytes(&b.set, &opts) {
            Ok(c) if c.artifact != b.artifact => {
                return Err("a Compiler wrote other bytes than compile".into());
            }
            // A time or memory bound may fall either way.
            Err(e) if e.kind() != ErrorKind::Limit => {
                return Err(format!("a Compiler refused what compile accepted: {e}"));
            }
            _ => {}
        }
    }
    let entries: Vec<(String, u32)> = g.entries().map(|(n, s)| (n.to_string(), s)).collect();
    if !case.schema_only && entries.iter().map(|e| &e.0).ne(b.entries.iter()) {
        return Err(format!(
            "the artifact's entries {:?} are not the format's {:?}",
            entries.iter().map(|e| &e.0).collect::<Vec<_>>(),
            b.entries
        ));
    }
    let reader = if case.schema_only {
        None
    } else {
        Some(Reader::new(&g).map_err(|e| format!("no reader: {e}"))?)
    };
    let validators: Vec<Option<Checker>> = b
        .set
        .tools
        .iter()
        .map(|t| {
            if b.relaxed {
                None
            } else {
                Checker::new(&t.parameters)
            }
        })
        .collect();
    let all_bytes = (0..=255u8).all(|x| {
        b.vocab
            .tokens
            .iter()
            .any(|t| matches!(t, Token::Text(v) if v.as_slice() == [x]))
    });
    let mut walker = Walker::new(&g, g.token_count());
    walker.greedy_after = 60;
    let max_dist = walker
        .distances()
        .iter()
        .copied()
        .filter(|&d| d != u32::MAX)
        .max()
        .unwrap_or(0) as usize;
    let mut rng = SplitMix64::new(seed);
    let starts: Vec<(Option<String>, u32)> = if case.schema_only {
        vec![(None, g.start_state())]
    } else {
        entries.iter().map(|(n, s)| (Some(n.clone()), *s)).collect()
    };
    for w in 0..walks {
        let (entry, state) = &starts[rng.below(starts.len() as u64) as usize];
        let Some(need) = g.distance(*state) else {
            return Err(format!(
                "entry {entry:?}: no token sequence completes it, yet it compiled"
            ));
        };
        // Without every byte a byte-greedy walk may circle: a budget
        // bounds it (every mask then leaves a completion in reach).
        let budgeted = !all_bytes || rng.below(3) == 0;
        let (start, max_steps) = if budgeted {
            let n = need + rng.below(24) as u32 + 1;
            let m = match entry {
                Some(e) => g.matcher_at_with_budget(e, n),
                None => g.matcher_with_budget(n),
            }
            .map_err(|e| format!("entry {entry:?}: budget {n} (need {need}) refused: {e}"))?;
            (m, n as usize + 1)
        } else {
            let m = match entry {
                Some(e) => g.matcher_at(e).ok_or("an entry without a matcher")?,
                None => g.matcher(),
            };
            let cap = g.max_tokens().map_or(usize::MAX, |n| n as usize + 1);
            (m, (walker.greedy_after + max_dist + 64).min(cap))
        };
        let ids = walker.walk_from(&mut rng, max_steps, start).map_err(|e| {
            format!(
                "walk {w} from {entry:?} (budgeted {budgeted}): {}; tokens {:?}",
                e.message, e.tokens
            )
        })?;
        out.walks += 1;
        let text = decode(&b.vocab, &g, &ids)?;
        let shown = || format!("walk {w} from {entry:?}: output {text:?}");
        let Some(reader) = &reader else {
            // A schema document: the output is one JSON value.
            let v: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", shown()))?;
            out.calls += 1;
            check_value(&validators[0], &v, out).map_err(|e| format!("{}: {e}", shown()))?;
            continue;
        };
        let calls = match reader.read_tokens(&g, entry.as_deref(), &ids) {
            Ok(calls) => calls,
            Err(e) => return Err(format!("{}: not read back: {e}", shown())),
        };
        for c in &calls {
            out.calls += 1;
            let Some(i) = b.set.tools.iter().position(|t| t.name == c.name) else {
                return Err(format!(
                    "{}: a call of {:?}, which is not a tool",
                    shown(),
                    c.name
                ));
            };
            let args = Value::Object(c.arguments.clone());
            check_value(&validators[i], &args, out)
                .map_err(|e| format!("{}: tool {:?}, arguments {args}: {e}", shown(), c.name))?;
        }
    }
    Ok(())
}

fn check_value(v: &Option<Checker>, value: &Value, out: &mut Outcome) -> Result<(), String> {
    let Some(c) = v else {
        out.unvalidated += 1;
        return Ok(());
    };
    out.validated += 1;
    let errors: Vec<jsonschema::ValidationError> = c.validator.iter_errors(value).take(3).collect();
    if errors.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = errors
        .iter()
        .map(|e| format!("{e} (at {}, schema {})", e.instance_path, e.schema_path))
        .collect();
    Err(format!(
        "accepted, but the schema refuses it: {}",
        errors.join("; ")
    ))
}

// ---------------------------------------------------------- the validator

/// A validator of one schema.
pub struct Checker {
    validator: jsonschema::Validator,
}

impl Checker {
    pub fn new(schema: &Value) -> Option<Checker> {
        Some(Checker {
            validator: validator(schema)?,
        })
    }
}

/// A validator of `schema` as JSON Schema 2019-09 with ECMA-262 patterns
/// and exact decimal `multipleOf`, formats asserted; `None` when the
/// schema is not one it can check exactly (a malformed schema, a `$ref`
/// cycle through applicators alone, which would recurse forever, or a
/// chain of more than 100).
pub fn validator(schema: &Value) -> Option<jsonschema::Validator> {
    if ref_depth(schema)? > 100 {
        return None;
    }
    let s = for_validator(schema, false);
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft201909)
        .should_validate_formats(true)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .with_keyword("multipleOf", exact_multiple)
        .build(&s)
        .ok()
}

/// `schema` as the validator must see it: ECMA's `\s` spelled out in
/// patterns (the jsonschema crate's `\s` lacks most of Unicode's spaces),
/// draft-4 boolean exclusive bounds and `nullable` (OpenAPI) as the
/// compiler reads them, and `prefixItems` as the array form of `items`:
/// the validator reads draft 2019-09, because the jsonschema crate's
/// draft 2020-12 meta-schema check keeps ~1 MB for each new shape of
/// schema it has seen (gigabytes over a fuzz run).
fn for_validator(schema: &Value, is_literal: bool) -> Value {
    let Value::Object(o) = schema else {
        return match schema {
            Value::Array(a) if !is_literal => {
                Value::Array(a.iter().map(|v| for_validator(v, false)).collect())
            }
            v => v.clone(),
        };
    };
    if is_literal {
        return schema.clone();
    }
    let mut out = Map::new();
    for (k, v) in o {
        let v = match (k.as_str(), v) {
            ("enum" | "const" | "default" | "examples" | "required" | "dependentRequired", _) => {
                v.clone()
            }
            ("pattern", Value::String(p)) => Value::String(ecma_to_rust(p)),
            ("patternProperties", Value::Object(m)) => Value::Object(
                m.iter()
                    .map(|(p, s)| (ecma_to_rust(p), for_validator(s, false)))
                    .collect(),
            ),
            ("properties" | "$defs" | "definitions" | "dependentSchemas", Value::Object(m)) => {
                Value::Object(
                    m.iter()
                        .map(|(p, s)| (p.clone(), for_validator(s, false)))
                        .collect(),
                )
            }
            _ => for_validator(v, false),
        };
        out.insert(k.clone(), v);
    }
    for (key, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(x)) = out.get(key).cloned() {
            out.remove(key);
            if x {
                if let Some(b) = out.remove(bound) {
                    out.insert(key.into(), b);
                }
            }
        }
    }
    if out.get("nullable") == Some(&Value::Bool(true)) {
        match out.get_mut("type") {
            Some(Value::String(t)) => {
                let t = t.clone();
                out.insert("type".into(), json!([t, "null"]));
            }
            Some(Value::Array(ts)) => ts.push(json!("null")),
            _ => {}
        }
    }
    // The jsonschema crate panics on a boolean `items` beside
    // `unevaluatedItems` (draft 2019-09): the same as schemas.
    for key in ["items", "additionalItems"] {
        if let Some(Value::Bool(b)) = out.get(key) {
            let v = if *b { json!({}) } else { json!({"not": {}}) };
            out.insert(key.into(), v);
        }
    }
    if let Some(prefix) = out.remove("prefixItems") {
        if !matches!(out.get("items"), Some(Value::Array(_))) {
            if let Some(rest) = out.remove("items") {
                out.insert("additionalItems".into(), rest);
            }
            out.insert("items".into(), prefix);
        }
    }
    Value::Object(out)
}

/// ECMA's whitespace (`\s`), as a class body in Rust regex syntax.
const ECMA_SPACE: &str = "\\t\\n\\x0B\\x0C\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

/// An ECMA-262 pattern in the Rust regex syntax that the jsonschema crate
/// reads, where the two differ in meaning: `\s`/`\S`, surrogate pairs of
/// `\u` escapes, `[]` and `[^]`. The rest passes through.
fn ecma_to_rust(p: &str) -> String {
    let cs: Vec<char> = p.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut in_class = false;
    let hex4 = |i: usize| -> Option<u32> {
        let s: String = cs.get(i..i + 4)?.iter().collect();
        u32::from_str_radix(&s, 16)
            .ok()
            .filter(|_| s.chars().all(|c| c.is_ascii_hexdigit()))
    };
    while i < cs.len() {
        let c = cs[i];
        if c == '\\' && i + 1 < cs.len() {
            let d = cs[i + 1];
            match d {
                's' if in_class => out += ECMA_SPACE,
                's' => out += &format!("[{ECMA_SPACE}]"),
                'S' => out += &format!("[^{ECMA_SPACE}]"),
                'b' if in_class => out += "\\x08",
                '0' => out += "\\x00",
                'u' => {
                    if let Some(hi) = hex4(i + 2) {
                        if (0xD800..0xDC00).contains(&hi)
                            && cs.get(i + 6) == Some(&'\\')
                            && cs.get(i + 7) == Some(&'u')
                        {
                            if let Some(lo) = hex4(i + 8).filter(|lo| (0xDC00..0xE000).contains(lo))
                            {
                                let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                out += &format!("\\x{{{c:X}}}");
                                i += 12;
                                continue;
                            }
                        }
                        out += &format!("\\x{{{hi:X}}}");
                        i += 6;
                        continue;
                    }
                    out.push('\\');
                    out.push(d);
                }
                _ => {
                    out.push('\\');
                    out.push(d);
                }
            }
            i += 2;
            continue;
        }
        if !in_class && c == '[' {
            if cs.get(i + 1) == Some(&']') {
                out += "[^\\x{0}-\\x{10FFFF}]";
                i += 2;
                continue;
            }
            if cs.get(i + 1) == Some(&'^') && cs.get(i + 2) == Some(&']') {
                out += "(?s:.)";
                i += 3;
                continue;
            }
            in_class = true;
            out.push(c);
            i += 1;
            // A `]` or `^]` first in a class: ECMA ends the class there,
            // handled above; anything else is ordinary.
            continue;
        }
        if in_class && c == ']' {
            in_class = false;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// A decimal number's text as (mantissa, exponent, negative): value =
/// ±mantissa·10^exponent. `None` if the mantissa does not fit.
fn decimal(s: &str) -> Option<(u128, i64, bool)> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (num, exp) = match s.find(['e', 'E']) {
        Some(i) => (
            &s[..i],
            s[i + 1..].trim_start_matches('+').parse::<i64>().ok()?,
        ),
        None => (s, 0),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let digits = format!("{int}{frac}");
    let digits = digits.trim_start_matches('0');
    let m: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    Some((m, exp - frac.len() as i64, neg))
}

// The jsonschema crate's factory signature.
#[allow(clippy::result_large_err)]
fn exact_multiple<'a>(
    _: &'a Map<String, Value>,
    v: &'a Value,
    loc: jsonschema::paths::Location,
) -> Result<Box<dyn jsonschema::Keyword>, jsonschema::ValidationError<'a>> {
    match v.as_number().and_then(|n| decimal(&n.to_string())) {
        Some(m) if m.0 != 0 && !m.2 => Ok(Box::new(ExactMultiple(m, loc))),
        _ => Err(jsonschema::ValidationError::custom(
            loc.clone(),
            loc,
            v,
            "multipleOf must be a positive number",
        )),
    }
}

/// `multipleOf`, exactly on the decimal values (the jsonschema crate
/// divides binary fractions, so 0.3 is no multiple of 0.1 there).
struct ExactMultiple((u128, i64, bool), jsonschema::paths::Location);

impl ExactMultiple {
    fn holds(&self, x: &serde_json::Number) -> bool {
        let Some((a, ea, _)) = decimal(&x.to_string()) else {
            return false;
        };
        let (b, eb, _) = self.0;
        if a == 0 {
            return true;
        }
        // a·10^ea / (b·10^eb) is an integer.
        let k = ea - eb;
        if k >= 0 {
            // b | a·10^k: a·10^k mod b, by repeated multiplication.
            let mut r = a % b;
            let mut t = 10u128 % b;
            let mut e = k as u64;
            while e > 0 {
                if e & 1 == 1 {
                    r = mulmod(r, t, b);
                }
                t = mulmod(t, t, b);
                e >>= 1;
            }
            r == 0
        } else {
            let Some(d) = 10u128
                .checked_pow((-k) as u32)
                .and_then(|p| p.checked_mul(b))
            else {
                return false;
            };
            a % d == 0
        }
    }
}

fn mulmod(a: u128, b: u128, m: u128) -> u128 {
    match a.checked_mul(b) {
        Some(p) => p % m,
        None => {
            // Shift-and-add (m is at most 39 digits).
            let (mut r, mut a, mut b) = (0u128, a % m, b);
            while b > 0 {
                if b & 1 == 1 {
                    r = (r + a) % m;
                }
                a = (a << 1) % m;
                b >>= 1;
            }
            r
        }
    }
}

impl jsonschema::Keyword for ExactMultiple {
    fn validate<'i>(
        &self,
        instance: &'i Value,
        location: &jsonschema::paths::LazyLocation,
    ) -> Result<(), jsonschema::ValidationError<'i>> {
        if self.is_valid(instance) {
            Ok(())
        } else {
            Err(jsonschema::ValidationError::custom(
                self.1.clone(),
                location.into(),
                instance,
                format!("{instance} is not a multiple of {}", self.0 .0),
            ))
        }
    }

    fn is_valid(&self, instance: &Value) -> bool {
        match instance {
            Value::Number(n) => self.holds(n),
            _ => true,
        }
    }
}

/// The longest chain of `$ref`s and applicators (`allOf`, `anyOf`,
/// `oneOf`, `not`, `if`/`then`/`else`) from any node of `schema` that
/// meets no value keyword; `None` for a cycle of them.
fn ref_depth(schema: &Value) -> Option<usize> {
    fn walk(
        root: &Value,
        at: &str,
        node: &Value,
        visiting: &mut BTreeSet<String>,
        memo: &mut HashMap<String, Option<usize>>,
        steps: &mut usize,
    ) -> Option<usize> {
        *steps += 1;
        if *steps > 200_000 {
            return None;
        }
        // Deep enough to refuse; stop before this recursion gets costly.
        if visiting.len() > 150 {
            return Some(1000);
        }
        if let Some(&d) = memo.get(at) {
            return d;
        }
        if !visiting.insert(at.to_string()) {
            return None;
        }
        let mut best = 0usize;
        let mut ok = true;
        if let Value::Object(o) = node {
            let mut next: Vec<(String, &Value)> = Vec::new();
            for key in ["allOf", "anyOf", "oneOf"] {
                if let Some(Value::Array(a)) = o.get(key) {
                    for (i, s) in a.iter().enumerate() {
                        next.push((format!("{at}/{key}/{i}"), s));
                    }
                }
            }
            for key in ["not", "if", "then", "else"] {
                if let Some(s) = o.get(key) {
                    next.push((format!("{at}/{key}"), s));
                }
            }
            if let Some(Value::String(r)) = o.get("$ref") {
                let p = percent_decode(r.strip_prefix('#').unwrap_or("\u{0}"));
                if let Some(t) = root.pointer(&p) {
                    next.push((p, t));
                }
            }
            for (p, s) in next {
                match walk(root, &p, s, visiting, memo, steps) {
                    Some(d) => best = best.max(d + 1),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
        }
        visiting.remove(at);
        let r = ok.then_some(best);
        memo.insert(at.to_string(), r);
        r
    }
    // Every schema node may start a chain: walk from each one reachable
    // through the keywords that hold schemas.
    fn nodes<'v>(at: String, v: &'v Value, out: &mut Vec<(String, &'v Value)>) {
        let Value::Object(o) = v else { return };
        out.push((at.clone(), v));
        for (k, c) in o {
            let here = format!("{at}/{}", pointer_escape(k));
            match (k.as_str(), c) {
                ("enum" | "const" | "default" | "examples", _) => {}
                (
                    "properties" | "$defs" | "definitions" | "patternProperties"
                    | "dependentSchemas",
                    Value::Object(m),
                ) => {
                    for (name, s) in m {
                        nodes(format!("{here}/{}", pointer_escape(name)), s, out);
                    }
                }
                (_, Value::Array(a)) => {
                    for (i, s) in a.iter().enumerate() {
                        nodes(format!("{here}/{i}"), s, out);
                    }
                }
                (_, Value::Object(_)) => nodes(here, c, out),
                _ => {}
            }
        }
    }
    let mut all = Vec::new();
    nodes(String::new(), schema, &mut all);
    let mut memo = HashMap::new();
    let mut steps = 0;
    let mut deepest = 0;
    for (at, node) in all {
        deepest = deepest.max(walk(
            schema,
            &at,
            node,
            &mut BTreeSet::new(),
            &mut memo,
            &mut steps,
        )?);
    }
    Some(deepest)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 3 <= b.len() {
            if let Ok(x) =
                u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16)
            {
                out.push(x);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A case from fuzzer bytes, and the seed its walks use.
pub fn case_from_bytes(data: &[u8]) -> (Case, u64) {
    let seed = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    let mut src = Bytes::new(data);
    (Gen::new(&mut src).case(), seed)
}

/// A case from a seed (the stable fuzzer).
pub fn case_from_seed(seed: u64) -> Case {
    let mut src = Seeded(SplitMix64::new(seed));
    Gen::new(&mut src).case()
}
