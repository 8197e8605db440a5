//! How values are spelled: JSON, or another argument encoding of a call
//! format (Python literals, Gemma 4's quoting, XML-style parameters with raw
//! string values). Every encoding writes the same values under the same
//! schema: only the spelling of strings, keys, `null`/`true`/`false` and
//! the separators changes.
//!
//! A string's constraints (pattern, length, format, enum) are built once,
//! over canonical JSON content, and carried over to another spelling by
//! [`respell`]: the JSON escapes are undone and each character is written
//! as the target spells it. Undoing an escape is exact because canonical
//! JSON content spells each character one way, so the constraints hold
//! unchanged in every encoding.

use crate::automaton::dfa::{Dfa, DEAD};
use crate::automaton::expr::{self, Automaton, Expr};
use crate::automaton::nfa;
use crate::error::Limit;

use super::build::{nothing, INTERSECT_STATES};

/// The spelling of values in one argument encoding.
#[derive(Debug, Clone)]
pub(crate) enum Spelling {
    /// JSON.
    Json,
    /// JSON with no line break between its tokens (`args_inline`), for
    /// parsers that find a call with a regular expression whose `.` stops
    /// at a line break (vLLM's DeepSeek-V3 and V3.1 parsers).
    JsonInline,
    /// Python literals; the arguments themselves are keyword arguments.
    Python,
    /// Gemma 4: bare keys, strings between `quote`s.
    Gemma {
        /// The quote (a special token's marker, or its text).
        quote: Expr,
        /// Its text, which no string may contain.
        quote_text: String,
    },
    /// XML-style parameters: each top-level property as
    /// `open key mid value close`; a string value there is raw text that
    /// contains none of `stops`; every other value is JSON.
    Xml {
        /// Before the key.
        open: Expr,
        /// Between the key and a raw string.
        mid_string: Expr,
        /// Between the key and a JSON value.
        mid_other: Expr,
        /// After the value.
        close: Expr,
        /// What a raw string never contains: the tags at which parsers
        /// end a value.
        stops: Vec<String>,
    },
}

/// How a character is written inside a string of some spelling: `None` as
/// itself, `Some(bytes)` escaped.
type Escape = fn(u32) -> Option<Vec<u8>>;

fn raw(_: u32) -> Option<Vec<u8>> {
    None
}

/// Python's escapes inside a string quoted with `q`.
fn python_escape(c: u32, q: u8) -> Option<Vec<u8>> {
    Some(match c {
        0x5C => b"\\\\".to_vec(),
        0x0A => b"\\n".to_vec(),
        0x0D => b"\\r".to_vec(),
        0x09 => b"\\t".to_vec(),
        c if c < 0x20 || c == 0x7F => format!("\\x{c:02x}").into_bytes(),
        c if c == q as u32 => vec![b'\\', q],
        _ => return None,
    })
}

fn python_single(c: u32) -> Option<Vec<u8>> {
    python_escape(c, b'\'')
}

fn python_double(c: u32) -> Option<Vec<u8>> {
    python_escape(c, b'"')
}

impl Spelling {
    /// Whether the top-level arguments have a form of their own (keyword
    /// arguments, XML parameters) rather than the nested object form.
    pub fn top_form(&self) -> bool {
        matches!(self, Spelling::Python | Spelling::Xml { .. })
    }

    /// Whether a value at `depth` (1: a top-level property) is spelled as
    /// JSON.
    fn json_at(&self, depth: usize) -> bool {
        match self {
            Spelling::Json | Spelling::JsonInline => true,
            Spelling::Xml { .. } => depth != 1,
            _ => false,
        }
    }

    /// `null`. Gemma 4's chat template prints a null as Python's `None`
    /// and vLLM's parser reads `null` and `None` alike, so both are
    /// allowed there.
    pub fn null(&self) -> Expr {
        match self {
            Spelling::Python => Expr::lit("None"),
            Spelling::Gemma { .. } => Expr::alt([Expr::lit("null"), Expr::lit("None")]),
            _ => Expr::lit("null"),
        }
    }

