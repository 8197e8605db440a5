//! `tooldec_compiler_start` from Rust, through the same `extern "C"`
//! functions C calls: a pending matcher's masks are, at every step of
//! complete calls, the masks of a `tooldec_matcher` of
//! `tooldec_compiler_compile`'s artifact (served early while they can be,
//! from the artifact after); `tooldec_pending_wait` gives that artifact
//! byte for byte; errors come with `tooldec_compiler_compile`'s statuses;
//! NULL pointers are refused.

mod common;

use std::ffi::{c_char, CStr, CString};
use std::ptr;

use tooldec::{
    tooldec_artifact_check_mask_width, tooldec_artifact_check_vocabulary,
    tooldec_artifact_mask_width, tooldec_artifact_vocab_fingerprint, tooldec_compiler_start,
    tooldec_compiler_start_deferred, tooldec_matcher, tooldec_matcher_accept_token,
    tooldec_matcher_fill_mask, tooldec_matcher_forced_bytes, tooldec_matcher_free,
    tooldec_matcher_is_accepting, tooldec_matcher_is_terminated, tooldec_matcher_new,
    tooldec_matcher_rollback, tooldec_matcher_validate_tokens, tooldec_pending,
    tooldec_pending_check_mask_width, tooldec_pending_check_vocabulary, tooldec_pending_free,
    tooldec_pending_is_ready, tooldec_pending_mask_width, tooldec_pending_mask_words,
    tooldec_pending_matcher, tooldec_pending_matcher_accept_token, tooldec_pending_matcher_clone,
    tooldec_pending_matcher_fill_mask, tooldec_pending_matcher_forced_bytes,
    tooldec_pending_matcher_free, tooldec_pending_matcher_is_accepting,
    tooldec_pending_matcher_is_allowed, tooldec_pending_matcher_is_early,
    tooldec_pending_matcher_is_terminated, tooldec_pending_matcher_last_error,
    tooldec_pending_matcher_new, tooldec_pending_matcher_reset, tooldec_pending_matcher_rollback,
    tooldec_pending_matcher_validate_tokens, tooldec_pending_vocab_fingerprint,
    tooldec_pending_wait, tooldec_status, TOOLDEC_ERR_BUDGET, TOOLDEC_ERR_BUFFER_TOO_SMALL,
    TOOLDEC_ERR_COMPILE, TOOLDEC_ERR_INVALID, TOOLDEC_ERR_NO_ENTRY, TOOLDEC_ERR_NULL,
    TOOLDEC_ERR_REJECTED, TOOLDEC_ERR_ROLLBACK, TOOLDEC_ERR_VOCABULARY, TOOLDEC_NO_BUDGET,
    TOOLDEC_OK,
};
use tooldec_runtime::Artifact;
use tooldec_testkit::walk::{seed, SplitMix64, Walker};

use common::ffi::{c_compile, gpt2, text, Art, Compiler};

/// A pending handle, freed on drop.
struct Pending(*mut tooldec_pending);

// SAFETY: the handle is documented as usable from any number of threads at
// once; the tests wait on it from another thread.
unsafe impl Sync for Pending {}

impl Drop for Pending {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { tooldec_pending_free(self.0) }
    }
}

impl Pending {
    fn is_ready(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { tooldec_pending_is_ready(self.0) }
    }

    fn wait(&self) -> Result<Art, (tooldec_status, String)> {
        let mut out = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: a live handle, valid out and error buffers.
        let st = unsafe { tooldec_pending_wait(self.0, &mut out, err.as_mut_ptr(), err.len()) };
        if st != TOOLDEC_OK {
            assert!(out.is_null(), "a failed wait stores NULL");
            return Err((st, text(&err)));
        }
        Ok(Art(out))
    }

