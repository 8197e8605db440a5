//! `tooldec._tooldec`: the Python binding of the tooldec runtime.
//!
//! An [`Artifact`] is a loaded `.tdm` file shared by every request (an
//! `Arc`); a [`Matcher`] is one request's position in the grammar with a
//! rollback history whose capacity is fixed when it is created. Masks are
//! written straight into the caller's `int32` bitmask (numpy through the
//! buffer protocol, torch through `data_ptr()`), in the layout vLLM, SGLang
//! and XGrammar use: `ceil(vocab / 32)` words per row, bit `t % 32` of word
//! `t / 32` set = token `t` allowed. A [`compile::Compiler`] compiles tool
//! lists into artifacts in the process (`compile.rs`); its `start` serves
//! masks before the artifact is there ([`pending::Pending`], `pending.rs`).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;

use pyo3::exceptions::{
    PyFileNotFoundError, PyIndexError, PyOSError, PyPermissionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use pyo3::{ffi, intern};
use tooldec_runtime::layout::reserved;
use tooldec_runtime::{Error, OwnedMatcher, SharedGrammar};

/// Rollback capacity of a matcher when none is given: enough for any
/// speculative-decoding draft length in use, 8 bytes per token.
const DEFAULT_MAX_ROLLBACK: usize = 32;

/// Most bytes `Matcher.forced_bytes` returns unless told otherwise.
const DEFAULT_FORCED_BYTES: usize = 4096;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// A loading error, naming what was loaded: I/O errors keep their Python
/// class (`FileNotFoundError`, `PermissionError`, `OSError`), everything
/// else (not an artifact, damaged, wrong version) is a `ValueError`.
fn load_error(what: &str, e: &Error) -> PyErr {
    let msg = format!("tooldec: cannot load artifact {what}: {e}");
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    match io.map(|io| io.kind()) {
        Some(std::io::ErrorKind::NotFound) => PyFileNotFoundError::new_err(msg),
        Some(std::io::ErrorKind::PermissionDenied) => PyPermissionError::new_err(msg),
        Some(_) => PyOSError::new_err(msg),
        None => PyValueError::new_err(msg),
    }
}

fn value_error(e: &Error) -> PyErr {
    PyValueError::new_err(format!("tooldec: {e}"))
}

/// A token id from Python: ids outside `u32` are never allowed (engines
/// pad drafts with -1), so they map to `None`.
fn to_token(t: i64) -> Option<u32> {
    u32::try_from(t).ok()
}

/// Token ids read from a Python sequence: up to [`INLINE_IDS`] on the
/// stack (speculative drafts are a handful), longer ones on the heap.
#[allow(clippy::large_enum_variant)] // on the stack on purpose
enum TokenIds {
    Inline([u32; INLINE_IDS], usize),
    Heap(Vec<u32>),
}

const INLINE_IDS: usize = 64;

impl TokenIds {
    fn as_slice(&self) -> &[u32] {
        match self {
            TokenIds::Inline(a, n) => &a[..*n],
            TokenIds::Heap(v) => v,
        }
    }

    fn push(&mut self, t: u32) {
        match self {
            TokenIds::Inline(a, n) if *n < INLINE_IDS => {
                a[*n] = t;
                *n += 1;
            }
            TokenIds::Inline(a, n) => {
                let mut v = a[..*n].to_vec();
                v.push(t);
                *self = TokenIds::Heap(v);
            }
            TokenIds::Heap(v) => v.push(t),
        }
    }
}

/// The leading run of `tokens` that are valid ids (a negative or huge id
/// ends it: such a token is never accepted, and engines pad drafts with
/// -1). Every item must be an integer.
fn token_ids(tokens: &Bound<'_, PyAny>) -> PyResult<TokenIds> {
    let mut out = TokenIds::Inline([0; INLINE_IDS], 0);
    let mut ended = false;
    for item in tokens.try_iter()? {
        let t: i64 = item?
            .extract()
            .map_err(|_| PyTypeError::new_err("tooldec: token ids must be integers"))?;
        match to_token(t) {
            Some(t) if !ended => out.push(t),
            _ => ended = true,
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Artifact
// ---------------------------------------------------------------------------

/// A loaded, validated tooldec artifact (`.tdm`), shared by all matchers.
///
/// Load once per process with `Artifact.open(path)` and create one
/// `Matcher` per request with `artifact.matcher()`. Thread-safe.
#[pyclass(module = "tooldec._tooldec", frozen)]
struct Artifact {
    shared: SharedGrammar,
    path: Option<String>,
}

#[pymethods]
impl Artifact {
    /// Reads, decompresses and validates the artifact at `path`.
    ///
    /// Raises `FileNotFoundError`/`OSError` when the file cannot be read
    /// and `ValueError` when it is not a valid artifact; both messages
    /// name the path.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf) -> PyResult<Artifact> {
        let shown = format!("'{}'", path.display());
        let shared =
            py.detach(|| SharedGrammar::open(&path).map_err(|e| load_error(&shown, &e)))?;
        Ok(Artifact {
            shared,
            path: Some(path.display().to_string()),
        })
    }

    /// Loads an artifact held in memory (the bytes of a `.tdm` file, or a
    /// raw payload).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Artifact> {
        let what = format!("from {} bytes", data.len());
        let shared =
            py.detach(|| SharedGrammar::from_bytes(data).map_err(|e| load_error(&what, &e)))?;
        Ok(Artifact { shared, path: None })
    }

    /// The path it was opened from (`None` for `from_bytes` and for an
    /// artifact `Compiler.compile` made).
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.clone()
    }

    /// The mask width in tokens: the model's logits size the artifact was
    /// compiled for (at least the tokenizer's token count).
    #[getter]
    fn mask_width(&self) -> usize {
        self.shared.grammar().mask_width()
    }

    /// Words per bitmask row: `ceil(mask_width / 32)`.
    #[getter]
    fn mask_words(&self) -> usize {
        self.shared.grammar().mask_words()
    }

    /// The tokenizer's real tokens; ids from here to `vocab_size` are
    /// padding and never allowed.
    #[getter]
    fn token_count(&self) -> usize {
        self.shared.grammar().token_count()
    }

    /// The end-of-sequence token ids.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.shared.grammar().eos_tokens().to_vec()
    }

    /// The artifact's metadata (tools, format, entries, vocabulary...),
    /// parsed from JSON.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let text = self.shared.grammar().metadata();
        let json = py.import(intern!(py, "json"))?;
        match json.call_method1(intern!(py, "loads"), (text,)) {
            Ok(v) => Ok(v),
            Err(_) => Ok(PyString::new(py, text).into_any()),
        }
    }

    /// The metadata as the JSON text stored in the artifact.
    #[getter]
    fn metadata_json(&self) -> &str {
        self.shared.grammar().metadata()
    }

    /// The format's entry points, the default first.
    #[getter]
    fn entries(&self) -> Vec<String> {
        self.shared
            .grammar()
            .entries()
            .map(|(n, _)| n.to_string())
            .collect()
    }

    /// The fewest tokens of a complete output from the default entry (EOS
    /// not counted).
    #[getter]
    fn min_tokens(&self) -> u32 {
        self.shared.grammar().min_tokens()
    }

    /// The default token budget compiled in (`--max-tokens`), or `None`.
    #[getter]
    fn max_tokens(&self) -> Option<u32> {
        self.shared.grammar().max_tokens()
    }

    /// SHA-256 fingerprint of the vocabulary the artifact was compiled
    /// against (32 bytes).
    #[getter]
    fn vocab_fingerprint<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.shared.grammar().vocab_fingerprint())
    }

    /// The bytes token `token_id` spells, or `None` for ids outside the
    /// tokenizer. Special tokens (EOS, `<tool_call>`...) spell no text:
    /// `b""` (their names are in `metadata["vocab"]["specials"]`).
    fn token_bytes<'py>(&self, py: Python<'py>, token_id: i64) -> Option<Bound<'py, PyBytes>> {
        let g = self.shared.grammar();
        let t = to_token(token_id).filter(|&t| (t as usize) < g.token_count())?;
        let bytes = g.token_bytes(t).unwrap_or(&[]);
        // A special token the grammar uses is stored as its marker
        // (`reserved::SPECIAL` + its id): bytes that are never text.
        let text = if bytes.first().is_some_and(|&b| reserved::is_reserved(b)) {
            &[][..]
        } else {
            bytes
        };
        Some(PyBytes::new(py, text))
    }

    /// Checks that the artifact was compiled for the vocabulary with this
    /// SHA-256 fingerprint (32 bytes, see `runtime/FORMAT.md`); ValueError
    /// naming both fingerprints otherwise.
    fn check_vocabulary(&self, fingerprint: &[u8]) -> PyResult<()> {
        let fp: &[u8; 32] = fingerprint.try_into().map_err(|_| {
            PyValueError::new_err(format!(
                "tooldec: a vocabulary fingerprint is 32 bytes, got {}",
                fingerprint.len()
            ))
        })?;
        self.shared
            .grammar()
            .check_vocabulary(fp)
            .map_err(|e| value_error(&e))
    }

    /// Checks that the artifact's masks fit a model whose logits are
    /// `logits` wide (wider is fine: the extra ids are never allowed);
    /// ValueError otherwise.
    fn check_mask_width(&self, logits: i64) -> PyResult<()> {
        let n = usize::try_from(logits).unwrap_or(0);
        self.shared
            .grammar()
            .check_mask_width(n)
            .map_err(|e| value_error(&e))
    }

    /// Whether `token_id` is an end-of-sequence token.
    fn is_eos(&self, token_id: i64) -> bool {
        to_token(token_id).is_some_and(|t| self.shared.grammar().is_eos(t))
    }

    /// A new matcher for one request.
    ///
    /// `entry`: the format's entry point (default: the first, see
    /// `entries`). `max_tokens`: the request's token budget, EOS included
    /// (default: the artifact's `max_tokens`, else none); every path that
    /// follows the masks is a complete call by then. `max_rollback`: how
    /// many accepted tokens can be rolled back, fixed here (at least the
    /// engine's speculative draft length + 1); the history is allocated
    /// once, never while serving. `tool`: the one tool the output's calls
    /// may name (OpenAI's `tool_choice` naming a function), served from
    /// the same artifact; `ValueError` for an unknown tool, an artifact
    /// without one-tool tables, or a budget this tool cannot finish in.
    #[pyo3(signature = (entry=None, max_tokens=None, max_rollback=DEFAULT_MAX_ROLLBACK as i64, tool=None))]
    fn matcher(
        &self,
        entry: Option<&str>,
        max_tokens: Option<i64>,
        max_rollback: i64,
        tool: Option<&str>,
    ) -> PyResult<Matcher> {
        let mut m = new_matcher(&self.shared, entry, max_tokens, max_rollback)?;
        if let Some(name) = tool {
            let g = self.shared.grammar();
            let Some(i) = g.tool_index(name) else {
                return Err(PyValueError::new_err(if g.tool_count() == 0 {
                    "tooldec: the artifact has no one-tool tables (compiled before them, or its \
                     format does not write the tool's name first); recompile it"
                        .to_string()
                } else {
                    format!("tooldec: the artifact has no tool named {name:?}")
                }));
            };
            m.inner.restrict(Some(i)).map_err(|e| value_error(&e))?;
        }
        Ok(m)
    }

    /// The tools' names, in the tool list's order (empty for an artifact
    /// without one-tool tables).
    #[getter]
    fn tools(&self) -> Vec<String> {
        let g = self.shared.grammar();
        (0..g.tool_count())
            .filter_map(|i| g.tool_name(i).map(str::to_string))
            .collect()
    }

    /// Reads the tool calls back out of an output this artifact accepts:
    /// `output` is the text (special tokens the format uses spelled by
    /// name, as a tokenizer decodes them) or the token ids (an
    /// end-of-sequence id ends it). Returns OpenAI-style calls,
    /// `[{"name": ..., "arguments": {...}}]`, arguments as typed JSON.
    /// Raises `ValueError` for an output the artifact refuses (saying at
    /// which byte), an unknown entry, or an artifact compiled before
    /// calls could be read back.
    #[pyo3(signature = (output, entry=None))]
    fn parse<'py>(
        &self,
        py: Python<'py>,
        output: &Bound<'py, PyAny>,
        entry: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        enum Out {
            Text(String),
            Ids(Vec<u32>),
        }
        let out = match output.extract::<String>() {
            Ok(t) => Out::Text(t),
            Err(_) => Out::Ids(token_ids(output)?.as_slice().to_vec()),
        };
        let shared = &self.shared;
        let json = py.detach(|| {
            let g = shared.grammar();
            let reader = tooldec_read::Reader::new(&g).map_err(|e| e.to_string())?;
            let calls = match &out {
                Out::Text(t) => reader.read_text(&g, entry, t),
                Out::Ids(ids) => reader.read_tokens(&g, entry, ids),
            }
            .map_err(|e| e.to_string())?;
            Ok::<String, String>(tooldec_read::to_json(&calls))
        });
        let json = json.map_err(PyValueError::new_err)?;
        py.import(intern!(py, "json"))?
            .call_method1(intern!(py, "loads"), (json,))
    }

    fn __repr__(&self) -> String {
        let g = self.shared.grammar();
        let at = match &self.path {
            Some(p) => format!("'{p}'"),
            None => "in memory".to_string(),
        };
        format!(
            "tooldec.Artifact({at}, mask_width={}, mask_words={}, entries={:?})",
            g.mask_width(),
            g.mask_words(),
            g.entries().map(|(n, _)| n).collect::<Vec<_>>()
        )
    }
}

