//! `tooldec_compiler`: the compiler in the process, for an engine that
//! compiles the `tools` of each request. A handle holds a
//! [`Compiler`](::tooldec_compiler::Compiler) bound to one vocabulary
//! (loaded once, when the handle is created) with its cache of the parts
//! compiles share and of whole artifacts; `tooldec_compiler_compile` turns
//! a tool list into a [`tooldec_artifact`] that shares the compiled
//! grammar (nothing is copied, written to disk or compressed);
//! `tooldec_compiler_start` returns at once with a [`tooldec_pending`]
//! that serves masks before the artifact is there (`pending.rs`).
//!
//! Options come as a JSON object whose keys are `tooldec-compile`'s flags
//! with underscores (Python's `Compiler.compile` keywords): an engine in C
//! passes a string literal, and options added later need no new function
//! or struct layout.

use std::ffi::c_char;
use std::sync::Arc;

use ::tooldec_compiler::spec::ToolSet;
use ::tooldec_compiler::vocab::{is_gguf, Vocab};
use ::tooldec_compiler::{
    spec, CallFormat, Compiler, Error, ErrorKind, JsonOptions, Limits, Options, Whitespace,
};
use serde_json::Value;

use crate::artifact::{c_path, str_arg, tooldec_artifact};
use crate::message::ErrOut;
use crate::pending::tooldec_pending;
use crate::{guard, guard_with, put, slice_in, slice_out, tooldec_status};
use crate::{
    TOOLDEC_ERR_BUDGET, TOOLDEC_ERR_COMPILE, TOOLDEC_ERR_INVALID, TOOLDEC_ERR_LOAD,
    TOOLDEC_ERR_NULL, TOOLDEC_ERR_PANIC, TOOLDEC_FINGERPRINT_BYTES, TOOLDEC_OK,
};

/// The default bound on the bytes a compiler keeps (reused parts and
/// whole artifacts): 256 MiB. Pass it as `cache_bytes` when creating a
/// compiler unless the engine has a reason to choose.
pub const TOOLDEC_DEFAULT_CACHE_BYTES: usize = 268435456;

// The C constant is a literal (cbindgen writes it as is); it must stay the
// compiler's own default.
const _: () = assert!(TOOLDEC_DEFAULT_CACHE_BYTES == ::tooldec_compiler::DEFAULT_CACHE_BYTES);

/// A compiler bound to one tokenizer's vocabulary. Opaque.
///
/// Thread-safe: every function that takes a `const tooldec_compiler *`
/// (compiling, the cache, the queries) may run on any number of threads at
/// once; compiles run in parallel and share the cache. Free it once, when
/// no other thread uses it; the artifacts it made stay valid.
pub struct tooldec_compiler {
    /// Shared with the compiles it started (`tooldec_compiler_start`),
    /// which outlive the handle.
    pub(crate) inner: Arc<Compiler>,
    pub(crate) fingerprint: [u8; TOOLDEC_FINGERPRINT_BYTES],
}

/// Borrows a handle the C caller passed.
///
/// # Safety
/// `c` is NULL or a live handle from this library.
unsafe fn compiler_ref<'a>(c: *const tooldec_compiler) -> Option<&'a tooldec_compiler> {
    // SAFETY: NULL or a live, aligned handle (the contract above); handles
    // are only read through shared references (the compiler's caches lock
    // inside).
    unsafe { c.as_ref() }
}

/// The caller's end-of-sequence tokens (`eos`, `n_eos`) as strings, or the
/// status and message for a NULL or non-UTF-8 one.
///
/// # Safety
/// `eos` is NULL or holds `n_eos` pointers, each NULL or NUL-terminated.
unsafe fn eos_arg(
    eos: *const *const c_char,
    n_eos: usize,
) -> Result<Vec<String>, (tooldec_status, String)> {
    // SAFETY: `eos` holds `n_eos` pointers (the caller's contract).
    let ptrs = unsafe { slice_in(eos, n_eos) }.map_err(|s| {
        let why = match s {
            TOOLDEC_ERR_NULL => format!("eos is NULL but n_eos is {n_eos}"),
            _ => format!("n_eos {n_eos} is too large"),
        };
        (s, why)
    })?;
    ptrs.iter()
        .enumerate()
        .map(|(i, &p)| {
            // SAFETY: NULL or NUL-terminated (the caller's contract).
            match unsafe { str_arg(p) } {
                Ok(s) => Ok(s.to_owned()),
                Err(TOOLDEC_ERR_NULL) => Err((TOOLDEC_ERR_NULL, format!("eos[{i}] is NULL"))),
                Err(s) => Err((s, format!("eos[{i}] is not UTF-8"))),
            }
        })
        .collect()
}

