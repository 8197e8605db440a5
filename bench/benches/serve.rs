//! Per-call serving costs, criterion style: tooldec's `fill_mask` and
//! `accept_token`, outlines-core's index lookups written into the same
//! bitmask, and llguidance's `compute_mask` / `consume_token`, at the states
//! of fixed walks through the same grammar (each iteration takes the next
//! step, cycling); tooldec's again with each walk's matcher given the
//! tightest budget the walk fits in (its length). Before timing, tooldec's masks along the walks must hash
//! to the recorded value and both peers' masks must equal ours.
//!
//! `TOOLDEC_DATA` must be set. `TOOLDEC_BENCH_TOKENIZERS` (default
//! `llama-3.2`) and `TOOLDEC_BENCH_WORKLOADS` (default
//! `bfcl:multiple:multiple_0,scale:100`) choose the grid; outlines-core is
//! built only for workloads of at most 100 tools (its index build takes
//! minutes beyond).

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use llguidance::ParserFactory;
use outlines_core::prelude::Index;
use tooldec_bench::peers::{llg, outlines};
use tooldec_bench::report::resolve;
use tooldec_bench::{grid, load_vocab, ours, record, walks, Engine};
use tooldec_compiler::Options;
use tooldec_runtime::Matcher;

const WALKS: usize = 8;

/// A criterion group of one tokenizer and workload.
type Group<'c> = BenchmarkGroup<'c, WallTime>;

/// A matcher at each step of the walks, and the token the walk takes there.
type Steps<'g> = Vec<(Matcher<'g>, u32)>;

fn serve(c: &mut Criterion) {
    if tooldec_bench::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping the serving benchmarks");
        return;
    }
    for tok in grid("TOOLDEC_BENCH_TOKENIZERS", "llama-3.2") {
        let vocab = load_vocab(&tok).expect("tokenizer");
        for spec in grid(
            "TOOLDEC_BENCH_WORKLOADS",
            "bfcl:multiple:multiple_0,scale:100",
        ) {
            let w = resolve(&spec).expect("workload");
            let set = w.spec();
            let built = ours::build(&set, &vocab).expect("compile");
            let loaded = ours::load(&built.artifact);
            let g = loaded.artifact.grammar();
            let ws = walks::walks(&g, &spec, WALKS);
            let words = g.mask_words();
            let hash = walks::mask_hash(&mut ours::Ours::new(&g), &ws, words);
            record::check(&tok, &spec, WALKS, hash).unwrap_or_else(|e| panic!("{e}"));

            // Our matcher at every step, and the token taken there.
            let mut steps = Vec::new();
            for walk in &ws {
                let mut m = g.matcher();
                for &t in walk {
                    steps.push((m, t));
                    assert!(m.accept_token(t));
                }
            }
            // The same steps under the tightest budget each walk fits in
            // (its own length): most masks come from the budget tiers.
            let mut tight = Vec::new();
            for walk in &ws {
                let mut m = g
                    .matcher_with_budget(walk.len() as u32)
                    .expect("a walk fits its own length");
                for &t in walk {
                    tight.push((m, t));
                    assert!(
                        m.accept_token(t),
                        "a budget of the walk's length refused it"
                    );
                }
            }
            let mut buf = vec![0u32; words];
            let mut group = c.benchmark_group(format!("serve/{tok}/{spec}"));
            // One step counter for every benchmark of the group: each
            // iteration takes the next step, cycling.
            let mut i = 0;
            bench_ours(&mut group, &ws, &steps, &tight, &mut buf, &mut i);
            let rx = tooldec_compiler::regex(&set, &Options::default(), &vocab).expect("regex");
            if set.tools.len() <= 100 {
                let ov = outlines::vocabulary(&vocab);
                let mut o = outlines::Outlines::build(&rx, &ov).expect("outlines-core index");
                let d = walks::first_difference(&mut ours::Ours::new(&g), &mut o, &ws, words);
                assert!(d.is_none(), "{spec}: outlines-core's masks differ: {d:?}");
                bench_outlines(&mut group, &o.index, &ws, &mut buf, &mut i);
            }
            let env = llg::tok_env(&vocab);
            let f = llg::factory(&env);
            let mut l = llg::Llg::build(&f, &rx).expect("llguidance");
            let d = walks::first_difference(&mut ours::Ours::new(&g), &mut l, &ws, words);
            assert!(d.is_none(), "{spec}: llguidance's masks differ: {d:?}");
            bench_llguidance(&mut group, &f, &rx, &ws, &mut buf);
            group.finish();
        }
    }
}

