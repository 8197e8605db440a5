//! The format language itself: a user's format file compiled end to end,
//! the printer's round trip, and the errors a grammar file can get (with
//! file, line and column).

use tooldec_compiler::lower::call_format::{CallFormat, Rules};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, ErrorKind, Options};
use tooldec_runtime::Artifact;

fn weather() -> spec::ToolSet {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A format of our own, written to a file and loaded by path like
/// `tooldec-compile --format my.tdg`: XML-ish tags, the name as a bare
/// identifier, a regex terminal, a class, bounded repetition, a rule used
/// twice.
const USER_FORMAT: &str = r#"
# A user's format: optional mood line, then one or two calls.
entry start = mood? call (sep call)?;
mood = /(?:happy|sad)[!.]{1,3}/ "\n";
sep = [;,] " "?;
call = tool { "<call name=" name ">" args "</call>" };
"#;

#[test]
fn a_user_format_from_a_file() {
    let dir = std::env::temp_dir().join(format!("tooldec-fmt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tags.tdg");
    std::fs::write(&path, USER_FORMAT).unwrap();
    let format = CallFormat::load(path.to_str().unwrap()).unwrap();
    assert_eq!(format.name, "tags");
    assert_eq!(format.entries(), ["start"]);
    let opts = Options {
        format,
        ..Options::default()
    };
    let out = compile(
        &weather(),
        &Vocab::builtin_gpt2().unwrap(),
        &opts,
        &mut |_| {},
    )
    .unwrap();
    let a = Artifact::from_bytes(&out.artifact).unwrap();
    let g = a.grammar();
    let accepts = |t: &str| {
        let mut m = g.matcher();
        m.accept_bytes(t.as_bytes()) && m.is_accepting()
    };
    let paris = "<call name=get_weather>{\"city\": \"Paris\"}</call>";
    let utc = "<call name=get_time>{\"timezone\": \"UTC\"}</call>";
    assert!(accepts(paris));
    assert!(accepts(&format!("happy!!\n{paris}")));
    assert!(accepts(&format!("{paris}; {utc}")));
    assert!(accepts(&format!("sad.\n{paris},{utc}")));
    assert!(
        !accepts(&format!("happy!!!!\n{paris}")),
        "at most three marks"
    );
    assert!(
        !accepts(&format!("{paris}; {utc}; {paris}")),
        "at most two calls"
    );
    assert!(!accepts(
        "<call name=\"get_weather\">{\"city\": \"Paris\"}</call>"
    ));
    // The CLI's path form.
    let missing = CallFormat::load("no/such/format.tdg").unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::Io);
    assert!(
        missing.to_string().contains("no/such/format.tdg"),
        "{missing}"
    );
}

#[test]
fn pretty_printing_round_trips() {
    for name in CallFormat::shipped_names() {
        let f = CallFormat::load(name).unwrap();
        let printed = f.grammar.pretty();
        let again = Rules::parse("printed.tdg", &printed).unwrap();
        assert_eq!(again.pretty(), printed, "{name}");
        assert_eq!(again.rules.len(), f.grammar.rules.len());
    }
    let g = Rules::parse("u.tdg", USER_FORMAT).unwrap();
    let printed = g.pretty();
    assert_eq!(Rules::parse("u.tdg", &printed).unwrap().pretty(), printed);
}

/// The error of a grammar text, as "file:line:col: message".
fn error(text: &str) -> String {
    match Rules::parse("bad.tdg", text) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::CallFormat, "{e}");
            e.to_string()
        }
    }
}

#[test]
fn syntax_errors_say_where_and_what_was_expected() {
    let e = error("entry start = \"a\"\nb = \"x\";");
    assert!(e.starts_with("bad.tdg:2:3: expected"), "{e}");
    assert!(e.contains("found \"= \\\"x\\\";\""), "{e}");

    let e = error("entry start = \"unterminated;\n");
    assert!(e.starts_with("bad.tdg:1:15:"), "{e}");

    let e = error("entry start = (\"a\" | );");
    assert!(e.starts_with("bad.tdg:1:22: expected"), "{e}");
    assert!(e.contains("an expression") || e.contains("a string"), "{e}");

    let e = error("entry start = \"a\"{3,1};");
    assert!(
        e.contains("bad.tdg:1:18:") && e.contains("maximum is below the minimum"),
        "{e}"
    );

    let e = error("entry start = \"a\"{5000};");
    assert!(e.contains("above 1000"), "{e}");

    let e = error("entry start = \"\\q\";");
    assert!(e.starts_with("bad.tdg:1:"), "{e}");
}

#[test]
fn semantic_errors_say_where() {
    let e = error("entry start = call;\n");
    assert_eq!(e, "bad.tdg:1:15: unknown rule \"call\"");

    let e = error("entry start = \"a\";\n\nlost = \"b\";\n");
    assert_eq!(
        e,
        "bad.tdg:3:1: rule \"lost\" is unreachable from every entry rule"
    );

    let e = error("entry start = a;\na = \"x\" b;\nb = a?;\n");
    assert!(
        e.starts_with("bad.tdg:2:1: rule \"a\" is recursive (a -> b -> a)"),
        "{e}"
    );

    let e = error("entry start = \"x\" args;");
    assert_eq!(
        e,
        "bad.tdg:1:19: `args` is only defined inside `tool { ... }`"
    );

    let e = error("entry start = tool { tool { name } };");
    assert!(e.starts_with("bad.tdg:1:22:"), "{e}");

    let e = error("start = \"a\";");
    assert!(e.contains("no entry rule"), "{e}");

    // Columns count characters, not bytes, on every line of the file.
    let e = error("# \u{e9}t\u{e9}\nentry start = \"\u{e9}\u{fc}\" call;\n");
    assert_eq!(e, "bad.tdg:2:20: unknown rule \"call\"");

    let e = error("entry start = a;\na = \"x\";\na = \"y\";");
    assert!(
        e.starts_with("bad.tdg:3:1: rule \"a\" is defined twice (first at line 2)"),
        "{e}"
    );

    let e = error("entry start = special(\"a\", \"b\");");
    assert!(
        e.starts_with("bad.tdg:1:15: special(...) takes one string"),
        "{e}"
    );

    let e = error("entry start = text_except(\"\");");
    assert!(e.contains("empty trigger"), "{e}");
}

/// Errors found while lowering, against tools and a vocabulary.
fn lowering_error(text: &str) -> String {
    let g = Rules::parse("low.tdg", text).unwrap();
    let opts = Options {
        format: CallFormat {
            name: "low".into(),
            grammar: g,
        },
        ..Options::default()
    };
    match compile(
        &weather(),
        &Vocab::builtin_gpt2().unwrap(),
        &opts,
        &mut |_| {},
    ) {
        Ok(_) => panic!("compiled: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn lowering_errors_say_where() {
    let e = lowering_error("entry start = /a(/;");
    assert!(e.starts_with("low.tdg:1:15: in \"a(\":"), "{e}");

    let e = lowering_error("entry start = /^a$/;");
    assert!(e.contains("look-around"), "{e}");

    let e = lowering_error("entry start = special(\"<tool_call>\") tool { name };");
    assert!(
        e.starts_with("low.tdg:1:15: the vocabulary has no special token \"<tool_call>\""),
        "{e}"
    );

    // Triggers that overlap would make the end of the text ambiguous.
    let e = lowering_error("entry start = text_except(\"aa\") \"aa\";");
    assert!(
        e.starts_with("low.tdg:1:15: the triggers \"aa\" and \"aa\" overlap"),
        "{e}"
    );
}
