//! `tooldec-bench`: the side-by-side benchmark report.
//!
//! - `tooldec-bench report [--quick]` runs the suite and prints the markdown
//!   of BENCHMARKS.md to standard output.
//! - `tooldec-bench tools N [--distinct] -o FILE` writes the scale set of N
//!   tools (`--distinct`: no two share an argument machine).
//! - `tooldec-bench child ENGINE WORKLOAD TOKENIZER` builds one engine's
//!   index in a fresh process and prints a JSON line with its build time and
//!   peak memory (the report runs it so that each peak is measured alone).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = tooldec_bench::report::main(&args) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}
