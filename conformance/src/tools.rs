//! The real tool corpora: each file through `spec::parse` (its dialect
//! detected by the compiler), then each distinct tool's argument machine
//! alone through `build_dfa` with the `json` call format.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tooldec_compiler::spec::{self, ToolSet};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::Options;

use crate::stats::Reasons;
use crate::Refusal;

/// A corpus and its files (relative to the data dir).
#[derive(Debug, Clone)]
pub struct Corpus {
    pub name: &'static str,
    pub files: Vec<PathBuf>,
    /// Files of the corpus's folder left out on purpose, and why.
    pub skipped: Vec<(PathBuf, &'static str)>,
    /// How many tools the data's README says the corpus has (a check on
    /// what `spec::parse` returns).
    pub published: &'static str,
}

fn files_in(data: &Path, rel: &str) -> Vec<PathBuf> {
    crate::corpus::json_files(&data.join(rel))
        .unwrap_or_default()
        .into_iter()
        .map(|p| p.strip_prefix(data).map(Path::to_path_buf).unwrap_or(p))
        .collect()
}

/// The corpora of the report. BFCL's top-level files that hold no
/// `"function":` docs (multi-turn questions, memory, web search, the
/// format-sensitivity index) are listed as skipped: their tools are the
/// `multi_turn_func_doc/` files, which are included.
pub fn corpora(data: &Path) -> Vec<Corpus> {
    let mut bfcl = Corpus {
        name: "BFCL",
        files: Vec::new(),
        skipped: Vec::new(),
        published: "function docs per question (many repeated)",
    };
    for f in files_in(data, "tools/bfcl") {
        let text = std::fs::read_to_string(data.join(&f)).unwrap_or_default();
        if text.contains("\"function\":") {
            bfcl.files.push(f);
        } else {
            bfcl.skipped.push((
                f,
                "no \"function\" docs in the file (multi-turn tools are in multi_turn_func_doc/)",
            ));
        }
    }
    bfcl.files
        .extend(files_in(data, "tools/bfcl/multi_turn_func_doc"));
    let one = |name, rel: &str, published| Corpus {
        name,
        files: vec![PathBuf::from(rel)],
        skipped: Vec::new(),
        published,
    };
    vec![
        bfcl,
        Corpus {
            name: "ToolBench",
            files: files_in(
                data,
                "tools/toolbench/StableToolBench/solvable_queries/test_instruction",
            ),
            skipped: Vec::new(),
            published: "2,491 APIs in 765 queries",
        },
        one(
            "RestBench TMDB",
            "tools/restbench/specs/tmdb_oas.json",
            "54 operations",
        ),
        Corpus {
            name: "ToolkenGPT",
            files: vec![
                PathBuf::from("tools/toolkengpt/data/funcqa/func_dict.json"),
                PathBuf::from("tools/toolkengpt/data/kamel/api_desc.json"),
            ],
            skipped: Vec::new(),
            published: "13 FuncQA tools, 234 KAMEL relations",
        },
        one(
            "MCP (LiveMCPBench)",
            "tools/mcp-livemcpbench/tools/LiveMCPTool/tools.json",
            "527 tools in 70 servers",
        ),
    ]
}

/// A file that `spec::parse` read or refused.
#[derive(Debug, Clone)]
pub struct FileResult {
    pub file: PathBuf,
    /// Tools the parse returned (0 when refused).
    pub tools: usize,
    pub refusal: Option<Refusal>,
    /// `spec::parse` refused the file, but it reads with two different
    /// tools of one name renamed (`Collisions::Rename`): the refusal.
    pub renamed: Option<Refusal>,
    pub parse_time: Duration,
}

/// One distinct tool's argument machine.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub file: PathBuf,
    pub name: String,
    pub refusal: Option<Refusal>,
    pub time: Duration,
    /// States of the minimized DFA (the whole `json` call, this tool only).
    pub states: usize,
}

/// A corpus's results.
#[derive(Debug, Clone)]
pub struct CorpusResult {
    pub name: &'static str,
    pub published: &'static str,
    pub files: Vec<FileResult>,
    pub skipped: Vec<(PathBuf, &'static str)>,
    /// Tools the parses returned, duplicates included.
    pub parsed_tools: usize,
    pub tools: Vec<ToolResult>,
    /// Tools left out by `--limit`.
    pub limited: usize,
}

impl CorpusResult {
    pub fn compiled(&self) -> usize {
        self.tools.iter().filter(|t| t.refusal.is_none()).count()
    }

