//! The serving API engines embed: speculative drafts (`validate_tokens`),
//! rollback with a fixed capacity, forced continuations (jump-forward),
//! batched fills and the owned handles bindings hold. Every check compares
//! against the plain `Matcher`, which the oracles check against the DFA.

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::{fill_batch, Checkpoint, Matcher, RollbackMatcher, SharedGrammar};
use tooldec_testkit::walk::{seed, SplitMix64};

/// Compiles a tool list (JSON text) with the built-in GPT-2 vocabulary and
/// returns the raw payload.
fn payload(name: &str, tools: &str, format: Option<&str>) -> Vec<u8> {
    let set = spec::parse(name, tools).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let mut opts = Options {
        zstd_level: None,
        ..Options::default()
    };
    if let Some(f) = format {
        opts.format = tooldec_compiler::CallFormat::load(f).unwrap();
    }
    compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact
}

fn weather() -> SharedGrammar {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    SharedGrammar::from_bytes(&payload("weather.json", &text, None)).unwrap()
}

use tooldec_testkit::served::{mask_of as mask, set_ids as allowed};

/// A random allowed token; after 30 steps, EOS when allowed, else a random
/// one among those that bring acceptance closest (so walks end).
fn pick(rng: &mut SplitMix64, m: &Matcher<'_>, steps: usize) -> Option<u32> {
    let g = m.grammar();
    let ids = allowed(&mask(m));
    if ids.is_empty() {
        return None;
    }
    if steps < 30 {
        return Some(ids[rng.below(ids.len() as u64) as usize]);
    }
    if let Some(&eos) = ids.iter().find(|&&t| g.is_eos(t)) {
        return Some(eos);
    }
    let state = m.state()?;
    let dist = |t: u32| {
        let next = g.walk(state, g.token_bytes(t)?)?;
        g.distance(next)
    };
    let best = ids.iter().filter_map(|&t| dist(t)).min()?;
    let near: Vec<u32> = ids.into_iter().filter(|&t| dist(t) == Some(best)).collect();
    Some(near[rng.below(near.len() as u64) as usize])
}

#[test]
fn validate_tokens_is_the_accepted_prefix() {
    let sg = weather();
    let g = sg.grammar();
    let mut checks = 0;
    for walk in 0..40u64 {
        let mut rng = SplitMix64::new(seed("validate", walk, 0));
        let mut m = g.matcher();
        let mut path = Vec::new();
        while let Some(t) = pick(&mut rng, &m, path.len()) {
            assert!(m.accept_token(t));
            path.push(t);
            if m.is_terminated() {
                break;
            }
        }
        // From every position, the rest of the walk validates whole; with
        // a wrong token at draft position k, exactly k validate.
        let mut m = g.matcher();
        for i in 0..path.len() {
            let rest = &path[i..];
            assert_eq!(m.validate_tokens(rest), rest.len());
            let k = rng.below(rest.len() as u64) as usize;
            let mut draft = rest.to_vec();
            let mut at_k = m;
            at_k.accept_tokens(&rest[..k]);
            let bad = (0..g.mask_width() as u32).find(|&t| !at_k.is_allowed(t));
            if let Some(bad) = bad {
                draft[k] = bad;
                assert_eq!(m.validate_tokens(&draft), k, "walk {walk} step {i}");
            }
            let before = mask(&m);
            assert_eq!(mask(&m), before, "validate_tokens must not advance");
            assert!(m.accept_token(path[i]));
            checks += 2;
        }
    }
    assert!(checks > 1000, "{checks} checks");
}

