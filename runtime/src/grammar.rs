//! [`Grammar`]: the validated, zero-copy view of a payload that matchers
//! serve from. Its sections are the codec's types ([`crate::codec`]); this
//! file answers the questions serving asks of them.

use crate::codec::tools::ToolView;
use crate::codec::{self, layout, Payload};
use crate::error::{Error, ErrorKind, Label};
use crate::{Matcher, MatcherOf};

/// A matcher's budget when it has none.
pub(crate) const UNBOUNDED: u32 = u32::MAX;

/// A validated, read-only view of a decompressed artifact.
///
/// Cheap to copy; share it between threads freely (`Send + Sync`). Create one
/// [`Matcher`] per request from it. An [`Artifact`](crate::Artifact) holds
/// the payload (owned, borrowed or shared) and gives this view in constant
/// time.
#[derive(Clone, Copy, Debug)]
pub struct Grammar<'a> {
    /// Validated: every index the serving path computes is in bounds.
    p: Payload<'a>,
}

impl<'a> Grammar<'a> {
    /// Validates a decompressed artifact payload and returns a view over it.
    ///
    /// The buffer must start on a 4-byte boundary. Never panics: any
    /// malformed, truncated, damaged (the header's CRC-32C of the payload is
    /// checked first) or foreign input is an [`Error`]. Validation is
    /// linear in the payload's size and allocates nothing.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Grammar<'a>, Error> {
        codec::read(bytes).map(|(p, _)| Grammar { p })
    }

    /// The view of a payload the codec validated.
    #[inline]
    pub(crate) fn validated(p: Payload<'a>) -> Grammar<'a> {
        Grammar { p }
    }

    /// The payload's sections, as the codec reads them.
    pub fn payload(&self) -> &Payload<'a> {
        &self.p
    }

    /// A fresh matcher at the start of the grammar, with the artifact's
    /// default budget ([`Grammar::max_tokens`]; none if it was compiled
    /// without `--max-tokens`).
    pub fn matcher(&self) -> Matcher<'_> {
        MatcherOf::at(self, self.p.header.start, self.default_budget())
            .stopping(self.default_stops())
    }

    /// A fresh matcher at the start of the grammar that completes within
    /// `n` tokens (an EOS counts as one): every token its masks allow
    /// leaves a complete output reachable in the tokens that remain, so
    /// after at most `n` accepted tokens the output is complete
    /// ([`MatcherOf::is_accepting`]). EOS stays allowed in an accepting
    /// state even with no tokens left.
    ///
    /// Fails if the shortest complete output takes more than `n` tokens
    /// ([`Error::budget_shortfall`] gives both numbers).
    pub fn matcher_with_budget(&self, n: u32) -> Result<Matcher<'_>, Error> {
        MatcherOf::start(self, None, Some(n))
    }

    /// A fresh matcher at the entry point `name` (see [`Grammar::entries`])
    /// with the artifact's default budget, or `None` if the format has no
    /// such entry.
    pub fn matcher_at(&self, name: &str) -> Option<Matcher<'_>> {
        let (state, stops) = self.entry(name)?;
        Some(MatcherOf::at(self, state, self.default_budget()).stopping(stops))
    }

    /// [`Grammar::matcher_with_budget`] at the entry point `name`.
    pub fn matcher_at_with_budget(&self, name: &str, n: u32) -> Result<Matcher<'_>, Error> {
        MatcherOf::start(self, Some(name), Some(n))
    }

    /// The state of entry `entry` (`None`: the default), and the tokens a
    /// matcher starting there has: `budget`, or the artifact's default.
    /// Fails for an unknown entry, or when the budget cannot complete an
    /// output from there.
    pub(crate) fn start_at(
        &self,
        entry: Option<&str>,
        budget: Option<u32>,
    ) -> Result<(u32, u32, bool), Error> {
        let (state, stops) = match entry {
            None => (self.p.header.start, self.default_stops()),
            Some(name) => self.entry(name).ok_or(Error::new(ErrorKind::NoEntry))?,
        };
        // UNBOUNDED is a sentinel: a budget that large is no budget.
        let left = budget.map_or(self.default_budget(), |n| n.min(UNBOUNDED - 1));
        if !self.fits(state, left) {
            return Err(self.shortfall(state, left));
        }
        Ok((state, left, stops))
    }

    /// Whether an output can be completed from `state` with `left` tokens
    /// ([`UNBOUNDED`]: any number): the one rule behind every budget check.
    #[inline]
    pub(crate) fn fits(&self, state: u32, left: u32) -> bool {
        let need = self.p.budget.distance(state);
        need != layout::NO_DISTANCE && (left == UNBOUNDED || need <= left)
    }

    pub(crate) fn shortfall(&self, state: u32, left: u32) -> Error {
        Error::new(ErrorKind::Budget {
            need: self.p.budget.distance(state),
            budget: left,
        })
    }

    pub(crate) fn default_budget(&self) -> u32 {
        match self.p.header.max_tokens {
            0 => UNBOUNDED,
            n => n,
        }
    }

    /// The token budget the artifact was compiled for (`--max-tokens`):
    /// the budget of [`Grammar::matcher`] and [`Grammar::matcher_at`].
    pub fn max_tokens(&self) -> Option<u32> {
        (self.p.header.max_tokens != 0).then_some(self.p.header.max_tokens)
    }

    /// The fewest tokens of a complete output from the start (EOS not
    /// counted): the smallest budget [`Grammar::matcher_with_budget`] takes.
    pub fn min_tokens(&self) -> u32 {
        self.p.budget.distance(self.p.header.start)
    }

    /// The fewest tokens that lead from `state` to acceptance, over the
    /// vocabulary's real tokens; `None` when no token sequence does (the
    /// dead state, and states the masks never lead to).
    pub fn distance(&self, state: u32) -> Option<u32> {
        Some(self.p.budget.distance(state)).filter(|&d| d != layout::NO_DISTANCE)
    }

    /// The mask id `state` serves with `left` tokens left (EOS included):
    /// `None` when no text token is allowed there, only EOS in an accepting
    /// state. `left = u32::MAX` means no budget.
    #[inline]
    pub fn budget_mask_id(&self, state: u32, left: u32) -> Option<u32> {
        let s = state as usize;
        if left == 0 {
            return None;
        }
        let full = self.p.dfa.mask_id(state)?;
        if left == UNBOUNDED {
            return Some(full);
        }
        let b = &self.p.budget;
        let dist = b.distance(state);
        if dist == layout::NO_DISTANCE || left < dist {
            return None;
        }
        // Tiers are stored relative to the state's distance: tier k serves
        // while k <= left - 1, that is k + 1 - dist <= left - dist.
        let x = left - dist;
        if x >= b.rel_top(s) {
            return Some(full);
        }
        let tiers = b.tier_list(s);
        let below = tiers.chunks_exact(2).take_while(|p| p[0] <= x).count();
        (below > 0).then(|| tiers[2 * (below - 1) + 1])
    }

    /// Writes the mask of `state` with `left` tokens left (EOS included;
    /// `u32::MAX`: no budget) into `out`: the tokens after which a complete
    /// output still fits in `left - 1` tokens, and EOS in an accepting
    /// state. Returns false (and leaves `out` untouched) if `out` is
    /// shorter than [`Grammar::mask_words`].
    #[inline]
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
    #[inline]
    pub(crate) fn fill_eos(&self, allow: bool, out: &mut [u32]) {
        codec::set_words(out, 0);
        if allow {
            for &t in self.p.tokens.eos {
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
        let b = self.p.budget;
        let (tiers, dist): (&'a [u32], u32) = if s < self.p.dfa.n_states() {
            (b.tier_list(s), b.distance(state))
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
            Some(d) => (self.p.budget.rel_top(state as usize) + d).saturating_sub(1),
            None => 0,
        }
    }

    /// The number of tools the artifact's TOOLS section names (0 when it
    /// has none: a one-tool matcher cannot be made from it).
    pub fn tool_count(&self) -> u32 {
        self.p.tools.count()
    }

    /// Tool `i`'s name, in the tool list's order.
    pub fn tool_name(&self, i: u32) -> Option<&'a str> {
        self.p.tools.name(i, self.state_count())
    }

    /// The index of the tool named `name` (for
    /// [`Grammar::matcher_for_tool`]), if the artifact has a TOOLS section
    /// and such a tool.
    pub fn tool_index(&self, name: &str) -> Option<u32> {
        self.p.tools.index(name, self.state_count())
    }

    /// Whether the artifact stores per-tool distances, so that a one-tool
    /// matcher can take a token budget.
    pub fn tool_budgets(&self) -> bool {
        self.p.tools.has_distances()
    }

    /// Whether a one-tool matcher filters the stored mask of `state` (its
    /// gate bit: some token it allows is checked against the tool's name,
    /// or ends where a tool cannot finish). With a budget it may also
    /// filter at budget-gated states while the budget is tight.
    pub fn tool_gated(&self, state: u32) -> bool {
        self.p.tools.present()
            && self
                .p
                .tools
                .view(self.state_count(), 0)
                .is_some_and(|v| v.gated(state, UNBOUNDED))
    }

    /// A matcher at entry `entry` (`None`: the default) whose output calls
    /// only tool `tool` ([`Grammar::tool_index`]), with `budget` tokens
    /// (`None`: the artifact's default). See [`MatcherOf::start_for_tool`].
    pub fn matcher_for_tool(
        &self,
        entry: Option<&str>,
        tool: u32,
        budget: Option<u32>,
    ) -> Result<Matcher<'_>, Error> {
        MatcherOf::start_for_tool(self, entry, tool, budget)
    }

    /// The TOOLS section's view for `tool`, or why there is none.
    pub(crate) fn tool_view(&self, tool: u32) -> Result<ToolView<'a>, Error> {
        let t = &self.p.tools;
        if !t.present() {
            return Err(Error::new(ErrorKind::Restrict {
                why: "the artifact has no TOOLS section (compiled before one-tool matchers, \
                      or its format does not write the tool's name first); recompile it",
            }));
        }
        if tool >= t.count() {
            return Err(Error::new(ErrorKind::Restrict {
                why: "no tool has this index",
            }));
        }
        t.view(self.state_count(), tool)
            .ok_or(Error::new(ErrorKind::Restrict {
                why: "the TOOLS section is malformed",
            }))
    }

    /// [`Grammar::fits`] for a matcher restricted by `view` (if any).
    #[inline]
    pub(crate) fn fits_for(&self, view: Option<&ToolView<'_>>, state: u32, left: u32) -> bool {
        let Some(v) = view else {
            return self.fits(state, left);
        };
        let need = v.distance(state, self.p.budget.distance(state));
        need != layout::NO_DISTANCE && (left == UNBOUNDED || need <= left)
    }

    pub(crate) fn shortfall_for(
        &self,
        view: Option<&ToolView<'_>>,
        state: u32,
        left: u32,
    ) -> Error {
        let dist = self.p.budget.distance(state);
        Error::new(ErrorKind::Budget {
            need: view.map_or(dist, |v| v.distance(state, dist)),
            budget: left,
        })
    }

    /// [`Grammar::walk`] for a matcher restricted by `view` (if any): every
    /// byte's move must keep the output inside that tool's calls.
    #[inline]
    pub(crate) fn walk_for(
        &self,
        view: Option<&ToolView<'_>>,
        state: u32,
        bytes: &[u8],
    ) -> Option<u32> {
        let Some(v) = view else {
            return self.walk(state, bytes);
        };
        let mut s = state;
        for &b in bytes {
            let next = self.next_state(s, b);
            if next == layout::DEAD_STATE || !v.step(s, next) {
                return None;
            }
            s = next;
        }
        Some(s)
    }

    /// [`Grammar::only_byte`] for a matcher restricted by `view`.
    pub(crate) fn only_byte_for(&self, v: &ToolView<'_>, state: u32) -> Option<u8> {
        let mut only = None;
        for b in 0..=255u8 {
            let next = self.next_state(state, b);
            if next != layout::DEAD_STATE && v.step(state, next) {
                if only.is_some() {
                    return None;
                }
                only = Some(b);
            }
        }
        only.filter(|&b| !layout::reserved::is_reserved(b))
    }

    /// Clears from `out` (the mask of `state` with `left` tokens left) the
    /// tokens a matcher restricted by `v` may not take: those whose bytes
    /// leave the tool's calls, or after which the output cannot be finished
    /// with this tool within the tokens left.
    pub(crate) fn filter_for(&self, v: &ToolView<'_>, state: u32, left: u32, out: &mut [u32]) {
        let after = if left == UNBOUNDED {
            UNBOUNDED
        } else {
            left.saturating_sub(1)
        };
        self.keep_tokens(out, |t| {
            self.is_eos(t)
                || self
                    .token_bytes(t)
                    .and_then(|b| self.walk_for(Some(v), state, b))
                    .is_some_and(|next| self.fits_for(Some(v), next, after))
        });
    }

    /// Clears in `out` (a filled mask) each allowed token `keep` refuses.
    fn keep_tokens(&self, out: &mut [u32], keep: impl Fn(u32) -> bool) {
        let words = self.mask_words().min(out.len());
        for (wi, word) in out[..words].iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                if !keep((wi as u32) * 32 + bit) {
                    *word &= !(1 << bit);
                }
            }
        }
    }

    /// Clears in `out` the tokens whose walk from `state` runs past the
    /// end of a call: at a stop gate, what a matcher that stops after its
    /// first call must not take (the rest of the mask is the state's).
    pub(crate) fn filter_stopping(&self, state: u32, out: &mut [u32]) {
        // STOP_TOKENS lists them (the loader checked the ids).
        for &t in self.p.stop_tokens.of(state) {
            if let Some(w) = out.get_mut((t >> 5) as usize) {
                *w &= !(1 << (t & 31));
            }
        }
    }

    /// Whether `token` runs past a call's end from `state` (STOP_TOKENS).
    #[inline]
    pub(crate) fn token_runs_past_call(&self, state: u32, token: u32) -> bool {
        self.p.stop_tokens.runs_past(state, token)
    }

    /// Whether `token`'s bytes lead from `state` back to `state`, as the
    /// compiler listed it (LOOPS): a matcher takes such a token without
    /// walking its bytes. False where the artifact lists nothing for the
    /// state (a token may still loop: walk it to know).
    #[inline]
    pub fn loops_back(&self, state: u32, token: u32) -> bool {
        self.p.loops.contains(self.p.dfa.loop_set(state), token)
    }

    /// How many tokens LOOPS lists as leading from `state` back to it.
    pub fn loop_count(&self, state: u32) -> usize {
        self.p.loops.count(self.p.dfa.loop_set(state))
    }

    /// Whether walking `bytes` from `state` passes a state that ends a
    /// call with bytes still to read (text the engine inserts, which no
    /// list holds).
    pub(crate) fn runs_past_call(&self, state: u32, bytes: &[u8]) -> bool {
        let mut q = state;
        for (i, &b) in bytes.iter().enumerate() {
            if i > 0 && self.ends_call(q) {
                return true;
            }
            q = self.next_state(q, b);
            if q == layout::DEAD_STATE {
                return false;
            }
        }
        false
    }

    /// Whether a token from `state` can run past the end of a call (where
    /// a matcher that stops after its first call checks each token).
    #[inline]
    pub fn stop_gate(&self, state: u32) -> bool {
        self.p.dfa.stop_gate(state)
    }

    /// The format's entry points, `(name, start state)`, the default (where
    /// [`Grammar::matcher`] starts) first.
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.p.entries.iter()
    }

    /// The start state of entry point `name`.
    pub fn entry_state(&self, name: &str) -> Option<u32> {
        self.entry(name).map(|(s, _)| s)
    }

    /// The start state of entry point `name`, and whether it stops after
    /// its first call: an entry such as `one` that walks the states of
    /// another (`required`) and, where a call ends, allows only the end of
    /// sequence (see `runtime/FORMAT.md`).
    pub fn entry(&self, name: &str) -> Option<(u32, bool)> {
        self.p
            .entries
            .iter_stops()
            .find(|&(n, ..)| n == name)
            .map(|(_, s, stops)| (s, stops))
    }

    /// Whether `state` ends a call: where a matcher of an entry that stops
    /// after its first call allows only the end of sequence.
    #[inline]
    pub fn ends_call(&self, state: u32) -> bool {
        self.p.dfa.ends_call(state)
    }

    /// The mask width in tokens: the model's logits size.
    #[inline]
    pub fn mask_width(&self) -> usize {
        self.p.header.mask_width as usize
    }

    /// `ceil(mask_width / 32)`: the length of the buffer [`MatcherOf::fill_mask`] fills.
    #[inline]
    pub fn mask_words(&self) -> usize {
        layout::mask_words(self.p.header.mask_width)
    }

    /// The number of tokens of the tokenizer; ids from here up to
    /// [`Grammar::mask_width`] are padding and never allowed.
    #[inline]
    pub fn token_count(&self) -> usize {
        self.p.tokens.count() as usize
    }

    /// The end-of-sequence token ids, ascending.
    pub fn eos_tokens(&self) -> &'a [u32] {
        self.p.tokens.eos
    }

    /// Whether `token` is one of the end-of-sequence tokens.
    #[inline]
    pub fn is_eos(&self, token: u32) -> bool {
        self.p.tokens.eos.contains(&token)
    }

    /// The SHA-256 fingerprint of the vocabulary the artifact was built for
    /// (see `runtime/FORMAT.md` for what it covers).
    pub fn vocab_fingerprint(&self) -> &[u8; 32] {
        &self.p.header.fingerprint
    }

    /// The bytes a token stands for, as the grammar reads them: its text,
    /// or for a special token the grammar uses, `0xFF` and its id in three
    /// big-endian bytes (never text: FORMAT.md). `None` for other special
    /// tokens, tokens the grammar can never use, and ids beyond the
    /// tokenizer.
    #[inline]
    pub fn token_bytes(&self, token: u32) -> Option<&'a [u8]> {
        self.p.tokens.get(token)
    }

    /// The metadata the compiler recorded (UTF-8 JSON: format, tools,
    /// vocabulary description, generator).
    pub fn metadata(&self) -> &'a str {
        // UTF-8: checked when the artifact was loaded.
        core::str::from_utf8(self.p.meta).unwrap_or("")
    }

    /// The number of DFA states, the dead state 0 included.
    pub fn state_count(&self) -> usize {
        self.p.dfa.n_states()
    }

    /// The number of byte equivalence classes of the DFA.
    pub fn class_count(&self) -> usize {
        self.p.dfa.n_classes as usize
    }

    /// The DFA's start state.
    #[inline]
    pub fn start_state(&self) -> u32 {
        self.p.header.start
    }

    /// Whether the default entry (at [`Grammar::start_state`]) stops after
    /// its first call (see [`Grammar::entry`]).
    #[inline]
    pub fn default_stops(&self) -> bool {
        self.p.entries.default_stops()
    }

    /// The state reached from `state` on `byte`; 0 is the dead state.
    /// Returns 0 for an out-of-range state.
    #[inline]
    pub fn next_state(&self, state: u32, byte: u8) -> u32 {
        self.p.dfa.next_state(state, byte)
    }

    /// Whether the text leading to `state` is a complete, valid output.
    #[inline]
    pub fn is_accepting_state(&self, state: u32) -> bool {
        self.p.dfa.is_accepting(state)
    }

    /// The id of the stored mask that `state` serves (states with equal masks
    /// share one).
    pub fn mask_id(&self, state: u32) -> Option<u32> {
        self.p.dfa.mask_id(state)
    }

    /// The number of distinct stored masks.
    #[inline]
    pub fn mask_count(&self) -> usize {
        self.p.masks.count()
    }

    /// Writes mask `id` into `out`; words past the mask width are zeroed.
    /// Returns false (and leaves `out` untouched) if `id` is out of range or
    /// `out` is shorter than [`Grammar::mask_words`].
    #[inline]
    pub fn fill_mask_by_id(&self, id: u32, out: &mut [u32]) -> bool {
        let words = self.mask_words();
        if out.len() < words || id as usize >= self.mask_count() {
            return false;
        }
        let (out, rest) = out.split_at_mut(words);
        codec::set_words(rest, 0);
        self.p.masks.fill(id, self.p.tokens.count(), out);
        true
    }

    /// Whether mask `id` allows `token`, without materializing it.
    pub fn mask_contains(&self, id: u32, token: u32) -> bool {
        if id as usize >= self.mask_count() || token >= self.p.tokens.count() {
            return false;
        }
        self.p.masks.contains(id, token)
    }

    /// How mask `id` is stored: `"dense"`, `"allow"`, `"deny"` or
    /// `"delta"`, and its length in words.
    pub fn mask_storage(&self, id: u32) -> Option<(&'static str, usize)> {
        if id as usize >= self.mask_count() {
            return None;
        }
        let (k, data) = self.p.masks.parts(id);
        let name = match k {
            layout::kind::DENSE => "dense",
            layout::kind::ALLOW => "allow",
            layout::kind::DENY => "deny",
            _ => "delta",
        };
        Some((name, data.len()))
    }

    /// The one text byte that leads on from `state`, if exactly one does.
    #[inline]
    pub(crate) fn only_byte(&self, state: u32) -> Option<u8> {
        self.p.dfa.only_byte(state)
    }

    /// Walks `bytes` from `state`; `None` if the walk dies.
    #[inline]
    pub fn walk(&self, state: u32, bytes: &[u8]) -> Option<u32> {
        self.p.dfa.walk(state, bytes)
    }

    /// Checks that the artifact was compiled for the vocabulary whose
    /// fingerprint is `fingerprint` (the SHA-256 `runtime/FORMAT.md`
    /// defines; [`crate::Fingerprint`] computes it from a tokenizer). The
    /// error names the artifact's vocabulary (its label in the metadata)
    /// and both fingerprints.
    pub fn check_vocabulary(&self, fingerprint: &[u8; 32]) -> Result<(), Error> {
        vocabulary_check(
            &self.p.header.fingerprint,
            codec::meta::label(self.metadata()),
            fingerprint,
        )
    }

    /// Checks that masks of this artifact fit a model with `logits` output
    /// logits: engines hand the runtime a mask buffer of the model's width.
    /// Wider is fine (ids from [`Grammar::mask_width`] on are never
    /// allowed, and [`MatcherOf::fill_mask`] zeroes the words past
    /// [`Grammar::mask_words`]); narrower means the artifact was compiled
    /// for another model.
    pub fn check_mask_width(&self, logits: usize) -> Result<(), Error> {
        check_logits_width(self.p.header.mask_width, logits)
    }
}

