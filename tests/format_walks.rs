//! Real-data tests of the shipped call formats with real tokenizers: the
//! first six (react, hermes, llama3, mistral, json, toolken) and the model
//! formats (qwen3, qwen3-coder, glm-4.5, glm-4.7, deepseek-*, kimi-k2,
//! gpt-oss, llama-pythonic, mistral-v11, minimax-m2, granite, gemma4),
//! each on the tokenizers [`tokenizers_of`] names.
//!
//! - `walks_*` (one per tokenizer): random masked walks from every entry of
//!   every format decode (with the real tokenizer) to outputs that the
//!   format's parser (`tooldec_testkit::parsers`: hand-written for the
//!   first six, written from the upstream vLLM/SGLang parsers for the model
//!   formats, `parsers::models`) accepts, naming tools of the list, with
//!   arguments that satisfy the tool's JSON Schema (the `jsonschema`
//!   crate). A third of the walks start with a token budget (the entry's
//!   shortest output plus a random slack, `matcher_at_with_budget`): they
//!   must end, complete, within it. Tool lists: BFCL v4 `multiple` (every
//!   [`BFCL_STEP`]th line, every [`BFCL_STEP_MODEL`]th for the model
//!   formats) for the JSON-argument formats; ToolkenGPT's FuncQA (13 math
//!   tools) and KAMEL (234 relations) for toolken. Outputs that an
//!   upstream parser is known to misread are counted apart, each with its
//!   reason ([`KNOWN_DISAGREEMENTS`]), never silently.
//! - `valid_calls_*` (one per tokenizer): valid calls rendered in each
//!   format (BFCL ground truth; FuncQA's calculations and prompts; KAMEL
//!   questions with calls) are accepted token by token from the right
//!   entry, end accepting, and allow EOS. The parsers are checked on the
//!   same texts (they must give back the rendered calls).
//! - `toolkengpt_conversion`: the FuncQA arities read off the data, and the
//!   KAMEL relations (names, duplicates).
//! - `parsers_on_hand_made_texts` (no data needed): the parsers accept and
//!   refuse what the format descriptions say.
//!
//! All but the last read `TOOLDEC_DATA` (see `tooldec_testkit::data_dir`);
//! without it they print a skip line and pass. `TOOLDEC_WALKS` sets the
//! number of walks per (format, tokenizer, entry, tool family); default
//! [`DEFAULT_WALKS`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, vocab::Vocab, ErrorKind, Options};
use tooldec_runtime::{Artifact, Grammar};
use tooldec_testkit::failures::{acceptable_refusal, report_failures, Failure};
use tooldec_testkit::loaded::{cache_cell, tokenizer, Cache, Loaded};
use tooldec_testkit::parsers::{self, Calls};
use tooldec_testkit::toolkengpt;
use tooldec_testkit::walk::{seed, SplitMix64, Walker};
use tooldec_testkit::{
    bfcl, data_dir, data_file, parse_json, read_text, render, schema, walks_from_env,
};

const BFCL_MULTIPLE: &str = "tools/bfcl/BFCL_v4_multiple.json";
const BFCL_MULTIPLE_ANSWERS: &str = "tools/bfcl/possible_answer/BFCL_v4_multiple.json";
/// Every how many BFCL lines are sampled (for walks and valid calls).
const BFCL_STEP: usize = 10;
/// The same for the model formats (more formats, more entries: fewer sets).
const BFCL_STEP_MODEL: usize = 40;

/// The tokenizers each format is walked and checked with: the model's own
/// where the data has it, else a stand-in (said here), and two or more
/// others. The first six formats run on every tokenizer of the first five
/// tests, as before.
fn tokenizers_of(format: &str) -> &'static [&'static str] {
    match format {
        "react" | "hermes" | "llama3" | "mistral" | "json" | "toolken" => &[
            "gpt2",
            "llama-3.2",
            "qwen2.5",
            "mistral-v0.1",
            "smollm2-135m",
        ],
        // Qwen3 models use the Qwen2.5 vocabulary (<tool_call> special).
        "qwen3" | "qwen3-coder" => &["qwen2.5", "llama-3.2", "gpt2"],
        // GLM-4.5/4.7 and MiniMax-M2 (byte-level BPE, tags as added
        // tokens): stand-in Qwen2.5, whose <tool_call> is special too.
        "glm-4.5" | "glm-4.7" | "minimax-m2" => &["qwen2.5", "llama-3.2", "gpt2"],
        // DeepSeek V3 (128k byte-level BPE): stand-in Llama 3.2.
        "deepseek-r1" | "deepseek-v3.1" | "deepseek-v3.2" => &["llama-3.2", "qwen2.5", "gpt2"],
        // Kimi K2 (tiktoken-style BPE): stand-in gpt-oss's o200k.
        "kimi-k2" => &["gpt-oss", "qwen2.5", "llama-3.2"],
        "gpt-oss" => &["gpt-oss", "qwen2.5", "llama-3.2"],
        "llama-pythonic" => &["llama-3.2", "qwen2.5", "gpt2"],
        "mistral-v11" => &["mistral-v0.1", "llama-3.2", "smollm2-135m"],
        // Granite 3.x (49k StarCoder-style BPE): stand-in SmolLM2's.
        "granite" => &["smollm2-135m", "qwen2.5", "llama-3.2"],
        // Gemma 4: the data has Gemma 3's tokenizer (no <|tool_call>).
        "gemma4" => &["gemma-3", "llama-3.2", "qwen2.5"],
        _ => &["qwen2.5", "llama-3.2", "gpt2"],
    }
}

/// The text an `auto` walk is forced to begin with, in half of its walks
/// that have no budget, so that calls after text get walked too (left
/// alone, a walk biased toward finishing ends after the text): some text
/// where the entry allows it, then the start of a call; for `think-auto`
/// a reasoning block first.
fn auto_prefix(format: &str, entry: &str) -> Option<String> {
    let (text, opener) = auto_opening(format)?;
    match entry {
        "auto" | "auto-one" => Some(format!("{text}{opener}")),
        "think-auto" | "think-auto-one" => {
            Some(format!("Let me think.{}{text}{opener}", think_end(format)))
        }
        _ => None,
    }
}

/// For [`auto_prefix`]: the text an `auto` entry allows before its calls
/// (empty where it allows none: the output is either text or calls), and
/// the start of a call.
fn auto_opening(format: &str) -> Option<(&'static str, &'static str)> {
    Some(match format {
        "qwen3" | "hermes" | "qwen3-coder" | "glm-4.5" | "glm-4.7" => ("Sure.\n", "<tool_call>"),
        "deepseek-r1" | "deepseek-v3.1" => ("Sure.\n", "<｜tool▁calls▁begin｜>"),
        "deepseek-v3.2" => ("Sure.\n", "<｜DSML｜function_calls>"),
        "kimi-k2" => ("Sure.\n", "<|tool_calls_section_begin|>"),
        "minimax-m2" => ("Sure.\n", "<minimax:tool_call>"),
        "gemma4" => ("Sure.\n", "<|tool_call>"),
        "mistral-v11" | "mistral" => ("Sure.\n", "[TOOL_CALLS]"),
        "gpt-oss" => ("", "<|channel|>commentary to=functions."),
        // `{"name": `: <|python_tag|> spelled as text starts plain text in
        // vocabularies without the special token (see KNOWN_DISAGREEMENTS).
        "llama3" => ("", "{\"name\": "),
        "llama-pythonic" => ("", "["),
        // `<|tool_call|>`: the stand-ins' `<tool_call>` may be a special
        // token, which Granite's text marker is not.
        "granite" => ("", "<|tool_call|>["),
        "json" => ("", "{\"name\": "),
        "react" => ("", "Thought: Let me see.\nAction: "),
        _ => return None,
    })
}

