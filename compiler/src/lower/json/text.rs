//! The JSON text primitives: whitespace, strings, integers, numbers.

use crate::automaton::expr::Expr;

/// `[ \t\n\r]{0,max}`.
pub fn ws(max: u32) -> Expr {
    if max == 0 {
        return Expr::Empty;
    }
    Expr::repeat(
        Expr::ByteClass(vec![(b' ', b' '), (b'\t', b'\n'), (b'\r', b'\r')]),
        0,
        Some(max),
    )
}

/// `[ \t]{0,max}`: whitespace on one line.
pub fn ws_inline(max: u32) -> Expr {
    if max == 0 {
        return Expr::Empty;
    }
    Expr::repeat(
        Expr::ByteClass(vec![(b' ', b' '), (b'\t', b'\t')]),
        0,
        Some(max),
    )
}

fn hex() -> Expr {
    Expr::ByteClass(vec![(b'0', b'9'), (b'A', b'F'), (b'a', b'f')])
}

/// A JSON string: any Unicode scalar value except `"`, `\` and control
/// characters, or an escape. `\u` escapes name scalar values only: a high
/// surrogate must be followed by a low one (strict parsers refuse lone
/// surrogates).
pub fn json_string() -> Expr {
    let plain = Expr::CharClass(vec![(' ', '!'), ('#', '['), (']', '\u{10FFFF}')]);
    let h = hex;
    let non_surrogate = Expr::alt([
        Expr::seq([
            Expr::ByteClass(vec![
                (b'0', b'9'),
                (b'A', b'C'),
                (b'a', b'c'),
                (b'E', b'F'),
                (b'e', b'f'),
            ]),
            h(),
            h(),
            h(),
        ]),
        Expr::seq([
            Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
            Expr::ByteClass(vec![(b'0', b'7')]),
            h(),
            h(),
        ]),
    ]);
    let high = Expr::seq([
        Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
        Expr::ByteClass(vec![(b'8', b'9'), (b'A', b'B'), (b'a', b'b')]),
        h(),
        h(),
    ]);
    let low = Expr::seq([
        Expr::ByteClass(vec![(b'D', b'D'), (b'd', b'd')]),
        Expr::ByteClass(vec![(b'C', b'F'), (b'c', b'f')]),
        h(),
        h(),
    ]);
    let escape = Expr::seq([
        Expr::lit("\\"),
        Expr::alt([
            Expr::ByteClass(vec![
                (b'"', b'"'),
                (b'\\', b'\\'),
                (b'/', b'/'),
                (b'b', b'b'),
                (b'f', b'f'),
                (b'n', b'n'),
                (b'r', b'r'),
                (b't', b't'),
            ]),
            Expr::seq([Expr::lit("u"), non_surrogate]),
            Expr::seq([Expr::lit("u"), high, Expr::lit("\\u"), low]),
        ]),
    ]);
    Expr::seq([
        Expr::lit("\""),
        Expr::star(Expr::alt([plain, escape])),
        Expr::lit("\""),
    ])
}

/// Most digits of an integer (and of a number's integer part): every such
/// integer fits an i64 exactly.
pub const MAX_INT_DIGITS: u32 = 18;

pub(super) fn int_part() -> Expr {
    Expr::seq([
        Expr::opt(Expr::lit("-")),
        Expr::alt([
            Expr::lit("0"),
            Expr::seq([
                Expr::ByteClass(vec![(b'1', b'9')]),
                Expr::repeat(
                    Expr::ByteClass(vec![(b'0', b'9')]),
                    0,
                    Some(MAX_INT_DIGITS - 1),
                ),
            ]),
        ]),
    ])
}

/// `0|-?[1-9][0-9]{0,17}`: canonical integers that fit an i64 exactly
/// (the reference the integer ranges are tested against). Not `-0`: JSON
/// Schema reads it as the integer 0, but serde_json and JavaScript read a
/// float (-0.0), which an `i64` field or an `integer` check refuses.
#[cfg(test)]
pub fn json_integer() -> Expr {
    Expr::alt([
        Expr::lit("0"),
        Expr::seq([
            Expr::opt(Expr::lit("-")),
            Expr::ByteClass(vec![(b'1', b'9')]),
            Expr::repeat(
                Expr::ByteClass(vec![(b'0', b'9')]),
                0,
                Some(MAX_INT_DIGITS - 1),
            ),
        ]),
    ])
}

/// A JSON number whose value is a finite double: the integer part has at
/// most 18 digits (below 1e18) and a positive exponent is at most 289 (up to
/// three digits, leading zeros counted), so the value stays below 1e307.
/// Strict parsers refuse out-of-range numbers such as `1e400`.
pub fn json_number() -> Expr {
    let digit = || Expr::ByteClass(vec![(b'0', b'9')]);
    let up_to_289 = Expr::alt([
        Expr::repeat(digit(), 1, Some(2)),
        Expr::seq([Expr::ByteClass(vec![(b'0', b'1')]), digit(), digit()]),
        Expr::seq([Expr::lit("2"), Expr::ByteClass(vec![(b'0', b'7')]), digit()]),
        Expr::seq([Expr::lit("28"), digit()]),
    ]);
    let exponent = Expr::seq([
        Expr::ByteClass(vec![(b'E', b'E'), (b'e', b'e')]),
        Expr::alt([
            Expr::seq([Expr::opt(Expr::lit("+")), up_to_289]),
            Expr::seq([Expr::lit("-"), Expr::repeat(digit(), 1, Some(3))]),
        ]),
    ]);
    Expr::seq([
        int_part(),
        Expr::opt(Expr::seq([Expr::lit("."), Expr::repeat(digit(), 1, None)])),
        Expr::opt(exponent),
    ])
}
