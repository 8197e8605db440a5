//! The benchmark suite: tooldec against outlines-core and llguidance on the
//! same machine, tokenizer and language.
//!
//! - [`workloads`]: the real tool sets (BFCL `multiple` and
//!   `parallel_multiple`, ToolBench api_lists) and the scale sets of 10 to
//!   10,000 tools built from them.
//! - [`ours`]: compiling with tooldec and serving from the artifact.
//! - [`peers`]: the same language for outlines-core (its `Index` from our
//!   grammar's regular expression) and llguidance (a `Matcher` on that
//!   regular expression), over the same token bytes.
//! - [`walks`]: fixed random walks through our grammar, the masks served
//!   along them, and their hash (the known result every benchmark checks).
//! - [`stats`]: per-call timings and their median, p99 and max.
//!
//! Every engine is driven through [`Engine`], so the timing loop is one piece
//! of code for all three.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_compiler::{compile, spec, Error, Options};
use tooldec_runtime::{Grammar, Matcher};

pub use tooldec_testkit::{data_dir, data_file};

/// The tokenizers of the suite, by folder name under `tokenizers/`.
pub const TOKENIZERS: [&str; 3] = ["gpt2", "llama-3.2", "qwen2.5"];

/// Loads a tokenizer of the data directory as the compiler sees it.
pub fn load_vocab(name: &str) -> Result<Vocab, Error> {
    let path = data_file(&format!("tokenizers/{name}/tokenizer.json"));
    Vocab::from_tokenizer_json(&path, &[])
}

