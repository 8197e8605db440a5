//! tooldec's compiler: from a tool list to a token-mask artifact.
//!
//! The pipeline, one module per stage (`DESIGN.md` walks through it):
//!
//! 1. [`spec`] parses the tool list (OpenAI function-calling form).
//! 2. [`json`] lowers each tool's JSON Schema to an [`expr::Expr`], and
//!    [`format`] wraps the tool-name trie and those machines in the call
//!    format (`react`).
//! 3. [`nfa`] builds a byte NFA; [`dfa`] determinizes it (bounded), trims
//!    it so that every state can still reach acceptance, and minimizes it.
//! 4. [`vocab`] recovers each token's exact bytes; [`cross`] walks a token
//!    trie from every DFA state to get that state's mask.
//! 5. [`write`] stores the DFA, each distinct mask once, and the token
//!    bytes in the layout `tooldec_runtime` reads in place, wrapped in zstd.
//!
//! ```no_run
//! use tooldec_compiler::{compile, vocab::Vocab, Options};
//! let text = std::fs::read_to_string("tools.json").unwrap();
//! let tools = tooldec_compiler::spec::parse("tools.json", &text).unwrap();
//! let vocab = Vocab::builtin_gpt2().unwrap();
//! let out = compile(&tools, &vocab, &Options::default(), &mut |_| {}).unwrap();
//! std::fs::write("tools.tdm", &out.artifact).unwrap();
//! ```

pub mod cross;
pub mod dfa;
pub mod dump;
pub mod error;
pub mod expr;
pub mod format;
pub mod gguf;
pub mod json;
mod locate;
pub mod nfa;
pub mod spec;
pub mod vocab;
pub mod write;

use std::time::{Duration, Instant};

pub use error::{Error, ErrorKind};
use expr::Expr;
use format::Format;
use json::{JsonOptions, Lowering};
use spec::ToolSet;
use vocab::Vocab;

/// Everything that shapes the artifact besides the tools and the vocab.
#[derive(Debug, Clone)]
pub struct Options {
    pub format: Format,
    /// One or more calls instead of exactly one.
    pub parallel: bool,
    pub json: JsonOptions,
    /// Bound on DFA states (before minimization).
    pub max_states: usize,
    /// Bound on NFA states.
    pub max_nfa_states: usize,
    /// The model's logits size; defaults to the tokenizer's token count.
    pub vocab_size: Option<u32>,
    /// zstd level; `None` writes the raw payload.
    pub zstd_level: Option<i32>,
    /// Worker threads for the crossing (0: all cores).
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: Format::React,
            parallel: false,
            json: JsonOptions::default(),
            max_states: 2_000_000,
            max_nfa_states: 20_000_000,
            vocab_size: None,
            zstd_level: Some(9),
            threads: 0,
        }
    }
}

/// Sizes and timings of one compilation.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub tools: usize,
    pub nfa_states: usize,
    /// DFA states after determinization, the dead state included.
    pub dfa_states: usize,
    /// After trimming and minimization, the dead state included.
    pub min_states: usize,
    pub classes: usize,
    pub masks: usize,
    pub forms: write::MaskForms,
    pub trie_nodes: usize,
    pub nodes_visited: usize,
    pub payload_bytes: usize,
    pub artifact_bytes: usize,
    pub vocab_size: u32,
    pub phases: Phases,
}

/// The result of [`compile`].
pub struct Compiled {
    /// The artifact file's bytes (zstd-compressed unless asked otherwise).
    pub artifact: Vec<u8>,
    pub report: Report,
}

/// A phase starting or ending, for progress display.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    Start(&'static str),
    Done(&'static str, Duration),
}

/// The whole grammar of a tool set as an [`Expr`].
pub fn lower(set: &ToolSet, opts: &Options, leading_space: bool) -> Result<Expr, Error> {
    let mut lowering = Lowering::new(set, opts.json);
    let mut tools = Vec::with_capacity(set.tools.len());
    // Tools with the same parameters schema share one argument machine: the
    // NFA builds it once, determinization reaches one copy of its states,
    // and minimization has that much less to merge.
    let mut seen: std::collections::HashMap<String, Expr> = std::collections::HashMap::new();
    for i in 0..set.tools.len() {
        let key = set.tools[i].parameters.to_string();
        let args = match seen.get(&key) {
            Some(e) => e.clone(),
            None => {
                let e = Expr::shared(lowering.tool_arguments(i)?);
                seen.insert(key, e.clone());
                e
            }
        };
        tools.push((set.tools[i].name.clone(), args));
    }
    let body = opts.format.lower(tools, opts.parallel)?;
    Ok(if leading_space {
        Expr::seq([Expr::opt(Expr::lit(" ")), body])
    } else {
        body
    })
}

