//! What each feature set loads. With `zstd` (the default) a compressed
//! artifact decompresses; with `std` alone its envelope is still checked
//! and it is then refused with an error that names the missing feature.
//! (`cargo test -p tooldec-runtime --no-default-features --features std`
//! runs the second.)

#![cfg(feature = "std")]

use tooldec_runtime::Artifact;

fn golden() -> Vec<u8> {
    let path = format!(
        "{}/../artifacts/weather-gpt2.tdm",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(path).unwrap()
}

#[cfg(feature = "zstd")]
#[test]
fn compressed_artifacts_load_with_zstd() {
    let a = Artifact::from_bytes(&golden()).unwrap();
    assert_eq!(a.grammar().mask_width(), 50257);
}

#[cfg(not(feature = "zstd"))]
#[test]
fn without_zstd_compressed_artifacts_are_refused_after_their_envelope() {
    let file = golden();
    let e = Artifact::from_bytes(&file).unwrap_err().to_string();
    assert!(e.contains("without its `zstd` feature"), "{e}");
    // The envelope is checked first: a truncated file says so.
    let e = Artifact::from_bytes(&file[..file.len() - 1])
        .unwrap_err()
        .to_string();
    assert!(e.contains("artifact truncated"), "{e}");
}
