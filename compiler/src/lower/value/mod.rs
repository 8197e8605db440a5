//! Exact value languages of JSON Schema keywords, as [`Expr`]s over the
//! JSON text of one value.
//!
//! Every function here gives the language of its keyword exactly, or a
//! subset of it that its documentation names: a machine built from these
//! never accepts a value that the keyword forbids. What has no exact (or
//! safe) spelling is refused with an `Err` that says why.
//!
//! - Numbers: [`integer_range`], [`number_range`] (with [`Bound`]),
//!   [`integer_bounds`], [`integer_multiple_of`], [`number_multiple_of`].
//!   Ranges and multiples combine through [`crate::automaton::expr::intersect`].
//! - Strings: [`format_string`], [`pattern_content`], [`length_content`],
//!   [`json_char`], and [`string_with`] that puts them together.
//!
//! String contents are written canonically: each decoded character has one
//! spelling, the one serde_json writes (`\"`, `\\`, `\b \f \n \r \t`,
//! `\u00XX` with lowercase hex for the other controls below U+0020, every
//! other character as itself in UTF-8; `/` and U+007F are not escaped).
//! Constraints on the decoded text (a pattern, a length, a format) then
//! intersect exactly as languages of JSON text. Other spellings of the same
//! string (`\u0041` for `A`, `\/`) are left out: a subset, never more.
//!
//! One file per job: [`range`] (integer and decimal ranges), [`multiple`]
//! (`multipleOf` counters), [`string`] (canonical string content and
//! lengths), [`pattern`] (ECMA-262 patterns), [`string_format`] (the
//! `format` keyword's RFC grammars); [`string_with`] here puts the string
//! constraints together and checks the result is not empty.

mod multiple;
mod pattern;
mod range;
mod string;
mod string_format;
#[cfg(test)]
mod testutil;

pub use multiple::{integer_multiple_of, number_multiple_of};
pub use pattern::pattern_content;

/// Canonical JSON's escape of character `c` (serde_json's spelling), or
/// the character itself in UTF-8.
pub(crate) fn json_escape_of(c: u32) -> Vec<u8> {
    match string::json_escape(c) {
        Some(e) => e.into_bytes(),
        None => char::from_u32(c).map_or_else(Vec::new, |ch| ch.to_string().into_bytes()),
    }
}
pub use range::{integer_bounds, integer_range, number_range, Bound};
pub use string::length_content;
pub use string_format::{format_is_exact, format_string};

use crate::automaton::expr::Expr;
#[cfg(test)]
use crate::{automaton::expr, lower::json::json_string};
#[cfg(test)]
use string_format::format_content;

// ---------------------------------------------------------------------------
// Small builders

fn digit() -> Expr {
    Expr::ByteClass(vec![(b'0', b'9')])
}

fn digits(min: u32, max: Option<u32>) -> Expr {
    Expr::repeat(digit(), min, max)
}

/// One ASCII digit whose value is in `lo..=hi` (none when `lo > hi`).
fn digit_range(lo: u8, hi: u8) -> Option<Expr> {
    (lo <= hi && hi <= 9).then(|| Expr::ByteClass(vec![(b'0' + lo, b'0' + hi)]))
}

/// The empty language (no string at all). A character class with no ranges:
/// the NFA gets a state without moves, and `to_regex` refuses it rather
/// than write something that matches.
fn nothing() -> Expr {
    Expr::CharClass(Vec::new())
}

/// The alternation of the present parts; `None` (no string) when none is.
fn any_of(parts: impl IntoIterator<Item = Option<Expr>>) -> Option<Expr> {
    let v: Vec<Expr> = parts.into_iter().flatten().collect();
    if v.is_empty() {
        None
    } else {
        Some(Expr::alt(v))
    }
}

fn bytes(ranges: &[(u8, u8)]) -> Expr {
    Expr::ByteClass(ranges.to_vec())
}

fn lit(s: &str) -> Expr {
    Expr::lit(s)
}

fn seq<const N: usize>(parts: [Expr; N]) -> Expr {
    Expr::seq(parts)
}

// ---------------------------------------------------------------------------
// Strings

