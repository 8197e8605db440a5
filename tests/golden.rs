//! Golden artifacts: the committed files load and serve, and compiling
//! their sources again gives the same bytes (builds are reproducible).

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;

fn root(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn weather_gpt2_is_reproducible_and_serves() {
    let golden = std::fs::read(root("artifacts/weather-gpt2.tdm")).unwrap();
    let text = std::fs::read_to_string(root("grammars/examples/weather.json")).unwrap();
    let set = spec::parse("grammars/examples/weather.json", &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let fresh = compile(&set, &vocab, &Options::default(), &mut |_| {}).unwrap();
    assert!(
        fresh.artifact == golden,
        "artifacts/weather-gpt2.tdm differs from a fresh build: regenerate it with the command in artifacts/README.md if the change is deliberate"
    );

    let art = Artifact::open(root("artifacts/weather-gpt2.tdm")).unwrap();
    let g = art.grammar();
    assert_eq!(g.vocab_size(), 50257);
    assert_eq!(g.eos_tokens(), &[50256]);
    assert_eq!(g.vocab_fingerprint(), &vocab.fingerprint());
    let call = "Thought: I need the weather.\nAction: get_weather\nAction Input: {\"city\": \"Paris\", \"days\": 2}";
    let tokens = tiktoken_free_tokenize(&vocab, call);
    let mut m = g.matcher();
    let mut words = vec![0u32; g.mask_words()];
    for &t in &tokens {
        m.fill_mask(&mut words);
        assert!(
            words[(t >> 5) as usize] >> (t & 31) & 1 == 1,
            "token {t} not in mask"
        );
        assert!(m.accept_token(t));
    }
    assert!(m.is_accepting() && !m.is_terminated());
    assert!(m.accept_token(50256));
    assert!(m.is_terminated());
}

/// Greedy longest-match tokenization over the vocab: not how BPE splits,
/// but a valid token sequence for the same bytes, which is all a DFA sees.
fn tiktoken_free_tokenize(vocab: &Vocab, text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        let (id, len) = (0..vocab.len() as u32)
            .filter_map(|id| {
                vocab
                    .bytes(id)
                    .filter(|b| rest.starts_with(b))
                    .map(|b| (id, b.len()))
            })
            .max_by_key(|&(id, len)| (len, std::cmp::Reverse(id)))
            .unwrap();
        out.push(id);
        rest = &rest[len..];
    }
    out
}
