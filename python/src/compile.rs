//! `tooldec.Compiler`: the compiler in the process, for `pip install` users
//! without a Rust toolchain and for engines compiling a tool list per
//! request.
//!
//! It holds a [`tooldec_compiler::Compiler`] (bound to one vocabulary,
//! `Sync`, with its cache of reused parts and of whole artifacts) behind an
//! `Arc`; `compile` parses the tool list and compiles it with the GIL
//! released, so compiles from several Python threads run at once, and
//! returns an [`Artifact`] sharing the compiled grammar. The keyword
//! arguments are `tooldec-compile`'s flags with underscores, mapped onto
//! [`Options`] and [`spec::ParseOptions`] the way the CLI maps them.
//! `start` takes the same arguments and returns a [`Pending`]
//! (`pending.rs`): masks before the artifact is there.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use tooldec_compiler::spec::ToolSet;
use tooldec_compiler::vocab::{is_gguf, Vocab};
use tooldec_compiler::{
    spec, CallFormat, Error, ErrorKind, JsonOptions, Limits, Options, Whitespace,
};

use crate::pending::Pending;
use crate::Artifact;

/// A compiler error as Python sees it: `ValueError` with the compiler's
/// message (which names the place: file:line:column and JSON pointer).
pub(crate) fn compile_error(e: &Error) -> PyErr {
    PyValueError::new_err(format!("tooldec: {e}"))
}

/// Runs `f` with the GIL released; a panic inside becomes a
/// `RuntimeError` (never a `PanicException`, which `except Exception`
/// does not catch in a server).
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    what: &str,
    f: impl FnOnce() -> Result<T, Error> + Send,
) -> PyResult<T> {
    let out = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match out {
        Ok(r) => r.map_err(|e| compile_error(&e)),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(PyRuntimeError::new_err(format!(
                "tooldec: internal error while {what}: {msg} (please report it)"
            )))
        }
    }
}

/// A non-negative count from Python, or a `ValueError` naming the argument.
fn count<T: TryFrom<i64>>(name: &str, v: Option<i64>) -> PyResult<Option<T>> {
    match v {
        None => Ok(None),
        Some(n) => T::try_from(n).map(Some).map_err(|_| {
            PyValueError::new_err(format!(
                "tooldec: {name} must be a non-negative count that fits the compiler's type (got \
                 {n})"
            ))
        }),
    }
}

/// The compile's limits from Python: seconds and bytes, 0 for none, None
/// for the engine defaults (10 s, 2 GiB).
fn limits(time_limit: Option<f64>, memory_limit: Option<i64>) -> PyResult<Limits> {
    let mut l = Limits::engine();
    if let Some(t) = time_limit {
        if !(0.0..=1e9).contains(&t) {
            return Err(PyValueError::new_err(format!(
                "tooldec: time_limit must be seconds (0: no limit), got {t}"
            )));
        }
        l.time = (t > 0.0).then(|| std::time::Duration::from_secs_f64(t));
    }
    if let Some(n) = count::<usize>("memory_limit", memory_limit)? {
        l.memory = (n > 0).then_some(n);
    }
    Ok(l)
}

/// End-of-sequence tokens from Python: `None`, a token (its string or id),
/// or a sequence of them; as `--eos` takes them (strings, ids as digits).
fn eos_names(eos: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(eos) = eos else {
        return Ok(Vec::new());
    };
    let one = |item: &Bound<'_, PyAny>| -> PyResult<String> {
        if let Ok(s) = item.extract::<String>() {
            return Ok(s);
        }
        if let Ok(n) = item.extract::<u32>() {
            return Ok(n.to_string());
        }
        Err(PyTypeError::new_err(
            "tooldec: eos takes end-of-sequence tokens as strings or non-negative ids",
        ))
    };
    if eos.is_instance_of::<PyString>() || eos.extract::<i64>().is_ok() {
        return Ok(vec![one(eos)?]);
    }
    let mut out = Vec::new();
    for item in eos.try_iter().map_err(|_| {
        PyTypeError::new_err("tooldec: eos is a token (string or id) or a list of them")
    })? {
        out.push(one(&item?)?);
    }
    Ok(out)
}

/// The built-in GPT-2 vocabulary, its EOS replaced by `eos` when given (as
/// `tooldec-compile` without `--tokenizer` does).
fn builtin_vocab(eos: &[String]) -> Result<Vocab, Error> {
    let mut v = Vocab::builtin_gpt2()?;
    if !eos.is_empty() {
        let ids = eos
            .iter()
            .map(|e| v.resolve(e))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::new(ErrorKind::Vocab, e))?;
        v = Vocab::from_tokens(v.tokens, ids, &v.label)?;
    }
    Ok(v)
}