    pub fn reasons(&self) -> Reasons {
        let mut r = Reasons::default();
        for t in &self.tools {
            if let Some(f) = &t.refusal {
                r.add(f, &format!("{} ({})", t.name, t.file.display()));
            }
        }
        r
    }
}

/// The options of the tool runs: the report options with the `json` call
/// format.
pub fn tool_options(base: &Options) -> Result<Options, String> {
    Ok(Options {
        format: CallFormat::load("json").map_err(|e| e.to_string())?,
        ..base.clone()
    })
}

/// Parses the corpus's files and builds each distinct tool's machine
/// (deduplicated by name and schema within the corpus), at most `limit`
/// tools, on `jobs` threads.
pub fn run(
    data: &Path,
    corpus: &Corpus,
    vocab: &Vocab,
    opts: &Options,
    limit: usize,
    jobs: usize,
    progress: &(dyn Fn(&str) + Sync),
) -> CorpusResult {
    let mut files = Vec::new();
    let mut sets: Vec<(PathBuf, ToolSet)> = Vec::new();
    let mut parsed_tools = 0;
    for f in &corpus.files {
        let label = f.display().to_string();
        let t = Instant::now();
        let parsed = std::fs::read_to_string(data.join(f))
            .map_err(|e| Refusal {
                kind: "Io".into(),
                reason: e.to_string(),
                message: format!("{label}: {e}"),
                budget: false,
            })
            .and_then(|text| {
                match std::panic::catch_unwind(|| spec::parse(&label, &text)) {
                    Ok(Ok(set)) => Ok((set, None)),
                    Ok(Err(e)) => {
                        let refusal = Refusal::from_error(&e, &label, "");
                        // Two different tools with one name refuse the whole
                        // file; with them renamed, each tool can still be
                        // measured (the refusal is reported either way).
                        let renamed = std::panic::catch_unwind(|| {
                            spec::parse_with(
                                &label,
                                &text,
                                &spec::ParseOptions {
                                    collisions: spec::Collisions::Rename,
                                    ..spec::ParseOptions::default()
                                },
                            )
                        });
                        match renamed {
                            Ok(Ok(set)) => Ok((set, Some(refusal))),
                            _ => Err(refusal),
                        }
                    }
                    Err(p) => Err(Refusal::from_panic(p.as_ref())),
                }
            });
        let parse_time = t.elapsed();
        match parsed {
            Ok((set, renamed)) => {
                progress(&format!(
                    "{}: {label}: {} tools{}",
                    corpus.name,
                    set.tools.len(),
                    if renamed.is_some() {
                        " (read with name collisions renamed)"
                    } else {
                        ""
                    }
                ));
                parsed_tools += set.tools.len();
                files.push(FileResult {
                    file: f.clone(),
                    tools: set.tools.len(),
                    refusal: None,
                    renamed,
                    parse_time,
                });
                sets.push((f.clone(), set));
            }
            Err(r) => {
                progress(&format!("{}: {label}: refused: {}", corpus.name, r.reason));
                files.push(FileResult {
                    file: f.clone(),
                    tools: 0,
                    refusal: Some(r),
                    renamed: None,
                    parse_time,
                });
            }
        }
    }
    // Distinct tools: (set, tool) indexes, first occurrence of each
    // (name, schema).
    let mut seen = HashSet::new();
    let mut work = Vec::new();
    for (si, (_, set)) in sets.iter().enumerate() {
        for (ti, t) in set.tools.iter().enumerate() {
            if seen.insert((t.name.clone(), t.parameters.to_string())) {
                work.push((si, ti));
            }
        }
    }
    let limited = work.len().saturating_sub(limit);
    work.truncate(limit);
    let total = work.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tools = crate::parallel_map(
        &work,
        jobs,
        |&(si, ti)| {
            let (file, set) = &sets[si];
            let tool = &set.tools[ti];
            let one = ToolSet {
                file: set.file.clone(),
                text: set.text.clone(),
                tools: vec![tool.clone()],
                repairs: Vec::new(),
            };
            let t = Instant::now();
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                tooldec_compiler::build_dfa(&one, opts, vocab, &mut |_| {})
            }));
            let time = t.elapsed();
            let (refusal, states) = match built {
                Ok(Ok((m, _, _))) => (None, m.dfa.n_states()),
                Ok(Err(e)) => (Some(Refusal::from_error(&e, &set.file, &tool.name)), 0),
                Err(p) => (Some(Refusal::from_panic(p.as_ref())), 0),
            };
            ToolResult {
                file: file.clone(),
                name: tool.name.clone(),
                refusal,
                time,
                states,
            }
        },
        |_, r: &ToolResult| {
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if n.is_multiple_of(100) || n == total || r.time.as_secs() >= 5 {
                progress(&format!(
                    "{}: tool {n}/{total} {} ({:.1} s{})",
                    corpus.name,
                    r.name,
                    r.time.as_secs_f64(),
                    if r.refusal.is_some() { ", refused" } else { "" }
                ));
            }
        },
    );
    CorpusResult {
        name: corpus.name,
        published: corpus.published,
        files,
        skipped: corpus.skipped.clone(),
        parsed_tools,
        tools,
        limited,
    }
}
