//! Loading untrusted bytes never panics: truncations, bit flips, foreign
//! headers, misaligned buffers and corrupt zstd frames are all errors. When a
//! mutated payload happens to pass validation, serving from it must still
//! not panic (validation guarantees every index the serving path computes).
//!
//! Integrity (format version 4 on): every truncation and every changed byte of
//! the golden artifacts is refused, by the envelope of a compressed file
//! before anything is decompressed, and by the payload checksum of a raw
//! payload. Mutation tests that aim at the structural checks behind the
//! checksum re-stamp it (`layout::stamp_checksum`).

use crate::fuzz_common;

use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{compile, spec, Options};
use tooldec_runtime::layout::{self, envelope, hdr, HEADER_WORDS};
use tooldec_runtime::{Artifact, Error, Grammar};

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

use fuzz_common::{aligned, view};

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
        m.accept_token(step.wrapping_mul(7919) % (g.mask_width() as u32 + 3));
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
        // Past the checksum, to the structural checks behind it.
        layout::stamp_checksum(&mut q);
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
    layout::stamp_checksum(&mut v);
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
    // The envelope's checksum notices before zstd sees the frame.
    let err = Artifact::from_bytes(&flipped).err().unwrap();
    assert!(err.is_corrupt(), "{err}");
    assert!(Artifact::open("/nonexistent/tools.tdm")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("cannot read"));
}

fn zstd_frame(p: &[u8]) -> Vec<u8> {
    tooldec_compiler::artifact::write::compress(p, 3).unwrap()
}