/// The peak resident set size of this process so far (`VmHWM`), in bytes.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// A comma-separated list from environment variable `var`, or `default`.
pub fn grid(var: &str, default: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub mod latency;
pub mod plot;

pub mod workloads {
    //! Tool sets from the real data, in the compiler's input form.

    use super::*;
    use std::collections::HashSet;
    use tooldec_testkit::{bfcl, toolbench};

    /// A named tool set.
    #[derive(Debug, Clone)]
    pub struct Workload {
        pub name: String,
        pub tools: Vec<Value>,
    }

    impl Workload {
        /// The compiler's input text.
        pub fn text(&self) -> String {
            serde_json::to_string(&Value::Array(self.tools.clone())).unwrap()
        }

        /// Parsed for the compiler.
        pub fn spec(&self) -> spec::ToolSet {
            spec::parse(&self.name, &self.text())
                .unwrap_or_else(|e| panic!("{}: converted tools do not parse: {e}", self.name))
        }
    }

    /// Every line of a BFCL question file (`multiple`, `parallel_multiple`)
    /// as a workload, in file order.
    pub fn bfcl(category: &str) -> Vec<Workload> {
        let path = data_file(&format!("tools/bfcl/BFCL_v4_{category}.json"));
        bfcl::load_sets(&path)
            .into_iter()
            .map(|s| Workload {
                name: s.id,
                tools: s.tools,
            })
            .collect()
    }

    /// Every ToolBench test query's api_list as a workload.
    pub fn toolbench() -> Vec<Workload> {
        toolbench::query_sets()
            .0
            .into_iter()
            .map(|q| Workload {
                name: q.id,
                tools: q.tools,
            })
            .collect()
    }

    /// Whether the compiler can lower a tool on its own (with the default
    /// options): the scale sets keep only such tools.
    fn lowers(tool: &Value) -> bool {
        let text = serde_json::to_string(&Value::Array(vec![tool.clone()])).unwrap();
        match spec::parse("pool", &text) {
            Ok(set) => {
                static GPT2: std::sync::OnceLock<Option<Vocab>> = std::sync::OnceLock::new();
                let Some(vocab) = GPT2.get_or_init(|| Vocab::builtin_gpt2().ok()) else {
                    return false;
                };
                tooldec_compiler::lower(&set, &Options::default(), vocab).is_ok()
            }
            Err(_) => false,
        }
    }

    /// The pool of distinct real tools the scale sets draw from: ToolBench's
    /// unique APIs, then the functions of BFCL's single-turn categories, each
    /// kept when it lowers on its own and its name is new. Built once per
    /// process.
    pub fn pool() -> &'static [Value] {
        static POOL: std::sync::OnceLock<Vec<Value>> = std::sync::OnceLock::new();
        POOL.get_or_init(build_pool)
    }

    fn build_pool() -> Vec<Value> {
        let mut names = HashSet::new();
        let mut out = Vec::new();
        let mut add = |tool: Value, out: &mut Vec<Value>| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                return;
            };
            if !names.contains(name) && lowers(&tool) {
                names.insert(name.to_string());
                out.push(tool);
            }
        };
        for tool in toolbench::unique_apis(usize::MAX).0 {
            add(tool, &mut out);
        }
        for cat in [
            "multiple",
            "parallel_multiple",
            "simple_python",
            "parallel",
            "simple_java",
            "simple_javascript",
            "irrelevance",
        ] {
            for set in bfcl(cat) {
                for tool in set.tools {
                    add(tool, &mut out);
                }
            }
        }
        out
    }

    /// Like [`scale`], but the copies past the pool also get their
    /// top-level parameter names suffixed (`city_2`), so that no two tools
    /// share an argument machine: the harder, fully distinct variant.
    pub fn scale_distinct(pool: &[Value], n: usize) -> Workload {
        let mut w = scale(pool, n);
        for (i, tool) in w.tools.iter_mut().enumerate() {
            let round = i / pool.len() + 1;
            if round == 1 {
                continue;
            }
            let params = &mut tool["parameters"];
            if let Some(Value::Object(props)) = params.get("properties") {
                let renamed: serde_json::Map<String, Value> = props
                    .iter()
                    .map(|(k, v)| (format!("{k}_{round}"), v.clone()))
                    .collect();
                params["properties"] = Value::Object(renamed);
            }
            if let Some(Value::Array(req)) = params.get("required") {
                let renamed: Vec<Value> = req
                    .iter()
                    .map(|r| Value::String(format!("{}_{round}", r.as_str().unwrap_or(""))))
                    .collect();
                params["required"] = Value::Array(renamed);
            }
        }
        w.name = format!("scale-distinct-{n}");
        w
    }

    /// The first `n` tools of the pool, cycled with renamed copies
    /// (`name_2`, `name_3`, ...) when `n` exceeds the pool: every name of a
    /// scale set is distinct.
    pub fn scale(pool: &[Value], n: usize) -> Workload {
        assert!(!pool.is_empty(), "the tool pool is empty");
        let mut names: HashSet<String> = HashSet::new();
        let mut tools = Vec::with_capacity(n);
        let mut round = 1;
        'fill: loop {
            for tool in pool {
                if tools.len() == n {
                    break 'fill;
                }
                let mut tool = tool.clone();
                let base = tool["name"].as_str().unwrap().to_string();
                let mut name = if round == 1 {
                    base.clone()
                } else {
                    format!("{base}_{round}")
                };
                let mut k = round;
                while names.contains(&name) {
                    k += 1;
                    name = format!("{base}_{k}");
                }
                names.insert(name.clone());
                tool["name"] = Value::String(name);
                tools.push(tool);
            }
            round += 1;
        }
        Workload {
            name: format!("scale-{n}"),
            tools,
        }
    }
}

pub mod ours {
    //! tooldec: compile, load, serve.

    use super::*;

    /// A compiled artifact with its figures.
    pub struct Built {
        pub artifact: Vec<u8>,
        pub report: tooldec_compiler::Report,
        pub compile: Duration,
    }

    /// Compiles a workload (the default options: zstd level 9, all cores;
    /// no time or memory limit: a slow build is a figure, not an error).
    pub fn build(set: &spec::ToolSet, vocab: &Vocab) -> Result<Built, Error> {
        let opts = Options {
            limits: tooldec_compiler::Limits::unbounded(),
            ..Options::default()
        };
        build_with(set, vocab, &opts)
    }

    /// [`build`] with `opts` (a larger state bound for the 10,000-tool sets).
    pub fn build_with(set: &spec::ToolSet, vocab: &Vocab, opts: &Options) -> Result<Built, Error> {
        let t = Instant::now();
        let c = compile(set, vocab, opts, &mut |_| {})?;
        Ok(Built {
            compile: t.elapsed(),
            artifact: c.artifact,
            report: c.report,
        })
    }

    /// A loaded artifact: the decompressed words, validated.
    pub struct Loaded {
        pub artifact: tooldec_runtime::Artifact,
        pub load: Duration,
    }

