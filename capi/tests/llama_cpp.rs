//! The llama.cpp adapter (`adapters/llama_cpp/tooldec_llama_sampler.c`, a
//! `struct llama_sampler_i`) driven as llama.cpp drives a sampler chain.
//!
//! llama.cpp cannot be built here: the adapter is compiled against a
//! stand-in of llama.cpp's sampler interface (`test/llama_standin.h`,
//! matched to upstream `include/llama.h`; see its header comment for the
//! commit) and a C re-implementation of the chain, greedy, dist and
//! `llama_sampler_sample` (`test/llama_standin.c`). `test/drive.c` feeds it
//! adversarial fake logits (padding ids and the first 64 ids boosted far
//! above the rest) until EOS; this test checks that every token it
//! sampled is accepted in order by the Rust API, that the output is a
//! complete call (EOS last) whose arguments parse as JSON, and the
//! adapter's clone, reset, few-candidate and misuse checks.
//!
//! The model's vocabulary is a stand-in token list written from the
//! vocabulary the artifacts were compiled for: the adapter's fingerprint of
//! it through llama.cpp's vocabulary API must be the artifact's, and a list
//! with one token changed must be refused with the runtime's vocabulary
//! message. (Against a real llama.cpp build and GGUF model this is the
//! engine-bindings issue's check.)

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Instant;

use common::{capi_dir, compile_c, run, write_file};
use tooldec_compiler::vocab::{Token, Vocab};
use tooldec_runtime::Artifact;

/// A stand-in driver (`test/SOURCE`) built with the adapter and the
/// stand-in, as `name`.
fn build_driver(name: &str, source: &str) -> PathBuf {
    let dir = capi_dir().join("adapters/llama_cpp");
    let inc = format!("-I{}", dir.display());
    let inc_test = format!("-I{}", dir.join("test").display());
    compile_c(
        name,
        &[
            dir.join("test").join(source),
            dir.join("test/llama_standin.c"),
            dir.join("tooldec_llama_sampler.c"),
        ],
        &["-DTOOLDEC_LLAMA_STANDIN", &inc, &inc_test],
    )
}

fn driver() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_driver("capi-llama-drive", "drive.c"))
}

/// llama.cpp's token attributes (`enum llama_token_attr`) the stand-in
/// vocabulary uses.
const ATTR_UNUSED: u32 = 1 << 1;
const ATTR_NORMAL: u32 = 1 << 2;
const ATTR_CONTROL: u32 = 1 << 3;

/// `vocab` as the stand-in's token list (`standin_vocab_load`): what
/// llama.cpp gives for a GGUF of that vocabulary, each token's attributes
/// and its piece. `change` alters one token's bytes.
fn vocab_file(name: &str, vocab: &Vocab, change: Option<u32>) -> PathBuf {
    let mut out = (vocab.len() as u32).to_le_bytes().to_vec();
    for (id, t) in vocab.tokens.iter().enumerate() {
        let (attr, piece): (u32, Vec<u8>) = match t {
            Token::Text(b) => (ATTR_NORMAL, b.clone()),
            Token::Special(s) => (ATTR_CONTROL, s.as_bytes().to_vec()),
            Token::Unused => (ATTR_UNUSED, Vec::new()),
        };
        let piece = if change == Some(id as u32) {
            [piece, b"!".to_vec()].concat()
        } else {
            piece
        };
        out.extend(attr.to_le_bytes());
        out.extend((piece.len() as u32).to_le_bytes());
        out.extend(piece);
    }
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    write_file(&path, &out);
    path
}

/// The GPT-2 vocabulary both test artifacts were compiled for, and the
/// same with token 1000 changed.
fn vocab_files() -> &'static (PathBuf, PathBuf) {
    static FILES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FILES.get_or_init(|| {
        let v = Vocab::builtin_gpt2().expect("the built-in GPT-2 vocabulary");
        (
            vocab_file("capi-llama-gpt2.vocab", &v, None),
            vocab_file("capi-llama-gpt2-changed.vocab", &v, Some(1000)),
        )
    })
}

const TOOLS: [&str; 3] = ["get_weather", "get_time", "search_flights"];

