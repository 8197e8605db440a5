//! The bounds of one compile in time and memory, and a way to stop it.
//!
//! A tool list sent to a server is untrusted input: a schema can make a
//! construction blow up (a counted repeat of any character, the n-th
//! character from the end), and a compile must end, with an error, within
//! its bounds rather than take the engine down. [`Limits`] is part of the
//! [`Options`](crate::Options); a compile turns it into a [`Guard`] and the
//! loops of every phase (NFA build, subset construction, minimization,
//! crossing, and the automata the lowering builds on the way) call
//! [`check`] with the bytes their structures hold.
//!
//! The guard is ambient (a thread-local set for the duration of the
//! compile, and on each crossing worker) rather than a parameter: the
//! lowering reaches the same automaton primitives from deep recursions
//! (intersections, emptiness checks, blame), and every one of them must be
//! bounded. Outside a compile there is no guard and [`check`] passes.

use std::cell::RefCell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Limit;

/// Bounds on one compile.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Most wall-clock time from the compile's start (`None`: none).
    pub time: Option<Duration>,
    /// Most bytes of the compile's working structures: the NFA, the
    /// subset construction's sets and table, minimization's move lists, the
    /// crossing's masks (`None`: none). An account of the structures that
    /// grow with the grammar, not of the process's resident size.
    pub memory: Option<usize>,
    /// Stops the compile when cancelled from another thread.
    pub cancel: Cancel,
}

/// One GiB.
pub const GIB: usize = 1 << 30;

impl Limits {
    /// What a server that compiles each request's tools should use: 10 s
    /// and 2 GiB (a BFCL set takes milliseconds and megabytes; 1,000
    /// distinct tools take ~4.5 s and ~0.3 GB with Llama-3.2).
    pub const fn engine() -> Limits {
        Limits {
            time: Some(Duration::from_secs(10)),
            memory: Some(2 * GIB),
            cancel: Cancel::none(),
        }
    }

    /// What `tooldec-compile` uses by default: one hour and 16 GiB, for
    /// offline builds of large tool sets.
    pub const fn offline() -> Limits {
        Limits {
            time: Some(Duration::from_secs(3600)),
            memory: Some(16 * GIB),
            cancel: Cancel::none(),
        }
    }

    /// No bound of time or memory (the state bounds still hold).
    pub const fn unbounded() -> Limits {
        Limits {
            time: None,
            memory: None,
            cancel: Cancel::none(),
        }
    }
}

impl Default for Limits {
    /// [`Limits::engine`]: a library caller is most often a server.
    fn default() -> Limits {
        Limits::engine()
    }
}

/// A flag another thread sets to stop a compile ([`Cancel::cancel`]);
/// clones share it. The compile ends with an error of kind
/// [`ErrorKind::Cancelled`](crate::ErrorKind::Cancelled) at its next
/// check (within milliseconds).
#[derive(Clone, Default)]
pub struct Cancel(Option<Arc<AtomicBool>>);

impl Cancel {
    /// A flag that nothing can set.
    pub const fn none() -> Cancel {
        Cancel(None)
    }

    /// A new flag, not set.
    pub fn new() -> Cancel {
        Cancel(Some(Arc::new(AtomicBool::new(false))))
    }

    /// Sets the flag: the compiles holding it stop at their next check.
    pub fn cancel(&self) {
        if let Some(f) = &self.0 {
            f.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(|f| f.load(Ordering::Relaxed))
    }
}

impl fmt::Debug for Cancel {
    /// Whether there is a flag, not its state: options print the same
    /// before and after a cancel.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Cancel"
        } else {
            "NoCancel"
        })
    }
}

/// The limits of one running compile, from its start.
#[derive(Debug)]
pub struct Guard {
    start: Instant,
    limits: Limits,
}