fn root(rel: &str) -> String {
    format!("{}/../{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// The committed compressed artifacts: the golden one and the fuzz seeds.
fn golden_files() -> Vec<(String, Vec<u8>)> {
    [
        "artifacts/weather-gpt2.tdm",
        "fuzz/seeds/react-bytes.tdm",
        "fuzz/seeds/hermes-budget.tdm",
    ]
    .into_iter()
    .map(|n| (n.to_string(), std::fs::read(root(n)).unwrap()))
    .collect()
}

/// Runs `f(lo, hi)` over `0..n` split between the available cores.
fn parallel(n: usize, f: impl Fn(usize, usize) + Sync) {
    let threads = std::thread::available_parallelism()
        .map_or(2, |t| t.get())
        .clamp(1, 8);
    let chunk = n.div_ceil(threads);
    std::thread::scope(|s| {
        for i in 0..threads {
            let f = &f;
            s.spawn(move || f(i * chunk, ((i + 1) * chunk).min(n)));
        }
    });
}

#[test]
fn every_truncation_of_each_golden_file_is_refused() {
    let t = std::time::Instant::now();
    for (name, file) in golden_files() {
        let len = file.len();
        assert!(Artifact::from_bytes(&file).is_ok(), "{name} loads");
        for n in 0..len {
            let err = match Artifact::from_bytes(&file[..n]) {
                Ok(_) => panic!("{name} cut to {n} bytes loaded"),
                Err(e) => e.to_string(),
            };
            if n >= envelope::BYTES {
                assert_eq!(
                    err,
                    format!("artifact truncated: the artifact says {len} bytes, the file has {n}"),
                    "{name}"
                );
            } else if n >= 4 {
                assert_eq!(
                    err,
                    format!("artifact truncated: envelope needs 40 bytes, only {n} present")
                );
            }
        }
    }
    println!("every truncation refused in {:.1?}", t.elapsed());
}

#[test]
fn every_changed_byte_of_each_golden_file_is_refused() {
    let t = std::time::Instant::now();
    for (name, file) in golden_files() {
        parallel(file.len(), |lo, hi| {
            let mut q = file.clone();
            for pos in lo..hi {
                // Every delta 1..=255 occurs, at positions of every residue.
                let delta = 1 + (pos % 255) as u8;
                q[pos] ^= delta;
                match Artifact::from_bytes(&q) {
                    Ok(_) => panic!("{name}: byte {pos} ^ {delta:#x} loaded"),
                    // The first four bytes are the envelope's magic: without
                    // it the file is no envelope (and no payload either).
                    Err(e) => assert!(pos < 4 || e.is_corrupt(), "{name} byte {pos}: {e}"),
                }
                q[pos] ^= delta;
            }
        });
    }
    println!("every changed byte refused in {:.1?}", t.elapsed());
}

/// Raw payloads (`--uncompressed`): every truncation, through the no_std
/// entry point on an aligned buffer (each refusal is constant time).
#[test]
fn every_truncation_of_each_raw_payload_is_refused() {
    for (name, file) in golden_files() {
        let p = Artifact::from_bytes(&file).unwrap().payload().to_vec();
        let words = aligned(&p);
        assert!(Grammar::from_bytes(view(&words, p.len())).is_ok());
        for n in 0..p.len() {
            if Grammar::from_bytes(view(&words, n)).is_ok() {
                panic!("{name}: the payload cut to {n} bytes loaded");
            }
        }
        // Artifact copies its input: a sample through it.
        for n in (0..p.len()).step_by(997) {
            assert!(Artifact::from_bytes(&p[..n]).is_err());
        }
    }
}

/// Raw payloads: a changed byte is refused, by the checksum unless it hits
/// the label, the byte-order word or the length. Every byte of the seeds'
/// payloads; a stride of the golden one's (1.4 MB: each check reads all of
/// it), with every byte of its header and section table.
#[test]
fn changed_bytes_of_each_raw_payload_are_refused() {
    for (name, file) in golden_files() {
        let p = Artifact::from_bytes(&file).unwrap().payload().to_vec();
        let positions: Vec<usize> = if p.len() < 100_000 {
            (0..p.len()).collect()
        } else {
            (0..(HEADER_WORDS + 42) * 4)
                .chain((0..p.len()).step_by(61))
                .collect()
        };
        parallel(positions.len(), |lo, hi| {
            let mut words = aligned(&p);
            for &pos in &positions[lo..hi] {
                let delta = 1 + (pos % 255) as u32;
                words[pos / 4] ^= delta << (8 * (pos % 4));
                match Grammar::from_bytes(view(&words, p.len())) {
                    Ok(_) => panic!("{name}: payload byte {pos} ^ {delta:#x} loaded"),
                    Err(e) => {
                        let w = pos / 4;
                        let structural = matches!(w, 0 | 1 | hdr::ENDIAN | hdr::TOTAL_BYTES);
                        assert!(structural || e.is_corrupt(), "{name} byte {pos}: {e}");
                    }
                }
                words[pos / 4] ^= delta << (8 * (pos % 4));
            }
        });
    }
}

fn golden() -> Artifact {
    Artifact::open(root("artifacts/weather-gpt2.tdm")).unwrap()
}

fn message(r: Result<Artifact, Error>) -> String {
    r.err().map(|e| e.to_string()).unwrap_or_default()
}

fn grammar_message(p: &[u8]) -> String {
    let words = aligned(p);
    Grammar::from_bytes(view(&words, p.len()))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// A file's envelope with one field changed and its own CRC re-stamped.
fn with_envelope_field(file: &[u8], at: usize, value: u32) -> Vec<u8> {
    let mut f = file.to_vec();
    f[at..at + 4].copy_from_slice(&value.to_le_bytes());
    let own = layout::crc32c(&f[..envelope::AT_SELF_CRC]);
    f[envelope::AT_SELF_CRC..envelope::BYTES].copy_from_slice(&own.to_le_bytes());
    f
}

#[test]
fn other_format_versions_are_named() {
    let file = std::fs::read(root("artifacts/weather-gpt2.tdm")).unwrap();
    let (v, before, after) = (layout::VERSION, layout::VERSION - 1, layout::VERSION + 1);
    let older = format!(
        "artifact format version {before}; this runtime reads version {v} \
         (recompile the artifact with this release's tooldec-compile)"
    );
    let newer = format!(
        "artifact format version {after}; this runtime reads version {v} \
         (it needs a newer tooldec runtime)"
    );
    // The envelope says so before anything is decompressed.
    let prev = with_envelope_field(&file, envelope::AT_VERSION, before);
    assert_eq!(message(Artifact::from_bytes(&prev)), older);
    let next = with_envelope_field(&file, envelope::AT_VERSION, after);
    assert_eq!(message(Artifact::from_bytes(&next)), newer);
    // Another version's envelope may have another layout: its version is
    // still read, whatever the rest holds.
    let mut v2 = file.clone();
    v2[envelope::AT_VERSION..envelope::AT_VERSION + 4].copy_from_slice(&2u32.to_le_bytes());
    v2[4] = 24;
    assert_eq!(
        message(Artifact::from_bytes(&v2)),
        older.replace(&format!("version {before}"), "version 2")
    );

    // A raw payload, and a bare zstd frame (as version 3 and earlier
    // wrote): the payload's header says.
    let mut p = golden().payload().to_vec();
    p[hdr::VERSION * 4] = before as u8;
    layout::stamp_checksum(&mut p);
    assert_eq!(grammar_message(&p), older);
    assert_eq!(message(Artifact::from_bytes(&p)), older);
    let bare = &tooldec_compiler::artifact::write::compress(&p, 3).unwrap()[envelope::BYTES..];
    assert_eq!(message(Artifact::from_bytes(bare)), older);
    p[hdr::VERSION * 4] = after as u8;
    layout::stamp_checksum(&mut p);
    assert_eq!(grammar_message(&p), newer);

    // A damaged version byte is damage, not another version.
    let mut d = golden().payload().to_vec();
    d[hdr::VERSION * 4 + 1] ^= 0x40;
    assert_eq!(
        grammar_message(&d),
        format!(
            "corrupt artifact: the header's version word reads {}, but the payload's \
             checksum holds for version {v}: the version word was damaged",
            v ^ 0x4000
        )
    );
    let mut e = file.clone();
    e[envelope::AT_VERSION] ^= 0x07;
    let err = Artifact::from_bytes(&e).err().unwrap();
    assert!(err.is_corrupt(), "{err}");
    assert!(
        err.to_string()
            .starts_with("corrupt artifact: the envelope (bytes 0-39) fails its CRC-32C check"),
        "{err}"
    );
}

#[test]
fn damage_is_explained_with_where() {
    let file = std::fs::read(root("artifacts/weather-gpt2.tdm")).unwrap();
    let len = file.len();
    let mut d = file.clone();
    d[len / 2] ^= 0x10;
    let msg = message(Artifact::from_bytes(&d));
    assert!(
        msg.starts_with(&format!(
            "corrupt artifact: the compressed data (bytes 40-{}) has CRC-32C ",
            len - 1
        )) && msg.ends_with("; the file was damaged or edited after it was written"),
        "{msg}"
    );
    let mut e = file.clone();
    e[envelope::AT_DATA_LEN] ^= 1;
    assert!(message(Artifact::from_bytes(&e))
        .starts_with("corrupt artifact: the envelope (bytes 0-39) fails its CRC-32C check"));
    let mut t = file.clone();
    t.extend_from_slice(b"tail");
    assert_eq!(
        message(Artifact::from_bytes(&t)),
        format!(
            "invalid artifact: the artifact says {len} bytes, the file has {} (4 bytes after its end)",
            len + 4
        )
    );
    let p = golden().payload().to_vec();
    let mut q = p.clone();
    q[p.len() - 5] ^= 0x80;
    let msg = grammar_message(&q);
    assert!(
        msg.starts_with(&format!(
            "corrupt artifact: the CRC-32C of the {}-byte payload is ",
            p.len()
        )) && msg.contains(", its header (word 22) records "),
        "{msg}"
    );
}

#[test]
fn vocabulary_and_logits_width_are_checked() {
    let art = golden();
    let g = art.grammar();
    let own = Vocab::builtin_gpt2().unwrap().fingerprint();
    assert!(g.check_vocabulary(&own).is_ok());
    let other = [0x9f; 32];
    let err = g.check_vocabulary(&other).err().unwrap();
    let hex: String = own[..8].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        err.to_string(),
        format!(
            "artifact was compiled for vocabulary \"gpt2 (built-in r50k_base)\" (sha256 {hex}\u{2026}), \
             not this one (sha256 9f9f9f9f9f9f9f9f\u{2026})"
        )
    );
    assert!(err.is_vocabulary_mismatch());
    assert!(
        std::mem::size_of::<Error>() <= 128,
        "{}",
        std::mem::size_of::<Error>()
    );

    assert!(g.check_mask_width(50257).is_ok());
    assert!(g.check_mask_width(50304).is_ok());
    assert_eq!(
        g.check_mask_width(50000).err().unwrap().to_string(),
        "the model's logits width 50000 is smaller than the artifact's vocab size 50257: \
         compile the artifact with --vocab-size 50000, or for the model it serves"
    );
}

#[test]
fn compressed_files_are_an_envelope_and_one_zstd_frame() {
    let file = std::fs::read(root("artifacts/weather-gpt2.tdm")).unwrap();
    assert_eq!(file[..4], envelope::MAGIC.to_le_bytes());
    assert_eq!(file[8..16], envelope::TAG);
    assert_eq!(file[envelope::AT_VERSION], layout::VERSION as u8);
    assert_eq!(
        file[envelope::BYTES..envelope::BYTES + 4],
        [0x28, 0xB5, 0x2F, 0xFD]
    );
    let art = golden();
    // The bare frame after the envelope is what `zstd -d` decompresses.
    let bare = Artifact::from_bytes(&file[envelope::BYTES..]).unwrap();
    assert_eq!(bare.payload(), art.payload());
    assert_eq!(
        layout::envelope(art.payload().len() as u32, &file[envelope::BYTES..])[..],
        file[..envelope::BYTES]
    );
    // Handed to the no_std entry point, it says what it is.
    assert!(grammar_message(&file).contains("zstd-compressed"));
}

#[test]
fn crc32c_is_the_castagnoli_crc() {
    assert_eq!(layout::crc32c(b"123456789"), 0xE306_9283);
    assert_eq!(layout::crc32c(b""), 0);
    assert_eq!(layout::crc32c(&[0u8; 32]), 0x8A91_36AA);
    // The accelerated path (three streams joined) agrees with the tables,
    // at every length around its thresholds and alignments.
    let data: Vec<u8> = (0..20_010u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for len in (0..200).chain(3000..3200).chain([4096, 9999, 19_999]) {
        for off in 0..3 {
            let b = &data[off..off + len];
            assert_eq!(
                layout::crc32c(b),
                layout::crc32c_portable(0, b),
                "len {len} off {off}"
            );
            let (x, y) = b.split_at(len / 3);
            assert_eq!(
                layout::crc32c_update(layout::crc32c(x), y),
                layout::crc32c(b)
            );
        }
    }
}

/// A payload of at least 4 MiB has its checksum computed on a second
/// thread beside the structural checks (`codec::read`); the verdict must
/// be the one-after-the-other order's: a changed byte anywhere is the
/// checksum's error, even where the structural checks trip on it too, and
/// an intact payload loads.
#[test]
fn a_large_payload_is_judged_by_its_checksum_first() {
    let tools: Vec<serde_json::Value> = (0..900)
        .map(|i| {
            serde_json::json!({"type": "function", "function": {
                "name": format!("tool_{i}_lookup"),
                "parameters": {"type": "object", "properties": {
                    format!("query_{i}"): {"type": "string"},
                    "limit": {"type": "integer"},
                    "mode": {"enum": [format!("fast_{i}"), "slow"]}},
                    "required": [format!("query_{i}")]}}})
        })
        .collect();
    let text = serde_json::to_string(&tools).unwrap();
    let set = spec::parse("large.json", &text).unwrap();
    let vocab = Vocab::builtin_gpt2().unwrap();
    let opts = Options {
        zstd_level: None,
        ..Options::default()
    };
    let p = compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact;
    assert!(p.len() >= 4 << 20, "{} bytes: below the threshold", p.len());
    let mut words = aligned(&p);
    Grammar::from_bytes(view(&words, p.len())).unwrap();
    // Row starts, masks, distances, the tools' table: each section.
    for pos in (HEADER_WORDS * 4 + 200..p.len()).step_by(p.len() / 23) {
        words[pos / 4] ^= 0x80 << (8 * (pos % 4));
        let err = Grammar::from_bytes(view(&words, p.len())).unwrap_err();
        assert!(err.is_corrupt(), "byte {pos}: {err}");
        words[pos / 4] ^= 0x80 << (8 * (pos % 4));
    }
}

/// Writes `payload` and loads it again: the loader's error, or nothing.
fn reload(payload: &tooldec_runtime::codec::Payload<'_>) -> String {
    let bytes = payload.to_bytes().unwrap();
    let aligned = aligned(&bytes);
    match Grammar::from_bytes(view(&aligned, bytes.len())) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// STOP_TOKENS is checked like every section: a list out of order, a
/// token beyond the vocabulary or a gate count longer than the section is
/// refused with the section's name; the list as written serves.
#[test]
fn stop_tokens_are_checked() {
    let path = format!(
        "{}/../grammars/examples/weather.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let set = spec::parse("weather.json", &std::fs::read_to_string(path).unwrap()).unwrap();
    let opts = Options {
        format: tooldec_compiler::CallFormat::load("qwen3-coder").unwrap(),
        zstd_level: None,
        ..Options::default()
    };
    let vocab = Vocab::builtin_gpt2().unwrap();
    let p = compile(&set, &vocab, &opts, &mut |_| {}).unwrap().artifact;
    let words = aligned(&p);
    let g = Grammar::from_bytes(view(&words, p.len())).unwrap();
    let section = g.payload().stop_tokens.words.to_vec();
    assert!(section.len() > 3, "qwen3-coder with GPT-2 has stop gates");
    let n = section[0] as usize;
    let with = |words: Vec<u32>| {
        let mut payload = *g.payload();
        payload.stop_tokens.words = &words;
        reload(&payload)
    };
    assert_eq!(with(section.clone()), "");
    let mut beyond = section.clone();
    *beyond.last_mut().unwrap() = vocab.len() as u32;
    let msg = with(beyond);
    assert!(msg.contains("section 16"), "{msg}");
    let mut long = section.clone();
    long[0] = (section.len() as u32) / 2 + 1;
    assert!(with(long).contains("section 16"));
    if n > 1 {
        let mut swapped = section.clone();
        swapped.swap(2, 3);
        assert!(with(swapped).contains("section 16"));
    }
}

/// LOOPS is checked like every section: a token past the vocabulary,
/// sets of another width or a cut section are refused with the section's
/// name, and a STATES loop set number past the set count with its state;
/// the section as written serves.
#[test]
fn loop_sets_are_checked() {
    let p = payload();
    let words = aligned(&p);
    let g = Grammar::from_bytes(view(&words, p.len())).unwrap();
    let section = g.payload().loops.words.to_vec();
    assert!(
        section.len() > 2,
        "the tiny grammar with GPT-2 has loop sets"
    );
    let with = |words: Vec<u32>| {
        let mut payload = *g.payload();
        payload.loops.words = &words;
        reload(&payload)
    };
    assert_eq!(with(section.clone()), "");
    let refused = |words: Vec<u32>, what: &str| {
        let msg = with(words);
        assert!(msg.contains(what), "{msg}");
    };
    let (m, w) = (section[0] as usize, section[1] as usize);
    // A token past GPT-2's 50,257 in the last set.
    let mut beyond = section.clone();
    *beyond.last_mut().unwrap() |= 1 << 31;
    refused(beyond, "section 17");
    // Another width.
    let mut wide = section.clone();
    wide[1] += 1;
    refused(wide, "section 17");
    // Cut inside the last set.
    refused(section[..section.len() - 1].to_vec(), "section 17");
    // The last set dropped: the states that name it name a set past the
    // count.
    let mut fewer = section[..2 + (m - 1) * w].to_vec();
    fewer[0] = m as u32 - 1;
    refused(fewer, "loop set of state");
}
