//! Matchers: the position of one generation in a grammar, generic over
//! how they hold it. One implementation serves [`Matcher`] (a borrowed
//! [`Grammar`]) and the owned matchers of bindings
//! ([`OwnedMatcher`](crate::OwnedMatcher), through a
//! [`SharedGrammar`](crate::SharedGrammar)).

use crate::codec::layout::reserved;
use crate::codec::tools::ToolView;
use crate::error::ErrorKind;
use crate::grammar::UNBOUNDED;
use crate::{Checkpoint, Error, Grammar};

/// The matcher state after an end-of-sequence token was accepted.
const TERMINATED: u32 = u32::MAX;

/// What a matcher holds to reach its grammar: a borrowed [`Grammar`], or a
/// handle that owns or shares the payload and views it in constant time
/// ([`SharedGrammar`](crate::SharedGrammar)). Needs no `unsafe`: a
/// handle that owns its payload hands out a view borrowed from itself.
pub trait GrammarHandle {
    /// The grammar, borrowed from the handle.
    fn grammar(&self) -> Grammar<'_>;

    /// The grammar as the matcher's calls read it: lent, not copied, where
    /// the handle holds one (a [`Grammar`] is some 500 bytes, and copying
    /// it was a fifth of an `accept_token`); a view built for the call
    /// otherwise (the default).
    #[inline]
    fn lend(&self) -> Lent<'_> {
        Lent::Built(self.grammar())
    }
}

/// A grammar lent by a [`GrammarHandle`]: borrowed from it, or a view
/// built for one call. Reads as a [`Grammar`].
// The built view is the size of a `Grammar` by design: it lives on the
// caller's stack for one call, and boxing it would allocate while serving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Lent<'h> {
    /// The handle's own grammar.
    Borrowed(&'h Grammar<'h>),
    /// A view of the handle's payload.
    Built(Grammar<'h>),
}

impl<'h> core::ops::Deref for Lent<'h> {
    type Target = Grammar<'h>;

    #[inline]
    fn deref(&self) -> &Grammar<'h> {
        match self {
            Lent::Borrowed(g) => g,
            Lent::Built(g) => g,
        }
    }
}

impl GrammarHandle for Grammar<'_> {
    #[inline]
    fn grammar(&self) -> Grammar<'_> {
        *self
    }

    #[inline]
    fn lend(&self) -> Lent<'_> {
        Lent::Borrowed(self)
    }
}

impl<G: GrammarHandle + ?Sized> GrammarHandle for &G {
    #[inline]
    fn grammar(&self) -> Grammar<'_> {
        (**self).grammar()
    }

    #[inline]
    fn lend(&self) -> Lent<'_> {
        (**self).lend()
    }
}

/// The position of one generation in a grammar: a DFA state and the
/// tokens it may still take, and the handle `G` it reaches the grammar
/// through. Usually spelled [`Matcher`] (borrowing a [`Grammar`]) or
/// [`OwnedMatcher`](crate::OwnedMatcher).
///
/// A handle, four `u32`s and a flag; a [`Matcher`] is `Copy`, so saving
/// one for lookahead or rollback costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct MatcherOf<G> {
    grammar: G,
    state: u32,
    /// Tokens it may still take, EOS included; [`UNBOUNDED`]: no budget.
    left: u32,
    /// The budget it was created with (restored by `reset`).
    budget: u32,
    /// The one tool its calls may name ([`NO_TOOL`]: any).
    tool: u32,
    /// Its entry stops after its first call: at a state that ends a call
    /// only the end of sequence is allowed ([`Grammar::entry`]).
    stops: bool,
}

/// [`MatcherOf::tool`] of a matcher that allows every tool.
const NO_TOOL: u32 = u32::MAX;

/// A matcher over a borrowed [`Grammar`]: what [`Grammar::matcher`] gives.
pub type Matcher<'g> = MatcherOf<&'g Grammar<'g>>;

