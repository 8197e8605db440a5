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

use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use crate::automaton::expr::{self, Automaton, Expr};
use crate::lower::json::{json_number, json_string, MAX_INT_DIGITS};

/// The largest magnitude of an integer (and of a number's integer part):
/// `10^MAX_INT_DIGITS - 1`, as [`crate::lower::json::json_integer`] allows.
pub const MAX_UINT: u64 = 10u64.pow(MAX_INT_DIGITS) - 1;

/// Bound on the states of a `multipleOf` counter: `k · (MAX_INT_DIGITS + d + 2)`
/// for a multiple `k · 10^-d` (see [`integer_multiple_of`]).
pub const MAX_MULTIPLE_STATES: u64 = 200_000;

/// Most digits of a bound written out in full (`1e-300` is 300 digits).
const MAX_BOUND_DIGITS: i64 = 400;

/// States allowed for the product of a number range's two sides.
const RANGE_STATES: usize = 100_000;

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
// Integers

fn pow10(n: u32) -> u64 {
    10u64.pow(n)
}

fn ndigits(n: u64) -> u32 {
    n.checked_ilog10().map_or(1, |l| l + 1)
}

/// Canonical decimal texts (no sign, no leading zero) of the integers in
/// `a..=b`, `b` clamped to [`MAX_UINT`]; `None` when there is none. Built by
/// digit-range decomposition: one branch per digit count, each split at the
/// first digit where the two ends differ.
fn uint_range(a: u64, b: u64) -> Option<Expr> {
    let b = b.min(MAX_UINT);
    if a > b {
        return None;
    }
    let mut alts = Vec::new();
    let mut a = a;
    if a == 0 {
        alts.push(lit("0"));
        if b == 0 {
            return Some(lit("0"));
        }
        a = 1;
    }
    // Digit counts whose whole span is inside the range share one branch.
    let mut full: Option<(u32, u32)> = None;
    for len in ndigits(a)..=ndigits(b) {
        let lo = a.max(pow10(len - 1));
        let hi = b.min(pow10(len) - 1);
        if lo == pow10(len - 1) && hi == pow10(len) - 1 {
            full = Some(full.map_or((len, len), |(s, _)| (s, len)));
        } else {
            alts.push(same_len(
                lo.to_string().as_bytes(),
                hi.to_string().as_bytes(),
            ));
        }
    }
    if let Some((s, e)) = full {
        alts.push(seq([bytes(&[(b'1', b'9')]), digits(s - 1, Some(e - 1))]));
    }
    Some(Expr::alt(alts))
}

/// Digit strings of `lo.len()` digits between `lo` and `hi` (inclusive,
/// same length, `lo <= hi`).
fn same_len(lo: &[u8], hi: &[u8]) -> Expr {
    let n = lo.len() as u32;
    if n == 0 {
        return Expr::Empty;
    }
    if lo[0] == hi[0] {
        return seq([Expr::Bytes(vec![lo[0]]), same_len(&lo[1..], &hi[1..])]);
    }
    let (a, b) = (lo[0] - b'0', hi[0] - b'0');
    let mut alts = Vec::new();
    let mut from = a;
    let mut to = b;
    if lo[1..].iter().any(|&d| d != b'0') {
        alts.push(seq([Expr::Bytes(vec![lo[0]]), at_least(&lo[1..])]));
        from = a + 1;
    }
    if hi[1..].iter().any(|&d| d != b'9') {
        alts.push(seq([Expr::Bytes(vec![hi[0]]), at_most(&hi[1..])]));
        to = b - 1;
    }
    if let Some(c) = digit_range(from, to) {
        alts.push(seq([c, digits(n - 1, Some(n - 1))]));
    }
    Expr::alt(alts)
}

/// Digit strings of `s.len()` digits that are `>= s`.
fn at_least(s: &[u8]) -> Expr {
    let n = s.len() as u32;
    if s.iter().all(|&d| d == b'0') {
        return digits(n, Some(n));
    }
    let d = s[0] - b'0';
    Expr::alt(
        [
            Some(seq([Expr::Bytes(vec![s[0]]), at_least(&s[1..])])),
            digit_range(d + 1, 9).map(|c| seq([c, digits(n - 1, Some(n - 1))])),
        ]
        .into_iter()
        .flatten(),
    )
}

/// Digit strings of `s.len()` digits that are `<= s`.
fn at_most(s: &[u8]) -> Expr {
    let n = s.len() as u32;
    if s.iter().all(|&d| d == b'9') {
        return digits(n, Some(n));
    }
    let d = s[0] - b'0';
    Expr::alt(
        [
            Some(seq([Expr::Bytes(vec![s[0]]), at_most(&s[1..])])),
            d.checked_sub(1)
                .and_then(|e| digit_range(0, e))
                .map(|c| seq([c, digits(n - 1, Some(n - 1))])),
        ]
        .into_iter()
        .flatten(),
    )
}

/// Canonical JSON integers `-?(0|[1-9][0-9]*)` of at most
/// [`MAX_INT_DIGITS`] digits (the language of
/// [`crate::lower::json::json_integer`]) with `lo <= n <= hi`; `None` leaves that
/// side open.
///
/// `-0` is the integer 0: it is accepted exactly when 0 is in the range
/// (as `json_integer` accepts it). Built by digit-range decomposition, so
/// the expression is linear in the number of digits. `Err` when no integer
/// of at most 18 digits lies in the range.
pub fn integer_range(lo: Option<i64>, hi: Option<i64>) -> Result<Expr, String> {
    let max = MAX_UINT as i128;
    let lo = lo.map_or(-max, |v| (v as i128).max(-max));
    let hi = hi.map_or(max, |v| (v as i128).min(max));
    if lo > hi {
        return Err(format!(
            "no integer in range (integers have at most {MAX_INT_DIGITS} digits)"
        ));
    }
    let mut alts = Vec::new();
    if hi >= 0 {
        alts.push(uint_range(lo.max(0) as u64, hi as u64));
    }
    if lo <= 0 {
        // Magnitudes of the non-positive part; 0 gives "-0".
        let a = (-hi).max(0) as u64;
        let b = (-lo) as u64;
        alts.push(uint_range(a, b).map(|e| seq([lit("-"), e])));
    }
    any_of(alts).ok_or_else(|| "no integer in range".to_string())
}

// ---------------------------------------------------------------------------
// Exact decimals

/// A finite decimal: sign, integer digits (ASCII, canonical: no leading
/// zero, `"0"` for none) and fraction digits (no trailing zero). Zero is
/// never negative.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dec {
    neg: bool,
    int: Vec<u8>,
    frac: Vec<u8>,
}

impl Dec {
    fn zero() -> Dec {
        Dec {
            neg: false,
            int: vec![b'0'],
            frac: Vec::new(),
        }
    }

    fn is_zero(&self) -> bool {
        self.int == b"0" && self.frac.is_empty()
    }

    /// Parses a JSON number text (exponent included) exactly.
    fn parse(text: &str) -> Result<Dec, String> {
        let bad = || format!("{text:?} is not a JSON number");
        let (neg, rest) = match text.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, text),
        };
        let (mant, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let (ip, fp) = match mant.find('.') {
            Some(i) => (&mant[..i], Some(&mant[i + 1..])),
            None => (mant, None),
        };
        let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !all_digits(ip) || fp.is_some_and(|f| !all_digits(f)) {
            return Err(bad());
        }
        let fp = fp.unwrap_or("");
        let exp: i64 = match exp {
            None => 0,
            Some(e) => {
                let (sign, e) = match e.as_bytes().first() {
                    Some(b'-') => (-1, &e[1..]),
                    Some(b'+') => (1, &e[1..]),
                    _ => (1, e),
                };
                if !all_digits(e) {
                    return Err(bad());
                }
                let e = e.trim_start_matches('0');
                if e.len() > 6 {
                    return Err(format!("{text:?}: exponent too large"));
                }
                sign * e.parse::<i64>().unwrap_or(0)
            }
        };
        let mut all: Vec<u8> = ip.bytes().chain(fp.bytes()).collect();
        let mut point = ip.len() as i64 + exp;
        let lead = all.iter().take_while(|&&d| d == b'0').count();
        all.drain(..lead);
        point -= lead as i64;
        while all.last() == Some(&b'0') {
            all.pop();
        }
        if all.is_empty() {
            return Ok(Dec::zero());
        }
        if !(-MAX_BOUND_DIGITS..=MAX_BOUND_DIGITS).contains(&point) {
            return Err(format!(
                "{text:?} has more than {MAX_BOUND_DIGITS} digits written out"
            ));
        }
        let (int, frac) = if point <= 0 {
            let mut f = vec![b'0'; (-point) as usize];
            f.extend_from_slice(&all);
            (vec![b'0'], f)
        } else if point as usize >= all.len() {
            let mut i = all.clone();
            i.resize(point as usize, b'0');
            (i, Vec::new())
        } else {
            let (i, f) = all.split_at(point as usize);
            (i.to_vec(), f.to_vec())
        };
        Ok(Dec { neg, int, frac })
    }

    fn cmp(&self, o: &Dec) -> Ordering {
        match (self.neg, o.neg) {
            (false, false) => cmp_mag(&self.int, &self.frac, &o.int, &o.frac),
            (true, true) => cmp_mag(&o.int, &o.frac, &self.int, &self.frac),
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
        }
    }

    /// The value as an i128 if it is an integer of at most 30 digits.
    fn as_int(&self) -> Option<i128> {
        if !self.frac.is_empty() || self.int.len() > 30 {
            return None;
        }
        let v: i128 = std::str::from_utf8(&self.int).ok()?.parse().ok()?;
        Some(if self.neg { -v } else { v })
    }
}

/// Compares two magnitudes given as canonical integer digits and fraction
/// digits: integer length, then integer digits, then the fractions padded
/// with zeros.
fn cmp_mag(ai: &[u8], af: &[u8], bi: &[u8], bf: &[u8]) -> Ordering {
    ai.len()
        .cmp(&bi.len())
        .then_with(|| ai.cmp(bi))
        .then_with(|| {
            let n = af.len().max(bf.len());
            (0..n)
                .map(|i| {
                    (
                        af.get(i).copied().unwrap_or(b'0'),
                        bf.get(i).copied().unwrap_or(b'0'),
                    )
                })
                .find(|(x, y)| x != y)
                .map_or(Ordering::Equal, |(x, y)| x.cmp(&y))
        })
}

/// One side of a numeric range: `minimum` (inclusive) or
/// `exclusiveMinimum`, `maximum` or `exclusiveMaximum`. The value is read
/// exactly from its decimal text (`0.1` is one tenth, not the nearest
/// double).
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub value: serde_json::Number,
    pub exclusive: bool,
}

impl Bound {
    pub fn inclusive(value: serde_json::Number) -> Bound {
        Bound {
            value,
            exclusive: false,
        }
    }

    pub fn exclusive(value: serde_json::Number) -> Bound {
        Bound {
            value,
            exclusive: true,
        }
    }

