//! [`Compiler::start`]: the masks served before the artifact is there,
//! computed on demand from the grammar's DFA, are the artifact's bit for
//! bit, and so is every accept or refusal; where only the artifact can
//! tell (a tight budget), the matcher moves to it and goes on unchanged.

use std::sync::Arc;

use tooldec_compiler::spec::{self, ToolSet};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{CallFormat, Compiler, Loaded, Options, PendingMatcher};
use tooldec_runtime::layout::mask_words;
use tooldec_testkit::walk::{seed, SplitMix64, Walker};
use tooldec_testkit::{bfcl, data_dir, data_file, example};

fn opts(format: &str) -> Options {
    Options {
        format: CallFormat::load(format).unwrap(),
        ..Options::default()
    }
}

/// Counts of what the comparisons covered.
#[derive(Default, Debug)]
struct Seen {
    /// Masks served early and compared.
    early_masks: usize,
    /// Matchers that had to move to the artifact (a budget the byte bound
    /// could not decide).
    moved: usize,
}

/// Walks `walks` random complete outputs of `set`'s artifact, each with a
/// matcher of a deferred compile (so nothing moves it to the artifact but
/// its own need) beside the artifact's matcher, and requires equal masks
/// and equal answers for the walk's tokens and for random other tokens.
fn compare(
    compiler: &Arc<Compiler>,
    set: &ToolSet,
    o: &Options,
    budgets: &[Option<u32>],
    walks: usize,
    label: &str,
    seen: &mut Seen,
) {
    let want = compiler.build(set, o).unwrap();
    let g = want.grammar.grammar();
    let vocab_len = compiler.vocab().len();
    let words = g.mask_words();
    let mut walker = Walker::new(&g, vocab_len);
    let (mut a, mut b) = (vec![0u32; words], vec![0u32; words]);
    for (w, budget) in (0..walks).flat_map(|w| budgets.iter().map(move |b| (w, *b))) {
        let mut rng = SplitMix64::new(seed(label, w as u64, budget.unwrap_or(0) as u64));
        let start = match budget {
            None => g.matcher(),
            Some(n) => match g.matcher_with_budget(n) {
                Ok(m) => m,
                Err(_) => continue, // below the fewest tokens: nothing to serve
            },
        };
        let tokens = walker.walk_from(&mut rng, 4000, start).unwrap();
        let mut art = want.grammar.matcher(None, budget, 0).unwrap();
        let mut pending = compiler.start_deferred(set, o).unwrap();
        if pending.is_ready() {
            // An earlier walk moved to the artifact, which the compiler
            // kept: forget it, to be served early again.
            compiler.clear_cache();
            pending = compiler.start_deferred(set, o).unwrap();
        }
        let mut early: PendingMatcher = pending.matcher(None, budget, 0).unwrap();
        let mut moved = !early.is_early();
        for (i, &t) in tokens.iter().enumerate() {
            let was_early = early.is_early();
            early.fill_mask(&mut a).unwrap();
            art.fill_mask(&mut b);
            assert!(
                a == b,
                "{label} walk {w} budget {budget:?} step {i}: the mask served {} differs from the artifact's",
                if was_early { "early" } else { "after moving" }
            );
            if was_early && early.is_early() {
                seen.early_masks += 1;
            }
            // A refused or allowed token elsewhere answers alike, without
            // moving either matcher.
            let probe = rng.below(vocab_len as u64) as u32;
            let allowed = b[(probe >> 5) as usize] >> (probe & 31) & 1 == 1;
            if !allowed {
                assert!(
                    !early.accept_token(probe).unwrap(),
                    "{label} step {i}: token {probe} accepted early, refused by the artifact"
                );
            }
            // A draft of the next walk tokens and the random one: the same
            // valid prefix, and neither matcher moves.
            let mut draft = tokens[i..tokens.len().min(i + 3)].to_vec();
            draft.push(probe);
            assert_eq!(
                early.validate_tokens(&draft).unwrap(),
                art.validate_tokens(&draft),
                "{label} walk {w} step {i}: draft {draft:?}"
            );
            // Jump-forward: nothing early, the artifact's bytes after.
            let (mut fa, mut fb) = ([0u8; 64], [0u8; 64]);
            let n = early.forced_bytes(&mut fa).unwrap();
            if early.is_early() {
                assert_eq!(n, 0);
            } else {
                let m = art.forced_bytes(&mut fb);
                assert_eq!(fa[..n], fb[..m], "{label} step {i}");
            }
            let (x, y) = (early.accept_token(t).unwrap(), art.accept_token(t));
            assert!(
                x && y,
                "{label} walk {w} step {i}: token {t} accepted early {x}, by the artifact {y}"
            );
            moved |= !early.is_early();
        }
        assert!(early.is_terminated() && art.is_terminated());
        seen.moved += moved as usize;
    }
}

