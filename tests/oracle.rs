//! Brute-force oracles.
//!
//! - Masks: for every state, the stored mask equals the set of tokens whose
//!   bytes, walked one by one through the DFA's transition table, never reach
//!   the dead state (plus EOS exactly in accepting states). The masks come
//!   from the token-trie walk at compile time; the oracle shares none of it.
//! - Language: hand-written outputs that must be accepted or rejected.
//! - Minimization: the minimized DFA accepts the same strings as the
//!   unminimized one, and no two of its states are equivalent.

use tooldec_compiler::automaton::dfa::{Dfa, DEAD};
use tooldec_compiler::automaton::sparse::SparseDfa;
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{build_dfa, compile, spec, Options};
use tooldec_runtime::Artifact;
use tooldec_testkit::served::{grammar_specials, marker, served_states};

fn example(name: &str) -> (String, String) {
    let path = format!("{}/../grammars/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    (
        path.clone(),
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
    )
}

/// Every single byte, some multi-byte pieces of the react format and JSON,
/// a few special tokens (one of them EOS) and an unused id.
fn small_vocab() -> Vocab {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    for piece in [
        "Thought",
        "Thought: ",
        ": ",
        "\nAction",
        "\nAction: ",
        " Input",
        "\nAction Input: ",
        "get_",
        "weather",
        "time",
        "get_weather",
        "{\"",
        "\":",
        "\": \"",
        "\", \"",
        "\"}",
        "}",
        "city",
        "unit",
        "celsius",
        "12",
        "-0",
        "true",
        "null",
        "\n\n",
        "   ",
        "é",
        "\\u00",
        "\\\"",
        "\"\n",
        "Action: ",
    ] {
        tokens.push(Token::Text(piece.as_bytes().to_vec()));
    }
    tokens.push(Token::Special("<eos>".into()));
    tokens.push(Token::Special("<pad>".into()));
    tokens.push(Token::Unused);
    let eos = tokens
        .iter()
        .position(|t| t == &Token::Special("<eos>".into()))
        .unwrap() as u32;
    Vocab::from_tokens(tokens, vec![eos], "small test vocab").unwrap()
}

