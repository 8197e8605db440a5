//! `EVAL.md` from the results file: every figure is computed from the
//! records, none is typed in (the papers' figures aside, which are quoted).

use std::fmt::Write;

use serde_json::Value;

/// Sums over a group of records, for one condition.
#[derive(Default)]
struct Tally {
    n: usize,
    syntax_errors: usize,
    names_ok: usize,
    ast_ok: usize,
    tokens: u64,
    ms: f64,
    prefill_ms: f64,
    hit_budget: usize,
}

impl Tally {
    fn add(&mut self, record: &Value, cond: &str) {
        let c = &record[cond];
        self.n += 1;
        self.syntax_errors += usize::from(!c["syntax_error"].is_null());
        self.names_ok += usize::from(c["names_ok"] == true);
        self.ast_ok += usize::from(c["ast_ok"] == true);
        self.tokens += c["tokens"].as_u64().unwrap_or(0);
        self.ms += c["total_ms"].as_f64().unwrap_or(0.0);
        self.prefill_ms += record["prefill_ms"].as_f64().unwrap_or(0.0);
        self.hit_budget += usize::from(c["stop"] == "max_tokens");
    }

    fn pct(&self, k: usize) -> String {
        if self.n == 0 {
            return "–".into();
        }
        format!("{:.1}%", 100.0 * k as f64 / self.n as f64)
    }

    fn row(&self) -> String {
        let n = self.n.max(1) as f64;
        format!(
            "{} | {} ({}/{}) | {} | {} | {:.1} | {:.2} s | {}",
            self.n,
            self.pct(self.syntax_errors),
            self.syntax_errors,
            self.n,
            self.pct(self.names_ok),
            self.pct(self.ast_ok),
            self.tokens as f64 / n,
            (self.ms + self.prefill_ms) / n / 1000.0,
            self.hit_budget,
        )
    }
}

fn tally<'a>(records: impl Iterator<Item = &'a Value>, cond: &str) -> Tally {
    let mut t = Tally::default();
    for r in records {
        t.add(r, cond);
    }
    t
}

fn is_run(r: &Value) -> bool {
    r.get("refused").is_none()
}

/// The condition table of one format: documentation × decoding.
fn format_table(out: &mut String, runs: &[&Value], format: &str) {
    let _ = writeln!(
        out,
        "| documentation | decoding | tasks | syntax error rate | tool-name accuracy | AST accuracy | tokens / task | time / task | cut by budget |\n|---|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for docs in ["full", "names"] {
        for (cond, label) in [
            ("unconstrained", "unconstrained"),
            ("constrained", "**tooldec**"),
        ] {
            let t = tally(
                runs.iter()
                    .copied()
                    .filter(|r| r["format"] == format && r["docs"] == docs),
                cond,
            );
            if t.n > 0 {
                let _ = writeln!(out, "| {docs} | {label} | {} |", t.row());
            }
        }
    }
}

