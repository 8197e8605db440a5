//! Where the real data is: the one reading of `TOOLDEC_DATA` for the whole
//! workspace (tests, benchmarks, the evaluation and the conformance report).
//!
//! # The data rule
//!
//! Real tokenizers, tool corpora and models are not in the checkout; they
//! live in a folder named by the environment variable `TOOLDEC_DATA`. A test
//! that needs them follows one rule, so that `cargo test --workspace` passes
//! on a machine that has only the checkout and still cannot pass by
//! accident on one that was meant to have the data:
//!
//! - `TOOLDEC_DATA` unset or empty: [`data_dir`] is `None`; the test prints
//!   `TOOLDEC_DATA unset: skipping ...` and passes.
//! - `TOOLDEC_DATA` set: the data is expected. A missing folder or file is
//!   a failure whose message names the path ([`data_file`] panics so), never
//!   a skip: a typo in the variable must not turn the real-data tests into
//!   silent passes.
//!
//! A relative `TOOLDEC_DATA` is taken relative to the current directory when
//! it exists there, else relative to the workspace root: cargo runs test
//! binaries in their package's folder, so `TOOLDEC_DATA=../shared/data`
//! given from the workspace root means the same folder in every crate.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The environment variable naming the real-data directory.
pub const DATA_ENV: &str = "TOOLDEC_DATA";

/// The real-data directory, or `None` when `TOOLDEC_DATA` is unset (or
/// empty): real-data tests then print `TOOLDEC_DATA unset: skipping ...` and
/// pass. `Some` does not mean the folder exists: see the module's data rule.
///
/// A relative path is taken relative to the current directory when it exists
/// there, else relative to the workspace root (cargo runs test binaries in
/// the package directory, so `TOOLDEC_DATA=../shared/data` given from the
/// workspace root still works).
pub fn data_dir() -> Option<PathBuf> {
    let raw = std::env::var_os(DATA_ENV)?;
    if raw.is_empty() {
        return None;
    }
    let p = PathBuf::from(raw);
    if p.is_absolute() || p.exists() {
        return Some(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let from_root = root.join(&p);
    if from_root.exists() {
        Some(from_root)
    } else {
        Some(p)
    }
}

/// The path of `rel` under the data directory. Panics with a clear message
/// when `TOOLDEC_DATA` is unset or the file is missing: call it only after
/// [`data_dir`] returned `Some`.
pub fn data_file(rel: &str) -> PathBuf {
    let dir = data_dir().unwrap_or_else(|| {
        panic!("{DATA_ENV} is unset: cannot locate {rel} (check data_dir() first)")
    });
    let p = dir.join(rel);
    if !p.exists() {
        panic!(
            "{DATA_ENV}={} is set but the needed file {} is missing (see the data README.md)",
            dir.display(),
            p.display()
        );
    }
    p
}

/// Reads a file to a string, panicking with its path on error.
pub fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Parses JSON, panicking with the path and line on error.
pub fn parse_json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: invalid JSON: {e}"))
}
