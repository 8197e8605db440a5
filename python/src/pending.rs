//! `tooldec.Pending` and `tooldec.PendingMatcher`: a tool list being
//! compiled (`Compiler.start`), served before its artifact is there.
//!
//! They wrap [`tooldec_compiler::Pending`] and
//! [`tooldec_compiler::PendingMatcher`]: early masks are computed on demand
//! from the grammar and equal the artifact's; where only the artifact can
//! tell, a call waits for it (or runs the deferred rest of the compile).
//! Every call that may wait or compute a mask releases the GIL, so the
//! compile thread and other requests go on meanwhile.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tooldec_compiler::{Error, ErrorKind};
use tooldec_runtime::layout::mask_words;

use crate::compile::detached;
use crate::{
    budget_arg, rollback_capacity, to_token, token_ids, Artifact, Rows, DEFAULT_FORCED_BYTES,
    DEFAULT_MAX_ROLLBACK,
};

/// A tool list being compiled: `matcher()` serves requests at once,
/// `wait()` gives the artifact. Thread-safe; create with
/// `Compiler.start`.
#[pyclass(module = "tooldec._tooldec", frozen)]
pub struct Pending {
    inner: tooldec_compiler::Pending,
    /// The mask width in tokens (the compile's `vocab_size`, else the
    /// tokenizer's token count): what bitmask rows must hold.
    mask_width: usize,
}

impl Pending {
    pub(crate) fn new(inner: tooldec_compiler::Pending, mask_width: usize) -> Pending {
        Pending { inner, mask_width }
    }
}

#[pymethods]
impl Pending {
    /// Whether the artifact (or the compile's error) is there.
    fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }

    /// Waits for the artifact (with the GIL released) and returns it: the
    /// one `compile` gives for the same list and options. Raises the
    /// `ValueError` `compile` would have raised if the rest of the compile
    /// failed.
    fn wait(&self, py: Python<'_>) -> PyResult<Artifact> {
        let inner = &self.inner;
        let loaded = detached(py, "waiting for a compile", || inner.wait())?;
        Ok(Artifact {
            shared: loaded.grammar,
            path: None,
        })
    }

    /// A matcher for one request, served early while it can be: `entry`
    /// the format's entry point (default: the first), `budget` the
    /// request's token budget (default: the compile's `max_tokens`, else
    /// none), `max_rollback` how many tokens it can roll back. Waits for
    /// the artifact when only the artifact can tell whether the budget
    /// suffices. `ValueError` for an unknown entry, a budget too small, or
    /// the compile's error.
    #[pyo3(signature = (entry=None, budget=None, max_rollback=DEFAULT_MAX_ROLLBACK as i64))]
    fn matcher(
        &self,
        py: Python<'_>,
        entry: Option<&str>,
        budget: Option<i64>,
        max_rollback: i64,
    ) -> PyResult<PendingMatcher> {
        let rollback = rollback_capacity(max_rollback)?;
        let budget = budget_arg("budget", budget)?;
        let inner = &self.inner;
        let m = detached(py, "creating a matcher", || {
            inner
                .matcher(entry, budget, rollback)
                .map_err(|e| name_entry(e, entry))
        })?;
        Ok(PendingMatcher {
            inner: m,
            mask_width: self.mask_width,
            max_rollback: rollback,
        })
    }

    /// Mask width in tokens (the compile's `vocab_size`, else the
    /// tokenizer's token count).
    #[getter]
    fn mask_width(&self) -> usize {
        self.mask_width
    }

    /// The end-of-sequence token ids (the artifact's, known before it is
    /// there).
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.inner.eos_tokens().to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "tooldec.Pending(ready={}, mask_width={})",
            self.inner.is_ready(),
            self.mask_width
        )
    }
}

/// The runtime's "no such entry point" names no entry: say which.
fn name_entry(e: Error, entry: Option<&str>) -> Error {
    match entry {
        Some(name) if e.kind() == ErrorKind::Usage => {
            Error::new(ErrorKind::Usage, format!("entry {name:?}: {}", e.message()))
        }
        _ => e,
    }
}

/// One request's matcher of a `Pending` compile: masks computed on demand
/// until the artifact is there, then the artifact's (its tokens replayed
/// on it). The methods mean what `Matcher`'s do. One thread at a time.
#[pyclass(module = "tooldec._tooldec")]
pub struct PendingMatcher {
    inner: tooldec_compiler::PendingMatcher,
    mask_width: usize,
    max_rollback: usize,
}

