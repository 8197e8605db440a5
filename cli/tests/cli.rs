//! The `tooldec-compile` binary as users run it: the summary names the
//! vocabulary fingerprint the artifact carries (what engines check it
//! against), and a budget below the shortest call fails with the message
//! and a non-zero exit; `--help` names every shipped format. (Building this test also gives `python/test.sh` the
//! binary, built with the test profile `cargo test` already compiled.)

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tooldec-compile ARGS -o OUT` run from the repository root.
fn compile(args: &[&str], out: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .current_dir(root())
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

/// As [`compile`], which must succeed: the artifact, read back and removed.
fn compiled(args: &[&str], out: &std::path::Path) -> tooldec_runtime::Artifact {
    let run = compile(args, out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let art = tooldec_runtime::Artifact::open(out).unwrap();
    std::fs::remove_file(out).ok();
    art
}

#[test]
fn summary_names_the_fingerprint_the_artifact_carries() {
    let out = std::env::temp_dir().join(format!("tooldec-cli-{}.tdm", std::process::id()));
    let art = compiled(&["grammars/examples/weather.json", "-q"], &out);
    let hex: String = art
        .grammar()
        .vocab_fingerprint()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let again = std::env::temp_dir().join(format!("tooldec-cli-{}-b.tdm", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .current_dir(root())
        .args(["grammars/examples/weather.json", "-o"])
        .arg(&again)
        .output()
        .unwrap();
    std::fs::remove_file(&again).ok();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains(&format!("fingerprint    sha256 {hex} (vocabulary)")),
        "{stdout}"
    );
    let mut fp = [0u8; 32];
    for (i, b) in fp.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    assert!(art.grammar().check_vocabulary(&fp).is_ok());
    fp[0] ^= 1;
    assert!(art.grammar().check_vocabulary(&fp).is_err());
}

#[test]
fn a_budget_below_the_shortest_call_fails_with_its_message() {
    let run = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .current_dir(root())
        .args(["grammars/examples/weather.json", "--max-tokens", "5", "-o"])
        .arg(std::env::temp_dir().join(format!("tooldec-cli-{}-c.tdm", std::process::id())))
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("--max-tokens 5 is too small: the shortest complete output (entry \"start\") takes 18 tokens"),
        "{stderr}"
    );
}

/// `--help` names every shipped format, so the list cannot drift from the
/// compiler's.
#[test]
fn help_names_every_shipped_format() {
    let run = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&run.stdout).replace(['\n', ' '], "");
    for name in tooldec_compiler::CallFormat::shipped_names() {
        assert!(
            help.contains(name),
            "--help does not name the format {name:?}"
        );
    }
}

/// `tooldec_cli::compile::run`, what the binary and the Python console
/// script call, returns the exit code the binary exits with and writes the
/// same artifact, for a success, `--version`, a bad flag, a missing tool
/// list and a compile error; it never exits the process (this test goes on).
#[test]
fn run_in_the_process_is_the_binary() {
    let tmp = std::env::temp_dir();
    let pid = std::process::id();
    let weather = root().join("grammars/examples/weather.json");
    let weather = weather.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![weather, "-q", "--format", "hermes", "--max-tokens", "96"],
        vec!["--version"],
        vec![weather, "--bogus"],
        vec!["/does/not/exist.json"],
        vec![weather, "--max-tokens", "5"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let by_bin = tmp.join(format!("tooldec-cli-{pid}-run-{i}-bin.tdm"));
        let by_run = tmp.join(format!("tooldec-cli-{pid}-run-{i}-lib.tdm"));
        let bin = Command::new(env!("CARGO_BIN_EXE_tooldec-compile"))
            .args(args)
            .arg("-o")
            .arg(&by_bin)
            .output()
            .unwrap();
        let argv = std::iter::once("tooldec-compile".as_ref())
            .chain(args.iter().map(std::ffi::OsStr::new))
            .chain(["-o".as_ref(), by_run.as_os_str()]);
        let code = tooldec_cli::compile::run(argv);
        assert_eq!(
            Some(i32::from(code)),
            bin.status.code(),
            "{args:?}: {}",
            String::from_utf8_lossy(&bin.stderr)
        );
        let written = (std::fs::read(&by_bin).ok(), std::fs::read(&by_run).ok());
        std::fs::remove_file(&by_bin).ok();
        std::fs::remove_file(&by_run).ok();
        assert_eq!(written.0.is_some(), code == 0 && i == 0, "{args:?}");
        assert!(written.0 == written.1, "{args:?}: the artifacts differ");
    }
}

/// `--whitespace dumps` is recorded in the artifact and narrows the
/// language: the arguments as `json.dumps` spaces them pass, a compact or
/// re-indented spelling does not; an unknown policy is refused by name.
#[test]
fn whitespace_dumps_is_recorded_and_spaces_as_json_dumps() {
    let out = std::env::temp_dir().join(format!("tooldec-cli-{}-ws.tdm", std::process::id()));
    let args = [
        "--format",
        "hermes",
        "--entry",
        "call",
        "--whitespace",
        "dumps",
    ];
    let art = compiled(
        &[&["grammars/examples/weather.json", "-q"][..], &args].concat(),
        &out,
    );
    let g = art.grammar();
    assert!(
        g.metadata().contains(r#""whitespace":"dumps""#),
        "{}",
        g.metadata()
    );
    let call = |args: &str| {
        format!("<tool_call>\n{{\"name\": \"get_weather\", \"arguments\": {args}}}\n</tool_call>")
    };
    let accepts = |text: &str| {
        let mut m = g.matcher();
        m.accept_bytes(text.as_bytes()) && m.is_accepting()
    };
    assert!(accepts(&call(r#"{"city": "Paris", "unit": "celsius"}"#)));
    assert!(!accepts(&call(r#"{"city":"Paris","unit":"celsius"}"#)));
    assert!(!accepts(&call("{\n  \"city\": \"Paris\"\n}")));

    let run = compile(
        &["grammars/examples/weather.json", "--whitespace", "tight"],
        &out,
    );
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("\"tight\": expected free or dumps"),
        "{stderr}"
    );
}
