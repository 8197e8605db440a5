//! [`Pending`]: a tool set whose artifact is being built on another thread,
//! served meanwhile from masks computed on demand.
//!
//! A server that gets a new `tools` list wants its first mask at once; the
//! artifact (every mask precomputed) takes a few times longer than the
//! first mask alone. [`crate::Compiler::start`] lowers the grammar to its
//! NFA, hands the rest of the compile to a thread, and returns a
//! [`Pending`] whose [`PendingMatcher`]s compute each mask from a DFA
//! built as they walk and the token trie ([`crate::cross::OnDemand`])
//! until the artifact is
//! there, then replay their tokens on it and serve from it. Every mask and
//! every decision served early is the artifact's (`tests/pending.rs`
//! checks both bit for bit); where only the artifact can tell (a budget
//! too tight for the byte bound, a vocabulary without every byte as a
//! token), the matcher waits for it. Early masks allocate; the artifact's
//! matcher never does.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use tooldec_runtime::OwnedMatcher;

use crate::cross::{OnDemand, Step};
use crate::{Compiler, Error, ErrorKind, Loaded};

/// The rest of a compile.
pub(crate) type Job = Box<dyn FnOnce() -> Result<Loaded, Error> + Send + 'static>;

/// A tool set being compiled: clone it freely (every clone is the same
/// compile), and create one [`PendingMatcher`] per request.
#[derive(Clone)]
pub struct Pending(Arc<Shared>);

struct Shared {
    compiler: Arc<Compiler>,
    /// What early matchers are served from; let go when the artifact (or
    /// the error) lands, so that once every matcher has moved to the
    /// artifact the compile's early state is freed even while the
    /// `Pending` is kept.
    early: Mutex<Option<Arc<OnDemand>>>,
    /// `--max-tokens`: the budget of a matcher asked for none.
    default_budget: Option<u32>,
    result: OnceLock<Result<Loaded, Error>>,
    /// The rest of the compile when it runs on the first wait instead of
    /// on a thread ([`crate::Compiler::start_deferred`]).
    deferred: Mutex<Option<Job>>,
    lock: Mutex<()>,
    landed: Condvar,
}

impl Pending {
    /// A compile whose result is already there.
    pub(crate) fn done(compiler: Arc<Compiler>, loaded: Loaded) -> Pending {
        let p = Pending::new(compiler, None, None);
        p.complete(Ok(loaded));
        p
    }

    /// A compile in progress, served early from `early` when it is exact.
    pub(crate) fn new(
        compiler: Arc<Compiler>,
        early: Option<OnDemand>,
        default_budget: Option<u32>,
    ) -> Pending {
        Pending(Arc::new(Shared {
            compiler,
            early: Mutex::new(early.filter(OnDemand::exact).map(Arc::new)),
            default_budget,
            result: OnceLock::new(),
            deferred: Mutex::new(None),
            lock: Mutex::new(()),
            landed: Condvar::new(),
        }))
    }

    /// Runs `job` on a new thread and lands its result here.
    pub(crate) fn spawn(&self, job: Job) -> Result<(), Error> {
        let me = self.clone();
        std::thread::Builder::new()
            .name("tooldec-compile".into())
            .spawn(move || me.complete(run(job)))
            .map(|_| ())
            .map_err(|e| Error::new(ErrorKind::Io, format!("cannot start a compile thread: {e}")))
    }

    /// Keeps `job` to run on the first wait, on the waiting thread.
    pub(crate) fn defer(&self, job: Job) {
        *self.0.deferred.lock().unwrap_or_else(|e| e.into_inner()) = Some(job);
    }

    fn complete(&self, result: Result<Loaded, Error>) {
        let _ = self.0.result.set(result);
        self.0
            .early
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        // Under the lock: a waiter either sees the result or is waiting.
        let _guard = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.0.landed.notify_all();
    }

    /// The DFA states built so far to serve early masks (`None`: nothing
    /// is served early); for tests that check the laziness.
    #[doc(hidden)]
    pub fn early_states_built(&self) -> Option<usize> {
        let early = self.0.early.lock().unwrap_or_else(|e| e.into_inner());
        early.as_deref().map(OnDemand::states_built)
    }