#[test]
fn rollback_restores_exact_positions() {
    let sg = weather();
    let g = sg.grammar();
    let mut rollbacks = 0;
    for walk in 0..60u64 {
        let mut rng = SplitMix64::new(seed("rollback", walk, 0));
        let cap = 1 + rng.below(8) as usize;
        let budget = if walk % 2 == 0 {
            None
        } else {
            Some(g.min_tokens() + rng.below(30) as u32)
        };
        let start = match budget {
            Some(n) => g.matcher_with_budget(n).unwrap(),
            None => g.matcher(),
        };
        let mut rm = RollbackMatcher::new(start, vec![Checkpoint::default(); cap]);
        // Every position so far, as plain copies: the reference.
        let mut stack: Vec<Matcher<'_>> = vec![start];
        // How many of them the ring still holds.
        let mut depth = 0;
        for _ in 0..400 {
            let top = *stack.last().unwrap();
            assert_eq!(mask(rm.matcher()), mask(&top));
            assert_eq!(rm.tokens_left(), top.tokens_left());
            assert_eq!(rm.is_terminated(), top.is_terminated());
            assert_eq!(rm.depth(), depth);
            if rng.below(4) == 0 && stack.len() > 1 {
                let n = 1 + rng.below(rm.depth() as u64 + 2) as usize;
                if n > rm.depth() {
                    let before = *rm.matcher();
                    assert!(!rm.rollback(n), "rollback past depth must fail");
                    assert_eq!(mask(rm.matcher()), mask(&before));
                } else {
                    assert!(rm.rollback(n));
                    stack.truncate(stack.len() - n);
                    depth -= n;
                    rollbacks += 1;
                }
                continue;
            }
            let Some(t) = pick(&mut rng, rm.matcher(), stack.len()) else {
                break;
            };
            let mut next = top;
            assert!(next.accept_token(t));
            assert!(rm.accept_token(t));
            stack.push(next);
            depth = (depth + 1).min(cap);
            if next.is_terminated() && rng.below(3) == 0 {
                break;
            }
        }
    }
    assert!(rollbacks > 500, "{rollbacks} rollbacks");
}

#[test]
fn rollback_edges() {
    let sg = weather();
    let g = sg.grammar();
    let text = b"Thought: x\nAction: get_time\nAction Input: {\"timezone\": \"UTC\"}";
    // Capacity 0: accepting works, nothing rolls back.
    let mut rm = RollbackMatcher::new(g.matcher(), [] as [Checkpoint; 0]);
    let t = allowed(&mask(rm.matcher()))[0];
    assert!(rm.accept_token(t));
    assert_eq!(rm.depth(), 0);
    assert!(!rm.rollback(1));
    assert!(rm.rollback(0));
    // A refused token records nothing; reset forgets the history.
    let mut rm = RollbackMatcher::new(g.matcher(), [Checkpoint::default(); 4]);
    let eos = g.eos_tokens()[0];
    assert!(!rm.accept_token(eos));
    assert_eq!(rm.depth(), 0);
    assert!(rm.accept_token(t));
    rm.reset();
    assert_eq!(rm.depth(), 0);
    assert_eq!(rm.matcher().state(), Some(g.start_state()));
    // Rolling back over EOS un-terminates.
    let mut m = g.matcher();
    assert!(m.accept_bytes(text));
    let mut rm = RollbackMatcher::new(m, [Checkpoint::default(); 2]);
    assert!(rm.accept_token(eos));
    assert!(rm.is_terminated());
    assert!(rm.rollback(1));
    assert!(!rm.is_terminated() && rm.is_accepting());
}

/// Bytes `0..n` of every allowed text token and the forced bytes agree:
/// each allowed token either lies inside the forced bytes or extends them.
#[test]
fn forced_bytes_are_what_every_allowed_token_starts_with() {
    let sg = weather();
    let g = sg.grammar();
    let mut forced_total = 0;
    let mut states = 0;
    for walk in 0..30u64 {
        let mut rng = SplitMix64::new(seed("forced", walk, 0));
        let mut m = g.matcher();
        let mut steps = 0;
        loop {
            let mut buf = [0u8; 256];
            let n = m.forced_bytes(&mut buf);
            let forced = &buf[..n];
            forced_total += n;
            states += 1;
            let words = mask(&m);
            for t in allowed(&words) {
                if g.is_eos(t) {
                    assert_eq!(n, 0, "EOS allowed, yet {forced:?} forced");
                    continue;
                }
                let b = g.token_bytes(t).unwrap();
                let k = b.len().min(n);
                assert_eq!(
                    &b[..k],
                    &forced[..k],
                    "token {t} {b:?} vs forced {forced:?}"
                );
            }
            if n > 0 {
                // The forced bytes lead somewhere; they end at a choice,
                // acceptance, a special token or a UTF-8 boundary.
                let mut probe = m;
                assert!(probe.accept_bytes(forced), "forced {forced:?} refused");
                assert!(std::str::from_utf8(forced).is_ok());
            }
            if n < buf.len() {
                let s = g.walk(m.state().unwrap(), forced).unwrap();
                let live: Vec<u8> = (0..=255u8).filter(|&b| g.next_state(s, b) != 0).collect();
                let ends_in_char = live.len() == 1 && live[0] >= 0xC0 && live[0] < 0xF5;
                assert!(
                    g.is_accepting_state(s) || live.len() != 1 || live[0] >= 0xFE || ends_in_char,
                    "forced bytes {forced:?} stop early before {live:?}"
                );
            }
            let Some(t) = pick(&mut rng, &m, steps) else {
                break;
            };
            assert!(m.accept_token(t));
            steps += 1;
            if m.is_terminated() {
                assert_eq!(m.forced_bytes(&mut [0u8; 8]), 0);
                break;
            }
        }
    }
    assert!(
        states > 300 && forced_total > 1000,
        "{states} states, {forced_total} forced bytes"
    );
}

