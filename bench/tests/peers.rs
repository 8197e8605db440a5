//! The peers run on exactly our language: along fixed walks through our
//! grammar, outlines-core's and llguidance's masks equal ours, token for
//! token. This is what makes the benchmark's ratios comparable.

use tooldec_bench::peers::{llg, outlines};
use tooldec_bench::{load_vocab, ours, walks, workloads};
use tooldec_compiler::Options;

#[test]
fn peers_serve_our_masks_on_bfcl_sets() {
    if tooldec_bench::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping the peer-equivalence test");
        return;
    }
    let vocab = load_vocab("gpt2").unwrap();
    let sets = workloads::bfcl("multiple");
    let ov = outlines::vocabulary(&vocab);
    let env = llg::tok_env(&vocab);
    let factory = llg::factory(&env);
    for set in sets.iter().step_by(50) {
        let spec = set.spec();
        let built = ours::build(&spec, &vocab).unwrap();
        let loaded = ours::load(&built.artifact);
        let g = loaded.artifact.grammar();
        let w = walks::walks(&g, &set.name, 3);
        let rx = tooldec_compiler::regex(&spec, &Options::default(), &vocab).unwrap();
        let mut us = ours::Ours::new(&g);
        let mut o = outlines::Outlines::build(&rx, &ov).unwrap();
        let d = walks::first_difference(&mut us, &mut o, &w, g.mask_words());
        assert!(d.is_none(), "{}: outlines-core differs: {d:?}", set.name);
        let mut l = llg::Llg::build(&factory, &rx).unwrap();
        let d = walks::first_difference(&mut us, &mut l, &w, g.mask_words());
        assert!(d.is_none(), "{}: llguidance differs: {d:?}", set.name);
        eprintln!("{}: {} walks agree", set.name, w.len());
    }
}

/// The known results the benchmarks check: the masks served along fixed
/// walks still hash to the values recorded in `bench/mask-hashes.txt`.
#[test]
fn recorded_mask_hashes_hold() {
    if tooldec_bench::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping the recorded mask hashes");
        return;
    }
    let vocab = load_vocab("gpt2").unwrap();
    for spec in ["bfcl:multiple:multiple_0", "scale:10", "scale:100"] {
        let set = tooldec_bench::report::resolve(spec).unwrap().spec();
        let built = ours::build(&set, &vocab).unwrap();
        let loaded = ours::load(&built.artifact);
        let g = loaded.artifact.grammar();
        let w = walks::walks(&g, spec, 8);
        let hash = walks::mask_hash(&mut ours::Ours::new(&g), &w, g.mask_words());
        tooldec_bench::record::check("gpt2", spec, 8, hash).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// The scale sets have the sizes asked for, distinct names, and only tools
/// the compiler lowers.
#[test]
fn scale_sets_are_distinct_real_tools() {
    if tooldec_bench::data_dir().is_none() {
        eprintln!("TOOLDEC_DATA unset: skipping the scale-set check");
        return;
    }
    let pool = workloads::pool();
    assert!(pool.len() > 3000, "pool of only {} tools", pool.len());
    let w = workloads::scale(pool, 10_000);
    assert_eq!(w.tools.len(), 10_000);
    let names: std::collections::HashSet<&str> = w
        .tools
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names.len(),
        10_000,
        "duplicate names in the 10,000-tool set"
    );
    // The set parses as compiler input.
    assert_eq!(w.spec().tools.len(), 10_000);
}