    fn matcher(
        &self,
        entry: Option<&str>,
        budget: Option<u32>,
        rollback: usize,
    ) -> Result<Early, (tooldec_status, String)> {
        let entry = entry.map(|e| CString::new(e).unwrap());
        let mut out = ptr::null_mut();
        let mut err = [0 as c_char; 512];
        // SAFETY: a live handle, a NUL-terminated entry or NULL, a readable
        // budget or NULL, valid out and error buffers.
        let st = unsafe {
            tooldec_pending_matcher_new(
                self.0,
                entry.as_ref().map_or(ptr::null(), |e| e.as_ptr()),
                budget.as_ref().map_or(ptr::null(), |b| b as *const u32),
                rollback,
                &mut out,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        if st != TOOLDEC_OK {
            assert!(out.is_null(), "a failed matcher_new stores NULL");
            return Err((st, text(&err)));
        }
        Ok(Early(out))
    }
}

/// A pending matcher, freed on drop.
struct Early(*mut tooldec_pending_matcher);

impl Drop for Early {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { tooldec_pending_matcher_free(self.0) }
    }
}

impl Early {
    fn last_error(&self) -> String {
        // SAFETY: a live handle: a NUL-terminated message.
        unsafe { CStr::from_ptr(tooldec_pending_matcher_last_error(self.0)) }
            .to_string_lossy()
            .into_owned()
    }

