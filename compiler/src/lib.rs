//! tooldec's compiler: from a tool list to a token-mask artifact.
//!
//! The pipeline, one module per stage (`DESIGN.md` walks through it):
//!
//! 1. [`spec`] parses the tool list (OpenAI, Anthropic, MCP, BFCL,
//!    ToolBench, OpenAPI 3 or signatures; detected from its shape).
//! 2. [`json`] lowers each tool's JSON Schema to an [`expr::Expr`] (with
//!    [`lang`]'s exact value languages for ranges, formats and patterns), and
//!    [`format`] lowers the call format (a grammar file: `react`, `hermes`,
//!    ...) around the tool-name trie and those machines.
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

pub mod artifact;
pub mod automaton;
pub mod cross;
pub mod error;
pub mod lower;
pub mod spec;
pub mod vocab;

use std::time::{Duration, Instant};

use artifact::meta::{Meta, OptionsMeta, VocabMeta};
use artifact::write;
use automaton::expr::{self, Expr};
use automaton::{dfa, nfa, region};
pub use error::{Error, ErrorKind};
pub use lower::call_format::{self, CallFormat};
use lower::json::Lowering;
pub use lower::json::{self, JsonOptions};
use spec::ToolSet;
use vocab::Vocab;

/// Everything that shapes the artifact besides the tools and the vocab.
#[derive(Debug, Clone)]
pub struct Options {
    /// The call format (default: the shipped `react`).
    pub format: CallFormat,
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
    /// `--max-tokens`: the token budget every matcher starts with, checked
    /// against the fewest tokens each entry needs. The tables that serve
    /// budgets are in every artifact; this only sets the default.
    pub max_tokens: Option<u32>,
    /// Keep the region table in the metadata (what `tooldec inspect`,
    /// `explain` and `draw` use to say where a state is); `false` for
    /// the smallest artifact (`--no-regions`).
    pub regions: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            format: CallFormat::load("react").expect("the shipped react format parses"),
            json: JsonOptions::default(),
            max_states: 2_000_000,
            max_nfa_states: 20_000_000,
            vocab_size: None,
            zstd_level: Some(9),
            threads: 0,
            max_tokens: None,
            regions: true,
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
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// Per entry: its name and the fewest tokens of a complete output.
    pub min_tokens: Vec<(String, u32)>,
    /// Served states from which no token sequence reaches acceptance
    /// (masked out: token-level liveness).
    pub token_dead: usize,
    /// Distinct token transitions between states.
    pub token_edges: usize,
    /// States with budget tiers below their unbudgeted mask, and the number
    /// of such tiers.
    pub tiered_states: usize,
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
    pub report: Report,
}

/// A phase starting or ending, for progress display.
#[derive(Debug, Clone, Copy)]
pub enum Progress {
    Start(&'static str),
    Done(&'static str, Duration),
}

/// The whole grammar of a tool set as an [`Expr`], with its entry rules
/// and the special tokens it uses.
pub fn lower(set: &ToolSet, opts: &Options, vocab: &Vocab) -> Result<call_format::Lowered, Error> {
    let mut lowering = Lowering::new(set, opts.json);
    let mut args = Vec::with_capacity(set.tools.len());
    // Tools with the same parameters schema share one argument machine: the
    // NFA builds it once, determinization reaches one copy of its states,
    // and minimization has that much less to merge.
    let keys: Vec<String> = set.tools.iter().map(|t| t.parameters.to_string()).collect();
    let mut groups: std::collections::HashMap<&str, Vec<u32>> = std::collections::HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i as u32);
    }
    let mut seen: std::collections::HashMap<&str, Expr> = std::collections::HashMap::new();
    for (i, key) in keys.iter().enumerate() {
        let e = match seen.get(key.as_str()) {
            Some(e) => e.clone(),
            None => {
                let tools = groups[key.as_str()].clone();
                let e = Expr::shared(Expr::tag(
                    region::Tag::Args { tools },
                    lowering.tool_arguments(i)?,
                ));
                seen.insert(key, e.clone());
                e
            }
        };
        args.push(e);
    }
    let mut positional = |i: usize| lowering.tool_positional(i);
    let mut parts = call_format::ToolParts {
        names: set.tools.iter().map(|t| t.name.clone()).collect(),
        args,
        positional: &mut positional,
    };
    let mut lowered = call_format::lower(&opts.format, &mut parts, vocab)?;
    lowered.relaxed = std::mem::take(&mut lowering.relaxed);
    Ok(lowered)
}

