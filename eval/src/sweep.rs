//! The guarantee, measured against the peers: the same greedy decoding of
//! the same prompt under each engine, at a sweep of `max_tokens`.
//!
//! Modes: `unconstrained`; `tooldec` (the runtime's matcher with the
//! request's budget, [`generate::constrained`]); `llguidance` and
//! `outlines` (their engines on our grammar's regular expression, driven
//! through their public APIs as the benchmarks drive them,
//! [`tooldec_bench::peers`]). Only tooldec's masks depend on the budget:
//! the other modes decode once, to the largest budget, and each smaller
//! budget is that reply cut where a server's `max_tokens` would cut it
//! (greedy decoding makes the same choices whatever the limit). tooldec
//! decodes once per budget. A reply fits a budget when its tokens and the
//! end-of-sequence token do (the runtime's budget counts the same way).

use std::path::Path;
use std::time::Instant;

use serde_json::{json, Value};
use tooldec_bench::peers::{llg, outlines};
use tooldec_bench::Engine;
use tooldec_runtime::Artifact;
use tooldec_testkit::schema::ToolValidators;

use crate::generate::{self, Generation, Stop};
use crate::prompt::{self, CallFormat, Docs};
use crate::run::{self, ms, Fatal, Setup};
use crate::score;
use crate::tasks::Task;

/// The decoding modes, in report order. `tooldec-dumps` is tooldec with
/// `--whitespace dumps` (JSON spaced exactly as `json.dumps` writes it)
/// where `tooldec` has the default free whitespace: the whitespace policy
/// as a factor.
pub const MODES: [&str; 5] = [
    "unconstrained",
    "tooldec",
    "tooldec-dumps",
    "llguidance",
    "outlines",
];

/// One budget of the sweep: relative to a task's shortest reply (`min`,
/// `+8`: its tokens and EOS, plus eight) or absolute (`64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    AboveMin(u32),
    Tokens(u32),
}

impl Budget {
    /// Reads `min`, `+N` or `N`.
    pub fn parse(s: &str) -> Result<Budget, String> {
        let bad = || format!("budget {s:?}: expected min, +N or N");
        match s.trim() {
            "min" => Ok(Budget::AboveMin(0)),
            t if t.starts_with('+') => t[1..].parse().map(Budget::AboveMin).map_err(|_| bad()),
            t => t.parse().map(Budget::Tokens).map_err(|_| bad()),
        }
    }

    /// How the report names it.
    pub fn label(self) -> String {
        match self {
            Budget::AboveMin(0) => "min".into(),
            Budget::AboveMin(n) => format!("min+{n}"),
            Budget::Tokens(n) => n.to_string(),
        }
    }

    /// Its number of tokens for a task whose shortest reply takes `min`.
    pub fn tokens(self, min: u32) -> u32 {
        match self {
            Budget::AboveMin(n) => min + n,
            Budget::Tokens(n) => n,
        }
    }
}

/// The sweep: from the shortest reply to generous.
pub const DEFAULT_BUDGETS: &str = "min,+8,+16,+32,64,128,256";

/// What the peers share across tasks: llguidance's parser factory and
/// outlines-core's vocabulary, built once from the model's vocabulary.
pub struct Peers {
    factory: llguidance::ParserFactory,
    vocabulary: outlines_core::prelude::Vocabulary,
}

impl Peers {
    pub fn new(setup: &Setup) -> Peers {
        Peers {
            factory: llg::factory(&llg::tok_env(&setup.vocab)),
            vocabulary: outlines::vocabulary(&setup.vocab),
        }
    }
}

/// What to run.
pub struct SweepPlan<'a> {
    pub categories: &'a [String],
    pub per_category: usize,
    pub docs: &'a [Docs],
    pub modes: &'a [String],
    pub budgets: &'a [Budget],
    /// The code the records come from (`tooldec_bench::report::commit`),
    /// written into each record: the report names it.
    pub commit: &'a str,
}

/// A reply scored at one budget.
fn cell(
    setup: &Setup,
    task: &Task,
    validators: &ToolValidators,
    g: &Generation,
    budget: Budget,
    tokens: u32,
) -> Value {
    let n = tokens as usize;
    // It fits when its tokens and the end-of-sequence token do.
    let fits = g.stop == Stop::Eos && g.tokens.len() < n;
    let kept = &g.tokens[..g.tokens.len().min(n)];
    let text = run::decode(setup, kept);
    let parsed = score::parse_reply(CallFormat::Hermes, &text);
    let syntax = score::syntax_error(&parsed, validators);
    let calls = parsed.as_deref().unwrap_or(&[]);
    json!({
        "budget": budget.label(),
        "max_tokens": tokens,
        "tokens": kept.len(),
        "cut": !fits,
        "valid": syntax.is_none(),
        "syntax_error": syntax,
        "names_ok": syntax.is_none() && score::names_match(calls, &task.ground_truth),
        "ast_ok": syntax.is_none() && score::ast_match(calls, &task.ground_truth),
        "text": text,
    })
}