impl<'g> Matcher<'g> {
    /// The grammar this matcher walks.
    pub fn grammar(&self) -> &'g Grammar<'g> {
        self.grammar
    }
}

impl<G: GrammarHandle> MatcherOf<G> {
    /// A matcher at `state` with `left` tokens (already checked).
    pub(crate) fn at(grammar: G, state: u32, left: u32) -> Self {
        MatcherOf {
            grammar,
            state,
            left,
            budget: left,
            tool: NO_TOOL,
            stops: false,
        }
    }

    /// This matcher, stopping after its first call if `stops` (its entry's
    /// flag, [`Grammar::entry`]).
    pub(crate) fn stopping(mut self, stops: bool) -> Self {
        self.stops = stops;
        self
    }

    /// Whether this matcher's entry stops after its first call
    /// ([`Grammar::entry`]): after a call's end it allows only EOS.
    #[inline]
    pub fn stops_after_call(&self) -> bool {
        self.stops
    }

    /// Whether no more text may follow here: the matcher's entry stops
    /// after its first call, and a call has just ended.
    #[inline]
    fn stopped(&self, g: &Grammar<'_>) -> bool {
        self.stops && g.ends_call(self.state)
    }

    /// A copy of this position that borrows the handle: for looking
    /// ahead without changing this matcher (or cloning its handle).
    fn probe(&self) -> MatcherOf<&G> {
        MatcherOf {
            grammar: &self.grammar,
            state: self.state,
            left: self.left,
            budget: self.budget,
            tool: self.tool,
            stops: self.stops,
        }
    }

    /// A matcher at entry `entry` (`None`: the default) with `budget`
    /// tokens (`None`: the artifact's default), if an output can be
    /// completed from there within them.
    pub fn start(grammar: G, entry: Option<&str>, budget: Option<u32>) -> Result<Self, Error> {
        let (state, left, stops) = grammar.grammar().start_at(entry, budget)?;
        Ok(MatcherOf::at(grammar, state, left).stopping(stops))
    }

    /// A matcher at entry `entry` (`None`: the default) whose output may
    /// call tool `tool` only (by index, [`Grammar::tool_index`]), with
    /// `budget` tokens (`None`: the artifact's default): every token its
    /// masks allow keeps the output inside the outputs whose calls all name
    /// that tool, completable within the budget. Fails when the artifact
    /// has no TOOLS section, the tool is out of range, a budget is asked
    /// of an artifact without per-tool distances, or the budget is too
    /// small for this tool.
    pub fn start_for_tool(
        grammar: G,
        entry: Option<&str>,
        tool: u32,
        budget: Option<u32>,
    ) -> Result<Self, Error> {
        let g = grammar.grammar();
        let (state, stops) = match entry {
            None => (g.start_state(), g.default_stops()),
            Some(name) => g.entry(name).ok_or(Error::new(ErrorKind::NoEntry))?,
        };
        let left = budget.map_or(g.default_budget(), |n| n.min(UNBOUNDED - 1));
        let mut m = MatcherOf::at(grammar, state, left).stopping(stops);
        m.restrict(Some(tool))?;
        Ok(m)
    }

    /// Restricts this matcher's output to calls of tool `tool` (by index,
    /// [`Grammar::tool_index`]) from here on; `None` lifts the restriction.
    /// Fails, leaving the matcher unchanged, when the artifact cannot serve
    /// it (no TOOLS section, no such tool, a budget without per-tool
    /// distances) or the output cannot be completed within the tokens left
    /// with this tool only. Survives `reset`, `reset_to` and rollback.
    pub fn restrict(&mut self, tool: Option<u32>) -> Result<(), Error> {
        let g = self.grammar.lend();
        let Some(tool) = tool else {
            self.tool = NO_TOOL;
            return Ok(());
        };
        let view = g.tool_view(tool)?;
        let bounded = self.left != UNBOUNDED || self.budget != UNBOUNDED;
        if bounded && !view.has_distances() {
            return Err(Error::new(ErrorKind::Restrict {
                why: "the artifact has no per-tool distances (its tools \u{d7} pre-name states \
                      were over the compiler's limit), so a one-tool matcher cannot take a token \
                      budget; use no budget",
            }));
        }
        if self.state != TERMINATED && !g.fits_for(Some(&view), self.state, self.left) {
            return Err(g.shortfall_for(Some(&view), self.state, self.left));
        }
        self.tool = tool;
        Ok(())
    }

