//! Greedy decoding, with and without the runtime's masks.

use std::time::{Duration, Instant};

use tooldec_runtime::Grammar;

use crate::model::{argmax, Cache, Model, Result};

/// Why decoding stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// An end-of-turn token.
    Eos,
    /// The token budget ran out first.
    MaxTokens,
    /// The mask allowed no token (a constrained run only; never expected).
    NoToken,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Eos => "eos",
            Stop::MaxTokens => "max_tokens",
            Stop::NoToken => "no_token",
        }
    }
}

/// One generated reply and where its time went.
#[derive(Debug, Clone)]
pub struct Generation {
    /// The reply's tokens, the end-of-turn token excluded.
    pub tokens: Vec<u32>,
    pub stop: Stop,
    /// Time in the model's forward passes.
    pub forward: Duration,
    /// Forward passes (fewer than tokens when forced tokens were batched).
    pub forward_calls: usize,
    /// Time in `fill_mask`, counting its bits, and the masked argmax.
    pub mask: Duration,
    /// Masks computed.
    pub masks: usize,
    /// Tokens appended because the mask allowed nothing else.
    pub forced: usize,
    /// Wall time of the whole decode (prefill excluded).
    pub total: Duration,
}

impl Generation {
    fn new() -> Generation {
        Generation {
            tokens: Vec::new(),
            stop: Stop::MaxTokens,
            forward: Duration::ZERO,
            forward_calls: 0,
            mask: Duration::ZERO,
            masks: 0,
            forced: 0,
            total: Duration::ZERO,
        }
    }
}

fn timed_forward(
    model: &Model,
    tokens: &[u32],
    cache: &mut Cache,
    g: &mut Generation,
) -> Result<Vec<f32>> {
    let t = Instant::now();
    let logits = model.forward(tokens, cache)?;
    g.forward += t.elapsed();
    g.forward_calls += 1;
    Ok(logits)
}

/// Greedy decoding of up to `max_new` tokens, stopping at any of `eos`.
/// `logits` predict the first token after what `cache` holds.
pub fn unconstrained(
    model: &Model,
    mut cache: Cache,
    mut logits: Vec<f32>,
    eos: &[u32],
    max_new: usize,
) -> Result<Generation> {
    let start = Instant::now();
    let mut g = Generation::new();
    while g.tokens.len() < max_new {
        let tok = argmax(&logits);
        if eos.contains(&tok) {
            g.stop = Stop::Eos;
            break;
        }
        g.tokens.push(tok);
        if g.tokens.len() == max_new || cache.len + 1 >= model.context {
            break;
        }
        logits = timed_forward(model, &[tok], &mut cache, &mut g)?;
    }
    g.total = start.elapsed();
    Ok(g)
}

/// The allowed token with the largest logit.
fn masked_argmax(logits: &[f32], mask: &[u32]) -> Option<u32> {
    let mut best: Option<u32> = None;
    let mut best_v = f32::NEG_INFINITY;
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let t = (w as u32) * 32 + bits.trailing_zeros();
            bits &= bits - 1;
            let Some(&v) = logits.get(t as usize) else {
                continue;
            };
            if best.is_none() || v > best_v {
                best = Some(t);
                best_v = v;
            }
        }
    }
    best
}

/// A sound completion bound for a token budget.
///
/// `dist[s]` is the fewest bytes from state `s` to an accepting state.
/// Counting only bytes that are tokens of their own (all 256 in GPT-2's
/// byte-level BPE; SmolLM2 lacks a few control bytes), a state at distance
/// `d` can always finish in `d` single-byte tokens plus the
/// end-of-sequence token. So a reply that only ever
/// moves to states with `dist + 1` within the tokens left is complete
/// within the budget, whatever the model prefers. The filter runs only in
/// the last stretch of the budget, where it can bind.
pub struct Budget {
    dist: Vec<u32>,
    /// Tokens needed to finish from the start.
    minimum: u32,
    /// The largest finite distance: with more tokens left than this plus
    /// two, no token can break the bound.
    max_dist: u32,
}

impl Budget {
    pub fn new(grammar: &Grammar<'_>) -> Result<Budget> {
        let mut single = [false; 256];
        for t in 0..grammar.token_count() as u32 {
            if let Some(&[b]) = grammar.token_bytes(t) {
                single[b as usize] = true;
            }
        }
        // Fewest bytes to acceptance, moving only on single-byte tokens.
        let dist = tooldec_tests::walk::distances_over(grammar, &single);
        if dist[grammar.start_state() as usize] == u32::MAX {
            return Err(
                "no reply can be spelled with single-byte tokens: the budget bound does not hold"
                    .into(),
            );
        }
        let max_dist = dist
            .iter()
            .copied()
            .filter(|&d| d != u32::MAX)
            .max()
            .unwrap_or(0);
        let minimum = dist[grammar.start_state() as usize] + 1;
        Ok(Budget {
            dist,
            minimum,
            max_dist,
        })
    }

    /// Tokens needed to finish from the start (the bytes of the shortest
    /// reply and the end-of-sequence token).
    pub fn minimum(&self) -> u32 {
        self.minimum
    }

