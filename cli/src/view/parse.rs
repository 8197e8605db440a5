//! `tooldec parse ART`: reads the tool calls back out of an output the
//! artifact accepts, as OpenAI-style `tool_calls` JSON
//! (`[{"name": ..., "arguments": {...}}]`, see `tooldec_read`); an output
//! it refuses gets `explain`'s diagnosis instead.

use tooldec_read::{ReadError, Reader};

use super::{explain, Tokenizer, View};

/// What is read: a text, or token ids.
pub enum Output<'a> {
    /// A text; special tokens the grammar uses are spelled by name.
    Text {
        /// The text.
        text: &'a str,
        /// The tokenizer that tokenizes it for a diagnosis (`None`: none
        /// at hand, the reader's own message is given).
        tokenizer: Option<&'a Tokenizer>,
        /// Where the tokenizer came from, for the diagnosis.
        source: &'a str,
    },
    /// Token ids (an end-of-sequence id ends the output).
    Tokens(&'a [u32]),
}

/// The outcome of [`parse`].
pub struct Parsed {
    /// The calls as pretty JSON with a final newline, when read.
    pub json: Option<String>,
    /// Otherwise why not: `explain`'s report, or the reader's message.
    pub diagnosis: String,
    /// The time reading took (the DFA walk and the structural parse).
    pub took: std::time::Duration,
}

/// Reads `output` from `entry` (the artifact's first when `None`).
pub fn parse(v: &View<'_>, entry: Option<&str>, output: &Output<'_>) -> Parsed {
    let t0 = std::time::Instant::now();
    let reader = match Reader::new(&v.g) {
        Ok(r) => r,
        Err(e) => return failed(format!("error: {e}\n"), t0),
    };
    let read = match output {
        Output::Text { text, .. } => reader.read_text(&v.g, entry, text),
        Output::Tokens(ids) => reader.read_tokens(&v.g, entry, ids),
    };
    let took = t0.elapsed();
    let e = match read {
        Ok(calls) => {
            let value: serde_json::Value =
                serde_json::from_str(&tooldec_read::to_json(&calls)).unwrap_or_default();
            let mut json = serde_json::to_string_pretty(&value).unwrap_or_default();
            json.push('\n');
            return Parsed {
                json: Some(json),
                diagnosis: String::new(),
                took,
            };
        }
        Err(e) => e,
    };
    let own = format!("error: {e}\n");
    if !matches!(e, ReadError::Rejected { .. }) {
        return failed(own, t0);
    }
    // The serving path's own account of the refusal.
    let ex = match output {
        Output::Tokens(ids) => explain::explain(v, entry, ids, "--tokens"),
        Output::Text {
            text,
            tokenizer: Some(tok),
            source,
        } => match tok.encode(text) {
            Ok(ids) => explain::explain(v, entry, &ids, source),
            Err(_) => return failed(own, t0),
        },
        Output::Text { .. } => return failed(own, t0),
    };
    if ex.accepted {
        // Tokenized, the text walks; read as bytes it does not.
        return failed(own, t0);
    }
    failed(ex.report, t0)
}

fn failed(diagnosis: String, t0: std::time::Instant) -> Parsed {
    Parsed {
        json: None,
        diagnosis,
        took: t0.elapsed(),
    }
}
