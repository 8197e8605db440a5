//! Real-data tests: real tokenizers × real tool lists (BFCL v4, ToolBench).
//!
//! - `soundness_bfcl_multiple_*`: random walks through compiled grammars
//!   decode (with the real tokenizer) to ReAct calls that parse and whose
//!   arguments satisfy the tool's JSON Schema.
//! - `completeness_bfcl_multiple_*`: BFCL's ground-truth calls, rendered as
//!   ReAct text and tokenized by the real tokenizer, are accepted token by
//!   token and end where EOS is allowed.
//! - `wordpiece_is_refused`: a WordPiece vocabulary is refused.
//!
//! All read `TOOLDEC_DATA` (see `tooldec_tests::data_dir`); without it they
//! print a skip line and pass. `TOOLDEC_WALKS` overrides the number of random
//! walks per tokenizer (default 1000).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::Value;
use tooldec_compiler::{compile, spec, vocab::Vocab, ErrorKind, Options};
use tooldec_runtime::Artifact;
use tooldec_tests::failures::{acceptable_refusal, report_failures, Failure};
use tooldec_tests::loaded::{cache_cell, eos_for, tokenizer, Cache, Loaded};
use tooldec_tests::walk::{seed, SplitMix64, Walker};
use tooldec_tests::{bfcl, data_dir, data_file, react, render, schema, toolbench, walks_from_env};

const BFCL_MULTIPLE: &str = "tools/bfcl/BFCL_v4_multiple.json";
const BFCL_MULTIPLE_ANSWERS: &str = "tools/bfcl/possible_answer/BFCL_v4_multiple.json";
/// Every how many BFCL lines the soundness test samples.
const BFCL_STEP: usize = 4;
/// How many ToolBench query api_lists the soundness test adds.
const TOOLBENCH_QUERIES: usize = 6;
const DEFAULT_WALKS: usize = 1000;

/// A compiled artifact, or the compiler's refusal.
type Outcome = Result<Arc<Vec<u8>>, (ErrorKind, String)>;

/// Compiles a tool list (parsed under the label `id`) for tokenizer `tok`,
/// once per binary: the sets the soundness test samples are also among the
/// completeness test's. Returns the outcome and whether it was cached.
fn compile_cached(tok: &str, vocab: &Vocab, id: &str, text: &str) -> (Outcome, bool) {
    static CACHE: Cache<Outcome> = OnceLock::new();
    let cell = cache_cell(&CACHE, format!("{tok}\0{id}\0{text}"));
    let mut hit = true;
    let out = cell
        .get_or_init(|| {
            hit = false;
            let set = spec::parse(id, text)
                .unwrap_or_else(|e| panic!("{id}: the converted tool list does not parse: {e}"));
            compile(&set, vocab, &options(), &mut |_| {})
                .map(|c| Arc::new(c.artifact))
                .map_err(|e| (e.kind(), e.to_string()))
        })
        .clone();
    (out, hit)
}

fn options() -> Options {
    Options {
        zstd_level: None,
        ..Default::default()
    }
}

/// A tool set to compile: its id, tools (OpenAI form) and input text.
struct Input {
    id: String,
    tools: Vec<Value>,
    text: String,
}

/// Skips (with a message) when TOOLDEC_DATA is unset; otherwise loads the
/// tokenizer and returns it with the start time and the load time.
fn start(label: &str, tok: &str) -> Option<(Arc<Loaded>, Instant, std::time::Duration)> {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping {label}");
        return None;
    }
    let t_all = Instant::now();
    let loaded = tokenizer(tok);
    Some((loaded, t_all, t_all.elapsed()))
}