    fn is_early(&self) -> bool {
        // SAFETY: a live handle.
        unsafe { tooldec_pending_matcher_is_early(self.0) }
    }
}

/// An artifact's matcher, freed on drop.
struct Plain(*mut tooldec_matcher);

impl Drop for Plain {
    fn drop(&mut self) {
        // SAFETY: a live handle, freed once.
        unsafe { tooldec_matcher_free(self.0) }
    }
}

fn plain(art: &Art, entry: Option<&str>, budget: Option<u32>) -> Plain {
    let entry = entry.map(|e| CString::new(e).unwrap());
    let mut out = ptr::null_mut();
    // SAFETY: a live artifact, a NUL-terminated entry or NULL, a readable
    // budget or NULL, a valid out-pointer.
    let st = unsafe {
        tooldec_matcher_new(
            art.0,
            entry.as_ref().map_or(ptr::null(), |e| e.as_ptr()),
            budget.as_ref().map_or(ptr::null(), |b| b as *const u32),
            4,
            &mut out,
            ptr::null_mut(),
            0,
        )
    };
    assert_eq!(st, TOOLDEC_OK);
    Plain(out)
}

fn start(
    c: &Compiler,
    tools: &str,
    options: Option<&str>,
    deferred: bool,
) -> Result<Pending, (tooldec_status, String)> {
    let options = options.map(|o| CString::new(o).unwrap());
    let mut out = ptr::null_mut();
    let mut err = [0 as c_char; 1024];
    let f = if deferred {
        tooldec_compiler_start_deferred
    } else {
        tooldec_compiler_start
    };
    // SAFETY: a live compiler, `tools.len()` readable bytes, a
    // NUL-terminated options string or NULL, valid out and error buffers.
    let st = unsafe {
        f(
            c.0,
            tools.as_ptr().cast(),
            tools.len(),
            options.as_ref().map_or(ptr::null(), |o| o.as_ptr()),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    if st != TOOLDEC_OK {
        assert!(out.is_null(), "a failed start stores NULL");
        return Err((st, text(&err)));
    }
    Ok(Pending(out))
}

fn example(name: &str) -> String {
    let path = common::capi_dir().join("../grammars/examples").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `n` complete outputs (EOS last) of the artifact `payload` from `entry`,
/// seeded random walks that lean toward finishing.
fn complete_calls(payload: &[u8], entry: Option<&str>, n: usize, label: &str) -> Vec<Vec<u32>> {
    let art = Artifact::from_bytes(payload).unwrap();
    let g = art.grammar();
    let mut walker = Walker::new(&g, g.token_count());
    walker.greedy_after = 60;
    (0..n)
        .map(|i| {
            let mut rng = SplitMix64::new(seed(label, i as u64, 0));
            let start = match entry {
                Some(e) => g.matcher_at(e).expect("the entry"),
                None => g.matcher(),
            };
            walker.walk_from(&mut rng, 4000, start).unwrap()
        })
        .collect()
}

/// Feeds `tokens` to the pending matcher `e` and the artifact's matcher
/// `m`, requiring equal masks (into buffers `extra` words wider than the
/// mask) and equal answers before each token and after the last, and both
/// to accept each; at step `rollback_at` it also rolls one token back and
/// forth. Returns (masks served early, masks compared).
fn same_masks_along(
    e: &Early,
    m: &Plain,
    words: usize,
    tokens: &[u32],
    rollback_at: Option<usize>,
) -> (usize, usize) {
    let (mut a, mut b) = (vec![!0u32; words + 1], vec![0u32; words + 1]);
    let (mut early, mut masks) = (0, 0);
    let mut compare = |step: usize| {
        a.fill(!0); // a word left unwritten would show
        let was_early = e.is_early();
        // SAFETY: live handles of this thread, buffers of `words + 1`.
        unsafe {
            assert_eq!(
                tooldec_pending_matcher_fill_mask(e.0, a.as_mut_ptr(), a.len()),
                TOOLDEC_OK,
                "{}",
                e.last_error()
            );
            assert_eq!(
                tooldec_matcher_fill_mask(m.0, b.as_mut_ptr(), b.len()),
                TOOLDEC_OK
            );
            assert_eq!(
                (
                    tooldec_pending_matcher_is_accepting(e.0),
                    tooldec_pending_matcher_is_terminated(e.0)
                ),
                (
                    tooldec_matcher_is_accepting(m.0),
                    tooldec_matcher_is_terminated(m.0)
                ),
                "step {step}"
            );
        }
        assert!(
            a == b,
            "step {step}: the mask served {} differs from the artifact's",
            if was_early { "early" } else { "after moving" }
        );
        early += (was_early && e.is_early()) as usize;
        masks += 1;
    };
    let accept = |step: usize, t: u32| {
        // SAFETY: live handles of this thread.
        unsafe {
            assert_eq!(
                tooldec_pending_matcher_accept_token(e.0, t),
                TOOLDEC_OK,
                "step {step}: {}",
                e.last_error()
            );
            assert_eq!(tooldec_matcher_accept_token(m.0, t), TOOLDEC_OK);
        }
    };
    for (step, &t) in tokens.iter().enumerate() {
        compare(step);
        accept(step, t);
        if Some(step) == rollback_at {
            // SAFETY: live handles of this thread.
            unsafe {
                assert_eq!(tooldec_pending_matcher_rollback(e.0, 1), TOOLDEC_OK);
                assert_eq!(tooldec_matcher_rollback(m.0, 1), TOOLDEC_OK);
            }
            compare(step);
            accept(step, t);
        }
    }
    compare(tokens.len());
    // SAFETY: a live handle.
    assert!(unsafe { tooldec_pending_matcher_is_terminated(e.0) });
    (early, masks)
}

#[test]
fn early_masks_are_the_compiled_artifacts() {
    let cases = [
        ("weather.json", None, None),
        ("tiny.json", None, Some("parallel")),
        (
            "weather.json",
            Some(r#"{"format": "hermes", "vocab_size": 50304}"#),
            None,
        ),
        (
            "tiny.json",
            Some(r#"{"format": "qwen3"}"#),
            Some("required"),
        ),
    ];
    for (file, options, entry) in cases {
        let tools = example(file);
        let label = format!("{file} {options:?}");
        let art = c_compile(&gpt2(&[]).unwrap(), tools.as_bytes(), options).unwrap();
        // A compiler of its own (no kept artifact), and deferred: only a
        // matcher's own need would move it to the artifact.
        let pending = start(&gpt2(&[]).unwrap(), &tools, options, true).unwrap();
        let want = Artifact::from_bytes(art.payload()).unwrap();
        let words = want.grammar().mask_words();
        // SAFETY: a live handle.
        assert_eq!(unsafe { tooldec_pending_mask_words(pending.0) }, words);
        let (mut early, mut masks) = (0, 0);
        for (i, tokens) in complete_calls(art.payload(), entry, 3, &label)
            .iter()
            .enumerate()
        {
            let e = pending.matcher(entry, None, 4).unwrap();
            let m = plain(&art, entry, None);
            let (x, n) = same_masks_along(&e, &m, words, tokens, Some(i + 2));
            (early, masks) = (early + x, masks + n);
        }
        assert!(masks > 30, "{label}: walks too short ({masks} masks)");
        // Without a budget nothing needs the artifact.
        assert_eq!(early, masks, "{label}");
        assert!(!pending.is_ready(), "{label}");
    }
}

#[test]
fn budgets_are_served_early_or_from_the_artifact() {
    let tools = example("weather.json");
    let options = Some(r#"{"format": "hermes", "max_tokens": 96}"#);
    let art = c_compile(&gpt2(&[]).unwrap(), tools.as_bytes(), options).unwrap();
    let pending = start(&gpt2(&[]).unwrap(), &tools, options, true).unwrap();
    let words = Artifact::from_bytes(art.payload())
        .unwrap()
        .grammar()
        .mask_words();
    let tokens = &complete_calls(art.payload(), None, 1, "budgets")[0];
    let tight = tokens.len() as u32;
    // Roomy first: once one needs the artifact, later ones start on it.
    let mut served = Vec::new();
    for budget in [Some(400), None, Some(tight)] {
        let e = pending.matcher(None, budget, 0).unwrap();
        let m = plain(&art, None, budget);
        served.push(same_masks_along(&e, &m, words, tokens, None));
    }
    assert_eq!(served[0], (tokens.len() + 1, tokens.len() + 1));
    assert!(served[2].0 < served[2].1, "{served:?}");
    assert!(pending.is_ready());
    // The compile's budget cannot be dropped before the artifact.
    let err = pending
        .matcher(None, Some(TOOLDEC_NO_BUDGET), 0)
        .err()
        .unwrap();
    assert_eq!(err.0, TOOLDEC_ERR_INVALID, "{}", err.1);
    assert!(err.1.contains("max_tokens (96)"), "{}", err.1);
    let err = pending.matcher(None, Some(2), 0).err().unwrap();
    assert_eq!(err.0, TOOLDEC_ERR_BUDGET, "{}", err.1);
}

#[test]
fn a_started_compile_lands_and_is_the_compiled_artifact() {
    let tools = example("weather.json");
    let art = c_compile(&gpt2(&[]).unwrap(), tools.as_bytes(), None).unwrap();
    let golden = Artifact::open(common::golden_artifact()).unwrap();
    let c = gpt2(&[]).unwrap();
    let pending = start(&c, &tools, None, false).unwrap();
    let e = pending.matcher(None, None, 4).unwrap();
    let words = golden.grammar().mask_words();
    let tokens = &complete_calls(art.payload(), None, 1, "lands")[0];
    std::thread::scope(|s| {
        // The artifact's bytes: a handle is not `Send`.
        let waiter = s.spawn(|| pending.wait().unwrap().payload().to_vec());
        same_masks_along(&e, &plain(&art, None, None), words, tokens, Some(3));
        assert!(waiter.join().unwrap() == art.payload());
    });
    drop(c); // the pending compile outlives its compiler
    assert!(pending.is_ready());
    let landed = pending.wait().unwrap();
    assert!(
        landed.payload() == art.payload() && art.payload() == golden.payload(),
        "the started compile's artifact is not compile's (the golden one)"
    );
    // Kept: the same tools again are ready at once, served from it.
    let c = gpt2(&[]).unwrap();
    let _ = start(&c, &tools, None, false).unwrap().wait().unwrap();
    let again = start(&c, &tools, None, false).unwrap();
    assert!(again.is_ready());
    assert!(!again.matcher(None, None, 0).unwrap().is_early());
}

#[test]
fn errors_come_with_compiles_statuses() {
    let c = gpt2(&[]).unwrap();
    let bad = r#"[{"name": "f", "parameters": {"type": "object",
        "properties": {"x": {"type": "strng"}}}}]"#;
    let started = start(&c, bad, None, false).err().unwrap();
    let compiled = c_compile(&c, bad.as_bytes(), None).err().unwrap();
    assert_eq!(started, compiled);
    assert_eq!(started.0, TOOLDEC_ERR_COMPILE);
    assert!(started.1.contains("strng"), "{}", started.1);
    let tools = example("weather.json");
    for (options, status) in [
        (r#"{"format": "nope"}"#, TOOLDEC_ERR_INVALID),
        (r#"{"max_tokens": 0}"#, TOOLDEC_ERR_INVALID),
        (r#"{"vocab_size": 100}"#, TOOLDEC_ERR_INVALID),
    ] {
        let started = start(&c, &tools, Some(options), true).err().unwrap();
        let compiled = c_compile(&c, tools.as_bytes(), Some(options))
            .err()
            .unwrap();
        assert_eq!(started, compiled, "{options}");
        assert_eq!(started.0, status, "{options}: {}", started.1);
    }
    // A budget below the shortest call is found by the rest of the
    // compile: the wait and the matchers report it.
    let options = Some(r#"{"max_tokens": 2}"#);
    let compiled = c_compile(&c, tools.as_bytes(), options).err().unwrap();
    assert_eq!(compiled.0, TOOLDEC_ERR_BUDGET, "{}", compiled.1);
    let pending = start(&c, &tools, options, true).unwrap();
    assert_eq!(pending.matcher(None, None, 0).err().unwrap(), compiled);
    assert_eq!(pending.wait().err().unwrap(), compiled);
    let pending = start(&c, &tools, None, true).unwrap();
    let err = pending.matcher(Some("nope"), None, 0).err().unwrap();
    assert_eq!(err.0, TOOLDEC_ERR_NO_ENTRY, "{}", err.1);
    assert!(err.1.contains("\"nope\""), "{}", err.1);
    let err = pending.matcher(None, None, 1 << 20).err().unwrap();
    assert_eq!(err.0, TOOLDEC_ERR_INVALID, "{}", err.1);
}

#[test]
fn short_buffers_refused_tokens_and_rollback_leave_the_matcher_alone() {
    let c = gpt2(&[]).unwrap();
    let tools = example("weather.json");
    let pending = start(&c, &tools, None, true).unwrap();
    let e = pending.matcher(None, None, 2).unwrap();
    // SAFETY: a live handle.
    let words = unsafe { tooldec_pending_mask_words(pending.0) };
    let mut mask = vec![0u32; words];
    // SAFETY: a live handle of this thread; `mask` holds `words` words.
    unsafe {
        let st = tooldec_pending_matcher_fill_mask(e.0, mask.as_mut_ptr(), words - 1);
        assert_eq!(st, TOOLDEC_ERR_BUFFER_TOO_SMALL);
        assert!(
            e.last_error().contains("smaller than"),
            "{}",
            e.last_error()
        );
        let st = tooldec_pending_matcher_fill_mask(e.0, ptr::null_mut(), words);
        assert_eq!(st, TOOLDEC_ERR_NULL);
        assert_eq!(
            tooldec_pending_matcher_accept_token(e.0, 50256),
            TOOLDEC_ERR_REJECTED
        );
        assert!(e.last_error().contains("50256"), "{}", e.last_error());
        assert_eq!(
            tooldec_pending_matcher_rollback(e.0, 1),
            TOOLDEC_ERR_ROLLBACK
        );
        assert!(e.last_error().contains("capacity 2"), "{}", e.last_error());
    }
    assert!(e.is_early(), "nothing above moved it");
    let art = c_compile(&c, tools.as_bytes(), None).unwrap();
    let tokens = &complete_calls(art.payload(), None, 1, "rollback")[0];
    // SAFETY: a live handle of this thread.
    unsafe {
        for &t in &tokens[..3] {
            assert_eq!(tooldec_pending_matcher_accept_token(e.0, t), TOOLDEC_OK);
        }
        assert_eq!(
            tooldec_pending_matcher_rollback(e.0, 3),
            TOOLDEC_ERR_ROLLBACK
        );
        assert_eq!(tooldec_pending_matcher_rollback(e.0, 2), TOOLDEC_OK);
    }
    let m = plain(&art, None, None);
    // SAFETY: a live handle of this thread.
    let st = unsafe { tooldec_matcher_accept_token(m.0, tokens[0]) };
    assert_eq!(st, TOOLDEC_OK);
    same_masks_along(&e, &m, words, &tokens[1..], None);
}

#[test]
fn null_pointers_are_refused() {
    let c = gpt2(&[]).unwrap();
    let tools = example("tiny.json");
    let mut err = [0 as c_char; 256];
    let mut mask = [0u32; 4];
    // SAFETY: NULL handles and out-pointers are what is tested; the other
    // pointers are valid.
    unsafe {
        let mut out = ptr::dangling_mut::<tooldec_pending>();
        let st = tooldec_compiler_start(
            ptr::null(),
            tools.as_ptr().cast(),
            tools.len(),
            ptr::null(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(st, TOOLDEC_ERR_NULL);
        assert!(out.is_null(), "a failed start stores NULL");
        assert_eq!(text(&err), "compiler is NULL");
        let st = tooldec_compiler_start(
            c.0,
            tools.as_ptr().cast(),
            tools.len(),
            ptr::null(),
            ptr::null_mut(),
            ptr::null_mut(),
            0,
        );
        assert_eq!(st, TOOLDEC_ERR_NULL);
        let mut art = ptr::dangling_mut();
        assert_eq!(
            tooldec_pending_wait(ptr::null(), &mut art, ptr::null_mut(), 0),
            TOOLDEC_ERR_NULL
        );
        assert!(art.is_null());
        let mut m = ptr::dangling_mut();
        let st = tooldec_pending_matcher_new(
            ptr::null(),
            ptr::null(),
            ptr::null(),
            0,
            &mut m,
            ptr::null_mut(),
            0,
        );
        assert_eq!(st, TOOLDEC_ERR_NULL);
        assert!(m.is_null());
        assert!(!tooldec_pending_is_ready(ptr::null()));
        assert_eq!(tooldec_pending_mask_words(ptr::null()), 0);
        assert_eq!(tooldec_pending_mask_width(ptr::null()), 0);
        let mut fp = [0u8; 32];
        assert_eq!(
            tooldec_pending_vocab_fingerprint(ptr::null(), fp.as_mut_ptr()),
            TOOLDEC_ERR_NULL
        );
        let none_err = (ptr::null_mut(), 0);
        assert_eq!(
            tooldec_pending_check_vocabulary(ptr::null(), fp.as_ptr(), none_err.0, none_err.1),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_check_mask_width(ptr::null(), 8, none_err.0, none_err.1),
            TOOLDEC_ERR_NULL
        );
        let none = ptr::null_mut();
        assert!(!tooldec_pending_matcher_is_allowed(none, 0));
        let mut copy = ptr::dangling_mut();
        assert_eq!(
            tooldec_pending_matcher_clone(none, &mut copy),
            TOOLDEC_ERR_NULL
        );
        assert!(copy.is_null(), "a failed clone stores NULL");
        assert_eq!(
            tooldec_pending_matcher_fill_mask(none, mask.as_mut_ptr(), mask.len()),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_matcher_accept_token(none, 0),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(tooldec_pending_matcher_rollback(none, 0), TOOLDEC_ERR_NULL);
        assert!(!tooldec_pending_matcher_is_accepting(none));
        assert!(!tooldec_pending_matcher_is_terminated(none));
        assert!(!tooldec_pending_matcher_is_early(none));
        assert!(!tooldec_pending_matcher_last_error(none).is_null());
        tooldec_pending_matcher_free(none);
        tooldec_pending_free(ptr::null_mut());
    }
}

/// The valid prefix of `draft`: the pending matcher's and the artifact
/// matcher's.
fn validated(e: &Early, m: &Plain, draft: &[u32]) -> (usize, usize) {
    let (mut x, mut y) = (usize::MAX, usize::MAX);
    // SAFETY: live handles of this thread, `draft.len()` readable tokens,
    // writable counts.
    unsafe {
        assert_eq!(
            tooldec_pending_matcher_validate_tokens(e.0, draft.as_ptr(), draft.len(), &mut x),
            TOOLDEC_OK,
            "{}",
            e.last_error()
        );
        assert_eq!(
            tooldec_matcher_validate_tokens(m.0, draft.as_ptr(), draft.len(), &mut y),
            TOOLDEC_OK
        );
    }
    (x, y)
}

/// The forced bytes of the pending matcher and of the artifact's.
fn forced(e: &Early, m: &Plain) -> (Vec<u8>, Vec<u8>) {
    let (mut a, mut b) = (vec![0u8; 256], vec![0u8; 256]);
    let (mut x, mut y) = (usize::MAX, usize::MAX);
    // SAFETY: live handles of this thread, 256-byte buffers, writable
    // lengths.
    unsafe {
        assert_eq!(
            tooldec_pending_matcher_forced_bytes(e.0, a.as_mut_ptr(), a.len(), &mut x),
            TOOLDEC_OK
        );
        assert_eq!(
            tooldec_matcher_forced_bytes(m.0, b.as_mut_ptr(), b.len(), &mut y),
            TOOLDEC_OK
        );
    }
    (a[..x].to_vec(), b[..y].to_vec())
}

#[test]
fn drafts_jump_forward_and_reset_answer_as_a_matchers() {
    let tools = example("tiny.json");
    let options = Some(r#"{"format": "qwen3"}"#);
    let entry = Some("required");
    let art = c_compile(&gpt2(&[]).unwrap(), tools.as_bytes(), options).unwrap();
    let words = Artifact::from_bytes(art.payload())
        .unwrap()
        .grammar()
        .mask_words();
    let tokens = complete_calls(art.payload(), entry, 1, "drafts").remove(0);
    let pending = start(&gpt2(&[]).unwrap(), &tools, options, true).unwrap();
    let e = pending.matcher(entry, None, 4).unwrap();
    let m = plain(&art, entry, None);
    // The compile's vocabulary and width, before the artifact: the
    // artifact's.
    let (mut ours, mut theirs) = ([0u8; 32], [1u8; 32]);
    // SAFETY: live handles, 32-byte buffers.
    unsafe {
        assert_eq!(
            tooldec_pending_vocab_fingerprint(pending.0, ours.as_mut_ptr()),
            TOOLDEC_OK
        );
        assert_eq!(
            tooldec_artifact_vocab_fingerprint(art.0, theirs.as_mut_ptr()),
            TOOLDEC_OK
        );
        assert_eq!(
            tooldec_pending_mask_width(pending.0),
            tooldec_artifact_mask_width(art.0)
        );
    }
    assert_eq!(ours, theirs);
    // Its checks are the artifact's, message for message.
    let check = |vocab: Option<&[u8; 32]>, logits: usize| {
        let (mut a, mut b) = ([0 as c_char; 256], [0 as c_char; 256]);
        // SAFETY: live handles, 32-byte fingerprints, 256-byte buffers.
        let (x, y) = unsafe {
            match vocab {
                Some(fp) => (
                    tooldec_pending_check_vocabulary(pending.0, fp.as_ptr(), a.as_mut_ptr(), 256),
                    tooldec_artifact_check_vocabulary(art.0, fp.as_ptr(), b.as_mut_ptr(), 256),
                ),
                None => (
                    tooldec_pending_check_mask_width(pending.0, logits, a.as_mut_ptr(), 256),
                    tooldec_artifact_check_mask_width(art.0, logits, b.as_mut_ptr(), 256),
                ),
            }
        };
        let (a, b) = (text(&a), text(&b));
        assert_eq!((x, &a), (y, &b));
        (x, a)
    };
    assert_eq!(check(Some(&ours), 0).0, TOOLDEC_OK);
    let (st, msg) = check(Some(&[7u8; 32]), 0);
    assert!(
        st == TOOLDEC_ERR_VOCABULARY && msg.contains("gpt2"),
        "{msg}"
    );
    assert_eq!(check(None, 50257).0, TOOLDEC_OK);
    assert_eq!(check(None, 50256).0, TOOLDEC_ERR_VOCABULARY);
    let mut rng = SplitMix64::new(3);
    for (i, &t) in tokens.iter().enumerate() {
        let mut draft = tokens[i..tokens.len().min(i + 3)].to_vec();
        draft.push(rng.below(50257) as u32);
        let (x, y) = validated(&e, &m, &draft);
        assert_eq!(x, y, "step {i}: draft {draft:?}");
        assert_eq!(
            forced(&e, &m).0,
            b"",
            "step {i}: forced bytes before the artifact"
        );
        // SAFETY: live handles of this thread.
        unsafe {
            assert_eq!(tooldec_pending_matcher_accept_token(e.0, t), TOOLDEC_OK);
            assert_eq!(tooldec_matcher_accept_token(m.0, t), TOOLDEC_OK);
        }
    }
    // Back to the entry it was made for, still early: the walk again.
    // SAFETY: a live handle of this thread.
    assert_eq!(unsafe { tooldec_pending_matcher_reset(e.0) }, TOOLDEC_OK);
    assert!(e.is_early() && !pending.is_ready());
    let fresh = plain(&art, entry, None);
    let (early, masks) = same_masks_along(&e, &fresh, words, &tokens, None);
    assert_eq!(early, masks);
    // Once the artifact is there: its forced bytes at every step.
    pending.wait().unwrap();
    let (e, m) = (
        pending.matcher(entry, None, 0).unwrap(),
        plain(&art, entry, None),
    );
    let mut some = 0;
    for &t in &tokens {
        let (x, y) = forced(&e, &m);
        assert_eq!(x, y);
        some += !y.is_empty() as usize;
        // SAFETY: live handles of this thread.
        unsafe {
            assert_eq!(tooldec_pending_matcher_accept_token(e.0, t), TOOLDEC_OK);
            assert_eq!(tooldec_matcher_accept_token(m.0, t), TOOLDEC_OK);
        }
    }
    assert!(some > 0, "the walk had no forced bytes to compare");
    // NULL handles and out-pointers.
    let mut n = 7usize;
    // SAFETY: NULL handles and out-pointers are what is tested.
    unsafe {
        assert_eq!(
            tooldec_pending_matcher_reset(ptr::null_mut()),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_matcher_validate_tokens(e.0, tokens.as_ptr(), 1, ptr::null_mut()),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_matcher_validate_tokens(ptr::null_mut(), tokens.as_ptr(), 1, &mut n),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(n, 0, "the count is zeroed first");
        assert_eq!(
            tooldec_pending_matcher_validate_tokens(e.0, ptr::null(), 2, &mut n),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_matcher_forced_bytes(e.0, ptr::null_mut(), 4, &mut n),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_pending_matcher_forced_bytes(e.0, ptr::null_mut(), 0, ptr::null_mut()),
            TOOLDEC_ERR_NULL
        );
    }
}
