//! Greedy decoding, with and without the runtime's masks.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tooldec_bench::Engine;
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
    /// Forward passes, one token each (fewer than the tokens where the
    /// [`Tree`] already held the logits).
    pub forward_calls: usize,
    /// Steps whose logits the [`Tree`] already held.
    pub reused: usize,
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
            reused: 0,
            mask: Duration::ZERO,
            masks: 0,
            forced: 0,
            total: Duration::ZERO,
        }
    }
}

/// Most logits a [`Tree`] keeps (about 200 KB each for SmolLM2's 49,152
/// tokens): past it, further prefixes are computed without being kept.
const TREE_LOGITS: usize = 2048;

/// A prefilled prompt and what has been decoded from it: the logits after
/// every reply prefix fed so far, and the caches of finished decodes. The
/// decodes of one prompt (each mode and budget of a sweep) share long
/// prefixes; each prefix is computed once and a decode that leaves the
/// computed paths resumes from the longest cached one. No choice changes:
/// every token is fed in a pass of its own, so the logits of a prefix are
/// the same bits whichever decode computes them and from which cache (a
/// pass over several tokens sums in another order, and SmolLM2's greedy
/// choices flip on such rounding; `tight_budget_still_completes` checks
/// that decodes through a shared tree and a fresh one agree).
/// Every mode of a sweep thus sees the same logits after the same prefix.
pub struct Tree {
    prompt: Cache,
    logits: HashMap<Vec<u32>, Vec<f32>>,
    /// Finished decodes: the reply prefix each cache holds, and the cache.
    branches: Vec<(Vec<u32>, Cache)>,
}

impl Tree {
    /// The tree of a prompt that `cache` holds, `logits` predicting the
    /// reply's first token.
    pub fn new(cache: Cache, logits: Vec<f32>) -> Tree {
        let mut first = HashMap::new();
        first.insert(Vec::new(), logits);
        Tree {
            prompt: cache,
            logits: first,
            branches: Vec::new(),
        }
    }

    fn walk(&mut self) -> Walk<'_> {
        Walk {
            tree: self,
            reply: Vec::new(),
            cache: None,
            cached: 0,
        }
    }
}

/// One decode through a [`Tree`]: the reply so far and the cache of its
/// first `cached` tokens (none until a forward pass was needed).
struct Walk<'t> {
    tree: &'t mut Tree,
    reply: Vec<u32>,
    cache: Option<Cache>,
    cached: usize,
}

impl Walk<'_> {
    /// The logits of the reply so far (the empty reply: the prompt's).
    fn first(&self) -> Vec<f32> {
        self.tree.logits[&self.reply].clone()
    }

    /// Appends `tokens` to the reply and returns the logits that predict
    /// the next token: the tree's, or computed from the longest prefix
    /// some cache holds, one token per pass (see [`Tree`]).
    fn advance(&mut self, model: &Model, tokens: &[u32], g: &mut Generation) -> Result<Vec<f32>> {
        self.reply.extend_from_slice(tokens);
        if let Some(l) = self.tree.logits.get(&self.reply) {
            g.reused += 1;
            return Ok(l.clone());
        }
        let (mut from, mut cache) = (self.cached, self.cache.take());
        for (prefix, c) in &self.tree.branches {
            let n = common_prefix(prefix, &self.reply);
            if n > from {
                (from, cache) = (n, Some(c.clone()));
            }
        }
        // At least one token is fed: its pass gives the logits.
        from = from.min(self.reply.len() - 1);
        let base = cache.unwrap_or_else(|| self.tree.prompt.clone());
        let mut cache = base.truncated(self.tree.prompt.len + from)?;
        let mut logits = Vec::new();
        for end in from + 1..=self.reply.len() {
            let t = Instant::now();
            logits = model.forward(&self.reply[end - 1..end], &mut cache)?;
            g.forward += t.elapsed();
            g.forward_calls += 1;
            if self.tree.logits.len() < TREE_LOGITS {
                let prefix = self.reply[..end].to_vec();
                self.tree
                    .logits
                    .entry(prefix)
                    .or_insert_with(|| logits.clone());
            }
        }
        (self.cache, self.cached) = (Some(cache), self.reply.len());
        Ok(logits)
    }

    /// Tokens in the model's context after feeding `more`.
    fn context_after(&self, more: usize) -> usize {
        self.tree.prompt.len + self.reply.len() + more
    }
}

/// How many leading tokens `a` and `b` share.
fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Drop for Walk<'_> {
    /// Keeps the decode's cache for the decodes after it.
    fn drop(&mut self) {
        if let Some(c) = self.cache.take() {
            let prefix = self.reply[..self.cached].to_vec();
            self.tree.branches.push((prefix, c));
        }
    }
}

