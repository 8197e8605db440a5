//! `tooldec_matcher`: one request's position, its masks, and rollback.

use std::ffi::c_char;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

use tooldec_runtime::OwnedMatcher;

use crate::artifact::{artifact_ref, str_arg, tooldec_artifact};
use crate::message::{ErrOut, Failing, Message};
use crate::{guard, guard_with, panic_text, put, slice_in, slice_out, tooldec_status};
use crate::{
    TOOLDEC_ERR_BUDGET, TOOLDEC_ERR_BUFFER_TOO_SMALL, TOOLDEC_ERR_INVALID, TOOLDEC_ERR_NO_ENTRY,
    TOOLDEC_ERR_NULL, TOOLDEC_ERR_PANIC, TOOLDEC_ERR_REJECTED, TOOLDEC_ERR_ROLLBACK,
    TOOLDEC_NO_BUDGET, TOOLDEC_OK,
};

/// The largest rollback capacity `tooldec_matcher_new` takes (a
/// history of 8 bytes per token; engines verify drafts of a few tokens).
pub const TOOLDEC_MAX_ROLLBACK: usize = 65536;

/// One request's matcher: a position in the grammar, the tokens left, a
/// rollback history of fixed capacity and the last error message. Opaque.
///
/// One thread at a time: it may move between threads, but calls on one
/// matcher must not overlap unless all of them take a
/// `const tooldec_matcher *` (those only read it). Give each request its
/// own (`tooldec_matcher_new` or `tooldec_matcher_clone`).
pub struct tooldec_matcher {
    inner: OwnedMatcher,
    error: Message,
}

impl tooldec_matcher {
    fn new(inner: OwnedMatcher) -> *mut tooldec_matcher {
        Box::into_raw(Box::new(tooldec_matcher {
            inner,
            error: Message::new(),
        }))
    }
}

impl Failing for tooldec_matcher {
    fn error(&mut self) -> &mut Message {
        &mut self.error
    }
}

/// Borrows a matcher for reading.
///
/// # Safety
/// `m` is NULL or a live handle that no call is writing to.
unsafe fn matcher_ref<'a>(m: *const tooldec_matcher) -> Option<&'a tooldec_matcher> {
    // SAFETY: NULL or a live, aligned handle, not written concurrently
    // (the contract above).
    unsafe { m.as_ref() }
}

/// Runs a query on a matcher (or a pending matcher); `fallback` for NULL
/// or a caught panic.
pub(crate) fn read<H, T>(m: *const H, fallback: T, f: impl FnOnce(&H) -> T) -> T {
    // SAFETY: every public function documents `m` as NULL or a live handle
    // used by one thread at a time.
    match unsafe { m.as_ref() } {
        Some(h) => guard(fallback, || f(h)),
        None => fallback,
    }
}

/// Runs an operation on a matcher (or a pending matcher):
/// `TOOLDEC_ERR_NULL` for NULL; a caught panic becomes `TOOLDEC_ERR_PANIC`
/// with its message on the handle.
pub(crate) fn write<H: Failing>(
    m: *mut H,
    f: impl FnOnce(&mut H) -> tooldec_status,
) -> tooldec_status {
    // SAFETY: every public function taking a matcher documents it as NULL
    // or a live handle that no other call uses meanwhile.
    let Some(h) = (unsafe { m.as_mut() }) else {
        return TOOLDEC_ERR_NULL;
    };
    match catch_unwind(AssertUnwindSafe(|| f(&mut *h))) {
        Ok(status) => status,
        Err(p) => h.fail(
            TOOLDEC_ERR_PANIC,
            format_args!("internal error: {}", panic_text(&*p)),
        ),
    }
}

/// Runs an operation that counts something (tokens, bytes) on a matcher
/// (or a pending matcher): `*count` is zeroed first and must not be NULL
/// (`TOOLDEC_ERR_NULL`); what `f` counts is stored there, its error
/// status returned as is.
///
/// # Safety
/// `count` is NULL or valid for a write.
pub(crate) unsafe fn write_count<H: Failing>(
    m: *mut H,
    count: *mut usize,
    f: impl FnOnce(&mut H) -> Result<usize, tooldec_status>,
) -> tooldec_status {
    // SAFETY: NULL or writable (the caller's contract).
    unsafe { put(count, 0) };
    if count.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    write(m, |h| match f(h) {
        Ok(k) => {
            // SAFETY: checked non-NULL above; writable by contract.
            unsafe { count.write(k) };
            TOOLDEC_OK
        }
        Err(s) => s,
    })
}

