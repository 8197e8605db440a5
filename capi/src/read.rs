//! Reading the tool calls back out of an output the artifact accepts
//! (`tooldec_read`): `tooldec_artifact_parse_tokens` and
//! `tooldec_artifact_parse_text` write OpenAI-style `tool_calls` JSON,
//! `[{"name": ..., "arguments": {...}}]`, into a caller's buffer.

use std::ffi::c_char;

use tooldec_read::{ReadError, Reader};

use crate::artifact::{artifact_ref, tooldec_artifact};
use crate::message::ErrOut;
use crate::{guard_with, put, slice_in, tooldec_status};
use crate::{
    TOOLDEC_ERR_BUFFER_TOO_SMALL, TOOLDEC_ERR_INVALID, TOOLDEC_ERR_NO_ENTRY, TOOLDEC_ERR_NULL,
    TOOLDEC_ERR_PANIC, TOOLDEC_ERR_REJECTED, TOOLDEC_OK,
};

/// What is read.
enum Output<'a> {
    Tokens(&'a [u32]),
    Text(&'a str),
}

/// The shared body: checks, reads, writes the JSON or the message.
///
/// # Safety
/// As the public functions document.
unsafe fn parse(
    a: *const tooldec_artifact,
    entry: *const c_char,
    output: Result<Output<'_>, tooldec_status>,
    out: *mut c_char,
    out_len: usize,
    len: *mut usize,
    err: ErrOut,
) -> tooldec_status {
    // SAFETY: `len` is NULL or writable (the caller's contract).
    unsafe { put(len, 0) };
    // SAFETY: NULL or a live handle (the caller's contract).
    let Some(art) = (unsafe { artifact_ref(a) }) else {
        return err.fail(TOOLDEC_ERR_NULL, format_args!("artifact is NULL"));
    };
    let entry = if entry.is_null() {
        None
    } else {
        // SAFETY: non-NULL and NUL-terminated (the caller's contract).
        match unsafe { crate::artifact::str_arg(entry) } {
            Ok(e) => Some(e),
            Err(s) => return err.fail(s, format_args!("entry is not UTF-8")),
        }
    };
    let output = match output {
        Ok(o) => o,
        Err(s) => return err.fail(s, format_args!("the output is NULL or not UTF-8")),
    };
    guard_with(
        || {
            let g = art.grammar();
            let reader = match art.reader() {
                Ok(r) => r,
                Err(e) => return err.fail(TOOLDEC_ERR_INVALID, format_args!("{e}")),
            };
            let read = match output {
                Output::Tokens(t) => reader.read_tokens(&g, entry, t),
                Output::Text(t) => reader.read_text(&g, entry, t),
            };
            let calls = match read {
                Ok(c) => c,
                Err(e) => {
                    let status = match e {
                        ReadError::Rejected { .. } => TOOLDEC_ERR_REJECTED,
                        ReadError::UnknownEntry { .. } => TOOLDEC_ERR_NO_ENTRY,
                        _ => TOOLDEC_ERR_INVALID,
                    };
                    return err.fail(status, format_args!("{e}"));
                }
            };
            let json = tooldec_read::to_json(&calls);
            // SAFETY: NULL or writable (the caller's contract).
            unsafe { put(len, json.len()) };
            if out.is_null() || out_len <= json.len() {
                return err.fail(
                    TOOLDEC_ERR_BUFFER_TOO_SMALL,
                    format_args!(
                        "the calls take {} bytes and a NUL; the buffer has {out_len}",
                        json.len()
                    ),
                );
            }
            // SAFETY: `out` holds `out_len` > json.len() writable bytes (the
            // caller's contract, checked length).
            unsafe {
                std::ptr::copy_nonoverlapping(json.as_ptr(), out.cast::<u8>(), json.len());
                out.add(json.len()).write(0);
            }
            TOOLDEC_OK
        },
        |why| err.fail(TOOLDEC_ERR_PANIC, format_args!("internal error: {why}")),
    )
}

/// Reads the tool calls of an output given as token ids (`n_tokens` ids;
/// an end-of-sequence id ends it) from entry `entry` (NULL: the default).
///
/// On success writes the calls as UTF-8 JSON,
/// `[{"name": ..., "arguments": {...}}]`, NUL-terminated, into `out`
/// (`out_len` bytes), stores its length (without the NUL) in `*len` and
/// returns `TOOLDEC_OK`. When `out` is too small (or NULL), stores the
/// length needed (without the NUL) in `*len` and returns
/// `TOOLDEC_ERR_BUFFER_TOO_SMALL`: call again with `*len + 1` bytes.
/// An output the artifact does not accept is `TOOLDEC_ERR_REJECTED`,
/// with a message saying at which byte (and token) in `err`; an unknown
/// entry `TOOLDEC_ERR_NO_ENTRY`; an artifact compiled without the table
/// reading needs (before it existed) `TOOLDEC_ERR_INVALID`.
///
/// Thread safety: any thread (read-only on the artifact).
///
/// # Safety
/// `a` is NULL or a live handle; `entry` is NULL or NUL-terminated;
/// `tokens` holds `n_tokens` ids (may be NULL when 0); `out` is NULL or
/// holds `out_len` writable bytes; `len` is NULL or valid for a write;
/// `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tooldec_artifact_parse_tokens(
    a: *const tooldec_artifact,
    entry: *const c_char,
    tokens: *const u32,
    n_tokens: usize,
    out: *mut c_char,
    out_len: usize,
    len: *mut usize,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `tokens` holds `n_tokens` ids (the caller's contract).
    let output = unsafe { slice_in(tokens, n_tokens) }.map(Output::Tokens);
    // SAFETY: the caller's contract, passed on.
    unsafe { parse(a, entry, output, out, out_len, len, err) }
}

/// Reads the tool calls of a text output (`text_len` bytes of UTF-8; a
/// special token the format uses is spelled by its name, as a
/// tokenizer decodes it). Results and errors as
/// `tooldec_artifact_parse_tokens`.
///
/// Thread safety: any thread (read-only on the artifact).
///
/// # Safety
/// `a` is NULL or a live handle; `entry` is NULL or NUL-terminated;
/// `text` holds `text_len` readable bytes (may be NULL when 0); `out` is
/// NULL or holds `out_len` writable bytes; `len` is NULL or valid for a
/// write; `err` is NULL or holds `err_len` writable bytes.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn tooldec_artifact_parse_text(
    a: *const tooldec_artifact,
    entry: *const c_char,
    text: *const c_char,
    text_len: usize,
    out: *mut c_char,
    out_len: usize,
    len: *mut usize,
    err: *mut c_char,
    err_len: usize,
) -> tooldec_status {
    // SAFETY: the caller's contract for `err`.
    let err = unsafe { ErrOut::new(err, err_len) };
    // SAFETY: `text` holds `text_len` bytes (the caller's contract).
    let output = unsafe { slice_in(text.cast::<u8>(), text_len) }.and_then(|b| {
        std::str::from_utf8(b)
            .map(Output::Text)
            .map_err(|_| TOOLDEC_ERR_INVALID)
    });
    // SAFETY: the caller's contract, passed on.
    unsafe { parse(a, entry, output, out, out_len, len, err) }
}

impl tooldec_artifact {
    /// The artifact's reader, built on first use and kept.
    pub(crate) fn reader(&self) -> Result<&Reader, &ReadError> {
        self.reader
            .get_or_init(|| Reader::new(&self.grammar()))
            .as_ref()
    }
}
