//! The `tooldec-conformance report` command and the markdown of
//! CONFORMANCE.md.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tooldec_compiler::Options;

use crate::corpus::{self, BENCH_DIR, SUITE_DIR};
use crate::stats::{pct, Reasons, Row};
use crate::tools::{self, CorpusResult};
use crate::{check_group, Group, SchemaResult, Tokenizer};

const USAGE: &str = "usage:
  tooldec-conformance report [--out FILE] [--filter SUBSTR] [--limit N] [--jobs N]
                             [--sections abc] [--tokenizer NAME]

  --out FILE       the markdown report (default: CONFORMANCE.md at the workspace root)
  --filter SUBSTR  only test-suite files, JSONSchemaBench files and tool corpora
                   (name or file path) containing SUBSTR
  --limit N        at most N schemas per test-suite file and per JSONSchemaBench
                   dataset, and N distinct tools per tool corpus (a sample)
  --jobs N         schemas compiled at once (default 1; with N > 1 each compile
                   crosses on one thread)
  --sections abc   which sections to run: a (test suite), b (JSONSchemaBench),
                   c (tool corpora); default abc
  --tokenizer NAME tokenizers/NAME/tokenizer.json under TOOLDEC_DATA (default gpt2)

TOOLDEC_DATA names the real-data directory (e.g. ../shared/data).";

/// The parsed command line of `report`.
#[derive(Debug, Clone)]
pub struct Args {
    pub out: PathBuf,
    pub filter: Option<String>,
    pub limit: Option<usize>,
    pub jobs: usize,
    pub sections: String,
    pub tokenizer: String,
    /// The command line as given, for the report's header.
    pub shown: String,
}

impl Args {
    pub fn parse(args: &[String]) -> Result<Args, String> {
        let mut a = Args {
            out: Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or(Path::new(".."))
                .join("CONFORMANCE.md"),
            filter: None,
            limit: None,
            jobs: 1,
            sections: "abc".into(),
            tokenizer: "gpt2".into(),
            shown: args.join(" "),
        };
        let mut it = args.iter();
        while let Some(k) = it.next() {
            let mut val = || {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{k} needs a value\n{USAGE}"))
            };
            let num = |v: String| -> Result<usize, String> {
                v.parse().map_err(|_| format!("{k} {v}: not a number"))
            };
            match k.as_str() {
                "--out" => a.out = PathBuf::from(val()?),
                "--filter" => a.filter = Some(val()?),
                "--limit" => a.limit = Some(num(val()?)?),
                "--jobs" => a.jobs = num(val()?)?.max(1),
                "--sections" => a.sections = val()?.to_ascii_lowercase(),
                "--tokenizer" => a.tokenizer = val()?,
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
            }
        }
        Ok(a)
    }

    fn selected(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }

    fn limit(&self) -> usize {
        self.limit.unwrap_or(usize::MAX)
    }

    fn sample(&self) -> bool {
        self.limit.is_some() || self.filter.is_some()
    }
}