fn new_matcher(
    shared: &SharedGrammar,
    entry: Option<&str>,
    max_tokens: Option<i64>,
    max_rollback: i64,
) -> PyResult<Matcher> {
    let rollback = rollback_capacity(max_rollback)?;
    let budget = budget_arg("max_tokens", max_tokens)?;
    if let Some(name) = entry {
        if shared.grammar().entry_state(name).is_none() {
            let names: Vec<_> = shared.grammar().entries().map(|(n, _)| n).collect();
            return Err(PyValueError::new_err(format!(
                "tooldec: the artifact has no entry point {name:?} (entries: {names:?})"
            )));
        }
    }
    let inner = shared
        .matcher(entry, budget, rollback)
        .map_err(|e| value_error(&e))?;
    Ok(Matcher { inner })
}

/// A matcher's `max_rollback` from Python: at most 2^20 tokens (the
/// history is allocated up front).
fn rollback_capacity(max_rollback: i64) -> PyResult<usize> {
    usize::try_from(max_rollback)
        .ok()
        .filter(|&n| n <= 1 << 20)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "tooldec: max_rollback must be between 0 and {} (got {max_rollback})",
                1 << 20
            ))
        })
}

/// A matcher's token budget from Python, the argument `name` (`None`:
/// the default).
fn budget_arg(name: &str, budget: Option<i64>) -> PyResult<Option<u32>> {
    budget
        .map(|n| {
            u32::try_from(n).map_err(|_| {
                PyValueError::new_err(format!(
                    "tooldec: {name} must be a non-negative 32-bit count (got {n})"
                ))
            })
        })
        .transpose()
}

