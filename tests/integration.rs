//! The integration tests, one module per file, in one test binary.
//!
//! One binary instead of one per file: each binary linked the compiler,
//! the tokenizers and the schema validator and compiled their generic code
//! again, which made building these tests ~5 minutes of a 2-core CI run.
//! Files that need a process of their own stay apart (`Cargo.toml`):
//! `alloc_free` and `single_tool` install a counting global allocator, and
//! `compile_fuzz` reads the process's peak RSS.
//!
//! Run one file's tests with a filter on its module:
//! `cargo test -p tooldec-tests --test integration format_walks::`.

mod added_tokens;
mod budget_oracle;
mod chat_templates;
mod compiler_reuse;
mod dialects;
mod errors;
mod format_language;
mod format_walks;
mod formats;
mod fuzz;
mod golden;
mod hostile;
mod loader;
mod oracle;
mod parse;
mod pending;
// Shared by `fuzz` and `loader` (and, by path, the cargo-fuzz targets).
mod fuzz_common;

mod real_data;
mod serving;
mod snapshots;
mod stops;
mod vocab_reader;
