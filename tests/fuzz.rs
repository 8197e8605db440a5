//! Fuzzing on stable Rust, bounded and seeded so that `cargo test` runs the
//! same few seconds of it every time, and every crash the fuzzers found
//! kept as a named regression test.
//!
//! The mutations and the API-call sequences are those of the cargo-fuzz
//! targets in `fuzz/` (`tests/fuzz_common.rs` is shared): structured edits of
//! small seed payloads (header words, section table entries, section words,
//! with boundary values) with the checksum re-stamped so that validation
//! beyond it is exercised, and random sequences of matcher calls on valid
//! artifacts with the serving invariants checked.
//!
//! The seeds are `fuzz/seeds/*.tdm`: two small grammars over a hand-written
//! vocabulary (every byte plus a few pieces), so that a fuzz run loads them
//! in microseconds. [`fuzz_seeds_are_current`] rebuilds them; run it with
//! `TOOLDEC_UPDATE_SEEDS=1` to rewrite them after a deliberate change.

use crate::fuzz_common;

use fuzz_common::{apply, edits, load_and_serve, serve, Edit, Input, Rng};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::CallFormat;
use tooldec_compiler::JsonOptions;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::layout::{self, hdr, sec, HEADER_WORDS};
use tooldec_runtime::{Artifact, Grammar};

fn root(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// Every byte, a few pieces, the special tokens of the hermes format, and
/// an end-of-sequence token.
fn seed_vocab() -> Vocab {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    for piece in [
        "Thought: ",
        "\nAction: ",
        "\nAction Input: ",
        "add",
        "neg",
        "{\"a\":",
        ",\"b\":",
        "{\"x\":",
        "true",
        "false",
        "12",
        "\"name\": \"",
        "\"arguments\": ",
        " 1",
    ] {
        tokens.push(Token::Text(piece.as_bytes().to_vec()));
    }
    for s in ["<tool_call>", "</tool_call>", "</s>"] {
        tokens.push(Token::Special(s.into()));
    }
    let eos = tokens.len() as u32 - 1;
    Vocab::from_tokens(tokens, vec![eos], "fuzz seed: bytes, pieces and specials").unwrap()
}

/// The seed artifacts: `(file name, compressed bytes)`.
fn build_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let text = std::fs::read_to_string(root("grammars/examples/tiny.json")).unwrap();
    let set = spec::parse("tiny.json", &text).unwrap();
    let vocab = seed_vocab();
    let json = JsonOptions {
        max_ws: 0,
        ..JsonOptions::default()
    };
    // Entry `start` alone keeps the seed small.
    let react = Options {
        json,
        format: CallFormat::load("react")
            .unwrap()
            .only_entry("start")
            .unwrap(),
        ..Options::default()
    };
    let hermes = Options {
        json,
        format: CallFormat::load("hermes")
            .unwrap()
            .only_entry("start")
            .unwrap(),
        // Padding ids past the tokenizer, and a default budget.
        mask_width: Some(vocab.len() as u32 + 7),
        max_tokens: Some(40),
        ..Options::default()
    };
    [("react-bytes.tdm", react), ("hermes-budget.tdm", hermes)]
        .into_iter()
        .map(|(name, opts)| {
            let out = compile(&set, &vocab, &opts, &mut |_| {}).unwrap();
            (name, out.artifact)
        })
        .collect()
}

#[test]
fn fuzz_seeds_are_current() {
    let update = std::env::var_os("TOOLDEC_UPDATE_SEEDS").is_some_and(|v| v == "1");
    for (name, fresh) in build_seeds() {
        let path = root(&format!("fuzz/seeds/{name}"));
        if update {
            std::fs::write(&path, &fresh).unwrap();
        }
        let kept = std::fs::read(&path).unwrap_or_default();
        assert!(
            kept == fresh,
            "fuzz/seeds/{name} differs from a fresh build: rerun this test with \
             TOOLDEC_UPDATE_SEEDS=1 if the change is deliberate"
        );
        let art = Artifact::from_bytes(&kept).unwrap();
        assert!(
            art.payload().len() < 64 * 1024,
            "{name}: a seed must stay small"
        );
    }
}

/// The committed seeds' payloads, then the golden artifact's.
fn payloads(with_golden: bool) -> Vec<(String, Vec<u8>)> {
    let mut names = vec!["fuzz/seeds/react-bytes.tdm", "fuzz/seeds/hermes-budget.tdm"];
    if with_golden {
        names.push("artifacts/weather-gpt2.tdm");
    }
    names
        .into_iter()
        .map(|n| {
            let art = Artifact::open(root(n)).unwrap();
            (n.to_string(), art.payload().to_vec())
        })
        .collect()
}

