//! Hostile tool lists: what an attacker sends to a server that compiles
//! each request's tools. Every case has its expected outcome (an artifact,
//! or an error of a kind whose message names the place) and the bounds it
//! runs under; each runs on a thread with a 2 MiB stack, the size of a
//! spawned Rust thread's, so that a recursion the input drives would
//! abort the test rather than pass here and overflow in a server.
//!
//! The corpus is this table. `TOOLDEC_HOSTILE_OUT=DIR` also writes each
//! case's tool list to `DIR/NAME.json` (and its flags to `DIR/NAME.args`),
//! to run `tooldec-compile` over them by hand (the closing note of the
//! hostile-inputs issue measured time and memory that way).

use std::time::Duration;

use serde_json::{json, Value};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{compile, spec, Cancel, Compiler, ErrorKind, JsonOptions, Limits, Options};

/// What a case must end with.
enum Expect {
    /// An artifact.
    Ok,
    /// An error of this kind whose message has every needle.
    Err(ErrorKind, &'static [&'static str]),
}

struct Case {
    name: &'static str,
    tools: Value,
    /// The `tooldec-compile` flags the options below stand for.
    args: &'static str,
    opts: fn(&mut Options),
    expect: Expect,
}

/// One tool whose only argument `x` has `schema`.
fn one(schema: Value) -> Value {
    json!([{"type": "function", "function": {"name": "t", "description": "d",
        "parameters": {"type": "object", "properties": {"x": schema}, "required": ["x"]}}}])
}

/// One tool whose arguments are `parameters`.
fn params(parameters: Value) -> Value {
    json!([{"type": "function", "function": {"name": "t", "description": "d",
        "parameters": parameters}}])
}

fn none(_: &mut Options) {}

