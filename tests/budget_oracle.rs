//! Token budgets against the literal product construction.
//!
//! For small grammars and small vocabularies this builds, independently of
//! the compiler's distance and tier tables, the automaton whose states are
//! `(DFA state s, tokens left r)`, `r` in `0..=R`, with a transition on every
//! token `t` from `(s, r)` to `(δ*(s, bytes(t)), r - 1)` when `r >= 1` and the
//! byte walk stays alive, accepting where `s` accepts. It is trimmed by a
//! backward breadth-first search from the accepting product states over
//! those transitions. The oracle's mask at `(s, r)` is then: EOS iff `s`
//! accepts, and every other token whose transition leads to a product state
//! that survived the trim. Token walks use only [`Grammar::next_state`] and
//! the vocabulary itself (plus the grammar's special tokens as their marker
//! bytes, from the metadata); nothing reads `Grammar::distance` or the tiers.
//!
//! Checked, for every case and every budget `N` from 0 to the largest
//! entry minimum + 8, from every entry of the format:
//! - every product state reachable from `(entry, N)` over alive token
//!   transitions (trimmed or not): `Grammar::fill_budget_mask(s, r)` equals
//!   the oracle's mask, bit for bit (padding ids included);
//! - a real [`Matcher`] from `matcher_with_budget(N)` /
//!   `matcher_at_with_budget(entry, N)`, explored breadth-first over every
//!   allowed token (every live product state it can reach) and along random
//!   paths: its masks equal the oracle's, `accept_token` and `is_allowed`
//!   agree with the mask bit for every id, the state and `tokens_left` move
//!   as the product says, no live product state has an empty mask, every walk
//!   terminates within `N` text tokens plus EOS, `set_budget` succeeds exactly
//!   where the product state is live;
//! - `matcher_with_budget(n)` fails exactly for `n` below the oracle's
//!   minimum (the least `N` with `(start, N)` live), and `budget_shortfall`
//!   names that minimum;
//! - without a budget: the oracle is token-level liveness (the counterless
//!   token graph, trimmed by a backward search); `fill_budget_mask(s,
//!   u32::MAX)`, large finite budgets, the stored unbudgeted mask and
//!   `g.matcher()` (explored over every allowed token) all equal it;
//! - `--max-tokens`: compiling below the minimum is an `ErrorKind::Budget`
//!   naming the minimum; at or above it `g.matcher()` starts with exactly
//!   that budget and serves the oracle's masks;
//! - side tables against the oracle: `min_tokens`, `report.min_tokens`,
//!   `report.token_dead`, `distance` and `top_tier` (checked, not used).
//!
//! Cases: an enum object with merged tokens, integer bounds, string lengths,
//! array item counts, token-dead loops (a pattern, the same inside an
//! object, a format rule), the Mistral format with its special token, the
//! JSON format's two entries, and a randomized family of vocabularies over
//! five fixed grammars (fixed seeds).
//! A failure names the case, the state, `r`, the token and both answers.
//!
//! Token-dead states need a cycle: the compiler refuses a vocabulary that
//! leaves a served, non-accepting state without any token, so in an acyclic
//! grammar every token walk goes on until it accepts. The dead cases are
//! loops that a vocabulary can enter but not leave (`"x` then only `yx`
//! for the pattern `(xy)*z`).

use std::collections::VecDeque;
use std::time::Instant;

use tooldec_compiler::call_format::{self, CallFormat};
use tooldec_compiler::spec::{self, ToolSet};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::JsonOptions;
use tooldec_compiler::{compile, compile_schema, Compiled, Error, ErrorKind, Options, Report};
use tooldec_runtime::{Artifact, Grammar, Matcher};
use tooldec_testkit::served::{grammar_specials, marker, served_states, walk_bytes};
use tooldec_testkit::walk::{self, SplitMix64};

/// Budgets are checked up to the largest entry minimum plus this.
const SLACK: u32 = 8;

// ---------------------------------------------------------------------------
// Cases

/// A grammar: a tool set (or one schema document) and how it is compiled.
struct Setup {
    label: String,
    set: ToolSet,
    /// `compile_schema` (the whole output is one JSON value) instead of
    /// `compile` with `opts.format`.
    schema: bool,
    opts: Options,
    /// Mask width past the tokenizer's ids (`--vocab-size`): padding ids.
    pad: u32,
}

/// Shipped format `name` with only the entries `keep`: the tool-choice
/// entries' free text needs every UTF-8 byte, which the small hand-made
/// vocabularies here lack.
fn format_entries(name: &str, keep: &[&str]) -> CallFormat {
    let mut f = CallFormat::load(name).unwrap();
    for r in &mut f.grammar.rules {
        r.entry = r.entry && keep.contains(&r.name.as_str());
    }
    f
}

impl Setup {
    fn schema(label: &str, schema: &str, max_ws: u32) -> Setup {
        Setup {
            label: label.to_string(),
            set: spec::schema_document(label, schema).unwrap(),
            schema: true,
            opts: options(CallFormat::load("json").unwrap(), max_ws),
            pad: 0,
        }
    }

    fn tools(label: &str, tools: &str, format: CallFormat, max_ws: u32) -> Setup {
        Setup {
            label: label.to_string(),
            set: spec::parse(&format!("{label}.json"), tools).unwrap(),
            schema: false,
            opts: options(format, max_ws),
            pad: 0,
        }
    }

    fn compile(&self, vocab: &Vocab, max_tokens: Option<u32>) -> Result<Compiled, Error> {
        let opts = Options {
            max_tokens,
            mask_width: (self.pad > 0).then(|| vocab.len() as u32 + self.pad),
            ..self.opts.clone()
        };
        if self.schema {
            compile_schema(&self.set, vocab, &opts, &mut |_| {})
        } else {
            compile(&self.set, vocab, &opts, &mut |_| {})
        }
    }
}

fn options(format: CallFormat, max_ws: u32) -> Options {
    Options {
        format,
        json: JsonOptions {
            max_ws,
            ..JsonOptions::default()
        },
        zstd_level: None,
        threads: 2,
        ..Options::default()
    }
}

fn custom_format(name: &str, text: &str) -> CallFormat {
    CallFormat {
        name: name.to_string(),
        grammar: call_format::Rules::parse(&format!("{name}.tdg"), text).unwrap(),
    }
}

/// A vocabulary under construction: ids in push order.
#[derive(Default, Clone)]
struct Tokens(Vec<Token>);