/// Why a constructor's vocabulary did not load.
enum LoadError {
    /// The compiler's error (the file, the tokenizer): `TOOLDEC_ERR_LOAD`.
    Vocab(Error),
    /// An argument: its status and message.
    Arg(tooldec_status, String),
}

impl From<Error> for LoadError {
    fn from(e: Error) -> LoadError {
        LoadError::Vocab(e)
    }
}

/// What the three constructors share: checks `out`, reads `eos`, loads
/// the vocabulary with `load` (panics caught) and stores the handle.
///
/// # Safety
/// As the public constructors document for `eos`, `n_eos` and `out`.
unsafe fn create(
    eos: *const *const c_char,
    n_eos: usize,
    cache_bytes: usize,
    out: *mut *mut tooldec_compiler,
    err: ErrOut,
    load: impl FnOnce(&[String]) -> Result<Vocab, LoadError>,
) -> tooldec_status {
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    // SAFETY: the caller's contract for `eos`.
    let eos = match unsafe { eos_arg(eos, n_eos) } {
        Ok(e) => e,
        Err((s, m)) => return err.fail(s, format_args!("{m}")),
    };
    guard_with(
        || match load(&eos) {
            Ok(vocab) => {
                let fingerprint = vocab.fingerprint();
                let inner = Arc::new(Compiler::with_cache_bytes(vocab, cache_bytes));
                let handle = Box::into_raw(Box::new(tooldec_compiler { inner, fingerprint }));
                // SAFETY: checked non-NULL above, writable by the contract.
                unsafe { out.write(handle) };
                TOOLDEC_OK
            }
            Err(LoadError::Vocab(e)) => err.fail(TOOLDEC_ERR_LOAD, format_args!("{e}")),
            Err(LoadError::Arg(s, m)) => err.fail(s, format_args!("{m}")),
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Creates a compiler for the tokenizer in the file at `tokenizer_path`:
/// a Hugging Face `tokenizer.json`, or a GGUF model file (recognized by
/// its magic bytes; its `tokenizer.ggml.*` metadata), as
/// `tooldec-compile --tokenizer` reads them.
///
/// `eos`, `n_eos`: the end-of-sequence tokens, as `--eos` takes them
/// (token strings, or ids in decimal digits), NUL-terminated; NULL / 0 for
/// the default: the `eos_token` of the `tokenizer_config.json` beside a
/// `tokenizer.json`, or a GGUF file's eos, eot and eom ids.
/// `cache_bytes`: the bound on the bytes of reused parts and kept
/// artifacts (`TOOLDEC_DEFAULT_CACHE_BYTES`; 0 keeps nothing).
///
/// On success stores a new handle in `*out` (free it with
/// `tooldec_compiler_free`); on failure stores NULL and returns
/// `TOOLDEC_ERR_LOAD` (the tokenizer cannot be read or used: the message
/// names the file and the reason), `TOOLDEC_ERR_NULL` or
/// `TOOLDEC_ERR_INVALID` (an argument), with the message in `err`
/// (`err_len` bytes, NUL-terminated, truncated to fit; `err` may be NULL).
///
/// Loading a large tokenizer takes a while (its token trie is built
/// here, once): create one compiler per tokenizer and keep it.
///
/// Thread safety: any thread; `out` and `err` belong to the call.
///
/// # Safety
/// `tokenizer_path` is NULL or NUL-terminated; `eos` is NULL or holds
/// `n_eos` NUL-terminated strings; `out` is NULL or valid for a write;
/// `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_open(
    tokenizer_path: *const c_char,
    eos: *const *const c_char,
    n_eos: usize,
    cache_bytes: usize,
    out: *mut *mut tooldec_compiler,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if tokenizer_path.is_null() {
        // SAFETY: `out` is NULL or writable (the caller's contract).
        unsafe { put(out, std::ptr::null_mut()) };
        return err.fail(TOOLDEC_ERR_NULL, format_args!("tokenizer_path is NULL"));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's contract).
    let path = c_path(unsafe { std::ffi::CStr::from_ptr(tokenizer_path) });
    // SAFETY: the caller's contract for `eos`, `out`.
    unsafe {
        create(eos, n_eos, cache_bytes, out, err, |eos| {
            Ok(if is_gguf(&path) {
                Vocab::from_gguf(&path, eos)?
            } else {
                Vocab::from_tokenizer_json(&path, eos)?
            })
        })
    }
}

/// Creates a compiler for a tokenizer given as the text of its
/// `tokenizer.json` (`json`, `json_len` bytes of UTF-8, not necessarily
/// NUL-terminated: what an engine's loaded tokenizer serializes to).
///
/// `name`: what the tokenizer is called in messages and in the artifacts'
/// metadata (NUL-terminated; NULL: `"tokenizer.json"`). `eos`, `n_eos`:
/// the end-of-sequence tokens, as for `tooldec_compiler_open`, at least
/// one: there is no `tokenizer_config.json` beside a text to read it from
/// (`TOOLDEC_ERR_INVALID` without). `cache_bytes`, results and errors as
/// `tooldec_compiler_open`.
///
/// Thread safety: any thread; `out` and `err` belong to the call.
///
/// # Safety
/// `json` holds `json_len` readable bytes; `name` is NULL or
/// NUL-terminated; `eos` is NULL or holds `n_eos` NUL-terminated strings;
/// `out` is NULL or valid for a write; `err` is NULL or holds `err_len`
/// writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tooldec_compiler_from_tokenizer_json(
    json: *const c_char,
    json_len: usize,
    name: *const c_char,
    eos: *const *const c_char,
    n_eos: usize,
    cache_bytes: usize,
    out: *mut *mut tooldec_compiler,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `json` holds `json_len` bytes, `name` is NULL or
    // NUL-terminated (the caller's contract).
    let args = unsafe { text_arg("json", json, json_len) }.and_then(|text| {
        let name = if name.is_null() {
            "tokenizer.json"
        } else {
            // SAFETY: non-NULL and NUL-terminated (the caller's contract).
            unsafe { str_arg(name) }.map_err(|s| (s, "name is not UTF-8".to_string()))?
        };
        Ok((text, name))
    });
    let (text, name) = match args {
        Ok(a) => a,
        Err((s, m)) => {
            // SAFETY: `out` is NULL or writable (the caller's contract).
            unsafe { put(out, std::ptr::null_mut()) };
            return err.fail(s, format_args!("{m}"));
        }
    };
    // SAFETY: the caller's contract for `eos`, `out`.
    unsafe {
        create(eos, n_eos, cache_bytes, out, err, |eos| {
            if eos.is_empty() {
                return Err(LoadError::Arg(
                    TOOLDEC_ERR_INVALID,
                    format!(
                        "{name}: no end-of-sequence token given: a tokenizer.json text has no \
                         tokenizer_config.json beside it to name one; pass eos (n_eos > 0)"
                    ),
                ));
            }
            Ok(Vocab::from_tokenizer_json_text(text, name, eos)?)
        })
    }
}

/// Creates a compiler for the built-in GPT-2 vocabulary (`r50k_base`,
/// EOS `<|endoftext|>` unless `eos` names others), as `tooldec-compile`
/// without `--tokenizer`: nothing to read. `eos`, `cache_bytes`, results
/// and errors as `tooldec_compiler_open`.
///
/// Thread safety: any thread; `out` and `err` belong to the call.
///
/// # Safety
/// `eos` is NULL or holds `n_eos` NUL-terminated strings; `out` is NULL or
/// valid for a write; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_gpt2(
    eos: *const *const c_char,
    n_eos: usize,
    cache_bytes: usize,
    out: *mut *mut tooldec_compiler,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: the caller's contract for `eos`, `out`.
    unsafe {
        create(eos, n_eos, cache_bytes, out, err, |eos| {
            Ok(builtin_gpt2(eos)?)
        })
    }
}

/// The built-in GPT-2 vocabulary, its EOS replaced by `eos` when given (as
/// `tooldec-compile` without `--tokenizer` does).
fn builtin_gpt2(eos: &[String]) -> Result<Vocab, Error> {
    let v = Vocab::builtin_gpt2()?;
    if eos.is_empty() {
        return Ok(v);
    }
    let ids = eos
        .iter()
        .map(|e| v.resolve(e))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::new(ErrorKind::Vocab, format!("{}: {e}", v.label)))?;
    Vocab::from_tokens(v.tokens, ids, &v.label)
}