    fn dec(&self) -> Result<Dec, String> {
        Dec::parse(&self.value.to_string())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
}

impl Cmp {
    /// The comparison of the negated value: `-x op c` iff `x op.flip() -c`.
    fn flip(self) -> Cmp {
        match self {
            Cmp::Ge => Cmp::Le,
            Cmp::Gt => Cmp::Lt,
            Cmp::Le => Cmp::Ge,
            Cmp::Lt => Cmp::Gt,
        }
    }
}

/// `(\.[0-9]+)?`.
fn frac_opt() -> Expr {
    Expr::opt(seq([lit("."), digits(1, None)]))
}

/// Every magnitude text: `(0|[1-9][0-9]{0,17})(\.[0-9]+)?`.
fn mag_all() -> Expr {
    seq([uint_range(0, MAX_UINT).unwrap_or_else(nothing), frac_opt()])
}

/// Whether an absent fraction (or one with no more digits) satisfies
/// `0.000… op 0.c` for fraction digits `c`.
fn frac_empty_ok(op: Cmp, c: &[u8]) -> bool {
    match op {
        Cmp::Ge => c.is_empty(),
        Cmp::Gt => false,
        Cmp::Le => true,
        Cmp::Lt => !c.is_empty(),
    }
}

/// Non-empty digit strings `s` with `0.s op 0.c` (`c` without trailing
/// zeros), compared digit by digit with zero padding.
fn frac_nonempty(op: Cmp, c: &[u8]) -> Option<Expr> {
    let Some((&d, rest)) = c.split_first() else {
        return match op {
            Cmp::Ge => Some(digits(1, None)),
            Cmp::Gt => Some(seq([
                digits(0, None),
                bytes(&[(b'1', b'9')]),
                digits(0, None),
            ])),
            Cmp::Le => Some(Expr::repeat(lit("0"), 1, None)),
            Cmp::Lt => None,
        };
    };
    let d = d - b'0';
    let other = match op {
        Cmp::Ge | Cmp::Gt => digit_range(d + 1, 9),
        Cmp::Le | Cmp::Lt => d.checked_sub(1).and_then(|e| digit_range(0, e)),
    }
    .map(|c| seq([c, digits(0, None)]));
    let tail = any_of([
        frac_empty_ok(op, rest).then_some(Expr::Empty),
        frac_nonempty(op, rest),
    ]);
    let same = tail.map(|t| seq([Expr::Bytes(vec![b'0' + d]), t]));
    any_of([other, same])
}

/// Magnitude texts `x` (no sign, no exponent) with `x op c` for `c >= 0`
/// given as canonical integer and fraction digits.
fn mag_cmp(op: Cmp, int: &[u8], frac: &[u8]) -> Option<Expr> {
    let v: Option<u64> = if int.len() as u32 <= MAX_INT_DIGITS {
        std::str::from_utf8(int).ok().and_then(|s| s.parse().ok())
    } else {
        None
    };
    let strict = match op {
        Cmp::Ge | Cmp::Gt => v.and_then(|v| uint_range(v + 1, MAX_UINT)),
        Cmp::Le | Cmp::Lt => match v {
            None => uint_range(0, MAX_UINT),
            Some(0) => None,
            Some(v) => uint_range(0, v - 1),
        },
    }
    .map(|e| seq([e, frac_opt()]));
    let equal = v.and_then(|_| {
        let f = any_of([
            frac_empty_ok(op, frac).then_some(Expr::Empty),
            frac_nonempty(op, frac).map(|s| seq([lit("."), s])),
        ])?;
        Some(seq([Expr::Bytes(int.to_vec()), f]))
    });
    any_of([strict, equal])
}

/// Magnitude texts `x` with `x op c` where `c` has magnitude `c.int.c.frac`
/// and sign `neg`.
fn mag_signed(op: Cmp, neg: bool, c: &Dec) -> Option<Expr> {
    if neg {
        match op {
            Cmp::Ge | Cmp::Gt => Some(mag_all()),
            Cmp::Le | Cmp::Lt => None,
        }
    } else {
        mag_cmp(op, &c.int, &c.frac)
    }
}

/// Number texts without exponent whose value `v` has `v op c`.
fn signed_cmp(op: Cmp, c: &Dec) -> Option<Expr> {
    let plain = mag_signed(op, c.neg, c);
    let minus = mag_signed(op.flip(), !c.neg && !c.is_zero(), c);
    any_of([plain, minus.map(|m| seq([lit("-"), m]))])
}

/// JSON numbers whose exact decimal value lies within the bounds.
///
/// With neither bound this is [`crate::lower::json::json_number`]'s language
/// (exponents allowed). With a bound it is a subset: numbers are written
/// without exponent, `-?(0|[1-9][0-9]{0,17})(\.[0-9]+)?` (the integer part
/// within [`MAX_INT_DIGITS`] digits, as `json_number`), so the comparison
/// is digit by digit on the text: integer length, then integer digits, then
/// fraction digits padded with zeros. Bounds are read exactly from their
/// decimal text (`1e-3`, `0.1`, `-90`); `-0` is 0. Exact decimal semantics
/// is the specification's; a validator that compares doubles can disagree
/// only for texts that differ from a bound beyond the 17th significant
/// digit.
///
/// `Err` when no such number exists (an empty range, or one beyond 18
/// integer digits).
pub fn number_range(lo: Option<Bound>, hi: Option<Bound>) -> Result<Expr, String> {
    if lo.is_none() && hi.is_none() {
        return Ok(json_number());
    }
    let lo = lo.map(|b| b.dec().map(|d| (d, b.exclusive))).transpose()?;
    let hi = hi.map(|b| b.dec().map(|d| (d, b.exclusive))).transpose()?;
    if let (Some((l, le)), Some((h, he))) = (&lo, &hi) {
        match l.cmp(h) {
            Ordering::Greater => return Err("no number in range (minimum above maximum)".into()),
            Ordering::Equal if *le || *he => {
                return Err("no number in range (an exclusive bound equals the other)".into())
            }
            _ => {}
        }
    }
    let none = || {
        format!(
            "no number in range that has at most {MAX_INT_DIGITS} integer digits (numbers are written without exponent)"
        )
    };
    let mut parts = Vec::new();
    if let Some((l, ex)) = &lo {
        parts.push(signed_cmp(if *ex { Cmp::Gt } else { Cmp::Ge }, l).ok_or_else(none)?);
    }
    if let Some((h, ex)) = &hi {
        parts.push(signed_cmp(if *ex { Cmp::Lt } else { Cmp::Le }, h).ok_or_else(none)?);
    }
    if parts.len() == 1 {
        return Ok(parts.pop().unwrap_or_else(nothing));
    }
    let e = expr::intersect(&parts, RANGE_STATES).map_err(|e| e.to_string())?;
    if let Expr::Automaton(a) = &e {
        if !a.accepting.iter().any(|&x| x) {
            return Err(none());
        }
    }
    Ok(e)
}

/// The inclusive integer bounds equivalent to decimal bounds for integer
/// values: `minimum: 0.5` is `1`, `exclusiveMaximum: 10` is `9`. Bounds
/// beyond ±10^18 are clamped to ±10^18 (no integer text of at most 18
/// digits lies beyond them), so the result can go to [`integer_range`].
pub fn integer_bounds(
    lo: Option<&Bound>,
    hi: Option<&Bound>,
) -> Result<(Option<i64>, Option<i64>), String> {
    let limit = (MAX_UINT as i128) + 1;
    let convert = |b: &Bound, up: bool| -> Result<i64, String> {
        let d = b.dec()?;
        let v: i128 = if d.int.len() > 30 {
            if d.neg {
                -limit
            } else {
                limit
            }
        } else {
            let mut t = d.clone();
            t.frac.clear();
            let trunc = t.as_int().unwrap_or(0);
            if d.frac.is_empty() {
                match (up, b.exclusive) {
                    (_, false) => trunc,
                    (true, true) => trunc + 1,
                    (false, true) => trunc - 1,
                }
            } else if up {
                // ceil
                if d.neg {
                    trunc
                } else {
                    trunc + 1
                }
            } else if d.neg {
                // floor
                trunc - 1
            } else {
                trunc
            }
        };
        Ok(v.clamp(-limit, limit) as i64)
    };
    Ok((
        lo.map(|b| convert(b, true)).transpose()?,
        hi.map(|b| convert(b, false)).transpose()?,
    ))
}

// ---------------------------------------------------------------------------
// multipleOf

/// The counter automaton of number texts `-?(0|[1-9][0-9]{0,17})` (with
/// `(\.[0-9]+)?` when `fraction`) whose value times `10^d` is an integer
/// divisible by `k`: the state is the remainder modulo `k` of the digits
/// read so far (the integer digits, then up to `d` fraction digits), with
/// the count of integer digits (at most [`MAX_INT_DIGITS`]) or fraction
/// digits; fraction digits past the `d`-th must be zeros.
fn multiple_automaton(k: u64, d: u32, fraction: bool) -> Expr {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    enum S {
        Start,
        Minus,
        Zero,
        Int(u64, u32),
        Frac(u64, u32),
        Tail,
    }
    // p[j] = 10^j mod k.
    let mut p = vec![1 % k];
    for j in 1..=d as usize {
        p.push(p[j - 1] * 10 % k);
    }
    let accepting = |s: S| match s {
        S::Start | S::Minus => false,
        S::Zero | S::Tail => true,
        S::Int(r, _) => r * p[d as usize] % k == 0,
        S::Frac(r, j) => j >= 1 && r * p[(d - j) as usize] % k == 0,
    };
    let next = |s: S, b: u8| -> Option<S> {
        let dig = b.is_ascii_digit().then(|| (b - b'0') as u64);
        match (s, b, dig) {
            (S::Start, b'-', _) => Some(S::Minus),
            (S::Start | S::Minus, b'0', _) => Some(S::Zero),
            (S::Start | S::Minus, _, Some(v)) => Some(S::Int(v % k, 1)),
            (S::Zero, b'.', _) if fraction => Some(S::Frac(0, 0)),
            (S::Int(r, _), b'.', _) if fraction => Some(S::Frac(r, 0)),
            (S::Int(r, n), _, Some(v)) if n < MAX_INT_DIGITS => {
                Some(S::Int((r * 10 + v) % k, n + 1))
            }
            (S::Frac(r, j), _, Some(v)) if j < d => Some(S::Frac((r * 10 + v) % k, j + 1)),
            (S::Frac(0, j), b'0', _) if j == d => Some(S::Tail),
            (S::Tail, b'0', _) => Some(S::Tail),
            _ => None,
        }
    };
    let mut ids: HashMap<S, u32> = HashMap::new();
    let mut states = vec![S::Start];
    ids.insert(S::Start, 0);
    let mut edges: Vec<Vec<(u8, u8, u32)>> = Vec::new();
    let mut i = 0;
    while i < states.len() {
        let s = states[i];
        let mut out: Vec<(u8, u8, u32)> = Vec::new();
        for b in [
            b'-', b'.', b'0', b'1', b'2', b'3', b'4', b'5', b'6', b'7', b'8', b'9',
        ] {
            let Some(t) = next(s, b) else { continue };
            let id = *ids.entry(t).or_insert_with(|| {
                states.push(t);
                (states.len() - 1) as u32
            });
            match out.last_mut() {
                Some(last) if last.2 == id && last.1 + 1 == b => last.1 = b,
                _ => out.push((b, b, id)),
            }
        }
        edges.push(out);
        i += 1;
    }
    let accept: Vec<bool> = states.iter().map(|&s| accepting(s)).collect();
    Expr::Automaton(Rc::new(Automaton::trimmed(0, accept, edges)))
}

fn check_counter(k: u64, d: u32) -> Result<(), String> {
    let states = k as u128 * (MAX_INT_DIGITS + d + 2) as u128;
    if states > MAX_MULTIPLE_STATES as u128 {
        return Err(format!(
            "multipleOf needs a counter of about {states} states (more than {MAX_MULTIPLE_STATES}; \
             the significant digits k of the multiple k·10^-d are limited to k·({} + d) <= {MAX_MULTIPLE_STATES})",
            MAX_INT_DIGITS + 2
        ));
    }
    Ok(())
}

/// Canonical JSON integers (at most [`MAX_INT_DIGITS`] digits, `-0`
/// included, as [`crate::lower::json::json_integer`]) divisible by `k`, as an
/// [`Expr::Automaton`]: a remainder counter over the decimal digits (the
/// sign does not matter) with a digit count, about `20·k` states.
///
/// Refuses `k = 0` and `k` above `MAX_MULTIPLE_STATES / 20` (10 000).
/// Combine with a range through [`crate::automaton::expr::intersect`].
pub fn integer_multiple_of(k: u64) -> Result<Expr, String> {
    if k == 0 {
        return Err("multipleOf must be strictly positive".into());
    }
    check_counter(k, 0)?;
    Ok(multiple_automaton(k, 0, false))
}

/// JSON numbers that are exact multiples of `m = k·10^-d` (any finite
/// positive decimal: `0.01`, `0.5`, `2.5`, `1e-3`, `15`), as an
/// [`Expr::Automaton`]: the text's value times `10^d` must be an integer
/// divisible by `k`, so fraction digits past the `d`-th must be zeros and
/// the integer and first `d` fraction digits feed a remainder counter.
///
/// A subset of the numbers: written without exponent (as with a range),
/// the integer part within [`MAX_INT_DIGITS`] digits. Refuses `m <= 0` and
/// counters of more than [`MAX_MULTIPLE_STATES`] states (`k·(20 + d)`).
pub fn number_multiple_of(m: &serde_json::Number) -> Result<Expr, String> {
    let dec = Dec::parse(&m.to_string())?;
    if dec.neg || dec.is_zero() {
        return Err(format!("multipleOf must be strictly positive, found {m}"));
    }
    let d = dec.frac.len() as u32;
    let all: Vec<u8> = dec.int.iter().chain(&dec.frac).copied().collect();
    let sig = std::str::from_utf8(&all)
        .ok()
        .map(|s| s.trim_start_matches('0'))
        .unwrap_or("");
    let k: u64 = if sig.len() > 18 {
        return Err(format!("multipleOf {m} has too many significant digits"));
    } else {
        sig.parse().map_err(|_| format!("multipleOf {m}"))?
    };
    check_counter(k, d)?;
    Ok(multiple_automaton(k, d, true))
}

// ---------------------------------------------------------------------------
// Canonical JSON string content

/// serde_json's spelling of a character that JSON requires to be escaped.
fn json_escape(c: u32) -> Option<String> {
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
fn any_char() -> Expr {
    json_char(&[('\0', char::MAX)])
}

/// A literal decoded string, canonically written.
fn json_text(s: &str) -> Vec<u8> {
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

// ---------------------------------------------------------------------------
// ECMA-262 patterns

/// Canonical content (between the quotes) of the strings that the ECMA-262
/// regular expression `pattern` matches with search semantics (as
/// `RegExp.prototype.test` with the `u` flag, which JSON Schema asks for):
/// unanchored unless `^` / `$` anchor it.
///
/// `^` and `$` are exact anywhere (start and end of input; there is no
/// multiline flag): `^a|b$`, `(^|x)y`, `a^b` (never matches) all mean what
/// ECMA-262 says. Translated exactly: `\d \D \w \W` (ASCII), `\s \S`
/// (ECMA's set: the Unicode Zs characters, tab, VT, FF, NBSP, ZWNBSP and
/// the line terminators), `.` (any character but `\n \r \u2028 \u2029`),
/// `\t \n \v \f \r \0 \cX \xHH \uHHHH` (a surrogate pair of `\u` escapes is
/// one character) `\u{H…}`, identity escapes of syntax characters and `/`,
/// classes with ranges and class escapes, `[\b]`, `[]` (nothing), `[^]`
/// (anything), `\p{…}` / `\P{…}` (Unicode properties, as regex-syntax knows
/// them), groups `(…)`, `(?:…)`, `(?<name>…)`, greedy and lazy quantifiers.
///
/// Refused, with an `Err` naming the feature: look-ahead and look-behind,
/// `\b` and `\B`, backreferences (`\1`, `\k<name>`), modifier groups
/// (`(?i)`), and what the `u` flag makes a syntax error but older engines
/// read as a literal (a lone `{`, `}` or `]`, `\a` and other identity
/// escapes, `{,n}`, a range with a class escape such as `[\d-z]`, a lone
/// surrogate, quantified assertions).
pub fn pattern_content(pattern: &str) -> Result<Expr, String> {
    let translated = translate(pattern).map_err(|m| format!("pattern {pattern:?}: {m}"))?;
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(true)
        .utf8(true)
        .build()
        .parse(&translated)
        .map_err(|e| {
            let text = e.to_string();
            let last = text
                .lines()
                .rfind(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim()
                .to_string();
            format!("pattern {pattern:?}: {last}")
        })?;
    let f = flagged(&hir).map_err(|m| format!("pattern {pattern:?}: {m}"))?;
    let any = Expr::shared(Expr::star(any_char()));
    let [l00, l01, l10, l11] = f.0;
    let alts = [
        l00.map(|l| seq([any.clone(), l.e, any.clone()])),
        l10.map(|l| seq([l.e, any.clone()])),
        l01.map(|l| seq([any.clone(), l.e])),
        l11.map(|l| l.e),
    ];
    Ok(any_of(alts).unwrap_or_else(nothing))
}

/// ECMA's `\s`: WhiteSpace (tab, VT, FF, space, NBSP, ZWNBSP, the other
/// Unicode Zs characters) and LineTerminator (LF, CR, LS, PS).
const ECMA_SPACE: &str = r"\x{9}-\x{D}\x{20}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

/// A translated escape: one character, or a class in regex-syntax syntax.
enum Atom {
    Char(char),
    Set(String),
}

fn push_char(out: &mut String, c: char) {
    use std::fmt::Write;
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{{{:X}}}", c as u32);
    }
}

fn hex_value(cs: &[char]) -> Option<u32> {
    if cs.is_empty() {
        return None;
    }
    let s: String = cs.iter().collect();
    if !s.chars().all(|c| c.is_ascii_hexdigit()) || s.len() > 8 {
        return None;
    }
    u32::from_str_radix(&s, 16).ok()
}

/// Reads the escape after a `\` at `cs[i]`; returns it and the index after.
fn escape(cs: &[char], i: usize, in_class: bool) -> Result<(Atom, usize), String> {
    let Some(&c) = cs.get(i) else {
        return Err("a trailing backslash".into());
    };
    let set = |s: String| Ok((Atom::Set(s), i + 1));
    let one = |c: char| Ok((Atom::Char(c), i + 1));
    match c {
        'd' => set("[0-9]".into()),
        'D' => set("[^0-9]".into()),
        'w' => set("[A-Za-z0-9_]".into()),
        'W' => set("[^A-Za-z0-9_]".into()),
        's' => set(format!("[{ECMA_SPACE}]")),
        'S' => set(format!("[^{ECMA_SPACE}]")),
        'b' if in_class => one('\u{8}'),
        'b' | 'B' => Err(format!(
            "the word-boundary assertion \\{c} is not supported (no exact automaton here)"
        )),
        't' => one('\t'),
        'n' => one('\n'),
        'v' => one('\u{B}'),
        'f' => one('\u{C}'),
        'r' => one('\r'),
        '0' => {
            if cs.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
                Err("a legacy octal escape (\\0 followed by a digit)".into())
            } else {
                one('\0')
            }
        }
        '1'..='9' => Err(format!(
            "the backreference \\{c} is not supported (not a regular language)"
        )),
        'k' => {
            Err("the named backreference \\k<…> is not supported (not a regular language)".into())
        }
        'c' => match cs.get(i + 1) {
            Some(&l) if l.is_ascii_alphabetic() => {
                Ok((Atom::Char(((l as u8) % 32) as char), i + 2))
            }
            _ => Err("\\c must be followed by an ASCII letter".into()),
        },
        'x' => match cs.get(i + 1..i + 3).and_then(hex_value) {
            Some(v) => Ok((Atom::Char(char::from_u32(v).unwrap_or('\0')), i + 3)),
            None => Err("\\x must be followed by two hex digits".into()),
        },
        'u' => {
            if cs.get(i + 1) == Some(&'{') {
                let end = cs[i + 2..]
                    .iter()
                    .position(|&c| c == '}')
                    .ok_or("an unclosed \\u{…}")?;
                let v = hex_value(&cs[i + 2..i + 2 + end]).ok_or("a malformed \\u{…}")?;
                let c = char::from_u32(v).ok_or("\\u{…} names no Unicode scalar value")?;
                return Ok((Atom::Char(c), i + 3 + end));
            }
            let v = cs
                .get(i + 1..i + 5)
                .and_then(hex_value)
                .ok_or("\\u must be followed by four hex digits or {…}")?;
            if (0xD800..0xDC00).contains(&v) {
                // A high surrogate: with a low one, one character.
                if cs.get(i + 5) == Some(&'\\') && cs.get(i + 6) == Some(&'u') {
                    if let Some(lo) = cs.get(i + 7..i + 11).and_then(hex_value) {
                        if (0xDC00..0xE000).contains(&lo) {
                            let c = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                            let c = char::from_u32(c).ok_or("a bad surrogate pair")?;
                            return Ok((Atom::Char(c), i + 11));
                        }
                    }
                }
                return Err("a lone surrogate \\u escape".into());
            }
            match char::from_u32(v) {
                Some(c) => Ok((Atom::Char(c), i + 5)),
                None => Err("a lone surrogate \\u escape".into()),
            }
        }
        'p' | 'P' => {
            if cs.get(i + 1) != Some(&'{') {
                return Err(format!("\\{c} must be followed by {{…}}"));
            }
            let end = cs[i + 2..]
                .iter()
                .position(|&c| c == '}')
                .ok_or("an unclosed \\p{…}")?;
            let name: String = cs[i + 2..i + 2 + end].iter().collect();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '=')
            {
                return Err(format!("a malformed property escape \\{c}{{{name}}}"));
            }
            Ok((Atom::Set(format!("\\{c}{{{name}}}")), i + 3 + end))
        }
        '^' | '$' | '\\' | '.' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|'
        | '/' => one(c),
        '-' if in_class => one('-'),
        _ => Err(format!(
            "the escape \\{c} (an identity escape, a syntax error with the u flag)"
        )),
    }
}

/// Translates a class starting after its `[`; returns the index after `]`.
fn class(cs: &[char], mut i: usize, out: &mut String) -> Result<usize, String> {
    let negated = cs.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    let mut items = String::new();
    let atom = |i: usize| -> Result<(Atom, usize), String> {
        match cs.get(i) {
            None => Err("an unclosed character class".into()),
            Some('\\') => escape(cs, i + 1, true),
            Some(&c) => Ok((Atom::Char(c), i + 1)),
        }
    };
    loop {
        match cs.get(i) {
            None => return Err("an unclosed character class".into()),
            Some(']') => {
                i += 1;
                break;
            }
            _ => {}
        }
        let (a, ni) = atom(i)?;
        i = ni;
        if cs.get(i) == Some(&'-') && cs.get(i + 1).is_some_and(|&c| c != ']') {
            let (b, ni) = atom(i + 1)?;
            i = ni;
            match (a, b) {
                (Atom::Char(lo), Atom::Char(hi)) => {
                    if lo > hi {
                        return Err("a class range out of order".into());
                    }
                    push_char(&mut items, lo);
                    items.push('-');
                    push_char(&mut items, hi);
                }
                _ => return Err("a class range with a class escape (such as [\\d-z])".into()),
            }
        } else {
            match a {
                Atom::Char(c) => push_char(&mut items, c),
                Atom::Set(s) => items.push_str(&s),
            }
        }
    }
    if items.is_empty() {
        // ECMA's [] matches nothing and [^] any character.
        out.push_str(if negated {
            r"[\x{0}-\x{10FFFF}]"
        } else {
            r"[^\x{0}-\x{10FFFF}]"
        });
    } else {
        out.push('[');
        if negated {
            out.push('^');
        }
        out.push_str(&items);
        out.push(']');
    }
    Ok(i)
}

/// Rewrites an ECMA-262 pattern (u flag) into regex-syntax's syntax with
/// the same meaning; every literal is written as `\x{…}`.
fn translate(p: &str) -> Result<String, String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Prev {
        /// Start, `(` or `|`: nothing to repeat.
        Open,
        Atom,
        Assertion,
        Quantifier,
        Lazy,
    }
    let cs: Vec<char> = p.chars().collect();
    let mut out = String::new();
    let mut prev = Prev::Open;
    let mut i = 0;
    let quantifiable = |prev: Prev| -> Result<(), String> {
        match prev {
            Prev::Atom => Ok(()),
            Prev::Open => Err("a quantifier with nothing to repeat".into()),
            Prev::Assertion => {
                Err("a quantified assertion (a syntax error with the u flag)".into())
            }
            Prev::Quantifier | Prev::Lazy => Err("a quantifier after a quantifier".into()),
        }
    };
    while i < cs.len() {
        let c = cs[i];
        i += 1;
        match c {
            '\\' => {
                let (a, ni) = escape(&cs, i, false)?;
                i = ni;
                match a {
                    Atom::Char(c) => push_char(&mut out, c),
                    Atom::Set(s) => out.push_str(&s),
                }
                prev = Prev::Atom;
            }
            '[' => {
                i = class(&cs, i, &mut out)?;
                prev = Prev::Atom;
            }
            '(' => {
                if cs.get(i) == Some(&'?') {
                    match (cs.get(i + 1), cs.get(i + 2)) {
                        (Some(':'), _) => i += 2,
                        (Some('='), _) | (Some('!'), _) => {
                            return Err("look-ahead (?=…) / (?!…) is not supported".into())
                        }
                        (Some('<'), Some('=')) | (Some('<'), Some('!')) => {
                            return Err("look-behind (?<=…) / (?<!…) is not supported".into())
                        }
                        (Some('<'), _) => {
                            let end = cs[i + 2..]
                                .iter()
                                .position(|&c| c == '>')
                                .ok_or("an unclosed group name")?;
                            let name = &cs[i + 2..i + 2 + end];
                            if name.is_empty()
                                || !name
                                    .iter()
                                    .all(|&c| c.is_alphanumeric() || c == '_' || c == '$')
                            {
                                return Err("a malformed group name".into());
                            }
                            i += 3 + end;
                        }
                        _ => return Err("a modifier group (?…) is not supported".into()),
                    }
                }
                out.push_str("(?:");
                prev = Prev::Open;
            }
            ')' => {
                out.push(')');
                prev = Prev::Atom;
            }
            '|' => {
                out.push('|');
                prev = Prev::Open;
            }
            '^' | '$' => {
                out.push(c);
                prev = Prev::Assertion;
            }
            '*' | '+' => {
                quantifiable(prev)?;
                out.push(c);
                prev = Prev::Quantifier;
            }
            '?' => {
                if prev == Prev::Quantifier {
                    out.push('?');
                    prev = Prev::Lazy;
                } else {
                    quantifiable(prev)?;
                    out.push('?');
                    prev = Prev::Quantifier;
                }
            }
            '{' => {
                let end = cs[i..].iter().position(|&c| c == '}');
                let body: Option<String> = end.map(|e| cs[i..i + e].iter().collect());
                let ok = body.as_deref().is_some_and(|b| {
                    let mut parts = b.splitn(2, ',');
                    let n = parts.next().unwrap_or("");
                    let m = parts.next();
                    !n.is_empty()
                        && n.bytes().all(|b| b.is_ascii_digit())
                        && m.is_none_or(|m| m.bytes().all(|b| b.is_ascii_digit()))
                });
                let (Some(end), Some(body), true) = (end, body, ok) else {
                    return Err("a lone '{' (a syntax error with the u flag)".into());
                };
                quantifiable(prev)?;
                out.push('{');
                out.push_str(&body);
                out.push('}');
                i += end + 1;
                prev = Prev::Quantifier;
            }
            '}' | ']' => {
                return Err(format!("a lone '{c}' (a syntax error with the u flag)"));
            }
            '.' => {
                out.push_str(r"[^\x{A}\x{D}\x{2028}\x{2029}]");
                prev = Prev::Atom;
            }
            c => {
                push_char(&mut out, c);
                prev = Prev::Atom;
            }
        }
    }
    Ok(out)
}

