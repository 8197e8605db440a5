//! Real-data tests: real tokenizers × real tool lists (BFCL v4, ToolBench).
//!
//! - `soundness_bfcl_multiple_*`: random walks through compiled grammars
//!   decode (with the real tokenizer) to ReAct calls that parse and whose
//!   arguments satisfy the tool's JSON Schema.
//! - `completeness_bfcl_multiple_*`: BFCL's ground-truth calls, rendered as
//!   ReAct text and tokenized by the real tokenizer, are accepted token by
//!   token and end where EOS is allowed.
//! - `budget_walks_*`: uniformly random walks (no steering) under
//!   `matcher_with_budget(n)` for n from the exact minimum to 4x it end
//!   complete within n tokens, and their outputs decode, parse and validate
//!   as in the soundness test.
//! - `wordpiece_is_refused`: a WordPiece vocabulary is refused.
//!
//! All read `TOOLDEC_DATA` (see `tooldec_testkit::data_dir`); without it they
//! print a skip line and pass. `TOOLDEC_WALKS` overrides the number of random
//! walks per tokenizer (default 1000).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use serde_json::Value;
use tooldec_compiler::{compile, spec, vocab::Vocab, ErrorKind, Options};
use tooldec_runtime::Artifact;
use tooldec_testkit::failures::{acceptable_refusal, report_failures, Failure};
use tooldec_testkit::loaded::{cache_cell, eos_for, tokenizer, Cache, Loaded};
use tooldec_testkit::parsers::react;
use tooldec_testkit::walk::{seed, SplitMix64, Walker};
use tooldec_testkit::{bfcl, data_dir, data_file, render, schema, toolbench, walks_from_env};

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

/// The one call of a ReAct text (the `start` entry: thought, one
/// action), read by the format parser written apart from the grammar.
fn react_call(text: &str) -> Result<(String, Value), String> {
    let mut calls = react::parse_start(text)?;
    Ok(calls.remove(0))
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

/// The tool sets the soundness and budget walks sample: every
/// `BFCL_STEP`-th line of BFCL multiple, then `TOOLBENCH_QUERIES` ToolBench
/// query api_lists spread over all queries. Returns them, how many are BFCL
/// lines, and what the ToolBench conversion left out.
fn sampled_inputs() -> (Vec<Input>, usize, toolbench::SkipCounts) {
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
    (inputs, n_bfcl, tb_skips)
}

/// A compiled input and its artifact.
type CompiledSet<'a> = (&'a Input, Arc<Vec<u8>>);