#[test]
fn forced_bytes_examples() {
    let sg = weather();
    let g = sg.grammar();
    let forced = |prefix: &[u8], cap: usize| {
        let mut m = g.matcher();
        assert!(
            m.accept_bytes(prefix),
            "{:?}",
            String::from_utf8_lossy(prefix)
        );
        let mut buf = vec![0u8; cap];
        let n = m.forced_bytes(&mut buf);
        String::from_utf8(buf[..n].to_vec()).unwrap()
    };
    // After a unique tool-name prefix, the rest of the name and the
    // format's fixed text, up to the optional whitespace after `{`.
    assert_eq!(
        forced(b"Thought: x\nAction: search_f", 256),
        "lights\nAction Input: {"
    );
    assert_eq!(
        forced(b"Thought: x\nAction: get_w", 256),
        "eather\nAction Input: {"
    );
    // A choice: get_weather / get_time.
    assert_eq!(forced(b"Thought: x\nAction: get_", 256), "");
    // The buffer bounds it.
    assert_eq!(forced(b"Thought: x\nAction: search_f", 3), "lig");
    // An enum value once it is unique.
    assert_eq!(
        forced(
            b"Thought: x\nAction: get_weather\nAction Input: {\"city\": \"a\", \"unit\": \"f",
            256
        ),
        "ahrenheit\""
    );

    // Never inside a UTF-8 character: "café" and "cafè" share 0xC3.
    let tools = r#"[{"name": "order", "parameters": {"type": "object",
        "properties": {"drink": {"enum": ["café", "cafè"]}}, "required": ["drink"]}}]"#;
    let p = payload("cafe.json", tools, Some("hermes"));
    let sg = SharedGrammar::from_bytes(&p).unwrap();
    let g = sg.grammar();
    let mut m = g.matcher();
    let prefix = "<tool_call>\n{\"name\": \"order\", \"arguments\": {\"drink\": \"c";
    assert!(m.accept_bytes(prefix.as_bytes()), "hermes prefix");
    let mut buf = [0u8; 64];
    let n = m.forced_bytes(&mut buf);
    assert_eq!(&buf[..n], b"af", "stops before the shared lead byte 0xC3");
}

#[test]
fn fill_batch_writes_each_row_at_its_stride() {
    let sg = weather();
    let g = sg.grammar();
    let mut rng = SplitMix64::new(7);
    let mut ms: Vec<Matcher<'_>> = Vec::new();
    for i in 0..6 {
        let mut m = g.matcher();
        for _ in 0..i * 3 {
            let t = pick(&mut rng, &m, 0).unwrap();
            m.accept_token(t);
        }
        ms.push(m);
    }
    let words = g.mask_words();
    for stride in [words, words + 5] {
        let mut out = vec![0xAAAA_AAAAu32; stride * ms.len()];
        assert!(fill_batch(&ms, &mut out, stride));
        for (i, m) in ms.iter().enumerate() {
            let row = &out[i * stride..(i + 1) * stride];
            assert_eq!(&row[..words], &mask(m)[..]);
            assert!(row[words..].iter().all(|&w| w == 0), "padding words zeroed");
        }
        // Padding ids inside the last mask word are never set.
        let n = g.token_count();
        if !n.is_multiple_of(32) {
            assert_eq!(out[words - 1] >> (n % 32), 0);
        }
    }
    let mut short = vec![0u32; words * ms.len() - 1];
    assert!(!fill_batch(&ms, &mut short, words), "too few rows");
    let mut out = vec![0u32; words * ms.len()];
    assert!(
        !fill_batch(&ms, &mut out, words - 1),
        "stride below the mask width"
    );
}