fn seed_payload(name: &str) -> Vec<u8> {
    Artifact::open(root(&format!("fuzz/seeds/{name}")))
        .unwrap()
        .payload()
        .to_vec()
}

/// The cargo-fuzz targets' inputs kept in `tests/fuzz-regressions/`,
/// replayed through the targets' own code.
#[test]
fn fuzz_regression_files_replay() {
    let files: Vec<Vec<u8>> = ["react-bytes.tdm", "hermes-budget.tdm"]
        .iter()
        .map(|n| std::fs::read(root(&format!("fuzz/seeds/{n}"))).unwrap())
        .collect();
    let file_refs: Vec<&[u8]> = files.iter().map(|f| &f[..]).collect();
    let payloads: Vec<Vec<u8>> = payloads(true).into_iter().map(|(_, p)| p).collect();
    let artifacts: Vec<Artifact> = payloads
        .iter()
        .map(|p| Artifact::from_bytes(p).unwrap())
        .collect();
    let grammars: Vec<Grammar<'_>> = artifacts.iter().map(|a| a.grammar()).collect();
    let dir = root("tests/fuzz-regressions");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    names.sort();
    for name in names {
        let data = std::fs::read(format!("{dir}/{name}")).unwrap();
        if name.starts_with("loader-") {
            fuzz_common::fuzz_loader(&data, &file_refs, &payloads[..2]);
        } else if name.starts_with("matcher-") {
            fuzz_common::fuzz_matcher(&data, &grammars);
        } else {
            panic!("tests/fuzz-regressions/{name}: name it loader-... or matcher-...");
        }
    }
}

/// Structured mutations of the seed payloads, checksum re-stamped, loaded
/// and (when they pass validation) served: never a panic.
#[test]
fn stable_fuzz_loader() {
    let mut rng = Rng(0x7DC0_DE5E_ED00_0001);
    let (mut loaded, mut refused) = (0usize, 0usize);
    let start = std::time::Instant::now();
    for (name, p) in payloads(false) {
        for i in 0..20_000 {
            let n = 16 + (rng.next() % 200) as usize;
            let script = rng.bytes(n);
            let mut input = Input::new(&script);
            let e = edits(&mut input, &p);
            let q = apply(&p, &e);
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                load_and_serve(&q, &mut input)
            }))
            .unwrap_or_else(|_| panic!("{name}, case {i}: panic with edits {e:?}"));
            if ok {
                loaded += 1;
            } else {
                refused += 1;
            }
        }
    }
    // Arbitrary bytes, with a valid header (checksum re-stamped) or not.
    for _ in 0..20_000 {
        let n = (rng.next() % 400) as usize;
        let mut q = rng.bytes(n);
        if rng.next() & 1 == 0 && q.len() >= 8 {
            q[..8].copy_from_slice(b"TOOLDEC\0");
        }
        let _ = Artifact::from_bytes(&q);
        tooldec_runtime::layout::stamp_checksum(&mut q);
        let mut input = Input::new(&[]);
        load_and_serve(&q, &mut input);
    }
    println!(
        "{loaded} mutated payloads loaded and served, {refused} refused, in {:.1?}",
        start.elapsed()
    );
    assert!(
        refused > loaded / 10 && loaded > 1000,
        "{loaded} loaded, {refused} refused"
    );
}

/// Random sequences of API calls on valid artifacts, invariants checked.
#[test]
fn stable_fuzz_matcher() {
    let mut rng = Rng(0x5EED_0FA1_1CA1_1000);
    let start = std::time::Instant::now();
    for (name, p) in payloads(true) {
        let runs = if name.starts_with("artifacts/") {
            300
        } else {
            4000
        };
        let words = fuzz_common::aligned(&p);
        let g = Grammar::from_bytes(fuzz_common::view(&words, p.len())).unwrap();
        for i in 0..runs {
            let n = 64 + (rng.next() % 400) as usize;
            let script = rng.bytes(n);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                serve(&g, &mut Input::new(&script), true)
            }));
            if let Err(e) = r {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("{name}, run {i}: {msg}\nscript: {script:?}");
            }
        }
    }
    println!("matcher runs in {:.1?}", start.elapsed());
}