/// Frees a compiler handle (NULL: nothing). The artifacts it compiled stay
/// valid: each holds its own reference to its grammar; so do the compiles
/// it started (`tooldec_pending`), which finish.
///
/// Thread safety: once per handle, when no other thread uses it.
///
/// # Safety
/// `c` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_free(c: *mut tooldec_compiler) {
    if !c.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(c) };
        guard((), move || drop(handle));
    }
}

/// A caller's text argument (`p`, `len` bytes) as UTF-8, or the status and
/// a message naming `what`.
///
/// # Safety
/// `p` is NULL or holds `len` readable bytes that outlive `'a`.
unsafe fn text_arg<'a>(
    what: &str,
    p: *const c_char,
    len: usize,
) -> Result<&'a str, (tooldec_status, String)> {
    if p.is_null() {
        return Err((TOOLDEC_ERR_NULL, format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, `len` readable bytes (the caller's contract).
    let bytes = unsafe { slice_in(p.cast::<u8>(), len) }
        .map_err(|s| (s, format!("{what}: a length of {len} bytes is too large")))?;
    std::str::from_utf8(bytes).map_err(|e| {
        (
            TOOLDEC_ERR_INVALID,
            format!("{what} is not UTF-8 (at byte {})", e.valid_up_to()),
        )
    })
}

/// Compiles the tool list `tools` (`tools_len` bytes of UTF-8, not
/// necessarily NUL-terminated) into an artifact, as `tooldec-compile`
/// would with the same flags, and stores a new artifact handle in `*out`:
/// it serves every `tooldec_artifact_*` and `tooldec_matcher_*` function
/// and is freed with `tooldec_artifact_free`; it shares the compiled
/// grammar with the compiler's cache and outlives the compiler. The same
/// tool list with the same options again is served from the kept artifact
/// without compiling.
///
/// `tools`: anything `tooldec-compile` reads (an OpenAI `tools` list,
/// Anthropic or MCP tools, BFCL, ToolBench, OpenAPI 3, a signature list),
/// named `tools` in messages (`tools:LINE:COLUMN (at /json/pointer)`).
///
/// `options`: NULL (or `""`) for the defaults, or a NUL-terminated JSON
/// object whose keys are `tooldec-compile`'s flags with underscores, each
/// `null` for the flag's default:
///
/// | key | JSON type | flag, default |
/// |---|---|---|
/// | `format` | string | `--format`: a shipped format or a `.tdg` path; `"react"` |
/// | `entry` | string | `--entry`: keep only this entry rule; all |
/// | `dialect` | string | `--dialect`; `"auto"` |
/// | `max_tokens` | integer >= 1 | `--max-tokens`: the default budget; none |
/// | `vocab_size` | integer | `--vocab-size`: the mask width (the model's logits size); the tokenizer's token count |
/// | `max_ws`, `max_depth`, `any_order`, `max_recursion`, `any_depth`, `max_count` | integer | as the flags |
/// | `whitespace` | string | `--whitespace`: `"free"` or `"dumps"`; `"free"` |
/// | `open_objects`, `relax`, `rename_collisions`, `repair`, `no_regions` | boolean | as the flags; false |
/// | `max_states`, `max_nfa_states`, `threads` | integer | as the flags (`threads` 0: all cores) |
/// | `time_limit` | number of seconds, 0: none | `--time-limit`; 10 (a compile past it fails with `TOOLDEC_ERR_COMPILE`) |
/// | `memory_limit` | integer bytes, 0: none | `--memory-limit`; 2 GiB |
///
/// for example `{"format": "hermes", "max_tokens": 256, "vocab_size":
/// 151936}`. A key that is not one of these, or a value of another type,
/// is `TOOLDEC_ERR_INVALID` with a message naming it. The flags that only
/// concern files (`-o`, `--tokenizer`, `--eos`, `--uncompressed`,
/// `--zstd-level`, `--quiet`) have no key: the vocabulary is the
/// compiler's, and nothing is written.
///
/// On failure stores NULL and returns `TOOLDEC_ERR_COMPILE` (the compiler
/// refused the tool list: the message names the place), `TOOLDEC_ERR_BUDGET`
/// (`max_tokens` is below the shortest complete output),
/// `TOOLDEC_ERR_INVALID` (options, or text that is not UTF-8) or
/// `TOOLDEC_ERR_NULL`, with the message in `err` (`err_len` bytes,
/// NUL-terminated, truncated to fit; `err` may be NULL).
///
/// Thread safety: any number of threads at once on one compiler; `out`
/// and `err` belong to the call.
///
/// # Safety
/// `c` is NULL or a live handle; `tools` holds `tools_len` readable bytes;
/// `options` is NULL or NUL-terminated; `out` is NULL or valid for a
/// write; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_compile(
    c: *const tooldec_compiler,
    tools: *const c_char,
    tools_len: usize,
    options: *const c_char,
    out: *mut *mut tooldec_artifact,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract, which `run_compile` shares.
    unsafe {
        run_compile(
            c,
            tools,
            tools_len,
            options,
            out,
            err,
            err_len,
            |c, set, opts| Ok(tooldec_artifact::new(c.inner.compile(set, opts)?.grammar)),
        )
    }
}

/// Starts compiling the tool list `tools` and stores at once a handle
/// that serves it before its artifact is there: the arguments, the
/// options, the statuses and the errors in the tool list are
/// `tooldec_compiler_compile`'s (lowering the grammar runs here; what
/// fails later, the DFA state bound included, comes from
/// `tooldec_pending_wait` or a pending matcher). The rest of the compile
/// (determinizing, minimizing, every mask, writing) runs on a thread of
/// its own. Matchers from
/// `tooldec_pending_matcher_new` serve masks computed on demand from the
/// grammar, equal to the artifact's, until it is there, then the
/// artifact's; `tooldec_pending_wait` gives the artifact, the one
/// `tooldec_compiler_compile` gives (and the compiler keeps it, as
/// compiling does). A tool list kept from before is ready at once.
///
/// Free the handle with `tooldec_pending_free`; it outlives the compiler.
///
/// Thread safety: as `tooldec_compiler_compile`.
///
/// # Safety
/// As `tooldec_compiler_compile`.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_start(
    c: *const tooldec_compiler,
    tools: *const c_char,
    tools_len: usize,
    options: *const c_char,
    out: *mut *mut tooldec_pending,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract, which `run_compile` shares.
    unsafe {
        run_compile(
            c,
            tools,
            tools_len,
            options,
            out,
            err,
            err_len,
            |c, set, opts| Ok(tooldec_pending::new(c.inner.start(set, opts)?, c, opts)),
        )
    }
}

/// `tooldec_compiler_start` without a thread: the rest of the compile runs
/// on the first call that needs the artifact (`tooldec_pending_wait`, or a
/// pending matcher whose next answer only the artifact has), on that
/// caller's thread; until then every mask is computed on demand. For
/// callers that start no threads.
///
/// Thread safety: as `tooldec_compiler_compile`.
///
/// # Safety
/// As `tooldec_compiler_compile`.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_start_deferred(
    c: *const tooldec_compiler,
    tools: *const c_char,
    tools_len: usize,
    options: *const c_char,
    out: *mut *mut tooldec_pending,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract, which `run_compile` shares.
    unsafe {
        run_compile(
            c,
            tools,
            tools_len,
            options,
            out,
            err,
            err_len,
            |c, set, opts| {
                Ok(tooldec_pending::new(
                    c.inner.start_deferred(set, opts)?,
                    c,
                    opts,
                ))
            },
        )
    }
}