/// Walks of the formats in `TOOLDEC_FORMATS` (comma-separated) only, when
/// it is set: for working on one format.
fn format_selected(format: &str) -> bool {
    match std::env::var("TOOLDEC_FORMATS") {
        Ok(s) if !s.trim().is_empty() => s.split(',').any(|f| f.trim() == format),
        _ => true,
    }
}

/// The reason of the known disagreement a parser's message `e` shows for
/// (format, entry), if any (see [`KNOWN_DISAGREEMENTS`]).
fn known_disagreement(format: &str, entry: &str, e: &str) -> Option<&'static str> {
    KNOWN_DISAGREEMENTS
        .iter()
        .find(|(f, en, piece, _)| *f == format && (*en == "*" || *en == entry) && e.contains(piece))
        .map(|k| k.3)
}

/// Whether `format` is one of the first six (its old entries keep their
/// hand-written parsers and cases).
fn is_old_format(format: &str) -> bool {
    matches!(
        format,
        "react" | "hermes" | "llama3" | "mistral" | "json" | "toolken"
    )
}

/// Outputs the grammar allows that an upstream parser misreads: (format,
/// entry or `*`, a piece of the parser's message, the reason). A walk
/// whose parse fails with that message is counted as a known disagreement
/// (printed with its first example), not a failure; every other failure
/// fails the test. Each line is a finding to fix in the grammar (or
/// upstream).
const KNOWN_DISAGREEMENTS: &[(&str, &str, &str, &str)] = &[
    (
        "kimi-k2",
        "*",
        "parser reads the tool name of id",
        "a tool name with a dot: vLLM's kimi_k2 parser keeps only what follows the last dot of functions.NAME:IDX",
    ),
];
const FUNCQA_DIR: &str = "tools/toolkengpt/data/funcqa";
const KAMEL_API_DESC: &str = "tools/toolkengpt/data/kamel/api_desc.json";
const KAMEL_TEST: &str = "tools/toolkengpt/data/kamel/test_first_234.json";
/// Walks per (format, tokenizer, entry) and tool family (BFCL for the JSON
/// formats; FuncQA and KAMEL each for toolken), spread over the sets.
const DEFAULT_WALKS: usize = 30;

/// The texts that half of the toolken `start` walks begin with (forced, in
/// turn), so that calls inside text are walked too: a trigger alone, or a
/// call of the family's tools and a second trigger.
fn toolken_prefixes(family: &str) -> [&'static str; 2] {
    match family {
        "funcqa" => [
            "The result is <T>",
            "147+354=<T>add(147, 354)=501, then <T>",
        ],
        "kamel" => [
            "The result is <T>",
            "Q: Where is Paris?\nA: <T>location(\"Paris\")=France. Also <T>",
        ],
        _ => unreachable!("no toolken family {family}"),
    }
}

/// A compiled artifact, or the compiler's refusal.
type Outcome = Result<Arc<Vec<u8>>, (ErrorKind, String)>;

/// Compiles `set` in `format` for `tok`, once per binary (the walk and
/// valid-call tests of a tokenizer share the artifacts). Returns the
/// outcome and the time spent compiling here (zero when cached).
fn compile_cached(tok: &str, vocab: &Vocab, format: &str, set: &ToolSet) -> (Outcome, Duration) {
    static CACHE: Cache<Outcome> = OnceLock::new();
    let cell = cache_cell(&CACHE, format!("{format}\0{tok}\0{}", set.id));
    let t = Instant::now();
    let mut spent = Duration::ZERO;
    let out = cell
        .get_or_init(|| {
            let parsed = spec::parse(&set.id, &set.text).unwrap_or_else(|e| {
                panic!("{}: the converted tool list does not parse: {e}", set.id)
            });
            let opts = Options {
                format: CallFormat::load(format).unwrap_or_else(|e| panic!("{format}: {e}")),
                zstd_level: None,
                ..Options::default()
            };
            let out = compile(&parsed, vocab, &opts, &mut |_| {})
                .map(|c| Arc::new(c.artifact))
                .map_err(|e| (e.kind(), e.to_string()));
            spent = t.elapsed();
            out
        })
        .clone();
    (out, spent)
}

/// A tool list to compile.
struct ToolSet {
    id: String,
    /// OpenAI form, bare or wrapped in `{"type": "function", ...}`.
    tools: Vec<Value>,
    text: String,
}

impl ToolSet {
    fn new(id: String, tools: Vec<Value>) -> Self {
        let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
        ToolSet { id, tools, text }
    }

    /// The `parameters` schema of tool `name`.
    fn parameters(&self, name: &str) -> Option<Value> {
        self.tools
            .iter()
            .map(|t| t.get("function").unwrap_or(t))
            .find(|f| f["name"] == name)
            .map(|f| {
                f.get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}}))
            })
    }
}

/// The BFCL lines a format is walked and checked with.
fn bfcl_for(format: &str) -> Vec<&'static (ToolSet, Vec<Value>)> {
    if is_old_format(format) {
        bfcl_sampled().iter().collect()
    } else {
        bfcl_sampled()
            .iter()
            .step_by(BFCL_STEP_MODEL / BFCL_STEP)
            .collect()
    }
}

/// The BFCL `multiple` lines sampled, with their ground truth.
fn bfcl_sampled() -> &'static [(ToolSet, Vec<Value>)] {
    static SETS: OnceLock<Vec<(ToolSet, Vec<Value>)>> = OnceLock::new();
    SETS.get_or_init(|| {
        let sets = bfcl::load_sets(&data_file(BFCL_MULTIPLE));
        let answers = bfcl::load_answers(&data_file(BFCL_MULTIPLE_ANSWERS));
        assert_eq!(
            sets.len(),
            answers.len(),
            "{BFCL_MULTIPLE} and its answers differ in length"
        );
        assert!(!sets.is_empty(), "{BFCL_MULTIPLE} has no lines");
        sets.into_iter()
            .zip(answers)
            .step_by(BFCL_STEP)
            .map(|(s, (aid, gt))| {
                assert_eq!(s.id, aid, "question and answer files are out of step");
                (
                    ToolSet {
                        id: s.id,
                        tools: s.tools,
                        text: s.text,
                    },
                    gt,
                )
            })
            .collect()
    })
}

/// FuncQA converted (once).
fn funcqa() -> &'static toolkengpt::FuncQa {
    static F: OnceLock<toolkengpt::FuncQa> = OnceLock::new();
    F.get_or_init(|| toolkengpt::funcqa(&data_file(FUNCQA_DIR)))
}

/// KAMEL converted (once).
fn kamel() -> &'static toolkengpt::Kamel {
    static K: OnceLock<toolkengpt::Kamel> = OnceLock::new();
    K.get_or_init(|| toolkengpt::kamel(&data_file(KAMEL_API_DESC)))
}

/// The FuncQA tool names, in `func_dict.json` order.
fn funcqa_names() -> Vec<String> {
    funcqa()
        .tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// The tool lists a format is walked and checked with, as families:
/// (family, sets).
fn families(format: &str) -> Vec<(&'static str, Vec<&'static ToolSet>)> {
    static TOOLKEN: OnceLock<[ToolSet; 2]> = OnceLock::new();
    if format == "toolken" {
        let [f, k] = TOOLKEN.get_or_init(|| {
            [
                ToolSet::new("toolkengpt:funcqa".into(), funcqa().tools.clone()),
                ToolSet::new("toolkengpt:kamel".into(), kamel().tools.clone()),
            ]
        });
        vec![("funcqa", vec![f]), ("kamel", vec![k])]
    } else {
        vec![(
            "bfcl",
            bfcl_for(format).into_iter().map(|(s, _)| s).collect(),
        )]
    }
}

/// Skips (with a message) when TOOLDEC_DATA is unset; otherwise loads the
/// tokenizer.
fn start(label: &str, tok: &str) -> Option<(Arc<Loaded>, Instant)> {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping {label}");
        return None;
    }
    let t = Instant::now();
    Some((tokenizer(tok), t))
}