    /// Loads artifact bytes as a server would (decompress and validate).
    pub fn load(bytes: &[u8]) -> Loaded {
        let t = Instant::now();
        let artifact = tooldec_runtime::Artifact::from_bytes(bytes)
            .unwrap_or_else(|e| panic!("our own artifact does not load: {e}"));
        Loaded {
            load: t.elapsed(),
            artifact,
        }
    }

    /// The runtime as an [`Engine`].
    pub struct Ours<'g, 'a> {
        pub grammar: &'g Grammar<'a>,
        matcher: Matcher<'g>,
    }

    impl<'g, 'a> Ours<'g, 'a> {
        pub fn new(grammar: &'g Grammar<'a>) -> Self {
            Self::with_matcher(grammar, grammar.matcher())
        }

        /// The runtime with a matcher of the caller's making (a budget, an
        /// entry); `reset` returns to its start.
        pub fn with_matcher(grammar: &'g Grammar<'a>, matcher: Matcher<'g>) -> Self {
            Ours { grammar, matcher }
        }
    }

    impl Engine for Ours<'_, '_> {
        fn name(&self) -> &'static str {
            "tooldec"
        }
        fn reset(&mut self) {
            self.matcher.reset();
        }
        fn fill_mask(&mut self, words: &mut [u32]) {
            self.matcher.fill_mask(words);
        }
        fn accept(&mut self, token: u32) -> bool {
            self.matcher.accept_token(token)
        }
        fn repeatable(&self) -> bool {
            true
        }
    }
}

/// What the timing loop needs of an engine.
pub trait Engine {
    fn name(&self) -> &'static str;
    /// Back to the start of a new output.
    fn reset(&mut self);
    /// Writes the allowed tokens of the current state into `words`.
    fn fill_mask(&mut self, words: &mut [u32]);
    /// Advances by one token; false if it is not allowed.
    fn accept(&mut self, token: u32) -> bool;
    /// Whether a second fill in the same state costs what the first did (no
    /// lazily built cache in between): then each step is timed as the median
    /// of a few repeats; otherwise only the first call, as decoding sees it.
    fn repeatable(&self) -> bool;
}

pub mod peers {
    //! outlines-core and llguidance on exactly our language and our token
    //! bytes.

    use super::*;

    pub mod outlines {
        use super::*;
        use outlines_core::prelude::{Index, Vocabulary};

        /// An outlines-core index and the state of one output.
        pub struct Outlines {
            pub index: Index,
            state: u32,
            done: bool,
            eos: u32,
        }

        /// outlines-core's vocabulary from our token bytes (EOS: our first).
        pub fn vocabulary(vocab: &Vocab) -> Vocabulary {
            let eos = vocab.eos[0];
            let mut v = Vocabulary::new(eos);
            // Text tokens only: special tokens and unused ids never match text.
            for (id, t) in vocab.tokens.iter().enumerate() {
                if let Token::Text(b) = t {
                    if id as u32 != eos {
                        v.try_insert(b.to_vec(), id as u32)
                            .unwrap_or_else(|e| panic!("outlines-core refuses token {id}: {e}"));
                    }
                }
            }
            v
        }

        impl Outlines {
            /// Builds the index of `regex` (the expensive step).
            pub fn build(regex: &str, vocabulary: &Vocabulary) -> Result<Self, String> {
                let index = Index::new(regex, vocabulary).map_err(|e| e.to_string())?;
                Ok(Outlines {
                    state: index.initial_state(),
                    eos: vocabulary.eos_token_id(),
                    index,
                    done: false,
                })
            }
        }

