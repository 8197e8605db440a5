//! The tolerant reading of a model's reply, for scoring free generations
//! (the evaluation's unconstrained runs) next to constrained ones.
//!
//! The parsers of [`crate::parsers`] check what a grammar writes, to the
//! space. A model decoding without masks writes the same format loosely:
//! other spacing, `"arguments"` before `"name"`, a JSON list of calls in one
//! `<tool_call>` block (as SmolLM2 was trained to), blank lines around. The
//! papers' syntax error is "the call does not parse, names no tool, or its
//! arguments fail the schema", not "differs from one spelling", so scoring
//! reads replies with these functions: whitespace is free around the blocks
//! and the JSON, and any JSON the format's structure allows is taken. The
//! schema check stays the caller's (the arguments may even be a non-object
//! here, for the validator to refuse).
//!
//! Every reply the strict parsers accept for react's `start`/`parallel` and
//! hermes' `call`/`calls` entries reads here as the same calls (a test
//! checks it); the converse does not hold. The evaluation's recorded
//! results (`eval/results.jsonl`) were scored with exactly this reading,
//! and `eval/tests/reply_parsing.rs` keeps it so.

use serde_json::Value;

use super::{preview, Calls};

/// Reads one JSON value at the start of `s`, after optional whitespace
/// (`serde_json`'s stream reader); returns it and the rest.
fn json_prefix(s: &str) -> Result<(Value, &str), String> {
    let mut stream = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => {
            let end = stream.byte_offset();
            Ok((v, &s[end..]))
        }
        Some(Err(e)) => Err(format!("invalid JSON: {e}")),
        None => Err("no JSON value".into()),
    }
}

/// ReAct: `Thought:` (after optional whitespace), text up to the first line
/// beginning with `Action: `, then one or more `Action: NAME` /
/// `Action Input: JSON` pairs, each pair's lines and the pairs separated by
/// one `\n`; nothing but whitespace after the last.
pub fn react(text: &str) -> Result<Calls, String> {
    let text = text.trim_start();
    if !text.starts_with("Thought:") {
        return Err("does not start with \"Thought:\"".into());
    }
    let mut rest = match text.find("\nAction: ") {
        Some(i) => &text[i + 1..],
        None => return Err("no line beginning with \"Action: \"".into()),
    };
    let mut calls = Vec::new();
    loop {
        let line = rest
            .strip_prefix("Action: ")
            .ok_or_else(|| format!("expected \"Action: \" at {:?}", preview(rest)))?;
        let nl = line
            .find('\n')
            .ok_or("the Action line is not followed by an Action Input line")?;
        let name = &line[..nl];
        let after = line[nl + 1..]
            .strip_prefix("Action Input: ")
            .ok_or_else(|| {
                format!(
                    "expected \"Action Input: \" at {:?}",
                    preview(&line[nl + 1..])
                )
            })?;
        let (args, tail) = json_prefix(after).map_err(|e| format!("Action Input: {e}"))?;
        calls.push((name.to_string(), args));
        if tail.trim().is_empty() {
            return Ok(calls);
        }
        rest = tail
            .strip_prefix('\n')
            .filter(|t| t.starts_with("Action: "))
            .ok_or_else(|| format!("text after the arguments: {:?}", preview(tail)))?;
    }
}

/// Hermes: one or more `<tool_call>JSON</tool_call>` blocks, whitespace
/// around and between them and around the JSON; a block holds
/// `{"name": ..., "arguments": ...}` (members in any order, others
/// ignored) or a JSON list of such objects.
pub fn hermes(text: &str) -> Result<Calls, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut rest = text.trim();
    let mut calls = Vec::new();
    while !rest.is_empty() {
        let inner = rest
            .strip_prefix(OPEN)
            .ok_or_else(|| format!("expected {OPEN:?} at {:?}", preview(rest)))?;
        let (v, tail) = json_prefix(inner.trim_start()).map_err(|e| format!("in {OPEN}: {e}"))?;
        let tail = tail.trim_start();
        rest = tail
            .strip_prefix(CLOSE)
            .ok_or_else(|| format!("expected {CLOSE:?} at {:?}", preview(tail)))?
            .trim_start();
        let items = match v {
            Value::Array(items) => items,
            v => vec![v],
        };
        for item in items {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("a call without a string \"name\": {item}"))?;
            let args = item
                .get("arguments")
                .cloned()
                .ok_or_else(|| format!("a call without \"arguments\": {item}"))?;
            calls.push((name.to_string(), args));
        }
    }
    if calls.is_empty() {
        return Err("no <tool_call> block".into());
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers;
    use serde_json::json;

    #[test]
    fn react_one_and_two_calls() {
        let one = react("Thought: go\nAction: f\nAction Input: {\"a\": 1}").unwrap();
        assert_eq!(one, vec![("f".to_string(), json!({"a": 1}))]);
        let two = react(
            "Thought: go\nmore\nAction: f\nAction Input: {}\nAction: g\nAction Input: {\"b\": [2]}\n",
        )
        .unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].0, "g");
    }

    #[test]
    fn react_errors() {
        assert!(react("Action: f\nAction Input: {}").is_err());
        assert!(react("Thought: x\nAction: f\nAction Input: {\"a\": }").is_err());
        assert!(react("Thought: x\nAction: f\nAction Input: {}\nObservation: 3").is_err());
        assert!(react("Thought: x\nAction: f").is_err());
    }

    #[test]
    fn hermes_blocks_and_lists() {
        let t = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n<tool_call>[{\"name\": \"g\", \"arguments\": {}}]</tool_call>";
        let calls = hermes(t).unwrap();
        assert_eq!(
            calls.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            ["f", "g"]
        );
    }

    #[test]
    fn hermes_errors() {
        assert!(hermes("").is_err());
        assert!(
            hermes("Sure! <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>").is_err()
        );
        assert!(hermes("<tool_call>{\"name\": \"f\", \"arguments\": {}}").is_err());
        assert!(hermes("<tool_call>{\"arguments\": {}}</tool_call>").is_err());
    }

    /// What the strict parsers accept for the entries the evaluation
    /// compiles, the tolerant reading accepts as the same calls.
    #[test]
    fn tolerant_reading_takes_what_the_grammar_writes() {
        let react_texts = [
            "Thought: I will call it.\nAction: f\nAction Input: {\"a\": 1}",
            " Thought: a\nb\nAction: f\nAction Input: {}",
            "Thought: x\nAction: f\nAction Input: {\"s\": \"}\\\"\"}\nAction: g\nAction Input: {\"b\": [1, {\"c\": null}]}",
        ];
        for t in react_texts {
            let mut read = 0;
            for entry in ["start", "parallel"] {
                if let Ok(strict) = parsers::parser_for("react", entry).unwrap()(t) {
                    assert_eq!(react(t).as_ref(), Ok(&strict), "{entry}: {t:?}");
                    read += 1;
                }
            }
            assert!(read > 0, "no strict entry reads {t:?}");
        }
        let hermes_texts = [
            "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
            " <tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"x\": \"</tool_call>\"}}\n</tool_call>",
        ];
        for t in hermes_texts {
            let mut read = 0;
            for entry in ["call", "calls"] {
                if let Ok(strict) = parsers::parser_for("hermes", entry).unwrap()(t) {
                    assert_eq!(hermes(t).as_ref(), Ok(&strict), "{entry}: {t:?}");
                    read += 1;
                }
            }
            assert!(read > 0, "no strict entry reads {t:?}");
        }
    }
}
