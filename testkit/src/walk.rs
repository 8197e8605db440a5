//! Random walks over a loaded grammar, biased toward finishing.

use tooldec_runtime::Grammar;

/// Number of random walks per tokenizer: `TOOLDEC_WALKS` or `default`.
pub fn walks_from_env(default: usize) -> usize {
    match std::env::var("TOOLDEC_WALKS") {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TOOLDEC_WALKS={s:?} is not a number")),
        _ => default,
    }
}

/// The SplitMix64 generator: small, fast, good enough for tests.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A seed mixed from a label and indices (stable across runs).
pub fn seed(label: &str, a: u64, b: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in label.as_bytes() {
        h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
    }
    let mut r = SplitMix64::new(h ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    r.next_u64() ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93)
}

/// Byte distance from each DFA state to acceptance (`u32::MAX` when
/// unreachable, e.g. the dead state 0): a backward BFS over
/// [`Grammar::next_state`] for all bytes, accepting states at 0.
pub fn distances(g: &Grammar<'_>) -> Vec<u32> {
    let n = g.state_count();
    // Reverse edges, deduplicated per source state.
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    let mut stamp = vec![u32::MAX; n];
    for s in 1..n as u32 {
        for b in 0..=255u8 {
            let t = g.next_state(s, b);
            if t == 0 || t == s || stamp[t as usize] == s {
                continue;
            }
            stamp[t as usize] = s;
            rev[t as usize].push(s);
        }
    }
    let mut dist = vec![u32::MAX; n];
    let mut queue = std::collections::VecDeque::new();
    for s in 1..n as u32 {
        if g.is_accepting_state(s) {
            dist[s as usize] = 0;
            queue.push_back(s);
        }
    }
    while let Some(t) = queue.pop_front() {
        let d = dist[t as usize] + 1;
        for &s in &rev[t as usize] {
            if dist[s as usize] == u32::MAX {
                dist[s as usize] = d;
                queue.push_back(s);
            }
        }
    }
    dist
}

/// A walk that went wrong: the runtime contradicted itself.
#[derive(Debug, Clone)]
pub struct WalkError {
    /// The tokens accepted before the problem.
    pub tokens: Vec<u32>,
    /// What happened.
    pub message: String,
}

/// Walks one grammar many times; holds the distance table and buffers.
pub struct Walker<'g, 'a> {
    g: &'g Grammar<'a>,
    dist: Vec<u32>,
    vocab_len: usize,
    words: Vec<u32>,
    prefix: Vec<u32>,
    /// The one-byte token of each byte, if any.
    byte_tokens: Vec<Option<u32>>,
    /// After this many steps the walk goes exact-greedy (always ends).
    pub greedy_after: usize,
}

impl<'g, 'a> Walker<'g, 'a> {
    /// Prepares walks over `g`; tokens at or beyond `vocab_len` are never
    /// chosen (they are never allowed anyway).
    pub fn new(g: &'g Grammar<'a>, vocab_len: usize) -> Self {
        let mut byte_tokens = vec![None; 256];
        for t in 0..vocab_len.min(g.token_count()) as u32 {
            if let Some(&[b]) = g.token_bytes(t) {
                byte_tokens[b as usize].get_or_insert(t);
            }
        }
        Walker {
            byte_tokens,
            g,
            dist: distances(g),
            vocab_len,
            words: vec![0; g.mask_words()],
            prefix: vec![0; g.mask_words() + 1],
            greedy_after: 400,
        }
    }

    /// The distance table (see [`distances`]).
    pub fn distances(&self) -> &[u32] {
        &self.dist
    }

    /// Score of a token from the current matcher: the distance of the
    /// state it leads to, -1 for an accepted EOS, `None` if refused.
    fn score(&self, m: &tooldec_runtime::Matcher<'_>, t: u32) -> Option<i64> {
        let mut next = *m;
        if !next.accept_token(t) {
            return None;
        }
        Some(match next.state() {
            None => -1,
            Some(s) => self.dist[s as usize] as i64,
        })
    }

