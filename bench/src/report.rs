//! The `tooldec-bench` command: scale sets, one-engine child runs, and the
//! markdown report that BENCHMARKS.md is.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};
use tooldec_compiler::Options;

use crate::peers::{llg, outlines};
use crate::stats::{time_engine, Summary};
use crate::workloads::{self, Workload};
use crate::{load_vocab, ours, peak_rss, walks, Engine};

const USAGE: &str = "usage:
  tooldec-bench report [--quick] [--tokenizers a,b] [--scale 10,100,...] [--peer-scale-max N]
                       [--walks N] [--families-tokenizers a,b] [--distinct N]
  tooldec-bench tools N -o FILE
  tooldec-bench child (tooldec|outlines|llguidance) WORKLOAD TOKENIZER DIR [--walks N]
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
    let w = workloads::scale(pool, n);
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
    let dir = PathBuf::from(dir);
    let w = resolve(spec)?;
    let set = w.spec();
    let t = Instant::now();
    let vocab = load_vocab(tok).map_err(|e| e.to_string())?;
    let vocab_s = t.elapsed().as_secs_f64();
    let rss_vocab = peak_rss();
    let mut out = json!({"engine": engine, "workload": spec, "tokenizer": tok,
        "tools": set.tools.len(), "vocab_load_s": vocab_s, "rss_after_vocab": rss_vocab});
    if engine == "tooldec" {
        let built = ours::build(&set, &vocab).map_err(|e| e.to_string())?;
        let peak = peak_rss();
        std::fs::write(dir.join("artifact.tdm"), &built.artifact).map_err(|e| e.to_string())?;
        // Load time: best of 5 (the first includes page faults of the
        // freshly written file's bytes, which a server pays once).
        let mut load_s = f64::MAX;
        for _ in 0..5 {
            let l = ours::load(&built.artifact);
            load_s = load_s.min(l.load.as_secs_f64());
        }
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
        o.insert("phases".into(), Value::Object(phases));
        o.insert("peak_rss".into(), json!(peak));
        o.insert("disk_bytes".into(), json!(r.artifact_bytes));
        o.insert("memory_bytes".into(), json!(r.payload_bytes));
        o.insert("nfa_states".into(), json!(r.nfa_states));
        o.insert("dfa_states".into(), json!(r.dfa_states));
        o.insert("min_states".into(), json!(r.min_states));
        o.insert("masks".into(), json!(r.masks));
        o.insert("load_s".into(), json!(load_s));
        o.insert(
            "steps".into(),
            json!(ws.iter().map(Vec::len).sum::<usize>()),
        );
        o.insert("mask_hash".into(), json!(format!("{hash:016x}")));
        o.insert("fill".into(), summary_json(&fill));
        o.insert("accept".into(), summary_json(&accept));
    } else {
        let bytes = std::fs::read(dir.join("artifact.tdm")).map_err(|e| e.to_string())?;
        let ws: Vec<Vec<u32>> = serde_json::from_slice(
            &std::fs::read(dir.join("walks.json")).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let loaded = ours::load(&bytes);
        let g = loaded.artifact.grammar();
        let rx = tooldec_compiler::regex(&set, &Options::default(), &vocab)
            .map_err(|e| e.to_string())?;
        let o = out.as_object_mut().unwrap();
        o.insert("regex_bytes".into(), json!(rx.len()));
        let mut engine_box: Box<dyn Engine> = match engine.as_str() {
            "outlines" => {
                let v = outlines::vocabulary(&vocab);
                let t = Instant::now();
                let idx = outlines::Outlines::build(&rx, &v)?;
                o.insert("build_s".into(), json!(t.elapsed().as_secs_f64()));
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
                let m = llg::Llg::build(&f, &rx)?;
                o.insert("build_s".into(), json!(t.elapsed().as_secs_f64()));
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

/// Runs `tooldec-bench child ...` and parses its JSON line. With
/// `TOOLDEC_BENCH_RESULTS=FILE`, each result is appended to FILE (JSON
/// lines) and a result already there is reused, so an interrupted report
/// can be resumed.
fn run_child(
    engine: &str,
    spec: &str,
    tok: &str,
    dir: &Path,
    n_walks: usize,
) -> Result<Value, String> {
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
                    run_child_fresh(engine, spec, tok, dir, n_walks)?;
                }
                return Ok(v);
            }
        }
    }
    let v = run_child_fresh(engine, spec, tok, dir, n_walks)?;
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
    n_walks: usize,
) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let t = Instant::now();
    let out = Command::new(exe)
        .args(["child", engine, spec, tok])
        .arg(dir)
        .args(["--walks", &n_walks.to_string()])
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
            "{engine} on {spec}/{tok} failed: {}",
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
    let peer_max: usize = flag(args, "--peer-scale-max")
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 100 } else { 1000 });
    let n_walks: usize = flag(args, "--walks")
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    let tmp = std::env::temp_dir().join(format!("tooldec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;

    let mut md = String::new();
    header(&mut md, args);

    // 1. Serving and building, side by side, on the same grammar.
    let mut serve_rows = Vec::new();
    let mut scale_rows = Vec::new();
    for tok in &toks {
        for &n in &scales {
            let spec = format!("scale:{n}");
            let ours = run_child("tooldec", &spec, tok, &tmp, n_walks)?;
            let mut peers = Vec::new();
            if n <= peer_max {
                for engine in ["outlines", "llguidance"] {
                    match run_child(engine, &spec, tok, &tmp, n_walks) {
                        Ok(v) => peers.push(v),
                        Err(e) => peers.push(json!({"engine": engine, "error": e})),
                    }
                }
            }
            scale_rows.push((tok.clone(), n.to_string(), ours.clone()));
            serve_rows.push((tok.clone(), spec, ours, peers));
        }
        if let Some(n) = flag(args, "--distinct").and_then(|s| s.parse::<usize>().ok()) {
            let spec = format!("scale-distinct:{n}");
            let ours = run_child("tooldec", &spec, tok, &tmp, n_walks)?;
            scale_rows.push((tok.clone(), format!("{n} distinct"), ours.clone()));
            serve_rows.push((tok.clone(), spec, ours, Vec::new()));
        }
        // A BFCL multiple set, for the per-set targets.
        let spec = "bfcl:multiple:multiple_0".to_string();
        let ours = run_child("tooldec", &spec, tok, &tmp, n_walks)?;
        let mut peers = Vec::new();
        for engine in ["outlines", "llguidance"] {
            match run_child(engine, &spec, tok, &tmp, n_walks) {
                Ok(v) => peers.push(v),
                Err(e) => peers.push(json!({"engine": engine, "error": e})),
            }
        }
        serve_rows.push((tok.clone(), spec, ours, peers));
    }
    serving_tables(&mut md, &serve_rows, n_walks);
    scale_table(&mut md, &scale_rows);

    // 2. Every real tool set, ours only (compile time and size).
    let sets_toks = list(
        "--families-tokenizers",
        &if quick {
            toks[0].clone()
        } else {
            toks.join(",")
        },
    );
    families(&mut md, &sets_toks, quick)?;

    let _ = std::fs::remove_dir_all(&tmp);
    print!("{md}");
    Ok(())
}

fn header(md: &mut String, args: &[String]) {
    let _ = writeln!(md, "{}  ", machine());
    let _ = writeln!(
        md,
        "Engines: tooldec {}, outlines-core 0.2.14 (`Index::new`), llguidance 1.9.1 (`Matcher`), all built in this run with `--release`.  ",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(
        md,
        "Command: `TOOLDEC_DATA=../shared/data cargo run --release -p tooldec-bench -- report {}`\n",
        args.join(" ")
    );
}

/// The commit the working tree is at, and whether it has changes.
pub(crate) fn commit() -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match (
        git(&["rev-parse", "--short", "HEAD"]),
        git(&["status", "--porcelain", "--untracked-files=no"]),
    ) {
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
        "| tokenizer | workload | tooldec on disk | tooldec in memory | tooldec load | outlines-core serialized | outlines-core transitions | outlines-core deserialize | size ratio |"
    );
    let _ = writeln!(md, "|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (tok, spec, ours, peers) in rows {
        let o = peers
            .iter()
            .find(|p| p["engine"] == "outlines" && p.get("error").is_none());
        let (ob, ot, ol) = o.map_or((f64::NAN, f64::NAN, f64::NAN), |o| {
            (f(o, "disk_bytes"), f(o, "transitions"), f(o, "load_s"))
        });
        let _ = writeln!(
            md,
            "| {tok} | {spec} | {} | {} | {} | {} | {} | {} | {} |",
            bytes(f(ours, "disk_bytes")),
            bytes(f(ours, "memory_bytes")),
            secs(f(ours, "load_s")),
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

fn scale_table(md: &mut String, rows: &[(String, String, Value)]) {
    let _ = writeln!(md, "## Scale: tooldec compile over 10 to 10,000 tools\n");
    let _ = writeln!(
        md,
        "Scale sets: the first N distinct real tools (ToolBench APIs, then BFCL functions; renamed copies past the pool). \
         Compile includes lowering, determinization, minimization, crossing with the vocabulary and zstd (level 9); \
         the tokenizer's own loading is not included (it is the same for every set). Peak RSS is the compiling process's, tokenizer included.\n"
    );
    let _ = writeln!(
        md,
        "| tokenizer | tools | compile | per tool | peak RSS | NFA states | DFA states | minimized | masks | on disk | in memory | load |"
    );
    let _ = writeln!(
        md,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (tok, n, v) in rows {
        let b = f(v, "build_s");
        let tools = f(v, "tools");
        let _ = writeln!(
            md,
            "| {tok} | {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
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
    for (tok, n, v) in rows {
        let p = |k: &str| {
            v["phases"]
                .get(k)
                .and_then(Value::as_f64)
                .map_or("–".into(), secs)
        };
        let _ = writeln!(
            md,
            "| {tok} | {n} | {} | {} | {} | {} | {} |",
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
         (tokenizer loaded once). *refused*: sets the compiler rejects with an error (schema features it does not build yet, such as `format`, `maximum` or type `any`; issue 6).\n"
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
