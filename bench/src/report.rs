//! The `tooldec-bench` command: scale sets, one-engine child runs, and the
//! markdown report that BENCHMARKS.md is.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use tooldec_compiler::Options;

use crate::peers::{llg, outlines};
use crate::stats::{mask_floor, time_engine, Summary};
use crate::workloads::{self, Workload};
use crate::{load_vocab, ours, peak_rss, walks, Engine};

const USAGE: &str = "usage:
  tooldec-bench report [--quick] [-o BENCHMARKS.md] [--svg FILE] [--tokenizers a,b] [--scale 10,100,...]
                       [--peer-scale-max N] [--llguidance-scale-max N] [--walks N] [--max-states N]
                       [--families-tokenizers a,b] [--load-tokenizers a,b] [--distinct N]
                       [--latency-tokenizer NAME] [--latency-limit N] [--latency-out LATENCY.md]
                       [--no-xgrammar] [--xgrammar-limit N] [--xgrammar-out XGRAMMAR.md]
  tooldec-bench tools N [--distinct] -o FILE
  tooldec-bench child (tooldec|outlines|llguidance) WORKLOAD TOKENIZER DIR [--walks N] [--max-states N]
  tooldec-bench latency --tokenizer NAME|PATH [--format NAME] [--limit N] [TOOLS.json ...]

WORKLOAD: scale:N | scale-distinct:N | bfcl:CATEGORY:ID | toolbench:ID";

pub fn main(args: &[String]) -> Result<(), String> {
    if crate::data_dir().is_none() {
        return Err("TOOLDEC_DATA is unset: the benchmarks read the real data".into());
    }
    match args.first().map(String::as_str) {
        Some("tools") => tools(&args[1..]),
        Some("child") => child(&args[1..]),
        Some("report") => report(&args[1..]),
        Some("latency") => crate::latency::main(&args[1..]),
        _ => Err(USAGE.into()),
    }
}

/// The value of `--name` in `args`.
pub(crate) fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn tools(args: &[String]) -> Result<(), String> {
    let n: usize = args
        .first()
        .and_then(|a| a.parse().ok())
        .ok_or("tools: N must be a number")?;
    let out = flag(args, "-o").ok_or("tools: -o FILE is required")?;
    let pool = workloads::pool();
    let w = if args.iter().any(|a| a == "--distinct") {
        workloads::scale_distinct(pool, n)
    } else {
        workloads::scale(pool, n)
    };
    std::fs::write(out, w.text()).map_err(|e| format!("{out}: {e}"))?;
    eprintln!(
        "wrote {out}: {n} tools (pool of {} distinct real tools)",
        pool.len()
    );
    Ok(())
}

/// A workload by its spec string.
pub fn resolve(spec: &str) -> Result<Workload, String> {
    let parts: Vec<&str> = spec.splitn(3, ':').collect();
    match parts.as_slice() {
        ["scale", n] => {
            let n: usize = n.parse().map_err(|_| format!("{spec}: bad size"))?;
            let mut w = workloads::scale(workloads::pool(), n);
            w.name = spec.to_string();
            Ok(w)
        }
        ["scale-distinct", n] => {
            let n: usize = n.parse().map_err(|_| format!("{spec}: bad size"))?;
            let mut w = workloads::scale_distinct(workloads::pool(), n);
            w.name = spec.to_string();
            Ok(w)
        }
        ["bfcl", cat, id] => workloads::bfcl(cat)
            .into_iter()
            .find(|w| w.name == *id)
            .ok_or_else(|| format!("{spec}: no such BFCL line")),
        ["toolbench", id] => workloads::toolbench()
            .into_iter()
            .find(|w| w.name == *id)
            .ok_or_else(|| format!("{spec}: no such ToolBench query")),
        _ => Err(format!("{spec}: unknown workload\n{USAGE}")),
    }
}

fn summary_json(s: &Summary) -> Value {
    json!({"calls": s.calls, "median_ns": s.median, "p99_ns": s.p99, "max_ns": s.max})
}

