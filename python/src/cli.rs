//! `tooldec-compile` in the wheel: the console script
//! (`tooldec._cli:main`) hands its command line to the Rust CLI's own entry
//! point, [`tooldec_cli::compile::run`], so that `pip install` users get
//! the same flags, output, exit codes and artifact bytes as the binary
//! without a Rust toolchain.

use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

/// The exit code of a Rust program that panicked: what the binary would
/// exit with (the panic message is printed by the panic hook, as there).
const PANIC_EXIT: u8 = 101;

/// Runs `tooldec-compile` with `argv` (the program name first) and returns
/// its exit code. It prints to the process's standard output and error
/// (file descriptors 1 and 2: flush Python's buffers first) and runs with
/// the GIL released.
#[pyfunction(name = "_compile_main")]
pub fn compile_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| tooldec_cli::compile::run(argv))).unwrap_or(PANIC_EXIT)
    })
}