/// Compiles `inputs` for `tok` (through the cache), asserting that every
/// refusal is an acceptable one and that at most a tenth (or 3) are
/// refused. Returns the compiled sets, the refusals and the cache hits.
fn compile_all<'a>(
    label: &str,
    tok: &str,
    vocab: &Vocab,
    inputs: &'a [Input],
) -> (Vec<CompiledSet<'a>>, Vec<String>, usize) {
    let mut compiled = Vec::new();
    let mut refused = Vec::new();
    let mut cached = 0usize;
    for input in inputs {
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
    let max_refused = (inputs.len() / 10).max(3);
    assert!(
        refused.len() <= max_refused,
        "{label}: {} of {} sets refused (more than {max_refused}):\n{}",
        refused.len(),
        inputs.len(),
        refused.join("\n")
    );
    assert!(!compiled.is_empty(), "{label}: nothing compiled");
    (compiled, refused, cached)
}

fn soundness(tok: &str) {
    let label = format!("soundness of random walks on BFCL multiple + ToolBench with {tok}");
    let Some((loaded, t_all, t_load)) = start(&label, tok) else {
        return;
    };
    let (vocab, hf) = (&loaded.0, &loaded.1);

    let (inputs, n_bfcl, tb_skips) = sampled_inputs();

    // Compile.
    let t_compile = Instant::now();
    let (compiled, refused, cached) = compile_all(&label, tok, vocab, &inputs);
    let t_compile = t_compile.elapsed();

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
            match react_call(&decoded).and_then(|(name, args)| {
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
/// `tooldec_testkit::check_text`); returns the token count.
fn check_text(
    g: &tooldec_runtime::Grammar<'_>,
    hf: &tokenizers::Tokenizer,
    words: &mut [u32],
    text: &str,
) -> Result<usize, String> {
    tooldec_testkit::check_text(g, g.matcher(), hf, words, text).map(|ids| ids.len())
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

/// How a budget walk picks among the allowed tokens. None of them looks at
/// distances or steers toward acceptance: the masks alone must finish it.
#[derive(Clone, Copy, Debug)]
enum Pick {
    /// One allowed token uniformly at random.
    Uniform,
    /// EOS whenever it is allowed; else uniform from the mask the runtime
    /// serves for a tighter budget, `slack` tokens less (which must be a
    /// subset of the real mask): the output completes with tokens to
    /// spare and EOS ends it.
    Eos,
    /// The longest (in bytes) of 4 uniform draws: burns the budget fast.
    Longest,
    /// The shortest of 4 uniform draws: leaves the least slack.
    Shortest,
}

const PICKS: [Pick; 4] = [Pick::Uniform, Pick::Eos, Pick::Longest, Pick::Shortest];

/// How a budget walk ended (it has not failed).
struct BudgetWalk {
    /// The tokens, EOS included when it was sampled.
    tokens: Vec<u32>,
    /// Ended by sampling EOS (else by spending the budget).
    by_eos: bool,
    /// Steps whose budget mask was narrower than the state's full mask.
    tiered_steps: usize,
}

/// Whether `t` is set in `words`.
fn bit(words: &[u32], t: u32) -> bool {
    words
        .get((t >> 5) as usize)
        .is_some_and(|w| w & (1 << (t & 31)) != 0)
}

/// The allowed tokens in `words`; an error if a bit at or beyond
/// `n_tokens` (padding up to the logits size) is set.
fn count_allowed(words: &[u32], n_tokens: usize) -> Result<u32, String> {
    let mut total = 0u32;
    for (w, &x) in words.iter().enumerate() {
        let base = w * 32;
        let keep = n_tokens.saturating_sub(base);
        if keep < 32 && x >> keep != 0 {
            return Err(format!(
                "the mask allows a token id >= {n_tokens} (word {w} = {x:#x})"
            ));
        }
        total += x.count_ones();
    }
    Ok(total)
}

/// The `k`-th (0-based) allowed token of `words`.
fn kth_allowed(words: &[u32], mut k: u32) -> u32 {
    for (w, &x) in words.iter().enumerate() {
        let n = x.count_ones();
        if k < n {
            let mut bits = x;
            for _ in 0..k {
                bits &= bits - 1;
            }
            return w as u32 * 32 + bits.trailing_zeros();
        }
        k -= n;
    }
    unreachable!("k beyond the mask's population")
}

/// One random walk with `g.matcher_with_budget(n)`: each step fills the
/// mask, picks an allowed token as `pick` says and accepts it, until EOS is
/// accepted or no token is left. Checks on the way that the mask is never
/// empty, that it agrees with `accept_token` (on a few random probes each
/// step, and on every id at step `full_check_at`), that `tokens_left`
/// counts down by one per token and never drops below the distance of the
/// state; and at the end that the output is complete within `n` tokens.
/// `slack` (at most `n - min_tokens`) is for [`Pick::Eos`]; `spare` a
/// second mask buffer. On failure: what went wrong and the tokens so far.
#[allow(clippy::too_many_arguments)]
fn budget_walk(
    g: &tooldec_runtime::Grammar<'_>,
    n: u32,
    pick: Pick,
    slack: u32,
    rng: &mut SplitMix64,
    words: &mut [u32],
    spare: &mut [u32],
    full_check_at: Option<usize>,
) -> Result<BudgetWalk, (String, Vec<u32>)> {
    let mut m = match g.matcher_with_budget(n) {
        Ok(m) => m,
        Err(e) => return Err((format!("matcher_with_budget({n}) fails: {e}"), Vec::new())),
    };
    let n_tokens = g.token_count();
    let mut tokens: Vec<u32> = Vec::new();
    let mut tiered_steps = 0usize;
    macro_rules! fail {
        ($($arg:tt)*) => {
            return Err((format!($($arg)*), tokens))
        };
    }
    for step in 0..=n as usize + 1 {
        let Some(left) = n.checked_sub(tokens.len() as u32) else {
            fail!("{} tokens accepted for a budget of {n}", tokens.len());
        };
        if m.tokens_left() != Some(left) {
            fail!(
                "after {} tokens of a budget of {n}, tokens_left() = {:?}",
                tokens.len(),
                m.tokens_left()
            );
        }
        if m.is_terminated() {
            break;
        }
        let Some(state) = m.state() else {
            fail!("state() is None but the matcher is not terminated");
        };
        match g.distance(state) {
            Some(d) if d <= left => {}
            d => fail!("in state {state} at distance {d:?} with {left} tokens left"),
        }
        m.fill_mask(words);
        let total = match count_allowed(words, n_tokens) {
            Ok(t) => t,
            Err(e) => fail!("state {state}, {left} left: {e}"),
        };
        let eos_allowed = g.eos_tokens().iter().any(|&t| bit(words, t));
        if eos_allowed != m.is_accepting() {
            fail!(
                "state {state}, {left} left: EOS allowed = {eos_allowed} but is_accepting() = {}",
                m.is_accepting()
            );
        }
        // A few random ids: the mask and accept_token agree.
        for _ in 0..3 {
            let t = rng.below(g.mask_width() as u64) as u32;
            if m.is_allowed(t) != bit(words, t) {
                fail!(
                    "state {state}, {left} left: token {t} is {} the mask but is_allowed says {}",
                    if bit(words, t) { "in" } else { "not in" },
                    m.is_allowed(t)
                );
            }
        }
        if full_check_at == Some(step) {
            for t in 0..g.mask_width() as u32 {
                if m.is_allowed(t) != bit(words, t) {
                    fail!(
                        "state {state}, {left} left (full check): token {t} is {} the mask but is_allowed says {}",
                        if bit(words, t) { "in" } else { "not in" },
                        m.is_allowed(t)
                    );
                }
            }
        }
        if left == 0 {
            // Spent: complete, and nothing but EOS may follow.
            if !m.is_accepting() {
                fail!("budget of {n} spent in state {state}, which is not accepting");
            }
            if total as usize != g.eos_tokens().len() {
                fail!(
                    "budget spent in state {state}: the mask allows {total} tokens, not just the {} EOS",
                    g.eos_tokens().len()
                );
            }
            break;
        }
        if total == 0 {
            fail!("empty mask in state {state} with {left} tokens left");
        }
        if g.budget_mask_id(state, left) != g.budget_mask_id(state, u32::MAX) {
            tiered_steps += 1;
        }
        let draw = |rng: &mut SplitMix64| kth_allowed(words, rng.below(total as u64) as u32);
        // Length of a token for the picks by length; EOS ranks last.
        let len = |t: u32| g.token_bytes(t).map(<[u8]>::len);
        let t = match pick {
            Pick::Uniform => draw(rng),
            Pick::Eos => match g.eos_tokens().iter().find(|&&t| bit(words, t)) {
                Some(&t) => t,
                None if slack == 0 => draw(rng),
                None => {
                    // The tighter budget's walk has `left - slack` left.
                    let Some(tight) = left.checked_sub(slack) else {
                        fail!("state {state}: {left} left, less than the slack {slack}");
                    };
                    if !g.fill_budget_mask(state, tight, spare) {
                        fail!("fill_budget_mask refuses a buffer of mask_words()");
                    }
                    if let Some(w) = (0..words.len()).find(|&w| spare[w] & !words[w] != 0) {
                        fail!(
                            "state {state}: the mask for {tight} left allows tokens {:#x} << {} that the mask for {left} left does not",
                            spare[w] & !words[w],
                            32 * w
                        );
                    }
                    let tight_total = spare.iter().map(|w| w.count_ones()).sum::<u32>();
                    if tight_total == 0 {
                        fail!(
                            "state {state} (distance {:?}): empty mask for {tight} left",
                            g.distance(state)
                        );
                    }
                    kth_allowed(spare, rng.below(tight_total as u64) as u32)
                }
            },
            Pick::Longest | Pick::Shortest => {
                let mut best = draw(rng);
                for _ in 0..3 {
                    let c = draw(rng);
                    let better = match (len(c), len(best)) {
                        (Some(a), Some(b)) => match pick {
                            Pick::Longest => a > b,
                            _ => a < b,
                        },
                        (Some(_), None) => true,
                        _ => false,
                    };
                    if better {
                        best = c;
                    }
                }
                best
            }
        };
        if !bit(words, t) {
            fail!("picked token {t}, which is not in the mask (test bug)");
        }
        if !m.accept_token(t) {
            fail!(
                "state {state}, {left} left: the mask allows token {t} but accept_token refuses it"
            );
        }
        tokens.push(t);
        if g.is_eos(t) != m.is_terminated() {
            fail!(
                "token {t} (EOS: {}) accepted; is_terminated() = {}",
                g.is_eos(t),
                m.is_terminated()
            );
        }
    }
    if !m.is_accepting() {
        fail!(
            "the walk stopped without completing (state {:?})",
            m.state()
        );
    }
    if tokens.len() > n as usize {
        fail!("{} tokens for a budget of {n}", tokens.len());
    }
    Ok(BudgetWalk {
        by_eos: m.is_terminated(),
        tokens,
        tiered_steps,
    })
}

/// The budgets a set with minimum `m` is walked under: the exact minimum,
/// a little more, and several times it.
fn budgets_for(m: u32) -> Vec<u32> {
    let mut b = vec![m, m + 1, m + 2, 2 * m, 4 * m];
    b.sort_unstable();
    b.dedup();
    b
}

/// Checks a walk's output (body without EOS): its token bytes are what the
/// real tokenizer decodes (a SentencePiece decoder drops one leading
/// space), and the text is a ReAct call whose arguments satisfy the
/// tool's schema. Returns the tool's name.
fn check_output(
    loaded: &Loaded,
    g: &tooldec_runtime::Grammar<'_>,
    validators: &schema::ToolValidators,
    body: &[u32],
) -> Result<String, String> {
    let (vocab, hf) = (&loaded.0, &loaded.1);
    if let Some(t) = body.iter().find(|&&t| g.is_eos(t)) {
        return Err(format!("EOS {t} before the end"));
    }
    let mut bytes = Vec::new();
    for &t in body {
        bytes.extend_from_slice(g.token_bytes(t).unwrap_or_default());
    }
    let decoded = hf
        .decode(body, false)
        .map_err(|e| format!("the tokenizer cannot decode: {e}"))?;
    let expected = String::from_utf8(bytes.clone()).ok();
    let expected = expected.as_deref().map(|s| {
        if vocab.leading_space {
            s.strip_prefix(' ').unwrap_or(s)
        } else {
            s
        }
    });
    if expected != Some(decoded.as_str()) {
        return Err(format!(
            "decoded text differs from the token bytes\ndecoded: {decoded:?}\nbytes:   {:?}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    let (name, args) = react_call(&decoded).map_err(|e| format!("{e}\ndecoded: {decoded:?}"))?;
    validators
        .check(&name, &args)
        .map_err(|e| format!("{e}\ndecoded: {decoded:?}"))?;
    Ok(name)
}

/// How many budget walks per (set, budget), relative to `TOOLDEC_WALKS`
/// spread over the sets and budgets (the exact minimum gets twice as many).
const BUDGET_WALK_FACTOR: usize = 8;

fn budget_walks(tok: &str) {
    let label = format!("budgeted random walks on BFCL multiple + ToolBench with {tok}");
    let Some((loaded, t_all, t_load)) = start(&label, tok) else {
        return;
    };
    let vocab = &loaded.0;
    let (inputs, _, _) = sampled_inputs();
    let t_compile = Instant::now();
    let (compiled, refused, cached) = compile_all(&label, tok, vocab, &inputs);
    let t_compile = t_compile.elapsed();

    let per_budget = (BUDGET_WALK_FACTOR * walks_from_env(DEFAULT_WALKS))
        .div_ceil(compiled.len() * 5)
        .max(2);
    let t_walk = Instant::now();
    let mut failures = Vec::new();
    let mut min_tokens = Vec::new();
    let (mut walks, mut at_minimum, mut by_eos, mut by_budget) = (0usize, 0usize, 0usize, 0usize);
    let (mut tokens_total, mut steps_tiered, mut full_checks) = (0usize, 0usize, 0usize);
    let (mut lowest_budget, mut highest_budget) = (u32::MAX, 0u32);
    let mut per_pick = [0usize; PICKS.len()];
    let mut tools_called = std::collections::BTreeSet::new();
    for (si, (input, artifact)) in compiled.iter().enumerate() {
        let art = Artifact::from_bytes(artifact)
            .unwrap_or_else(|e| panic!("{}: the artifact does not load: {e}", input.id));
        let g = art.grammar();
        let validators = schema::ToolValidators::new(&input.tools);
        let mut words = vec![0u32; g.mask_words()];
        let mut spare = words.clone();
        let m = g.min_tokens();
        if g.distance(g.start_state()) != Some(m) {
            failures.push(Failure {
                what: format!("{}: min_tokens", input.id),
                detail: format!(
                    "min_tokens() = {m} but distance(start) = {:?}",
                    g.distance(g.start_state())
                ),
            });
            continue;
        }
        min_tokens.push(m);
        // Spelling the shortest output byte by byte takes no more tokens
        // than its bytes (every byte has a one-byte token here).
        let byte_dist = tooldec_testkit::walk::distances(&g)[g.start_state() as usize];
        if m > byte_dist {
            failures.push(Failure {
                what: format!("{}: min_tokens", input.id),
                detail: format!("min_tokens() = {m} exceeds the byte distance {byte_dist}"),
            });
        }
        if m > 0 {
            match g.matcher_with_budget(m - 1) {
                Ok(_) => failures.push(Failure {
                    what: format!("{}: budget {} below the minimum", input.id, m - 1),
                    detail: format!(
                        "matcher_with_budget({}) succeeds, min_tokens() = {m}",
                        m - 1
                    ),
                }),
                Err(e) if e.budget_shortfall() != Some((m, m - 1)) => failures.push(Failure {
                    what: format!("{}: budget {} below the minimum", input.id, m - 1),
                    detail: format!(
                        "budget_shortfall() = {:?}, not {:?} ({e})",
                        e.budget_shortfall(),
                        Some((m, m - 1))
                    ),
                }),
                Err(_) => {}
            }
        }
        for (bi, &n) in budgets_for(m).iter().enumerate() {
            lowest_budget = lowest_budget.min(n);
            highest_budget = highest_budget.max(n);
            let count = if n == m { 2 * per_budget } else { per_budget };
            for wi in 0..count {
                let s = seed(
                    &format!("budget-walks-{tok}"),
                    si as u64,
                    (bi as u64) << 32 | wi as u64,
                );
                let mut rng = SplitMix64::new(s);
                let pi = wi % PICKS.len();
                let pick = PICKS[pi];
                // Compare the whole mask with accept_token at one random
                // step of the first two walks (every walk takes at least
                // `m` steps).
                let full_check_at = (wi < 2).then(|| rng.below(m.max(1) as u64) as usize);
                full_checks += full_check_at.is_some() as usize;
                walks += 1;
                at_minimum += (n == m) as usize;
                per_pick[pi] += 1;
                let what = format!(
                    "{} (set #{si}) budget {n} (min {m}) walk {wi} pick {pick:?} (seed {s:#x})",
                    input.id
                );
                let walk = match budget_walk(
                    &g,
                    n,
                    pick,
                    (n - m) / 2,
                    &mut rng,
                    &mut words,
                    &mut spare,
                    full_check_at,
                ) {
                    Ok(w) => w,
                    Err((e, tokens)) => {
                        failures.push(Failure {
                            what,
                            detail: format!("{e}\ntokens: {tokens:?}"),
                        });
                        continue;
                    }
                };
                tokens_total += walk.tokens.len();
                steps_tiered += walk.tiered_steps;
                if walk.by_eos {
                    by_eos += 1;
                } else {
                    by_budget += 1;
                }
                let body = match walk.tokens.split_last() {
                    Some((&last, body)) if walk.by_eos && g.is_eos(last) => body,
                    _ => &walk.tokens[..],
                };
                match check_output(&loaded, &g, &validators, body) {
                    Ok(name) => {
                        tools_called.insert(format!("{}/{name}", input.id));
                    }
                    Err(e) => failures.push(Failure {
                        what,
                        detail: format!("{e}\ntokens: {:?}", walk.tokens),
                    }),
                }
            }
        }
    }
    let t_walk = t_walk.elapsed();
    let mut sorted = min_tokens.clone();
    sorted.sort_unstable();
    let (lo, med, hi) = match sorted.as_slice() {
        [] => (0, 0, 0),
        s => (s[0], s[s.len() / 2], s[s.len() - 1]),
    };
    println!(
        "[{tok}] budget walks: {} sets ({} refused), {walks} walks ({at_minimum} at the exact minimum; \
         {per_budget} per budget, twice that at the minimum; picks uniform/eos/longest/shortest {per_pick:?}), \
         budgets {lowest_budget}..={highest_budget} (min, min+1, min+2, 2 min, 4 min), \
         min_tokens min/median/max {lo}/{med}/{hi}; mean {:.1} tokens per walk, \
         {by_eos} ended by EOS, {by_budget} by spending the budget, {steps_tiered} steps under a narrowed (tiered) mask, \
         {full_checks} whole-mask checks; {} distinct (set, tool) pairs called; {} failures",
        compiled.len(),
        refused.len(),
        tokens_total as f64 / walks.max(1) as f64,
        tools_called.len(),
        failures.len()
    );
    println!(
        "[{tok}] budget walk times: load {t_load:.2?}, compile {t_compile:.2?} ({cached} of {} sets cached), walks {t_walk:.2?}, total {:.2?}",
        inputs.len(),
        t_all.elapsed()
    );
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
fn budget_walks_gpt2() {
    budget_walks("gpt2");
}

#[test]
fn budget_walks_llama_3_2() {
    budget_walks("llama-3.2");
}

#[test]
fn budget_walks_qwen2_5() {
    budget_walks("qwen2.5");
}

#[test]
fn budget_walks_mistral_v0_1() {
    budget_walks("mistral-v0.1");
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
        match react_call(&decoded).and_then(|(name, args)| {
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
    assert!(tooldec_compiler::vocab::is_gguf(&gguf));
    assert!(!tooldec_compiler::vocab::is_gguf(&json));
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