// The JSON lowering (`lower/json/build.rs`) puts a string schema's parts
// together itself, with its own caps, messages and `--relax` refusals;
// `string_with` is the reference composition its tests check against.
#[cfg(test)]
/// Whether no string at all is in `e`'s language.
fn is_empty_lang(e: &Expr, max_states: usize) -> Result<bool, String> {
    let nfa =
        crate::automaton::nfa::build(e, max_states.saturating_mul(4)).map_err(|l| l.to_string())?;
    let mut seen = vec![false; nfa.len()];
    let mut stack = vec![nfa.start];
    seen[nfa.start as usize] = true;
    while let Some(s) = stack.pop() {
        if s == nfa.accept {
            return Ok(false);
        }
        for t in nfa
            .eps(s)
            .iter()
            .copied()
            .chain(nfa.ranges(s).iter().map(|r| r.2))
        {
            if !seen[t as usize] {
                seen[t as usize] = true;
                stack.push(t);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
/// The whole JSON string (quotes included) of the strings that match
/// `pattern` ([`pattern_content`]), have `min_len` to `max_len` code points
/// ([`length_content`]) and are valid for `format` ([`format_string`];
/// unknown formats are ignored), intersected with [`crate::automaton::expr::intersect`]
/// (within `max_states`) when more than one applies. All of them written
/// canonically. With none of them, [`crate::lower::json::json_string`] (every
/// spelling).
///
/// `Err` when a part is refused, the product is too large, or no string
/// satisfies them all.
pub fn string_with(
    pattern: Option<&str>,
    min_len: u32,
    max_len: Option<u32>,
    format: Option<&str>,
    max_states: usize,
) -> Result<Expr, String> {
    let mut parts = Vec::new();
    if let Some(p) = pattern {
        parts.push(pattern_content(p)?);
    }
    if min_len > 0 || max_len.is_some() {
        if let Some(m) = max_len.filter(|&m| m < min_len) {
            return Err(format!("minLength {min_len} is above maxLength {m}"));
        }
        parts.push(length_content(min_len, max_len));
    }
    if let Some(f) = format.and_then(format_content) {
        parts.push(f);
    }
    let content = match parts.len() {
        0 => return Ok(json_string()),
        1 => parts.pop().unwrap_or_else(nothing),
        _ => expr::intersect(&parts, max_states).map_err(|e| e.to_string())?,
    };
    if is_empty_lang(&content, max_states)? {
        return Err("no string satisfies the pattern, length and format together".into());
    }
    Ok(seq([lit("\""), content, lit("\"")]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::value::testutil::dfa;

    // -----------------------------------------------------------------
    // string_with

    #[test]
    fn string_with_intersects() {
        let d = dfa(&string_with(Some("^[a-z]+$"), 2, Some(4), None, 100_000).unwrap());
        for (s, want) in [
            ("ab", true),
            ("abcd", true),
            ("a", false),
            ("abcde", false),
            ("aB", false),
            ("", false),
        ] {
            assert_eq!(
                d.accepts(serde_json::to_string(s).unwrap().as_bytes()),
                want,
                "{s:?}"
            );
        }
        let d = dfa(&string_with(None, 0, None, None, 100_000).unwrap());
        assert!(
            d.accepts(b"\"\\u0041\\/\""),
            "no constraint: every spelling"
        );
        let d = dfa(&string_with(None, 1, Some(2), None, 100_000).unwrap());
        assert!(d.accepts("\"🐲\\n\"".as_bytes()));
        assert!(!d.accepts("\"🐲\\n!\"".as_bytes()));
        assert!(
            !d.accepts(b"\"\\u0041\""),
            "constrained: canonical spelling only"
        );
        let d = dfa(&string_with(Some("^2024"), 0, None, Some("date"), 100_000).unwrap());
        assert!(d.accepts(b"\"2024-02-29\""));
        assert!(!d.accepts(b"\"2023-02-28\""));
        let d = dfa(&string_with(Some("x"), 0, Some(5), Some("no-such-format"), 100_000).unwrap());
        assert!(d.accepts(b"\"abxcd\"") && !d.accepts(b"\"abxcde\"") && !d.accepts(b"\"abc\""));
        let d = dfa(&string_with(None, 0, None, Some("ipv4"), 100_000).unwrap());
        assert!(d.accepts(b"\"10.0.0.1\"") && !d.accepts(b"\"10.0.0.256\""));
        assert!(string_with(Some("^a$"), 2, None, None, 100_000).is_err());
        assert!(string_with(None, 0, Some(3), Some("date"), 100_000).is_err());
        assert!(string_with(None, 5, Some(2), None, 100_000).is_err());
        assert!(string_with(Some("[]"), 0, None, None, 100_000).is_err());
        assert!(string_with(Some(r"\b"), 0, None, None, 100_000).is_err());
        assert!(
            string_with(Some("^a.{0,40}$"), 0, Some(100), None, 10).is_err(),
            "a state bound is respected"
        );
    }
}
