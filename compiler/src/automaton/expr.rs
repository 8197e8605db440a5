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
        /// What is repeated.
        expr: Box<Expr>,
        /// The fewest repetitions.
        min: u32,
        /// The most repetitions (`None`: unbounded).
        max: Option<u32>,
    },
    /// A keyed choice compiled as a trie: the literal key, then its branch.
    /// Keys that share a prefix share NFA states, so a thousand tool names
    /// cost one state per trie node rather than a thousand-way alternation.
    Trie(Vec<(Vec<u8>, Expr)>),
    /// A sub-expression shared between several parents.
    Shared(Rc<Expr>),
    /// An explicit automaton: what a product construction (see
    /// [`intersect`]) or a counter (a remainder modulo k) produces, and
    /// what has no compact regular-expression spelling.
    Automaton(Rc<Automaton>),
    /// The same strings, marked as one part of a call (a tool name, a
    /// property's value ...): see [`crate::automaton::region`]. Tags never change a
    /// language; they name the states built for it.
    Tag(Rc<crate::automaton::region::Tag>, Box<Expr>),
    /// The empty string, at the point where a call of a format's repeated
    /// calls ends: the NFA state built for it marks the DFA states that
    /// end a call, where a matcher of an entry that stops after its first
    /// call serves only the end of sequence (see `call_format::stops`).
    CallEnd,
    /// The empty string, at the point where the first of a format's
    /// repeated calls begins: the NFA state built for it tells the check
    /// of `Nfa::first_call_runs` that an output could start its first
    /// call there.
    CallStart,
    /// The empty string, as an NFA state of its own that no other state
    /// is shared with: put between a separator and the next call, it keeps
    /// the separator's states apart from equal ones that lead to a first
    /// call (a reasoning block's closing `\n`), which would otherwise
    /// look, to the check of `Nfa::first_call_runs`, like a first call
    /// still going on where one has ended.
    Apart,
}

/// A byte automaton given by its moves: state `s` moves on a byte in
/// `lo..=hi` to each `t` of `edges[s]`. The language is that of the paths
/// from `start` to an accepting state. Sharing follows [`Expr::Shared`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Automaton {
    /// The start state.
    pub start: u32,
    /// Whether each state accepts.
    pub accepting: Vec<bool>,
    /// Each state's moves: `(lo, hi, to)` on a byte in `lo..=hi`.
    pub edges: Vec<Vec<(u8, u8, u32)>>,
}

impl Automaton {
    /// The automaton of `edges` restricted to the states that reach
    /// acceptance, renumbered with `start` first.
    pub fn trimmed(start: u32, accepting: Vec<bool>, edges: Vec<Vec<(u8, u8, u32)>>) -> Automaton {
        let n = accepting.len();
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (s, out) in edges.iter().enumerate() {
            for &(_, _, t) in out {
                rev[t as usize].push(s as u32);
            }
        }
        let mut live = accepting.clone();
        let mut stack: Vec<u32> = (0..n as u32).filter(|&s| live[s as usize]).collect();
        while let Some(t) = stack.pop() {
            for &s in &rev[t as usize] {
                if !live[s as usize] {
                    live[s as usize] = true;
                    stack.push(s);
                }
            }
        }
        let mut id = vec![u32::MAX; n];
        let mut order = vec![start as usize];
        order.extend((0..n).filter(|&s| s != start as usize && live[s]));
        for (k, &s) in order.iter().enumerate() {
            id[s] = k as u32;
        }
        let new_edges = order
            .iter()
            .map(|&s| {
                edges[s]
                    .iter()
                    .filter(|e| live[e.2 as usize])
                    .map(|&(lo, hi, t)| (lo, hi, id[t as usize]))
                    .collect()
            })
            .collect();
        Automaton {
            start: 0,
            accepting: order.iter().map(|&s| accepting[s]).collect(),
            edges: new_edges,
        }
    }
}