/// The oracle: for every state a matcher can be in, walk every token's
/// bytes through the transition table; every other state allows nothing.
///
/// Per FORMAT.md: the states a matcher can be in are those reached from an
/// entry over text bytes (below the reserved `0xFE`) and whole special
/// tokens the grammar uses (`0xFF` and the id in three bytes); a text token
/// holding a reserved byte is never allowed.
fn check_masks_by_brute_force(artifact: &[u8], vocab: &Vocab) -> usize {
    let art = Artifact::from_bytes(artifact).unwrap();
    let g = art.grammar();
    let specials = grammar_specials(&g);
    let served = served_states(&g, &specials);
    let mut words = vec![0u32; g.mask_words()];
    let mut checked = 0;
    for s in 1..g.state_count() as u32 {
        g.fill_mask_by_id(g.mask_id(s).unwrap(), &mut words);
        for t in 0..g.mask_width() as u32 {
            let stored = words[(t >> 5) as usize] >> (t & 31) & 1 == 1;
            let text = vocab
                .bytes(t)
                .filter(|b| !b.iter().any(|&x| x >= 0xFE))
                .map(<[u8]>::to_vec)
                .or_else(|| specials.contains(&t).then(|| marker(t).to_vec()));
            let expected = if !served[s as usize] {
                false
            } else if vocab.eos.contains(&t) {
                g.is_accepting_state(s)
            } else {
                match text.as_deref() {
                    Some(bytes) => {
                        let mut st = s;
                        for &b in bytes {
                            st = g.next_state(st, b);
                            if st == 0 {
                                break;
                            }
                        }
                        st != 0
                    }
                    None => false,
                }
            };
            assert_eq!(
                stored,
                expected,
                "state {s}, token {t} ({:?})",
                vocab.tokens.get(t as usize)
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn masks_match_brute_force_on_a_small_vocab() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let vocab = small_vocab();
    for vocab_size in [None, Some(vocab.len() as u32 + 45)] {
        let opts = Options {
            zstd_level: None,
            mask_width: vocab_size,
            ..Options::default()
        };
        let out = compile(&set, &vocab, &opts, &mut |_| {}).unwrap();
        let checked = check_masks_by_brute_force(&out.artifact, &vocab);
        assert!(
            checked > 10_000,
            "only {checked} (state, token) pairs checked"
        );
    }
}

#[test]
fn masks_match_brute_force_on_gpt2() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let out = compile(&set, &vocab, &Options::default(), &mut |_| {}).unwrap();
    let checked = check_masks_by_brute_force(&out.artifact, &vocab);
    assert!(checked > 10_000_000);
}

const ACCEPTED: &[&str] = &[
    "Thought: sunny?\nAction: get_weather\nAction Input: {\"city\":\"Paris\"}",
    "Thought: \nAction: get_weather\nAction Input: {\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": 3}",
    "Thought: two\nlines\nAction: get_time\nAction Input: {\"timezone\":\"Europe/Paris\",\"format24\":true}",
    "Thought: Action: inline is fine\nAction: get_time\nAction Input: {\"timezone\":\"\\u00e9\\ud83d\\ude00\\n\"}",
    "Thought: x\nAction:no space is text\nAction: get_weather\nAction Input: {\"city\":\"a\",\"days\":-12}",
    "Thought: pretty\nAction: get_weather\nAction Input: {\n  \"city\": \"Zürich\"\n}",
    "Thought: f\nAction: search_flights\nAction Input: {\"from\":\"CDG\",\"to\":\"JFK\",\"max_price\":-1.5e+3,\"stops\":[1, 2,3],\"flexible\":{\"days\":2},\"note\":null}",
    "Thought: f\nAction: search_flights\nAction Input: {\"from\":\"CDG\",\"to\":\"JFK\",\"stops\":[]}",
    "Thought: f\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"passengers\":123456789012345678,\"max_price\":999999999999999999.5e289}",
    "Thought: f\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"max_price\":1E-999}",
];

const REJECTED: &[(&str, &str)] = &[
    ("Thought: x\nAction: get_weathe\nAction Input: {\"city\":\"P\"}", "unknown tool name"),
    ("Thought: x\nAction: get_weather\nAction Input: {}", "missing required property"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"unit\":\"celsius\",\"city\":\"P\"}", "declared order"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",\"unit\":\"kelvin\"}", "value outside enum"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",\"days\":1.5}", "number for integer"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",\"days\":01}", "leading zero"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",}", "trailing comma"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",\"x\":1}", "undeclared property"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"a\nb\"}", "raw control character in string"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"\\ud800\"}", "lone surrogate"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"\\x\"}", "bad escape"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\"}\n", "text after the call"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\"     }", "more than 4 whitespace bytes"),
    ("Thought: x\nAction: get_time\nAction Input: {\"timezone\":\"UTC\",\"format24\":1}", "integer for boolean"),
    ("Action: get_time\nAction Input: {\"timezone\":\"UTC\"}", "no thought"),
    ("Thought: x\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"stops\":[1,]}", "trailing comma in array"),
    ("Thought: x\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"flexible\":{}}", "nested required"),
    ("Thought: \u{ff}", "invalid UTF-8 is never produced"),
    ("Thought: x\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"max_price\":1e400}", "number overflows a double"),
    ("Thought: x\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"max_price\":-97e0380}", "exponent with leading zero overflows"),
    ("Thought: x\nAction: search_flights\nAction Input: {\"from\":\"A\",\"to\":\"B\",\"max_price\":1e290}", "exponent above 289"),
    ("Thought: x\nAction: get_weather\nAction Input: {\"city\":\"P\",\"days\":1234567890123456789}", "integer beyond 18 digits"),
];

#[test]
fn hand_written_outputs() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let (machine, _, _) = build_dfa(&set, &single_react(), &vocab, &mut |_| {}).unwrap();
    let dfa = machine.dfa;
    for s in ACCEPTED {
        assert!(dfa.accepts(s.as_bytes()), "should accept: {s:?}");
        let args = s
            .split_once("\nAction Input: ")
            .map(|p| p.1)
            .unwrap_or_default();
        assert!(
            serde_json::from_str::<serde_json::Value>(args).is_ok(),
            "arguments do not parse: {args}"
        );
        // Every proper prefix is alive (the DFA is trimmed).
        for i in 0..s.len() {
            assert_ne!(
                dfa.walk(dfa.start, &s.as_bytes()[..i]),
                DEAD,
                "prefix {i} of {s:?} is dead"
            );
        }
    }
    for (s, why) in REJECTED {
        assert!(!dfa.accepts(s.as_bytes()), "should reject ({why}): {s:?}");
    }
    assert!(!dfa.accepts(b"Thought: \xff"));
    // A line of the thought that begins with "Action: " must be the action.
    assert_eq!(dfa.walk(dfa.start, b"Thought: a\nAction: nope"), DEAD);
}

