//! The models' own chat templates, rendered with a Jinja engine
//! (`minijinja`), against the call formats: an assistant message with
//! `tool_calls` (BFCL ground truth) rendered by the template of the shared
//! data's `tokenizer_config.json` must be accepted, token by token with
//! that model's tokenizer, by the format's artifact.
//!
//! What is fed: the template is rendered twice, once with the messages up
//! to the user turn and `add_generation_prompt=true` (the prompt), once
//! with the assistant message appended. The prompt must be a prefix of
//! the second rendering; what follows it, less the end-of-turn text the
//! template writes after the message (`<|im_end|>\n` for Qwen2.5,
//! `<|eot_id|>` for Llama 3.2: the EOS, which the check then requires the
//! mask to allow), is the assistant part fed to the matcher.
//!
//! - Qwen2.5 (`tokenizers/qwen2.5`): `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`
//!   per call, `\n` between them; checked against `hermes` (entries
//!   `call`, `calls`, `start`, and `one`, `required`, `auto` where the
//!   format has them) and `qwen3` (`one`, `required`, `auto`); with a
//!   text content before the calls, against the entries that allow text.
//! - Llama 3.2 (`tokenizers/llama-3.2`): `{"name": "...", "parameters": ...}`
//!   (the template refuses more than one call); checked against `llama3`
//!   (`start`, and `one`, `required`, `auto`).
//! - Gemma 3 (`tokenizers/gemma-3`): its template renders no tool calls
//!   (an assistant message is its `content` only); the test checks that
//!   the rendering holds no trace of the call, and says so.
//! - gpt-oss and Mistral v0.1: the shared data's `tokenizer_config.json`
//!   has no `chat_template` (checked, and said).
//!
//! HF renders templates with Python's Jinja2 plus its own `tojson`
//! (`json.dumps(x, ensure_ascii=False, indent=...)`, no HTML escaping) and
//! `raise_exception`; both are defined here the same way. The three
//! templates use nothing else that minijinja lacks.
//!
//! Reads `TOOLDEC_DATA` (unset: prints a skip line and passes).

use std::sync::Arc;

use minijinja::value::{Kwargs, Value as JValue};
use minijinja::{Environment, Error as JError, ErrorKind as JErrorKind};
use serde_json::{json, Value};
use tooldec_compiler::{compile, spec, CallFormat, Options};
use tooldec_runtime::Artifact;
use tooldec_testkit::failures::{report_failures, Failure};
use tooldec_testkit::loaded::{tokenizer, Loaded};
use tooldec_testkit::{bfcl, data_dir, data_file, parse_json, read_text, render, schema};

const BFCL_MULTIPLE: &str = "tools/bfcl/BFCL_v4_multiple.json";
const BFCL_MULTIPLE_ANSWERS: &str = "tools/bfcl/possible_answer/BFCL_v4_multiple.json";
/// Every how many BFCL lines are rendered.
const STEP: usize = 20;

/// HF's `tojson`: `json.dumps(x, ensure_ascii=False, indent=indent)`:
/// `", "` and `": "` separators, or `indent` spaces per level and `","`.
fn tojson(v: JValue, kwargs: Kwargs) -> Result<JValue, JError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    kwargs.assert_all_used()?;
    let j: Value = serde_json::to_value(&v)
        .map_err(|e| JError::new(JErrorKind::InvalidOperation, e.to_string()))?;
    let s = match indent {
        None => render::python_json(&j),
        Some(n) => render::indented(&j, n),
    };
    Ok(JValue::from_safe_string(s))
}

/// A Jinja environment with HF's additions.
fn hf_env() -> Environment<'static> {
    let mut env = Environment::new();
    env.add_filter("tojson", tojson);
    env.add_function("raise_exception", |msg: String| -> Result<JValue, JError> {
        Err(JError::new(JErrorKind::InvalidOperation, msg))
    });
    env
}

