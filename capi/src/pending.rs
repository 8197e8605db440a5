//! `tooldec_pending` and `tooldec_pending_matcher`: a tool list being
//! compiled (`tooldec_compiler_start`), served before its artifact is
//! there.
//!
//! They wrap [`Pending`] and [`PendingMatcher`]: masks are computed on
//! demand from the grammar (equal to the artifact's) until the artifact is
//! there, then the artifact's. Where only the artifact can tell (a tight
//! budget), a call waits for it, or runs the deferred rest of the compile.
//! Unlike a `tooldec_matcher`, a pending matcher may allocate and block
//! while serving.

use std::ffi::c_char;

use ::tooldec_compiler::{Error, ErrorKind, Options, Pending, PendingMatcher};
use tooldec_runtime::layout::mask_words;
use tooldec_runtime::{check_fingerprint, check_logits_width};

use crate::artifact::{fingerprint_arg, tooldec_artifact, vocabulary_status};
use crate::compile::compile_status;
use crate::compile::tooldec_compiler;
use crate::matcher::{mask_out, matcher_args, read, write, write_count};
use crate::message::{ErrOut, Failing, Message};
use crate::{guard, guard_with, put, tooldec_status, TOOLDEC_FINGERPRINT_BYTES};
use crate::{
    TOOLDEC_ERR_BUDGET, TOOLDEC_ERR_INVALID, TOOLDEC_ERR_NO_ENTRY, TOOLDEC_ERR_NULL,
    TOOLDEC_ERR_PANIC, TOOLDEC_ERR_REJECTED, TOOLDEC_ERR_ROLLBACK, TOOLDEC_NO_BUDGET, TOOLDEC_OK,
};

/// A tool list being compiled (`tooldec_compiler_start`). Opaque.
///
/// Thread-safe: every function that takes a `const tooldec_pending *`
/// (waiting, creating matchers, the queries) may run on any number of
/// threads at once. Free it once, when no other thread uses it; the
/// matchers and artifacts it made stay valid.
pub struct tooldec_pending {
    inner: Pending,
    /// The mask width in tokens (`vocab_size`, else the token count).
    width: usize,
    /// The compile's `max_tokens`: a matcher's budget when given none.
    default_budget: Option<u32>,
    /// The compiler's vocabulary fingerprint, which its artifact records.
    fingerprint: [u8; TOOLDEC_FINGERPRINT_BYTES],
    /// The compiler (for its vocabulary's label, which the artifact
    /// records too).
    compiler: std::sync::Arc<::tooldec_compiler::Compiler>,
}

impl tooldec_pending {
    pub(crate) fn new(inner: Pending, c: &tooldec_compiler, opts: &Options) -> tooldec_pending {
        let width = opts.mask_width.unwrap_or(c.inner.vocab().len() as u32);
        tooldec_pending {
            inner,
            width: width as usize,
            default_budget: opts.max_tokens,
            fingerprint: c.fingerprint,
            compiler: std::sync::Arc::clone(&c.inner),
        }
    }

    fn words(&self) -> usize {
        mask_words(self.width as u32)
    }
}

/// One request's matcher of a pending compile: a position, the tokens
/// left, a rollback history and the last error message. Opaque.
///
/// One thread at a time, as a `tooldec_matcher`.
pub struct tooldec_pending_matcher {
    inner: PendingMatcher,
    width: usize,
    words: usize,
    rollback: usize,
    error: Message,
}

impl Failing for tooldec_pending_matcher {
    fn error(&mut self) -> &mut Message {
        &mut self.error
    }
}