pub fn main(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("report") => {
            let a = Args::parse(&args[1..])?;
            let data = crate::data_dir().ok_or_else(|| {
                format!(
                    "{} is unset: the report reads the real data (e.g. TOOLDEC_DATA=../shared/data)",
                    crate::DATA_ENV
                )
            })?;
            let md = run(&a, &data)?;
            std::fs::write(&a.out, md).map_err(|e| format!("{}: {e}", a.out.display()))?;
            eprintln!("wrote {}", a.out.display());
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

/// One table of schemas: rows per file or dataset, in order.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub rows: Vec<Row>,
    pub results: Vec<SchemaResult>,
    /// The row label of each result.
    pub labels: Vec<String>,
    /// Files that could not be read (label, message).
    pub unreadable: Vec<(String, String)>,
}

impl Table {
    pub fn total(&self) -> Row {
        let mut t = Row::new("**total**");
        for r in &self.rows {
            t.merge(r);
        }
        t
    }

    pub fn reasons(&self) -> Reasons {
        let mut r = Reasons::default();
        for s in &self.results {
            if let Some(f) = &s.refusal {
                r.add(f, &s.name);
            }
        }
        r
    }

    pub fn total_of(&self, pred: impl Fn(&str) -> bool) -> Row {
        let mut t = Row::new("");
        for r in self.rows.iter().filter(|r| pred(&r.label)) {
            t.merge(r);
        }
        t
    }
}

/// Checks labelled groups on `jobs` threads, with progress on stderr.
/// `groups` are `(row label, group)`; rows come out in first-seen order.
pub fn check_all(
    title: &str,
    groups: Vec<(String, Group)>,
    tok: &Tokenizer,
    opts: &Options,
    jobs: usize,
) -> Table {
    let total = groups.len();
    let done = AtomicUsize::new(0);
    let start = Instant::now();
    let results = crate::parallel_map(
        &groups,
        jobs,
        |(_, g)| check_group(g, tok, opts),
        |_, r: &SchemaResult| {
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            let slow = r.compile.as_secs() >= 10;
            if n.is_multiple_of(25) || n == total || slow {
                let el = start.elapsed().as_secs_f64();
                let eta = el / n as f64 * (total - n) as f64;
                eprintln!(
                    "[{title}] {n}/{total} {:.0}s elapsed, ~{:.0}s left; {} {} in {}",
                    el,
                    eta,
                    r.name,
                    if r.compiled() { "compiled" } else { "refused" },
                    dur(r.compile)
                );
            }
        },
    );
    let mut rows: Vec<Row> = Vec::new();
    for ((label, _), r) in groups.iter().zip(&results) {
        match rows.iter_mut().find(|x| &x.label == label) {
            Some(row) => row.add(r),
            None => {
                let mut row = Row::new(label);
                row.add(r);
                rows.push(row);
            }
        }
    }
    Table {
        title: title.to_string(),
        rows,
        results,
        labels: groups.into_iter().map(|(l, _)| l).collect(),
        unreadable: Vec::new(),
    }
}

/// Section A: the test-suite files of `dir` (relative to the data dir).
pub fn suite(
    a: &Args,
    data: &Path,
    dir: &str,
    prefix: &str,
    title: &str,
    tok: &Tokenizer,
    opts: &Options,
) -> Result<Table, String> {
    let mut groups = Vec::new();
    let mut unreadable = Vec::new();
    for f in corpus::json_files(&data.join(dir))? {
        let label = format!(
            "{prefix}{}",
            f.file_name().unwrap_or_default().to_string_lossy()
        );
        if !a.selected(&label) {
            continue;
        }
        match corpus::suite_file(&f, &label) {
            Ok(gs) => groups.extend(gs.into_iter().take(a.limit()).map(|g| (label.clone(), g))),
            Err(e) => unreadable.push((label, e)),
        }
    }
    let mut t = check_all(title, groups, tok, opts, a.jobs);
    t.unreadable = unreadable;
    Ok(t)
}

/// Section B: JSONSchemaBench, one row per dataset.
pub fn bench(a: &Args, data: &Path, tok: &Tokenizer, opts: &Options) -> Result<Table, String> {
    let mut per_dataset: Vec<(String, Vec<PathBuf>)> = Vec::new();
    for f in corpus::json_files(&data.join(BENCH_DIR))? {
        let name = f
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if !a.selected(&name) {
            continue;
        }
        let d = corpus::dataset(&name);
        match per_dataset.iter_mut().find(|x| x.0 == d) {
            Some(x) => x.1.push(f),
            None => per_dataset.push((d, vec![f])),
        }
    }
    per_dataset.sort_by(|x, y| x.0.cmp(&y.0));
    let mut groups = Vec::new();
    let mut unreadable = Vec::new();
    for (d, files) in per_dataset {
        for f in files.into_iter().take(a.limit()) {
            match corpus::bench_file(&f) {
                Ok(g) => groups.push((d.clone(), g)),
                Err(e) => unreadable.push((f.display().to_string(), e)),
            }
        }
    }
    let mut t = check_all("JSONSchemaBench", groups, tok, opts, a.jobs);
    t.unreadable = unreadable;
    Ok(t)
}

/// Everything the report shows.
pub struct Results {
    pub suite: Option<Table>,
    pub optional: Option<Table>,
    pub bench: Option<Table>,
    pub corpora: Option<Vec<CorpusResult>>,
    pub wall: Duration,
    pub vocab_load: Duration,
    pub tokenizer: String,
    pub threads: usize,
}

/// Runs the selected sections and renders the report.
pub fn run(a: &Args, data: &Path) -> Result<String, String> {
    let start = Instant::now();
    let tok_path = data
        .join("tokenizers")
        .join(&a.tokenizer)
        .join("tokenizer.json");
    eprintln!("loading {}", tok_path.display());
    let tok = Tokenizer::from_tokenizer_json(&tok_path, &a.tokenizer)?;
    let vocab_load = start.elapsed();
    let threads = if a.jobs > 1 { 1 } else { 0 };
    let opts = crate::report_options(threads);
    let s = &a.sections;
    let suite_t = if s.contains('a') {
        Some(suite(a, data, SUITE_DIR, "", "test suite", &tok, &opts)?)
    } else {
        None
    };
    let optional_t = if s.contains('a') {
        let mut t = suite(
            a,
            data,
            &format!("{SUITE_DIR}/optional"),
            "",
            "test suite optional",
            &tok,
            &opts,
        )?;
        let f = suite(
            a,
            data,
            &format!("{SUITE_DIR}/optional/format"),
            "format/",
            "test suite optional/format",
            &tok,
            &opts,
        )?;
        t.rows.extend(f.rows);
        t.results.extend(f.results);
        t.labels.extend(f.labels);
        t.unreadable.extend(f.unreadable);
        Some(t)
    } else {
        None
    };
    let bench_t = if s.contains('b') {
        Some(bench(a, data, &tok, &opts)?)
    } else {
        None
    };
    let corpora = if s.contains('c') {
        let topts = tools::tool_options(&opts)?;
        let mut out = Vec::new();
        for c in tools::corpora(data) {
            let any =
                a.selected(c.name) || c.files.iter().any(|f| a.selected(&f.display().to_string()));
            if !any {
                continue;
            }
            let mut c = c;
            if !a.selected(c.name) {
                c.files.retain(|f| a.selected(&f.display().to_string()));
            }
            eprintln!("[tools] {}: {} files", c.name, c.files.len());
            out.push(tools::run(
                data,
                &c,
                &tok.vocab,
                &topts,
                a.limit(),
                a.jobs,
                &|m: &str| eprintln!("[tools] {m}"),
            ));
        }
        Some(out)
    } else {
        None
    };
    let r = Results {
        suite: suite_t,
        optional: optional_t,
        bench: bench_t,
        corpora,
        wall: start.elapsed(),
        vocab_load,
        tokenizer: tok.label.clone(),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let (md, missed) = render(a, &r);
    for m in &missed {
        eprintln!("TARGET MISSED: {m}");
    }
    eprintln!("wall time {}", dur(r.wall));
    Ok(md)
}

/// A duration for humans.
pub fn dur(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if s < 60.0 {
        format!("{s:.2} s")
    } else {
        let m = (s / 60.0).floor();
        format!("{m:.0} min {:.0} s", s - m * 60.0)
    }
}

/// Text for a table cell: no pipes, newlines or HTML.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('\n', " ")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn frac(a: usize, b: usize) -> String {
    format!("{a} / {b}")
}

fn table_md(out: &mut String, t: &Table, first: &str, with_pct: bool) {
    let _ = writeln!(
        out,
        "| {first} | schemas compiled | {}valid accepted (both forms) | valid: one form only | invalid rejected (both forms) | invalid: one form only | state budget | compile total | median / compiled schema |",
        if with_pct { "compiled % | " } else { "" }
    );
    let _ = writeln!(
        out,
        "|---|---:|{}---:|---:|---:|---:|---:|---:|---:|",
        if with_pct { "---:|" } else { "" }
    );
    let total = t.total();
    for r in t.rows.iter().chain(std::iter::once(&total)) {
        let _ = writeln!(
            out,
            "| {} | {} | {}{} | {} | {} | {} | {} | {} | {} |",
            r.label,
            frac(r.compiled, r.schemas),
            if with_pct {
                format!("{:.1}% | ", r.compiled_pct())
            } else {
                String::new()
            },
            frac(r.valid_accepted, r.valid),
            r.valid_one_form,
            frac(r.invalid_rejected, r.invalid),
            r.invalid_one_form,
            r.budget,
            dur(r.compile_total),
            r.median().map_or("–".into(), dur),
        );
    }
    out.push('\n');
}

fn reasons_md(out: &mut String, reasons: &Reasons, what: &str) {
    let sorted = reasons.sorted();
    if sorted.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>Refusal reasons: {} {what} in {} groups</summary>\n",
        reasons.total(),
        sorted.len()
    );
    out.push_str("| kind | reason | count | example |\n|---|---|---:|---|\n");
    const SHOWN: usize = 80;
    for ((kind, reason), r) in sorted.iter().take(SHOWN) {
        let _ = writeln!(
            out,
            "| {kind} | {} | {} | {}: {} |",
            cell(reason),
            r.count,
            cell(&r.example),
            cell(&crate::cut(&r.message, 240))
        );
    }
    if sorted.len() > SHOWN {
        let rest: usize = sorted[SHOWN..].iter().map(|x| x.1.count).sum();
        let _ = writeln!(
            out,
            "| … | {} more groups | {rest} | |",
            sorted.len() - SHOWN
        );
    }
    out.push_str("\n</details>\n\n");
}

