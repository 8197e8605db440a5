//! A counting global allocator for the tests that check serving allocates
//! nothing. A test binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;` and reads
//! [`allocs`] around the code it watches.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts allocations (and reallocations) made by the current thread, so
/// tests running beside one on other threads do not disturb it.
pub struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only bumps a thread-local
// counter (const-initialized, no destructor, so it never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `alloc`, passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout` (every block here
        // does).
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: `ptr` came from `System` with `layout`; the caller's
        // contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

/// The allocations this thread has made so far (with [`Counting`]
/// installed; zero otherwise).
pub fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}