/// Waits for the artifact and stores a new handle to it in `*out` (free it
/// with `tooldec_artifact_free`): the one `tooldec_compiler_compile` gives
/// for the same tool list and options. Blocks until the compile thread
/// is done (a deferred compile runs here). On failure stores NULL and
/// returns `tooldec_compiler_compile`'s status for the compile's error,
/// with the message in `err` (`err_len` bytes; `err` may be NULL).
///
/// Thread safety: any number of threads at once.
///
/// # Safety
/// `p` is NULL or a live handle; `out` is NULL or valid for a write;
/// `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_wait(
    p: *const tooldec_pending,
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
    // SAFETY: NULL or a live handle, only read (the caller's contract).
    let Some(p) = (unsafe { p.as_ref() }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("pending is NULL"));
    };
    guard_with(
        || match p.inner.wait() {
            Ok(loaded) => {
                let handle = Box::into_raw(Box::new(tooldec_artifact::new(loaded.grammar)));
                // SAFETY: checked non-NULL above; writable by contract.
                unsafe { out.write(handle) };
                TOOLDEC_OK
            }
            Err(e) => err.fail(compile_status(&e), format_args!("{e}")),
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Whether the artifact (or the compile's error) is there: then
/// `tooldec_pending_wait` returns at once. False for NULL.
///
/// Thread safety: any number of threads at once.
///
/// # Safety
/// `p` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_is_ready(p: *const tooldec_pending) -> bool {
    read(p, false, |p| p.inner.is_ready())
}

/// The mask width of the compile in `uint32_t` words (its `vocab_size`,
/// else the tokenizer's token count, over 32, rounded up): what
/// `tooldec_pending_matcher_fill_mask` needs. 0 for NULL.
///
/// Thread safety: any number of threads at once.
///
/// # Safety
/// `p` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_mask_words(p: *const tooldec_pending) -> usize {
    read(p, 0, |p| p.words())
}

/// The mask width of the compile in tokens (its `vocab_size`, else the
/// tokenizer's token count): what `tooldec_artifact_mask_width` will say
/// of its artifact. 0 for NULL.
///
/// Thread safety: any number of threads at once.
///
/// # Safety
/// `p` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_mask_width(p: *const tooldec_pending) -> usize {
    read(p, 0, |p| p.width)
}

/// Copies the fingerprint of the compile's vocabulary into `out`
/// (`TOOLDEC_FINGERPRINT_BYTES` bytes): the one its artifact will record,
/// for checking an engine's tokenizer before the artifact is there.
///
/// Thread safety: any number of threads at once.
///
/// # Safety
/// `p` is NULL or a live handle; `out` is NULL or holds 32 writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_vocab_fingerprint(
    p: *const tooldec_pending,
    out: *mut u8,
) -> tooldec_status {
    if out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    read(p, TOOLDEC_ERR_NULL, |p| {
        // SAFETY: non-NULL, 32 writable bytes (the contract above).
        match unsafe { crate::slice_out(out, TOOLDEC_FINGERPRINT_BYTES) } {
            Ok(dst) => {
                dst.copy_from_slice(&p.fingerprint);
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

/// Checks that a model whose vocabulary has the fingerprint
/// `fingerprint` (`TOOLDEC_FINGERPRINT_BYTES` bytes) is the one the
/// compile is for, as `tooldec_artifact_check_vocabulary` checks its
/// artifact (the same message): `TOOLDEC_ERR_VOCABULARY` when it is not.
///
/// Thread safety: any number of threads at once; `err` belongs to the call.
///
/// # Safety
/// `p` is NULL or a live handle; `fingerprint` is NULL or holds 32
/// readable bytes; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_check_vocabulary(
    p: *const tooldec_pending,
    fingerprint: *const u8,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if p.is_null() || fingerprint.is_null() {
        return err.fail(
            TOOLDEC_ERR_NULL,
            format_args!("pending or fingerprint is NULL"),
        );
    }
    read(p, TOOLDEC_ERR_PANIC, |p| {
        // SAFETY: non-NULL, 32 readable bytes (the contract above).
        match unsafe { fingerprint_arg(fingerprint) } {
            Ok(fp) => {
                let label = &p.compiler.vocab().label;
                vocabulary_status(check_fingerprint(&p.fingerprint, label, &fp), err)
            }
            Err(s) => s,
        }
    })
}

/// Checks that the compile's masks fit a model with `logits` output
/// logits, as `tooldec_artifact_check_mask_width` checks its artifact:
/// `TOOLDEC_ERR_VOCABULARY` with a message when the model is narrower.
///
/// Thread safety: any number of threads at once; `err` belongs to the call.
///
/// # Safety
/// `p` is NULL or a live handle; `err` is NULL or holds `err_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_check_mask_width(
    p: *const tooldec_pending,
    logits: usize,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if p.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("pending is NULL"));
    }
    read(p, TOOLDEC_ERR_PANIC, |p| {
        vocabulary_status(check_logits_width(p.width as u32, logits), err)
    })
}

/// Frees a pending handle (NULL: nothing). A compile still running goes on
/// (the compiler keeps its artifact); matchers made from the handle stay
/// valid.
///
/// Thread safety: once per handle, when no other call uses it.
///
/// # Safety
/// `p` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_free(p: *mut tooldec_pending) {
    if !p.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(p) };
        guard((), move || drop(handle));
    }
}

