//! `tooldec inspect | explain | parse | draw`: seeing a compiled machine. Each
//! subcommand's flags are parsed into its own struct, then turned into
//! what the view code takes; all printing happens here.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use tooldec_cli::graphviz;
use tooldec_cli::view::{draw, explain, inspect, parse, Tokenizer, View};
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::CallFormat;
use tooldec_compiler::{compile, spec, Error, ErrorKind, Options};
use tooldec_runtime::Artifact;

/// Inspect, explain and draw compiled tool-call grammars (.tdm artifacts).
#[derive(Parser, Debug)]
#[command(name = "tooldec", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The artifact's header, tools, state and mask counts and bytes per
    /// section; with --state, one state's place and allowed tokens.
    Inspect(InspectArgs),
    /// Walk a text (or token ids) through the machine: exit 0 when it is
    /// accepted, else report the first refused token, where it was and
    /// what was allowed there.
    Explain(ExplainArgs),
    /// Read the tool calls back out of an output the machine accepts:
    /// prints them as JSON, `[{"name": ..., "arguments": {...}}]`, and
    /// exits 0; an output it refuses gets explain's diagnosis (on
    /// standard error) and exit 1. Takes explain's flags.
    Parse(ExplainArgs),
    /// Graphviz DOT of the machine (and SVG next to it when the `dot`
    /// program is installed): the format, the tool-name trie with token
    /// edges, one node per parameter; --tool expands one tool.
    Draw(DrawArgs),
}

/// `tooldec inspect`'s flags.
#[derive(Args, Debug)]
struct InspectArgs {
    /// The artifact (.tdm).
    artifact: PathBuf,
    /// List the tokens this state allows, grouped by where they lead.
    #[arg(long, value_name = "N")]
    state: Option<u32>,
    /// With --state: the mask for this many tokens left.
    #[arg(long, value_name = "N", requires = "state")]
    budget: Option<u32>,
}

/// `tooldec explain`'s flags.
#[derive(Args, Debug)]
struct ExplainArgs {
    /// The artifact (.tdm).
    artifact: PathBuf,
    /// A file holding the text ("-": standard input).
    file: Option<PathBuf>,
    /// The text itself.
    #[arg(long, conflicts_with_all = ["file", "tokens"])]
    text: Option<String>,
    /// Token ids, comma-separated, instead of a text.
    #[arg(long, value_name = "IDS", conflicts_with = "file")]
    tokens: Option<String>,
    /// The artifact's tokenizer.json (not needed for the built-in GPT-2
    /// vocabulary); it must have the artifact's vocabulary fingerprint.
    #[arg(long, value_name = "PATH")]
    tokenizer: Option<PathBuf>,
    /// The entry point to start from (default: the artifact's first).
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
}

/// `tooldec draw`'s flags.
#[derive(Args, Debug)]
struct DrawArgs {
    /// An artifact (.tdm), or a tool list to compile first.
    input: PathBuf,
    /// Where to write the DOT (default: standard output); OUT.svg is
    /// written beside it when `dot` is installed.
    #[arg(short, long, value_name = "OUT.dot")]
    output: Option<PathBuf>,
    /// Draw this tool's argument machine state by state; TOOL.PARAM
    /// draws one parameter (for machines too big to read whole).
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
    /// A tokenizer.json: the vocabulary to compile a tool list with, and
    /// the tokenizer of the name trie's token edges.
    #[arg(long, value_name = "PATH")]
    tokenizer: Option<PathBuf>,
    /// For a tool list: the call format (as tooldec-compile --format).
    #[arg(long, default_value = "react")]
    format: String,
    /// For a tool list: its dialect (as tooldec-compile --dialect).
    #[arg(long, value_name = "NAME", default_value = "auto")]
    dialect: String,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ran = match cli.command {
        Command::Inspect(args) => inspect(args).map(|()| true),
        Command::Explain(args) => explain(args),
        Command::Parse(args) => parse(args),
        Command::Draw(args) => draw(args).map(|()| true),
    };
    match ran {
        Ok(true) => ExitCode::SUCCESS,
        // explain or parse refused the text.
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(if e.kind() == ErrorKind::Usage { 2 } else { 1 })
        }
    }
}