/// Every single edit of the compressed seed files is refused: the
/// envelope's checksums cover every byte.
#[test]
fn stable_fuzz_compressed_files() {
    let mut rng = Rng(0xC0FF_EE00_1234_5678);
    for name in ["react-bytes.tdm", "hermes-budget.tdm"] {
        let file = std::fs::read(root(&format!("fuzz/seeds/{name}"))).unwrap();
        for _ in 0..5000 {
            let mut q = file.clone();
            match rng.next() % 3 {
                0 => {
                    let at = (rng.next() as usize) % q.len();
                    q[at] ^= 1 + (rng.next() % 255) as u8;
                }
                1 => q.truncate((rng.next() as usize) % q.len()),
                _ => {
                    let at = (rng.next() as usize) % (q.len() + 1);
                    q.insert(at, rng.next() as u8);
                }
            }
            assert!(Artifact::from_bytes(&q).is_err(), "{name}: an edit loaded");
        }
    }
}

/// Why payload `q` is refused (it must be: `what` says what it holds).
fn refused(q: &[u8], what: &str) -> String {
    let words = fuzz_common::aligned(q);
    match Grammar::from_bytes(fuzz_common::view(&words, q.len())) {
        Ok(_) => panic!("{what} loaded"),
        Err(e) => e.to_string(),
    }
}

/// The word of `p` at word index `i`.
fn word_at(p: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().unwrap())
}

/// The earlier out-of-bounds slice in the tier check: a tier list that
/// starts at the last pair of TIERS, or past it, must be a clear error,
/// not a panic. (Format 5 gave each state a list start and length; from 6
/// on a state names a profile, which names a list start.)
#[test]
fn regression_tier_list_past_the_end() {
    let p = seed_payload("react-bytes.tdm");
    let (_, tiers_len) = fuzz_common::section(&p, sec::TIERS);
    let pairs = tiers_len / 8;
    let (index_off, index_len) = fuzz_common::section(&p, sec::TIER_INDEX);
    // A profile that names a list.
    let profile = (0..index_len / 8)
        .find(|&i| word_at(&p, index_off / 4 + 2 * i + 1) != 0)
        .expect("the seed has budget tiers");
    for first in [pairs as u32 - 1, pairs as u32, pairs as u32 + 1, u32::MAX] {
        let q = apply(
            &p,
            &[Edit::Word {
                word: index_off / 4 + 2 * profile + 1,
                value: first,
            }],
        );
        let err = refused(&q, &format!("a tier list from pair {first} of {pairs}"));
        assert_eq!(
            err,
            format!(
                "invalid artifact: the budget tiers of profile {profile} (TIER_INDEX) are not \
                 one whole list of TIERS (a list starts after its head pair)"
            )
        );
    }
}

/// Found reviewing the serving code while fuzzing: `top_tier` and `tiers`
/// add a state's `dist` to its stored `top + 1 - dist` (and to its tiers'
/// `k`s); a payload whose sum overflows a word passed validation and made
/// them overflow (a panic with overflow checks, a wrong value without).
/// It is now refused when loading.
#[test]
fn regression_top_tier_overflow() {
    let p = seed_payload("react-bytes.tdm");
    let (distance, _) = fuzz_common::section(&p, sec::DISTANCE);
    let (index, _) = fuzz_common::section(&p, sec::TIER_INDEX);
    // The start state's profile, made to claim a relative top of
    // u32::MAX: the first state with that profile and a distance of at
    // least 1 overflows. (DISTANCE is a column as narrow as its values, so
    // the profile is what can be made large.)
    let (_, profile) = fuzz_common::field(&p, distance, 3);
    let profile = profile as usize;
    let n = fuzz_common::column(&p, distance).2;
    let (state, dist) = (0..n)
        .map(|s| (s, fuzz_common::field(&p, distance, s)))
        .find(|&(_, (d, pr))| pr as usize == profile && d >= 2)
        .map(|(s, (d, _))| (s, d - 1))
        .expect("a state of the start state's profile has a distance");
    let q = apply(
        &p,
        &[Edit::Word {
            word: index / 4 + 2 * profile,
            value: u32::MAX,
        }],
    );
    let words = fuzz_common::aligned(&q);
    match Grammar::from_bytes(fuzz_common::view(&words, q.len())) {
        Ok(g) => {
            // What used to happen: serving adds the two.
            let _ = (g.top_tier(state as u32), g.tiers(state as u32).count());
            panic!("a top tier past u32::MAX loaded");
        }
        Err(e) => assert_eq!(
            e.to_string(),
            format!(
                "invalid artifact: top tier (relative) of state #{state} is {}, must be below {}",
                u32::MAX,
                u32::MAX - dist + 1
            )
        ),
    }
}