/// Tool sets with their artifact bytes.
type Compiled<'s> = Vec<(&'s ToolSet, Arc<Vec<u8>>)>;

/// The compiled sets of a family (refusals listed; more than a tenth, or
/// at least 3, refused fails the test).
fn compile_family<'s>(
    tok: &str,
    vocab: &Vocab,
    format: &str,
    sets: &[&'s ToolSet],
    spent: &mut Duration,
) -> (Compiled<'s>, Vec<String>) {
    let mut compiled = Vec::new();
    let mut refused = Vec::new();
    for &set in sets {
        let (out, t) = compile_cached(tok, vocab, format, set);
        *spent += t;
        match out {
            Ok(a) => compiled.push((set, a)),
            Err((kind, e)) => {
                assert!(
                    acceptable_refusal(kind),
                    "{format}/{tok}/{}: unexpected compile error ({kind:?}): {e}",
                    set.id
                );
                refused.push(format!("{} ({kind:?}): {e}", set.id));
            }
        }
    }
    let max_refused = (sets.len() / 10).max(2);
    assert!(
        refused.len() <= max_refused,
        "{format}/{tok}: {} of {} sets refused (more than {max_refused}):\n{}",
        refused.len(),
        sets.len(),
        refused.join("\n")
    );
    assert!(!compiled.is_empty(), "{format}/{tok}: nothing compiled");
    (compiled, refused)
}

/// Checks parsed calls against the tool list: each name is a tool, each
/// argument value is JSON satisfying the tool's schema (toolken's
/// positional values mapped onto the parameters first).
fn check_calls(
    format: &str,
    entry: &str,
    set: &ToolSet,
    validators: &schema::ToolValidators,
    calls: &Calls,
) -> Result<(), String> {
    let may_be_text = entry.ends_with("auto") || entry.ends_with("auto-one");
    if calls.is_empty() && format != "toolken" && !may_be_text {
        return Err("no call".into());
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        let Some(params) = set.parameters(name) else {
            return Err(format!("call #{}: unknown tool {name:?}", i + 1));
        };
        let object = if format == "toolken" {
            let Value::Array(values) = args else {
                return Err(format!("call #{}: positional values expected", i + 1));
            };
            parsers::positional_to_object(&params, values)
                .map_err(|e| format!("call #{}: {e}", i + 1))?
        } else {
            args.clone()
        };
        if !object.is_object() {
            return Err(format!("call #{}: the arguments are not an object", i + 1));
        }
        validators
            .check(name, &object)
            .map_err(|e| format!("call #{}: {e}", i + 1))?;
    }
    Ok(())
}

/// The text the artifact says `tokens` spell: token bytes, special tokens
/// by name; one leading space dropped for a SentencePiece vocabulary (its
/// decoder drops it). `None` if not UTF-8.
fn expected_text(
    g: &Grammar<'_>,
    hf: &tokenizers::Tokenizer,
    leading_space: bool,
    tokens: &[u32],
) -> Option<String> {
    let mut bytes = Vec::new();
    for &t in tokens {
        let b = g.token_bytes(t).unwrap_or_default();
        if b.first() == Some(&0xFF) {
            bytes.extend_from_slice(hf.id_to_token(t)?.as_bytes());
        } else {
            bytes.extend_from_slice(b);
        }
    }
    let s = String::from_utf8(bytes).ok()?;
    Some(if leading_space {
        s.strip_prefix(' ').map(str::to_string).unwrap_or(s)
    } else {
        s
    })
}

/// What the walks of one (format, entry, family) did.
#[derive(Default)]
struct WalkStats {
    walks: usize,
    prefixed: usize,
    tokens: usize,
    calls: usize,
    multi: usize,
    /// Walks that wrote a special token (e.g. Qwen2.5's `<tool_call>`).
    specials: usize,
    tools: BTreeSet<String>,
    /// Walks started with a token budget.
    budgeted: usize,
    /// Walks whose output an upstream parser is known to misread.
    known: usize,
    failures: usize,
}

