//! `tooldec_compiler` from Rust, through the same `extern "C"` functions C
//! calls: an artifact compiled in the process is the one-off compile's
//! (`tooldec_compiler::compile`, what `tooldec-compile --uncompressed`
//! writes) byte for byte, for the built-in GPT-2 vocabulary, a
//! `tokenizer.json` file and its text, and (with `$TOOLDEC_DATA`) real
//! tokenizers and a GGUF file; it serves matchers after its compiler is
//! freed; one compiler compiles from several threads at once; bad tool
//! lists and options are refused with a status and a message naming the
//! place; NULL pointers are refused.

mod common;

use std::ffi::{c_char, CString};
use std::path::{Path, PathBuf};
use std::ptr;

use ::tooldec_compiler::vocab::Vocab;
use ::tooldec_compiler::{compile, spec, CallFormat, JsonOptions, Options};
use tooldec::{
    tooldec_artifact, tooldec_artifact_payload, tooldec_compiler_cache_bytes,
    tooldec_compiler_clear_cache, tooldec_compiler_compile, tooldec_compiler_eos_tokens,
    tooldec_compiler_free, tooldec_compiler_from_tokenizer_json, tooldec_compiler_gpt2,
    tooldec_compiler_open, tooldec_compiler_token_count, tooldec_compiler_vocab_fingerprint,
    tooldec_fill_masks, tooldec_matcher_accept_token, tooldec_matcher_free,
    tooldec_matcher_is_terminated, tooldec_matcher_new, tooldec_status,
    TOOLDEC_DEFAULT_CACHE_BYTES, TOOLDEC_ERR_BUDGET, TOOLDEC_ERR_COMPILE, TOOLDEC_ERR_INVALID,
    TOOLDEC_ERR_LOAD, TOOLDEC_ERR_NULL, TOOLDEC_OK,
};
use tooldec_runtime::Artifact;

use common::ffi::{c_compile, gpt2, text, Art, Compiler};

fn weather() -> (PathBuf, String) {
    let path = common::capi_dir().join("../grammars/examples/weather.json");
    let text = std::fs::read_to_string(&path).expect("weather.json");
    (path, text)
}

/// The one-off compile's raw payload (what `tooldec-compile
/// --uncompressed` writes) for `text` with `opts`.
fn one_off(vocab: &Vocab, text: &str, opts: Options) -> Vec<u8> {
    let set = spec::parse("tools", text).expect("the tools parse");
    let opts = Options {
        zstd_level: None,
        ..opts
    };
    compile(&set, vocab, &opts, &mut |_| {})
        .expect("the tools compile")
        .artifact
}