/// What compiling and starting share: checks the arguments, reads the
/// options and the tool list, runs `make` (panics caught) and stores the
/// handle it makes in `*out`, or NULL and the status and message.
///
/// # Safety
/// As `tooldec_compiler_compile` documents its arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn run_compile<T>(
    c: *const tooldec_compiler,
    tools: *const c_char,
    tools_len: usize,
    options: *const c_char,
    out: *mut *mut T,
    err: *mut c_char,
    err_len: usize,
    make: impl FnOnce(&tooldec_compiler, &ToolSet, &Options) -> Result<T, Error>,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    // SAFETY: NULL or a live handle (the caller's contract).
    let Some(compiler) = (unsafe { compiler_ref(c) }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("compiler is NULL"));
    };
    // SAFETY: `tools` holds `tools_len` bytes (the caller's contract).
    let text = match unsafe { text_arg("tools", tools, tools_len) } {
        Ok(t) => t,
        Err((s, m)) => return err.fail(s, format_args!("{m}")),
    };
    let options = if options.is_null() {
        ""
    } else {
        // SAFETY: non-NULL and NUL-terminated (the caller's contract).
        match unsafe { str_arg(options) } {
            Ok(o) => o,
            Err(s) => return err.fail(s, format_args!("options is not UTF-8")),
        }
    };
    guard_with(
        || {
            let flags = match Flags::parse(options) {
                Ok(f) => f,
                Err(m) => return err.fail(TOOLDEC_ERR_INVALID, format_args!("options: {m}")),
            };
            let made = flags
                .prepare(text)
                .and_then(|(set, opts)| make(compiler, &set, &opts));
            match made {
                Ok(handle) => {
                    let handle = Box::into_raw(Box::new(handle));
                    // SAFETY: checked non-NULL above, writable by the
                    // caller's contract.
                    unsafe { out.write(handle) };
                    TOOLDEC_OK
                }
                Err(e) => err.fail(compile_status(&e), format_args!("{e}")),
            }
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// The status of a compile's error.
pub(crate) fn compile_status(e: &Error) -> tooldec_status {
    match e.kind() {
        // What the CLI exits 2 for: an option's value.
        ErrorKind::Usage => TOOLDEC_ERR_INVALID,
        ErrorKind::Budget => TOOLDEC_ERR_BUDGET,
        _ => TOOLDEC_ERR_COMPILE,
    }
}

/// The options of one compile, as `tooldec-compile`'s flags: what the
/// options JSON says, the flag's default elsewhere.
struct Flags {
    format: String,
    entry: Option<String>,
    dialect: String,
    rename_collisions: bool,
    repair: bool,
    json: JsonOptions,
    max_states: usize,
    max_nfa_states: usize,
    vocab_size: Option<u32>,
    threads: usize,
    max_tokens: Option<u32>,
    no_regions: bool,
    limits: Limits,
}

/// Every key the options JSON takes, for the message about one it does
/// not.
const KEYS: &[&str] = &[
    "format",
    "entry",
    "dialect",
    "max_tokens",
    "vocab_size",
    "max_ws",
    "whitespace",
    "max_depth",
    "open_objects",
    "any_order",
    "max_recursion",
    "any_depth",
    "max_count",
    "relax",
    "rename_collisions",
    "repair",
    "max_states",
    "max_nfa_states",
    "threads",
    "no_regions",
    "time_limit",
    "memory_limit",
];

impl Flags {
    /// Reads the options JSON (empty: the defaults). The message names
    /// the key, or the line and column of a JSON error.
    fn parse(text: &str) -> Result<Flags, String> {
        let o = Options::default();
        let mut f = Flags {
            format: "react".to_string(),
            entry: None,
            dialect: "auto".to_string(),
            rename_collisions: false,
            repair: false,
            json: JsonOptions::default(),
            max_states: o.max_states,
            max_nfa_states: o.max_nfa_states,
            vocab_size: None,
            threads: o.threads,
            max_tokens: None,
            no_regions: false,
            limits: Limits::engine(),
        };
        if text.trim().is_empty() {
            return Ok(f);
        }
        let value: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
        let Value::Object(map) = value else {
            return Err(format!(
                "expected a JSON object of flags ({{\"format\": \"hermes\", ...}}), got {}",
                kind(&value)
            ));
        };
        for (key, v) in &map {
            if v.is_null() {
                // The flag's default, as Python's None.
                if !KEYS.contains(&key.as_str()) {
                    return Err(unknown(key));
                }
                continue;
            }
            let j = &mut f.json;
            match key.as_str() {
                "format" => f.format = string(key, v)?,
                "entry" => f.entry = Some(string(key, v)?),
                "dialect" => f.dialect = string(key, v)?,
                "max_tokens" => {
                    let n: u32 = count(key, v)?;
                    if n == 0 {
                        return Err(
                            "\"max_tokens\" must be at least 1 (null: no default budget), got 0"
                                .to_string(),
                        );
                    }
                    f.max_tokens = Some(n);
                }
                "vocab_size" => f.vocab_size = Some(count(key, v)?),
                "max_ws" => j.max_ws = count(key, v)?,
                "whitespace" => {
                    let w = string(key, v)?;
                    j.whitespace = Whitespace::parse(&w).ok_or_else(|| {
                        format!("\"whitespace\": {w:?}: expected \"free\" or \"dumps\"")
                    })?;
                }
                "max_depth" => j.max_depth = count(key, v)?,
                "open_objects" => j.open_objects = boolean(key, v)?,
                "any_order" => j.any_order = count(key, v)?,
                "max_recursion" => j.max_recursion = count(key, v)?,
                "any_depth" => j.any_depth = count(key, v)?,
                "max_count" => j.max_count = count(key, v)?,
                "relax" => j.relax = boolean(key, v)?,
                "rename_collisions" => f.rename_collisions = boolean(key, v)?,
                "repair" => f.repair = boolean(key, v)?,
                "max_states" => f.max_states = count(key, v)?,
                "max_nfa_states" => f.max_nfa_states = count(key, v)?,
                "threads" => f.threads = count(key, v)?,
                "no_regions" => f.no_regions = boolean(key, v)?,
                "time_limit" => f.limits.time = seconds(key, v)?,
                "memory_limit" => {
                    let n: usize = count(key, v)?;
                    f.limits.memory = (n > 0).then_some(n);
                }
                _ => return Err(unknown(key)),
            }
        }
        Ok(f)
    }

    /// Loads the format and parses the tool list: what a compile takes,
    /// as `tooldec-compile` maps its flags.
    fn prepare(self, tools: &str) -> Result<(ToolSet, Options), Error> {
        let format = match &self.entry {
            Some(entry) => CallFormat::load(&self.format)?.only_entry(entry)?,
            None => CallFormat::load(&self.format)?,
        };
        let parse = spec::ParseOptions {
            dialect: self.dialect.parse()?,
            collisions: if self.rename_collisions {
                spec::Collisions::Rename
            } else {
                spec::Collisions::Error
            },
            repair: self.repair,
        };
        let opts = Options {
            format,
            json: self.json,
            max_states: self.max_states,
            max_nfa_states: self.max_nfa_states,
            mask_width: self.vocab_size,
            // In memory: the compiler writes the raw payload.
            zstd_level: None,
            threads: self.threads,
            max_tokens: self.max_tokens,
            regions: !self.no_regions,
            limits: self.limits,
            stop_entries: true,
        };
        Ok((spec::parse_with("tools", tools, &parse)?, opts))
    }
}

fn unknown(key: &str) -> String {
    let hint = if KEYS.contains(&key.replace('-', "_").as_str()) {
        format!(" (did you mean \"{}\"?)", key.replace('-', "_"))
    } else {
        String::new()
    };
    format!(
        "unknown key \"{key}\"{hint}; the keys are tooldec-compile's flags with underscores: {}",
        KEYS.join(", ")
    )
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn string(key: &str, v: &Value) -> Result<String, String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("\"{key}\" must be a string, got {}", kind(v)))
}

fn boolean(key: &str, v: &Value) -> Result<bool, String> {
    v.as_bool()
        .ok_or_else(|| format!("\"{key}\" must be true or false, got {}", kind(v)))
}

/// A time limit in seconds; 0 for none.
fn seconds(key: &str, v: &Value) -> Result<Option<std::time::Duration>, String> {
    match v.as_f64() {
        Some(0.0) => Ok(None),
        Some(s) if s > 0.0 && s <= 1e9 => Ok(Some(std::time::Duration::from_secs_f64(s))),
        _ => Err(format!("\"{key}\" must be seconds (0: no limit), got {v}")),
    }
}

/// A non-negative integer that fits the flag's type (`T`: an unsigned
/// integer of at most 64 bits).
fn count<T: TryFrom<u64>>(key: &str, v: &Value) -> Result<T, String> {
    let n = v
        .as_u64()
        .ok_or_else(|| format!("\"{key}\" must be a non-negative whole number, got {v}"))?;
    T::try_from(n).map_err(|_| {
        let bits = 8 * std::mem::size_of::<T>() as u32;
        let max = u64::MAX >> (64 - bits.min(64));
        format!("\"{key}\" must be at most {max}, got {n}")
    })
}

/// Runs a query on a handle; `fallback` for NULL (or a caught panic).
fn query<T>(c: *const tooldec_compiler, fallback: T, f: impl FnOnce(&tooldec_compiler) -> T) -> T {
    // SAFETY: every public function documents `c` as NULL or a live handle.
    match unsafe { compiler_ref(c) } {
        Some(c) => guard(fallback, || f(c)),
        None => fallback,
    }
}

/// Bytes of reused parts and kept artifacts the compiler holds now (at
/// most about the `cache_bytes` it was created with). 0 for NULL.
///
/// Thread safety: any threads at once.
///
/// # Safety
/// `c` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_cache_bytes(c: *const tooldec_compiler) -> usize {
    query(c, 0, |c| c.inner.cache_bytes())
}

