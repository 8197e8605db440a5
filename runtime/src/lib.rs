//! The tooldec runtime: serves token masks from a compiled artifact.
//!
//! `tooldec-compile` does all the expensive work offline: it lowers a tool list
//! and a call format to a minimized DFA over bytes, crosses that DFA with a
//! tokenizer's vocabulary, and stores one token mask per DFA state. This crate
//! only reads those tables. After loading, [`Matcher::fill_mask`] is a copy of
//! stored words and [`Matcher::accept_token`] walks the token's few bytes
//! through the DFA: neither allocates nor looks at the rest of the vocabulary.
//!
//! The core is `#![no_std]` and needs no allocator: [`Grammar::from_bytes`]
//! validates a decompressed payload in place and returns a view over it,
//! and [`Artifact`] holds a validated payload in any storage (owned,
//! borrowed, shared) and views it in constant time. The `std` feature (on
//! by default) adds loading files (`Artifact::open`), owned handles for
//! bindings (`SharedGrammar`, `OwnedMatcher`) and writing payloads
//! (`codec::Payload::to_bytes`); the `zstd` feature (on by default)
//! decompresses compressed artifacts.
//!
//! Map: [`codec`] reads, checks and writes every section of a payload
//! (and explains the validation order); [`Grammar`] answers what serving
//! asks of them; [`MatcherOf`] walks one generation, through any
//! [`GrammarHandle`]; [`RollbackMatcher`] undoes tokens; [`Fingerprint`]
//! computes the vocabulary fingerprint an artifact is checked against.
//!
//! ```no_run
//! # fn main() -> Result<(), tooldec_runtime::Error> {
//! let art = tooldec_runtime::Artifact::open("tools.tdm")?;
//! let g = art.grammar();
//! let mut m = g.matcher();
//! let mut words = vec![0u32; g.mask_words()];
//! m.fill_mask(&mut words); // bit t % 32 of word t / 32 set = token t allowed
//! let t = 40; // the token the engine sampled
//! if m.accept_token(t) { /* advanced */ }
//! let done = m.is_accepting();
//! # let _ = done; Ok(()) }
//! ```
//!
//! Token budgets: [`Grammar::matcher_with_budget`] gives a matcher whose
//! masks only allow tokens after which the output can still be completed in
//! the tokens left, so every path that follows them is complete by its
//! `n`-th token. The tables behind it (each state's fewest tokens to
//! acceptance, masks tiered by that distance) are in every artifact and do
//! not depend on `n`; serving a budgeted mask is the same lookup and fill.
//!
//! Mask layout: `ceil(mask_width / 32)` `u32` words, the layout vLLM, SGLang,
//! XGrammar and llguidance share. Ids at or beyond the tokenizer's token count
//! (padding up to the model's logits size) are never allowed.

#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod artifact;
pub mod codec;
mod error;
pub mod fingerprint;
mod grammar;
mod matcher;
mod rollback;
#[cfg(feature = "std")]
mod shared;

pub use artifact::{Artifact, DefaultStorage};
pub use codec::layout;
pub use error::Error;
pub use fingerprint::Fingerprint;
pub use grammar::{check_fingerprint, check_logits_width, Grammar};
pub use matcher::{fill_batch, GrammarHandle, Lent, Matcher, MatcherOf};
pub use rollback::{Checkpoint, RollbackMatcher};
#[cfg(feature = "std")]
pub use shared::{OwnedMatcher, SharedGrammar};
