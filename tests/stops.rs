//! Entries that stop after their first call (`one`, `auto-one`, `call`
//! of hermes; `one`, `auto-one`, `think-one`, `think-auto-one` of qwen3,
//! qwen3-coder and glm-4.5; `start` (the default), `auto`, `one`,
//! `auto-one` of ReAct) are lowered with their call repeated and served
//! stopping after the first. Served that way, every mask, every accepted
//! token and every budget must be the entry's own: the same entry compiled
//! alone (its rule lowered as written) is the reference, walked in
//! lockstep.
//!
//! With the built-in GPT-2 vocabulary always; with `TOOLDEC_DATA`, also
//! Llama-3.2 and Qwen2.5, whose `</tool_call>` is text, so tokens such as
//! `>\n` run past a call's end (the stop gates).

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, CallFormat, Compiler, Options};
use tooldec_runtime::{Artifact, Grammar, Matcher};
use tooldec_testkit::walk::{seed, SplitMix64, Walker};

/// The formats whose one-call entries stop, and those entries.
const STOPPING: &[(&str, &[&str])] = &[
    ("hermes", &["call", "one", "auto-one"]),
    ("qwen3", &["one", "auto-one", "think-one", "think-auto-one"]),
    (
        "qwen3-coder",
        &["one", "auto-one", "think-one", "think-auto-one"],
    ),
    (
        "glm-4.5",
        &["one", "auto-one", "think-one", "think-auto-one"],
    ),
    ("react", &["start", "auto", "one", "auto-one"]),
];

/// Random walks per (format, vocabulary, entry, budget or none).
const WALKS: usize = 12;
/// Steps before a walk heads for the end.
const FREE_STEPS: usize = 24;

fn tools() -> spec::ToolSet {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap()
}

fn build(format: CallFormat, vocab: &Vocab) -> Artifact {
    let opts = Options {
        format,
        zstd_level: None,
        ..Options::default()
    };
    let out = compile(&tools(), vocab, &opts, &mut |_| {}).unwrap();
    Artifact::from_bytes(&out.artifact).unwrap()
}

use tooldec_testkit::served::{mask_of as mask, set_ids as allowed};

/// The next token of a walk: any allowed one at first, then one that
/// brings the reference closest to acceptance or, on `bytewise` walks,
/// the shortest that brings it no further (so that walks also go through
/// the end of a call a byte at a time, where tokens run past it).
fn pick(
    rng: &mut SplitMix64,
    reference: &Matcher<'_>,
    ids: &[u32],
    step: usize,
    bytewise: bool,
) -> u32 {
    if step < FREE_STEPS {
        return ids[rng.below(ids.len() as u64) as usize];
    }
    let g = reference.grammar();
    let left = |t: u32| {
        let mut m = *reference;
        m.accept_token(t);
        m.state().and_then(|s| g.distance(s)).unwrap_or(0)
    };
    let len = |t: u32| g.token_bytes(t).map_or(0, <[u8]>::len);
    // A sample of the allowed tokens: a text state allows most of the
    // vocabulary.
    let sample: Vec<u32> = (0..64)
        .map(|_| ids[rng.below(ids.len() as u64) as usize])
        .collect();
    let here = reference.state().and_then(|s| g.distance(s)).unwrap_or(0);
    let best = sample.iter().map(|&t| left(t)).min().unwrap_or(0);
    let near: Vec<u32> = if bytewise {
        let on: Vec<u32> = sample
            .iter()
            .copied()
            .filter(|&t| left(t) < here.max(1) + 1)
            .collect();
        let shortest = on.iter().map(|&t| len(t)).min().unwrap_or(0);
        on.into_iter().filter(|&t| len(t) == shortest).collect()
    } else {
        Vec::new()
    };
    let near = if near.is_empty() {
        sample.into_iter().filter(|&t| left(t) == best).collect()
    } else {
        near
    };
    near[rng.below(near.len() as u64) as usize]
}

