//! The library half of tooldec's command-line tools: what `tooldec
//! inspect`, `explain` and `draw` print ([`view`]). The binaries in
//! `src/bin/` parse flags, call the compiler library and this crate, and
//! own the terminal and the Graphviz process; the compiler library has
//! neither.

pub mod view;