        impl Engine for Outlines {
            fn name(&self) -> &'static str {
                "outlines-core"
            }
            fn reset(&mut self) {
                self.state = self.index.initial_state();
                self.done = false;
            }
            fn fill_mask(&mut self, words: &mut [u32]) {
                words.fill(0);
                if self.done {
                    words[self.eos as usize / 32] |= 1 << (self.eos % 32);
                    return;
                }
                if let Some(it) = self.index.allowed_tokens_iter(&self.state) {
                    for &t in it {
                        words[t as usize / 32] |= 1 << (t % 32);
                    }
                }
            }
            fn accept(&mut self, token: u32) -> bool {
                if token == self.eos {
                    let ok = self.done || self.index.is_final_state(&self.state);
                    self.done = ok;
                    return ok;
                }
                if self.done {
                    return false;
                }
                match self.index.next_state(&self.state, &token) {
                    Some(s) => {
                        self.state = s;
                        true
                    }
                    None => false,
                }
            }
            fn repeatable(&self) -> bool {
                true
            }
        }
    }

    pub mod llg {
        use super::*;
        use llguidance::api::TopLevelGrammar;
        use llguidance::{Matcher as LlgMatcher, ParserFactory};
        use std::sync::Arc;
        use toktrie::{ApproximateTokEnv, TokRxInfo, TokTrie};

        /// llguidance's tokenizer environment from our token bytes: text
        /// tokens as bytes, special tokens behind its 0xFF marker, unused ids
        /// empty.
        pub fn tok_env(vocab: &Vocab) -> toktrie::TokEnv {
            let words: Vec<Vec<u8>> = vocab
                .tokens
                .iter()
                .map(|t| match t {
                    Token::Text(b) => b.clone(),
                    Token::Special(name) => {
                        let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                        w.extend_from_slice(name.as_bytes());
                        w
                    }
                    Token::Unused => Vec::new(),
                })
                .collect();
            let info = TokRxInfo::new(words.len() as u32, vocab.eos[0]);
            let trie = TokTrie::from(&info, &words);
            Arc::new(ApproximateTokEnv::new(trie))
        }

        /// A parser factory with limits raised so that grammars of
        /// thousands of tools are not refused for fuel.
        pub fn factory(env: &toktrie::TokEnv) -> ParserFactory {
            let mut f = ParserFactory::new_simple(env).expect("llguidance factory");
            let l = f.limits_mut();
            l.initial_lexer_fuel = u64::MAX / 4;
            l.step_lexer_fuel = u64::MAX / 4;
            l.step_max_items = usize::MAX / 4;
            l.max_lexer_states = usize::MAX / 4;
            l.max_grammar_size = usize::MAX / 4;
            f.set_stderr_log_level(0);
            f
        }

        /// llguidance's matcher on our regular expression.
        pub struct Llg {
            eos: u32,
            matcher: LlgMatcher,
            fresh: LlgMatcher,
        }

        impl Llg {
            /// Compiles `regex` (llguidance compiles lazily: this is cheap,
            /// the work happens on the first masks).
            pub fn build(factory: &ParserFactory, regex: &str) -> Result<Self, String> {
                let parser = factory
                    .create_parser(TopLevelGrammar::from_regex(regex))
                    .map_err(|e| e.to_string())?;
                let matcher = LlgMatcher::new(Ok(parser));
                if let Some(e) = matcher.get_error() {
                    return Err(e);
                }
                Ok(Llg {
                    eos: factory.tok_env().tok_trie().eos_token(),
                    fresh: matcher.deep_clone(),
                    matcher,
                })
            }
        }

        impl Engine for Llg {
            fn name(&self) -> &'static str {
                "llguidance"
            }
            fn reset(&mut self) {
                // A new output gets a clone of the freshly created matcher,
                // as a server does per request.
                self.matcher = self.fresh.deep_clone();
            }
            fn fill_mask(&mut self, words: &mut [u32]) {
                match self.matcher.compute_mask_or_eos() {
                    Ok(v) => {
                        let s = v.as_slice();
                        words.fill(0);
                        let n = s.len().min(words.len());
                        words[..n].copy_from_slice(&s[..n]);
                    }
                    Err(e) => panic!("llguidance: {e}"),
                }
            }
            fn accept(&mut self, token: u32) -> bool {
                if self.matcher.is_stopped() {
                    // Only EOS follows a finished output.
                    return token == self.eos && !self.matcher.is_error();
                }
                self.matcher.consume_token(token).is_ok() && !self.matcher.is_error()
            }
            fn repeatable(&self) -> bool {
                false
            }
        }
    }
}

pub mod walks {
    //! Fixed walks and the masks served along them.

    use super::*;
    use tooldec_testkit::walk::{seed, SplitMix64, Walker};

