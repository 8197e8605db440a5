//! Entries that stop after their first call: an entry whose rule is
//! another entry's with its repeated calls replaced by one call is served
//! from that other entry's states, instead of holding every tool's
//! argument machine a second time.
//!
//! A format usually spells both: `required = calls` and `one = call`, with
//! `calls = call ("\n" call)*`; `auto = text calls?` and `auto-one = text
//! call?`. After a call, a one-call entry's states lead to the end and the
//! parallel entry's to the next call, so no minimization can share them:
//! at 10,000 tools they were half of every entry's states. Here the
//! compiler finds such pairs in the format's rules (the one-call entry is
//! the parallel one with the repeating rule `R = C (S C)*` replaced by
//! `C`, and `R` ends the parallel entry), lowers only the parallel entry,
//! and marks where each `C` of `R` ends ([`Expr::CallEnd`]). A matcher of
//! the one-call entry walks the parallel entry's states and, at a state
//! that ends a call, serves only the end of sequence: since `R` ends the
//! entry, such a state accepts, and any output with more calls passes one.
//! `crate::automaton::machine` checks what makes that exact on the built
//! machine and compiles the entry on its own where it does not hold.
//!
//! [`Expr::CallEnd`]: crate::automaton::expr::Expr::CallEnd

use super::syntax::{Node, Rules};

/// An entry served from another's states, stopping after its first call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The entry that stops after one call (`one`).
    pub entry: String,
    /// The entry whose states it walks (`required`).
    pub of: String,
    /// The repeating rule whose calls end where the marks go (`calls`).
    pub repeat: String,
    /// The token or text that ends each call (`</tool_call>`).
    pub end: String,
}

/// The entries of `g` that stop after their first call, each with the
/// entry it walks; none of those is itself one that stops. In entry order.
pub fn find(g: &Rules) -> Vec<Stop> {
    let entries: Vec<&str> = g.entries().map(|r| r.name.as_str()).collect();
    let repeats: Vec<(&str, &Node)> = g
        .rules
        .iter()
        .filter_map(|r| repeated_call(&r.body).map(|c| (r.name.as_str(), c)))
        .collect();
    let mut stops: Vec<Stop> = Vec::new();
    for &one in &entries {
        let found = entries.iter().find_map(|&of| {
            if of == one || stops.iter().any(|s| s.entry == of) {
                return None;
            }
            repeats.iter().find_map(|&(repeat, call)| {
                let body = body_of(g, of, repeat)?;
                let depth = g.rules.len();
                let end = last_token(g, call, depth)?;
                // The end token occurs once per call and nowhere else in
                // the entry (twice in `C (S C)*`), so the first one in an
                // output ends its first call.
                (tokens(g, call, end, depth) == 1
                    && tokens(g, body, end, depth) == 2
                    && ends_with(g, body, repeat, depth)
                    && uses(g, body, repeat, depth) == 1
                    && same(
                        g,
                        &replace(g, body, repeat, call, depth),
                        &g.rule(one)?.body,
                        depth,
                    ))
                .then(|| Stop {
                    entry: one.to_string(),
                    of: of.to_string(),
                    repeat: repeat.to_string(),
                    end: end.to_string(),
                })
            })
        });
        // An entry another one walks is never itself served as a stop.
        if let Some(s) = found.filter(|_| !stops.iter().any(|s| s.of == one)) {
            stops.push(s);
        }
    }
    stops
}

/// Entry `of`'s rule, unless `of` is the repeating rule itself (a format
/// that names it `calls` also has `required = calls` to walk).
fn body_of<'a>(g: &'a Rules, of: &str, repeat: &str) -> Option<&'a Node> {
    let r = g.rule(of)?;
    (of != repeat).then_some(&r.body)
}

/// `(C, S)` when `body` is `C (S C)*` with `C` a rule reference and `S`
/// not empty: a rule that repeats calls (lowered with one copy of `C`).
pub fn repeats_calls(body: &Node) -> Option<(&Node, &[Node])> {
    let Node::Seq(parts) = body else {
        return None;
    };
    let [first @ Node::Ref(..), Node::Repeat(tail, 0, None)] = parts.as_slice() else {
        return None;
    };
    let Node::Seq(rest) = tail.as_ref() else {
        return None;
    };
    let (last, sep) = rest.split_last()?;
    (!sep.is_empty() && same_ref(last, first)).then_some((first, sep))
}

