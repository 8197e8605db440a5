//! tooldec's compiler: from a tool list to a token-mask artifact.
//!
//! The pipeline, one folder per stage (`DESIGN.md` walks through it):
//!
//! 1. [`spec`] parses the tool list (OpenAI, Anthropic, MCP, BFCL,
//!    ToolBench, OpenAPI 3 or signatures; detected from its shape).
//! 2. [`lower`](mod@lower) lowers each tool's JSON Schema (with exact value
//!    languages for ranges, `multipleOf`, patterns and the JSON Schema
//!    `format` keyword) and the call format ([`call_format`]: a grammar
//!    file such as `react` or `hermes`) around the tool-name trie to one
//!    [`automaton::expr::Expr`].
//! 3. [`automaton`] builds a byte NFA from it, determinizes it (bounded),
//!    trims it so that every state can still reach acceptance, and
//!    minimizes it ([`build_dfa`]).
//! 4. [`vocab`] recovers each token's exact bytes (tokenizer.json, GGUF,
//!    built-in); the crossing walks a token trie from every DFA state to
//!    get that state's mask.
//! 5. [`artifact`] stores the DFA, each distinct mask once, the token
//!    bytes and the metadata in the layout `tooldec_runtime` reads in
//!    place, wrapped in zstd.
//!
//! This file is the API: [`Options`], [`compile`] and [`compile_schema`]
//! and what they report; a server that compiles per request holds a
//! [`Compiler`] instead (`compiler.rs`: the vocabulary's parts built once,
//! artifacts in memory). The library prints nothing; progress goes
//! through the [`Progress`] callback.
//!
//! ```no_run
//! use tooldec_compiler::{compile, vocab::Vocab, Options};
//! let text = std::fs::read_to_string("tools.json").unwrap();
//! let tools = tooldec_compiler::spec::parse("tools.json", &text).unwrap();
//! let vocab = Vocab::builtin_gpt2().unwrap();
//! let out = compile(&tools, &vocab, &Options::default(), &mut |_| {}).unwrap();
//! std::fs::write("tools.tdm", &out.artifact).unwrap();
//! ```

#![deny(missing_docs)]

pub mod artifact;
pub mod automaton;
mod compiler;
mod cross;
pub mod error;
mod heap;
pub mod limits;
pub mod lower;
mod parallel;
mod pending;
pub mod spec;
pub mod vocab;

use std::time::{Duration, Instant};

use artifact::meta::Meta;
use artifact::write;
pub use automaton::machine::{build_dfa, build_schema_dfa, DfaStats, Machine, Phases};
pub use compiler::{Compiler, Loaded, DEFAULT_CACHE_BYTES};
pub use error::{Error, ErrorKind};
pub use limits::{Cancel, Limits};
pub use lower::call_format::{self, CallFormat};
pub use lower::json::{JsonOptions, Whitespace};
pub use lower::{lower, lower_schema, regex};
pub use pending::{Pending, PendingMatcher};
use spec::ToolSet;
use vocab::Vocab;

