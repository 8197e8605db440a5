//! The vocabulary fingerprint on the Python side: the runtime's incremental
//! builder ([`Fingerprint`]) for an engine that reads its tokenizer token
//! by token, and the fingerprint of a Hugging Face `tokenizer.json` read by
//! the compiler's own code (`Vocab::fingerprint_tokenizer_json`), so an
//! engine's tokenizer and `tooldec-compile --tokenizer` can never disagree
//! on what the tokens are. `tooldec.vocab_fingerprint` (Python) accepts
//! tokenizer objects and calls these.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tooldec_compiler::vocab::Vocab;

/// An incremental vocabulary fingerprint (`runtime/FORMAT.md`): create it
/// with the tokenizer's token count, push every token id in order as
/// text (its exact bytes), special (its name) or unused, then `finish()`.
#[pyclass(module = "tooldec._tooldec", name = "Fingerprint")]
pub struct PyFingerprint {
    inner: tooldec_runtime::Fingerprint,
}

#[pymethods]
impl PyFingerprint {
    #[new]
    fn new(tokens: u32) -> PyFingerprint {
        PyFingerprint {
            inner: tooldec_runtime::Fingerprint::new(tokens),
        }
    }

    /// The next id is a text token whose exact bytes are `data`.
    fn push_text(&mut self, data: &[u8]) -> PyResult<()> {
        self.room()?;
        self.inner.push_text(data);
        Ok(())
    }

    /// The next id is a special (or added) token named `name` (str, or
    /// its UTF-8 bytes).
    fn push_special(&mut self, name: &Bound<'_, PyAny>) -> PyResult<()> {
        self.room()?;
        if let Ok(s) = name.extract::<String>() {
            self.inner.push_special(s);
        } else {
            let b: &[u8] = name.extract()?;
            self.inner.push_special(b);
        }
        Ok(())
    }

    /// The next id is one the tokenizer leaves unused.
    fn push_unused(&mut self) -> PyResult<()> {
        self.room()?;
        self.inner.push_unused();
        Ok(())
    }

    /// The token count the fingerprint was created with.
    #[getter]
    fn tokens(&self) -> u32 {
        self.inner.tokens()
    }

    /// How many tokens were pushed so far.
    #[getter]
    fn pushed(&self) -> u32 {
        self.inner.pushed()
    }

    /// The 32-byte SHA-256 fingerprint. ValueError if fewer tokens were
    /// pushed than the count given at creation. The builder is left as it
    /// was.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let (pushed, tokens) = (self.inner.pushed(), self.inner.tokens());
        if pushed != tokens {
            return Err(PyValueError::new_err(format!(
                "tooldec: vocabulary fingerprint: {pushed} tokens pushed for a vocabulary of {tokens}"
            )));
        }
        Ok(PyBytes::new(py, &self.inner.clone().finish()))
    }

    fn __repr__(&self) -> String {
        format!(
            "Fingerprint(tokens={}, pushed={})",
            self.inner.tokens(),
            self.inner.pushed()
        )
    }
}

impl PyFingerprint {
    /// Refuses a push past the token count: the vocabulary was read wrong.
    fn room(&self) -> PyResult<()> {
        if self.inner.pushed() >= self.inner.tokens() {
            return Err(PyValueError::new_err(format!(
                "tooldec: vocabulary fingerprint: all {} tokens were already pushed",
                self.inner.tokens()
            )));
        }
        Ok(())
    }
}

/// The vocabulary fingerprint of a Hugging Face `tokenizer.json` given as
/// text: what `tooldec-compile --tokenizer` records for that file.
/// ValueError for a tokenizer tooldec cannot map to bytes (WordPiece, an
/// unknown decoder) or text that is not a tokenizer.
#[pyfunction]
pub fn tokenizer_json_fingerprint<'py>(
    py: Python<'py>,
    json: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let fp = py
        .detach(|| Vocab::fingerprint_tokenizer_json(json))
        .map_err(|e| PyValueError::new_err(format!("tooldec: {e}")))?;
    Ok(PyBytes::new(py, &fp))
}
