//! Hostile tool lists, call formats and vocabularies, drawn from
//! libFuzzer's bytes, compiled and checked as the stable fuzzer
//! (`tests/compile_fuzz.rs`) checks them: an artifact or an error with a
//! message, never a panic or a hang; an artifact loads, and its random
//! masked walks read back to calls whose arguments the schema accepts.
//! The generator and the check are `tests/compile_fuzz_gen.rs`.
#![no_main]

#[path = "../../tests/compile_fuzz_gen.rs"]
mod gen;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (case, seed) = gen::case_from_bytes(data);
    if let Err(e) = gen::check(&case, 2, seed) {
        panic!("{e}\n{}", case.describe());
    }
});