/// Creates a matcher for one request of a pending compile, as
/// `tooldec_matcher_new` does for an artifact: `entry` (NULL: the default
/// entry), `budget` (NULL: the compile's `max_tokens`, if any; a pointer to
/// a token budget, EOS included), `rollback` (at most
/// `TOOLDEC_MAX_ROLLBACK`). It serves masks computed on demand while it
/// can, and waits for the artifact where only the artifact can tell (a
/// budget the grammar's byte distances cannot decide). A pointer to
/// `TOOLDEC_NO_BUDGET` is accepted only for a compile without `max_tokens`
/// (`TOOLDEC_ERR_INVALID` otherwise: a pending matcher cannot drop the
/// compile's budget; wait for the artifact and use `tooldec_matcher_new`).
///
/// On failure stores NULL and returns `TOOLDEC_ERR_NO_ENTRY`,
/// `TOOLDEC_ERR_BUDGET`, `TOOLDEC_ERR_INVALID`, `TOOLDEC_ERR_NULL` or the
/// compile's status (`tooldec_pending_wait`), with the message in `err`.
///
/// Thread safety: any thread, concurrently with any other use of `p`.
///
/// # Safety
/// `p` is NULL or a live handle; `entry` is NULL or NUL-terminated;
/// `budget` is NULL or readable; `out` is valid for a write; `err` is NULL
/// or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_new(
    p: *const tooldec_pending,
    entry: *const c_char,
    budget: *const u32,
    rollback: usize,
    out: *mut *mut tooldec_pending_matcher,
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
    // SAFETY: NULL or a live handle, only read (the caller's contract).
    let Some(p) = (unsafe { p.as_ref() }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("pending is NULL"));
    };
    // SAFETY: the caller's contract for `entry`.
    let name = match unsafe { matcher_args(entry, rollback, err) } {
        Ok(name) => name,
        Err(s) => return s,
    };
    // SAFETY: NULL or readable (the caller's contract).
    let budget = match (unsafe { budget.as_ref() }.copied(), p.default_budget) {
        (Some(TOOLDEC_NO_BUDGET), Some(n)) => {
            return err.fail(
                TOOLDEC_ERR_INVALID,
                format_args!(
                    "TOOLDEC_NO_BUDGET: a pending matcher cannot drop the compile's max_tokens \
                     ({n}); wait for the artifact and use tooldec_matcher_new"
                ),
            )
        }
        (Some(TOOLDEC_NO_BUDGET), None) => None,
        (b, _) => b,
    };
    guard_with(
        || match p.inner.matcher(name, budget, rollback) {
            Ok(inner) => {
                let handle = Box::into_raw(Box::new(tooldec_pending_matcher {
                    inner,
                    width: p.width,
                    words: p.words(),
                    rollback,
                    error: Message::new(),
                }));
                // SAFETY: checked non-NULL above; writable by contract.
                unsafe { out.write(handle) };
                TOOLDEC_OK
            }
            Err(e) => new_matcher_error(e, name, err),
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// A matcher that cannot start: an unknown entry (the runtime's message
/// names none: say which), a budget too small, or the compile's error.
fn new_matcher_error(e: Error, entry: Option<&str>, err: ErrOut) -> tooldec_status {
    match (e.kind(), entry) {
        (ErrorKind::Usage, Some(name)) => err.fail(
            TOOLDEC_ERR_NO_ENTRY,
            format_args!("entry \"{name}\": {}", e.message()),
        ),
        (ErrorKind::Usage, None) => err.fail(TOOLDEC_ERR_NO_ENTRY, format_args!("{e}")),
        (ErrorKind::Budget, _) => err.fail(TOOLDEC_ERR_BUDGET, format_args!("{e}")),
        _ => err.fail(compile_status(&e), format_args!("{e}")),
    }
}

/// Writes the mask of allowed next tokens into `out` (`words` words), as
/// `tooldec_matcher_fill_mask` does: the same layout, extra words zeroed,
/// `TOOLDEC_ERR_BUFFER_TOO_SMALL` below `tooldec_pending_mask_words`. May
/// wait for the artifact; then fails with the compile's status if the
/// compile failed.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` holds `words` writable words.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_fill_mask(
    m: *mut tooldec_pending_matcher,
    out: *mut u32,
    words: usize,
) -> tooldec_status {
    write(m, |h| {
        let (need, width) = (h.words, h.width);
        // SAFETY: `out` holds `words` writable words (the caller's contract).
        let row = match unsafe { mask_out(h, out, words, need, width) } {
            Ok(row) => row,
            Err(s) => return s,
        };
        match h.inner.fill_mask(row) {
            Ok(()) => TOOLDEC_OK,
            Err(e) => h.fail(compile_status(&e), format_args!("{e}")),
        }
    })
}

/// Advances by one token, as `tooldec_matcher_accept_token` does
/// (`TOOLDEC_ERR_REJECTED`, unchanged, for a token not allowed here). May
/// wait for the artifact; then fails with the compile's status if the
/// compile failed.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_accept_token(
    m: *mut tooldec_pending_matcher,
    token: u32,
) -> tooldec_status {
    write(m, |h| match h.inner.accept_token(token) {
        Ok(true) => TOOLDEC_OK,
        Ok(false) => h.fail(
            TOOLDEC_ERR_REJECTED,
            format_args!("token {token} is not allowed here (the matcher is unchanged)"),
        ),
        Err(e) => h.fail(compile_status(&e), format_args!("{e}")),
    })
}