/// A language with whether it holds the empty string.
#[derive(Clone)]
struct Lang {
    e: Expr,
    nullable: bool,
}

impl Lang {
    fn empty() -> Lang {
        Lang {
            e: Expr::Empty,
            nullable: true,
        }
    }

    fn shared(self) -> Lang {
        let e = match self.e {
            e @ (Expr::Empty | Expr::Bytes(_) | Expr::Shared(_)) => e,
            e => Expr::shared(e),
        };
        Lang { e, ..self }
    }
}

fn lang_seq(a: Lang, b: Lang) -> Lang {
    Lang {
        nullable: a.nullable && b.nullable,
        e: Expr::seq([a.e, b.e]),
    }
}

fn lang_union(a: Option<Lang>, b: Option<Lang>) -> Option<Lang> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => Some(Lang {
            nullable: a.nullable || b.nullable,
            e: Expr::alt([a.e, b.e]),
        }),
    }
}

fn lang_star(a: Option<Lang>) -> Lang {
    match a {
        None => Lang::empty(),
        Some(a) => Lang {
            nullable: true,
            e: Expr::star(a.e),
        },
    }
}

/// The strings a sub-pattern matches, split by the anchors its path went
/// through: index `2·s + e`, `s` = a `^` was passed (no character may come
/// before it in the whole match, and the match starts the input), `e` = a
/// `$` was passed (no character may follow, and the match ends the input).
/// Paths that consume a character before a `^` or after a `$` are dropped.
#[derive(Clone)]
struct Flagged([Option<Lang>; 4]);

impl Flagged {
    fn none() -> Flagged {
        Flagged([None, None, None, None])
    }

    fn plain(l: Option<Lang>) -> Flagged {
        Flagged([l, None, None, None])
    }

    fn is_plain(&self) -> bool {
        self.0[1..].iter().all(Option::is_none)
    }

    fn shared(self) -> Flagged {
        Flagged(self.0.map(|l| l.map(Lang::shared)))
    }
}

fn flag_alt(a: Flagged, b: Flagged) -> Flagged {
    let [a0, a1, a2, a3] = a.0;
    let [b0, b1, b2, b3] = b.0;
    Flagged([
        lang_union(a0, b0),
        lang_union(a1, b1),
        lang_union(a2, b2),
        lang_union(a3, b3),
    ])
}

fn flag_concat(a: Flagged, b: Flagged) -> Flagged {
    if a.is_plain() && b.is_plain() {
        let [a0, ..] = a.0;
        let [b0, ..] = b.0;
        return Flagged::plain(a0.zip(b0).map(|(x, y)| lang_seq(x, y)));
    }
    let (a, b) = (a.shared(), b.shared());
    let mut out = Flagged::none();
    for ia in 0..4 {
        for ib in 0..4 {
            let (Some(la), Some(lb)) = (&a.0[ia], &b.0[ib]) else {
                continue;
            };
            let (sa, ea, sb, eb) = (ia >> 1, ia & 1, ib >> 1, ib & 1);
            // A `^` in b: nothing of a may come before it; a `$` in a:
            // nothing of b may come after it.
            let left = if sb == 1 {
                if !la.nullable {
                    continue;
                }
                Lang::empty()
            } else {
                la.clone()
            };
            let right = if ea == 1 {
                if !lb.nullable {
                    continue;
                }
                Lang::empty()
            } else {
                lb.clone()
            };
            let k = ((sa | sb) << 1) | (ea | eb);
            let prev = out.0[k].take();
            out.0[k] = lang_union(prev, Some(lang_seq(left, right)));
        }
    }
    out
}

/// `r*`: iterations with a `^` must come first among the non-empty ones,
/// those with a `$` last.
fn flag_star(r: Flagged) -> Flagged {
    let r = r.shared();
    let [r00, r01, r10, r11] = r.0;
    let star = lang_star(r00).shared();
    let l10 = r10.clone().map(|x| lang_seq(x, star.clone()));
    let l01 = r01.clone().map(|x| lang_seq(star.clone(), x));
    let l11 = lang_union(
        r11,
        r10.zip(r01)
            .map(|(a, b)| lang_seq(lang_seq(a, star.clone()), b)),
    );
    Flagged([Some(star), l01, l10, l11])
}

fn flag_repeat(r: Flagged, min: u32, max: Option<u32>) -> Result<Flagged, String> {
    if r.is_plain() {
        let [r0, ..] = r.0;
        return Ok(Flagged::plain(match r0 {
            None => (min == 0).then(Lang::empty),
            Some(l) => Some(Lang {
                nullable: min == 0 || l.nullable,
                e: Expr::repeat(l.e, min, max),
            }),
        }));
    }
    const UNROLL: u32 = 64;
    if min > UNROLL || max.is_some_and(|m| m > UNROLL) {
        return Err(format!(
            "a group with ^ or $ repeated more than {UNROLL} times"
        ));
    }
    let r = r.shared();
    let mut out = Flagged::plain(Some(Lang::empty()));
    for _ in 0..min {
        out = flag_concat(out, r.clone());
    }
    match max {
        None => out = flag_concat(out, flag_star(r)),
        Some(m) => {
            let opt = flag_alt(r, Flagged::plain(Some(Lang::empty())));
            for _ in min..m {
                out = flag_concat(out, opt.clone());
            }
        }
    }
    Ok(out)
}

