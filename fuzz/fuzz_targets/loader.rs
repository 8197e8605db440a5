//! Loads arbitrary and mutated bytes; serves from whatever passes
//! validation. Never a panic, a hang or an out-of-bounds read. The modes
//! are described at `fuzz_loader` in `tests/fuzz_common.rs`.
#![no_main]

#[path = "../../tests/fuzz_common.rs"]
mod fuzz_common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tooldec_runtime::Artifact;

const SEEDS: [&[u8]; 2] = [
    include_bytes!("../seeds/react-bytes.tdm"),
    include_bytes!("../seeds/hermes-budget.tdm"),
];

fn payloads() -> &'static [Vec<u8>] {
    static P: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    P.get_or_init(|| {
        SEEDS
            .iter()
            .map(|s| Artifact::from_bytes(s).unwrap().payload().to_vec())
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    fuzz_common::fuzz_loader(data, &SEEDS, payloads());
});