/// tooldec's calls at the walks' `steps`, and at the `tight` (budgeted)
/// ones; `buf` is one mask.
fn bench_ours(
    group: &mut Group<'_>,
    ws: &[Vec<u32>],
    steps: &Steps<'_>,
    tight: &Steps<'_>,
    buf: &mut [u32],
    i: &mut usize,
) {
    let words = buf.len();
    group.bench_function("tooldec/fill_mask", |b| {
        b.iter(|| {
            *i = (*i + 1) % steps.len();
            steps[*i].0.fill_mask(buf);
        })
    });
    group.bench_function("tooldec/accept_token", |b| {
        b.iter(|| {
            *i = (*i + 1) % steps.len();
            let (mut m, t) = steps[*i];
            std::hint::black_box(m.accept_token(t))
        })
    });
    group.bench_function("tooldec/fill_mask_budget", |b| {
        b.iter(|| {
            *i = (*i + 1) % tight.len();
            tight[*i].0.fill_mask(buf);
        })
    });
    group.bench_function("tooldec/accept_token_budget", |b| {
        b.iter(|| {
            *i = (*i + 1) % tight.len();
            let (mut m, t) = tight[*i];
            std::hint::black_box(m.accept_token(t))
        })
    });
    // The engine paths: a 4-token speculative draft checked without
    // advancing; accepted and rolled back through a fixed-capacity
    // history; the forced continuation; a batch of 8 rows.
    const DRAFT: usize = 4;
    let drafts: Vec<(usize, usize)> = ws
        .iter()
        .scan(0, |start, w| {
            let s = *start;
            *start += w.len();
            Some((s, w.len()))
        })
        .flat_map(|(s, n)| (0..n.saturating_sub(DRAFT)).map(move |k| (s + k, s + n)))
        .collect();
    let tokens: Vec<u32> = steps.iter().map(|&(_, t)| t).collect();
    group.bench_function("tooldec/validate_draft4", |b| {
        b.iter(|| {
            *i = (*i + 1) % drafts.len();
            let (at, _) = drafts[*i];
            std::hint::black_box(steps[at].0.validate_tokens(&tokens[at..at + DRAFT]))
        })
    });
    group.bench_function("tooldec/accept4+rollback4", |b| {
        b.iter(|| {
            *i = (*i + 1) % drafts.len();
            let (at, _) = drafts[*i];
            let mut rm = tooldec_runtime::RollbackMatcher::new(
                steps[at].0,
                [tooldec_runtime::Checkpoint::default(); DRAFT + 1],
            );
            assert_eq!(rm.accept_tokens(&tokens[at..at + DRAFT]), DRAFT);
            std::hint::black_box(rm.rollback(DRAFT))
        })
    });
    let mut forced = [0u8; 256];
    group.bench_function("tooldec/forced_bytes", |b| {
        b.iter(|| {
            *i = (*i + 1) % steps.len();
            std::hint::black_box(steps[*i].0.forced_bytes(&mut forced))
        })
    });
    let mut batch = vec![0u32; 8 * words];
    group.bench_function("tooldec/fill_batch8", |b| {
        b.iter(|| {
            *i = (*i + 1) % steps.len();
            let rows = (0..8).map(|r| &steps[(*i + r * 7) % steps.len()].0);
            std::hint::black_box(tooldec_runtime::fill_batch(rows, &mut batch, words))
        })
    });
}

/// outlines-core's index lookups at the walks' steps, the allowed tokens
/// written into the same bitmask `buf` as ours.
fn bench_outlines(
    group: &mut Group<'_>,
    idx: &Index,
    ws: &[Vec<u32>],
    buf: &mut [u32],
    i: &mut usize,
) {
    // outlines-core's state at every step.
    let mut ostates = Vec::new();
    for walk in ws {
        let mut s = idx.initial_state();
        for &t in walk {
            ostates.push((s, t));
            if let Some(n) = idx.next_state(&s, &t) {
                s = n;
            }
        }
    }
    group.bench_function("outlines-core/fill_mask", |b| {
        b.iter(|| {
            *i = (*i + 1) % ostates.len();
            buf.fill(0);
            if let Some(it) = idx.allowed_tokens_iter(&ostates[*i].0) {
                for &t in it {
                    buf[t as usize / 32] |= 1 << (t % 32);
                }
            }
        })
    });
    group.bench_function("outlines-core/accept_token", |b| {
        b.iter(|| {
            *i = (*i + 1) % ostates.len();
            let (s, t) = ostates[*i];
            std::hint::black_box(idx.next_state(&s, &t))
        })
    });
}

/// llguidance's `compute_mask` and `consume_token` along the walks.
fn bench_llguidance(
    group: &mut Group<'_>,
    f: &ParserFactory,
    rx: &str,
    ws: &[Vec<u32>],
    buf: &mut [u32],
) {
    // llguidance keeps lexer caches inside its matcher: time it as a
    // decoder drives it, one walk after another, one mask per step.
    let mut l = llg::Llg::build(f, rx).expect("llguidance");
    let flat: Vec<(bool, u32)> = ws
        .iter()
        .flat_map(|w| w.iter().enumerate().map(|(k, &t)| (k == 0, t)))
        .collect();
    let mut j = 0;
    group.bench_function("llguidance/fill_mask+accept", |b| {
        b.iter(|| {
            let (first, t) = flat[j];
            j = (j + 1) % flat.len();
            if first {
                l.reset();
            }
            l.fill_mask(buf);
            assert!(l.accept(t));
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(500));
    targets = serve
}
criterion_main!(benches);