/// Undoes the last `n` accepted tokens, before the artifact is there or
/// after. `TOOLDEC_ERR_ROLLBACK` (nothing changed) beyond the tokens
/// accepted or the rollback capacity.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_rollback(
    m: *mut tooldec_pending_matcher,
    n: usize,
) -> tooldec_status {
    write(m, |h| {
        if h.inner.rollback(n) {
            return TOOLDEC_OK;
        }
        let cap = h.rollback;
        h.fail(
            TOOLDEC_ERR_ROLLBACK,
            format_args!(
                "cannot roll back {n} token{}: more than were accepted or than the rollback capacity {cap}",
                if n == 1 { "" } else { "s" }
            ),
        )
    })
}

/// How many of `tokens`, in order, the matcher would accept from here
/// (the longest valid prefix of a speculative draft), stored in `*valid`;
/// does not advance. As `tooldec_matcher_validate_tokens`, decided early
/// while it can be; may wait for the artifact, then fails with the
/// compile's status if the compile failed.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `tokens` holds `n` tokens (NULL if
/// `n` = 0); `valid` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_validate_tokens(
    m: *mut tooldec_pending_matcher,
    tokens: *const u32,
    n: usize,
    valid: *mut usize,
) -> tooldec_status {
    // SAFETY: `valid` is NULL or writable (the caller's contract).
    unsafe {
        write_count(m, valid, |h| {
            // SAFETY: `tokens` holds `n` tokens (the caller's contract).
            let tokens = crate::slice_in(tokens, n)?;
            h.inner
                .validate_tokens(tokens)
                .map_err(|e| h.fail(compile_status(&e), format_args!("{e}")))
        })
    }
}