impl Guard {
    /// Starts the clock of a compile bounded by `limits`.
    pub fn start(limits: &Limits) -> Arc<Guard> {
        Arc::new(Guard {
            start: Instant::now(),
            limits: limits.clone(),
        })
    }

    /// A guard for the rest of a compile that has already run `spent`
    /// under `limits` (a compile lowered on one thread, finished on another).
    pub fn resume(limits: &Limits, spent: Duration) -> Arc<Guard> {
        let now = Instant::now();
        Arc::new(Guard {
            start: now.checked_sub(spent).unwrap_or(now),
            limits: limits.clone(),
        })
    }

    /// A guard for one part of the thread's compile (a pattern's machine
    /// on its own): at most `time` and `memory`, within what the compile
    /// has left, stopped by its cancel.
    pub fn part(time: Duration, memory: usize) -> Arc<Guard> {
        let mut limits = Limits {
            time: Some(time),
            memory: Some(memory),
            cancel: Cancel::none(),
        };
        if let Some(outer) = current() {
            let l = &outer.limits;
            if let Some(t) = l.time {
                limits.time = Some(time.min(t.saturating_sub(outer.elapsed())));
            }
            limits.memory = Some(memory.min(l.memory.unwrap_or(usize::MAX)));
            limits.cancel = l.cancel.clone();
        }
        Guard::start(&limits)
    }

