//! Tool-list dialects: each dialect from a small hand-written fixture
//! (`fixtures/dialects/`: detected, names, converted schemas), error cases
//! (file:line:col and pointer, never a panic), and every real tool file of
//! the shared data (`TOOLDEC_DATA`): BFCL, ToolBench, RestBench's OpenAPI
//! spec, ToolkenGPT's FuncQA and KAMEL, LiveMCPBench.

use serde_json::{json, Value};
use tooldec_compiler::spec::{self, Collisions, Dialect, ParseOptions, ToolSet};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{ErrorKind, Options};
use tooldec_testkit::{data_dir, data_file, read_text};

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/dialects/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn renamed() -> ParseOptions {
    ParseOptions {
        collisions: Collisions::Rename,
        ..ParseOptions::default()
    }
}

/// Parses a fixture, checking the detected dialect.
#[track_caller]
fn parse_fixture(name: &str, dialect: Dialect, opts: ParseOptions) -> ToolSet {
    let text = fixture(name);
    assert_eq!(spec::detect(name, &text).unwrap(), dialect, "{name}");
    let set = spec::parse_with(name, &text, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
    // Naming the dialect gives the same tools.
    let named = spec::parse_with(name, &text, &ParseOptions { dialect, ..opts }).unwrap();
    assert_eq!(set.names(), named.names());
    set
}

#[track_caller]
fn params(set: &ToolSet, name: &str) -> Value {
    set.tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tool {name:?} in {:?}", set.names()))
        .parameters
        .clone()
}

#[track_caller]
fn property_order(v: &Value) -> Vec<&str> {
    v["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

/// The error of parsing `text`, checked for kind and substrings.
#[track_caller]
fn check_err(file: &str, text: &str, opts: ParseOptions, kind: ErrorKind, needles: &[&str]) {
    match spec::parse_with(file, text, &opts) {
        Ok(set) => panic!("{file} parsed ({:?}), but should fail", set.names()),
        Err(e) => {
            let msg = e.to_string();
            assert_eq!(e.kind(), kind, "{msg}");
            for n in needles {
                assert!(msg.contains(n), "{msg:?} lacks {n:?}");
            }
        }
    }
}

#[test]
fn dialect_names_round_trip() {
    for d in Dialect::ALL {
        assert_eq!(d.name().parse::<Dialect>().unwrap(), d);
        assert_eq!(d.to_string(), d.name());
    }
    let e = "yaml".parse::<Dialect>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Usage);
    assert!(
        e.to_string().contains("openai, anthropic, mcp, bfcl"),
        "{e}"
    );
}

#[test]
fn openai() {
    let set = parse_fixture("openai.json", Dialect::OpenAi, ParseOptions::default());
    assert_eq!(set.names(), ["get_weather", "now"]);
    assert_eq!(
        params(&set, "get_weather"),
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    );
    assert_eq!(
        params(&set, "now"),
        json!({"type": "object", "properties": {}})
    );
    assert_eq!(set.tools[0].pointer, "/tools/0/function/parameters");
    assert_eq!(set.tools[0].description.as_deref(), Some("Current weather"));
}

#[test]
fn anthropic() {
    let set = parse_fixture(
        "anthropic.json",
        Dialect::Anthropic,
        ParseOptions::default(),
    );
    assert_eq!(set.names(), ["get_stock_price", "ping"]);
    assert_eq!(
        params(&set, "get_stock_price"),
        json!({"type": "object", "properties": {"ticker": {"type": "string"}}, "required": ["ticker"]})
    );
    assert_eq!(set.tools[0].pointer, "/0/input_schema");
}

#[test]
fn mcp_jsonrpc_result() {
    let set = parse_fixture("mcp_jsonrpc.json", Dialect::Mcp, ParseOptions::default());
    assert_eq!(set.names(), ["read_file", "list_dir"]);
    assert_eq!(
        params(&set, "list_dir"),
        json!({"type": "object", "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}}})
    );
    assert_eq!(set.tools[1].pointer, "/result/tools/1/inputSchema");
    assert!(set
        .place(&set.tools[1].pointer)
        .starts_with("mcp_jsonrpc.json:6:"));
}

#[test]
fn mcp_servers_dedupe_and_collide() {
    // move_file is identical on both servers (kept once); read_file differs.
    let text = fixture("mcp_servers.json");
    check_err(
        "mcp_servers.json",
        &text,
        ParseOptions::default(),
        ErrorKind::Spec,
        &[
            "mcp_servers.json:8:",
            "(at /1/tools/desk/tools/1)",
            "tool name \"read_file\" names two different tools",
            "mcp_servers.json:3:",
            "(at /0/tools/fs/tools/0)",
        ],
    );
    let set = parse_fixture("mcp_servers.json", Dialect::Mcp, renamed());
    assert_eq!(set.names(), ["read_file", "move_file", "read_file_2"]);
    assert_eq!(
        params(&set, "read_file_2"),
        json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}})
    );
    assert_eq!(set.tools[2].pointer, "/1/tools/desk/tools/1/inputSchema");
}

#[test]
fn bfcl_jsonl() {
    let set = parse_fixture("bfcl.jsonl", Dialect::Bfcl, ParseOptions::default());
    // The repeated identical tool of line 2 is kept once.
    assert_eq!(set.names(), ["triangle_area", "Store.put"]);
    let p = params(&set, "triangle_area");
    assert_eq!(
        p,
        json!({"type": "object", "properties": {
            "base": {"type": "integer", "description": "The base."},
            "height": {"type": "number", "description": "The height."},
            "dims": {"type": "array", "items": {"type": "number"}},
            "extra": {}
        }, "required": ["base"]})
    );
    assert_eq!(property_order(&p), ["base", "height", "dims", "extra"]);
    // Java: values, or a string holding a Java expression.
    assert_eq!(
        params(&set, "Store.put"),
        json!({"type": "object", "properties": {
            "key": {"type": "string"},
            "count": {"type": ["integer", "string"]},
            "ids": {"type": ["array", "string"], "items": {"type": ["integer", "string"]}},
            "params": {"type": ["object", "string"]},
            "ctx": {}
        }, "required": ["key", "count"]})
    );
    // Converted in place: pointers are the file's, lines the file's lines
    // (the blank line 3 is skipped by the value index).
    assert_eq!(set.tools[0].pointer, "/0/function/0/parameters");
    assert_eq!(set.tools[1].pointer, "/2/function/0/parameters");
    let place = set.place("/2/function/0/parameters/properties/count/type");
    assert!(place.starts_with("bfcl.jsonl:4:"), "{place}");
    assert!(set
        .place("/0/function/0/parameters/required")
        .starts_with("bfcl.jsonl:1:"));
}

#[test]
fn toolbench_queries() {
    let set = parse_fixture(
        "toolbench.json",
        Dialect::ToolBench,
        ParseOptions::default(),
    );
    assert_eq!(
        set.names(),
        [
            "current_weather_for_open_weather_v2",
            "get_3_day_forecast_for_open_weather_v2"
        ]
    );
    assert_eq!(
        params(&set, "current_weather_for_open_weather_v2"),
        json!({"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "lat": {"type": "number"},
            "metric": {"type": "boolean"},
            "units": {"type": "string"}
        }, "required": ["city"]})
    );
    let p = params(&set, "get_3_day_forecast_for_open_weather_v2");
    assert_eq!(
        p,
        json!({"type": "object", "properties": {
            "is_id": {"type": "string"},
            "date": {"type": "string", "description": "Day"},
            "at_time": {"type": "string"}
        }, "required": ["is_id", "date"]})
    );
    assert_eq!(property_order(&p), ["is_id", "date", "at_time"]);
    assert_eq!(set.tools[1].pointer, "/1/api_list/1");
    assert_eq!(set.tools[1].description, None);
    // A pointer into the synthesized schema is placed at the api entry.
    let place = set.place("/1/api_list/1/properties/date/type");
    assert!(place.starts_with("toolbench.json:19:5 "), "{place}");
}