    /// Clears from `mask` the tokens after which the reply could no longer
    /// finish with `left - 1` more tokens.
    fn restrict(&self, matcher: &tooldec_runtime::Matcher<'_>, left: usize, mask: &mut [u32]) {
        let Some(state) = matcher.state() else { return };
        if left > self.max_dist as usize + 2 {
            return;
        }
        let g = matcher.grammar();
        for (w, word) in mask.iter_mut().enumerate() {
            let mut bits = *word;
            while bits != 0 {
                let bit = bits.trailing_zeros();
                bits &= bits - 1;
                let t = w as u32 * 32 + bit;
                if g.is_eos(t) {
                    continue; // allowed only where accepting; needs one token
                }
                let after = g
                    .token_bytes(t)
                    .and_then(|b| g.walk(state, b))
                    .map_or(u32::MAX, |s| self.dist[s as usize]);
                if after == u32::MAX || after as usize + 1 > left.saturating_sub(1) {
                    *word &= !(1 << bit);
                }
            }
        }
    }
}

/// Greedy decoding under the grammar's masks: before each choice the
/// runtime fills the mask and only allowed tokens compete; `budget`
/// narrows the mask near `max_new` so the reply (its end-of-sequence token
/// included) is complete within `max_new` tokens. With `fast_forward`, a
/// token that the mask leaves as the only choice is appended without
/// consulting the model, and a stretch of such tokens is fed to the model
/// in one forward pass.
pub fn constrained(
    model: &Model,
    mut cache: Cache,
    mut logits: Vec<f32>,
    grammar: &Grammar<'_>,
    budget: &Budget,
    max_new: usize,
    fast_forward: bool,
) -> Result<Generation> {
    if budget.minimum() as usize > max_new {
        return Err(format!(
            "the shortest reply needs {} tokens, more than the budget of {max_new}",
            budget.minimum()
        ));
    }
    let start = Instant::now();
    let mut g = Generation::new();
    let mut matcher = grammar.matcher();
    let mut mask = vec![0u32; grammar.mask_words()];
    let mut feed = Vec::new();
    'decode: loop {
        let t = Instant::now();
        matcher.fill_mask(&mut mask);
        budget.restrict(&matcher, max_new - g.tokens.len(), &mut mask);
        let best = masked_argmax(&logits, &mask);
        g.mask += t.elapsed();
        g.masks += 1;
        let Some(tok) = best else {
            g.stop = Stop::NoToken;
            break;
        };
        if !matcher.accept_token(tok) {
            return Err(format!(
                "the runtime refused token {tok} that its own mask allowed"
            ));
        }
        if grammar.is_eos(tok) {
            g.stop = Stop::Eos;
            break;
        }
        g.tokens.push(tok);
        feed.clear();
        feed.push(tok);
        while fast_forward && g.tokens.len() < max_new {
            let t = Instant::now();
            matcher.fill_mask(&mut mask);
            budget.restrict(&matcher, max_new - g.tokens.len(), &mut mask);
            let (only, allowed) = forced_token(&mask, model.vocab);
            g.mask += t.elapsed();
            g.masks += 1;
            let Some(next) = only.filter(|_| allowed == 1) else {
                break;
            };
            if !matcher.accept_token(next) {
                return Err(format!(
                    "the runtime refused token {next} that its own mask allowed"
                ));
            }
            if grammar.is_eos(next) {
                g.stop = Stop::Eos;
                break 'decode;
            }
            g.tokens.push(next);
            feed.push(next);
            g.forced += 1;
        }
        if cache.len + feed.len() >= model.context {
            break;
        }
        logits = timed_forward(model, &feed, &mut cache, &mut g)?;
    }
    g.total = start.elapsed();
    Ok(g)
}

/// The one allowed token below `vocab`, if exactly one is allowed, and how
/// many are (counting stops at 2).
fn forced_token(mask: &[u32], vocab: usize) -> (Option<u32>, u32) {
    let mut found = None;
    let mut allowed = 0u32;
    for (w, &word) in mask.iter().enumerate() {
        if word == 0 {
            continue;
        }
        let mut bits = word;
        while bits != 0 {
            let t = (w as u32) * 32 + bits.trailing_zeros();
            bits &= bits - 1;
            if (t as usize) < vocab {
                allowed += 1;
                if allowed > 1 {
                    return (None, 2);
                }
                found = Some(t);
            }
        }
    }
    (found, allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_argmax_picks_best_allowed() {
        let logits = [0.0, 5.0, 1.0, 3.0];
        assert_eq!(masked_argmax(&logits, &[0b1101]), Some(3));
        assert_eq!(masked_argmax(&logits, &[0]), None);
        // Bits past the logits are ignored.
        assert_eq!(masked_argmax(&logits, &[1 << 9]), None);
    }

    #[test]
    fn forced_token_only_when_single() {
        assert_eq!(forced_token(&[0, 1 << 3], 64), (Some(35), 1));
        assert_eq!(forced_token(&[1, 1], 64), (None, 2));
        assert_eq!(forced_token(&[0, 0], 64), (None, 0));
        assert_eq!(forced_token(&[0, 1 << 3], 35), (None, 0));
    }
}