    /// The tool this matcher is restricted to, if any.
    pub fn tool(&self) -> Option<u32> {
        (self.tool != NO_TOOL).then_some(self.tool)
    }

    /// The restriction's view of the TOOLS section (`None`: unrestricted).
    #[inline]
    fn view<'s>(&self, g: &Grammar<'s>) -> Option<ToolView<'s>> {
        if self.tool == NO_TOOL {
            return None;
        }
        g.tool_view(self.tool).ok()
    }
}

impl<G: GrammarHandle> MatcherOf<G> {
    /// Writes the mask of allowed next tokens into `out`: bit `t % 32` of
    /// word `t / 32` is set when token `t` is allowed. Words beyond
    /// [`Grammar::mask_words`] are zeroed.
    ///
    /// In an accepting state the end-of-sequence tokens are allowed; after an
    /// end-of-sequence token was accepted only they are (so a batch row that
    /// has finished keeps producing EOS).
    ///
    /// # Panics
    /// If `out` is shorter than [`Grammar::mask_words`].
    pub fn fill_mask(&self, out: &mut [u32]) {
        assert!(
            self.try_fill_mask(out),
            "mask buffer of {} words is shorter than mask_words() = {}",
            out.len(),
            self.grammar.lend().mask_words()
        );
    }

    /// Like [`Matcher::fill_mask`], but returns false instead of panicking
    /// when `out` is too short.
    pub fn try_fill_mask(&self, out: &mut [u32]) -> bool {
        let g = self.grammar.lend();
        if out.len() < g.mask_words() {
            return false;
        }
        if self.state == TERMINATED {
            g.fill_eos(true, out);
            return true;
        }
        if self.stopped(&g) {
            // A call has ended and the entry allows no other: the state
            // accepts (the compiler only stops where one does).
            g.fill_eos(g.is_accepting_state(self.state), out);
            return true;
        }
        let ok = g.fill_budget_mask(self.state, self.left, out);
        if let Some(view) = self.view(&g) {
            if view.gated(self.state, self.left) {
                g.filter_for(&view, self.state, self.left, out);
            }
        }
        if self.stops && g.stop_gate(self.state) {
            g.filter_stopping(self.state, out);
        }
        ok
    }

    /// Advances by one token. Returns false, leaving the matcher unchanged,
    /// if the token is not allowed here: exactly when its bit is clear in
    /// [`Matcher::fill_mask`]'s mask.
    pub fn accept_token(&mut self, token: u32) -> bool {
        let g = self.grammar.lend();
        if self.state == TERMINATED {
            return g.is_eos(token);
        }
        // A token with text is never an end-of-sequence token (the loader
        // checks that those have none), so the common case reads no EOS list.
        let Some(bytes) = g.token_bytes(token) else {
            if g.is_eos(token) && g.is_accepting_state(self.state) {
                self.state = TERMINATED;
                self.spend();
                return true;
            }
            return false;
        };
        if self.left == 0 || self.stopped(&g) {
            return false;
        }
        // Only from a stop gate can a token run past a call's end.
        if self.stops && g.stop_gate(self.state) && g.token_runs_past_call(self.state, token) {
            return false;
        }
        let view = self.view(&g);
        // A token listed as leading back here needs no walk (LOOPS); a
        // one-tool matcher walks, since its view checks every byte's move.
        let next = if view.is_none() && g.loops_back(self.state, token) {
            self.state
        } else {
            match g.walk_for(view.as_ref(), self.state, bytes) {
                Some(next) => next,
                None => return false,
            }
        };
        // Token-level liveness, and the budget: the rest must fit.
        let after = if self.left == UNBOUNDED {
            UNBOUNDED
        } else {
            self.left - 1
        };
        if !g.fits_for(view.as_ref(), next, after) {
            return false;
        }
        self.state = next;
        self.spend();
        true
    }

