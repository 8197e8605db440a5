//! Parsers for the model's replies, written for the harness from the format
//! descriptions (not from the compiler's grammar), so that the constrained
//! runs are checked by an independent reading.

use serde_json::Value;

/// One call as written: the tool name and the arguments value.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub args: Value,
}

/// Reads one JSON value at the start of `s`; returns it and the rest.
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

/// `Thought: ...` lines, then one or more `Action: NAME` /
/// `Action Input: JSON` pairs; nothing but whitespace after the last.
pub fn react(text: &str) -> Result<Vec<Call>, String> {
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
            .ok_or_else(|| format!("expected \"Action: \" at {:?}", head(rest)))?;
        let nl = line
            .find('\n')
            .ok_or("the Action line is not followed by an Action Input line")?;
        let name = &line[..nl];
        let after = line[nl + 1..]
            .strip_prefix("Action Input: ")
            .ok_or_else(|| format!("expected \"Action Input: \" at {:?}", head(&line[nl + 1..])))?;
        let (args, tail) = json_prefix(after).map_err(|e| format!("Action Input: {e}"))?;
        calls.push(Call {
            name: name.to_string(),
            args,
        });
        if tail.trim().is_empty() {
            return Ok(calls);
        }
        rest = tail
            .strip_prefix('\n')
            .filter(|t| t.starts_with("Action: "))
            .ok_or_else(|| format!("text after the arguments: {:?}", head(tail)))?;
    }
}

/// One or more `<tool_call>JSON</tool_call>` blocks, whitespace around and
/// between them; a block holds `{"name": ..., "arguments": {...}}` (or, as
/// SmolLM2 was trained to write, a JSON list of such objects).
pub fn hermes(text: &str) -> Result<Vec<Call>, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut rest = text.trim();
    let mut calls = Vec::new();
    while !rest.is_empty() {
        let inner = rest
            .strip_prefix(OPEN)
            .ok_or_else(|| format!("expected {OPEN:?} at {:?}", head(rest)))?;
        let (v, tail) = json_prefix(inner.trim_start()).map_err(|e| format!("in {OPEN}: {e}"))?;
        let tail = tail.trim_start();
        rest = tail
            .strip_prefix(CLOSE)
            .ok_or_else(|| format!("expected {CLOSE:?} at {:?}", head(tail)))?
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
            calls.push(Call {
                name: name.to_string(),
                args,
            });
        }
    }
    if calls.is_empty() {
        return Err("no <tool_call> block".into());
    }
    Ok(calls)
}

fn head(s: &str) -> &str {
    let end = s.char_indices().nth(40).map_or(s.len(), |(i, _)| i);
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn react_one_and_two_calls() {
        let one = react("Thought: go\nAction: f\nAction Input: {\"a\": 1}").unwrap();
        assert_eq!(
            one,
            vec![Call {
                name: "f".into(),
                args: json!({"a": 1})
            }]
        );
        let two = react("Thought: go\nmore\nAction: f\nAction Input: {}\nAction: g\nAction Input: {\"b\": [2]}\n").unwrap();
        assert_eq!(two.len(), 2);
        assert_eq!(two[1].name, "g");
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
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
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
}