// ---------------------------------------------------------------------------
// Bitmask access
// ---------------------------------------------------------------------------

/// `Py_buffer` as CPython lays it out (unchanged since 3.3; part of the
/// stable ABI from 3.11). pyo3 only declares the buffer API for abi3 builds
/// targeting 3.11+, and this module is built for 3.9+, so it declares the
/// two functions it needs itself; CPython exports them in every version.
#[repr(C)]
struct RawBuffer {
    buf: *mut c_void,
    obj: *mut ffi::PyObject,
    len: ffi::Py_ssize_t,
    itemsize: ffi::Py_ssize_t,
    readonly: c_int,
    ndim: c_int,
    format: *mut c_char,
    shape: *mut ffi::Py_ssize_t,
    strides: *mut ffi::Py_ssize_t,
    suboffsets: *mut ffi::Py_ssize_t,
    internal: *mut c_void,
}

extern "C" {
    fn PyObject_GetBuffer(obj: *mut ffi::PyObject, view: *mut RawBuffer, flags: c_int) -> c_int;
    fn PyBuffer_Release(view: *mut RawBuffer);
}

const PYBUF_WRITABLE: c_int = 0x0001;
const PYBUF_FORMAT: c_int = 0x0004;
const PYBUF_STRIDES: c_int = 0x0010 | 0x0008;

