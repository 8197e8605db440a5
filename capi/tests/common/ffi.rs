//! Handles of the C ABI for the Rust tests that call it: freed on drop,
//! and the constructors that report a status and the message.

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use tooldec::{
    tooldec_artifact, tooldec_artifact_free, tooldec_artifact_metadata, tooldec_artifact_payload,
    tooldec_compiler, tooldec_compiler_compile, tooldec_compiler_free, tooldec_compiler_gpt2,
    tooldec_status, TOOLDEC_DEFAULT_CACHE_BYTES, TOOLDEC_OK,
};

/// A compiler handle, freed on drop.
pub struct Compiler(pub *mut tooldec_compiler);

// SAFETY: the handle is documented as usable from any number of threads at
// once (the Rust `Compiler` inside is `Sync`); the tests share it so.
unsafe impl Sync for Compiler {}
// SAFETY: as above; freeing from another thread is allowed once.
unsafe impl Send for Compiler {}

impl Drop for Compiler {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { tooldec_compiler_free(self.0) }
    }
}

/// An artifact handle, freed on drop.
pub struct Art(pub *mut tooldec_artifact);

impl Drop for Art {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { tooldec_artifact_free(self.0) }
    }
}

impl Art {
    pub fn payload(&self) -> &[u8] {
        let mut len = 0;
        // SAFETY: a live handle; the bytes live as long as it.
        unsafe {
            let p = tooldec_artifact_payload(self.0, &mut len);
            std::slice::from_raw_parts(p, len)
        }
    }

    pub fn metadata(&self) -> String {
        // SAFETY: a live handle: NUL-terminated metadata.
        unsafe { CStr::from_ptr(tooldec_artifact_metadata(self.0)) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The message a call left in `err`.
pub fn text(err: &[c_char]) -> String {
    // SAFETY: the functions NUL-terminate what they write; the buffers are
    // zeroed before each call.
    unsafe { CStr::from_ptr(err.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

pub fn gpt2(eos: &[&str]) -> Result<Compiler, (tooldec_status, String)> {
    let owned: Vec<CString> = eos.iter().map(|e| CString::new(*e).unwrap()).collect();
    let ptrs: Vec<*const c_char> = owned.iter().map(|e| e.as_ptr()).collect();
    let mut out = ptr::null_mut();
    let mut err = [0 as c_char; 512];
    // SAFETY: valid arrays and buffers for the call.
    let st = unsafe {
        tooldec_compiler_gpt2(
            ptrs.as_ptr(),
            ptrs.len(),
            TOOLDEC_DEFAULT_CACHE_BYTES,
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if st == TOOLDEC_OK {
        assert!(!out.is_null());
        Ok(Compiler(out))
    } else {
        assert!(out.is_null(), "a failed constructor stores NULL");
        Err((st, text(&err)))
    }
}

/// Compiles through the C ABI: the artifact, or the status and message.
pub fn c_compile(
    c: &Compiler,
    tools: &[u8],
    options: Option<&str>,
) -> Result<Art, (tooldec_status, String)> {
    let options = options.map(|o| CString::new(o).unwrap());
    let mut out = ptr::null_mut();
    let mut err = [0 as c_char; 1024];
    // SAFETY: a live compiler, `tools.len()` readable bytes, a
    // NUL-terminated options string, valid out and error buffers.
    let st = unsafe {
        tooldec_compiler_compile(
            c.0,
            tools.as_ptr().cast(),
            tools.len(),
            options.as_ref().map_or(ptr::null(), |o| o.as_ptr()),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if st == TOOLDEC_OK {
        assert!(!out.is_null());
        Ok(Art(out))
    } else {
        assert!(out.is_null(), "a failed compile stores NULL");
        Err((st, text(&err)))
    }
}