#[test]
fn openapi_operations() {
    let set = parse_fixture("openapi.json", Dialect::OpenApi, ParseOptions::default());
    assert_eq!(set.names(), ["getPet", "put_pets_pet_id"]);
    let p = params(&set, "getPet");
    assert_eq!(
        p,
        json!({"type": "object", "properties": {
            "pet_id": {"type": "integer"},
            "verbose": {"type": "boolean", "default": false, "description": "More detail"},
            "X-Trace": {"type": "string"}
        }, "required": ["pet_id"]})
    );
    assert_eq!(property_order(&p), ["pet_id", "verbose", "X-Trace"]);
    assert_eq!(set.tools[0].description.as_deref(), Some("Get a pet"));
    assert_eq!(
        params(&set, "put_pets_pet_id"),
        json!({"type": "object", "properties": {
            "pet_id": {"type": "integer"},
            "body": {"$ref": "#/$defs/Pet"}
        }, "required": ["pet_id", "body"], "$defs": {"Pet": {
            "type": "object",
            "properties": {
                "name": {"type": ["string", "null"]},
                "age": {"type": "integer", "exclusiveMinimum": 0},
                "parent": {"$ref": "#/$defs/Pet"}
            },
            "required": ["name"]
        }}})
    );
    assert_eq!(set.tools[1].pointer, "/paths/~1pets~1{pet_id}/put");
    assert!(set
        .place(&set.tools[1].pointer)
        .starts_with("openapi.json:18:"));
}

