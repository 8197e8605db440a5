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
use tooldec_runtime::SharedGrammar;

use crate::cross::Prepared;
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
        crate::check_width(&self.vocab, opts)?;
        let built = crate::build_dfa(set, opts, &self.vocab, progress)?;
        let prepared = self.prepared(&built.0.specials);
        crate::compile_machine(set, &self.vocab, opts, built, &prepared, progress)
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
        let out = self.compile_bytes(set, &opts)?;
        // A raw payload: loading it is one copy into words and validation.
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

/// SHA-256 of everything a compile reads besides the vocabulary: the tool
/// set as parsed (names, descriptions, schemas, sources) and the options.
/// Both print deterministically (`Debug` of vectors and structs, no hash
/// maps), so equal inputs give equal digests.
fn input_digest(set: &ToolSet, opts: &Options) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(format!("{set:?}\u{0}{opts:?}").as_bytes());
    h.finalize().into()
}
