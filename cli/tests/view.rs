//! `tooldec inspect` and `tooldec explain` on the examples in
//! `grammars/examples/`: insta snapshots of what users see, and explain's
//! verdicts on texts accepted, refused in a tool name, in an argument name,
//! in an argument value, and cut short, each checked for its message.

use std::path::PathBuf;
use std::process::Command;

use tooldec_cli::view::{explain, inspect, Tokenizer, View};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// An example compiled in memory with the built-in GPT-2 vocabulary.
fn artifact(example: &str, format: &str, max_tokens: Option<u32>) -> (Vec<u8>, Artifact) {
    let path = root().join("grammars/examples").join(example);
    let text = std::fs::read_to_string(&path).unwrap();
    let tools = spec::parse_with(example, &text, &spec::ParseOptions::default()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        format: CallFormat::load(format).unwrap(),
        max_tokens,
        threads: 1,
        ..Options::default()
    };
    let compiled = compile(&tools, &vocab, &opts, &mut |_| {}).unwrap();
    let a = Artifact::from_bytes(&compiled.artifact).unwrap();
    (compiled.artifact, a)
}

fn inspect_report(example: &str, format: &str, max_tokens: Option<u32>) -> String {
    let (file, a) = artifact(example, format, max_tokens);
    let name = format!("{}-{format}.tdm", example.trim_end_matches(".json"));
    let v = View::new(a.grammar(), &name).unwrap();
    inspect::inspect(
        &v,
        &inspect::Source {
            name: &name,
            file_bytes: file.len(),
            payload: a.payload(),
        },
    )
}

#[test]
fn inspect_tiny_react() {
    let r = inspect_report("tiny.json", "react", None);
    assert!(
        r.contains("  add  2 parameters (a: integer, b: integer)"),
        "{r}"
    );
    insta::assert_snapshot!(r);
}

#[test]
fn inspect_weather_react() {
    let r = inspect_report("weather.json", "react", None);
    for tool in ["get_weather", "get_time", "search_flights"] {
        assert!(r.contains(&format!("\n  {tool} ")), "{tool} missing:\n{r}");
    }
    insta::assert_snapshot!(r);
}

#[test]
fn inspect_weather_hermes_with_a_budget() {
    let r = inspect_report("weather.json", "hermes", Some(64));
    assert!(r.contains("budget        --max-tokens 64"), "{r}");
    insta::assert_snapshot!(r);
}

/// The grouped tokens of the states an explained walk passes through:
/// the start, inside a tool name, inside a string argument.
#[test]
fn inspect_states_tiny_react() {
    let (_, a) = artifact("tiny.json", "react", None);
    let v = View::new(a.grammar(), "tiny").unwrap();
    let g = &v.g;
    let start = g.start_state();
    let mut m = g.matcher();
    assert!(m.accept_bytes(b"Thought: sum\nAction: a"));
    let in_name = m.state().unwrap();
    assert!(m.accept_bytes(b"dd\nAction Input: {\"a\": 1"));
    let in_number = m.state().unwrap();
    let mut out = String::new();
    for s in [start, in_name, in_number] {
        out.push_str(&inspect::state(&v, s, None).unwrap());
    }
    out.push_str(&inspect::state(&v, in_number, Some(3)).unwrap());
    assert!(out.contains("a tool name"), "{out}");
    assert!(
        out.contains("the value of argument `a` (integer) of `add`"),
        "{out}"
    );
    let err = inspect::state(&v, 99_999, None).unwrap_err().to_string();
    assert!(
        err.contains("--state 99999: the artifact has states 0 to"),
        "{err}"
    );
    insta::assert_snapshot!(out);
}

fn explained(example: &str, format: &str, text: &str) -> explain::Explained {
    let (_, a) = artifact(example, format, None);
    let v = View::new(a.grammar(), example).unwrap();
    let tok = Tokenizer::for_artifact(&v, None).unwrap();
    let ids = tok.encode(text).unwrap();
    explain::explain(&v, None, &ids, "the built-in GPT-2 tokenizer")
}

const WEATHER: &str = "Thought: I need the weather.\nAction: get_weather\nAction Input: ";

#[test]
fn explain_accepts_a_complete_call() {
    let e = explained(
        "weather.json",
        "react",
        &format!("{WEATHER}{{\"city\": \"Paris\", \"days\": 3}}"),
    );
    assert!(e.accepted, "{}", e.report);
    assert!(
        e.report.contains("accepted: a complete output"),
        "{}",
        e.report
    );
    insta::assert_snapshot!(e.report);
}