/// Jump-forward: as `tooldec_matcher_forced_bytes` once the artifact is
/// there; before it, 0 bytes (forcing needs the artifact; sampling under
/// the early masks does not). Fails with the compile's status if the
/// compile failed.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` holds `cap` writable bytes (NULL
/// if `cap` = 0); `len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_forced_bytes(
    m: *mut tooldec_pending_matcher,
    out: *mut u8,
    cap: usize,
    len: *mut usize,
) -> tooldec_status {
    // SAFETY: `len` is NULL or writable (the caller's contract).
    unsafe {
        write_count(m, len, |h| {
            // SAFETY: `out` holds `cap` writable bytes (the caller's
            // contract).
            let buf = crate::slice_out(out, cap)?;
            h.inner
                .forced_bytes(buf)
                .map_err(|e| h.fail(compile_status(&e), format_args!("{e}")))
        })
    }
}

/// Back to the start of the entry the matcher was made for (unlike
/// `tooldec_matcher_reset`, which goes to the artifact's default entry),
/// with its budget; forgets the rollback history. Early again while the
/// artifact is not there; fails with the compile's status if the compile
/// failed.
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_reset(
    m: *mut tooldec_pending_matcher,
) -> tooldec_status {
    write(m, |h| match h.inner.reset() {
        Ok(()) => TOOLDEC_OK,
        Err(e) => h.fail(compile_status(&e), format_args!("{e}")),
    })
}

/// Whether `token` would be accepted now, without advancing: a draft of
/// one token (`tooldec_pending_matcher_validate_tokens`), decided early
/// while it can be. False for NULL, for an id past the mask width, and
/// when the compile failed (then `_last_error` says why).
///
/// Thread safety: writes `m` (see `tooldec_pending_matcher`): a token
/// only the artifact can decide waits for it.
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_is_allowed(
    m: *mut tooldec_pending_matcher,
    token: u32,
) -> bool {
    let mut allowed = false;
    write(m, |h| {
        if token as usize >= h.width {
            return TOOLDEC_OK;
        }
        match h.inner.validate_tokens(&[token]) {
            Ok(n) => {
                allowed = n == 1;
                TOOLDEC_OK
            }
            Err(e) => h.fail(compile_status(&e), format_args!("{e}")),
        }
    });
    allowed
}

/// Stores in `*out` an independent copy of the matcher (position, tokens
/// left, rollback history; early or not, as `m` is), freed with
/// `tooldec_pending_matcher_free`; NULL on failure.
///
/// Thread safety: reads `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_clone(
    m: *const tooldec_pending_matcher,
    out: *mut *mut tooldec_pending_matcher,
) -> tooldec_status {
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    read(m, TOOLDEC_ERR_NULL, |h| {
        let copy = Box::into_raw(Box::new(tooldec_pending_matcher {
            inner: h.inner.clone(),
            width: h.width,
            words: h.words,
            rollback: h.rollback,
            error: Message::new(),
        }));
        // SAFETY: checked non-NULL above; writable by contract.
        unsafe { out.write(copy) };
        TOOLDEC_OK
    })
}

/// The output so far is a complete, valid call. False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_is_accepting(
    m: *const tooldec_pending_matcher,
) -> bool {
    read(m, false, |h| h.inner.is_accepting())
}

/// An end-of-sequence token has been accepted. False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_is_terminated(
    m: *const tooldec_pending_matcher,
) -> bool {
    read(m, false, |h| h.inner.is_terminated())
}

/// Whether the matcher still computes masks on demand (the artifact is not
/// there, or it has not moved to it yet: it moves on its next fill or
/// accept). False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_is_early(
    m: *const tooldec_pending_matcher,
) -> bool {
    read(m, false, |h| h.inner.is_early())
}

/// The message of the last call on this matcher that failed,
/// NUL-terminated; empty if none has. As `tooldec_matcher_last_error`.
///
/// Thread safety: reads `m` (see `tooldec_pending_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_last_error(
    m: *const tooldec_pending_matcher,
) -> *const c_char {
    read(m, c"the matcher is NULL".as_ptr(), |h| h.error.as_ptr())
}

/// Frees a pending matcher (NULL: nothing).
///
/// Thread safety: once per handle, when no other call uses it.
///
/// # Safety
/// `m` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_pending_matcher_free(m: *mut tooldec_pending_matcher) {
    if !m.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(m) };
        guard((), move || drop(handle));
    }
}
