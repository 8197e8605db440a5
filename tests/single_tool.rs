//! One-tool matchers (`Grammar::matcher_for_tool`, OpenAI's `tool_choice`
//! naming a function), served from the same artifact as the full grammar.
//!
//! - Random masked walks of a one-tool matcher end in outputs whose calls
//!   (read by `tooldec_testkit::parsers`, written apart from the grammars)
//!   all name that tool; every tool's call is reached; under a budget every
//!   walk completes within it.
//! - Ground truth: the same format compiled with that tool alone. Outputs
//!   of the one-tool matcher are accepted by that artifact, and its
//!   outputs by the one-tool matcher (byte by byte and token by token).
//! - Formats hermes, json, react on the weather tools (GPT-2), and a set of
//!   names that are prefixes of one another (`a`, `ab`, `abc`, `get`,
//!   `get_weather`) in react (bare names) and hermes (JSON names).
//! - With `TOOLDEC_DATA`, the same on BFCL tools with Qwen2.5's tokenizer.

use serde_json::{json, Value};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::{Artifact, Grammar, Matcher};
use tooldec_testkit::alloc::{allocs, Counting};
use tooldec_testkit::parsers;
use tooldec_testkit::walk::{seed, SplitMix64, Walker};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn weather() -> spec::ToolSet {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Tools whose names are prefixes of one another; `a` and `abc` share a
/// schema, `ab` has none, the others differ.
fn prefixes() -> spec::ToolSet {
    let s = |props: Value| json!({"type": "object", "properties": props});
    let tools = json!([
        {"type": "function", "function": {"name": "a", "parameters": s(json!({"x": {"type": "integer"}}))}},
        {"type": "function", "function": {"name": "ab", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "abc", "parameters": s(json!({"x": {"type": "integer"}}))}},
        {"type": "function", "function": {"name": "get", "parameters": s(json!({"q": {"type": "string", "maxLength": 3}}))}},
        {"type": "function", "function": {"name": "get_weather", "parameters": s(json!({"city": {"type": "string", "enum": ["Paris", "Oslo"]}}))}},
    ]);
    spec::parse("prefixes.json", &tools.to_string()).unwrap()
}

fn build(set: &spec::ToolSet, format: &str, vocab: &Vocab) -> Artifact {
    let opts = Options {
        format: CallFormat::load(format).unwrap(),
        ..Options::default()
    };
    let out = compile(set, vocab, &opts, &mut |_| {}).unwrap_or_else(|e| panic!("{format}: {e}"));
    Artifact::from_bytes(&out.artifact).unwrap()
}

/// `set` with only tool `i`.
fn only(set: &spec::ToolSet, i: usize) -> spec::ToolSet {
    let mut one = set.clone();
    one.tools = vec![set.tools[i].clone()];
    one
}

fn text_of(g: &Grammar<'_>, tokens: &[u32]) -> String {
    let mut bytes = Vec::new();
    for &t in tokens {
        if !g.is_eos(t) {
            bytes.extend_from_slice(g.token_bytes(t).unwrap_or_default());
        }
    }
    String::from_utf8(bytes).expect("outputs are UTF-8")
}

/// Whether `m` accepts `text` as a whole output, byte by byte.
fn accepts(mut m: Matcher<'_>, text: &str) -> bool {
    m.accept_bytes(text.as_bytes()) && m.is_accepting()
}

/// Whether `m` accepts `tokens` (EOS included) token by token.
fn accepts_tokens(mut m: Matcher<'_>, tokens: &[u32]) -> bool {
    m.accept_tokens(tokens) == tokens.len() && m.is_accepting()
}

const WALKS: usize = 40;

/// Walks every tool's matcher at every entry the parsers read, budgeted
/// and not, and checks the outputs against the parsers and against the
/// artifact compiled for that tool alone.
fn check(set: &spec::ToolSet, format: &str, vocab: &Vocab, walks: usize) {
    let a = build(set, format, vocab);
    let g = a.grammar();
    assert_eq!(g.tool_count() as usize, set.tools.len(), "{format}");
    let entries: Vec<String> = g.entries().map(|(n, _)| n.to_string()).collect();
    let mut walker = Walker::new(&g, g.token_count());
    for (i, tool) in set.tools.iter().enumerate() {
        let t = g.tool_index(&tool.name).expect("every tool is named");
        assert_eq!(t as usize, i);
        let alone = build(&only(set, i), format, vocab);
        let ga = alone.grammar();
        let mut walker_alone = Walker::new(&ga, ga.token_count());
        for entry in &entries {
            let Some(parse) = parsers::parser_for(format, entry) else {
                continue;
            };
            let label = format!("{format} entry {entry} tool {}", tool.name);
            let unrestricted = g.matcher_at(entry).unwrap();
            let need = g.matcher_for_tool(Some(entry), t, None).unwrap();
            let min = {
                // The fewest tokens this tool's outputs take: the smallest
                // budget accepted.
                let mut lo = g.distance(unrestricted.state().unwrap()).unwrap();
                while g.matcher_for_tool(Some(entry), t, Some(lo)).is_err() {
                    lo += 1;
                    assert!(lo < 10_000, "{label}: no budget fits");
                }
                assert!(
                    lo == 0 || g.matcher_for_tool(Some(entry), t, Some(lo - 1)).is_err(),
                    "{label}"
                );
                lo
            };
            let mut called = false;
            for w in 0..walks {
                let mut rng = SplitMix64::new(seed(&label, w as u64, 1));
                let budget = (w % 3 == 0).then(|| min + rng.below(8) as u32);
                let m = if budget.is_some() {
                    g.matcher_for_tool(Some(entry), t, budget).unwrap()
                } else {
                    need
                };
                let tokens = walker
                    .walk_from(&mut rng, 2_000, m)
                    .unwrap_or_else(|e| panic!("{label}: walk {w}: {}", e.message));
                if let Some(b) = budget {
                    assert!(
                        tokens.len() <= b as usize + 1,
                        "{label}: {} tokens under a budget of {b}",
                        tokens.len()
                    );
                }
                let text = text_of(&g, &tokens);
                let calls = parse(&text).unwrap_or_else(|e| panic!("{label}: {e}: {text:?}"));
                for (name, _) in &calls {
                    assert_eq!(name, &tool.name, "{label}: {text:?}");
                }
                called |= !calls.is_empty();
                // Ground truth: the tool alone accepts it, and the full
                // grammar too.
                let ma = ga.matcher_at(entry).unwrap();
                assert!(accepts(ma, &text), "{label}: alone refuses {text:?}");
                assert!(accepts(unrestricted, &text), "{label}: {text:?}");
                assert!(accepts_tokens(m, &tokens), "{label}: {text:?}");
            }
            // An entry whose outputs may have no call (`auto`, `start` of
            // toolken) need not reach one in a few walks.
            let may_skip = g.matcher_at(entry).unwrap().is_accepting()
                || entry.contains("auto")
                || format == "toolken";
            assert!(called || may_skip, "{label}: no walk called the tool");
            // The other way: the tool alone's outputs pass the one-tool
            // matcher, as bytes and as the same tokens.
            for w in 0..walks {
                let mut rng = SplitMix64::new(seed(&label, w as u64, 2));
                let tokens = walker_alone
                    .walk_from(&mut rng, 2_000, ga.matcher_at(entry).unwrap())
                    .unwrap_or_else(|e| panic!("{label}: alone walk {w}: {}", e.message));
                let text = text_of(&ga, &tokens);
                assert!(accepts(need, &text), "{label}: restricted refuses {text:?}");
                assert!(
                    accepts_tokens(need, &tokens),
                    "{label}: restricted refuses the tokens of {text:?}"
                );
            }
        }
    }
}

#[test]
fn weather_formats() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    for format in ["hermes", "json", "react"] {
        check(&weather(), format, &vocab, WALKS);
    }
}