fn io_err(path: &Path, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Io, format!("{}: {what}: {e}", path.display()))
}

fn open(path: &Path) -> Result<(Artifact, usize), Error> {
    let bytes = std::fs::read(path).map_err(|e| io_err(path, "cannot read", e))?;
    let a = Artifact::from_bytes(&bytes)
        .map_err(|e| Error::new(ErrorKind::Artifact, format!("{}: {e}", path.display())))?;
    Ok((a, bytes.len()))
}

fn print(text: &str) -> Result<(), Error> {
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(|e| Error::new(ErrorKind::Io, format!("standard output: {e}")))
}

fn inspect(args: InspectArgs) -> Result<(), Error> {
    let (a, file_bytes) = open(&args.artifact)?;
    let name = args.artifact.display().to_string();
    let v = View::new(a.grammar(), &name)?;
    let text = match args.state {
        Some(s) => inspect::state(&v, s, args.budget)?,
        None => inspect::inspect(
            &v,
            &inspect::Source {
                name: &name,
                file_bytes,
                payload: a.payload(),
            },
        ),
    };
    print(&text)
}

/// What explain walks: the text's tokens or the ids given, and where they
/// came from.
struct Walk {
    ids: Vec<u32>,
    source: String,
}

/// `Ok(false)` when the machine refuses the text.
fn explain(args: ExplainArgs) -> Result<bool, Error> {
    let (a, _) = open(&args.artifact)?;
    let v = View::new(a.grammar(), &args.artifact.display().to_string())?;
    let walk = match args.tokens {
        Some(list) => Walk {
            ids: parse_ids(&list, v.g.mask_width())?,
            source: "--tokens".to_string(),
        },
        None => {
            let text = read_text(args.text, args.file)?;
            let tok = Tokenizer::for_artifact(&v, args.tokenizer.as_deref())?;
            let source = match &args.tokenizer {
                Some(p) => format!("tokenized with {}", p.display()),
                None => format!("tokenized with {}", v.vocab_label()),
            };
            Walk {
                ids: tok.encode(&text)?,
                source,
            }
        }
    };
    let e = explain::explain(&v, args.entry.as_deref(), &walk.ids, &walk.source);
    print(&e.report)?;
    Ok(e.accepted)
}

/// `Ok(false)` when the machine refuses the output; the calls as JSON on
/// standard output otherwise.
fn parse(args: ExplainArgs) -> Result<bool, Error> {
    let (a, _) = open(&args.artifact)?;
    let v = View::new(a.grammar(), &args.artifact.display().to_string())?;
    let entry = args.entry.as_deref();
    let parsed = match args.tokens {
        Some(list) => {
            let ids = parse_ids(&list, v.g.mask_width())?;
            parse::parse(&v, entry, &parse::Output::Tokens(&ids))
        }
        None => {
            let text = read_text(args.text, args.file)?;
            // A tokenizer only for the diagnosis: reading needs none.
            let tok = match Tokenizer::for_artifact(&v, args.tokenizer.as_deref()) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == ErrorKind::Usage && args.tokenizer.is_none() => None,
                Err(e) => return Err(e),
            };
            let source = match &args.tokenizer {
                Some(p) => format!("tokenized with {}", p.display()),
                None => format!("tokenized with {}", v.vocab_label()),
            };
            parse::parse(
                &v,
                entry,
                &parse::Output::Text {
                    text: &text,
                    tokenizer: tok.as_ref(),
                    source: &source,
                },
            )
        }
    };
    match parsed.json {
        Some(json) => {
            print(&json)?;
            Ok(true)
        }
        None => {
            eprint!("{}", parsed.diagnosis);
            Ok(false)
        }
    }
}

/// The text to explain: `--text`, or FILE ("-": standard input).
fn read_text(text: Option<String>, file: Option<PathBuf>) -> Result<String, Error> {
    match (text, file) {
        (Some(t), _) => Ok(t),
        (None, Some(f)) if f.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| Error::new(ErrorKind::Io, format!("standard input: {e}")))?;
            Ok(s)
        }
        (None, Some(f)) => std::fs::read_to_string(&f).map_err(|e| io_err(&f, "cannot read", e)),
        (None, None) => Err(Error::new(
            ErrorKind::Usage,
            "nothing to explain: give a FILE, --text TEXT or --tokens IDS",
        )),
    }
}