/// A held buffer export; released on drop (the GIL must be held then,
/// which it is: views are dropped in the calls that made them).
struct BufferGuard(Box<RawBuffer>);

impl Drop for BufferGuard {
    fn drop(&mut self) {
        // SAFETY: the view was filled by a successful PyObject_GetBuffer
        // and is released exactly once, with the GIL held.
        unsafe { PyBuffer_Release(&mut *self.0) }
    }
}

/// Writable rows of 32-bit words somewhere in memory owned by a Python
/// object that the caller keeps alive (and, for the buffer protocol, an
/// export that keeps it from being resized).
struct Rows {
    ptr: *mut u32,
    rows: usize,
    words: usize,
    /// Distance between rows, in words (at least `words`).
    stride: usize,
    _export: Option<BufferGuard>,
}

/// The raw pointer can cross into `Python::detach`: the memory is owned by
/// an object the calling frame holds a reference to, and the rows written
/// are disjoint.
#[derive(Clone, Copy)]
struct SendPtr(*mut u32);
// SAFETY: see above: the pointee outlives every use on the other thread,
// and each row is written through one slice only.
unsafe impl Send for SendPtr {}
// SAFETY: as for `Send`; the pointer itself is only copied.
unsafe impl Sync for SendPtr {}

impl Rows {
    /// The bitmask object's memory: a CPU torch tensor through its data
    /// pointer, anything else through the buffer protocol.
    fn of(obj: &Bound<'_, PyAny>) -> PyResult<Rows> {
        let py = obj.py();
        if obj.hasattr(intern!(py, "data_ptr"))? && obj.hasattr(intern!(py, "device"))? {
            return Rows::of_tensor(obj);
        }
        Rows::of_buffer(obj)
    }

