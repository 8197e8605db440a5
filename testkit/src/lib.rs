//! Test support for the whole workspace: the integration tests
//! (`tests/`), the benchmarks (`bench/`), the evaluation (`eval/`) and the
//! conformance report (`conformance/`) all take these from here, so that
//! each exists once.
//!
//! - [`data`]: where the real data lives (`TOOLDEC_DATA`) and the rule a
//!   real-data test follows without it (skip) or with it broken (fail);
//!   [`data_dir`], [`data_file`], [`read_text`], [`parse_json`].
//! - [`bfcl`], [`toolbench`], [`toolkengpt`]: converters from published
//!   tool lists to the compiler's input (OpenAI function form).
//! - [`parsers`]: output parsers for every shipped call format, written
//!   from the formats' descriptions and not from their grammars; and
//!   [`parsers::reply`], the tolerant reading of a model's reply that the
//!   evaluation scores with.
//! - [`render`]: the one JSON renderer of the workspace's checks
//!   ([`render::spaced`], Python's `json.dumps` style) and ground-truth
//!   calls as text.
//! - [`schema`]: argument validation with the `jsonschema` crate.
//! - [`walk`]: a random walker over a loaded grammar (biased toward
//!   finishing), its seeds, and [`walks_from_env`].
//! - [`check_text`]: a text's real tokenization fed through a matcher.
//! - [`served`]: the served part of a grammar, for oracles.
//! - [`loaded`]: real tokenizers loaded once per test binary.
//! - [`failures`]: collecting a test's failures and reporting them together.
//! - [`repo_path`] and [`example`]: the repository's files and its example
//!   tool lists.
//!
//! Everything here is test support: it panics with a clear message on
//! missing files rather than returning errors.

pub mod alloc;
pub mod bfcl;
mod check;
pub mod data;
pub mod failures;
pub mod loaded;
pub mod parsers;
pub mod render;
pub mod schema;
pub mod served;
pub mod toolbench;
pub mod toolkengpt;
pub mod walk;

pub use check::check_text;
pub use data::{data_dir, data_file, parse_json, read_text, DATA_ENV};
pub use walk::walks_from_env;

/// The path of `rel` in the repository.
pub fn repo_path(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// The example tool list `grammars/examples/NAME`, parsed.
pub fn example(name: &str) -> tooldec_compiler::spec::ToolSet {
    let path = repo_path(&format!("grammars/examples/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    tooldec_compiler::spec::parse(&path, &text).unwrap_or_else(|e| panic!("{path}: {e}"))
}