#[pymethods]
impl PendingMatcher {
    /// Writes the mask of allowed next tokens into row `index` of
    /// `bitmask`, as `Matcher.fill_next_token_bitmask` does (same bitmask
    /// forms and checks). May wait for the artifact (GIL released).
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(
        &mut self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: i64,
    ) -> PyResult<()> {
        let mut rows = Rows::of(bitmask)?;
        let words = mask_words(self.mask_width as u32);
        let row = rows.checked_row(index, words, self.mask_width)?;
        let inner = &mut self.inner;
        detached(py, "filling a mask", || inner.fill_mask(row))
    }

    /// Advances by one token. Returns False (state unchanged) when the
    /// token is not allowed here. May wait for the artifact (GIL
    /// released); `ValueError` if the compile failed.
    fn accept_token(&mut self, py: Python<'_>, token_id: i64) -> PyResult<bool> {
        let Some(t) = to_token(token_id) else {
            return Ok(false);
        };
        let inner = &mut self.inner;
        detached(py, "accepting a token", || inner.accept_token(t))
    }

    /// Advances token by token; stops at the first one not allowed and
    /// returns how many were accepted.
    fn accept_tokens(&mut self, py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = token_ids(tokens)?;
        let inner = &mut self.inner;
        detached(py, "accepting tokens", || {
            let mut n = 0;
            for &t in ids.as_slice() {
                if !inner.accept_token(t)? {
                    break;
                }
                n += 1;
            }
            Ok(n)
        })
    }

    /// How many of `tokens`, in order, would be accepted from here (the
    /// valid prefix of a speculative draft). Does not advance. May wait for
    /// the artifact (GIL released).
    fn validate_tokens(&mut self, py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = token_ids(tokens)?;
        let inner = &mut self.inner;
        detached(py, "validating tokens", || {
            inner.validate_tokens(ids.as_slice())
        })
    }

    /// Whether `token_id` would be accepted now (does not advance).
    fn is_allowed(&mut self, py: Python<'_>, token_id: i64) -> PyResult<bool> {
        let Some(t) = to_token(token_id) else {
            return Ok(false);
        };
        let inner = &mut self.inner;
        detached(py, "validating a token", || {
            Ok(inner.validate_tokens(&[t])? == 1)
        })
    }

    /// The bytes every valid continuation starts with (jump-forward), at
    /// most `max_bytes`, as `Matcher.forced_bytes` gives them once the
    /// artifact is there; empty before (jump-forward waits for the
    /// artifact, sampling does not).
    #[pyo3(signature = (max_bytes=DEFAULT_FORCED_BYTES))]
    fn forced_bytes<'py>(
        &mut self,
        py: Python<'py>,
        max_bytes: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0u8; max_bytes];
        let inner = &mut self.inner;
        let n = detached(py, "forcing bytes", || inner.forced_bytes(&mut buf))?;
        Ok(PyBytes::new(py, &buf[..n]))
    }

    /// Back to the start of the matcher's entry with its budget; forgets
    /// the rollback history. Early again if the artifact is not there.
    fn reset(&mut self, py: Python<'_>) -> PyResult<()> {
        let inner = &mut self.inner;
        detached(py, "resetting a matcher", || inner.reset())
    }

    /// Undoes the last `num_tokens` accepted tokens. Raises ValueError
    /// (nothing changes) beyond the tokens accepted or `max_rollback`.
    fn rollback(&mut self, num_tokens: i64) -> PyResult<()> {
        let n = usize::try_from(num_tokens).map_err(|_| {
            PyValueError::new_err(format!(
                "tooldec: cannot roll back {num_tokens} tokens (a count of at least 0)"
            ))
        })?;
        if !self.inner.rollback(n) {
            return Err(PyValueError::new_err(format!(
                "tooldec: cannot roll back {n} tokens: more than were accepted or than \
                 max_rollback={} keeps",
                self.max_rollback
            )));
        }
        Ok(())
    }

    /// An end-of-sequence token has been accepted.
    fn is_terminated(&self) -> bool {
        self.inner.is_terminated()
    }

    /// The output so far is a complete call (EOS may follow, or did).
    fn is_accepting(&self) -> bool {
        self.inner.is_accepting()
    }

    /// Whether masks are still computed on demand (the artifact is not
    /// there yet, or this matcher has not moved to it yet).
    fn is_early(&self) -> bool {
        self.inner.is_early()
    }

    /// The rollback capacity fixed at creation.
    #[getter]
    fn max_rollback(&self) -> usize {
        self.max_rollback
    }

    /// Mask width in tokens.
    #[getter]
    fn mask_width(&self) -> usize {
        self.mask_width
    }

    fn __repr__(&self) -> String {
        format!(
            "tooldec.PendingMatcher(early={}, accepting={}, terminated={})",
            self.inner.is_early(),
            self.inner.is_accepting(),
            self.inner.is_terminated()
        )
    }
}