/// The [`Flagged`] languages of a regex-syntax HIR, each character written
/// canonically as JSON string content.
fn flagged(h: &Hir) -> Result<Flagged, String> {
    Ok(match h.kind() {
        HirKind::Empty => Flagged::plain(Some(Lang::empty())),
        HirKind::Literal(l) => {
            let s = std::str::from_utf8(&l.0).map_err(|_| "a literal that is not UTF-8")?;
            Flagged::plain(Some(Lang {
                nullable: s.is_empty(),
                e: Expr::Bytes(json_text(s)),
            }))
        }
        HirKind::Class(Class::Unicode(c)) => Flagged::plain(if c.ranges().is_empty() {
            None
        } else {
            let ranges: Vec<(char, char)> =
                c.ranges().iter().map(|r| (r.start(), r.end())).collect();
            Some(Lang {
                nullable: false,
                e: json_char(&ranges),
            })
        }),
        // regex-syntax writes a class that matches nothing as an empty byte
        // class; an ASCII byte class is the same characters.
        HirKind::Class(Class::Bytes(c)) => {
            if c.ranges().iter().any(|r| r.end() >= 0x80) {
                return Err("a byte class reaching past ASCII (not Unicode text)".into());
            }
            Flagged::plain((!c.ranges().is_empty()).then(|| {
                Lang {
                    nullable: false,
                    e: json_char(
                        &c.ranges()
                            .iter()
                            .map(|r| (r.start() as char, r.end() as char))
                            .collect::<Vec<_>>(),
                    ),
                }
            }))
        }
        HirKind::Look(Look::Start) => Flagged([None, None, Some(Lang::empty()), None]),
        HirKind::Look(Look::End) => Flagged([None, Some(Lang::empty()), None, None]),
        HirKind::Look(l) => return Err(format!("the assertion {l:?} is not supported")),
        HirKind::Repetition(r) => flag_repeat(flagged(&r.sub)?, r.min, r.max)?,
        HirKind::Capture(c) => flagged(&c.sub)?,
        HirKind::Concat(v) => {
            let mut out = Flagged::plain(Some(Lang::empty()));
            for x in v {
                out = flag_concat(out, flagged(x)?);
            }
            out
        }
        HirKind::Alternation(v) => {
            let mut out = Flagged::none();
            for x in v {
                out = flag_alt(out, flagged(x)?);
            }
            out
        }
    })
}

// ---------------------------------------------------------------------------
// Formats

fn alpha() -> Expr {
    bytes(&[(b'A', b'Z'), (b'a', b'z')])
}

fn hexdig() -> Expr {
    bytes(&[(b'0', b'9'), (b'A', b'F'), (b'a', b'f')])
}

/// RFC 3339 `full-date`, with exact month lengths and Gregorian leap years
/// (0000 included: divisible by 400).
fn date() -> Expr {
    let year = digits(4, Some(4));
    let m31 = Expr::alt([
        seq([
            lit("0"),
            bytes(&[(b'1', b'1'), (b'3', b'3'), (b'5', b'5'), (b'7', b'8')]),
        ]),
        seq([lit("1"), bytes(&[(b'0', b'0'), (b'2', b'2')])]),
    ]);
    let m30 = Expr::alt([
        seq([lit("0"), bytes(&[(b'4', b'4'), (b'6', b'6'), (b'9', b'9')])]),
        lit("11"),
    ]);
    let day28 = || {
        Expr::alt([
            seq([lit("0"), bytes(&[(b'1', b'9')])]),
            seq([lit("1"), digit()]),
            seq([lit("2"), bytes(&[(b'0', b'8')])]),
        ])
    };
    let day30 = || Expr::alt([day28(), lit("29"), lit("30")]);
    let day31 = Expr::alt([day30(), lit("31")]);
    let common = seq([
        year,
        lit("-"),
        Expr::alt([
            seq([m31, lit("-"), day31]),
            seq([m30, lit("-"), day30()]),
            seq([lit("02-"), day28()]),
        ]),
    ]);
    // Two digits divisible by 4.
    let div4 = || {
        Expr::alt([
            seq([
                bytes(&[
                    (b'0', b'0'),
                    (b'2', b'2'),
                    (b'4', b'4'),
                    (b'6', b'6'),
                    (b'8', b'8'),
                ]),
                bytes(&[(b'0', b'0'), (b'4', b'4'), (b'8', b'8')]),
            ]),
            seq([
                bytes(&[
                    (b'1', b'1'),
                    (b'3', b'3'),
                    (b'5', b'5'),
                    (b'7', b'7'),
                    (b'9', b'9'),
                ]),
                bytes(&[(b'2', b'2'), (b'6', b'6')]),
            ]),
        ])
    };
    let not_century_div4 = Expr::alt([
        seq([lit("0"), bytes(&[(b'4', b'4'), (b'8', b'8')])]),
        seq([
            bytes(&[(b'2', b'2'), (b'4', b'4'), (b'6', b'6'), (b'8', b'8')]),
            bytes(&[(b'0', b'0'), (b'4', b'4'), (b'8', b'8')]),
        ]),
        seq([
            bytes(&[
                (b'1', b'1'),
                (b'3', b'3'),
                (b'5', b'5'),
                (b'7', b'7'),
                (b'9', b'9'),
            ]),
            bytes(&[(b'2', b'2'), (b'6', b'6')]),
        ]),
    ]);
    let leap_year = Expr::alt([
        seq([digit(), digit(), not_century_div4]),
        seq([div4(), lit("00")]),
    ]);
    Expr::alt([common, seq([leap_year, lit("-02-29")])])
}

/// RFC 3339 `full-time` without the leap second `:60` (a subset).
fn time() -> Expr {
    let hour = || {
        Expr::alt([
            seq([bytes(&[(b'0', b'1')]), digit()]),
            seq([lit("2"), bytes(&[(b'0', b'3')])]),
        ])
    };
    let minsec = || seq([bytes(&[(b'0', b'5')]), digit()]);
    let frac = Expr::opt(seq([lit("."), digits(1, None)]));
    let offset = Expr::alt([
        bytes(&[(b'Z', b'Z'), (b'z', b'z')]),
        seq([
            bytes(&[(b'+', b'+'), (b'-', b'-')]),
            hour(),
            lit(":"),
            minsec(),
        ]),
    ]);
    seq([hour(), lit(":"), minsec(), lit(":"), minsec(), frac, offset])
}

fn date_time() -> Expr {
    seq([date(), bytes(&[(b'T', b'T'), (b't', b't')]), time()])
}

/// RFC 3339 Appendix A `duration` (the ABNF JSON Schema cites), with the
/// designators in uppercase only: ABNF strings are case-insensitive, so
/// `p1d` is valid by the letter of the grammar, but ISO 8601 writes them
/// uppercase and validators differ (a subset).
fn duration() -> Expr {
    let n = || digits(1, None);
    let unit = |u: &str| seq([n(), lit(u)]);
    let second = || unit("S");
    let minute = || seq([unit("M"), Expr::opt(second())]);
    let hour = seq([unit("H"), Expr::opt(minute())]);
    let time = || seq([lit("T"), Expr::alt([hour.clone(), minute(), second()])]);
    let day = || unit("D");
    let month = || seq([unit("M"), Expr::opt(day())]);
    let year = seq([unit("Y"), Expr::opt(month())]);
    let date = seq([Expr::alt([day(), month(), year]), Expr::opt(time())]);
    seq([lit("P"), Expr::alt([date, time(), unit("W")])])
}

fn dec_octet() -> Expr {
    Expr::alt([
        digit(),
        seq([bytes(&[(b'1', b'9')]), digit()]),
        seq([lit("1"), digit(), digit()]),
        seq([lit("2"), bytes(&[(b'0', b'4')]), digit()]),
        seq([lit("25"), bytes(&[(b'0', b'5')])]),
    ])
}

/// Dotted quad, each part 0–255 without leading zeros.
fn ipv4() -> Expr {
    seq([
        dec_octet(),
        Expr::repeat(seq([lit("."), dec_octet()]), 3, Some(3)),
    ])
}

/// RFC 4291 text forms, as RFC 3986's `IPv6address` (`::` compression and
/// an embedded IPv4 address; no zone id).
fn ipv6() -> Expr {
    let h16 = || Expr::repeat(hexdig(), 1, Some(4));
    let h16c = |n: u32| Expr::repeat(seq([h16(), lit(":")]), n, Some(n));
    let ls32 = || Expr::alt([seq([h16(), lit(":"), h16()]), ipv4()]);
    // [ *n( h16 ":" ) h16 ]
    let head = |n: u32| {
        Expr::opt(seq([
            Expr::repeat(seq([h16(), lit(":")]), 0, Some(n)),
            h16(),
        ]))
    };
    Expr::alt([
        seq([h16c(6), ls32()]),
        seq([lit("::"), h16c(5), ls32()]),
        seq([Expr::opt(h16()), lit("::"), h16c(4), ls32()]),
        seq([head(1), lit("::"), h16c(3), ls32()]),
        seq([head(2), lit("::"), h16c(2), ls32()]),
        seq([head(3), lit("::"), h16c(1), ls32()]),
        seq([head(4), lit("::"), ls32()]),
        seq([head(5), lit("::"), h16()]),
        seq([head(6), lit("::")]),
    ])
}

/// An LDH label of 1 to `max` characters (letters, digits, hyphens; no
/// hyphen first or last) without `--` in the third and fourth places (the
/// reserved R-LDH labels, `xn--` A-labels among them).
fn label(max: u32) -> Expr {
    debug_assert!(max >= 5);
    let an = || bytes(&[(b'0', b'9'), (b'A', b'Z'), (b'a', b'z')]);
    let ldh = || bytes(&[(b'-', b'-'), (b'0', b'9'), (b'A', b'Z'), (b'a', b'z')]);
    Expr::alt([
        an(),
        seq([an(), an()]),
        seq([an(), ldh(), an()]),
        seq([an(), ldh(), ldh(), an()]),
        // Five or more: the third and fourth are not both hyphens.
        seq([
            an(),
            ldh(),
            Expr::alt([seq([an(), ldh()]), seq([lit("-"), an()])]),
            Expr::repeat(ldh(), 0, Some(max.saturating_sub(5))),
            an(),
        ]),
    ])
}

/// RFC 1123 host names, a subset: 1 to 4 labels (see [`label`]) of at most
/// 63 characters, the last of four at most 61, so the name stays within
/// 253 characters; no trailing dot.
fn hostname() -> Expr {
    Expr::alt([
        seq([
            label(63),
            Expr::repeat(seq([lit("."), label(63)]), 0, Some(2)),
        ]),
        seq([
            label(63),
            lit("."),
            label(63),
            lit("."),
            label(63),
            lit("."),
            label(61),
        ]),
    ])
}

/// A subset of RFC 5321 mailboxes: a dot-atom local part of at most 64
/// characters, `@`, then 2 to 4 labels of at most 46 characters (so the
/// whole address stays within 254), or an address literal `[IPv4]` /
/// `[IPv6:…]`. No quoted local parts, no general address literals.
fn email() -> Expr {
    let atext = || {
        bytes(&[
            (b'!', b'!'),
            (b'#', b'\''),
            (b'*', b'+'),
            (b'-', b'-'),
            (b'/', b'9'),
            (b'=', b'='),
            (b'?', b'?'),
            (b'A', b'Z'),
            (b'^', b'~'),
        ])
    };
    let dot_atom = seq([
        Expr::repeat(atext(), 1, None),
        Expr::star(seq([lit("."), Expr::repeat(atext(), 1, None)])),
    ]);
    let local = expr::intersect(
        &[dot_atom, Expr::repeat(bytes(&[(0x21, 0x7E)]), 1, Some(64))],
        10_000,
    )
    .unwrap_or_else(|_| nothing());
    let domain = seq([
        label(46),
        Expr::repeat(seq([lit("."), label(46)]), 1, Some(3)),
    ]);
    let literal = Expr::alt([
        seq([lit("["), ipv4(), lit("]")]),
        seq([lit("[IPv6:"), ipv6(), lit("]")]),
    ]);
    seq([local, lit("@"), Expr::alt([domain, literal])])
}

fn uuid() -> Expr {
    let h = |n: u32| Expr::repeat(hexdig(), n, Some(n));
    seq([
        h(8),
        lit("-"),
        h(4),
        lit("-"),
        h(4),
        lit("-"),
        h(4),
        lit("-"),
        h(12),
    ])
}

/// RFC 3987 `ucschar`.
const UCSCHAR: &[(char, char)] = &[
    ('\u{A0}', '\u{D7FF}'),
    ('\u{F900}', '\u{FDCF}'),
    ('\u{FDF0}', '\u{FFEF}'),
    ('\u{10000}', '\u{1FFFD}'),
    ('\u{20000}', '\u{2FFFD}'),
    ('\u{30000}', '\u{3FFFD}'),
    ('\u{40000}', '\u{4FFFD}'),
    ('\u{50000}', '\u{5FFFD}'),
    ('\u{60000}', '\u{6FFFD}'),
    ('\u{70000}', '\u{7FFFD}'),
    ('\u{80000}', '\u{8FFFD}'),
    ('\u{90000}', '\u{9FFFD}'),
    ('\u{A0000}', '\u{AFFFD}'),
    ('\u{B0000}', '\u{BFFFD}'),
    ('\u{C0000}', '\u{CFFFD}'),
    ('\u{D0000}', '\u{DFFFD}'),
    ('\u{E1000}', '\u{EFFFD}'),
];

/// RFC 3987 `iprivate`.
const IPRIVATE: &[(char, char)] = &[
    ('\u{E000}', '\u{F8FF}'),
    ('\u{F0000}', '\u{FFFFD}'),
    ('\u{100000}', '\u{10FFFD}'),
];