#[test]
fn prefix_names() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    for format in ["react", "hermes", "json"] {
        check(&prefixes(), format, &vocab, WALKS);
    }
}

/// The other tools' names are refused at once, and a prefix name's call
/// ends exactly where its name does.
#[test]
fn names_are_checked_byte_by_byte() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let a = build(&prefixes(), "react", &vocab);
    let g = a.grammar();
    let ab = g.tool_index("ab").unwrap();
    let m = g.matcher_for_tool(Some("start"), ab, None).unwrap();
    let mut x = m;
    assert!(x.accept_bytes(b"Thought: hm\nAction: a"));
    // `a`'s call would end here: its arguments line is refused for `ab`.
    assert!(!x.clone().accept_bytes(b"\nAction Input: {"));
    assert!(x.accept_bytes(b"b\nAction Input: {}"));
    assert!(x.is_accepting());
    let mut y = m;
    assert!(!y.accept_bytes(b"Thought: hm\nAction: abc"));
    assert!(!y.accept_bytes(b"Thought: hm\nAction: g"));
    // Jump-forward follows the one name.
    let mut z = m;
    assert!(z.accept_bytes(b"Thought: hm\nAction: "));
    let mut buf = [0u8; 64];
    let n = z.forced_bytes(&mut buf);
    assert_eq!(&buf[..n], b"ab\nAction Input: {");
    // Unrestricting lifts it.
    let mut w = m;
    w.restrict(None).unwrap();
    assert!(w.accept_bytes(b"Thought: hm\nAction: g"));
}