impl Tokens {
    fn bytes(mut self, bytes: impl IntoIterator<Item = u8>) -> Self {
        self.0
            .extend(bytes.into_iter().map(|b| Token::Text(vec![b])));
        self
    }
    fn texts(mut self, texts: &[&str]) -> Self {
        self.0
            .extend(texts.iter().map(|t| Token::Text(t.as_bytes().to_vec())));
        self
    }
    fn raw(mut self, bytes: &[u8]) -> Self {
        self.0.push(Token::Text(bytes.to_vec()));
        self
    }
    fn special(mut self, name: &str) -> Self {
        self.0.push(Token::Special(name.to_string()));
        self
    }
    fn unused(mut self) -> Self {
        self.0.push(Token::Unused);
        self
    }
    /// The vocabulary, EOS the special tokens named in `eos`.
    fn build(self, eos: &[&str], label: &str) -> Vocab {
        let ids = self
            .0
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t, Token::Special(n) if eos.contains(&n.as_str())))
            .map(|(i, _)| i as u32)
            .collect();
        Vocab::from_tokens(self.0, ids, label).unwrap()
    }
}

/// Every byte as a token and an EOS: the vocabulary that finds the bytes a
/// grammar needs and samples its outputs.
fn byte_vocab(specials: &[&str]) -> Vocab {
    let mut t = Tokens::default().bytes(0..=255u8).special("<eos>");
    for s in specials {
        t = t.special(s);
    }
    t.build(&["<eos>"], "all bytes")
}

// ---------------------------------------------------------------------------
// The oracle

/// Token walks over the DFA and the product construction, from the
/// grammar's transition table and the vocabulary only.
struct Oracle {
    /// DFA states, the dead state 0 included.
    n: usize,
    n_tok: usize,
    vocab_size: usize,
    words: usize,
    /// The bytes each token stands for in the grammar: text without the
    /// reserved bytes 0xFE/0xFF, a used special token's marker; else none.
    text: Vec<Option<Vec<u8>>>,
    eos: Vec<bool>,
    accepting: Vec<bool>,
    /// States reached from an entry over text bytes and whole used special
    /// tokens (where a matcher can be).
    served: Vec<bool>,
    /// `delta[s * n_tok + t]`: the state token `t` leads to from served `s`,
    /// 0 if the walk dies, the token has no bytes, or it is EOS.
    delta: Vec<u32>,
    /// Distinct token successors of each served state.
    succ: Vec<Vec<u32>>,
    /// Token-level liveness (no counter) and the BFS distance behind it.
    live_u: Vec<bool>,
    dist_u: Vec<u32>,
    /// The product's largest budget and its trimmed states:
    /// `live[r * n + s]`.
    r_max: u32,
    live: Vec<bool>,
    entries: Vec<(String, u32)>,
    /// Per entry: the least `N` with `(entry, N)` live in the product.
    min: Vec<u32>,
}

impl Oracle {
    fn new(label: &str, g: &Grammar<'_>, vocab: &Vocab) -> Oracle {
        let n = g.state_count();
        let n_tok = vocab.len();
        assert_eq!(g.token_count(), n_tok, "{label}: token count");
        let vocab_size = g.mask_width();
        assert!(vocab_size >= n_tok, "{label}: mask width");
        let specials = grammar_specials(g);
        let text: Vec<Option<Vec<u8>>> = (0..n_tok as u32)
            .map(|t| {
                if specials.contains(&t) {
                    return Some(marker(t).to_vec());
                }
                vocab
                    .bytes(t)
                    .filter(|b| !b.iter().any(|&x| x >= 0xFE))
                    .map(<[u8]>::to_vec)
            })
            .collect();
        for (t, want) in text.iter().enumerate() {
            assert_eq!(
                g.token_bytes(t as u32),
                want.as_deref(),
                "{label}: bytes of token {t}"
            );
        }
        let mut eos = vec![false; n_tok];
        for &t in &vocab.eos {
            eos[t as usize] = true;
        }
        assert_eq!(g.eos_tokens(), &vocab.eos[..], "{label}: EOS ids");
        let accepting: Vec<bool> = (0..n as u32).map(|s| g.is_accepting_state(s)).collect();
        let served = served_states(g, &specials);
        let entries: Vec<(String, u32)> = g.entries().map(|(a, s)| (a.to_string(), s)).collect();
        assert_eq!(entries[0].1, g.start_state(), "{label}: default entry");

        // Token transitions.
        let mut delta = vec![0u32; n * n_tok];
        let mut succ = vec![Vec::new(); n];
        for s in (1..n).filter(|&s| served[s]) {
            for t in 0..n_tok {
                let Some(bytes) = &text[t] else { continue };
                if eos[t] {
                    continue;
                }
                let next = walk_bytes(g, s as u32, bytes);
                delta[s * n_tok + t] = next;
                if next != 0 {
                    assert!(
                        served[next as usize],
                        "{label}: token walk left the served states"
                    );
                    succ[s].push(next);
                }
            }
            succ[s].sort_unstable();
            succ[s].dedup();
        }
        let mut rev = vec![Vec::new(); n];
        for (s, next) in succ.iter().enumerate() {
            for &t in next {
                rev[t as usize].push(s as u32);
            }
        }

        // Token-level liveness: backward BFS without a counter.
        let mut dist_u = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for s in (1..n).filter(|&s| served[s] && accepting[s]) {
            dist_u[s] = 0;
            queue.push_back(s as u32);
        }
        while let Some(t) = queue.pop_front() {
            for &s in &rev[t as usize] {
                if dist_u[s as usize] == u32::MAX {
                    dist_u[s as usize] = dist_u[t as usize] + 1;
                    queue.push_back(s);
                }
            }
        }
        let live_u: Vec<bool> = dist_u.iter().map(|&d| d != u32::MAX).collect();

        // The product, sized by the entries' token distances: states
        // (s, r), r in 0..=r_max; (s, r) -> (n, r - 1) for each token.
        // Trimmed by a backward BFS from the accepting product states.
        for (name, e) in &entries {
            assert!(live_u[*e as usize], "{label}: entry {name} is token-dead");
        }
        let r_max = entries.iter().map(|e| dist_u[e.1 as usize]).max().unwrap() + SLACK;
        let idx = |s: usize, r: u32| r as usize * n + s;
        let mut live = vec![false; (r_max as usize + 1) * n];
        let mut queue = VecDeque::new();
        for r in 0..=r_max {
            for s in (1..n).filter(|&s| served[s] && accepting[s]) {
                live[idx(s, r)] = true;
                queue.push_back((s as u32, r));
            }
        }
        while let Some((t, q)) = queue.pop_front() {
            if q == r_max {
                continue;
            }
            for &s in &rev[t as usize] {
                if !live[idx(s as usize, q + 1)] {
                    live[idx(s as usize, q + 1)] = true;
                    queue.push_back((s, q + 1));
                }
            }
        }
        let min: Vec<u32> = entries
            .iter()
            .map(|(name, e)| {
                (0..=r_max)
                    .find(|&r| live[idx(*e as usize, r)])
                    .unwrap_or_else(|| panic!("{label}: entry {name} is dead in the product"))
            })
            .collect();
        // The two oracles agree with each other.
        for s in (1..n).filter(|&s| served[s]) {
            for r in 0..=r_max {
                assert_eq!(
                    live[idx(s, r)],
                    dist_u[s] <= r,
                    "{label}: product and BFS disagree at ({s}, {r})"
                );
            }
        }
        Oracle {
            n,
            n_tok,
            vocab_size,
            words: g.mask_words(),
            text,
            eos,
            accepting,
            served,
            delta,
            succ,
            live_u,
            dist_u,
            r_max,
            live,
            entries,
            min,
        }
    }