#[test]
fn early_masks_are_the_artifacts_for_every_shipped_format() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let sets = [("weather", example("weather.json"))];
    let mut seen = Seen::default();
    for format in CallFormat::shipped_names() {
        for (name, set) in &sets {
            let o = opts(format);
            let label = format!("{format} {name}");
            compare(
                &compiler,
                set,
                &o,
                &[None, Some(12), Some(200)],
                2,
                &label,
                &mut seen,
            );
        }
    }
    eprintln!("{seen:?}");
    // Unbudgeted walks are served early all the way; tight budgets move.
    assert!(seen.early_masks > 1000, "{seen:?}");
    assert!(seen.moved > 0, "no budget needed the artifact: {seen:?}");
}

#[test]
fn a_started_compile_lands_and_is_kept() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let set = example("weather.json");
    let o = opts("hermes");
    let pending = compiler.start(&set, &o).unwrap();
    let mut m = pending.matcher(None, None, 4).unwrap();
    let mut mask = vec![0u32; mask_words(compiler.vocab().len() as u32)];
    m.fill_mask(&mut mask).unwrap();
    let loaded = pending.wait().unwrap();
    // The compile's early state is let go when the artifact lands: what
    // the early matcher still holds, it frees when it moves.
    assert_eq!(pending.early_states_built(), None);
    let want = compiler.build(&set, &o).unwrap();
    assert!(loaded.grammar.artifact().payload() == want.grammar.artifact().payload());
    // The first mask was the artifact's, whenever it was served.
    let mut first = vec![0u32; mask.len()];
    want.grammar.grammar().matcher().fill_mask(&mut first);
    assert!(mask == first);
    // The landed artifact is kept: the same set starts ready.
    assert!(compiler.start(&set, &o).unwrap().is_ready());
    // A matcher picks the artifact up on its next call.
    m.fill_mask(&mut mask).unwrap();
    assert!(!m.is_early());
}

/// weather.json in hermes for GPT-2: its compiler (nothing kept), the
/// set, the options, the artifact, and one complete output of it.
fn weather_walk(seed: u64) -> (Arc<Compiler>, ToolSet, Options, Loaded, Vec<u32>) {
    let compiler = Arc::new(Compiler::new(Vocab::builtin_gpt2().unwrap()));
    let (set, o) = (example("weather.json"), opts("hermes"));
    let want = compiler.build(&set, &o).unwrap();
    compiler.clear_cache();
    let tokens = Walker::new(&want.grammar.grammar(), compiler.vocab().len())
        .walk(&mut SplitMix64::new(seed), 4000)
        .unwrap();
    (compiler, set, o, want, tokens)
}

