//! `tooldec_fingerprint`: the vocabulary fingerprint of an engine's own
//! tokenizer, computed token by token, so that an engine written in C or
//! C++ can check an artifact against the vocabulary it serves with
//! (`tooldec_artifact_check_vocabulary`).
//!
//! The hash is the runtime's [`Fingerprint`] (`runtime/FORMAT.md`,
//! "Vocabulary fingerprint"), the one the compiler writes into every
//! artifact: an engine pushes each token id in order as text (its exact
//! bytes), special (its name) or unused.

use std::ffi::c_char;

use tooldec_runtime::Fingerprint;

use crate::message::ErrOut;
use crate::{guard, slice_in, slice_out, tooldec_status};
use crate::{
    TOOLDEC_ERR_INVALID, TOOLDEC_ERR_NULL, TOOLDEC_ERR_PANIC, TOOLDEC_FINGERPRINT_BYTES, TOOLDEC_OK,
};

/// A vocabulary fingerprint being computed. Opaque.
///
/// Create it with the tokenizer's token count, push every token id in
/// order (`tooldec_fingerprint_push_text`, `_push_special`,
/// `_push_unused`), then `tooldec_fingerprint_finish`. One thread at a
/// time; free it with `tooldec_fingerprint_free`.
pub struct tooldec_fingerprint {
    inner: Fingerprint,
}

/// Borrows a handle the C caller passed, for writing.
///
/// # Safety
/// `f` is NULL or a live handle from this library that no other thread
/// uses during the call.
unsafe fn fingerprint_mut<'a>(f: *mut tooldec_fingerprint) -> Option<&'a mut tooldec_fingerprint> {
    // SAFETY: NULL or a live, aligned, unaliased handle (the contract
    // above).
    unsafe { f.as_mut() }
}

/// Starts the fingerprint of a vocabulary of `n_tokens` tokens: the
/// tokenizer's token count (ids 0 to `n_tokens - 1`), which can be smaller
/// than the model's logits width.
///
/// On success stores a new handle in `*out`; `TOOLDEC_ERR_NULL` (and
/// nothing stored) if `out` is NULL.
///
/// Thread safety: any thread.
///
/// # Safety
/// `out` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_new(
    n_tokens: u32,
    out: *mut *mut tooldec_fingerprint,
) -> tooldec_status {
    if out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    // SAFETY: non-NULL and writable (the contract above).
    unsafe { out.write(std::ptr::null_mut()) };
    guard(TOOLDEC_ERR_PANIC, || {
        let handle = Box::into_raw(Box::new(tooldec_fingerprint {
            inner: Fingerprint::new(n_tokens),
        }));
        // SAFETY: checked non-NULL above, writable by the contract.
        unsafe { out.write(handle) };
        TOOLDEC_OK
    })
}

/// Which push: a token's kind in the fingerprint.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    Special,
    Unused,
}

/// Pushes one token; refuses more tokens than the count given at creation
/// (`TOOLDEC_ERR_INVALID`: the vocabulary was read wrong).
///
/// # Safety
/// `f` is NULL or a live handle used by this thread only; `bytes` is NULL
/// or holds `len` readable bytes.
unsafe fn push(
    f: *mut tooldec_fingerprint,
    kind: Kind,
    bytes: *const u8,
    len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `f`.
    let Some(f) = (unsafe { fingerprint_mut(f) }) else {
        return TOOLDEC_ERR_NULL;
    };
    // SAFETY: `bytes` holds `len` bytes (the caller's contract).
    let bytes = match unsafe { slice_in(bytes, len) } {
        Ok(b) => b,
        Err(s) => return s,
    };
    guard(TOOLDEC_ERR_PANIC, || {
        if f.inner.pushed() >= f.inner.tokens() {
            return TOOLDEC_ERR_INVALID;
        }
        match kind {
            Kind::Text => f.inner.push_text(bytes),
            Kind::Special => f.inner.push_special(bytes),
            Kind::Unused => f.inner.push_unused(),
        }
        TOOLDEC_OK
    })
}

/// The next token id is a text token whose exact bytes are `bytes`
/// (`len` bytes, not NUL-terminated; NULL when `len` is 0): what the
/// tokenizer decodes it to, with a SentencePiece `▁` as a space and a
/// byte-fallback token `<0xNN>` as its one byte.
///
/// `TOOLDEC_ERR_NULL` for a NULL handle or NULL bytes with `len` > 0;
/// `TOOLDEC_ERR_INVALID` when every token was already pushed.
///
/// Thread safety: one thread at a time per handle.
///
/// # Safety
/// `f` is NULL or a live handle; `bytes` is NULL or holds `len` readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_push_text(
    f: *mut tooldec_fingerprint,
    bytes: *const u8,
    len: usize,
) -> tooldec_status {
    // SAFETY: the contract above.
    unsafe { push(f, Kind::Text, bytes, len) }
}

/// The next token id is a special token (a control token, or an added
/// token marked special) named `name` (`len` bytes, not NUL-terminated):
/// its text as the tokenizer lists it, `<|endoftext|>` for example. Special
/// tokens never match text; an added token that is not special (a GGUF
/// user-defined token) is text, pushed with `tooldec_fingerprint_push_text`.
///
/// Errors as `tooldec_fingerprint_push_text`.
///
/// Thread safety: one thread at a time per handle.
///
/// # Safety
/// `f` is NULL or a live handle; `name` is NULL or holds `len` readable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_push_special(
    f: *mut tooldec_fingerprint,
    name: *const u8,
    len: usize,
) -> tooldec_status {
    // SAFETY: the contract above.
    unsafe { push(f, Kind::Special, name, len) }
}

