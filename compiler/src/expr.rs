//! The grammar IR that the format and the JSON Schema lowering produce.
//!
//! An [`Expr`] denotes a set of byte strings. It is a tree, except that
//! sub-expressions behind an [`Rc`] may be referenced from several places:
//! the NFA compiler builds each shared node once per continuation, so an
//! object with n optional properties stays linear in size instead of
//! repeating its tail for every property that may or may not come first.

use std::rc::Rc;

/// A regular expression over bytes.
#[derive(Debug, Clone)]
pub enum Expr {
    /// The empty string.
    Empty,
    /// A literal byte string.
    Bytes(Vec<u8>),
    /// One byte in any of the inclusive ranges.
    ByteClass(Vec<(u8, u8)>),
    /// One Unicode scalar value in any of the inclusive ranges, as UTF-8.
    CharClass(Vec<(char, char)>),
    /// Each in turn.
    Seq(Vec<Expr>),
    /// Any one of them.
    Alt(Vec<Expr>),
    /// `min` to `max` repetitions (`None`: unbounded).
    Repeat {
        expr: Box<Expr>,
        min: u32,
        max: Option<u32>,
    },
    /// A keyed choice compiled as a trie: the literal key, then its branch.
    /// Keys that share a prefix share NFA states, so a thousand tool names
    /// cost one state per trie node rather than a thousand-way alternation.
    Trie(Vec<(Vec<u8>, Expr)>),
    /// A sub-expression shared between several parents.
    Shared(Rc<Expr>),
}

impl Expr {
    /// A literal string.
    pub fn lit(s: &str) -> Expr {
        Expr::Bytes(s.as_bytes().to_vec())
    }

    /// A sequence, flattening nested sequences and dropping empties.
    pub fn seq(parts: impl IntoIterator<Item = Expr>) -> Expr {
        let mut out = Vec::new();
        for p in parts {
            match p {
                Expr::Empty => {}
                Expr::Seq(inner) => out.extend(inner),
                p => out.push(p),
            }
        }
        match out.len() {
            0 => Expr::Empty,
            1 => out.pop().unwrap_or(Expr::Empty),
            _ => Expr::Seq(out),
        }
    }

    /// An alternation.
    pub fn alt(parts: impl IntoIterator<Item = Expr>) -> Expr {
        let mut out: Vec<Expr> = parts.into_iter().collect();
        if out.len() == 1 {
            out.pop().unwrap_or(Expr::Empty)
        } else {
            Expr::Alt(out)
        }
    }

    /// Zero or one.
    pub fn opt(e: Expr) -> Expr {
        Expr::Repeat {
            expr: Box::new(e),
            min: 0,
            max: Some(1),
        }
    }

    /// Zero or more.
    pub fn star(e: Expr) -> Expr {
        Expr::Repeat {
            expr: Box::new(e),
            min: 0,
            max: None,
        }
    }

    /// Between `min` and `max` repetitions.
    pub fn repeat(e: Expr, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat {
            expr: Box::new(e),
            min,
            max,
        }
    }

    /// Wraps for sharing.
    pub fn shared(e: Expr) -> Expr {
        match e {
            Expr::Shared(_) => e,
            e => Expr::Shared(Rc::new(e)),
        }
    }
}

/// Writes an [`Expr`] as a regular expression in the syntax of
/// `regex-syntax` (Unicode mode), the syntax that outlines-core and
/// llguidance accept, so that peers can be run on exactly our language.
///
/// Shared nodes are written out at each use, except the optional-member
/// pattern `(A X | X)` with one shared `X`, which is written `(?:A)?X`: an
/// object's optional members then cost O(n²) text rather than O(2ⁿ).
/// Byte classes above ASCII have no Unicode-mode spelling and are refused.
pub fn to_regex(e: &Expr) -> Result<String, String> {
    let mut out = String::new();
    write_regex(e, &mut out)?;
    Ok(out)
}

fn write_regex(e: &Expr, out: &mut String) -> Result<(), String> {
    match e {
        Expr::Empty => {}
        Expr::Bytes(b) => {
            let s =
                std::str::from_utf8(b).map_err(|_| format!("literal {b:?} is not UTF-8 text"))?;
            for c in s.chars() {
                if c.is_control() {
                    push_char(c, out);
                } else {
                    regex_syntax::escape_into(c.encode_utf8(&mut [0; 4]), out);
                }
            }
        }
        Expr::ByteClass(ranges) => {
            if ranges.is_empty() {
                return Err("an empty byte class".into());
            }
            out.push('[');
            for &(lo, hi) in ranges {
                if hi >= 0x80 {
                    return Err(format!("byte class {lo:#04x}-{hi:#04x} reaches past ASCII"));
                }
                push_class_range(lo as char, hi as char, out);
            }
            out.push(']');
        }
        Expr::CharClass(ranges) => {
            if ranges.is_empty() {
                return Err("an empty character class".into());
            }
            out.push('[');
            for &(lo, hi) in ranges {
                push_class_range(lo, hi, out);
            }
            out.push(']');
        }
        Expr::Seq(parts) => {
            for p in parts {
                write_regex(p, out)?;
            }
        }
        Expr::Alt(branches) => {
            if let [Expr::Seq(first), Expr::Shared(x)] = branches.as_slice() {
                if let Some((Expr::Shared(y), prefix)) = first.split_last() {
                    if std::rc::Rc::ptr_eq(x, y) {
                        out.push_str("(?:");
                        for p in prefix {
                            write_regex(p, out)?;
                        }
                        out.push_str(")?");
                        return write_regex(x, out);
                    }
                }
            }
            out.push_str("(?:");
            for (i, b) in branches.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                write_regex(b, out)?;
            }
            out.push(')');
        }
        Expr::Repeat { expr, min, max } => {
            out.push_str("(?:");
            write_regex(expr, out)?;
            out.push(')');
            match (*min, *max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (n, None) => out.push_str(&format!("{{{n},}}")),
                (n, Some(m)) if n == m => out.push_str(&format!("{{{n}}}")),
                (n, Some(m)) => out.push_str(&format!("{{{n},{m}}}")),
            }
        }
        Expr::Trie(entries) => {
            out.push_str("(?:");
            for (i, (key, branch)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push('|');
                }
                write_regex(&Expr::Bytes(key.clone()), out)?;
                write_regex(branch, out)?;
            }
            out.push(')');
        }
        Expr::Shared(inner) => write_regex(inner, out)?,
    }
    Ok(())
}

fn push_class_range(lo: char, hi: char, out: &mut String) {
    push_char(lo, out);
    if lo != hi {
        out.push('-');
        push_char(hi, out);
    }
}

/// A character as `\x{HEX}`, or as itself where that is unambiguous.
fn push_char(c: char, out: &mut String) {
    use std::fmt::Write;
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{{{:X}}}", c as u32);
    }
}