#[test]
fn explain_accepts_a_hermes_call() {
    let e = explained(
        "weather.json",
        "hermes",
        "Let me look.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}\n</tool_call>",
    );
    assert!(e.accepted, "{}", e.report);
    insta::assert_snapshot!(e.report);
}

#[test]
fn explain_refuses_in_the_tool_name() {
    let e = explained(
        "weather.json",
        "react",
        "Thought: I need the weather.\nAction: get_wether\nAction Input: {\"city\": \"Paris\"}",
    );
    assert!(!e.accepted);
    let r = &e.report;
    assert!(r.contains("rejected: token"), "{r}");
    assert!(r.contains(": a tool name\n"), "{r}");
    assert!(
        r.contains("tool name so far `get_w`: 1 tool begins this way: `get_weather`; no tool name begins with `get_wether`"),
        "{r}"
    );
    assert!(
        r.contains("the machine expects `eather\\nAction Input: {` next"),
        "{r}"
    );
    insta::assert_snapshot!(e.report);
}

#[test]
fn explain_refuses_in_an_argument_name() {
    let e = explained(
        "weather.json",
        "react",
        &format!("{WEATHER}{{\"city\": \"Paris\", \"dayz\": 3}}"),
    );
    assert!(!e.accepted);
    let r = &e.report;
    assert!(
        r.contains("the name of argument `days` of `get_weather`"),
        "{r}"
    );
    assert!(r.contains("writing the call of `get_weather`"), "{r}");
    insta::assert_snapshot!(e.report);

    // A name the tool does not have at all, where only `city` may come.
    let e = explained(
        "weather.json",
        "react",
        &format!("{WEATHER}{{\"town\": \"Paris\"}}"),
    );
    assert!(!e.accepted);
    assert!(
        e.report.contains("the machine expects `city\"` next"),
        "{}",
        e.report
    );
}

#[test]
fn explain_refuses_in_an_argument_value() {
    let e = explained(
        "weather.json",
        "react",
        &format!("{WEATHER}{{\"city\": \"Paris\", \"days\": \"three\"}}"),
    );
    assert!(!e.accepted);
    let r = &e.report;
    assert!(
        r.contains("the value of argument `days` (integer) of `get_weather`"),
        "{r}"
    );
    assert!(r.contains("but `\"` cannot follow"), "{r}");
    insta::assert_snapshot!(e.report);

    let e = explained(
        "weather.json",
        "hermes",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"kelvin\"}}\n</tool_call>",
    );
    assert!(!e.accepted);
    assert!(
        e.report
            .contains("the value of argument `unit` (one of 2 strings) of `get_weather`"),
        "{}",
        e.report
    );
    insta::assert_snapshot!("explain_refuses_an_enum_value_hermes", e.report);
}

#[test]
fn explain_refuses_an_incomplete_call() {
    let e = explained(
        "weather.json",
        "react",
        &format!("{WEATHER}{{\"city\": \"Par"),
    );
    assert!(!e.accepted);
    let r = &e.report;
    assert!(
        r.contains("incomplete: the text ends before the output is complete"),
        "{r}"
    );
    assert!(
        r.contains("the shortest completion takes 1 more token"),
        "{r}"
    );
    insta::assert_snapshot!(e.report);

    // Cut inside the tool name: the tools it could still become.
    let e = explained("weather.json", "react", "Thought: x\nAction: get_");
    assert!(!e.accepted);
    assert!(
        e.report
            .contains("tool name so far `get_`: 2 tools begin this way: `get_weather`, `get_time`"),
        "{}",
        e.report
    );
}

/// Token ids given directly: EOS ends the output, a token after it is
/// refused, an EOS too early is refused with the reason.
#[test]
fn explain_token_ids() {
    let (_, a) = artifact("tiny.json", "react", None);
    let v = View::new(a.grammar(), "tiny").unwrap();
    let ids = Tokenizer::Builtin
        .encode("Thought: ok\nAction: neg\nAction Input: {\"x\": true}")
        .unwrap();
    let eos = v.g.eos_tokens()[0];
    let mut with_eos = ids.clone();
    with_eos.push(eos);
    let e = explain::explain(&v, None, &with_eos, "--tokens");
    assert!(e.accepted, "{}", e.report);
    assert!(
        e.report.contains("ended by the end-of-sequence token"),
        "{}",
        e.report
    );
    with_eos.push(ids[0]);
    let e = explain::explain(&v, None, &with_eos, "--tokens");
    assert!(!e.accepted);
    assert!(
        e.report.contains("comes after the end of sequence"),
        "{}",
        e.report
    );
    let e = explain::explain(&v, None, &[ids[0], eos], "--tokens");
    assert!(!e.accepted);
    assert!(
        e.report
            .contains("the end of sequence is only allowed where the output is complete"),
        "{}",
        e.report
    );
    let e = explain::explain(&v, Some("nope"), &ids, "--tokens");
    assert!(
        e.report
            .contains("no entry \"nope\"; its entries: start, parallel"),
        "{}",
        e.report
    );
    insta::assert_snapshot!(explain::explain(&v, None, &[ids[0], eos], "--tokens").report);
}