/// Walks `art` through the C ABI (matchers under a token budget, batched
/// fills, accepts) and requires its masks to be `want`'s (loaded by the
/// Rust runtime) at every step. Seeded walks: at each step a random
/// allowed token, or (one time in three) the one that brings the call
/// closest to complete; the budget ends every walk.
fn walk_same_masks(art: &Art, want: &[u8]) {
    let reference = Artifact::from_bytes(want).unwrap();
    let g = reference.grammar();
    let words = g.mask_words();
    let budget = g.min_tokens() + 48;
    let mut rng = common::Rng::new(want.len() as u64);
    let mut c_mask = vec![0u32; words];
    let mut r_mask = vec![0u32; words];
    let mut longest = 0;
    for _ in 0..6 {
        let mut m = ptr::null_mut();
        let mut err = [0 as c_char; 256];
        // SAFETY: a live artifact, valid out and error buffers.
        let st = unsafe {
            tooldec_matcher_new(
                art.0,
                ptr::null(),
                &budget,
                0,
                &mut m,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(st, TOOLDEC_OK, "{}", text(&err));
        let mut rm = g.matcher_with_budget(budget).unwrap();
        let mut steps = 0;
        // SAFETY: `m` is a live matcher of this thread.
        unsafe {
            while !tooldec_matcher_is_terminated(m) {
                let ms = [m.cast_const()];
                let st = tooldec_fill_masks(
                    ms.as_ptr(),
                    1,
                    c_mask.as_mut_ptr(),
                    words,
                    words,
                    ptr::null_mut(),
                    0,
                );
                assert_eq!(st, TOOLDEC_OK);
                rm.fill_mask(&mut r_mask);
                assert!(c_mask == r_mask, "masks differ at step {steps}");
                let allowed: Vec<u32> = (0..g.mask_width() as u32)
                    .filter(|&t| r_mask[t as usize / 32] >> (t % 32) & 1 == 1)
                    .collect();
                assert!(!allowed.is_empty(), "nothing allowed at step {steps}");
                let t = if rng.below(3) == 0 {
                    *allowed
                        .iter()
                        .min_by_key(|&&t| {
                            let mut next = rm;
                            next.accept_token(t);
                            next.state().and_then(|s| g.distance(s)).unwrap_or(0)
                        })
                        .unwrap()
                } else {
                    allowed[rng.below(allowed.len())]
                };
                assert_eq!(tooldec_matcher_accept_token(m, t), TOOLDEC_OK);
                assert!(rm.accept_token(t));
                steps += 1;
                // The budget's tokens, then EOS.
                assert!(steps <= budget + 1, "past the budget");
            }
            tooldec_matcher_free(m);
        }
        assert!(rm.is_terminated());
        longest = longest.max(steps);
    }
    assert!(
        longest > 8,
        "the walks are too short to say much ({longest} tokens)"
    );
}

#[test]
fn gpt2_compiles_weather_to_the_one_off_artifact() {
    let (_, tools) = weather();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let c = gpt2(&[]).unwrap();

    // No options: the CLI's defaults, hence the committed golden artifact
    // (`tooldec-compile weather.json`), decompressed.
    let art = c_compile(&c, tools.as_bytes(), None).unwrap();
    let golden = Artifact::open(common::golden_artifact()).unwrap();
    assert!(
        art.payload() == golden.payload(),
        "the default compile is not the golden artifact"
    );
    assert_eq!(art.metadata(), golden.grammar().metadata());
    // "" and "{}" are the defaults too.
    for options in ["", "{}", r#"{"format": null}"#] {
        let again = c_compile(&c, tools.as_bytes(), Some(options)).unwrap();
        assert_eq!(again.payload(), art.payload(), "{options:?}");
    }

    let cases: [(&str, Options); 3] = [
        (
            r#"{"format": "hermes", "max_tokens": 96, "vocab_size": 50304}"#,
            Options {
                format: CallFormat::load("hermes").unwrap(),
                max_tokens: Some(96),
                mask_width: Some(50304),
                ..Options::default()
            },
        ),
        (
            r#"{"format": "hermes", "entry": "call", "max_ws": 1, "open_objects": true,
                "any_order": 2, "no_regions": true, "threads": 1}"#,
            Options {
                format: CallFormat::load("hermes")
                    .unwrap()
                    .only_entry("call")
                    .unwrap(),
                json: JsonOptions {
                    max_ws: 1,
                    open_objects: true,
                    any_order: 2,
                    ..JsonOptions::default()
                },
                regions: false,
                threads: 1,
                ..Options::default()
            },
        ),
        (
            r#"{"format": "qwen3", "dialect": "openai", "relax": true, "max_depth": 8,
                "max_count": 64, "max_recursion": 2, "any_depth": 2}"#,
            Options {
                format: CallFormat::load("qwen3").unwrap(),
                json: JsonOptions {
                    relax: true,
                    max_depth: 8,
                    max_count: 64,
                    max_recursion: 2,
                    any_depth: 2,
                    ..JsonOptions::default()
                },
                ..Options::default()
            },
        ),
    ];
    for (options, opts) in cases {
        let art = c_compile(&c, tools.as_bytes(), Some(options)).unwrap();
        let want = one_off(&vocab, &tools, opts);
        assert!(
            art.payload() == want.as_slice(),
            "{options}: the payload differs from the one-off compile's"
        );
        walk_same_masks(&art, &want);
    }
}

