//! The sweep's report: per mode and budget, how many replies are
//! complete valid calls, how many the budget cut, and how accurate they
//! are; and a plot of the valid-call rate and AST accuracy against
//! `max_tokens`, one line per mode.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use crate::sweep::MODES;

/// The tallies of one (mode, budget) cell over the tasks.
#[derive(Default, Clone)]
struct Tally {
    tasks: usize,
    valid: usize,
    cut: usize,
    /// Budgets below the grammar's shortest reply, refused up front.
    refused: usize,
    names: usize,
    ast: usize,
    tokens: usize,
    max_tokens: Vec<u32>,
}

impl Tally {
    fn add(&mut self, c: &Value) {
        self.tasks += 1;
        self.valid += (c["valid"] == true) as usize;
        if c["refused"] == true {
            self.refused += 1;
        } else {
            self.cut += (c["cut"] == true) as usize;
        }
        self.names += (c["names_ok"] == true) as usize;
        self.ast += (c["ast_ok"] == true) as usize;
        self.tokens += c["tokens"].as_u64().unwrap_or(0) as usize;
        self.max_tokens
            .push(c["max_tokens"].as_u64().unwrap_or(0) as u32);
    }

    fn rate(&self, k: usize) -> f64 {
        if self.tasks == 0 {
            0.0
        } else {
            100.0 * k as f64 / self.tasks as f64
        }
    }

    /// The budget's median number of tokens over the tasks.
    fn median_budget(&self) -> u32 {
        let mut v = self.max_tokens.clone();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0)
    }
}

/// The commit the records come from, or each of them when they mix
/// commits (a resumed run on newer code: regenerate).
fn commits(runs: &[&Value]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for r in runs {
        let c = r["commit"].as_str().unwrap_or("unknown");
        if !seen.contains(&c) {
            seen.push(c);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("(mixed: {}; regenerate from one commit)", many.join(", ")),
    }
}

/// The records that are sweeps (not refusals).
fn sweeps(records: &[Value]) -> Vec<&Value> {
    records.iter().filter(|r| r["modes"].is_object()).collect()
}

/// The documentation levels present, in report order (full first: the
/// setting an application uses), each with its records.
fn by_docs<'a>(runs: &[&'a Value]) -> Vec<(&'static str, Vec<&'a Value>)> {
    ["full", "names"]
        .into_iter()
        .map(|d| {
            (
                d,
                runs.iter()
                    .copied()
                    .filter(|r| r["docs"] == d)
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, rs)| !rs.is_empty())
        .collect()
}

/// How the report names a documentation level.
fn docs_title(docs: &str) -> &'static str {
    if docs == "full" {
        "Full documentation (each tool's description and parameters in the prompt)"
    } else {
        "Names only (the ToolDec papers' \"no documentation needed\" setting)"
    }
}

/// Per mode (report order) and budget label (ordered by their median
/// number of tokens): the tallies.
fn tallies(runs: &[&Value]) -> Vec<(String, Vec<(String, Tally)>)> {
    let mut by_mode: BTreeMap<String, BTreeMap<String, Tally>> = BTreeMap::new();
    for r in runs {
        for (mode, v) in r["modes"].as_object().into_iter().flatten() {
            for c in v["cells"].as_array().into_iter().flatten() {
                let label = c["budget"].as_str().unwrap_or("?").to_string();
                by_mode
                    .entry(mode.clone())
                    .or_default()
                    .entry(label)
                    .or_default()
                    .add(c);
            }
        }
    }
    let mut out: Vec<(String, Vec<(String, Tally)>)> = by_mode
        .into_iter()
        .map(|(m, cells)| {
            let mut cells: Vec<(String, Tally)> = cells.into_iter().collect();
            cells.sort_by_key(|(_, t)| t.median_budget());
            (m, cells)
        })
        .collect();
    out.sort_by_key(|(m, _)| MODES.iter().position(|x| x == m).unwrap_or(MODES.len()));
    out
}

/// Per mode: mean build time per task, and the constraint's time per
/// masked step (µs: `fill_mask`, counting, the masked argmax).
fn times(runs: &[&Value], mode: &str) -> (f64, f64) {
    let (mut build, mut n, mut mask, mut masks) = (0.0, 0usize, 0.0, 0u64);
    for r in runs {
        let m = &r["modes"][mode];
        if m.is_null() {
            continue;
        }
        n += 1;
        build += m["build_ms"].as_f64().unwrap_or(0.0);
        for g in m["runs"].as_array().into_iter().flatten() {
            mask += g["mask_ms"].as_f64().unwrap_or(0.0);
            masks += g["masks"].as_u64().unwrap_or(0);
        }
    }
    let build = if n == 0 { 0.0 } else { build / n as f64 };
    let per_mask = if masks == 0 {
        0.0
    } else {
        1000.0 * mask / masks as f64
    };
    (build, per_mask)
}

