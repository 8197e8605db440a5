//! JSON Schema's `format` keyword (not the call format, see
//! [`crate::lower::call_format`]): the RFC grammars of `date`, `time`,
//! `ipv4`, `uri`, `email` and the others, as the canonical content of the
//! strings each accepts, exactly or as a named subset.

use super::string::json_char;
use super::{bytes, digit, digits, lit, nothing, seq};
use crate::automaton::expr::{self, Expr};

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
pub(super) fn format_content(name: &str) -> Option<Expr> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::Dfa;
    use crate::lower::value::testutil::{dfa, read_groups, suite_dir, Rng};
    use std::path::PathBuf;

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
}