/// A vocabulary from a file: a GGUF model, or a `tokenizer.json` (its EOS
/// from `eos`, else the `tokenizer_config.json` beside it).
fn file_vocab(path: &Path, eos: &[String]) -> Result<Vocab, Error> {
    if is_gguf(path) {
        Vocab::from_gguf(path, eos)
    } else {
        Vocab::from_tokenizer_json(path, eos)
    }
}

/// A vocabulary from the text of a `tokenizer.json` (a tokenizer object's
/// serialization), labelled `name`; there is no `tokenizer_config.json`
/// beside text, so `eos` must name the end-of-sequence tokens.
fn text_vocab(json: &str, eos: &[String], name: &str) -> Result<Vocab, Error> {
    Vocab::from_tokenizer_json_text(json, name, eos)
}

/// Reads a tool list given as a Python object into `(name for messages,
/// text)`: a `str` is the list's text (JSON, JSON Lines, or signatures),
/// `bytes` its UTF-8 text, an `os.PathLike` a file to read, anything else
/// (a list or dict) is serialized with `json.dumps`.
fn tools_text(py: Python<'_>, tools: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    if let Ok(s) = tools.cast::<PyString>() {
        return Ok(("tools".to_string(), s.to_cow()?.into_owned()));
    }
    if let Ok(b) = tools.cast::<PyBytes>() {
        let text = std::str::from_utf8(b.as_bytes()).map_err(|e| {
            PyValueError::new_err(format!("tooldec: the tool list is not UTF-8: {e}"))
        })?;
        return Ok(("tools".to_string(), text.to_owned()));
    }
    if tools.hasattr(intern!(py, "__fspath__"))? {
        let path: PathBuf = tools.extract()?;
        let shown = path.display().to_string();
        let text = py.detach(|| std::fs::read_to_string(&path)).map_err(|e| {
            let msg = format!("tooldec: cannot read the tool list {shown}: {e}");
            match e.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
                _ => PyOSError::new_err(msg),
            }
        })?;
        return Ok((shown, text));
    }
    let json = py.import(intern!(py, "json"))?;
    let text = json
        .call_method1(intern!(py, "dumps"), (tools,))
        .map_err(|e| {
            PyTypeError::new_err(format!(
                "tooldec: the tool list must be JSON text, a path, or a list or dict that \
                 json.dumps serializes ({e})"
            ))
        })?;
    Ok(("tools".to_string(), text.extract()?))
}

/// One compile's input, read from the keyword arguments `compile` and
/// `start` share: the tool list's text and the options, the format still
/// a name (read in [`Request::load`], with the GIL released).
struct Request {
    file: String,
    text: String,
    format: String,
    entry: Option<String>,
    parse: spec::ParseOptions,
    /// The options but the format.
    base: Options,
}

