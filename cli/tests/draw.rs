//! `draw`: the DOT it writes parses (with the `dot` program where it is
//! installed, and always with the small DOT parser below), names every tool
//! (the token edges of the name trie spell each name) and every top-level
//! parameter (a node in that tool's cluster, a sub-cluster of its `--tool`
//! view), marks where the output may end, is the same bytes every time,
//! and refuses what it cannot draw. The README's picture
//! (`docs/tiny-react.dot`, `.svg`) must be what `dot()` writes today.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use tooldec_cli::graphviz;
use tooldec_cli::view::draw::{self, DrawOptions};
use tooldec_cli::view::{Tokenizer, View};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, ErrorKind, Options};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

const TOOL_FILES: [&str; 2] = [
    "grammars/examples/tiny.json",
    "grammars/examples/weather.json",
];
const FORMATS: [&str; 4] = ["react", "hermes", "json", "toolken"];

fn vocab() -> &'static Vocab {
    static V: OnceLock<Vocab> = OnceLock::new();
    V.get_or_init(|| Vocab::builtin_gpt2().unwrap())
}

fn compile_text(what: &str, text: &str, format: &str) -> Vec<u8> {
    let tools = spec::parse(what, text).unwrap();
    let opts = Options {
        format: CallFormat::load(format).unwrap(),
        threads: 1,
        limits: tooldec_compiler::Limits::offline(),
        ..Default::default()
    };
    compile(&tools, vocab(), &opts, &mut |_| {})
        .unwrap_or_else(|e| panic!("{what} ({format}): {e}"))
        .artifact
}

/// Every example tool list in every format, compiled once for all tests.
fn artifacts() -> &'static Vec<(String, Vec<u8>)> {
    static A: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    A.get_or_init(|| {
        let mut out = Vec::new();
        for file in TOOL_FILES {
            let text = std::fs::read_to_string(root().join(file)).unwrap();
            for format in FORMATS {
                out.push((
                    format!("{file} ({format})"),
                    compile_text(file, &text, format),
                ));
            }
        }
        out
    })
}

fn tiny_react() -> &'static [u8] {
    &artifacts()[0].1
}

/// The top-level parameters of each tool of an example file, by name.
fn parameters(file: &str) -> BTreeMap<String, BTreeSet<String>> {
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(file)).unwrap()).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = t.get("function").unwrap_or(t);
            let props = f["parameters"]["properties"].as_object().unwrap();
            (
                f["name"].as_str().unwrap().to_string(),
                props.keys().cloned().collect(),
            )
        })
        .collect()
}

fn overview(v: &View<'_>) -> String {
    draw::dot(
        v,
        &DrawOptions {
            tool: None,
            tokenizer: None,
        },
    )
    .unwrap()
}

fn dot_installed() -> bool {
    std::process::Command::new("dot").arg("-V").output().is_ok()
}

/// When `dot` is installed, it must render `text`.
fn check_with_dot(what: &str, text: &str) {
    match graphviz::svg(text) {
        Ok(Some(svg)) => assert!(svg.contains("<svg"), "{what}: dot wrote no SVG"),
        Ok(None) => {}
        Err(e) => panic!("{what}: dot refused the DOT: {e}\n{text}"),
    }
}