/// Runs the driver and checks its call; returns the number of tokens.
fn drive(artifact: &Path, n_vocab: usize, mode: &str, seed: u64, budget: Option<u32>) -> usize {
    let art = Artifact::open(artifact).expect("the artifact loads");
    let g = art.grammar();
    let budget_arg = budget.map_or("-".to_string(), |b| b.to_string());
    let (vocab, other) = vocab_files();
    let args: Vec<PathBuf> = vec![
        artifact.to_path_buf(),
        vocab.clone(),
        other.clone(),
        n_vocab.to_string().into(),
        mode.into(),
        seed.to_string().into(),
        budget_arg.into(),
    ];
    let args: Vec<&Path> = args.iter().map(|p| p.as_path()).collect();
    let out = run(driver(), &args);

    let tokens: Vec<u32> = out
        .lines()
        .filter_map(|l| l.strip_prefix("token "))
        .map(|t| t.parse().expect("a token id"))
        .collect();
    let check = |name: &str| -> String {
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix(&format!("check {name} ")))
            .unwrap_or_else(|| panic!("no check {name} in\n{out}"));
        line.to_string()
    };
    assert_eq!(check("fingerprint_same"), "1");
    let fp: String = g.vocab_fingerprint()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let refused = check("other_vocab_refused");
    assert!(
        refused.starts_with("1 | artifact was compiled for vocabulary \"gpt2")
            && refused.contains(&format!("(sha256 {fp}\u{2026}), not this one (sha256 ")),
        "{refused}"
    );
    assert!(check("narrow_model_refused").starts_with("1 | the model's logits width"));
    assert_eq!(check("names"), "chain tooldec ".to_string() + mode);
    assert_eq!(check("clone_same"), "1");
    assert!(
        check("subset_same").starts_with("1 "),
        "{}",
        check("subset_same")
    );
    assert_eq!(check("reset"), "0 1");
    assert!(
        check("bad_accept").starts_with("1 0 | token "),
        "{}",
        check("bad_accept")
    );
    assert_eq!(check("failed_after_reset"), "0");
    assert_eq!(check("not_ours"), "1");
    let done = format!("done {} 1", tokens.len());
    assert!(out.lines().any(|l| l == done), "{out}");

    // The Rust API accepts the same tokens, in order, and ends terminated.
    let mut m = match budget {
        Some(b) => g.matcher_with_budget(b).expect("the budget fits"),
        None => g.matcher(),
    };
    for (i, &t) in tokens.iter().enumerate() {
        assert!(
            (t as usize) < g.mask_width(),
            "token #{i} is id {t}, past the artifact's vocab size {}",
            g.mask_width()
        );
        assert!(
            m.accept_token(t),
            "token #{i} ({t}) refused by the Rust API"
        );
    }
    assert!(m.is_terminated(), "the last token is not EOS");
    assert!(g.is_eos(*tokens.last().unwrap()));
    if let Some(b) = budget.or(g.max_tokens()) {
        // The runtime allows EOS at 0 tokens left: the call is complete by
        // the budget's last token, and EOS may follow it.
        let text_tokens = tokens.len() - 1;
        assert!(
            text_tokens <= b as usize,
            "{text_tokens} tokens over a budget of {b}"
        );
    }

    // The text is a complete call.
    let text: Vec<u8> = tokens
        .iter()
        .filter_map(|&t| g.token_bytes(t))
        .flatten()
        .copied()
        .collect();
    let text = String::from_utf8_lossy(&text).into_owned();
    check_calls(&text, g.metadata().contains("hermes"));
    eprintln!(
        "{mode} seed {seed}, {n_vocab} logits: {} tokens: {text:?}",
        tokens.len()
    );
    tokens.len()
}

