//! Real tokenizers loaded once per test binary, and per-key caches that
//! tests running in parallel share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tooldec_compiler::vocab::Vocab;

use crate::data::data_file;

/// The end-of-sequence strings to pass for a tokenizer (empty: its
/// tokenizer_config.json says).
pub fn eos_for(tok: &str) -> Vec<String> {
    match tok {
        // SmolLM2 ships no tokenizer_config.json; its chat turns end with
        // <|im_end|> (an added special token of its tokenizer.json).
        "smollm2-135m" => vec!["<|im_end|>".to_string()],
        _ => Vec::new(),
    }
}

/// A process-wide cache: one lazily computed value per key.
pub type Cache<V> = OnceLock<Mutex<HashMap<String, Arc<OnceLock<V>>>>>;

/// A tokenizer as the compiler sees it, and as Hugging Face runs it.
pub type Loaded = (Vocab, tokenizers::Tokenizer);

/// A per-key cell of a process-wide cache: tests running in parallel
/// share one computation per key (a panic leaves the cell empty for the
/// next).
pub fn cache_cell<V>(cache: &'static Cache<V>, key: String) -> Arc<OnceLock<V>> {
    let mut map = cache
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(key).or_default().clone()
}

/// The compiler's vocab and the real tokenizer `tokenizers/{tok}`,
/// loaded once per test binary.
pub fn tokenizer(tok: &str) -> Arc<Loaded> {
    static CACHE: Cache<Arc<Loaded>> = OnceLock::new();
    cache_cell(&CACHE, tok.to_string())
        .get_or_init(|| {
            let path = data_file(&format!("tokenizers/{tok}/tokenizer.json"));
            let eos = eos_for(tok);
            if eos.is_empty() {
                data_file(&format!("tokenizers/{tok}/tokenizer_config.json"));
            }
            let vocab = Vocab::from_tokenizer_json(&path, &eos)
                .unwrap_or_else(|e| panic!("{tok}: cannot load the vocab: {e}"));
            let hf = tokenizers::Tokenizer::from_file(&path).unwrap_or_else(|e| {
                panic!("{tok}: tokenizers cannot load {}: {e}", path.display())
            });
            Arc::new((vocab, hf))
        })
        .clone()
}
