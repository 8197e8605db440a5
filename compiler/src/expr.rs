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