    fn of_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Rows> {
        let py = obj.py();
        let device = obj.getattr(intern!(py, "device"))?;
        let kind: String = match device.getattr(intern!(py, "type")) {
            Ok(t) => t.str()?.to_string(),
            Err(_) => device.str()?.to_string(),
        };
        if kind != "cpu" {
            return Err(PyValueError::new_err(format!(
                "tooldec: the bitmask tensor is on device '{}'; masks are filled on the CPU: \
                 allocate the bitmask on the CPU (as vLLM and SGLang do) and move it to the \
                 device after filling",
                device.str()?
            )));
        }
        let dtype = obj.getattr(intern!(py, "dtype"))?.str()?.to_string();
        if dtype != "torch.int32" && dtype != "torch.uint32" {
            return Err(PyTypeError::new_err(format!(
                "tooldec: the bitmask tensor has dtype {dtype}; it must be torch.int32 \
                 (shape (batch, ceil(mask_width / 32)))"
            )));
        }
        let shape: Vec<i64> = obj.getattr(intern!(py, "shape"))?.extract()?;
        let strides: Vec<i64> = obj.call_method0(intern!(py, "stride"))?.extract()?;
        let ptr: usize = obj.call_method0(intern!(py, "data_ptr"))?.extract()?;
        // Strides of a tensor are in elements; the layout check wants bytes.
        let strides: Vec<i64> = strides.iter().map(|s| s * 4).collect();
        Rows::layout(ptr as *mut u32, &shape, &strides, None)
    }

    fn of_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Rows> {
        let py = obj.py();
        let mut view = Box::new(RawBuffer {
            buf: std::ptr::null_mut(),
            obj: std::ptr::null_mut(),
            len: 0,
            itemsize: 0,
            readonly: 0,
            ndim: 0,
            format: std::ptr::null_mut(),
            shape: std::ptr::null_mut(),
            strides: std::ptr::null_mut(),
            suboffsets: std::ptr::null_mut(),
            internal: std::ptr::null_mut(),
        });
        let flags = PYBUF_STRIDES | PYBUF_FORMAT | PYBUF_WRITABLE;
        // SAFETY: a valid object pointer and a writable, properly laid out
        // view; on success the export is released by BufferGuard.
        let rc = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            let err = PyErr::fetch(py);
            // Readable but not writable?
            // SAFETY: as above; a successful export is released just below.
            let rc = unsafe { PyObject_GetBuffer(obj.as_ptr(), &mut *view, PYBUF_STRIDES) };
            if rc == 0 {
                drop(BufferGuard(view));
                return Err(PyValueError::new_err(
                    "tooldec: the bitmask is read-only; pass a writable int32 array",
                ));
            }
            let _ = PyErr::fetch(py);
            let ty = obj.get_type().name()?;
            return Err(PyTypeError::new_err(format!(
                "tooldec: the bitmask must be a writable int32 array of shape \
                 (batch, ceil(mask_width / 32)) (numpy, or a CPU torch.int32 tensor); \
                 got {ty} ({err})"
            )));
        }
        let guard = BufferGuard(view);
        let v = &*guard.0;
        let format = if v.format.is_null() {
            "B".to_string()
        } else {
            // SAFETY: the exporter gives a NUL-terminated format string
            // that lives as long as the export.
            unsafe { CStr::from_ptr(v.format) }
                .to_string_lossy()
                .into_owned()
        };
        if !is_word_format(&format, v.itemsize) {
            return Err(PyTypeError::new_err(format!(
                "tooldec: the bitmask must hold 32-bit integers (numpy.int32), got format \
                 '{format}' with {}-byte items",
                v.itemsize
            )));
        }
        if !v.suboffsets.is_null() {
            return Err(PyTypeError::new_err(
                "tooldec: the bitmask must be a plain strided array (no suboffsets)",
            ));
        }
        let ndim = usize::try_from(v.ndim).unwrap_or(0);
        // SAFETY: PYBUF_STRIDES asks for shape and strides of ndim entries.
        let (shape, strides) = unsafe {
            (
                std::slice::from_raw_parts(v.shape, ndim)
                    .iter()
                    .map(|&x| x as i64)
                    .collect::<Vec<_>>(),
                std::slice::from_raw_parts(v.strides, ndim)
                    .iter()
                    .map(|&x| x as i64)
                    .collect::<Vec<_>>(),
            )
        };
        let ptr = v.buf as *mut u32;
        Rows::layout(ptr, &shape, &strides, Some(guard))
    }

    /// Checks a 1-D (one row) or 2-D layout given in bytes.
    fn layout(
        ptr: *mut u32,
        shape: &[i64],
        strides: &[i64],
        export: Option<BufferGuard>,
    ) -> PyResult<Rows> {
        let (rows, words, row_stride, word_stride) = match (shape, strides) {
            ([w], [ws]) => (1, *w, *w * 4, *ws),
            ([r, w], [rs, ws]) => (*r, *w, *rs, *ws),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "tooldec: the bitmask must have shape (batch, ceil(mask_width / 32)); got \
                     {} dimensions",
                    shape.len()
                )))
            }
        };
        let rows = usize::try_from(rows).unwrap_or(0);
        let words = usize::try_from(words).unwrap_or(0);
        if words > 1 && word_stride != 4 {
            return Err(PyValueError::new_err(
                "tooldec: each bitmask row must be contiguous (C order, as numpy and torch \
                 allocate it)",
            ));
        }
        if rows > 1 && (row_stride < (words as i64) * 4 || row_stride % 4 != 0) {
            return Err(PyValueError::new_err(
                "tooldec: the bitmask's rows overlap or are not word-aligned; pass a C-ordered \
                 array",
            ));
        }
        if rows > 0 && words > 0 && (ptr.is_null() || (ptr as usize) % 4 != 0) {
            return Err(PyValueError::new_err(
                "tooldec: the bitmask's memory is not aligned to 4 bytes",
            ));
        }
        Ok(Rows {
            ptr,
            rows,
            words,
            stride: usize::try_from(row_stride / 4).unwrap_or(0).max(words),
            _export: export,
        })
    }

    fn check_width(&self, mask_words: usize, vocab_size: usize) -> PyResult<()> {
        if self.words < mask_words {
            return Err(PyValueError::new_err(format!(
                "tooldec: the bitmask has {} words per row, but the artifact's vocabulary of \
                 {vocab_size} tokens needs ceil({vocab_size} / 32) = {mask_words}; allocate \
                 (batch, ceil(mask_width / 32)) with the model's logits size",
                self.words
            )));
        }
        Ok(())
    }

    fn check_row(&self, index: i64) -> PyResult<usize> {
        usize::try_from(index)
            .ok()
            .filter(|&i| i < self.rows)
            .ok_or_else(|| {
                PyIndexError::new_err(format!(
                    "tooldec: bitmask row {index} is out of range (the bitmask has {} rows)",
                    self.rows
                ))
            })
    }

    /// Row `index`, checked to exist and to hold a mask of `mask_words`
    /// words (`mask_width` tokens): what a single-row fill writes into.
    fn checked_row(
        &mut self,
        index: i64,
        mask_words: usize,
        mask_width: usize,
    ) -> PyResult<&mut [u32]> {
        self.check_width(mask_words, mask_width)?;
        let i = self.check_row(index)?;
        // SAFETY: `i` was checked; the memory is alive while `self` is (the
        // caller's object and, for buffers, our export), and the `&mut self`
        // borrow makes this the only slice over it.
        Ok(unsafe { Rows::row(SendPtr(self.ptr), self.stride, self.words, i) })
    }

    /// Row `i` (checked by the caller).
    ///
    /// # Safety
    /// `i < self.rows`, and no other live slice covers this row.
    unsafe fn row(ptr: SendPtr, stride: usize, words: usize, i: usize) -> &'static mut [u32] {
        // SAFETY: row `i` lies inside the checked buffer (the caller's
        // contract), and no other slice covers it.
        unsafe { std::slice::from_raw_parts_mut(ptr.0.add(i * stride), words) }
    }
}

