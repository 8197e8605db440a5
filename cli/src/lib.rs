//! The library half of tooldec's command-line tools: `tooldec-compile`
//! ([`compile::run`], which the binary and the Python package's console
//! script call), what `tooldec inspect`, `explain` and `draw` print
//! (`view`, with the default `view` feature), and the Graphviz driver that
//! renders a drawing ([`graphviz`]). The binaries in `src/bin/` are thin:
//! `tooldec` parses its flags and owns the terminal; the compiler library
//! prints nothing and runs no program.
//!
//! Features: `view` (default) builds the `view` module and the `tooldec`
//! binary, which read tokenizers (`tokenizers`, `tiktoken-rs`) to turn a
//! text into token ids; without it the crate is `tooldec-compile` alone,
//! as the Python wheel links it.

#![deny(missing_docs)]

pub mod compile;
pub mod graphviz;
#[cfg(feature = "view")]
pub mod view;