fn walks(tok: &str) {
    let label = format!("random walks through every shipped format and entry with {tok}");
    let Some((loaded, t_all)) = start(&label, tok) else {
        return;
    };
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let n_walks = walks_from_env(DEFAULT_WALKS);
    let mut failures = Vec::new();
    let mut compile_time = Duration::ZERO;
    let mut walk_time = Duration::ZERO;
    let mut samples = Vec::new();
    let mut known: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for format in CallFormat::shipped_names() {
        if !tokenizers_of(format).contains(&tok) || !format_selected(format) {
            continue;
        }
        let declared = CallFormat::load(format).unwrap().entries();
        for (family, sets) in families(format) {
            let (compiled, refused) = compile_family(tok, vocab, format, &sets, &mut compile_time);
            let t_walk = Instant::now();
            let per_set = n_walks.div_ceil(compiled.len());
            let mut stats: BTreeMap<String, WalkStats> = BTreeMap::new();
            let prefixes: Vec<(&str, Vec<u32>)> = if format == "toolken" {
                toolken_prefixes(family)
                    .into_iter()
                    .map(|p| {
                        let ids = hf
                            .encode(p, false)
                            .unwrap_or_else(|e| panic!("{tok}: cannot encode {p:?}: {e}"));
                        (p, ids.get_ids().to_vec())
                    })
                    .collect()
            } else {
                Vec::new()
            };
            let longest = prefixes.iter().map(|p| p.1.len()).max().unwrap_or(0);
            for (si, (set, bytes)) in compiled.iter().enumerate() {
                let art = Artifact::from_bytes(bytes).unwrap_or_else(|e| {
                    panic!("{format}/{tok}/{}: the artifact does not load: {e}", set.id)
                });
                let g = art.grammar();
                let entries: Vec<(String, u32)> =
                    g.entries().map(|(n, s)| (n.to_string(), s)).collect();
                assert_eq!(
                    entries.iter().map(|e| e.0.clone()).collect::<Vec<_>>(),
                    declared,
                    "{format}/{tok}/{}: the artifact's entries",
                    set.id
                );
                let validators = schema::ToolValidators::new(&set.tools);
                let mut walker = Walker::new(&g, g.token_count());
                let max_dist = walker
                    .distances()
                    .iter()
                    .copied()
                    .filter(|&d| d != u32::MAX)
                    .max()
                    .unwrap_or(0) as usize;
                let max_steps = walker.greedy_after + max_dist + longest + 64;
                for (entry, state) in &entries {
                    assert_ne!(
                        walker.distances()[*state as usize],
                        u32::MAX,
                        "{format}/{tok}/{}: entry {entry} cannot reach acceptance",
                        set.id
                    );
                    let parse = parsers::parser_with_tools(format, entry)
                        .unwrap_or_else(|| panic!("no parser for {format} entry {entry}"));
                    let st = stats.entry(entry.clone()).or_default();
                    let forced_auto: Option<(String, Vec<u32>)> =
                        auto_prefix(format, entry).map(|p| {
                            let ids = hf
                                .encode(p.as_str(), false)
                                .unwrap_or_else(|e| panic!("{tok}: cannot encode {p:?}: {e}"));
                            (p, ids.get_ids().to_vec())
                        });
                    // The entry's shortest output in tokens: the smallest budget.
                    let shortest = match g.matcher_at_with_budget(entry, 0) {
                        Ok(_) => 0,
                        Err(e) => e.budget_shortfall().map_or(0, |(need, _)| need),
                    };
                    for wi in 0..per_set {
                        let s = seed(
                            &format!("{format}/{tok}/{entry}/{family}"),
                            si as u64,
                            wi as u64,
                        );
                        let mut rng = SplitMix64::new(s);
                        let (forced_text, forced): (&str, &[u32]) =
                            if format == "toolken" && entry == "start" && wi % 2 == 1 {
                                let p = &prefixes[wi / 2 % prefixes.len()];
                                (p.0, &p.1)
                            } else if let (Some(p), 1) = (&forced_auto, (si * per_set + wi) % 3) {
                                (p.0.as_str(), &p.1)
                            } else {
                                ("", &[])
                            };
                        // A third of the other walks run under a budget:
                        // the shortest output plus a random slack.
                        let budget = (forced.is_empty() && (si * per_set + wi) % 3 == 2)
                            .then(|| shortest + rng.below(shortest as u64 + 8) as u32);
                        let mut m = match budget {
                            None => g.matcher_at(entry).expect("a listed entry"),
                            Some(n) => g.matcher_at_with_budget(entry, n).unwrap_or_else(|e| {
                                panic!("{format}/{tok}/{}: budget {n} at {entry}: {e}", set.id)
                            }),
                        };
                        let what = format!(
                            "{format}/{tok} entry {entry}, set {} walk {wi} (seed {s:#x}{}{})",
                            set.id,
                            if forced.is_empty() {
                                String::new()
                            } else {
                                format!(", forced prefix {forced_text:?}")
                            },
                            budget.map_or(String::new(), |n| format!(", budget {n}"))
                        );
                        st.walks += 1;
                        st.budgeted += budget.is_some() as usize;
                        st.prefixed += !forced.is_empty() as usize;
                        let mut fail = |detail: String| {
                            failures.push(Failure {
                                what: what.clone(),
                                detail,
                            })
                        };
                        if let Some(i) = forced.iter().position(|&t| !m.accept_token(t)) {
                            fail(format!("the forced prefix {forced_text:?} ({forced:?}) is refused at token #{i}"));
                            st.failures += 1;
                            continue;
                        }
                        let tokens = match walker.walk_from(&mut rng, max_steps, m) {
                            Ok(t) => t,
                            Err(e) => {
                                fail(format!(
                                    "walk error: {}\ntokens so far: {:?}",
                                    e.message, e.tokens
                                ));
                                st.failures += 1;
                                continue;
                            }
                        };
                        let Some((&last, rest)) = tokens.split_last() else {
                            fail("empty walk".into());
                            st.failures += 1;
                            continue;
                        };
                        if !g.is_eos(last) || rest.iter().any(|&t| g.is_eos(t)) {
                            fail(format!("EOS not exactly at the end: {tokens:?}"));
                            st.failures += 1;
                            continue;
                        }
                        if let Some(n) = budget {
                            if rest.len() > n as usize {
                                fail(format!(
                                    "{} tokens before EOS under a budget of {n}: {tokens:?}",
                                    rest.len()
                                ));
                                st.failures += 1;
                                continue;
                            }
                        }
                        let body: Vec<u32> = forced.iter().chain(rest).copied().collect();
                        st.specials += body
                            .iter()
                            .any(|&t| g.token_bytes(t).and_then(|b| b.first()) == Some(&0xFF))
                            as usize;
                        st.tokens += body.len();
                        let decoded = match hf.decode(&body, false) {
                            Ok(d) => d,
                            Err(e) => {
                                fail(format!(
                                    "the tokenizer cannot decode: {e}\ntokens: {body:?}"
                                ));
                                st.failures += 1;
                                continue;
                            }
                        };
                        let expected = expected_text(&g, hf, vocab.leading_space, &body);
                        if expected.as_deref() != Some(decoded.as_str()) {
                            fail(format!(
                                "decoded text differs from the token bytes\ndecoded:  {decoded:?}\nexpected: {expected:?}\ntokens: {body:?}"
                            ));
                            st.failures += 1;
                            continue;
                        }
                        match parse.parse(&decoded, &set.tools).and_then(|calls| {
                            check_calls(format, entry, set, &validators, &calls)?;
                            Ok(calls)
                        }) {
                            Ok(calls) => {
                                st.calls += calls.len();
                                st.multi += (calls.len() > 1) as usize;
                                for (name, _) in &calls {
                                    st.tools.insert(format!("{}/{name}", set.id));
                                }
                                if wi == 0 && si == 0 && samples.len() < 80 {
                                    samples.push(format!("{format}/{entry}/{family}: {decoded:?}"));
                                }
                            }
                            Err(e) => {
                                if let Some(reason) = known_disagreement(format, entry, &e) {
                                    let k = known
                                        .entry(format!("{format}/{entry} ({reason})"))
                                        .or_insert_with(|| {
                                            (0, format!("{e}\n      decoded: {decoded:?}"))
                                        });
                                    k.0 += 1;
                                    st.known += 1;
                                    continue;
                                }
                                fail(format!("{e}\ndecoded: {decoded:?}\ntokens: {body:?}"));
                                st.failures += 1;
                            }
                        }
                    }
                }
            }
            walk_time += t_walk.elapsed();
            for (entry, st) in &stats {
                println!(
                    "[{tok}] walks {format}/{entry} on {family}: {} sets ({} refused), {} walks ({} under a budget){}, mean {:.1} tokens, \
                     {} calls parsed ({} walks with several), {} distinct (set, tool) called, {} walks wrote a special token; {} known disagreements, {} failures",
                    compiled.len(),
                    refused.len(),
                    st.walks,
                    st.budgeted,
                    if st.prefixed > 0 && format == "toolken" {
                        format!(" ({} after a forced prefix {:?})", st.prefixed, toolken_prefixes(family))
                    } else if st.prefixed > 0 {
                        format!(" ({} after the forced prefix {:?})", st.prefixed, auto_prefix(format, entry))
                    } else {
                        String::new()
                    },
                    st.tokens as f64 / st.walks.max(1) as f64,
                    st.calls,
                    st.multi,
                    st.tools.len(),
                    st.specials,
                    st.known,
                    st.failures
                );
            }
            for r in &refused {
                println!("[{tok}]   {format}: refused {r}");
            }
        }
    }
    for s in &samples {
        println!("[{tok}]   sample {s}");
    }
    if std::env::var_os("TOOLDEC_SHOW_FAILURES").is_some() {
        for f in &failures {
            println!("[{tok}] FAIL {}: {}", f.what, f.detail.replace('\n', " | "));
        }
    }
    for (k, (n, example)) in &known {
        println!("[{tok}] known disagreement {k}: {n} walks; first:\n      {example}");
    }
    println!(
        "[{tok}] walks: {} failures; compile {compile_time:.2?} (not counting cached), walks {walk_time:.2?}, total {:.2?}",
        failures.len(),
        t_all.elapsed()
    );
    report_failures(&label, &failures);
}

/// Feeds `text`'s real tokenization through a matcher at `entry` (see
/// `tooldec_testkit::check_text`). Returns the number of tokens and whether
/// one of them is a special token of the grammar (e.g. Qwen2.5's
/// `<tool_call>`).
fn check_text(
    g: &Grammar<'_>,
    hf: &tokenizers::Tokenizer,
    words: &mut [u32],
    entry: &str,
    text: &str,
) -> Result<(usize, bool), String> {
    let m = g
        .matcher_at(entry)
        .ok_or_else(|| format!("no entry {entry:?}"))?;
    let ids = tooldec_testkit::check_text(g, m, hf, words, text)?;
    let special = ids
        .iter()
        .any(|&t| g.token_bytes(t).and_then(|b| b.first()) == Some(&0xFF));
    Ok((ids.len(), special))
}

/// A valid text for an entry, with the calls it holds.
struct Case {
    entry: String,
    what: String,
    text: String,
    calls: Calls,
}