    fn live(&self, s: u32, r: u32) -> bool {
        self.live[r as usize * self.n + s as usize]
    }

    fn next(&self, s: u32, t: u32) -> u32 {
        if (t as usize) < self.n_tok {
            self.delta[s as usize * self.n_tok + t as usize]
        } else {
            0
        }
    }

    fn is_eos(&self, t: u32) -> bool {
        (t as usize) < self.n_tok && self.eos[t as usize]
    }

    /// The oracle's mask at `(s, r)`; `None`: no budget.
    fn mask(&self, s: u32, r: Option<u32>) -> Vec<u32> {
        let mut w = vec![0u32; self.words];
        for t in 0..self.n_tok as u32 {
            let allowed = if self.eos[t as usize] {
                self.accepting[s as usize]
            } else {
                let n = self.next(s, t);
                n != 0
                    && match r {
                        None => self.live_u[n as usize],
                        Some(r) => r >= 1 && self.live(n, r - 1),
                    }
            };
            if allowed {
                w[(t >> 5) as usize] |= 1 << (t & 31);
            }
        }
        w
    }

    fn describe(&self, t: u32) -> String {
        if t as usize >= self.n_tok {
            return "padding".into();
        }
        if self.eos[t as usize] {
            return "EOS".into();
        }
        match &self.text[t as usize] {
            Some(b) => format!("\"{}\"", b.escape_ascii()),
            None => "no bytes".into(),
        }
    }

    /// Why the oracle allows `t` at `(s, r)` or not.
    fn reason(&self, s: u32, r: Option<u32>, t: u32) -> String {
        if self.is_eos(t) {
            return format!("EOS; state accepting = {}", self.accepting[s as usize]);
        }
        let n = self.next(s, t);
        if n == 0 {
            return "the byte walk dies".into();
        }
        let d = self.dist_u[n as usize];
        let d = if d == u32::MAX {
            "none".to_string()
        } else {
            d.to_string()
        };
        match r {
            None => format!("δ* = {n}, token distance {d}"),
            Some(r) => format!(
                "δ* = {n}, token distance {d}, live({n}, {}) = {}",
                r as i64 - 1,
                r >= 1 && self.live(n, r - 1)
            ),
        }
    }

    /// Panics at the first token where `got` differs from `want`.
    #[track_caller]
    fn same(&self, ctx: &str, s: u32, r: Option<u32>, want: &[u32], got: &[u32]) {
        if want == got {
            return;
        }
        let t = (0..(self.words * 32) as u32)
            .find(|&t| bit(want, t) != bit(got, t))
            .unwrap();
        let r_text = r.map_or("∞".to_string(), |r| r.to_string());
        panic!(
            "{ctx}: mask mismatch at state {s}, r = {r_text}: token {t} ({}): oracle {}, runtime {} ({})",
            self.describe(t),
            bit(want, t),
            bit(got, t),
            self.reason(s, r, t),
        );
    }
}

fn bit(words: &[u32], t: u32) -> bool {
    words[(t >> 5) as usize] >> (t & 31) & 1 == 1
}

fn eos_only(o: &Oracle) -> Vec<u32> {
    let mut w = vec![0u32; o.words];
    for t in (0..o.n_tok as u32).filter(|&t| o.is_eos(t)) {
        w[(t >> 5) as usize] |= 1 << (t & 31);
    }
    w
}

// ---------------------------------------------------------------------------
// The checks

#[derive(Default)]
struct Stats {
    cases: usize,
    /// Distinct (s, r) whose `fill_budget_mask` was compared.
    product_states: usize,
    /// (entry, N, s, r) visits of the forward searches.
    product_visits: usize,
    /// Distinct (entry, s, r) a real matcher reached and was checked at.
    matcher_states: usize,
    /// accept_token calls compared with a mask bit.
    token_checks: usize,
    walks: usize,
    refused_vocabs: usize,
}

struct Outcome {
    product_states: usize,
    product_visits: usize,
    matcher_states: usize,
}

/// Everything for one compiled grammar. `max_tokens_checks`: also compile
/// with `--max-tokens` around the minimum.
fn check_case(
    setup: &Setup,
    vocab: &Vocab,
    label: &str,
    max_tokens_checks: bool,
    stats: &mut Stats,
) -> Report {
    let t0 = Instant::now();
    let out = setup
        .compile(vocab, None)
        .unwrap_or_else(|e| panic!("{label}: compile: {e}"));
    let art = Artifact::from_bytes(&out.artifact).unwrap();
    let g = art.grammar();
    let o = Oracle::new(label, &g, vocab);
    let mut rng = SplitMix64::new(walk::seed(label, 1, 2));

    side_tables(label, &g, &out.report, &o);
    let unbounded = check_unbounded(label, &g, &o);
    let oc = check_budgets(label, &g, &o, &mut rng, stats);
    if max_tokens_checks {
        check_max_tokens(label, setup, vocab, &g, &o, &mut rng, stats);
    }

    stats.cases += 1;
    stats.product_states += oc.product_states;
    stats.product_visits += oc.product_visits;
    stats.matcher_states += oc.matcher_states;
    let served = o.served.iter().filter(|&&x| x).count();
    let mins: Vec<String> = o
        .entries
        .iter()
        .zip(&o.min)
        .map(|((n, _), m)| format!("{n}={m}"))
        .collect();
    println!(
        "{label}: {} states ({served} served, {} token-dead), {} tokens (mask width {}), min [{}], \
         N 0..={}, {} product states checked ({} visits), {} matcher states, {} unbounded states, \
         tiers {}/{} (max {}), {:.0} ms",
        o.n,
        out.report.token_dead,
        o.n_tok,
        o.vocab_size,
        mins.join(", "),
        o.r_max,
        oc.product_states,
        oc.product_visits,
        oc.matcher_states,
        unbounded,
        out.report.tiered_states,
        out.report.lower_tiers,
        out.report.max_tiers,
        t0.elapsed().as_secs_f64() * 1e3,
    );
    out.report
}