/// The RFC 3986 grammar (`iri`: RFC 3987's, with `ucschar` among the
/// unreserved characters and `iprivate` in the query). Returns the absolute
/// form and the reference form.
fn uri_grammar(iri: bool) -> (Expr, Expr) {
    let ascii_unreserved = || {
        bytes(&[
            (b'-', b'.'),
            (b'0', b'9'),
            (b'A', b'Z'),
            (b'_', b'_'),
            (b'a', b'z'),
            (b'~', b'~'),
        ])
    };
    let unreserved = || {
        if iri {
            Expr::alt([ascii_unreserved(), Expr::CharClass(UCSCHAR.to_vec())])
        } else {
            ascii_unreserved()
        }
    };
    let pct = || seq([lit("%"), hexdig(), hexdig()]);
    let sub_delims = || {
        bytes(&[
            (b'!', b'!'),
            (b'$', b'$'),
            (b'&', b','),
            (b';', b';'),
            (b'=', b'='),
        ])
    };
    let pchar = || {
        Expr::alt([
            unreserved(),
            pct(),
            sub_delims(),
            bytes(&[(b':', b':'), (b'@', b'@')]),
        ])
    };
    let segment = || Expr::star(pchar());
    let segment_nz = || Expr::repeat(pchar(), 1, None);
    let segment_nz_nc = Expr::repeat(
        Expr::alt([unreserved(), pct(), sub_delims(), lit("@")]),
        1,
        None,
    );
    let slash_segments = || Expr::star(seq([lit("/"), segment()]));
    let query = {
        let mut q = vec![pchar(), bytes(&[(b'/', b'/'), (b'?', b'?')])];
        if iri {
            q.push(Expr::CharClass(IPRIVATE.to_vec()));
        }
        Expr::star(Expr::alt(q))
    };
    let fragment = Expr::star(Expr::alt([pchar(), bytes(&[(b'/', b'/'), (b'?', b'?')])]));
    let scheme = seq([
        alpha(),
        Expr::star(bytes(&[
            (b'+', b'+'),
            (b'-', b'.'),
            (b'0', b'9'),
            (b'A', b'Z'),
            (b'a', b'z'),
        ])),
    ]);
    let userinfo = Expr::star(Expr::alt([unreserved(), pct(), sub_delims(), lit(":")]));
    // ABNF strings are case-insensitive: "v" is v or V.
    let ipvfuture = seq([
        bytes(&[(b'V', b'V'), (b'v', b'v')]),
        Expr::repeat(hexdig(), 1, None),
        lit("."),
        Expr::repeat(
            Expr::alt([ascii_unreserved(), sub_delims(), lit(":")]),
            1,
            None,
        ),
    ]);
    let ip_literal = seq([lit("["), Expr::alt([ipv6(), ipvfuture]), lit("]")]);
    let reg_name = Expr::star(Expr::alt([unreserved(), pct(), sub_delims()]));
    let host = Expr::alt([ip_literal, reg_name]);
    let authority = seq([
        Expr::opt(seq([userinfo, lit("@")])),
        host,
        Expr::opt(seq([lit(":"), digits(0, None)])),
    ]);
    let net = Expr::shared(seq([lit("//"), authority, slash_segments()]));
    let path_absolute = Expr::shared(seq([
        lit("/"),
        Expr::opt(seq([segment_nz(), slash_segments()])),
    ]));
    let path_rootless = seq([segment_nz(), slash_segments()]);
    let path_noscheme = seq([segment_nz_nc, slash_segments()]);
    let tail = Expr::shared(seq([
        Expr::opt(seq([lit("?"), query])),
        Expr::opt(seq([lit("#"), fragment])),
    ]));
    let absolute = Expr::shared(seq([
        scheme,
        lit(":"),
        Expr::alt([
            net.clone(),
            path_absolute.clone(),
            path_rootless,
            Expr::Empty,
        ]),
        tail.clone(),
    ]));
    let relative = seq([
        Expr::alt([net, path_absolute, path_noscheme, Expr::Empty]),
        tail,
    ]);
    (absolute.clone(), Expr::alt([absolute, relative]))
}

/// RFC 6901 JSON Pointer; the reference tokens hold any characters
/// (written canonically), `~` only as `~0` / `~1`.
fn json_pointer() -> Expr {
    let unescaped = json_char(&[('\0', '.'), ('0', '}'), ('\u{7F}', char::MAX)]);
    Expr::star(seq([
        lit("/"),
        Expr::star(Expr::alt([unescaped, lit("~0"), lit("~1")])),
    ]))
}

/// Relative JSON Pointer: a non-negative integer, then `#` or a JSON
/// Pointer.
fn relative_json_pointer() -> Expr {
    seq([
        Expr::alt([lit("0"), seq([bytes(&[(b'1', b'9')]), digits(0, None)])]),
        Expr::alt([lit("#"), json_pointer()]),
    ])
}

/// RFC 6570 URI Templates, a subset: the operators reserved for future
/// extensions (`= , ! @ |`) are left out.
fn uri_template() -> Expr {
    let pct = || seq([lit("%"), hexdig(), hexdig()]);
    let mut literal_chars: Vec<(char, char)> = vec![
        ('!', '!'),
        ('#', '$'),
        ('&', '&'),
        ('(', ';'),
        ('=', '='),
        ('?', '['),
        (']', ']'),
        ('_', '_'),
        ('a', 'z'),
        ('~', '~'),
    ];
    literal_chars.extend_from_slice(UCSCHAR);
    literal_chars.extend_from_slice(IPRIVATE);
    let literal = Expr::alt([Expr::CharClass(literal_chars), pct()]);
    let varchar = || {
        Expr::alt([
            bytes(&[(b'0', b'9'), (b'A', b'Z'), (b'_', b'_'), (b'a', b'z')]),
            pct(),
        ])
    };
    let varname = seq([varchar(), Expr::star(seq([Expr::opt(lit(".")), varchar()]))]);
    let modifier = Expr::alt([
        seq([lit(":"), bytes(&[(b'1', b'9')]), digits(0, Some(3))]),
        lit("*"),
    ]);
    let varspec = Expr::shared(seq([varname, Expr::opt(modifier)]));
    let operator = bytes(&[
        (b'#', b'#'),
        (b'&', b'&'),
        (b'+', b'+'),
        (b'.', b'/'),
        (b';', b';'),
        (b'?', b'?'),
    ]);
    let expression = seq([
        lit("{"),
        Expr::opt(operator),
        varspec.clone(),
        Expr::star(seq([lit(","), varspec])),
        lit("}"),
    ]);
    Expr::star(Expr::alt([literal, expression]))
}

/// The canonical content (between the quotes) of the strings valid for a
/// format; `None` for a format not known here.
fn format_content(name: &str) -> Option<Expr> {
    Some(match name {
        "date" => date(),
        "time" => time(),
        "date-time" => date_time(),
        "duration" => duration(),
        "email" | "idn-email" => email(),
        "hostname" | "idn-hostname" => hostname(),
        "ipv4" => ipv4(),
        "ipv6" => ipv6(),
        "uri" => uri_grammar(false).0,
        "uri-reference" => uri_grammar(false).1,
        "iri" => uri_grammar(true).0,
        "iri-reference" => uri_grammar(true).1,
        "uuid" => uuid(),
        "json-pointer" => json_pointer(),
        "relative-json-pointer" => relative_json_pointer(),
        "uri-template" => uri_template(),
        _ => return None,
    })
}

/// Whether [`format_string`] gives a format's whole language (`true`) or a
/// subset (`false`); `None` for formats not known here.
pub fn format_is_exact(name: &str) -> Option<bool> {
    Some(match name {
        "date"
        | "ipv4"
        | "ipv6"
        | "uri"
        | "uri-reference"
        | "iri"
        | "iri-reference"
        | "uuid"
        | "json-pointer"
        | "relative-json-pointer" => true,
        "time" | "date-time" | "duration" | "email" | "idn-email" | "hostname" | "idn-hostname"
        | "uri-template" => false,
        _ => return None,
    })
}

/// The whole JSON string (quotes included) of the values valid for the
/// format `name`, written canonically; `None` for unknown names.
///
/// Exact: `date` (RFC 3339 full-date: month lengths, leap years), `ipv4` (dotted quad, 0–255, no leading zeros),
/// `ipv6` (every RFC 4291 text form: `::`, embedded IPv4; no zone id),
/// `uri` / `uri-reference` (the RFC 3986 grammar), `iri` / `iri-reference`
/// (RFC 3987), `uuid` (8-4-4-4-12 hex digits, any case), `json-pointer`,
/// `relative-json-pointer`.
///
/// Subsets: `time` and `date-time` (RFC 3339, `T`/`t`, `Z`/`z` or ±hh:mm,
/// fractional seconds, but no leap second `:60`); `duration` (RFC 3339
/// Appendix A with uppercase designators only); `hostname` (1 to 4 LDH
/// labels of at most 63 characters, the fourth at most 61 so the name stays
/// within 253; no label with `--` in its third and fourth places, so no
/// `xn--` A-labels); `email` (dot-atom local part of at most 64 characters;
/// 2 to 4 such labels of at most 46 characters, or an `[IPv4]` / `[IPv6:…]`
/// literal; no quoted local parts); `idn-hostname` and `idn-email` (their
/// ASCII subsets, the same as `hostname` and `email`); `uri-template`
/// (RFC 6570 without the reserved operators `= , ! @ |`).
pub fn format_string(name: &str) -> Option<Expr> {
    format_content(name).map(|c| seq([lit("\""), c, lit("\"")]))
}

// ---------------------------------------------------------------------------
// Strings

