//! META: the compiler's UTF-8 JSON description of the artifact, which
//! serving never needs. The runtime reads one value from it, the
//! vocabulary's label (`{"vocab": {"label": "..."}}`, written by the
//! compiler's `Meta`), to name the vocabulary in a mismatch error.

use super::layout::sec;
use super::Source;
use crate::error::{Error, ErrorKind, Label};

/// Reads META and checks that it is UTF-8.
pub(crate) fn read<'a>(src: &Source<'a>) -> Result<&'a [u8], Error> {
    let meta = src.bytes(sec::META);
    core::str::from_utf8(meta).map_err(|_| Error::new(ErrorKind::Utf8))?;
    Ok(meta)
}

/// The vocabulary label in META (`{"vocab": {"label": "..."}}`), if the
/// metadata has one. A small scanner, not a JSON parser: linear, without
/// recursion or allocation, and gives up (no label) on anything unexpected.
pub(crate) fn label(meta: &str) -> Label {
    let mut j = Json {
        s: meta.as_bytes(),
        i: 0,
    };
    (|| {
        j.member(b"vocab")?;
        j.member(b"label")?;
        j.ws();
        j.string_into(meta)
    })()
    .unwrap_or(Label::NONE)
}

struct Json<'a> {
    s: &'a [u8],
    i: usize,
}

impl Json<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    /// Skips a string (at its opening quote); returns its raw content.
    fn string(&mut self) -> Option<(usize, usize)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        while i < self.s.len() {
            match self.s[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.i = i + 1;
                    return Some((start, i));
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Skips one value: a string, a scalar (up to the next `,`, `}` or
    /// `]`), or a bracketed value by depth counting.
    fn value(&mut self) -> Option<()> {
        self.ws();
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        return Some(());
                    }
                    depth -= 1;
                    self.i += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b',' if depth == 0 => return Some(()),
                _ => self.i += 1,
            }
        }
    }

    /// In the object starting here, moves to the value of member `key`.
    fn member(&mut self, key: &[u8]) -> Option<()> {
        self.eat(b'{')?;
        loop {
            self.ws();
            let (a, b) = self.string()?;
            self.eat(b':')?;
            if &self.s[a..b] == key {
                return Some(());
            }
            self.value()?;
            self.eat(b',')?;
        }
    }

    /// Decodes the string starting here into a label.
    fn string_into(&mut self, text: &str) -> Option<Label> {
        let (a, b) = self.string()?;
        // Quotes are ASCII, so the content is whole characters.
        let mut chars = text.get(a..b)?.chars();
        let mut label = Label::empty();
        while let Some(c) = chars.next() {
            if c != '\\' {
                label.push(c);
                continue;
            }
            let c = match chars.next()? {
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let hi = hex4(&mut chars)?;
                    let code = if (0xD800..0xDC00).contains(&hi) {
                        // A surrogate pair: "\uD83D\uDE00".
                        if chars.next() != Some('\\') || chars.next() != Some('u') {
                            return None;
                        }
                        let lo = hex4(&mut chars).filter(|lo| (0xDC00..0xE000).contains(lo))?;
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    } else {
                        hi
                    };
                    char::from_u32(code).unwrap_or('\u{FFFD}')
                }
                c => c,
            };
            label.push(c);
        }
        Some(label)
    }
}

/// Four hex digits of a `\\u` escape.
fn hex4(chars: &mut core::str::Chars<'_>) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..4 {
        v = v * 16 + chars.next()?.to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::label as meta_label;
    use core::fmt::Write;

    /// The label as the error shows it (`Some("...")` or `None`).
    fn label(meta: &str) -> std::string::String {
        let mut s = std::string::String::new();
        write!(s, "{:?}", meta_label(meta)).unwrap();
        s
    }

    #[test]
    fn the_vocabulary_label_is_found_in_the_metadata() {
        assert_eq!(
            label(
                r#"{"format":"react","tools":["label","vocab"],"vocab":{"label":"gpt2 (built-in r50k_base)","kind":"byte-level BPE"}}"#
            ),
            r#"Some("gpt2 (built-in r50k_base)")"#
        );
        // Members before it of every kind, nested, with strings that hold
        // brackets, quotes and the keys themselves.
        assert_eq!(
            label(
                r#" { "a" : [1, {"label": "no"}, "]}"], "b": -1.5e3, "c": null, "d": {"vocab": {"label": "inner"}}, "vocab" : { "kind": "x", "label" : "q\"\\\u00e9\ud83d\ude00\n" } }"#
            ),
            "Some(\"q\\\"\\\\é😀\\n\")"
        );
        for none in [
            "",
            "{}",
            "[]",
            r#"{"vocab":{"kind":"x"}}"#,
            r#"{"vocab":{"label":3}}"#,
            r#"{"vocab":{"label":"unterminated}}"#,
            r#"{"vocab":{"label":"bad escape \u12"}}"#,
            r#"{"vocab":{"label":"lone surrogate \ud800 x"}}"#,
            r#"{"vocab""label":"x"}"#,
            "{\"vocab\":",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        ] {
            assert_eq!(label(none), "None", "{none}");
        }
        // Long labels are cut at a character boundary.
        let long = std::format!(r#"{{"vocab":{{"label":"{}"}}}}"#, "é".repeat(100));
        assert_eq!(label(&long), std::format!("Some({:?})", "é".repeat(48)));
    }
}
