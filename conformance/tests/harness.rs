//! The harness on a small hand-written suite (tests/fixtures/suite.json, in
//! the JSON-Schema-Test-Suite format): the counts must come out exactly.
//!
//! The first test uses the built-in GPT-2 vocab with tiktoken's GPT-2
//! encoder and needs no data. The second uses the real GPT-2
//! `tokenizer.json` under `TOOLDEC_DATA` (skipped with a note when it is
//! unset; a failure when it is set but the file is missing).

use std::path::Path;

use tooldec_conformance::report::{check_all, render, Args, Results};
use tooldec_conformance::{check_group, corpus, data_dir, report_options, short_reason, Tokenizer};

fn fixture() -> Vec<tooldec_conformance::Group> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/suite.json");
    corpus::suite_file(&path, "suite.json").expect("the fixture reads")
}

/// (compiled, valid, valid accepted, invalid, invalid rejected) per group.
const EXPECTED: [(bool, usize, usize, usize, usize); 4] = [
    (true, 3, 3, 5, 5),
    (true, 2, 2, 2, 2),
    (true, 1, 1, 2, 2),
    (false, 0, 0, 0, 0),
];

fn check_counts(tok: &Tokenizer) {
    let opts = report_options(1);
    let groups = fixture();
    assert_eq!(groups.len(), EXPECTED.len());
    for (g, &(compiled, valid, va, invalid, ir)) in groups.iter().zip(&EXPECTED) {
        let r = check_group(g, tok, &opts);
        let what = format!("{} ({}): {:?}", g.name, g.description, r.refusal);
        assert_eq!(r.compiled(), compiled, "{what}");
        assert_eq!(
            (r.valid, r.valid_accepted, r.invalid, r.invalid_rejected),
            (valid, va, invalid, ir),
            "{what}; misses: {:#?}",
            r.misses
        );
        assert_eq!((r.valid_one_form, r.invalid_one_form), (0, 0), "{what}");
        assert_eq!(r.disagreements, 0, "{what}");
        assert!(r.misses.is_empty(), "{what}: {:#?}", r.misses);
    }

    // The same through the table and the markdown.
    let labelled = groups
        .into_iter()
        .map(|g| ("suite.json".to_string(), g))
        .collect();
    let t = check_all("fixture", labelled, tok, &opts, 2);
    let total = t.total();
    assert_eq!((total.schemas, total.compiled), (4, 3));
    assert_eq!((total.valid, total.valid_accepted), (6, 6));
    assert_eq!((total.invalid, total.invalid_rejected), (9, 9));
    assert_eq!(t.reasons().total(), 1);
    let args = Args::parse(&["--limit".into(), "9".into()]).unwrap();
    let results = Results {
        suite: Some(t),
        optional: None,
        bench: None,
        corpora: None,
        wall: std::time::Duration::from_secs(1),
        vocab_load: std::time::Duration::ZERO,
        tokenizer: tok.label.clone(),
        threads: 1,
    };
    let (md, missed) = render(&args, &results);
    assert!(missed.is_empty(), "{missed:?}");
    assert!(
        md.contains("| suite.json | 3 / 4 | 6 / 6 | 0 | 9 / 9 | 0 | 0 |"),
        "{md}"
    );
    assert!(md.contains("Sample run"), "{md}");
}

#[test]
fn fixture_counts_with_the_builtin_gpt2() {
    let tok = Tokenizer::builtin_gpt2().expect("the built-in GPT-2 vocab loads");
    check_counts(&tok);
}

#[test]
fn fixture_counts_with_the_real_gpt2_tokenizer() {
    let Some(data) = data_dir() else {
        eprintln!("TOOLDEC_DATA unset: skipping the real-tokenizer fixture run");
        return;
    };
    let path = data.join("tokenizers/gpt2/tokenizer.json");
    assert!(
        path.is_file(),
        "TOOLDEC_DATA={} is set but {} is missing",
        data.display(),
        path.display()
    );
    let tok = Tokenizer::from_tokenizer_json(&path, "gpt2").expect("the GPT-2 tokenizer loads");
    check_counts(&tok);
}

#[test]
fn a_tiny_state_budget_is_a_budget_refusal() {
    let tok = Tokenizer::builtin_gpt2().unwrap();
    let mut opts = report_options(1);
    opts.max_states = 3;
    let r = check_group(&fixture()[0], &tok, &opts);
    let f = r.refusal.expect("refused by the budget");
    assert!(f.budget, "{f:?}");
    assert_eq!(f.kind, "state budget");
    assert_eq!((r.valid, r.invalid), (0, 0));
}

#[test]
fn refusal_reasons_drop_places_and_names() {
    let m = "schema.json:1:153 (at /properties/a/minlength): tool \"schema.json\": unsupported JSON Schema keyword \"minlength\"";
    assert_eq!(
        short_reason(m, "schema.json", "schema.json"),
        "unsupported JSON Schema keyword \"minlength\""
    );
    let m = "schema.json:1:284 (at /properties/m/required/0): tool \"schema.json\": required property \"action_principal\" is not declared in \"properties\"";
    assert_eq!(
        short_reason(m, "schema.json", "schema.json"),
        "required property \"…\" is not declared in \"properties\""
    );
    let m = "tools/x.json:1:1 (at /): expected a JSON array of tools (or an object with a \"tools\" array)";
    assert_eq!(
        short_reason(m, "tools/x.json", ""),
        "expected a JSON array of tools (or an object with a \"tools\" array)"
    );
    assert_eq!(
        short_reason(
            "grammar too large: the DFA exceeds 200000 states (raise --max-states)",
            "f",
            "t"
        ),
        "grammar too large: the DFA exceeds N states (raise --max-states)"
    );
    let m = "grammar too large: the DFA exceeds 200000 states (raise --max-states); the part of the schema responsible: schema.json:1:155 (at /anyOf/0) (tool \"schema.json\")";
    assert_eq!(
        short_reason(m, "schema.json", "schema.json"),
        "grammar too large: the DFA exceeds N states (raise --max-states); the part of the schema responsible: … (at …) (tool \"…\")"
    );
    let m = "schema.json:1:39 (at /oneOf): tool \"schema.json\": \"oneOf\" branches 0 and 12 may both accept one value";
    assert_eq!(
        short_reason(m, "schema.json", "schema.json"),
        "\"oneOf\" branches N and N may both accept one value"
    );
}