    /// The numbers of `json` (JSON numbers) in this spelling. Gemma's
    /// readers take a number without a `.` for an integer, so `1e5` would
    /// be read as a string: exponents are left out there (a subset).
    pub fn numbers(&self, json: Expr) -> Result<Expr, Limit> {
        match self {
            Spelling::Gemma { .. } => {
                let digits = || Expr::repeat(Expr::ByteClass(vec![(b'0', b'9')]), 1, None);
                let plain = Expr::seq([
                    Expr::opt(Expr::lit("-")),
                    digits(),
                    Expr::opt(Expr::seq([Expr::lit("."), digits()])),
                ]);
                expr::intersect(&[json, plain], INTERSECT_STATES)
            }
            _ => Ok(json),
        }
    }

    /// Puts an object's member names in the order this spelling writes
    /// them: Gemma 4's chat template writes keys sorted (Jinja's
    /// `dictsort`, ignoring case) at every level, so its models do too;
    /// elsewhere the schema's order stays.
    pub fn order_keys(&self, names: &mut [String]) {
        if let Spelling::Gemma { .. } = self {
            names.sort_by_key(|n| n.to_lowercase());
        }
    }

    /// `true` or `false`.
    pub fn bools(&self) -> Expr {
        match self {
            Spelling::Python => Expr::alt([Expr::lit("True"), Expr::lit("False")]),
            _ => Expr::alt([Expr::lit("true"), Expr::lit("false")]),
        }
    }

    /// One boolean.
    pub fn boolean(&self, b: bool) -> Expr {
        Expr::lit(match (self, b) {
            (Spelling::Python, true) => "True",
            (Spelling::Python, false) => "False",
            (_, true) => "true",
            (_, false) => "false",
        })
    }

    /// The strings of `json_quoted` (a language of quoted, canonical JSON
    /// strings) in this spelling, for a value at `depth`.
    pub fn strings(&self, json_quoted: Expr, depth: usize) -> Result<Expr, Limit> {
        if self.json_at(depth) {
            return Ok(json_quoted);
        }
        match self {
            Spelling::Python => {
                let single = respell(&json_quoted, python_single)?;
                let double = respell(&json_quoted, python_double)?;
                Ok(Expr::alt([
                    Expr::seq([Expr::lit("'"), single, Expr::lit("'")]),
                    Expr::seq([Expr::lit("\""), double, Expr::lit("\"")]),
                ]))
            }
            Spelling::Gemma { quote, quote_text } => {
                let content = without(
                    respell(&json_quoted, raw)?,
                    std::slice::from_ref(quote_text),
                )?;
                Ok(Expr::seq([quote.clone(), content, quote.clone()]))
            }
            Spelling::Xml { stops, .. } => {
                let content = without(respell(&json_quoted, raw)?, stops)?;
                expr::intersect(&[content, trimmed()], INTERSECT_STATES)
            }
            Spelling::Json | Spelling::JsonInline => Ok(json_quoted),
        }
    }

    /// The one string `s`, for a value at `depth`.
    pub fn string(&self, s: &str, depth: usize) -> Expr {
        let json = || Expr::Bytes(serde_json::to_string(s).unwrap_or_default().into_bytes());
        if self.json_at(depth) {
            return json();
        }
        match self {
            Spelling::Python => Expr::alt([python_literal(s, b'\''), python_literal(s, b'"')]),
            Spelling::Gemma { quote, quote_text } if !s.contains(quote_text.as_str()) => {
                Expr::seq([quote.clone(), Expr::lit(s), quote.clone()])
            }
            Spelling::Xml { stops, .. }
                if !stops.iter().any(|t| s.contains(t.as_str()))
                    && !s.starts_with(is_py_space)
                    && !s.ends_with(is_py_space) =>
            {
                Expr::lit(s)
            }
            Spelling::Gemma { .. } | Spelling::Xml { .. } => nothing(),
            Spelling::Json | Spelling::JsonInline => json(),
        }
    }

