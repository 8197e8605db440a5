//! Running tasks: compile, prompt, prefill, decode both ways, score, and
//! write one JSON record per (task, format, documentation level).

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tooldec_compiler::call_format;
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;
use tooldec_testkit::schema::ToolValidators;

use crate::generate::{self, Generation, Tree};
use crate::model::Model;
use crate::prompt::{self, CallFormat, Docs};
use crate::score;
use crate::tasks::Task;

/// The model, its tokenizer and the compiler's view of its vocabulary.
pub struct Setup {
    pub model: Model,
    pub tokenizer: tokenizers::Tokenizer,
    pub vocab: Vocab,
    /// Tokens that end the reply unconstrained (`<|im_end|>`, `<|endoftext|>`).
    pub eos: Vec<u32>,
    /// Most tokens per reply in the parallel categories (several calls).
    pub max_new: usize,
    /// Most tokens per reply where exactly one call is expected.
    pub max_new_single: usize,
    /// Prefilled [`prompt::prefix`] per format: its tokens and cache.
    pub prefixes: std::cell::RefCell<Vec<(CallFormat, Vec<u32>, crate::model::Cache)>>,
}

impl Setup {
    /// The token budget of a reply in `category`.
    pub fn max_new_for(&self, category: &str) -> usize {
        if parallel(category) {
            self.max_new
        } else {
            self.max_new_single
        }
    }

    /// A whole prompt's tokens run through the model from an empty cache,
    /// ready to decode from.
    pub fn prefill(&self, prompt: &str) -> Result<Tree, String> {
        let ids = self.encode(prompt)?;
        let mut cache = self.model.cache();
        let logits = self.model.prefill(&ids, &mut cache)?;
        Ok(Tree::new(cache, logits))
    }

    fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        Ok(self
            .tokenizer
            .encode(text, false)
            .map_err(|e| format!("cannot tokenize the prompt: {e}"))?
            .get_ids()
            .to_vec())
    }

    /// The prompt's tokens (prefix and rest tokenized apart) and the
    /// prefix's cache.
    pub(crate) fn prompt(
        &self,
        format: CallFormat,
        rest: &str,
    ) -> Result<(Vec<u32>, Vec<u32>, crate::model::Cache), String> {
        let mut prefixes = self.prefixes.borrow_mut();
        if !prefixes.iter().any(|(f, _, _)| *f == format) {
            let ids = self.encode(&prompt::prefix(format))?;
            let mut cache = self.model.cache();
            self.model.prefill(&ids, &mut cache)?;
            prefixes.push((format, ids, cache));
        }
        let (_, ids, cache) = prefixes
            .iter()
            .find(|(f, _, _)| *f == format)
            .expect("just added");
        Ok((ids.clone(), self.encode(rest)?, cache.clone()))
    }
}

/// A task's tools as the compiler reads them.
pub fn tool_set(tools: &[Value]) -> Result<spec::ToolSet, String> {
    let text = serde_json::to_string(tools).map_err(|e| e.to_string())?;
    spec::parse("tools.json", &text).map_err(|e| e.to_string())
}

/// The compile options of a task in one format: the shipped format's
/// entry for one call or several (react's `start` is one action and
/// `parallel` one or more; hermes' `call` is one block and `calls` one or
/// more, with no free text before them), one thread, offline limits.
pub fn options(format: CallFormat, parallel: bool) -> Result<Options, String> {
    let (name, entry) = match (format, parallel) {
        (CallFormat::React, false) => ("react", "start"),
        (CallFormat::React, true) => ("react", "parallel"),
        (CallFormat::Hermes, false) => ("hermes", "call"),
        (CallFormat::Hermes, true) => ("hermes", "calls"),
    };
    let format = call_format::CallFormat::load(name)
        .and_then(|f| f.only_entry(entry))
        .map_err(|e| e.to_string())?;
    Ok(Options {
        format,
        threads: 1,
        limits: tooldec_compiler::Limits::offline(),
        ..Options::default()
    })
}

/// Compiles a task's tools for one format; `Err` is the compiler's refusal.
pub fn compile_tools(
    tools: &[Value],
    format: CallFormat,
    parallel: bool,
    vocab: &Vocab,
) -> Result<(Vec<u8>, Duration), String> {
    let set = tool_set(tools)?;
    let opts = options(format, parallel)?;
    let t = Instant::now();
    let c = compile(&set, vocab, &opts, &mut |_| {}).map_err(|e| e.to_string())?;
    Ok((c.artifact, t.elapsed()))
}

