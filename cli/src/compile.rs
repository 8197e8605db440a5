//! `tooldec-compile TOOLS.json -o OUT.tdm`: the command line of the
//! compiler, behind [`run`], which the `tooldec-compile` binary and the
//! Python package's console script of the same name call. Flags are
//! parsed into `Args` (what the user typed), resolved into a `Job`
//! (what we will do: the tool list, compiler [`Options`], the vocabulary
//! and the output), and the summary is printed from the compiler's
//! [`Report`].

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::{
    compile, limits, spec, Error, ErrorKind, Limits, Options, Progress, Report,
};
use tooldec_compiler::{JsonOptions, Whitespace};

/// Compile a tool list into a token-mask artifact for constrained decoding.
/// A bound or none, as `--time-limit` and `--memory-limit` read it.
#[derive(Debug, Clone, Copy)]
struct Bound<T>(Option<T>);

fn parse_seconds(text: &str) -> Result<Bound<std::time::Duration>, String> {
    limits::parse_seconds(text).map(Bound)
}

fn parse_bytes(text: &str) -> Result<Bound<usize>, String> {
    limits::parse_bytes(text).map(Bound)
}

fn whitespace(text: &str) -> Result<Whitespace, String> {
    Whitespace::parse(text).ok_or_else(|| format!("{text:?}: expected free or dumps"))
}