/// The texts of one call (and of it twice, where an entry takes several)
/// in a JSON format; `args` is the arguments' text (compact or spaced).
fn json_format_cases(
    format: &str,
    what: &str,
    name: &str,
    args: &Value,
    args_text: &str,
) -> Vec<Case> {
    let one: Calls = vec![(name.to_string(), args.clone())];
    let two: Calls = vec![one[0].clone(), one[0].clone()];
    let nj = serde_json::to_string(name).unwrap();
    let case = |entry: &str, form: &str, text: String, calls: &Calls| Case {
        entry: entry.to_string(),
        what: format!("{what} [{entry}, {form}]"),
        text,
        calls: calls.clone(),
    };
    match format {
        "react" => {
            let c = format!("Action: {name}\nAction Input: {args_text}");
            let t = "Thought: I will call the tool.\n";
            vec![
                case("start", "one", format!("{t}{c}"), &one),
                case("parallel", "one", format!("{t}{c}"), &one),
                case("parallel", "two", format!("{t}{c}\n{c}"), &two),
            ]
        }
        "hermes" => {
            let c = format!(
                "<tool_call>\n{{\"name\": {nj}, \"arguments\": {args_text}}}\n</tool_call>"
            );
            vec![
                case("call", "one", c.clone(), &one),
                case("calls", "one", c.clone(), &one),
                case("calls", "two", format!("{c}\n{c}"), &two),
                case("start", "no text", c.clone(), &one),
                case(
                    "start",
                    "text, one",
                    format!("Let me look that up.\n{c}"),
                    &one,
                ),
                case(
                    "start",
                    "text, two",
                    format!("I'll call it twice: {c}\n{c}"),
                    &two,
                ),
            ]
        }
        "llama3" => vec![case(
            "start",
            "one",
            format!("{{\"name\": {nj}, \"parameters\": {args_text}}}"),
            &one,
        )],
        "mistral" => {
            let c = format!("{{\"name\": {nj}, \"arguments\": {args_text}}}");
            vec![
                case("start", "one", format!("[TOOL_CALLS][{c}]"), &one),
                case("start", "two", format!("[TOOL_CALLS][{c}, {c}]"), &two),
            ]
        }
        "json" => {
            let c = format!("{{\"name\": {nj}, \"arguments\": {args_text}}}");
            vec![
                case("call", "one", c.clone(), &one),
                case("start", "bare", c.clone(), &one),
                case("start", "array of one", format!("[{c}]"), &one),
                case("start", "array of two", format!("[{c}, {c}]"), &two),
            ]
        }
        _ => unreachable!("{format} is not a JSON format"),
    }
}

/// The text that ends the reasoning block of a `think-` entry, as the
/// model's chat template writes it.
fn think_end(format: &str) -> &'static str {
    match format {
        "qwen3" | "qwen3-coder" | "deepseek-r1" | "minimax-m2" => "</think>\n\n",
        "gpt-oss" => "<|end|><|start|>assistant",
        "gemma4" => "<channel|>",
        "mistral-v11" => "[/THINK]",
        _ => "</think>",
    }
}

/// The texts of one call (and of it twice) for the model entries (`auto`,
/// `required`, `one`, `auto-one` and their `think-` variants) a format declares,
/// rendered by `render::calls_text` as the model's chat template writes
/// tool calls; compact and spaced JSON where the arguments are JSON.
fn model_cases(
    format: &str,
    declared: &[String],
    what: &str,
    name: &str,
    args: &Value,
) -> Vec<Case> {
    let one: Calls = vec![(name.to_string(), args.clone())];
    let two: Calls = vec![one[0].clone(), one[0].clone()];
    let mut out: Vec<Case> = Vec::new();
    let compact = |v: &Value| serde_json::to_string(v).unwrap();
    for (form, json) in [
        ("compact", compact as fn(&Value) -> String),
        ("spaced", render::spaced),
        ("python json.dumps", render::python_json),
    ] {
        let (Some(t1), t2) = (
            render::calls_text(format, &one, json),
            render::calls_text(format, &two, json),
        ) else {
            return out;
        };
        for entry in declared {
            let (think, base) = match entry.strip_prefix("think-") {
                Some(b) => (Some(think_end(format)), b),
                None => (None, entry.as_str()),
            };
            let text_first = auto_opening(format).is_some_and(|(t, _)| !t.is_empty());
            let mut texts: Vec<(&str, String, &Calls)> = match base {
                "auto" | "auto-one" if text_first => vec![
                    ("one", t1.clone(), &one),
                    ("text, one", format!("Let me check that.\n{t1}"), &one),
                ],
                "auto" | "auto-one" => vec![("one", t1.clone(), &one)],
                "required" => vec![("one", t1.clone(), &one)],
                "one" => vec![("one", t1.clone(), &one)],
                _ => continue,
            };
            // react's `auto` takes one action at most, as `auto-one` does.
            let at_most_one =
                base == "one" || base == "auto-one" || (format == "react" && base == "auto");
            if !at_most_one {
                if let Some(t2) = &t2 {
                    texts.push(("two", t2.clone(), &two));
                }
            }
            for (shape, text, calls) in texts {
                let text = match think {
                    Some(end) => format!("I should call the tool.{end}{text}"),
                    None => text,
                };
                if out.iter().any(|c| c.entry == *entry && c.text == text) {
                    continue;
                }
                out.push(Case {
                    entry: entry.clone(),
                    what: format!("{what} [{entry}, {shape}, {form}]"),
                    text,
                    calls: calls.clone(),
                });
            }
        }
    }
    out
}

/// Calls equal up to the spelling of numbers (`5` and `5.0`: an
/// XML-style parser gives back an integral float as an integer).
fn same_calls(a: &Calls, b: &Calls) -> bool {
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            _ => a == b,
        }
    }
    a.len() == b.len() && a.iter().zip(b).all(|((n, x), (m, y))| n == m && same(x, y))
}

/// Valid BFCL texts of a set in a JSON format, and the skipped calls.
fn bfcl_cases(
    format: &str,
    declared: &[String],
    set: &ToolSet,
    gt: &[Value],
    validators: &schema::ToolValidators,
) -> (Vec<Case>, Vec<String>) {
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    for (ci, call) in gt.iter().enumerate() {
        let call = call
            .as_object()
            .unwrap_or_else(|| panic!("{}: ground truth #{ci} is not an object", set.id));
        for (name, call_args) in call {
            let what = format!("{} call #{ci} {name}", set.id);
            let Some(params) = set.parameters(name) else {
                skipped.push(format!("{what}: unknown tool"));
                continue;
            };
            let args = match render::ground_truth_args(&params, call_args) {
                Ok(a) => a,
                Err(e) => {
                    skipped.push(format!("{what}: {e}"));
                    continue;
                }
            };
            if let Err(e) = validators.check(name, &args) {
                skipped.push(format!("{what}: {e}"));
                continue;
            }
            if is_old_format(format) {
                let compact = serde_json::to_string(&args).unwrap();
                let spaced = render::spaced(&args);
                for (form, text) in [("compact", compact), ("spaced", spaced)] {
                    cases.extend(
                        json_format_cases(format, &format!("{what} ({form})"), name, &args, &text)
                            .into_iter()
                            .filter(|c| declared.contains(&c.entry)),
                    );
                }
            }
            cases.extend(model_cases(format, declared, &what, name, &args));
        }
    }
    (cases, skipped)
}