fn misses_md(out: &mut String, t: &Table) {
    let n_valid: usize = t.results.iter().map(|r| r.valid - r.valid_accepted).sum();
    let n_invalid: usize = t
        .results
        .iter()
        .map(|r| r.invalid - r.invalid_rejected)
        .sum();
    if n_valid + n_invalid == 0 {
        return;
    }
    // A few from each row, in row order, so that every file or dataset
    // with wrong verdicts shows some.
    const PER_ROW: usize = 4;
    let mut shown = Vec::new();
    let mut kept = 0;
    for row in &t.rows {
        let misses = t
            .results
            .iter()
            .zip(&t.labels)
            .filter(|(_, l)| **l == row.label)
            .flat_map(|(r, _)| r.misses.iter().map(move |m| (r, m)));
        for (i, x) in misses.enumerate() {
            kept += 1;
            if i < PER_ROW {
                shown.push(x);
            }
        }
    }
    let _ = writeln!(
        out,
        "<details><summary>Wrong verdicts: {n_valid} valid instances not accepted in both forms, {n_invalid} invalid instances accepted in a form ({} shown, at most {PER_ROW} per row)</summary>\n",
        shown.len()
    );
    for (r, m) in &shown {
        let _ = writeln!(
            out,
            "- {} ({}) — test \"{}\" ({}): compact: {}; spaced: {}; where: `{}`{}",
            cell(&r.name),
            cell(&crate::cut(&r.description, 80)),
            cell(&m.instance),
            if m.valid { "valid" } else { "INVALID" },
            m.compact.describe(),
            m.spaced.describe(),
            m.text.replace('`', "'").replace('\n', " "),
            if m.lossy_number {
                " (a number here is an integral double ≥ 2^53: likely an integer beyond 64 bits that serde_json rounded)"
            } else {
                ""
            },
        );
    }
    if kept > shown.len() {
        let _ = writeln!(
            out,
            "- … and {} more of the {kept} recorded (up to {} per schema)",
            kept - shown.len(),
            crate::MISSES_KEPT
        );
    }
    out.push_str("\n</details>\n\n");
}