    /// `n` random walks through the grammar (each ends with EOS), seeded by
    /// `label`: the same artifact always gives the same walks.
    pub fn walks(g: &Grammar<'_>, label: &str, n: usize) -> Vec<Vec<u32>> {
        let mut walker = Walker::new(g, g.token_count());
        (0..n)
            .map(|i| {
                let mut rng = SplitMix64::new(seed(label, i as u64, 0));
                walker
                    .walk(&mut rng, 4000)
                    .unwrap_or_else(|e| panic!("walk {i} of {label}: {}", e.message))
            })
            .collect()
    }

    /// FNV-1a over 64-bit lanes of every mask served along the walks.
    pub fn mask_hash(engine: &mut dyn Engine, walks: &[Vec<u32>], words: usize) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let mut buf = vec![0u32; words];
        for w in walks {
            engine.reset();
            for &t in w {
                engine.fill_mask(&mut buf);
                for &x in &buf {
                    h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
                }
                assert!(
                    engine.accept(t),
                    "{} refused token {t} of its own walk",
                    engine.name()
                );
            }
        }
        h
    }

    /// The first step at which `engine`'s mask differs from `reference`'s
    /// along the walks, as `(walk, step, tokens only in ours, tokens only
    /// in theirs)` with a few ids of each; `None` if all agree.
    pub fn first_difference(
        reference: &mut dyn Engine,
        engine: &mut dyn Engine,
        walks: &[Vec<u32>],
        words: usize,
    ) -> Option<(usize, usize, Vec<u32>, Vec<u32>)> {
        let mut a = vec![0u32; words];
        let mut b = vec![0u32; words];
        for (wi, w) in walks.iter().enumerate() {
            reference.reset();
            engine.reset();
            for (si, &t) in w.iter().enumerate() {
                reference.fill_mask(&mut a);
                engine.fill_mask(&mut b);
                if a != b {
                    let ids = |x: &[u32], y: &[u32]| -> Vec<u32> {
                        let mut out = Vec::new();
                        for (i, (&p, &q)) in x.iter().zip(y).enumerate() {
                            let mut d = p & !q;
                            while d != 0 && out.len() < 8 {
                                out.push(i as u32 * 32 + d.trailing_zeros());
                                d &= d - 1;
                            }
                        }
                        out
                    };
                    return Some((wi, si, ids(&a, &b), ids(&b, &a)));
                }
                if !reference.accept(t) || !engine.accept(t) {
                    return Some((wi, si, vec![t], vec![t]));
                }
            }
        }
        None
    }
}

pub mod stats {
    //! Per-call timings.

    use super::*;

    /// Median, 99th percentile and maximum of per-call times, in ns.
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Summary {
        pub calls: usize,
        pub median: f64,
        pub p99: f64,
        pub max: f64,
    }

    impl Summary {
        pub fn of(mut ns: Vec<f64>) -> Summary {
            if ns.is_empty() {
                return Summary::default();
            }
            ns.sort_by(|a, b| a.total_cmp(b));
            let at = |q: f64| ns[((ns.len() - 1) as f64 * q).round() as usize];
            Summary {
                calls: ns.len(),
                median: at(0.5),
                p99: at(0.99),
                max: *ns.last().unwrap(),
            }
        }
    }