/// Whether a buffer format string names 32-bit integers in native order.
fn is_word_format(format: &str, itemsize: ffi::Py_ssize_t) -> bool {
    if itemsize != 4 {
        return false;
    }
    let native_little = cfg!(target_endian = "little");
    let rest = match format.as_bytes().first() {
        Some(b'@' | b'=') => &format[1..],
        Some(b'<') if native_little => &format[1..],
        Some(b'>' | b'!') if !native_little => &format[1..],
        Some(b'<' | b'>' | b'!') => return false,
        _ => format,
    };
    matches!(rest, "i" | "I" | "l" | "L")
}

// ---------------------------------------------------------------------------
// Matcher
// ---------------------------------------------------------------------------

/// One request's position in the grammar, with a rollback history of fixed
/// capacity. Create with `Artifact.matcher()`.
#[pyclass(module = "tooldec._tooldec")]
struct Matcher {
    inner: OwnedMatcher,
}

#[pymethods]
impl Matcher {
    /// Writes the mask of allowed next tokens into row `index` of
    /// `bitmask`: an int32 array of shape `(batch, words)` (or `(words,)`)
    /// with `words >= ceil(mask_width / 32)`; words past the artifact's
    /// vocabulary are zeroed (padding ids are never allowed). numpy arrays
    /// go through the buffer protocol, CPU `torch.int32` tensors through
    /// `data_ptr()`.
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(&self, bitmask: &Bound<'_, PyAny>, index: i64) -> PyResult<()> {
        let mut rows = Rows::of(bitmask)?;
        let g = self.inner.grammar();
        let row = rows.checked_row(index, g.mask_words(), g.mask_width())?;
        let ok = self.inner.try_fill_mask(row);
        debug_assert!(ok);
        Ok(())
    }