/// `min_tokens`, the report, `distance`, `top_tier` and the padding ids
/// against the oracle.
fn side_tables(label: &str, g: &Grammar<'_>, report: &Report, o: &Oracle) {
    assert_eq!(g.min_tokens(), o.min[0], "{label}: min_tokens");
    assert_eq!(
        g.max_tokens(),
        None,
        "{label}: compiled without --max-tokens"
    );
    let rep: Vec<(String, u32)> = o
        .entries
        .iter()
        .zip(&o.min)
        .map(|((n, _), &m)| (n.clone(), m))
        .collect();
    assert_eq!(report.min_tokens, rep, "{label}: report.min_tokens");
    let dead = (1..o.n).filter(|&s| o.served[s] && !o.live_u[s]).count();
    assert_eq!(report.token_dead, dead, "{label}: report.token_dead");
    for s in 0..o.n as u32 {
        let want = (o.served[s as usize] && o.live_u[s as usize]).then(|| o.dist_u[s as usize]);
        assert_eq!(g.distance(s), want, "{label}: distance({s})");
        if want.is_none() {
            continue;
        }
        let top = o.succ[s as usize]
            .iter()
            .filter(|&&n| o.live_u[n as usize])
            .map(|&n| o.dist_u[n as usize])
            .max()
            .unwrap_or(0);
        assert_eq!(g.top_tier(s), top, "{label}: top_tier({s})");
    }
}

/// No budget: every served state's unbudgeted masks, then `g.matcher()`
/// and `matcher_at` explored over every allowed token. Returns the states
/// the matchers reached.
fn check_unbounded(label: &str, g: &Grammar<'_>, o: &Oracle) -> usize {
    let mut got = vec![0u32; o.words];
    let big = [u32::MAX, u32::MAX - 1, o.n as u32 + 1];
    for s in 0..o.n as u32 {
        if !o.served[s as usize] {
            for r in [u32::MAX, 0, 5] {
                g.fill_budget_mask(s, r, &mut got);
                assert!(
                    got.iter().all(|&w| w == 0),
                    "{label}: state {s} is not served but its mask (r = {r}) allows something"
                );
            }
            continue;
        }
        let want = o.mask(s, None);
        for r in big {
            got.fill(0xA5A5_A5A5);
            assert!(g.fill_budget_mask(s, r, &mut got));
            o.same(
                &format!("{label} (fill_budget_mask, r = {r} as unbounded)"),
                s,
                None,
                &want,
                &got,
            );
        }
        got.fill(0xA5A5_A5A5);
        assert!(g.fill_mask_by_id(g.mask_id(s).unwrap(), &mut got));
        o.same(&format!("{label} (stored mask)"), s, None, &want, &got);
    }

    // The largest budget is no budget in effect.
    for (name, e) in &o.entries {
        let m = g.matcher_at_with_budget(name, u32::MAX).unwrap();
        assert_eq!(
            m.tokens_left(),
            Some(u32::MAX - 1),
            "{label}: budget u32::MAX"
        );
        got.fill(0);
        m.fill_mask(&mut got);
        let ctx = format!("{label} (matcher_at_with_budget({name}, u32::MAX))");
        o.same(&ctx, *e, None, &o.mask(*e, None), &got);
    }

    let mut seen = vec![false; o.n];
    let mut queue: VecDeque<Matcher<'_>> = VecDeque::new();
    queue.push_back(g.matcher());
    for (name, _) in &o.entries {
        queue.push_back(g.matcher_at(name).unwrap());
    }
    let mut reached = 0;
    while let Some(m) = queue.pop_front() {
        assert_eq!(
            m.tokens_left(),
            None,
            "{label}: unbounded matcher has a budget"
        );
        let s = m.state().unwrap();
        if std::mem::replace(&mut seen[s as usize], true) {
            continue;
        }
        reached += 1;
        assert!(
            o.live_u[s as usize],
            "{label}: unbounded matcher reached token-dead state {s}"
        );
        let want = o.mask(s, None);
        got.fill(0x5A5A_5A5A);
        m.fill_mask(&mut got);
        let ctx = format!("{label} (g.matcher(), no budget)");
        o.same(&ctx, s, None, &want, &got);
        assert!(
            want.iter().any(|&w| w != 0),
            "{ctx}: empty mask at live state {s}"
        );
        for t in 0..o.vocab_size as u32 {
            let mut c = m;
            let ok = c.accept_token(t);
            assert_eq!(
                ok,
                bit(&want, t),
                "{ctx}: state {s}: accept_token({t} {}) = {ok}, mask says {}",
                o.describe(t),
                bit(&want, t)
            );
            assert_eq!(m.is_allowed(t), ok, "{ctx}: is_allowed({t}) at state {s}");
            if ok && o.is_eos(t) {
                assert!(
                    c.is_terminated() && c.is_accepting(),
                    "{ctx}: EOS did not terminate"
                );
            } else if ok {
                assert_eq!(c.state(), Some(o.next(s, t)), "{ctx}: state {s}, token {t}");
                queue.push_back(c);
            } else {
                assert_eq!(
                    c.state(),
                    Some(s),
                    "{ctx}: refused token {t} moved the matcher"
                );
            }
        }
    }
    reached
}

/// The product checks for every budget and entry.
fn check_budgets(
    label: &str,
    g: &Grammar<'_>,
    o: &Oracle,
    rng: &mut SplitMix64,
    stats: &mut Stats,
) -> Outcome {
    let n = o.n;
    let size = (o.r_max as usize + 1) * n;
    let idx = |s: u32, r: u32| r as usize * n + s as usize;
    let mut checked = vec![false; size];
    let mut got = vec![0u32; o.words];
    let mut out = Outcome {
        product_states: 0,
        product_visits: 0,
        matcher_states: 0,
    };

    for (ei, (name, e)) in o.entries.iter().enumerate() {
        let e = *e;
        let min = o.min[ei];
        let mut matcher_seen = vec![false; size];
        for big_n in 0..=o.r_max {
            let ctx = format!("{label} (entry {name}, N = {big_n})");

            // 1. Every product state reachable from (e, N), trimmed or not.
            let mut seen = vec![false; size];
            let mut queue = VecDeque::from([(e, big_n)]);
            seen[idx(e, big_n)] = true;
            while let Some((s, r)) = queue.pop_front() {
                out.product_visits += 1;
                if !std::mem::replace(&mut checked[idx(s, r)], true) {
                    out.product_states += 1;
                    let want = o.mask(s, Some(r));
                    got.fill(0xA5A5_A5A5);
                    assert!(g.fill_budget_mask(s, r, &mut got));
                    o.same(
                        &format!("{ctx} (fill_budget_mask)"),
                        s,
                        Some(r),
                        &want,
                        &got,
                    );
                }
                if r == 0 {
                    continue;
                }
                for &next in &o.succ[s as usize] {
                    if !std::mem::replace(&mut seen[idx(next, r - 1)], true) {
                        queue.push_back((next, r - 1));
                    }
                }
            }

            // 2. The constructors refuse exactly below the minimum.
            let made = if ei == 0 {
                let a = g.matcher_with_budget(big_n);
                let b = g.matcher_at_with_budget(name, big_n);
                assert_eq!(a.is_ok(), b.is_ok(), "{ctx}: matcher_with_budget vs _at");
                a
            } else {
                g.matcher_at_with_budget(name, big_n)
            };
            let m = match made {
                Err(err) => {
                    assert!(
                        big_n < min,
                        "{ctx}: refused a budget of {big_n} >= minimum {min}: {err}"
                    );
                    assert_eq!(
                        err.budget_shortfall(),
                        Some((min, big_n)),
                        "{ctx}: budget_shortfall ({err})"
                    );
                    continue;
                }
                Ok(m) => {
                    assert!(
                        big_n >= min,
                        "{ctx}: accepted a budget below the minimum {min}"
                    );
                    m
                }
            };
            assert_eq!(m.state(), Some(e), "{ctx}: start state");
            assert_eq!(m.tokens_left(), Some(big_n), "{ctx}: tokens_left");

            // 3. The matcher over every allowed token (each live product
            //    state once per entry).
            let mut queue = VecDeque::from([m]);
            while let Some(m) = queue.pop_front() {
                let s = m.state().unwrap();
                let r = m.tokens_left().unwrap();
                if std::mem::replace(&mut matcher_seen[idx(s, r)], true) {
                    continue;
                }
                out.matcher_states += 1;
                for c in check_matcher_step(&ctx, o, &m, &mut got, stats) {
                    queue.push_back(c);
                }
            }

            // 4. Random paths to termination.
            if big_n == min || big_n == min + 1 || big_n == o.r_max || big_n % 5 == 0 {
                for _ in 0..2 {
                    random_walk(&ctx, g, o, m, rng, stats);
                }
            }
        }
    }
    out
}

