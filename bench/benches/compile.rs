//! Build costs, criterion style: tooldec's whole compile (every mask
//! precomputed), outlines-core's `Index::new` and llguidance's parser
//! creation on the same grammar. Each run first checks the masks served
//! along fixed walks against the recorded hash.
//!
//! `TOOLDEC_DATA` must be set; `TOOLDEC_BENCH_TOKENIZERS` (default
//! `llama-3.2`) and `TOOLDEC_BENCH_WORKLOADS` (default
//! `bfcl:multiple:multiple_0`) choose the grid.

use criterion::{criterion_group, criterion_main, Criterion};
use tooldec_bench::peers::{llg, outlines};
use tooldec_bench::report::resolve;
use tooldec_bench::{grid, load_vocab, ours, record, walks};
use tooldec_compiler::Options;

fn build(c: &mut Criterion) {
    if tooldec_bench::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping the compile benchmarks");
        return;
    }
    for tok in grid("TOOLDEC_BENCH_TOKENIZERS", "llama-3.2") {
        let vocab = load_vocab(&tok).expect("tokenizer");
        for spec in grid("TOOLDEC_BENCH_WORKLOADS", "bfcl:multiple:multiple_0") {
            let set = resolve(&spec).expect("workload").spec();
            let mut group = c.benchmark_group(format!("build/{tok}/{spec}"));
            group.bench_function("tooldec/compile", |b| {
                b.iter(|| {
                    let built = ours::build(&set, &vocab).expect("compile");
                    std::hint::black_box(built.artifact.len())
                })
            });
            let built = ours::build(&set, &vocab).expect("compile");
            let loaded = ours::load(&built.artifact);
            let g = loaded.artifact.grammar();
            let ws = walks::walks(&g, &spec, 8);
            let hash = walks::mask_hash(&mut ours::Ours::new(&g), &ws, g.mask_words());
            record::check(&tok, &spec, 8, hash).unwrap_or_else(|e| panic!("{e}"));
            group.bench_function("tooldec/load", |b| {
                b.iter(|| std::hint::black_box(ours::load(&built.artifact).load))
            });

            let rx = tooldec_compiler::regex(&set, &Options::default(), &vocab).expect("regex");
            let ov = outlines::vocabulary(&vocab);
            group.bench_function("outlines-core/index", |b| {
                b.iter(|| {
                    outlines::Outlines::build(&rx, &ov)
                        .expect("index")
                        .index
                        .vocab_size()
                })
            });
            let env = llg::tok_env(&vocab);
            let f = llg::factory(&env);
            group.bench_function("llguidance/create_parser", |b| {
                b.iter(|| llg::Llg::build(&f, &rx).is_ok())
            });
            group.finish();
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = build
}
criterion_main!(benches);