fn soundness(tok: &str) {
    let label = format!("soundness of random walks on BFCL multiple + ToolBench with {tok}");
    let Some((loaded, t_all, t_load)) = start(&label, tok) else {
        return;
    };
    let (vocab, hf) = (&loaded.0, &loaded.1);

    let bfcl_sets = bfcl::load_sets(&data_file(BFCL_MULTIPLE));
    assert!(!bfcl_sets.is_empty(), "{BFCL_MULTIPLE} has no lines");
    let mut inputs: Vec<Input> = bfcl_sets
        .into_iter()
        .step_by(BFCL_STEP)
        .map(|s| Input {
            id: s.id,
            tools: s.tools,
            text: s.text,
        })
        .collect();
    let n_bfcl = inputs.len();
    let (tb_sets, tb_skips) = toolbench::query_sets();
    assert!(!tb_sets.is_empty(), "no ToolBench query sets");
    let stride = (tb_sets.len() / TOOLBENCH_QUERIES).max(1);
    inputs.extend(
        tb_sets
            .into_iter()
            .step_by(stride)
            .take(TOOLBENCH_QUERIES)
            .map(|s| Input {
                id: format!("toolbench:{}", s.id),
                tools: s.tools,
                text: s.text,
            }),
    );

    // Compile.
    let t_compile = Instant::now();
    let mut compiled = Vec::new();
    let mut refused = Vec::new();
    let mut cached = 0usize;
    for input in &inputs {
        let (out, hit) = compile_cached(tok, vocab, &input.id, &input.text);
        cached += hit as usize;
        match out {
            Ok(artifact) => compiled.push((input, artifact)),
            Err((kind, e)) => {
                assert!(
                    acceptable_refusal(kind),
                    "{}: unexpected compile error ({kind:?}): {e}",
                    input.id,
                );
                refused.push(format!("{} ({kind:?}): {e}", input.id));
            }
        }
    }
    let t_compile = t_compile.elapsed();
    let max_refused = (inputs.len() / 10).max(3);
    assert!(
        refused.len() <= max_refused,
        "{label}: {} of {} sets refused (more than {max_refused}):\n{}",
        refused.len(),
        inputs.len(),
        refused.join("\n")
    );
    assert!(!compiled.is_empty(), "{label}: nothing compiled");

    // Walk.
    let total_walks = walks_from_env(DEFAULT_WALKS);
    let per_set = total_walks.div_ceil(compiled.len());
    let t_walk = Instant::now();
    let mut failures = Vec::new();
    let (mut walks, mut tokens_total, mut bytes_total, mut max_tokens) =
        (0usize, 0usize, 0usize, 0usize);
    let mut tools_called = std::collections::BTreeSet::new();
    let mut samples = Vec::new();
    let (mut with_optional, mut args_bytes) = (0usize, 0usize);
    for (si, (input, artifact)) in compiled.iter().enumerate() {
        let art = Artifact::from_bytes(artifact)
            .unwrap_or_else(|e| panic!("{}: the artifact does not load: {e}", input.id));
        let g = art.grammar();
        let validators = schema::ToolValidators::new(&input.tools);
        let mut walker = Walker::new(&g, g.token_count());
        let max_dist = walker
            .distances()
            .iter()
            .copied()
            .filter(|&d| d != u32::MAX)
            .max()
            .unwrap_or(0) as usize;
        assert_ne!(
            walker.distances()[g.start_state() as usize],
            u32::MAX,
            "{}: the start state cannot reach acceptance",
            input.id
        );
        let max_steps = walker.greedy_after + max_dist + 2;
        for wi in 0..per_set {
            let s = seed(tok, si as u64, wi as u64);
            let mut rng = SplitMix64::new(s);
            walks += 1;
            let what = format!("{} walk {wi} (seed {s:#x})", input.id);
            let tokens = match walker.walk(&mut rng, max_steps) {
                Ok(t) => t,
                Err(e) => {
                    failures.push(Failure {
                        what,
                        detail: format!("walk error: {}\ntokens so far: {:?}", e.message, e.tokens),
                    });
                    continue;
                }
            };
            let Some((&last, body)) = tokens.split_last() else {
                failures.push(Failure {
                    what,
                    detail: "empty walk".into(),
                });
                continue;
            };
            if !g.is_eos(last) || body.iter().any(|&t| g.is_eos(t)) {
                failures.push(Failure {
                    what,
                    detail: format!("EOS not exactly at the end: {tokens:?}"),
                });
                continue;
            }
            tokens_total += tokens.len();
            max_tokens = max_tokens.max(tokens.len());
            let mut bytes = Vec::new();
            for &t in body {
                bytes.extend_from_slice(g.token_bytes(t).unwrap_or_default());
            }
            bytes_total += bytes.len();
            let decoded = match hf.decode(body, false) {
                Ok(d) => d,
                Err(e) => {
                    failures.push(Failure {
                        what,
                        detail: format!("the tokenizer cannot decode: {e}\ntokens: {body:?}"),
                    });
                    continue;
                }
            };
            // The artifact's token bytes must be what the tokenizer decodes
            // (a SentencePiece decoder drops one leading space).
            let expected = String::from_utf8(bytes.clone());
            let expected_ok = match &expected {
                Ok(s) => {
                    let s = if vocab.leading_space {
                        s.strip_prefix(' ').unwrap_or(s)
                    } else {
                        s.as_str()
                    };
                    s == decoded
                }
                Err(_) => false,
            };
            if !expected_ok {
                failures.push(Failure {
                    what,
                    detail: format!(
                        "decoded text differs from the token bytes\ndecoded: {decoded:?}\nbytes:   {:?}\ntokens: {body:?}",
                        String::from_utf8_lossy(&bytes)
                    ),
                });
                continue;
            }
            match react::parse(&decoded).and_then(|(name, args)| {
                validators.check(&name, &args)?;
                Ok((name, args))
            }) {
                Ok((name, args)) => {
                    let n_args = args.as_object().map_or(0, |o| o.len());
                    let n_required = input
                        .tools
                        .iter()
                        .find(|t| t["name"] == name.as_str())
                        .and_then(|t| t.pointer("/parameters/required"))
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    if n_args > n_required {
                        with_optional += 1;
                    }
                    args_bytes += serde_json::to_string(&args).map_or(0, |s| s.len());
                    if samples.len() < 3 && wi == 0 {
                        samples.push(format!("{}: {decoded:?}", input.id));
                    }
                    tools_called.insert(format!("{}/{name}", input.id));
                }
                Err(e) => failures.push(Failure {
                    what,
                    detail: format!("{e}\ndecoded: {decoded:?}\ntokens: {body:?}"),
                }),
            }
        }
    }
    let t_walk = t_walk.elapsed();
    println!(
        "[{tok}] soundness: {} sets compiled ({} BFCL sampled every {BFCL_STEP}th of multiple, {} ToolBench queries), {} refused; \
         {walks} walks ({per_set} per set), mean {:.1} tokens / {:.1} bytes per walk, max {max_tokens} tokens; \
         {} distinct (set, tool) pairs called, {with_optional} walks passed an optional parameter, \
         mean compact args {:.1} bytes; {} failures",
        compiled.len(),
        n_bfcl,
        inputs.len() - n_bfcl,
        refused.len(),
        tokens_total as f64 / walks.max(1) as f64,
        bytes_total as f64 / walks.max(1) as f64,
        tools_called.len(),
        args_bytes as f64 / walks.max(1) as f64,
        failures.len()
    );
    println!("[{tok}]   ToolBench APIs left out while converting (all queries): {tb_skips:?}");
    for r in &refused {
        println!("[{tok}]   refused: {r}");
    }
    for d in &samples {
        println!("[{tok}]   sample walk {d}");
    }
    println!(
        "[{tok}] soundness times: load {:.2?}, compile {:.2?} ({cached} of {} sets cached), walks {:.2?}, total {:.2?}",
        t_load,
        t_compile,
        inputs.len(),
        t_walk,
        t_all.elapsed()
    );
    report_failures(&label, &failures);
}