/// Walks entry `entry` of `stopping` (stopping after its first call) and
/// of `alone` (compiled by itself) in lockstep: equal masks, equal
/// answers for random tokens, both accept the walk's tokens.
fn lockstep(stopping: &Grammar<'_>, alone: &Grammar<'_>, entry: &str, label: &str) -> Seen {
    let mut seen = Seen::default();
    let n_tokens = alone.mask_width();
    for walk in 0..WALKS {
        let mut rng = SplitMix64::new(seed(label, walk as u64, 0));
        let budget = (walk % 3 == 2).then(|| {
            let least = alone.distance(alone.entry_state(entry).unwrap()).unwrap();
            least + rng.below(8) as u32
        });
        let (mut a, mut b) = match budget {
            None => (
                stopping.matcher_at(entry).unwrap(),
                alone.matcher_at(entry).unwrap(),
            ),
            Some(n) => (
                stopping.matcher_at_with_budget(entry, n).unwrap(),
                alone.matcher_at_with_budget(entry, n).unwrap(),
            ),
        };
        for step in 0..200 {
            let (ma, mb) = (mask(&a), mask(&b));
            assert!(
                ma == mb,
                "{label}, walk {walk} (budget {budget:?}), step {step}: masks differ: \
                 served {:?} alone {:?}",
                allowed(&ma).len(),
                allowed(&mb).len()
            );
            for _ in 0..8 {
                let t = rng.below(n_tokens as u64) as u32;
                assert_eq!(a.is_allowed(t), b.is_allowed(t), "{label}: token {t}");
            }
            seen.steps += 1;
            if let Some(q) = a.state() {
                seen.gates += stopping.stop_gate(q) as usize;
                seen.ends += stopping.ends_call(q) as usize;
            }
            if b.is_terminated() {
                break;
            }
            let ids = allowed(&mb);
            assert!(!ids.is_empty(), "{label}: a dead end at step {step}");
            let t = pick(&mut rng, &b, &ids, step, walk % 2 == 1);
            assert!(a.accept_token(t) && b.accept_token(t), "{label}: token {t}");
            assert_eq!(a.is_accepting(), b.is_accepting());
            assert_eq!(a.tokens_left(), b.tokens_left());
        }
    }
    seen
}

/// What the lockstep walks went through on the stopping side.
#[derive(Default)]
struct Seen {
    steps: usize,
    /// Steps at a state some token of which runs past a call's end.
    gates: usize,
    /// Steps at a state that ends a call.
    ends: usize,
}

fn check_vocab(vocab: &Vocab, name: &str) {
    for &(format, entries) in STOPPING {
        let full = build(CallFormat::load(format).unwrap(), vocab);
        let g = full.grammar();
        let stopped: Vec<&str> = g
            .entries()
            .map(|(n, _)| n)
            .filter(|n| g.entry(n).unwrap().1)
            .collect();
        assert_eq!(stopped, entries, "{format}: the entries that stop");
        let n_gates = (0..g.state_count() as u32)
            .filter(|&q| g.stop_gate(q))
            .count();
        let (mut gates, mut ends) = (0, 0);
        for &entry in entries {
            let alone = build(
                CallFormat::load(format).unwrap().only_entry(entry).unwrap(),
                vocab,
            );
            assert!(!alone.grammar().entry(entry).unwrap().1);
            let label = format!("{format}/{name}/{entry}");
            let seen = lockstep(&g, &alone.grammar(), entry, &label);
            assert!(seen.steps > WALKS, "{label}: {} steps", seen.steps);
            gates += seen.gates;
            ends += seen.ends;
        }
        // The walks of `auto` entries mostly end without a call; those of
        // `one` each end one.
        assert!(ends > 0, "{format}/{name}: no walk ended a call");
        // Where the vocabulary has a token that runs past a call's end
        // (`>\n` after a `</tool_call>` spelled as text), the state it
        // leaves from is checked by bytes (the walks mostly take
        // `</tool_call>` whole).
        eprintln!("{format}/{name}: {n_gates} stop gates, met {gates} times");
        if format == "hermes" {
            one_byte_before_the_end(&g, vocab, name, n_gates > 0);
        }
        served_early(&full, vocab, format, entries, name);
    }
}