pub(crate) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

pub(crate) fn decode(setup: &Setup, tokens: &[u32]) -> String {
    setup.tokenizer.decode(tokens, false).unwrap_or_default()
}

fn condition(
    setup: &Setup,
    g: &Generation,
    format: CallFormat,
    validators: &ToolValidators,
    task: &Task,
) -> Value {
    let text = decode(setup, &g.tokens);
    let parsed = score::parse_reply(format, &text);
    let syntax = score::syntax_error(&parsed, validators);
    let calls = parsed.as_deref().unwrap_or(&[]);
    json!({
        "text": text,
        "tokens": g.tokens.len(),
        "stop": g.stop.name(),
        "syntax_error": syntax,
        "names_ok": syntax.is_none() && score::names_match(calls, &task.ground_truth),
        "ast_ok": syntax.is_none() && score::ast_match(calls, &task.ground_truth),
        "total_ms": ms(g.total),
        "forward_ms": ms(g.forward),
        "forward_calls": g.forward_calls,
        "mask_ms": ms(g.mask),
        "masks": g.masks,
        "forced": g.forced,
    })
}

/// Runs one task in one format at one documentation level.
pub fn run_one(
    setup: &Setup,
    task: &Task,
    format: CallFormat,
    docs: Docs,
    artifact: &Artifact,
    compile_time: Duration,
) -> Result<Value, String> {
    let grammar = artifact.grammar();
    let validators = ToolValidators::try_new(&task.tools)?;
    let (prefix, rest, mut cache) =
        setup.prompt(format, &prompt::rest(&task.question, &task.functions, docs))?;
    let t = Instant::now();
    let logits = setup.model.prefill(&rest, &mut cache)?;
    let prefill = t.elapsed();

    let max_new = setup.max_new_for(&task.category);
    let mut tree = Tree::new(cache, logits);
    let free = generate::unconstrained(&setup.model, &mut tree, &setup.eos, max_new)?;
    let guided = generate::constrained(&setup.model, &mut tree, &grammar, max_new, true)?;
    let record = json!({
        "id": task.id,
        "category": task.category,
        "format": format.name(),
        "docs": docs.name(),
        "prompt_tokens": prefix.len() + rest.len(),
        "prefilled_tokens": rest.len(),
        "prefill_ms": ms(prefill),
        "compile_ms": ms(compile_time),
        "states": grammar.state_count(),
        "max_new": max_new,
        "unconstrained": condition(setup, &free, format, &validators, task),
        "constrained": condition(setup, &guided, format, &validators, task),
    });
    Ok(record)
}

/// A task's compiled grammar in one format, loaded, with its budget; `Err`
/// when the compiler refuses the tools or the shortest reply's completion
/// needs more than `max_new` tokens.
fn prepare(
    task: &Task,
    format: CallFormat,
    max_new: usize,
    vocab: &Vocab,
) -> Result<(CallFormat, Artifact, Duration), String> {
    let (bytes, t) = compile_tools(&task.tools, format, parallel(&task.category), vocab)?;
    let artifact = Artifact::from_bytes(&bytes).map_err(|e| e.to_string())?;
    let min = generate::minimum(&artifact.grammar());
    if min as usize > max_new {
        return Err(format!(
            "{}: the shortest reply's completion bound ({min} tokens) exceeds the budget of {max_new}",
            format.name()
        ));
    }
    Ok((format, artifact, t))
}

/// Whether the grammar allows several calls: in BFCL's parallel categories,
/// as an API's `parallel_tool_calls` switch would; elsewhere exactly one.
pub fn parallel(category: &str) -> bool {
    category.starts_with("parallel")
}

/// The key that identifies a record, for resuming.
pub(crate) fn key(id: &str, format: &str, docs: &str) -> String {
    format!("{id}\t{format}\t{docs}")
}

/// A results file opened for appending, with the keys of the records it
/// already holds (a run resumes after them).
pub(crate) struct Results {
    pub done: HashSet<String>,
    file: std::fs::File,
    path: std::path::PathBuf,
}