#[test]
fn every_overview_parses_and_names_every_tool_and_parameter() {
    if !dot_installed() {
        // CI installs Graphviz and sets this, so that there the graphs
        // are always rendered by dot too.
        assert!(
            std::env::var_os("TOOLDEC_REQUIRE_DOT").is_none(),
            "TOOLDEC_REQUIRE_DOT is set but the Graphviz `dot` program is not installed"
        );
        println!("dot not installed: checked with the built-in DOT parser only");
    }
    for (what, bytes) in artifacts() {
        let art = tooldec_runtime::Artifact::from_bytes(bytes).unwrap();
        let v = View::new(art.grammar(), what).unwrap();
        let text = overview(&v);
        let g = parse(&text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
        check_with_dot(what, &text);
        assert!(g.directed, "{what}");

        // The token edges from where names begin spell every tool's name.
        let spelled = g.spelled_names();
        for name in &v.tools {
            let quoted = serde_json::to_string(name).unwrap();
            assert!(
                spelled.contains(name) || spelled.contains(&quoted),
                "{what}: no path of token edges spells `{name}` (spelled: {spelled:?})\n{text}"
            );
        }

        // Every cluster of a tool's arguments has a node per top-level
        // parameter; every tool has one.
        let file = what.split(' ').next().unwrap();
        for (tool, params) in parameters(file) {
            let mine: Vec<&Cluster> = g
                .clusters
                .iter()
                .filter(|c| {
                    c.label.starts_with("arguments of") && c.label.contains(&format!("`{tool}`"))
                })
                .collect();
            assert!(!mine.is_empty(), "{what}: no cluster for `{tool}`\n{text}");
            for c in mine {
                let shown: BTreeSet<String> = c
                    .nodes
                    .iter()
                    .map(|n| g.nodes[n].get("label").cloned().unwrap_or_default())
                    .map(|l| l.lines().next().unwrap_or("").to_string())
                    .collect();
                for p in &params {
                    assert!(
                        shown.contains(p),
                        "{what}: `{tool}`'s cluster {:?} has no `{p}`: {shown:?}",
                        c.id
                    );
                }
            }
        }

        // Where the output may end is marked.
        assert!(
            g.nodes
                .values()
                .any(|a| a.get("peripheries").map(String::as_str) == Some("2")),
            "{what}: nothing marked as a place the output may end\n{text}"
        );
        let eos: Vec<&String> = g
            .nodes
            .iter()
            .filter(|(_, a)| a.get("label").map(String::as_str) == Some("EOS"))
            .map(|(id, _)| id)
            .collect();
        assert!(!eos.is_empty(), "{what}: no EOS node");
        assert!(
            g.edges.iter().any(|e| eos.contains(&&e.to)),
            "{what}: nothing leads to EOS"
        );
        for (id, a) in &g.nodes {
            if a.get("peripheries").map(String::as_str) == Some("2") {
                assert!(
                    g.edges
                        .iter()
                        .any(|e| &e.from == id && eos.contains(&&e.to)),
                    "{what}: {id} is marked but has no edge to EOS"
                );
            }
        }

        // One start node per entry.
        for (name, _) in v.g.entries() {
            let label = format!("entry {name}");
            assert!(
                g.nodes.values().any(|a| a.get("label") == Some(&label)),
                "{what}: no node for entry `{name}`"
            );
        }
    }
}

#[test]
fn every_tool_view_parses_and_shows_every_parameter() {
    for (what, bytes) in artifacts() {
        let art = tooldec_runtime::Artifact::from_bytes(bytes).unwrap();
        let v = View::new(art.grammar(), what).unwrap();
        let file = what.split(' ').next().unwrap();
        for (tool, params) in parameters(file) {
            // The whole machine, or (too large to draw whole) each
            // parameter's states: together they show every parameter.
            let views: Vec<String> = match draw::dot(
                &v,
                &DrawOptions {
                    tool: Some(&tool),
                    tokenizer: None,
                },
            ) {
                Ok(text) => vec![text],
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Limit, "{what} --tool {tool}: {e}");
                    for p in &params {
                        assert!(
                            e.message().contains(&format!("`{tool}.{p}`")),
                            "{what}: {e}"
                        );
                    }
                    params
                        .iter()
                        .map(|p| {
                            let sel = format!("{tool}.{p}");
                            draw::dot(
                                &v,
                                &DrawOptions {
                                    tool: Some(&sel),
                                    tokenizer: None,
                                },
                            )
                            .unwrap_or_else(|e| panic!("{what} --tool {sel}: {e}"))
                        })
                        .collect()
                }
            };
            let mut shown: BTreeSet<String> = BTreeSet::new();
            for text in &views {
                let g = parse(text).unwrap_or_else(|e| panic!("{what} --tool {tool}: {e}\n{text}"));
                if what.ends_with("(react)") {
                    check_with_dot(&format!("{what} --tool {tool}"), text);
                }
                let outer: Vec<&Cluster> = g
                    .clusters
                    .iter()
                    .filter(|c| {
                        c.label.starts_with("arguments of")
                            && c.label.contains(&format!("`{tool}`"))
                    })
                    .collect();
                assert!(
                    !outer.is_empty(),
                    "{what} --tool {tool}: no cluster\n{text}"
                );
                // A sub-cluster per parameter: "city (string)".
                shown.extend(
                    g.clusters
                        .iter()
                        .filter(|c| c.depth == 2)
                        .map(|c| c.label.split(" (").next().unwrap_or("").to_string()),
                );
                // Edges carry the bytes they read; the machine is entered and left.
                assert!(g
                    .edges
                    .iter()
                    .all(|e| e.attrs.contains_key("label") || e.from.starts_with("before")));
                assert!(
                    g.edges.iter().any(|e| e.from.starts_with("before")),
                    "{what} --tool {tool}: not entered"
                );
                assert!(
                    g.edges.iter().any(|e| e.to.starts_with("after")),
                    "{what} --tool {tool}: never left"
                );
                // Every state drawn is a DFA state of this artifact.
                for id in g.nodes.keys().filter(|id| id.starts_with('s')) {
                    let s: usize = id[1..].parse().unwrap();
                    assert!(s > 0 && s < v.g.state_count(), "{what}: {id}");
                }
            }
            for p in &params {
                assert!(
                    shown.contains(p),
                    "{what} --tool {tool}: no `{p}` in {shown:?}"
                );
            }
        }
    }
}