fn corpus() -> Vec<Case> {
    use ErrorKind::{Limit, Unsupported, Usage};
    let many = |n: usize, each: Value| -> serde_json::Map<String, Value> {
        (0..n).map(|i| (format!("p{i}"), each.clone())).collect()
    };
    let chain = |depth: usize| {
        // Each level refers to the next twice: the text is linear, the
        // grammar written out is exponential.
        let mut defs = serde_json::Map::new();
        for i in 0..depth {
            defs.insert(
                format!("d{i}"),
                json!({"type": "array", "prefixItems": [
                    {"$ref": format!("#/$defs/d{}", i + 1)},
                    {"$ref": format!("#/$defs/d{}", i + 1)}]}),
            );
        }
        defs.insert(format!("d{depth}"), json!({"type": "integer"}));
        params(json!({"type": "object", "$defs": defs,
            "properties": {"x": {"$ref": "#/$defs/d0"}}, "required": ["x"]}))
    };
    vec![
        Case {
            name: "pattern-any-1000-unanchored",
            tools: one(json!({"type": "string", "pattern": ".{1000}"})),
            args: "",
            opts: none,
            expect: Expect::Err(
                Unsupported,
                &["/properties/x/pattern", "too large on its own"],
            ),
        },
        Case {
            name: "pattern-20th-from-end",
            tools: one(json!({"type": "string", "pattern": "a.{20}$"})),
            args: "",
            opts: none,
            expect: Expect::Err(
                Unsupported,
                &["/properties/x/pattern", "too large on its own"],
            ),
        },
        Case {
            name: "pattern-repeat-4294967295",
            tools: one(json!({"type": "string", "pattern": "^a{4294967295}$"})),
            args: "",
            opts: none,
            expect: Expect::Err(Unsupported, &["/properties/x/pattern", "unroll"]),
        },
        Case {
            name: "pattern-nested-repeats",
            tools: one(json!({"type": "string", "pattern": "^(a{65535}){65535}$"})),
            args: "",
            opts: none,
            expect: Expect::Err(Unsupported, &["/properties/x/pattern", "unroll"]),
        },
        Case {
            name: "pattern-20000-atoms",
            tools: one(json!({"type": "string", "pattern": format!("^{}$", "[ab]".repeat(20000))})),
            args: "",
            opts: none,
            expect: Expect::Err(Unsupported, &["/properties/x/pattern", "longer than 1000"]),
        },
        Case {
            name: "pattern-1000-chars-anchored",
            tools: one(json!({"type": "string", "pattern": format!("^{}$", "a".repeat(998))})),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
        Case {
            name: "pattern-large-unicode-class-counted",
            tools: one(json!({"type": "string", "pattern": "^\\p{L}{200}$"})),
            args: "",
            opts: none,
            expect: Expect::Err(
                Unsupported,
                &["/properties/x/pattern", "too large on its own"],
            ),
        },
        Case {
            name: "pattern-small-unicode-class-counted",
            tools: one(json!({"type": "string", "pattern": "^\\p{L}{1,8}$"})),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
        Case {
            name: "min-properties-2^32+1",
            tools: params(
                json!({"type": "object", "additionalProperties": {"type": "integer"},
                "minProperties": 4294967297u64}),
            ),
            args: "",
            opts: none,
            expect: Expect::Err(Limit, &["minProperties above 4096"]),
        },
        Case {
            // Lowered as --max-count (a subset), no longer wrapped to 0.
            name: "max-properties-2^32+1",
            tools: params(
                json!({"type": "object", "additionalProperties": {"type": "integer"},
                "maxProperties": 4294967297u64}),
            ),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
        Case {
            name: "min-properties-over-5000-members",
            tools: params(
                json!({"type": "object", "properties": many(5000, json!({"type": "integer"})),
                "minProperties": 300}),
            ),
            args: "",
            opts: none,
            expect: Expect::Err(Limit, &["more than 256 declared properties"]),
        },
        Case {
            name: "property-name-10000-bytes",
            tools: params(json!({"type": "object",
                "properties": {"k".repeat(10000): {"type": "integer"}},
                "additionalProperties": {"type": "integer"}})),
            args: "",
            opts: none,
            expect: Expect::Err(Limit, &["/properties/kkk", "longer than 1024 bytes"]),
        },
        Case {
            name: "property-name-1024-bytes-with-extras",
            tools: params(json!({"type": "object",
                "properties": {"k".repeat(1024): {"type": "integer"}},
                "additionalProperties": {"type": "integer"}})),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
        Case {
            name: "vocab-size-4294967295",
            tools: one(json!({"type": "integer"})),
            args: "--vocab-size 4294967295",
            opts: |o| o.mask_width = Some(u32::MAX),
            expect: Expect::Err(Usage, &["--vocab-size 4294967295", "16777216"]),
        },
        Case {
            name: "any-depth-100000000",
            tools: one(json!({})),
            args: "--any-depth 100000000",
            opts: |o| o.json.any_depth = 100_000_000,
            expect: Expect::Err(Usage, &["--any-depth 100000000"]),
        },
        Case {
            name: "max-ws-4294967295",
            tools: one(json!({"type": "integer"})),
            args: "--max-ws 4294967295",
            opts: |o| o.json.max_ws = u32::MAX,
            expect: Expect::Err(Usage, &["--max-ws"]),
        },
        Case {
            name: "max-count-4294967295",
            tools: one(json!({"type": "string"})),
            args: "--max-count 4294967295",
            opts: |o| o.json.max_count = u32::MAX,
            expect: Expect::Err(Usage, &["--max-count"]),
        },
        Case {
            // 57 s before the DFA state bound when unbounded: the time
            // limit ends it.
            name: "500-free-optional-properties",
            tools: params(json!({"type": "object", "properties": many(500, json!({}))})),
            args: "--time-limit 2",
            opts: |o| o.limits.time = Some(Duration::from_secs(2)),
            expect: Expect::Err(Limit, &["time limit of 2 s"]),
        },
        Case {
            name: "500-free-optional-properties-small-memory",
            tools: params(json!({"type": "object", "properties": many(500, json!({}))})),
            args: "--memory-limit 64MiB",
            opts: |o| o.limits.memory = Some(64 << 20),
            expect: Expect::Err(Limit, &["memory budget of 64.0 MiB"]),
        },
        Case {
            name: "ref-chain-doubling-28",
            tools: chain(28),
            args: "--time-limit 3",
            opts: |o| o.limits.time = Some(Duration::from_secs(3)),
            expect: Expect::Err(Limit, &[]),
        },
        Case {
            name: "ref-recursive",
            tools: params(json!({"type": "object", "$defs": {"n": {"type": "object",
                "properties": {"next": {"$ref": "#/$defs/n"}}}},
                "properties": {"x": {"$ref": "#/$defs/n"}}, "required": ["x"]})),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
        Case {
            name: "ref-dangling",
            tools: one(json!({"$ref": "#/$defs/missing"})),
            args: "",
            opts: none,
            expect: Expect::Err(ErrorKind::Schema, &["/properties/x", "missing"]),
        },
        Case {
            name: "nesting-50-deep",
            tools: one((0..50).fold(
                json!({"type": "integer"}),
                |s, _| json!({"type": "object", "properties": {"a": s}, "required": ["a"]}),
            )),
            args: "",
            opts: none,
            expect: Expect::Err(Limit, &["depth"]),
        },
        Case {
            name: "any-of-500",
            tools: one(json!({"anyOf": (0..500).map(|i| json!({"const": i})).collect::<Vec<_>>()})),
            args: "",
            opts: none,
            expect: Expect::Err(Limit, &["/properties/x", "more than 256 alternatives"]),
        },
        Case {
            name: "enum-10000",
            tools: one(json!({"enum": (0..10000).map(|i| format!("v{i}")).collect::<Vec<_>>()})),
            args: "",
            opts: none,
            expect: Expect::Ok,
        },
    ]
}

/// A vocabulary of every byte, a few pieces and an end of sequence: the
/// cases are about the grammar, and a small vocabulary keeps them fast.
fn vocab() -> Vocab {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    for p in ["Action: ", "\nAction Input: ", "{\"x\": ", "\"", "}", "12"] {
        tokens.push(Token::Text(p.as_bytes().to_vec()));
    }
    tokens.push(Token::Special("</s>".into()));
    let eos = tokens.len() as u32 - 1;
    Vocab::from_tokens(tokens, vec![eos], "hostile: bytes").unwrap()
}

/// Runs `f` on a thread with a 2 MiB stack.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

fn write_out(dir: &str, case: &Case) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(format!("{dir}/{}.json", case.name), case.tools.to_string()).unwrap();
    std::fs::write(format!("{dir}/{}.args", case.name), case.args).unwrap();
}

#[test]
fn every_hostile_case_ends_as_expected_within_its_bounds() {
    let out = std::env::var("TOOLDEC_HOSTILE_OUT").ok();
    let mut failures = Vec::new();
    for case in corpus() {
        if let Some(dir) = &out {
            write_out(dir, &case);
        }
        let mut opts = Options::default();
        (case.opts)(&mut opts);
        let text = case.tools.to_string();
        let started = std::time::Instant::now();
        let result = small_stack(move || {
            let set = spec::parse("tools.json", &text)?;
            compile(&set, &vocab(), &opts, &mut |_| {}).map(drop)
        });
        let took = started.elapsed();
        let said = match &result {
            Ok(()) => "an artifact".to_string(),
            Err(e) => e.message().chars().take(160).collect(),
        };
        eprintln!("{:<44} {:>8.2?} {said}", case.name, took);
        let ok = match (&case.expect, &result) {
            (Expect::Ok, Ok(())) => true,
            (Expect::Err(kind, needles), Err(e)) => {
                e.kind() == *kind && needles.iter().all(|n| e.message().contains(n))
            }
            _ => false,
        };
        if !ok {
            failures.push(format!("{}: got {said}", case.name));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_compile_is_cancelled_from_another_thread() {
    let cancel = Cancel::new();
    let opts = Options {
        limits: Limits {
            cancel: cancel.clone(),
            ..Limits::unbounded()
        },
        ..Options::default()
    };
    // Minutes of determinization when nothing stops it.
    let tools = params(json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": (0..400).map(|i| (format!("p{i}"), json!({})))
            .collect::<serde_json::Map<_, _>>()}}}));
    let text = tools.to_string();
    let compiling = std::thread::spawn(move || {
        let set = spec::parse("tools.json", &text).unwrap();
        compile(&set, &vocab(), &opts, &mut |_| {}).map(drop)
    });
    std::thread::sleep(Duration::from_millis(300));
    cancel.cancel();
    let e = compiling.join().unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cancelled, "{e}");
    assert!(e.message().contains("cancelled during"), "{e}");
}

#[test]
fn the_limits_do_not_change_an_artifact() {
    let tools = one(json!({"type": "string", "pattern": "^[a-z]{2,8}$"}));
    let set = spec::parse("tools.json", &tools.to_string()).unwrap();
    let build = |limits: Limits| {
        let opts = Options {
            limits,
            ..Options::default()
        };
        compile(&set, &vocab(), &opts, &mut |_| {})
            .unwrap()
            .artifact
    };
    let tight = Limits {
        time: Some(Duration::from_secs(60)),
        memory: Some(64 << 20),
        cancel: Cancel::new(),
    };
    assert_eq!(build(Limits::unbounded()), build(tight));
    assert_eq!(build(Limits::unbounded()), build(Limits::offline()));
}

#[test]
fn a_token_too_long_for_the_trie_is_refused() {
    let mut tokens: Vec<Token> = (0..=255u8).map(|b| Token::Text(vec![b])).collect();
    tokens.push(Token::Text(vec![b'a'; 65536]));
    tokens.push(Token::Special("</s>".into()));
    let e = Vocab::from_tokens(tokens, vec![257], "long").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Vocab);
    assert!(e.message().contains("token 256 is 65536 bytes"), "{e}");
}

#[test]
fn json_options_bounds_are_checked_in_every_front_end() {
    // The library's own check: the CLI, the C ABI and Python all compile
    // through it (their tests pass such flags too).
    let set = spec::parse("t.json", &one(json!({"type": "integer"})).to_string()).unwrap();
    for (opts, flag) in [
        (
            JsonOptions {
                max_depth: 1000,
                ..JsonOptions::default()
            },
            "--max-depth",
        ),
        (
            JsonOptions {
                max_recursion: 1000,
                ..JsonOptions::default()
            },
            "--max-recursion",
        ),
    ] {
        let o = Options {
            json: opts,
            ..Options::default()
        };
        let e = compile(&set, &vocab(), &o, &mut |_| {})
            .map(drop)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage);
        assert!(e.message().starts_with(flag), "{e}");
        // A server's compiler, both ways it compiles.
        let c = std::sync::Arc::new(Compiler::new(vocab()));
        let e = c.compile(&set, &o).map(drop).unwrap_err();
        assert!(e.message().starts_with(flag), "{e}");
        let e = c.start(&set, &o).map(drop).unwrap_err();
        assert!(e.message().starts_with(flag), "{e}");
    }
}