    /// The `k`-th set bit (0-based) of the mask, using `prefix`.
    fn kth(&self, k: u32) -> u32 {
        // Last word w with prefix[w] <= k.
        let w = self.prefix.partition_point(|&p| p <= k) - 1;
        let mut bits = self.words[w];
        for _ in 0..(k - self.prefix[w]) {
            bits &= bits - 1;
        }
        (w as u32) * 32 + bits.trailing_zeros()
    }

    /// One walk: random tokens, more and more greedy toward acceptance,
    /// ending with an accepted EOS. Returns the token ids, EOS included.
    ///
    /// Step `i` picks greedily with probability `min(cap, age / ramp)`:
    /// half of the walks use `age = i`, `(cap, ramp) = (0.95, 40)`; the
    /// others `age` = steps since the distance to acceptance last reached
    /// a new low, with `(0.95, 30)` or `(0.9, 60)`. A greedy pick is the
    /// best of up to 256 random allowed tokens and the allowed one-byte
    /// tokens (all allowed tokens when at most 256 are); else one allowed
    /// token uniformly at random. Ties are broken at random. From
    /// step [`Walker::greedy_after`] on it is exact-greedy over every
    /// allowed token, which ends the walk (every byte has a one-byte
    /// token in the vocabularies used here). `max_steps` bounds the
    /// whole walk (an error past it).
    pub fn walk(&mut self, rng: &mut SplitMix64, max_steps: usize) -> Result<Vec<u32>, WalkError> {
        let start = self.g.matcher();
        self.walk_from(rng, max_steps, start)
    }

    /// Like [`Walker::walk`], from `start` instead of the grammar's
    /// default start: a matcher of the same grammar at another entry
    /// ([`Grammar::matcher_at`]) or after a forced prefix. Returns the
    /// tokens from there on, EOS included.
    pub fn walk_from(
        &mut self,
        rng: &mut SplitMix64,
        max_steps: usize,
        start: tooldec_runtime::Matcher<'_>,
    ) -> Result<Vec<u32>, WalkError> {
        assert_eq!(
            start.grammar().state_count(),
            self.g.state_count(),
            "walk_from: the matcher is not of this walker's grammar"
        );
        let mut m = start;
        let mut tokens = Vec::new();
        // Each walk draws how it turns greedy: half of the walks by the
        // step count (`min(0.95, step / 40)`); the others by the steps
        // since the distance last reached a new low, so every structural
        // choice (tool name, optional members, array lengths) starts out
        // random and greed only grows while the walk is stuck.
        let (ramp, cap, since_record) = match rng.below(4) {
            0 => (30.0, 0.95, true),
            1 => (60.0, 0.9, true),
            _ => (40.0, 0.95, false),
        };
        // A terminated start has nothing left to walk (the loop returns
        // at once); its distance is that of acceptance.
        let mut record = m.state().map_or(0, |s| self.dist[s as usize]);
        let mut record_step = 0usize;
        let err = |tokens: &Vec<u32>, message: String| WalkError {
            tokens: tokens.clone(),
            message,
        };
        for step in 0..max_steps {
            if m.is_terminated() {
                return Ok(tokens);
            }
            m.fill_mask(&mut self.words);
            let total = self.count_allowed().map_err(|e| err(&tokens, e))?;
            if total == 0 {
                return Err(err(
                    &tokens,
                    format!("empty mask in state {:?} (not terminated)", m.state()),
                ));
            }
            let exact = step >= self.greedy_after;
            let age = if since_record {
                step - record_step
            } else {
                step
            };
            let p = (age as f64 / ramp).min(cap);
            let greedy = exact || rng.unit() < p;
            let choice = if !greedy {
                self.kth(rng.below(total as u64) as u32)
            } else {
                self.greedy_choice(&m, rng, exact, total)
                    .map_err(|t| err(&tokens, refused(t, &m)))?
            };
            if !m.accept_token(choice) {
                return Err(err(&tokens, refused(choice, &m)));
            }
            tokens.push(choice);
            if let Some(s) = m.state() {
                if self.dist[s as usize] < record {
                    record = self.dist[s as usize];
                    record_step = step + 1;
                }
            }
        }
        if m.is_terminated() {
            return Ok(tokens);
        }
        Err(err(
            &tokens,
            format!("no EOS within {max_steps} steps (state {:?})", m.state()),
        ))
    }