impl Request {
    /// Maps the keyword arguments onto [`Options`] and
    /// [`spec::ParseOptions`] the way `tooldec-compile` maps its flags.
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        format: &str,
        entry: Option<&str>,
        dialect: &str,
        max_tokens: Option<i64>,
        vocab_size: Option<i64>,
        max_ws: Option<i64>,
        whitespace: &str,
        max_depth: Option<i64>,
        open_objects: bool,
        any_order: Option<i64>,
        max_recursion: Option<i64>,
        any_depth: Option<i64>,
        max_count: Option<i64>,
        relax: bool,
        rename_collisions: bool,
        repair: bool,
        max_states: Option<i64>,
        max_nfa_states: Option<i64>,
        threads: Option<i64>,
        no_regions: bool,
        time_limit: Option<f64>,
        memory_limit: Option<i64>,
    ) -> PyResult<Request> {
        let (file, text) = tools_text(py, tools)?;
        let max_tokens = count::<u32>("max_tokens", max_tokens)?;
        if max_tokens == Some(0) {
            return Err(PyValueError::new_err(
                "tooldec: max_tokens must be at least 1 (None: no default budget)",
            ));
        }
        let d = JsonOptions::default();
        let json = JsonOptions {
            max_ws: count("max_ws", max_ws)?.unwrap_or(d.max_ws),
            whitespace: Whitespace::parse(whitespace).ok_or_else(|| {
                PyValueError::new_err(format!(
                    "tooldec: whitespace {whitespace:?}: expected \"free\" or \"dumps\""
                ))
            })?,
            max_depth: count("max_depth", max_depth)?.unwrap_or(d.max_depth),
            open_objects,
            any_order: count("any_order", any_order)?.unwrap_or(d.any_order),
            max_recursion: count("max_recursion", max_recursion)?.unwrap_or(d.max_recursion),
            any_depth: count("any_depth", any_depth)?.unwrap_or(d.any_depth),
            max_count: count("max_count", max_count)?.unwrap_or(d.max_count),
            relax,
        };
        let o = Options::default();
        let dialect: spec::Dialect = dialect.parse().map_err(|e| compile_error(&e))?;
        let base = Options {
            json,
            max_states: count("max_states", max_states)?.unwrap_or(o.max_states),
            max_nfa_states: count("max_nfa_states", max_nfa_states)?.unwrap_or(o.max_nfa_states),
            mask_width: count("vocab_size", vocab_size)?,
            zstd_level: None,
            threads: count("threads", threads)?.unwrap_or(o.threads),
            max_tokens,
            regions: !no_regions,
            format: o.format,
            limits: limits(time_limit, memory_limit)?,
            stop_entries: o.stop_entries,
        };
        let parse = spec::ParseOptions {
            dialect,
            collisions: if rename_collisions {
                spec::Collisions::Rename
            } else {
                spec::Collisions::Error
            },
            repair,
        };
        Ok(Request {
            file,
            text,
            format: format.to_owned(),
            entry: entry.map(str::to_owned),
            parse,
            base,
        })
    }

    /// Reads the format and parses the tool list: what a compile takes.
    fn load(self) -> Result<(ToolSet, Options), Error> {
        let format = match &self.entry {
            Some(entry) => CallFormat::load(&self.format)?.only_entry(entry)?,
            None => CallFormat::load(&self.format)?,
        };
        let set = spec::parse_with(&self.file, &self.text, &self.parse)?;
        Ok((
            set,
            Options {
                format,
                ..self.base
            },
        ))
    }
}

/// A compiler bound to one tokenizer's vocabulary: compiles tool lists into
/// artifacts in memory, reusing the parts that compiles share and keeping
/// the artifacts of tool lists compiled before. Thread-safe: one compiler
/// serves every thread, and compiles run in parallel with the GIL released.
#[pyclass(module = "tooldec._tooldec", frozen)]
pub struct Compiler {
    inner: Arc<tooldec_compiler::Compiler>,
    fingerprint: [u8; 32],
}

impl Compiler {
    fn with_vocab(
        py: Python<'_>,
        cache_bytes: Option<i64>,
        load: impl FnOnce() -> Result<Vocab, Error> + Send,
    ) -> PyResult<Compiler> {
        let bound = count::<usize>("cache_bytes", cache_bytes)?
            .unwrap_or(tooldec_compiler::DEFAULT_CACHE_BYTES);
        let (inner, fingerprint) = detached(py, "loading the vocabulary", || {
            let vocab = load()?;
            let fingerprint = vocab.fingerprint();
            Ok((
                tooldec_compiler::Compiler::with_cache_bytes(vocab, bound),
                fingerprint,
            ))
        })?;
        Ok(Compiler {
            inner: Arc::new(inner),
            fingerprint,
        })
    }
}

#[pymethods]
impl Compiler {
    /// A compiler for `tokenizer`: the path of a `tokenizer.json` (or of
    /// its directory) or of a GGUF model file, a `tokenizers.Tokenizer`, a
    /// transformers fast tokenizer, or the `tokenizer.json` text.
    ///
    /// `eos`: the end-of-sequence tokens (a string or id, or a list of
    /// them), as `tooldec-compile --eos`; default: the `eos_token` of the
    /// `tokenizer_config.json` beside a `tokenizer.json` path, a GGUF
    /// file's eos/eot/eom ids, a transformers tokenizer's `eos_token`.
    /// `cache_bytes`: the bound on the bytes of reused parts and kept
    /// artifacts (default 256 MiB; 0 keeps nothing).
    #[new]
    #[pyo3(signature = (tokenizer, eos=None, cache_bytes=None))]
    fn new(
        py: Python<'_>,
        tokenizer: &Bound<'_, PyAny>,
        eos: Option<&Bound<'_, PyAny>>,
        cache_bytes: Option<i64>,
    ) -> PyResult<Compiler> {
        let mut eos = eos_names(eos)?;
        let source = py
            .import(intern!(py, "tooldec._vocab"))?
            .call_method1(intern!(py, "_tokenizer_source"), (tokenizer,))?;
        let (kind, value, own_eos, name): (String, String, Option<String>, String) =
            source.extract()?;
        if kind == "path" {
            let path = PathBuf::from(value);
            if !path.is_file() {
                return Err(PyFileNotFoundError::new_err(format!(
                    "tooldec: no tokenizer file {}",
                    path.display()
                )));
            }
            return Compiler::with_vocab(py, cache_bytes, move || file_vocab(&path, &eos));
        }
        if eos.is_empty() {
            eos.extend(own_eos);
        }
        if eos.is_empty() {
            return Err(PyValueError::new_err(format!(
                "tooldec: the tokenizer ({name}) does not say which token ends a sequence; pass \
                 eos=\"<token>\" (or an id, or a list)"
            )));
        }
        Compiler::with_vocab(py, cache_bytes, move || text_vocab(&value, &eos, &name))
    }

