//! The automaton stage: from an [`expr::Expr`] to a minimized byte DFA.
//!
//! [`expr`] is the grammar IR, [`nfa`] builds a byte NFA from it, [`dfa`]
//! determinizes it (bounded; the construction itself is `subsets.rs`, into
//! a [`sparse::SparseDfa`] of live moves) and trims it ([`lazy`]: state by
//! state, as walks reach them), [`minimize`] minimizes it into the
//! [`packed::PackedDfa`] the crossing walks and the writer copies, and
//! [`region`] carries
//! the names of the parts of a call through all three; [`machine`] runs
//! them in order on a lowered grammar.

pub mod dfa;
pub mod expr;
pub mod lazy;
pub mod machine;
pub mod minimize;
pub mod nfa;
pub mod packed;
pub mod region;
pub mod sparse;
mod subsets;