/// The `chat_template` of `tokenizers/{tok}/tokenizer_config.json`.
fn template_of(tok: &str) -> Option<String> {
    let path = data_file(&format!("tokenizers/{tok}/tokenizer_config.json"));
    let cfg = parse_json(&read_text(&path), &path.display().to_string());
    cfg.get("chat_template")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Renders `template` with `messages`, `tools` and the special-token
/// variables.
fn render_chat(
    template: &str,
    messages: &Value,
    tools: &[Value],
    generation_prompt: bool,
) -> Result<String, String> {
    let env = hf_env();
    let t = env
        .template_from_str(template)
        .map_err(|e| format!("minijinja cannot parse the template: {e:#}"))?;
    let ctx = json!({
        "messages": messages,
        "tools": tools,
        "add_generation_prompt": generation_prompt,
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>",
    });
    t.render(JValue::from_serialize(&ctx))
        .map_err(|e| format!("minijinja cannot render: {e:#}"))
}

/// The assistant part of a conversation (see the module doc): the second
/// rendering less the prompt, less `end_of_turn`.
fn assistant_part(
    template: &str,
    tools: &[Value],
    assistant: &Value,
    end_of_turn: &str,
) -> Result<String, String> {
    let user = json!({"role": "user", "content": "Please help with this."});
    let prompt = render_chat(template, &json!([user]), tools, true)?;
    let full = render_chat(template, &json!([user, assistant]), tools, false)?;
    let rest = full.strip_prefix(&prompt).ok_or_else(|| {
        format!("the prompt is not a prefix of the rendering\nprompt: {prompt:?}\nfull:   {full:?}")
    })?;
    rest.strip_suffix(end_of_turn)
        .map(str::to_string)
        .ok_or_else(|| format!("the assistant part does not end with {end_of_turn:?}: {rest:?}"))
}

/// One BFCL line: its tools and its ground-truth calls (arguments in the
/// schema's order), the invalid ones left out.
struct Line {
    id: String,
    tools: Vec<Value>,
    text: String,
    calls: Vec<(String, Value)>,
}

fn bfcl_lines() -> Vec<Line> {
    let sets = bfcl::load_sets(&data_file(BFCL_MULTIPLE));
    let answers = bfcl::load_answers(&data_file(BFCL_MULTIPLE_ANSWERS));
    assert_eq!(sets.len(), answers.len());
    let mut out = Vec::new();
    for (s, (_, gt)) in sets.into_iter().zip(answers).step_by(STEP) {
        let validators = schema::ToolValidators::new(&s.tools);
        let params = |name: &str| -> Option<Value> {
            s.tools
                .iter()
                .map(|t| t.get("function").unwrap_or(t))
                .find(|f| f["name"] == name)
                .map(|f| f.get("parameters").cloned().unwrap_or(json!({})))
        };
        let mut calls = Vec::new();
        for call in &gt {
            for (name, args) in call.as_object().into_iter().flatten() {
                let Some(p) = params(name) else { continue };
                let Ok(a) = render::ground_truth_args(&p, args) else {
                    continue;
                };
                if validators.check(name, &a).is_ok() {
                    calls.push((name.clone(), a));
                }
            }
        }
        if !calls.is_empty() {
            out.push(Line {
                id: s.id,
                tools: s.tools,
                text: s.text,
                calls,
            });
        }
    }
    assert!(!out.is_empty(), "no BFCL line with a valid call");
    out
}

/// The artifact of `line`'s tools in `format` for the loaded tokenizer.
fn artifact(loaded: &Loaded, format: &str, line: &Line) -> Result<Arc<Vec<u8>>, String> {
    let parsed = spec::parse(&line.id, &line.text).map_err(|e| e.to_string())?;
    let opts = Options {
        format: CallFormat::load(format).map_err(|e| e.to_string())?,
        zstd_level: None,
        ..Options::default()
    };
    compile(&parsed, &loaded.0, &opts, &mut |_| {})
        .map(|c| Arc::new(c.artifact))
        .map_err(|e| e.to_string())
}

/// An assistant message with `calls` (arguments as objects, as HF passes
/// them to templates) and optional content.
fn assistant(calls: &[(String, Value)], content: Option<&str>) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(n, a)| json!({"type": "function", "function": {"name": n, "arguments": a}}))
        .collect();
    let mut m = json!({"role": "assistant", "tool_calls": tool_calls});
    if let Some(c) = content {
        m["content"] = json!(c);
    }
    m
}

/// A case: the assistant message, and the (format, entries) that must
/// accept its assistant part.
struct Plan {
    what: &'static str,
    message: Value,
    formats: Vec<(&'static str, Vec<&'static str>)>,
}

