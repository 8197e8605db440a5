//! Serving allocates nothing: a counting global allocator watches
//! `fill_mask`, `accept_token(s)`, `validate_tokens`, `rollback`,
//! `forced_bytes`, budgeted masks and batched fills, on plain, rollback and
//! owned matchers, over whole random walks.

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::{fill_batch, Checkpoint, Matcher, RollbackMatcher, SharedGrammar};
use tooldec_testkit::alloc::{allocs, Counting};
use tooldec_testkit::walk::{seed, SplitMix64};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns what it returned and how many allocations it made.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = allocs();
    let out = f();
    (out, allocs() - before)
}

fn weather() -> SharedGrammar {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let set = spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        zstd_level: None,
        ..Options::default()
    };
    let bytes = compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact;
    SharedGrammar::from_bytes(&bytes).unwrap()
}

/// The first allowed id at or after a random start (no allocation).
fn pick(rng: &mut SplitMix64, words: &[u32], vocab: usize) -> Option<u32> {
    let start = rng.below(vocab as u64) as usize;
    (0..vocab)
        .map(|i| ((start + i) % vocab) as u32)
        .find(|&t| words[(t / 32) as usize] & (1 << (t % 32)) != 0)
}

#[test]
fn the_counter_counts() {
    // A test that cannot fail proves nothing: the counter must see this.
    let (v, n) = counted(|| vec![1u8; 100]);
    assert_eq!(v.len(), 100);
    assert!(n >= 1, "the counting allocator saw {n} allocations");
}

#[test]
fn serving_allocates_nothing() {
    let sg = weather();
    let g = sg.grammar();
    let vocab = g.mask_width();
    // Buffers and histories are the caller's, made before serving.
    let mut words = vec![0u32; g.mask_words()];
    let mut batch = vec![0u32; 4 * (g.mask_words() + 3)];
    let mut forced = [0u8; 128];
    let mut history = [Checkpoint::default(); 6];
    let mut owned = sg.matcher(None, Some(g.min_tokens() + 40), 6).unwrap();
    let mut draft = [0u32; 8];
    let mut total = 0u64;
    let mut steps = 0u64;
    for walk in 0..20u64 {
        let mut rng = SplitMix64::new(seed("alloc", walk, 0));
        let ((), n) = counted(|| {
            let mut m: Matcher<'_> = if walk % 2 == 0 {
                g.matcher()
            } else {
                g.matcher_with_budget(g.min_tokens() + 20).unwrap()
            };
            let mut rm = RollbackMatcher::new(m, &mut history[..]);
            owned.reset();
            for _ in 0..200 {
                m.fill_mask(&mut words);
                rm.fill_mask(&mut words);
                owned.fill_mask(&mut words);
                let _ = m.forced_bytes(&mut forced);
                let _ = rm.forced_bytes(&mut forced);
                let _ = owned.forced_bytes(&mut forced);
                assert!(fill_batch(
                    [&m, rm.matcher(), &m, rm.matcher()],
                    &mut batch,
                    g.mask_words() + 3
                ));
                // Owned matchers batch the same way (one handle type per
                // batch: the rows of an engine's batch are all alike).
                assert!(fill_batch(
                    [owned.matcher(), owned.matcher()],
                    &mut batch,
                    g.mask_words() + 3
                ));
                let _ = g.fill_budget_mask(m.state().unwrap_or(0), 3, &mut words);
                m.fill_mask(&mut words);
                let Some(t) = pick(&mut rng, &words, vocab) else {
                    break;
                };
                // A draft: the sampled token and a few more guesses.
                draft[0] = t;
                for (i, d) in draft.iter_mut().enumerate().skip(1) {
                    *d = (t + i as u32 * 97) % vocab as u32;
                }
                let _ = m.validate_tokens(&draft);
                let _ = rm.validate_tokens(&draft);
                let _ = owned.validate_tokens(&draft);
                assert!(m.accept_token(t));
                assert!(rm.accept_token(t));
                let _ = owned.accept_tokens(&draft[..1]);
                if rm.depth() >= 3 && t % 3 == 0 {
                    assert!(rm.rollback(2));
                    let _ = owned.rollback(owned.depth().min(2));
                    rm.accept_tokens(&[]);
                    m = *rm.matcher();
                }
                steps += 1;
                if m.is_terminated() {
                    break;
                }
            }
        });
        total += n;
    }
    assert!(steps > 500, "{steps} steps");
    assert_eq!(
        total, 0,
        "serving allocated {total} times over {steps} steps"
    );
}
