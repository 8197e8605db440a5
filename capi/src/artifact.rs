//! `tooldec_artifact`: loading and the read-only queries.

use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;

use tooldec_runtime::{Grammar, SharedGrammar};

use crate::message::ErrOut;
use crate::{guard, guard_with, put, slice_in, slice_out, tooldec_status, TOOLDEC_NO_BUDGET};
use crate::{
    TOOLDEC_ERR_INVALID, TOOLDEC_ERR_LOAD, TOOLDEC_ERR_NULL, TOOLDEC_ERR_PANIC,
    TOOLDEC_ERR_VOCABULARY, TOOLDEC_FINGERPRINT_BYTES, TOOLDEC_OK,
};

/// A loaded, validated artifact. Opaque.
///
/// Read-only once loaded: every function that takes a
/// `const tooldec_artifact *` may run on any number of threads at once,
/// including `tooldec_matcher_new`. Free it
/// once, when no other thread uses this handle; matchers created from it
/// hold their own reference and stay valid.
pub struct tooldec_artifact {
    pub(crate) shared: SharedGrammar,
    /// The metadata JSON, NUL-terminated.
    meta: CString,
    /// The entry point names, NUL-terminated, default first.
    entries: Vec<CString>,
    /// What reading calls back needs, built on first use (`read.rs`).
    pub(crate) reader: std::sync::OnceLock<Result<tooldec_read::Reader, tooldec_read::ReadError>>,
}

impl tooldec_artifact {
    /// A handle for a loaded grammar (from a file, a buffer or the
    /// compiler: the grammar is shared, not copied).
    pub(crate) fn new(shared: SharedGrammar) -> tooldec_artifact {
        let g = shared.grammar();
        let meta = c_string(g.metadata());
        let entries = g.entries().map(|(name, _)| c_string(name)).collect();
        tooldec_artifact {
            shared,
            meta,
            entries,
            reader: std::sync::OnceLock::new(),
        }
    }

    pub(crate) fn grammar(&self) -> Grammar<'_> {
        self.shared.grammar()
    }
}

/// `s` up to its first NUL (metadata is JSON and entry names are
/// identifiers: neither has one).
fn c_string(s: &str) -> CString {
    let end = s.find('\0').unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

/// Borrows a handle the C caller passed.
///
/// # Safety
/// `a` is NULL or a live handle from this library.
pub(crate) unsafe fn artifact_ref<'a>(a: *const tooldec_artifact) -> Option<&'a tooldec_artifact> {
    // SAFETY: NULL or a live, properly aligned handle (the contract above);
    // handles are only read through shared references.
    unsafe { a.as_ref() }
}

fn finish_load(
    loaded: Result<SharedGrammar, tooldec_runtime::Error>,
    what: &dyn std::fmt::Display,
    out: *mut *mut tooldec_artifact,
    err: ErrOut,
) -> tooldec_status {
    match loaded {
        Ok(shared) => {
            let handle = Box::into_raw(Box::new(tooldec_artifact::new(shared)));
            // SAFETY: `out` was checked non-NULL by the caller of this helper
            // and is writable by the C caller's contract.
            unsafe { out.write(handle) };
            TOOLDEC_OK
        }
        Err(e) => err.fail(TOOLDEC_ERR_LOAD, format_args!("{what}: {e}")),
    }
}

/// Reads, decompresses and validates the artifact (`.tdm`) at `path`.
///
/// On success stores a new handle in `*out` (free it with
/// `tooldec_artifact_free`); on failure stores NULL, returns
/// `TOOLDEC_ERR_LOAD` (or `TOOLDEC_ERR_NULL`) and writes a message naming
/// the path and the reason into `err` (`err_len` bytes, NUL-terminated,
/// truncated to fit; `err` may be NULL).
///
/// Thread safety: any thread; `out` and `err` belong to the call.
///
/// # Safety
/// `path` is a NUL-terminated string; `out` is valid for a write; `err`
/// is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_open(
    path: *const c_char,
    out: *mut *mut tooldec_artifact,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    if path.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("path is NULL"));
    }
    guard_with(
        || {
            // SAFETY: non-NULL and NUL-terminated (the caller's contract).
            let path = unsafe { CStr::from_ptr(path) };
            let path = c_path(path);
            let loaded = SharedGrammar::open(&path);
            finish_load(loaded, &path.display(), out, err)
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

#[cfg(unix)]
pub(crate) fn c_path(path: &CStr) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(path.to_bytes()))
}

