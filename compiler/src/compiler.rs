//! [`Compiler`]: a compiler bound to one vocabulary for the lifetime of a
//! server, compiling tool sets in memory as requests bring them.
//!
//! A one-off [`crate::compile`] rebuilds everything that depends only on
//! the vocabulary (the token trie, the TOKENS section, the fingerprint)
//! and walks every region of the grammar (a string body, free text) over
//! the whole trie. A server compiling a new `tools` list per request
//! should pay neither: the compiler keeps one [`Prepared`] per set of
//! grammar special tokens (most formats use none or the same few), whose
//! region cache every later compile reuses, and it writes the artifact
//! straight into memory, without zstd.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};
use tooldec_runtime::layout::mask_words;
use tooldec_runtime::SharedGrammar;

use crate::automaton::machine::{explicit_if_mixed, finish_tools, front_tools, lower_tools};
use crate::cross::{OnDemand, Prepared};
use crate::limits::{Guard, Limits};
use crate::lower::call_format::Specials;
use crate::pending::Pending;
use crate::spec::ToolSet;
use crate::vocab::{TokenText, Vocab};
use crate::{Compiled, Error, ErrorKind, Options, Progress};

/// The default bound on the bytes of reused parts a [`Compiler`] keeps.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;

/// A compiler bound to one vocabulary, with a cache of the parts that
/// compiles share. `Sync`: one compiler serves every thread of a server,
/// and compiles run concurrently.
pub struct Compiler {
    vocab: Vocab,
    /// The vocabulary's special tokens by name, found once.
    specials: Specials,
    cache_bytes: usize,
    /// Walks through regions (always, but in differential tests).
    regions: bool,
    /// Per sorted list of grammar special tokens, what the crossing reuses.
    prepared: Mutex<HashMap<Vec<u32>, Arc<Prepared>>>,
    /// Whole artifacts by the digest of their input, oldest first out.
    artifacts: Mutex<Artifacts>,
}

/// Compiled artifacts kept for tool sets sent again (an agent sends the
/// same `tools` every turn), bounded by their payload bytes.
#[derive(Default)]
struct Artifacts {
    by_key: HashMap<[u8; 32], Loaded>,
    order: VecDeque<[u8; 32]>,
    bytes: usize,
}

/// What [`Compiler::compile`] returns: the validated artifact in memory,
/// shared (clone it per request), and the report of the compile that made
/// it.
#[derive(Clone)]
pub struct Loaded {
    /// The artifact, ready to serve.
    pub grammar: SharedGrammar,
    /// Sizes and timings (`artifact_bytes` is the payload's size).
    pub report: crate::Report,
}

impl Compiler {
    /// A compiler for `vocab`, its token trie built now (what every
    /// compile's crossing needs), with the default cache bound.
    pub fn new(vocab: Vocab) -> Compiler {
        Compiler::with_cache_bytes(vocab, DEFAULT_CACHE_BYTES)
    }

    /// A compiler whose cache of reused parts holds at most about
    /// `cache_bytes` per set of grammar special tokens; a part that would
    /// pass the bound empties the cache first (0: nothing is kept, and
    /// each region is walked wherever it occurs).
    pub fn with_cache_bytes(vocab: Vocab, cache_bytes: usize) -> Compiler {
        Compiler::with_walks(vocab, cache_bytes, true)
    }

    /// A compiler whose crossing walks every token path over the whole
    /// trie, without regions and their cache: slower, and otherwise the
    /// same; for tests that check regions change no byte.
    #[doc(hidden)]
    pub fn without_regions(vocab: Vocab) -> Compiler {
        Compiler::with_walks(vocab, 0, false)
    }

    fn with_walks(vocab: Vocab, cache_bytes: usize, regions: bool) -> Compiler {
        let c = Compiler {
            specials: Specials::of(&vocab),
            vocab,
            cache_bytes,
            regions,
            prepared: Mutex::new(HashMap::new()),
            artifacts: Mutex::new(Artifacts::default()),
        };
        c.prepared(&[]);
        c
    }

    /// The vocabulary.
    pub fn vocab(&self) -> &Vocab {
        &self.vocab
    }

