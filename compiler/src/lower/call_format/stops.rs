//! Entries that stop after their first call: an entry that ends with
//! one call `C`, where the format also repeats calls `R = C (S C)*`, is
//! lowered with that `C` replaced by `R` and served stopping after the
//! first call, so that every entry walks the one copy of every tool's
//! argument machine that `R` holds.
//!
//! A format usually spells both: `required = calls` and `one = call`, with
//! `calls = call ("\n" call)*`; `auto = text calls?` and `auto-one = text
//! call?`; ReAct's `start = thought "\n" call` beside `parallel = thought
//! "\n" calls`. After a call, a one-call entry's states lead to the end
//! and a parallel entry's to the next call, so no minimization can share
//! them: at 10,000 tools they were half of every entry's states. Here the
//! one-call entry is lowered as the parallel one would be (`call` becomes
//! `calls`), each `C` of `R` is followed by a mark ([`Expr::CallEnd`]),
//! and a matcher of the entry serves only the end of sequence at a state
//! that ends a call: `R` ends the entry, so such a state accepts.
//!
//! Why that is the entry's language. Write the entry `P C` (its call at
//! the end of `P`'s branch) and what is lowered `P R`. A matcher walks the
//! DFA of `P R` and, at the first state that ends a call, allows only the
//! end of sequence. (1) An output `p c` of the entry: no DFA state before
//! its end ends a call, provided no state that ends a call holds a run
//! before its first call's end (the run of `p c` itself is one); at its
//! end its run passes a mark, so the state ends a call and accepts. (2)
//! An output the matcher allows is one of `P R`, and if its run passes a
//! mark, the first mark ends the output: it is `p c` (a run that passes
//! none took a branch of `P` without the call). So the one condition
//! is that no DFA state that ends a call holds a run before its first
//! call's end. The subset construction checks it on the NFA's states
//! (`Nfa::first_call_runs`, conservative where states are shared), and
//! where it fails the compile lowers every entry as written
//! (`crate::automaton::machine::explicit_if_mixed`). A format whose free
//! text before the call may contain a whole call, or whose call may go on
//! after a complete one, fails it.
//!
//! [`Expr::CallEnd`]: crate::automaton::expr::Expr::CallEnd

use super::syntax::{Node, Pos, Rules};

/// An entry served stopping after its first call.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    /// The entry that stops after one call (`one`).
    pub entry: String,
    /// The repeating rule whose calls' ends are marked (`calls`).
    pub repeat: String,
    /// The entry's rule with its call replaced by `repeat`: what is
    /// lowered for it.
    pub body: Node,
}