#[cfg(not(unix))]
pub(crate) fn c_path(path: &CStr) -> PathBuf {
    PathBuf::from(path.to_string_lossy().into_owned())
}

/// Loads an artifact held in memory: the bytes of a `.tdm` file
/// (zstd-compressed) or a raw payload (`--uncompressed`). The bytes are
/// copied; the buffer may be freed after the call.
///
/// Results and errors as `tooldec_artifact_open`.
///
/// Thread safety: any thread.
///
/// # Safety
/// `data` holds `len` readable bytes; `out` is valid for a write; `err`
/// is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_from_buffer(
    data: *const u8,
    len: usize,
    out: *mut *mut tooldec_artifact,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    // SAFETY: `data` holds `len` bytes (the caller's contract).
    let bytes = match unsafe { slice_in(data, len) } {
        Ok(b) => b,
        Err(s) => return err.fail(s, format_args!("data is NULL or len is too large")),
    };
    guard_with(
        || {
            let loaded = SharedGrammar::from_bytes(bytes);
            finish_load(loaded, &format_args!("buffer of {len} bytes"), out, err)
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Frees an artifact handle (NULL: nothing). Matchers created from it stay
/// valid: each holds its own reference to the loaded artifact, which is
/// released with the last of them.
///
/// Thread safety: once per handle, when no other thread uses this handle.
///
/// # Safety
/// `a` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_free(a: *mut tooldec_artifact) {
    if !a.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(a) };
        guard((), move || drop(handle));
    }
}

/// Runs a query on a handle; `fallback` for NULL (or a caught panic).
fn query<T>(a: *const tooldec_artifact, fallback: T, f: impl FnOnce(&tooldec_artifact) -> T) -> T {
    // SAFETY: every public function documents `a` as NULL or a live handle.
    match unsafe { artifact_ref(a) } {
        Some(a) => guard(fallback, || f(a)),
        None => fallback,
    }
}

/// The mask width in tokens: the model's logits size the artifact was
/// compiled for (`--vocab-size`, else the tokenizer's size). 0 for NULL.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_mask_width(a: *const tooldec_artifact) -> usize {
    query(a, 0, |a| a.grammar().mask_width())
}

/// `ceil(mask_width / 32)`: the fewest `uint32_t` words a mask buffer
/// needs. 0 for NULL.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_mask_words(a: *const tooldec_artifact) -> usize {
    query(a, 0, |a| a.grammar().mask_words())
}

/// The tokenizer's number of tokens; ids from here up to the vocab size
/// are padding and never allowed. 0 for NULL.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_token_count(a: *const tooldec_artifact) -> usize {
    query(a, 0, |a| a.grammar().token_count())
}

/// The end-of-sequence token ids, ascending: returns a pointer to them
/// and stores their number in `*n`. The array lives as long as the
/// handle. NULL (and `*n` = 0) for a NULL handle.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle; `n` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_eos_tokens(
    a: *const tooldec_artifact,
    n: *mut usize,
) -> *const u32 {
    let (ptr, len) = query(a, (std::ptr::null(), 0), |a| {
        let eos = a.grammar().eos_tokens();
        (eos.as_ptr(), eos.len())
    });
    // SAFETY: `n` is NULL or writable (the contract above).
    unsafe { put(n, len) };
    ptr
}