/// Forgets the reused parts and the kept artifacts (the token trie, which
/// depends on the vocabulary alone, stays); artifacts handed out stay
/// valid. NULL: nothing.
///
/// Thread safety: any threads at once, compiles included (a compile
/// running meanwhile may keep what it builds).
///
/// # Safety
/// `c` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_clear_cache(c: *const tooldec_compiler) {
    query(c, (), |c| c.inner.clear_cache())
}

/// The tokenizer's number of tokens: the mask width of the artifacts
/// compiled without `vocab_size`. 0 for NULL.
///
/// Thread safety: any threads at once.
///
/// # Safety
/// `c` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_token_count(c: *const tooldec_compiler) -> usize {
    query(c, 0, |c| c.inner.vocab().len())
}

/// The end-of-sequence token ids of the compiler's vocabulary: returns a
/// pointer to them and stores their number in `*n`. The array lives as
/// long as the handle. NULL (and `*n` = 0) for a NULL handle.
///
/// Thread safety: any threads at once.
///
/// # Safety
/// `c` is NULL or a live handle; `n` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_eos_tokens(
    c: *const tooldec_compiler,
    n: *mut usize,
) -> *const u32 {
    let (ptr, len) = query(c, (std::ptr::null(), 0), |c| {
        let eos = &c.inner.vocab().eos;
        (eos.as_ptr(), eos.len())
    });
    // SAFETY: `n` is NULL or writable (the contract above).
    unsafe { put(n, len) };
    ptr
}