/// Over every decode: the model's forward passes (one token each), their
/// mean time in ms, and the steps whose logits the prompt's tree already
/// held.
fn model_time(runs: &[&Value]) -> (u64, f64, u64) {
    let (mut calls, mut ms, mut reused) = (0u64, 0.0, 0u64);
    for r in runs {
        for m in r["modes"].as_object().into_iter().flatten().map(|(_, m)| m) {
            for g in m["runs"].as_array().into_iter().flatten() {
                calls += g["forward_calls"].as_u64().unwrap_or(0);
                ms += g["forward_ms"].as_f64().unwrap_or(0.0);
                reused += g["reused"].as_u64().unwrap_or(0);
            }
        }
    }
    (
        calls,
        if calls == 0 { 0.0 } else { ms / calls as f64 },
        reused,
    )
}

/// One table: per mode and budget, the tallies over `runs`.
fn table(out: &mut String, runs: &[&Value]) {
    let _ = writeln!(
        out,
        "| mode | max_tokens | median tokens | tasks | valid | cut by the budget | tool names | AST | tokens / reply |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (mode, cells) in tallies(runs) {
        for (label, t) in &cells {
            let mean_tokens = if t.tasks == 0 {
                0.0
            } else {
                t.tokens as f64 / t.tasks as f64
            };
            let refused = if t.refused > 0 {
                format!(" (and {:.1}% refused)", t.rate(t.refused))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "| {mode} | {label} | {} | {} | {:.1}% | {:.1}%{refused} | {:.1}% | {:.1}% | {mean_tokens:.1} |",
                t.median_budget(),
                t.tasks,
                t.rate(t.valid),
                t.rate(t.cut),
                t.rate(t.names),
                t.rate(t.ast),
            );
        }
    }
    let _ = writeln!(out);
}

/// The report's section: tables and the plot's file name.
pub fn render(records: &[Value], command: &str, svg_name: &str) -> String {
    let runs = sweeps(records);
    let refused = records
        .iter()
        .filter(|r| r.get("refused").is_some())
        .count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# SmolLM2-135M-Instruct on BFCL: complete calls at every `max_tokens`, against the peers\n"
    );
    let _ = writeln!(
        out,
        "Generated by `{command}` from the sweep records, made at commit {} ({} task runs; {refused} tasks passed over because the compiler refused their tools). Do not edit by hand.\n",
        commits(&runs),
        runs.len()
    );
    let _ = writeln!(
        out,
        "Greedy decoding of the same prompt (hermes format) under each mode. *valid*: the reply parses as calls and every call passes its tool's schema; *cut*: the reply was still open at `max_tokens` (its tokens and the end-of-sequence token did not fit); *tool names*, *AST*: BFCL's checks (`score.rs`). Budgets `min+N` are relative to the task's shortest complete reply (its tokens and EOS). Only tooldec's masks depend on the budget; the other modes decode once and are cut at each budget, as a server's limit cuts them. *tooldec-dumps* is tooldec compiled with `--whitespace dumps` (arguments spaced exactly as Python's `json.dumps` writes them, as the chat template shows them) where *tooldec* has the default free whitespace (up to 4 bytes between JSON tokens); where a budget is below its own shortest reply the request is refused (counted as not valid).\n"
    );
    let groups = by_docs(&runs);
    let _ = writeln!(
        out,
        "![valid calls and AST accuracy against max_tokens]({svg_name})\n\nThe plot: {}.\n",
        groups
            .first()
            .map_or("no records", |(d, _)| docs_title(d))
            .to_lowercase()
    );
    for (docs, group) in &groups {
        let _ = writeln!(out, "## {} ({} tasks)\n", docs_title(docs), group.len());
        table(&mut out, group);
    }
    let (calls, per_pass, reused) = model_time(&runs);
    let _ = writeln!(
        out,
        "\nDecodes of one prompt share what they compute: every mode and budget starts from one prefilled prompt, and the logits after a prefix one decode computed are reused by the next (`generate::Tree`; each token has a forward pass of its own, so the logits are the same bits whichever decode computes them). The model ran {calls} forward passes, {per_pass:.1} ms each on average, and {reused} steps reused logits. The constraint's share of a decode step compares its time per masked step with that mean pass.\n"
    );
    let _ = writeln!(
        out,
        "| mode | build / task | constraint time / step | constraint share of a step |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    for mode in MODES {
        if runs.iter().all(|r| r["modes"][mode].is_null()) {
            continue;
        }
        let (build, per_mask) = times(&runs, mode);
        let share = if mode == "unconstrained" || per_pass == 0.0 {
            0.0
        } else {
            100.0 * per_mask / (per_mask + 1000.0 * per_pass)
        };
        let _ = writeln!(
            out,
            "| {mode} | {build:.0} ms | {per_mask:.1} µs | {share:.2}% |"
        );
    }
    disagreements(&mut out, &runs);
    out
}

