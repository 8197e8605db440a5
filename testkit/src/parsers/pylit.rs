//! Python literals as `ast.literal_eval` reads them, converted to JSON the
//! way `json.dumps` writes the result: the value reader behind the pythonic
//! call parser (SGLang's `PythonicDetector._get_parameter_value`) and the
//! `ast.literal_eval` fallbacks of the XML-style parsers (vLLM's
//! `Qwen3CoderToolParser._convert_param_value`, `Glm4MoeModelToolParser`'s
//! `_deserialize`).
//!
//! Supported: strings in `'...'` or `"..."` (not triple-quoted, no
//! prefixes) with Python's escapes (`\\ \' \" \n \r \t \a \b \f \v`, octal
//! `\ooo`, `\xhh`, `\uXXXX`, `\UXXXXXXXX`; an unknown escape keeps its
//! backslash, as Python does), integers (underscores between digits),
//! floats, a leading `-` or `+` on a number, `True`/`False`/`None`, lists,
//! tuples (as arrays, as `json.dumps` writes them), dicts with string
//! keys. Adjacent string literals are not joined (a model writing them is
//! not what any grammar here produces).

use serde_json::{Map, Number, Value};

/// A reader over a Python expression's text.
pub struct PyReader<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> PyReader<'a> {
    /// A reader at the start of `s`.
    pub fn new(s: &'a str) -> Self {
        PyReader { s, pos: 0 }
    }

    /// What is left.
    pub fn rest(&self) -> &'a str {
        &self.s[self.pos..]
    }

    /// The byte offset reached.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Skips Python's insignificant whitespace inside brackets.
    pub fn skip_ws(&mut self) {
        let r = self.rest();
        let n = r.len() - r.trim_start_matches([' ', '\t', '\n', '\r']).len();
        self.pos += n;
    }

    /// Consumes `lit` if the text goes on with it.
    pub fn eat(&mut self, lit: &str) -> bool {
        if self.rest().starts_with(lit) {
            self.pos += lit.len();
            true
        } else {
            false
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        let near: String = self.rest().chars().take(30).collect();
        Err(format!("Python literal: {what} at {near:?}"))
    }

    /// An identifier (`[A-Za-z_][A-Za-z0-9_]*`, ASCII as the pythonic
    /// detectors' regexes read names).
    pub fn ident(&mut self) -> Option<&'a str> {
        let r = self.rest();
        let b = r.as_bytes();
        if b.is_empty() || !(b[0].is_ascii_alphabetic() || b[0] == b'_') {
            return None;
        }
        let n = b
            .iter()
            .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
            .count();
        self.pos += n;
        Some(&r[..n])
    }

    /// One literal value, converted to JSON.
    pub fn value(&mut self) -> Result<Value, String> {
        self.skip_ws();
        let r = self.rest();
        let Some(c) = r.chars().next() else {
            return self.err("expected a value, found the end");
        };
        match c {
            '\'' | '"' => self.string().map(Value::String),
            '[' => {
                self.pos += 1;
                self.seq(']').map(Value::Array)
            }
            '(' => {
                self.pos += 1;
                // `(x)` is x itself; `(x,)` and `()` are tuples.
                self.skip_ws();
                if self.eat(")") {
                    return Ok(Value::Array(vec![]));
                }
                let first = self.value()?;
                self.skip_ws();
                if self.eat(")") {
                    return Ok(first);
                }
                if !self.eat(",") {
                    return self.err("expected ',' or ')'");
                }
                let mut rest = self.seq(')')?;
                rest.insert(0, first);
                Ok(Value::Array(rest))
            }
            '{' => {
                self.pos += 1;
                self.dict()
            }
            '-' | '+' => {
                self.pos += 1;
                self.skip_ws();
                let v = self.value()?;
                match (&v, c) {
                    (Value::Number(_), '+') => Ok(v),
                    (Value::Number(n), _) => negate(n),
                    _ => self.err("a sign before a non-number"),
                }
            }
            c if c.is_ascii_digit() || c == '.' => self.number(),
            _ => match self.ident() {
                Some("True") => Ok(Value::Bool(true)),
                Some("False") => Ok(Value::Bool(false)),
                Some("None") => Ok(Value::Null),
                Some(other) => Err(format!(
                    "Python literal: the name {other:?} is not a literal"
                )),
                None => self.err("expected a value"),
            },
        }
    }

    /// Values separated by `,` (a trailing one allowed) up to `close`
    /// (consumed); the opening bracket is already consumed.
    fn seq(&mut self, close: char) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        let close_s = close.to_string();
        loop {
            self.skip_ws();
            if self.eat(&close_s) {
                return Ok(out);
            }
            out.push(self.value()?);
            self.skip_ws();
            if self.eat(&close_s) {
                return Ok(out);
            }
            if !self.eat(",") {
                return self.err(&format!("expected ',' or {close:?}"));
            }
        }
    }

    fn dict(&mut self) -> Result<Value, String> {
        let mut out = Map::new();
        loop {
            self.skip_ws();
            if self.eat("}") {
                return Ok(Value::Object(out));
            }
            let key = match self.value()? {
                Value::String(s) => s,
                // json.dumps turns other scalar keys into strings.
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_string(),
                _ => return self.err("an unhashable dict key"),
            };
            self.skip_ws();
            if !self.eat(":") {
                return self.err("expected ':'");
            }
            let v = self.value()?;
            out.insert(key, v);
            self.skip_ws();
            if self.eat("}") {
                return Ok(Value::Object(out));
            }
            if !self.eat(",") {
                return self.err("expected ',' or '}'");
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let r = self.rest();
        let n = r
            .bytes()
            .enumerate()
            .take_while(|&(i, c)| {
                c.is_ascii_alphanumeric()
                    || c == b'_'
                    || c == b'.'
                    || ((c == b'+' || c == b'-')
                        && i > 0
                        && matches!(r.as_bytes()[i - 1], b'e' | b'E'))
            })
            .count();
        let text = &r[..n];
        self.pos += n;
        py_number(text).ok_or_else(|| format!("Python literal: bad number {text:?}"))
    }

    /// A string literal (the reader is at its quote).
    pub fn string(&mut self) -> Result<String, String> {
        let r = self.rest();
        let q = r.chars().next().filter(|c| *c == '\'' || *c == '"');
        let Some(q) = q else {
            return self.err("expected a string");
        };
        if r.starts_with(&format!("{q}{q}{q}")) {
            return self.err("triple-quoted strings are not read here");
        }
        let mut out = String::new();
        let mut it = r[1..].char_indices();
        while let Some((i, c)) = it.next() {
            match c {
                c if c == q => {
                    self.pos += 1 + i + 1;
                    return Ok(out);
                }
                '\n' | '\r' => return self.err("a line break inside a string"),
                '\\' => {
                    let Some((_, e)) = it.next() else { break };
                    match e {
                        '\n' => {}
                        '\\' => out.push('\\'),
                        '\'' => out.push('\''),
                        '"' => out.push('"'),
                        'n' => out.push('\n'),
                        'r' => out.push('\r'),
                        't' => out.push('\t'),
                        'a' => out.push('\x07'),
                        'b' => out.push('\x08'),
                        'f' => out.push('\x0c'),
                        'v' => out.push('\x0b'),
                        '0'..='7' => {
                            let mut v = e.to_digit(8).unwrap();
                            for _ in 0..2 {
                                let mut peek = it.clone();
                                match peek.next() {
                                    Some((_, d)) if d.is_digit(8) => {
                                        v = v * 8 + d.to_digit(8).unwrap();
                                        it = peek;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(char::from_u32(v).unwrap());
                        }
                        'x' | 'u' | 'U' => {
                            let len = match e {
                                'x' => 2,
                                'u' => 4,
                                _ => 8,
                            };
                            let mut v = 0u32;
                            for _ in 0..len {
                                match it.next().and_then(|(_, d)| d.to_digit(16)) {
                                    Some(d) => v = v * 16 + d,
                                    None => return self.err("a truncated \\x/\\u escape"),
                                }
                            }
                            match char::from_u32(v) {
                                Some(ch) => out.push(ch),
                                // A lone surrogate: Python keeps it, JSON
                                // (UTF-8) cannot carry it.
                                None => return self.err("an escape of a surrogate"),
                            }
                        }
                        other => {
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => out.push(c),
            }
        }
        self.err("an unterminated string")
    }
}

/// `-n` as JSON.
fn negate(n: &Number) -> Result<Value, String> {
    if let Some(i) = n.as_i64() {
        if i == 0 {
            return Ok(Value::from(0));
        }
        return Ok(Value::from(-i));
    }
    if let Some(u) = n.as_u64() {
        if u == 1u64 << 63 {
            return Ok(Value::from(i64::MIN));
        }
    }
    let f = n.as_f64().ok_or("a number out of range")?;
    Number::from_f64(-f)
        .map(Value::Number)
        .ok_or_else(|| "a number out of range".into())
}

/// A Python int or float literal (`1_000`, `0x1f`, `1e5`, `.5`, `5.`) as
/// JSON: ints exact when they fit 64 bits, else as doubles; a float that
/// overflows to infinity is `None` (json.dumps would write `Infinity`,
/// which no JSON parser reads).
pub fn py_number(text: &str) -> Option<Value> {
    if text.is_empty() || text.starts_with('_') || text.ends_with('_') || text.contains("__") {
        return None;
    }
    let t = text.replace('_', "");
    let lower = t.to_ascii_lowercase();
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(d) = lower.strip_prefix(prefix) {
            return u64::from_str_radix(d, radix).ok().map(Value::from);
        }
    }
    let is_int = t.bytes().all(|c| c.is_ascii_digit());
    if is_int {
        // Python 3 refuses leading zeros in a non-zero int literal.
        if t.len() > 1 && t.starts_with('0') && t.bytes().any(|c| c != b'0') {
            return None;
        }
        return serde_json::from_str::<Value>(t.trim_start_matches('0'))
            .ok()
            .or_else(|| Some(Value::from(0)))
            .filter(|v| v.is_number());
    }
    if !t
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    let f: f64 = t.parse().ok()?;
    Number::from_f64(f).map(Value::Number)
}

/// `ast.literal_eval(text)` as JSON: one literal, surrounding whitespace
/// allowed, nothing else.
pub fn literal_eval(text: &str) -> Result<Value, String> {
    let mut r = PyReader::new(text);
    let v = r.value()?;
    r.skip_ws();
    if !r.rest().is_empty() {
        return r.err("text after the literal");
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literals() {
        assert_eq!(
            literal_eval(r#"{'a': [1, -2.5, True, None], "b": 'x\'y\n\x41é'}"#).unwrap(),
            json!({"a": [1, -2.5, true, null], "b": "x'y\nAé"})
        );
        assert_eq!(literal_eval("(1, 2)").unwrap(), json!([1, 2]));
        assert_eq!(literal_eval("(1)").unwrap(), json!(1));
        assert_eq!(literal_eval("1_000").unwrap(), json!(1000));
        assert_eq!(literal_eval("-0").unwrap(), json!(0));
        assert_eq!(literal_eval("1e3").unwrap(), json!(1000.0));
        assert_eq!(literal_eval(r"'\d'").unwrap(), json!("\\d"));
        assert!(literal_eval("01").is_err());
        assert!(literal_eval("1e999").is_err());
        assert!(literal_eval("true").is_err());
        assert!(literal_eval("[1,]x").is_err());
        assert!(literal_eval("'a").is_err());
    }
}