#[test]
fn rollback_before_and_after_the_artifact() {
    let (compiler, set, o, want, tokens) = weather_walk(7);
    let g = want.grammar.grammar();
    let pending = compiler.start_deferred(&set, &o).unwrap();
    let mut m = pending.matcher(None, None, 3).unwrap();
    let mut art = want.grammar.matcher(None, None, 3).unwrap();
    let half = tokens.len() / 2;
    for &t in &tokens[..half] {
        assert!(m.accept_token(t).unwrap() && art.accept_token(t));
    }
    assert!(!m.rollback(4), "beyond the rollback capacity");
    assert!(m.rollback(2) && art.rollback(2));
    for &t in &tokens[half - 2..half] {
        assert!(m.accept_token(t).unwrap() && art.accept_token(t));
    }
    let rest = &tokens[half..];
    for &t in rest {
        assert!(m.accept_token(t).unwrap() && art.accept_token(t));
    }
    // After the end, EOS again is taken and recorded by both.
    let eos = compiler.vocab().eos[0];
    assert!(m.is_terminated() && m.accept_token(eos).unwrap() && art.accept_token(eos));
    assert!(!m.accept_token(tokens[0]).unwrap() && !art.accept_token(tokens[0]));
    // Moving to the artifact keeps the history: three tokens back.
    let mut m = m.into_matcher().unwrap();
    assert!(m.rollback(3) && art.rollback(3));
    assert!(!m.rollback(1));
    let (mut a, mut b) = (vec![0u32; g.mask_words()], vec![0u32; g.mask_words()]);
    m.fill_mask(&mut a);
    art.fill_mask(&mut b);
    assert!(a == b);
}

#[test]
fn reset_returns_to_the_start_early_and_late() {
    let (compiler, set, o, want, tokens) = weather_walk(11);
    let g = want.grammar.grammar();
    let first = |budget: Option<u32>| {
        let mut mask = vec![0u32; g.mask_words()];
        let m = want.grammar.matcher(None, budget, 0).unwrap();
        m.fill_mask(&mut mask);
        mask
    };
    let mut a = vec![0u32; g.mask_words()];
    let pending = compiler.start_deferred(&set, &o).unwrap();
    let mut m = pending.matcher(None, None, 2).unwrap();
    for &t in &tokens[..5] {
        assert!(m.accept_token(t).unwrap());
    }
    m.reset().unwrap();
    assert!(m.is_early(), "a reset before the artifact stays early");
    assert!(!m.rollback(1), "nothing to roll back after a reset");
    m.fill_mask(&mut a).unwrap();
    assert!(a == first(None));
    for &t in &tokens {
        assert!(m.accept_token(t).unwrap(), "token {t} after the reset");
    }
    assert!(m.is_terminated());
    // After the artifact, with a budget the walk fits only when the reset
    // gave back what the first five tokens spent.
    pending.wait().unwrap();
    let budget = Some(tokens.len() as u32 + 1);
    let mut m = pending.matcher(None, budget, 2).unwrap();
    for &t in &tokens[..5] {
        assert!(m.accept_token(t).unwrap());
    }
    let mut fresh = pending.matcher(None, budget, 0).unwrap();
    let fits = |m: &mut PendingMatcher| tokens.iter().all(|&t| m.accept_token(t).unwrap());
    assert!(
        fits(&mut fresh) && !fits(&mut m),
        "the budget binds: five tokens spent, the walk does not fit"
    );
    let mut m = pending.matcher(None, budget, 2).unwrap();
    for &t in &tokens[..5] {
        assert!(m.accept_token(t).unwrap());
    }
    m.reset().unwrap();
    assert!(!m.is_early() && !m.is_terminated());
    m.fill_mask(&mut a).unwrap();
    assert!(a == first(budget));
    for &t in &tokens {
        assert!(m.accept_token(t).unwrap(), "token {t} after the reset");
    }
    assert!(m.is_terminated());
}

#[test]
fn a_short_mask_buffer_is_an_error_early_and_late() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let set = example("weather.json");
    let pending = compiler.start_deferred(&set, &opts("hermes")).unwrap();
    let mut m = pending.matcher(None, None, 0).unwrap();
    let e = m.fill_mask(&mut [0u32; 3]).unwrap_err();
    assert!(
        m.is_early(),
        "a short buffer must not wait for the artifact"
    );
    assert!(e.message().contains("3 words"), "{e}");
    pending.wait().unwrap();
    let e = m.fill_mask(&mut [0u32; 3]).unwrap_err();
    assert!(!m.is_early() && e.message().contains("3 words"), "{e}");
}

