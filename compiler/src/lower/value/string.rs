//! JSON string content written canonically (serde_json's spelling of each
//! character): one character from a set, a literal, a length in code
//! points. The other string languages (patterns, formats) are built from
//! these.

use super::nothing;
use crate::automaton::expr::Expr;

// Canonical JSON string content

/// serde_json's spelling of a character that JSON requires to be escaped.
pub(super) fn json_escape(c: u32) -> Option<String> {
    Some(match c {
        0x22 => "\\\"".to_string(),
        0x5C => "\\\\".to_string(),
        0x08 => "\\b".to_string(),
        0x0C => "\\f".to_string(),
        0x0A => "\\n".to_string(),
        0x0D => "\\r".to_string(),
        0x09 => "\\t".to_string(),
        c if c < 0x20 => format!("\\u{c:04x}"),
        _ => return None,
    })
}

/// One decoded character from `ranges`, written canonically as serde_json
/// writes it: `\"`, `\\`, `\b \f \n \r \t`, `\u00XX` (lowercase hex) for
/// the other controls below U+0020, any other character as itself in UTF-8.
pub fn json_char(ranges: &[(char, char)]) -> Expr {
    let mut rs: Vec<(u32, u32)> = ranges
        .iter()
        .filter(|(a, b)| a <= b)
        .map(|&(a, b)| (a as u32, b as u32))
        .collect();
    rs.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::new();
    for (a, b) in rs {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let mut plain: Vec<(char, char)> = Vec::new();
    let mut escaped: Vec<(Vec<u8>, Expr)> = Vec::new();
    let ch = |c: u32| char::from_u32(c).unwrap_or('\0');
    for (lo, hi) in merged {
        for c in lo..=hi.min(0x1F) {
            escaped.push((json_escape(c).unwrap_or_default().into_bytes(), Expr::Empty));
        }
        let mut start = lo.max(0x20);
        for special in [0x22u32, 0x5C] {
            if start <= special && special <= hi {
                if start < special {
                    plain.push((ch(start), ch(special - 1)));
                }
                escaped.push((
                    json_escape(special).unwrap_or_default().into_bytes(),
                    Expr::Empty,
                ));
                start = special + 1;
            }
        }
        if start <= hi {
            plain.push((ch(start), ch(hi)));
        }
    }
    let mut alts = Vec::new();
    if !plain.is_empty() {
        alts.push(Expr::CharClass(plain));
    }
    if !escaped.is_empty() {
        alts.push(Expr::Trie(escaped));
    }
    match alts.len() {
        0 => nothing(),
        1 => alts.pop().unwrap_or_else(nothing),
        _ => Expr::Alt(alts),
    }
}

/// Any one character, canonically written.
pub(super) fn any_char() -> Expr {
    json_char(&[('\0', char::MAX)])
}

/// A literal decoded string, canonically written.
pub(super) fn json_text(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for c in s.chars() {
        match json_escape(c as u32) {
            Some(e) => out.extend_from_slice(e.as_bytes()),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
    out
}

/// Canonical content (between the quotes) of the strings of `min` to `max`
/// code points (`None`: no upper bound), JSON Schema's string length. A
/// character outside the BMP is one code point (written as itself, never as
/// a surrogate pair of escapes). Empty when `min > max`.
pub fn length_content(min: u32, max: Option<u32>) -> Expr {
    if max.is_some_and(|m| m < min) {
        return nothing();
    }
    Expr::repeat(any_char(), min, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::value::testutil::{content, dfa, Rng};

    #[test]
    fn json_char_is_serde_jsons_spelling() {
        let all = dfa(&json_char(&[('\0', char::MAX)]));
        let some = dfa(&json_char(&[
            ('a', 'z'),
            ('\0', '\u{1F}'),
            ('!', '#'),
            ('\\', '\\'),
            ('\u{E000}', '\u{10FFFF}'),
        ]));
        let in_some = |c: char| {
            c.is_ascii_lowercase()
                || c <= '\u{1F}'
                || ('!'..='#').contains(&c)
                || c == '\\'
                || c >= '\u{E000}'
        };
        let mut n = 0;
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let t = content(&c.to_string());
            assert_eq!(json_text(&c.to_string()), t, "{c:?}");
            assert!(all.accepts(&t), "{c:?} as {t:?}");
            assert_eq!(some.accepts(&t), in_some(c), "{c:?}");
            n += 1;
        }
        // Other spellings are not canonical.
        for t in [
            "\\u0041",
            "\\/",
            "\\u000a",
            "\\u000A",
            "\\U0001",
            "\"",
            "\\",
            "\u{1}",
            "\\ud83d\\ude00",
            "ab",
            "",
        ] {
            assert!(!all.accepts(t.as_bytes()), "{t:?}");
        }
        println!("json_char: {n} characters checked");
        let none = dfa(&json_char(&[]));
        assert!(!none.accepts(b"a") && !none.accepts(b""));
    }

    #[test]
    fn length_content_counts_code_points() {
        let mut rng = Rng(99);
        let alphabet = [
            'a',
            'é',
            '"',
            '\\',
            '\n',
            '\u{1}',
            '\u{1F600}',
            '€',
            '\u{7F}',
            '/',
            ' ',
            '\u{10FFFF}',
            '\t',
        ];
        let mut checked = 0;
        for (min, max) in [
            (0, Some(0)),
            (0, Some(3)),
            (2, Some(5)),
            (1, None),
            (4, Some(4)),
            (0, None),
            (7, Some(9)),
        ] {
            let d = dfa(&length_content(min, max));
            for _ in 0..800 {
                let len = rng.below(12) as usize;
                let s: String = (0..len).map(|_| *rng.pick(&alphabet)).collect();
                let want = len as u32 >= min && max.is_none_or(|m| len as u32 <= m);
                assert_eq!(d.accepts(&content(&s)), want, "{s:?} in {min}..{max:?}");
                checked += 1;
            }
            // Escaped spellings of a character are not canonical.
            if max.is_none_or(|m| m >= 1) && min <= 1 {
                assert!(d.accepts(b"A"));
                assert!(!d.accepts(b"\\u0041"));
                assert!(!d.accepts(b"\\ud83d\\ude00"));
            }
        }
        assert!(!dfa(&length_content(3, Some(2))).accepts(b"abc"));
        println!("length_content: {checked} strings checked");
    }
}
