//! Arbitrary sequences of matcher calls on valid artifacts (the two seeds
//! and the golden weather-gpt2 artifact), with the serving invariants
//! checked: `accept_token(t)` succeeds exactly when `t`'s mask bit is set,
//! refused calls change nothing, `validate_tokens` agrees with
//! `accept_tokens`, a rollback restores the exact earlier mask. See `serve`
//! in `tests/fuzz_common.rs`.
#![no_main]

#[path = "../../tests/fuzz_common.rs"]
mod fuzz_common;

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tooldec_runtime::{Artifact, Grammar};

fn artifacts() -> &'static [Artifact] {
    static A: OnceLock<Vec<Artifact>> = OnceLock::new();
    A.get_or_init(|| {
        [
            &include_bytes!("../seeds/react-bytes.tdm")[..],
            &include_bytes!("../seeds/hermes-budget.tdm")[..],
            &include_bytes!("../../artifacts/weather-gpt2.tdm")[..],
        ]
        .iter()
        .map(|b| Artifact::from_bytes(b).unwrap())
        .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let grammars: Vec<Grammar<'_>> = artifacts().iter().map(|a| a.grammar()).collect();
    fuzz_common::fuzz_matcher(data, &grammars);
});