#[test]
fn refusals_are_clear() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let a = build(&weather(), "hermes", &vocab);
    let g = a.grammar();
    assert!(g.tool_index("no_such_tool").is_none());
    let e = g.matcher_for_tool(None, 99, None).unwrap_err().to_string();
    assert!(e.contains("no tool has this index"), "{e}");
    let t = g.tool_index("search_flights").unwrap();
    let e = g
        .matcher_for_tool(None, t, Some(3))
        .unwrap_err()
        .to_string();
    assert!(e.contains("too small"), "{e}");
}

/// BFCL tool sets with Qwen2.5's tokenizer (hermes, react): the walks,
/// budgets and ground truth of [`check`]. Skipped without `TOOLDEC_DATA`.
#[test]
fn real_tokenizer_bfcl() {
    if tooldec_testkit::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping real_tokenizer_bfcl");
        return;
    }
    let loaded = tooldec_testkit::loaded::tokenizer("qwen2.5");
    let vocab = &loaded.0;
    let sets = tooldec_testkit::bfcl::load_sets(&tooldec_testkit::data_file(
        "tools/bfcl/BFCL_v4_multiple.json",
    ));
    for (k, s) in sets.iter().step_by(67).enumerate() {
        let set = spec::parse(&format!("{}.json", s.id), &s.text).unwrap();
        let format = ["hermes", "react"][k % 2];
        check(&set, format, vocab, 6);
    }
}