fn check_template(tok: &str, end_of_turn: &str, plans: fn(&[(String, Value)]) -> Vec<Plan>) {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the {tok} chat template check");
        return;
    }
    let template = template_of(tok).unwrap_or_else(|| panic!("{tok}: no chat_template"));
    let loaded = tokenizer(tok);
    let hf = &loaded.1;
    let mut failures = Vec::new();
    let mut checked = 0usize;
    let mut shown = 0usize;
    for line in bfcl_lines() {
        for plan in plans(&line.calls) {
            let part = match assistant_part(&template, &line.tools, &plan.message, end_of_turn) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(Failure {
                        what: format!("{tok} {} {}", line.id, plan.what),
                        detail: e,
                    });
                    continue;
                }
            };
            if shown < 3 {
                println!("[{tok}] {} {}: assistant part {part:?}", line.id, plan.what);
                shown += 1;
            }
            for (format, entries) in &plan.formats {
                let declared = CallFormat::load(format).unwrap().entries();
                let bytes = match artifact(&loaded, format, &line) {
                    Ok(b) => b,
                    Err(e) => {
                        println!("[{tok}] {format}/{}: not compiled: {e}", line.id);
                        continue;
                    }
                };
                let art = Artifact::from_bytes(&bytes).expect("the artifact loads");
                let g = art.grammar();
                let mut words = vec![0u32; g.mask_words()];
                for entry in entries {
                    if !declared.iter().any(|d| d == entry) {
                        continue;
                    }
                    let m = g.matcher_at(entry).expect("a declared entry");
                    checked += 1;
                    if let Err(e) = tooldec_testkit::check_text(&g, m, hf, &mut words, &part) {
                        failures.push(Failure {
                            what: format!("{tok} {format}/{entry} {} {}", line.id, plan.what),
                            detail: format!("{e}\ntext: {part:?}"),
                        });
                    }
                }
            }
        }
    }
    println!(
        "[{tok}] chat template: {checked} (assistant part, format entry) checks, {} failures",
        failures.len()
    );
    report_failures(&format!("{tok}'s chat template"), &failures);
}

/// Qwen2.5's template renders the calls after `<|im_start|>assistant`
/// (and the content, when there is one, before them).
#[test]
fn qwen2_5_template_tool_calls() {
    check_template("qwen2.5", "<|im_end|>\n", |calls| {
        let one = vec![calls[0].clone()];
        let two = vec![calls[0].clone(), calls[calls.len() - 1].clone()];
        vec![
            Plan {
                what: "one call",
                message: assistant(&one, None),
                formats: vec![
                    (
                        "hermes",
                        vec![
                            "call", "calls", "start", "one", "required", "auto", "auto-one",
                        ],
                    ),
                    ("qwen3", vec!["one", "required", "auto", "auto-one"]),
                ],
            },
            Plan {
                what: "two calls",
                message: assistant(&two, None),
                formats: vec![
                    ("hermes", vec!["calls", "start", "required", "auto"]),
                    ("qwen3", vec!["required", "auto"]),
                ],
            },
            Plan {
                what: "text and a call",
                message: assistant(&one, Some("Let me look that up.")),
                formats: vec![
                    ("hermes", vec!["start", "auto", "auto-one"]),
                    ("qwen3", vec!["auto", "auto-one"]),
                ],
            },
        ]
    });
}

/// Llama 3.2's template renders one call as `{"name": ..., "parameters": ...}`.
#[test]
fn llama_3_2_template_tool_calls() {
    check_template("llama-3.2", "<|eot_id|>", |calls| {
        vec![Plan {
            what: "one call",
            message: assistant(&[calls[0].clone()], None),
            formats: vec![(
                "llama3",
                vec!["start", "one", "required", "auto", "auto-one"],
            )],
        }]
    });
}

/// Gemma 3's template has no tool calls: an assistant message renders as
/// its content. Checked, so that a data update that brings a template
/// with tool calls is noticed.
#[test]
fn gemma_3_template_renders_no_tool_calls() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the gemma-3 chat template check");
        return;
    }
    let template = template_of("gemma-3").expect("gemma-3 has a chat_template");
    let call = vec![("get_weather".to_string(), json!({"city": "Paris"}))];
    let out = assistant_part(
        &template,
        &[],
        &assistant(&call, Some("It is sunny.")),
        "<end_of_turn>\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out, "It is sunny.",
        "Gemma 3's template now renders tool calls: check them against gemma4"
    );
    println!("[gemma-3] the chat template renders no tool calls: {out:?}");
}

/// gpt-oss's and Mistral v0.1's `tokenizer_config.json` in the shared data
/// carry no chat template, so there is nothing to render for `gpt-oss`,
/// `mistral` and `mistral-v11`.
#[test]
fn no_template_for_gpt_oss_and_mistral() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the template presence check");
        return;
    }
    for tok in ["gpt-oss", "mistral-v0.1"] {
        assert!(
            template_of(tok).is_none(),
            "{tok} now has a chat_template: render its tool calls here"
        );
        println!("[{tok}] no chat_template in tokenizer_config.json");
    }
}