/// Greedy decoding of up to `max_new` tokens from `tree`'s prompt,
/// stopping at any of `eos`.
pub fn unconstrained(
    model: &Model,
    tree: &mut Tree,
    eos: &[u32],
    max_new: usize,
) -> Result<Generation> {
    let start = Instant::now();
    let mut g = Generation::new();
    let mut walk = tree.walk();
    let mut logits = walk.first();
    while g.tokens.len() < max_new {
        let tok = argmax(&logits);
        if eos.contains(&tok) {
            g.stop = Stop::Eos;
            break;
        }
        g.tokens.push(tok);
        if g.tokens.len() == max_new || walk.context_after(1) >= model.context {
            break;
        }
        logits = walk.advance(model, &[tok], &mut g)?;
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

/// The fewest tokens of a reply under `grammar`: its shortest complete
/// output over the vocabulary's real tokens, and the end-of-sequence token.
pub fn minimum(grammar: &Grammar<'_>) -> u32 {
    grammar.min_tokens().saturating_add(1)
}

/// Greedy decoding under the grammar's masks: before each choice the
/// runtime fills the mask and only allowed tokens compete; `budget`
/// narrows the mask near `max_new` so the reply (its end-of-sequence token
/// included) is complete within `max_new` tokens. With `fast_forward`, a
/// token that the mask leaves as the only choice is appended without
/// consulting the model (no argmax; its forward pass is still needed for
/// the tokens after it).
pub fn constrained(
    model: &Model,
    tree: &mut Tree,
    grammar: &Grammar<'_>,
    max_new: usize,
    fast_forward: bool,
) -> Result<Generation> {
    if minimum(grammar) as usize > max_new {
        return Err(format!(
            "the shortest reply needs {} tokens, more than the budget of {max_new}",
            minimum(grammar)
        ));
    }
    // The runtime's token budget: the call is complete within `max_new - 1`
    // tokens, so the end-of-sequence token (allowed in accepting states
    // with no tokens left) always fits too.
    let matcher = grammar
        .matcher_with_budget(u32::try_from(max_new - 1).unwrap_or(u32::MAX))
        .map_err(|e| e.to_string())?;
    let mut engine = tooldec_bench::ours::Ours::with_matcher(grammar, matcher);
    let is_eos = |t: u32| grammar.is_eos(t);
    decode_masked(
        model,
        tree,
        &mut engine,
        &is_eos,
        grammar.mask_words(),
        max_new,
        fast_forward,
    )
}

/// Greedy decoding under another engine's masks (llguidance,
/// outlines-core: [`tooldec_bench::peers`]), as a server embedding it
/// decodes: before each choice the engine fills the mask, the best allowed
/// token is taken, and the engine accepts it; `eos` ends the reply. The
/// engine knows nothing of `max_new`: a reply still open then is cut, as
/// the engines' users see it. Forced tokens are fast-forwarded as in
/// [`constrained`] (the same tokens greedy decoding would pick).
pub fn with_engine(
    model: &Model,
    tree: &mut Tree,
    engine: &mut dyn Engine,
    eos: u32,
    mask_words: usize,
    max_new: usize,
) -> Result<Generation> {
    let is_eos = |t: u32| t == eos;
    decode_masked(model, tree, engine, &is_eos, mask_words, max_new, true)
}

/// The masked greedy loop both share: the engine's mask, the best allowed
/// token, the engine accepts it; an end-of-sequence token ends the reply;
/// with `fast_forward`, tokens the mask leaves as the only choice are
/// appended without consulting the model.
#[allow(clippy::too_many_arguments)]
fn decode_masked(
    model: &Model,
    tree: &mut Tree,
    engine: &mut dyn Engine,
    is_eos: &dyn Fn(u32) -> bool,
    mask_words: usize,
    max_new: usize,
    fast_forward: bool,
) -> Result<Generation> {
    let start = Instant::now();
    let mut g = Generation::new();
    let mut walk = tree.walk();
    let mut logits = walk.first();
    let mut mask = vec![0u32; mask_words];
    let mut feed = Vec::new();
    'decode: while g.tokens.len() < max_new {
        let t = Instant::now();
        engine.fill_mask(&mut mask);
        let best = masked_argmax(&logits, &mask);
        g.mask += t.elapsed();
        g.masks += 1;
        let Some(tok) = best else {
            g.stop = Stop::NoToken;
            break;
        };
        if !engine.accept(tok) {
            return Err(format!(
                "{} refused token {tok} that its own mask allowed",
                engine.name()
            ));
        }
        if is_eos(tok) {
            g.stop = Stop::Eos;
            break;
        }
        g.tokens.push(tok);
        feed.clear();
        feed.push(tok);
        while fast_forward && g.tokens.len() < max_new {
            let t = Instant::now();
            engine.fill_mask(&mut mask);
            let (only, allowed) = forced_token(&mask, model.vocab);
            g.mask += t.elapsed();
            g.masks += 1;
            let Some(next) = only.filter(|_| allowed == 1) else {
                break;
            };
            if !engine.accept(next) {
                return Err(format!(
                    "{} refused token {next} that its own mask allowed",
                    engine.name()
                ));
            }
            if is_eos(next) {
                g.stop = Stop::Eos;
                break 'decode;
            }
            g.tokens.push(next);
            feed.push(next);
            g.forced += 1;
        }
        if g.tokens.len() == max_new || walk.context_after(feed.len()) >= model.context {
            break;
        }
        // The walk's reply lags by `feed`, which `g.tokens` already holds.
        logits = walk.advance(model, &feed, &mut g)?;
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