    /// The key `name` of a member of a nested object.
    pub fn key(&self, name: &str) -> Expr {
        match self {
            Spelling::Gemma { .. } if !self.writes_key(name) => nothing(),
            Spelling::Gemma { .. } => Expr::lit(name),
            Spelling::Python => self.string(name, 0),
            _ => Expr::Bytes(serde_json::to_string(name).unwrap_or_default().into_bytes()),
        }
    }

    /// A key of a nested object from `json_quoted`, a language of quoted
    /// JSON strings (the names of additional properties).
    pub fn keys(&self, json_quoted: Expr) -> Result<Expr, Limit> {
        match self {
            Spelling::Gemma { quote_text, .. } => {
                // The keys `writes_key` allows.
                let parts = [
                    respell(&json_quoted, raw)?,
                    without_key_stops(),
                    trimmed(),
                    expr::text_except(std::slice::from_ref(quote_text)),
                ];
                expr::intersect(&parts, INTERSECT_STATES)
            }
            Spelling::Python => self.strings(json_quoted, 0),
            _ => Ok(json_quoted),
        }
    }

    /// Whether `name` can be written as a key of this spelling and read
    /// back as itself: a Gemma 4 key is bare text, which vLLM's parser
    /// (`_parse_gemma4_args`) takes up to the first `:`, after skipping
    /// spaces and commas, stripped, inside braces and brackets it counts
    /// to find where an object ends.
    pub fn writes_key(&self, name: &str) -> bool {
        match self {
            Spelling::Gemma { quote_text, .. } => {
                !name.contains(GEMMA_KEY_STOPS)
                    && !name.starts_with(is_py_space)
                    && !name.ends_with(is_py_space)
                    && (quote_text.is_empty() || !name.contains(quote_text.as_str()))
            }
            _ => true,
        }
    }

    /// Whether keys and separators take whitespace around them.
    pub fn spaced(&self) -> bool {
        !matches!(self, Spelling::Gemma { .. })
    }
}

/// Python's whitespace (`str.strip`), which XML-style parsers strip from
/// both ends of a raw value.
const PY_SPACE: &[(char, char)] = &[
    ('\t', '\r'),
    ('\u{1c}', ' '),
    ('\u{85}', '\u{85}'),
    ('\u{a0}', '\u{a0}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{2000}', '\u{200a}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202f}', '\u{202f}'),
    ('\u{205f}', '\u{205f}'),
    ('\u{3000}', '\u{3000}'),
];

