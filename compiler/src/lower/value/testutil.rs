//! What the value languages' tests share: a DFA of an expression, a small
//! deterministic random source, canonical content of a string, and the
//! JSON-Schema-Test-Suite's files.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::automaton::dfa::Dfa;
use crate::automaton::expr::Expr;
use crate::lower::json::MAX_INT_DIGITS;
use crate::lower::value::Bound;

pub(super) fn dfa(e: &Expr) -> Dfa {
    let nfa = crate::automaton::nfa::build(e, 50_000_000).expect("NFA within bounds");
    Dfa::determinize(&nfa, 5_000_000).expect("DFA within bounds")
}

/// xorshift64*.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    pub(super) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    pub(super) fn digits(&mut self, n: usize, zero_bias: u64) -> String {
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

pub(super) fn content(s: &str) -> Vec<u8> {
    let q = serde_json::to_string(s).unwrap().into_bytes();
    q[1..q.len() - 1].to_vec()
}

pub(super) const NOT_INTEGERS: &[&str] = &[
    "", "-", "+1", "01", "-01", "00", "-00", "1.0", "1e2", " 1", "1 ", "--1", "0x1", "1-", "+0",
    "١",
];

/// A reference decimal: (negative, integer digits padded to W, fraction
/// digits padded to W), from any JSON number text, by string shifting.
pub(super) fn ref_value(t: &str) -> (bool, String) {
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

pub(super) fn ref_cmp(a: &str, b: &str) -> Ordering {
    let (an, a) = ref_value(a);
    let (bn, b) = ref_value(b);
    match (an, bn) {
        (false, false) => a.cmp(&b),
        (true, true) => b.cmp(&a),
        (false, true) => Ordering::Greater,
        (true, false) => Ordering::Less,
    }
}

pub(super) fn in_bounds(t: &str, lo: &Option<Bound>, hi: &Option<Bound>) -> bool {
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
pub(super) fn plain_number(t: &str) -> bool {
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

pub(super) fn number(text: &str) -> serde_json::Number {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Texts near a bound: the bound written with 12 fraction digits, plus
/// and minus small steps, with some trailing zeros trimmed.
pub(super) fn near(bound: &str, rng: &mut Rng) -> Vec<String> {
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

pub(super) const NOT_NUMBERS: &[&str] = &[
    "", "-", "+1", "01", "-01", "1.", ".5", "1.5.2", "0x10", "--1", "1e", "1e+", "- 1", "1 ",
    "Infinity", "NaN", "00.5",
];

// -----------------------------------------------------------------
// The JSON-Schema-Test-Suite

/// `$TOOLDEC_DATA` (a relative path read from the checkout's root when it
/// is not found from the working directory). Not `tooldec-testkit`'s
/// `data_dir`, because a unit test of the compiler cannot depend on the
/// test kit (the kit depends on the compiler). Unset, the suite's tests
/// say so and skip; set but missing, [`suite_dir`] fails them.
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

/// The suite's draft 2020-12 tests, or `None` (said) without the data.
pub(super) fn suite_dir(what: &str) -> Option<PathBuf> {
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

/// The test groups of one suite file.
pub(super) fn read_groups(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    match serde_json::from_str(&text) {
        Ok(Value::Array(groups)) => groups,
        _ => panic!("{}: not a test-suite file", path.display()),
    }
}