/// Whether no string at all is in `e`'s language.
fn is_empty_lang(e: &Expr, max_states: usize) -> Result<bool, String> {
    let nfa =
        crate::automaton::nfa::build(e, max_states.saturating_mul(4)).map_err(|l| l.to_string())?;
    let mut seen = vec![false; nfa.states.len()];
    let mut stack = vec![nfa.start];
    seen[nfa.start as usize] = true;
    while let Some(s) = stack.pop() {
        if s == nfa.accept {
            return Ok(false);
        }
        let st = &nfa.states[s as usize];
        for t in st.eps.iter().copied().chain(st.ranges.iter().map(|r| r.2)) {
            if !seen[t as usize] {
                seen[t as usize] = true;
                stack.push(t);
            }
        }
    }
    Ok(true)
}

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
    use crate::automaton::dfa::Dfa;
    use serde_json::Value;
    use std::path::{Path, PathBuf};

    fn dfa(e: &Expr) -> Dfa {
        let nfa = crate::automaton::nfa::build(e, 50_000_000).expect("NFA within bounds");
        Dfa::determinize(&nfa, 5_000_000).expect("DFA within bounds")
    }

    /// xorshift64*.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.below(100) < percent
        }
        fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
            &xs[self.below(xs.len() as u64) as usize]
        }
        fn digits(&mut self, n: usize, zero_bias: u64) -> String {
            (0..n)
                .map(|_| {
                    if self.chance(zero_bias) {
                        '0'
                    } else {
                        (b'0' + self.below(10) as u8) as char
                    }
                })
                .collect()
        }
    }

    // -----------------------------------------------------------------
    // Integers

    fn int_ok(lo: Option<i64>, hi: Option<i64>, n: i128) -> bool {
        n.abs() <= MAX_UINT as i128
            && lo.is_none_or(|l| n >= l as i128)
            && hi.is_none_or(|h| n <= h as i128)
    }

    const NOT_INTEGERS: &[&str] = &[
        "", "-", "+1", "01", "-01", "00", "-00", "1.0", "1e2", " 1", "1 ", "--1", "0x1", "1-",
        "+0", "١",
    ];

    #[test]
    fn integer_range_matches_reference() {
        let max = MAX_UINT as i64;
        let mut pairs: Vec<(Option<i64>, Option<i64>)> = vec![
            (None, None),
            (Some(0), Some(0)),
            (Some(-5), Some(17)),
            (Some(1), Some(1)),
            (Some(-100), Some(-7)),
            (Some(10), None),
            (None, Some(-3)),
            (None, Some(0)),
            (Some(0), None),
            (Some(-1), Some(1)),
            (Some(19), Some(21)),
            (Some(99), Some(1000)),
            (Some(100), Some(999)),
            (Some(101), Some(998)),
            (Some(123_456), Some(987_654_321)),
            (Some(i64::MIN), Some(i64::MAX)),
            (Some(i64::MIN), Some(i64::MIN + 5)),
            (Some(-max), Some(-max + 10)),
            (Some(max - 10), None),
            (Some(max), Some(max)),
            (Some(max), Some(i64::MAX)),
            (Some(-9_999), Some(9_999)),
            (Some(-10_000), Some(10_000)),
            (Some(1_000_000_000), Some(1_000_000_001)),
            (Some(-1_000_000_007), Some(-999_999_993)),
            (Some(8_888), Some(888_888)),
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let random = |rng: &mut Rng| -> i64 {
            let len = 1 + rng.below(19) as u32;
            let v = (rng.next() % 10u64.pow(len.min(18))) as i64;
            if rng.chance(40) {
                -v
            } else {
                v
            }
        };
        for _ in 0..80 {
            let (a, b) = (random(&mut rng), random(&mut rng));
            let (a, b) = (a.min(b), a.max(b));
            let lo = (!rng.chance(15)).then_some(a);
            let hi = (!rng.chance(15)).then_some(b);
            pairs.push((lo, hi));
        }
        let mut checked = 0usize;
        for &(lo, hi) in &pairs {
            let e = match integer_range(lo, hi) {
                Ok(e) => e,
                Err(_) => {
                    let l = lo.map_or(-(MAX_UINT as i128), |v| {
                        (v as i128).max(-(MAX_UINT as i128))
                    });
                    let h = hi.map_or(MAX_UINT as i128, |v| (v as i128).min(MAX_UINT as i128));
                    assert!(
                        l > h,
                        "integer_range({lo:?}, {hi:?}) refused a non-empty range"
                    );
                    continue;
                }
            };
            let d = dfa(&e);
            let mut centers: Vec<i128> = vec![0, MAX_UINT as i128, -(MAX_UINT as i128)];
            for k in 1..=18u32 {
                centers.push(10i128.pow(k));
                centers.push(-(10i128.pow(k)));
            }
            centers.extend(lo.map(|v| v as i128));
            centers.extend(hi.map(|v| v as i128));
            for c in centers {
                for n in c - 25..=c + 25 {
                    let ok = int_ok(lo, hi, n);
                    assert_eq!(
                        d.accepts(n.to_string().as_bytes()),
                        ok,
                        "integer_range({lo:?}, {hi:?}) on {n}"
                    );
                    checked += 1;
                }
            }
            for _ in 0..1500 {
                let n = random(&mut rng) as i128;
                let n = if rng.chance(3) { n * 10 } else { n };
                assert_eq!(
                    d.accepts(n.to_string().as_bytes()),
                    int_ok(lo, hi, n),
                    "integer_range({lo:?}, {hi:?}) on {n}"
                );
                checked += 1;
            }
            assert_eq!(d.accepts(b"-0"), int_ok(lo, hi, 0), "-0 in {lo:?}..{hi:?}");
            for s in NOT_INTEGERS {
                assert!(
                    !d.accepts(s.as_bytes()),
                    "integer_range({lo:?}, {hi:?}) accepts {s:?}"
                );
            }
        }
        println!(
            "integer_range: {} ranges, {checked} integers checked",
            pairs.len()
        );
        assert!(integer_range(Some(5), Some(4)).is_err());
        assert!(integer_range(Some(1_000_000_000_000_000_000), None).is_err());
        assert!(integer_range(None, Some(-1_000_000_000_000_000_000)).is_err());
        // Unbounded is json_integer's language.
        let all = dfa(&integer_range(None, None).unwrap());
        let reference = dfa(&crate::lower::json::json_integer());
        let mut rng = Rng(7);
        for _ in 0..5000 {
            let len = rng.below(21) as usize;
            let s: String = (0..len)
                .map(|_| *rng.pick(&['-', '0', '1', '5', '9', '.']))
                .collect();
            assert_eq!(
                all.accepts(s.as_bytes()),
                reference.accepts(s.as_bytes()),
                "{s:?}"
            );
        }
    }

    // -----------------------------------------------------------------
    // Numbers

    /// A reference decimal: (negative, integer digits padded to W, fraction
    /// digits padded to W), from any JSON number text, by string shifting.
    fn ref_value(t: &str) -> (bool, String) {
        const W: usize = 450;
        let (neg, rest) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t),
        };
        let (mant, exp) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().unwrap()),
            None => (rest, 0),
        };
        let (ip, fp) = mant.split_once('.').unwrap_or((mant, ""));
        // Place the digits in a 2W-wide field whose point is at W.
        let mut field = vec![b'0'; 2 * W];
        let start = W as i64 - ip.len() as i64 - exp;
        for (k, b) in ip.bytes().chain(fp.bytes()).enumerate() {
            let at = start + k as i64;
            assert!(
                (0..2 * W as i64).contains(&at),
                "reference field too small for {t}"
            );
            field[at as usize] = b;
        }
        let s = String::from_utf8(field).unwrap();
        let zero = s.bytes().all(|b| b == b'0');
        (neg && !zero, s)
    }

    fn ref_cmp(a: &str, b: &str) -> Ordering {
        let (an, a) = ref_value(a);
        let (bn, b) = ref_value(b);
        match (an, bn) {
            (false, false) => a.cmp(&b),
            (true, true) => b.cmp(&a),
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
        }
    }

    fn in_bounds(t: &str, lo: &Option<Bound>, hi: &Option<Bound>) -> bool {
        let lo_ok = lo.as_ref().is_none_or(|b| {
            let c = ref_cmp(t, &b.value.to_string());
            c == Ordering::Greater || (c == Ordering::Equal && !b.exclusive)
        });
        let hi_ok = hi.as_ref().is_none_or(|b| {
            let c = ref_cmp(t, &b.value.to_string());
            c == Ordering::Less || (c == Ordering::Equal && !b.exclusive)
        });
        lo_ok && hi_ok
    }

    /// Whether a text is a plain (no exponent) JSON number with at most 18
    /// integer digits.
    fn plain_number(t: &str) -> bool {
        let r = t.strip_prefix('-').unwrap_or(t);
        let (ip, fp) = match r.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (r, None),
        };
        let canonical = ip == "0" || (!ip.is_empty() && !ip.starts_with('0'));
        canonical
            && ip.len() <= MAX_INT_DIGITS as usize
            && ip.bytes().all(|b| b.is_ascii_digit())
            && fp.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
    }

    fn number(text: &str) -> serde_json::Number {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    /// Texts near a bound: the bound written with 12 fraction digits, plus
    /// and minus small steps, with some trailing zeros trimmed.
    fn near(bound: &str, rng: &mut Rng) -> Vec<String> {
        let (neg, field) = ref_value(bound);
        let (ip, fp) = field.split_at(450);
        if fp[12..].bytes().any(|b| b != b'0') || ip[..430].bytes().any(|b| b != b'0') {
            return Vec::new();
        }
        let scaled: i128 = format!("{}{}", &ip[430..], &fp[..12])
            .parse::<i128>()
            .unwrap();
        let scaled = if neg { -scaled } else { scaled };
        let mut out = Vec::new();
        for delta in [
            0i128,
            1,
            -1,
            7,
            -7,
            1_000_000,
            -1_000_000,
            10i128.pow(12),
            -(10i128.pow(12)),
            5 * 10i128.pow(11),
        ] {
            let v = scaled + delta;
            let sign = if v < 0 { "-" } else { "" };
            let a = v.abs();
            let int = a / 10i128.pow(12);
            let frac = format!("{:012}", a % 10i128.pow(12));
            let keep = frac.trim_end_matches('0').len();
            let cut = keep + rng.below((12 - keep) as u64 + 1) as usize;
            out.push(if cut == 0 {
                format!("{sign}{int}")
            } else {
                format!("{sign}{int}.{}", &frac[..cut])
            });
            if a == 0 {
                out.push("-0".into());
                out.push("-0.000".into());
            }
        }
        out
    }

    const NOT_NUMBERS: &[&str] = &[
        "", "-", "+1", "01", "-01", "1.", ".5", "1.5.2", "0x10", "--1", "1e", "1e+", "- 1", "1 ",
        "Infinity", "NaN", "00.5",
    ];

    #[test]
    fn number_range_matches_reference() {
        let bounds = [
            "-90",
            "180",
            "0.5",
            "1e-3",
            "0",
            "-0",
            "-0.25",
            "123.456",
            "1e18",
            "-1e18",
            "999999999999999999",
            "999999999999999999.5",
            "-999999999999999999.5",
            "1e300",
            "-1e300",
            "2.5e-5",
            "7",
            "-7.125",
            "1E+2",
            "0.1",
            "100",
            "-100.001",
            "5e-324",
            "1.7976931348623157e308",
            "0.30000000000000004",
            "-1e-7",
            "12345678.9",
        ];
        let mut sides: Vec<Option<Bound>> = vec![None];
        for b in bounds {
            sides.push(Some(Bound::inclusive(number(b))));
            sides.push(Some(Bound::exclusive(number(b))));
        }
        let mut rng = Rng(0xDEAD_BEEF_1234_5678);
        let mut pairs: Vec<(Option<Bound>, Option<Bound>)> = Vec::new();
        for s in &sides {
            pairs.push((s.clone(), None));
            pairs.push((None, s.clone()));
        }
        for _ in 0..500 {
            pairs.push((rng.pick(&sides).clone(), rng.pick(&sides).clone()));
        }
        let (mut checked, mut refused) = (0usize, 0usize);
        for (lo, hi) in pairs {
            let mut texts: Vec<String> = Vec::new();
            for b in lo.iter().chain(hi.iter()) {
                texts.extend(near(&b.value.to_string(), &mut rng));
            }
            for _ in 0..300 {
                let sign = if rng.chance(35) { "-" } else { "" };
                let int = if rng.chance(20) {
                    "0".to_string()
                } else {
                    let len = 1 + rng.below(19) as usize;
                    format!("{}{}", 1 + rng.below(9), rng.digits(len - 1, 10))
                };
                let frac = if rng.chance(50) {
                    String::new()
                } else {
                    let len = 1 + rng.below(8) as usize;
                    format!(".{}", rng.digits(len, 40))
                };
                texts.push(format!("{sign}{int}{frac}"));
            }
            let exponents = ["1e2", "-2.5E-3", "0e0", "1E+2", "5e-1"];
            let e = number_range(lo.clone(), hi.clone());
            let Ok(e) = e else {
                refused += 1;
                for t in &texts {
                    assert!(
                        !(plain_number(t) && in_bounds(t, &lo, &hi)),
                        "number_range({lo:?}, {hi:?}) refused, but {t} is in range"
                    );
                }
                continue;
            };
            let d = dfa(&e);
            for t in &texts {
                let want = plain_number(t) && in_bounds(t, &lo, &hi);
                assert_eq!(
                    d.accepts(t.as_bytes()),
                    want,
                    "number_range({lo:?}, {hi:?}) on {t}"
                );
                checked += 1;
            }
            for t in exponents {
                let want = lo.is_none() && hi.is_none();
                assert_eq!(
                    d.accepts(t.as_bytes()),
                    want,
                    "number_range({lo:?}, {hi:?}) on {t}"
                );
            }
            for t in NOT_NUMBERS {
                assert!(
                    !d.accepts(t.as_bytes()),
                    "number_range({lo:?}, {hi:?}) accepts {t:?}"
                );
            }
        }
        println!("number_range: {checked} texts checked, {refused} empty ranges refused");
        assert!(number_range(
            Some(Bound::exclusive(number("1"))),
            Some(Bound::inclusive(number("1")))
        )
        .is_err());
        assert!(number_range(
            Some(Bound::inclusive(number("2"))),
            Some(Bound::inclusive(number("1")))
        )
        .is_err());
        assert!(number_range(Some(Bound::inclusive(number("1e18"))), None).is_err());
        assert!(number_range(
            Some(Bound::inclusive(number("1"))),
            Some(Bound::inclusive(number("1")))
        )
        .is_ok());
    }

    #[test]
    fn integer_bounds_round_inward() {
        let b = |t: &str, ex: bool| Bound {
            value: number(t),
            exclusive: ex,
        };
        let cases: &[(&str, bool, bool, i64)] = &[
            // (bound, exclusive, lower?, expected)
            ("0.5", false, true, 1),
            ("0.5", false, false, 0),
            ("-0.5", false, true, 0),
            ("-0.5", false, false, -1),
            ("10", true, false, 9),
            ("10", true, true, 11),
            ("10", false, true, 10),
            ("-3", true, true, -2),
            ("-3.0", false, false, -3),
            ("1e300", false, true, 1_000_000_000_000_000_000),
            ("-1e300", false, true, -1_000_000_000_000_000_000),
            ("1e-3", true, true, 1),
            ("2.5e1", false, false, 25),
        ];
        for &(t, ex, lower, want) in cases {
            let bound = b(t, ex);
            let got = if lower {
                integer_bounds(Some(&bound), None).unwrap().0
            } else {
                integer_bounds(None, Some(&bound)).unwrap().1
            };
            assert_eq!(got, Some(want), "{t} exclusive={ex} lower={lower}");
        }
    }

    // -----------------------------------------------------------------
    // multipleOf

    #[test]
    fn integer_multiple_of_matches_reference() {
        let mut ks: Vec<u64> = (1..=40).collect();
        ks.extend([97, 1000, 7919, 9999, 10_000]);
        let mut rng = Rng(42);
        let mut checked = 0usize;
        for &k in &ks {
            let d = dfa(&integer_multiple_of(k).unwrap());
            let mut ns: Vec<i128> = (-3000..=3000).collect();
            let max = MAX_UINT as i128;
            ns.extend(max - 150..=max + 20);
            ns.extend(-max - 20..=-max + 150);
            for _ in 0..1000 {
                let len = 1 + rng.below(18) as u32;
                let v = (rng.next() % 10u64.pow(len)) as i128;
                let v = v - v % k as i128 + rng.below(2) as i128 * rng.below(k) as i128;
                ns.push(if rng.chance(50) { -v } else { v });
            }
            for n in ns {
                let want = n.abs() <= max && n % k as i128 == 0;
                assert_eq!(
                    d.accepts(n.to_string().as_bytes()),
                    want,
                    "multiple of {k}: {n}"
                );
                checked += 1;
            }
            assert!(d.accepts(b"-0"));
            for s in NOT_INTEGERS {
                assert!(!d.accepts(s.as_bytes()), "multiple of {k} accepts {s:?}");
            }
        }
        println!(
            "integer_multiple_of: {} divisors, {checked} integers checked",
            ks.len()
        );
        assert!(integer_multiple_of(0).is_err());
        assert!(integer_multiple_of(10_001).is_err());
        assert!(integer_multiple_of(u64::MAX).is_err());
    }

    #[test]
    fn number_multiple_of_matches_reference() {
        let ms = [
            "0.01", "0.5", "2.5", "1e-3", "3", "0.1", "7.5", "1e2", "0.0625", "1", "12.25",
        ];
        let mut rng = Rng(4242);
        let scale = |t: &str| -> Option<i128> {
            let (neg, field) = ref_value(t);
            let (ip, fp) = field.split_at(450);
            if fp[12..].bytes().any(|b| b != b'0') || ip[..420].bytes().any(|b| b != b'0') {
                return None;
            }
            let v: i128 = format!("{}{}", &ip[420..], &fp[..12]).parse().ok()?;
            Some(if neg { -v } else { v })
        };
        let mut checked = 0usize;
        for m in ms {
            let d = dfa(&number_multiple_of(&number(m)).unwrap());
            let ms_scaled = scale(&number(m).to_string()).unwrap();
            let mut texts: Vec<String> = Vec::new();
            for i in -5000i64..=5000 {
                let sign = if i < 0 { "-" } else { "" };
                let a = i.unsigned_abs();
                let frac = format!("{:03}", a % 1000);
                let cut = rng.below(4) as usize;
                let mut t = format!("{sign}{}", a / 1000);
                let keep = frac.trim_end_matches('0').len().max(cut);
                if keep > 0 {
                    t.push('.');
                    t.push_str(&frac[..keep]);
                }
                if rng.chance(10) {
                    t.push_str(if keep > 0 { "000" } else { ".000" });
                }
                texts.push(t);
            }
            for _ in 0..2000 {
                let sign = if rng.chance(40) { "-" } else { "" };
                let len = 1 + rng.below(18) as usize;
                let int = format!("{}{}", 1 + rng.below(9), rng.digits(len - 1, 30));
                let frac = if rng.chance(30) {
                    String::new()
                } else {
                    {
                        let n = 1 + rng.below(6) as usize;
                        format!(".{}", rng.digits(n, 50))
                    }
                };
                texts.push(format!("{sign}{int}{frac}"));
            }
            texts.push(format!("1{}", "0".repeat(18)));
            for t in &texts {
                let v = scale(t).unwrap();
                let want = plain_number(t) && v % ms_scaled == 0;
                assert_eq!(d.accepts(t.as_bytes()), want, "multiple of {m}: {t}");
                checked += 1;
            }
            for t in ["1e2", "0e0", "2.5E1"] {
                assert!(!d.accepts(t.as_bytes()), "multiple of {m}: exponent {t}");
            }
            for t in NOT_NUMBERS {
                assert!(!d.accepts(t.as_bytes()), "multiple of {m} accepts {t:?}");
            }
        }
        println!(
            "number_multiple_of: {} multiples, {checked} texts checked",
            ms.len()
        );
        assert!(number_multiple_of(&number("0")).is_err());
        assert!(number_multiple_of(&number("-2")).is_err());
        assert!(number_multiple_of(&number("123456.789")).is_err());
    }

    #[test]
    fn ranges_and_multiples_intersect() {
        let e = expr::intersect(
            &[
                number_range(
                    Some(Bound::inclusive(number("-1"))),
                    Some(Bound::exclusive(number("1"))),
                )
                .unwrap(),
                number_multiple_of(&number("0.25")).unwrap(),
            ],
            100_000,
        )
        .unwrap();
        let d = dfa(&e);
        for (t, want) in [
            ("-1", true),
            ("-0.75", true),
            ("0", true),
            ("-0", true),
            ("0.5", true),
            ("0.750", true),
            ("1", false),
            ("1.0", false),
            ("0.1", false),
            ("-1.25", false),
        ] {
            assert_eq!(d.accepts(t.as_bytes()), want, "{t}");
        }
    }

    // -----------------------------------------------------------------
    // JSON characters and lengths

    fn content(s: &str) -> Vec<u8> {
        let q = serde_json::to_string(s).unwrap().into_bytes();
        q[1..q.len() - 1].to_vec()
    }

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

    // -----------------------------------------------------------------
    // Formats

    fn format_dfa(name: &str) -> Dfa {
        dfa(&format_string(name).unwrap_or_else(|| panic!("format {name}")))
    }

    fn check_format(name: &str, valid: &[&str], invalid: &[&str]) {
        let d = format_dfa(name);
        for v in valid {
            let t = serde_json::to_string(v).unwrap();
            assert!(d.accepts(t.as_bytes()), "{name}: {v:?} should be accepted");
        }
        for v in invalid {
            let t = serde_json::to_string(v).unwrap();
            assert!(!d.accepts(t.as_bytes()), "{name}: {v:?} should be refused");
        }
    }

    #[test]
    fn date_is_exact_for_every_day() {
        let d = format_dfa("date");
        let leap = |y: u32| y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
        let mut n = 0;
        for y in 0..=9999u32 {
            for m in 0..=13u32 {
                for day in 0..=32u32 {
                    let len = match m {
                        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
                        4 | 6 | 9 | 11 => 30,
                        2 if leap(y) => 29,
                        2 => 28,
                        _ => 0,
                    };
                    let want = day >= 1 && day <= len;
                    let t = format!("\"{y:04}-{m:02}-{day:02}\"");
                    assert_eq!(d.accepts(t.as_bytes()), want, "{t}");
                    n += 1;
                }
            }
        }
        println!("date: {n} dates checked");
        check_format(
            "date",
            &["2020-02-29", "0000-02-29", "2000-02-29"],
            &[
                "2100-02-29",
                "1900-02-29",
                "2021-1-01",
                "20210101",
                "2021-01-01T00:00:00Z",
                " 2021-01-01",
                "+2021-01-01",
            ],
        );
    }

    #[test]
    fn time_formats() {
        let d = format_dfa("time");
        let mut n = 0;
        for h in 0..=25u32 {
            for m in [0u32, 1, 30, 59, 60] {
                for s in [0u32, 9, 59, 60, 61] {
                    let want = h < 24 && m < 60 && s < 60;
                    for off in ["Z", "z", "+00:00", "-23:59", "+05:30"] {
                        let t = format!("\"{h:02}:{m:02}:{s:02}{off}\"");
                        assert_eq!(d.accepts(t.as_bytes()), want, "{t}");
                        n += 1;
                    }
                }
            }
        }
        println!("time: {n} times checked");
        check_format(
            "time",
            &[
                "08:30:06Z",
                "23:20:50.52Z",
                "08:30:06.283185+00:20",
                "12:34:56-00:00",
                "00:00:00.000000000000001z",
            ],
            &[
                "24:00:00Z",
                "12:00:00",
                "12:00:00+24:00",
                "12:00:00+00:60",
                "12:00:00+5:00",
                "12:00:00.Z",
                "12:00Z",
                "12:00:00Z+00:30",
                "12:00:00 Z",
                "12:00:00,1Z",
                "23:59:60Z",
            ],
        );
        check_format(
            "date-time",
            &[
                "1963-06-19T08:30:06.283185Z",
                "2024-02-29t12:00:00+01:00",
                "0001-01-01T00:00:00Z",
            ],
            &[
                "2023-02-29T12:00:00Z",
                "2024-02-29 12:00:00Z",
                "2024-02-29T12:00:00",
                "2024-02-29",
                "1985-04-12T23:20:50+01",
                "2024-02-29T24:00:00Z",
            ],
        );
        check_format(
            "duration",
            &[
                "P1D",
                "PT1S",
                "P1Y2M3DT4H5M6S",
                "P2W",
                "PT36H",
                "P1M",
                "PT1M",
                "P0D",
                "P01D",
                "P1Y2M",
                "PT1H2M",
            ],
            &[
                "P", "PT", "P1YT", "PT1D", "P2D1Y", "P1D2H", "P1Y2W", "P1WT1H", "PT0.5S", "-P1D",
                "P1Y2D", "PT1H2S", "p1d", "P1d",
            ],
        );
    }

    #[test]
    fn network_formats() {
        check_format(
            "email",
            &[
                "a@b.co",
                "first.last@sub.example.org",
                "x+tag@example.com",
                "o'neil@ex.ie",
                "u@[192.168.0.1]",
                "u@[IPv6:2001:db8::1]",
                "te~st@example.com",
                "{x}|y@a-b.c-d.e",
                &format!("{}@ab.cd", "a".repeat(64)),
                &format!("a@{}.cd", "b".repeat(46)),
            ],
            &[
                "a@b",
                "a..b@c.com",
                ".a@c.com",
                "a.@c.com",
                "a@-b.com",
                "a@b-.com",
                "a b@c.com",
                "a@b.c_m",
                "\"a\"@b.com",
                "@b.com",
                "a@",
                "a@b.c.d.e.f",
                &format!("{}@ab.cd", "a".repeat(65)),
                &format!("a@{}.cd", "b".repeat(47)),
                "a@[127.0.0.300]",
                "a@[IPv6:1::2::3]",
                "a@ab--c.com",
                "a@xn--80ak6aa92e.com",
            ],
        );
        check_format(
            "hostname",
            &[
                "a",
                "a-b.c",
                "xn-a.com",
                "www.example.com",
                "1host",
                "a--b.com",
                "h0stn4me",
                &format!("{}.com", "a".repeat(63)),
                &format!("{0}.{0}.{0}.{1}", "a".repeat(63), "b".repeat(61)),
            ],
            &[
                "",
                ".",
                "-a.com",
                "a-.com",
                "a..b",
                "a.",
                ".a",
                "a_b.com",
                "ab--c.com",
                "xn--9n2bp8q.com",
                &format!("{}.com", "a".repeat(64)),
                "a.b.c.d.e",
                &format!("{0}.{0}.{0}.{1}", "a".repeat(63), "b".repeat(62)),
                "a b",
                "é.com",
            ],
        );
        check_format(
            "uuid",
            &[
                "2EB8AA08-AA98-11EA-B4AA-73B441D16380",
                "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
                "00000000-0000-0000-0000-000000000000",
            ],
            &[
                "2eb8aa08-aa98-11ea-b4aa-73b441d1638",
                "2eb8aa08aa9811eab4aa73b441d16380",
                "2eb8aa08-aa98-11ea-b4ga-73b441d16380",
                "{2eb8aa08-aa98-11ea-b4aa-73b441d16380}",
            ],
        );
        check_format(
            "uri",
            &[
                "http://foo.bar/?baz=qux#quux",
                "a:",
                "urn:isbn:0451450523",
                "foo://user:pw@[v1.x]:8080/p?q#f",
                "http://[::1]:80/",
                "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com",
                "mailto:John.Doe@example.com",
                "http://087.10.0.1/",
                "file:///etc/hosts",
                "x:/a//b",
                "http://a:/",
            ],
            &[
                "//foo.bar/",
                "/abc",
                "abc",
                "http://ex ample.com",
                "http://[::1",
                "1a:b",
                "a b:c",
                ":",
                "http://a/%zz",
                "http://a/%4",
                "http://example.com:abc/",
                "http://[::ffff:01.2.3.4]",
                "http://a/\"b",
                "http://a/<b>",
                "http://a/{b}",
                "http://a/^",
                "http://a/`",
                "http://a/|",
                "http://a/\\",
                "http://é.com",
                "http:/[::1]",
                "http://a@b@c/",
            ],
        );
        check_format(
            "uri-reference",
            &[
                "",
                "#",
                "?",
                "a/b",
                "./a:b",
                "//h",
                "//",
                "#frag",
                "?query=1",
                "/abc",
                "http://a/b",
            ],
            &[
                "a:b c",
                ":a",
                "1:b",
                "/[::1]",
                "#frag\\ment",
                "/%zz",
                "//a@b@c/",
                "\\\\WINDOWS\\fileshare",
            ],
        );
        check_format(
            "iri",
            &[
                "http://ƒøø.ßår/?∂éœ=πîx#πîüx",
                "http://例え.テスト/",
                "http://[::1]/",
            ],
            &["http://ƒøø.com/a b", "/abc", "http://a/\u{E000}"],
        );
        check_format(
            "iri-reference",
            &["//ƒøø.ßår/", "a?\u{E000}"],
            &["a b", "\\a"],
        );
        check_format(
            "json-pointer",
            &[
                "", "/", "/foo/0", "/a~1b", "/m~0n", "/ ", "/k\"l", "/i\\j", "/\u{0}\n",
            ],
            &["a", "/~", "/~2", "#/a", "/~01~"],
        );
        check_format(
            "relative-json-pointer",
            &["0", "1/a", "0#", "10/~0"],
            &["-1", "01", "0##", "/a", "1#/a"],
        );
        check_format(
            "uri-template",
            &[
                "http://example.com/{id}",
                "{+var}",
                "{x,y}",
                "{v:1000}",
                "{var*}",
                "a%41b",
                "",
            ],
            &[
                "{}",
                "{a,}",
                "{v:0}",
                "{v:10000}",
                "foo}bar",
                "a b",
                "{=var}",
                "{a..b}",
            ],
        );
    }

    #[test]
    fn ip_formats_match_std() {
        use std::net::{Ipv4Addr, Ipv6Addr};
        let d4 = format_dfa("ipv4");
        let d6 = format_dfa("ipv6");
        let mut rng = Rng(0x1234);
        let mut n = 0;
        // Every octet value, each written also with a leading zero.
        for v in 0..=300u32 {
            for t in [
                format!("1.2.3.{v}"),
                format!("{v}.0.0.1"),
                format!("1.2.3.0{v}"),
            ] {
                let want = t.parse::<Ipv4Addr>().is_ok();
                assert_eq!(d4.accepts(format!("\"{t}\"").as_bytes()), want, "{t}");
                n += 1;
            }
        }
        // IPv6: random addresses, compressed at random runs, mutated.
        for _ in 0..20_000 {
            let groups: Vec<u16> = (0..8)
                .map(|_| {
                    if rng.chance(40) {
                        0
                    } else {
                        rng.next() as u16 >> (rng.below(4) * 4)
                    }
                })
                .collect();
            let v4 = rng.chance(25);
            let n_hex = if v4 { 6 } else { 8 };
            let mut parts: Vec<String> = groups[..n_hex]
                .iter()
                .map(|g| {
                    if rng.chance(20) {
                        format!("{g:04X}")
                    } else {
                        format!("{g:x}")
                    }
                })
                .collect();
            let tail = if v4 {
                format!(
                    ":{}.{}.{}.{}",
                    groups[6] >> 8,
                    groups[6] & 255,
                    groups[7] >> 8,
                    groups[7] & 255
                )
            } else {
                String::new()
            };
            // Compress a run [a, b).
            let mut text = if rng.chance(60) {
                let a = rng.below(n_hex as u64 + 1) as usize;
                let b = a + rng.below((n_hex - a) as u64 + 1) as usize;
                let left = parts[..a].join(":");
                let right = parts[b..].join(":");
                let right = if v4 && right.is_empty() {
                    tail[1..].to_string()
                } else {
                    format!("{right}{tail}")
                };
                format!("{left}::{right}")
            } else {
                parts.iter_mut().for_each(|_| {});
                format!("{}{tail}", parts.join(":"))
            };
            // Mutations.
            if rng.chance(30) {
                let bytes: Vec<char> = text.chars().collect();
                let at = rng.below(bytes.len() as u64 + 1) as usize;
                let c = *rng.pick(&[':', '.', '0', 'f', 'g', '1', ' ', '%']);
                let mut b = bytes.clone();
                match rng.below(3) {
                    0 => b.insert(at, c),
                    1 if at < b.len() => {
                        b.remove(at);
                    }
                    _ if at < b.len() => b[at] = c,
                    _ => {}
                }
                text = b.into_iter().collect();
            }
            let want = text.parse::<Ipv6Addr>().is_ok();
            assert_eq!(d6.accepts(format!("\"{text}\"").as_bytes()), want, "{text}");
            n += 1;
        }
        println!("ipv4/ipv6: {n} addresses compared with std::net");
        check_format(
            "ipv6",
            &[
                "::",
                "::1",
                "1::",
                "1:2:3:4:5:6:7::",
                "::2:3:4:5:6:7:8",
                "1:2:3:4:5:6:1.2.3.4",
                "::ffff:192.168.0.1",
                "fe80::1:2",
            ],
            &[
                "1:2:3:4:5:6:7:8:9",
                ":::",
                "1::2::3",
                "12345::",
                "::1.2.3",
                "::01.2.3.4",
                "fe80::a%eth1",
                "[::1]",
                "1:2:3:4:5:6:7",
                "1:2:3:4:5:6:7:1.2.3.4",
            ],
        );
    }

    // -----------------------------------------------------------------
    // The JSON-Schema-Test-Suite

    fn data_dir() -> Option<PathBuf> {
        let raw = std::env::var_os("TOOLDEC_DATA")?;
        if raw.is_empty() {
            return None;
        }
        let p = PathBuf::from(raw);
        if p.is_absolute() || p.exists() {
            return Some(p);
        }
        let from_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(&p);
        Some(if from_root.exists() { from_root } else { p })
    }

    fn suite_dir(what: &str) -> Option<PathBuf> {
        let Some(dir) = data_dir() else {
            println!("TOOLDEC_DATA unset: skipping the JSON-Schema-Test-Suite {what} cases");
            return None;
        };
        let p = dir.join("json-schema/test-suite/tests/draft2020-12");
        assert!(
            p.is_dir(),
            "TOOLDEC_DATA is set but {} is missing",
            p.display()
        );
        Some(p)
    }

    fn read_groups(path: &Path) -> Vec<Value> {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        match serde_json::from_str(&text) {
            Ok(Value::Array(groups)) => groups,
            _ => panic!("{}: not a test-suite file", path.display()),
        }
    }

    #[test]
    fn test_suite_formats() {
        let Some(root) = suite_dir("format") else {
            return;
        };
        let dir = root.join("optional/format");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut covered = 0;
        for file in files {
            let mut per_format: std::collections::BTreeMap<String, (usize, usize, usize, usize)> =
                Default::default();
            for g in read_groups(&file) {
                let Some(name) = g["schema"]["format"].as_str() else {
                    continue;
                };
                let Some(e) = format_string(name) else {
                    continue;
                };
                let d = dfa(&e);
                let entry = per_format.entry(name.to_string()).or_default();
                for t in g["tests"].as_array().into_iter().flatten() {
                    let Some(s) = t["data"].as_str() else {
                        continue;
                    };
                    let valid = t["valid"].as_bool().unwrap();
                    let accepted = d.accepts(serde_json::to_string(s).unwrap().as_bytes());
                    assert!(
                        valid || !accepted,
                        "format {name}: invalid {s:?} accepted ({})",
                        t["description"]
                    );
                    if valid && !accepted {
                        println!(
                            "  format {name}: valid {s:?} not accepted ({})",
                            t["description"]
                        );
                    }
                    if valid {
                        entry.0 += 1;
                        entry.1 += accepted as usize;
                        if format_is_exact(name) == Some(true) {
                            assert!(
                                accepted,
                                "format {name} (exact): valid {s:?} refused ({})",
                                t["description"]
                            );
                        }
                    } else {
                        entry.2 += 1;
                        entry.3 += !accepted as usize;
                    }
                }
            }
            for (name, (v, va, i, ir)) in per_format {
                covered += 1;
                println!(
                    "format {name:<22} {}: valid accepted {va}/{v}, invalid refused {ir}/{i}",
                    if format_is_exact(&name) == Some(true) {
                        "exact "
                    } else {
                        "subset"
                    }
                );
            }
        }
        assert!(
            covered >= 15,
            "only {covered} formats found in the test suite"
        );
    }

    /// Every (pattern, string, matches) case of the test suite: `pattern`
    /// on strings, `propertyNames: {pattern}` and `patternProperties: {P:
    /// true}` with `additionalProperties: false` on objects' keys.
    fn suite_pattern_cases(root: &Path) -> Vec<(String, String, bool, String)> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                if p.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                for g in read_groups(&p) {
                    let schema = &g["schema"];
                    let Some(obj) = schema.as_object() else {
                        continue;
                    };
                    let only = |keys: &[&str]| obj.keys().all(|k| keys.contains(&k.as_str()));
                    let where_ = format!(
                        "{} / {}",
                        p.file_name().unwrap().to_string_lossy(),
                        g["description"]
                    );
                    for t in g["tests"].as_array().into_iter().flatten() {
                        let valid = t["valid"].as_bool().unwrap();
                        if let (Some(pat), true) = (
                            obj.get("pattern").and_then(Value::as_str),
                            only(&["$schema", "type", "pattern"]),
                        ) {
                            if let Some(s) = t["data"].as_str() {
                                out.push((pat.to_string(), s.to_string(), valid, where_.clone()));
                            }
                        }
                        if let (Some(pat), true) = (
                            schema["propertyNames"]["pattern"].as_str(),
                            only(&["$schema", "propertyNames"]),
                        ) {
                            if let Some(o) = t["data"].as_object() {
                                for k in o.keys() {
                                    if valid || o.len() == 1 {
                                        out.push((
                                            pat.to_string(),
                                            k.clone(),
                                            valid,
                                            where_.clone(),
                                        ));
                                    }
                                }
                            }
                        }
                        if let (Some(pp), Some(false)) = (
                            obj.get("patternProperties").and_then(Value::as_object),
                            obj.get("additionalProperties").and_then(Value::as_bool),
                        ) {
                            if pp.len() == 1
                                && pp.values().all(|v| v == &Value::Bool(true))
                                && only(&[
                                    "$schema",
                                    "type",
                                    "patternProperties",
                                    "additionalProperties",
                                ])
                            {
                                let pat = pp.keys().next().unwrap();
                                if let Some(o) = t["data"].as_object() {
                                    for k in o.keys() {
                                        if valid || o.len() == 1 {
                                            out.push((
                                                pat.clone(),
                                                k.clone(),
                                                valid,
                                                where_.clone(),
                                            ));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn test_suite_patterns() {
        let Some(root) = suite_dir("pattern") else {
            return;
        };
        let cases = suite_pattern_cases(&root);
        let mut cache: HashMap<String, Dfa> = HashMap::new();
        for (pat, s, want, where_) in &cases {
            let d = cache.entry(pat.clone()).or_insert_with(|| {
                dfa(&pattern_content(pat).unwrap_or_else(|e| panic!("{where_}: {e}")))
            });
            assert_eq!(
                d.accepts(&content(s)),
                *want,
                "{where_}: pattern {pat:?} on {s:?}"
            );
        }
        println!(
            "test suite: {} pattern cases over {} patterns, all agree",
            cases.len(),
            cache.len()
        );
        assert!(
            cases.len() >= 40,
            "only {} pattern cases found",
            cases.len()
        );
    }

    // -----------------------------------------------------------------
    // Patterns

    fn pattern_dfa(p: &str) -> Dfa {
        dfa(&pattern_content(p).unwrap_or_else(|e| panic!("{e}")))
    }

    fn check_pattern(p: &str, yes: &[&str], no: &[&str]) {
        let d = pattern_dfa(p);
        for s in yes {
            assert!(d.accepts(&content(s)), "{p:?} should match {s:?}");
        }
        for s in no {
            assert!(!d.accepts(&content(s)), "{p:?} should not match {s:?}");
        }
    }

    #[test]
    fn ecma_specifics() {
        check_pattern(r"^\d$", &["0", "7"], &["٣", "০", "a", "", "12"]);
        check_pattern(r"^\D$", &["٣", "a", "\n"], &["5", ""]);
        check_pattern(r"^\w+$", &["a_Z9"], &["é", "a-b", ""]);
        check_pattern(r"^\W$", &["é", "-"], &["a", "_"]);
        check_pattern(
            r"^.$",
            &["a", "\u{85}", "é", "🐲", "\t"],
            &["\n", "\r", "\u{2028}", "\u{2029}", "", "ab"],
        );
        check_pattern(
            r"^\s$",
            &[
                " ", "\t", "\u{B}", "\u{C}", "\u{A0}", "\u{FEFF}", "\n", "\r", "\u{2028}",
                "\u{2029}", "\u{2003}", "\u{1680}", "\u{3000}", "\u{202F}", "\u{205F}",
            ],
            &["\u{85}", "\u{180E}", "\u{200B}", "\u{1}", "a", "\u{2013}"],
        );
        check_pattern(
            r"^\S$",
            &["a", "\u{85}", "\u{200B}"],
            &[" ", "\u{FEFF}", "\u{2029}"],
        );
        check_pattern(
            "^a|b$",
            &["ac", "cb", "a", "b", "ab"],
            &["ca", "bc", "", "c"],
        );
        check_pattern("a^b", &[], &["ab", "a^b", "", "xaby"]);
        check_pattern("a$b", &[], &["ab", "a$b"]);
        check_pattern("(^a|b)c", &["ac", "xbc", "bc", "acx"], &["xac", "c", "a"]);
        check_pattern("^$", &[""], &["a", "\n"]);
        check_pattern("$^", &[""], &["a"]);
        check_pattern("^^a$$", &["a"], &["aa", "ba"]);
        check_pattern("(^)*a", &["a", "ba"], &["b"]);
        check_pattern("(a$)+", &["a", "ba"], &["ab", "aa$"]);
        check_pattern("x(^|-)y", &["x-y", "ax-y"], &["xy", "x^y"]);
        check_pattern(
            "(?:^|,)a(?:,|$)",
            &["a", "b,a", "a,b", "b,a,c"],
            &["ba", "ab", "b,ab"],
        );
        check_pattern("a+", &["xxaayy", "a"], &["", "b"]);
        check_pattern("", &["", "anything", "\n\"\\"], &[]);
        check_pattern(r"^\cJ\cj$", &["\n\n"], &["\\cJ\\cj", "cJcj"]);
        check_pattern(r"^[\b]$", &["\u{8}"], &["b", "\\b"]);
        check_pattern(r"^\0$", &["\0"], &["0"]);
        check_pattern(r"^\x41\u0042\u{1F432}\ud83d\udc32$", &["AB🐲🐲"], &["AB"]);
        check_pattern(r"^\t\n\v\f\r$", &["\t\n\u{B}\u{C}\r"], &[]);
        check_pattern(r"^[^]$", &["a", "\n", "🐲"], &["", "ab"]);
        check_pattern(r"[]", &[], &["", "a", "[]"]);
        check_pattern(r"^a[]?$", &["a"], &["a[]"]);
        check_pattern(
            r"^\/\.\*\+\?\(\)\[\]\{\}\|\^\$\\$",
            &["/.*+?()[]{}|^$\\"],
            &[],
        );
        check_pattern(r#"^"\\$"#, &["\"\\"], &["\"", "\\"]);
        check_pattern(r"^[a-c\d-]+$", &["ab-9"], &["d", "_"]);
        check_pattern(r"^[-a]$", &["-", "a"], &["b"]);
        check_pattern(r"^[a-]$", &["-", "a"], &["b"]);
        check_pattern(r"^[\-]$", &["-"], &["\\"]);
        check_pattern(r"^[^\d\s]$", &["a", "é"], &["1", " ", "\u{FEFF}"]);
        check_pattern(r"^[.$^|*]+$", &[".$^|*"], &["a"]);
        check_pattern(r"^[[]$", &["["], &["]"]);
        check_pattern(r"^[&&~~]+$", &["&~"], &["a"]);
        check_pattern(
            r"^a{2}b{1,}c{0,1}d{1,2}?$",
            &["aabd", "aabbbcdd"],
            &["abd", "aab"],
        );
        check_pattern(r"^(?<year>\d{4})-(?:\d\d)$", &["2024-01"], &["2024-1"]);
        check_pattern(r"^\p{Letter}+$", &["Hello", "π"], &["123", ""]);
        check_pattern(r"^\P{L}$", &["1"], &["a"]);
        check_pattern(r"^\p{Script=Greek}$", &["π"], &["p"]);
        check_pattern(
            r"\p{Lu}cole",
            &["Écoles", "l'Écoles", "Acole"],
            &["école", "ÉCOLE"],
        );
        check_pattern("^🐲*$", &["", "🐲🐲"], &["🐉", "D"]);
        check_pattern("^é{2}$", &["éé"], &["é"]);
        check_pattern("^[\u{0}-\u{1F}]$", &["\u{0}", "\u{1F}", "\n"], &[" "]);
        check_pattern("#&~- ", &["a#&~- b"], &["#&~-"]);
    }

    #[test]
    fn ecma_refusals() {
        for (p, what) in [
            (r"\bfoo", "word-boundary"),
            (r"a\B", "word-boundary"),
            ("(?=a)", "look-ahead"),
            ("(?!a)", "look-ahead"),
            ("(?<=a)b", "look-behind"),
            ("(?<!a)b", "look-behind"),
            (r"(a)\1", "backreference"),
            (r"(?<n>a)\k<n>", "backreference"),
            (r"\a", "identity escape"),
            ("a{,3}", "'{'"),
            (r"\pL", "{…}"),
            ("(?i)a", "modifier"),
            ("a]", "']'"),
            ("a}", "'}'"),
            ("{", "'{'"),
            ("a{2", "'{'"),
            (r"\-", "identity escape"),
            (r"[\d-z]", "class escape"),
            (r"\ud800", "surrogate"),
            (r"\udc00", "surrogate"),
            (r"\c1", "ASCII letter"),
            (r"\x4", "hex"),
            (r"\u12", "hex"),
            ("a**", "quantifier after a quantifier"),
            ("a*+", "quantifier after a quantifier"),
            ("^*", "assertion"),
            ("*a", "nothing to repeat"),
            ("(*a)", "nothing to repeat"),
            ("[b-a]", "out of order"),
            ("[a", "unclosed"),
            ("(a", "unclosed"),
            (r"\01", "octal"),
            (r"a\", "trailing backslash"),
        ] {
            match pattern_content(p) {
                Ok(_) => panic!("pattern {p:?} should be refused"),
                Err(e) => assert!(
                    e.contains(what)
                        || (what == "unclosed" && e.to_lowercase().contains("unclosed")),
                    "pattern {p:?}: {e} (expected {what})"
                ),
            }
        }
    }

    /// A random ECMA pattern and the same pattern in the `regex` crate's
    /// syntax, written independently.
    fn gen_pattern(rng: &mut Rng, depth: u32) -> (String, String) {
        const ECMA_S: &str = r"[\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
        const ECMA_NOT_S: &str = r"[^\t\n\x0B\x0C\r \xA0\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";
        let atom = |rng: &mut Rng| -> (String, String) {
            let (e, r): (&str, &str) = *rng.pick(&[
                ("a", "a"),
                ("b", "b"),
                ("0", "0"),
                ("é", "é"),
                ("\"", "\""),
                (r"\\", r"\\"),
                (r"\n", r"\n"),
                (r"\.", r"\."),
                (r"\/", "/"),
                (" ", " "),
                ("\u{2028}", r"\x{2028}"),
                ("🐲", "🐲"),
                (".", r"[^\n\r\x{2028}\x{2029}]"),
                (r"\d", "[0-9]"),
                (r"\D", "[^0-9]"),
                (r"\w", "[A-Za-z0-9_]"),
                (r"\W", "[^A-Za-z0-9_]"),
                (r"\s", ECMA_S),
                (r"\S", ECMA_NOT_S),
                ("[a-c]", "[a-c]"),
                ("[^a]", "[^a]"),
                (r"[\d\n]", r"[0-9\n]"),
                (r"[^\s]", ECMA_NOT_S),
                ("[é\"]", "[é\"]"),
                (r"\t", r"\t"),
                (r"\u0001", r"\x01"),
                (r"[^]", r"[\s\S]"),
            ]);
            (e.to_string(), r.to_string())
        };
        if depth == 0 {
            return atom(rng);
        }
        match rng.below(10) {
            0..=2 => atom(rng),
            3 => {
                let (e, r) = gen_pattern(rng, depth - 1);
                let (q, rq) = *rng.pick(&[
                    ("*", "*"),
                    ("+", "+"),
                    ("?", "?"),
                    ("{1,2}", "{1,2}"),
                    ("{2}", "{2}"),
                    ("*?", "*?"),
                    ("{0,1}", "{0,1}"),
                ]);
                (format!("(?:{e}){q}"), format!("(?:{r}){rq}"))
            }
            4 => {
                let (a, ra) = gen_pattern(rng, depth - 1);
                let (b, rb) = gen_pattern(rng, depth - 1);
                (format!("{a}|{b}"), format!("{ra}|{rb}"))
            }
            5 => {
                let (a, ra) = gen_pattern(rng, depth - 1);
                (format!("({a})"), format!("({ra})"))
            }
            6 => (String::from("^"), String::from("^")),
            7 => (String::from("$"), String::from("$")),
            _ => {
                let (a, ra) = gen_pattern(rng, depth - 1);
                let (b, rb) = gen_pattern(rng, depth - 1);
                (format!("(?:{a})(?:{b})"), format!("(?:{ra})(?:{rb})"))
            }
        }
    }

    #[test]
    fn patterns_agree_with_the_regex_crate() {
        let mut rng = Rng(0xC0FF_EE00_1234);
        let alphabet = [
            'a', 'b', 'c', '0', '1', 'é', '"', '\\', '\n', '\r', '.', '/', ' ', '\u{2028}', '🐲',
            '\t', '\u{A0}', '\u{1}', '\u{FEFF}', '_', 'Z', '\u{85}',
        ];
        let (mut patterns, mut strings) = (0, 0);
        for _ in 0..600 {
            let (ecma, rust) = gen_pattern(&mut rng, 3);
            let re = regex::Regex::new(&rust).unwrap_or_else(|e| panic!("{rust}: {e}"));
            let d = pattern_dfa(&ecma);
            patterns += 1;
            for _ in 0..150 {
                let len = rng.below(7) as usize;
                let s: String = (0..len).map(|_| *rng.pick(&alphabet)).collect();
                assert_eq!(
                    d.accepts(&content(&s)),
                    re.is_match(&s),
                    "pattern {ecma:?} (regex {rust:?}) on {s:?}"
                );
                strings += 1;
            }
        }
        println!(
            "patterns: {patterns} random patterns, {strings} strings compared with the regex crate"
        );
    }

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