/// Figures for DESIGN.md: the TOOLS section's size, the states the
/// colours keep apart, gated states, and the time of a mask at gated and
/// ungated states, restricted and not. Run by hand in release:
/// `cargo test --release -p tooldec-tests --test single_tool -- --ignored --nocapture`.
#[test]
#[ignore]
fn measure() {
    use std::time::Instant;
    let mut cases: Vec<(String, spec::ToolSet, &str, Vocab)> = vec![
        (
            "weather".into(),
            weather(),
            "react",
            Vocab::builtin_gpt2().unwrap(),
        ),
        (
            "weather".into(),
            weather(),
            "hermes",
            Vocab::builtin_gpt2().unwrap(),
        ),
    ];
    if tooldec_testkit::data_dir().is_some() {
        let qwen = || tooldec_testkit::loaded::tokenizer("qwen2.5").0.clone();
        let sets = tooldec_testkit::bfcl::load_sets(&tooldec_testkit::data_file(
            "tools/bfcl/BFCL_v4_multiple.json",
        ));
        let mut all: Vec<Value> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for s in &sets {
            for t in &s.tools {
                let name = t["function"]["name"]
                    .as_str()
                    .or(t["name"].as_str())
                    .unwrap_or("")
                    .to_string();
                if seen.insert(name) {
                    all.push(t.clone());
                }
            }
        }
        let bfcl = spec::parse("bfcl.json", &Value::Array(all).to_string()).unwrap();
        cases.push(("bfcl-multiple".into(), bfcl, "hermes", qwen()));
        let (apis, _) = tooldec_testkit::toolbench::unique_apis(1000);
        let tb = spec::parse("toolbench.json", &Value::Array(apis).to_string()).unwrap();
        cases.push(("toolbench-1000".into(), tb, "react", qwen()));
    }
    for (label, set, format, vocab) in &cases {
        let opts = Options {
            format: CallFormat::load(format).unwrap(),
            ..Options::default()
        };
        let t = Instant::now();
        let out = compile(set, vocab, &opts, &mut |_| {}).unwrap();
        let total = t.elapsed();
        let a = Artifact::from_bytes(&out.artifact).unwrap();
        let g = a.grammar();
        let tools_bytes = 4 * g.payload().tools.words.len();
        let gated = (1..g.state_count() as u32)
            .filter(|&s| g.tool_gated(s))
            .count();
        println!(
            "{label} ({format}, {} tools): {} states, TOOLS {} bytes of {} payload ({:.2}%), \
             file {} bytes, {} gated states, per-tool distances {}; compile {:.2?} ({})",
            set.tools.len(),
            g.state_count(),
            tools_bytes,
            out.report.payload_bytes,
            100.0 * tools_bytes as f64 / out.report.payload_bytes as f64,
            out.report.artifact_bytes,
            gated,
            g.tool_budgets(),
            total,
            out.report
                .phases
                .iter()
                .map(|(n, d)| format!("{n} {d:.2?}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        // Mask times along restricted walks: per state, the restricted
        // fill and the plain fill, split by the gate.
        let mut walker = Walker::new(&g, g.token_count());
        let mut buf = vec![0u32; g.mask_words()];
        let (mut gated_t, mut gated_plain, mut gated_n) = (0f64, 0f64, 0usize);
        let (mut open_t, mut open_plain, mut open_n) = (0f64, 0f64, 0usize);
        let n_tools = g.tool_count().min(20);
        for tool in 0..n_tools {
            let m0 = g.matcher_for_tool(None, tool, None).unwrap();
            let mut rng = SplitMix64::new(seed(label, tool as u64, 9));
            let Ok(tokens) = walker.walk_from(&mut rng, 2_000, m0) else {
                continue;
            };
            let mut m = m0;
            let mut plain = g.matcher();
            for &tok in &tokens {
                let Some(s) = m.state() else { break };
                const REPS: u32 = 20;
                let t = Instant::now();
                for _ in 0..REPS {
                    m.fill_mask(std::hint::black_box(&mut buf));
                }
                let restricted = t.elapsed().as_secs_f64() / REPS as f64;
                let t = Instant::now();
                for _ in 0..REPS {
                    plain.fill_mask(std::hint::black_box(&mut buf));
                }
                let unrestricted = t.elapsed().as_secs_f64() / REPS as f64;
                if g.tool_gated(s) {
                    gated_t += restricted;
                    gated_plain += unrestricted;
                    gated_n += 1;
                } else {
                    open_t += restricted;
                    open_plain += unrestricted;
                    open_n += 1;
                }
                assert!(m.accept_token(tok));
                plain.accept_token(tok);
            }
        }
        let us = |x: f64, n: usize| 1e6 * x / n.max(1) as f64;
        println!(
            "  fill_mask: gated states ({gated_n} steps) {:.2} µs restricted vs {:.2} µs unrestricted; \
             ungated ({open_n} steps) {:.2} µs vs {:.2} µs",
            us(gated_t, gated_n),
            us(gated_plain, gated_n),
            us(open_t, open_n),
            us(open_plain, open_n)
        );
    }
}

/// Serving a one-tool matcher allocates nothing: restricting, masks at
/// gated and ungated states (budgeted and not), accepting, checking,
/// forced bytes, rollback and resets, along walks chosen beforehand.
#[test]
fn serving_one_tool_allocates_nothing() {
    use tooldec_runtime::{Checkpoint, RollbackMatcher};
    let vocab = Vocab::builtin_gpt2().unwrap();
    for format in ["react", "hermes"] {
        let a = build(&weather(), format, &vocab);
        let g = a.grammar();
        let mut walker = Walker::new(&g, g.token_count());
        let mut words = vec![0u32; g.mask_words()];
        let mut bytes = [0u8; 64];
        for tool in 0..g.tool_count() {
            let mut rng = SplitMix64::new(seed(format, tool as u64, 3));
            let start = g.matcher_for_tool(None, tool, Some(200)).unwrap();
            let tokens = walker.walk_from(&mut rng, 2_000, start).unwrap();
            let mut history = [Checkpoint::default(); 8];
            let before = allocs();
            let mut m = g.matcher();
            m.restrict(Some(tool)).unwrap();
            m.set_budget(Some(200)).unwrap();
            let mut r = RollbackMatcher::new(m, &mut history[..]);
            for &t in &tokens {
                r.fill_mask(&mut words);
                assert!(words[(t >> 5) as usize] >> (t & 31) & 1 == 1);
                assert!(r.matcher().is_allowed(t));
                r.forced_bytes(&mut bytes);
                assert!(r.accept_token(t));
                if r.depth() > 2 {
                    assert!(r.rollback(1));
                    assert!(r.accept_token(t));
                }
            }
            assert!(r.is_terminated());
            r.reset();
            let _ = r.restrict(None);
            assert_eq!(allocs(), before, "{format} tool {tool}: serving allocated");
        }
    }
}
