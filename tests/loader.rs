//! Loading untrusted bytes never panics: truncations, bit flips, foreign
//! headers, misaligned buffers and corrupt zstd frames are all errors. When a
//! mutated payload happens to pass validation, serving from it must still
//! not panic (validation guarantees every index the serving path computes).

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::layout::{hdr, HEADER_WORDS};
use tooldec_runtime::{Artifact, Grammar};

fn payload() -> Vec<u8> {
    let path = format!(
        "{}/../grammars/examples/tiny.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let set = spec::parse("tiny.json", &std::fs::read_to_string(path).unwrap()).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        zstd_level: None,
        ..Options::default()
    };
    compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact
}

/// Copies into a 4-aligned buffer, as an engine loading from disk would.
fn aligned(bytes: &[u8]) -> Vec<u32> {
    let mut words = vec![0u32; bytes.len().div_ceil(4)];
    for (i, b) in bytes.iter().enumerate() {
        words[i / 4] |= (*b as u32) << (8 * (i % 4));
    }
    words
}

fn view(words: &[u32], len: usize) -> &[u8] {
    // SAFETY: u8 has no alignment requirement; len is within the buffer.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) }
}

/// Serves a few steps from a grammar that passed validation.
/// The lowest token id set in a mask.
fn first_allowed(words: &[u32]) -> Option<u32> {
    words
        .iter()
        .enumerate()
        .find(|(_, w)| **w != 0)
        .map(|(i, w)| i as u32 * 32 + w.trailing_zeros())
}

fn exercise(g: &Grammar<'_>) {
    let mut m = g.matcher();
    let mut words = vec![0u32; g.mask_words()];
    for step in 0..16u32 {
        m.fill_mask(&mut words);
        let t = first_allowed(&words).unwrap_or(step);
        m.accept_token(t);
        m.accept_token(step.wrapping_mul(7919) % (g.vocab_size() as u32 + 3));
        let _ = (m.is_accepting(), m.is_terminated());
    }
    // Budgets read the distance and tier tables.
    for n in [0, 1, 5, 40, u32::MAX] {
        if let Ok(mut m) = g.matcher_with_budget(n) {
            for step in 0..16u32 {
                m.fill_mask(&mut words);
                let t = first_allowed(&words).unwrap_or(step);
                m.accept_token(t);
                let _ = (m.tokens_left(), m.set_budget(Some(step)));
            }
        }
    }
    for s in [0, 1, g.start_state(), g.state_count() as u32 - 1, u32::MAX] {
        for left in [0, 1, 2, 7, u32::MAX] {
            g.fill_budget_mask(s, left, &mut words);
        }
        let _ = (g.distance(s), g.top_tier(s), g.tiers(s).count());
    }
}

#[test]
fn every_truncation_is_an_error() {
    let p = payload();
    let words = aligned(&p);
    assert!(Grammar::from_bytes(view(&words, p.len())).is_ok());
    for len in (0..p.len()).step_by(3).chain(p.len() - 8..p.len()) {
        let err = Grammar::from_bytes(view(&words, len));
        assert!(err.is_err(), "truncated to {len} bytes but loaded");
    }
}

#[test]
fn bit_flips_never_panic() {
    let p = payload();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let (mut ok, mut err) = (0, 0);
    for i in 0..3000 {
        let mut q = p.clone();
        let flips = 1 + (next() % 4) as usize;
        for _ in 0..flips {
            // Mostly in the header and tables, where structure lives.
            let pos = if i % 2 == 0 {
                (next() % 1024) as usize
            } else {
                (next() as usize) % q.len()
            };
            let len = q.len();
            q[pos % len] ^= 1 << (next() % 8);
        }
        let words = aligned(&q);
        match Grammar::from_bytes(view(&words, q.len())) {
            Ok(g) => {
                ok += 1;
                exercise(&g);
            }
            Err(e) => {
                err += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(err > 100, "only {err} of 3000 mutations were detected");
    println!("{ok} mutated payloads still valid and served, {err} refused");
}

#[test]
fn foreign_and_mismatched_inputs_are_explained() {
    let p = payload();
    let msg = |bytes: &[u8]| {
        let words = aligned(bytes);
        Grammar::from_bytes(view(&words, bytes.len()))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(msg(b"").contains("truncated"), "{}", msg(b""));
    assert!(msg(b"GGUF\x03\0\0\0 not an artifact at all").contains("not a tooldec artifact"));
    let mut v = p.clone();
    v[hdr::VERSION * 4] = 99;
    assert!(msg(&v).contains("version 99"), "{}", msg(&v));
    let mut e = p.clone();
    e[hdr::ENDIAN * 4..hdr::ENDIAN * 4 + 4].reverse();
    assert!(msg(&e).contains("endianness"), "{}", msg(&e));
    let mut extra = p.clone();
    extra.extend_from_slice(&[0; 4]);
    assert!(msg(&extra).contains("payload length"), "{}", msg(&extra));
    assert!(p.len() > HEADER_WORDS * 4);

    // A compressed artifact handed to the no_std entry point.
    let compressed = zstd_frame(&p);
    assert!(
        msg(&compressed).contains("zstd-compressed"),
        "{}",
        msg(&compressed)
    );
    assert!(Artifact::from_bytes(&compressed).is_ok());

    // Misaligned buffers are refused, not read unaligned.
    let words = aligned(&[&[0u8][..], &p].concat());
    let shifted = &view(&words, p.len() + 1)[1..];
    let err = Grammar::from_bytes(shifted)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("alignment"), "{err}");
    // Artifact copies into an aligned buffer itself.
    assert!(Artifact::from_bytes(shifted).is_ok());
}

#[test]
fn corrupt_compressed_artifacts_are_errors() {
    let c = zstd_frame(&payload());
    for cut in [5, c.len() / 2, c.len() - 1] {
        assert!(Artifact::from_bytes(&c[..cut]).is_err(), "cut at {cut}");
    }
    let mut flipped = c.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x55;
    // Either zstd notices or the payload validation does; never a panic.
    let _ = Artifact::from_bytes(&flipped);
    assert!(Artifact::open("/nonexistent/tools.tdm")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("cannot read"));
}

fn zstd_frame(p: &[u8]) -> Vec<u8> {
    tooldec_compiler::write::compress(p, 3).unwrap()
}
