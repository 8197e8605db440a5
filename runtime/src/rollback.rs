//! Rollback with a fixed capacity, for speculative decoding.

use crate::{Error, Grammar, GrammarHandle, MatcherOf};

/// A matcher's position before one accepted token: what a
/// [`RollbackMatcher`] stores per token it can undo (8 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    pub(crate) state: u32,
    pub(crate) left: u32,
}

/// A matcher ([`MatcherOf`]) that can undo its last tokens: up to the capacity of the
/// history storage it was given at creation (an array, a boxed slice, a
/// borrowed slice), so accepting and rolling back never allocate.
///
/// Engines that verify speculative drafts need a depth of at least the
/// draft length + 1. When more tokens than the capacity have been
/// accepted, the oldest are forgotten: [`RollbackMatcher::depth`] says how
/// many can be undone now.
///
/// ```
/// # use tooldec_runtime::{Checkpoint, Grammar, RollbackMatcher};
/// # fn f(g: &Grammar<'_>, draft: &[u32]) {
/// let mut m = RollbackMatcher::new(g.matcher(), [Checkpoint::default(); 8]);
/// let ok = m.accept_tokens(draft);      // the prefix the grammar allows
/// m.rollback(ok.min(2));                // the engine rejected the last two
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RollbackMatcher<G, H> {
    matcher: MatcherOf<G>,
    history: H,
    /// Where the next checkpoint goes (a ring over `history`).
    head: usize,
    /// Checkpoints held, at most the capacity.
    len: usize,
}

impl<G: GrammarHandle, H: AsRef<[Checkpoint]> + AsMut<[Checkpoint]>> RollbackMatcher<G, H> {
    /// Wraps `matcher`; `history.len()` tokens can be rolled back.
    pub fn new(matcher: MatcherOf<G>, history: H) -> Self {
        RollbackMatcher {
            matcher,
            history,
            head: 0,
            len: 0,
        }
    }

    /// The most tokens that can ever be rolled back at once.
    pub fn capacity(&self) -> usize {
        self.history.as_ref().len()
    }

    /// How many of the accepted tokens can be rolled back now.
    pub fn depth(&self) -> usize {
        self.len
    }

    /// The matcher at the current position (for masks and queries).
    pub fn matcher(&self) -> &MatcherOf<G> {
        &self.matcher
    }

    /// The grammar, borrowed from the matcher's handle.
    pub fn grammar(&self) -> Grammar<'_> {
        self.matcher.handle().grammar()
    }

    /// Advances by one token, remembering the position before it; false
    /// (unchanged) if the token is not allowed: exactly when its mask bit
    /// is clear.
    pub fn accept_token(&mut self, token: u32) -> bool {
        let before = self.matcher.checkpoint();
        if !self.matcher.accept_token(token) {
            return false;
        }
        let cap = self.capacity();
        if cap > 0 {
            self.history.as_mut()[self.head] = before;
            self.head = (self.head + 1) % cap;
            self.len = (self.len + 1).min(cap);
        }
        true
    }

    /// Advances by several tokens; stops at the first one not allowed and
    /// returns how many were accepted.
    pub fn accept_tokens(&mut self, tokens: &[u32]) -> usize {
        tokens.iter().take_while(|&&t| self.accept_token(t)).count()
    }

    /// How many of `tokens`, in order, would be accepted; does not advance.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        self.matcher.validate_tokens(tokens)
    }

    /// Undoes the last `n` accepted tokens (state and tokens left).
    /// Returns false, changing nothing, if `n` exceeds
    /// [`RollbackMatcher::depth`].
    pub fn rollback(&mut self, n: usize) -> bool {
        if n > self.len {
            return false;
        }
        if n == 0 {
            return true;
        }
        let cap = self.capacity();
        self.head = (self.head + cap - n) % cap;
        self.len -= n;
        let cp = self.history.as_ref()[self.head];
        self.matcher.restore(cp);
        true
    }

    /// Back to the start with the creation budget; forgets the history.
    pub fn reset(&mut self) {
        self.matcher.reset();
        self.forget();
    }

    /// Restarts at entry point `name` (see [`MatcherOf::reset_to`]); forgets
    /// the history when it succeeds.
    pub fn reset_to(&mut self, name: &str) -> bool {
        let ok = self.matcher.reset_to(name);
        if ok {
            self.forget();
        }
        ok
    }

    /// Sets the tokens left from here on (see [`MatcherOf::set_budget`]).
    /// Rolling back restores the tokens left of the earlier position.
    pub fn set_budget(&mut self, left: Option<u32>) -> Result<(), Error> {
        self.matcher.set_budget(left)
    }

    /// Restricts the output to calls of one tool (see
    /// [`MatcherOf::restrict`]); the restriction survives rollback and
    /// resets.
    pub fn restrict(&mut self, tool: Option<u32>) -> Result<(), Error> {
        self.matcher.restrict(tool)
    }

    /// Forgets the history: nothing can be rolled back until new tokens
    /// are accepted.
    pub fn forget(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// See [`MatcherOf::fill_mask`].
    ///
    /// # Panics
    /// If `out` is shorter than the grammar's `mask_words()`.
    pub fn fill_mask(&self, out: &mut [u32]) {
        self.matcher.fill_mask(out)
    }

    /// See [`MatcherOf::try_fill_mask`].
    pub fn try_fill_mask(&self, out: &mut [u32]) -> bool {
        self.matcher.try_fill_mask(out)
    }

    /// See [`MatcherOf::is_accepting`].
    pub fn is_accepting(&self) -> bool {
        self.matcher.is_accepting()
    }

    /// See [`MatcherOf::is_terminated`].
    pub fn is_terminated(&self) -> bool {
        self.matcher.is_terminated()
    }

    /// See [`MatcherOf::tokens_left`].
    pub fn tokens_left(&self) -> Option<u32> {
        self.matcher.tokens_left()
    }

    /// See [`MatcherOf::forced_bytes`].
    pub fn forced_bytes(&self, out: &mut [u8]) -> usize {
        self.matcher.forced_bytes(out)
    }
}