/// Checks a live matcher's mask, every token's `accept_token`, and
/// `set_budget`; returns the matchers after its allowed text tokens.
fn check_matcher_step<'g>(
    ctx: &str,
    o: &Oracle,
    m: &Matcher<'g>,
    got: &mut [u32],
    stats: &mut Stats,
) -> Vec<Matcher<'g>> {
    let s = m.state().unwrap();
    let r = m.tokens_left().unwrap();
    assert!(
        o.live(s, r),
        "{ctx}: matcher reached ({s}, {r}), which is not live"
    );
    let want = o.mask(s, Some(r));
    got.fill(0x5A5A_5A5A);
    m.fill_mask(got);
    o.same(
        &format!("{ctx} (Matcher::fill_mask)"),
        s,
        Some(r),
        &want,
        got,
    );
    assert!(
        want.iter().any(|&w| w != 0),
        "{ctx}: live product state ({s}, {r}) has an empty mask"
    );
    let mut next = Vec::new();
    for t in 0..o.vocab_size as u32 {
        let mut c = *m;
        let ok = c.accept_token(t);
        stats.token_checks += 1;
        if ok != bit(&want, t) {
            panic!(
                "{ctx}: at ({s}, {r}) accept_token({t} {}) = {ok} but the oracle's mask says {} ({})",
                o.describe(t),
                bit(&want, t),
                o.reason(s, Some(r), t)
            );
        }
        assert_eq!(m.is_allowed(t), ok, "{ctx}: is_allowed({t}) at ({s}, {r})");
        if !ok {
            assert_eq!(
                (c.state(), c.tokens_left()),
                (Some(s), Some(r)),
                "{ctx}: refused token {t} changed the matcher"
            );
        } else if o.is_eos(t) {
            assert!(
                c.is_terminated() && c.is_accepting(),
                "{ctx}: EOS did not terminate"
            );
            assert_eq!(
                c.tokens_left(),
                Some(r.saturating_sub(1)),
                "{ctx}: EOS spends one token"
            );
        } else {
            assert_eq!(
                (c.state(), c.tokens_left()),
                (Some(o.next(s, t)), Some(r - 1)),
                "{ctx}: after token {t} from ({s}, {r})"
            );
            next.push(c);
        }
    }
    // set_budget: fine exactly where (s, r2) is live.
    for r2 in 0..=o.r_max.min(r + 2) {
        let mut c = *m;
        let res = c.set_budget(Some(r2));
        assert_eq!(
            res.is_ok(),
            o.live(s, r2),
            "{ctx}: set_budget(Some({r2})) at state {s}: {res:?}"
        );
        if res.is_ok() {
            assert_eq!(c.tokens_left(), Some(r2));
        }
    }
    next
}

/// A random path from `m` to termination, every mask and step checked.
fn random_walk(
    ctx: &str,
    g: &Grammar<'_>,
    o: &Oracle,
    mut m: Matcher<'_>,
    rng: &mut SplitMix64,
    stats: &mut Stats,
) {
    let budget = m.tokens_left().unwrap();
    let start = m.state().unwrap();
    let mut got = vec![0u32; o.words];
    let mut path = Vec::new();
    let mut text_tokens = 0;
    while !m.is_terminated() {
        let s = m.state().unwrap();
        let r = m.tokens_left().unwrap();
        let want = o.mask(s, Some(r));
        m.fill_mask(&mut got);
        o.same(
            &format!("{ctx} (random walk after {path:?})"),
            s,
            Some(r),
            &want,
            &got,
        );
        let allowed: Vec<u32> = (0..o.vocab_size as u32)
            .filter(|&t| bit(&want, t))
            .collect();
        assert!(
            !allowed.is_empty(),
            "{ctx}: dead end at ({s}, {r}) after {path:?}"
        );
        // Prefer text tokens so walks use their budget.
        let text: Vec<u32> = allowed.iter().copied().filter(|&t| !o.is_eos(t)).collect();
        let pick = if !text.is_empty() && (rng.unit() < 0.85 || text.len() == allowed.len()) {
            text[rng.below(text.len() as u64) as usize]
        } else {
            allowed[rng.below(allowed.len() as u64) as usize]
        };
        assert!(
            m.accept_token(pick),
            "{ctx}: allowed token {pick} refused at ({s}, {r})"
        );
        if !o.is_eos(pick) {
            text_tokens += 1;
        }
        path.push(pick);
        assert!(
            path.len() as u32 <= budget + 1,
            "{ctx}: walk ran past its budget: {path:?}"
        );
    }
    assert!(
        text_tokens <= budget,
        "{ctx}: {text_tokens} text tokens in a budget of {budget}"
    );
    assert!(m.is_accepting());
    m.fill_mask(&mut got);
    assert_eq!(
        got,
        eos_only(o),
        "{ctx}: a terminated matcher allows only EOS"
    );
    for t in 0..o.vocab_size as u32 {
        assert_eq!(
            m.clone().accept_token(t),
            o.is_eos(t),
            "{ctx}: terminated, token {t}"
        );
    }
    if start == g.start_state() {
        m.reset();
        assert_eq!(
            (m.state(), m.tokens_left()),
            (Some(start), Some(budget)),
            "{ctx}: reset"
        );
    }
    // reset_to: exactly the entries the budget can still complete.
    for (name, e) in &o.entries {
        let mut c = m;
        let fits = o.live(*e, budget);
        assert_eq!(c.reset_to(name), fits, "{ctx}: reset_to({name})");
        if fits {
            assert_eq!((c.state(), c.tokens_left()), (Some(*e), Some(budget)));
        }
    }
    stats.walks += 1;
}