/// `C` when `body` is `C (S C)*` ([`repeats_calls`]).
fn repeated_call(body: &Node) -> Option<&Node> {
    repeats_calls(body).map(|(call, _)| call)
}

fn same_ref(a: &Node, b: &Node) -> bool {
    matches!((a, b), (Node::Ref(x, _), Node::Ref(y, _)) if x == y)
}

/// Whether `body` ends with a use of rule `name` (directly or through
/// the rules it refers to), optional or not, so that nothing follows the
/// repeated calls.
fn ends_with(g: &Rules, body: &Node, name: &str, depth: usize) -> bool {
    match body {
        Node::Ref(r, _) if r == name => true,
        Node::Ref(r, _) => {
            depth > 0
                && g.rule(r)
                    .is_some_and(|x| ends_with(g, &x.body, name, depth - 1))
        }
        Node::Seq(parts) => parts.last().is_some_and(|p| ends_with(g, p, name, depth)),
        Node::Repeat(x, 0, Some(1)) => ends_with(g, x, name, depth),
        _ => false,
    }
}

/// How many times `body` uses rule `name`, through the rules it refers to.
fn uses(g: &Rules, body: &Node, name: &str, depth: usize) -> usize {
    match body {
        Node::Ref(r, _) if r == name => 1,
        Node::Ref(r, _) if depth > 0 => g.rule(r).map_or(0, |x| uses(g, &x.body, name, depth - 1)),
        Node::Seq(v) | Node::Alt(v) | Node::Text(v, _) => {
            v.iter().map(|n| uses(g, n, name, depth)).sum()
        }
        Node::Repeat(x, ..) | Node::Tool(x, _) => uses(g, x, name, depth),
        _ => 0,
    }
}

/// `body` with each use of rule `name` replaced by `by`, the rules on
/// the way to one written out.
fn replace(g: &Rules, body: &Node, name: &str, by: &Node, depth: usize) -> Node {
    let again = |n: &Node| replace(g, n, name, by, depth);
    match body {
        Node::Ref(r, _) if r == name => by.clone(),
        Node::Ref(r, _) if depth > 0 && uses(g, body, name, depth) > 0 => match g.rule(r) {
            Some(x) => replace(g, &x.body, name, by, depth - 1),
            None => body.clone(),
        },
        Node::Seq(v) => Node::Seq(v.iter().map(again).collect()),
        Node::Alt(v) => Node::Alt(v.iter().map(again).collect()),
        Node::Repeat(x, lo, hi) => Node::Repeat(Box::new(again(x)), *lo, *hi),
        n => n.clone(),
    }
}

/// The token (`token("...")`, a special) or literal that `n` ends with,
/// through the rules it refers to.
fn last_token<'a>(g: &'a Rules, n: &'a Node, depth: usize) -> Option<&'a str> {
    match n {
        Node::Special(name, _) | Node::Token(name, _) | Node::Lit(name) => Some(name),
        Node::Ref(r, _) if depth > 0 => last_token(g, &g.rule(r)?.body, depth - 1),
        Node::Seq(v) => last_token(g, v.last()?, depth),
        _ => None,
    }
}

/// How many times `n` writes the token `name`, through the rules it refers
/// to (as a trigger of free text too: such text stops before it).
fn tokens(g: &Rules, n: &Node, name: &str, depth: usize) -> usize {
    let again = |x: &Node| tokens(g, x, name, depth);
    match n {
        Node::Special(t, _) | Node::Token(t, _) => (t == name) as usize,
        Node::Lit(t) => (t == name) as usize,
        Node::Ref(r, _) if depth > 0 => {
            g.rule(r).map_or(0, |x| tokens(g, &x.body, name, depth - 1))
        }
        Node::Seq(v) | Node::Alt(v) | Node::Text(v, _) => v.iter().map(again).sum(),
        Node::Repeat(x, ..) | Node::Tool(x, _) => again(x),
        Node::Xml(x, _) => [&x.open, &x.mid_string, &x.mid_other, &x.close]
            .into_iter()
            .map(again)
            .sum(),
        _ => 0,
    }
}