impl Results {
    pub fn open(path: &Path) -> Result<Results, String> {
        let done = read_results(path)?
            .iter()
            .map(|r| {
                key(
                    r["id"].as_str().unwrap_or_default(),
                    r["format"].as_str().unwrap_or_default(),
                    r["docs"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Results {
            done,
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record and flushes it (a killed run loses nothing).
    pub fn write(&mut self, v: &Value) -> Result<(), String> {
        writeln!(self.file, "{v}")
            .and_then(|_| self.file.flush())
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// Records already in a results file (a run resumes after them).
pub fn read_results(path: &Path) -> Result<Vec<Value>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    crate::tasks::read_jsonl(path)
}

/// What to run.
pub struct Plan<'a> {
    pub categories: &'a [String],
    pub per_category: usize,
    pub formats: &'a [CallFormat],
    pub docs: &'a [Docs],
}

/// Runs the plan, appending records to `results` and skipping those it
/// already holds. Tasks whose tools the compiler refuses are recorded as
/// refusals and replaced by the next task of the category.
pub fn run_plan(setup: &Setup, data: &Path, plan: &Plan<'_>, results: &Path) -> Result<(), String> {
    let mut out = Results::open(results)?;
    each_task(
        data,
        plan.categories,
        plan.per_category,
        &mut out,
        |task, out| {
            // A task counts only if every format compiles and its completion
            // bound fits the budget.
            let max_new = setup.max_new_for(&task.category);
            let loaded = plan
                .formats
                .iter()
                .map(|&f| prepare(task, f, max_new, &setup.vocab))
                .collect::<Result<Vec<_>, String>>()?;
            for (f, artifact, compile_time) in &loaded {
                for &d in plan.docs {
                    if out.done.contains(&key(&task.id, f.name(), d.name())) {
                        continue;
                    }
                    let r = run_one(setup, task, *f, d, artifact, *compile_time).map_err(Fatal)?;
                    eprintln!(
                        "{} {} {}: unconstrained {} | constrained {}",
                        task.id,
                        f.name(),
                        d.name(),
                        verdict(&r["unconstrained"]),
                        verdict(&r["constrained"])
                    );
                    out.write(&r).map_err(Fatal)?;
                }
            }
            Ok(())
        },
    )
}

/// An error that stops the whole run (a task's own refusal only passes
/// that task over).
pub(crate) struct Fatal(pub String);

/// What a task's visit can end with: `Err(Refused)` records the task as
/// refused and takes the category's next one; `Err(Fatal)` stops the run.
pub(crate) enum Skip {
    Refused(String),
    Fatal(String),
}

impl From<String> for Skip {
    fn from(e: String) -> Skip {
        Skip::Refused(e)
    }
}

impl From<Fatal> for Skip {
    fn from(e: Fatal) -> Skip {
        Skip::Fatal(e.0)
    }
}

/// Visits `per_category` tasks of each category, spread over its file,
/// passing over tasks recorded as refused; a task whose visit is refused
/// is recorded so (a resumed run skips it) and replaced by the next.
pub(crate) fn each_task(
    data: &Path,
    categories: &[String],
    per_category: usize,
    out: &mut Results,
    mut visit: impl FnMut(&Task, &mut Results) -> Result<(), Skip>,
) -> Result<(), String> {
    for category in categories {
        let all = crate::tasks::load_category(data, category)?;
        let mut used = 0;
        for i in crate::tasks::spread_order(all.len(), per_category) {
            if used == per_category {
                break;
            }
            let task = &all[i];
            if out.done.contains(&key(&task.id, "*", "refused")) {
                continue;
            }
            match visit(task, out) {
                Ok(()) => used += 1,
                Err(Skip::Fatal(e)) => return Err(e),
                Err(Skip::Refused(e)) => {
                    eprintln!("{}: passed over: {e}", task.id);
                    out.write(&json!({"id": task.id, "category": category, "format": "*",
                        "docs": "refused", "refused": e}))?;
                }
            }
        }
    }
    Ok(())
}

fn verdict(c: &Value) -> String {
    let syntax = if c["syntax_error"].is_null() {
        "ok"
    } else {
        "SYNTAX"
    };
    let ast = if c["ast_ok"] == true {
        "ast ok"
    } else {
        "ast no"
    };
    format!(
        "{syntax}, {ast}, {} tokens, {:.0} ms",
        c["tokens"],
        c["total_ms"].as_f64().unwrap_or(0.0)
    )
}