    /// Bytes of reused parts and kept artifacts held now.
    pub fn cache_bytes(&self) -> usize {
        self.lock().values().map(|p| p.cache_bytes()).sum::<usize>() + self.artifacts().bytes
    }

    /// Forgets every reused part (the token tries stay: they depend on the
    /// vocabulary alone), as if no tool set had been compiled yet.
    pub fn clear_cache(&self) {
        for p in self.lock().values() {
            p.clear();
        }
        *self.artifacts() = Artifacts::default();
    }

    /// Compiles `set` with `opts` into artifact bytes, as [`crate::compile`]
    /// does (same bytes for the same `opts`), reusing this compiler's parts.
    pub fn compile_bytes(&self, set: &ToolSet, opts: &Options) -> Result<Compiled, Error> {
        self.compile_bytes_with(set, opts, &mut |_| {})
    }

    /// [`Compiler::compile_bytes`] with progress.
    pub fn compile_bytes_with(
        &self,
        set: &ToolSet,
        opts: &Options,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Compiled, Error> {
        crate::check_options(&self.vocab, opts)?;
        Guard::start(&opts.limits).run(|| {
            let front = front_tools(set, opts, &self.vocab, &self.specials, progress)?;
            let built = finish_tools(front, set, opts, progress)?;
            let prepared = self.prepared(&built.0.specials);
            crate::compile_machine(set, &self.vocab, opts, built, &prepared, progress)
        })
    }

    /// Compiles `set` into a validated in-memory artifact, ready to serve
    /// (`opts.zstd_level` is ignored: nothing is compressed). A tool set
    /// compiled before with the same options (same tools, descriptions and
    /// all) is served from the kept artifact without compiling.
    pub fn compile(&self, set: &ToolSet, opts: &Options) -> Result<Loaded, Error> {
        let opts = Options {
            zstd_level: None,
            ..opts.clone()
        };
        let key = input_digest(set, &opts);
        if let Some(hit) = self.artifacts().by_key.get(&key) {
            return Ok(hit.clone());
        }
        let loaded = self.build(set, &opts)?;
        self.keep(key, &loaded);
        Ok(loaded)
    }

    /// [`Compiler::compile`] without the kept artifacts: always compiles
    /// (reusing parts), and keeps nothing but parts.
    pub fn build(&self, set: &ToolSet, opts: &Options) -> Result<Loaded, Error> {
        let opts = Options {
            zstd_level: None,
            ..opts.clone()
        };
        load(self.compile_bytes(set, &opts)?)
    }

    /// Starts compiling `set` on another thread and returns at once with
    /// what serves its first masks: computed on demand from the grammar's
    /// DFA until the artifact is there, then the artifact's (the same
    /// masks, see [`Pending`]). A set compiled before comes back ready.
    /// Lowering runs before this returns, so its errors (a bad schema, the
    /// NFA state bound) come from here; the DFA is built state by state as
    /// the early masks need it, and determinized whole on the other
    /// thread, so the rest (the DFA state bound included) come from the
    /// matchers or [`Pending::wait`].
    pub fn start(self: &Arc<Self>, set: &ToolSet, opts: &Options) -> Result<Pending, Error> {
        self.begin(set, opts, true)
    }

    /// [`Compiler::start`] without a thread: the rest of the compile runs
    /// when a matcher first needs the artifact (or on [`Pending::wait`]),
    /// on that caller's thread; until then every mask is computed on
    /// demand. For single-threaded callers, and for tests that compare
    /// early masks with the artifact's.
    pub fn start_deferred(
        self: &Arc<Self>,
        set: &ToolSet,
        opts: &Options,
    ) -> Result<Pending, Error> {
        self.begin(set, opts, false)
    }

    fn begin(
        self: &Arc<Self>,
        set: &ToolSet,
        opts: &Options,
        thread: bool,
    ) -> Result<Pending, Error> {
        let opts = Options {
            zstd_level: None,
            ..opts.clone()
        };
        let key = input_digest(set, &opts);
        if let Some(hit) = self.artifacts().by_key.get(&key) {
            return Ok(Pending::done(self.clone(), hit.clone()));
        }
        crate::check_options(&self.vocab, &opts)?;
        let guard = Guard::start(&opts.limits);
        let lowered =
            guard.run(|| lower_tools(set, &opts, &self.vocab, &self.specials, &mut |_| {}))?;
        // The rest runs on the thread, or later on a matcher's: its clock
        // goes on from where lowering left it.
        let lowering = guard.elapsed();
        let prepared = self.prepared(&lowered.specials);
        let words = mask_words(opts.mask_width.unwrap_or(self.vocab.len() as u32));
        let early = OnDemand::new(
            lowered.nfa.clone(),
            &lowered.entries,
            &lowered.stops,
            lowered.specials.clone(),
            prepared.clone(),
            words,
            opts.max_states,
        );
        let pending = Pending::new(self.clone(), early, opts.max_tokens);
        let (me, set) = (self.clone(), set.clone());
        let job: crate::pending::Job = Box::new(move || {
            let progress = &mut |_| {};
            let loaded = Guard::resume(&opts.limits, lowering).run(|| {
                let front = lowered.determinize_tools(&set, &opts, progress)?;
                let front = explicit_if_mixed(front, &opts, |o| {
                    front_tools(&set, o, &me.vocab, &me.specials, progress)
                })?;
                let built = finish_tools(front, &set, &opts, progress)?;
                load(crate::compile_machine(
                    &set, &me.vocab, &opts, built, &prepared, progress,
                )?)
            })?;
            me.keep(key, &loaded);
            Ok(loaded)
        });
        if thread {
            pending.spawn(job)?;
        } else {
            pending.defer(job);
        }
        Ok(pending)
    }

    /// Keeps an artifact, dropping the oldest while over the bound.
    fn keep(&self, key: [u8; 32], loaded: &Loaded) {
        let size = loaded.report.payload_bytes;
        let mut a = self.artifacts();
        if size > self.cache_bytes || a.by_key.contains_key(&key) {
            return;
        }
        while a.bytes + size > self.cache_bytes {
            let Some(old) = a.order.pop_front() else {
                break;
            };
            if let Some(gone) = a.by_key.remove(&old) {
                a.bytes -= gone.report.payload_bytes;
            }
        }
        a.by_key.insert(key, loaded.clone());
        a.order.push_back(key);
        a.bytes += size;
    }

    fn artifacts(&self) -> std::sync::MutexGuard<'_, Artifacts> {
        self.artifacts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The crossing's reusable parts for grammars using `specials`.
    fn prepared(&self, specials: &[u32]) -> Arc<Prepared> {
        let mut key = specials.to_vec();
        key.sort_unstable();
        if let Some(p) = self.lock().get(&key) {
            return p.clone();
        }
        // Built outside the lock: a trie takes milliseconds, and two
        // threads building the same one get equal tries.
        let text = TokenText::new(&self.vocab, &key);
        let mut p = Prepared::new(&text, &self.vocab, self.cache_bytes);
        if !self.regions {
            p = p.without_regions();
        }
        let p = Arc::new(p);
        self.lock().entry(key).or_insert(p).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u32>, Arc<Prepared>>> {
        // Entries are inserted whole: a panicking thread leaves the map usable.
        self.prepared.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The artifact of `out`, loaded: a raw payload, so one copy into words
/// and validation.
fn load(out: Compiled) -> Result<Loaded, Error> {
    let grammar = SharedGrammar::from_bytes(&out.artifact).map_err(|e| {
        Error::new(
            ErrorKind::Limit,
            format!("the compiled payload does not validate: {e}"),
        )
    })?;
    Ok(Loaded {
        grammar,
        report: out.report,
    })
}

/// SHA-256 of everything a compile reads besides the vocabulary: the tool
/// set as parsed (names, descriptions, schemas, sources) and the options.
/// Both print deterministically (`Debug` of vectors and structs, no hash
/// maps), so equal inputs give equal digests.
fn input_digest(set: &ToolSet, opts: &Options) -> [u8; 32] {
    // The limits decide whether a compile ends, never what it builds.
    let opts = Options {
        limits: Limits::unbounded(),
        ..opts.clone()
    };
    let mut h = Sha256::new();
    h.update(format!("{set:?}\u{0}{opts:?}").as_bytes());
    h.finalize().into()
}