    fn spend(&mut self) {
        if self.left != UNBOUNDED && self.left > 0 {
            self.left -= 1;
        }
    }

    /// Advances by several tokens; stops at the first one not allowed and
    /// returns how many were accepted.
    pub fn accept_tokens(&mut self, tokens: &[u32]) -> usize {
        tokens.iter().take_while(|&&t| self.accept_token(t)).count()
    }

    /// Whether `token` would be accepted, without advancing.
    pub fn is_allowed(&self, token: u32) -> bool {
        self.probe().accept_token(token)
    }

    /// How many of `tokens`, in order, would be accepted from here (the
    /// length of the longest valid prefix of a speculative draft). Does
    /// not advance.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        self.probe().accept_tokens(tokens)
    }

    /// Writes into `out` the bytes that every valid continuation from here
    /// starts with, and returns how many (for jump-forward decoding: the
    /// engine can append them without sampling, then go on from the
    /// state they lead to).
    ///
    /// Stops where the grammar offers a choice, at an accepting state (the
    /// end of sequence could follow), before a special token (not text),
    /// and when `out` is full; never ends inside a UTF-8 character. Empty
    /// after termination. A forced byte costs no sampling, but the tokens
    /// that spell it still count against a budget.
    pub fn forced_bytes(&self, out: &mut [u8]) -> usize {
        let g = self.grammar.lend();
        if self.state == TERMINATED {
            return 0;
        }
        let view = self.view(&g);
        let mut state = self.state;
        let mut n = 0;
        while n < out.len() && !g.is_accepting_state(state) {
            let only = match &view {
                None => g.only_byte(state),
                Some(v) => g.only_byte_for(v, state),
            };
            let Some(byte) = only else {
                break;
            };
            out[n] = byte;
            n += 1;
            state = g.next_state(state, byte);
        }
        utf8_boundary(&out[..n])
    }

    /// What a [`RollbackMatcher`] saves before each token.
    pub(crate) fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            state: self.state,
            left: self.left,
        }
    }

    pub(crate) fn restore(&mut self, cp: Checkpoint) {
        self.state = cp.state;
        self.left = cp.left;
    }

    /// The output so far is a complete, valid call (end of sequence may
    /// follow, or already did).
    pub fn is_accepting(&self) -> bool {
        self.state == TERMINATED || self.grammar.lend().is_accepting_state(self.state)
    }

    /// An end-of-sequence token has been accepted.
    pub fn is_terminated(&self) -> bool {
        self.state == TERMINATED
    }

    /// Back to the start of the grammar, with the budget the matcher was
    /// created with.
    pub fn reset(&mut self) {
        let g = self.grammar.lend();
        self.state = g.start_state();
        self.left = self.budget;
        self.stops = g.default_stops();
    }

    /// Restarts at entry point `name` with the budget the matcher was
    /// created with; false (matcher unchanged) if the format has no such
    /// entry or that budget cannot complete an output from it. For
    /// multi-turn use: after the engine has inserted text of its own (a
    /// tool's result, the next prompt), the same matcher goes on at the
    /// entry where the model writes again.
    pub fn reset_to(&mut self, name: &str) -> bool {
        let g = self.grammar.lend();
        let view = self.view(&g);
        match g.entry(name) {
            Some((s, stops)) if g.fits_for(view.as_ref(), s, self.budget) => {
                self.state = s;
                self.left = self.budget;
                self.stops = stops;
                true
            }
            _ => false,
        }
    }

    /// The tokens this matcher may still take (EOS included), or `None`
    /// when it has no budget.
    pub fn tokens_left(&self) -> Option<u32> {
        (self.left != UNBOUNDED).then_some(self.left)
    }

    /// Sets the tokens left from here on (for an engine that tracks its
    /// own `max_tokens`); `None` removes the budget. Fails, leaving the
    /// matcher unchanged, if the output cannot complete within `left`.
    pub fn set_budget(&mut self, left: Option<u32>) -> Result<(), Error> {
        let left = left.map_or(UNBOUNDED, |n| n.min(UNBOUNDED - 1));
        let g = self.grammar.lend();
        let view = self.view(&g);
        if let Some(v) = &view {
            if left != UNBOUNDED && !v.has_distances() {
                return Err(Error::new(ErrorKind::Restrict {
                    why: "the artifact has no per-tool distances, so a one-tool matcher cannot take a token budget",
                }));
            }
        }
        if self.state != TERMINATED && !g.fits_for(view.as_ref(), self.state, left) {
            return Err(g.shortfall_for(view.as_ref(), self.state, left));
        }
        self.left = left;
        Ok(())
    }

    /// Advances over bytes that were not sampled (text the engine inserts
    /// itself, or a forced prefix), as if tokens spelling them had been
    /// accepted. Returns false, leaving the state unchanged, if the grammar
    /// does not allow them here or the matcher has terminated.
    ///
    /// The bytes are text: a special token cannot be given this way (pass
    /// its id to [`Matcher::accept_token`]), and bytes `0xFE`/`0xFF` never
    /// match. They cost no budget, but the output must still be able to
    /// complete within the tokens left after them.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> bool {
        if self.state == TERMINATED || bytes.iter().any(|&b| reserved::is_reserved(b)) {
            return false;
        }
        let g = self.grammar.lend();
        // Past a call's end no byte is allowed, and before it none that
        // leads past one.
        if self.stops
            && (self.stopped(&g) && !bytes.is_empty() || g.runs_past_call(self.state, bytes))
        {
            return false;
        }
        let view = self.view(&g);
        match g.walk_for(view.as_ref(), self.state, bytes) {
            Some(next) if g.fits_for(view.as_ref(), next, self.left) => {
                self.state = next;
                true
            }
            _ => false,
        }
    }

    /// The current DFA state, or `None` once terminated.
    pub fn state(&self) -> Option<u32> {
        (self.state != TERMINATED).then_some(self.state)
    }

    /// What this matcher holds to reach its grammar (a borrowed
    /// [`Grammar`], a [`SharedGrammar`](crate::SharedGrammar)).
    pub fn handle(&self) -> &G {
        &self.grammar
    }
}

