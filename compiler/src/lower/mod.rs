//! Lowering: from a parsed tool list and a call format to one [`Expr`]
//! (`crate::automaton::expr::Expr`) over bytes.
//!
//! - [`json`] lowers each tool's JSON Schema to its argument machine;
//! - [`value`] holds the exact value languages those machines use
//!   (integer and decimal ranges, `multipleOf`, string content, patterns,
//!   the JSON Schema `format` keyword's RFC grammars);
//! - [`call_format`] lowers the call format (a `.tdg` grammar file such as
//!   `react` or `hermes`) around the tool-name trie and those machines.

pub mod call_format;
pub mod json;
pub mod value;