/// The next token id is one the tokenizer leaves unused.
///
/// Errors as `tooldec_fingerprint_push_text`.
///
/// Thread safety: one thread at a time per handle.
///
/// # Safety
/// `f` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_push_unused(
    f: *mut tooldec_fingerprint,
) -> tooldec_status {
    // SAFETY: the contract above; no bytes.
    unsafe { push(f, Kind::Unused, std::ptr::null(), 0) }
}

/// Writes the SHA-256 fingerprint into `out` (`TOOLDEC_FINGERPRINT_BYTES`
/// = 32 bytes), to pass to `tooldec_artifact_check_vocabulary`. The handle
/// is left as it was (free it afterwards).
///
/// `TOOLDEC_ERR_INVALID`, with a message in `err` (`err_len` bytes, may be
/// NULL), if fewer tokens were pushed than the count given at creation;
/// `TOOLDEC_ERR_NULL` for a NULL handle or `out`.
///
/// Thread safety: one thread at a time per handle; `err` belongs to the
/// call.
///
/// # Safety
/// `f` is NULL or a live handle; `out` is NULL or holds 32 writable bytes;
/// `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_finish(
    f: *mut tooldec_fingerprint,
    out: *mut u8,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: the caller's contract for `f`.
    let Some(f) = (unsafe { fingerprint_mut(f) }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("fingerprint is NULL"));
    };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    guard(TOOLDEC_ERR_PANIC, || {
        let (pushed, tokens) = (f.inner.pushed(), f.inner.tokens());
        if pushed != tokens {
            return err.fail(
                TOOLDEC_ERR_INVALID,
                format_args!(
                    "vocabulary fingerprint: {pushed} tokens pushed for a vocabulary of {tokens}"
                ),
            );
        }
        // SAFETY: non-NULL, 32 writable bytes (the contract above).
        match unsafe { slice_out(out, TOOLDEC_FINGERPRINT_BYTES) } {
            Ok(dst) => {
                dst.copy_from_slice(&f.inner.clone().finish());
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

/// Frees a fingerprint handle (NULL: nothing).
///
/// Thread safety: once per handle, when no other thread uses it.
///
/// # Safety
/// `f` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fingerprint_free(f: *mut tooldec_fingerprint) {
    if !f.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(f) };
        guard((), move || drop(handle));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fingerprint(tokens: &[(Kind, &[u8])], n: u32) -> (tooldec_status, [u8; 32]) {
        let mut f = std::ptr::null_mut();
        let mut out = [0u8; 32];
        // SAFETY: a fresh handle, local buffers, freed at the end.
        unsafe {
            assert_eq!(tooldec_fingerprint_new(n, &mut f), TOOLDEC_OK);
            for &(kind, b) in tokens {
                assert_eq!(push(f, kind, b.as_ptr(), b.len()), TOOLDEC_OK);
            }
            let s = tooldec_fingerprint_finish(f, out.as_mut_ptr(), std::ptr::null_mut(), 0);
            tooldec_fingerprint_free(f);
            (s, out)
        }
    }

    #[test]
    fn same_bytes_as_the_runtime() {
        let tokens: [(Kind, &[u8]); 3] = [
            (Kind::Text, b"hi"),
            (Kind::Special, b"</s>"),
            (Kind::Unused, b""),
        ];
        let mut want = Fingerprint::new(3);
        want.push_text(b"hi");
        want.push_special("</s>");
        want.push_unused();
        assert_eq!(fingerprint(&tokens, 3), (TOOLDEC_OK, want.finish()));
    }

    #[test]
    fn counts_are_checked() {
        let one: [(Kind, &[u8]); 1] = [(Kind::Text, b"a")];
        assert_eq!(fingerprint(&one, 2).0, TOOLDEC_ERR_INVALID);
        let mut f = std::ptr::null_mut();
        let mut err = [0 as c_char; 128];
        let mut out = [0u8; 32];
        // SAFETY: a fresh handle and local buffers.
        unsafe {
            assert_eq!(tooldec_fingerprint_new(1, &mut f), TOOLDEC_OK);
            assert_eq!(tooldec_fingerprint_push_unused(f), TOOLDEC_OK);
            assert_eq!(tooldec_fingerprint_push_unused(f), TOOLDEC_ERR_INVALID);
            assert_eq!(
                tooldec_fingerprint_push_text(f, std::ptr::null(), 3),
                TOOLDEC_ERR_NULL
            );
            assert_eq!(
                tooldec_fingerprint_finish(f, out.as_mut_ptr(), err.as_mut_ptr(), err.len()),
                TOOLDEC_OK
            );
            tooldec_fingerprint_free(f);
            assert_eq!(
                tooldec_fingerprint_push_unused(std::ptr::null_mut()),
                TOOLDEC_ERR_NULL
            );
            assert_eq!(
                tooldec_fingerprint_new(1, std::ptr::null_mut()),
                TOOLDEC_ERR_NULL
            );
        }
    }
}