    /// The end-of-sequence token ids: the artifact's, known before it is
    /// there (they are the compiler's vocabulary's).
    pub fn eos_tokens(&self) -> &[u32] {
        &self.0.compiler.vocab().eos
    }

    /// Whether the artifact (or the compile's error) is there.
    pub fn is_ready(&self) -> bool {
        self.0.result.get().is_some()
    }

    /// The artifact, or the compile's error, if it is there.
    pub fn try_get(&self) -> Option<Result<Loaded, Error>> {
        self.0.result.get().cloned()
    }

    /// Waits for the artifact (runs the compile here if it was deferred).
    pub fn wait(&self) -> Result<Loaded, Error> {
        let job = self
            .0
            .deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(job) = job {
            self.complete(run(job));
        }
        let mut guard = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(r) = self.0.result.get() {
                return r.clone();
            }
            guard = self.0.landed.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// A matcher at entry `entry` (`None`: the default) with `budget`
    /// tokens (`None`: the compile's `--max-tokens`, if any), able to roll
    /// back `rollback` tokens: served early when it can be, else from the
    /// artifact (waiting for it). Fails as the artifact's matcher would
    /// (an unknown entry, a budget too small), or with the compile's error.
    pub fn matcher(
        &self,
        entry: Option<&str>,
        budget: Option<u32>,
        rollback: usize,
    ) -> Result<PendingMatcher, Error> {
        let mut m = PendingMatcher {
            pending: self.clone(),
            entry: entry.map(str::to_string),
            budget,
            rollback,
            now: Now::Waiting,
        };
        let left = budget.or(self.0.default_budget);
        let early = self
            .0
            .early
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let (None, Some(machine)) = (self.0.result.get(), early) {
            if let Some((state, stops)) = machine.start(entry, left) {
                m.now = Now::Early(Early {
                    machine,
                    stops,
                    state,
                    left,
                    ended: false,
                    tokens: Vec::new(),
                    trail: Vec::new(),
                });
                return Ok(m);
            }
        }
        m.switch(self.wait()?)?;
        Ok(m)
    }
}

/// How many of `tokens` the early position `e` accepts in a row, walked
/// on a copy of it; `None` when a token needs the artifact to decide
/// ([`Step::Unknown`]).
fn early_prefix(vocab: &crate::Vocab, e: &Early, tokens: &[u32]) -> Option<usize> {
    let (mut state, mut left, mut ended) = (e.state, e.left, e.ended);
    for (i, &t) in tokens.iter().enumerate() {
        if ended {
            // After the end only EOS is taken (accept_token's rule).
            if !vocab.eos.contains(&t) {
                return Some(i);
            }
            continue;
        }
        match e.machine.step(state, t, left, e.stops, vocab) {
            Step::Refused => return Some(i),
            Step::To(next) => state = next,
            Step::End => ended = true,
            Step::Unknown => return None,
        }
        left = left.map(|n| n.saturating_sub(1));
    }
    Some(tokens.len())
}

/// The error for a mask buffer shorter than the grammar's masks.
fn short(words: usize, need: usize) -> Error {
    Error::new(
        ErrorKind::Usage,
        format!("a mask buffer of {words} words is shorter than the grammar's {need} words"),
    )
}

/// Runs the rest of a compile; a panic in it becomes an error, so no
/// waiter waits forever.
fn run(job: Job) -> Result<Loaded, Error> {
    catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|_| {
        Err(Error::new(
            ErrorKind::Limit,
            "the compile stopped on an internal error (a panic); please report it",
        ))
    })
}

/// A matcher of a [`Pending`] compile: the artifact's matcher once the
/// artifact is there, masks computed on demand before. A clone is an
/// independent matcher at the same position (the early state is shared).
#[derive(Clone)]
pub struct PendingMatcher {
    pending: Pending,
    entry: Option<String>,
    budget: Option<u32>,
    rollback: usize,
    now: Now,
}

#[derive(Clone)]
enum Now {
    /// Only while being created.
    Waiting,
    Early(Early),
    Ready(OwnedMatcher),
}