/// One engine on one workload and tokenizer, alone in this process. The
/// `tooldec` child compiles, writes `DIR/artifact.tdm` and `DIR/walks.json`
/// (the fixed walks); the peers' children read them, build their own index
/// on the same regular expression, check that their masks equal ours along
/// the walks, and time the same steps.
fn child(args: &[String]) -> Result<(), String> {
    let [engine, spec, tok, dir, ..] = args else {
        return Err(USAGE.into());
    };
    let n_walks: usize = flag(args, "--walks")
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let opts = Options {
        max_states: flag(args, "--max-states")
            .map(|s| {
                s.parse()
                    .map_err(|_| format!("--max-states {s}: not a number"))
            })
            .transpose()?
            .unwrap_or(Options::default().max_states),
        limits: tooldec_compiler::Limits::unbounded(),
        ..Options::default()
    };
    let dir = PathBuf::from(dir);
    let w = resolve(spec)?;
    let set = w.spec();
    let t = Instant::now();
    let vocab = load_vocab(tok).map_err(|e| e.to_string())?;
    let vocab_s = t.elapsed().as_secs_f64();
    let rss_vocab = peak_rss();
    let mut out = json!({"engine": engine, "workload": spec, "tokenizer": tok,
        "tools": set.tools.len(), "vocab_load_s": vocab_s, "rss_after_vocab": rss_vocab});
    if engine == "tooldec-entry" {
        return entry_child(&set, &vocab, &opts, out);
    }
    if engine == "tooldec" {
        let built = ours::build_with(&set, &vocab, &opts).map_err(|e| e.to_string())?;
        let peak = peak_rss();
        let first_mask_s = first_mask(&set, &vocab, &opts)?;
        let engine_s = engine_build(&set, &vocab, &opts)?;
        std::fs::write(dir.join("artifact.tdm"), &built.artifact).map_err(|e| e.to_string())?;
        // Load time: best of 5 (the first includes page faults of the
        // freshly written file's bytes, which a server pays once).
        let mut load_s = f64::MAX;
        for _ in 0..5 {
            let l = ours::load(&built.artifact);
            load_s = load_s.min(l.load.as_secs_f64());
        }
        let validate_s = validate_time(&built.artifact)?;
        let loaded = ours::load(&built.artifact);
        let g = loaded.artifact.grammar();
        let ws = walks::walks(&g, spec, n_walks);
        std::fs::write(dir.join("walks.json"), serde_json::to_string(&ws).unwrap())
            .map_err(|e| e.to_string())?;
        let mut e = ours::Ours::new(&g);
        let hash = walks::mask_hash(&mut e, &ws, g.mask_words());
        crate::record::check(tok, spec, n_walks, hash)?;
        let (fill, accept) = time_engine(&mut e, &ws, g.mask_words(), 5);
        let r = &built.report;
        let phases: serde_json::Map<String, Value> = r
            .phases
            .iter()
            .map(|(n, d)| (n.to_string(), json!(d.as_secs_f64())))
            .collect();
        let o = out.as_object_mut().unwrap();
        o.insert("build_s".into(), json!(built.compile.as_secs_f64()));
        o.insert("first_mask_s".into(), json!(first_mask_s));
        o.insert("engine_s".into(), json!(engine_s));
        o.insert("phases".into(), Value::Object(phases));
        o.insert("peak_rss".into(), json!(peak));
        o.insert("disk_bytes".into(), json!(r.artifact_bytes));
        o.insert("memory_bytes".into(), json!(r.payload_bytes));
        o.insert("nfa_states".into(), json!(r.nfa_states));
        o.insert("dfa_states".into(), json!(r.dfa_states));
        o.insert("min_states".into(), json!(r.min_states));
        o.insert("masks".into(), json!(r.masks));
        o.insert("load_s".into(), json!(load_s));
        o.insert("validate_s".into(), json!(validate_s));
        o.insert(
            "steps".into(),
            json!(ws.iter().map(Vec::len).sum::<usize>()),
        );
        o.insert("mask_hash".into(), json!(format!("{hash:016x}")));
        o.insert("fill".into(), summary_json(&fill));
        o.insert("accept".into(), summary_json(&accept));
        let (write_ns, copy_ns) = mask_floor(g.mask_words());
        o.insert(
            "mask_floor".into(),
            json!({"words": g.mask_words(), "write_ns": write_ns, "copy_ns": copy_ns}),
        );
    } else {
        let bytes = std::fs::read(dir.join("artifact.tdm")).map_err(|e| e.to_string())?;
        let ws: Vec<Vec<u32>> = serde_json::from_slice(
            &std::fs::read(dir.join("walks.json")).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let loaded = ours::load(&bytes);
        let g = loaded.artifact.grammar();
        let rx = tooldec_compiler::regex(&set, &opts, &vocab).map_err(|e| e.to_string())?;
        let o = out.as_object_mut().unwrap();
        o.insert("regex_bytes".into(), json!(rx.len()));
        let mut engine_box: Box<dyn Engine> = match engine.as_str() {
            "outlines" => {
                let v = outlines::vocabulary(&vocab);
                let t = Instant::now();
                let idx = outlines::Outlines::build(&rx, &v)?;
                o.insert("build_s".into(), json!(t.elapsed().as_secs_f64()));
                // Every mask is in the index: its first mask is its build.
                o.insert("first_mask_s".into(), json!(t.elapsed().as_secs_f64()));
                o.insert("peak_rss".into(), json!(peak_rss()));
                let t = Instant::now();
                let ser = bincode::encode_to_vec(&idx.index, bincode::config::standard())
                    .map_err(|e| e.to_string())?;
                o.insert("serialize_s".into(), json!(t.elapsed().as_secs_f64()));
                o.insert("disk_bytes".into(), json!(ser.len()));
                let t = Instant::now();
                let decoded: Result<(outlines_core::prelude::Index, usize), _> =
                    bincode::decode_from_slice(&ser, bincode::config::standard());
                decoded.map_err(|e| e.to_string())?;
                o.insert("load_s".into(), json!(t.elapsed().as_secs_f64()));
                let transitions: usize = idx.index.transitions().values().map(|m| m.len()).sum();
                o.insert("transitions".into(), json!(transitions));
                Box::new(idx)
            }
            "llguidance" => {
                let env = llg::tok_env(&vocab);
                let f = llg::factory(&env);
                let t = Instant::now();
                let mut m = llg::Llg::build(&f, &rx)?;
                o.insert("build_s".into(), json!(t.elapsed().as_secs_f64()));
                // It computes masks lazily: its time to a first mask is
                // the build and that mask.
                let mut first = vec![0u32; g.mask_words()];
                m.fill_mask(&mut first);
                o.insert("first_mask_s".into(), json!(t.elapsed().as_secs_f64()));
                m.reset();
                Box::new(m)
            }
            other => return Err(format!("unknown engine {other}")),
        };
        let mut us = ours::Ours::new(&g);
        let d = walks::first_difference(&mut us, engine_box.as_mut(), &ws, g.mask_words());
        o.insert(
            "agrees".into(),
            json!(match &d {
                None => "yes".to_string(),
                Some((w, s, a, b)) =>
                    format!("NO: walk {w} step {s}: only ours {a:?}, only theirs {b:?}"),
            }),
        );
        let (fill, accept) = time_engine(engine_box.as_mut(), &ws, g.mask_words(), 3);
        o.insert("fill".into(), summary_json(&fill));
        o.insert("accept".into(), summary_json(&accept));
        if !o.contains_key("peak_rss") {
            o.insert("peak_rss".into(), json!(peak_rss()));
        }
    }
    println!("{out}");
    Ok(())
}

/// The `tooldec-entry` child: the compile of the format's default entry
/// alone, as an engine adapter compiles a request's own entry (and the
/// language the peers build from `--print-regex`): the engine's and the
/// CLI's times, the peak, the payload and its validation. No serving:
/// the `tooldec` child serves the same states.
fn entry_child(
    set: &tooldec_compiler::spec::ToolSet,
    vocab: &tooldec_compiler::vocab::Vocab,
    opts: &Options,
    mut out: Value,
) -> Result<(), String> {
    let opts = Options {
        format: opts.format.only_default_entry(),
        ..opts.clone()
    };
    let first = opts.format.entries().concat();
    let engine_s = engine_build(set, vocab, &opts)?;
    let built = ours::build_with(set, vocab, &opts).map_err(|e| e.to_string())?;
    let peak = peak_rss();
    let validate_s = validate_time(&built.artifact)?;
    let r = &built.report;
    let o = out.as_object_mut().unwrap();
    o.insert("entry".into(), json!(first));
    o.insert("engine_s".into(), json!(engine_s));
    o.insert("build_s".into(), json!(built.compile.as_secs_f64()));
    o.insert("peak_rss".into(), json!(peak));
    o.insert("memory_bytes".into(), json!(r.payload_bytes));
    o.insert("min_states".into(), json!(r.min_states));
    o.insert("validate_s".into(), json!(validate_s));
    println!("{out}");
    Ok(())
}

/// Validation alone, best of 5: what checking an artifact already in
/// memory costs (an engine's compile result, an uncompressed file).
fn validate_time(artifact: &[u8]) -> Result<f64, String> {
    let mut best = f64::MAX;
    let mut words = ours::load(artifact).artifact.into_inner();
    for _ in 0..5 {
        let t = Instant::now();
        let a = tooldec_runtime::Artifact::new(words).map_err(|e| e.to_string())?;
        best = best.min(t.elapsed().as_secs_f64());
        words = a.into_inner();
    }
    Ok(best)
}

/// Seconds from the tool set to tooldec's first mask on a compiler that
/// has compiled nothing (`Compiler::start`: lowering and determinization,
/// then the mask computed on demand; its regions walked cold), the rest of
/// the compile deferred and never run.
fn first_mask(
    set: &tooldec_compiler::spec::ToolSet,
    vocab: &tooldec_compiler::vocab::Vocab,
    opts: &Options,
) -> Result<f64, String> {
    let compiler = std::sync::Arc::new(tooldec_compiler::Compiler::new(vocab.clone()));
    let mut mask = vec![0u32; tooldec_runtime::layout::mask_words(vocab.len() as u32)];
    let t = Instant::now();
    let pending = compiler
        .start_deferred(set, opts)
        .map_err(|e| e.to_string())?;
    let mut m = pending.matcher(None, None, 0).map_err(|e| e.to_string())?;
    m.fill_mask(&mut mask).map_err(|e| e.to_string())?;
    Ok(t.elapsed().as_secs_f64())
}

/// Seconds an engine's [`tooldec_compiler::Compiler`] takes to make `set`
/// a validated in-memory artifact, ready to serve (`Compiler::compile`: no
/// zstd), for a set it has not seen: the compiler made beforehand, as an
/// engine makes it at startup, and its token trie for the format built by
/// a one-tool compile whose reused parts are then forgotten.
fn engine_build(
    set: &tooldec_compiler::spec::ToolSet,
    vocab: &tooldec_compiler::vocab::Vocab,
    opts: &Options,
) -> Result<f64, String> {
    let compiler = tooldec_compiler::Compiler::new(vocab.clone());
    let mut one = set.clone();
    one.tools.truncate(1);
    compiler.compile(&one, opts).map_err(|e| e.to_string())?;
    compiler.clear_cache();
    let t = Instant::now();
    let loaded = compiler.compile(set, opts).map_err(|e| e.to_string())?;
    let s = t.elapsed().as_secs_f64();
    drop(loaded);
    Ok(s)
}

/// Runs `tooldec-bench child ...` and parses its JSON line. With
/// `TOOLDEC_BENCH_RESULTS=FILE`, each result is appended to FILE (JSON
/// lines) and a result already there is reused, so an interrupted report
/// can be resumed.
fn run_child(engine: &str, spec: &str, tok: &str, dir: &Path, run: &Runs) -> Result<Value, String> {
    let results = std::env::var_os("TOOLDEC_BENCH_RESULTS").map(PathBuf::from);
    if let Some(file) = &results {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if v["engine"] == engine && v["workload"] == spec && v["tokenizer"] == tok {
                if engine == "tooldec" {
                    // The peers read the artifact and walks from `dir`.
                    run_child_fresh(engine, spec, tok, dir, run)?;
                }
                return Ok(v);
            }
        }
    }
    let v = run_child_fresh(engine, spec, tok, dir, run)?;
    if let Some(file) = &results {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .map_err(|e| e.to_string())?;
        writeln!(f, "{v}").map_err(|e| e.to_string())?;
    }
    Ok(v)
}

