//! Error messages as NUL-terminated C strings, written without allocating:
//! into the fixed buffer a matcher carries, or into a buffer the caller
//! passes. Messages longer than the buffer are cut at a UTF-8 character
//! boundary.

use std::ffi::c_char;
use std::fmt;

use crate::tooldec_status;

/// Bytes of the message buffer inside a matcher handle, NUL included.
pub(crate) const MESSAGE_BYTES: usize = 512;

/// A matcher's last error message: always NUL-terminated.
pub(crate) struct Message {
    buf: [u8; MESSAGE_BYTES],
}

impl Message {
    pub(crate) fn new() -> Message {
        Message {
            buf: [0; MESSAGE_BYTES],
        }
    }

    pub(crate) fn set(&mut self, args: fmt::Arguments<'_>) {
        write_into(&mut self.buf, args);
    }

    pub(crate) fn as_ptr(&self) -> *const c_char {
        self.buf.as_ptr().cast()
    }

    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        let n = self.buf.iter().position(|&b| b == 0).unwrap_or(0);
        std::str::from_utf8(&self.buf[..n]).unwrap_or("")
    }
}

/// Formats `args` into `buf` (at least one byte), truncated to fit, and
/// terminates it with a NUL.
pub(crate) fn write_into(buf: &mut [u8], args: fmt::Arguments<'_>) {
    let Some(cap) = buf.len().checked_sub(1) else {
        return;
    };
    let mut w = Truncating {
        buf: &mut buf[..cap],
        len: 0,
    };
    // The writer never fails; a Display impl that does leaves what it wrote.
    let _ = fmt::write(&mut w, args);
    let len = w.len;
    buf[len] = 0;
}

struct Truncating<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl fmt::Write for Truncating<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let mut n = s.len().min(room);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        // A NUL inside the text would end the C string early: show it.
        for (dst, &b) in self.buf[self.len..self.len + n]
            .iter_mut()
            .zip(s.as_bytes())
        {
            *dst = if b == 0 { b'?' } else { b };
        }
        self.len += n;
        Ok(())
    }
}

/// A handle that keeps the message of its last failed call (a matcher, a
/// pending matcher).
pub(crate) trait Failing {
    fn error(&mut self) -> &mut Message;

    /// Keeps the message and returns `status`.
    fn fail(&mut self, status: tooldec_status, args: fmt::Arguments<'_>) -> tooldec_status {
        self.error().set(args);
        status
    }
}

/// A caller's error buffer (`err`, `err_len`): written on failure when
/// non-NULL and non-empty, left alone on success.
#[derive(Clone, Copy)]
pub(crate) struct ErrOut {
    ptr: *mut c_char,
    len: usize,
}

impl ErrOut {
    /// # Safety
    /// `ptr` is NULL or points to `len` writable bytes that nothing else
    /// accesses during the call.
    pub(crate) unsafe fn new(ptr: *mut c_char, len: usize) -> ErrOut {
        ErrOut { ptr, len }
    }

    /// Writes the message and returns `status`.
    pub(crate) fn fail(self, status: tooldec_status, args: fmt::Arguments<'_>) -> tooldec_status {
        if !self.ptr.is_null() && self.len > 0 {
            // SAFETY: non-NULL and `len` writable bytes owned by this call
            // (the contract of `ErrOut::new`).
            let buf = unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u8>(), self.len) };
            write_into(buf, args);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_at_a_character_boundary() {
        let mut buf = [0xAAu8; 6];
        write_into(&mut buf, format_args!("ab\u{e9}\u{e9}"));
        // "ab" + é (2 bytes) = 4 bytes fit in 5; the second é does not.
        assert_eq!(&buf, b"ab\xc3\xa9\0\xAA");
        let mut one = [0xAAu8; 1];
        write_into(&mut one, format_args!("anything"));
        assert_eq!(one, [0]);
        let mut m = Message::new();
        m.set(format_args!("a\0b {}", 7));
        assert_eq!(m.text(), "a?b 7");
    }
}