/// A budget below the grammar's shortest reply: no reply, counted as
/// neither valid nor accurate.
fn refused(budget: Budget, tokens: u32) -> Value {
    json!({
        "budget": budget.label(),
        "max_tokens": tokens,
        "tokens": 0,
        "cut": true,
        "refused": true,
        "valid": false,
        "syntax_error": "the budget is below the shortest reply",
        "names_ok": false,
        "ast_ok": false,
        "text": "",
    })
}

fn timing(g: &Generation) -> Value {
    json!({
        "total_ms": ms(g.total),
        "forward_ms": ms(g.forward),
        "forward_calls": g.forward_calls,
        "reused": g.reused,
        "mask_ms": ms(g.mask),
        "masks": g.masks,
        "tokens": g.tokens.len(),
        "stop": g.stop.name(),
    })
}

/// Replays a peer's reply and compares its mask with tooldec's (without a
/// budget) at every step: the same language must give the same masks. The
/// first difference, if any, with a few of the tokens only one side
/// allows (id and text).
fn first_disagreement(
    setup: &Setup,
    grammar: &tooldec_runtime::Grammar<'_>,
    engine: &mut dyn Engine,
    g: &Generation,
    eos: u32,
) -> Value {
    let words = grammar.mask_words();
    let (mut ours, mut theirs) = (vec![0u32; words], vec![0u32; words]);
    let mut m = grammar.matcher();
    engine.reset();
    let mut steps: Vec<u32> = g.tokens.clone();
    if g.stop == Stop::Eos {
        steps.push(eos);
    }
    let vocab = setup.model.vocab as u32;
    for (i, &t) in steps.iter().enumerate() {
        m.fill_mask(&mut ours);
        engine.fill_mask(&mut theirs);
        if ours != theirs {
            let only = |a: &[u32], b: &[u32]| -> Vec<Value> {
                (0..vocab)
                    .filter(|&k| {
                        let (w, bit) = ((k / 32) as usize, 1 << (k % 32));
                        a[w] & bit != 0 && b[w] & bit == 0
                    })
                    .take(5)
                    .map(|k| json!([k, run::decode(setup, &[k])]))
                    .collect()
            };
            return json!({
                "step": i,
                "after": run::decode(setup, &steps[..i]),
                "only_tooldec": only(&ours, &theirs),
                "only_peer": only(&theirs, &ours),
            });
        }
        if !m.accept_token(t) || !engine.accept(t) {
            return json!({"step": i, "refused": t});
        }
    }
    Value::Null
}

/// A task compiled once for all its documentation levels (`Err`: the
/// compiler refuses the tools): the artifact, the artifact under
/// `--whitespace dumps` when that mode runs, and, for the peers, the
/// default grammar as a regular expression.
pub struct Compiled {
    artifact: Artifact,
    compile_ms: f64,
    dumps: Option<(Artifact, f64)>,
    regex: String,
}

impl Compiled {
    pub fn new(setup: &Setup, task: &Task, modes: &[String]) -> Result<Compiled, String> {
        let set = run::tool_set(&task.tools)?;
        let opts = run::options(CallFormat::Hermes, run::parallel(&task.category))?;
        let build = |opts: &tooldec_compiler::Options| -> Result<(Artifact, f64), String> {
            let t = Instant::now();
            let c = tooldec_compiler::compile(&set, &setup.vocab, opts, &mut |_| {})
                .map_err(|e| e.to_string())?;
            let compile_ms = ms(t.elapsed());
            Ok((
                Artifact::from_bytes(&c.artifact).map_err(|e| e.to_string())?,
                compile_ms,
            ))
        };
        let (artifact, compile_ms) = build(&opts)?;
        let dumps = if modes.iter().any(|m| m == "tooldec-dumps") {
            let mut o = opts.clone();
            o.json.whitespace = tooldec_compiler::Whitespace::Dumps;
            Some(build(&o)?)
        } else {
            None
        };
        let regex =
            tooldec_compiler::regex(&set, &opts, &setup.vocab).map_err(|e| e.to_string())?;
        Ok(Compiled {
            artifact,
            compile_ms,
            dumps,
            regex,
        })
    }
}