/// The bytes token `token` stands for: stores a pointer to them in
/// `*bytes` and their number in `*len`. Special tokens (which never match
/// text) and ids beyond the tokenizer have none: `*bytes` = NULL, `*len`
/// = 0, and the status is still `TOOLDEC_OK`. The bytes live as long as
/// the handle; they are not NUL-terminated.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle; `bytes` and `len` are valid for writes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_token_bytes(
    a: *const tooldec_artifact,
    token: u32,
    bytes: *mut *const u8,
    len: *mut usize,
) -> tooldec_status {
    // SAFETY: NULL or writable (the contract above).
    unsafe {
        put(bytes, std::ptr::null());
        put(len, 0);
    }
    if a.is_null() || bytes.is_null() || len.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    query(a, TOOLDEC_ERR_PANIC, |a| {
        if let Some(b) = a.grammar().token_bytes(token) {
            // SAFETY: both checked non-NULL above, writable by contract.
            unsafe {
                bytes.write(b.as_ptr());
                len.write(b.len());
            }
        }
        TOOLDEC_OK
    })
}

/// The artifact's payload: the uncompressed bytes it serves from, what
/// `tooldec-compile --uncompressed` writes. Returns a pointer to them and
/// stores their number in `*len`; they live as long as the handle. An
/// artifact from `tooldec_compiler_compile` written to a file this way
/// loads later with `tooldec_artifact_open` (or `_from_buffer`) without
/// compiling again. NULL (and `*len` = 0) for a NULL handle.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle; `len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_payload(
    a: *const tooldec_artifact,
    len: *mut usize,
) -> *const u8 {
    let (ptr, n) = query(a, (std::ptr::null(), 0), |a| {
        let p = a.shared.artifact().payload();
        (p.as_ptr(), p.len())
    });
    // SAFETY: `len` is NULL or writable (the contract above).
    unsafe { put(len, n) };
    ptr
}

/// The metadata the compiler recorded (UTF-8 JSON: format, tools,
/// vocabulary, generator), NUL-terminated; lives as long as the handle.
/// NULL for a NULL handle.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_metadata(a: *const tooldec_artifact) -> *const c_char {
    query(a, std::ptr::null(), |a| a.meta.as_ptr())
}

/// The number of entry points of the artifact's format. 0 for NULL.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_entry_count(a: *const tooldec_artifact) -> usize {
    query(a, 0, |a| a.entries.len())
}