/// Fills one mask row per matcher, row `i` at `out[i * stride..]` (the
/// batched bitmask of an engine: `stride` words per row, at least
/// [`Grammar::mask_words`]; each row's words past the mask are zeroed).
/// Returns false, after filling the rows that fit, if `out` has too few
/// rows or `stride` is too small.
pub fn fill_batch<'m, G: GrammarHandle + 'm>(
    matchers: impl IntoIterator<Item = &'m MatcherOf<G>>,
    out: &mut [u32],
    stride: usize,
) -> bool {
    for (i, m) in matchers.into_iter().enumerate() {
        let row = i
            .checked_mul(stride)
            .and_then(|start| out.get_mut(start..start.checked_add(stride)?));
        if !row.is_some_and(|row| m.try_fill_mask(row)) {
            return false;
        }
    }
    true
}

/// The length of the longest prefix of `bytes` that does not end inside a
/// UTF-8 character (the bytes are a prefix of UTF-8 text).
fn utf8_boundary(bytes: &[u8]) -> usize {
    let n = bytes.len();
    // The last lead byte among the final three, and whether its character
    // is complete.
    for back in 1..=n.min(4) {
        let b = bytes[n - back];
        if b & 0xC0 == 0x80 {
            continue; // a continuation byte
        }
        let width = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return if back >= width { n } else { n - back };
    }
    n
}