/// Copies the SHA-256 fingerprint of the compiler's vocabulary into `out`
/// (`TOOLDEC_FINGERPRINT_BYTES` = 32 bytes): what its artifacts record
/// (`tooldec_artifact_vocab_fingerprint`), and what an engine compares
/// with its own tokenizer's (`tooldec_fingerprint_*`).
///
/// Thread safety: any threads at once.
///
/// # Safety
/// `c` is NULL or a live handle; `out` is NULL or holds 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_compiler_vocab_fingerprint(
    c: *const tooldec_compiler,
    out: *mut u8,
) -> tooldec_status {
    if c.is_null() || out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    query(c, TOOLDEC_ERR_PANIC, |c| {
        // SAFETY: non-NULL, 32 writable bytes (the contract above).
        match unsafe { slice_out(out, TOOLDEC_FINGERPRINT_BYTES) } {
            Ok(dst) => {
                dst.copy_from_slice(&c.fingerprint);
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_like_the_flags() {
        let f = Flags::parse("").unwrap();
        assert_eq!((f.format.as_str(), f.dialect.as_str()), ("react", "auto"));
        assert_eq!((f.max_tokens, f.vocab_size, f.entry), (None, None, None));
        let f = Flags::parse(
            r#"{"format": "hermes", "entry": "call", "max_tokens": 96, "vocab_size": 50304,
                "max_ws": 1, "open_objects": true, "relax": null, "no_regions": true,
                "whitespace": "dumps"}"#,
        )
        .unwrap();
        assert_eq!(f.format, "hermes");
        assert_eq!(f.entry.as_deref(), Some("call"));
        assert_eq!((f.max_tokens, f.vocab_size), (Some(96), Some(50304)));
        assert_eq!(f.json.max_ws, 1);
        assert_eq!(f.json.whitespace, Whitespace::Dumps);
        assert!(f.json.open_objects && !f.json.relax && f.no_regions);
    }

    #[test]
    fn bad_options_name_the_key() {
        let err = |text: &str| Flags::parse(text).err().expect("an error");
        assert!(err(r#"{"max-tokens": 3}"#).contains("did you mean \"max_tokens\""));
        assert!(err(r#"{"nope": null}"#).contains("unknown key \"nope\""));
        assert!(err(r#"{"max_tokens": 0}"#).contains("at least 1"));
        assert!(err(r#"{"whitespace": "tight"}"#).contains("expected \"free\" or \"dumps\""));
        assert!(err(r#"{"max_tokens": -3}"#)
            .contains("\"max_tokens\" must be a non-negative whole number, got -3"));
        assert!(err(r#"{"max_tokens": 4294967296}"#).contains("must be at most 4294967295"));
        assert!(err(r#"{"vocab_size": 1.5}"#).contains("\"vocab_size\""));
        assert!(err(r#"{"relax": 1}"#).contains("\"relax\" must be true or false, got a number"));
        assert!(err(r#"{"format": 3}"#).contains("\"format\" must be a string"));
        assert!(err(r#"["hermes"]"#).contains("expected a JSON object"));
        assert!(err(r#"{"format": "hermes",}"#).contains("invalid JSON"));
        assert!(err(r#"{"format": "hermes",}"#).contains("line 1 column"));
    }
}
