//! The evaluation harness: SmolLM2-135M-Instruct on BFCL, greedy decoding
//! with and without tooldec's masks.
//!
//! For each task it builds a ChatML prompt, compiles the task's tools with
//! the model's own vocabulary, prefills the prompt once, and decodes twice
//! from the same cache: unconstrained, and with the runtime's mask applied
//! before each argmax. Replies are read by the test kit's tolerant reply
//! parsers (`tooldec_testkit::parsers::reply`: written from the format
//! descriptions, not derived from the grammar) and scored by [`score`].

pub mod generate;
pub mod model;
pub mod prompt;
pub mod report;

pub mod run;
pub mod score;
pub mod sweep;
pub mod sweep_report;
pub mod tasks;
pub mod weights;