fn schema_section(out: &mut String, t: &Table, first: &str, with_pct: bool) {
    if t.rows.is_empty() {
        out.push_str("No files selected.\n\n");
        return;
    }
    table_md(out, t, first, with_pct);
    for (f, e) in &t.unreadable {
        let _ = writeln!(out, "- unreadable: {f}: {}", cell(e));
    }
    reasons_md(out, &t.reasons(), "schemas refused");
    misses_md(out, t);
}

fn status(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**MISSED**"
    }
}

/// The markdown, and the targets missed.
pub fn render(a: &Args, r: &Results) -> (String, Vec<String>) {
    let mut out = String::new();
    header(&mut out, a, r);
    let missed = summary(&mut out, r);
    method(&mut out);
    if let Some(t) = &r.suite {
        out.push_str("## A. JSON-Schema-Test-Suite, draft 2020-12\n\n");
        out.push_str("One schema per test group; the instances are the group's tests.\n\n");
        schema_section(&mut out, t, "file", false);
    }
    if let Some(t) = &r.optional {
        out.push_str("### Optional tests (`optional/`, `optional/format/`)\n\n");
        schema_section(&mut out, t, "file", false);
    }
    if let Some(t) = &r.bench {
        out.push_str("## B. JSONSchemaBench\n\n");
        out.push_str(
            "Datasets are the file name before `---`, or the name without its trailing `_N`.\n\n",
        );
        schema_section(&mut out, t, "dataset", true);
    }
    if let Some(cs) = &r.corpora {
        corpora_section(&mut out, cs);
    }
    (out, missed)
}

