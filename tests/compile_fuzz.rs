//! Hostile tool lists cannot hurt a server: a structure-aware fuzzer for
//! the compiler, seeded so that `cargo test` runs the same cases every
//! time. The generator and the check are in `tests/compile_fuzz_gen.rs`,
//! shared with the cargo-fuzz target `compile` (`fuzz/`).
//!
//! Every case ends with an artifact or an error with a message, never a
//! panic or a hang, within the compile's time limit; every artifact loads
//! and its random masked walks read back to calls whose arguments the
//! schema accepts. The run prints what the cases ended with, the worst
//! compile time and the peak memory.
//!
//! - `TOOLDEC_FUZZ_CASES`: how many cases (default [`DEFAULT_CASES`]).
//! - `TOOLDEC_FUZZ_SEED`: a base seed other than the fixed one.
//! - `TOOLDEC_FUZZ_THREADS`: worker threads (default: the cores, up to 4).
//! - `TOOLDEC_FUZZ_VERBOSE=1`: print each case's seed before it runs (to
//!   find the case that aborted the process, as a stack overflow does),
//!   and its outcome.
//! - `TOOLDEC_FUZZ_REPLAY=0x...` with the test `replay_seed`: one case,
//!   shown (`TOOLDEC_FUZZ_DUMP=path` writes its tool list there).
//!
//! Each finding is kept below as a `finding_*` test with its minimal
//! input. While one is open its test is ignored, and the fuzzer counts
//! its symptom under a name (a constant in `compile_fuzz_gen.rs`) rather
//! than failing on it; none is open now.

#[path = "compile_fuzz_gen.rs"]
mod gen;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gen::{case_from_seed, check, Case, FormatSpec, Outcome};
use serde_json::{json, Map, Value};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Limits};
use tooldec_read::Reader;
use tooldec_runtime::Artifact;
use tooldec_testkit::walk::seed;

const DEFAULT_CASES: usize = 800;
/// Random walks per artifact.
const WALKS: usize = 3;
/// A case running longer than this is a hang (the compile's own limits
/// end it within `gen::TIME_BOUND`; walks and reading are quick).
const HANG: Duration = Duration::from_secs(40);

fn env_number(name: &str) -> Option<u64> {
    let s = std::env::var(name).ok()?;
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    Some(
        s.strip_prefix("0x")
            .map_or_else(|| s.parse(), |h| u64::from_str_radix(h, 16))
            .unwrap_or_else(|_| panic!("{name}={s:?} is not a number")),
    )
}

fn case_seed(base: u64, i: u64) -> u64 {
    seed("compile_fuzz", base, i)
}

enum Msg {
    Start(usize, u64),
    Done(usize, u64, Result<Outcome, String>),
}