/// The whole grammar of a tool set as one regular expression (the syntax of
/// `regex-syntax`, Unicode mode), for running other engines on exactly the
/// language this compiler builds: that of the format's first entry.
/// Formats that use special tokens have no such spelling (their reserved
/// bytes are not text).
pub fn regex(set: &ToolSet, opts: &Options, vocab: &Vocab) -> Result<String, Error> {
    let mut opts = opts.clone();
    if let Some(first) = opts.format.entries().first() {
        opts.format = opts.format.only_entry(first)?;
    }
    let lowered = lower(set, &opts, vocab)?;
    expr::to_regex(&lowered.expr).map_err(|m| {
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

/// A minimized DFA with its entry points.
pub struct Machine {
    pub dfa: dfa::Dfa,
    /// Entry rule names and their start states; the first is the default.
    /// With several entries, `dfa.start` is a selector state that no token
    /// reaches, and each entry's state is where its selector leads.
    pub entries: Vec<(String, u32)>,
    /// The special tokens the grammar uses.
    pub specials: Vec<u32>,
    /// Over-approximations made under `--relax`, one line each.
    pub relaxed: Vec<String>,
    /// The region tree of the grammar (see [`region`]).
    pub regions: Vec<region::Region>,
    /// Each state's regions, sorted.
    pub labels: Vec<Vec<u32>>,
}

/// Time spent per named phase.
pub type Phases = Vec<(&'static str, Duration)>;

/// Lowers, determinizes, trims and minimizes.
pub fn build_dfa(
    set: &ToolSet,
    opts: &Options,
    vocab: &Vocab,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    build_lowered(
        || lower(set, opts, vocab),
        opts,
        |e| blame(e, set, opts, 0..set.tools.len()),
        progress,
    )
}

/// Adds to a state-bound error the part of the schemas that exceeds the
/// bound on its own, if one does.
fn blame(e: Error, set: &ToolSet, opts: &Options, tools: std::ops::Range<usize>) -> Error {
    if e.kind() != ErrorKind::Limit {
        return e;
    }
    let mut lowering = Lowering::new(set, opts.json);
    for i in tools {
        if let Some(place) = lowering.blame(i, opts.max_states, opts.max_nfa_states) {
            return Error::new(
                ErrorKind::Limit,
                format!(
                    "{}; the part of the schema responsible: {place} (tool {:?})",
                    e.message(),
                    set.tools[i].name
                ),
            );
        }
    }
    e
}

/// The grammar of one JSON Schema on its own: the whole output is one JSON
/// value that the schema accepts (tool 0 of `set`; see
/// [`spec::schema_document`]). No call format surrounds it.
pub fn lower_schema(set: &ToolSet, opts: &Options) -> Result<call_format::Lowered, Error> {
    let mut lowering = Lowering::new(set, opts.json);
    let expr = lowering.schema_value(0)?;
    Ok(call_format::Lowered {
        expr,
        entries: vec!["value".to_string()],
        specials: Vec::new(),
        relaxed: lowering.relaxed,
    })
}

/// [`build_dfa`] for the grammar of [`lower_schema`].
pub fn build_schema_dfa(
    set: &ToolSet,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
    build_lowered(
        || lower_schema(set, opts),
        opts,
        |e| blame(e, set, opts, 0..1),
        progress,
    )
}

/// Times `lower` and the NFA build as the "lower" phase, then
/// determinizes, trims and minimizes; a state bound exceeded on the way
/// goes through `blame`.
fn build_lowered(
    lower: impl FnOnce() -> Result<call_format::Lowered, Error>,
    opts: &Options,
    blame: impl FnOnce(Error) -> Error,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Machine, DfaStats, Phases), Error> {
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
    let lowered = lower()?;
    let nfa = match nfa::build(&lowered.expr, opts.max_nfa_states) {
        Ok(nfa) => nfa,
        Err(limit) => return Err(blame(limit.into())),
    };
    drop(lowered.expr);
    done(&mut phases, progress);

    let done = timed("determinize", progress);
    let (mut dfa, labels) = match dfa::Dfa::determinize_labeled(&nfa, opts.max_states) {
        Ok(dfa) => dfa,
        Err(limit) => return Err(blame(limit.into())),
    };
    let stats = DfaStats {
        nfa_states: nfa.states.len(),
        dfa_states: dfa.n_states(),
    };
    let regions = nfa.regions;
    drop(nfa.states);
    let unminimized = dfa.clone();
    done(&mut phases, progress);

    let done = timed("minimize", progress);
    if !dfa.trim() {
        return Err(Error::new(
            ErrorKind::Grammar,
            "the grammar accepts no output at all",
        ));
    }
    dfa.minimize();
    let labels = unminimized.carry_labels(&labels, &dfa);
    drop(unminimized);
    done(&mut phases, progress);
    let entries = if lowered.entries.len() == 1 {
        vec![(lowered.entries[0].clone(), dfa.start)]
    } else {
        lowered
            .entries
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let s = dfa.walk(dfa.start, &[call_format::ENTRY_ESCAPE, k as u8]);
                if s == dfa::DEAD {
                    Err(Error::new(
                        ErrorKind::Grammar,
                        format!(
                            "entry {name:?} of format {:?} accepts no output",
                            opts.format.name
                        ),
                    ))
                } else {
                    Ok((name.clone(), s))
                }
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let machine = Machine {
        dfa,
        entries,
        specials: lowered.specials,
        relaxed: lowered.relaxed,
        regions,
        labels,
    };
    Ok((machine, stats, phases))
}

impl Machine {
    /// The states a matcher can be in: those reached from an entry by text
    /// bytes and by whole special tokens. The others (the entry selector,
    /// the inside of a special token's reserved bytes) get an empty mask.
    pub fn served_states(&self) -> Vec<bool> {
        let dfa = &self.dfa;
        let mut seen = vec![false; dfa.n_states()];
        let mut stack: Vec<u32> = self.entries.iter().map(|e| e.1).collect();
        for &s in &stack {
            seen[s as usize] = true;
        }
        let markers: Vec<[u8; 4]> = self
            .specials
            .iter()
            .map(|&id| call_format::special_marker(id))
            .collect();
        while let Some(s) = stack.pop() {
            let text = (0..call_format::ENTRY_ESCAPE).map(|b| dfa.next(s, b));
            let specials = markers.iter().map(|m| dfa.walk(s, m));
            for t in text.chain(specials) {
                if t != dfa::DEAD && !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        seen
    }
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
    let built = build_dfa(set, opts, vocab, progress)?;
    compile_machine(set, vocab, opts, built, progress)
}

/// Compiles one JSON Schema (tool 0 of `set`, see [`spec::schema_document`])
/// into an artifact whose whole output is one JSON value the schema accepts.
pub fn compile_schema(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    let built = build_schema_dfa(set, opts, progress)?;
    compile_machine(set, vocab, opts, built, progress)
}

fn compile_machine(
    set: &ToolSet,
    vocab: &Vocab,
    opts: &Options,
    (machine, stats, mut phases): (Machine, DfaStats, Phases),
    progress: &mut dyn FnMut(Progress),
) -> Result<Compiled, Error> {
    let n_tokens = vocab.len() as u32;
    let vocab_size = opts.vocab_size.unwrap_or(n_tokens);
    let dfa = &machine.dfa;
    let text = vocab::TokenText::new(vocab, &machine.specials);
    let served = machine.served_states();

    progress(Progress::Start("cross"));
    let t = Instant::now();
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.threads
    };
    let masks = cross::masks(
        dfa,
        &text,
        vocab,
        &served,
        tooldec_runtime::layout::mask_words(vocab_size),
        threads,
    )?;
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
    let meta = metadata(set, vocab, opts, &machine);
    let (payload, forms) = write::payload(&write::Input {
        dfa,
        entries: &machine.entries,
        crossed: &masks,
        text: &text,
        vocab,
        vocab_size,
        max_tokens: opts.max_tokens,
        meta: &meta,
    })?;
    let artifact = match opts.zstd_level {
        Some(level) => write::compress(&payload, level)?,
        None => payload.clone(),
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
        payload_bytes: payload.len(),
        artifact_bytes: artifact.len(),
        vocab_size,
        phases,
        relaxed: machine.relaxed.clone(),
        min_tokens,
        token_dead: masks.token_dead,
        token_edges: masks.edges,
        tiered_states,
        lower_tiers: masks.tiers.len(),
        max_tiers,
        max_tokens: opts.max_tokens,
    };
    Ok(Compiled { artifact, report })
}

/// The artifact's metadata (see [`artifact::meta`]).
fn metadata(set: &ToolSet, vocab: &Vocab, opts: &Options, machine: &Machine) -> String {
    let j = &opts.json;
    let mut meta = Meta {
        generator: concat!("tooldec-compile ", env!("CARGO_PKG_VERSION")).to_string(),
        format: opts.format.name.clone(),
        entries: machine.entries.iter().map(|(n, _)| n.clone()).collect(),
        grammar_specials: machine.specials.clone(),
        tools: set.names().into_iter().map(str::to_string).collect(),
        vocab: VocabMeta {
            label: vocab.label.clone(),
            kind: vocab.kind.name().to_string(),
            leading_space: vocab.leading_space,
            specials: vocab
                .specials()
                .into_iter()
                .map(|(id, name)| (id, name.to_string()))
                .collect(),
        },
        options: OptionsMeta {
            max_ws: j.max_ws,
            max_depth: j.max_depth,
            open_objects: j.open_objects,
            any_order: j.any_order,
            max_recursion: j.max_recursion,
            any_depth: j.any_depth,
            max_count: j.max_count,
            relax: j.relax,
            max_tokens: opts.max_tokens,
        },
        relaxed: machine.relaxed.clone(),
        regions: None,
        state_regions: None,
    };
    if opts.regions {
        meta.set_regions(&machine.regions, &machine.labels);
    }
    meta.to_json_string()
}