/// Before its artifact exists, a new tool set's stopping entries are
/// served from masks computed on demand (`Compiler::start`): along walks
/// to a complete output (the test kit's walker, greedy towards the end),
/// every mask equal to the artifact's and none needing the artifact.
fn served_early(full: &Artifact, vocab: &Vocab, format: &str, entries: &[&str], name: &str) {
    let g = full.grammar();
    let opts = Options {
        format: CallFormat::load(format).unwrap(),
        zstd_level: None,
        ..Options::default()
    };
    let compiler = std::sync::Arc::new(Compiler::new(vocab.clone()));
    let pending = compiler.start_deferred(&tools(), &opts).unwrap();
    let mut walker = Walker::new(&g, g.mask_width());
    walker.greedy_after = 60;
    let mut words = vec![0u32; g.mask_words()];
    let mut ends = 0;
    for &entry in entries {
        let label = format!("{format}/{name}/{entry}: early");
        for walk in 0..4 {
            let mut rng = SplitMix64::new(seed(&label, walk, 0));
            let tokens = walker
                .walk_from(&mut rng, 4000, g.matcher_at(entry).unwrap())
                .unwrap();
            let mut early = pending.matcher(Some(entry), None, 0).unwrap();
            let mut b = g.matcher_at(entry).unwrap();
            for (step, &t) in tokens.iter().enumerate() {
                assert!(early.is_early(), "{label}, walk {walk}, step {step}");
                early.fill_mask(&mut words).unwrap();
                assert!(words == mask(&b), "{label}, walk {walk}, step {step}");
                ends += b.state().is_some_and(|q| g.ends_call(q)) as usize;
                assert!(
                    early.accept_token(t).unwrap() && b.accept_token(t),
                    "{label}"
                );
            }
            assert!(early.is_terminated() && b.is_terminated(), "{label}");
        }
    }
    assert!(ends > 0, "{format}/{name}: no early walk ended a call");
    assert!(
        !pending.is_ready(),
        "{format}/{name}: the artifact was needed"
    );
}

/// The state one byte before a call's end, reached by bytes: the same
/// mask as the entry compiled alone, and a stop gate where some token of
/// the vocabulary runs past the end from there.
fn one_byte_before_the_end(g: &Grammar<'_>, vocab: &Vocab, name: &str, gated: bool) {
    let format = CallFormat::load("hermes")
        .unwrap()
        .only_entry("one")
        .unwrap();
    let alone = build(format, vocab);
    let mut a = g.matcher_at("one").unwrap();
    let ga = alone.grammar();
    let mut b = ga.matcher_at("one").unwrap();
    let text = &PARIS[..PARIS.len() - 1];
    assert!(a.accept_bytes(text.as_bytes()) && b.accept_bytes(text.as_bytes()));
    assert_eq!(
        mask(&a),
        mask(&b),
        "hermes/{name}: before the call's last byte"
    );
    assert_eq!(g.stop_gate(a.state().unwrap()), gated, "hermes/{name}");
    // Past the end: only EOS, as alone.
    assert!(a.accept_bytes(b">") && b.accept_bytes(b">"));
    assert_eq!(mask(&a), mask(&b), "hermes/{name}: after the call");
    // Served early, a byte token at a time: the same masks on the way,
    // the stop gate's included.
    let opts = Options {
        format: CallFormat::load("hermes").unwrap(),
        zstd_level: None,
        ..Options::default()
    };
    let compiler = std::sync::Arc::new(Compiler::new(vocab.clone()));
    let pending = compiler.start_deferred(&tools(), &opts).unwrap();
    let mut early = pending.matcher(Some("one"), None, 0).unwrap();
    let mut m = g.matcher_at("one").unwrap();
    let byte_token = |b: u8| {
        (0..g.token_count() as u32)
            .find(|&t| g.token_bytes(t) == Some(&[b][..]))
            .unwrap()
    };
    let mut words = vec![0u32; g.mask_words()];
    for (i, &byte) in PARIS.as_bytes().iter().enumerate() {
        early.fill_mask(&mut words).unwrap();
        assert!(words == mask(&m), "hermes/{name}: early, byte {i}");
        let t = byte_token(byte);
        assert!(early.accept_token(t).unwrap() && m.accept_token(t));
    }
    early.fill_mask(&mut words).unwrap();
    assert!(
        words == mask(&m) && early.is_early(),
        "hermes/{name}: early, at the end"
    );
}

const PARIS: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

