//! The call formats' languages, checked on whole texts: what each format
//! accepts and rejects, alone and with `--parallel`.

use tooldec_compiler::format::Format;
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::Artifact;

fn artifact(format: Format, parallel: bool) -> Artifact {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let set = spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        format,
        parallel,
        ..Options::default()
    };
    Artifact::from_bytes(&compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact).unwrap()
}

/// Whether the grammar accepts `text` as a whole output.
fn accepts(a: &Artifact, text: &str) -> bool {
    let g = a.grammar();
    g.walk(g.start_state(), text.as_bytes())
        .is_some_and(|s| g.is_accepting_state(s))
}

const PARIS: &str =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const UTC: &str =
    "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}\n</tool_call>";

#[test]
fn hermes_one_call() {
    let a = artifact(Format::Hermes, false);
    assert!(accepts(&a, PARIS));
    assert!(accepts(&a, UTC));
    assert!(accepts(
        &a,
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\", \"days\": 3}}\n</tool_call>"
    ));
    assert!(
        !accepts(&a, &format!("{PARIS}\n{UTC}")),
        "two calls without --parallel"
    );
    for bad in [
        "<tool_call>\n{\"name\": \"get_wether\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>",
        "<tool_call>\n{\"name\":\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        "Sure! <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        "",
    ] {
        assert!(!accepts(&a, bad), "{bad:?}");
    }
}

#[test]
fn hermes_parallel_calls() {
    let a = artifact(Format::Hermes, true);
    assert!(accepts(&a, PARIS));
    assert!(accepts(&a, &format!("{PARIS}\n{UTC}")));
    assert!(accepts(&a, &format!("{PARIS}\n{UTC}\n{PARIS}")));
    assert!(
        !accepts(&a, &format!("{PARIS}{UTC}")),
        "calls sit on their own lines"
    );
    assert!(!accepts(&a, &format!("{PARIS}\n")), "no trailing separator");
}

#[test]
fn react_parallel_calls() {
    let one = "Thought: two things.\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}";
    let two = format!("{one}\nAction: get_time\nAction Input: {{\"timezone\": \"UTC\"}}");
    let single = artifact(Format::React, false);
    assert!(accepts(&single, one));
    assert!(!accepts(&single, &two));
    let parallel = artifact(Format::React, true);
    assert!(accepts(&parallel, one));
    assert!(accepts(&parallel, &two));
    assert!(!accepts(&parallel, &format!("{one}\nThought: more")));
}

#[test]
fn format_names_parse_and_unknown_is_a_usage_error() {
    assert_eq!(Format::parse("hermes").unwrap(), Format::Hermes);
    assert_eq!(Format::parse("react").unwrap().name(), "react");
    let e = Format::parse("xml").unwrap_err().to_string();
    assert!(e.contains("react, hermes"), "{e}");
}