#[test]
fn the_trie_merges_shared_prefixes_and_tokens_walk() {
    let bytes = &artifacts()[4].1; // weather.json, react
    let art = tooldec_runtime::Artifact::from_bytes(bytes).unwrap();
    let v = View::new(art.grammar(), "weather").unwrap();
    let g = parse(&overview(&v)).unwrap();
    // `get_weather` and `get_time` share their first token's edge from
    // each place names begin.
    let roots: Vec<&String> = g
        .nodes
        .iter()
        .filter(|(_, a)| a.get("label").map(String::as_str) == Some("name"))
        .map(|(id, _)| id)
        .collect();
    assert!(!roots.is_empty());
    for r in roots {
        let firsts: Vec<&Edge> = g
            .edges
            .iter()
            .filter(|e| &e.from == r && e.is_token())
            .collect();
        let labels: BTreeSet<&str> = firsts.iter().map(|e| e.attrs["label"].as_str()).collect();
        assert_eq!(
            firsts.len(),
            labels.len(),
            "two edges for one token from {r}"
        );
        assert_eq!(firsts.len(), 2, "get_ and search_ from {r}: {labels:?}");
    }
    // Each token edge's tooltip names a token whose bytes are its label.
    for e in g.edges.iter().filter(|e| e.is_token()) {
        let id: u32 = e.attrs["tooltip"]
            .strip_prefix("token ")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(v.token(id), e.attrs["label"]);
    }
    // With the tokenizer itself, the split is the same for these names
    // and the label says which was used.
    let tok = Tokenizer::Builtin;
    let with = draw::dot(
        &v,
        &DrawOptions {
            tool: None,
            tokenizer: Some(&tok),
        },
    )
    .unwrap();
    let gw = parse(&with).unwrap();
    assert!(with.contains("each name split by the tokenizer"));
    assert!(overview(&v).contains("longest match"));
    // Both spell every name; the tokenizer's own split is what is drawn
    // (BPE splits `search_flights` as `fl` `ights`, not `flight` `s`).
    for (with, g) in [(true, &gw), (false, &g)] {
        let spelled = g.spelled_names();
        for name in &v.tools {
            assert!(
                spelled.contains(name),
                "tokenizer {with}: no `{name}` in {spelled:?}"
            );
        }
    }
    let tips: BTreeSet<&str> = gw
        .edges
        .iter()
        .filter(|e| e.is_token())
        .map(|e| e.attrs["tooltip"].as_str())
        .collect();
    for name in &v.tools {
        for id in tok.encode(name).unwrap() {
            assert!(
                tips.contains(format!("token {id}").as_str()),
                "`{name}`: token {id} not drawn"
            );
        }
    }
}

