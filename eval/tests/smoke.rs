//! The harness end to end on a handful of BFCL tasks with the real model,
//! so it cannot rot. Needs `$TOOLDEC_DATA` (skips, saying so, without it).

use std::path::PathBuf;

use tooldec_compiler::vocab::Vocab;
use tooldec_eval::model::{argmax, Model};
use tooldec_eval::prompt::{CallFormat, Docs};
use tooldec_eval::run::{self, Plan, Setup};
use tooldec_eval::weights;

fn data() -> Option<PathBuf> {
    match tooldec_testkit::data_dir() {
        Some(d) => {
            assert!(d.is_dir(), "TOOLDEC_DATA={} is not a folder", d.display());
            Some(d)
        }
        None => {
            eprintln!("TOOLDEC_DATA is not set: skipping the SmolLM2 harness tests");
            None
        }
    }
}

fn model_path(d: &std::path::Path) -> PathBuf {
    let p = d.join(weights::DATA_MODEL_DIR).join(weights::GGUF_NAME);
    assert!(p.is_file(), "missing {}", p.display());
    p
}

fn setup(d: &std::path::Path, max_new: usize) -> Setup {
    let tok = d.join(weights::DATA_TOKENIZER);
    Setup {
        model: Model::load(&model_path(d)).unwrap(),
        tokenizer: tokenizers::Tokenizer::from_file(&tok).unwrap(),
        vocab: Vocab::from_tokenizer_json(&tok, &["<|im_end|>".to_string()]).unwrap(),
        eos: vec![0, 2],
        max_new,
        max_new_single: max_new,
        prefixes: Default::default(),
    }
}