/// `--max-tokens` around the largest entry minimum.
fn check_max_tokens(
    label: &str,
    setup: &Setup,
    vocab: &Vocab,
    g: &Grammar<'_>,
    o: &Oracle,
    rng: &mut SplitMix64,
    stats: &mut Stats,
) {
    let need = *o.min.iter().max().unwrap();
    if need > 0 {
        let n = need - 1;
        let err = match setup.compile(vocab, Some(n)) {
            Ok(_) => panic!("{label}: --max-tokens {n} compiled, but the minimum is {need}"),
            Err(e) => e,
        };
        assert_eq!(
            err.kind(),
            ErrorKind::Budget,
            "{label}: --max-tokens {n}: {err}"
        );
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("takes {need} tokens"))
                && msg.contains(&format!("--max-tokens {n}")),
            "{label}: --max-tokens {n}: the message should name the minimum {need}: {msg}"
        );
    }
    for n in [need, need + 3] {
        let out = setup
            .compile(vocab, Some(n))
            .unwrap_or_else(|e| panic!("{label}: --max-tokens {n} (minimum {need}): {e}"));
        assert_eq!(out.report.max_tokens, Some(n));
        let art = Artifact::from_bytes(&out.artifact).unwrap();
        let g2 = art.grammar();
        assert_eq!(
            (g2.state_count(), g2.start_state()),
            (g.state_count(), g.start_state()),
            "{label}: --max-tokens changed the automaton"
        );
        assert_eq!(g2.max_tokens(), Some(n), "{label}: max_tokens()");
        let ctx = format!("{label} (--max-tokens {n})");
        let m = g2.matcher();
        assert_eq!(m.tokens_left(), Some(n), "{ctx}: g.matcher().tokens_left()");
        let mut got = vec![0u32; o.words];
        for (name, e) in &o.entries {
            let m = g2.matcher_at(name).unwrap();
            assert_eq!(
                (m.state(), m.tokens_left()),
                (Some(*e), Some(n)),
                "{ctx}: matcher_at({name})"
            );
            m.fill_mask(&mut got);
            o.same(
                &format!("{ctx} (matcher_at({name}))"),
                *e,
                Some(n),
                &o.mask(*e, Some(n)),
                &got,
            );
        }
        random_walk(&ctx, &g2, o, m, rng, stats);
    }
}

// ---------------------------------------------------------------------------
// Vocabularies from a grammar

/// What the all-bytes compile of a setup tells: the bytes its served
/// states read, and sample outputs.
struct Probe {
    needed: Vec<u8>,
    outputs: Vec<Vec<u8>>,
}

fn probe(setup: &Setup, specials: &[&str], rng: &mut SplitMix64) -> Probe {
    let vocab = byte_vocab(specials);
    let out = setup
        .compile(&vocab, None)
        .unwrap_or_else(|e| panic!("{}: all-bytes compile: {e}", setup.label));
    let art = Artifact::from_bytes(&out.artifact).unwrap();
    let g = art.grammar();
    let sp = grammar_specials(&g);
    let served = served_states(&g, &sp);
    let needed: Vec<u8> = (0..0xFEu8)
        .filter(|&b| {
            (1..g.state_count() as u32).any(|s| served[s as usize] && g.next_state(s, b) != 0)
        })
        .collect();
    let dist = walk::distances(&g);
    let mut outputs = Vec::new();
    for i in 0..24 {
        let entries: Vec<u32> = g.entries().map(|e| e.1).collect();
        let mut s = entries[i % entries.len()];
        let mut text = Vec::new();
        loop {
            let stuck = (0..=0xFFu8).all(|b| g.next_state(s, b) == 0);
            if g.is_accepting_state(s) && (stuck || rng.unit() < 0.2 || text.len() > 60) {
                break;
            }
            let mut steps: Vec<Vec<u8>> = (0..0xFEu8)
                .filter(|&b| g.next_state(s, b) != 0)
                .map(|b| vec![b])
                .collect();
            steps.extend(
                sp.iter()
                    .map(|&id| marker(id).to_vec())
                    .filter(|m| walk_bytes(&g, s, m) != 0),
            );
            let closer: Vec<&Vec<u8>> = steps
                .iter()
                .filter(|b| dist[walk_bytes(&g, s, b) as usize] < dist[s as usize])
                .collect();
            let step = if !closer.is_empty() && (text.len() > 60 || rng.unit() < 0.5) {
                closer[rng.below(closer.len() as u64) as usize].clone()
            } else {
                steps[rng.below(steps.len() as u64) as usize].clone()
            };
            s = walk_bytes(&g, s, &step);
            text.extend(step);
        }
        outputs.push(text);
    }
    Probe { needed, outputs }
}

/// A random vocabulary for a probed grammar: the needed bytes (up to
/// `drop` of them left out), a few other bytes, substrings of sample
/// outputs and random strings over the needed bytes, EOS (one or two) and
/// other specials, in shuffled order.
fn random_vocab(
    p: &Probe,
    specials: &[&str],
    drop: usize,
    max_merges: u64,
    rng: &mut SplitMix64,
) -> (Vocab, String) {
    let mut tokens: Vec<Token> = Vec::new();
    let mut gone = Vec::new();
    for _ in 0..drop {
        gone.push(p.needed[rng.below(p.needed.len() as u64) as usize]);
    }
    for b in 0..=255u8 {
        let keep = if p.needed.contains(&b) {
            !gone.contains(&b)
        } else {
            rng.unit() < 0.05
        };
        if keep {
            tokens.push(Token::Text(vec![b]));
        }
    }
    let merges = 4 + rng.below(max_merges) as usize;
    for _ in 0..merges {
        if rng.unit() < 0.3 {
            // Any string over the grammar's bytes, valid somewhere or not.
            let len = 2 + rng.below(3) as usize;
            let piece = (0..len)
                .map(|_| p.needed[rng.below(p.needed.len() as u64) as usize])
                .collect();
            tokens.push(Token::Text(piece));
            continue;
        }
        let o = &p.outputs[rng.below(p.outputs.len() as u64) as usize];
        if o.len() < 2 {
            continue;
        }
        let len = 2 + rng.below(7.min(o.len() as u64 - 1)) as usize;
        let at = rng.below((o.len() - len + 1) as u64) as usize;
        let piece = o[at..at + len].to_vec();
        if piece.iter().any(|&b| b >= 0xF5) {
            continue;
        }
        tokens.push(Token::Text(piece));
    }
    tokens.push(Token::Special("<eos>".into()));
    let two_eos = rng.unit() < 0.3;
    if two_eos {
        tokens.push(Token::Special("<eot>".into()));
    }
    for s in specials {
        tokens.push(Token::Special(s.to_string()));
    }
    if rng.unit() < 0.3 {
        tokens.push(Token::Special("<pad>".into()));
        tokens.push(Token::Unused);
    }
    // Fisher-Yates.
    for i in (1..tokens.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        tokens.swap(i, j);
    }
    let desc = format!(
        "{} tokens, {merges} merges, {}{}",
        tokens.len(),
        if gone.is_empty() {
            "every needed byte".to_string()
        } else {
            format!("no single '{}'", gone.escape_ascii())
        },
        if two_eos { ", two EOS" } else { "" }
    );
    let t = Tokens(tokens);
    (t.build(&["<eos>", "<eot>"], "random"), desc)
}