/// Names the entries of the artifact, for an error message.
struct Entries<'a>(&'a tooldec_runtime::Grammar<'a>);

impl fmt::Display for Entries<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, _)) in self.0.entries().enumerate() {
            write!(f, "{}\"{name}\"", if i > 0 { ", " } else { "" })?;
        }
        Ok(())
    }
}

/// Creates a matcher at the start of entry point `entry` (NULL: the
/// default entry, `tooldec_artifact_entry_name(a, 0)`).
///
/// `budget`: NULL for the artifact's default budget (`--max-tokens`; none
/// if it was compiled without), else a pointer to the request's token
/// budget (EOS included): every path the masks allow then completes
/// within it. `TOOLDEC_ERR_BUDGET` if the shortest output needs more.
/// A pointer to `TOOLDEC_NO_BUDGET`: no budget for this request, even if
/// the artifact has a default (`tooldec_matcher_reset` restores that
/// default: the runtime resets to the budget a matcher was created with).
///
/// `rollback`: how many of the latest tokens can be rolled back (at least
/// the engine's speculative tokens + 1; at most `TOOLDEC_MAX_ROLLBACK`).
/// The history is allocated here, once: serving never allocates.
///
/// On success stores the new matcher in `*out` (free it with
/// `tooldec_matcher_free`); on failure stores NULL and writes a message
/// into `err` (`err_len` bytes; `err` may be NULL).
///
/// Thread safety: any thread, concurrently with any other read of `a`.
///
/// # Safety
/// `a` is NULL or a live artifact handle; `entry` is NULL or
/// NUL-terminated; `budget` is NULL or readable; `out` is valid for a
/// write; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_new(
    a: *const tooldec_artifact,
    entry: *const c_char,
    budget: *const u32,
    rollback: usize,
    out: *mut *mut tooldec_matcher,
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
    // SAFETY: NULL or a live handle (the caller's contract).
    let Some(a) = (unsafe { artifact_ref(a) }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("artifact is NULL"));
    };
    // SAFETY: the caller's contract for `entry`.
    let name = match unsafe { matcher_args(entry, rollback, err) } {
        Ok(name) => name,
        Err(s) => return s,
    };
    // SAFETY: NULL or readable (the caller's contract).
    let budget = unsafe { budget.as_ref() }.copied();
    guard_with(
        || {
            let g = a.grammar();
            if let Some(name) = name {
                if g.entry_state(name).is_none() {
                    return err.fail(
                        TOOLDEC_ERR_NO_ENTRY,
                        format_args!(
                            "the artifact's format has no entry point \"{name}\" (it has {})",
                            Entries(&g)
                        ),
                    );
                }
            }
            let unbounded = budget == Some(TOOLDEC_NO_BUDGET);
            let budget = if unbounded { None } else { budget };
            let made = a.shared.matcher(name, budget, rollback).and_then(|mut m| {
                if unbounded {
                    m.set_budget(None)?;
                }
                Ok(m)
            });
            match made {
                Ok(m) => {
                    // SAFETY: checked non-NULL above; writable by contract.
                    unsafe { out.write(tooldec_matcher::new(m)) };
                    TOOLDEC_OK
                }
                Err(e) if e.budget_shortfall().is_some() => {
                    err.fail(TOOLDEC_ERR_BUDGET, format_args!("{e}"))
                }
                Err(e) => err.fail(TOOLDEC_ERR_NO_ENTRY, format_args!("{e}")),
            }
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// The entry name (NULL: the default entry) and the rollback capacity a
/// matcher is created with, checked; the message of a bad one goes to
/// `err`.
///
/// # Safety
/// `entry` is NULL or NUL-terminated.
pub(crate) unsafe fn matcher_args<'a>(
    entry: *const c_char,
    rollback: usize,
    err: ErrOut,
) -> Result<Option<&'a str>, tooldec_status> {
    if rollback > TOOLDEC_MAX_ROLLBACK {
        return Err(err.fail(
            TOOLDEC_ERR_INVALID,
            format_args!("rollback capacity {rollback} is above TOOLDEC_MAX_ROLLBACK ({TOOLDEC_MAX_ROLLBACK})"),
        ));
    }
    if entry.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's contract).
    match unsafe { str_arg(entry) } {
        Ok(name) => Ok(Some(name)),
        Err(s) => Err(err.fail(s, format_args!("the entry name is not UTF-8"))),
    }
}