fn is_py_space(c: char) -> bool {
    PY_SPACE.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// What a bare Gemma 4 key never contains (see [`Spelling::writes_key`]).
const GEMMA_KEY_STOPS: [char; 6] = [',', ':', '[', ']', '{', '}'];

/// Text without [`GEMMA_KEY_STOPS`].
fn without_key_stops() -> Expr {
    let mut allowed: Vec<(char, char)> = Vec::new();
    let mut next = '\0';
    for c in GEMMA_KEY_STOPS {
        if next < c {
            allowed.push((next, char::from_u32(c as u32 - 1).unwrap_or(next)));
        }
        next = char::from_u32(c as u32 + 1).unwrap_or(char::MAX);
    }
    allowed.push((next, char::MAX));
    Expr::star(Expr::CharClass(allowed))
}

/// Text that neither begins nor ends with whitespace: the GLM, MiniMax
/// and DSML parsers strip a raw value (vLLM's glm4_moe and minimax_m2,
/// SGLang's deepseekv32), so a value with whitespace at either end would
/// be read changed; such values are left out (a subset).
fn trimmed() -> Expr {
    let mut inner: Vec<(char, char)> = Vec::new();
    let mut next = '\0';
    for &(lo, hi) in PY_SPACE {
        if next < lo {
            inner.push((next, char::from_u32(lo as u32 - 1).unwrap_or(next)));
        }
        next = char::from_u32(hi as u32 + 1).unwrap_or(char::MAX);
    }
    inner.push((next, char::MAX));
    let edge = || Expr::CharClass(inner.clone());
    let any = Expr::star(Expr::CharClass(vec![('\0', char::MAX)]));
    Expr::opt(Expr::seq([edge(), Expr::opt(Expr::seq([any, edge()]))]))
}

/// The Python literal `'...'` (or `"..."`) of `s`.
fn python_literal(s: &str, q: u8) -> Expr {
    let mut out = vec![q];
    for c in s.chars() {
        match python_escape(c as u32, q) {
            Some(e) => out.extend(e),
            None => {
                let mut buf = [0; 4];
                out.extend(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(q);
    Expr::Bytes(out)
}

/// `e` without the strings that contain one of `texts`.
fn without(e: Expr, texts: &[String]) -> Result<Expr, Limit> {
    expr::intersect(&[e, expr::text_except(texts)], INTERSECT_STATES)
}

/// The content of the strings of `json_quoted` (quoted, canonical JSON
/// strings), each character written as `escape` says.
///
/// On the DFA of `json_quoted`: the content starts after the opening quote
/// and accepts where a closing quote would; a byte that is itself in JSON
/// content is kept (or replaced by its escape in the target); a JSON escape
/// sequence is read as one move on the character it stands for.
pub(crate) fn respell(json_quoted: &Expr, escape: Escape) -> Result<Expr, Limit> {
    let n = nfa::build(json_quoted, INTERSECT_STATES * 4)?;
    let d = Dfa::determinize(&n, INTERSECT_STATES)?;
    let start = d.next(d.start, b'"');
    if start == DEAD {
        return Ok(nothing());
    }
    let states = d.n_states();
    let mut accepting: Vec<bool> = (0..states as u32)
        .map(|s| s != DEAD && d.accept[d.next(s, b'"') as usize])
        .collect();
    let mut edges: Vec<Vec<(u8, u8, u32)>> = vec![Vec::new(); states];
    let mut chain = |from: u32, bytes: &[u8], to: u32, edges: &mut Vec<Vec<(u8, u8, u32)>>| {
        let mut s = from;
        for (k, &b) in bytes.iter().enumerate() {
            let t = if k + 1 == bytes.len() {
                to
            } else {
                edges.push(Vec::new());
                accepting.push(false);
                (edges.len() - 1) as u32
            };
            edges[s as usize].push((b, b, t));
            s = t;
        }
    };
    for q in 0..states as u32 {
        if q == DEAD {
            continue;
        }
        for b in 0x20u8..=0xFF {
            let t = d.next(q, b);
            if t == DEAD || b == b'"' || b == b'\\' {
                continue;
            }
            match escape(b as u32).filter(|_| b < 0x80) {
                Some(e) => chain(q, &e, t, &mut edges),
                None => edges[q as usize].push((b, b, t)),
            }
        }
        // The characters JSON escapes.
        for c in (0u32..0x20).chain([0x22, 0x5C]) {
            let json = super::super::value::json_escape_of(c);
            let t = d.walk(q, &json);
            if t == DEAD {
                continue;
            }
            match escape(c) {
                Some(e) => chain(q, &e, t, &mut edges),
                None => edges[q as usize].push((c as u8, c as u8, t)),
            }
        }
    }
    for out in &mut edges {
        coalesce(out);
    }
    Ok(Expr::Automaton(std::rc::Rc::new(Automaton::trimmed(
        start, accepting, edges,
    ))))
}

/// Merges moves on adjacent bytes to one target into ranges.
fn coalesce(out: &mut Vec<(u8, u8, u32)>) {
    out.sort_unstable_by_key(|&(lo, _, t)| (t, lo));
    let mut merged: Vec<(u8, u8, u32)> = Vec::with_capacity(out.len());
    for &(lo, hi, t) in out.iter() {
        match merged.last_mut() {
            Some(m) if m.2 == t && m.1 as u16 + 1 >= lo as u16 => m.1 = m.1.max(hi),
            _ => merged.push((lo, hi, t)),
        }
    }
    *out = merged;
}
