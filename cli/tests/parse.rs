//! `tooldec parse` as users run it: the calls of an accepted output as
//! JSON on standard output (exit 0), from standard input, a file,
//! `--text` or `--tokens`, at an entry; a refused output gets `explain`'s
//! diagnosis on standard error (exit 1).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compiled(format: &str) -> PathBuf {
    let out =
        std::env::temp_dir().join(format!("tooldec-parse-{format}-{}.tdm", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .current_dir(root())
        .args([
            "grammars/examples/weather.json",
            "-q",
            "--format",
            format,
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    out
}

fn parse(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tooldec"))
        .arg("parse")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).unwrap();
    }
    drop(input);
    child.wait_with_output().unwrap()
}

fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn parse_prints_the_calls_or_the_diagnosis() {
    let art = compiled("react");
    let a = art.to_str().unwrap();
    let text = "Thought: two cities.\nAction: get_weather\nAction Input: {\"city\": \"Paris\", \"days\": 3}\nAction: get_time\nAction Input: {\"timezone\": \"Europe/Paris\", \"format24\": true}";
    let want = json!([
        {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}},
        {"name": "get_time", "arguments": {"timezone": "Europe/Paris", "format24": true}}
    ]);
    assert_eq!(
        json_of(&parse(&[a, "-", "--entry", "parallel"], Some(text))),
        want
    );
    let file = std::env::temp_dir().join(format!("tooldec-parse-{}.txt", std::process::id()));
    std::fs::write(&file, text).unwrap();
    assert_eq!(
        json_of(&parse(
            &[a, file.to_str().unwrap(), "--entry", "parallel"],
            None
        )),
        want
    );
    std::fs::remove_file(&file).ok();

    // The default entry (`start`) takes one action: the second is refused
    // with explain's report, on standard error, exit 1.
    let out = parse(&[a, "--text", text], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rejected: token"), "{err}");
    assert!(err.contains("entry `start`"), "{err}");

    let out = parse(&[a, "--text", "Thought: x\nAction: get_wether"], None);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("get_weather"), "{err}");
    std::fs::remove_file(&art).ok();
}

#[test]
fn parse_token_ids_and_positional_arguments() {
    let art = compiled("toolken");
    let a = art.to_str().unwrap();
    let out = parse(
        &[
            a,
            "--text",
            "It is <T>get_weather(\"Nice\", \"celsius\")= warm <T>get_time(\"UTC\")=.",
        ],
        None,
    );
    assert_eq!(
        json_of(&out),
        json!([
            {"name": "get_weather", "arguments": {"city": "Nice", "unit": "celsius"}},
            {"name": "get_time", "arguments": {"timezone": "UTC"}}
        ])
    );
    // GPT-2 ids of "<T>get_time(\"UTC\")=" (`<`, `T`, `>`, ...), and EOS.
    let ids = tiktoken_rs::r50k_base()
        .unwrap()
        .encode_ordinary("<T>get_time(\"UTC\")=");
    let list: Vec<String> = ids
        .iter()
        .map(u32::to_string)
        .chain(["50256".into()])
        .collect();
    let out = parse(&[a, "--tokens", &list.join(","), "--entry", "call"], None);
    assert_eq!(
        json_of(&out),
        json!([{"name": "get_time", "arguments": {"timezone": "UTC"}}])
    );
    std::fs::remove_file(&art).ok();
}
