//! The library half of tooldec's command-line tools: what `tooldec
//! inspect`, `explain` and `draw` print ([`view`]), and the Graphviz
//! driver that renders a drawing ([`graphviz`]). The binaries in
//! `src/bin/` parse flags, resolve them into what to do, call the compiler
//! library and this crate, and own the terminal; the compiler library
//! prints nothing and runs no program.

#![deny(missing_docs)]

pub mod graphviz;
pub mod view;