#[test]
fn stable_fuzz_compile() {
    let cases = env_number("TOOLDEC_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let base = env_number("TOOLDEC_FUZZ_SEED").unwrap_or(0x7001_DEC0);
    let verbose = std::env::var_os("TOOLDEC_FUZZ_VERBOSE").is_some_and(|v| v == "1");
    let workers = env_number("TOOLDEC_FUZZ_THREADS").map_or_else(
        || {
            std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(1, 4)
        },
        |n| n as usize,
    );
    let start = Instant::now();
    let (tx, rx) = mpsc::channel();
    for k in 0..workers {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("compile-fuzz-{k}"))
            .spawn(move || {
                for i in (k..cases).step_by(workers) {
                    let s = case_seed(base, i as u64);
                    if tx.send(Msg::Start(k, s)).is_err() {
                        return;
                    }
                    let r = std::panic::catch_unwind(|| case_from_seed(s))
                        .map_err(|_| "the generator panicked".to_string())
                        .and_then(|case| check(&case, WALKS, s));
                    if tx.send(Msg::Done(k, s, r)).is_err() {
                        return;
                    }
                }
            })
            .unwrap();
    }
    drop(tx);
    let mut running: Vec<Option<(u64, Instant)>> = vec![None; workers];
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut known: BTreeMap<&str, usize> = BTreeMap::new();
    let mut total = Outcome::default();
    let mut worst = (Duration::ZERO, 0u64);
    let mut done = 0usize;
    let mut findings = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Msg::Start(k, s)) => {
                if verbose {
                    println!("case seed {s:#x} on worker {k}");
                }
                running[k] = Some((s, Instant::now()));
            }
            Ok(Msg::Done(k, s, r)) => {
                running[k] = None;
                done += 1;
                match r {
                    Ok(o) => {
                        *kinds.entry(o.result.clone()).or_default() += 1;
                        if verbose {
                            println!(
                                "{s:#x} {} in {:.1?}, peak memory {}: {}",
                                o.result,
                                o.compile_time,
                                peak_memory(),
                                o.message.chars().take(300).collect::<String>()
                            );
                        }
                        if o.compile_time > worst.0 {
                            worst = (o.compile_time, s);
                        }
                        total.walks += o.walks;
                        total.calls += o.calls;
                        total.validated += o.validated;
                        total.unvalidated += o.unvalidated;
                        for k in o.known {
                            *known.entry(k).or_default() += 1;
                        }
                    }
                    Err(e) => findings.push(format!(
                        "seed {s:#x} (TOOLDEC_FUZZ_REPLAY={s:#x} cargo test -p tooldec-tests \
                         --test compile_fuzz replay_seed -- --nocapture): {e}"
                    )),
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        for (s, t) in running.iter().flatten() {
            assert!(
                t.elapsed() < HANG,
                "case seed {s:#x} has run for {:.1?}: a hang\n{}",
                t.elapsed(),
                case_from_seed(*s).describe()
            );
        }
    }
    println!(
        "{done} cases in {:.1?} on {workers} threads: {kinds:?}; {} walks, {} calls, {} \
         argument sets validated, {} not (relaxed or no exact validator); worst compile \
         {:.1?} (seed {:#x}); peak memory {}; known findings seen: {known:?}",
        start.elapsed(),
        total.walks,
        total.calls,
        total.validated,
        total.unvalidated,
        worst.0,
        worst.1,
        peak_memory()
    );
    assert!(
        findings.is_empty(),
        "{} findings:\n{}",
        findings.len(),
        findings.join("\n\n")
    );
    assert_eq!(done, cases);
    let ok = kinds.get("Ok").copied().unwrap_or(0);
    assert!(
        ok * 5 >= done,
        "only {ok} of {done} cases compiled: the generator makes too few valid inputs"
    );
}

/// The process's peak resident memory, from /proc (Linux).
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Runs one case of the stable fuzzer by its seed (`TOOLDEC_FUZZ_REPLAY`,
/// as a finding prints it), showing the case and its outcome.
#[test]
fn replay_seed() {
    let Some(s) = env_number("TOOLDEC_FUZZ_REPLAY") else {
        return;
    };
    let case = case_from_seed(s);
    println!("{}", case.describe());
    if let Ok(path) = std::env::var("TOOLDEC_FUZZ_DUMP") {
        std::fs::write(path, &case.tools).unwrap();
    }
    let r = check(&case, WALKS, s);
    println!("{r:#?}");
    r.unwrap();
}

/// The generator is deterministic: a seed gives one case.
#[test]
fn cases_are_deterministic() {
    for i in 0..20 {
        let s = case_seed(1, i);
        assert_eq!(
            format!("{:?}", case_from_seed(s)),
            format!("{:?}", case_from_seed(s))
        );
    }
    // Fuzzer bytes too, and an empty input gives the simplest case.
    let (a, _) = gen::case_from_bytes(b"some bytes");
    let (b, _) = gen::case_from_bytes(b"some bytes");
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let (empty, s) = gen::case_from_bytes(&[]);
    check(&empty, WALKS, s).unwrap();
}

// ------------------------------------------------ findings, and helpers

/// A one-tool OpenAI list with these parameters.
fn one_tool(parameters: &str) -> String {
    format!(
        r#"[{{"type": "function", "function": {{"name": "f", "description": "d", "parameters": {parameters}}}}}]"#
    )
}

/// Compiles and checks `case` with more walks than the fuzzer does.
fn assert_clean(case: &Case) -> Outcome {
    check(case, 40, 7).unwrap_or_else(|e| panic!("{e}"))
}

/// The check on a plain case: ECMA's `\s` (which the jsonschema crate's
/// own `\s` lacks most of) and decimal multiples (which it divides as
/// binary fractions) validate as JSON Schema means them.
#[test]
fn simple_case_compiles_and_validates() {
    let case = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "^\\s+$"}, "m": {"type": "number", "multipleOf": 0.1}}, "required": ["a", "m"]}"#,
        ),
        "hermes",
    );
    let o = assert_clean(&case);
    assert_eq!(o.result, "Ok");
    assert!(o.validated >= 10, "{o:?}");
}