fn category_table(out: &mut String, runs: &[&Value], format: &str) {
    let _ = writeln!(
        out,
        "| category | documentation | tasks | syntax errors, unconstrained → tooldec | AST accuracy, unconstrained → tooldec |\n|---|---|---:|---:|---:|"
    );
    for cat in crate::tasks::CATEGORIES {
        for docs in ["full", "names"] {
            let group: Vec<&Value> = runs
                .iter()
                .copied()
                .filter(|r| r["format"] == format && r["docs"] == docs && r["category"] == cat)
                .collect();
            if group.is_empty() {
                continue;
            }
            let u = tally(group.iter().copied(), "unconstrained");
            let c = tally(group.iter().copied(), "constrained");
            let _ = writeln!(
                out,
                "| {cat} | {docs} | {} | {} → {} | {} → {} |",
                u.n,
                u.pct(u.syntax_errors),
                c.pct(c.syntax_errors),
                u.pct(u.ast_ok),
                c.pct(c.ast_ok)
            );
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Renders the whole report.
pub fn render(records: &[Value], command: &str) -> String {
    let runs: Vec<&Value> = records.iter().filter(|r| is_run(r)).collect();
    let refused: Vec<&Value> = records.iter().filter(|r| !is_run(r)).collect();
    let mut out = String::new();
    let tasks_of = |format: &str| {
        let mut ids: Vec<&str> = runs
            .iter()
            .filter(|r| r["format"] == format)
            .filter_map(|r| r["id"].as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    intro(&mut out, command);
    for (format, what) in [
        (
            "hermes",
            "JSON in `<tool_call>` tags (the JSON-based format)",
        ),
        ("react", "`Thought:` / `Action:` / `Action Input:` (ReAct)"),
    ] {
        let n = tasks_of(format);
        if n == 0 {
            continue;
        }
        let _ = writeln!(out, "## Format `{format}`: {what}, {n} tasks\n");
        format_table(&mut out, &runs, format);
        let _ = writeln!(out);
        category_table(&mut out, &runs, format);
        let _ = writeln!(out);
    }

    decode_time(&mut out, &runs);
    papers(&mut out, &runs);
    passed_over(&mut out, &refused);
    out
}

/// The title, the setup and what each score means.
fn intro(out: &mut String, command: &str) {
    let _ = writeln!(
        out,
        "# SmolLM2-135M-Instruct on BFCL: syntax errors with and without tooldec\n\n\
         Generated by `{command}` from `eval/results.jsonl` (one JSON record per task, format and \
         documentation level, with both replies). Do not edit by hand.\n\n\
         **Setup.** SmolLM2-135M-Instruct, Q4_1 GGUF, on this machine's CPU (2 cores) with candle. \
         Greedy decoding, twice per prompt from one prefilled cache: unconstrained, and with the \
         runtime's mask applied to the logits before each argmax (tooldec). The task's tools are \
         compiled with the model's own vocabulary for each task. Tasks are spread evenly over BFCL v4 \
         `simple_python`, `multiple`, `parallel` and `parallel_multiple`. In the parallel categories \
         the grammar allows one or more calls (as an API's `parallel_tool_calls` switch would), \
         elsewhere exactly one. Replies get at most 128 tokens (192 in the parallel categories); the \
         constrained run's matcher has that token budget (`matcher_with_budget`), so it always ends complete within it.\n\n\
         **Scores.** *Syntax error*: the reply does not parse as calls in the format, or a call names \
         a tool that does not exist, or its arguments fail the tool's JSON Schema (the papers' \
         definition, applied to every call of a reply). *Tool-name accuracy*: the called names equal \
         the ground truth's (as multisets). *AST accuracy*: BFCL's AST check against \
         `possible_answer` (same number of calls, each matched one to one: same function, no unknown \
         parameters, every given value among the acceptable ones, every omitted one optional). \
         *Time / task*: prompt prefill (the part after the shared instructions) plus decoding.\n"
    );
}

/// Where decode time goes in the constrained runs: the runtime's share
/// and the forced tokens.
fn decode_time(out: &mut String, runs: &[&Value]) {
    let mut mask_us_per_mask = Vec::new();
    let mut fwd_ms_per_call = Vec::new();
    let (mut mask_ms, mut fwd_ms, mut toks, mut forced, mut calls) = (0.0, 0.0, 0u64, 0u64, 0u64);
    for r in runs {
        let c = &r["constrained"];
        let m = c["mask_ms"].as_f64().unwrap_or(0.0);
        let f = c["forward_ms"].as_f64().unwrap_or(0.0);
        let masks = c["masks"].as_f64().unwrap_or(0.0);
        let fc = c["forward_calls"].as_f64().unwrap_or(0.0);
        if masks > 0.0 {
            mask_us_per_mask.push(1000.0 * m / masks);
        }
        if fc > 0.0 {
            fwd_ms_per_call.push(f / fc);
        }
        mask_ms += m;
        fwd_ms += f;
        toks += c["tokens"].as_u64().unwrap_or(0);
        forced += c["forced"].as_u64().unwrap_or(0);
        calls += c["forward_calls"].as_u64().unwrap_or(0);
    }
    let _ = writeln!(
        out,
        "## The runtime's share of decode time\n\n\
         Over all {} constrained replies ({toks} tokens): the runtime (`fill_mask` with the matcher's \
         token budget, counting the allowed tokens, and the masked argmax over \
         49,152 logits) took **{:.2} ms in all, {:.3}% of decode time** next to {:.1} s of forward \
         passes. Per masked step: median {:.1} µs; per forward pass: median {:.1} ms. Nearly all of \
         the step is the harness's own scalar work (the masked argmax walks every allowed token's \
         logit); `fill_mask` alone serves a mask in 0.2-0.5 µs (BENCHMARKS.md). \
         The papers claim under 0.1% on a GPU (stated, not measured); a GPU's faster forward pass \
         would make the share larger, unless the argmax over the masked logits runs on the GPU \
         too, as it does in inference engines.\n",
        runs.len(),
        mask_ms,
        100.0 * mask_ms / (mask_ms + fwd_ms).max(1e-9),
        fwd_ms / 1000.0,
        median(mask_us_per_mask),
        median(fwd_ms_per_call),
    );
    let _ = writeln!(
        out,
        "## Forced tokens\n\n\
         Where the mask allows exactly one token, the constrained run appends it without consulting \
         the model. Over all constrained replies, {forced} of {toks} tokens ({:.1}%) were forced, \
         and {calls} forward passes produced {toks} tokens.\n",
        100.0 * forced as f64 / toks.max(1) as f64
    );
}

/// The papers' figures next to this run's.
fn papers(out: &mut String, runs: &[&Value]) {
    let _ = writeln!(
        out,
        "## The papers' figures, side by side\n\n\
         From the ToolDec papers (\"Don't Fine-Tune, Decode\", Table 1; \"TOOLDEC: Syntax Error-Free and \
         Generalizable Tool Use\", Tables 3-4). Their models are 7B and their benchmarks ToolEval, \
         FuncQA and RestBench; ours is a 135M model on BFCL, so only the shape compares.\n\n\
         | setting | syntax / tool error, without → with ToolDec | accuracy, without → with ToolDec |\n\
         |---|---:|---:|\n\
         | ToolLLM + ReAct, ToolEval I2 / I3 | 21% / 32% → 0% / 0% | win 36.5 / 49 → 46.5 / 61 |\n\
         | ToolLLM + DFSDT, ToolEval I2 / I3 | 44% / 49% → 0% / 0% | win 40.5 / 41 → 50.5 / 49 |\n\
         | Mistral-Instruct-7B + ReAct, I2 / I3 | 92.5% / 93% → 0% / 0% | win 0 / 0 → 41 / 53 |\n\
         | Mistral-Instruct-7B + DFSDT, I2 / I3 | 100% / 100% → 0% / 0% | win 0 / 0 → 52 / 60 |\n\
         | ToolkenGPT, FuncQA (multi-hop) | 27.9% → 0% | 10.3% → 13.2% |\n\
         | Vicuna + RestGPT, RestBench TMDB | 23% → 0% | correct path 15% → 23% |"
    );
    for format in ["hermes", "react"] {
        let mut rows = Vec::new();
        for docs in ["full", "names"] {
            let g: Vec<&Value> = runs
                .iter()
                .copied()
                .filter(|r| r["format"] == format && r["docs"] == docs)
                .collect();
            if g.is_empty() {
                continue;
            }
            let u = tally(g.iter().copied(), "unconstrained");
            let c = tally(g.iter().copied(), "constrained");
            rows.push(format!(
                "| SmolLM2-135M, BFCL, `{format}`, {docs} docs (this run) | {} → {} | AST {} → {} |",
                u.pct(u.syntax_errors),
                c.pct(c.syntax_errors),
                u.pct(u.ast_ok),
                c.pct(c.ast_ok)
            ));
        }
        for r in rows {
            let _ = writeln!(out, "{r}");
        }
    }
    let _ = writeln!(out);
}

/// The tasks refused or over the budget, each replaced by the next one.
fn passed_over(out: &mut String, refused: &[&Value]) {
    let _ = writeln!(
        out,
        "## Tasks passed over\n\n{} tasks were passed over, each replaced by the next task of its \
         category: the compiler refuses their tools, or the shortest reply's completion bound does \
         not fit the token budget:\n",
        refused.len()
    );
    for r in refused {
        let _ = writeln!(
            out,
            "- `{}`: {}",
            r["id"].as_str().unwrap_or("?"),
            r["refused"].as_str().unwrap_or("?").replace('\n', " ")
        );
    }
    let _ = writeln!(out);
}
