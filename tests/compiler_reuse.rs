//! The in-process [`Compiler`]: whatever it reuses (the token trie, the
//! walks inside regions, whole artifacts), an artifact is byte for byte the
//! one a fresh one-off compile writes, built cold, after other tool sets,
//! under a tiny cache bound, or from several threads at once; and the
//! crossing's regions change no byte against walking every token plainly.

use std::sync::Arc;

use tooldec_compiler::spec::{self, ToolSet};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, CallFormat, Compiler, Options};
use tooldec_testkit::{bfcl, data_dir, data_file, example};

fn opts(format: &str) -> Options {
    Options {
        format: CallFormat::load(format).unwrap(),
        zstd_level: None,
        ..Options::default()
    }
}

/// The one-off compile's payload.
fn one_off(set: &ToolSet, vocab: &Vocab, o: &Options) -> Vec<u8> {
    compile(set, vocab, o, &mut |_| {}).unwrap().artifact
}

/// A tool set with string, number, enum, array and nested properties, so
/// that string bodies, digits and free text all meet their regions.
fn mixed() -> ToolSet {
    let text = r#"[{"type": "function", "function": {"name": "book", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "nights": {"type": "integer", "minimum": 1},
        "price": {"type": "number"}, "kind": {"enum": ["hotel", "hostel"]},
        "guests": {"type": "array", "items": {"type": "string", "maxLength": 12}},
        "note": {"type": "object", "properties": {"text": {"type": "string", "pattern": "^[a-z ]+$"}}}},
        "required": ["city"]}}},
        {"type": "function", "function": {"name": "cancel", "parameters": {"type": "object",
        "properties": {"id": {"type": "string", "format": "uuid"}}, "required": ["id"]}}}]"#;
    spec::parse("mixed.json", text).unwrap()
}

#[test]
fn regions_change_no_byte_for_any_shipped_format() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let plain = Compiler::without_regions(vocab.clone());
    let reusing = Compiler::new(vocab.clone());
    let sets = [example("weather.json"), mixed()];
    for format in CallFormat::shipped_names() {
        let o = opts(format);
        for set in &sets {
            let want = one_off(set, &vocab, &o);
            let without = plain.compile_bytes(set, &o).unwrap();
            assert!(
                without.artifact == want,
                "{format}: the plain walks differ from the one-off compile"
            );
            let with = reusing.compile_bytes(set, &o).unwrap();
            assert!(
                with.artifact == want,
                "{format}: reused regions change the artifact"
            );
            // The comparison means something only if the two walk
            // differently: regions leave most trie nodes unvisited.
            assert!(
                with.report.nodes_visited < without.report.nodes_visited,
                "{format}: regions visited {} trie nodes, plain walks {}",
                with.report.nodes_visited,
                without.report.nodes_visited
            );
        }
    }
    assert!(
        reusing.cache_bytes() > 0,
        "the regions' walks were not kept"
    );
    assert_eq!(plain.cache_bytes(), 0, "plain walks kept region walks");
}

#[test]
fn kept_artifacts_and_cleared_caches_give_the_same_bytes() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let c = Compiler::new(vocab.clone());
    let o = opts("hermes");
    let set = mixed();
    let want = one_off(&set, &vocab, &o);
    let first = c.compile(&set, &o).unwrap();
    assert!(first.grammar.artifact().payload() == want.as_slice());
    // The same input again is the kept artifact itself.
    let again = c.compile(&set, &o).unwrap();
    assert!(std::ptr::eq(
        first.grammar.artifact().payload().as_ptr(),
        again.grammar.artifact().payload().as_ptr()
    ));
    // Other options are another artifact.
    let react = c.compile(&set, &opts("react")).unwrap();
    assert!(react.grammar.artifact().payload() != want.as_slice());
    c.clear_cache();
    assert_eq!(c.cache_bytes(), 0);
    let cold = c.build(&set, &o).unwrap();
    assert!(cold.grammar.artifact().payload() == want.as_slice());
}

#[test]
fn a_tiny_cache_bound_empties_the_cache_and_changes_nothing() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    // Smaller than one region's walk: nothing is kept, everything is redone.
    let c = Compiler::with_cache_bytes(vocab.clone(), 1 << 10);
    let o = opts("react");
    for set in [example("weather.json"), mixed(), example("tiny.json")] {
        let got = c.compile(&set, &o).unwrap();
        assert!(got.grammar.artifact().payload() == one_off(&set, &vocab, &o).as_slice());
        assert!(c.cache_bytes() <= 1 << 10);
    }
}

#[test]
fn one_compiler_serves_threads_at_once() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let c = Arc::new(Compiler::new(vocab.clone()));
    let jobs: Vec<(ToolSet, &str)> = vec![
        (example("weather.json"), "hermes"),
        (mixed(), "hermes"),
        (mixed(), "qwen3-coder"),
        (example("weather.json"), "llama3"),
    ];
    let want: Vec<Vec<u8>> = jobs
        .iter()
        .map(|(set, f)| one_off(set, &vocab, &opts(f)))
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|(set, f)| {
                let c = c.clone();
                scope.spawn(move || c.build(set, &opts(f)).unwrap())
            })
            .collect();
        for (h, want) in handles.into_iter().zip(&want) {
            let got = h.join().unwrap();
            assert!(got.grammar.artifact().payload() == want.as_slice());
        }
    });
}

#[test]
fn bfcl_sets_with_real_tokenizers_are_unchanged_by_reuse() {
    let Some(_) = data_dir() else {
        eprintln!("TOOLDEC_DATA is unset: skipping the real-tokenizer comparison");
        return;
    };
    let sets = bfcl::load_sets(&data_file("tools/bfcl/BFCL_v4_multiple.json"));
    assert!(sets.len() >= 200, "BFCL multiple has {} lines", sets.len());
    for (tok, format) in [("llama-3.2", "hermes"), ("qwen2.5", "qwen3-coder")] {
        let vocab = Vocab::from_tokenizer_json(
            &data_file(&format!("tokenizers/{tok}/tokenizer.json")),
            &[],
        )
        .unwrap();
        let plain = Compiler::without_regions(vocab.clone());
        let reusing = Compiler::new(vocab);
        let o = opts(format);
        // Every 25th set: string-heavy and numeric ones alike.
        for s in sets.iter().step_by(25) {
            let set = spec::parse(&s.id, &s.text).unwrap();
            let want = plain.compile_bytes(&set, &o).unwrap().artifact;
            let got = reusing.build(&set, &o).unwrap();
            assert!(
                got.grammar.artifact().payload() == want.as_slice(),
                "{tok} {format} {}: reused regions change the artifact",
                s.id
            );
        }
    }
}