/// Everything that shapes the artifact besides the tools and the vocab.
#[derive(Debug, Clone)]
pub struct Options {
    /// The call format (default: the shipped `react`).
    pub format: CallFormat,
    /// How JSON Schemas are lowered.
    pub json: JsonOptions,
    /// Bound on DFA states (before minimization).
    pub max_states: usize,
    /// Bound on NFA states.
    pub max_nfa_states: usize,
    /// The model's logits size; defaults to the tokenizer's token count.
    pub mask_width: Option<u32>,
    /// zstd level; `None` writes the raw payload.
    pub zstd_level: Option<i32>,
    /// Worker threads for the subset construction and the crossing (0:
    /// all cores). The artifact is the same for any number.
    pub threads: usize,
    /// `--max-tokens`: the token budget every matcher starts with, checked
    /// against the fewest tokens each entry needs. The tables that serve
    /// budgets are in every artifact; this only sets the default.
    pub max_tokens: Option<u32>,
    /// Keep the region table in the metadata (what `tooldec inspect`,
    /// `explain` and `draw` use to say where a state is); `false` for
    /// the smallest artifact (`--no-regions`).
    pub regions: bool,
    /// Time and memory bounds, and a cancel flag (default:
    /// [`Limits::engine`]; `tooldec-compile` uses [`Limits::offline`]).
    /// They decide whether a compile ends, never what it builds.
    pub limits: Limits,
    /// Serve an entry that stops after its first call (`one` beside
    /// `required`) from the states of the entry it walks (see
    /// `call_format::stops`); `false` lowers every entry as written. The
    /// language is the same either way; the compiler falls back to
    /// `false` by itself where serving it so would not be exact.
    pub stop_entries: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: CallFormat::load("react").expect("the shipped react format parses"),
            json: JsonOptions::default(),
            max_states: 2_000_000,
            max_nfa_states: 20_000_000,
            mask_width: None,
            zstd_level: Some(9),
            threads: 0,
            max_tokens: None,
            regions: true,
            limits: Limits::default(),
            stop_entries: true,
        }
    }
}

/// Sizes and timings of one compilation.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Tools compiled.
    pub tools: usize,
    /// NFA states built.
    pub nfa_states: usize,
    /// DFA states after determinization, the dead state included.
    pub dfa_states: usize,
    /// After trimming and minimization, the dead state included.
    pub min_states: usize,
    /// Byte classes of the minimized DFA.
    pub classes: usize,
    /// Distinct masks stored.
    pub masks: usize,
    /// How many masks are stored in each form.
    pub forms: write::MaskForms,
    /// Nodes of the vocabulary's token trie.
    pub trie_nodes: usize,
    /// Trie nodes the crossing visited over all states outside the regions
    /// whose walks are shared and cached (DESIGN.md §5).
    pub nodes_visited: usize,
    /// Bytes of the artifact before compression.
    pub payload_bytes: usize,
    /// Bytes of the artifact as written.
    pub artifact_bytes: usize,
    /// The mask width: the model's logits size (`--vocab-size`, or the tokenizer's token count).
    pub mask_width: u32,
    /// Time spent per phase, in order.
    pub phases: Phases,
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// What `--repair` changed in the tool list, one line each.
    pub repaired: Vec<String>,
    /// Per entry: its name and the fewest tokens of a complete output.
    pub min_tokens: Vec<(String, u32)>,
    /// Served states from which no token sequence reaches acceptance
    /// (masked out: token-level liveness).
    pub token_dead: usize,
    /// Distinct token transitions between states.
    pub token_edges: usize,
    /// States with a loop set (LOOPS: tokens taken without a walk), the
    /// distinct sets stored, and the states that loop but got no set
    /// (past the most a payload stores).
    pub loops: (usize, usize, usize),
    /// States with budget tiers below their unbudgeted mask, and the number
    /// of such tiers.
    pub tiered_states: usize,
    /// Budget tiers stored below the states' unbudgeted masks, in all.
    pub lower_tiers: usize,
    /// The most tiers of one state, its unbudgeted mask included.
    pub max_tiers: usize,
    /// The default budget written (`--max-tokens`).
    pub max_tokens: Option<u32>,
}

/// The result of [`compile`].
pub struct Compiled {
    /// The artifact file's bytes (zstd-compressed unless asked otherwise).
    pub artifact: Vec<u8>,
    /// Sizes and timings.
    pub report: Report,
}