fn draw(args: DrawArgs) -> Result<(), Error> {
    let input = &args.input;
    let tokenizer = args.tokenizer.as_deref();
    let bytes = std::fs::read(input).map_err(|e| io_err(input, "cannot read", e))?;
    let artifact = if looks_like_artifact(&bytes) {
        Artifact::from_bytes(&bytes)
            .map_err(|e| Error::new(ErrorKind::Artifact, format!("{}: {e}", input.display())))?
    } else {
        compile_tools(input, &bytes, tokenizer, &args.format, &args.dialect)?
    };
    let v = View::new(artifact.grammar(), &input.display().to_string())?;
    let tok = match Tokenizer::for_artifact(&v, tokenizer) {
        Ok(t) => Some(t),
        // Without the tokenizer the trie's token edges are the
        // longest matches over the artifact's own tokens.
        Err(e) if e.kind() == ErrorKind::Usage && tokenizer.is_none() => None,
        Err(e) => return Err(e),
    };
    let dot = draw::dot(
        &v,
        &draw::DrawOptions {
            tool: args.tool.as_deref(),
            tokenizer: tok.as_ref(),
        },
    )?;
    let Some(out) = args.output else {
        return print(&dot);
    };
    std::fs::write(&out, &dot).map_err(|e| io_err(&out, "cannot write", e))?;
    let svg_path = out.with_extension("svg");
    match graphviz::svg(&dot)? {
        Some(svg) => {
            std::fs::write(&svg_path, svg).map_err(|e| io_err(&svg_path, "cannot write", e))?;
            eprintln!("wrote {} and {}", out.display(), svg_path.display());
        }
        None => eprintln!(
            "wrote {} (no SVG: the Graphviz `dot` program is not installed)",
            out.display()
        ),
    }
    Ok(())
}

/// An artifact starts with the envelope's skippable frame, a zstd frame
/// or the payload's magic; a tool list with JSON.
fn looks_like_artifact(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x5E, 0x2A, 0x4D, 0x18])
        || bytes.starts_with(&[0x28, 0xB5, 0x2F, 0xFD])
        || bytes.starts_with(b"TOOLDEC\0")
}

fn parse_ids(list: &str, vocab: usize) -> Result<Vec<u32>, Error> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|s| !s.is_empty())
        .enumerate()
        .map(|(i, s)| {
            s.parse::<u32>()
                .ok()
                .filter(|&t| (t as usize) < vocab)
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::Usage,
                        format!(
                            "--tokens: item {} ({s:?}) is not a token id below the vocabulary size {vocab}",
                            i + 1
                        ),
                    )
                })
        })
        .collect()
}

/// Compiles a tool list in memory for `draw`.
fn compile_tools(
    path: &Path,
    bytes: &[u8],
    tokenizer: Option<&Path>,
    format: &str,
    dialect: &str,
) -> Result<Artifact, Error> {
    let shown = path.display().to_string();
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::new(ErrorKind::Io, format!("{shown}: not UTF-8: {e}")))?;
    let tools = spec::parse_with(
        &shown,
        text,
        &spec::ParseOptions {
            dialect: dialect.parse()?,
            ..Default::default()
        },
    )?;
    let vocab = match tokenizer {
        Some(p) if tooldec_compiler::vocab::is_gguf(p) => Vocab::from_gguf(p, &[])?,
        Some(p) => Vocab::from_tokenizer_json(p, &[])?,
        None => Vocab::builtin_gpt2()?,
    };
    let opts = Options {
        format: CallFormat::load(format)?,
        ..Options::default()
    };
    let compiled = compile(&tools, &vocab, &opts, &mut |_| {})?;
    Artifact::from_bytes(&compiled.artifact)
        .map_err(|e| Error::new(ErrorKind::Artifact, format!("{shown}: {e}")))
}