/// One task at one documentation level: every mode at every budget.
pub fn sweep_one(
    setup: &Setup,
    peers: &Peers,
    task: &Task,
    compiled: &Compiled,
    docs: Docs,
    plan: &SweepPlan<'_>,
) -> Result<Value, String> {
    let format = CallFormat::Hermes;
    let validators = ToolValidators::try_new(&task.tools)?;
    let grammar = compiled.artifact.grammar();
    let min = generate::minimum(&grammar);
    let mut budgets: Vec<(Budget, u32)> =
        plan.budgets.iter().map(|&b| (b, b.tokens(min))).collect();
    budgets.sort_by_key(|b| b.1);
    let largest = budgets.last().map_or(min, |b| b.1) as usize;

    let (_, rest, mut cache) =
        setup.prompt(format, &prompt::rest(&task.question, &task.functions, docs))?;
    let logits = setup.model.prefill(&rest, &mut cache)?;
    // Every mode and budget decodes from this prompt: what one computes,
    // the others reuse.
    let mut tree = generate::Tree::new(cache, logits);
    let eos = setup.vocab.eos[0];
    // A reply decoded once, scored cut at each budget.
    let cut_at_each = |g: &Generation| -> Vec<Value> {
        budgets
            .iter()
            .map(|&(b, n)| cell(setup, task, &validators, g, b, n))
            .collect()
    };
    let mut modes = serde_json::Map::new();
    for mode in plan.modes {
        let start = Instant::now();
        let mut cells = Vec::new();
        let mut runs = Vec::new();
        let mut build_ms = 0.0;
        match mode.as_str() {
            "tooldec" | "tooldec-dumps" => {
                let (grammar, compile_ms) = match &compiled.dumps {
                    Some((a, t)) if mode == "tooldec-dumps" => (a.grammar(), *t),
                    _ => (compiled.artifact.grammar(), compiled.compile_ms),
                };
                build_ms = compile_ms;
                for &(b, n) in &budgets {
                    if generate::minimum(&grammar) > n {
                        // Budgets follow the default grammar's shortest
                        // reply; this one's may be longer. The runtime
                        // refuses such a budget up front.
                        cells.push(refused(b, n));
                        continue;
                    }
                    let g =
                        generate::constrained(&setup.model, &mut tree, &grammar, n as usize, true)?;
                    cells.push(cell(setup, task, &validators, &g, b, n));
                    runs.push(timing(&g));
                }
            }
            "unconstrained" => {
                let g = generate::unconstrained(&setup.model, &mut tree, &setup.eos, largest)?;
                cells.extend(cut_at_each(&g));
                runs.push(timing(&g));
            }
            "llguidance" | "outlines" => {
                let t = Instant::now();
                let mut engine: Box<dyn Engine> = if mode == "llguidance" {
                    Box::new(llg::Llg::build(&peers.factory, &compiled.regex)?)
                } else {
                    Box::new(outlines::Outlines::build(
                        &compiled.regex,
                        &peers.vocabulary,
                    )?)
                };
                build_ms = ms(t.elapsed());
                let g = generate::with_engine(
                    &setup.model,
                    &mut tree,
                    engine.as_mut(),
                    eos,
                    grammar.mask_words(),
                    largest,
                )?;
                cells.extend(cut_at_each(&g));
                let mut t = timing(&g);
                t["disagreement"] = first_disagreement(setup, &grammar, engine.as_mut(), &g, eos);
                runs.push(t);
            }
            other => unreachable!("mode {other:?}: checked by run_sweep"),
        }
        modes.insert(
            mode.clone(),
            json!({
                "build_ms": build_ms,
                "wall_ms": ms(start.elapsed()),
                "runs": runs,
                "cells": cells,
            }),
        );
    }
    Ok(json!({
        "id": task.id,
        "category": task.category,
        "format": format.name(),
        "docs": docs.name(),
        "commit": plan.commit,
        "min_tokens": min,
        "states": grammar.state_count(),
        "modes": modes,
    }))
}

/// Runs the plan, appending one record per task and documentation level to
/// `results` and skipping those it already holds (a run resumes). Tasks
/// whose tools the compiler refuses are recorded as refusals and replaced
/// by the next task of the category.
pub fn run_sweep(
    setup: &Setup,
    data: &Path,
    plan: &SweepPlan<'_>,
    results: &Path,
) -> Result<(), String> {
    if let Some(m) = plan.modes.iter().find(|m| !MODES.contains(&m.as_str())) {
        return Err(format!("unknown mode {m:?} (expected one of {MODES:?})"));
    }
    let mut out = run::Results::open(results)?;
    let peers = Peers::new(setup);
    run::each_task(
        data,
        plan.categories,
        plan.per_category,
        &mut out,
        |task, out| {
            let compiled = Compiled::new(setup, task, plan.modes)?;
            for &d in plan.docs {
                if out.done.contains(&run::key(&task.id, "hermes", d.name())) {
                    continue;
                }
                let r = sweep_one(setup, &peers, task, &compiled, d, plan).map_err(Fatal)?;
                eprintln!("{} {}: {}", task.id, d.name(), summary(&r));
                out.write(&r).map_err(Fatal)?;
            }
            Ok(())
        },
    )
}

/// One line per record for the progress log: valid cells per mode.
fn summary(r: &Value) -> String {
    let Some(modes) = r["modes"].as_object() else {
        return String::new();
    };
    modes
        .iter()
        .map(|(m, v)| {
            let cells = v["cells"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            let valid = cells.iter().filter(|c| c["valid"] == true).count();
            format!("{m} {valid}/{}", cells.len())
        })
        .collect::<Vec<_>>()
        .join(", ")
}