    /// Time since the compile started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Runs `f` with this guard as the thread's (restoring the one before:
    /// a blame or an intersection may run under a guard of its own).
    pub fn run<T>(self: &Arc<Guard>, f: impl FnOnce() -> T) -> T {
        let before = CURRENT.with(|c| c.replace(Some(self.clone())));
        struct Restore(Option<Arc<Guard>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(before);
        f()
    }

    /// The limits it checks.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn check(&self, phase: &'static str, bytes: usize) -> Result<(), Limit> {
        if self.limits.cancel.is_cancelled() {
            return Err(Limit::Cancelled { phase });
        }
        if let Some(limit) = self.limits.memory {
            if bytes > limit {
                return Err(Limit::Memory {
                    phase,
                    bytes,
                    limit,
                    region: None,
                });
            }
        }
        if let Some(limit) = self.limits.time {
            if self.start.elapsed() > limit {
                return Err(Limit::Time {
                    phase,
                    limit,
                    region: None,
                });
            }
        }
        Ok(())
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Guard>>> = const { RefCell::new(None) };
}

/// The thread's guard, to hand to the threads a phase starts.
pub fn current() -> Option<Arc<Guard>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Runs `f` under `guard` when there is one (a worker thread of a guarded
/// compile), plainly otherwise.
pub fn run_under<T>(guard: Option<&Arc<Guard>>, f: impl FnOnce() -> T) -> T {
    match guard {
        Some(g) => g.run(f),
        None => f(),
    }
}

/// Fails when the thread's compile is cancelled, past its time, or when
/// `bytes` (what the running phase holds) pass its memory budget. Costs a
/// thread-local read, an atomic load and a clock read: call it every few
/// microseconds of work, not per byte.
pub fn check(phase: &'static str, bytes: usize) -> Result<(), Limit> {
    CURRENT.with(|c| match &*c.borrow() {
        Some(g) => g.check(phase, bytes),
        None => Ok(()),
    })
}

/// Counts calls and runs [`check`] every `every`-th: for loops whose steps
/// take nanoseconds.
pub struct Every {
    n: u32,
    every: u32,
}

impl Every {
    /// A counter that checks every `every` calls (at least 1).
    pub fn new(every: u32) -> Every {
        Every {
            n: 0,
            every: every.max(1),
        }
    }

    /// [`check`] on every `every`-th call; `bytes` is only computed then.
    pub fn tick(
        &mut self,
        phase: &'static str,
        bytes: impl FnOnce() -> usize,
    ) -> Result<(), Limit> {
        self.n += 1;
        if self.n < self.every {
            return Ok(());
        }
        self.n = 0;
        check(phase, bytes())
    }
}

/// Reads a time limit in seconds ("10", "2.5"), or "none".
pub fn parse_seconds(text: &str) -> Result<Option<Duration>, String> {
    if text == "none" {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(format!(
            "{text:?} is not a time limit: seconds above 0 (such as 10 or 2.5), or none"
        )),
    }
}

/// Reads a memory budget: bytes, or a number with a unit ("512MiB",
/// "2GiB", "1.5G"; K, M, G are binary as the units of `ulimit`), or "none".
pub fn parse_bytes(text: &str) -> Result<Option<usize>, String> {
    if text == "none" {
        return Ok(None);
    }
    let err = || {
        format!("{text:?} is not a memory budget: bytes or a size such as 512MiB or 2GiB, or none")
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: usize = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => GIB,
        "T" | "TiB" => GIB << 10,
        _ => return Err(err()),
    };
    let n: f64 = number.parse().map_err(|_| err())?;
    let bytes = n * scale as f64;
    if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
        return Err(err());
    }
    Ok(Some(bytes as usize))
}

/// A byte count for messages: "2.0 GiB", "512.0 MiB", "900 bytes".
pub fn bytes_text(n: usize) -> String {
    const UNITS: [(&str, usize); 3] = [("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (name, size) in UNITS {
        if n >= size {
            return format!("{:.1} {name}", n as f64 / size as f64);
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_from_text() {
        assert_eq!(parse_seconds("2.5"), Ok(Some(Duration::from_millis(2500))));
        assert_eq!(parse_seconds("none"), Ok(None));
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("NaN").is_err());
        assert_eq!(parse_bytes("512MiB"), Ok(Some(512 << 20)));
        assert_eq!(parse_bytes("2G"), Ok(Some(2 * GIB)));
        assert_eq!(parse_bytes("1000"), Ok(Some(1000)));
        assert_eq!(parse_bytes("none"), Ok(None));
        for bad in ["", "0", "2 GB", "1e99G", "GiB", "1..2M"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn no_guard_passes() {
        assert_eq!(check("lower", usize::MAX), Ok(()));
    }

    #[test]
    fn each_bound_stops_with_its_phase() {
        let mut l = Limits::unbounded();
        l.memory = Some(100);
        let g = Guard::start(&l);
        assert_eq!(g.run(|| check("cross", 100)), Ok(()));
        assert_eq!(
            g.run(|| check("cross", 101)),
            Err(Limit::Memory {
                phase: "cross",
                bytes: 101,
                limit: 100,
                region: None
            })
        );
        l.time = Some(Duration::ZERO);
        let g = Guard::start(&l);
        std::thread::sleep(Duration::from_millis(2));
        assert!(matches!(
            g.run(|| check("determinize", 0)),
            Err(Limit::Time {
                phase: "determinize",
                ..
            })
        ));
        // Back outside: no guard.
        assert_eq!(check("determinize", 0), Ok(()));
    }

    #[test]
    fn a_cancel_from_another_thread_stops_the_next_check() {
        let mut l = Limits::unbounded();
        l.cancel = Cancel::new();
        let g = Guard::start(&l);
        assert_eq!(g.run(|| check("minimize", 0)), Ok(()));
        let c = l.cancel.clone();
        std::thread::spawn(move || c.cancel()).join().unwrap();
        assert_eq!(
            g.run(|| check("minimize", 0)),
            Err(Limit::Cancelled { phase: "minimize" })
        );
    }

    #[test]
    fn guards_nest_and_restore() {
        let mut outer = Limits::unbounded();
        outer.memory = Some(10);
        let (a, b) = (Guard::start(&outer), Guard::start(&Limits::unbounded()));
        a.run(|| {
            assert!(check("lower", 11).is_err());
            assert_eq!(b.run(|| check("lower", 11)), Ok(()));
            assert!(check("lower", 11).is_err());
        });
    }
}