#[test]
fn an_unknown_entry_is_a_usage_error() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let pending = compiler
        .start_deferred(&example("weather.json"), &opts("hermes"))
        .unwrap();
    let Err(e) = pending.matcher(Some("no-such-entry"), None, 0) else {
        panic!("an unknown entry gave a matcher");
    };
    assert_eq!(e.kind(), tooldec_compiler::ErrorKind::Usage, "{e}");
}

#[test]
fn start_reports_schema_errors_at_once() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let bad = spec::parse(
        "bad.json",
        r#"[{"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "string", "pattern": "(a"}}}}]"#,
    )
    .unwrap();
    let Err(e) = compiler.start(&bad, &opts("hermes")) else {
        panic!("a contradictory schema started");
    };
    assert!(e.message().contains("/properties/x"), "{e}");
}

#[test]
fn bfcl_early_masks_with_real_tokenizers() {
    let Some(_) = data_dir() else {
        eprintln!("TOOLDEC_DATA is unset: skipping the real-tokenizer comparison");
        return;
    };
    let sets = bfcl::load_sets(&data_file("tools/bfcl/BFCL_v4_parallel_multiple.json"));
    let mut seen = Seen::default();
    for (tok, format) in [
        ("llama-3.2", "hermes"),
        ("qwen2.5", "qwen3-coder"),
        ("gpt-oss", "gpt-oss"),
    ] {
        let vocab = Vocab::from_tokenizer_json(
            &data_file(&format!("tokenizers/{tok}/tokenizer.json")),
            &[],
        )
        .unwrap();
        let compiler = Arc::new(Compiler::new(vocab));
        let o = opts(format);
        for s in sets.iter().step_by(40) {
            let set = spec::parse(&s.id, &s.text).unwrap();
            let label = format!("{tok} {format} {}", s.id);
            compare(
                &compiler,
                &set,
                &o,
                &[None, Some(300)],
                1,
                &label,
                &mut seen,
            );
        }
    }
    eprintln!("{seen:?}");
    assert!(seen.early_masks > 100, "{seen:?}");
}

/// `n` tools of a few typed parameters each, every name distinct.
fn many_tools(n: usize) -> ToolSet {
    let tools: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({"type": "function", "function": {
                "name": format!("tool_{i}_lookup"),
                "parameters": {"type": "object", "properties": {
                    format!("query_{i}"): {"type": "string"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50},
                    "mode": {"enum": ["fast", "full", format!("mode_{i}")]}
                }, "required": [format!("query_{i}")]}
            }})
        })
        .collect();
    spec::parse("many.json", &serde_json::Value::Array(tools).to_string()).unwrap()
}

#[test]
fn the_first_mask_builds_a_small_part_of_the_dfa() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let set = many_tools(300);
    let o = opts("hermes");
    let pending = compiler.start_deferred(&set, &o).unwrap();
    let mut m = pending.matcher(None, None, 0).unwrap();
    let words = mask_words(compiler.vocab().len() as u32);
    let mut first = vec![0u32; words];
    m.fill_mask(&mut first).unwrap();
    assert!(m.is_early());
    let early = pending.early_states_built().unwrap();
    let loaded = pending.wait().unwrap();
    let mut want = vec![0u32; words];
    loaded.grammar.grammar().matcher().fill_mask(&mut want);
    assert_eq!(first, want);
    // The whole subset construction made every state; the first mask only
    // those its tokens reach.
    let all = loaded.report.dfa_states;
    assert!(
        early * 20 < all,
        "{early} of {all} DFA states built for the first mask"
    );
}

#[test]
fn the_dfa_state_bound_is_reported_by_the_compile_not_the_start() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let compiler = Arc::new(Compiler::new(vocab));
    let o = Options {
        max_states: 60,
        ..opts("hermes")
    };
    let pending = compiler
        .start_deferred(&example("weather.json"), &o)
        .expect("lowering is within its bounds");
    let Err(err) = pending.wait() else {
        panic!("a grammar over the state bound compiled");
    };
    assert!(err.message().contains("60"), "{err}");
}