    /// Advances by one token. Returns False (state unchanged) when the
    /// token is not allowed here: exactly when its mask bit is clear.
    fn accept_token(&mut self, token_id: i64) -> bool {
        to_token(token_id).is_some_and(|t| self.inner.accept_token(t))
    }

    /// Advances token by token; stops at the first one not allowed and
    /// returns how many were accepted.
    fn accept_tokens(&mut self, tokens: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = token_ids(tokens)?;
        Ok(self.inner.accept_tokens(ids.as_slice()))
    }

    /// How many of `tokens`, in order, would be accepted from here (the
    /// valid prefix of a speculative draft). Does not advance.
    fn validate_tokens(&self, tokens: &Bound<'_, PyAny>) -> PyResult<usize> {
        let ids = token_ids(tokens)?;
        Ok(self.inner.validate_tokens(ids.as_slice()))
    }

    /// Whether `token_id` would be accepted now (does not advance).
    fn is_allowed(&self, token_id: i64) -> bool {
        to_token(token_id).is_some_and(|t| self.inner.validate_tokens(&[t]) == 1)
    }

    /// Undoes the last `num_tokens` accepted tokens. Raises ValueError
    /// when more than `rollback_depth` are asked for (nothing changes).
    fn rollback(&mut self, num_tokens: i64) -> PyResult<()> {
        let depth = self.inner.depth();
        let n = usize::try_from(num_tokens).map_err(|_| {
            PyValueError::new_err(format!(
                "tooldec: cannot roll back {num_tokens} tokens (a count of at least 0)"
            ))
        })?;
        if !self.inner.rollback(n) {
            return Err(PyValueError::new_err(format!(
                "tooldec: cannot roll back {n} tokens: only the last {depth} can be undone \
                 (max_rollback={}; create the matcher with a larger max_rollback)",
                self.inner.capacity()
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

    /// Back to the start (or to entry point `entry`) with the budget the
    /// matcher was created with; forgets the rollback history.
    #[pyo3(signature = (entry=None))]
    fn reset(&mut self, entry: Option<&str>) -> PyResult<()> {
        match entry {
            None => {
                self.inner.reset();
                Ok(())
            }
            Some(name) => {
                if self.inner.reset_to(name) {
                    Ok(())
                } else {
                    let names: Vec<_> = self.inner.grammar().entries().map(|(n, _)| n).collect();
                    Err(PyValueError::new_err(format!(
                        "tooldec: cannot restart at entry {name:?}: no such entry (entries: \
                         {names:?}) or the matcher's budget cannot complete an output from it"
                    )))
                }
            }
        }
    }

    /// An independent copy (same position, budget and rollback history).
    fn copy(&self) -> Matcher {
        Matcher {
            inner: self.inner.clone(),
        }
    }

    fn __copy__(&self) -> Matcher {
        self.copy()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Matcher {
        self.copy()
    }

    /// Tokens this matcher may still take (EOS included), or None without
    /// a budget.
    #[getter]
    fn tokens_left(&self) -> Option<u32> {
        self.inner.tokens_left()
    }

    /// Sets the tokens left from here on (None: no budget). ValueError if
    /// the output cannot be completed within it (nothing changes).
    fn set_budget(&mut self, tokens_left: Option<i64>) -> PyResult<()> {
        let left = match tokens_left {
            None => None,
            Some(n) => Some(u32::try_from(n).map_err(|_| {
                PyValueError::new_err(format!("tooldec: a budget of {n} tokens is not valid"))
            })?),
        };
        self.inner.set_budget(left).map_err(|e| value_error(&e))
    }

    /// How many accepted tokens can be rolled back now.
    #[getter]
    fn rollback_depth(&self) -> usize {
        self.inner.depth()
    }

    /// The rollback capacity fixed at creation.
    #[getter]
    fn max_rollback(&self) -> usize {
        self.inner.capacity()
    }

    /// The bytes every valid continuation starts with (jump-forward
    /// decoding), at most `max_bytes`: empty at a choice, in an accepting
    /// state, before a special token and after termination; never ends
    /// inside a UTF-8 character.
    #[pyo3(signature = (max_bytes=DEFAULT_FORCED_BYTES))]
    fn forced_bytes<'py>(&self, py: Python<'py>, max_bytes: usize) -> Bound<'py, PyBytes> {
        let mut stack = [0u8; DEFAULT_FORCED_BYTES];
        let mut heap = Vec::new();
        let buf: &mut [u8] = if max_bytes <= stack.len() {
            &mut stack[..max_bytes]
        } else {
            heap.resize(max_bytes, 0);
            &mut heap
        };
        let n = self.inner.forced_bytes(buf);
        PyBytes::new(py, &buf[..n])
    }

    /// The DFA state (None once terminated); for debugging.
    #[getter]
    fn state(&self) -> Option<u32> {
        self.inner.matcher().state()
    }

    /// Mask width in tokens: the model's logits size the artifact was
    /// compiled for (at least the tokenizer's token count).
    #[getter]
    fn mask_width(&self) -> usize {
        self.inner.grammar().mask_width()
    }

    /// Words per bitmask row: `ceil(mask_width / 32)`.
    #[getter]
    fn mask_words(&self) -> usize {
        self.inner.grammar().mask_words()
    }

    /// The artifact this matcher walks.
    #[getter]
    fn artifact(&self) -> Artifact {
        Artifact {
            shared: self.inner.matcher().handle().clone(),
            path: None,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "tooldec.Matcher(state={:?}, accepting={}, terminated={}, tokens_left={:?}, \
             rollback_depth={}/{})",
            self.inner.matcher().state(),
            self.inner.is_accepting(),
            self.inner.is_terminated(),
            self.inner.tokens_left(),
            self.inner.depth(),
            self.inner.capacity()
        )
    }
}

// ---------------------------------------------------------------------------
// Batched fill
// ---------------------------------------------------------------------------

/// Fills one bitmask row per matcher: row `indices[i]` (default: `i`) gets
/// matcher `i`'s mask; a `None` matcher leaves its row untouched. The
/// masks are written with the GIL released.
#[pyfunction]
#[pyo3(signature = (matchers, bitmask, indices=None))]
fn fill_next_token_bitmask_batch(
    py: Python<'_>,
    matchers: &Bound<'_, PyAny>,
    bitmask: &Bound<'_, PyAny>,
    indices: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let rows = Rows::of(bitmask)?;
    let mut held: Vec<Option<PyRef<'_, Matcher>>> = Vec::new();
    for item in matchers.try_iter()? {
        let item = item?;
        if item.is_none() {
            held.push(None);
        } else {
            let m = item.cast::<Matcher>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "tooldec: fill_next_token_bitmask_batch takes tooldec.Matcher objects (or \
                     None), got {}",
                    item.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            held.push(Some(m.try_borrow()?));
        }
    }
    let targets: Vec<usize> = match indices {
        None => (0..held.len()).collect(),
        Some(ix) => {
            let mut out = Vec::with_capacity(held.len());
            for i in ix.try_iter()? {
                out.push(rows.check_row(i?.extract::<i64>()?)?);
            }
            if out.len() != held.len() {
                return Err(PyValueError::new_err(format!(
                    "tooldec: {} indices for {} matchers",
                    out.len(),
                    held.len()
                )));
            }
            out
        }
    };
    let mut seen = vec![false; rows.rows];
    for (m, &i) in held.iter().zip(&targets) {
        if i >= rows.rows {
            return Err(PyIndexError::new_err(format!(
                "tooldec: {} matchers but the bitmask has {} rows",
                held.len(),
                rows.rows
            )));
        }
        if let Some(m) = m {
            if std::mem::replace(&mut seen[i], true) {
                return Err(PyValueError::new_err(format!(
                    "tooldec: bitmask row {i} is given to two matchers"
                )));
            }
            let g = m.inner.grammar();
            rows.check_width(g.mask_words(), g.mask_width())?;
        }
    }
    let jobs: Vec<(&OwnedMatcher, usize)> = held
        .iter()
        .zip(&targets)
        .filter_map(|(m, &i)| m.as_ref().map(|m| (&m.inner, i)))
        .collect();
    let (ptr, stride, words) = (SendPtr(rows.ptr), rows.stride, rows.words);
    py.detach(|| {
        for (m, i) in jobs {
            // SAFETY: every row index was checked and is used once; the
            // memory stays alive (the caller holds the object, and `rows`
            // holds the buffer export) until after this closure.
            let row = unsafe { Rows::row(ptr, stride, words, i) };
            m.try_fill_mask(row);
        }
    });
    drop(rows);
    Ok(())
}

mod cli;
mod compile;
mod fingerprint;
mod pending;

/// The Python module `tooldec._tooldec`.
#[pymodule]
fn _tooldec(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Artifact>()?;
    m.add_class::<Matcher>()?;
    m.add_class::<compile::Compiler>()?;
    m.add_class::<pending::Pending>()?;
    m.add_class::<pending::PendingMatcher>()?;
    m.add_class::<fingerprint::PyFingerprint>()?;
    m.add_function(wrap_pyfunction!(
        fingerprint::tokenizer_json_fingerprint,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(cli::compile_main, m)?)?;
    m.add("DEFAULT_MAX_ROLLBACK", DEFAULT_MAX_ROLLBACK)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