/// The title, the command that generated the file and the sample warning.
fn header(out: &mut String, a: &Args, r: &Results) {
    out.push_str("# Conformance\n\n");
    let _ = writeln!(
        out,
        "Generated by `TOOLDEC_DATA=../shared/data cargo run --release -p tooldec-conformance -- report{}{}` \
         (tokenizer: {}; {} CPU threads; jobs {}; wall time {}, of which loading the tokenizer {}).\n",
        if a.shown.is_empty() { "" } else { " " },
        a.shown,
        r.tokenizer,
        r.threads,
        a.jobs,
        dur(r.wall),
        dur(r.vocab_load)
    );
    if a.sample() {
        let _ = writeln!(
            out,
            "> **Sample run** ({}{}): the numbers below cover only the selected schemas and tools, not the whole corpora.\n",
            a.limit.map_or(String::new(), |n| format!("at most {n} schemas per file/dataset and {n} tools per corpus")),
            a.filter.as_ref().map_or(String::new(), |f| format!("{}only names containing {f:?}", if a.limit.is_some() { "; " } else { "" })),
        );
    }
}

/// The summary: the targets on JSONSchemaBench, one line per other
/// part, and the targets missed (also returned, for the exit status).
fn summary(out: &mut String, r: &Results) -> Vec<String> {
    let mut missed = Vec::new();
    out.push_str("## Summary\n\n");
    if let Some(b) = &r.bench {
        bench_targets(out, b, &mut missed);
    }
    for t in [&r.suite, &r.optional].into_iter().flatten() {
        let total = t.total();
        let _ = writeln!(
            out,
            "- {}: {} / {} schemas compiled ({:.1}%); valid accepted {} / {}; invalid accepted {} of {}; mask/walk disagreements {}.",
            t.title,
            total.compiled,
            total.schemas,
            total.compiled_pct(),
            total.valid_accepted,
            total.valid,
            total.invalid_accepted(),
            total.invalid,
            total.disagreements
        );
        if total.disagreements > 0 {
            missed.push(format!(
                "{}: {} mask/walk disagreements",
                t.title, total.disagreements
            ));
        }
    }
    if let Some(cs) = &r.corpora {
        for c in cs {
            let n = c.tools.len();
            let _ = writeln!(
                out,
                "- tools, {}: {} / {} distinct tools compiled ({:.1}%); {} of {} files refused by `spec::parse`{}.",
                c.name,
                c.compiled(),
                n,
                pct(c.compiled(), n),
                c.files.iter().filter(|f| f.refusal.is_some() || f.renamed.is_some()).count(),
                c.files.len(),
                match c.files.iter().filter(|f| f.renamed.is_some()).count() {
                    0 => String::new(),
                    k => format!(" ({k} only for a tool name shared by two different tools, and read again with them renamed)"),
                }
            );
        }
    }
    if !missed.is_empty() {
        out.push_str("\n**Targets missed:**\n\n");
        for m in &missed {
            let _ = writeln!(out, "- {m}");
        }
    }
    out.push('\n');
    missed
}

