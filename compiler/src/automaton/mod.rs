//! The automaton stage: from an [`expr::Expr`] to a minimized byte DFA.
//!
//! [`expr`] is the grammar IR, [`nfa`] builds a byte NFA from it, [`dfa`]
//! determinizes (bounded), trims and minimizes it, and [`region`] carries
//! the names of the parts of a call through all three.

pub mod dfa;
pub mod expr;
pub mod nfa;
pub mod region;
