//! Giving freed memory back to the operating system between phases.
//!
//! glibc's allocator keeps what a program frees for its next requests,
//! and it raises its own threshold for serving large requests from fresh
//! pages (`mmap`) each time such a block is freed. So after lowering or
//! minimizing a large grammar, hundreds of megabytes freed by the phase
//! stay resident while the next phase's arrays are laid out on new pages
//! beside them: at 10,000 distinct tools the compile's peak was 1.29 GB
//! where what was live never passed 1.04 GB (DESIGN.md §3). `malloc_trim`
//! hands the free pages back; elsewhere this does nothing.

/// Freed less than this, a phase gives nothing back: trimming walks the
/// heap, and pages handed back are faulted in again by the next compile,
/// which a small grammar's compile (a few milliseconds) would feel.
const GIVE_BACK_FROM: usize = 64 << 20;

/// Hands the heap's free pages back to the system, after a phase that
/// freed about `freed` bytes (when that is at least 64 MiB).
pub(crate) fn give_back(freed: usize) {
    if freed < GIVE_BACK_FROM {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's `malloc_trim` takes a byte count and no
        // pointers; it only returns pages of free chunks to the system,
        // under the allocator's own lock, so it is sound at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}
