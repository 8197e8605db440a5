//! The C ABI of the tooldec runtime and compiler: `libtooldec.so` /
//! `libtooldec.a` and the header `include/tooldec.h` (generated from this
//! crate by cbindgen; `header_is_current` checks that the committed copy
//! matches).
//!
//! Three opaque handles, and two for a compile in progress:
//!
//! - [`tooldec_compiler`](crate::tooldec_compiler): a compiler bound to
//!   one tokenizer's vocabulary, held for an engine's lifetime, that
//!   compiles tool lists into artifacts in memory (`compile.rs`).
//!   Thread-safe: one serves every thread.
//! - [`tooldec_artifact`]: a loaded, validated artifact (an `Arc`'d
//!   [`SharedGrammar`]). Read-only after loading: share one between all
//!   threads and requests.
//! - [`tooldec_matcher`]: one request's position in the grammar, with a
//!   rollback history of fixed capacity (an [`OwnedMatcher`]). It holds its
//!   own reference to the artifact, so it stays valid after
//!   [`tooldec_artifact_free`]. One thread at a time.
//! - [`tooldec_pending`] (`pending.rs`): a tool list being compiled
//!   ([`tooldec_compiler_start`]), thread-safe; and
//!   [`tooldec_pending_matcher`], a request's matcher that serves masks
//!   computed on demand until the artifact is there, then the artifact's.
//!
//! Every function checks its pointers, catches panics (nothing unwinds
//! into C) and reports failure as a [`tooldec_status`]. Functions that
//! act on a matcher leave a message on it ([`tooldec_matcher_last_error`]);
//! functions without a handle to hold one (loading, creating a compiler or
//! a matcher, compiling, the batched fill, the vocabulary checks) write it
//! into a buffer the caller passes (`err`, `err_len`; both may be NULL /
//! 0).
//!
//! Serving from a matcher (filling masks, accepting, validating, rolling
//! back) never allocates: the history is allocated once when the matcher
//! is created, and messages go into a fixed buffer inside the handle. A
//! pending matcher may allocate (and wait) until it moves to the artifact.
//!
//! [`SharedGrammar`]: tooldec_runtime::SharedGrammar
//! [`OwnedMatcher`]: tooldec_runtime::OwnedMatcher

#![deny(missing_docs)]
// The C names are the Rust names, so the header and the code read alike.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod artifact;
mod compile;
mod fingerprint;
mod matcher;
mod message;
mod pending;
mod read;

pub use artifact::*;
pub use compile::*;
pub use fingerprint::*;
pub use matcher::*;
pub use pending::*;
pub use read::*;

/// What every fallible function returns: `TOOLDEC_OK` (0) or why it failed.
/// A function that fails changes nothing (a matcher keeps its position).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum tooldec_status {
    /// Success.
    TOOLDEC_OK = 0,
    /// A required pointer argument is NULL.
    TOOLDEC_ERR_NULL = 1,
    /// An argument is out of range or malformed (a name that is not UTF-8,
    /// a stride below the row width, a length that overflows).
    TOOLDEC_ERR_INVALID = 2,
    /// The artifact could not be read, decompressed or validated; or the
    /// tokenizer of a compiler being created could not be read or used.
    TOOLDEC_ERR_LOAD = 3,
    /// An output buffer is smaller than the result: a mask buffer of
    /// fewer words than the artifact's mask width.
    TOOLDEC_ERR_BUFFER_TOO_SMALL = 4,
    /// The artifact's format has no entry point of that name.
    TOOLDEC_ERR_NO_ENTRY = 5,
    /// The token budget is too small to complete the output from here (or,
    /// compiling, `max_tokens` is below the shortest complete output).
    TOOLDEC_ERR_BUDGET = 6,
    /// A token is not allowed here (its mask bit is clear); the matcher is
    /// unchanged.
    TOOLDEC_ERR_REJECTED = 7,
    /// More tokens to roll back than the matcher can undo now.
    TOOLDEC_ERR_ROLLBACK = 8,
    /// The artifact was compiled for another vocabulary or a narrower
    /// model (fingerprint or logits width).
    TOOLDEC_ERR_VOCABULARY = 9,
    /// An internal error (a bug in tooldec) was caught at the boundary.
    /// Free the handle it happened on.
    TOOLDEC_ERR_PANIC = 10,
    /// The compiler refused the tool list (malformed, a schema it cannot
    /// express, a bound exceeded): the message names the place.
    TOOLDEC_ERR_COMPILE = 11,
}