#[test]
fn the_artifact_outlives_the_compiler_and_the_cache_shares_it() {
    let (_, tools) = weather();
    let c = gpt2(&[]).unwrap();
    // SAFETY: a live handle.
    assert_eq!(unsafe { tooldec_compiler_cache_bytes(c.0) }, 0);
    let options = Some(r#"{"format": "hermes"}"#);
    let a = c_compile(&c, tools.as_bytes(), options).unwrap();
    // SAFETY: a live handle.
    let held = unsafe { tooldec_compiler_cache_bytes(c.0) };
    assert!(held > 0);
    // Kept: the same grammar again, not a copy.
    let b = c_compile(&c, tools.as_bytes(), options).unwrap();
    assert_eq!(a.payload().as_ptr(), b.payload().as_ptr());
    // SAFETY: a live handle.
    assert_eq!(unsafe { tooldec_compiler_cache_bytes(c.0) }, held);
    // SAFETY: a live handle.
    unsafe { tooldec_compiler_clear_cache(c.0) };
    // SAFETY: a live handle.
    assert_eq!(unsafe { tooldec_compiler_cache_bytes(c.0) }, 0);
    let d = c_compile(&c, tools.as_bytes(), options).unwrap();
    assert_ne!(a.payload().as_ptr(), d.payload().as_ptr());
    assert_eq!(a.payload(), d.payload());
    drop(c);
    let want = a.payload().to_vec();
    walk_same_masks(&d, &want);
    drop((a, b));
    walk_same_masks(&d, &want);
}

#[test]
fn one_compiler_compiles_from_threads_at_once() {
    let (_, weather) = weather();
    let tiny = std::fs::read_to_string(common::capi_dir().join("../grammars/examples/tiny.json"))
        .expect("tiny.json");
    let jobs: Vec<(&str, &str)> = vec![
        (&weather, r#"{"format": "hermes"}"#),
        (&tiny, r#"{"format": "react"}"#),
        (&weather, r#"{"format": "react", "max_tokens": 200}"#),
        (&tiny, r#"{"format": "hermes"}"#),
    ];
    let reference = gpt2(&[]).unwrap();
    let want: Vec<Vec<u8>> = jobs
        .iter()
        .map(|(t, o)| {
            c_compile(&reference, t.as_bytes(), Some(o))
                .unwrap()
                .payload()
                .to_vec()
        })
        .collect();
    let shared = gpt2(&[]).unwrap();
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for k in 0..2 {
            let (jobs, want, shared, barrier) = (&jobs, &want, &shared, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in (k..jobs.len() * 2).step_by(2) {
                    let (t, o) = jobs[i % jobs.len()];
                    let art = c_compile(shared, t.as_bytes(), Some(o)).unwrap();
                    assert!(art.payload() == want[i % jobs.len()].as_slice(), "job {i}");
                }
            });
        }
    });
}

#[test]
fn a_bad_tool_list_is_refused_naming_the_place() {
    let c = gpt2(&[]).unwrap();
    let bad = r#"[
  {"type": "function", "function": {"name": "ok", "parameters": {"type": "object"}}},
  {"type": "function", "function": {"name": "f",
    "parameters": {"type": "object", "properties": {"x": {"type": "strng"}}}}}
]"#;
    let (st, msg) = c_compile(&c, bad.as_bytes(), None).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_COMPILE, "{msg}");
    assert!(
        msg.contains("tools:4:")
            && msg.contains("(at /1/function/parameters/properties/x/type)")
            && msg.contains("strng"),
        "{msg}"
    );
    let (st, msg) = c_compile(&c, br#"[{"name": "f","#, None).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_COMPILE);
    assert!(
        msg.contains("tools:1:") && msg.contains("invalid JSON"),
        "{msg}"
    );
    let (st, msg) = c_compile(&c, b"[\"\xc3\x28\"]", None).err().unwrap();
    assert_eq!(
        (st, msg.as_str()),
        (TOOLDEC_ERR_INVALID, "tools is not UTF-8 (at byte 2)")
    );
    let dup = r#"[{"type": "function", "function": {"name": "ok", "parameters": {"type": "object"}}},
                  {"type": "function", "function": {"name": "ok", "parameters":
                    {"type": "object", "properties": {"y": {"type": "integer"}}}}}]"#;
    let (st, msg) = c_compile(&c, dup.as_bytes(), None).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_COMPILE);
    assert!(msg.contains("\"ok\""), "{msg}");
    // Renamed instead, as --rename-collisions does.
    let renamed = c_compile(&c, dup.as_bytes(), Some(r#"{"rename_collisions": true}"#)).unwrap();
    assert!(
        renamed.metadata().contains("ok_2"),
        "{}",
        renamed.metadata()
    );
    // A message longer than the buffer is cut, still terminated.
    let mut err = [0x7f as c_char; 16];
    let mut out = ptr::null_mut();
    // SAFETY: a live compiler, valid buffers.
    let st = unsafe {
        tooldec_compiler_compile(
            c.0,
            bad.as_ptr().cast(),
            bad.len(),
            ptr::null(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        )
    };
    assert_eq!(st, TOOLDEC_ERR_COMPILE);
    assert_eq!(text(&err).len(), 15);
    // And none at all is fine.
    // SAFETY: as above, no error buffer.
    let st = unsafe {
        tooldec_compiler_compile(
            c.0,
            bad.as_ptr().cast(),
            bad.len(),
            ptr::null(),
            &mut out,
            ptr::null_mut(),
            0,
        )
    };
    assert_eq!(st, TOOLDEC_ERR_COMPILE);
}

#[test]
fn bad_options_are_refused_naming_the_option() {
    let (_, tools) = weather();
    let c = gpt2(&[]).unwrap();
    let cases: &[(&str, tooldec_status, &str)] = &[
        (
            r#"{"format": "nope"}"#,
            TOOLDEC_ERR_INVALID,
            "unknown format \"nope\"",
        ),
        (
            r#"{"format": "hermes", "entry": "nope"}"#,
            TOOLDEC_ERR_INVALID,
            "has no entry \"nope\"",
        ),
        (
            r#"{"dialect": "nope"}"#,
            TOOLDEC_ERR_INVALID,
            "unknown dialect \"nope\"",
        ),
        (
            r#"{"max_tokens": 2}"#,
            TOOLDEC_ERR_BUDGET,
            "--max-tokens 2 is too small",
        ),
        (
            r#"{"max_tokens": 0}"#,
            TOOLDEC_ERR_INVALID,
            "options: \"max_tokens\" must be at least 1",
        ),
        (
            r#"{"max_tokens": -1}"#,
            TOOLDEC_ERR_INVALID,
            "options: \"max_tokens\" must be a non-negative whole number, got -1",
        ),
        (r#"{"vocab_size": 100}"#, TOOLDEC_ERR_INVALID, "100"),
        (
            r#"{"relax": "yes"}"#,
            TOOLDEC_ERR_INVALID,
            "options: \"relax\" must be true or false, got a string",
        ),
        (
            r#"{"max_tokens": 96, "zstd_level": 3}"#,
            TOOLDEC_ERR_INVALID,
            "options: unknown key \"zstd_level\"",
        ),
        (
            r#"{"vocab-size": 50304}"#,
            TOOLDEC_ERR_INVALID,
            "(did you mean \"vocab_size\"?)",
        ),
        (
            r#"["--format", "hermes"]"#,
            TOOLDEC_ERR_INVALID,
            "options: expected a JSON object",
        ),
        (
            "{\"format\": \"hermes\"\n,}",
            TOOLDEC_ERR_INVALID,
            "options: invalid JSON: trailing comma at line 2 column 2",
        ),
        (
            r#"{"format": "/nope/my.tdg"}"#,
            TOOLDEC_ERR_COMPILE,
            "/nope/my.tdg",
        ),
        (
            r#"{"time_limit": -1}"#,
            TOOLDEC_ERR_INVALID,
            "options: \"time_limit\" must be seconds (0: no limit), got -1",
        ),
        (
            r#"{"memory_limit": 1000}"#,
            TOOLDEC_ERR_COMPILE,
            "more than the memory budget of 1000 bytes",
        ),
        (
            r#"{"vocab_size": 4294967295}"#,
            TOOLDEC_ERR_INVALID,
            "--vocab-size 4294967295 is beyond the 16777216 token ids",
        ),
        (
            r#"{"any_depth": 100000000}"#,
            TOOLDEC_ERR_INVALID,
            "--any-depth 100000000 is above its bound",
        ),
    ];
    for &(options, status, has) in cases {
        let (st, msg) = c_compile(&c, tools.as_bytes(), Some(options))
            .err()
            .unwrap_or_else(|| panic!("{options} compiled"));
        assert!(
            st == status && msg.contains(has),
            "{options}: status {st:?}, message {msg:?}; wanted {status:?} and {has:?}"
        );
    }
}

#[test]
fn null_pointers_are_refused() {
    let c = gpt2(&[]).unwrap();
    let tools = b"[]";
    let mut out = ptr::dangling_mut::<tooldec_artifact>();
    let mut err = [0 as c_char; 128];
    // SAFETY: every pointer is NULL or valid; NULL is the
    // point.
    unsafe {
        let st = tooldec_compiler_compile(
            ptr::null(),
            tools.as_ptr().cast(),
            2,
            ptr::null(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(
            (st, out.is_null(), text(&err).as_str()),
            (TOOLDEC_ERR_NULL, true, "compiler is NULL")
        );
        let st = tooldec_compiler_compile(
            c.0,
            ptr::null(),
            0,
            ptr::null(),
            &mut out,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(
            (st, text(&err).as_str()),
            (TOOLDEC_ERR_NULL, "tools is NULL")
        );
        let st = tooldec_compiler_compile(
            c.0,
            tools.as_ptr().cast(),
            2,
            ptr::null(),
            ptr::null_mut(),
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!((st, text(&err).as_str()), (TOOLDEC_ERR_NULL, "out is NULL"));

        let mut made = ptr::dangling_mut::<tooldec::tooldec_compiler>();
        let st = tooldec_compiler_open(
            ptr::null(),
            ptr::null(),
            0,
            0,
            &mut made,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(
            (st, made.is_null(), text(&err).as_str()),
            (TOOLDEC_ERR_NULL, true, "tokenizer_path is NULL")
        );
        let st = tooldec_compiler_gpt2(ptr::null(), 3, 0, &mut made, err.as_mut_ptr(), err.len());
        assert_eq!(
            (st, text(&err).as_str()),
            (TOOLDEC_ERR_NULL, "eos is NULL but n_eos is 3")
        );
        let st = tooldec_compiler_gpt2(
            ptr::null(),
            0,
            0,
            ptr::null_mut(),
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!((st, text(&err).as_str()), (TOOLDEC_ERR_NULL, "out is NULL"));
        let st = tooldec_compiler_from_tokenizer_json(
            ptr::null(),
            5,
            ptr::null(),
            ptr::null(),
            0,
            0,
            &mut made,
            err.as_mut_ptr(),
            err.len(),
        );
        assert_eq!(
            (st, text(&err).as_str()),
            (TOOLDEC_ERR_NULL, "json is NULL")
        );

        assert_eq!(tooldec_compiler_cache_bytes(ptr::null()), 0);
        assert_eq!(tooldec_compiler_token_count(ptr::null()), 0);
        tooldec_compiler_clear_cache(ptr::null());
        tooldec_compiler_free(ptr::null_mut());
        let mut n = 7;
        assert!(tooldec_compiler_eos_tokens(ptr::null(), &mut n).is_null());
        assert_eq!(n, 0);
        let mut fp = [0u8; 32];
        assert_eq!(
            tooldec_compiler_vocab_fingerprint(ptr::null(), fp.as_mut_ptr()),
            TOOLDEC_ERR_NULL
        );
        assert_eq!(
            tooldec_compiler_vocab_fingerprint(c.0, ptr::null_mut()),
            TOOLDEC_ERR_NULL
        );
        assert!(tooldec_artifact_payload(ptr::null(), &mut n).is_null());
        assert_eq!(n, 0);
    }
}

#[test]
fn eos_overrides_and_vocabulary_queries() {
    let c = gpt2(&["50256"]).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let mut n = 0;
    let mut fp = [0u8; 32];
    // SAFETY: a live handle; the EOS array lives as long as it.
    unsafe {
        assert_eq!(tooldec_compiler_token_count(c.0), vocab.len());
        let eos = tooldec_compiler_eos_tokens(c.0, &mut n);
        assert_eq!(std::slice::from_raw_parts(eos, n), &[50256]);
        assert_eq!(
            tooldec_compiler_vocab_fingerprint(c.0, fp.as_mut_ptr()),
            TOOLDEC_OK
        );
    }
    assert_eq!(fp, vocab.fingerprint());
    let (st, msg) = gpt2(&["<|nope|>"]).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_LOAD);
    assert!(msg.contains("<|nope|>"), "{msg}");
    let (st, msg) = gpt2(&["hello"]).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_LOAD);
    assert!(msg.contains("text token"), "{msg}");
}

/// Creates a compiler from a file (`open`) or from the file's text.
fn from_file(path: &Path, eos: &[&str]) -> Result<Compiler, (tooldec_status, String)> {
    from(path, eos, false)
}

fn from(path: &Path, eos: &[&str], as_text: bool) -> Result<Compiler, (tooldec_status, String)> {
    let owned: Vec<CString> = eos.iter().map(|e| CString::new(*e).unwrap()).collect();
    let ptrs: Vec<*const c_char> = owned.iter().map(|e| e.as_ptr()).collect();
    let mut out = ptr::null_mut();
    let mut err = [0 as c_char; 512];
    let st = if as_text {
        let json = std::fs::read(path).unwrap();
        let name = CString::new("my-tokenizer").unwrap();
        // SAFETY: valid buffers and arrays for the call.
        unsafe {
            tooldec_compiler_from_tokenizer_json(
                json.as_ptr().cast(),
                json.len(),
                name.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len(),
                TOOLDEC_DEFAULT_CACHE_BYTES,
                &mut out,
                err.as_mut_ptr(),
                err.len(),
            )
        }
    } else {
        let p = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: valid buffers and arrays for the call.
        unsafe {
            tooldec_compiler_open(
                p.as_ptr(),
                ptrs.as_ptr(),
                ptrs.len(),
                TOOLDEC_DEFAULT_CACHE_BYTES,
                &mut out,
                err.as_mut_ptr(),
                err.len(),
            )
        }
    };
    if st == TOOLDEC_OK {
        Ok(Compiler(out))
    } else {
        assert!(out.is_null());
        Err((st, text(&err)))
    }
}

#[test]
fn a_tokenizer_json_file_and_its_text_compile_like_the_one_off() {
    let path = common::capi_dir().join("../python/tests/fixtures/bytes-tokenizer.json");
    let (_, tools) = weather();
    let vocab = Vocab::from_tokenizer_json(&path, &["<|endoftext|>".to_string()]).unwrap();
    let want = one_off(&vocab, &tools, Options::default());
    let c = from_file(&path, &["<|endoftext|>"]).unwrap();
    let art = c_compile(&c, tools.as_bytes(), None).unwrap();
    assert!(art.payload() == want.as_slice());
    walk_same_masks(&art, &want);

    // From its text: the same masks; the label is the name given.
    let t = from(&path, &["<|endoftext|>"], true).unwrap();
    let art = c_compile(&t, tools.as_bytes(), None).unwrap();
    walk_same_masks(&art, &want);
    assert!(
        art.metadata().contains("my-tokenizer"),
        "{}",
        art.metadata()
    );
    let (st, msg) = from(&path, &[], true).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_INVALID);
    assert!(
        msg.contains("my-tokenizer: no end-of-sequence token given"),
        "{msg}"
    );

    let (st, msg) = from_file(Path::new("/does/not/tokenizer.json"), &[])
        .err()
        .unwrap();
    assert_eq!(st, TOOLDEC_ERR_LOAD);
    assert!(
        msg.contains("/does/not/tokenizer.json") && msg.contains("cannot read it"),
        "{msg}"
    );
    let (st, msg) = from_file(&path, &["<|nope|>"]).err().unwrap();
    assert_eq!(st, TOOLDEC_ERR_LOAD);
    assert!(
        msg.contains("bytes-tokenizer.json") && msg.contains("<|nope|>"),
        "{msg}"
    );
}

/// With `$TOOLDEC_DATA`: Qwen2.5's tokenizer.json (its EOS from the
/// tokenizer_config.json beside it) and a GGUF model file compile in the
/// process as the one-off compile does. Skipped without the data.
#[test]
fn real_tokenizers_compile_like_the_one_off() {
    if tooldec_testkit::data_dir().is_none() {
        println!("TOOLDEC_DATA unset: skipping the real tokenizers compiled through the C ABI");
        return;
    }
    let (_, tools) = weather();
    let qwen = tooldec_testkit::data_file("tokenizers/qwen2.5/tokenizer.json");
    let vocab = Vocab::from_tokenizer_json(&qwen, &[]).unwrap();
    let opts = Options {
        format: CallFormat::load("hermes").unwrap(),
        mask_width: Some(151936),
        ..Options::default()
    };
    let want = one_off(&vocab, &tools, opts);
    let c = from_file(&qwen, &[]).unwrap();
    let art = c_compile(
        &c,
        tools.as_bytes(),
        Some(r#"{"format": "hermes", "vocab_size": 151936}"#),
    )
    .unwrap();
    assert!(art.payload() == want.as_slice());
    walk_same_masks(&art, &want);

    let gguf = tooldec_testkit::data_file(
        "models/smollm2-135m-instruct-q4_1/SmolLM2-135M-Instruct.Q4_1.gguf",
    );
    let vocab = Vocab::from_gguf(&gguf, &[]).unwrap();
    let want = one_off(&vocab, &tools, Options::default());
    let c = from_file(&gguf, &[]).unwrap();
    let art = c_compile(&c, tools.as_bytes(), None).unwrap();
    assert!(art.payload() == want.as_slice());
}
