//! Owned handles for bindings and servers (the `std` feature): a loaded
//! artifact shared between threads, and matchers that own a reference to
//! it, so neither borrows from the caller.

use std::boxed::Box;
use std::path::Path;
use std::sync::Arc;
use std::vec;

use crate::error::Error;
use crate::{Artifact, Checkpoint, Grammar, GrammarHandle, MatcherOf, RollbackMatcher};

/// A loaded artifact behind an `Arc`: clone it freely, share it between
/// threads (`Send + Sync`), and create one [`OwnedMatcher`] per request.
/// What the C ABI and the Python package hold.
#[derive(Clone)]
pub struct SharedGrammar(Arc<Artifact>);

/// A matcher that owns a handle to its artifact, with a rollback history
/// of fixed capacity: `'static`, `Send + Sync`, one per request. Created
/// by [`SharedGrammar::matcher`]; `clone` copies the history (the one
/// allocation besides creation).
pub type OwnedMatcher = RollbackMatcher<SharedGrammar, Box<[Checkpoint]>>;

impl SharedGrammar {
    /// Takes ownership of a loaded artifact.
    pub fn new(artifact: Artifact) -> SharedGrammar {
        SharedGrammar(Arc::new(artifact))
    }

    /// Reads, decompresses and validates the artifact at `path`.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<SharedGrammar, Error> {
        Artifact::open(path).map(SharedGrammar::new)
    }

    /// Loads an artifact held in memory (compressed or a raw payload).
    pub fn from_bytes(bytes: &[u8]) -> Result<SharedGrammar, Error> {
        Artifact::from_bytes(bytes).map(SharedGrammar::new)
    }

    /// The grammar (a view over the shared payload, in constant time).
    #[inline]
    pub fn grammar(&self) -> Grammar<'_> {
        self.0.grammar()
    }

    /// The artifact (its decompressed payload).
    pub fn artifact(&self) -> &Artifact {
        &self.0
    }

    /// A matcher at entry `entry` (`None`: the default entry) with
    /// `budget` tokens (`None`: the artifact's default budget, if any)
    /// that can roll back up to `rollback` tokens. The history is
    /// allocated here, once: accepting and rolling back never allocate.
    pub fn matcher(
        &self,
        entry: Option<&str>,
        budget: Option<u32>,
        rollback: usize,
    ) -> Result<OwnedMatcher, Error> {
        let m = MatcherOf::start(self.clone(), entry, budget)?;
        let history = vec![Checkpoint::default(); rollback].into_boxed_slice();
        Ok(RollbackMatcher::new(m, history))
    }
}

impl GrammarHandle for SharedGrammar {
    #[inline]
    fn grammar(&self) -> Grammar<'_> {
        self.0.grammar()
    }
}

impl core::fmt::Debug for SharedGrammar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let g = self.grammar();
        f.debug_struct("SharedGrammar")
            .field("states", &g.state_count())
            .field("masks", &g.mask_count())
            .field("vocab_size", &g.mask_width())
            .finish_non_exhaustive()
    }
}