/// What `tooldec_matcher_restrict` takes to lift a restriction.
pub const TOOLDEC_NO_TOOL: u32 = 0xFFFFFFFF;

/// The number of tools the artifact's one-tool matchers can be made for
/// (its TOOLS section); 0 when it has none (compiled before one-tool
/// matchers, or for a format that does not write the name first), or for
/// NULL.
///
/// Thread safety: reads `a` (see `tooldec_artifact`).
///
/// # Safety
/// `a` is NULL or a live artifact handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_tool_count(a: *const tooldec_artifact) -> u32 {
    // SAFETY: NULL or a live handle (the caller's contract).
    let Some(a) = (unsafe { artifact_ref(a) }) else {
        return 0;
    };
    guard(0, || a.grammar().tool_count())
}

/// Stores in `*out` the index of the tool named `name` (OpenAI's
/// `tool_choice: {"type": "function", "function": {"name": ...}}`), for
/// `tooldec_matcher_restrict`. `TOOLDEC_ERR_INVALID` when the artifact has
/// no such tool (or no TOOLS section); the message goes to `err`.
///
/// Thread safety: reads `a` (see `tooldec_artifact`).
///
/// # Safety
/// `a` is NULL or a live artifact handle; `name` is NULL or
/// NUL-terminated; `out` is valid for a write; `err` is NULL or holds
/// `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_artifact_tool_index(
    a: *const tooldec_artifact,
    name: *const c_char,
    out: *mut u32,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    if out.is_null() {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("out is NULL"));
    }
    // SAFETY: NULL or a live handle (the caller's contract).
    let Some(a) = (unsafe { artifact_ref(a) }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("artifact is NULL"));
    };
    // SAFETY: NULL or NUL-terminated (the caller's contract).
    let name = match unsafe { str_arg(name) } {
        Ok(name) => name,
        Err(s) => return err.fail(s, format_args!("the tool name is NULL or not UTF-8")),
    };
    guard_with(
        || {
            let g = a.grammar();
            match g.tool_index(name) {
                Some(i) => {
                    // SAFETY: checked non-NULL above; writable by contract.
                    unsafe { out.write(i) };
                    TOOLDEC_OK
                }
                None if g.tool_count() == 0 => err.fail(
                    TOOLDEC_ERR_INVALID,
                    format_args!(
                        "the artifact has no TOOLS section (compiled before one-tool matchers, \
                         or its format does not write the tool's name first); recompile it"
                    ),
                ),
                None => err.fail(
                    TOOLDEC_ERR_INVALID,
                    format_args!("the artifact has no tool named \"{name}\""),
                ),
            }
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Restricts the matcher's output, from its current position on, to calls
/// of tool `tool` (`tooldec_artifact_tool_index`; `TOOLDEC_NO_TOOL` lifts
/// the restriction): every token its masks allow keeps the output inside
/// the outputs whose calls all name that tool, and with a budget, one that
/// this tool's outputs can finish within. Kept through rollback and
/// resets. `TOOLDEC_ERR_BUDGET` when the tokens left are too few for this
/// tool; `TOOLDEC_ERR_INVALID` when the artifact cannot serve it (no TOOLS
/// section, no such tool, a budget without per-tool distances). Either
/// leaves the matcher unchanged.
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_restrict(
    m: *mut tooldec_matcher,
    tool: u32,
) -> tooldec_status {
    write(m, |h| {
        let tool = (tool != TOOLDEC_NO_TOOL).then_some(tool);
        match h.inner.restrict(tool) {
            Ok(()) => TOOLDEC_OK,
            Err(e) if e.budget_shortfall().is_some() => {
                h.fail(TOOLDEC_ERR_BUDGET, format_args!("{e}"))
            }
            Err(e) => h.fail(TOOLDEC_ERR_INVALID, format_args!("{e}")),
        }
    })
}

/// Copies a matcher (position, tokens left, rollback history; not its
/// error message) into a new handle stored in `*out`: for beam search or
/// forking a request. Allocates the copy's history.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_clone(
    m: *const tooldec_matcher,
    out: *mut *mut tooldec_matcher,
) -> tooldec_status {
    // SAFETY: `out` is NULL or writable (the caller's contract).
    unsafe { put(out, std::ptr::null_mut()) };
    if out.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    read(m, TOOLDEC_ERR_NULL, |h| {
        // SAFETY: checked non-NULL above; writable by contract.
        unsafe { out.write(tooldec_matcher::new(h.inner.clone())) };
        TOOLDEC_OK
    })
}

/// Frees a matcher (NULL: nothing).
///
/// Thread safety: once per handle, when no other call uses it.
///
/// # Safety
/// `m` is NULL or a live handle, not used again after this call.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_free(m: *mut tooldec_matcher) {
    if !m.is_null() {
        // SAFETY: a live handle made by Box::into_raw, given up by the
        // caller (the contract above).
        let handle = unsafe { Box::from_raw(m) };
        guard((), move || drop(handle));
    }
}