fn check_calls(text: &str, hermes: bool) {
    let calls: Vec<serde_json::Value> = if hermes {
        // Text, then <tool_call>\n{...}\n</tool_call> calls separated by "\n"
        // (GPT-2 has no <tool_call> token: the tags are text).
        text.split("<tool_call>\n")
            .skip(1)
            .map(|c| {
                let json = c.split("\n</tool_call>").next().unwrap();
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{json:?}: {e}"))
            })
            .collect()
    } else {
        let (_, action) = text.split_once("\nAction: ").expect("an Action line");
        let (name, input) = action
            .split_once("\nAction Input: ")
            .expect("an Action Input line");
        let args: serde_json::Value =
            serde_json::from_str(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
        vec![serde_json::json!({"name": name, "arguments": args})]
    };
    assert!(!calls.is_empty(), "no call in {text:?}");
    for c in calls {
        let name = c["name"].as_str().expect("a name");
        assert!(TOOLS.contains(&name), "unknown tool {name}");
        assert!(
            c["arguments"].is_object(),
            "arguments of {name} are not an object"
        );
    }
}

#[test]
fn llama_sampler_chain_samples_complete_calls() {
    let t = Instant::now();
    let golden = common::golden_artifact();
    let art = Artifact::open(&golden).unwrap();
    let (vocab, min) = (art.grammar().mask_width(), art.grammar().min_tokens());
    let mut tokens = 0;
    let mut runs = 0;
    for seed in 1..=4 {
        // The model's logits width equals the artifact's, then is wider.
        tokens += drive(&golden, vocab, "dist", seed, Some(min * 3));
        tokens += drive(&golden, 50304, "greedy", seed, Some(min + 4 * seed as u32));
        runs += 2;
    }
    let hermes = common::padded_hermes_artifact();
    for seed in 1..=3 {
        tokens += drive(&hermes, 50304, "dist", seed, None); // the default budget
        runs += 1;
    }
    eprintln!(
        "{runs} calls, {tokens} tokens sampled through the adapter, {:.2?}",
        t.elapsed()
    );
}

fn pending_driver() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| build_driver("capi-llama-drive-pending", "drive_pending.c"))
}

/// A request's own tools, sampled while they compile: the sampler starts
/// on masks computed on demand, moves to the artifact when a step needs
/// it (the budget tightens), and every token it let through is accepted
/// by the finished artifact's matcher, ending in a complete call.
#[test]
fn llama_sampler_serves_a_compile_still_running() {
    let tools = capi_dir().join("../grammars/examples/weather.json");
    let (vocab, other) = vocab_files();
    let gpt2 = Vocab::builtin_gpt2().expect("the built-in GPT-2 vocabulary");
    for seed in 1..=3u64 {
        let args: Vec<PathBuf> = vec![
            tools.clone(),
            vocab.clone(),
            other.clone(),
            "50304".into(),
            seed.to_string().into(),
        ];
        let args: Vec<&Path> = args.iter().map(|p| p.as_path()).collect();
        let out = run(pending_driver(), &args);
        let check = |name: &str| -> String {
            out.lines()
                .find_map(|l| l.strip_prefix(&format!("check {name} ")))
                .unwrap_or_else(|| panic!("no check {name} in\n{out}"))
                .to_string()
        };
        let refused = check("other_vocab_refused");
        assert!(
            refused.starts_with("1 | artifact was compiled for vocabulary \"gpt2")
                && refused.contains("\u{2026}), not this one (sha256 "),
            "{refused}"
        );
        assert!(
            check("narrow_model_refused").starts_with(
                "1 | the model's logits width 50256 is smaller than the artifact's vocab size 50257"
            ),
            "{}",
            check("narrow_model_refused")
        );
        assert!(
            check("unknown_entry_refused").starts_with("1 | entry \"nowhere\""),
            "{}",
            check("unknown_entry_refused")
        );
        assert_eq!(check("which"), "1 1");
        let early: usize = check("early").parse().expect("a count");
        assert!(early > 0, "no step was served early:\n{out}");
        assert_eq!(check("clone_same"), "1");
        assert!(
            check("subset_same").starts_with("1 "),
            "{}",
            check("subset_same")
        );
        assert_eq!(check("artifact_walk"), "1 1");
        assert_eq!(check("reset"), "0 0 0");
        assert_eq!(check("not_ours"), "1");
        let bound = check("state_bound");
        assert!(
            bound.starts_with("failed 1 after ")
                && bound.contains("| grammar too large: the DFA exceeds 10 states"),
            "{bound}"
        );

        let tokens: Vec<u32> = out
            .lines()
            .filter_map(|l| l.strip_prefix("token "))
            .map(|t| t.parse().expect("a token id"))
            .collect();
        assert!(
            out.lines().any(|l| l == format!("done {} 1", tokens.len())),
            "{out}"
        );
        assert!(
            tokens.len() <= 161,
            "{} tokens over a budget of 160",
            tokens.len()
        );
        let text: Vec<u8> = tokens
            .iter()
            .filter_map(|&t| match gpt2.tokens.get(t as usize) {
                Some(Token::Text(b)) => Some(b.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        let text = String::from_utf8_lossy(&text).into_owned();
        check_calls(&text, true);
        eprintln!(
            "seed {seed}: {} tokens, {early} served early: {text:?}",
            tokens.len()
        );
    }
}