fn run_child_fresh(
    engine: &str,
    spec: &str,
    tok: &str,
    dir: &Path,
    run: &Runs,
) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let out = Command::new(exe)
        .args(["child", engine, spec, tok])
        .arg(dir)
        .args(["--walks", &run.walks.to_string()])
        .args(["--max-states", &run.max_states.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    eprintln!(
        "  {engine:<10} {spec:<28} {tok:<10} {:>7.1} s",
        t.elapsed().as_secs_f64()
    );
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(format!(
            "{engine} on {spec}/{tok} failed ({}): {}",
            out.status,
            last.join(" | ")
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().unwrap_or("")).map_err(|e| e.to_string())
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn ns(v: &Value, which: &str, k: &str) -> f64 {
    v.get(which).map_or(f64::NAN, |s| f(s, k))
}

/// `x` scaled by the largest unit it reaches, `–` for a missing value.
fn scaled(x: f64, units: &[(f64, &str, usize)]) -> String {
    if x.is_nan() {
        return "–".into();
    }
    let &(div, unit, prec) = units
        .iter()
        .find(|(div, _, _)| x >= *div)
        .unwrap_or(units.last().unwrap());
    format!("{:.*} {unit}", prec, x / div)
}

/// A duration in seconds, human-scaled.
fn secs(s: f64) -> String {
    scaled(s, &[(1.0, "s", 2), (1e-3, "ms", 1), (1e-6, "µs", 0)])
}

/// A per-call time in ns, human-scaled.
fn nanos(x: f64) -> String {
    scaled(x, &[(1e6, "ms", 2), (1e3, "µs", 2), (1.0, "ns", 0)])
}

/// The verdict on one part of a target of several parts, so that a part
/// met is not read as missed with the others.
fn part(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "missed"
    }
}

/// One gibibyte, in bytes.
const GIB: f64 = 1073741824.0;

fn bytes(b: f64) -> String {
    scaled(b, &[(1e9, "GB", 2), (1e6, "MB", 1), (1e3, "KB", 0)])
}

fn ratio(theirs: f64, ours: f64) -> String {
    if theirs.is_nan() || ours.is_nan() || ours <= 0.0 {
        return "–".into();
    }
    let r = theirs / ours;
    if r >= 10.0 {
        format!("{r:.0}×")
    } else if r >= 0.1 {
        format!("{r:.1}×")
    } else {
        format!("{r:.3}×")
    }
}

/// How the report runs its children.
pub(crate) struct Runs {
    /// Fixed walks per grammar.
    walks: usize,
    /// The DFA state bound (`--max-states`) of every compile.
    max_states: usize,
}

/// The whole of BENCHMARKS.md from one run: time to first mask (the
/// latency run), serving and building against the peers, the scale curve
/// and its plot, every real tool set, vocabulary loads and, through
/// `bench/python/run-xgrammar.sh`, XGrammar in one Python process.
fn report(args: &[String]) -> Result<(), String> {
    let quick = args.iter().any(|a| a == "--quick");
    let list = |name: &str, default: &str| -> Vec<String> {
        flag(args, name)
            .unwrap_or(default)
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let number = |name: &str, default: usize| -> Result<usize, String> {
        flag(args, name)
            .map(|s| s.parse().map_err(|_| format!("{name} {s}: not a number")))
            .transpose()
            .map(|n| n.unwrap_or(default))
    };
    let toks = list(
        "--tokenizers",
        if quick {
            "gpt2"
        } else {
            "gpt2,llama-3.2,qwen2.5"
        },
    );
    let scales: Vec<usize> = list(
        "--scale",
        if quick { "10,100" } else { "10,100,1000,10000" },
    )
    .iter()
    .map(|s| s.parse().map_err(|_| format!("--scale: {s}")))
    .collect::<Result<_, _>>()?;
    // outlines-core's index of the 100-tool ReAct grammar took over 8
    // minutes with GPT-2 and then failed; llguidance's first mask at 1,000
    // tools takes seconds, and its walks many more.
    let outlines_max = number("--peer-scale-max", 10)?;
    let llg_max = number("--llguidance-scale-max", if quick { 100 } else { 1000 })?;
    let distinct = flag(args, "--distinct")
        .map(|s| s.parse::<usize>().map_err(|_| format!("--distinct {s}")))
        .transpose()?
        .or((!quick).then_some(10_000));
    let run = Runs {
        walks: number("--walks", 8)?,
        // The 10,000-tool sets pass the default bound of 2,000,000.
        max_states: number("--max-states", 8_000_000)?,
    };
    let latency_tok = flag(args, "--latency-tokenizer")
        .unwrap_or(if quick { "gpt2" } else { "llama-3.2" })
        .to_string();
    let latency_limit = number("--latency-limit", if quick { 20 } else { usize::MAX })?;
    let xgrammar = !quick && !args.iter().any(|a| a == "--no-xgrammar");
    let svg = flag(args, "--svg").unwrap_or("docs/benchmarks-scale.svg");
    let tmp = std::env::temp_dir().join(format!("tooldec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let commit = commit();

    // 1. Time to first mask of every BFCL set, against llguidance.
    eprintln!("latency: {latency_tok}");
    let mut sets = workloads::bfcl("multiple");
    sets.extend(workloads::bfcl("parallel_multiple"));
    let sets: Vec<Workload> = sets.into_iter().take(latency_limit).collect();
    let mut lines = Vec::new();
    let latency = crate::latency::run(&latency_tok, "hermes", &sets, &mut |l| {
        eprintln!("  {}", l.split('|').nth(1).unwrap_or("").trim());
        lines.push(l)
    })?;
    if let Some(path) = flag(args, "--latency-out") {
        let command = format!("latency --tokenizer {latency_tok}");
        let text = crate::latency::document(&command, &lines, &latency);
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
    }

    // 2. Serving and building, side by side, on the same grammar.
    let mut serve_rows = Vec::new();
    let mut scale_rows = Vec::new();
    for tok in &toks {
        for &n in &scales {
            let spec = format!("scale:{n}");
            let ours = run_child("tooldec", &spec, tok, &tmp, &run)?;
            let mut peers = Vec::new();
            for (engine, max) in [("outlines", outlines_max), ("llguidance", llg_max)] {
                if n <= max {
                    peers.push(run_child(engine, &spec, tok, &tmp, &run).unwrap_or_else(
                        |e| json!({"engine": engine, "workload": spec, "error": e}),
                    ));
                }
            }
            let entry = (n == 1000 && tok != "gpt2")
                .then(|| run_child("tooldec-entry", &spec, tok, &tmp, &run))
                .transpose()?;
            scale_rows.push(Scaled {
                tok: tok.clone(),
                label: n.to_string(),
                tools: n,
                ours: ours.clone(),
                peers: peers.clone(),
                entry,
            });
            serve_rows.push((tok.clone(), spec, ours, peers));
        }
        if let Some(n) = distinct {
            let spec = format!("scale-distinct:{n}");
            let ours = run_child("tooldec", &spec, tok, &tmp, &run)?;
            let entry = (tok != "gpt2")
                .then(|| run_child("tooldec-entry", &spec, tok, &tmp, &run))
                .transpose()?;
            scale_rows.push(Scaled {
                tok: tok.clone(),
                label: format!("{n} distinct"),
                tools: n,
                ours: ours.clone(),
                peers: Vec::new(),
                entry,
            });
            serve_rows.push((tok.clone(), spec, ours, Vec::new()));
        }
        // A BFCL multiple set, for the per-set targets.
        let spec = "bfcl:multiple:multiple_0".to_string();
        let ours = run_child("tooldec", &spec, tok, &tmp, &run)?;
        let mut peers = Vec::new();
        for engine in ["outlines", "llguidance"] {
            peers.push(
                run_child(engine, &spec, tok, &tmp, &run)
                    .unwrap_or_else(|e| json!({"engine": engine, "workload": spec, "error": e})),
            );
        }
        serve_rows.push((tok.clone(), spec, ours, peers));
    }

    // 3. Every real tool set; vocabulary loads.
    let sets_toks = list(
        "--families-tokenizers",
        if quick { &toks[0] } else { "llama-3.2" },
    );
    let mut fams = String::new();
    families(&mut fams, &sets_toks, quick)?;
    let loads = vocab_loads(&list(
        "--load-tokenizers",
        if quick {
            "gpt2"
        } else {
            "gpt2,llama-3.2,qwen2.5,gemma-3"
        },
    ))?;

    // 4. XGrammar, in its own Python process.
    let xgr = if xgrammar {
        Some(run_xgrammar(
            &tmp,
            flag(args, "--xgrammar-limit"),
            flag(args, "--xgrammar-out"),
        )?)
    } else {
        None
    };
    let _ = std::fs::remove_dir_all(&tmp);

    // The document.
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks\n");
    let _ = writeln!(
        md,
        "Generated by `TOOLDEC_DATA=../shared/data cargo run --release -p tooldec-bench -- report {}` at commit {commit}.  ",
        args.join(" ")
    );
    header(&mut md);
    let _ = writeln!(md, "{}\n", INTRO.trim());
    targets(&mut md, &latency, &scale_rows, &serve_rows, &loads);
    latency_section(&mut md, &latency_tok, &latency);
    serving_tables(&mut md, &serve_rows, run.walks);
    match &xgr {
        Some(x) => {
            let _ = writeln!(md, "{x}");
        }
        None => {
            let _ = writeln!(
                md,
                "## XGrammar\n\nNot run in this report (`--quick` or `--no-xgrammar`).\n"
            );
        }
    }
    scale_table(&mut md, &scale_rows, svg, run.max_states);
    std::fs::write(
        svg,
        crate::plot::scale_svg(&plot_series(&scale_rows, &latency_tok)),
    )
    .map_err(|e| format!("{svg}: {e}"))?;
    md.push_str(&fams);
    load_table(&mut md, &loads);
    let _ = writeln!(md, "{}", OUTRO.trim());
    match flag(args, "-o") {
        Some(path) => std::fs::write(path, md).map_err(|e| format!("{path}: {e}"))?,
        None => print!("{md}"),
    }
    Ok(())
}

/// One scale row: a tokenizer, a set size and what each engine measured.
struct Scaled {
    tok: String,
    label: String,
    tools: usize,
    ours: Value,
    peers: Vec<Value>,
    /// The `tooldec-entry` child: the default entry alone (for the sizes
    /// the targets read).
    entry: Option<Value>,
}

impl Scaled {
    fn peer(&self, engine: &str) -> Option<&Value> {
        self.peers
            .iter()
            .find(|p| p["engine"] == engine && p.get("error").is_none())
    }
}

const INTRO: &str = "
tooldec against the engines a server would otherwise embed, on the same
machine, in one run, with the same tokenizer and **the same language**:

- **outlines-core** 0.2.14: `Index::new(regex, vocabulary)`, which precomputes
  every state's allowed tokens into hash maps; a mask is served by writing
  the state's allowed ids into the bitmask.
- **llguidance** 1.9.1: a `Matcher` (Earley parser over a lazily built
  lexer DFA) that computes each mask when asked, with no precomputation.
- **XGrammar** 0.2.8, from Python (its engine is C++ behind Python), against
  tooldec's Python binding in the same process (section *XGrammar*).

The Rust peers get our grammar as one regular expression (`tooldec-compile
--print-regex`) and see exactly our token bytes (outlines-core's
`Vocabulary` and llguidance's `TokTrie` are built from the compiler's
vocabulary). Equivalence is checked, not assumed: along every step of the
fixed walks, each peer's mask must equal ours bit for bit (*agrees*;
`bench/tests/peers.rs` checks the same on BFCL sets in CI). Every tooldec
child also checks a known result: its masks along the walks must hash to
the value recorded in `bench/mask-hashes.txt`, so a fast but wrong change
fails the run.

**How things are timed.** Serving is timed at every step of 8 fixed random
walks through the grammar (each ends in a complete call and EOS), one
`Instant` pair per call with the timer's own cost subtracted. tooldec and
outlines-core have no hidden state between calls, so each step is the
median of 5 (3) repeated calls; llguidance builds caches lazily inside its
matcher, so each step is its one call, as a decoder makes it. Each engine
runs alone in a fresh child process, whose peak RSS (`VmHWM`, tokenizer
included) is reported. *build* is tooldec's one-off compile with every mask
precomputed and zstd applied (what `tooldec-compile` does), outlines-core's
`Index::new`, and llguidance's parser creation (it defers its work to the
masks). *first mask* is the time from the tool set to the first mask a
decoder can use: tooldec's `Compiler::start` on a compiler that has
compiled nothing (lowering, determinization, the mask computed on demand
while the rest of the compile would go on elsewhere), llguidance's build
and first mask, outlines-core's build.";

const OUTRO: &str = "
## Not measured here

The criterion micro-benchmarks (`cargo bench -p tooldec-bench`: budgeted
masks, drafts, rollback, jump-forward, batches) are not part of this run;
their figures are in the closing notes of the issues that added them, and
run them on the commit you need.";

/// Where the report's numbers stand against the targets of issue 21, each
/// verdict computed from this run.
fn targets(
    md: &mut String,
    lat: &crate::latency::Run,
    scale: &[Scaled],
    serve: &[(String, String, Value, Vec<Value>)],
    loads: &[(String, usize, f64)],
) {
    let _ = writeln!(md, "## Targets of issue 21, against this run\n");
    let _ = writeln!(
        md,
        "| target | measured (this run, 2 cores) | |\n|---|---|---|"
    );
    let verdict = |ok: bool| if ok { "met" } else { "**missed**" };
    let mut row = |what: &str, measured: String, ok: bool| {
        let _ = writeln!(md, "| {what} | {measured} | {} |", verdict(ok));
    };
    let n = lat.rows.len();
    if n > 0 {
        let new = lat.ratio(|r| r.new);
        let ahead = lat.rows.iter().filter(|r| r.new < r.llg).count();
        row(
            "time to first mask of a new BFCL set ≤ llguidance's build + first mask",
            format!(
                "median {} against {} ({new:.2}×), ahead on {ahead} of {n} sets",
                secs(crate::latency::median(
                    lat.rows.iter().map(|r| r.new).collect()
                )),
                secs(crate::latency::median(
                    lat.rows.iter().map(|r| r.llg).collect()
                ))
            ),
            new <= 1.0,
        );
        let full = crate::latency::median(lat.rows.iter().map(|r| r.new_full).collect());
        let within = lat.rows.iter().filter(|r| r.new_full <= 0.020).count();
        row(
            "every mask precomputed (full artifact) ≤ 20 ms, of the entry a request starts at",
            format!(
                "median {} for a new set, within 20 ms on {within} of {n} sets; cold {}",
                secs(full),
                secs(crate::latency::median(
                    lat.rows.iter().map(|r| r.cold_full).collect()
                ))
            ),
            full <= 0.020,
        );
        let same = crate::latency::median(lat.rows.iter().map(|r| r.same).collect());
        row(
            "tools seen before: first mask ≤ 1 ms",
            format!(
                "the same set again: median {}; a set sharing only some tools is a new set (above)",
                secs(same)
            ),
            same <= 0.001,
        );
    }
    let scale_of = |label: &str| {
        scale
            .iter()
            .filter(|s| s.label == label && s.tok != "gpt2")
            .map(|s| (s.tok.as_str(), &s.ours))
            .collect::<Vec<_>>()
    };
    // The same sizes compiled as an engine adapter compiles a request:
    // the format's default entry alone (the `tooldec-entry` child).
    let entry_of = |label: &str| {
        scale
            .iter()
            .filter(|s| s.label == label && s.tok != "gpt2")
            .filter_map(|s| Some((s.tok.as_str(), s.entry.as_ref()?)))
            .collect::<Vec<_>>()
    };
    let entry_name = |rows: &[(&str, &Value)]| {
        rows.first()
            .and_then(|(_, v)| v["entry"].as_str())
            .unwrap_or("?")
            .to_string()
    };
    let at = |rows: &[(&str, &Value)], k: &str, unit: fn(f64) -> String| {
        rows.iter()
            .map(|(t, v)| format!("{} {t}", unit(f(v, k))))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let worst = |rows: &[(&str, &Value)], k: &str| {
        rows.iter().map(|(_, v)| f(v, k)).fold(f64::NAN, f64::max)
    };
    // Compile targets are read on an engine's compile (`Compiler::compile`:
    // in memory, validated, ready to serve); the CLI's, which also
    // compresses with zstd 9 for the file, is shown beside it.
    // Every entry of the format (what `tooldec-compile` builds by default),
    // then the default entry alone (what an engine adapter builds for a
    // request): each against the targets.
    let variants = |label: &str| {
        let one = entry_of(label);
        let name = entry_name(&one);
        [
            (scale_of(label), "every entry".to_string(), String::new()),
            (
                one,
                "one entry, as an engine request compiles it".to_string(),
                format!("entry `{name}` alone; "),
            ),
        ]
    };
    for (k1, which, alone) in variants("1000") {
        if k1.is_empty() {
            continue;
        }
        row(
            &format!("1,000 distinct tools ≤ 1 s (all cores), {which}"),
            format!(
                "engine {} ({alone}CLI with zstd: {})",
                at(&k1, "engine_s", secs),
                at(&k1, "build_s", secs)
            ),
            worst(&k1, "engine_s") <= 1.0,
        );
    }
    for (k10, which, alone) in variants("10000 distinct") {
        if k10.is_empty() {
            continue;
        }
        let (fast, small) = (
            worst(&k10, "engine_s") <= 10.0,
            worst(&k10, "peak_rss") <= GIB,
        );
        row(
            &format!("10,000 distinct tools ≤ 10 s, peak ≤ 1 GiB, {which}"),
            format!(
                "engine {} ({alone}CLI with zstd: {}): {}; peak {}: {}",
                at(&k10, "engine_s", secs),
                at(&k10, "build_s", secs),
                part(fast),
                at(&k10, "peak_rss", |b| format!(
                    "{} ({:.3} GiB)",
                    bytes(b),
                    b / GIB
                )),
                part(small)
            ),
            fast && small,
        );
        let (small, quick) = (
            worst(&k10, "memory_bytes") <= 50e6,
            worst(&k10, "validate_s") <= 0.020,
        );
        // Only the every-entry child opens its .tdm file.
        let file = if k10.iter().all(|(_, v)| v.get("load_s").is_some()) {
            format!(
                "; opening the .tdm file (zstd) {}",
                at(&k10, "load_s", secs)
            )
        } else {
            String::new()
        };
        row(
            &format!("in-memory artifact for 10,000 distinct tools ≤ 50 MB, load ≤ 20 ms, {which}"),
            format!(
                "{}: {}; load (validate in memory) {}: {}{file}",
                at(&k10, "memory_bytes", bytes),
                part(small),
                at(&k10, "validate_s", secs),
                part(quick)
            ),
            small && quick,
        );
    }
    let big: Vec<&(String, usize, f64)> = loads.iter().filter(|l| l.1 >= 128_000).collect();
    if !big.is_empty() {
        row(
            "tokenizer.json vocabulary load ≤ 200 ms (128k–262k tokens)",
            big.iter()
                .map(|(t, n, s)| format!("{} {t} ({n} tokens)", secs(*s)))
                .collect::<Vec<_>>()
                .join(", "),
            big.iter().all(|l| l.2 <= 0.200),
        );
    }
    let ours128: Vec<&Value> = serve
        .iter()
        .filter(|(t, ..)| t != "gpt2")
        .map(|(_, _, v, _)| v)
        .collect();
    if !ours128.is_empty() {
        let most = |which: &str, k: &str| {
            ours128
                .iter()
                .map(|v| ns(v, which, k))
                .fold(f64::NAN, f64::max)
        };
        let (fm, fx, am) = (
            most("fill", "median_ns"),
            most("fill", "max_ns"),
            most("accept", "median_ns"),
        );
        row(
            "serving at 128k+ tokens: fill median ≤ 150 ns, max ≤ 1 µs",
            format!(
                "worst workload: median {}: {}, max {}: {}{}",
                nanos(fm),
                part(fm <= 150.0),
                nanos(fx),
                part(fx <= 1000.0),
                floor_note(&ours128, fm)
            ),
            fm <= 150.0 && fx <= 1000.0,
        );
        row(
            "`accept_token` ≤ 50 ns median at 128k+ tokens",
            format!("worst workload: {}", nanos(am)),
            am <= 50.0,
        );
    }
    let _ = writeln!(md);
}

/// What the worst fill median's workload measured of this machine's own
/// floor (`stats::mask_floor`): a missed fill target reads differently when
/// writing the mask's words alone takes most of it.
fn floor_note(ours: &[&Value], fill_median: f64) -> String {
    let Some(v) = ours
        .iter()
        .find(|v| ns(v, "fill", "median_ns") == fill_median)
    else {
        return String::new();
    };
    let f = &v["mask_floor"];
    match (f["words"].as_u64(), f["write_ns"].as_f64(), f["copy_ns"].as_f64()) {
        (Some(w), Some(write), Some(copy)) => format!(
            " (in the same process this machine writes that mask's {w} words ({}) in {} and copies them from cache in {}: no fill of a dense mask beats the copy)",
            bytes((w * 4) as f64),
            nanos(write),
            nanos(copy)
        ),
        _ => String::new(),
    }
}

/// One column of the latency table: seconds from a row.
type Column = fn(&crate::latency::Row) -> f64;

/// The latency run, summarized: quantiles of each column over the sets.
fn latency_section(md: &mut String, tok: &str, lat: &crate::latency::Run) {
    let _ = writeln!(md, "## Time to first mask for a new tool set\n");
    let _ = writeln!(
        md,
        "Every BFCL `multiple` and `parallel_multiple` set ({} sets), tokenizer `{tok}`, format `hermes` (its default entry `start` alone, as an engine adapter \
         compiles the entry a request starts at, and the language llguidance builds), one process that loaded the vocabulary once \
         (`tooldec-bench latency`; `LATENCY.md` lists every set). *cold*: a `Compiler` whose caches were just emptied; *new set*: the set compiled for the first time \
         by a compiler that compiled the sets before it (a server's ordinary case); *same set*: the set sent again; *first mask*: `Compiler::start`, then the first \
         mask computed on demand; *full*: the artifact with every mask precomputed; *llguidance*: its parser built on the same grammar, then its first mask. \
         The early, the artifact's and llguidance's first masks are checked equal.\n",
        lat.rows.len()
    );
    let cols: [(&str, Column); 6] = [
        ("cold first mask", |r| r.cold),
        ("cold full", |r| r.cold_full),
        ("new set first mask", |r| r.new),
        ("new set full", |r| r.new_full),
        ("same set", |r| r.same),
        ("llguidance build + first mask", |r| r.llg),
    ];
    let _ = write!(md, "| |");
    for (name, _) in &cols {
        let _ = write!(md, " {name} |");
    }
    let _ = writeln!(md, "\n|---|{}", "---:|".repeat(cols.len()));
    for (q, name) in [(0.5, "median"), (0.9, "p90"), (1.0, "max")] {
        let _ = write!(md, "| {name} |");
        for (_, get) in &cols {
            let mut v: Vec<f64> = lat.rows.iter().map(get).collect();
            v.sort_by(f64::total_cmp);
            let x = v
                .get(((v.len() as f64 - 1.0) * q).round() as usize)
                .copied();
            let _ = write!(md, " {} |", x.map_or("–".into(), secs));
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "\n`{}`\n", lat.summary());
}

/// Each tokenizer's `tokenizer.json` read into a vocabulary, in this
/// process: (name, tokens, median seconds of 3 loads).
fn vocab_loads(toks: &[String]) -> Result<Vec<(String, usize, f64)>, String> {
    toks.iter()
        .map(|tok| {
            let mut times = Vec::new();
            let mut n = 0;
            for _ in 0..3 {
                let t = Instant::now();
                let v = load_vocab(tok).map_err(|e| format!("{tok}: {e}"))?;
                times.push(t.elapsed().as_secs_f64());
                n = v.len();
            }
            Ok((tok.clone(), n, crate::latency::median(times)))
        })
        .collect()
}

fn load_table(md: &mut String, loads: &[(String, usize, f64)]) {
    let _ = writeln!(md, "## Vocabulary loads\n");
    let _ = writeln!(
        md,
        "`Vocab::from_tokenizer_json` (token bytes and kinds only, no merges), median of 3 loads in one process, the file in the page cache.\n"
    );
    let _ = writeln!(md, "| tokenizer | tokens | load |\n|---|---:|---:|");
    for (tok, n, s) in loads {
        let _ = writeln!(md, "| {tok} | {n} | {} |", secs(*s));
    }
    let _ = writeln!(md);
}

/// Runs `bench/python/run-xgrammar.sh` and returns its summary as a
/// section of this report (its whole output goes to `keep` if given).
fn run_xgrammar(tmp: &Path, limit: Option<&str>, keep: Option<&str>) -> Result<String, String> {
    let out = tmp.join("xgrammar.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut cmd = Command::new("bash");
    cmd.current_dir(&root)
        .arg("bench/python/run-xgrammar.sh")
        .arg("--out")
        .arg(&out);
    if let Some(n) = limit {
        cmd.args(["--limit", n]);
    }
    eprintln!("xgrammar: bench/python/run-xgrammar.sh");
    let status = cmd
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("bench/python/run-xgrammar.sh: {e}"))?;
    if !status.success() {
        return Err(format!(
            "bench/python/run-xgrammar.sh failed ({status}); --no-xgrammar leaves XGrammar out"
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    if let Some(path) = keep {
        std::fs::write(path, &text).map_err(|e| format!("{path}: {e}"))?;
    }
    xgrammar_section(&text)
}

/// The setup lines and the summary of XGrammar's report, its headings one
/// level down.
fn xgrammar_section(text: &str) -> Result<String, String> {
    let summary = text
        .split_once("## Summary\n")
        .map(|(_, rest)| rest.split("\n## ").next().unwrap_or(rest))
        .ok_or("the XGrammar report has no summary")?;
    // The lines under its title: machine, versions, tokenizer, duration.
    let setup: Vec<&str> = text
        .lines()
        .skip(1)
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| !l.starts_with("Generated by"))
        .collect();
    Ok(format!(
        "## XGrammar, in one Python process\n\n`bench/python/run-xgrammar.sh` (`bench/python/README.md` says what it measures; \
         the per-set tables are in its own report): XGrammar's `GrammarCompiler` on our grammar's regular expression and on its own \
         Hermes structural tag, against tooldec's Python binding, on every BFCL `multiple` and `parallel_multiple` set with Llama-3.2, \
         the same token sequences fed to both.\n\n{}\n\n{}\n",
        setup.join("\n"),
        summary.trim()
    ))
}

/// The plot's lines: per engine, (tools, seconds) for `tok`'s scale sets.
fn plot_series(rows: &[Scaled], tok: &str) -> crate::plot::Chart {
    let rows: Vec<&Scaled> = rows
        .iter()
        .filter(|r| r.tok == tok && !r.label.contains(' '))
        .collect();
    let line = |name: &str, get: &dyn Fn(&Scaled) -> f64| crate::plot::Series {
        name: name.to_string(),
        points: rows
            .iter()
            .map(|r| (r.tools as f64, get(r)))
            .filter(|p| p.1.is_finite() && p.1 > 0.0)
            .collect(),
    };
    let peer = |r: &Scaled, e: &str, k: &str| r.peer(e).map_or(f64::NAN, |v| f(v, k));
    crate::plot::Chart {
        title: format!(
            "Build time and time to first mask against tool count ({tok}, ReAct grammar)"
        ),
        series: vec![
            line("tooldec: every mask precomputed (build)", &|r| {
                f(&r.ours, "build_s")
            }),
            line("tooldec: first mask (Compiler::start, cold)", &|r| {
                f(&r.ours, "first_mask_s")
            }),
            line("llguidance: build + first mask", &|r| {
                peer(r, "llguidance", "first_mask_s")
            }),
            line("outlines-core: build (every mask)", &|r| {
                peer(r, "outlines", "build_s")
            }),
        ],
    }
}

fn header(md: &mut String) {
    let _ = writeln!(md, "{}  ", machine());
    let _ = writeln!(
        md,
        "Engines: tooldec {}, outlines-core 0.2.14 (`Index::new`), llguidance 1.9.1 (`Matcher`), all built in this run with `--release`; XGrammar 0.2.8 from PyPI.\n",
        env!("CARGO_PKG_VERSION")
    );
}

/// The commit the working tree is at, and whether its code has changes
/// (documents, plots and recorded results aside).
pub fn commit() -> String {
    const GENERATED: [&str; 3] = [
        ":(exclude)*.md",
        ":(exclude)*.svg",
        ":(exclude)eval/*.jsonl",
    ];
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    // A run that resumes rewrites its own results and reports, and
    // documents change around it: none of that makes the code it
    // measures another.
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--", "."];
    status.extend(GENERATED.iter().map(|g| &**g));
    match (git(&["rev-parse", "--short", "HEAD"]), git(&status)) {
        (Some(c), Some(changes)) if changes.is_empty() => format!("`{c}`"),
        (Some(c), Some(_)) => format!("`{c}` with uncommitted changes"),
        _ => "unknown (not a git checkout)".to_string(),
    }
}

/// One line naming the CPU, cores, memory and compiler.
pub(crate) fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .next()
                .map(|l| l.split_whitespace().nth(1).unwrap_or("0").to_string())
        })
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or("?".into(), |kb| format!("{:.0} GiB", kb / 1048576.0));
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!("Machine: {cpu}, {cores} cores, {mem} RAM; {rustc}.")
}

/// Per tokenizer, the least of what its tooldec children measured of
/// writing and copying one mask (`stats::mask_floor`).
fn floor_lines(md: &mut String, rows: &[(String, String, Value, Vec<Value>)]) {
    let mut toks: Vec<(&str, u64, f64, f64)> = Vec::new();
    for (tok, _, ours, _) in rows {
        let f = &ours["mask_floor"];
        let (Some(w), Some(write), Some(copy)) = (
            f["words"].as_u64(),
            f["write_ns"].as_f64(),
            f["copy_ns"].as_f64(),
        ) else {
            continue;
        };
        match toks.iter_mut().find(|t| t.0 == tok) {
            Some(t) => (t.2, t.3) = (t.2.min(write), t.3.min(copy)),
            None => toks.push((tok, w, write, copy)),
        }
    }
    if toks.is_empty() {
        return;
    }
    let each: Vec<String> = toks
        .iter()
        .map(|(t, w, write, copy)| {
            format!(
                "{t} ({w} words): written in {}, copied in {}",
                nanos(*write),
                nanos(*copy)
            )
        })
        .collect();
    let _ = writeln!(
        md,
        "\nThe floor of a fill on this machine, measured in the same children: one mask's words written by `memset` and copied from a buffer in cache (medians of 2,001 calls, the least over the workloads). A dense mask's fill is such a copy. {}.",
        each.join("; ")
    );
}

fn serving_tables(md: &mut String, rows: &[(String, String, Value, Vec<Value>)], n_walks: usize) {
    let _ = writeln!(md, "## Serving: per-call times along the same walks\n");
    let _ = writeln!(
        md,
        "Each row is one grammar (our ReAct grammar over the tool set; the peers get its regular expression) and one tokenizer. \
         Times are per call over every step of {} fixed random walks through the grammar; \
         tooldec and outlines-core steps are the median of repeated calls, llguidance's the one call decoding makes. \
         *agrees*: the peer's mask equals ours at every step of the walks. \
         *build*: tooldec's full compile (all masks precomputed), outlines-core's `Index::new`, llguidance's parser creation (it computes lazily, during the masks).\n",
        n_walks
    );
    let _ = writeln!(
        md,
        "| tokenizer | workload | engine | build | peak RSS | fill median | fill p99 | fill max | accept median | accept p99 | agrees | mask hash |"
    );
    let _ = writeln!(
        md,
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
    );
    for (tok, spec, ours, peers) in rows {
        let line = |v: &Value| -> String {
            if let Some(e) = v.get("error") {
                return format!(
                    "| {tok} | {spec} | {} | failed: {} | | | | | | | | |",
                    v["engine"].as_str().unwrap_or("?"),
                    e.as_str().unwrap_or("?").replace('|', "/")
                );
            }
            format!(
                "| {tok} | {spec} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                v["engine"].as_str().unwrap_or("?"),
                secs(f(v, "build_s")),
                bytes(f(v, "peak_rss")),
                nanos(ns(v, "fill", "median_ns")),
                nanos(ns(v, "fill", "p99_ns")),
                nanos(ns(v, "fill", "max_ns")),
                nanos(ns(v, "accept", "median_ns")),
                nanos(ns(v, "accept", "p99_ns")),
                v.get("agrees")
                    .and_then(Value::as_str)
                    .unwrap_or("(reference)"),
                v.get("mask_hash").and_then(Value::as_str).unwrap_or(""),
            )
        };
        let _ = writeln!(md, "{}", line(ours));
        for p in peers {
            let _ = writeln!(md, "{}", line(p));
        }
    }
    floor_lines(md, rows);
    let _ = writeln!(md, "\n### Ratios (peer ÷ tooldec, same run)\n");
    let _ = writeln!(
        md,
        "| tokenizer | workload | peer | build | fill median | fill p99 | fill max | accept median |"
    );
    let _ = writeln!(md, "|---|---|---|---:|---:|---:|---:|---:|");
    for (tok, spec, ours, peers) in rows {
        for p in peers {
            if p.get("error").is_some() {
                continue;
            }
            let _ = writeln!(
                md,
                "| {tok} | {spec} | {} | {} | {} | {} | {} | {} |",
                p["engine"].as_str().unwrap_or("?"),
                ratio(f(p, "build_s"), f(ours, "build_s")),
                ratio(ns(p, "fill", "median_ns"), ns(ours, "fill", "median_ns")),
                ratio(ns(p, "fill", "p99_ns"), ns(ours, "fill", "p99_ns")),
                ratio(ns(p, "fill", "max_ns"), ns(ours, "fill", "max_ns")),
                ratio(
                    ns(p, "accept", "median_ns"),
                    ns(ours, "accept", "median_ns")
                ),
            );
        }
    }
    let _ = writeln!(md, "\n### Index sizes\n");
    let _ = writeln!(
        md,
        "| tokenizer | workload | tooldec on disk | tooldec in memory | tooldec open (.tdm) | tooldec validate (in memory) | outlines-core serialized | outlines-core transitions | outlines-core deserialize | size ratio |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (tok, spec, ours, peers) in rows {
        let o = peers
            .iter()
            .find(|p| p["engine"] == "outlines" && p.get("error").is_none());
        let (ob, ot, ol) = o.map_or((f64::NAN, f64::NAN, f64::NAN), |o| {
            (f(o, "disk_bytes"), f(o, "transitions"), f(o, "load_s"))
        });
        let _ = writeln!(
            md,
            "| {tok} | {spec} | {} | {} | {} | {} | {} | {} | {} | {} |",
            bytes(f(ours, "disk_bytes")),
            bytes(f(ours, "memory_bytes")),
            secs(f(ours, "load_s")),
            secs(f(ours, "validate_s")),
            bytes(ob),
            if ot.is_nan() {
                "–".into()
            } else {
                format!("{ot:.0}")
            },
            secs(ol),
            ratio(ob, f(ours, "disk_bytes")),
        );
    }
    let _ = writeln!(md);
}

fn scale_table(md: &mut String, rows: &[Scaled], svg: &str, max_states: usize) {
    let _ = writeln!(md, "## Scale: 10 to 10,000 tools\n");
    let _ = writeln!(
        md,
        "Scale sets: the first N distinct real tools (ToolBench APIs, then BFCL functions; renamed copies past the pool of {} tools, \
         which keep their parameter schemas; *distinct*: the copies' parameters renamed too, so that every argument machine differs). \
         Every compile here runs with `--max-states {max_states}`.\n",
        workloads::pool().len()
    );
    let _ = writeln!(
        md,
        "![Build time and time to first mask against tool count]({svg})\n"
    );
    let _ = writeln!(
        md,
        "Time to a first mask, and to every mask, per engine (seconds from the parsed tool set). \
         *tooldec build (engine)*: `Compiler::compile` of a compiler made beforehand for the vocabulary, \
         for a set it has not seen: every mask precomputed, the artifact validated in memory and ready to serve (no zstd). \
         *tooldec build (CLI)*: `compile`, as `tooldec-compile` runs it, the token trie built and the artifact compressed (zstd 9) for a file.\n"
    );
    let _ = writeln!(
        md,
        "| tokenizer | tools | tooldec first mask | tooldec build (engine) | tooldec build (CLI) | llguidance build + first mask | outlines-core build | first mask: llguidance ÷ tooldec |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let peer = |e: &str, k: &str| r.peer(e).map_or(f64::NAN, |v| f(v, k));
        let failed = |e: &str| {
            r.peers
                .iter()
                .any(|p| p["engine"] == e && p.get("error").is_some())
        };
        let cell = |e: &str, k: &str| {
            if failed(e) {
                "failed".to_string()
            } else {
                secs(peer(e, k))
            }
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.tok,
            r.label,
            secs(f(&r.ours, "first_mask_s")),
            secs(f(&r.ours, "engine_s")),
            secs(f(&r.ours, "build_s")),
            cell("llguidance", "first_mask_s"),
            cell("outlines", "build_s"),
            ratio(
                peer("llguidance", "first_mask_s"),
                f(&r.ours, "first_mask_s")
            ),
        );
    }
    let _ = writeln!(
        md,
        "\nCompile includes lowering, determinization, minimization, crossing with the vocabulary and zstd (level 9); \
         the tokenizer's own loading is not included. Peak RSS is the compiling process's, tokenizer included.\n"
    );
    let _ = writeln!(
        md,
        "| tokenizer | tools | compile | per tool | peak RSS | NFA states | DFA states | minimized | masks | on disk | in memory | load |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let v = &r.ours;
        let b = f(v, "build_s");
        let tools = f(v, "tools");
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.tok,
            r.label,
            secs(b),
            secs(b / tools),
            bytes(f(v, "peak_rss")),
            f(v, "nfa_states"),
            f(v, "dfa_states"),
            f(v, "min_states"),
            f(v, "masks"),
            bytes(f(v, "disk_bytes")),
            bytes(f(v, "memory_bytes")),
            secs(f(v, "load_s")),
        );
    }
    let _ = writeln!(md, "\nPhases (seconds):\n");
    let _ = writeln!(
        md,
        "| tokenizer | tools | lower | determinize | minimize | cross | write |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let p = |k: &str| {
            r.ours["phases"]
                .get(k)
                .and_then(Value::as_f64)
                .map_or("–".into(), secs)
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.tok,
            r.label,
            p("lower"),
            p("determinize"),
            p("minimize"),
            p("cross"),
            p("write")
        );
    }
    let _ = writeln!(md);
}

/// Compiles every BFCL multiple / parallel_multiple line and every ToolBench
/// api_list with each tokenizer: time and size distributions, and refusals.
fn families(md: &mut String, toks: &[String], quick: bool) -> Result<(), String> {
    let _ = writeln!(md, "## Every real tool set\n");
    let _ = writeln!(
        md,
        "Each BFCL `multiple` and `parallel_multiple` line and each ToolBench test query's api_list, compiled in this process \
         (tokenizer loaded once). *refused*: sets the compiler rejects with an error.\n"
    );
    let _ = writeln!(
        md,
        "| tokenizer | family | sets | refused | compile median | compile max | artifact median | artifact max |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|");
    for tok in toks {
        let vocab = load_vocab(tok).map_err(|e| e.to_string())?;
        let fams: Vec<(&str, Vec<Workload>)> = vec![
            ("BFCL multiple", workloads::bfcl("multiple")),
            (
                "BFCL parallel_multiple",
                workloads::bfcl("parallel_multiple"),
            ),
            ("ToolBench api_lists", workloads::toolbench()),
        ];
        for (fam, sets) in fams {
            let sets: Vec<Workload> = if quick {
                sets.into_iter().step_by(10).collect()
            } else {
                sets
            };
            let mut times = Vec::new();
            let mut sizes = Vec::new();
            let mut refused = 0;
            for w in &sets {
                let set = w.spec();
                match ours::build(&set, &vocab) {
                    Ok(b) => {
                        times.push(b.compile.as_secs_f64());
                        sizes.push(b.artifact.len() as f64);
                    }
                    Err(e) => {
                        refused += 1;
                        eprintln!("  refused {}: {e}", w.name);
                    }
                }
            }
            eprintln!("  {fam} / {tok}: {} sets", sets.len());
            let t = Summary::of(times);
            let s = Summary::of(sizes);
            let _ = writeln!(
                md,
                "| {tok} | {fam} | {} | {refused} | {} | {} | {} | {} |",
                sets.len(),
                secs(t.median),
                secs(t.max),
                bytes(s.median),
                bytes(s.max)
            );
        }
    }
    let _ = writeln!(md);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_xgrammar_section_keeps_its_setup_and_summary() {
        let text = "# XGrammar and tooldec in one Python process\n\n\
            Generated by `bash bench/python/run-xgrammar.sh` at commit `abc`.  \n\
            Python 3.11, xgrammar 0.2.8.  \n\nProse.\n\n## Setup\n\n| step | time |\n\n\
            ## Summary\n\nRatios below 1: tooldec is faster.\n\n| | tooldec |\n|---|---:|\n| fill | 2 µs |\n\n\
            ## Per set: compile and first mask\n\n| set |\n";
        let s = xgrammar_section(text).unwrap();
        assert!(s.contains("Python 3.11, xgrammar 0.2.8."), "{s}");
        assert!(!s.contains("Generated by"), "{s}");
        assert!(s.contains("| fill | 2 µs |"), "{s}");
        assert!(!s.contains("Per set"), "{s}");
        assert!(xgrammar_section("# no summary\n").is_err());
    }

    fn child_json(fill: f64, floor: bool) -> Value {
        let mut v = json!({"engine": "tooldec", "fill": {"median_ns": fill}});
        if floor {
            v["mask_floor"] = json!({"words": 4008, "write_ns": 140.0, "copy_ns": 171.0});
        }
        v
    }

    #[test]
    fn the_fill_target_names_the_floor_of_the_worst_workload() {
        let (slow, fast) = (child_json(371.0, true), child_json(90.0, false));
        let note = floor_note(&[&fast, &slow], 371.0);
        assert!(note.contains("4008 words (16 KB) in 140 ns"), "{note}");
        assert!(note.contains("from cache in 171 ns"), "{note}");
        // The worst workload measured no floor: no note, rather than
        // another workload's.
        assert_eq!(floor_note(&[&fast, &slow], 90.0), "");
        assert_eq!(floor_note(&[&fast], 371.0), "");
    }

    #[test]
    fn the_floor_line_keeps_the_least_per_tokenizer() {
        let mut md = String::new();
        let mut other = child_json(300.0, true);
        other["mask_floor"]["copy_ns"] = json!(150.0);
        let rows = vec![
            (
                "llama".to_string(),
                "a".to_string(),
                child_json(1.0, true),
                vec![],
            ),
            ("llama".to_string(), "b".to_string(), other, vec![]),
            (
                "gpt2".to_string(),
                "c".to_string(),
                child_json(1.0, false),
                vec![],
            ),
        ];
        floor_lines(&mut md, &rows);
        assert!(
            md.contains("llama (4008 words): written in 140 ns, copied in 150 ns."),
            "{md}"
        );
        assert!(!md.contains("gpt2"), "{md}");
        let mut none = String::new();
        floor_lines(&mut none, &rows[2..]);
        assert_eq!(none, "");
    }
}