/// An early matcher's position.
#[derive(Clone)]
struct Early {
    /// The masks computed on demand it is served from.
    machine: Arc<OnDemand>,
    /// The entry stops after its first call.
    stops: bool,
    state: u32,
    left: Option<u32>,
    /// An end-of-sequence token was accepted.
    ended: bool,
    /// Every token accepted, for the replay on the artifact.
    tokens: Vec<u32>,
    /// The positions before the last accepted tokens (at most `rollback`).
    trail: Vec<(u32, Option<u32>, bool)>,
}

impl Early {
    /// Records an accepted token and the position before it, keeping at
    /// most `rollback` positions.
    fn record(&mut self, token: u32, before: (u32, Option<u32>, bool), rollback: usize) {
        self.tokens.push(token);
        self.trail.push(before);
        if self.trail.len() > rollback {
            self.trail.remove(0);
        }
    }
}

impl PendingMatcher {
    /// Whether masks are still computed on demand (the artifact is not
    /// there yet, or not yet picked up).
    pub fn is_early(&self) -> bool {
        matches!(self.now, Now::Early(_))
    }

    /// Writes the mask of allowed next tokens into `out`, as
    /// `tooldec_runtime::Matcher::fill_mask` does (at least the artifact's
    /// mask words).
    pub fn fill_mask(&mut self, out: &mut [u32]) -> Result<(), Error> {
        self.settle()?;
        if let Now::Early(e) = &self.now {
            let early = &e.machine;
            if out.len() < early.mask_words() {
                return Err(short(out.len(), early.mask_words()));
            }
            if e.ended {
                out.fill(0);
                for &t in &self.pending.0.compiler.vocab().eos {
                    out[(t >> 5) as usize] |= 1 << (t & 31);
                }
                return Ok(());
            }
            let vocab = self.pending.0.compiler.vocab();
            if early.fill(e.state, e.left, e.stops, vocab, out) {
                return Ok(());
            }
            self.finish()?;
        }
        match &self.now {
            Now::Ready(m) if m.try_fill_mask(out) => Ok(()),
            Now::Ready(m) => Err(short(out.len(), m.grammar().mask_words())),
            _ => unreachable!("finish leaves the artifact's matcher"),
        }
    }

    /// Advances by one token; false, changing nothing, when it is not
    /// allowed here.
    pub fn accept_token(&mut self, token: u32) -> Result<bool, Error> {
        self.settle()?;
        if let Now::Early(e) = &mut self.now {
            let before = (e.state, e.left, e.ended);
            if e.ended {
                // After the end only EOS is taken, spending nothing, and
                // recorded like any token (as the artifact's matcher does).
                if !self.pending.0.compiler.vocab().eos.contains(&token) {
                    return Ok(false);
                }
                e.record(token, before, self.rollback);
                return Ok(true);
            }
            let early = &e.machine;
            let vocab = self.pending.0.compiler.vocab();
            let step = early.step(e.state, token, e.left, e.stops, vocab);
            match step {
                Step::Refused => return Ok(false),
                Step::To(next) => e.state = next,
                Step::End => e.ended = true,
                Step::Unknown => {
                    self.finish()?;
                    return self.accept_token(token);
                }
            }
            e.left = e.left.map(|n| n.saturating_sub(1));
            e.record(token, before, self.rollback);
            return Ok(true);
        }
        match &mut self.now {
            Now::Ready(m) => Ok(m.accept_token(token)),
            _ => unreachable!("settled"),
        }
    }

    /// How many of `tokens`, in order, would be accepted from here (a
    /// speculative draft's longest valid prefix), without advancing: the
    /// artifact's `validate_tokens`. Early, the draft is walked on a copy
    /// of the position; a token only the artifact can decide waits for
    /// it, as `accept_token` does.
    pub fn validate_tokens(&mut self, tokens: &[u32]) -> Result<usize, Error> {
        self.settle()?;
        if let Now::Early(e) = &self.now {
            if let Some(n) = early_prefix(self.pending.0.compiler.vocab(), e, tokens) {
                return Ok(n);
            }
            self.finish()?;
        }
        match &self.now {
            Now::Ready(m) => Ok(m.validate_tokens(tokens)),
            _ => unreachable!("finish leaves the artifact's matcher"),
        }
    }