/// The entries of `g` that stop after their first call, in entry order:
/// each ends with the one use of a repeating rule's call `C` (or is `C`)
/// and does not use the repeating rule, which some other entry ends with
/// (so that lowering it with the repeating rule shares that entry's
/// states: the NFA builds a rule once per continuation).
pub fn find(g: &Rules) -> Vec<Stop> {
    let depth = g.rules.len();
    let entries: Vec<&str> = g.entries().map(|r| r.name.as_str()).collect();
    let repeats: Vec<(&str, &str, Pos)> = g
        .rules
        .iter()
        .filter_map(|r| match repeats_calls(&r.body) {
            Some((Node::Ref(call, pos), _)) => Some((r.name.as_str(), call.as_str(), *pos)),
            _ => None,
        })
        .collect();
    let mut stops = Vec::new();
    for &one in &entries {
        let body = &g.rule(one).expect("entries are rules").body;
        let found = repeats.iter().find_map(|&(repeat, call, pos)| {
            let by = Node::Ref(repeat.to_string(), pos);
            let shared = entries.iter().any(|&e| {
                e != one
                    && (e == repeat
                        || g.rule(e)
                            .is_some_and(|r| ends_with(g, &r.body, repeat, depth)))
            });
            if one == repeat || !shared {
                return None;
            }
            let stopped = if one == call {
                by
            } else if uses(g, body, call, depth) == 1
                && uses(g, body, repeat, depth) == 0
                && ends_with(g, body, call, depth)
            {
                replace(g, body, call, &by, depth)
            } else {
                return None;
            };
            Some(Stop {
                entry: one.to_string(),
                repeat: repeat.to_string(),
                body: stopped,
            })
        });
        stops.extend(found);
    }
    stops
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

fn same_ref(a: &Node, b: &Node) -> bool {
    matches!((a, b), (Node::Ref(x, _), Node::Ref(y, _)) if x == y)
}

/// Whether `body` ends with a use of rule `name` (directly or through
/// the rules it refers to), optional or not, in any branch: with one use,
/// nothing follows it.
fn ends_with(g: &Rules, body: &Node, name: &str, depth: usize) -> bool {
    match body {
        Node::Ref(r, _) if r == name => true,
        Node::Ref(r, _) => {
            depth > 0
                && g.rule(r)
                    .is_some_and(|x| ends_with(g, &x.body, name, depth - 1))
        }
        Node::Seq(parts) => parts.last().is_some_and(|p| ends_with(g, p, name, depth)),
        Node::Alt(v) => v.iter().any(|p| ends_with(g, p, name, depth)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn stops(text: &str) -> Vec<(String, String)> {
        let g = Rules::parse("test.tdg", text).unwrap();
        find(&g).into_iter().map(|s| (s.entry, s.repeat)).collect()
    }

    fn t(a: &str, b: &str) -> (String, String) {
        (a.into(), b.into())
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
                t("call", "calls"),
                t("one", "calls"),
                t("auto-one", "calls")
            ]
        );
    }

    #[test]
    fn react_shapes_are_found_the_default_entry_and_a_branch_too() {
        let text = r#"
            entry start = thought "\n" call;
            entry parallel = thought "\n" calls;
            entry auto = "T: " text_except("\nA: ", "\nF: ") "\n" (call | "F: " text_except("A:"));
            entry one = start;
            entry auto-one = auto;
            calls = call ("\n" call)*;
            thought = "T: " text_except("\nA: ");
            call = tool { "A: " name "\nI: " args };
            "#;
        assert_eq!(
            stops(text),
            vec![
                t("start", "calls"),
                t("auto", "calls"),
                t("one", "calls"),
                t("auto-one", "calls"),
            ]
        );
        // The call replaced where it is, the rules on the way written out.
        let g = Rules::parse("test.tdg", text).unwrap();
        let one = find(&g).into_iter().find(|s| s.entry == "one").unwrap();
        let Node::Seq(parts) = &one.body else {
            panic!("{:?}", one.body)
        };
        assert!(matches!(parts.last(), Some(Node::Ref(r, _)) if r == "calls"));
    }

    #[test]
    fn only_calls_that_end_the_entry_once_stop() {
        // `[call, call]`: the list's bracket follows the calls, so after a
        // call the one-call entry still has to write it (and no entry
        // ends with the calls, so `call` would share nothing either).
        let bracket = r#"
            entry start = call | "[" calls "]";
            calls = call (", " call)*;
            entry call = tool { name " " args };
            entry required = start;
            entry one = call | "[" call "]";
            "#;
        assert!(stops(bracket).is_empty());
        // Two calls: the first does not end the entry.
        let two = r#"
            entry required = calls;
            calls = call ("\n" call)*;
            entry two = call "\n" call;
            call = "<c>" tool { name " " args } "</c>";
            "#;
        assert!(stops(two).is_empty());
    }

    #[test]
    fn a_stop_needs_an_entry_that_ends_with_the_repeated_calls() {
        // The calls in a list: another continuation, so another copy of
        // them; nothing would share the entry's states.
        let list = r#"
            entry one = call;
            entry list = "[" calls "]";
            calls = call ("\n" call)*;
            call = "<c>" tool { name " " args } "</c>";
            "#;
        assert!(stops(list).is_empty());
    }
}