/// Checks that a model's vocabulary, whose fingerprint is `given`, is the
/// one masks are built for (`expected`, labelled `label`): what
/// [`Grammar::check_vocabulary`] checks, for a compile whose artifact is
/// not there yet (it records the same fingerprint and label).
pub fn check_fingerprint(expected: &[u8; 32], label: &str, given: &[u8; 32]) -> Result<(), Error> {
    vocabulary_check(expected, Label::of(label), given)
}

/// Checks that masks `mask_width` tokens wide fit a model with `logits`
/// output logits: what [`Grammar::check_mask_width`] checks, for a compile
/// whose artifact is not there yet.
pub fn check_logits_width(mask_width: u32, logits: usize) -> Result<(), Error> {
    if logits < mask_width as usize {
        return Err(Error::new(ErrorKind::LogitsWidth {
            logits: logits as u64,
            vocab: mask_width,
        }));
    }
    Ok(())
}

fn vocabulary_check(ours: &[u8; 32], label: Label, given: &[u8; 32]) -> Result<(), Error> {
    if ours == given {
        return Ok(());
    }
    let prefix = |f: &[u8; 32]| {
        let mut p = [0u8; 8];
        p.copy_from_slice(&f[..8]);
        p
    };
    Err(Error::new(ErrorKind::Vocabulary {
        label,
        artifact: prefix(ours),
        given: prefix(given),
    }))
}