/// Feeds `text`'s real tokenization through a fresh matcher (see
/// `tooldec_tests::check_text`); returns the token count.
fn check_text(
    g: &tooldec_runtime::Grammar<'_>,
    hf: &tokenizers::Tokenizer,
    words: &mut [u32],
    text: &str,
) -> Result<usize, String> {
    tooldec_tests::check_text(g, g.matcher(), hf, words, text).map(|ids| ids.len())
}

fn completeness(tok: &str) {
    let label = format!("completeness of BFCL multiple ground truth with {tok}");
    let Some((loaded, t_all, t_load)) = start(&label, tok) else {
        return;
    };
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let sets = bfcl::load_sets(&data_file(BFCL_MULTIPLE));
    let answers = bfcl::load_answers(&data_file(BFCL_MULTIPLE_ANSWERS));
    assert_eq!(
        sets.len(),
        answers.len(),
        "{BFCL_MULTIPLE} and {BFCL_MULTIPLE_ANSWERS} differ in length"
    );
    let mut words = Vec::new();
    let mut failures = Vec::new();
    let (mut cases, mut texts, mut tokens_total) = (0usize, 0usize, 0usize);
    let mut refused = Vec::new();
    let mut skipped_closed = Vec::new();
    let mut skipped_invalid = Vec::new();
    let mut skipped_unknown_tool = Vec::new();
    let mut t_compile = std::time::Duration::ZERO;
    let mut cached = 0usize;
    for (set, (aid, gt)) in sets.iter().zip(&answers) {
        assert_eq!(&set.id, aid, "question and answer files are out of step");
        let t = Instant::now();
        let (out, hit) = compile_cached(tok, vocab, &set.id, &set.text);
        t_compile += t.elapsed();
        cached += hit as usize;
        let artifact = match out {
            Ok(a) => a,
            Err((kind, e)) => {
                assert!(
                    acceptable_refusal(kind),
                    "{}: unexpected compile error ({kind:?}): {e}",
                    set.id,
                );
                refused.push(format!("{} ({kind:?}): {e}", set.id));
                continue;
            }
        };
        let art = Artifact::from_bytes(&artifact)
            .unwrap_or_else(|e| panic!("{}: the artifact does not load: {e}", set.id));
        let g = art.grammar();
        words.resize(g.mask_words(), 0);
        let validators = schema::ToolValidators::new(&set.tools);
        for (ci, call) in gt.iter().enumerate() {
            let Some(call) = call.as_object() else {
                panic!("{}: ground truth #{ci} is not an object", set.id);
            };
            for (name, call_args) in call {
                let case = format!("{} call #{ci} {name}", set.id);
                let Some(tool) = set.tools.iter().find(|t| t["name"] == name.as_str()) else {
                    skipped_unknown_tool.push(case);
                    continue;
                };
                let params = tool
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
                let args = match render::ground_truth_args(&params, call_args) {
                    Ok(a) => a,
                    Err(e) => {
                        skipped_closed.push(format!("{case}: {e}"));
                        continue;
                    }
                };
                if let Err(e) = validators.check(name, &args) {
                    skipped_invalid.push(format!("{case}: {e}"));
                    continue;
                }
                cases += 1;
                let compact = serde_json::to_string(&args).unwrap();
                let spaced = render::spaced(&args);
                for (form, args_text) in [("compact", compact), ("spaced", spaced)] {
                    let text = render::react_call(name, &args_text);
                    texts += 1;
                    match check_text(&g, hf, &mut words, &text) {
                        Ok(n) => tokens_total += n,
                        Err(e) => failures.push(Failure {
                            what: format!("{case} ({form})"),
                            detail: format!("{e}\ntext: {text:?}"),
                        }),
                    }
                }
            }
        }
    }
    println!(
        "[{tok}] completeness: {} lines, {} sets refused by the compiler, {cases} calls checked ({texts} texts, mean {:.1} tokens); \
         skipped: {} outside the closed-object subset, {} invalid per the schema, {} naming an unknown tool; {} failures",
        sets.len(),
        refused.len(),
        tokens_total as f64 / texts.max(1) as f64,
        skipped_closed.len(),
        skipped_invalid.len(),
        skipped_unknown_tool.len(),
        failures.len()
    );
    for r in refused
        .iter()
        .map(|r| format!("refused: {r}"))
        .chain(
            skipped_closed
                .iter()
                .map(|s| format!("skipped (closed object): {s}")),
        )
        .chain(
            skipped_invalid
                .iter()
                .map(|s| format!("skipped (invalid): {s}")),
        )
        .chain(
            skipped_unknown_tool
                .iter()
                .map(|s| format!("skipped (unknown tool): {s}")),
        )
    {
        println!("[{tok}]   {r}");
    }
    println!(
        "[{tok}] completeness times: load {t_load:.2?}, compile {t_compile:.2?} ({cached} of {} sets cached), total {:.2?}",
        sets.len(),
        t_all.elapsed()
    );
    let max_refused = (sets.len() / 10).max(3);
    assert!(
        refused.len() <= max_refused,
        "{label}: {} of {} sets refused (more than {max_refused})",
        refused.len(),
        sets.len()
    );
    assert!(cases > 0, "{label}: no case checked");
    report_failures(&label, &failures);
}

