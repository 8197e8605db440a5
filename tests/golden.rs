//! Golden artifacts: the committed files load and serve, and compiling
//! their sources again gives the same bytes (builds are reproducible).

use std::sync::Arc;
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};

use tooldec_runtime::{Artifact, Grammar, SharedGrammar};

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
    assert_eq!(g.mask_width(), 50257);
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

/// The codec reads what it writes: the sections read from the golden
/// payload, written again, are the same bytes.
#[test]
fn the_codec_writes_what_it_reads() {
    let art = Artifact::open(root("artifacts/weather-gpt2.tdm")).unwrap();
    let g = art.grammar();
    assert_eq!(g.payload().to_bytes().unwrap(), art.payload());
}

/// One payload held owned, borrowed and shared serves the same masks, and
/// matchers over a borrowed grammar and over a shared handle agree.
#[test]
fn owned_borrowed_and_shared_storage_serve_alike() {
    let owned = Artifact::open(root("artifacts/weather-gpt2.tdm")).unwrap();
    let words: Vec<u32> = owned
        .payload()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let borrowed = Artifact::new(&words[..]).unwrap();
    let shared = Artifact::new(Arc::<[u32]>::from(&words[..])).unwrap();
    let handle = SharedGrammar::from_bytes(owned.payload()).unwrap();
    let views: [Grammar<'_>; 4] = [
        owned.grammar(),
        borrowed.grammar(),
        shared.grammar(),
        handle.grammar(),
    ];
    let g = owned.grammar();
    let mut want = vec![0u32; g.mask_words()];
    let mut got = vec![0u32; g.mask_words()];
    for v in &views {
        assert_eq!(v.payload().to_bytes().unwrap(), owned.payload());
        for s in 0..g.state_count() as u32 {
            g.fill_budget_mask(s, u32::MAX, &mut want);
            v.fill_budget_mask(s, u32::MAX, &mut got);
            assert_eq!(want, got, "state {s}");
        }
    }
    let mut m = g.matcher();
    let mut om = handle.matcher(None, None, 4).unwrap();
    for _ in 0..40 {
        m.fill_mask(&mut want);
        om.fill_mask(&mut got);
        assert_eq!(want, got);
        let Some(t) = want
            .iter()
            .enumerate()
            .find(|(_, w)| **w != 0)
            .map(|(i, w)| i as u32 * 32 + w.trailing_zeros())
        else {
            break;
        };
        assert!(m.accept_token(t) && om.accept_token(t));
        assert_eq!(m.state(), om.matcher().state());
    }
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
