//! ChatML prompts: a system turn that documents the tools and the call
//! format, the user's question, and an open assistant turn.

use serde_json::Value;

/// How the call is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFormat {
    /// `Thought:` / `Action:` / `Action Input:` lines.
    React,
    /// `<tool_call>{"name": ..., "arguments": ...}</tool_call>` blocks.
    Hermes,
}

impl CallFormat {
    pub fn name(self) -> &'static str {
        match self {
            CallFormat::React => "react",
            CallFormat::Hermes => "hermes",
        }
    }

    pub fn parse(s: &str) -> Result<CallFormat, String> {
        match s {
            "react" => Ok(CallFormat::React),
            "hermes" => Ok(CallFormat::Hermes),
            _ => Err(format!("unknown format {s:?} (known: react, hermes)")),
        }
    }
}

/// How much of each tool the prompt documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Docs {
    /// The whole function document, parameters included, as JSON.
    Full,
    /// The name and the first sentence of the description (as the ToolDec
    /// papers prompt: the grammar supplies the argument structure).
    Names,
}

impl Docs {
    pub fn name(self) -> &'static str {
        match self {
            Docs::Full => "full",
            Docs::Names => "names",
        }
    }

    pub fn parse(s: &str) -> Result<Docs, String> {
        match s {
            "full" => Ok(Docs::Full),
            "names" => Ok(Docs::Names),
            _ => Err(format!(
                "unknown documentation level {s:?} (known: full, names)"
            )),
        }
    }
}

/// The first sentence of a description (up to the first ". " or newline).
fn first_sentence(s: &str) -> &str {
    let s = s.trim();
    let end = [s.find(". "), s.find('\n')]
        .into_iter()
        .flatten()
        .min()
        .map_or(s.len(), |i| i + 1);
    s[..end].trim_end()
}

/// The tool list as the system turn shows it.
pub fn tool_docs(functions: &[Value], docs: Docs) -> String {
    let mut out = String::new();
    for f in functions {
        match docs {
            Docs::Full => {
                out.push_str(&serde_json::to_string(f).unwrap_or_default());
                out.push('\n');
            }
            Docs::Names => {
                let name = f["name"].as_str().unwrap_or_default();
                let desc = first_sentence(f["description"].as_str().unwrap_or_default());
                out.push_str(&format!("- {name}: {desc}\n"));
            }
        }
    }
    out
}

/// The system turn's instructions for a format.
fn instructions(format: CallFormat) -> &'static str {
    match format {
        CallFormat::React => {
            "Answer with one Thought line, then the function call, in exactly this form:\n\
             Thought: I will look up the weather in Paris.\n\
             Action: get_weather\n\
             Action Input: {\"city\": \"Paris\"}\n\
             For several calls, repeat the Action and Action Input lines. Write nothing after the last Action Input."
        }
        CallFormat::Hermes => {
            "For each function call, return a JSON object with the function name and its arguments within <tool_call></tool_call> tags, in exactly this form:\n\
             <tool_call>\n\
             {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n\
             </tool_call>\n\
             For several calls, write one block per call. Write nothing but the blocks."
        }
    }
}

/// The part of the prompt before the tool list: the same for every task of
/// a format, so its cache is computed once.
pub fn prefix(format: CallFormat) -> String {
    format!(
        "<|im_start|>system\nYou are an expert in composing functions. You are given a question and a set of \
         possible functions. Based on the question, make one or more function calls to achieve the purpose.\n\n\
         {}\n\nYou have access to the following functions:\n<tools>\n",
        instructions(format)
    )
}

/// The rest of the prompt, ending where the assistant's reply begins.
pub fn rest(question: &str, functions: &[Value], docs: Docs) -> String {
    format!(
        "{}</tools><|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n",
        tool_docs(functions, docs),
        question
    )
}

/// The whole prompt: [`prefix`] then [`rest`].
pub fn chatml(question: &str, functions: &[Value], format: CallFormat, docs: Docs) -> String {
    prefix(format) + &rest(question, functions, docs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_period_space_or_newline() {
        assert_eq!(first_sentence("Adds. Then more."), "Adds.");
        assert_eq!(first_sentence("Line one\nline two"), "Line one");
        assert_eq!(first_sentence("v1.2 is fine"), "v1.2 is fine");
        assert_eq!(first_sentence(""), "");
    }

    #[test]
    fn names_only_docs_leave_out_parameters() {
        let f = serde_json::json!({"name": "f", "description": "Does f. Long.", "parameters": {"type": "dict"}});
        assert_eq!(
            tool_docs(std::slice::from_ref(&f), Docs::Names),
            "- f: Does f.\n"
        );
        assert!(tool_docs(&[f], Docs::Full).contains("\"parameters\""));
    }
}