/// Back to the start of the default entry with the budget the matcher was
/// created with; forgets the rollback history. For reusing a matcher for a
/// new request (`tooldec_matcher_reset_to` restarts at another entry).
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_reset(m: *mut tooldec_matcher) -> tooldec_status {
    write(m, |h| {
        h.inner.reset();
        TOOLDEC_OK
    })
}

/// Restarts at entry point `entry` with the budget the matcher was
/// created with and forgets the rollback history (multi-turn: after the
/// engine inserted text of its own, go on where the model writes again).
/// `TOOLDEC_ERR_NO_ENTRY` or `TOOLDEC_ERR_BUDGET` leave it unchanged.
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `entry` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_reset_to(
    m: *mut tooldec_matcher,
    entry: *const c_char,
) -> tooldec_status {
    write(m, |h| {
        // SAFETY: NULL or NUL-terminated (the caller's contract).
        let name = match unsafe { str_arg(entry) } {
            Ok(name) => name,
            Err(s) => return h.fail(s, format_args!("the entry name is NULL or not UTF-8")),
        };
        let g = h.inner.grammar();
        let Some(state) = g.entry_state(name) else {
            // `h.error` and `h.inner` are disjoint borrows.
            h.error.set(format_args!(
                "the artifact's format has no entry point \"{name}\" (it has {})",
                Entries(&g)
            ));
            return TOOLDEC_ERR_NO_ENTRY;
        };
        let need = g.distance(state);
        if h.inner.reset_to(name) {
            return TOOLDEC_OK;
        }
        match need {
            Some(need) => h.fail(
                TOOLDEC_ERR_BUDGET,
                format_args!(
                    "the matcher's token budget is too small for entry \"{name}\": its shortest output takes {need} tokens"
                ),
            ),
            None => h.fail(
                TOOLDEC_ERR_BUDGET,
                format_args!("no sequence of tokens completes an output from entry \"{name}\""),
            ),
        }
    })
}

/// The message of the last call on this matcher that failed (a status
/// other than `TOOLDEC_OK`), NUL-terminated; empty if none has. Successful
/// calls leave it as it was. Valid until the next call that takes `m`
/// non-const, or `tooldec_matcher_free`.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_last_error(m: *const tooldec_matcher) -> *const c_char {
    read(m, c"the matcher is NULL".as_ptr(), |h| h.error.as_ptr())
}

/// The mask width of the matcher's artifact in `uint32_t` words
/// (`tooldec_artifact_mask_words`). 0 for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_mask_words(m: *const tooldec_matcher) -> usize {
    read(m, 0, |h| h.inner.grammar().mask_words())
}

