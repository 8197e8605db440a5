//! ECMA-262 patterns (JSON Schema's `pattern`, `patternProperties`,
//! `propertyNames`): translated to regex-syntax's syntax with the same
//! meaning, then built as the canonical content of the strings they match,
//! anchors handled exactly.

use regex_syntax::hir::{Class, Hir, HirKind, Look};

use super::string::{any_char, json_char, json_text};
use super::{any_of, nothing, seq};
use crate::automaton::expr::Expr;

// ECMA-262 patterns

/// Longest pattern: its machine is built by recursion over its structure,
/// anchored concatenations nest a level per atom, and a thread's stack
/// is a few megabytes.
pub const MAX_PATTERN_CHARS: usize = 1000;

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
    let chars = pattern.chars().count();
    if chars > MAX_PATTERN_CHARS {
        return Err(format!(
            "a pattern of {chars} characters: patterns longer than {MAX_PATTERN_CHARS} are not supported"
        ));
    }
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
    let size = unrolled(&hir);
    if size > MAX_UNROLLED {
        return Err(format!(
            "pattern {pattern:?}: its counted repeats unroll to more than {MAX_UNROLLED} characters"
        ));
    }
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

/// Most characters a pattern's counted repeats may unroll to (`a{4096}`
/// is 4,096; `(a{100}){100}` is 10,000): each is a copy of its machine.
pub const MAX_UNROLLED: u64 = 20_000;

/// How many character positions `hir` unrolls to, repeats counted by their
/// largest count (or smallest plus one, unbounded), saturating.
fn unrolled(hir: &Hir) -> u64 {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 0,
        HirKind::Literal(l) => l.0.len() as u64,
        HirKind::Class(_) => 1,
        HirKind::Capture(c) => unrolled(&c.sub),
        HirKind::Repetition(r) => {
            let times = r.max.unwrap_or(r.min.saturating_add(1)).max(1) as u64;
            unrolled(&r.sub).saturating_mul(times)
        }
        HirKind::Concat(hs) | HirKind::Alternation(hs) => {
            hs.iter().fold(0u64, |n, h| n.saturating_add(unrolled(h)))
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automaton::dfa::Dfa;
    use crate::lower::value::testutil::{content, dfa, read_groups, suite_dir, Rng};
    use serde_json::Value;
    use std::collections::HashMap;
    use std::path::Path;

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
}