/// The golden payload with TIERS replaced by one list of `pairs` tiers
/// (`k` = 0, 1, ..., mask 0) that every live state references through
/// profile 1, which names pair `first` (the whole list: 1).
fn one_shared_tier_list(pairs: usize, first: u32) -> Vec<u8> {
    let p = Artifact::open(root("artifacts/weather-gpt2.tdm"))
        .unwrap()
        .payload()
        .to_vec();
    let (tiers, _) = fuzz_common::section(&p, sec::TIERS);
    let (distance, _) = fuzz_common::section(&p, sec::DISTANCE);
    let (index, index_len) = fuzz_common::section(&p, sec::TIER_INDEX);
    assert!(index_len >= 16, "the golden payload has two profiles");
    let n_states = word_at(&p, hdr::N_STATES) as usize;
    // TIERS is the last section before TOOLS: replace it.
    let mut q = p[..tiers].to_vec();
    q.extend(layout::TIER_LIST_HEAD.to_le_bytes());
    q.extend((pairs as u32).to_le_bytes());
    for k in 0..pairs as u32 {
        q.extend(k.to_le_bytes());
        q.extend(0u32.to_le_bytes());
    }
    let tiers_len = q.len() - tiers;
    // The optional TOOLS section follows TIERS: moved past the new list.
    let (tools, tools_len) = fuzz_common::section(&p, sec::TOOLS);
    let tools_at = q.len();
    q.extend_from_slice(&p[tools..tools + tools_len]);
    // And STOP_TOKENS after it.
    let (stops, stops_len) = fuzz_common::section(&p, sec::STOP_TOKENS);
    let stops_at = q.len();
    q.extend_from_slice(&p[stops..stops + stops_len]);
    // And LOOPS after that.
    let (loops, loops_len) = fuzz_common::section(&p, sec::LOOPS);
    let loops_at = q.len();
    q.extend_from_slice(&p[loops..loops + loops_len]);
    let mut edits = vec![
        Edit::Word {
            word: HEADER_WORDS + 3 * (sec::TIERS as usize - 1) + 2,
            value: tiers_len as u32,
        },
        Edit::Word {
            word: HEADER_WORDS + 3 * (sec::TOOLS as usize - 1) + 1,
            value: tools_at as u32,
        },
        Edit::Word {
            word: HEADER_WORDS + 3 * (sec::STOP_TOKENS as usize - 1) + 1,
            value: stops_at as u32,
        },
        Edit::Word {
            word: HEADER_WORDS + 3 * (sec::LOOPS as usize - 1) + 1,
            value: loops_at as u32,
        },
        Edit::FixTotal,
    ];
    // Every other profile without tiers, profile 1 with the list.
    for i in (0..index_len / 8).filter(|&i| i != 1) {
        edits.push(Edit::Word {
            word: index / 4 + 2 * i + 1,
            value: 0,
        });
    }
    edits.extend([
        Edit::Word {
            word: index / 4 + 2,
            value: u32::MAX - 1,
        },
        Edit::Word {
            word: index / 4 + 3,
            value: first,
        },
    ]);
    // Every live state at distance 1 (2 in the column) with profile 1.
    for index in 1..n_states {
        for (hi, value) in [(false, 2), (true, 1)] {
            edits.push(Edit::Field {
                at: distance,
                index,
                hi,
                value,
            });
        }
    }
    apply(&q, &edits)
}

/// Found reviewing the loader while fuzzing it: states share tier lists,
/// and each state's list was checked in full, so validation took states x
/// list length: 3.4 s for 1491 states sharing one list of 4 million tiers
/// (a 33 MB payload), and hours for a crafted file of a few hundred MB. Each
/// list is now stored after a head pair and checked once; a state's
/// reference is checked in constant time.
#[test]
fn regression_shared_tier_lists_are_checked_once() {
    let pairs = 4_000_000;
    let q = one_shared_tier_list(pairs, 1);
    let words = fuzz_common::aligned(&q);
    let t = std::time::Instant::now();
    let g = Grammar::from_bytes(fuzz_common::view(&words, q.len()));
    let took = t.elapsed();
    assert!(g.is_ok(), "{:?}", g.err().map(|e| e.to_string()));
    // Linear: about 10 ms here; the quadratic check took seconds.
    assert!(took.as_secs_f64() < 2.0, "validation took {took:.2?}");

    // A reference into the middle of a list is refused in constant time.
    let q = one_shared_tier_list(pairs, 2);
    let err = refused(&q, "a state's tiers in the middle of a list");
    assert_eq!(
        err,
        "invalid artifact: the budget tiers of profile 1 (TIER_INDEX) are not one whole list \
         of TIERS (a list starts after its head pair)"
    );
}