#[derive(Parser, Debug)]
#[command(name = "tooldec-compile", version)]
struct Args {
    /// The tool list: OpenAI, Anthropic, MCP, BFCL, ToolBench, OpenAPI 3 or
    /// a signature list (see --dialect).
    tools: PathBuf,
    /// The tool list's dialect: auto (recognized from its shape), openai,
    /// anthropic, mcp, bfcl, toolbench, openapi or signatures.
    #[arg(long, value_name = "NAME", default_value = "auto")]
    dialect: String,
    /// Where to write the artifact.
    #[arg(
        short,
        long,
        value_name = "OUT.tdm",
        required_unless_present = "print_regex"
    )]
    output: Option<PathBuf>,
    /// Print the grammar as one regular expression (regex-syntax, Unicode
    /// mode) to standard output instead of compiling an artifact; the
    /// tokenizer only decides whether an optional leading space is allowed.
    #[arg(long)]
    print_regex: bool,
    /// A Hugging Face tokenizer.json, or a GGUF model file (its
    /// tokenizer.ggml.* metadata); without it, the built-in GPT-2 vocabulary.
    #[arg(long, value_name = "PATH")]
    tokenizer: Option<PathBuf>,
    /// The call format: a shipped one (react, hermes, json, toolken, llama3,
    /// llama-pythonic, mistral, mistral-v11, qwen3, qwen3-coder, glm-4.5,
    /// glm-4.7, deepseek-r1, deepseek-v3.1, deepseek-v3.2, kimi-k2, gpt-oss,
    /// minimax-m2, granite, gemma4; README's Call formats) or the path of a
    /// format file (.tdg).
    #[arg(long, default_value = "react")]
    format: String,
    /// Keep only this entry rule of the format (a smaller artifact that
    /// serves one entry); default: all of them.
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
    /// End-of-sequence tokens (strings or ids); default: eos_token of the
    /// tokenizer_config.json next to the tokenizer (for a GGUF file: its
    /// eos, eot and eom token ids).
    #[arg(long, value_name = "TOKEN", num_args = 1..)]
    eos: Vec<String>,
    /// The model's logits size (mask width); default: the tokenizer's token count.
    #[arg(long, value_name = "N")]
    vocab_size: Option<u32>,
    /// Most whitespace bytes between two JSON tokens (with `--whitespace free`).
    #[arg(long, default_value_t = JsonOptions::default().max_ws)]
    max_ws: u32,
    /// Where JSON arguments may hold whitespace: `free` (up to --max-ws
    /// bytes between any two tokens) or `dumps` (exactly Python's
    /// json.dumps spacing, `, ` and `: `, as chat templates write it).
    #[arg(long, value_name = "POLICY", default_value = "free", value_parser = whitespace)]
    whitespace: Whitespace,
    /// Deepest schema nesting.
    #[arg(long, default_value_t = JsonOptions::default().max_depth)]
    max_depth: usize,
    /// Objects that do not say `additionalProperties` accept extra
    /// properties, as JSON Schema reads them; by default they accept only
    /// their declared properties (a model cannot invent arguments).
    #[arg(long)]
    open_objects: bool,
    /// Objects with at most N declared properties accept them in any order
    /// (0: declared order only; each object costs up to 2^N states).
    #[arg(long, value_name = "N", default_value_t = JsonOptions::default().any_order)]
    any_order: usize,
    /// How many times a recursive $ref is unrolled along one path.
    #[arg(long, value_name = "N", default_value_t = JsonOptions::default().max_recursion)]
    max_recursion: usize,
    /// Deepest nesting of a value a schema leaves free (`true`, `{}`, an
    /// array without `items`, `additionalProperties: true`).
    #[arg(long, value_name = "N", default_value_t = JsonOptions::default().any_depth)]
    any_depth: usize,
    /// maxLength/maxItems above N are lowered as N (a subset of the valid
    /// values that keeps counting machines small).
    #[arg(long, value_name = "N", default_value_t = JsonOptions::default().max_count)]
    max_count: u32,
    /// Over-approximate what cannot be expressed exactly (uniqueItems, not,
    /// overlapping oneOf ...) instead of refusing it; the summary lists
    /// each approximation.
    #[arg(long)]
    relax: bool,
    /// Two different tools with one name (across the queries of a BFCL or
    /// ToolBench file, the servers of an MCP capture): keep the first and
    /// rename the later ones NAME_2, NAME_3, ... instead of failing.
    #[arg(long)]
    rename_collisions: bool,
    /// Repair what a sloppy tool list gets wrong in a way with one clear
    /// reading (a number keyword written as a string, "maximum": "50"; an
    /// array's enum meant for its items; a tool repeated identically); the
    /// summary and the artifact's metadata list each repair. The engine
    /// adapters repair by default.
    #[arg(long)]
    repair: bool,
    /// Most DFA states before minimization.
    #[arg(long, default_value_t = Options::default().max_states)]
    max_states: usize,
    /// Most NFA states.
    #[arg(long, default_value_t = Options::default().max_nfa_states)]
    max_nfa_states: usize,
    /// Stop the compile with an error after this many seconds (or none).
    #[arg(long, value_name = "SECONDS", default_value = "3600", value_parser = parse_seconds)]
    time_limit: Bound<std::time::Duration>,
    /// Stop the compile with an error when its automata and masks would
    /// pass this size: bytes, or 512MiB, 2GiB ... (or none).
    #[arg(long, value_name = "SIZE", default_value = "16GiB", value_parser = parse_bytes)]
    memory_limit: Bound<usize>,
    /// zstd compression level (1-22; 19 saves ~10% more bytes at 10-20x the time).
    #[arg(long, default_value_t = 9)]
    zstd_level: i32,
    /// Write the raw payload (for no_std loaders) instead of zstd.
    #[arg(long)]
    uncompressed: bool,
    /// Threads for the subset construction and the vocabulary crossing (0: all cores); the artifact is the same for any number.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Complete within N tokens: every matcher starts with a budget of N
    /// tokens (an EOS counts as one) and its masks only allow tokens after which a
    /// complete output still fits, so every sampling path is a complete,
    /// valid call by its N-th token. Refused when the shortest complete
    /// output needs more. The artifact is the same size for every N: the
    /// runtime can serve any other budget too (matcher_with_budget).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// Leave out the region table (which part of a call each state
    /// writes), which `tooldec inspect`, `explain` and `draw` read; the
    /// masks are the same.
    #[arg(long)]
    no_regions: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,
}

/// Runs `tooldec-compile` with the command line `args` (the program name
/// first, as `std::env::args_os` gives it) and returns its exit code: 0
/// when the artifact (or the regex) was written, or for `--help` and
/// `--version`; 2 for a usage error (clap's, or no output); 1 for every
/// other error. Prints to standard output and standard error as the
/// binary does, and never exits the process: the binary and the Python
/// package's `tooldec-compile` console script both call it, so they take
/// the same flags and write the same bytes.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match Args::try_parse_from(args) {
        // Help and version go to standard output with exit code 0; a bad
        // command line to standard error with 2, as `Args::parse` does.
        Err(e) => {
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
        Ok(args) => {
            let started = Instant::now();
            match Job::resolve(&args).and_then(|job| job.run(started)) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: {e}");
                    if e.kind() == ErrorKind::Usage {
                        2
                    } else {
                        1
                    }
                }
            }
        }
    };
    // In a process that goes on (Python's), what was printed must be out
    // before the caller prints or exits.
    let _ = std::io::stdout().flush();
    code
}

