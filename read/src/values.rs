//! Values in each argument encoding, read into JSON: a JSON value is
//! delimited by scanning and parsed by serde_json; Python literals and
//! Gemma 4 values are read by small recursive readers. Each reader takes
//! the bytes and a start and returns the value and where it ends, or
//! `None` when no value of its kind starts there.

use serde_json::{Map, Value};

/// Nesting deeper than this is refused (the compiler's own bound on free
/// values is far below it).
const MAX_DEPTH: usize = 128;

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_ws(s[i]) {
        i += 1;
    }
    i
}

/// The end of the JSON string starting at `i` (its opening quote).
fn json_string_end(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The end of the number starting at `i`.
fn number_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    while j < s.len() && matches!(s[j], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
        j += 1;
    }
    (j > i).then_some(j)
}

/// The end of the JSON value starting at `i` (no leading whitespace),
/// found by scanning; the value is not checked.
pub fn json_end(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i)? {
        b'"' => json_string_end(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < s.len() {
                match s[j] {
                    b'"' => {
                        j = json_string_end(s, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        b't' if s[i..].starts_with(b"true") => Some(i + 4),
        b'f' if s[i..].starts_with(b"false") => Some(i + 5),
        b'n' if s[i..].starts_with(b"null") => Some(i + 4),
        b'-' | b'0'..=b'9' => number_end(s, i),
        _ => None,
    }
}

/// The JSON value starting at `i` and its end.
pub fn json_value(s: &[u8], i: usize) -> Option<(Value, usize)> {
    let end = json_end(s, i)?;
    let v = serde_json::from_slice(&s[i..end]).ok()?;
    Some((v, end))
}

/// A JSON number from its text (JSON or Python spelling of a finite
/// number).
fn number(text: &[u8]) -> Option<Value> {
    let v: Value = serde_json::from_slice(text).ok()?;
    v.is_number().then_some(v)
}

/// Reads Python literals (the `args_python` encoding).
pub struct Python<'a> {
    s: &'a [u8],
}

impl<'a> Python<'a> {
    /// A reader over `s`.
    pub fn new(s: &'a [u8]) -> Self {
        Python { s }
    }

    /// The literal starting at `i` and its end.
    pub fn value(&self, i: usize, depth: usize) -> Option<(Value, usize)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let s = self.s;
        match *s.get(i)? {
            q @ (b'\'' | b'"') => self.string(i, q).map(|(t, e)| (Value::String(t), e)),
            b'T' if s[i..].starts_with(b"True") => Some((Value::Bool(true), i + 4)),
            b'F' if s[i..].starts_with(b"False") => Some((Value::Bool(false), i + 5)),
            b'N' if s[i..].starts_with(b"None") => Some((Value::Null, i + 4)),
            b'-' | b'0'..=b'9' => {
                let e = number_end(s, i)?;
                Some((number(&s[i..e])?, e))
            }
            b'[' | b'(' => {
                let close = if s[i] == b'[' { b']' } else { b')' };
                let mut out = Vec::new();
                let mut j = skip_ws(s, i + 1);
                if s.get(j) == Some(&close) {
                    return Some((Value::Array(out), j + 1));
                }
                loop {
                    let (v, e) = self.value(j, depth + 1)?;
                    out.push(v);
                    j = skip_ws(s, e);
                    match s.get(j)? {
                        b',' => {
                            j = skip_ws(s, j + 1);
                            if s.get(j) == Some(&close) {
                                return Some((Value::Array(out), j + 1));
                            }
                        }
                        &c if c == close => return Some((Value::Array(out), j + 1)),
                        _ => return None,
                    }
                }
            }
            b'{' => {
                let mut out = Map::new();
                let mut j = skip_ws(s, i + 1);
                if s.get(j) == Some(&b'}') {
                    return Some((Value::Object(out), j + 1));
                }
                loop {
                    let (k, e) = self.value(j, depth + 1)?;
                    let Value::String(k) = k else { return None };
                    j = skip_ws(s, e);
                    if s.get(j) != Some(&b':') {
                        return None;
                    }
                    let (v, e) = self.value(skip_ws(s, j + 1), depth + 1)?;
                    out.insert(k, v);
                    j = skip_ws(s, e);
                    match s.get(j)? {
                        b',' => {
                            j = skip_ws(s, j + 1);
                            if s.get(j) == Some(&b'}') {
                                return Some((Value::Object(out), j + 1));
                            }
                        }
                        b'}' => return Some((Value::Object(out), j + 1)),
                        _ => return None,
                    }
                }
            }
            _ => None,
        }
    }

    /// The string literal quoted by `q` starting at `i`, unescaped.
    fn string(&self, i: usize, q: u8) -> Option<(String, usize)> {
        let s = self.s;
        let mut out: Vec<u8> = Vec::new();
        let mut j = i + 1;
        loop {
            let b = *s.get(j)?;
            if b == q {
                return Some((String::from_utf8(out).ok()?, j + 1));
            }
            if b != b'\\' {
                out.push(b);
                j += 1;
                continue;
            }
            let e = *s.get(j + 1)?;
            j += 2;
            let simple = match e {
                b'\\' => Some(b'\\'),
                b'\'' => Some(b'\''),
                b'"' => Some(b'"'),
                b'n' => Some(b'\n'),
                b'r' => Some(b'\r'),
                b't' => Some(b'\t'),
                b'a' => Some(7),
                b'b' => Some(8),
                b'f' => Some(12),
                b'v' => Some(11),
                b'0' => Some(0),
                b'\n' => {
                    continue;
                }
                _ => None,
            };
            if let Some(c) = simple {
                out.push(c);
                continue;
            }
            let digits = match e {
                b'x' => 2,
                b'u' => 4,
                b'U' => 8,
                _ => {
                    // Python keeps an unknown escape as written.
                    out.extend([b'\\', e]);
                    continue;
                }
            };
            let hex = std::str::from_utf8(s.get(j..j + digits)?).ok()?;
            let c = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            j += digits;
            let mut buf = [0; 4];
            out.extend(c.encode_utf8(&mut buf).as_bytes());
        }
    }

    /// Keyword arguments `k=V, k2=V2` from `i`: after each argument, the
    /// arguments so far and where they end (every place the list may end;
    /// the first with no argument).
    pub fn kwargs(&self, i: usize) -> Vec<(Map<String, Value>, usize)> {
        let s = self.s;
        let mut ends = vec![(Map::new(), i)];
        let mut args = Map::new();
        let mut j = i;
        loop {
            let mut k = j;
            if !args.is_empty() {
                k = skip_ws(s, k);
                if s.get(k) != Some(&b',') {
                    break;
                }
                k = skip_ws(s, k + 1);
            }
            let start = k;
            while k < s.len() && (s[k].is_ascii_alphanumeric() || s[k] == b'_' || s[k] >= 0x80) {
                k += 1;
            }
            if k == start || s.get(k) != Some(&b'=') {
                break;
            }
            let Ok(name) = std::str::from_utf8(&s[start..k]) else {
                break;
            };
            let Some((v, e)) = self.value(k + 1, 0) else {
                break;
            };
            args.insert(name.to_string(), v);
            j = e;
            ends.push((args.clone(), j));
        }
        ends
    }
}

/// Reads Gemma 4 values (the `args_gemma` encoding): bare keys, strings
/// between `quote`s with their content as is.
pub struct Gemma<'a> {
    s: &'a [u8],
    quote: &'a [u8],
}

impl<'a> Gemma<'a> {
    /// A reader over `s` whose strings are quoted by `quote` (a special
    /// token's marker or its text).
    pub fn new(s: &'a [u8], quote: &'a [u8]) -> Self {
        Gemma { s, quote }
    }

    fn find(&self, from: usize, what: &[u8]) -> Option<usize> {
        if what.is_empty() {
            return None;
        }
        self.s
            .get(from..)?
            .windows(what.len())
            .position(|w| w == what)
            .map(|p| p + from)
    }

    /// The value starting at `i` and its end.
    pub fn value(&self, i: usize, depth: usize) -> Option<(Value, usize)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let s = self.s;
        if s[i.min(s.len())..].starts_with(self.quote) {
            let start = i + self.quote.len();
            let end = self.find(start, self.quote)?;
            let text = std::str::from_utf8(&s[start..end]).ok()?.to_string();
            return Some((Value::String(text), end + self.quote.len()));
        }
        match *s.get(i)? {
            b't' if s[i..].starts_with(b"true") => Some((Value::Bool(true), i + 4)),
            b'f' if s[i..].starts_with(b"false") => Some((Value::Bool(false), i + 5)),
            b'n' if s[i..].starts_with(b"null") => Some((Value::Null, i + 4)),
            // Gemma 4's template writes a null as None too.
            b'N' if s[i..].starts_with(b"None") => Some((Value::Null, i + 4)),
            b'-' | b'0'..=b'9' => {
                let e = number_end(s, i)?;
                Some((number(&s[i..e])?, e))
            }
            b'[' => {
                let mut out = Vec::new();
                let mut j = skip_ws(s, i + 1);
                if s.get(j) == Some(&b']') {
                    return Some((Value::Array(out), j + 1));
                }
                loop {
                    let (v, e) = self.value(j, depth + 1)?;
                    out.push(v);
                    j = skip_ws(s, e);
                    match s.get(j)? {
                        b',' => j = skip_ws(s, j + 1),
                        b']' => return Some((Value::Array(out), j + 1)),
                        _ => return None,
                    }
                }
            }
            b'{' => self.object(i, depth),
            _ => None,
        }
    }

    /// The object `{k:V,...}` starting at `i`.
    pub fn object(&self, i: usize, depth: usize) -> Option<(Value, usize)> {
        let s = self.s;
        if s.get(i) != Some(&b'{') {
            return None;
        }
        let mut out = Map::new();
        let mut j = skip_ws(s, i + 1);
        if s.get(j) == Some(&b'}') {
            return Some((Value::Object(out), j + 1));
        }
        loop {
            // A key is bare text up to ':' (or a quoted string).
            let (key, e) = if s[j..].starts_with(self.quote) {
                match self.value(j, depth + 1)? {
                    (Value::String(k), e) => (k, e),
                    _ => return None,
                }
            } else {
                let colon = j + s[j..].iter().position(|&b| b == b':')?;
                (std::str::from_utf8(&s[j..colon]).ok()?.to_string(), colon)
            };
            if s.get(e) != Some(&b':') {
                return None;
            }
            let (v, e) = self.value(skip_ws(s, e + 1), depth + 1)?;
            out.insert(key, v);
            j = skip_ws(s, e);
            match s.get(j)? {
                b',' => j = skip_ws(s, j + 1),
                b'}' => return Some((Value::Object(out), j + 1)),
                _ => return None,
            }
        }
    }
}

/// Positional JSON values `v1, v2` from `i`: after each value, the values
/// so far and where they end (the first with no value).
pub fn positional(s: &[u8], i: usize) -> Vec<(Vec<Value>, usize)> {
    let mut ends = vec![(Vec::new(), i)];
    let mut vals = Vec::new();
    let mut j = i;
    loop {
        let mut k = j;
        if !vals.is_empty() {
            if s.get(k) != Some(&b',') {
                break;
            }
            k = skip_ws(s, k + 1);
        }
        let Some((v, e)) = json_value(s, k) else {
            break;
        };
        vals.push(v);
        j = e;
        ends.push((vals.clone(), j));
    }
    ends
}

/// A raw XML value typed by the parameter: `json` says it may be JSON (a
/// kind other than string allowed), `string` that it may be a string.
pub fn typed_raw(raw: &str, string: bool, json: impl Fn(&Value) -> bool) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(raw.trim()) {
        if !v.is_string() && json(&v) {
            return v;
        }
        if !string {
            return v;
        }
    }
    Value::String(raw.to_string())
}
