//! `multipleOf`: remainder counters over the decimal digits of a JSON
//! number, as [`Expr::Automaton`]s (a counter is far smaller as an
//! automaton than as an expression).

use std::collections::HashMap;
use std::rc::Rc;

use super::range::Dec;
use crate::automaton::expr::{Automaton, Expr};
use crate::lower::json::MAX_INT_DIGITS;

/// Bound on the states of a `multipleOf` counter: `k · (MAX_INT_DIGITS + d + 2)`
/// for a multiple `k · 10^-d` (see [`integer_multiple_of`]).
pub const MAX_MULTIPLE_STATES: u64 = 200_000;

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
/// included: the integer range it is intersected with leaves it out)
/// divisible by `k`, as an
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::expr;
    use crate::lower::value::range::MAX_UINT;
    use crate::lower::value::testutil::{
        dfa, number, plain_number, ref_value, Rng, NOT_INTEGERS, NOT_NUMBERS,
    };
    use crate::lower::value::{number_range, Bound};

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
}