/// A phase starting or ending, for progress display.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    /// A phase of this name starts.
    Start(&'static str),
    /// A phase ended after this long.
    Done(&'static str, Duration),
}

/// Compiles a tool set against a vocab into artifact bytes.
pub fn compile(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    check_options(vocab, opts)?;
    limits::Guard::start(&opts.limits).run(|| {
        let specials = lower::call_format::Specials::of(vocab);
        let front = automaton::machine::front_tools(set, opts, vocab, &specials, progress)?;
        // The token trie depends on the vocabulary and the grammar's
        // special tokens alone, so it is built beside the minimization
        // instead of after it (22 ms of a Llama-3.2 compile).
        let grammar_specials = front.specials.clone();
        std::thread::scope(|scope| {
            let trie = scope.spawn(move || one_off(vocab, &grammar_specials));
            let built = automaton::machine::finish_tools(front, set, opts, progress);
            let prepared = trie.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            compile_machine(set, vocab, opts, built?, &prepared, progress)
        })
    })
}

/// The threads `opts` asks for: all cores for 0.
pub(crate) fn threads(opts: &Options) -> usize {
    if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    }
}

/// What the crossing needs of the vocabulary, built for one compile
/// (a [`Compiler`] keeps it instead).
fn one_off(vocab: &Vocab, specials: &[u32]) -> cross::Prepared {
    cross::Prepared::new(
        &vocab::TokenText::new(vocab, specials),
        vocab,
        DEFAULT_CACHE_BYTES,
    )
}

/// Refuses options beyond what the compiler can build within its bounds
/// (each one would make some construction explode: an unrolled count, a
/// recursion, a mask of unused ids), before anything is built; every
/// front end (the CLI, the C ABI, Python, a `Compiler`) comes through here.
fn check_options(vocab: &Vocab, opts: &Options) -> Result<(), Error> {
    let j = &opts.json;
    let bounds: [(&str, u64, u64); 7] = [
        ("--max-ws", j.max_ws.into(), 256),
        ("--max-depth", j.max_depth as u64, 128),
        (
            "--any-depth",
            j.any_depth as u64,
            j.max_depth.min(128) as u64,
        ),
        ("--max-recursion", j.max_recursion as u64, 32),
        (
            "--max-count",
            j.max_count.into(),
            lower::json::MAX_POSITIONS,
        ),
        ("--max-states", opts.max_states as u64, u32::MAX as u64 - 1),
        (
            "--max-nfa-states",
            opts.max_nfa_states as u64,
            u32::MAX as u64 - 1,
        ),
    ];
    for (flag, value, most) in bounds {
        if value > most {
            return Err(Error::new(
                ErrorKind::Usage,
                format!("{flag} {value} is above its bound of {most}"),
            ));
        }
    }
    check_width(vocab, opts)
}

/// Refuses a mask width narrower than the vocabulary, or wider than an
/// artifact addresses (every mask would be megabytes of unused ids).
fn check_width(vocab: &Vocab, opts: &Options) -> Result<(), Error> {
    let n_tokens = vocab.len() as u32;
    let mask_width = opts.mask_width.unwrap_or(n_tokens);
    if mask_width as usize > vocab::MAX_TOKENS {
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "--vocab-size {mask_width} is beyond the {} token ids an artifact addresses",
                vocab::MAX_TOKENS
            ),
        ));
    }
    if mask_width < n_tokens {
        return Err(Error::new(
            ErrorKind::Usage,
            format!("--vocab-size {mask_width} is smaller than the tokenizer's {n_tokens} tokens"),
        ));
    }
    Ok(())
}

/// Compiles one JSON Schema (tool 0 of `set`, see [`spec::schema_document`])
/// into an artifact whose whole output is one JSON value the schema accepts.
pub fn compile_schema(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    check_options(vocab, opts)?;
    limits::Guard::start(&opts.limits).run(|| {
        let built = build_schema_dfa(set, opts, progress)?;
        let prepared = one_off(vocab, &built.0.specials);
        compile_machine(set, vocab, opts, built, &prepared, progress)
    })
}