    /// Writes into `out` the bytes every valid continuation starts with
    /// (jump-forward) and returns how many, as the artifact's
    /// `forced_bytes` does. Before the artifact is there: none, without
    /// waiting (forcing is an optimization the engine does without; its
    /// sampling under the early masks stays exact).
    pub fn forced_bytes(&mut self, out: &mut [u8]) -> Result<usize, Error> {
        self.settle()?;
        Ok(match &self.now {
            Now::Ready(m) => m.forced_bytes(out),
            _ => 0,
        })
    }

    /// Back to the start of the entry with the full budget, nothing to
    /// roll back: a fresh matcher of the same compile (early while the
    /// artifact is not there).
    pub fn reset(&mut self) -> Result<(), Error> {
        *self = self
            .pending
            .matcher(self.entry.as_deref(), self.budget, self.rollback)?;
        Ok(())
    }

    /// Undoes the last `n` tokens; false, changing nothing, beyond the
    /// rollback capacity or the tokens accepted.
    pub fn rollback(&mut self, n: usize) -> bool {
        match &mut self.now {
            Now::Early(e) => {
                if n > e.trail.len() {
                    return false;
                }
                for _ in 0..n {
                    let (state, left, ended) = e.trail.pop().expect("n <= trail");
                    (e.state, e.left, e.ended) = (state, left, ended);
                    e.tokens.pop();
                }
                true
            }
            Now::Ready(m) => m.rollback(n),
            Now::Waiting => false,
        }
    }

    /// Whether the output so far is complete.
    pub fn is_accepting(&self) -> bool {
        match &self.now {
            Now::Early(e) => e.ended || e.machine.accepts(e.state),
            Now::Ready(m) => m.is_accepting(),
            Now::Waiting => false,
        }
    }

    /// Whether an end-of-sequence token was accepted.
    pub fn is_terminated(&self) -> bool {
        match &self.now {
            Now::Early(e) => e.ended,
            Now::Ready(m) => m.is_terminated(),
            Now::Waiting => false,
        }
    }

    /// The artifact's matcher at this position, waiting for the artifact.
    pub fn into_matcher(mut self) -> Result<OwnedMatcher, Error> {
        self.finish()?;
        match self.now {
            Now::Ready(m) => Ok(m),
            _ => unreachable!("finish leaves the artifact's matcher"),
        }
    }

    /// Moves to the artifact if it is there.
    fn settle(&mut self) -> Result<(), Error> {
        if let (Now::Early(_), Some(result)) = (&self.now, self.pending.0.result.get()) {
            self.switch(result.clone()?)?;
        }
        Ok(())
    }

    /// Moves to the artifact, waiting for it.
    fn finish(&mut self) -> Result<(), Error> {
        if !matches!(self.now, Now::Ready(_)) {
            let loaded = self.pending.wait()?;
            self.switch(loaded)?;
        }
        Ok(())
    }

    /// The artifact's matcher at this position: the tokens replayed, the
    /// last `trail` of them into its rollback history.
    fn switch(&mut self, loaded: Loaded) -> Result<(), Error> {
        let mut m = loaded
            .grammar
            .matcher(self.entry.as_deref(), self.budget, self.rollback)
            .map_err(|e| {
                // A budget below the fewest tokens, or an unknown entry.
                let kind = match e.budget_shortfall() {
                    Some(_) => ErrorKind::Budget,
                    None => ErrorKind::Usage,
                };
                Error::new(kind, e.to_string())
            })?;
        if let Now::Early(e) = &self.now {
            let kept = e.tokens.len() - e.trail.len();
            for (i, &t) in e.tokens.iter().enumerate() {
                if i == kept {
                    m.forget();
                }
                if !m.accept_token(t) {
                    return Err(Error::new(
                        ErrorKind::Limit,
                        format!(
                            "internal error: token {t} (step {i}) was served before the artifact \
                             and the artifact refuses it; please report it"
                        ),
                    ));
                }
            }
            if kept == e.tokens.len() {
                m.forget();
            }
        }
        self.now = Now::Ready(m);
        Ok(())
    }
}