/// The rows, each check named (the random edits above only show that a
/// damaged row never panics): a row whose targets run past the target
/// column, a shape index past the shapes, a dead or out-of-range target,
/// a shape byte past its target count, a column head that is too wide or
/// runs past its section, and shapes that do not fill their part of
/// BYTE_CLASSES.
#[test]
fn damaged_rows_are_named() {
    let p = seed_payload("react-bytes.tdm");
    let n = word_at(&p, hdr::N_STATES) as usize;
    let nc = word_at(&p, hdr::N_CLASSES) as usize;
    let (rows, _) = fuzz_common::section(&p, sec::TRANSITIONS);
    let (classes, classes_len) = fuzz_common::section(&p, sec::BYTE_CLASSES);
    let n_shapes = (classes_len - 256) / (nc + 1);
    let targets = fuzz_common::next_column(&p, rows);
    let (row_width, split, _) = fuzz_common::column(&p, rows);
    let (target_width, _, n_targets) = fuzz_common::column(&p, targets);
    // The start state moves: its row has a target.
    let (first, shape) = fuzz_common::field(&p, rows, 3);
    let (first, shape) = (first as usize, shape as usize);
    let shape_at = classes + 256 + shape * (nc + 1);
    let g = p[shape_at] as usize;
    assert!(g > 0, "the start state moves");
    // Values the columns' widths hold that the checks refuse.
    assert!(
        n_shapes < 1 << (row_width - split),
        "a shape index past the shapes fits"
    );
    let past = (1u32 << target_width) - 1;
    assert!(past as usize >= n, "a target past the states fits");
    let field = |at: usize, index: usize, hi: bool, value: u32| {
        vec![Edit::Field {
            at,
            index,
            hi,
            value,
        }]
    };
    for (edits, want) in [
        (
            field(rows, 3, false, n_targets as u32),
            format!(
                "row end of state #3 is {}, must be below {}",
                n_targets + g,
                n_targets + 1
            ),
        ),
        (
            field(rows, 3, true, n_shapes as u32),
            format!("row shape of state #3 is {n_shapes}, must be below {n_shapes}"),
        ),
        (
            field(targets, first, true, 0),
            format!("transition of state #3 is 0, must be below {n}"),
        ),
        (
            field(targets, first, true, past),
            format!("transition of state #3 is {past}, must be below {n}"),
        ),
        (
            vec![Edit::Xor {
                at: shape_at + 1 + (0..nc).find(|&c| p[shape_at + 1 + c] == 0).unwrap(),
                mask: p[shape_at] + 1,
            }],
            format!("target number of row shape #{shape}"),
        ),
        (
            vec![Edit::Word {
                word: targets / 4,
                value: 58,
            }],
            "section 2 has a column wider than 57 bits".into(),
        ),
        (
            vec![Edit::Word {
                word: targets / 4 + 1,
                value: n_targets as u32 + 1000,
            }],
            "section 2 has a column that runs past its end".into(),
        ),
    ] {
        let err = refused(&apply(&p, &edits), &want);
        assert!(err.contains(&want), "{err}\nwanted {want}");
    }
    // One byte less in BYTE_CLASSES: not a whole shape.
    let q = apply(
        &p,
        &[Edit::Word {
            word: HEADER_WORDS + 2,
            value: classes_len as u32 - 1,
        }],
    );
    let err = refused(&q, "a partial row shape");
    assert!(err.contains("whole row shape"), "{err}");
}

/// TOOLS' states column must split each value after the two gate bits: a
/// column split elsewhere would read colours as gates and gates as
/// colours, so it is refused.
#[test]
fn a_tools_state_column_split_elsewhere_is_refused() {
    let p = seed_payload("react-bytes.tdm");
    let (tools, tools_len) = fuzz_common::section(&p, sec::TOOLS);
    assert!(tools_len > 0, "the seed has one-tool tables");
    let n_tools = word_at(&p, tools / 4) as usize;
    // The head, the ranks and the name offsets come first.
    let at = tools + 4 * (5 + n_tools + n_tools + 1);
    let (width, split, len) = fuzz_common::column(&p, at);
    assert_eq!(
        (split, len),
        (2, word_at(&p, hdr::N_STATES) as usize),
        "the states' column"
    );
    let q = apply(
        &p,
        &[Edit::Word {
            word: at / 4,
            value: width | 3 << 8,
        }],
    );
    let err = refused(&q, "a states column split after three bits");
    assert!(
        err.contains("does not have one colour and gate pair per state"),
        "{err}"
    );
}