/// Valid FuncQA texts: the one-hop `func`s and multi-hop calculations in
/// questions' answers, the prompt templates' answers (entry `start`), and
/// every well-formed call alone (entry `call`). Texts with a malformed
/// call are skipped (listed).
fn funcqa_cases() -> (Vec<Case>, Vec<String>) {
    let f = funcqa();
    let names = funcqa_names();
    let mut cases = Vec::new();
    let mut skipped = Vec::new();
    // The calls of a text (all must be well-formed), as parsed values.
    let calls_of = |text: &str, source: &str| -> Result<Calls, String> {
        toolkengpt::find_calls(text, &names, source)
            .into_iter()
            .map(|c| {
                c.args
                    .map(|a| (c.name, Value::Array(a)))
                    .map_err(|e| format!("{}: {e}", c.span))
            })
            .collect()
    };
    let mut add =
        |entry: &str, what: String, original: &str, text: String| match calls_of(original, &what) {
            Ok(calls) if !calls.is_empty() => cases.push(Case {
                entry: entry.to_string(),
                what,
                text,
                calls,
            }),
            Ok(_) => skipped.push(format!("{what}: no call in {original:?}")),
            Err(e) => skipped.push(format!("{what}: {e}")),
        };
    for (i, (q, func)) in f.one_hop.iter().enumerate() {
        let text = format!(
            "{q} The answer is {}.",
            toolkengpt::to_trigger_form(func, &names)
        );
        add("start", format!("funcqa_oh.json #{i}"), func, text);
    }
    for (i, (q, steps)) in f.multi_hop.iter().enumerate() {
        let joined = steps.join(", then ");
        let text = format!(
            "Q: {q}\nA: {}. So, that's it.",
            toolkengpt::to_trigger_form(&joined, &names)
        );
        add("start", format!("funcqa_mh.json #{i}"), &joined, text);
    }
    for (source, answer) in &f.template_answers {
        let text = toolkengpt::to_trigger_form(answer, &names);
        add("start", format!("{source} answer"), answer, text);
    }
    for c in &f.calls {
        if c.args.is_ok() {
            add(
                "call",
                format!("{} {}", c.source, c.span),
                &c.span,
                toolkengpt::to_trigger_form(&c.span, &names),
            );
        }
    }
    (cases, skipped)
}

/// Valid KAMEL texts: each test question answered with a call of its
/// relation (entry `start`) and the call alone (entry `call`), plus one
/// call of every tool. The data gives no subject apart from the question,
/// so the argument strings are the answers' entity names (real strings:
/// accents, punctuation), the same for each parameter.
fn kamel_cases() -> Vec<Case> {
    let k = kamel();
    let path = data_file(KAMEL_TEST);
    let tests = match parse_json(&read_text(&path), &path.display().to_string()) {
        Value::Array(a) => a,
        _ => panic!("{}: not a JSON array", path.display()),
    };
    let set = &families("toolken")[1].1[0];
    let call_text = |name: &str, arg: &str| -> (String, Calls) {
        let n = parsers::positional_order(&set.parameters(name).expect("a KAMEL tool")).len();
        let values = vec![Value::String(arg.to_string()); n];
        let shown: Vec<String> = values
            .iter()
            .map(|v| serde_json::to_string(v).unwrap())
            .collect();
        (
            format!("<T>{name}({})=", shown.join(", ")),
            vec![(name.to_string(), Value::Array(values))],
        )
    };
    let mut cases = Vec::new();
    let mut called = BTreeSet::new();
    for (i, t) in tests.iter().enumerate() {
        let q = t["question"]
            .as_str()
            .unwrap_or_else(|| panic!("{KAMEL_TEST} #{i}: no question"));
        let api = t["api"]
            .as_str()
            .unwrap_or_else(|| panic!("{KAMEL_TEST} #{i}: no api"));
        let answer = t["answer"][0]["chosen"]
            .as_str()
            .unwrap_or_else(|| panic!("{KAMEL_TEST} #{i}: no answer[0].chosen"));
        let name = k
            .relation_tool
            .get(api)
            .unwrap_or_else(|| panic!("{KAMEL_TEST} #{i}: relation {api} is not in api_desc.json"));
        let (call, calls) = call_text(name, answer);
        let what = format!("{KAMEL_TEST} #{i} ({api} {name})");
        cases.push(Case {
            entry: "start".into(),
            what: what.clone(),
            text: format!("Q: {q}\nA: {call}{answer}."),
            calls: calls.clone(),
        });
        if called.insert(name.clone()) {
            cases.push(Case {
                entry: "call".into(),
                what,
                text: call,
                calls,
            });
        }
    }
    for t in &set.tools {
        let name = t["function"]["name"].as_str().unwrap();
        if !called.contains(name) {
            let (text, calls) = call_text(name, "Germany");
            cases.push(Case {
                entry: "call".into(),
                what: format!("KAMEL tool {name} (not in {KAMEL_TEST})"),
                text,
                calls,
            });
        }
    }
    cases
}

/// Per (format, entry, family): texts checked, tokens.
#[derive(Default)]
struct CaseStats {
    texts: usize,
    tokens: usize,
    /// Texts whose tokenization holds a special token of the grammar.
    specials: usize,
    /// Texts the upstream parser is known to misread.
    known: usize,
    failures: usize,
}

fn valid_calls(tok: &str) {
    let label = format!("valid calls in every shipped format with {tok}");
    let Some((loaded, t_all)) = start(&label, tok) else {
        return;
    };
    let (vocab, hf) = (&loaded.0, &loaded.1);
    let mut failures = Vec::new();
    let mut compile_time = Duration::ZERO;
    let mut words = Vec::new();
    for format in CallFormat::shipped_names() {
        if !tokenizers_of(format).contains(&tok) || !format_selected(format) {
            continue;
        }
        let declared = CallFormat::load(format).unwrap().entries();
        for (family, sets) in families(format) {
            let (compiled, refused) = compile_family(tok, vocab, format, &sets, &mut compile_time);
            let mut stats: BTreeMap<String, CaseStats> = BTreeMap::new();
            let mut skipped = Vec::new();
            for (set, bytes) in &compiled {
                let art = Artifact::from_bytes(bytes).unwrap_or_else(|e| {
                    panic!("{format}/{tok}/{}: the artifact does not load: {e}", set.id)
                });
                let g = art.grammar();
                words.resize(g.mask_words(), 0);
                let validators = schema::ToolValidators::new(&set.tools);
                let cases = match family {
                    "bfcl" => {
                        let gt = &bfcl_sampled()
                            .iter()
                            .find(|(s, _)| s.id == set.id)
                            .expect("a sampled set")
                            .1;
                        let (cases, sk) = bfcl_cases(format, &declared, set, gt, &validators);
                        skipped.extend(sk);
                        cases
                    }
                    "funcqa" => {
                        let (cases, sk) = funcqa_cases();
                        skipped.extend(sk);
                        cases
                    }
                    "kamel" => kamel_cases(),
                    _ => unreachable!(),
                };
                // toolken's tool-choice entries take the `start` texts:
                // `auto` all, `required` those with a call, `one` those
                // with exactly one.
                let cases = if format == "toolken" {
                    let mut more = Vec::new();
                    for c in cases.iter().filter(|c| c.entry == "start") {
                        for (entry, ok) in [
                            ("auto", true),
                            ("required", !c.calls.is_empty()),
                            ("one", c.calls.len() == 1),
                            ("auto-one", c.calls.len() <= 1),
                        ] {
                            if ok && declared.iter().any(|d| d == entry) {
                                more.push(Case {
                                    entry: entry.to_string(),
                                    what: c.what.clone(),
                                    text: c.text.clone(),
                                    calls: c.calls.clone(),
                                });
                            }
                        }
                    }
                    cases.into_iter().chain(more).collect()
                } else {
                    cases
                };
                for case in cases {
                    let st = stats.entry(case.entry.clone()).or_default();
                    st.texts += 1;
                    let what = format!("{format}/{tok} entry {}: {}", case.entry, case.what);
                    // The parser must give back the calls, and they must be valid.
                    let parse = parsers::parser_with_tools(format, &case.entry)
                        .unwrap_or_else(|| panic!("no parser for {format} entry {}", case.entry));
                    match parse.parse(&case.text, &set.tools) {
                        Ok(calls) if same_calls(&calls, &case.calls) => {
                            if let Err(e) =
                                check_calls(format, &case.entry, set, &validators, &calls)
                            {
                                failures.push(Failure {
                                    what: what.clone(),
                                    detail: format!(
                                        "the test's own call is invalid: {e}\ntext: {:?}",
                                        case.text
                                    ),
                                });
                                st.failures += 1;
                                continue;
                            }
                        }
                        // The upstream parser misreads the reference text
                        // itself: counted; the artifact must still accept it.
                        Err(e) if known_disagreement(format, &case.entry, &e).is_some() => {
                            st.known += 1;
                        }
                        other => {
                            failures.push(Failure {
                                what: what.clone(),
                                detail: format!(
                                    "the parser does not give back the rendered calls: {other:?}\nexpected: {:?}\ntext: {:?}",
                                    case.calls, case.text
                                ),
                            });
                            st.failures += 1;
                            continue;
                        }
                    }
                    match check_text(&g, hf, &mut words, &case.entry, &case.text) {
                        Ok((n, special)) => {
                            st.tokens += n;
                            st.specials += special as usize;
                        }
                        Err(e) => {
                            failures.push(Failure {
                                what,
                                detail: format!("{e}\ntext: {:?}", case.text),
                            });
                            st.failures += 1;
                        }
                    }
                }
            }
            for (entry, st) in &stats {
                println!(
                    "[{tok}] valid calls {format}/{entry} on {family}: {} sets ({} refused), {} texts, mean {:.1} tokens, {} with a special token; {} misread by the upstream parser (known), {} failures",
                    compiled.len(),
                    refused.len(),
                    st.texts,
                    st.tokens as f64 / st.texts.max(1) as f64,
                    st.specials,
                    st.known,
                    st.failures
                );
            }
            skipped.sort();
            skipped.dedup();
            for s in &skipped {
                println!("[{tok}]   {format}/{family}: skipped {s}");
            }
        }
    }
    if std::env::var_os("TOOLDEC_SHOW_FAILURES").is_some() {
        for f in &failures {
            println!("[{tok}] FAIL {}: {}", f.what, f.detail.replace('\n', " | "));
        }
    }
    println!(
        "[{tok}] valid calls: {} failures; compile {compile_time:.2?} (not counting cached), total {:.2?}",
        failures.len(),
        t_all.elapsed()
    );
    report_failures(&label, &failures);
}