/// The JSONSchemaBench targets' table, adding the missed ones to `missed`.
fn bench_targets(out: &mut String, b: &Table, missed: &mut Vec<String>) {
    out.push_str(
        "The issue's targets, on JSONSchemaBench (no schema is compiled with `relax`):\n\n",
    );
    out.push_str("| target | result | status |\n|---|---|---|\n");
    let total = b.total();
    let ok = total.invalid_accepted() == 0;
    let _ = writeln!(
        out,
        "| zero invalid instances accepted in compiled schemas | {} of {} invalid instances (in compiled schemas) accepted in a form | {} |",
        total.invalid_accepted(),
        total.invalid,
        status(ok)
    );
    if !ok {
        missed.push(format!(
            "JSONSchemaBench: {} invalid instances accepted",
            total.invalid_accepted()
        ));
    }
    let bad_schemas = b
        .results
        .iter()
        .filter(|s| s.compiled() && s.valid_accepted < s.valid)
        .count();
    let ok = total.valid_missed() == 0;
    let _ = writeln!(
        out,
        "| all valid instances accepted in every compiled schema | {} of {} valid instances accepted in both forms ({} not, in {bad_schemas} schemas; {} in one form only) | {} |",
        total.valid_accepted,
        total.valid,
        total.valid_missed(),
        total.valid_one_form,
        status(ok)
    );
    if !ok {
        missed.push(format!(
            "JSONSchemaBench: {} valid instances not accepted in both forms ({bad_schemas} schemas)",
            total.valid_missed()
        ));
    }
    let mut cover = |name: &str, row: Row, target: f64| {
        let p = row.compiled_pct();
        let ok = row.schemas > 0 && p >= target;
        let _ = writeln!(
            out,
            "| ≥{target:.0}% of {name} schemas compiled | {} / {} = {p:.1}% | {} |",
            row.compiled,
            row.schemas,
            if row.schemas == 0 {
                "not measured (none selected)"
            } else {
                status(ok)
            }
        );
        if !ok && row.schemas > 0 {
            missed.push(format!("{name}: {p:.1}% compiled (target {target:.0}%)"));
        }
    };
    cover(
        "Glaive (Glaiveai2K)",
        b.total_of(|l| l.starts_with("Glaive")),
        90.0,
    );
    cover(
        "BFCL (all BFCL_*)",
        b.total_of(|l| l.starts_with("BFCL")),
        90.0,
    );
    cover("MCP (MCPspec)", b.total_of(|l| l.starts_with("MCP")), 90.0);
    cover("all JSONSchemaBench", total.clone(), 75.0);
    let ok = total.disagreements == 0;
    let _ = writeln!(
        out,
        "| stored masks agree with the byte walk | {} disagreements | {} |",
        total.disagreements,
        status(ok)
    );
    if !ok {
        missed.push(format!(
            "JSONSchemaBench: {} mask/walk disagreements",
            total.disagreements
        ));
    }
    out.push('\n');
}

/// How the numbers are made.
fn method(out: &mut String) {
    out.push_str(
        "## Method\n\n\
         - **Compile.** Each schema is compiled on its own with `compile_schema` (the whole output is one JSON \
         value) against the tokenizer's vocabulary, with `open_objects: true` (JSON Schema's own meaning of a \
         missing `additionalProperties`), the other `JsonOptions` at their defaults (`relax` off), no zstd, and a \
         state budget of ",
    );
    let _ = writeln!(
        out,
        "{} DFA / {} NFA states: a schema over the budget is refused (\"state budget\"). A schema the compiler \
         refuses counts as not compiled, with its error kind and message; its instances are not counted.",
        crate::MAX_STATES,
        crate::MAX_NFA_STATES
    );
    out.push_str(
        "- **Accepted.** An instance is accepted when its JSON text, tokenized by the real tokenizer, walks the \
         runtime matcher (the artifact loaded with `tooldec_runtime`) to an accepting state: before each token \
         its bit in the stored mask of the current state must be set and `accept_token` must advance; at the end \
         the state must be accepting and the end-of-sequence token allowed. (\"mask/walk disagreements\" counts \
         the times the stored mask and the walk differ: a bug if ever nonzero.)\n\
         - **Two serializations.** Each instance is written compactly (`serde_json::to_string`) and spaced (one \
         space after each `:` and `,`: `{\"a\": 1, \"b\": [1, 2]}`). A valid instance counts as accepted only if \
         both forms are; an invalid one counts as rejected only if both forms are (an invalid instance accepted \
         in either form is a wrong verdict). \"one form only\" counts instances accepted in exactly one form.\n\
         - **Member order.** The machine writes an object's declared properties in the schema's declared order, so \
         before serializing, each instance object's members are reordered: every key of every `properties` object \
         of the schema document gets a global rank in document order (first occurrence wins); members are sorted \
         by rank, members without a rank last in their original order. JSON object member order carries no \
         meaning, so this is the same value. One global rank cannot suit two `properties` objects that declare \
         the same names in different orders (the `anyOf` of functions in BFCL schemas), so a second order is \
         tried per form: each object's members in the order of the `properties` object declaring the most of \
         them, the rest by the global rank. A form counts as accepted when either order is (equally strict for \
         invalid instances: both texts are the same value).\n\
         - **Numbers** are read by serde_json: integers within 64 bits exactly, others as doubles, so an integer \
         beyond 64 bits (the optional `bignum` tests) is walked as a rounded double; such wrong verdicts are marked.\n\
         - **Compile time** is `compile_schema` plus loading the artifact; the total covers every attempt \
         (refusals included), the median only the compiled schemas.\n\
         - **Tool corpora.** Each file goes through `spec::parse` (the compiler's dialect detection); a file it \
         cannot read counts as refused with its message; a file refused only because two different tools share \
         a name is listed with that message and read again with `Collisions::Rename`, so that its tools are \
         measured. Each distinct tool (same name and schema counted once \
         per corpus) is built alone with `build_dfa` and the `json` call format (no crossing), with the same \
         options.\n\n",
    );
}