#[test]
fn owned_matchers_outlive_their_handle_and_cross_threads() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<SharedGrammar>();
    send_sync::<tooldec_runtime::OwnedMatcher>();

    let sg = weather();
    let plain_start = mask(&sg.grammar().matcher());
    let mut m = sg.matcher(None, None, 4).unwrap();
    let copy = sg.clone();
    drop(sg);
    drop(copy);
    // The matcher keeps the artifact alive.
    let mut w = vec![0u32; m.grammar().mask_words()];
    m.fill_mask(&mut w);
    assert_eq!(w, plain_start);
    let t = allowed(&w)[0];
    assert!(m.accept_token(t));
    let mut other = m.clone();
    let handle = std::thread::spawn(move || {
        assert!(other.rollback(1));
        let mut w = vec![0u32; other.grammar().mask_words()];
        other.fill_mask(&mut w);
        w
    });
    assert_eq!(handle.join().unwrap(), plain_start);
    assert_eq!(m.depth(), 1, "clones are independent");

    // Entries and budgets, and their errors.
    let sg = weather();
    let min = sg.grammar().min_tokens();
    assert!(sg.matcher(Some("nope"), None, 0).is_err());
    let e = sg.matcher(None, Some(min - 1), 0).err().unwrap();
    assert_eq!(e.budget_shortfall(), Some((min, min - 1)));
    let m = sg.matcher(None, Some(min), 2).unwrap();
    assert_eq!(m.tokens_left(), Some(min));
    assert_eq!(m.capacity(), 2);
}

/// A borrowed grammar is lent to the matcher as itself, not a copy; an
/// owned handle lends a view built for the call, of the same payload.
#[test]
fn handles_lend_their_grammar() {
    use tooldec_runtime::{GrammarHandle, Lent};
    let sg = weather();
    let g = sg.grammar();
    match g.lend() {
        Lent::Borrowed(lent) => assert!(std::ptr::eq(lent, &g), "lent, not copied"),
        Lent::Built(_) => panic!("a Grammar handle builds no view"),
    }
    match (&&g).lend() {
        Lent::Borrowed(lent) => assert!(std::ptr::eq(lent, &g), "through references too"),
        Lent::Built(_) => panic!("a reference to a Grammar builds no view"),
    }
    let built = sg.lend();
    assert!(matches!(built, Lent::Built(_)));
    assert!(
        std::ptr::eq(built.metadata(), g.metadata()),
        "the same payload"
    );
    assert_eq!(built.state_count(), g.state_count());
}

/// Where decoding spends its steps (a state with a byte loop: a string
/// body, digits), the mask is a copy or a short list, never a long list
/// (each id of a list costs a store); elsewhere long lists stay, for
/// memory. The bound restates the compiler's `HOT_LIST_FRACTION` (words
/// / 64) rather than reading it, so that changing it is seen here.
#[test]
fn looping_states_serve_copies_or_short_lists() {
    let shared = weather();
    let g = shared.grammar();
    let short = g.mask_words() / 64;
    let (mut hot, mut cold_long) = (0, 0);
    for s in 1..g.state_count() as u32 {
        let Some(id) = g.mask_id(s) else { continue };
        let (kind, len) = g.mask_storage(id).unwrap();
        if (0..=255u8).any(|b| g.next_state(s, b) == s) {
            hot += 1;
            assert!(
                kind == "dense" || len <= short,
                "state {s} loops but serves a {kind} list of {len} ids"
            );
        } else if kind != "dense" && len > short {
            cold_long += 1;
        }
    }
    assert!(hot > 0, "no looping state in the weather grammar");
    assert!(cold_long > 0, "no long list left where memory is kept");
}

/// LOOPS lists exactly the tokens whose bytes lead a state back to
/// itself: for every state with a set, each token is in it exactly when
/// its walk ends where it began; every other state with a mask has no
/// such token (none was dropped here). (The oracles check that
/// `accept_token`, which trusts the sets, agrees with the DFA.)
#[test]
fn loop_sets_are_the_tokens_that_lead_back() {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    for format in [None, Some("hermes"), Some("qwen3-coder"), Some("json")] {
        let bytes = payload("weather.json", &text, format);
        let g = SharedGrammar::from_bytes(&bytes).unwrap();
        let g = g.grammar();
        let mut listed = 0;
        let mut words = vec![0u32; g.mask_words()];
        for s in 1..g.state_count() as u32 {
            let has_set = g.loop_count(s) > 0;
            let served = g.distance(s).is_some()
                && g.mask_id(s)
                    .is_some_and(|id| g.fill_mask_by_id(id, &mut words))
                && words.iter().any(|&w| w != 0);
            for t in 0..g.token_count() as u32 {
                let back = g.token_bytes(t).and_then(|b| g.walk(s, b)) == Some(s);
                if has_set {
                    assert_eq!(g.loops_back(s, t), back, "{format:?}: state {s}, token {t}");
                } else if served && back {
                    panic!("{format:?}: token {t} leads state {s} back, and it has no set");
                }
                listed += (has_set && back) as usize;
            }
        }
        assert!(listed > 0, "{format:?}: some state loops");
    }
}