// ---------------------------------------------------------------------------
// Fixed cases

fn printable() -> impl Iterator<Item = u8> {
    0x20..0x7Fu8
}

#[test]
fn budget_masks_equal_the_product_construction() {
    let t0 = Instant::now();
    let mut stats = Stats::default();

    // (1) An enum object with merged tokens: tiers differ.
    let mut setup = Setup::schema(
        "enum_object",
        r#"{"type": "object", "properties": {
            "unit": {"enum": ["celsius", "fahrenheit", "kelvin"]},
            "city": {"enum": ["Paris", "Rome", "Oslo"]},
            "hot": {"type": "boolean"}},
           "required": ["unit"], "additionalProperties": false}"#,
        1,
    );
    let vocab = Tokens::default()
        .bytes(printable())
        .texts(&[
            "{\"",
            "\":",
            "\": \"",
            "\", \"",
            "\"}",
            "unit",
            "\"unit\": \"",
            "celsius",
            "fahrenheit",
            "fahren",
            "heit\"",
            "kelvin\"}",
            "Paris",
            "Rome\"",
            "city",
            "true",
            "false}",
            ", ",
            "\"hot\": ",
        ])
        .special("<eos>")
        .special("<pad>")
        .unused()
        .build(&["<eos>"], "enum object");
    // Padding ids up to a model's logits size: never allowed.
    setup.pad = 43;
    let rep = check_case(&setup, &vocab, "enum_object", true, &mut stats);
    assert!(
        rep.tiered_states > 0 && rep.max_tiers >= 3,
        "enum_object: tiers should differ"
    );

    // (2) Counters: integer bounds, string lengths, array items.
    let setup = Setup::schema(
        "integer_bounds",
        r#"{"type": "object", "properties": {
            "n": {"type": "integer", "minimum": -20, "maximum": 1234},
            "k": {"type": "integer", "exclusiveMinimum": 0, "maximum": 99}},
           "required": ["n", "k"], "additionalProperties": false}"#,
        1,
    );
    let vocab = Tokens::default()
        .bytes(printable())
        .texts(&[
            "{\"n\": ",
            "12",
            "123",
            "1234",
            "-1",
            "-2",
            "00",
            "99",
            ", \"k\": ",
            "9}",
            "0}",
            "}",
        ])
        .special("<eos>")
        .build(&["<eos>"], "integers");
    let rep = check_case(&setup, &vocab, "integer_bounds", true, &mut stats);
    assert!(rep.tiered_states > 0, "integer_bounds: tiers should differ");

    let setup = Setup::schema(
        "string_lengths",
        r#"{"type": "object", "properties": {
            "s": {"type": "string", "minLength": 2, "maxLength": 5},
            "t": {"type": "string", "pattern": "^[ab]+$", "maxLength": 6}},
           "required": ["s"], "additionalProperties": false}"#,
        0,
    );
    let vocab = Tokens::default()
        .bytes(0..=255u8)
        .texts(&[
            "{\"s\":\"",
            "ab",
            "aba",
            "abab",
            "bb",
            "ab\"",
            "abc\"",
            "\\n",
            "\\u00",
            "é",
            "日本",
            "\",\"t\":\"",
            "ababab",
            "\"}",
        ])
        .special("<eos>")
        .build(&["<eos>"], "strings");
    let rep = check_case(&setup, &vocab, "string_lengths", true, &mut stats);
    assert!(rep.tiered_states > 0, "string_lengths: tiers should differ");

    let setup = Setup::schema(
        "array_items",
        r#"{"type": "array", "items": {"enum": [1, 22, 333]}, "minItems": 2, "maxItems": 5}"#,
        1,
    );
    let vocab = Tokens::default()
        .bytes(printable())
        .texts(&["22", "333", ", ", ",", "[1", "[22, 333", "1]", "]", "33"])
        .special("<eos>")
        .build(&["<eos>"], "arrays");
    let rep = check_case(&setup, &vocab, "array_items", true, &mut stats);
    assert!(rep.tiered_states > 0, "array_items: tiers should differ");

    // (3) Token-dead parts. A pattern loop: after `"x` the only token is
    // `yx`, which returns there; `z"` leaves only from the even state.
    let setup = Setup::schema(
        "dead_pattern",
        r#"{"type": "string", "pattern": "^(xy)*z$"}"#,
        0,
    );
    let vocab = Tokens::default()
        .texts(&["\"", "x", "yx", "xy", "z\"", "\"xy"])
        .special("<eos>")
        .build(&["<eos>"], "dead pattern");
    let rep = check_case(&setup, &vocab, "dead_pattern", true, &mut stats);
    assert!(
        rep.token_dead > 0,
        "dead_pattern: expected token-dead states"
    );

    // The same loop inside an object property, with an enum beside it.
    let setup = Setup::schema(
        "dead_property",
        r#"{"type": "object", "properties": {
            "p": {"type": "string", "pattern": "^(xy)*z$"},
            "e": {"enum": ["xz", "q"]}},
           "required": ["p"], "additionalProperties": false}"#,
        0,
    );
    let vocab = Tokens::default()
        .texts(&[
            "{",
            "}",
            "\"",
            ":",
            ",",
            "p",
            "e",
            "x",
            "yx",
            "xy",
            "z\"",
            "\"xy",
            "q",
            "z",
            "{\"p\":\"",
            "\",\"e\":\"",
        ])
        .special("<eos>")
        .build(&["<eos>"], "dead property");
    let rep = check_case(&setup, &vocab, "dead_property", true, &mut stats);
    assert!(
        rep.token_dead > 0,
        "dead_property: expected token-dead states"
    );

    // A format-level loop that no token sequence leaves from one phase
    // (after an odd `a` the only token is `ba`, back to odd), and a second
    // entry.
    let fmt = custom_format(
        "loop",
        r#"
entry start = "go " ("ab")* "!" call;
entry call = tool { name "(" args ")" };
"#,
    );
    let setup = Setup::tools(
        "dead_format",
        r#"[{"name": "f", "parameters": {"type": "object", "properties": {"v": {"enum": [1, 2]}}}}]"#,
        fmt,
        0,
    );
    let vocab = Tokens::default()
        .bytes(printable().filter(|&b| b != b'b'))
        .texts(&["go ", "ab", "ba", "!f", "{\"v\":", "2})", "f({})"])
        .special("<eos>")
        .build(&["<eos>"], "dead format");
    let rep = check_case(&setup, &vocab, "dead_format", true, &mut stats);
    assert!(
        rep.token_dead > 0,
        "dead_format: expected token-dead states"
    );

    // Mistral: the [TOOL_CALLS] special token (marker bytes), the same
    // name as text, and a text token spelling its marker (never allowed).
    let tools = r#"[{"name": "get_weather", "parameters": {"type": "object",
        "properties": {"unit": {"enum": ["c", "f"]}}, "required": ["unit"]}},
       {"name": "get_time", "parameters": {"type": "object", "properties": {},
        "additionalProperties": false}}]"#;
    let setup = Setup::tools("mistral", tools, format_entries("mistral", &["start"]), 0);
    let mut t = Tokens::default().special("<s>").special("[TOOL_CALLS]");
    let marker_text = marker(1);
    t = t
        .raw(&marker_text)
        .texts(&[
            "[TOOL_CALLS]",
            "[{\"name\": \"",
            "get_",
            "weather\"",
            "time",
            ", \"arguments\": {",
            "\"unit\": \"c\"}}]",
            "}}",
        ])
        .bytes(printable())
        .special("</s>");
    let vocab = t.build(&["</s>"], "mistral");
    check_case(&setup, &vocab, "mistral", true, &mut stats);

    // The JSON format: two entries, a call or an array of calls.
    let setup = Setup::tools(
        "json_entries",
        tools,
        format_entries("json", &["start", "call"]),
        1,
    );
    let vocab = Tokens::default()
        .bytes(printable())
        .texts(&[
            "{\"name\": \"",
            "get_weather",
            "get_time",
            "\", \"arguments\": ",
            "{}}",
            "{\"unit\": \"",
            "c\"}}",
            "}, {",
            "[{",
            "}]",
            "f\"",
            " ",
        ])
        .raw(b"get_time")
        .special("<|eot|>")
        .special("<|end|>")
        .build(
            &["<|eot|>", "<|end|>"],
            "json entries, duplicate token, two EOS",
        );
    check_case(&setup, &vocab, "json_entries", true, &mut stats);

    println!(
        "fixed cases: {} cases, {} product states checked ({} visits), {} matcher states, {} token checks, {} walks, {:.2} s",
        stats.cases,
        stats.product_states,
        stats.product_visits,
        stats.matcher_states,
        stats.token_checks,
        stats.walks,
        t0.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------
// (4) Random vocabularies over fixed schemas

#[test]
fn budget_masks_equal_the_product_construction_on_random_vocabularies() {
    let t0 = Instant::now();
    let mut stats = Stats::default();
    let tools = r#"[{"name": "get_weather", "parameters": {"type": "object",
        "properties": {"unit": {"enum": ["c", "f"]}, "days": {"type": "integer", "minimum": 1, "maximum": 14}},
        "required": ["unit"]}},
       {"name": "get_time", "parameters": {"type": "object", "properties": {}}}]"#;
    // (setup, special tokens, needed bytes to leave out, merges,
    // whether to redraw vocabularies with dropped bytes until one makes
    // token-dead states)
    let mut setups: Vec<(Setup, Vec<&str>, usize, u64, bool)> = vec![
        (
            Setup::schema(
                "r_object",
                r#"{"type": "object", "properties": {
                    "unit": {"enum": ["celsius", "kelvin"]},
                    "n": {"type": "integer", "minimum": -5, "maximum": 300},
                    "ok": {"type": "boolean"}},
                   "required": ["unit"], "additionalProperties": false}"#,
                1,
            ),
            vec![],
            2,
            40,
            false,
        ),
        (
            Setup::schema(
                "r_array",
                r#"{"type": "array", "items": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 50},
                    {"type": "string", "maxLength": 2}]}, "minItems": 1, "maxItems": 4}"#,
                0,
            ),
            vec![],
            2,
            40,
            false,
        ),
        (
            Setup::schema(
                "r_pattern",
                r#"{"type": "object", "properties": {"p": {"type": "string", "pattern": "^(ab|c)*d$", "maxLength": 7},
                    "q": {"type": "string", "pattern": "^(xy)*z$"}}, "required": ["p", "q"], "additionalProperties": false}"#,
                0,
            ),
            vec![],
            2,
            40,
            false,
        ),
        (
            Setup::tools("r_mistral", tools, format_entries("mistral", &["start"]), 0),
            vec!["[TOOL_CALLS]"],
            2,
            40,
            false,
        ),
        // Loops that a vocabulary without some single bytes may not leave:
        // token-dead states.
        (
            Setup::schema(
                "r_loop",
                r#"{"type": "string", "pattern": "^(xy|z)*w(pq)*$"}"#,
                0,
            ),
            vec![],
            1,
            12,
            true,
        ),
    ];
    let per_setup = 10;
    let mut dead_cases = 0;
    for (si, (setup, specials, drop_p, max_merges, want_dead)) in setups.iter_mut().enumerate() {
        let mut rng = SplitMix64::new(walk::seed("budget_oracle_random", si as u64, 0));
        let p = probe(setup, specials, &mut rng);
        for k in 0..per_setup {
            setup.pad = if k % 4 == 3 {
                1 + rng.below(64) as u32
            } else {
                0
            };
            let mut tries = 0;
            let (vocab, desc) = loop {
                let drop = k % 3 != 0 && tries < 40;
                tries += 1;
                let (vocab, desc) = random_vocab(
                    &p,
                    specials,
                    if drop { *drop_p } else { 0 },
                    *max_merges,
                    &mut rng,
                );
                match setup.compile(&vocab, None) {
                    Err(e) if e.kind() == ErrorKind::Grammar => {
                        assert!(
                            drop,
                            "{}: refused a vocabulary with every needed byte: {e}",
                            setup.label
                        );
                        stats.refused_vocabs += 1;
                    }
                    Err(e) => panic!("{}: {e}", setup.label),
                    Ok(c) if drop && *want_dead && c.report.token_dead == 0 => {
                        stats.refused_vocabs += 1;
                    }
                    Ok(_) => break (vocab, desc),
                }
            };
            let label = format!("{} #{k} ({desc})", setup.label);
            let rep = check_case(setup, &vocab, &label, k % 2 == 0, &mut stats);
            dead_cases += usize::from(rep.token_dead > 0);
        }
    }
    assert!(
        dead_cases > 0,
        "no random vocabulary made a token-dead state"
    );
    println!(
        "random vocabularies: {} cases ({} with token-dead states; {} vocabularies redrawn), \
         {} product states checked ({} visits), {} matcher states, {} token checks, {} walks, {:.2} s",
        stats.cases,
        dead_cases,
        stats.refused_vocabs,
        stats.product_states,
        stats.product_visits,
        stats.matcher_states,
        stats.token_checks,
        stats.walks,
        t0.elapsed().as_secs_f64()
    );
}