/// Per peer: along how many of its replies its masks differed from
/// tooldec's (the same language must give the same masks), and the first
/// such difference.
fn disagreements(out: &mut String, runs: &[&Value]) {
    let _ = writeln!(
        out,
        "\nEach peer's reply is replayed against tooldec's masks without a budget (the same language must give the same masks):\n"
    );
    for mode in ["llguidance", "outlines"] {
        let replies: Vec<(&Value, &Value)> = runs
            .iter()
            .filter_map(|r| Some((*r, r["modes"][mode]["runs"].as_array()?.first()?)))
            .collect();
        if replies.is_empty() {
            continue;
        }
        let differ: Vec<&(&Value, &Value)> = replies
            .iter()
            .filter(|(_, g)| !g["disagreement"].is_null())
            .collect();
        let first = differ.first().map_or(String::new(), |(r, g)| {
            let d = &g["disagreement"];
            format!(
                "; first in `{}` at step {} after {:?}: only tooldec allows {}, only {mode} allows {}",
                r["id"].as_str().unwrap_or("?"),
                d["step"],
                d["after"].as_str().unwrap_or(""),
                d["only_tooldec"],
                d["only_peer"]
            )
        });
        let _ = writeln!(
            out,
            "- {mode}: masks differ along {} of {} replies{first}",
            differ.len(),
            replies.len()
        );
    }
}

/// Each mode's stroke, by its place in [`MODES`]: a colour and a dash
/// pattern, so that modes whose lines coincide (the peers, often) stay
/// visible one over the other.
const STROKES: [(&str, &str); 5] = [
    ("#7f7f7f", "none"),
    ("#1f77b4", "none"),
    ("#d62728", "7 4"),
    ("#2ca02c", "none"),
    ("#ff7f0e", "2 3"),
];

/// The plot: two panels (valid calls, AST accuracy) of percent against the
/// budgets in the tables' order, one line per mode.
/// The plot shows the first documentation level of the report.
pub fn svg(records: &[Value]) -> String {
    let runs = sweeps(records);
    let first = by_docs(&runs).into_iter().next().map(|(_, rs)| rs);
    let modes = tallies(first.as_deref().unwrap_or(&[]));
    let labels: Vec<String> = modes
        .iter()
        .max_by_key(|(_, c)| c.len())
        .map(|(_, c)| c.iter().map(|(l, _)| l.clone()).collect())
        .unwrap_or_default();
    let (w, h, left, top, pw, ph, gap) = (900.0, 420.0, 60.0, 40.0, 360.0, 280.0, 80.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let x_of = |i: usize, x0: f64| {
        if labels.len() <= 1 {
            x0 + pw / 2.0
        } else {
            x0 + pw * i as f64 / (labels.len() - 1) as f64
        }
    };
    for (panel, (title, pick)) in [
        (
            "valid calls (%)",
            (|t: &Tally| t.rate(t.valid)) as fn(&Tally) -> f64,
        ),
        ("AST accuracy (%)", |t: &Tally| t.rate(t.ast)),
    ]
    .into_iter()
    .enumerate()
    {
        let x0 = left + panel as f64 * (pw + gap);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="14">{title} against max_tokens</text>"#,
            x0 + pw / 2.0,
            top - 15.0
        );
        for k in 0..=4 {
            let y = top + ph - ph * k as f64 / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                x0 + pw,
                x0 - 6.0,
                y + 4.0,
                k * 25
            );
        }
        for (i, l) in labels.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" text-anchor="middle">{l}</text>"#,
                x_of(i, x0),
                top + ph + 18.0
            );
        }
        for (m, (mode, cells)) in modes.iter().enumerate() {
            let (color, dash) =
                STROKES[MODES.iter().position(|x| x == mode).unwrap_or(m) % STROKES.len()];
            let pts: Vec<String> = cells
                .iter()
                .filter_map(|(l, t)| {
                    let i = labels.iter().position(|x| x == l)?;
                    Some(format!(
                        "{:.1},{:.1}",
                        x_of(i, x0),
                        top + ph - ph * pick(t) / 100.0
                    ))
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{color}" stroke-dasharray="{dash}" stroke-width="2" points="{}"/>"#,
                pts.join(" ")
            );
            if panel == 0 {
                let ly = top + ph + 45.0;
                let lx = left + m as f64 * 170.0;
                let _ = writeln!(
                    s,
                    r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-dasharray="{dash}" stroke-width="3"/><text x="{}" y="{}">{mode}</text>"#,
                    lx + 24.0,
                    lx + 30.0,
                    ly + 4.0
                );
            }
        }
    }
    let _ = writeln!(s, "</svg>");
    s
}