/// Whether `a` and `b` are the same expression, wherever written: equal
/// up to positions, a reference equal to the rule it names.
fn same(g: &Rules, a: &Node, b: &Node, depth: usize) -> bool {
    if depth == 0 {
        return a == b;
    }
    let (a, b) = (resolve(g, a), resolve(g, b));
    let same = |p: &Node, q: &Node| same(g, p, q, depth - 1);
    match (a, b) {
        (Node::Lit(x), Node::Lit(y)) => x == y,
        (Node::Class(x, _), Node::Class(y, _))
        | (Node::Regex(x, _), Node::Regex(y, _))
        | (Node::Special(x, _), Node::Special(y, _))
        | (Node::Token(x, _), Node::Token(y, _)) => x == y,
        (Node::Text(x, _), Node::Text(y, _))
        | (Node::Seq(x), Node::Seq(y))
        | (Node::Alt(x), Node::Alt(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Node::Tool(x, _), Node::Tool(y, _)) => same(x, y),
        (Node::Part(x, _), Node::Part(y, _)) => x == y,
        (Node::Xml(x, _), Node::Xml(y, _)) => x == y,
        (Node::Repeat(x, a0, a1), Node::Repeat(y, b0, b1)) => a0 == b0 && a1 == b1 && same(x, y),
        _ => false,
    }
}

/// `n`, or the rule a chain of references from `n` ends at (a rule that
/// is a reference to itself would loop: the grammar checker refuses it).
fn resolve<'a>(g: &'a Rules, mut n: &'a Node) -> &'a Node {
    for _ in 0..=g.rules.len() {
        match n {
            Node::Ref(name, _) => match g.rule(name) {
                Some(r) => n = &r.body,
                None => return n,
            },
            _ => return n,
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(text: &str) -> Vec<(String, String, String)> {
        let g = Rules::parse("test.tdg", text).unwrap();
        find(&g)
            .into_iter()
            .map(|s| (s.entry, s.of, s.repeat))
            .collect()
    }

    fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
        (a.into(), b.into(), c.into())
    }

    #[test]
    fn hermes_shapes_are_found() {
        let got = stops(
            r#"
            entry start = text_except(token("<c>")) calls;
            entry calls = call ("\n" call)*;
            entry call = token("<c>") tool { name " " args } token("</c>");
            entry auto = text_except(token("<c>")) calls?;
            entry required = calls;
            entry one = call;
            entry auto-one = text_except(token("<c>")) call?;
            "#,
        );
        assert_eq!(
            got,
            vec![
                t("call", "required", "calls"),
                t("one", "required", "calls"),
                t("auto-one", "auto", "calls"),
            ]
        );
    }

    #[test]
    fn calls_ended_by_text_stop_too_but_only_at_their_one_end() {
        // The end written as text: a stop (the runtime checks the tokens
        // that run past it).
        let plain = r#"
            entry required = calls;
            calls = call ("\n" call)*;
            entry one = call;
            call = "<c>" tool { name " " args } "</c>";
            "#;
        assert_eq!(stops(plain), vec![t("one", "required", "calls")]);
        // The end also opens the separator: the first one in an output
        // need not end the first call.
        let twice = r#"
            entry required = calls;
            calls = call (token("</c>") call)*;
            entry one = call;
            call = token("<c>") tool { name " " args } token("</c>");
            "#;
        assert!(stops(twice).is_empty());
        // Nothing ends the call.
        let open = r#"
            entry required = calls;
            calls = call ("\n" call)*;
            entry one = call;
            call = "<c>" tool { name " " args };
            "#;
        assert!(stops(open).is_empty());
    }

    #[test]
    fn repeats_that_do_not_end_the_entry_are_not_stops() {
        // `[call, call]`: the list's bracket follows the calls, so after a
        // call the one-call entry still has to write it.
        let got = stops(
            r#"
            entry start = call | "[" calls "]";
            calls = call (", " call)*;
            entry call = tool { name " " args };
            entry required = start;
            entry one = call | "[" call "]";
            "#,
        );
        assert!(got.is_empty(), "{got:?}");
    }
}