/// The strings in every one of `parts`: each is determinized on its own
/// (within `max_states`) and the product of the DFAs is kept as an
/// [`Expr::Automaton`]. Exact, and used where two constraints on one
/// value must both hold (a pattern and a length, a range and a multiple).
pub fn intersect(parts: &[Expr], max_states: usize) -> Result<Expr, crate::error::Limit> {
    use crate::automaton::dfa::{Dfa, DEAD};
    match parts.len() {
        0 => return Ok(Expr::Empty),
        1 => return Ok(parts[0].clone()),
        _ => {}
    }
    let mut dfas = Vec::with_capacity(parts.len());
    for p in parts {
        let nfa = crate::automaton::nfa::build(p, max_states.saturating_mul(4))?;
        dfas.push(Dfa::determinize(&nfa, max_states)?);
    }
    // Breadth-first over tuples of states; DEAD in any component is dead.
    let start: Vec<u32> = dfas.iter().map(|d| d.start).collect();
    let mut ids: std::collections::HashMap<Vec<u32>, u32> = std::collections::HashMap::new();
    let mut tuples = vec![start.clone()];
    ids.insert(start, 0);
    let mut edges: Vec<Vec<(u8, u8, u32)>> = Vec::new();
    let mut accepting = Vec::new();
    let mut i = 0;
    let tuple_bytes = 8 * parts.len() + 96;
    while i < tuples.len() {
        crate::limits::check("lower", tuples.len() * tuple_bytes)?;
        let tuple = tuples[i].clone();
        accepting.push(dfas.iter().zip(&tuple).all(|(d, &s)| d.accept[s as usize]));
        let mut out: Vec<(u8, u8, u32)> = Vec::new();
        for b in 0..=255u8 {
            let next: Vec<u32> = dfas
                .iter()
                .zip(&tuple)
                .map(|(d, &s)| d.next(s, b))
                .collect();
            if next.contains(&DEAD) {
                continue;
            }
            let id = match ids.get(&next) {
                Some(&id) => id,
                None => {
                    if tuples.len() >= max_states {
                        return Err(crate::error::Limit::DfaStates(max_states));
                    }
                    let id = tuples.len() as u32;
                    ids.insert(next.clone(), id);
                    tuples.push(next);
                    id
                }
            };
            match out.last_mut() {
                Some(last) if last.2 == id && last.1 as u16 + 1 == b as u16 => last.1 = b,
                _ => out.push((b, b, id)),
            }
        }
        edges.push(out);
        i += 1;
    }
    Ok(Expr::Automaton(Rc::new(Automaton::trimmed(
        0, accepting, edges,
    ))))
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

    /// Marks `e` as the part of a call `tag` names.
    pub fn tag(tag: crate::automaton::region::Tag, e: Expr) -> Expr {
        Expr::Tag(Rc::new(tag), Box::new(e))
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

/// Longest regular expression [`to_regex`] writes: shared nodes are
/// written out at every use, so a schema whose definitions refer to each
/// other twice per level doubles it per level.
pub const MAX_REGEX_BYTES: usize = 64 << 20;

fn write_regex(e: &Expr, out: &mut String) -> Result<(), String> {
    if out.len() > MAX_REGEX_BYTES {
        return Err(format!(
            "the regular expression would be longer than {} MiB",
            MAX_REGEX_BYTES >> 20
        ));
    }
    match e {
        Expr::Automaton(_) => return Err(
            "an automaton (an intersection or a counter) has no regular-expression spelling here"
                .into(),
        ),
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
        Expr::Tag(_, inner) => write_regex(inner, out)?,
        Expr::CallEnd | Expr::CallStart | Expr::Apart => {}
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

/// The [`Expr`] of a regular expression in regex-syntax's syntax (Unicode
/// mode): the whole text must match, so there is no implicit `.*` around it.
/// Look-around (`^`, `$`, `\b`) has no meaning inside a grammar and is
/// refused; so are byte classes that could match invalid UTF-8.
pub fn from_regex(pattern: &str) -> Result<Expr, String> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .map_err(|e| {
            // regex-syntax's message spans several lines; keep its first and last.
            let text = e.to_string();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            lines.last().map_or(text.clone(), |l| l.trim().to_string())
        })?;
    from_hir(&hir)
}

fn from_hir(h: &regex_syntax::hir::Hir) -> Result<Expr, String> {
    use regex_syntax::hir::{Class, HirKind};
    Ok(match h.kind() {
        HirKind::Empty => Expr::Empty,
        HirKind::Literal(l) => Expr::Bytes(l.0.to_vec()),
        HirKind::Class(Class::Unicode(c)) => {
            if c.ranges().is_empty() {
                return Err("a class that matches nothing".into());
            }
            Expr::CharClass(c.ranges().iter().map(|r| (r.start(), r.end())).collect())
        }
        HirKind::Class(Class::Bytes(c)) => {
            if c.ranges().iter().any(|r| r.end() >= 0x80) {
                return Err("a byte class reaching past ASCII (only UTF-8 text is allowed)".into());
            }
            Expr::ByteClass(c.ranges().iter().map(|r| (r.start(), r.end())).collect())
        }
        HirKind::Look(l) => {
            return Err(format!(
                "the assertion {l:?} (look-around has no meaning in a grammar)"
            ))
        }
        HirKind::Repetition(r) => Expr::repeat(from_hir(&r.sub)?, r.min, r.max),
        HirKind::Capture(c) => from_hir(&c.sub)?,
        HirKind::Concat(v) => Expr::seq(v.iter().map(from_hir).collect::<Result<Vec<_>, _>>()?),
        HirKind::Alternation(v) => {
            Expr::alt(v.iter().map(from_hir).collect::<Result<Vec<_>, _>>()?)
        }
    })
}

/// Free text that contains none of `triggers`: any sequence of Unicode
/// scalar values in which no trigger occurs.
///
/// The set is regular; its automaton is Aho–Corasick's over the triggers'
/// characters (a state is the longest suffix of the text that is a proper
/// prefix of a trigger, and an edge that would complete a trigger is left
/// out). The automaton is turned into an [`Expr`] by state elimination, so
/// it goes through the NFA like any other expression and keeps a regular
/// expression spelling for `--print-regex`.
pub fn text_except(triggers: &[String]) -> Expr {
    let triggers: Vec<Vec<char>> = triggers
        .iter()
        .filter(|t| !t.is_empty())
        .map(|t| t.chars().collect())
        .collect();
    let any = Expr::CharClass(vec![('\0', char::MAX)]);
    if triggers.is_empty() {
        return Expr::star(any);
    }
    // States: the distinct proper prefixes of the triggers, the empty one first.
    let mut prefixes: Vec<Vec<char>> = vec![Vec::new()];
    for t in &triggers {
        for i in 1..t.len() {
            if !prefixes.contains(&t[..i].to_vec()) {
                prefixes.push(t[..i].to_vec());
            }
        }
    }
    let mut alphabet: Vec<char> = triggers.iter().flatten().copied().collect();
    alphabet.sort_unstable();
    alphabet.dedup();
    let n = prefixes.len();
    // labels[p][q]: the characters leading from p to q.
    let mut labels: Vec<Vec<Vec<(char, char)>>> = vec![vec![Vec::new(); n]; n];
    for (p, pre) in prefixes.iter().enumerate() {
        for &c in &alphabet {
            let mut s = pre.clone();
            s.push(c);
            if triggers.iter().any(|t| s.ends_with(t)) {
                continue;
            }
            let q = (0..=s.len())
                .find_map(|k| prefixes.iter().position(|x| x[..] == s[k..]))
                .unwrap_or(0);
            labels[p][q].push((c, c));
        }
        // Characters of no trigger lead back to the empty prefix.
        labels[p][0].extend(complement(&alphabet));
    }
    let class = |ranges: &Vec<(char, char)>| -> Option<Expr> {
        (!ranges.is_empty()).then(|| Expr::CharClass(ranges.clone()))
    };
    // State elimination with a fresh start (n) and end (n + 1).
    let mut r: Vec<Vec<Option<Expr>>> = vec![vec![None; n + 2]; n + 2];
    for p in 0..n {
        for q in 0..n {
            r[p][q] = class(&labels[p][q]);
        }
        r[p][n + 1] = Some(Expr::Empty);
    }
    r[n][0] = Some(Expr::Empty);
    for k in (0..n).rev() {
        let looped = r[k][k].take().map(Expr::star);
        let ins: Vec<usize> = (0..=n)
            .filter(|&p| p != k && (p >= n || p < k) && r[p][k].is_some())
            .collect();
        let outs: Vec<usize> = (0..n + 2)
            .filter(|&q| q != k && (q >= n || q < k) && r[k][q].is_some())
            .collect();
        for &p in &ins {
            for &q in &outs {
                let path = Expr::seq(
                    [r[p][k].clone(), looped.clone(), r[k][q].clone()]
                        .into_iter()
                        .flatten(),
                );
                r[p][q] = Some(match r[p][q].take() {
                    Some(old) => Expr::alt([old, path]),
                    None => path,
                });
            }
        }
        for row in r.iter_mut() {
            row[k] = None;
        }
        r[k].iter_mut().for_each(|x| *x = None);
    }
    r[n][n + 1].take().unwrap_or(Expr::Empty)
}

/// Every Unicode scalar value not in `chars` (sorted, distinct).
fn complement(chars: &[char]) -> Vec<(char, char)> {
    let mut out = Vec::new();
    let mut lo = '\0' as u32;
    for &c in chars {
        let c = c as u32;
        if c > lo {
            push_range(&mut out, lo, c - 1);
        }
        lo = c + 1;
    }
    if lo <= char::MAX as u32 {
        push_range(&mut out, lo, char::MAX as u32);
    }
    out
}

/// Pushes `lo..=hi` as char ranges, skipping the surrogate gap.
fn push_range(out: &mut Vec<(char, char)>, lo: u32, hi: u32) {
    for (a, b) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi)] {
        if a <= b {
            if let (Some(a), Some(b)) = (char::from_u32(a), char::from_u32(b)) {
                out.push((a, b));
            }
        }
    }
}