#[test]
fn stopping_entries_serve_their_own_language_gpt2() {
    check_vocab(&Vocab::builtin_gpt2().unwrap(), "gpt2");
}

#[test]
fn stopping_entries_serve_their_own_language_real_tokenizers() {
    if tooldec_testkit::data_dir().is_none() {
        eprintln!("skipped: TOOLDEC_DATA is unset");
        return;
    }
    for tok in ["llama-3.2", "qwen2.5"] {
        let loaded = tooldec_testkit::loaded::tokenizer(tok);
        check_vocab(&loaded.0, tok);
    }
}

/// Whole texts through `accept_bytes`: one call, not two; a call's end
/// refuses any byte after it.
#[test]
fn a_second_call_is_refused_as_bytes_too() {
    let a = build(
        CallFormat::load("hermes").unwrap(),
        &Vocab::builtin_gpt2().unwrap(),
    );
    let g = a.grammar();
    for entry in ["one", "call", "required"] {
        let mut m = g.matcher_at(entry).unwrap();
        assert!(
            m.accept_bytes(PARIS.as_bytes()) && m.is_accepting(),
            "{entry}"
        );
        let second = m.accept_bytes(b"\n");
        assert_eq!(second, entry == "required", "{entry}: a second call");
    }
    let mut m = g.matcher_at("auto-one").unwrap();
    assert!(m.accept_bytes(format!("Sure.{PARIS}").as_bytes()));
    assert!(!m.accept_bytes(b"\n<tool_call>"));
}

/// ReAct's default entry stops: the matcher a grammar starts by default,
/// and one reset, stop after the first action as `start` alone does.
#[test]
fn a_default_entry_that_stops_stops_after_reset_too() {
    let vocab = Vocab::builtin_gpt2().unwrap();
    let a = build(CallFormat::load("react").unwrap(), &vocab);
    let g = a.grammar();
    assert_eq!(g.entries().next().map(|e| e.0), Some("start"));
    assert!(g.default_stops());
    let alone = build(
        CallFormat::load("react")
            .unwrap()
            .only_entry("start")
            .unwrap(),
        &vocab,
    );
    let ga = alone.grammar();
    let call = "Thought: Rain?\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}";
    let mut m = g.matcher();
    for round in 0..2 {
        let mut b = ga.matcher();
        assert_eq!(mask(&m), mask(&b), "round {round}: at the start");
        assert!(m.accept_bytes(call.as_bytes()) && b.accept_bytes(call.as_bytes()));
        assert!(m.is_accepting(), "round {round}");
        assert_eq!(mask(&m), mask(&b), "round {round}: after the call");
        assert!(!m.accept_bytes(b"\n"), "round {round}: a second action");
        m.reset();
    }
    let mut p = g.matcher_at("parallel").unwrap();
    assert!(p.accept_bytes(format!("{call}\n").as_bytes()));
}

/// A format whose free text may hold a whole call: a state after `</c>`
/// could be past the first call or still in the text, so `auto-one` is
/// not served from `auto`'s states; the compiler lowers it as written,
/// and it accepts text after a call-shaped text.
#[test]
fn a_call_inside_free_text_keeps_the_entry_as_written() {
    let text = r#"
        entry auto = text() calls?;
        entry auto-one = text() call?;
        calls = call ("\n" call)*;
        call = "<c>" tool { name " " args } "</c>";
    "#;
    let format = CallFormat {
        name: "loose".into(),
        grammar: tooldec_compiler::call_format::Rules::parse("loose.tdg", text).unwrap(),
    };
    let a = build(format.clone(), &Vocab::builtin_gpt2().unwrap());
    let g = a.grammar();
    assert_eq!(g.entry("auto-one").map(|e| e.1), Some(false));
    let call = r#"<c>get_weather {"city": "Paris"}</c>"#;
    let mut m = g.matcher_at("auto-one").unwrap();
    assert!(m.accept_bytes(format!("Sure {call}\nmore words").as_bytes()));
    assert!(m.is_accepting());
    // Without the fallback the same entry would stop: it is found in the
    // rules all the same.
    let found = tooldec_compiler::call_format::stops::find(&format.grammar);
    assert_eq!(found.len(), 1, "{found:?}");
}