/// Section C: the tool corpora's table, the files refused or read with
/// collisions renamed, the files left out, and each corpus's refusals.
fn corpora_section(out: &mut String, cs: &[CorpusResult]) {
    out.push_str("## C. Tool corpora\n\n");
    out.push_str("| corpus | files read / files | of which only with collisions renamed | tools parsed | distinct tools | compiled | refused | compiled % | median build | published (data README) |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for c in cs {
        let read = c.files.iter().filter(|f| f.refusal.is_none()).count();
        let mut times: Vec<Duration> = c
            .tools
            .iter()
            .filter(|t| t.refusal.is_none())
            .map(|t| t.time)
            .collect();
        times.sort();
        let n = c.tools.len();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {}{} | {} | {} | {:.1}% | {} | {} |",
            c.name,
            frac(read, c.files.len()),
            c.files.iter().filter(|f| f.renamed.is_some()).count(),
            c.parsed_tools,
            n,
            if c.limited > 0 {
                format!(" (+{} not run: --limit)", c.limited)
            } else {
                String::new()
            },
            c.compiled(),
            n - c.compiled(),
            pct(c.compiled(), n),
            times.get(times.len() / 2).map_or("–".into(), |d| dur(*d)),
            c.published,
        );
    }
    out.push('\n');
    let refused: Vec<_> = cs
        .iter()
        .flat_map(|c| {
            c.files
                .iter()
                .filter(|f| f.refusal.is_some())
                .map(move |f| (c.name, f))
        })
        .collect();
    if !refused.is_empty() {
        out.push_str("Files `spec::parse` refused:\n\n| corpus | file | kind | message |\n|---|---|---|---|\n");
        for (c, f) in refused {
            let e = f.refusal.as_ref().expect("filtered");
            let _ = writeln!(
                out,
                "| {c} | {} | {} | {} |",
                f.file.display(),
                e.kind,
                cell(&crate::cut(&e.message, 300))
            );
        }
        out.push('\n');
    }
    let renamed: Vec<_> = cs
        .iter()
        .flat_map(|c| {
            c.files
                .iter()
                .filter(|f| f.renamed.is_some())
                .map(move |f| (c.name, f))
        })
        .collect();
    if !renamed.is_empty() {
        out.push_str(
            "Files `spec::parse` refused for two different tools with one name, read with \
             `Collisions::Rename` (later ones renamed `NAME_2`, ...) so that each tool is still measured:\n\n\
             | corpus | file | tools | message of `spec::parse` |\n|---|---|---:|---|\n",
        );
        for (c, f) in renamed {
            let e = f.renamed.as_ref().expect("filtered");
            let _ = writeln!(
                out,
                "| {c} | {} | {} | {} |",
                f.file.display(),
                f.tools,
                cell(&crate::cut(&e.message, 300))
            );
        }
        out.push('\n');
    }
    let skipped: Vec<_> = cs
        .iter()
        .flat_map(|c| c.skipped.iter().map(move |s| (c.name, s)))
        .collect();
    if !skipped.is_empty() {
        out.push_str("<details><summary>Files left out</summary>\n\n");
        for (c, (f, why)) in skipped {
            let _ = writeln!(out, "- {c}: {}: {why}", f.display());
        }
        out.push_str("\n</details>\n\n");
    }
    for c in cs {
        let reasons = c.reasons();
        if reasons.total() > 0 {
            let _ = writeln!(out, "### {}\n", c.name);
            reasons_md(out, &reasons, "tools refused");
        }
    }
}