#[test]
fn signature_lists() {
    let set = parse_fixture(
        "signatures.txt",
        Dialect::Signatures,
        ParseOptions::default(),
    );
    assert_eq!(set.names(), ["multiply", "search", "add"]);
    assert_eq!(
        params(&set, "multiply"),
        json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a", "b"]})
    );
    assert_eq!(
        set.tools[0].description.as_deref(),
        Some("multiplies two numbers")
    );
    assert_eq!(
        params(&set, "search"),
        json!({"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]})
    );
    assert_eq!(
        params(&set, "add"),
        json!({"type": "object", "properties": {
            "x1": {"type": "number"}, "x2": {"type": "number"}, "x3": {"type": "number"},
            "x4": {"type": "number"}, "x5": {"type": "number"}
        }, "required": ["x1"]})
    );
    assert!(set
        .place("/2/properties/x1")
        .starts_with("signatures.txt:4:1 "));

    let set = parse_fixture(
        "signatures_pairs.json",
        Dialect::Signatures,
        ParseOptions::default(),
    );
    assert_eq!(set.names(), ["multiply", "divide"]);
    assert_eq!(set.tools[1].description.as_deref(), Some("divides x by y"));

    let set = parse_fixture("funcqa.json", Dialect::Signatures, ParseOptions::default());
    assert_eq!(set.names(), ["add", "sqrt"]);
}

#[test]
fn kamel_style_map() {
    check_err(
        "kamel.json",
        &fixture("kamel.json"),
        ParseOptions::default(),
        ErrorKind::Spec,
        &[
            "kamel.json:5:",
            "(at /P2031)",
            "\"start_year\"",
            "kamel.json:4:",
            "(at /P580)",
        ],
    );
    let set = parse_fixture("kamel.json", Dialect::Signatures, renamed());
    // P276 repeats P17's signature: one tool.
    assert_eq!(
        set.names(),
        [
            "location",
            "start_year",
            "start_year_2",
            "number_of_matches_played"
        ]
    );
    assert_eq!(
        params(&set, "start_year_2"),
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    );
}

#[test]
fn shape_errors() {
    let d = ParseOptions::default();
    check_err(
        "t.json",
        "{\"x\": 1}",
        d,
        ErrorKind::Spec,
        &["t.json:1:1 (at /)", "expected a JSON array"],
    );
    check_err(
        "t.json",
        "[{\"name\": \"a\", \"input_schema\": {}},\n {\"name\": \"b\", \"inputSchema\": {}}]",
        d,
        ErrorKind::Spec,
        &["mixes tool dialects", "#0 is anthropic, #1 is mcp"],
    );
    check_err(
        "t.json",
        "[{\"name\": \"a\"}]",
        ParseOptions {
            dialect: Dialect::Anthropic,
            ..d
        },
        ErrorKind::Spec,
        &["t.json:1:2 (at /0)", "no \"input_schema\""],
    );
    check_err(
        "q.json",
        "[{\"query\": \"hi\", \"query_id\": 3, \"api_list\": [\n  {\"tool_name\": \"T\"}]}]",
        d,
        ErrorKind::Spec,
        &["q.json:2:3 (at /0/api_list/0)", "no \"api_name\""],
    );
    check_err(
        "q.json",
        "[{\"query\": \"hi\", \"query_id\": 3}]",
        ParseOptions {
            dialect: Dialect::ToolBench,
            ..d
        },
        ErrorKind::Spec,
        &["q.json:1:2 (at /0)", "no \"api_list\""],
    );
    check_err(
        "m.jsonl",
        "{\"id\": \"multi_turn_base_0\", \"question\": [], \"involved_classes\": [\"MathAPI\"]}\n{\"id\": \"multi_turn_base_1\", \"question\": [], \"involved_classes\": [\"MathAPI\"]}\n",
        d,
        ErrorKind::Spec,
        &["m.jsonl:1:1 (at /0)", "involved_classes", "multi_turn_func_doc"],
    );
    check_err(
        "s.json",
        "{\"swagger\": \"2.0\", \"paths\": {}}",
        d,
        ErrorKind::Spec,
        &["(at /swagger)", "Swagger 2.0"],
    );
    check_err(
        "o.json",
        "{\"openapi\": \"3.0.0\", \"info\": {}, \"paths\": {\"/a\": {\"get\": {\n \"parameters\": [{\"$ref\": \"#/components/parameters/nope\"}]}}}}",
        d,
        ErrorKind::Spec,
        &["o.json:2:26 (at /paths/~1a/get/parameters/0/$ref)", "leads nowhere"],
    );
    check_err(
        "sig.txt",
        "f(a)\ng(b, b)\n",
        d,
        ErrorKind::Spec,
        &["sig.txt:2:1 (at /1)", "repeated"],
    );
    check_err(
        "sig.json",
        "[\"f(a)\", \"P17\"]",
        ParseOptions {
            dialect: Dialect::Signatures,
            ..d
        },
        ErrorKind::Spec,
        &["sig.json:1:10 (at /1)", "no parameter list"],
    );
    check_err("e.json", "[]", d, ErrorKind::Spec, &["empty"]);
    check_err(
        "e.json",
        "",
        d,
        ErrorKind::Json,
        &["e.json:1:", "invalid JSON"],
    );
}

#[test]
fn unknown_toolbench_type() {
    let text = "[{\"query_id\": 1, \"api_list\": [{\"tool_name\": \"T\", \"api_name\": \"A\",\n  \"required_parameters\": [{\"name\": \"f\", \"type\": \"FILE\", \"description\": \"\", \"default\": \"\"}],\n  \"optional_parameters\": []}]}]";
    check_err(
        "tb.json",
        text,
        ParseOptions::default(),
        ErrorKind::Spec,
        &[
            "tb.json:2:49 (at /0/api_list/0/required_parameters/0/type)",
            "unknown ToolBench parameter type \"FILE\"",
        ],
    );
}

#[test]
fn colliding_names() {
    // One list: a repeated name is an error even when identical.
    check_err(
        "t.json",
        "[{\"name\": \"a\"},\n {\"name\": \"a\"}]",
        ParseOptions::default(),
        ErrorKind::Spec,
        &[
            "t.json:2:2 (at /1)",
            "duplicate tool name \"a\"",
            "#0 and #1",
            "t.json:1:2 (at /0)",
        ],
    );
    let set = spec::parse_with(
        "t.json",
        "[{\"name\": \"a\"}, {\"name\": \"a\"}, {\"name\": \"a_2\"}]",
        &renamed(),
    )
    .unwrap();
    assert_eq!(set.names(), ["a", "a_3", "a_2"]);
    // BFCL lines: a name reused with another schema.
    let text = "{\"id\": \"simple_python_0\", \"function\": [{\"name\": \"f\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"x\": {\"type\": \"integer\"}}}}]}\n{\"id\": \"simple_python_1\", \"function\": [{\"name\": \"f\", \"parameters\": {\"type\": \"dict\", \"properties\": {\"x\": {\"type\": \"float\"}}}}]}\n";
    check_err(
        "b.jsonl",
        text,
        ParseOptions::default(),
        ErrorKind::Spec,
        &[
            "b.jsonl:2:40 (at /1/function/0)",
            "tool name \"f\" names two different tools, #1 here and #0 at b.jsonl:1:40 (at /0/function/0)",
        ],
    );
}

#[test]
fn bad_jsonl_line() {
    let text = "{\"id\": \"a\", \"function\": [{\"name\": \"f\"}]}\n{\"id\": \"b\", \"function\": [{\"name\": \"g\",}]}\n";
    check_err(
        "b.jsonl",
        text,
        ParseOptions::default(),
        ErrorKind::Json,
        &["b.jsonl:2:", "(at /1)", "invalid JSON"],
    );
}

/// Every fixture, cut at many places and read in every dialect: errors,
/// never panics.
#[test]
fn never_panics() {
    let names = [
        "openai.json",
        "anthropic.json",
        "mcp_jsonrpc.json",
        "mcp_servers.json",
        "bfcl.jsonl",
        "toolbench.json",
        "openapi.json",
        "signatures.txt",
        "signatures_pairs.json",
        "kamel.json",
        "funcqa.json",
    ];
    for name in names {
        let text = fixture(name);
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .step_by(7)
            .collect();
        for cut in cuts {
            let t = &text[..cut];
            for d in Dialect::ALL {
                for collisions in [Collisions::Error, Collisions::Rename] {
                    if let Err(e) = spec::parse_with(
                        name,
                        t,
                        &ParseOptions {
                            dialect: d,
                            collisions,
                            ..ParseOptions::default()
                        },
                    ) {
                        assert!(matches!(e.kind(), ErrorKind::Spec | ErrorKind::Json), "{e}");
                        assert!(e.to_string().starts_with(name), "{e}");
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- real data

const BFCL_WITH_FUNCTIONS: &[&str] = &[
    "BFCL_v4_simple_python.json",
    "BFCL_v4_simple_java.json",
    "BFCL_v4_simple_javascript.json",
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel.json",
    "BFCL_v4_parallel_multiple.json",
    "BFCL_v4_irrelevance.json",
];
/// Question files whose tools are named by `involved_classes`.
const BFCL_BY_CLASS: &[&str] = &[
    "BFCL_v4_multi_turn_base.json",
    "BFCL_v4_multi_turn_long_context.json",
    "BFCL_v4_multi_turn_miss_func.json",
    "BFCL_v4_multi_turn_miss_param.json",
    "BFCL_v4_memory.json",
    "BFCL_v4_web_search.json",
];
const BFCL_FUNC_DOCS: &[&str] = &[
    "gorilla_file_system.json",
    "math_api.json",
    "memory_kv.json",
    "memory_rec_sum.json",
    "memory_vector.json",
    "message_api.json",
    "posting_api.json",
    "ticket_api.json",
    "trading_bot.json",
    "travel_booking.json",
    "vehicle_control.json",
    "web_search.json",
];
const TOOLBENCH_QUERIES: &[&str] = &[
    "StableToolBench/solvable_queries/test_instruction/G1_category.json",
    "StableToolBench/solvable_queries/test_instruction/G1_instruction.json",
    "StableToolBench/solvable_queries/test_instruction/G1_tool.json",
    "StableToolBench/solvable_queries/test_instruction/G2_category.json",
    "StableToolBench/solvable_queries/test_instruction/G2_instruction.json",
    "StableToolBench/solvable_queries/test_instruction/G3_instruction.json",
    "ToolBench/data_example/instruction/G1_query.json",
    "ToolBench/data_example/instruction/G2_query.json",
    "ToolBench/data_example/instruction/G3_query.json",
    "ToolBench/data_example/instruction/inference_query_demo.json",
];

/// Reads `rel` under the data directory.
fn data(rel: &str) -> (String, String) {
    let path = data_file(rel);
    (rel.to_string(), read_text(&path))
}

#[track_caller]
fn parse_data(rel: &str, want: Dialect, opts: ParseOptions) -> ToolSet {
    let (file, text) = data(rel);
    assert_eq!(spec::detect(&file, &text).unwrap(), want, "{file}");
    spec::parse_with(&file, &text, &opts).unwrap_or_else(|e| panic!("{e}"))
}

#[track_caller]
fn data_err(rel: &str, opts: ParseOptions, needles: &[&str]) {
    let (file, text) = data(rel);
    check_err(&file, &text, opts, ErrorKind::Spec, needles);
}

/// Builds a few small real sets to show they reach the automaton (the
/// lowering's coverage grows separately: failures are printed, not fatal).
fn try_build(label: &str, set: &ToolSet) {
    let vocab = Vocab::builtin_gpt2().unwrap();
    match tooldec_compiler::build_dfa(set, &Options::default(), &vocab, &mut |_| {}) {
        Ok((_, stats, _)) => println!("  build {label}: ok ({} tools) {stats:?}", set.tools.len()),
        Err(e) => println!("  build {label}: refused: {e}"),
    }
}

/// How many of a set's tools lower on their own today (printed, not
/// asserted: the lowering's coverage grows separately).
fn lowering_count(set: &ToolSet, vocab: &Vocab) -> usize {
    set.tools
        .iter()
        .filter(|t| {
            let one = ToolSet {
                file: set.file.clone(),
                text: String::new(),
                tools: vec![(*t).clone()],
                repairs: Vec::new(),
            };
            tooldec_compiler::lower(&one, &Options::default(), vocab).is_ok()
        })
        .count()
}

/// A one-value file's text made of the `k`-th line of a JSON Lines text.
fn line_of(text: &str, k: usize) -> &str {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .nth(k)
        .unwrap()
}

#[test]
fn real_data_parses() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping");
        return;
    }
    // Every set parsed, for the summary.
    let mut sets: Vec<ToolSet> = Vec::new();

    // BFCL: whole files (collisions between lines renamed), every line on
    // its own, the function docs; the class-based files say where their
    // tools are.
    let mut bfcl_total = 0;
    for f in BFCL_WITH_FUNCTIONS {
        let rel = format!("tools/bfcl/{f}");
        let set = parse_data(&rel, Dialect::Bfcl, renamed());
        bfcl_total += set.tools.len();
        sets.push(set);
        let (_, text) = data(&rel);
        let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
        for k in 0..lines {
            let line = line_of(&text, k);
            let one = spec::parse(&format!("{rel}#{k}"), line).unwrap_or_else(|e| panic!("{e}"));
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(one.tools.len(), v["function"].as_array().unwrap().len());
        }
    }
    for f in BFCL_BY_CLASS {
        data_err(
            &format!("tools/bfcl/{f}"),
            ParseOptions::default(),
            &[":1:1 (at /0)", "involved_classes"],
        );
    }
    data_err(
        "tools/bfcl/BFCL_v4_format_sensitivity.json",
        ParseOptions::default(),
        &["expected a JSON array"],
    );
    for f in BFCL_FUNC_DOCS {
        let rel = format!("tools/bfcl/multi_turn_func_doc/{f}");
        let set = parse_data(&rel, Dialect::Bfcl, ParseOptions::default());
        bfcl_total += set.tools.len();
        sets.push(set);
    }
    // A whole file with collisions, strictly: an error naming both places.
    data_err(
        "tools/bfcl/BFCL_v4_simple_python.json",
        ParseOptions::default(),
        &["names two different tools", "(at /"],
    );
    let java = parse_data(
        "tools/bfcl/BFCL_v4_simple_java.json",
        Dialect::Bfcl,
        ParseOptions::default(),
    );
    assert_eq!(java.tools.len(), 100);
    let js = parse_data(
        "tools/bfcl/BFCL_v4_simple_javascript.json",
        Dialect::Bfcl,
        ParseOptions::default(),
    );
    assert_eq!(js.tools.len(), 50);

    // ToolBench / StableToolBench.
    let mut toolbench_total = 0;
    for f in TOOLBENCH_QUERIES {
        let rel = format!("tools/toolbench/{f}");
        let set = parse_data(&rel, Dialect::ToolBench, renamed());
        toolbench_total += set.tools.len();
        sets.push(set);
    }
    data_err(
        "tools/toolbench/ToolBench/data_example/instruction/inference_query_demo_open_domain.json",
        ParseOptions {
            dialect: Dialect::ToolBench,
            ..ParseOptions::default()
        },
        &["(at /0)", "no \"api_list\""],
    );
    // ToolBench's names, as its answer files spell them.
    let g1 = parse_data(
        "tools/toolbench/StableToolBench/solvable_queries/test_instruction/G1_instruction.json",
        Dialect::ToolBench,
        renamed(),
    );
    for n in [
        "popularsitesforquery_for_keyword_analysis",
        "get_chat_user_like_user_from_chat_for_kick_com_api_kick_api",
        "songkick_concert_for_theclique",
    ] {
        assert!(g1.names().contains(&n), "{n} missing");
    }

    // RestBench: TMDB, one tool per operation.
    let tmdb = parse_data(
        "tools/restbench/specs/tmdb_oas.json",
        Dialect::OpenApi,
        ParseOptions::default(),
    );
    assert_eq!(tmdb.tools.len(), 54);
    assert!(tmdb.names().contains(&"GET_movie-movie_id"));
    sets.push(tmdb.clone());

    // ToolkenGPT.
    let funcqa = parse_data(
        "tools/toolkengpt/data/funcqa/func_dict.json",
        Dialect::Signatures,
        ParseOptions::default(),
    );
    assert_eq!(funcqa.tools.len(), 13);
    sets.push(funcqa.clone());
    data_err(
        "tools/toolkengpt/data/kamel/api_desc.json",
        ParseOptions::default(),
        &["names two different tools"],
    );
    for f in ["api_desc.json", "name_func_dict.json"] {
        let rel = format!("tools/toolkengpt/data/kamel/{f}");
        let set = parse_data(&rel, Dialect::Signatures, renamed());
        sets.push(set);
    }
    data_err(
        "tools/toolkengpt/data/kamel/func_dict.json",
        ParseOptions {
            dialect: Dialect::Signatures,
            ..ParseOptions::default()
        },
        &["no parameter list"],
    );

    // LiveMCPBench: 70 servers, 527 tools; identical tools across servers
    // kept once, different ones with one name renamed.
    let rel = "tools/mcp-livemcpbench/tools/LiveMCPTool/tools.json";
    data_err(
        rel,
        ParseOptions::default(),
        &["names two different tools", "/tools/"],
    );
    let mcp = parse_data(rel, Dialect::Mcp, renamed());
    sets.push(mcp.clone());

    println!("tools parsed per file (and how many lower on their own today):");
    let vocab = Vocab::builtin_gpt2().unwrap();
    for set in &sets {
        let lowered = lowering_count(set, &vocab);
        println!("  {:5}  {lowered:5} lower  {}", set.tools.len(), set.file);
    }
    println!("  BFCL total {bfcl_total}, ToolBench total {toolbench_total}");

    // A few small sets through the automaton construction.
    try_build("funcqa", &funcqa);
    let (_, text) = data("tools/bfcl/BFCL_v4_simple_python.json");
    try_build(
        "bfcl simple_python_0",
        &spec::parse("line", line_of(&text, 0)).unwrap(),
    );
    let (_, text) = data("tools/bfcl/BFCL_v4_simple_java.json");
    try_build(
        "bfcl simple_java_0",
        &spec::parse("line", line_of(&text, 0)).unwrap(),
    );
    try_build(
        "toolbench G1_query",
        &parse_data(
            "tools/toolbench/ToolBench/data_example/instruction/G1_query.json",
            Dialect::ToolBench,
            renamed(),
        ),
    );
    let small_tmdb = ToolSet {
        tools: tmdb.tools[..5].to_vec(),
        ..tmdb.clone()
    };
    try_build("tmdb first 5 operations", &small_tmdb);
    let small_mcp = ToolSet {
        tools: mcp.tools[..3].to_vec(),
        ..mcp.clone()
    };
    try_build("livemcpbench first 3 tools", &small_mcp);
}

/// BFCL's ground truth (`possible_answer/`) fits the converted schemas:
/// every acceptable value of every argument is valid JSON for its
/// parameter's schema (`jsonschema`). Java and JavaScript, where the type
/// mapping decides it (values or expressions), fit entirely; in the Python
/// files the values that do not fit contradict BFCL's own schemas (enum
/// spellings such as "bronze" for "Bronze", `null` for a number "default
/// None", strings for an integer list, undeclared parameters), at most
/// these many per file.
#[test]
fn bfcl_ground_truth_fits_converted_schemas() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping");
        return;
    }
    let known_misfits: &[(&str, usize)] = &[
        ("BFCL_v4_simple_python.json", 4),
        ("BFCL_v4_simple_java.json", 0),
        ("BFCL_v4_simple_javascript.json", 0),
        ("BFCL_v4_multiple.json", 1),
        ("BFCL_v4_parallel.json", 2),
        ("BFCL_v4_parallel_multiple.json", 11),
    ];
    for &(f, most) in known_misfits {
        let (_, questions) = data(&format!("tools/bfcl/{f}"));
        let (_, answers) = data(&format!("tools/bfcl/possible_answer/{f}"));
        let questions: Vec<&str> = questions.lines().filter(|l| !l.trim().is_empty()).collect();
        let answers: Vec<&str> = answers.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(questions.len(), answers.len(), "{f}");
        let (mut checked, mut bad) = (0, Vec::new());
        for (k, (q, a)) in questions.iter().zip(&answers).enumerate() {
            let set = spec::parse(&format!("{f}#{k}"), q).unwrap_or_else(|e| panic!("{e}"));
            let a: Value = serde_json::from_str(a).unwrap();
            for call in a["ground_truth"].as_array().unwrap() {
                for (fname, args) in call.as_object().unwrap() {
                    let tool = set.tools.iter().find(|t| &t.name == fname).unwrap();
                    for (param, alts) in args.as_object().unwrap() {
                        let schema = &tool.parameters["properties"][param];
                        if schema.is_null() {
                            bad.push(format!("#{k} {fname}.{param}: not a declared parameter"));
                            continue;
                        }
                        let validator = jsonschema::validator_for(schema)
                            .unwrap_or_else(|e| panic!("{f}#{k} {fname}.{param}: {schema}: {e}"));
                        for alt in alts.as_array().unwrap() {
                            if alt == "" {
                                continue; // "may be left out"
                            }
                            let v = tooldec_testkit::render::resolve_ground_truth(alt);
                            checked += 1;
                            if !validator.is_valid(&v) {
                                bad.push(format!("#{k} {fname}.{param} = {v} vs {schema}"));
                            }
                        }
                    }
                }
            }
        }
        println!(
            "{f}: {checked} ground-truth values checked, {} do not fit",
            bad.len()
        );
        for b in &bad {
            println!("    {b}");
        }
        assert!(checked > 0, "{f}: no ground truth");
        assert!(
            bad.len() <= most,
            "{f}: {} values do not fit (at most {most} expected):\n{}",
            bad.len(),
            bad.join("\n")
        );
    }
}