#[test]
fn soundness_bfcl_multiple_gpt2() {
    soundness("gpt2");
}

#[test]
fn soundness_bfcl_multiple_llama_3_2() {
    soundness("llama-3.2");
}

#[test]
fn soundness_bfcl_multiple_qwen2_5() {
    soundness("qwen2.5");
}

#[test]
fn soundness_bfcl_multiple_mistral_v0_1() {
    soundness("mistral-v0.1");
}

#[test]
fn soundness_bfcl_multiple_smollm2_135m() {
    soundness("smollm2-135m");
}

#[test]
fn completeness_bfcl_multiple_gpt2() {
    completeness("gpt2");
}

#[test]
fn completeness_bfcl_multiple_llama_3_2() {
    completeness("llama-3.2");
}

#[test]
fn completeness_bfcl_multiple_qwen2_5() {
    completeness("qwen2.5");
}

#[test]
fn completeness_bfcl_multiple_mistral_v0_1() {
    completeness("mistral-v0.1");
}

#[test]
fn completeness_bfcl_multiple_smollm2_135m() {
    completeness("smollm2-135m");
}

#[test]
fn wordpiece_is_refused() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the WordPiece refusal check");
        return;
    }
    let path = data_file("tokenizers/bert-minilm-wordpiece/tokenizer.json");
    let err = match Vocab::from_tokenizer_json(&path, &["[SEP]".to_string()]) {
        Ok(_) => panic!("a WordPiece vocabulary was accepted: {}", path.display()),
        Err(e) => e,
    };
    assert_eq!(err.kind(), ErrorKind::Vocab, "wrong error kind: {err}");
    assert!(
        err.message().contains("WordPiece"),
        "the message does not mention WordPiece: {err}"
    );
    // Also without an explicit EOS (from its tokenizer_config.json, if any).
    let err = Vocab::from_tokenizer_json(&path, &[]).expect_err("WordPiece accepted");
    assert_eq!(err.kind(), ErrorKind::Vocab, "wrong error kind: {err}");
    assert!(err.message().contains("WordPiece"), "{err}");
}

