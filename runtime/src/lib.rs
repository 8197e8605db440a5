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
//! validates a decompressed payload in place and returns a view over it. The
//! `std` feature (on by default) adds [`Artifact`], which reads a file,
//! decompresses it into an aligned buffer and validates it.
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
//! Mask layout: `ceil(vocab_size / 32)` `u32` words, the layout vLLM, SGLang,
//! XGrammar and llguidance share. Ids at or beyond the tokenizer's token count
//! (padding up to the model's logits size) are never allowed.

#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
mod artifact;
mod error;
pub mod fingerprint;
pub mod layout;
mod load;
mod rollback;
#[cfg(feature = "std")]
mod shared;

#[cfg(feature = "std")]
pub use artifact::Artifact;
pub use error::Error;
pub use fingerprint::Fingerprint;
pub use rollback::{Checkpoint, RollbackMatcher};
#[cfg(feature = "std")]
pub use shared::{OwnedMatcher, SharedGrammar};

use layout::{kind, KIND_SHIFT, OFFSET_MASK, STATE_ACCEPTING};

/// The matcher state after an end-of-sequence token was accepted.
const TERMINATED: u32 = u32::MAX;

/// A validated, read-only view of a decompressed artifact.
///
/// Cheap to copy; share it between threads freely (`Send + Sync`). Create one
/// [`Matcher`] per request from it.
#[derive(Clone, Copy, Debug)]
pub struct Grammar<'a> {
    byte_classes: &'a [u8],
    transitions: &'a [u32],
    states: &'a [u32],
    mask_index: &'a [u32],
    mask_data: &'a [u32],
    eos: &'a [u32],
    token_offsets: &'a [u32],
    token_bytes: &'a [u8],
    entries: &'a [u32],
    entry_names: &'a [u8],
    distance: &'a [u32],
    tier_index: &'a [u32],
    tiers: &'a [u32],
    meta: &'a str,
    fingerprint: [u8; 32],
    vocab_size: u32,
    n_tokens: u32,
    n_classes: u32,
    start: u32,
    max_tokens: u32,
}

/// A matcher's budget when it has none.
const UNBOUNDED: u32 = u32::MAX;