/// Compiles `case` and reads `text` from `entry` with the artifact's
/// reader: `Ok(calls)` when the machine accepts the text.
fn read(case: &Case, entry: &str, text: &str) -> Result<Vec<tooldec_read::Call>, String> {
    let vocab = Vocab::from_tokens(case.tokens.clone(), case.eos.clone(), "test").unwrap();
    let set = spec::parse("tools.json", &case.tools).map_err(|e| e.to_string())?;
    let opts = case.options(vocab.len())?;
    let out = compile(&set, &vocab, &opts, &mut |_| {}).map_err(|e| e.to_string())?;
    let art = Artifact::from_bytes(&out.artifact).unwrap();
    let g = art.grammar();
    let reader = Reader::new(&g).unwrap();
    reader
        .read_text(&g, Some(entry), text)
        .map_err(|e| e.to_string())
}

/// Runs `body` on a thread with a 2 MiB stack (what `std::thread::spawn`
/// gives a server's worker) in a child process running this test alone,
/// so that a stack overflow fails the test instead of aborting the run.
fn in_child(test: &str, body: fn()) {
    if std::env::var_os("TOOLDEC_FUZZ_CHILD").is_some() {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(body)
            .unwrap()
            .join()
            .unwrap();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--include-ignored", "--nocapture"])
        .env("TOOLDEC_FUZZ_CHILD", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test} failed in its child process ({}):\n{}",
        out.status,
        err.lines()
            .rev()
            .take(12)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `n` `$defs` in a chain of `$ref`s, the last one `last`.
fn ref_chain(n: usize, last: Value) -> Value {
    let mut defs = Map::new();
    for i in 0..n {
        let next = if i + 1 == n {
            last.clone()
        } else {
            json!({"$ref": format!("#/$defs/c{}", i + 1)})
        };
        defs.insert(format!("c{i}"), next);
    }
    json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/c0"}}, "required": ["a"], "$defs": defs})
}

/// Finding 1: a chain of 3,000 `$ref`s (or a cycle of 1,000 entered
/// `max_recursion` times) overflowed a 2 MiB stack: `Lowering::flatten_one`
/// (compiler/src/lower/json/mod.rs, its `$ref` branch) recursed once per
/// reference, with no bound of its own (2,000 passed, in a quadratic
/// 0.36 s). Fixed by the compile limits work: more than 256 references
/// along one path are a `Limit` error.
#[test]
fn finding_1_ref_chain_overflows_the_stack() {
    in_child("finding_1_ref_chain_overflows_the_stack", || {
        let tools = one_tool(&ref_chain(3000, json!({"type": "string"})).to_string());
        check(&Case::simple(&tools, "json"), 3, 1).unwrap();
    });
}

/// Finding 2: `max_states` did not bound the cost of determinization:
/// each DFA state of `\d{65536,}` (searched, so `.*\d{65536,}.*`) is a
/// subset of up to 65,536 NFA states, so reaching the 50,000-state bound
/// cost ~10^9 set operations (`Dfa::determinize_named`,
/// compiler/src/automaton/dfa.rs, sorting each subset), and only the
/// time limit ended it, after 10 s (also in `propertyNames`). Fixed by
/// the pattern bounds of the compile limits work: refused at once.
#[test]
fn finding_2_counted_repeat_runs_to_the_time_limit() {
    let tools = one_tool(
        r#"{"type": "object", "properties": {"a": {"type": "string", "pattern": "\\d{65536,}"}}}"#,
    );
    let case = Case::simple(&tools, "json");
    let vocab = Vocab::from_tokens(case.tokens.clone(), case.eos.clone(), "test").unwrap();
    let set = spec::parse("tools.json", &case.tools).unwrap();
    let mut opts = case.options(vocab.len()).unwrap();
    opts.limits = Limits::engine();
    let t = Instant::now();
    let r = compile(&set, &vocab, &opts, &mut |_| {});
    let took = t.elapsed();
    assert!(
        took < Duration::from_secs(3),
        "{took:.1?} with max_states {}: {:?}",
        opts.max_states,
        r.err().map(|e| e.to_string())
    );
}

/// Finding 3: two extra properties under one key counted twice toward
/// `minProperties`, but a JSON parser keeps one: `{"a": 1, "a": 1}` was
/// accepted for `minProperties: 2` and read back as `{"a": 1}`
/// (`counted`/`extras_tail`, compiler/src/lower/json/build.rs). A mask
/// cannot keep extra names distinct, so extras now bring the count at
/// most one short of the minimum the declared members reach, and an
/// object that needs two extras is refused.
#[test]
fn finding_3_repeated_key_counts_twice() {
    let only_extras = Case::simple(
        &one_tool(
            r#"{"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 2}"#,
        ),
        "json",
    );
    let r = read(
        &only_extras,
        "call",
        r#"{"name": "f", "arguments": {"a": 1, "a": 1}}"#,
    );
    assert!(matches!(&r, Err(e) if e.contains("distinct")), "{r:?}");
    let declared = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {"p": {"type": "integer"}}, "additionalProperties": {"type": "integer"}, "minProperties": 2}"#,
        ),
        "json",
    );
    let call = |args: &str| format!(r#"{{"name": "f", "arguments": {args}}}"#);
    let r = read(&declared, "call", &call(r#"{"a": 1, "a": 1}"#));
    assert!(r.is_err(), "accepted: {r:?}");
    let r = read(&declared, "call", &call(r#"{"p": 1, "a": 1}"#));
    assert!(r.is_ok(), "{r:?}");
    assert_clean(&declared);
}

/// Finding 4: a format whose `tool { }` writes no arguments compiled for a
/// tool with required parameters, and its calls read back with `{}` as
/// the arguments, which the schema refuses. Such a tool block is now
/// refused for a tool whose arguments cannot be `{}`
/// (`check_no_arguments`, compiler/src/lower/call_format/mod.rs).
#[test]
fn finding_4_tool_block_without_arguments() {
    let bare = |parameters: &str| {
        let mut case = Case::simple(&one_tool(parameters), "json");
        case.format = FormatSpec::Text {
            name: "bare".into(),
            text: "entry start = \"Call: \" tool { name (\" \" args)? };\n".into(),
        };
        case
    };
    let required =
        bare(r#"{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}"#);
    let r = read(&required, "start", "Call: f");
    assert!(
        matches!(&r, Err(e) if e.contains("without arguments")),
        "{r:?}"
    );
    let optional = bare(r#"{"type": "object", "properties": {"a": {"type": "integer"}}}"#);
    let r = read(&optional, "start", "Call: f");
    assert!(matches!(&r, Ok(calls) if calls.len() == 1), "{r:?}");
    assert_clean(&optional);
}

/// Finding 5: `minProperties` above `maxProperties` with extra properties
/// allowed accepted `minProperties` of them: `extras_tail`
/// (compiler/src/lower/json/build.rs) repeats extras `lo - 1` to `hi - 1`
/// times, and with `lo > hi` that built `lo`. No object is valid here.
/// Fixed by the compile limits work: the schema accepts no value.
#[test]
fn finding_5_min_properties_above_max() {
    let case = Case::simple(
        &one_tool(
            r#"{"type": "object", "additionalProperties": true, "minProperties": 2, "maxProperties": 1}"#,
        ),
        "json",
    );
    let r = read(
        &case,
        "call",
        r#"{"name": "f", "arguments": {"a": 1, "b": 2}}"#,
    );
    assert!(r.is_err(), "accepted: {r:?}");
}

/// Finding 6: `args_gemma` wrote keys bare, excluding only `:` and the
/// quote, so a key could begin with `}`: `{}x:3}` (the key `}x`) was
/// accepted but could not be read back ("no reading"), and a key with a
/// bracket confuses the depth count of vLLM's parser
/// (`Spelling::keys` and `Spelling::key`,
/// compiler/src/lower/json/spelling.rs). Bare keys now have none of
/// `, : [ ] { }` and no space at an end; a declared property with one is
/// refused.
#[test]
fn finding_6_gemma_key_beginning_with_brace() {
    let gemma = |schema: &str| {
        let mut case = Case::simple(&one_tool(schema), "json");
        case.format = FormatSpec::Text {
            name: "gemma".into(),
            text: gen::FIXTURES[3].1.into(),
        };
        case.json.any_depth = 1;
        case
    };
    let text = |args: &str| format!("<|tool_call>call:f{args}<tool_call|>");
    let open = gemma(r#"{"type": "object", "additionalProperties": {"type": "integer"}}"#);
    for args in ["{}x:3}", "{a,b:3}", "{ a:3}", "{a :3}", "{a]:3}"] {
        let r = read(&open, "start", &text(args));
        assert!(
            matches!(&r, Err(e) if !e.contains("no reading")),
            "{args}: {r:?}"
        );
    }
    let r = read(&open, "start", &text("{x y:3}"));
    assert!(
        matches!(&r, Ok(c) if c[0].arguments.get("x y") == Some(&json!(3))),
        "{r:?}"
    );
    assert_clean(&open);
    let r = read(
        &gemma(r#"{"type": "object", "properties": {"}": {"type": "integer"}}}"#),
        "start",
        &text("{}:3}"),
    );
    assert!(
        matches!(&r, Err(e) if e.contains("bare Gemma 4 key")),
        "{r:?}"
    );
}

/// Finding 7: a declared property name of 5,000 characters in an object
/// that allows extra properties overflows a 2 MiB stack: the key
/// language of the extras (`key_except`, compiler/src/lower/json/build.rs)
/// is a trie as deep as the name, and `nfa::compile`
/// (compiler/src/automaton/nfa.rs) recursed through it. Fixed by the
/// compile limits work: now a `Limit` error.
#[test]
fn finding_7_long_property_name_overflows_the_stack() {
    in_child("finding_7_long_property_name_overflows_the_stack", || {
        let schema = json!({
            "type": "object",
            "properties": {"n".repeat(5000): {"type": "null"}},
            "additionalProperties": true
        });
        check(&Case::simple(&one_tool(&schema.to_string()), "json"), 3, 1).unwrap();
    });
}

/// Finding 8: `args_positional` read only `properties` and `required`
/// of the root schema (`Lowering::tool_positional`,
/// compiler/src/lower/json/mod.rs; the reader's table does the same in
/// compiler/src/artifact/meta.rs): `const`/`enum` on the whole arguments,
/// root `allOf`/`anyOf`/`$ref`, `minProperties`, `dependentRequired` were
/// not enforced. They are now refused with the keyword's pointer
/// (`check_positional`), as `args_python` and `args_xml` refuse
/// `enum`/`const` there.
#[test]
fn finding_8_positional_ignores_root_keywords() {
    for (schema, keyword) in [
        (r#"{"const": {"a": ""}}"#, "/const"),
        (
            r#"{"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}]}"#,
            "/allOf",
        ),
        (
            r#"{"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 1}"#,
            "/minProperties",
        ),
        (
            r#"{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["b"], "additionalProperties": true}"#,
            "/required",
        ),
    ] {
        let case = Case::simple(&one_tool(schema), "toolken");
        let r = read(&case, "call", "<T>f()=");
        assert!(
            matches!(&r, Err(e) if e.contains("args_positional") && e.contains(keyword)),
            "{schema}: {r:?}"
        );
    }
    let plain = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 0, "description": "d"}"#,
        ),
        "toolken",
    );
    assert_clean(&plain);
}

/// Finding 9: `args_xml` parameters of a root schema whose properties are
/// under `anyOf`, `allOf` or `$ref` were accepted but could not be read
/// back: the reader's table listed only the root's own `properties`
/// (`params`, compiler/src/artifact/meta.rs). It now lists the names
/// declared under the root's applicators too.
#[test]
fn finding_9_xml_parameters_under_root_applicators() {
    for schema in [
        r#"{"anyOf": [{"type": "object", "properties": {"limit": {"type": "string"}}, "required": ["limit"]}]}"#,
        r#"{"allOf": [{"type": "object", "properties": {"limit": {"type": "string"}}, "required": ["limit"]}]}"#,
    ] {
        let case = Case::simple(&one_tool(schema), "glm-4.7");
        let text = "<tool_call>f<arg_key>limit</arg_key><arg_value>abc</arg_value></tool_call>";
        let r = read(&case, "required", text);
        assert!(
            matches!(&r, Ok(calls) if calls.len() == 1 && calls[0].arguments.get("limit") == Some(&json!("abc"))),
            "{schema}: {r:?}"
        );
    }
}

/// Finding 10 (interoperability, not validity): an integer could be
/// written `-0` (`integer_range`, compiler/src/lower/value/range.rs).
/// JSON Schema reads it as the integer 0, but serde_json reads it as the
/// float -0.0, and refuses it as an `i64`; the jsonschema crate calls it
/// no integer. Integers are now written `0` only.
#[test]
fn finding_10_negative_zero_integer() {
    let case = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}"#,
        ),
        "json",
    );
    let r = read(&case, "call", r#"{"name": "f", "arguments": {"n": -0}}"#);
    assert!(r.is_err(), "accepted: {r:?}");
}

/// Finding 11 (from the cargo-fuzz run): a property that `required` names
/// but `properties` does not declare, allowed by `additionalProperties`,
/// was written as an `args_xml` parameter but could not be read back: the
/// reader's table listed only `properties` (`params`,
/// compiler/src/artifact/meta.rs), so it found no reading. Such names are
/// now in the table, typed by `additionalProperties`.
#[test]
fn finding_11_xml_required_undeclared_parameter() {
    let case = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {}, "required": ["b"], "additionalProperties": {"type": "integer"}}"#,
        ),
        "qwen3-coder",
    );
    let text =
        "<tool_call>\n<function=f>\n<parameter=b>\n1\n</parameter>\n</function>\n</tool_call>";
    let r = read(&case, "one", text);
    assert!(
        matches!(&r, Ok(calls) if calls.len() == 1 && calls[0].arguments.get("b") == Some(&json!(1))),
        "{r:?}"
    );
}

/// Finding 12 (from the cargo-fuzz run): an integral `enum`/`const` value
/// may also be written `N.0`, but above 2^53 a parser that reads it as a
/// double (serde_json, Python's `json`) gets another number:
/// `9007199254740993.0` reads as 9007199254740992 or ...994, not the
/// listed 9007199254740993 (the literal spellings of
/// compiler/src/lower/json/build.rs). Only integers a double holds exactly
/// (|N| <= 2^53) now get the `.0` spelling.
#[test]
fn finding_12_large_integral_enum_as_decimal() {
    let case = Case::simple(
        &one_tool(
            r#"{"type": "object", "properties": {"n": {"enum": [9007199254740993]}}, "required": ["n"]}"#,
        ),
        "json",
    );
    let r = read(
        &case,
        "call",
        r#"{"name": "f", "arguments": {"n": 9007199254740993.0}}"#,
    );
    assert!(r.is_err(), "accepted: {r:?}");
}
