//! Integer and decimal ranges (`minimum`, `maximum` and their exclusive
//! forms) as languages of canonical JSON number text, built by digit-range
//! decomposition: the expression is linear in the number of digits.

use std::cmp::Ordering;

use super::{any_of, bytes, digit_range, digits, lit, nothing, seq};
use crate::automaton::expr::{self, Expr};
use crate::lower::json::{json_number, MAX_INT_DIGITS};

/// The largest magnitude of an integer (and of a number's integer part):
/// `10^MAX_INT_DIGITS - 1`, as [`crate::lower::json::json_integer`] allows.
pub const MAX_UINT: u64 = 10u64.pow(MAX_INT_DIGITS) - 1;

/// Most digits of a bound written out in full (`1e-300` is 300 digits).
const MAX_BOUND_DIGITS: i64 = 400;

/// States allowed for the product of a number range's two sides.
const RANGE_STATES: usize = 100_000;

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
/// `-0` is never written (JSON Schema reads it as the integer 0, but
/// serde_json reads the float -0.0 and refuses it as an integer). Built by digit-range decomposition, so
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
        // Magnitudes of the negative part: 0 is written only as "0".
        let a = (-hi).max(1) as u64;
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
pub(super) struct Dec {
    pub(super) neg: bool,
    pub(super) int: Vec<u8>,
    pub(super) frac: Vec<u8>,
}

impl Dec {
    fn zero() -> Dec {
        Dec {
            neg: false,
            int: vec![b'0'],
            frac: Vec::new(),
        }
    }

    pub(super) fn is_zero(&self) -> bool {
        self.int == b"0" && self.frac.is_empty()
    }

    /// Parses a JSON number text (exponent included) exactly.
    pub(super) fn parse(text: &str) -> Result<Dec, String> {
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
    /// The bound as written.
    pub value: serde_json::Number,
    /// Whether the bound itself is outside the range.
    pub exclusive: bool,
}

impl Bound {
    /// `minimum`/`maximum` (the lowering builds its bounds field by field;
    /// the tests use these).
    #[cfg(test)]
    pub fn inclusive(value: serde_json::Number) -> Bound {
        Bound {
            value,
            exclusive: false,
        }
    }

    /// `exclusiveMinimum`/`exclusiveMaximum`.
    #[cfg(test)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lower::value::testutil::{dfa, Rng};
    use crate::lower::value::testutil::{
        in_bounds, near, number, plain_number, NOT_INTEGERS, NOT_NUMBERS,
    };

    // -----------------------------------------------------------------
    // Integers

    fn int_ok(lo: Option<i64>, hi: Option<i64>, n: i128) -> bool {
        n.abs() <= MAX_UINT as i128
            && lo.is_none_or(|l| n >= l as i128)
            && hi.is_none_or(|h| n <= h as i128)
    }

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
            assert!(!d.accepts(b"-0"), "-0 in {lo:?}..{hi:?}");
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
}