/// The ToolBench converter on many APIs at once: one big tool set of the
/// first 300 unique APIs compiles (gpt2) and random walks through it are
/// sound.
#[test]
fn toolbench_unique_apis_gpt2() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the ToolBench unique-API set with gpt2");
        return;
    }
    let t_all = Instant::now();
    let (tools, skips) = toolbench::unique_apis(300);
    assert_eq!(
        tools.len(),
        300,
        "fewer than 300 convertible ToolBench APIs"
    );
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert!(
            name.contains("_for_")
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                && !name.contains("__"),
            "badly standardized name {name:?}"
        );
    }
    let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
    let set = spec::parse("toolbench-unique-300", &text).expect("the converted list parses");
    let loaded = tokenizer("gpt2");
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let out = compile(&set, vocab, &options(), &mut |_| {})
        .unwrap_or_else(|e| panic!("300 ToolBench APIs do not compile: {e}"));
    let art = Artifact::from_bytes(&out.artifact).expect("the artifact loads");
    let g = art.grammar();
    let validators = schema::ToolValidators::new(&tools);
    let mut walker = Walker::new(&g, g.token_count());
    let walks = walks_from_env(DEFAULT_WALKS).div_ceil(5);
    let mut failures = Vec::new();
    let mut called = std::collections::BTreeSet::new();
    for wi in 0..walks {
        let s = seed("toolbench-unique-300", 0, wi as u64);
        let what = format!("walk {wi} (seed {s:#x})");
        let tokens = match walker.walk(&mut SplitMix64::new(s), 5000) {
            Ok(t) => t,
            Err(e) => {
                failures.push(Failure {
                    what,
                    detail: format!("walk error: {}\ntokens so far: {:?}", e.message, e.tokens),
                });
                continue;
            }
        };
        let body = &tokens[..tokens.len() - 1];
        let decoded = hf.decode(body, false).unwrap_or_default();
        match react::parse(&decoded).and_then(|(name, args)| {
            validators.check(&name, &args)?;
            Ok(name)
        }) {
            Ok(name) => {
                called.insert(name);
            }
            Err(e) => failures.push(Failure {
                what,
                detail: format!("{e}\ndecoded: {decoded:?}\ntokens: {body:?}"),
            }),
        }
    }
    println!(
        "[gpt2] ToolBench unique APIs: 300 tools ({} DFA states, {} masks), skipped while converting: {skips:?}; \
         {walks} walks called {} distinct tools; {} failures; {:.2?}",
        out.report.min_states,
        out.report.masks,
        called.len(),
        failures.len(),
        t_all.elapsed()
    );
    report_failures("ToolBench unique APIs with gpt2", &failures);
}