#[test]
fn drawing_is_deterministic() {
    // Two compilations, two loads, two drawings of each: the same bytes.
    let text = std::fs::read_to_string(root().join(TOOL_FILES[0])).unwrap();
    let again = compile_text(TOOL_FILES[0], &text, "react");
    let mut seen: Vec<(String, String)> = Vec::new();
    for bytes in [tiny_react(), &again[..]] {
        for _ in 0..2 {
            let art = tooldec_runtime::Artifact::from_bytes(bytes).unwrap();
            let v = View::new(art.grammar(), "tiny").unwrap();
            let tool = draw::dot(
                &v,
                &DrawOptions {
                    tool: Some("add"),
                    tokenizer: None,
                },
            )
            .unwrap();
            seen.push((overview(&v), tool));
        }
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn an_unknown_tool_is_an_error_naming_the_tools() {
    let art = tooldec_runtime::Artifact::from_bytes(tiny_react()).unwrap();
    let v = View::new(art.grammar(), "tiny").unwrap();
    let e = draw::dot(
        &v,
        &DrawOptions {
            tool: Some("mul"),
            tokenizer: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Usage);
    assert!(e.message().contains("`mul`"), "{e}");
    assert!(
        e.message().contains("`add`") && e.message().contains("`neg`"),
        "{e}"
    );
    let e = draw::dot(
        &v,
        &DrawOptions {
            tool: Some("add.c"),
            tokenizer: None,
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Usage);
    assert!(
        e.message().contains("`add.a`") && e.message().contains("`add.b`"),
        "{e}"
    );
}

#[test]
fn an_artifact_without_regions_is_refused() {
    let art = tooldec_runtime::Artifact::from_bytes(tiny_react()).unwrap();
    let mut v = View::new(art.grammar(), "tiny").unwrap();
    v.no_regions = true;
    for tool in [None, Some("add")] {
        let e = draw::dot(
            &v,
            &DrawOptions {
                tool,
                tokenizer: None,
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Artifact);
        assert!(
            e.message()
                .contains("recompile it with this release's tooldec-compile"),
            "{e}"
        );
    }
    // The committed golden artifact (whatever release wrote it) is drawn
    // or refused, never a panic.
    let golden =
        tooldec_runtime::Artifact::open(root().join("artifacts/weather-gpt2.tdm")).unwrap();
    let v = View::new(golden.grammar(), "golden").unwrap();
    match draw::dot(
        &v,
        &DrawOptions {
            tool: None,
            tokenizer: None,
        },
    ) {
        Ok(text) => {
            parse(&text).unwrap();
        }
        Err(e) => assert_eq!(e.kind(), ErrorKind::Artifact, "{e}"),
    }
}

#[test]
fn a_machine_too_large_to_read_is_refused() {
    // 300 tools of 6 parameters each (one name differs per tool, so no two
    // tools share an argument machine): over 2,000 nodes.
    let tools: Vec<Value> = (0..300)
        .map(|i| {
            let mut props = serde_json::Map::new();
            props.insert(format!("a{i}"), serde_json::json!({"type": "boolean"}));
            for p in ["b", "c", "d", "e", "f"] {
                props.insert(p.into(), serde_json::json!({"type": "boolean"}));
            }
            serde_json::json!({"name": format!("tool_{i}"), "parameters": {"type": "object",
                "properties": props, "required": [format!("a{i}")]}})
        })
        .collect();
    let bytes = compile_text("many.json", &Value::Array(tools).to_string(), "llama3");
    let art = tooldec_runtime::Artifact::from_bytes(&bytes).unwrap();
    let v = View::new(art.grammar(), "many").unwrap();
    let e = match draw::dot(
        &v,
        &DrawOptions {
            tool: None,
            tokenizer: None,
        },
    ) {
        Ok(text) => panic!("drew {} bytes of DOT", text.len()),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::Limit);
    assert!(e.message().contains("--tool NAME"), "{e}");
    // One tool of it still draws, whole or a parameter at a time.
    match draw::dot(
        &v,
        &DrawOptions {
            tool: Some("tool_7"),
            tokenizer: None,
        },
    ) {
        Ok(one) => drop(parse(&one).unwrap()),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Limit);
            assert!(e.message().contains("`tool_7.a7`"), "{e}");
        }
    }
    let one = draw::dot(
        &v,
        &DrawOptions {
            tool: Some("tool_7.a7"),
            tokenizer: None,
        },
    )
    .unwrap();
    parse(&one).unwrap();
}

#[test]
fn the_parser_below_rejects_broken_dot() {
    let good =
        "digraph g { \"a\" [label=\"x\"]; \"b\"; \"a\" -> \"b\" [label=\"\\\"q\\\" \\\\n\"]; }";
    parse(good).unwrap();
    for bad in [
        "digraph g { \"a\"; ",                           // unbalanced
        "digraph g { \"a\" [label=\"x]; }",              // unterminated string
        "digraph g { \"a\" [label=\"\\N\"]; }",          // an escape Graphviz expands
        "digraph g { \"a\"; \"a\" -> \"b\"; }",          // undeclared node
        "digraph g { \"a\"; \"b\"; \"a\" -- \"b\"; }",   // undirected edge in a digraph
        "digraph g { \"a\" [label=]; }",                 // missing value
        "digraph g { } }",                               // trailing text
        "digraph g { subgraph \"cluster_x\" { \"a\"; }", // unbalanced subgraph
    ] {
        assert!(parse(bad).is_err(), "accepted: {bad}");
    }
}

const README_DOT: &str = "docs/tiny-react.dot";
const README_SVG: &str = "docs/tiny-react.svg";

/// The README's picture: tiny.json, react, the built-in vocabulary and its
/// tokenizer (what `tooldec draw grammars/examples/tiny.json` writes).
fn readme_dot() -> String {
    let art = tooldec_runtime::Artifact::from_bytes(tiny_react()).unwrap();
    let v = View::new(art.grammar(), "tiny").unwrap();
    let tok = Tokenizer::for_artifact(&v, None).unwrap();
    draw::dot(
        &v,
        &DrawOptions {
            tool: None,
            tokenizer: Some(&tok),
        },
    )
    .unwrap()
}

#[test]
fn the_readme_picture_is_current() {
    let want = readme_dot();
    let have = std::fs::read_to_string(root().join(README_DOT)).unwrap_or_default();
    assert!(
        have == want,
        "{README_DOT} is not what `draw` writes today; regenerate it (and {README_SVG}) with\n  \
         cargo test -p tooldec-cli --test draw -- --ignored regenerate_readme_picture"
    );
    let svg = std::fs::read_to_string(root().join(README_SVG)).unwrap_or_default();
    assert!(svg.contains("<svg"), "{README_SVG} is missing");
    parse(&have).unwrap();
}

#[test]
#[ignore = "writes docs/tiny-react.dot and .svg; run with --ignored"]
fn regenerate_readme_picture() {
    let text = readme_dot();
    std::fs::write(root().join(README_DOT), &text).unwrap();
    let svg = graphviz::svg(&text)
        .unwrap()
        .expect("the `dot` program (graphviz) is needed to write the SVG");
    std::fs::write(root().join(README_SVG), svg).unwrap();
}

// A small DOT parser: the statement grammar `draw` writes (graph,
// subgraph, node, edge and attribute statements; quoted and bare IDs;
// comments), strict about what Graphviz would misread.

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Id(String),
    Punct(&'static str),
}

fn lex(text: &str) -> Result<Vec<Tok>, String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("//") || (c == b'#' && (i == 0 || b[i - 1] == b'\n')) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if text[i..].starts_with("/*") {
            let end = text[i + 2..].find("*/").ok_or("unterminated comment")?;
            i += end + 4;
        } else if c == b'"' {
            let mut s = String::new();
            let mut j = i + 1;
            loop {
                let Some(ch) = text[j..].chars().next() else {
                    return Err(format!("unterminated string at byte {i}"));
                };
                match ch {
                    '"' => break,
                    '\\' => {
                        let Some(e) = text[j + 1..].chars().next() else {
                            return Err(format!("unterminated string at byte {i}"));
                        };
                        // Graphviz expands \N \G \E \T \H \L in labels:
                        // only these escapes are written on purpose.
                        s.push(match e {
                            '"' => '"',
                            '\\' => '\\',
                            'n' | 'l' | 'r' => '\n',
                            _ => return Err(format!("bad escape \\{e} at byte {j}")),
                        });
                        j += 1 + e.len_utf8();
                    }
                    ch => {
                        s.push(ch);
                        j += ch.len_utf8();
                    }
                }
            }
            out.push(Tok::Id(s));
            i = j + 1;
        } else if c.is_ascii_alphanumeric()
            || c == b'_'
            || c == b'.'
            || c == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
                j += 1;
            }
            out.push(Tok::Id(text[i..j].to_string()));
            i = j;
        } else {
            let p = ["->", "--", "{", "}", "[", "]", ";", ",", "="]
                .into_iter()
                .find(|p| text[i..].starts_with(p))
                .ok_or_else(|| {
                    format!(
                        "unexpected {:?} at byte {i}",
                        &text[i..(i + 8).min(text.len())]
                    )
                })?;
            out.push(Tok::Punct(p));
            i += p.len();
        }
    }
    Ok(out)
}