    /// A compiler for the built-in GPT-2 vocabulary (`r50k_base`, EOS
    /// `<|endoftext|>` unless `eos` says otherwise): nothing to download,
    /// as `tooldec-compile` without `--tokenizer`.
    #[staticmethod]
    #[pyo3(signature = (eos=None, cache_bytes=None))]
    fn gpt2(
        py: Python<'_>,
        eos: Option<&Bound<'_, PyAny>>,
        cache_bytes: Option<i64>,
    ) -> PyResult<Compiler> {
        let eos = eos_names(eos)?;
        Compiler::with_vocab(py, cache_bytes, move || builtin_vocab(&eos))
    }

    /// Compiles the tool list `tools` into an `Artifact` (in memory, its
    /// `path` None), as `tooldec-compile` would with the same flags; the
    /// same list with the same options again is served from the kept
    /// artifact without compiling.
    ///
    /// `tools`: a list or dict (an OpenAI `tools` list, Anthropic or MCP
    /// tools, ... anything `tooldec-compile` reads), its JSON text (or a
    /// signature list), or an `os.PathLike` to read. The other arguments
    /// are `tooldec-compile`'s flags: `format` (a shipped format or a .tdg
    /// path), `entry`, `dialect`, `max_tokens`, `vocab_size` (the model's
    /// logits size, the mask width), `max_ws`, `whitespace` (`"free"` or
    /// `"dumps"`, as `tooldec-compile --whitespace`), `max_depth`, `open_objects`,
    /// `any_order`, `max_recursion`, `any_depth`, `max_count`, `relax`,
    /// `rename_collisions`, `repair`, `max_states`, `max_nfa_states`, `threads`,
    /// `no_regions`, `time_limit` (seconds, 0: none; default 10) and
    /// `memory_limit` (bytes, 0: none; default 2 GiB): a compile past
    /// either raises `ValueError`; None: the flag's default. Raises `ValueError` with the
    /// compiler's message (naming the place in the list) for a list or
    /// options it cannot compile.
    #[pyo3(signature = (
        tools, *, format="react", entry=None, dialect="auto", max_tokens=None,
        vocab_size=None, max_ws=None, whitespace="free", max_depth=None, open_objects=false, any_order=None,
        max_recursion=None, any_depth=None, max_count=None, relax=false,
        rename_collisions=false, repair=false, max_states=None, max_nfa_states=None, threads=None,
        no_regions=false, time_limit=None, memory_limit=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        format: &str,
        entry: Option<&str>,
        dialect: &str,
        max_tokens: Option<i64>,
        vocab_size: Option<i64>,
        max_ws: Option<i64>,
        whitespace: &str,
        max_depth: Option<i64>,
        open_objects: bool,
        any_order: Option<i64>,
        max_recursion: Option<i64>,
        any_depth: Option<i64>,
        max_count: Option<i64>,
        relax: bool,
        rename_collisions: bool,
        repair: bool,
        max_states: Option<i64>,
        max_nfa_states: Option<i64>,
        threads: Option<i64>,
        no_regions: bool,
        time_limit: Option<f64>,
        memory_limit: Option<i64>,
    ) -> PyResult<Artifact> {
        let request = Request::new(
            py,
            tools,
            format,
            entry,
            dialect,
            max_tokens,
            vocab_size,
            max_ws,
            whitespace,
            max_depth,
            open_objects,
            any_order,
            max_recursion,
            any_depth,
            max_count,
            relax,
            rename_collisions,
            repair,
            max_states,
            max_nfa_states,
            threads,
            no_regions,
            time_limit,
            memory_limit,
        )?;
        let compiler = Arc::clone(&self.inner);
        let loaded = detached(py, "compiling", move || {
            let (set, opts) = request.load()?;
            compiler.compile(&set, &opts)
        })?;
        Ok(Artifact {
            shared: loaded.grammar,
            path: None,
        })
    }

    /// Starts compiling `tools` (the arguments as for `compile`) and
    /// returns a `Pending` at once, whose matchers serve their first masks
    /// before the artifact is there: computed on demand from the grammar,
    /// equal to the artifact's, while the rest of the compile runs on a
    /// thread of its own. Errors in the tool list or the options raise
    /// `ValueError` here, as `compile` does. `deferred=True` starts no
    /// thread: the rest of the compile runs on the first call that needs
    /// the artifact (`wait`, or a matcher whose next mask only the artifact
    /// can tell), in that caller's thread.
    #[pyo3(signature = (
        tools, *, format="react", entry=None, dialect="auto", max_tokens=None,
        vocab_size=None, max_ws=None, whitespace="free", max_depth=None, open_objects=false, any_order=None,
        max_recursion=None, any_depth=None, max_count=None, relax=false,
        rename_collisions=false, repair=false, max_states=None, max_nfa_states=None, threads=None,
        no_regions=false, time_limit=None, memory_limit=None, deferred=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        format: &str,
        entry: Option<&str>,
        dialect: &str,
        max_tokens: Option<i64>,
        vocab_size: Option<i64>,
        max_ws: Option<i64>,
        whitespace: &str,
        max_depth: Option<i64>,
        open_objects: bool,
        any_order: Option<i64>,
        max_recursion: Option<i64>,
        any_depth: Option<i64>,
        max_count: Option<i64>,
        relax: bool,
        rename_collisions: bool,
        repair: bool,
        max_states: Option<i64>,
        max_nfa_states: Option<i64>,
        threads: Option<i64>,
        no_regions: bool,
        time_limit: Option<f64>,
        memory_limit: Option<i64>,
        deferred: bool,
    ) -> PyResult<Pending> {
        let request = Request::new(
            py,
            tools,
            format,
            entry,
            dialect,
            max_tokens,
            vocab_size,
            max_ws,
            whitespace,
            max_depth,
            open_objects,
            any_order,
            max_recursion,
            any_depth,
            max_count,
            relax,
            rename_collisions,
            repair,
            max_states,
            max_nfa_states,
            threads,
            no_regions,
            time_limit,
            memory_limit,
        )?;
        let compiler = Arc::clone(&self.inner);
        let (pending, width) = detached(py, "starting a compile", move || {
            let (set, opts) = request.load()?;
            let width = opts.mask_width.unwrap_or(compiler.vocab().len() as u32);
            let pending = if deferred {
                compiler.start_deferred(&set, &opts)?
            } else {
                compiler.start(&set, &opts)?
            };
            Ok((pending, width))
        })?;
        Ok(Pending::new(pending, width as usize))
    }

    /// Bytes of reused parts and kept artifacts the compiler holds now.
    #[getter]
    fn cache_bytes(&self) -> usize {
        self.inner.cache_bytes()
    }

    /// Forgets the reused parts and the kept artifacts (artifacts handed
    /// out stay valid).
    fn clear_cache(&self, py: Python<'_>) {
        let inner = &self.inner;
        py.detach(|| inner.clear_cache());
    }

    /// SHA-256 fingerprint of the compiler's vocabulary (32 bytes): what
    /// its artifacts record, and what `tooldec.vocab_fingerprint` gives
    /// for the same tokenizer.
    #[getter]
    fn vocab_fingerprint<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.fingerprint)
    }

    /// The tokenizer's token count (the default mask width).
    #[getter]
    fn token_count(&self) -> usize {
        self.inner.vocab().len()
    }

    /// The end-of-sequence token ids.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.inner.vocab().eos.clone()
    }

    /// What the vocabulary is, as the artifacts' metadata says.
    #[getter]
    fn vocab_label(&self) -> String {
        self.inner.vocab().label.clone()
    }

    fn __repr__(&self) -> String {
        let v = self.inner.vocab();
        format!(
            "tooldec.Compiler({:?}, eos={:?}, cache_bytes={})",
            v.label,
            v.eos,
            self.inner.cache_bytes()
        )
    }
}
