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
pub mod layout;
mod load;

#[cfg(feature = "std")]
pub use artifact::Artifact;
pub use error::Error;

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
    meta: &'a str,
    fingerprint: [u8; 32],
    vocab_size: u32,
    n_tokens: u32,
    n_classes: u32,
    start: u32,
}

impl<'a> Grammar<'a> {
    /// Validates a decompressed artifact payload and returns a view over it.
    ///
    /// The buffer must start on a 4-byte boundary. Never panics: any
    /// malformed, truncated or foreign input is an [`Error`]. Validation is
    /// linear in the payload's size and allocates nothing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Grammar<'a>, Error> {
        load::grammar_from_bytes(bytes)
    }

    /// A fresh matcher at the start of the grammar.
    pub fn matcher(&self) -> Matcher<'_> {
        Matcher {
            grammar: self,
            state: self.start,
        }
    }

    /// A fresh matcher at the entry point `name` (see [`Grammar::entries`]),
    /// or `None` if the format has no such entry.
    pub fn matcher_at(&self, name: &str) -> Option<Matcher<'_>> {
        let state = self.entry_state(name)?;
        Some(Matcher {
            grammar: self,
            state,
        })
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

    /// The bytes a token stands for; `None` for special tokens (which never
    /// match text) and ids beyond the tokenizer.
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
        let head = self.mask_index[2 * id as usize];
        let len = self.mask_index[2 * id as usize + 1] as usize;
        let off = (head & OFFSET_MASK) as usize;
        // In range: checked when the artifact was loaded.
        let data = &self.mask_data[off..off + len];
        match head >> KIND_SHIFT {
            kind::DENSE => out.copy_from_slice(data),
            kind::ALLOW => {
                out.fill(0);
                for &t in data {
                    out[(t >> 5) as usize] |= 1 << (t & 31);
                }
            }
            _ => {
                // kind::DENY: every real token, then clear the listed ones.
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
        }
        true
    }

    /// Whether mask `id` allows `token`, without materializing it.
    pub fn mask_contains(&self, id: u32, token: u32) -> bool {
        if id as usize >= self.mask_count() || token >= self.n_tokens {
            return false;
        }
        let head = self.mask_index[2 * id as usize];
        let len = self.mask_index[2 * id as usize + 1] as usize;
        let off = (head & OFFSET_MASK) as usize;
        let data = &self.mask_data[off..off + len];
        match head >> KIND_SHIFT {
            kind::DENSE => data[(token >> 5) as usize] & (1 << (token & 31)) != 0,
            kind::ALLOW => data.binary_search(&token).is_ok(),
            _ => data.binary_search(&token).is_err(),
        }
    }

    /// How mask `id` is stored: `"dense"`, `"allow"` or `"deny"`, and its
    /// length in words.
    pub fn mask_storage(&self, id: u32) -> Option<(&'static str, usize)> {
        if id as usize >= self.mask_count() {
            return None;
        }
        let head = self.mask_index[2 * id as usize];
        let len = self.mask_index[2 * id as usize + 1] as usize;
        let name = match head >> KIND_SHIFT {
            kind::DENSE => "dense",
            kind::ALLOW => "allow",
            _ => "deny",
        };
        Some((name, len))
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

/// The position of one generation in the grammar: a DFA state.
///
/// Two words; `Clone` is a copy, so saving a matcher for lookahead or
/// rollback costs nothing.
#[derive(Clone, Copy, Debug)]
pub struct Matcher<'g> {
    grammar: &'g Grammar<'g>,
    state: u32,
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
            out.fill(0);
            for &t in g.eos {
                out[(t >> 5) as usize] |= 1 << (t & 31);
            }
            return true;
        }
        let id = g.states[self.state as usize] & !STATE_ACCEPTING;
        g.fill_mask_by_id(id, out)
    }

    /// Advances by one token. Returns false, leaving the state unchanged, if
    /// the token is not allowed here.
    pub fn accept_token(&mut self, token: u32) -> bool {
        let g = self.grammar;
        if self.state == TERMINATED {
            return g.is_eos(token);
        }
        if g.is_eos(token) {
            if g.is_accepting_state(self.state) {
                self.state = TERMINATED;
                return true;
            }
            return false;
        }
        match g.token_bytes(token).and_then(|b| g.walk(self.state, b)) {
            Some(next) => {
                self.state = next;
                true
            }
            None => false,
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

    /// The output so far is a complete, valid call (end of sequence may
    /// follow, or already did).
    pub fn is_accepting(&self) -> bool {
        self.state == TERMINATED || self.grammar.is_accepting_state(self.state)
    }

    /// An end-of-sequence token has been accepted.
    pub fn is_terminated(&self) -> bool {
        self.state == TERMINATED
    }

    /// Back to the start of the grammar.
    pub fn reset(&mut self) {
        self.state = self.grammar.start;
    }

    /// Restarts at entry point `name`; false (state unchanged) if the
    /// format has no such entry. For multi-turn use: after the engine has
    /// inserted text of its own (a tool's result, the next prompt), the
    /// same matcher goes on at the entry where the model writes again.
    pub fn reset_to(&mut self, name: &str) -> bool {
        match self.grammar.entry_state(name) {
            Some(s) => {
                self.state = s;
                true
            }
            None => false,
        }
    }

    /// Advances over bytes that were not sampled (text the engine inserts
    /// itself, or a forced prefix), as if tokens spelling them had been
    /// accepted. Returns false, leaving the state unchanged, if the grammar
    /// does not allow them here or the matcher has terminated.
    ///
    /// The bytes are text: a special token cannot be given this way (pass
    /// its id to [`Matcher::accept_token`]), and bytes `0xFE`/`0xFF` never
    /// match.
    pub fn accept_bytes(&mut self, bytes: &[u8]) -> bool {
        if self.state == TERMINATED || bytes.iter().any(|&b| b >= 0xFE) {
            return false;
        }
        match self.grammar.walk(self.state, bytes) {
            Some(next) => {
                self.state = next;
                true
            }
            None => false,
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