    /// Counts the allowed tokens of the mask just filled into `words` and
    /// fills `prefix` (the count before each word) for [`Walker::kth`].
    /// `Err` when the mask allows an id at or beyond `vocab_len` (the
    /// padding bits of the last word must stay clear).
    fn count_allowed(&mut self) -> Result<u32, String> {
        let mut total = 0u32;
        for (w, &x) in self.words.iter().enumerate() {
            self.prefix[w] = total;
            let mut x = x;
            let base = w * 32;
            if base + 32 > self.vocab_len {
                let keep = self.vocab_len.saturating_sub(base);
                let keep_mask = if keep >= 32 {
                    u32::MAX
                } else {
                    (1u32 << keep) - 1
                };
                if x & !keep_mask != 0 {
                    return Err(format!(
                        "the mask allows a token id >= {} (word {w} = {x:#x})",
                        self.vocab_len
                    ));
                }
                x &= keep_mask;
            }
            total += x.count_ones();
        }
        self.prefix[self.words.len()] = total;
        Ok(total)
    }

    /// A greedy pick from the mask in `words` (`total` tokens allowed):
    /// the allowed token whose next state is nearest to acceptance, among
    /// every allowed token when `exact` or when at most 256 are allowed,
    /// else among 256 random ones and the allowed one-byte tokens; ties
    /// broken at random. `Err(t)` when the mask allows `t` but `m` refuses
    /// it. The order of the random draws is part of every seeded walk (the
    /// benchmarks' mask hashes replay them): keep it.
    fn greedy_choice(
        &self,
        m: &tooldec_runtime::Matcher<'_>,
        rng: &mut SplitMix64,
        exact: bool,
        total: u32,
    ) -> Result<u32, u32> {
        let mut best: Option<(i64, u32)> = None;
        let mut ties = 0u64;
        let mut consider = |t: u32, rng: &mut SplitMix64| {
            let Some(s) = self.score(m, t) else {
                return Err(t);
            };
            match best {
                Some((b, _)) if s > b => {}
                Some((b, _)) if s == b => {
                    ties += 1;
                    if rng.below(ties + 1) == 0 {
                        best = Some((s, t));
                    }
                }
                _ => {
                    best = Some((s, t));
                    ties = 0;
                }
            }
            Ok(())
        };
        if exact || total <= 256 {
            for (w, &x) in self.words.iter().enumerate() {
                let mut bits = x;
                while bits != 0 {
                    let t = (w as u32) * 32 + bits.trailing_zeros();
                    bits &= bits - 1;
                    if (t as usize) < self.vocab_len {
                        consider(t, rng)?;
                    }
                }
            }
        } else {
            for _ in 0..256 {
                consider(self.kth(rng.below(total as u64) as u32), rng)?;
            }
            // The allowed one-byte tokens too: one of them is on a
            // shortest path, so a greedy step always gets closer to
            // acceptance.
            for &t in self.byte_tokens.iter().flatten() {
                if self.words[(t >> 5) as usize] & (1 << (t & 31)) != 0 {
                    consider(t, rng)?;
                }
            }
        }
        Ok(best.expect("a nonempty mask").1)
    }
}

fn refused(t: u32, m: &tooldec_runtime::Matcher<'_>) -> String {
    format!(
        "the mask allows token {t} but accept_token refuses it (state {:?})",
        m.state()
    )
}

/// One walk over `g` (builds a [`Walker`]; reuse a `Walker` for many
/// walks, its distance table costs a pass over the DFA).
pub fn walk(
    g: &Grammar<'_>,
    rng: &mut SplitMix64,
    vocab_len: usize,
    max_steps: usize,
) -> Result<Vec<u32>, WalkError> {
    Walker::new(g, vocab_len).walk(rng, max_steps)
}