/// Where the vocabulary comes from.
enum VocabSource {
    /// A GGUF model file's tokenizer.
    Gguf(PathBuf),
    /// A Hugging Face tokenizer.json.
    TokenizerJson(PathBuf),
    /// The built-in GPT-2 vocabulary.
    Builtin,
}

/// What to write.
enum Output {
    /// The grammar as one regular expression, on standard output.
    Regex,
    /// The artifact, at this path.
    Artifact(PathBuf),
}

/// What `tooldec-compile` will do: the flags resolved into the tool list,
/// compiler [`Options`], a vocabulary source and an output.
struct Job {
    tools: spec::ToolSet,
    opts: Options,
    vocab: VocabSource,
    /// `--eos`, as typed (strings or ids).
    eos: Vec<String>,
    output: Output,
    quiet: bool,
}

impl Job {
    /// Resolves `args`: loads the call format and reads the tool list.
    fn resolve(args: &Args) -> Result<Job, Error> {
        let opts = Options {
            format: match &args.entry {
                Some(entry) => CallFormat::load(&args.format)?.only_entry(entry)?,
                None => CallFormat::load(&args.format)?,
            },
            json: JsonOptions {
                max_ws: args.max_ws,
                whitespace: args.whitespace,
                max_depth: args.max_depth,
                open_objects: args.open_objects,
                any_order: args.any_order,
                max_recursion: args.max_recursion,
                any_depth: args.any_depth,
                max_count: args.max_count,
                relax: args.relax,
            },
            max_states: args.max_states,
            max_nfa_states: args.max_nfa_states,
            mask_width: args.vocab_size,
            zstd_level: (!args.uncompressed).then_some(args.zstd_level),
            threads: args.threads,
            max_tokens: args.max_tokens,
            regions: !args.no_regions,
            limits: Limits {
                time: args.time_limit.0,
                memory: args.memory_limit.0,
                ..Limits::offline()
            },
            stop_entries: true,
        };
        let shown = args.tools.display().to_string();
        let text = std::fs::read_to_string(&args.tools)
            .map_err(|e| Error::new(ErrorKind::Io, format!("{shown}: cannot read: {e}")))?;
        let tools = spec::parse_with(
            &shown,
            &text,
            &spec::ParseOptions {
                dialect: args.dialect.parse()?,
                collisions: if args.rename_collisions {
                    spec::Collisions::Rename
                } else {
                    spec::Collisions::Error
                },
                repair: args.repair,
            },
        )?;
        let vocab = match &args.tokenizer {
            Some(path) if tooldec_compiler::vocab::is_gguf(path) => VocabSource::Gguf(path.clone()),
            Some(path) => VocabSource::TokenizerJson(path.clone()),
            None => VocabSource::Builtin,
        };
        // Without --print-regex, clap requires -o.
        let output = match (&args.output, args.print_regex) {
            (_, true) => Output::Regex,
            (Some(path), false) => Output::Artifact(path.clone()),
            (None, false) => {
                return Err(Error::new(ErrorKind::Usage, "no output file (-o OUT.tdm)"))
            }
        };
        Ok(Job {
            tools,
            opts,
            vocab,
            eos: args.eos.clone(),
            output,
            quiet: args.quiet,
        })
    }

    /// Loads the vocabulary, compiles, writes and prints the summary
    /// (timed from `started`).
    fn run(&self, started: Instant) -> Result<(), Error> {
        let quiet = self.quiet;
        let mut progress = |p: Progress| {
            if quiet {
                return;
            }
            let mut err = std::io::stderr().lock();
            match p {
                Progress::Start(name) => {
                    let _ = write!(err, "  {name:<12}...");
                }
                Progress::Done(_, d) => {
                    let _ = writeln!(err, " {:.1?}", d);
                }
            }
            let _ = err.flush();
        };
        progress(Progress::Start("vocab"));
        let t = Instant::now();
        let vocab = self.load_vocab()?;
        let vocab_time = t.elapsed();
        progress(Progress::Done("vocab", vocab_time));

        let output = match &self.output {
            Output::Regex => {
                let rx = tooldec_compiler::regex(&self.tools, &self.opts, &vocab)?;
                let mut out = std::io::stdout().lock();
                return writeln!(out, "{rx}")
                    .map_err(|e| Error::new(ErrorKind::Io, format!("standard output: {e}")));
            }
            Output::Artifact(path) => path,
        };
        let compiled = compile(&self.tools, &vocab, &self.opts, &mut progress)?;
        std::fs::write(output, &compiled.artifact).map_err(|e| {
            Error::new(
                ErrorKind::Io,
                format!("{}: cannot write: {e}", output.display()),
            )
        })?;
        if !quiet {
            print_summary(
                &compiled.report,
                &vocab,
                vocab_time,
                started.elapsed(),
                output,
            );
        }
        Ok(())
    }