#[test]
fn walks_gpt2() {
    walks("gpt2");
}

#[test]
fn walks_llama_3_2() {
    walks("llama-3.2");
}

#[test]
fn walks_qwen2_5() {
    walks("qwen2.5");
}

#[test]
fn walks_mistral_v0_1() {
    walks("mistral-v0.1");
}

#[test]
fn walks_smollm2_135m() {
    walks("smollm2-135m");
}

#[test]
fn walks_gpt_oss() {
    walks("gpt-oss");
}

#[test]
fn walks_gemma_3() {
    walks("gemma-3");
}

#[test]
fn valid_calls_gpt2() {
    valid_calls("gpt2");
}

#[test]
fn valid_calls_llama_3_2() {
    valid_calls("llama-3.2");
}

#[test]
fn valid_calls_qwen2_5() {
    valid_calls("qwen2.5");
}

#[test]
fn valid_calls_mistral_v0_1() {
    valid_calls("mistral-v0.1");
}

#[test]
fn valid_calls_smollm2_135m() {
    valid_calls("smollm2-135m");
}

#[test]
fn valid_calls_gpt_oss() {
    valid_calls("gpt-oss");
}

#[test]
fn valid_calls_gemma_3() {
    valid_calls("gemma-3");
}

/// The ToolkenGPT conversions: FuncQA's arities as the data shows them
/// (the well-formed calls of the question files and prompts), and KAMEL's
/// relations with their duplicate names.
#[test]
fn toolkengpt_conversion() {
    if data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the ToolkenGPT conversion check");
        return;
    }
    let f = funcqa();
    let arity: Vec<(&str, usize, usize)> = f
        .arity
        .iter()
        .map(|(n, &(a, b))| (n.as_str(), a, b))
        .collect();
    // Read off the data (see the printout): two arguments, except sqrt, log
    // and ln (one); add (up to 5), gcd (4), lcm (3) in one-hop questions and
    // multiply (4) in multi-hop ones take more.
    let expected = [
        ("add", 2, 5),
        ("choose", 2, 2),
        ("divide", 2, 2),
        ("gcd", 2, 4),
        ("lcm", 2, 3),
        ("ln", 1, 1),
        ("log", 1, 1),
        ("multiply", 2, 4),
        ("permutate", 2, 2),
        ("power", 2, 2),
        ("remainder", 2, 2),
        ("sqrt", 1, 1),
        ("subtract", 2, 2),
    ];
    let malformed: Vec<String> = f
        .calls
        .iter()
        .filter_map(|c| {
            c.args
                .as_ref()
                .err()
                .map(|e| format!("{} {}: {e}", c.source, c.span))
        })
        .collect();
    println!(
        "FuncQA: {} tools, {} calls found ({} malformed, left out of the arities), {} one-hop and {} multi-hop questions, {} template answers",
        f.tools.len(),
        f.calls.len(),
        malformed.len(),
        f.one_hop.len(),
        f.multi_hop.len(),
        f.template_answers.len()
    );
    println!("FuncQA arities (fewest, most): {arity:?}");
    for m in &malformed {
        println!("  malformed: {m}");
    }
    assert_eq!(arity, expected, "FuncQA arities differ from the data");
    assert_eq!(f.tools.len(), 13);
    // The data's own slips, all in multi-hop calculations: arithmetic as an
    // argument (`4/3`, `1/2`, `12*2.0933`) and one stray `)`. They are left
    // out of the arities and of the valid-call texts.
    assert_eq!(
        malformed.len(),
        11,
        "malformed FuncQA calls: {malformed:#?}"
    );
    assert!(
        f.calls
            .iter()
            .all(|c| c.args.is_ok() || c.source.starts_with("funcqa_mh.json")),
        "a malformed call outside funcqa_mh.json"
    );
    schema::ToolValidators::new(&f.tools);
    // Every well-formed call satisfies its tool's schema once mapped.
    let set = ToolSet::new("funcqa".into(), f.tools.clone());
    let validators = schema::ToolValidators::new(&set.tools);
    for c in &f.calls {
        if let Ok(a) = &c.args {
            let calls = vec![(c.name.clone(), Value::Array(a.clone()))];
            check_calls("toolken", "start", &set, &validators, &calls)
                .unwrap_or_else(|e| panic!("{}: {e}", c.span));
        }
    }

    let k = kamel();
    let names: Vec<&str> = k
        .tools
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let unique: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), names.len(), "KAMEL tool names are not unique");
    let dup_names: BTreeSet<&str> = k
        .duplicates
        .iter()
        .map(|d| k.relation_tool[&d.0].as_str())
        .collect();
    println!(
        "KAMEL: {} relations, {} tools; {} relations left out for a name seen before: {:?}",
        k.relations,
        k.tools.len(),
        k.duplicates.len(),
        k.duplicates
    );
    let arities: BTreeMap<usize, usize> = k.tools.iter().fold(BTreeMap::new(), |mut m, t| {
        *m.entry(parsers::positional_order(&t["function"]["parameters"]).len())
            .or_default() += 1;
        m
    });
    println!("KAMEL tools by number of parameters: {arities:?}");
    assert_eq!(k.relations, 234);
    assert_eq!(k.tools.len() + k.duplicates.len(), 234);
    assert_eq!(
        dup_names,
        BTreeSet::from([
            "launch_year",
            "location",
            "original_language",
            "publication_location",
            "start_year"
        ])
    );
    assert_eq!(k.tools.len(), 228);
    schema::ToolValidators::new(&k.tools);
}