type Attrs = BTreeMap<String, String>;

#[derive(Debug)]
struct Edge {
    from: String,
    to: String,
    attrs: Attrs,
}

impl Edge {
    fn is_token(&self) -> bool {
        self.attrs.get("class").map(String::as_str) == Some("token")
    }
}

#[derive(Debug)]
struct Cluster {
    id: String,
    label: String,
    depth: usize,
    nodes: Vec<String>,
}

#[derive(Debug, Default)]
struct Graph {
    directed: bool,
    nodes: BTreeMap<String, Attrs>,
    edges: Vec<Edge>,
    clusters: Vec<Cluster>,
}

impl Graph {
    /// The strings token edges spell from each node labelled `name`
    /// (where tool names begin), to each node they lead to (a name that
    /// begins another ends inside the trie).
    fn spelled_names(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        let roots: Vec<&String> = self
            .nodes
            .iter()
            .filter(|(_, a)| a.get("label").map(String::as_str) == Some("name"))
            .map(|(id, _)| id)
            .collect();
        let mut stack: Vec<(String, String)> = roots
            .into_iter()
            .map(|r| (r.clone(), String::new()))
            .collect();
        while let Some((node, text)) = stack.pop() {
            let next: Vec<&Edge> = self
                .edges
                .iter()
                .filter(|e| e.from == node && e.is_token())
                .collect();
            if !text.is_empty() {
                out.insert(text.clone());
            }
            for e in next {
                if text.len() < 200 {
                    stack.push((e.to.clone(), text.clone() + &unquote(&e.attrs["label"])));
                }
            }
        }
        out
    }
}