    fn load_vocab(&self) -> Result<Vocab, Error> {
        Ok(match &self.vocab {
            VocabSource::Gguf(path) => Vocab::from_gguf(path, &self.eos)?,
            VocabSource::TokenizerJson(path) => Vocab::from_tokenizer_json(path, &self.eos)?,
            VocabSource::Builtin => {
                let mut v = Vocab::builtin_gpt2()?;
                if !self.eos.is_empty() {
                    let ids = self
                        .eos
                        .iter()
                        .map(|e| v.resolve(e))
                        .collect::<Result<Vec<_>, _>>();
                    let ids = ids.map_err(|e| Error::new(ErrorKind::Vocab, e))?;
                    v = Vocab::from_tokens(v.tokens, ids, &v.label)?;
                }
                v
            }
        })
    }
}

fn print_summary(
    r: &Report,
    vocab: &Vocab,
    vocab_time: std::time::Duration,
    total: std::time::Duration,
    out: &std::path::Path,
) {
    println!(
        "wrote {} ({} bytes; {} bytes uncompressed)",
        out.display(),
        r.artifact_bytes,
        r.payload_bytes
    );
    println!("  tools          {}", r.tools);
    println!(
        "  vocabulary     {} | mask width {} tokens, eos {:?}",
        vocab.label, r.mask_width, vocab.eos
    );
    let fingerprint: String = vocab
        .fingerprint()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // What an engine passes to Grammar::check_vocabulary.
    println!("  fingerprint    sha256 {fingerprint} (vocabulary)");
    println!(
        "  states         NFA {} -> DFA {} -> minimized {} ({} byte classes)",
        r.nfa_states, r.dfa_states, r.min_states, r.classes
    );
    println!(
        "  masks          {} distinct ({} dense, {} allow-lists, {} deny-lists, {} deltas; {} words)",
        r.masks, r.forms.dense, r.forms.allow, r.forms.deny, r.forms.delta, r.forms.words
    );
    println!(
        "  token trie     {} nodes, {} visited over all states outside the cached regions (two walks)",
        r.trie_nodes, r.nodes_visited
    );
    let mins: Vec<String> = r
        .min_tokens
        .iter()
        .map(|(name, d)| {
            if r.min_tokens.len() > 1 {
                format!("{name} {d}")
            } else {
                d.to_string()
            }
        })
        .collect();
    println!(
        "  tokens         shortest complete output {} tokens; {} token edges; {} states no token sequence completes (masked out)",
        mins.join(", "),
        r.token_edges,
        r.token_dead
    );
    let (looping, sets, dropped) = r.loops;
    println!(
        "  loops          {looping} states take the tokens that lead back to them without a walk ({sets} shared sets){}",
        if dropped > 0 {
            format!("; {dropped} more loop but walk (past the sets a payload stores)")
        } else {
            String::new()
        }
    );
    println!(
        "  budget tiers   {} states have {} tiers below their full mask (at most {} tiers per state){}",
        r.tiered_states,
        r.lower_tiers,
        r.max_tiers,
        match r.max_tokens {
            Some(n) => format!("; default budget --max-tokens {n}"),
            None => String::new(),
        }
    );
    let phases: Vec<String> = std::iter::once(("vocab", vocab_time))
        .chain(r.phases.iter().copied())
        .map(|(n, d)| format!("{n} {:.1?}", d))
        .collect();
    println!("  time           {:.2?} ({})", total, phases.join(", "));
    print_list(
        &r.repaired,
        "  repaired       {} repair(s) of the tool list (--repair):",
    );
    print_list(
        &r.relaxed,
        "  relaxed        {} over-approximation(s) (--relax): the machine may accept arguments the schema forbids here",
    );
}

/// A summary section: `header` with the count for `{}`, then the lines;
/// nothing when there are none.
fn print_list(lines: &[String], header: &str) {
    if lines.is_empty() {
        return;
    }
    println!("{}", header.replacen("{}", &lines.len().to_string(), 1));
    for line in lines {
        println!("    {line}");
    }
}