impl<'a> Grammar<'a> {
    /// Validates a decompressed artifact payload and returns a view over it.
    ///
    /// The buffer must start on a 4-byte boundary. Never panics: any
    /// malformed, truncated, damaged (the header's CRC-32C of the payload is
    /// checked first) or foreign input is an [`Error`]. Validation is
    /// linear in the payload's size and allocates nothing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Grammar<'a>, Error> {
        load::grammar_from_bytes(bytes)
    }

    /// A fresh matcher at the start of the grammar, with the artifact's
    /// default budget ([`Grammar::max_tokens`]; none if it was compiled
    /// without `--max-tokens`).
    pub fn matcher(&self) -> Matcher<'_> {
        Matcher {
            grammar: self,
            state: self.start,
            left: self.default_budget(),
            budget: self.default_budget(),
        }
    }

    /// A fresh matcher at the start of the grammar that completes within
    /// `n` tokens (an EOS counts as one): every token its masks allow
    /// leaves a complete output reachable in the tokens that remain, so
    /// after at most `n` accepted tokens the output is complete
    /// ([`Matcher::is_accepting`]). EOS stays allowed in an accepting state
    /// even with no tokens left.
    ///
    /// Fails if the shortest complete output takes more than `n` tokens
    /// ([`Error::budget_shortfall`] gives both numbers).
    pub fn matcher_with_budget(&self, n: u32) -> Result<Matcher<'_>, Error> {
        self.budgeted(self.start, n)
    }

    /// A fresh matcher at the entry point `name` (see [`Grammar::entries`])
    /// with the artifact's default budget, or `None` if the format has no
    /// such entry.
    pub fn matcher_at(&self, name: &str) -> Option<Matcher<'_>> {
        let state = self.entry_state(name)?;
        Some(Matcher {
            grammar: self,
            state,
            left: self.default_budget(),
            budget: self.default_budget(),
        })
    }

    /// [`Grammar::matcher_with_budget`] at the entry point `name`.
    pub fn matcher_at_with_budget(&self, name: &str, n: u32) -> Result<Matcher<'_>, Error> {
        let state = self
            .entry_state(name)
            .ok_or(Error::new(error::ErrorKind::NoEntry))?;
        self.budgeted(state, n)
    }

    fn budgeted(&self, state: u32, n: u32) -> Result<Matcher<'_>, Error> {
        // UNBOUNDED is a sentinel: a budget that large is no budget.
        self.start_at(state, n.min(UNBOUNDED - 1))
    }

    /// A matcher at `state` with `left` tokens ([`UNBOUNDED`]: no budget),
    /// if an output can be completed from there within them.
    fn start_at(&self, state: u32, left: u32) -> Result<Matcher<'_>, Error> {
        if !self.fits(state, left) {
            return Err(self.shortfall(state, left));
        }
        Ok(Matcher {
            grammar: self,
            state,
            left,
            budget: left,
        })
    }

    /// Whether an output can be completed from `state` with `left` tokens
    /// ([`UNBOUNDED`]: any number): the one rule behind every budget check.
    fn fits(&self, state: u32, left: u32) -> bool {
        let need = self.distance_raw(state);
        need != layout::NO_DISTANCE && (left == UNBOUNDED || need <= left)
    }

    fn shortfall(&self, state: u32, left: u32) -> Error {
        Error::new(error::ErrorKind::Budget {
            need: self.distance_raw(state),
            budget: left,
        })
    }

    fn default_budget(&self) -> u32 {
        if self.max_tokens == 0 {
            UNBOUNDED
        } else {
            self.max_tokens
        }
    }

    /// The token budget the artifact was compiled for (`--max-tokens`):
    /// the budget of [`Grammar::matcher`] and [`Grammar::matcher_at`].
    pub fn max_tokens(&self) -> Option<u32> {
        (self.max_tokens != 0).then_some(self.max_tokens)
    }

    /// The fewest tokens of a complete output from the start (EOS not
    /// counted): the smallest budget [`Grammar::matcher_with_budget`] takes.
    pub fn min_tokens(&self) -> u32 {
        self.distance_raw(self.start)
    }

    /// The fewest tokens that lead from `state` to acceptance, over the
    /// vocabulary's real tokens; `None` when no token sequence does (the
    /// dead state, and states the masks never lead to).
    pub fn distance(&self, state: u32) -> Option<u32> {
        Some(self.distance_raw(state)).filter(|&d| d != layout::NO_DISTANCE)
    }

    fn distance_raw(&self, state: u32) -> u32 {
        self.distance
            .get(2 * state as usize)
            .copied()
            .unwrap_or(layout::NO_DISTANCE)
    }

    /// The mask id `state` serves with `left` tokens left (EOS included):
    /// `None` when no text token is allowed there, only EOS in an accepting
    /// state. `left = u32::MAX` means no budget.
    pub fn budget_mask_id(&self, state: u32, left: u32) -> Option<u32> {
        let s = state as usize;
        if s >= self.states.len() || left == 0 {
            return None;
        }
        let full = self.states[s] & !STATE_ACCEPTING;
        if left == UNBOUNDED {
            return Some(full);
        }
        let dist = self.distance[2 * s];
        if dist == layout::NO_DISTANCE || left < dist {
            return None;
        }
        // Tiers are stored relative to the state's distance: tier k serves
        // while k <= left - 1, that is k + 1 - dist <= left - dist.
        let x = left - dist;
        if x >= self.distance[2 * s + 1] {
            return Some(full);
        }
        let tiers = self.tier_list(s);
        let below = tiers.chunks_exact(2).take_while(|p| p[0] <= x).count();
        (below > 0).then(|| tiers[2 * (below - 1) + 1])
    }

    /// The stored (relative) tier pairs of state `s` (in range).
    fn tier_list(&self, s: usize) -> &'a [u32] {
        let (off, len) = (
            self.tier_index[2 * s] as usize,
            self.tier_index[2 * s + 1] as usize,
        );
        // In range: checked when the artifact was loaded.
        &self.tiers[2 * off..2 * (off + len)]
    }

    /// Writes the mask of `state` with `left` tokens left (EOS included;
    /// `u32::MAX`: no budget) into `out`: the tokens after which a complete
    /// output still fits in `left - 1` tokens, and EOS in an accepting
    /// state. Returns false (and leaves `out` untouched) if `out` is
    /// shorter than [`Grammar::mask_words`].
    pub fn fill_budget_mask(&self, state: u32, left: u32, out: &mut [u32]) -> bool {
        if out.len() < self.mask_words() {
            return false;
        }
        match self.budget_mask_id(state, left) {
            Some(id) => self.fill_mask_by_id(id, out),
            None => {
                self.fill_eos(self.is_accepting_state(state), out);
                true
            }
        }
    }

    /// Zeroes `out` and, if `allow`, sets the EOS bits.
    fn fill_eos(&self, allow: bool, out: &mut [u32]) {
        out.fill(0);
        if allow {
            for &t in self.eos {
                out[(t >> 5) as usize] |= 1 << (t & 31);
            }
        }
    }

    /// The budget tiers of `state` below its full mask: `(k, mask id)`,
    /// ascending; with `left` tokens left the state serves the last tier
    /// with `k <= left - 1`, its full mask once `left - 1` reaches
    /// [`Grammar::top_tier`].
    pub fn tiers(&self, state: u32) -> impl Iterator<Item = (u32, u32)> + 'a {
        let s = state as usize;
        let (tiers, dist): (&'a [u32], u32) = if s < self.states.len() {
            (self.tier_list(s), self.distance[2 * s])
        } else {
            (&[], 0)
        };
        // The loader checked that states with tiers have a distance.
        tiers
            .chunks_exact(2)
            .map(move |p| ((p[0] + dist).wrapping_sub(1), p[1]))
    }

    /// The largest distance to acceptance among the states `state`'s
    /// allowed tokens lead to: from `top_tier + 1` tokens left on, the state
    /// serves its full mask. 0 for states with no distance.
    pub fn top_tier(&self, state: u32) -> u32 {
        match self.distance(state) {
            Some(d) => (self.distance[2 * state as usize + 1] + d).saturating_sub(1),
            None => 0,
        }
    }

    /// The format's entry points, `(name, start state)`, the default (where
    /// [`Grammar::matcher`] starts) first.
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        let names = self.entry_names;
        self.entries.chunks_exact(3).map(move |e| {
            let (off, len) = (e[1] as usize, e[2] as usize);
            // The loader checked each name's range and UTF-8.
            let name = core::str::from_utf8(&names[off..off + len]).unwrap_or("");
            (name, e[0])
        })
    }

    /// The start state of entry point `name`.
    pub fn entry_state(&self, name: &str) -> Option<u32> {
        self.entries().find(|&(n, _)| n == name).map(|(_, s)| s)
    }

    /// The mask width in tokens: the model's logits size.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size as usize
    }

    /// `ceil(vocab_size / 32)`: the length of the buffer [`Matcher::fill_mask`] fills.
    pub fn mask_words(&self) -> usize {
        layout::mask_words(self.vocab_size)
    }

    /// The number of tokens of the tokenizer; ids from here up to
    /// [`Grammar::vocab_size`] are padding and never allowed.
    pub fn token_count(&self) -> usize {
        self.n_tokens as usize
    }

    /// The end-of-sequence token ids, ascending.
    pub fn eos_tokens(&self) -> &'a [u32] {
        self.eos
    }

    /// Whether `token` is one of the end-of-sequence tokens.
    pub fn is_eos(&self, token: u32) -> bool {
        self.eos.contains(&token)
    }

    /// The SHA-256 fingerprint of the vocabulary the artifact was built for
    /// (see `runtime/FORMAT.md` for what it covers).
    pub fn vocab_fingerprint(&self) -> &[u8; 32] {
        &self.fingerprint
    }

    /// The bytes a token stands for, as the grammar reads them: its text,
    /// or for a special token the grammar uses, `0xFF` and its id in three
    /// big-endian bytes (never text: FORMAT.md). `None` for other special
    /// tokens, tokens the grammar can never use, and ids beyond the
    /// tokenizer.
    pub fn token_bytes(&self, token: u32) -> Option<&'a [u8]> {
        let t = token as usize;
        if t >= self.n_tokens as usize {
            return None;
        }
        // In range and ordered: checked when the artifact was loaded.
        let (lo, hi) = (
            self.token_offsets[t] as usize,
            self.token_offsets[t + 1] as usize,
        );
        if lo == hi {
            None
        } else {
            Some(&self.token_bytes[lo..hi])
        }
    }

    /// The metadata the compiler recorded (UTF-8 JSON: format, tools,
    /// vocabulary description, generator).
    pub fn metadata(&self) -> &'a str {
        self.meta
    }

    /// The number of DFA states, the dead state 0 included.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// The number of byte equivalence classes of the DFA.
    pub fn class_count(&self) -> usize {
        self.n_classes as usize
    }

    /// The DFA's start state.
    pub fn start_state(&self) -> u32 {
        self.start
    }

    /// The state reached from `state` on `byte`; 0 is the dead state.
    /// Returns 0 for an out-of-range state.
    pub fn next_state(&self, state: u32, byte: u8) -> u32 {
        if state as usize >= self.states.len() {
            return layout::DEAD_STATE;
        }
        let class = self.byte_classes[byte as usize] as usize;
        self.transitions[state as usize * self.n_classes as usize + class]
    }

    /// Whether the text leading to `state` is a complete, valid output.
    pub fn is_accepting_state(&self, state: u32) -> bool {
        self.states
            .get(state as usize)
            .is_some_and(|w| w & STATE_ACCEPTING != 0)
    }

    /// The id of the stored mask that `state` serves (states with equal masks
    /// share one).
    pub fn mask_id(&self, state: u32) -> Option<u32> {
        self.states
            .get(state as usize)
            .map(|w| w & !STATE_ACCEPTING)
    }

    /// The number of distinct stored masks.
    pub fn mask_count(&self) -> usize {
        self.mask_index.len() / 2
    }

    /// Writes mask `id` into `out`; words past the mask width are zeroed.
    /// Returns false (and leaves `out` untouched) if `id` is out of range or
    /// `out` is shorter than [`Grammar::mask_words`].
    pub fn fill_mask_by_id(&self, id: u32, out: &mut [u32]) -> bool {
        let words = self.mask_words();
        if out.len() < words || id as usize >= self.mask_count() {
            return false;
        }
        let (out, rest) = out.split_at_mut(words);
        rest.fill(0);
        let (k, data) = self.mask_parts(id);
        if k == kind::DELTA {
            // The loader checked that the base is in range and not a delta.
            self.fill_plain(data[0], out);
            for &t in &data[1..] {
                out[(t >> 5) as usize] &= !(1 << (t & 31));
            }
        } else {
            self.fill_plain(id, out);
        }
        true
    }

    /// The kind and words of mask `id` (in range: checked by the caller).
    fn mask_parts(&self, id: u32) -> (u32, &'a [u32]) {
        let head = self.mask_index[2 * id as usize];
        let len = self.mask_index[2 * id as usize + 1] as usize;
        let off = (head & OFFSET_MASK) as usize;
        // In range: checked when the artifact was loaded.
        (head >> KIND_SHIFT, &self.mask_data[off..off + len])
    }

    /// Fills a mask that is not a delta into `out` (exactly `mask_words`).
    fn fill_plain(&self, id: u32, out: &mut [u32]) {
        let (k, data) = self.mask_parts(id);
        match k {
            kind::DENSE => out.copy_from_slice(data),
            kind::ALLOW => {
                out.fill(0);
                for &t in data {
                    out[(t >> 5) as usize] |= 1 << (t & 31);
                }
            }
            kind::DENY => {
                // Every real token, then clear the listed ones.
                let full = (self.n_tokens / 32) as usize;
                out[..full].fill(u32::MAX);
                out[full..].fill(0);
                let tail = self.n_tokens % 32;
                if tail != 0 {
                    out[full] = (1u32 << tail) - 1;
                }
                for &t in data {
                    out[(t >> 5) as usize] &= !(1 << (t & 31));
                }
            }
            // A delta's base is never a delta (checked when loading).
            _ => out.fill(0),
        }
    }

    /// Whether mask `id` allows `token`, without materializing it.
    pub fn mask_contains(&self, id: u32, token: u32) -> bool {
        if id as usize >= self.mask_count() || token >= self.n_tokens {
            return false;
        }
        let (k, data) = self.mask_parts(id);
        if k == kind::DELTA {
            // The loader checked that the base is in range and not a delta.
            self.plain_contains(data[0], token) && data[1..].binary_search(&token).is_err()
        } else {
            self.plain_contains(id, token)
        }
    }

    /// Whether a mask that is not a delta allows `token` (below the token
    /// count).
    fn plain_contains(&self, id: u32, token: u32) -> bool {
        let (k, data) = self.mask_parts(id);
        match k {
            kind::DENSE => data[(token >> 5) as usize] & (1 << (token & 31)) != 0,
            kind::ALLOW => data.binary_search(&token).is_ok(),
            kind::DENY => data.binary_search(&token).is_err(),
            // A delta's base is never a delta (checked when loading).
            _ => false,
        }
    }

    /// How mask `id` is stored: `"dense"`, `"allow"`, `"deny"` or
    /// `"delta"`, and its length in words.
    pub fn mask_storage(&self, id: u32) -> Option<(&'static str, usize)> {
        if id as usize >= self.mask_count() {
            return None;
        }
        let (k, data) = self.mask_parts(id);
        let name = match k {
            kind::DENSE => "dense",
            kind::ALLOW => "allow",
            kind::DENY => "deny",
            _ => "delta",
        };
        Some((name, data.len()))
    }

    /// The one text byte that leads on from `state`, if exactly one does:
    /// `None` when there is a choice, no way on, or only a special token
    /// or entry selector (bytes `0xFE`/`0xFF`, never text).
    fn only_byte(&self, state: u32) -> Option<u8> {
        let nc = self.n_classes as usize;
        let row = self
            .transitions
            .get(state as usize * nc..(state as usize + 1) * nc)?;
        let mut live = row
            .iter()
            .enumerate()
            .filter(|(_, &t)| t != layout::DEAD_STATE);
        let (class, _) = live.next()?;
        if live.next().is_some() {
            return None;
        }
        let mut bytes = (0..=255u8).filter(|&b| self.byte_classes[b as usize] as usize == class);
        let byte = bytes.next()?;
        (bytes.next().is_none() && byte < 0xFE).then_some(byte)
    }

    /// Walks `bytes` from `state`; `None` if the walk dies.
    pub fn walk(&self, mut state: u32, bytes: &[u8]) -> Option<u32> {
        if state as usize >= self.states.len() {
            return None;
        }
        let nc = self.n_classes as usize;
        for &b in bytes {
            let class = self.byte_classes[b as usize] as usize;
            state = self.transitions[state as usize * nc + class];
            if state == layout::DEAD_STATE {
                return None;
            }
        }
        Some(state)
    }
}