/// The name of entry point `i` (0 is the default, where a matcher created
/// with a NULL entry starts), NUL-terminated; lives as long as the handle.
/// NULL for a NULL handle or `i` out of range.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_entry_name(
    a: *const tooldec_artifact,
    i: usize,
) -> *const c_char {
    query(a, std::ptr::null(), |a| {
        a.entries.get(i).map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// The fewest tokens of a complete output from the default entry (EOS
/// not counted): the smallest budget a matcher can be given. 0 for NULL.
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_min_tokens(a: *const tooldec_artifact) -> u32 {
    query(a, 0, |a| a.grammar().min_tokens())
}

/// The default token budget the artifact was compiled with
/// (`--max-tokens`), or `TOOLDEC_NO_BUDGET` (also for NULL).
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_max_tokens(a: *const tooldec_artifact) -> u32 {
    query(a, TOOLDEC_NO_BUDGET, |a| {
        a.grammar().max_tokens().unwrap_or(TOOLDEC_NO_BUDGET)
    })
}

/// Copies the SHA-256 fingerprint of the vocabulary the artifact was
/// compiled for into `out` (`TOOLDEC_FINGERPRINT_BYTES` = 32 bytes).
///
/// Thread safety: any thread (read-only).
///
/// # Safety
/// `a` is NULL or a live handle; `out` is NULL or holds 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_vocab_fingerprint(
    a: *const tooldec_artifact,
    out: *mut u8,
) -> tooldec_status {
    if a.is_null() || out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    query(a, TOOLDEC_ERR_PANIC, |a| {
        // SAFETY: non-NULL, 32 writable bytes (the contract above).
        match unsafe { slice_out(out, TOOLDEC_FINGERPRINT_BYTES) } {
            Ok(dst) => {
                dst.copy_from_slice(a.grammar().vocab_fingerprint());
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

/// Checks that the artifact was compiled for the vocabulary with SHA-256
/// fingerprint `fingerprint` (32 bytes, as `runtime/FORMAT.md` defines it;
/// `tooldec_compiler::vocab::Vocab::fingerprint` computes it from a
/// tokenizer). `TOOLDEC_ERR_VOCABULARY` with a message naming the
/// artifact's vocabulary and both fingerprints if not.
///
/// Thread safety: any thread (read-only); `err` belongs to the call.
///
/// # Safety
/// `a` is NULL or a live handle; `fingerprint` is NULL or holds 32
/// readable bytes; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_check_vocabulary(
    a: *const tooldec_artifact,
    fingerprint: *const u8,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if a.is_null() || fingerprint.is_null() {
        return err.fail(
            TOOLDEC_ERR_NULL,
            format_args!("artifact or fingerprint is NULL"),
        );
    }
    query(a, TOOLDEC_ERR_PANIC, |a| {
        // SAFETY: non-NULL, 32 readable bytes (the contract above).
        match unsafe { fingerprint_arg(fingerprint) } {
            Ok(fp) => vocabulary_status(a.grammar().check_vocabulary(&fp), err),
            Err(s) => s,
        }
    })
}

/// The 32 bytes of a fingerprint argument.
///
/// # Safety
/// `fingerprint` is non-NULL and holds 32 readable bytes.
pub(crate) unsafe fn fingerprint_arg(
    fingerprint: *const u8,
) -> Result<[u8; TOOLDEC_FINGERPRINT_BYTES], tooldec_status> {
    // SAFETY: the caller's contract.
    let given = unsafe { slice_in(fingerprint, TOOLDEC_FINGERPRINT_BYTES) }?;
    let mut fp = [0u8; TOOLDEC_FINGERPRINT_BYTES];
    fp.copy_from_slice(given);
    Ok(fp)
}

/// A vocabulary or width check's status, its message in `err`.
pub(crate) fn vocabulary_status(
    checked: Result<(), tooldec_runtime::Error>,
    err: ErrOut,
) -> tooldec_status {
    match checked {
        Ok(()) => TOOLDEC_OK,
        Err(e) => err.fail(TOOLDEC_ERR_VOCABULARY, format_args!("{e}")),
    }
}

/// Checks that the artifact's masks fit a model with `logits` output
/// logits (the mask buffer an engine hands over has that width): wider is
/// fine (the extra ids are never allowed); narrower means the artifact was
/// compiled for another model: `TOOLDEC_ERR_VOCABULARY` with a message.
///
/// Thread safety: any thread (read-only); `err` belongs to the call.
///
/// # Safety
/// `a` is NULL or a live handle; `err` is NULL or holds `err_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_check_mask_width(
    a: *const tooldec_artifact,
    logits: usize,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if a.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("artifact is NULL"));
    }
    query(a, TOOLDEC_ERR_PANIC, |a| {
        vocabulary_status(a.grammar().check_mask_width(logits), err)
    })
}

/// Reads a C string argument as UTF-8 (`Err` with a status for NULL or
/// bad UTF-8).
///
/// # Safety
/// `s` is NULL or NUL-terminated and valid for `'a`.
pub(crate) unsafe fn str_arg<'a>(s: *const c_char) -> Result<&'a str, tooldec_status> {
    if s.is_null() {
        return Err(TOOLDEC_ERR_NULL);
    }
    // SAFETY: non-NULL and NUL-terminated (the contract above).
    let s = unsafe { CStr::from_ptr(s) };
    s.to_str().map_err(|_| TOOLDEC_ERR_INVALID)
}