fn compile_machine(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    (machine, stats, mut phases): (Machine, DfaStats, Phases),
    prepared: &cross::Prepared,
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    let n_tokens = vocab.len() as u32;
    let mask_width = opts.mask_width.unwrap_or(n_tokens);
    let dfa = &machine.dfa;

    progress(Progress::Start("cross"));
    let t = Instant::now();
    let threads = threads(opts);
    let masks = cross::masks(
        &machine,
        prepared,
        vocab,
        tooldec_runtime::layout::mask_words(mask_width),
        threads,
    )?;
    // The crossing's walks, byte runs and token edges (hundreds of bytes
    // per state at scale) are freed; the engine that holds this process
    // should not keep them resident.
    heap::give_back(dfa.n_states() * cross::PASS_SCRATCH_PER_STATE);
    let d = t.elapsed();
    phases.push(("cross", d));
    progress(Progress::Done("cross", d));

    let min_tokens: Vec<(String, u32)> = machine
        .entries
        .iter()
        .map(|(name, s)| (name.clone(), masks.distance[*s as usize]))
        .collect();
    for (name, d) in &min_tokens {
        if *d == cross::NO_DISTANCE {
            return Err(Error::new(
                ErrorKind::Grammar,
                format!(
                    "incompatible vocabulary: no sequence of tokens of this vocabulary completes \
                     entry {name:?} of format {:?}",
                    opts.format.name
                ),
            ));
        }
    }
    if let Some(n) = opts.max_tokens {
        if let Some((name, d)) = min_tokens.iter().find(|(_, d)| *d > n) {
            let only = if min_tokens.len() > 1 {
                format!(" (entry {name:?})")
            } else {
                String::new()
            };
            return Err(Error::new(
                ErrorKind::Budget,
                format!(
                    "--max-tokens {n} is too small: the shortest complete output{only} takes {d} tokens \
                     of this vocabulary; use --max-tokens {d} or more"
                ),
            ));
        }
    }

    progress(Progress::Start("write"));
    let t = Instant::now();
    let meta = Meta::of(set, vocab, opts, &machine).to_json_string();
    let input = write::Input {
        dfa,
        entries: &machine.entries,
        stops: &machine.stops,
        call_end: &machine.call_end,
        crossed: &masks,
        tokens: &prepared.tokens,
        vocab,
        fingerprint: prepared.fingerprint,
        mask_width,
        max_tokens: opts.max_tokens,
        meta: &meta,
    };
    let stop_gates = || machine.stop_gates(&vocab::TokenText::new(vocab, &machine.specials));
    // The gates are found beside the sections that do not read them.
    let (payload, forms) = if threads > 1 {
        std::thread::scope(|scope| {
            let gates = scope.spawn(stop_gates);
            write::payload(&input, || {
                gates
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        })?
    } else {
        write::payload(&input, stop_gates)?
    };
    let payload_bytes = payload.len();
    let artifact = match opts.zstd_level {
        Some(level) => write::compress(&payload, level)?,
        None => payload,
    };
    let d = t.elapsed();
    phases.push(("write", d));
    progress(Progress::Done("write", d));

    let tiered_states = (0..dfa.n_states())
        .filter(|&s| masks.tier_index[s + 1] > masks.tier_index[s])
        .count();
    let max_tiers = (0..dfa.n_states())
        .map(|s| (masks.tier_index[s + 1] - masks.tier_index[s]) as usize + 1)
        .max()
        .unwrap_or(1);
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
        payload_bytes,
        artifact_bytes: artifact.len(),
        mask_width,
        phases,
        relaxed: machine.relaxed.clone(),
        repaired: set.repairs.clone(),
        min_tokens,
        token_dead: masks.token_dead,
        token_edges: masks.edges,
        loops: (
            masks.loops.per_state.iter().filter(|&&v| v != 0).count(),
            masks.loops.sets.len(),
            masks.loops.dropped,
        ),
        tiered_states,
        lower_tiers: masks.tiers.len(),
        max_tiers,
        max_tokens: opts.max_tokens,
    };
    Ok(Compiled { artifact, report })
}