/// The parsers on hand-made texts: what each format's description allows,
/// and near misses. Needs no data.
#[test]
fn parsers_on_hand_made_texts() {
    let paris = json!({"city": "Paris"});
    let ok = |format: &str, entry: &str, text: &str| -> Calls {
        let p = parsers::parser_for(format, entry).unwrap();
        p(text).unwrap_or_else(|e| panic!("{format}/{entry} refuses {text:?}: {e}"))
    };
    let bad = |format: &str, entry: &str, text: &str| {
        let p = parsers::parser_for(format, entry).unwrap();
        if let Ok(c) = p(text) {
            panic!("{format}/{entry} accepts {text:?}: {c:?}");
        }
    };
    let w = |args: &Value| vec![("get_weather".to_string(), args.clone())];

    // ReAct.
    let one =
        "Thought: I need it.\nline two\nAction: get_weather\nAction Input: {\"city\": \"Paris\"}";
    assert_eq!(ok("react", "start", one), w(&paris));
    assert_eq!(ok("react", "start", &format!(" {one}")), w(&paris));
    let action = &one[one.find("Action: ").unwrap()..];
    assert_eq!(
        ok("react", "parallel", &format!("{one}\n{action}")).len(),
        2
    );
    assert_eq!(
        ok("react", "start", "Thought: \nAction: f\nAction Input: {}"),
        vec![("f".into(), json!({}))]
    );
    bad("react", "start", &format!("{one}\n{action}"));
    bad("react", "start", &format!("  {one}"));
    bad("react", "start", &one.replace("Thought: ", "Thought:"));
    bad("react", "start", &format!("{one} "));
    bad("react", "start", &format!("{one}\n"));
    bad(
        "react",
        "start",
        &one.replace("{\"city\": \"Paris\"}", "[1]"),
    );
    bad(
        "react",
        "start",
        &one.replace("{\"city\": \"Paris\"}", "{\"city\": Paris}"),
    );
    bad("react", "start", "Thought: a\nAction: \nAction Input: {}");
    bad(
        "react",
        "start",
        "Thought: a\nAction: nope\nAction: f\nAction Input: {}",
    );
    bad("react", "parallel", &format!("{one}\nThought: more"));

    // Hermes.
    let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    assert_eq!(ok("hermes", "call", call), w(&paris));
    assert_eq!(ok("hermes", "calls", &format!("{call}\n{call}")).len(), 2);
    assert_eq!(ok("hermes", "start", call), w(&paris));
    assert_eq!(
        ok("hermes", "start", &format!("Sure.\n{call}\n{call}")).len(),
        2
    );
    assert_eq!(
        ok("hermes", "start", &format!("a <tool_call b {call}")).len(),
        1
    );
    bad("hermes", "call", &format!("{call}\n{call}"));
    bad("hermes", "calls", &format!("{call}{call}"));
    bad("hermes", "calls", &format!("{call}\n"));
    bad("hermes", "calls", &format!("x{call}"));
    bad("hermes", "start", "just text");
    bad("hermes", "start", &format!("<tool_call> {call}"));
    bad("hermes", "call", &call.replace("\"name\": ", "\"name\":"));
    bad(
        "hermes",
        "call",
        &call.replace("\"arguments\"", "\"parameters\""),
    );
    bad(
        "hermes",
        "call",
        &call.replace("\n</tool_call>", "</tool_call>"),
    );
    bad(
        "hermes",
        "call",
        &call.replace("\"get_weather\"", "get_weather"),
    );
    bad(
        "hermes",
        "call",
        &call.replace("{\"city\": \"Paris\"}", "\"Paris\""),
    );

    // Llama 3.
    let l = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
    assert_eq!(ok("llama3", "start", l), w(&paris));
    bad("llama3", "start", &l.replace("parameters", "arguments"));
    bad("llama3", "start", &format!("{l}\n"));
    bad(
        "llama3",
        "start",
        &l.replace(", \"parameters\"", ",\"parameters\""),
    );

    // Mistral and bare JSON.
    let j = "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}";
    assert_eq!(
        ok("mistral", "start", &format!("[TOOL_CALLS][{j}]")),
        w(&paris)
    );
    assert_eq!(
        ok("mistral", "start", &format!(" [TOOL_CALLS][{j}, {j}]")).len(),
        2
    );
    bad("mistral", "start", &format!("[{j}]"));
    bad("mistral", "start", "[TOOL_CALLS][]");
    bad("mistral", "start", &format!("[TOOL_CALLS][{j},{j}]"));
    bad("mistral", "start", &format!("[TOOL_CALLS] [{j}]"));
    assert_eq!(ok("json", "start", j), w(&paris));
    assert_eq!(ok("json", "start", &format!("[{j}]")), w(&paris));
    assert_eq!(ok("json", "start", &format!("[{j}, {j}]")).len(), 2);
    assert_eq!(ok("json", "call", j), w(&paris));
    bad("json", "call", &format!("[{j}]"));
    bad("json", "start", &format!("{j}\n{j}"));
    bad("json", "start", "[]");
    bad("json", "start", &format!("[{j}, ]"));
    bad("json", "start", &format!("[ {j}]"));

    // Toolken.
    let add = |a: Value| ("add".to_string(), a);
    assert_eq!(ok("toolken", "start", ""), vec![]);
    assert_eq!(ok("toolken", "start", "No tool < T > needed."), vec![]);
    assert_eq!(
        ok(
            "toolken",
            "start",
            "147+354=<T>add(147, 354)=501 and <T>add(1,2.5)=3.5<T>sqrt()="
        ),
        vec![
            add(json!([147, 354])),
            add(json!([1, 2.5])),
            ("sqrt".into(), json!([]))
        ]
    );
    assert_eq!(
        ok("toolken", "start", "<T>location(\"Bad, (name)=\")=x"),
        vec![("location".into(), json!(["Bad, (name)="]))]
    );
    assert_eq!(
        ok("toolken", "call", "<T>add(1, 2)="),
        vec![add(json!([1, 2]))]
    );
    assert_eq!(
        ok("toolken", "call", " <T>add(1, 2)="),
        vec![add(json!([1, 2]))]
    );
    for b in [
        "<T>add(1, 2)",
        "<T>add(1, 2) = 3",
        "<T>add(1,  2)=",
        "<T>add( 1, 2)=",
        "<T>add(1 ,2)=",
        "<T>add(1, 2,)=",
        "<T>add(01, 2)=",
        "<T>add(1e, 2)=",
        "<T>add(4/3)=",
        "<T>add(Paris)=",
        "<T>(1)=",
        "<T>add 2(1)=",
        "x <T>",
        "<T>add(1)=<T>",
    ] {
        bad("toolken", "start", b);
    }
    bad("toolken", "call", "<T>add(1, 2)=3");
    bad("toolken", "call", "x<T>add(1, 2)=");

    // Positional values onto parameters: required first, then optional.
    let params = json!({"type": "object", "properties": {"digits": {"type": "integer"}, "x": {"type": "number"}}, "required": ["x"]});
    assert_eq!(parsers::positional_order(&params), ["x", "digits"]);
    assert_eq!(
        parsers::positional_to_object(&params, &[json!(2.5), json!(2)]).unwrap(),
        json!({"x": 2.5, "digits": 2})
    );
    assert!(parsers::positional_to_object(&params, &[json!(1), json!(2), json!(3)]).is_err());
}