    /// The cost of reading the clock twice, in ns (median of many).
    pub fn timer_overhead() -> f64 {
        let mut v: Vec<f64> = (0..2001)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(());
                t.elapsed().as_nanos() as f64
            })
            .collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v[1000]
    }

    /// What this machine needs to write a mask of `words` words at all,
    /// whatever the engine: the median of many `memset`s of the buffer
    /// (`write_ns`) and of many copies from a second buffer that stays in
    /// cache (`copy_ns`), the timer's cost subtracted. A dense mask's fill
    /// is such a copy, so no fill of one can beat `copy_ns`.
    pub fn mask_floor(words: usize) -> (f64, f64) {
        let overhead = timer_overhead();
        let mut buf = vec![0u32; words];
        let src = vec![0x5555_5555u32; words];
        let mut median = |f: &mut dyn FnMut(&mut [u32])| {
            let mut v: Vec<f64> = (0..2001)
                .map(|_| {
                    let t = Instant::now();
                    f(std::hint::black_box(&mut buf));
                    (t.elapsed().as_nanos() as f64 - overhead).max(0.0)
                })
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[1000]
        };
        let write = median(&mut |b| b.fill(u32::MAX));
        let copy = median(&mut |b| b.copy_from_slice(std::hint::black_box(&src)));
        (write, copy)
    }

    /// Times `fill_mask` and `accept` at every step of the walks. A
    /// repeatable engine's step is the median of `repeats` calls; others'
    /// is their one call. The timer's own cost is subtracted.
    pub fn time_engine(
        engine: &mut dyn Engine,
        walks: &[Vec<u32>],
        words: usize,
        repeats: usize,
    ) -> (Summary, Summary) {
        let overhead = timer_overhead();
        let mut buf = vec![0u32; words];
        let mut fills = Vec::new();
        let mut accepts = Vec::new();
        let reps = if engine.repeatable() {
            repeats.max(1)
        } else {
            1
        };
        let mut one = Vec::with_capacity(reps);
        for w in walks {
            engine.reset();
            for &t in w {
                one.clear();
                for _ in 0..reps {
                    let s = Instant::now();
                    engine.fill_mask(std::hint::black_box(&mut buf));
                    one.push(s.elapsed().as_nanos() as f64);
                }
                one.sort_by(|a, b| a.total_cmp(b));
                fills.push((one[one.len() / 2] - overhead).max(0.0));
                let s = Instant::now();
                let ok = engine.accept(std::hint::black_box(t));
                accepts.push((s.elapsed().as_nanos() as f64 - overhead).max(0.0));
                assert!(ok, "{} refused token {t} of the walk", engine.name());
            }
        }
        (Summary::of(fills), Summary::of(accepts))
    }
}
pub mod report;

pub mod record {
    //! The known results: mask hashes along fixed walks, committed in
    //! `bench/mask-hashes.txt` as `TOKENIZER WORKLOAD WALKS HASH` lines.
    //! Every benchmark checks its workload's hash before it times anything,
    //! so that a change that is fast but serves different masks fails.

    use super::*;

    /// The record file.
    pub fn path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mask-hashes.txt")
    }

    /// The recorded hash on `line` if it is the entry of
    /// `(tokenizer, workload, walks)`.
    fn entry<'l>(line: &'l str, tok: &str, workload: &str, walks: usize) -> Option<&'l str> {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.len() == 4 && f[0] == tok && f[1] == workload && f[2] == walks.to_string())
            .then_some(f[3])
    }

    /// The recorded hash of `(tokenizer, workload, walks)`, if any.
    pub fn lookup(tok: &str, workload: &str, walks: usize) -> Option<String> {
        let text = std::fs::read_to_string(path()).ok()?;
        let found = text.lines().find_map(|l| entry(l, tok, workload, walks));
        found.map(str::to_string)
    }

    /// Checks `hash` against the record. With `TOOLDEC_BENCH_RECORD=1` a
    /// missing or different entry is (re)written instead.
    pub fn check(tok: &str, workload: &str, walks: usize, hash: u64) -> Result<(), String> {
        let hash = format!("{hash:016x}");
        let recorded = lookup(tok, workload, walks);
        if recorded.as_deref() == Some(hash.as_str()) {
            return Ok(());
        }
        if std::env::var_os("TOOLDEC_BENCH_RECORD").is_some_and(|v| v == "1") {
            let text = std::fs::read_to_string(path()).unwrap_or_default();
            let mut lines: Vec<String> = text
                .lines()
                .filter(|l| entry(l, tok, workload, walks).is_none())
                .map(str::to_string)
                .collect();
            lines.push(format!("{tok} {workload} {walks} {hash}"));
            lines.sort();
            std::fs::write(path(), lines.join("\n") + "\n").map_err(|e| e.to_string())?;
            return Ok(());
        }
        Err(match recorded {
            Some(r) => format!(
                "{tok} {workload}: the masks along {walks} fixed walks hash to {hash}, \
                 the record says {r}: the served masks changed (if on purpose, rerun \
                 with TOOLDEC_BENCH_RECORD=1 and commit bench/mask-hashes.txt)"
            ),
            None => format!(
                "{tok} {workload}: no recorded mask hash for {walks} walks \
                 (run with TOOLDEC_BENCH_RECORD=1 to record {hash})"
            ),
        })
    }
}
