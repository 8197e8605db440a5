//! Serving through the C ABI allocates nothing: filling masks (one and
//! batched), accepting, validating drafts, rolling back, forced bytes and
//! the queries, and their error paths too (messages go into a fixed buffer
//! inside the handle). Counted with a global allocator on this thread.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr;

use tooldec::*;
use tooldec_runtime::Artifact;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(p, layout, new_size) }
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(p, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> usize {
    ALLOCATIONS.with(|c| c.get())
}

#[test]
fn serving_through_the_c_abi_does_not_allocate() {
    let path = common::golden_artifact();
    // A complete call, picked with the Rust API beforehand: at each step
    // the allowed token that leaves the fewest tokens to the end.
    let art = Artifact::open(&path).unwrap();
    let g = art.grammar();
    let budget = g.min_tokens() * 2;
    let mut m = g.matcher_with_budget(budget).unwrap();
    let mut walk = Vec::new();
    let mut bad = Vec::new(); // a token each position does not allow
    let mut mask = vec![0u32; g.mask_words()];
    while !m.is_terminated() {
        m.fill_mask(&mut mask);
        bad.push(
            (0..g.mask_width() as u32)
                .find(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 0)
                .unwrap(),
        );
        let allowed =
            (0..g.mask_width() as u32).filter(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 1);
        let t = allowed
            .min_by_key(|&t| {
                let mut c = m;
                c.accept_token(t);
                c.state().and_then(|s| g.distance(s)).unwrap_or(0)
            })
            .unwrap();
        assert!(m.accept_token(t));
        walk.push(t);
    }

    let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    let mut a = ptr::null_mut();
    let mut m1 = ptr::null_mut();
    let mut m2 = ptr::null_mut();
    // SAFETY: valid pointers throughout; handles freed at the end.
    unsafe {
        assert_eq!(
            tooldec_artifact_open(c_path.as_ptr(), &mut a, ptr::null_mut(), 0),
            TOOLDEC_OK
        );
        let st = tooldec_matcher_new(a, ptr::null(), &budget, 8, &mut m1, ptr::null_mut(), 0);
        assert_eq!(st, TOOLDEC_OK);
        let before_clone = allocations();
        assert_eq!(tooldec_matcher_clone(m1, &mut m2), TOOLDEC_OK);
        // The counter sees this thread's allocations: a clone makes some.
        assert!(allocations() > before_clone);
    }
    let words = g.mask_words();
    let stride = words + 7;
    let mut row = vec![0u32; words + 3];
    let mut rows = vec![0u32; 2 * stride];
    let mut forced = [0u8; 64];
    let mut err = [0 as std::ffi::c_char; 128];
    let pair = [m1 as *const tooldec_matcher, m2 as *const tooldec_matcher];

    let before = allocations();
    let mut served = 0;
    // SAFETY: the handles are live; every buffer is as long as passed.
    unsafe {
        for (i, &t) in walk.iter().enumerate() {
            assert_eq!(
                tooldec_matcher_fill_mask(m1, row.as_mut_ptr(), row.len()),
                TOOLDEC_OK
            );
            let st = tooldec_fill_masks(
                pair.as_ptr(),
                2,
                rows.as_mut_ptr(),
                stride,
                words + 2,
                err.as_mut_ptr(),
                err.len(),
            );
            assert_eq!(st, TOOLDEC_OK);
            let draft = &walk[i..walk.len().min(i + 4)];
            let mut valid = 0;
            tooldec_matcher_validate_tokens(m1, draft.as_ptr(), draft.len(), &mut valid);
            assert_eq!(valid, draft.len());
            let mut n = 0;
            tooldec_matcher_forced_bytes(m1, forced.as_mut_ptr(), forced.len(), &mut n);
            // Error paths: a rejected token, a short buffer, a deep rollback.
            assert_eq!(
                tooldec_matcher_accept_token(m1, bad[i]),
                TOOLDEC_ERR_REJECTED
            );
            assert_eq!(
                tooldec_matcher_fill_mask(m1, row.as_mut_ptr(), words - 1),
                TOOLDEC_ERR_BUFFER_TOO_SMALL
            );
            assert_eq!(tooldec_matcher_rollback(m1, 100), TOOLDEC_ERR_ROLLBACK);
            assert_eq!(*tooldec_matcher_last_error(m1), b'c' as std::ffi::c_char);
            // Accept, and every third step undo two tokens and redo them.
            assert_eq!(tooldec_matcher_accept_token(m1, t), TOOLDEC_OK);
            if i >= 1 && i % 3 == 0 {
                assert_eq!(tooldec_matcher_rollback(m1, 2), TOOLDEC_OK);
                let mut k = 0;
                let st = tooldec_matcher_accept_tokens(m1, walk[i - 1..=i].as_ptr(), 2, &mut k);
                assert_eq!((st, k), (TOOLDEC_OK, 2));
            }
            tooldec_matcher_is_accepting(m1);
            tooldec_matcher_tokens_left(m1);
            tooldec_matcher_is_allowed(m1, t);
            served += 1;
        }
        assert!(tooldec_matcher_is_terminated(m1));
    }
    let allocated = allocations() - before;
    // SAFETY: live handles, freed once.
    unsafe {
        tooldec_matcher_free(m1);
        tooldec_matcher_free(m2);
        tooldec_artifact_free(a);
    }
    assert_eq!(
        allocated, 0,
        "{allocated} allocations while serving {served} tokens"
    );
    assert!(served > 10);
}