/// One task per category in both formats: every constrained reply parses,
/// names a real tool and passes the schema, within the token budget; the
/// report renders from the records.
#[test]
fn smoke_one_task_per_category() {
    let Some(d) = data() else { return };
    let mut setup = setup(&d, 160);
    setup.max_new_single = 128;
    let dir = std::env::temp_dir().join(format!("tooldec-eval-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("results.jsonl");
    let categories: Vec<String> = tooldec_eval::tasks::CATEGORIES.map(String::from).to_vec();
    let plan = Plan {
        categories: &categories,
        per_category: 1,
        formats: &[CallFormat::Hermes, CallFormat::React],
        docs: &[Docs::Names],
    };
    run::run_plan(&setup, &d, &plan, &results).unwrap();
    let records = run::read_results(&results).unwrap();
    let runs: Vec<_> = records
        .iter()
        .filter(|r| r.get("refused").is_none())
        .collect();
    assert_eq!(runs.len(), 8, "4 categories x 2 formats");
    for r in &runs {
        let c = &r["constrained"];
        assert!(
            c["syntax_error"].is_null(),
            "{}: constrained reply is a syntax error: {r}",
            r["id"]
        );
        assert_eq!(c["stop"], "eos", "{}: {r}", r["id"]);
        assert!(c["tokens"].as_u64().unwrap() < r["max_new"].as_u64().unwrap());
    }
    // Resuming skips what is done.
    run::run_plan(&setup, &d, &plan, &results).unwrap();
    assert_eq!(run::read_results(&results).unwrap().len(), records.len());
    let md = tooldec_eval::report::render(&records, "test");
    assert!(
        md.contains("## Format `hermes`") && md.contains("## Format `react`"),
        "{md}"
    );
    assert!(
        md.contains("| names | **tooldec** | 4 | 0.0% (0/4)"),
        "{md}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The budget bound holds even when it binds: with a budget barely above
/// the shortest reply, the constrained reply still ends complete.
#[test]
fn tight_budget_still_completes() {
    let Some(d) = data() else { return };
    let setup = setup(&d, 64);
    let all = tooldec_eval::tasks::load_category(&d, "parallel_multiple").unwrap();
    let task = &all[0];
    let (bytes, _) =
        run::compile_tools(&task.tools, CallFormat::Hermes, true, &setup.vocab).unwrap();
    let artifact = tooldec_runtime::Artifact::from_bytes(&bytes).unwrap();
    let grammar = artifact.grammar();
    let min = tooldec_eval::generate::minimum(&grammar) as usize;
    let validators = tooldec_testkit::schema::ToolValidators::new(&task.tools);
    let prompt = tooldec_eval::prompt::chatml(
        &task.question,
        &task.functions,
        CallFormat::Hermes,
        Docs::Names,
    );
    let mut tree = setup.prefill(&prompt).unwrap();
    for max_new in [min, min + 5, min + 20] {
        let g =
            tooldec_eval::generate::constrained(&setup.model, &mut tree, &grammar, max_new, true)
                .unwrap();
        // The tree reuses what earlier budgets computed; a decode from a
        // fresh prefill makes the same choices.
        let mut fresh = setup.prefill(&prompt).unwrap();
        let alone =
            tooldec_eval::generate::constrained(&setup.model, &mut fresh, &grammar, max_new, true)
                .unwrap();
        assert_eq!(g.tokens, alone.tokens, "budget {max_new}");
        assert_eq!(alone.reused, 0);
        assert_eq!(
            g.stop,
            tooldec_eval::generate::Stop::Eos,
            "budget {max_new}"
        );
        assert!(
            g.tokens.len() < max_new,
            "budget {max_new}: {} tokens",
            g.tokens.len()
        );
        let text = setup.tokenizer.decode(&g.tokens, false).unwrap();
        let parsed = tooldec_eval::score::parse_reply(CallFormat::Hermes, &text);
        assert_eq!(
            tooldec_eval::score::syntax_error(&parsed, &validators),
            None,
            "{text}"
        );
    }
    // Below the shortest reply the run refuses to start.
    assert!(
        tooldec_eval::generate::constrained(&setup.model, &mut tree, &grammar, min - 1, true)
            .is_err()
    );
}

/// Our forward pass agrees with candle-transformers' quantized Llama on
/// greedy tokens, and the dense prefill with the quantized pass.
#[test]
fn model_matches_reference_and_prefill() {
    let Some(d) = data() else { return };
    let path = model_path(&d);
    let m = Model::load(&path).unwrap();
    let tok = tokenizers::Tokenizer::from_file(d.join(weights::DATA_TOKENIZER)).unwrap();
    let prompt = "<|im_start|>user\nName three colors.<|im_end|>\n<|im_start|>assistant\n";
    let ids = tok.encode(prompt, false).unwrap().get_ids().to_vec();

    let mut cache = m.cache();
    let mut logits = m.forward(&ids, &mut cache).unwrap();
    let mut ours = Vec::new();
    for _ in 0..12 {
        let t = argmax(&logits);
        ours.push(t);
        logits = m.forward(&[t], &mut cache).unwrap();
    }

    let mut f = std::fs::File::open(&path).unwrap();
    let ct = candle_core::quantized::gguf_file::Content::read(&mut f).unwrap();
    let dev = candle_core::Device::Cpu;
    let mut r =
        candle_transformers::models::quantized_llama::ModelWeights::from_gguf(ct, &mut f, &dev)
            .unwrap();
    let run = |r: &mut candle_transformers::models::quantized_llama::ModelWeights,
               toks: &[u32],
               pos: usize| {
        let x = candle_core::Tensor::new(toks, &dev)
            .unwrap()
            .unsqueeze(0)
            .unwrap();
        r.forward(&x, pos)
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let mut l = run(&mut r, &ids, 0);
    let mut theirs = Vec::new();
    for i in 0..12 {
        let t = argmax(&l);
        theirs.push(t);
        l = run(&mut r, &[t], ids.len() + i);
    }
    assert_eq!(
        ours,
        theirs,
        "{:?} vs {:?}",
        tok.decode(&ours, false),
        tok.decode(&theirs, false)
    );

    // The prompt prefilled with the dequantized weights predicts what the
    // quantized pass does, up to rounding.
    let mut a = m.cache();
    let quantized = m.forward(&ids, &mut a).unwrap();
    let mut b = m.cache();
    let dense = m.prefill(&ids, &mut b).unwrap();
    let max_diff = quantized
        .iter()
        .zip(&dense)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0f32, f32::max);
    assert!(
        max_diff < 1.0,
        "prefill and forward logits differ by {max_diff}"
    );
    assert_eq!(argmax(&quantized), argmax(&dense));
}

/// A tokenizer rebuilt from the GGUF's metadata encodes like the published
/// tokenizer.json and gives the compiler the same vocabulary.
#[test]
fn gguf_tokenizer_matches_tokenizer_json() {
    let Some(d) = data() else { return };
    let json = weights::tokenizer_json_from_gguf(&model_path(&d)).unwrap();
    let dir = std::env::temp_dir().join(format!("tooldec-eval-tok-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rebuilt = dir.join("tokenizer.json");
    std::fs::write(&rebuilt, json).unwrap();
    let published = d.join(weights::DATA_TOKENIZER);
    let a = tokenizers::Tokenizer::from_file(&published).unwrap();
    let b = tokenizers::Tokenizer::from_file(&rebuilt).unwrap();
    for text in [
        "<|im_start|>user\nWhat is 12345 + 678?<|im_end|>\n",
        "<tool_call>\n{\"name\": \"math.gcd\", \"arguments\": {\"a\": 12, \"b\": 18}}\n</tool_call>",
        "  naïve café — ünïcode, tabs\tand\nnewlines  ",
        "Thought: call it.\nAction: spotify.play\nAction Input: {\"artist\": \"Maroon 5\"}",
    ] {
        let x = a.encode(text, false).unwrap().get_ids().to_vec();
        let y = b.encode(text, false).unwrap().get_ids().to_vec();
        assert_eq!(x, y, "{text:?}");
    }
    let eos = ["<|im_end|>".to_string()];
    let va = Vocab::from_tokenizer_json(&published, &eos).unwrap();
    let vb = Vocab::from_tokenizer_json(&rebuilt, &eos).unwrap();
    assert_eq!(va.fingerprint(), vb.fingerprint());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sweep on one task per category in every mode: tooldec's reply is a
/// complete valid call at every budget; llguidance and outlines-core, on
/// the same grammar, decode the same tokens; wherever a peer's reply fits
/// a budget, tooldec's reply there is the same (its budget never removes
/// the greedy choice of a reply that fits); the report and plot render;
/// a second run resumes.
#[test]
fn sweep_every_mode() {
    use tooldec_eval::sweep::{self, Budget, SweepPlan};
    let Some(d) = data() else { return };
    let setup = setup(&d, 256);
    let dir = std::env::temp_dir().join(format!("tooldec-eval-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let results = dir.join("sweep.jsonl");
    let categories = vec!["simple_python".to_string(), "parallel".to_string()];
    let modes: Vec<String> = sweep::MODES.map(String::from).to_vec();
    let budgets = [Budget::AboveMin(0), Budget::AboveMin(8), Budget::Tokens(96)];
    let plan = SweepPlan {
        categories: &categories,
        per_category: 1,
        docs: &[Docs::Names],
        modes: &modes,
        budgets: &budgets,
        commit: "`test`",
    };
    sweep::run_sweep(&setup, &d, &plan, &results).unwrap();
    let records = run::read_results(&results).unwrap();
    let runs: Vec<_> = records.iter().filter(|r| r["modes"].is_object()).collect();
    assert_eq!(runs.len(), 2, "{records:?}");
    for r in &runs {
        let m = &r["modes"];
        for mode in sweep::MODES {
            assert_eq!(m[mode]["cells"].as_array().unwrap().len(), 3, "{mode}: {r}");
        }
        for c in m["tooldec"]["cells"].as_array().unwrap() {
            assert!(c["valid"] == true && c["cut"] == false, "tooldec cell {c}");
        }
        // Under `dumps` a reply is complete and spaced as json.dumps
        // spaces it, or the budget is refused up front.
        for c in m["tooldec-dumps"]["cells"].as_array().unwrap() {
            if c["refused"] == true {
                continue;
            }
            assert!(c["valid"] == true && c["cut"] == false, "dumps cell {c}");
            let text = c["text"].as_str().unwrap();
            let json = text
                .split("<tool_call>\n")
                .skip(1)
                .map(|t| t.split("\n</tool_call>").next().unwrap());
            for call in json {
                for bad in [",\n", "  ", "[ ", "{ ", " ]", " }", " :", " ,"] {
                    assert!(!call.contains(bad), "{bad:?} in {call}");
                }
            }
        }
        // llguidance's masks equal tooldec's along its reply (the same
        // language); outlines-core's are recorded, not required (see
        // DESIGN.md §8).
        assert!(
            m["llguidance"]["runs"][0]["disagreement"].is_null(),
            "llguidance's masks differ from tooldec's: {r}"
        );
        assert!(
            m["outlines"]["runs"][0].get("disagreement").is_some(),
            "{}",
            m["outlines"]
        );
        let peer = m["llguidance"]["cells"].as_array().unwrap();
        let ours = m["tooldec"]["cells"].as_array().unwrap();
        for (p, o) in peer.iter().zip(ours) {
            if p["cut"] == false {
                assert_eq!(p["text"], o["text"], "budget {}: {r}", p["budget"]);
            }
        }
    }
    sweep::run_sweep(&setup, &d, &plan, &results).unwrap();
    assert_eq!(run::read_results(&results).unwrap().len(), records.len());
    let md = tooldec_eval::sweep_report::render(&records, "test", "sweep.svg");
    assert!(
        md.contains("| tooldec | min |")
            && md.contains("masks differ along")
            && md.contains("made at commit `test`")
            && md.contains("## Names only"),
        "{md}"
    );
    let svg = tooldec_eval::sweep_report::svg(&records);
    assert!(svg.starts_with("<svg") && svg.contains("polyline"), "{svg}");
    let _ = std::fs::remove_dir_all(&dir);
}