/// The react format with its one-action entry only: `dfa.start` is that
/// entry's start.
fn single_react() -> Options {
    let format = tooldec_compiler::CallFormat::load("react").unwrap();
    Options {
        format: format.only_entry("start").unwrap(),
        ..Options::default()
    }
}

/// A tiny xorshift generator: tests stay deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes still needed to reach acceptance from each state.
fn distances(dfa: &Dfa) -> Vec<usize> {
    let n = dfa.n_states();
    let mut dist: Vec<usize> = dfa
        .accept
        .iter()
        .map(|&a| if a { 0 } else { usize::MAX })
        .collect();
    loop {
        let mut changed = false;
        for s in 0..n {
            for b in 0..=255u8 {
                let t = dfa.next(s as u32, b) as usize;
                if dist[t] != usize::MAX && dist[t] + 1 < dist[s] {
                    dist[s] = dist[t] + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            return dist;
        }
    }
}

/// A random string along live transitions, steered towards acceptance as it
/// grows (so it is often accepted), with occasional random bytes (so it
/// sometimes is not).
fn random_string(dfa: &Dfa, dist: &[usize], rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    let mut s = dfa.start;
    for step in 0..400 {
        let live: Vec<u8> = (0..=255u8).filter(|&b| dfa.next(s, b) != DEAD).collect();
        let b = if live.is_empty() || rng.below(100) == 0 {
            rng.below(256) as u8
        } else if rng.below(60) < step {
            *live
                .iter()
                .min_by_key(|&&b| dist[dfa.next(s, b) as usize])
                .unwrap_or(&0)
        } else {
            live[rng.below(live.len())]
        };
        out.push(b);
        s = dfa.next(s, b);
        if s == DEAD || (dfa.accept[s as usize] && rng.below(3) == 0) {
            break;
        }
    }
    out
}

/// Naive Moore refinement: the number of equivalence classes of states.
fn moore_classes(dfa: &Dfa) -> usize {
    let n = dfa.n_states();
    let mut class: Vec<usize> = dfa.accept.iter().map(|&a| a as usize).collect();
    loop {
        let mut sigs = std::collections::HashMap::new();
        let next: Vec<usize> = (0..n)
            .map(|s| {
                let sig: Vec<usize> = std::iter::once(class[s])
                    .chain(
                        (0..dfa.n_classes)
                            .map(|c| class[dfa.trans[s * dfa.n_classes + c] as usize]),
                    )
                    .collect();
                let k = sigs.len();
                *sigs.entry(sig).or_insert(k)
            })
            .collect();
        let before = class.iter().collect::<std::collections::HashSet<_>>().len();
        class = next;
        if sigs.len() == before {
            return sigs.len();
        }
    }
}

#[test]
fn minimization_preserves_the_language_and_is_minimal() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let opts = single_react();
    let mut vocab = Vocab::builtin_gpt2().unwrap();
    vocab.leading_space = true;
    let expr = tooldec_compiler::lower(&set, &opts, &vocab).unwrap().expr;
    let nfa = tooldec_compiler::automaton::nfa::build(&expr, 1 << 20).unwrap();
    let raw = Dfa::determinize(&nfa, 1 << 20).unwrap();
    // Pruned and minimized as a compile does, read back as a dense table.
    let minimize = |d: &Dfa| {
        let mut sparse = SparseDfa::from_dense(d);
        assert!(sparse.prune());
        sparse.minimize(1).unwrap().0.to_dense()
    };
    let min = minimize(&raw);
    assert!(
        min.n_states() < raw.n_states(),
        "{} !< {}",
        min.n_states(),
        raw.n_states()
    );
    assert_eq!(
        moore_classes(&min),
        min.n_states(),
        "two states of the minimized DFA are equivalent"
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let dist = distances(&raw);
    let mut accepted = 0;
    for _ in 0..20_000 {
        let s = random_string(&raw, &dist, &mut rng);
        let a = raw.accepts(&s);
        assert_eq!(a, min.accepts(&s), "{:?}", String::from_utf8_lossy(&s));
        accepted += a as usize;
    }
    assert!(
        accepted > 1000,
        "only {accepted} random strings were accepted"
    );
    // Minimizing is idempotent and the numbering canonical.
    assert_eq!(minimize(&min), min);
}

#[test]
fn same_input_gives_identical_artifacts() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let a = compile(
        &set,
        &vocab,
        &Options {
            threads: 1,
            ..Options::default()
        },
        &mut |_| {},
    )
    .unwrap();
    let b = compile(
        &set,
        &vocab,
        &Options {
            threads: 2,
            ..Options::default()
        },
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(a.artifact, b.artifact);
}

/// The same oracle on formats with several entries and special tokens the
/// grammar uses (the selector and the special tokens' reserved bytes).
#[test]
fn masks_match_brute_force_with_entries_and_special_tokens() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let mut vocab = small_vocab();
    let eos = vocab.eos.clone();
    for s in ["<tool_call>", "</tool_call>", "[TOOL_CALLS]"] {
        vocab.tokens.push(Token::Special(s.into()));
    }
    let vocab = Vocab::from_tokens(vocab.tokens, eos, "small + specials").unwrap();
    for format in ["hermes", "mistral", "toolken", "json"] {
        let opts = Options {
            format: tooldec_compiler::CallFormat::load(format).unwrap(),
            zstd_level: None,
            ..Options::default()
        };
        let out = compile(&set, &vocab, &opts, &mut |_| {}).unwrap();
        let checked = check_masks_by_brute_force(&out.artifact, &vocab);
        assert!(checked > 10_000, "{format}: only {checked} pairs checked");
    }
}

/// The artifact's transitions (format 5: live moves only, rows overlaid)
/// read back as the machine's own moves, for every state and byte.
#[test]
fn the_artifact_moves_are_the_machines() {
    let (path, text) = example("weather.json");
    let set = spec::parse(&path, &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    for format in ["react", "hermes", "qwen3-coder", "llama-pythonic"] {
        let opts = Options {
            format: tooldec_compiler::CallFormat::load(format).unwrap(),
            zstd_level: None,
            ..Options::default()
        };
        let art = compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact;
        let art = tooldec_runtime::Artifact::from_bytes(&art).unwrap();
        let g = art.grammar();
        let (machine, _, _) = build_dfa(&set, &opts, &vocab, &mut |_| {}).unwrap();
        let dfa = machine.dfa;
        assert_eq!(g.state_count(), dfa.n_states(), "{format}");
        for s in 0..dfa.n_states() as u32 {
            for b in 0..=255u8 {
                assert_eq!(
                    g.next_state(s, b),
                    dfa.next(s, b),
                    "{format}: state {s} byte {b}"
                );
            }
        }
    }
}
