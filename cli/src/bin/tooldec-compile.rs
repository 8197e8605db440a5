//! `tooldec-compile TOOLS.json -o OUT.tdm`: the command line lives in the
//! library ([`tooldec_cli::compile::run`]), so that the Python package's
//! `tooldec-compile` runs the same code.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(tooldec_cli::compile::run(std::env::args_os()))
}
