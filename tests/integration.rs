//! The integration tests, one module per file, in one test binary.
//!
//! One binary instead of one per file: each binary linked the compiler,
//! the tokenizers and the schema validator again, and loaded the real
//! tokenizers again (DESIGN.md, *The integration tests are one binary*).
//! Files that need a process of their own stay apart (`Cargo.toml`):
//! `alloc_free` and `single_tool` install a counting global allocator, and
//! `compile_fuzz` reads the process's peak RSS.
//!
//! Run one file's tests with a filter on its module:
//! `cargo test -p tooldec-tests --test integration format_walks::`.

// Shared by `fuzz` and `loader` (the cargo-fuzz targets include it by path).
mod fuzz_common;

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
mod real_data;
mod serving;
mod snapshots;
mod stops;
mod vocab_reader;