/// The whole grammar of a tool set as one regular expression (the syntax of
/// `regex-syntax`, Unicode mode), for running other engines on exactly the
/// language this compiler builds.
pub fn regex(set: &ToolSet, opts: &Options, leading_space: bool) -> Result<String, Error> {
    let expr = lower(set, opts, leading_space)?;
    expr::to_regex(&expr).map_err(|m| {
        Error::new(
            ErrorKind::Unsupported,
            format!("the grammar has no regular-expression spelling: {m}"),
        )
    })
}

/// Statistics of [`build_dfa`].
#[derive(Debug, Clone, Copy, Default)]
pub struct DfaStats {
    pub nfa_states: usize,
    pub dfa_states: usize,
}

/// Time spent per named phase.
pub type Phases = Vec<(&'static str, Duration)>;

/// Lowers, determinizes, trims and minimizes.
pub fn build_dfa(
    set: &ToolSet,
    opts: &Options,
    leading_space: bool,
    progress: &mut dyn FnMut(Progress),
) -> Result<(dfa::Dfa, DfaStats, Phases), Error> {
    let mut phases = Vec::new();
    let timed = |name: &'static str, progress: &mut dyn FnMut(Progress)| {
        progress(Progress::Start(name));
        let t = Instant::now();
        move |phases: &mut Vec<(&'static str, Duration)>, progress: &mut dyn FnMut(Progress)| {
            let d = t.elapsed();
            phases.push((name, d));
            progress(Progress::Done(name, d));
        }
    };
    let done = timed("lower", progress);
    let expr = lower(set, opts, leading_space)?;
    let nfa = nfa::build(&expr, opts.max_nfa_states)?;
    drop(expr);
    done(&mut phases, progress);

    let done = timed("determinize", progress);
    let mut dfa = dfa::Dfa::determinize(&nfa, opts.max_states)?;
    let stats = DfaStats {
        nfa_states: nfa.states.len(),
        dfa_states: dfa.n_states(),
    };
    drop(nfa);
    done(&mut phases, progress);

    let done = timed("minimize", progress);
    if !dfa.trim() {
        return Err(Error::new(
            ErrorKind::Grammar,
            "the grammar accepts no output at all",
        ));
    }
    dfa.minimize();
    done(&mut phases, progress);
    Ok((dfa, stats, phases))
}

/// Compiles a tool set against a vocab into artifact bytes.
pub fn compile(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    let n_tokens = vocab.len() as u32;
    let vocab_size = opts.vocab_size.unwrap_or(n_tokens);
    if vocab_size < n_tokens {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("--vocab-size {vocab_size} is smaller than the tokenizer's {n_tokens} tokens"),
        ));
    }
    let (dfa, stats, mut phases) = build_dfa(set, opts, vocab.leading_space, progress)?;

    progress(Progress::Start("cross"));
    let t = Instant::now();
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let masks = cross::masks(
        &dfa,
        vocab,
        tooldec_runtime::layout::mask_words(vocab_size),
        threads,
    )?;
    let d = t.elapsed();
    phases.push(("cross", d));
    progress(Progress::Done("cross", d));

    progress(Progress::Start("write"));
    let t = Instant::now();
    let meta = metadata(set, vocab, opts);
    let (payload, forms) = write::payload(
        &dfa,
        &masks.masks,
        &masks.state_mask,
        vocab,
        vocab_size,
        &meta,
    )?;
    let artifact = match opts.zstd_level {
        Some(level) => write::compress(&payload, level)?,
        None => payload.clone(),
    };
    let d = t.elapsed();
    phases.push(("write", d));
    progress(Progress::Done("write", d));

    let report = Report {
        tools: set.tools.len(),
        nfa_states: stats.nfa_states,
        dfa_states: stats.dfa_states,
        min_states: dfa.n_states(),
        classes: dfa.n_classes,
        masks: masks.masks.len(),
        forms,
        trie_nodes: masks.trie_nodes,
        nodes_visited: masks.nodes_visited,
        payload_bytes: payload.len(),
        artifact_bytes: artifact.len(),
        vocab_size,
        phases,
    };
    Ok(Compiled { artifact, report })
}

/// The artifact's metadata: deterministic JSON with no paths or times.
fn metadata(set: &ToolSet, vocab: &Vocab, opts: &Options) -> String {
    let specials: serde_json::Map<String, serde_json::Value> = vocab
        .specials()
        .into_iter()
        .map(|(id, name)| (id.to_string(), name.into()))
        .collect();
    serde_json::json!({
        "generator": concat!("tooldec-compile ", env!("CARGO_PKG_VERSION")),
        "format": opts.format.name(),
        "parallel": opts.parallel,
        "tools": set.names(),
        "vocab": {
            "label": vocab.label,
            "kind": vocab.kind.name(),
            "leading_space": vocab.leading_space,
            "specials": specials,
        },
        "options": {
            "max_ws": opts.json.max_ws,
            "max_depth": opts.json.max_depth,
        },
    })
    .to_string()
}