/// A budget the text does not fit in: refused with the budget as reason.
#[test]
fn explain_refuses_past_the_budget() {
    let (_, a) = artifact("tiny.json", "react", Some(20));
    let v = View::new(a.grammar(), "tiny").unwrap();
    let text = "Thought: I will add these two numbers for you now.\nAction: add\nAction Input: {\"a\": 1, \"b\": 2}";
    let ids = Tokenizer::Builtin.encode(text).unwrap();
    let e = explain::explain(&v, None, &ids, "the built-in GPT-2 tokenizer");
    assert!(!e.accepted);
    assert!(e.report.contains("budget 20 tokens"), "{}", e.report);
    assert!(e.report.contains("but the budget does not"), "{}", e.report);
    insta::assert_snapshot!(e.report);
}

/// The binary: exit 0 only when the text is accepted, 1 when refused, 2
/// for a usage error; text from a file and from --tokens.
#[test]
fn explain_exit_codes() {
    let dir = std::env::temp_dir().join(format!("tooldec-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let art = dir.join("tiny.tdm");
    let (file, _) = artifact("tiny.json", "react", None);
    std::fs::write(&art, file).unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tooldec"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let a = art.to_str().unwrap();
    let good = "Thought: ok\nAction: add\nAction Input: {\"a\": 1, \"b\": 2}";
    let (code, out, _) = run(&["explain", a, "--text", good]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out, _) = run(&["explain", a, "--text", "Thought: ok\nAction: sub"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("rejected: token"), "{out}");
    let text_file = dir.join("call.txt");
    std::fs::write(&text_file, good).unwrap();
    let (code, out, _) = run(&["explain", a, text_file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let ids: Vec<String> = Tokenizer::Builtin
        .encode(good)
        .unwrap()
        .iter()
        .map(u32::to_string)
        .collect();
    let (code, out, _) = run(&["explain", a, "--tokens", &ids.join(",")]);
    assert_eq!(code, Some(0), "{out}");
    let (code, _, err) = run(&["explain", a, "--tokens", "1,x"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--tokens: item 2 (\"x\") is not a token id"),
        "{err}"
    );
    let (code, _, err) = run(&["explain", a]);
    assert_eq!(code, Some(2));
    assert!(err.contains("nothing to explain"), "{err}");
    let (code, out, _) = run(&["inspect", a]);
    assert_eq!(code, Some(0));
    assert!(out.contains("tools         2"), "{out}");
    let (code, out, _) = run(&["inspect", a, "--state", "3"]);
    assert_eq!(code, Some(0));
    assert!(out.starts_with("state 3: "), "{out}");
    let (code, _, err) = run(&["inspect", dir.join("missing.tdm").to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("missing.tdm: cannot read"), "{err}");
    std::fs::write(dir.join("bad.tdm"), b"TOOLDEC\0garbage").unwrap();
    let (code, _, err) = run(&["inspect", dir.join("bad.tdm").to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(err.contains("bad.tdm: "), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--no-regions` leaves out only the description: the same machine and
/// masks, and the tools still work, saying what they cannot tell.
#[test]
fn without_regions_the_machine_is_the_same() {
    let path = root().join("grammars/examples/tiny.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let tools = spec::parse_with("tiny.json", &text, &spec::ParseOptions::default()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let build = |regions: bool| {
        let opts = Options {
            regions,
            threads: 1,
            ..Options::default()
        };
        compile(&tools, &vocab, &opts, &mut |_| {})
            .unwrap()
            .artifact
    };
    let (with, without) = (build(true), build(false));
    assert!(without.len() < with.len());
    let (a, b) = (
        Artifact::from_bytes(&with).unwrap(),
        Artifact::from_bytes(&without).unwrap(),
    );
    let (ga, gb) = (a.grammar(), b.grammar());
    assert_eq!(ga.state_count(), gb.state_count());
    assert_eq!(ga.mask_count(), gb.mask_count());
    let (mut wa, mut wb) = (vec![0u32; ga.mask_words()], vec![0u32; gb.mask_words()]);
    for s in 0..ga.state_count() as u32 {
        assert_eq!(ga.mask_id(s), gb.mask_id(s));
        assert_eq!(ga.distance(s), gb.distance(s));
        for byte in 0..=255u8 {
            assert_eq!(ga.next_state(s, byte), gb.next_state(s, byte));
        }
    }
    for id in 0..ga.mask_count() as u32 {
        ga.fill_mask_by_id(id, &mut wa);
        gb.fill_mask_by_id(id, &mut wb);
        assert_eq!(wa, wb, "mask {id}");
    }
    let v = View::new(gb, "bare").unwrap();
    assert!(v.no_regions);
    let r = inspect::inspect(
        &v,
        &inspect::Source {
            name: "bare",
            file_bytes: without.len(),
            payload: b.payload(),
        },
    );
    assert!(
        r.contains("(no region table: compiled by an older release or with --no-regions"),
        "{r}"
    );
    let ids = Tokenizer::Builtin.encode("Thought: x\nAction: ad").unwrap();
    let e = explain::explain(&v, None, &ids, "test");
    assert!(!e.accepted);
    assert!(e.report.contains("incomplete"), "{}", e.report);
}

/// With a real tokenizer.json (Qwen2.5, whose `<tool_call>` is a special
/// token): `explain --tokenizer` tokenizes as the model would, special
/// tokens included, and refuses another model's tokenizer by fingerprint.
#[test]
fn explain_with_a_real_tokenizer() {
    let Some(data) = tooldec_testkit::data_dir() else {
        eprintln!("TOOLDEC_DATA unset: skipping explain_with_a_real_tokenizer");
        return;
    };
    let qwen = data.join("tokenizers/qwen2.5/tokenizer.json");
    let gpt2 = data.join("tokenizers/gpt2/tokenizer.json");
    for p in [&qwen, &gpt2] {
        assert!(
            p.exists(),
            "TOOLDEC_DATA is set but {} is missing",
            p.display()
        );
    }
    let dir = std::env::temp_dir().join(format!("tooldec-view-qwen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let art = dir.join("weather-qwen.tdm");
    let out = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .current_dir(root())
        .args([
            "grammars/examples/weather.json",
            "--format",
            "hermes",
            "-q",
            "--tokenizer",
        ])
        .arg(&qwen)
        .arg("-o")
        .arg(&art)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let explain = |text: &str, tokenizer: &PathBuf| {
        let out = Command::new(env!("CARGO_BIN_EXE_tooldec"))
            .arg("explain")
            .arg(&art)
            .args(["--text", text, "--tokenizer"])
            .arg(tokenizer)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let call = "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";
    let (code, out, err) = explain(call, &qwen);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("accepted"), "{out}");
    // The same call with the tags spelled as text is refused where the
    // special token was required.
    let (code, out, _) = explain(
        &format!("I check.\n{}", call.replace("get_time", "get_tme")),
        &qwen,
    );
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("no tool name begins with `get_tm"), "{out}");
    let (code, _, err) = explain(call, &gpt2);
    assert_eq!(code, Some(1));
    assert!(err.contains("not the artifact's tokenizer"), "{err}");
    // Without --tokenizer: the artifact's vocabulary is named.
    let out = Command::new(env!("CARGO_BIN_EXE_tooldec"))
        .arg("explain")
        .arg(&art)
        .args(["--text", call])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("pass its tokenizer.json with --tokenizer PATH"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `tooldec draw` from a tool list and from an artifact: DOT on standard
/// output naming every tool, the same graph both ways for the same
/// machine, `-o` writing the file, and a clear error for a bad tool name.
#[test]
fn draw_command() {
    let dir = std::env::temp_dir().join(format!("tooldec-draw-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let art = dir.join("tiny.tdm");
    let (file, _) = artifact("tiny.json", "react", None);
    std::fs::write(&art, file).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(env!("CARGO_BIN_EXE_tooldec"))
            .current_dir(root())
            .arg("draw")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let tools = std::ffi::OsStr::new("grammars/examples/tiny.json");
    let (code, from_tools, err) = run(&[tools]);
    assert_eq!(code, Some(0), "{err}");
    assert!(from_tools.starts_with("digraph tooldec {"), "{from_tools}");
    for name in ["`add`", "`neg`"] {
        assert!(from_tools.contains(name), "{name} missing");
    }
    let (code, from_art, err) = run(&[art.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(from_tools, from_art);
    let dot = dir.join("tiny.dot");
    let (code, _, err) = run(&[tools, "-o".as_ref(), dot.as_os_str()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&dot).unwrap(), from_tools);
    let (code, _, err) = run(&[art.as_os_str(), "--tool".as_ref(), "sub".as_ref()]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("no tool `sub` in this artifact; its tools: `add`, `neg`"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}