pub use tooldec_status::*;

/// "No budget": what `tooldec_matcher_tokens_left` and
/// `tooldec_artifact_max_tokens` return when there is none, and what
/// `tooldec_matcher_set_budget` takes to remove it.
pub const TOOLDEC_NO_BUDGET: u32 = 0xFFFFFFFF;

/// Bytes of a vocabulary fingerprint (SHA-256).
pub const TOOLDEC_FINGERPRINT_BYTES: usize = 32;

/// The library version, a static NUL-terminated string (`"0.1.0"`).
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn tooldec_version() -> *const c_char {
    const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}

/// The name of a status code (`"TOOLDEC_ERR_NULL"`), a static
/// NUL-terminated string; `"TOOLDEC_UNKNOWN"` for a value that is not one.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn tooldec_status_name(status: i32) -> *const c_char {
    let name: &CStr = match status {
        0 => c"TOOLDEC_OK",
        1 => c"TOOLDEC_ERR_NULL",
        2 => c"TOOLDEC_ERR_INVALID",
        3 => c"TOOLDEC_ERR_LOAD",
        4 => c"TOOLDEC_ERR_BUFFER_TOO_SMALL",
        5 => c"TOOLDEC_ERR_NO_ENTRY",
        6 => c"TOOLDEC_ERR_BUDGET",
        7 => c"TOOLDEC_ERR_REJECTED",
        8 => c"TOOLDEC_ERR_ROLLBACK",
        9 => c"TOOLDEC_ERR_VOCABULARY",
        10 => c"TOOLDEC_ERR_PANIC",
        11 => c"TOOLDEC_ERR_COMPILE",
        _ => c"TOOLDEC_UNKNOWN",
    };
    name.as_ptr()
}

/// Runs `f`, turning a panic into `fallback`: nothing unwinds into C.
fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(fallback)
}

/// Runs `f`; a panic becomes `on_panic(its message)`.
fn guard_with<T>(f: impl FnOnce() -> T, on_panic: impl FnOnce(&str) -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| on_panic(panic_text(&*p)))
}

/// The text of a caught panic, for a message.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "panic"
    }
}

/// A caller's `(pointer, count)` array as a slice: empty for a count of 0
/// (the pointer may then be NULL), `Err` for NULL or a length no
/// allocation can have.
///
/// # Safety
/// Unless NULL, `p` points to `n` initialized `T`s that stay valid and are
/// not written for `'a` (the C caller's side of every function that takes
/// an array).
unsafe fn slice_in<'a, T>(p: *const T, n: usize) -> Result<&'a [T], tooldec_status> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(TOOLDEC_ERR_NULL);
    }
    if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(TOOLDEC_ERR_INVALID);
    }
    // SAFETY: non-NULL, in allocation bounds by the caller's contract, and
    // `n * size_of::<T>()` fits an isize (checked above).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Like `slice_in` for an output array the function writes.
///
/// # Safety
/// Unless NULL, `p` points to `n` writable `T`s that nothing else reads or
/// writes for `'a`.
unsafe fn slice_out<'a, T>(p: *mut T, n: usize) -> Result<&'a mut [T], tooldec_status> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(TOOLDEC_ERR_NULL);
    }
    if n > isize::MAX as usize / std::mem::size_of::<T>().max(1) {
        return Err(TOOLDEC_ERR_INVALID);
    }
    // SAFETY: non-NULL, in bounds and unaliased by the caller's contract,
    // and the byte length fits an isize (checked above).
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Writes `value` through an optional out-pointer.
///
/// # Safety
/// `p` is NULL or valid for a write of one `T`.
unsafe fn put<T>(p: *mut T, value: T) {
    if !p.is_null() {
        // SAFETY: non-NULL and writable by the caller's contract.
        unsafe { p.write(value) }
    }
}