/// A token label (`get`, with `quote`'s escapes) back to its text.
fn unquote(label: &str) -> String {
    let inner = label
        .strip_prefix('`')
        .and_then(|l| l.strip_suffix('`'))
        .unwrap_or(label);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}

struct Parser {
    toks: Vec<Tok>,
    i: usize,
    g: Graph,
    /// Edges' ends, checked against the declared nodes at the end.
    ends: Vec<String>,
}

fn parse(text: &str) -> Result<Graph, String> {
    let mut p = Parser {
        toks: lex(text)?,
        i: 0,
        g: Graph::default(),
        ends: Vec::new(),
    };
    p.keyword("strict");
    p.g.directed = if p.keyword("digraph") {
        true
    } else if p.keyword("graph") {
        false
    } else {
        return Err("no graph or digraph".into());
    };
    if matches!(p.peek(), Some(Tok::Id(_))) {
        p.i += 1;
    }
    p.expect("{")?;
    p.stmts(0, None)?;
    if p.i != p.toks.len() {
        return Err(format!("text after the graph: {:?}", &p.toks[p.i..]));
    }
    for e in &p.ends {
        if !p.g.nodes.contains_key(e) {
            return Err(format!("edge to undeclared node {e:?}"));
        }
    }
    Ok(p.g)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i)
    }

    fn punct(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Punct(q)) if *q == p) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.punct(p) {
            Ok(())
        } else {
            Err(format!("expected {p:?}, found {:?}", self.peek()))
        }
    }

    fn keyword(&mut self, k: &str) -> bool {
        // Keywords are bare; a quoted "graph" would be an ID (the lexer
        // does not keep the difference, and `draw` quotes every ID).
        if matches!(self.peek(), Some(Tok::Id(s)) if s == k) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn id(&mut self) -> Result<String, String> {
        match self.peek() {
            Some(Tok::Id(s)) => {
                let s = s.clone();
                self.i += 1;
                Ok(s)
            }
            other => Err(format!("expected an ID, found {other:?}")),
        }
    }

    fn attr_list(&mut self) -> Result<Attrs, String> {
        let mut attrs = Attrs::new();
        while self.punct("[") {
            while !self.punct("]") {
                let k = self.id()?;
                self.expect("=")?;
                let v = self.id()?;
                attrs.insert(k, v);
                if !self.punct(",") {
                    self.punct(";");
                }
            }
        }
        Ok(attrs)
    }

    /// Statements up to the closing brace; `cluster`: the index of the
    /// cluster being read, whose nodes are collected.
    fn stmts(&mut self, depth: usize, cluster: Option<usize>) -> Result<(), String> {
        loop {
            if self.punct("}") {
                return Ok(());
            }
            if self.peek().is_none() {
                return Err("unbalanced braces: the graph is not closed".into());
            }
            if self.punct(";") {
                continue;
            }
            if self.keyword("graph") || self.keyword("node") || self.keyword("edge") {
                self.attr_list()?;
                continue;
            }
            if self.keyword("subgraph") {
                let id = if matches!(self.peek(), Some(Tok::Id(_))) {
                    self.id()?
                } else {
                    String::new()
                };
                self.expect("{")?;
                let index = id.starts_with("cluster").then(|| {
                    self.g.clusters.push(Cluster {
                        id: id.clone(),
                        label: String::new(),
                        depth: depth + 1,
                        nodes: Vec::new(),
                    });
                    self.g.clusters.len() - 1
                });
                self.stmts(depth + 1, index.or(cluster))?;
                continue;
            }
            if self.punct("{") {
                self.stmts(depth + 1, cluster)?;
                continue;
            }
            let first = self.id()?;
            if self.punct("=") {
                let v = self.id()?;
                if first == "label" {
                    if let Some(c) = cluster {
                        self.g.clusters[c].label = v;
                    }
                }
                continue;
            }
            let mut chain = vec![first];
            loop {
                if self.punct("->") {
                    if !self.g.directed {
                        return Err("-> in an undirected graph".into());
                    }
                } else if self.punct("--") {
                    if self.g.directed {
                        return Err("-- in a directed graph".into());
                    }
                } else {
                    break;
                }
                chain.push(self.id()?);
            }
            let attrs = self.attr_list()?;
            if chain.len() == 1 {
                let id = chain.pop().unwrap();
                if let Some(c) = cluster {
                    self.g.clusters[c].nodes.push(id.clone());
                }
                self.g.nodes.entry(id).or_default().extend(attrs);
            } else {
                for w in chain.windows(2) {
                    self.ends.extend([w[0].clone(), w[1].clone()]);
                    self.g.edges.push(Edge {
                        from: w[0].clone(),
                        to: w[1].clone(),
                        attrs: attrs.clone(),
                    });
                }
            }
        }
    }
}