/// Writes the mask of allowed next tokens into `out` (`words` words): bit
/// `t % 32` of word `t / 32` is set when token `t` is allowed, the layout
/// of vLLM, SGLang and XGrammar bitmasks (an `int32_t` bitmask buffer can
/// be passed cast to `uint32_t *`). `words` may exceed the artifact's
/// mask width (a model with more logits than the tokenizer has tokens):
/// the extra words are zeroed, so padding ids are never allowed. Fewer
/// words than `tooldec_matcher_mask_words` is `TOOLDEC_ERR_BUFFER_TOO_SMALL`
/// (nothing written).
///
/// In an accepting state EOS is allowed; after EOS only EOS is.
///
/// Thread safety: writes `m`'s error message only (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` holds `words` writable words.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_fill_mask(
    m: *mut tooldec_matcher,
    out: *mut u32,
    words: usize,
) -> tooldec_status {
    write(m, |h| {
        let g = h.inner.grammar();
        let (need, width) = (g.mask_words(), g.mask_width());
        // SAFETY: `out` holds `words` writable words (the caller's contract).
        match unsafe { mask_out(h, out, words, need, width) } {
            Ok(row) => {
                h.inner.try_fill_mask(row);
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

/// The caller's mask buffer (`out`, `words` words), checked to hold a mask
/// of `need` words (`width` tokens); the message of a bad one stays on `h`.
///
/// # Safety
/// `out` is NULL or holds `words` writable words used by nothing else
/// during `'a`.
pub(crate) unsafe fn mask_out<'a, H: Failing>(
    h: &mut H,
    out: *mut u32,
    words: usize,
    need: usize,
    width: usize,
) -> Result<&'a mut [u32], tooldec_status> {
    if words < need {
        return Err(h.fail(
            TOOLDEC_ERR_BUFFER_TOO_SMALL,
            format_args!(
                "mask buffer of {words} words is smaller than the artifact's mask width of {need} words ({width} tokens)"
            ),
        ));
    }
    // SAFETY: the caller's contract.
    unsafe { slice_out(out, words) }
        .map_err(|s| h.fail(s, format_args!("out is NULL or words is too large")))
}

/// Fills one mask row per matcher, the batched bitmask of an engine: row
/// `i` (matcher `matchers[i]`) is the `row_words` words at
/// `base + i * stride`; words past a row's mask width are zeroed, and the
/// `stride - row_words` words between rows are not touched. `row_words`
/// must be at least every matcher's mask width
/// (`TOOLDEC_ERR_BUFFER_TOO_SMALL`) and `stride` at least `row_words`
/// (`TOOLDEC_ERR_INVALID`). Everything is checked before any row is
/// written: on failure nothing is, and the message names the row.
/// Matchers may come from different artifacts.
///
/// Thread safety: reads the matchers (see `tooldec_matcher`); `err` and
/// the rows belong to the call.
///
/// # Safety
/// `matchers` holds `n` pointers, each NULL or a live handle; `base`
/// points to `(n - 1) * stride + row_words` words of which the rows are
/// writable; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn tooldec_fill_masks(
    matchers: *const *const tooldec_matcher,
    n: usize,
    base: *mut u32,
    stride: usize,
    row_words: usize,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `matchers` holds `n` pointers (the caller's contract).
    let list = match unsafe { slice_in(matchers, n) } {
        Ok(list) => list,
        Err(s) => return err.fail(s, format_args!("matchers is NULL or n is too large")),
    };
    guard_with(
        || {
            for (i, &p) in list.iter().enumerate() {
                // SAFETY: NULL or a live handle (the caller's contract).
                let Some(h) = (unsafe { matcher_ref(p) }) else {
                    return err.fail(TOOLDEC_ERR_NULL, format_args!("matchers[{i}] is NULL"));
                };
                let need = h.inner.grammar().mask_words();
                if row_words < need {
                    return err.fail(
                        TOOLDEC_ERR_BUFFER_TOO_SMALL,
                        format_args!(
                            "rows of {row_words} words are narrower than the mask of matchers[{i}] ({need} words)"
                        ),
                    );
                }
            }
            if stride < row_words {
                return err.fail(
                    TOOLDEC_ERR_INVALID,
                    format_args!("stride {stride} is below the row width {row_words}"),
                );
            }
            if n == 0 {
                return TOOLDEC_OK;
            }
            let span = (n - 1)
                .checked_mul(stride)
                .and_then(|s| s.checked_add(row_words))
                .filter(|&s| s <= isize::MAX as usize / 4);
            if span.is_none() {
                return err.fail(
                    TOOLDEC_ERR_INVALID,
                    format_args!("{n} rows of stride {stride} overflow the address space"),
                );
            }
            if base.is_null() {
                return err.fail(TOOLDEC_ERR_NULL, format_args!("base is NULL"));
            }
            for (i, &p) in list.iter().enumerate() {
                // SAFETY: checked non-NULL and live above.
                let Some(h) = (unsafe { matcher_ref(p) }) else {
                    return TOOLDEC_ERR_NULL;
                };
                // SAFETY: row `i` starts `i * stride` words into the
                // caller's buffer, inside `span` (checked above, so the
                // offset cannot overflow), and its `row_words` words are
                // writable and used by nothing else (the caller's
                // contract); rows do not overlap since stride >= row_words.
                let row = match unsafe { slice_out(base.add(i * stride), row_words) } {
                    Ok(row) => row,
                    Err(s) => return s,
                };
                h.inner.try_fill_mask(row);
            }
            TOOLDEC_OK
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Advances by one token (the one the engine sampled). A token the mask
/// does not allow is `TOOLDEC_ERR_REJECTED` and leaves the matcher
/// unchanged; EOS in an accepting state terminates it.
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_accept_token(
    m: *mut tooldec_matcher,
    token: u32,
) -> tooldec_status {
    write(m, |h| {
        if h.inner.accept_token(token) {
            TOOLDEC_OK
        } else {
            h.fail(
                TOOLDEC_ERR_REJECTED,
                format_args!("token {token} is not allowed here (the matcher is unchanged)"),
            )
        }
    })
}

/// Advances by `n` tokens, stopping at the first one not allowed; stores
/// how many were accepted in `*accepted` (may be NULL). `TOOLDEC_OK` when
/// all were, else `TOOLDEC_ERR_REJECTED` (the accepted prefix stays
/// accepted: roll it back with `tooldec_matcher_rollback` if needed).
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `tokens` holds `n` tokens (NULL if
/// `n` = 0); `accepted` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_accept_tokens(
    m: *mut tooldec_matcher,
    tokens: *const u32,
    n: usize,
    accepted: *mut usize,
) -> tooldec_status {
    // SAFETY: NULL or writable (the caller's contract).
    unsafe { put(accepted, 0) };
    write(m, |h| {
        // SAFETY: `tokens` holds `n` tokens (the caller's contract).
        let tokens = match unsafe { slice_in(tokens, n) } {
            Ok(t) => t,
            Err(s) => return h.fail(s, format_args!("tokens is NULL or n is too large")),
        };
        let k = h.inner.accept_tokens(tokens);
        // SAFETY: NULL or writable (the caller's contract).
        unsafe { put(accepted, k) };
        if k == n {
            TOOLDEC_OK
        } else {
            h.fail(
                TOOLDEC_ERR_REJECTED,
                format_args!(
                    "token {} (#{k} of {n}) is not allowed here; the {k} before it were accepted",
                    tokens[k]
                ),
            )
        }
    })
}

/// How many of `tokens`, in order, the matcher would accept from here
/// (the longest valid prefix of a speculative draft), stored in `*valid`;
/// does not advance. `TOOLDEC_OK` whatever the count.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `tokens` holds `n` tokens (NULL if
/// `n` = 0); `valid` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_validate_tokens(
    m: *const tooldec_matcher,
    tokens: *const u32,
    n: usize,
    valid: *mut usize,
) -> tooldec_status {
    // SAFETY: NULL or writable (the caller's contract).
    unsafe { put(valid, 0) };
    if valid.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    read(m, TOOLDEC_ERR_NULL, |h| {
        // SAFETY: `tokens` holds `n` tokens (the caller's contract).
        match unsafe { slice_in(tokens, n) } {
            Ok(tokens) => {
                // SAFETY: checked non-NULL above; writable by contract.
                unsafe { valid.write(h.inner.validate_tokens(tokens)) };
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

/// Whether `token` would be accepted now (its mask bit), without
/// advancing: a few table lookups, cheaper than a whole mask when the
/// engine has only a few candidates. False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_is_allowed(m: *const tooldec_matcher, token: u32) -> bool {
    read(m, false, |h| h.inner.matcher().is_allowed(token))
}

/// Undoes the last `n` accepted tokens (position and tokens left), for
/// speculative decoding after the engine rejected part of a draft.
/// `TOOLDEC_ERR_ROLLBACK` (nothing changed) if `n` exceeds
/// `tooldec_matcher_rollback_depth`.
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_rollback(
    m: *mut tooldec_matcher,
    n: usize,
) -> tooldec_status {
    write(m, |h| {
        if h.inner.rollback(n) {
            TOOLDEC_OK
        } else {
            let (depth, cap) = (h.inner.depth(), h.inner.capacity());
            h.fail(
                TOOLDEC_ERR_ROLLBACK,
                format_args!(
                    "cannot roll back {n} token{}: only the last {depth} can be (rollback capacity {cap})",
                    if n == 1 { "" } else { "s" }
                ),
            )
        }
    })
}

/// How many tokens can be rolled back now: the tokens accepted since
/// creation or the last reset, at most the capacity. 0 for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_rollback_depth(m: *const tooldec_matcher) -> usize {
    read(m, 0, |h| h.inner.depth())
}

/// The rollback capacity the matcher was created with. 0 for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_rollback_capacity(m: *const tooldec_matcher) -> usize {
    read(m, 0, |h| h.inner.capacity())
}

/// The output so far is a complete, valid call (EOS may follow, or
/// already did). False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_is_accepting(m: *const tooldec_matcher) -> bool {
    read(m, false, |h| h.inner.is_accepting())
}

/// An end-of-sequence token has been accepted: the request is done.
/// False for NULL.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_is_terminated(m: *const tooldec_matcher) -> bool {
    read(m, false, |h| h.inner.is_terminated())
}

/// The tokens the matcher may still take (EOS included), or
/// `TOOLDEC_NO_BUDGET` when it has no budget (also for NULL).
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_tokens_left(m: *const tooldec_matcher) -> u32 {
    read(m, TOOLDEC_NO_BUDGET, |h| {
        h.inner.tokens_left().unwrap_or(TOOLDEC_NO_BUDGET)
    })
}

/// Sets the tokens left from here on (for an engine that tracks its own
/// `max_tokens`); `TOOLDEC_NO_BUDGET` removes the budget.
/// `TOOLDEC_ERR_BUDGET` (unchanged) if the output cannot complete within
/// `left`. Rolling back restores the tokens left of the earlier position.
///
/// Thread safety: writes `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_set_budget(
    m: *mut tooldec_matcher,
    left: u32,
) -> tooldec_status {
    write(m, |h| {
        let left = (left != TOOLDEC_NO_BUDGET).then_some(left);
        match h.inner.set_budget(left) {
            Ok(()) => TOOLDEC_OK,
            Err(e) => h.fail(TOOLDEC_ERR_BUDGET, format_args!("{e}")),
        }
    })
}

/// Jump-forward decoding: writes into `out` (`cap` bytes) the bytes every
/// valid continuation from here starts with, and stores how many in
/// `*len`. Stops where the grammar offers a choice, at an accepting state,
/// before a special token, when `out` is full (never inside a UTF-8
/// character); 0 after termination. The engine may tokenize and append
/// them without sampling, then accept those tokens.
///
/// Thread safety: reads `m` (see `tooldec_matcher`).
///
/// # Safety
/// `m` is NULL or a live handle; `out` holds `cap` writable bytes (NULL
/// if `cap` = 0); `len` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn tooldec_matcher_forced_bytes(
    m: *const tooldec_matcher,
    out: *mut u8,
    cap: usize,
    len: *mut usize,
) -> tooldec_status {
    // SAFETY: NULL or writable (the caller's contract).
    unsafe { put(len, 0) };
    if len.is_null() {
        return TOOLDEC_ERR_NULL;
    }
    read(m, TOOLDEC_ERR_NULL, |h| {
        // SAFETY: `out` holds `cap` writable bytes (the caller's contract).
        match unsafe { slice_out(out, cap) } {
            Ok(buf) => {
                // SAFETY: checked non-NULL above; writable by contract.
                unsafe { len.write(h.inner.forced_bytes(buf)) };
                TOOLDEC_OK
            }
            Err(s) => s,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifact::tooldec_artifact_open;

    #[test]
    fn a_panic_becomes_a_status_and_a_message() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../artifacts/weather-gpt2.tdm\0"
        );
        let mut a = std::ptr::null_mut();
        let mut m = std::ptr::null_mut();
        // SAFETY: a NUL-terminated path and valid out-pointers; the handles
        // are freed below.
        unsafe {
            let st = tooldec_artifact_open(path.as_ptr().cast(), &mut a, std::ptr::null_mut(), 0);
            assert_eq!(st, TOOLDEC_OK);
            let st = tooldec_matcher_new(
                a,
                std::ptr::null(),
                std::ptr::null(),
                0,
                &mut m,
                std::ptr::null_mut(),
                0,
            );
            assert_eq!(st, TOOLDEC_OK);
        }
        let st = write(m, |_| panic!("boom"));
        assert_eq!(st, TOOLDEC_ERR_PANIC);
        // SAFETY: a live handle.
        let h = unsafe { &*m };
        assert_eq!(h.error.text(), "internal error: boom");
        assert_eq!(
            guard(TOOLDEC_ERR_PANIC, || panic!("again")),
            TOOLDEC_ERR_PANIC
        );
        // SAFETY: live handles, freed once.
        unsafe {
            tooldec_matcher_free(m);
            crate::artifact::tooldec_artifact_free(a);
        }
    }
}