/// The position of one generation in the grammar: a DFA state and the
/// tokens it may still take.
///
/// A reference and three `u32`s; `Clone` is a copy, so saving a matcher
/// for lookahead or rollback costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct Matcher<'g> {
    grammar: &'g Grammar<'g>,
    state: u32,
    /// Tokens it may still take, EOS included; [`UNBOUNDED`]: no budget.
    left: u32,
    /// The budget it was created with (restored by `reset`).
    budget: u32,
}

impl<'g> Matcher<'g> {
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
            self.grammar.mask_words()
        );
    }

    /// Like [`Matcher::fill_mask`], but returns false instead of panicking
    /// when `out` is too short.
    pub fn try_fill_mask(&self, out: &mut [u32]) -> bool {
        let g = self.grammar;
        if out.len() < g.mask_words() {
            return false;
        }
        if self.state == TERMINATED {
            g.fill_eos(true, out);
            return true;
        }
        g.fill_budget_mask(self.state, self.left, out)
    }

    /// Advances by one token. Returns false, leaving the matcher unchanged,
    /// if the token is not allowed here: exactly when its bit is clear in
    /// [`Matcher::fill_mask`]'s mask.
    pub fn accept_token(&mut self, token: u32) -> bool {
        let g = self.grammar;
        if self.state == TERMINATED {
            return g.is_eos(token);
        }
        if g.is_eos(token) {
            if g.is_accepting_state(self.state) {
                self.state = TERMINATED;
                self.spend();
                return true;
            }
            return false;
        }
        if self.left == 0 {
            return false;
        }
        let Some(next) = g.token_bytes(token).and_then(|b| g.walk(self.state, b)) else {
            return false;
        };
        // Token-level liveness, and the budget: the rest must fit.
        let after = if self.left == UNBOUNDED {
            UNBOUNDED
        } else {
            self.left - 1
        };
        if !g.fits(next, after) {
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
        self.clone().accept_token(token)
    }

    /// How many of `tokens`, in order, would be accepted from here (the
    /// length of the longest valid prefix of a speculative draft). Does
    /// not advance.
    pub fn validate_tokens(&self, tokens: &[u32]) -> usize {
        self.clone().accept_tokens(tokens)
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
        let g = self.grammar;
        if self.state == TERMINATED {
            return 0;
        }
        let mut state = self.state;
        let mut n = 0;
        while n < out.len() && !g.is_accepting_state(state) {
            let Some(byte) = g.only_byte(state) else {
                break;
            };
            out[n] = byte;
            n += 1;
            state = g.next_state(state, byte);
        }
        utf8_boundary(&out[..n])
    }

    /// What a [`RollbackMatcher`] saves before each token.
    fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            state: self.state,
            left: self.left,
        }
    }

    fn restore(&mut self, cp: Checkpoint) {
        self.state = cp.state;
        self.left = cp.left;
    }

    /// The output so far is a complete, valid call (end of sequence may
    /// follow, or already did).
    pub fn is_accepting(&self) -> bool {
        self.state == TERMINATED || self.grammar.is_accepting_state(self.state)
    }

    /// An end-of-sequence token has been accepted.
    pub fn is_terminated(&self) -> bool {
        self.state == TERMINATED
    }

    /// Back to the start of the grammar, with the budget the matcher was
    /// created with.
    pub fn reset(&mut self) {
        self.state = self.grammar.start;
        self.left = self.budget;
    }

    /// Restarts at entry point `name` with the budget the matcher was
    /// created with; false (matcher unchanged) if the format has no such
    /// entry or that budget cannot complete an output from it. For
    /// multi-turn use: after the engine has inserted text of its own (a
    /// tool's result, the next prompt), the same matcher goes on at the
    /// entry where the model writes again.
    pub fn reset_to(&mut self, name: &str) -> bool {
        match self.grammar.entry_state(name) {
            Some(s) if self.grammar.fits(s, self.budget) => {
                self.state = s;
                self.left = self.budget;
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
        if self.state != TERMINATED && !self.grammar.fits(self.state, left) {
            return Err(self.grammar.shortfall(self.state, left));
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
        if self.state == TERMINATED || bytes.iter().any(|&b| b >= 0xFE) {
            return false;
        }
        match self.grammar.walk(self.state, bytes) {
            Some(next) if self.grammar.fits(next, self.left) => {
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

    /// The grammar this matcher walks.
    pub fn grammar(&self) -> &'g Grammar<'g> {
        self.grammar
    }
}

/// Fills one mask row per matcher, row `i` at `out[i * stride..]` (the
/// batched bitmask of an engine: `stride` words per row, at least
/// [`Grammar::mask_words`]; each row's words past the mask are zeroed).
/// Returns false, after filling the rows that fit, if `out` has too few
/// rows or `stride` is too small.
pub fn fill_batch<'m, 'g: 'm>(
    matchers: impl IntoIterator<Item = &'m Matcher<'g>>,
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