/// The vocabulary read from SmolLM2's GGUF file (`tokenizer.ggml.*`) is the
/// one its tokenizer.json gives, token for token, with the same EOS; so the
/// artifacts compiled from either serve the same masks.
#[test]
fn gguf_vocab_equals_tokenizer_json_smollm2() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the GGUF vocabulary check");
        return;
    }
    let gguf = data_file("models/smollm2-135m-instruct-q4_1/SmolLM2-135M-Instruct.Q4_1.gguf");
    let json = data_file("tokenizers/smollm2-135m/tokenizer.json");
    assert!(tooldec_compiler::gguf::is_gguf(&gguf));
    assert!(!tooldec_compiler::gguf::is_gguf(&json));
    let a = Vocab::from_gguf(&gguf, &[]).unwrap_or_else(|e| panic!("{e}"));
    let b = Vocab::from_tokenizer_json(&json, &eos_for("smollm2-135m"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.len(), b.len());
    for (id, (x, y)) in a.tokens.iter().zip(&b.tokens).enumerate() {
        assert_eq!(x, y, "token {id}");
    }
    assert_eq!(a.fingerprint(), b.fingerprint());
    assert_eq!(a.eos, b.eos);
    assert_eq!((a.kind, a.leading_space), (b.kind, b.leading_space));

    let text = r#"[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",
        "properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}}]"#;
    let set = spec::parse("weather.json", text).unwrap();
    let ca = compile(&set, &a, &options(), &mut |_| {}).unwrap();
    let cb = compile(&set, &b, &options(), &mut |_| {}).unwrap();
    let (aa, ab) = (
        Artifact::from_bytes(&ca.artifact).unwrap(),
        Artifact::from_bytes(&cb.artifact).unwrap(),
    );
    let (ga, gb) = (aa.grammar(), ab.grammar());
    assert_eq!(ga.state_count(), gb.state_count());
    assert_eq!(ga.vocab_fingerprint(), gb.vocab_fingerprint());
    let mut ma = vec![0u32; ga.mask_words()];
    let mut mb = vec![0u32; gb.mask_words()];
    for s in 0..ga.state_count() as u32 {
        assert_eq!(
            ga.mask_id(s).is_some(),
            gb.mask_id(s).is_some(),
            "state {s}"
        );
        if let (Some(x), Some(y)) = (ga.mask_id(s), gb.mask_id(s)) {
            ga.fill_mask_by_id(x, &mut ma);
            gb.fill_mask_by_id(y, &mut mb);
            assert_eq!(ma, mb, "state {s}");
        }
    }
}
