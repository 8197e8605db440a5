//! Owned handles for bindings and servers (the `std` feature): a loaded
//! artifact shared between threads, and matchers that own a reference to
//! it, so neither borrows from the caller.

use std::boxed::Box;
use std::path::Path;
use std::sync::Arc;
use std::vec;

use crate::error::{Error, ErrorKind};
use crate::{Artifact, Checkpoint, Grammar, Matcher, RollbackMatcher};

/// A loaded artifact behind an `Arc`: clone it freely, share it between
/// threads (`Send + Sync`), and create one [`OwnedMatcher`] per request.
/// What the C ABI and the Python package hold.
#[derive(Clone)]
pub struct SharedGrammar(Arc<Inner>);

struct Inner {
    /// A view into `artifact`'s buffer. It claims `'static`, but is only
    /// handed out with lifetimes bounded by a borrow of a handle that
    /// keeps `artifact` alive.
    grammar: Grammar<'static>,
    /// Never moved or changed: its payload lives in its own allocation,
    /// which `grammar` points into.
    artifact: Arc<Artifact>,
}

impl SharedGrammar {
    /// Takes ownership of a loaded artifact.
    pub fn new(artifact: Artifact) -> SharedGrammar {
        let artifact = Arc::new(artifact);
        let grammar = artifact.grammar();
        // SAFETY: `grammar` borrows the payload inside the `Arc<Artifact>`
        // allocation, which `Inner` keeps alive (and never mutates) for as
        // long as any handle exists; every accessor shortens the lifetime
        // back to a borrow of such a handle, and `Grammar` and `Matcher`
        // are covariant in it.
        let grammar: Grammar<'static> = unsafe { core::mem::transmute(grammar) };
        SharedGrammar(Arc::new(Inner { grammar, artifact }))
    }

    /// Reads, decompresses and validates the artifact at `path`.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<SharedGrammar, Error> {
        Artifact::open(path).map(SharedGrammar::new)
    }

    /// Loads an artifact held in memory (compressed or a raw payload).
    pub fn from_bytes(bytes: &[u8]) -> Result<SharedGrammar, Error> {
        Artifact::from_bytes(bytes).map(SharedGrammar::new)
    }

    /// The grammar.
    pub fn grammar(&self) -> &Grammar<'_> {
        &self.0.grammar
    }

    /// The artifact (its decompressed payload).
    pub fn artifact(&self) -> &Artifact {
        &self.0.artifact
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
        let g: &'static Grammar<'static> = self.static_grammar();
        let state = match entry {
            None => g.start_state(),
            Some(name) => g.entry_state(name).ok_or(Error::new(ErrorKind::NoEntry))?,
        };
        let left = budget.map_or(g.default_budget(), |n| n.min(crate::UNBOUNDED - 1));
        let m = g.start_at(state, left)?;
        let history = vec![Checkpoint::default(); rollback].into_boxed_slice();
        Ok(OwnedMatcher {
            inner: RollbackMatcher::new(m, history),
            _owner: self.clone(),
        })
    }

    fn static_grammar(&self) -> &'static Grammar<'static> {
        // SAFETY: only stored in an `OwnedMatcher`, which holds a clone of
        // this handle (so the grammar outlives it) and never hands the
        // reference out with more than a borrow of itself.
        unsafe { &*(&self.0.grammar as *const Grammar<'static>) }
    }
}

/// A matcher that owns a handle to its artifact, with a rollback history
/// of fixed capacity: `'static`, `Send + Sync`, one per request. Created
/// by [`SharedGrammar::matcher`]; `clone` copies the history (the one
/// allocation besides creation).
#[derive(Clone)]
pub struct OwnedMatcher {
    inner: RollbackMatcher<'static, Box<[Checkpoint]>>,
    _owner: SharedGrammar,
}

impl OwnedMatcher {
    /// The matcher at the current position, for queries and
    /// [`crate::fill_batch`].
    pub fn matcher(&self) -> &Matcher<'_> {
        self.inner.matcher()
    }

    /// The grammar.
    pub fn grammar(&self) -> &Grammar<'_> {
        self.inner.matcher().grammar()
    }

    /// The artifact handle this matcher keeps alive.
    pub fn shared(&self) -> &SharedGrammar {
        &self._owner
    }

    /// See [`Matcher::fill_mask`].
    ///
    /// # Panics
    /// If `out` is shorter than the grammar's `mask_words()`.
    pub fn fill_mask(&self, out: &mut [u32]) {
        self.inner.fill_mask(out)
    }

    /// See [`Matcher::try_fill_mask`].
    pub fn try_fill_mask(&self, out: &mut [u32]) -> bool {
        self.inner.try_fill_mask(out)
    }

    /// See [`RollbackMatcher::accept_token`].
    pub fn accept_token(&mut self, token: u32) -> bool {
        self.inner.accept_token(token)
    }

    /// See [`RollbackMatcher::accept_tokens`].
    pub fn accept_tokens(&mut self, tokens: &[u32]) -> usize {
        self.inner.accept_tokens(tokens)
    }

    /// See [`Matcher::validate_tokens`].
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        self.inner.validate_tokens(tokens)
    }

    /// See [`RollbackMatcher::rollback`].
    pub fn rollback(&mut self, n: usize) -> bool {
        self.inner.rollback(n)
    }

    /// See [`RollbackMatcher::depth`].
    pub fn depth(&self) -> usize {
        self.inner.depth()
    }

    /// See [`RollbackMatcher::capacity`].
    pub fn capacity(&self) -> usize {
        self.inner.capacity()
    }

    /// See [`Matcher::is_accepting`].
    pub fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// See [`Matcher::is_terminated`].
    pub fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// See [`RollbackMatcher::reset`].
    pub fn reset(&mut self) {
        self.inner.reset()
    }

    /// See [`RollbackMatcher::reset_to`].
    pub fn reset_to(&mut self, name: &str) -> bool {
        self.inner.reset_to(name)
    }

    /// See [`Matcher::tokens_left`].
    pub fn tokens_left(&self) -> Option<u32> {
        self.inner.tokens_left()
    }

    /// See [`Matcher::set_budget`].
    pub fn set_budget(&mut self, left: Option<u32>) -> Result<(), Error> {
        self.inner.set_budget(left)
    }

    /// See [`Matcher::forced_bytes`].
    pub fn forced_bytes(&self, out: &mut [u8]) -> usize {
        self.inner.forced_bytes(out)
    }

    /// See [`Matcher::state`].
    pub fn state(&self) -> Option<u32> {
        self.inner.matcher().state()
    }
}
