//! `tooldec-conformance`: how much of real-world JSON Schema the compiler
//! takes, and whether what it builds accepts exactly the right instances.
//!
//! - [`check_group`] compiles one schema against a real tokenizer, loads the
//!   artifact with the runtime and walks every instance of the group through
//!   the matcher, token by token, in two serializations ([`order`]).
//! - [`corpus`] reads the JSON-Schema-Test-Suite and JSONSchemaBench files.
//! - [`tools`] runs the real tool corpora through `spec::parse` and the
//!   argument machine of each tool.
//! - [`stats`] aggregates results into table rows; [`report`] is the
//!   command and the markdown of CONFORMANCE.md.
//!
//! "Accepted" follows the words: an instance is accepted when its
//! JSON text, tokenized by a real tokenizer, walks the runtime matcher to an
//! accepting state. Before each token the mask bit of that token is checked
//! (the check a serving engine makes), then the token is walked; at the end
//! the state must be accepting and the end-of-sequence token allowed.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tooldec_compiler::vocab::Vocab;
use tooldec_compiler::{spec, Error, ErrorKind, JsonOptions, Options};
use tooldec_runtime::{Artifact, Grammar};

pub mod corpus;
pub mod order;
pub mod report;
pub mod stats;
pub mod tools;

/// Bound on DFA states per schema (before minimization): a pathological
/// schema is refused by this budget instead of running for a long time.
pub const MAX_STATES: usize = 200_000;
/// Bound on NFA states per schema.
pub const MAX_NFA_STATES: usize = 2_000_000;

// The real-data directory: the test kit's, so that every crate reads
// `TOOLDEC_DATA` the same way (see `tooldec_testkit::data`).
pub use tooldec_testkit::{data_dir, DATA_ENV};

/// The options of the report runs: JSON Schema's own meaning of a missing
/// `additionalProperties` (open objects), no zstd, the state budgets, and
/// `threads` crossing threads (0: all cores).
pub fn report_options(threads: usize) -> Options {
    Options {
        json: JsonOptions {
            open_objects: true,
            ..JsonOptions::default()
        },
        max_states: MAX_STATES,
        max_nfa_states: MAX_NFA_STATES,
        zstd_level: None,
        threads,
        // What `tooldec-compile` compiles: the engine limits would make the
        // figures depend on the machine's speed.
        limits: tooldec_compiler::Limits::offline(),
        ..Options::default()
    }
}

/// Text to token ids.
type Encoder = Box<dyn Fn(&str) -> Result<Vec<u32>, String> + Send + Sync>;

/// A tokenizer as the compiler sees it (the vocab) and as a model runs it
/// (the encoder that turns instance texts into token ids).
pub struct Tokenizer {
    pub vocab: Vocab,
    pub label: String,
    encode: Encoder,
}

impl Tokenizer {
    /// The built-in GPT-2 vocab (`r50k_base`) with tiktoken's own GPT-2
    /// encoder: needs no data files.
    pub fn builtin_gpt2() -> Result<Tokenizer, String> {
        let vocab = Vocab::builtin_gpt2().map_err(|e| e.to_string())?;
        let bpe = tiktoken_rs::r50k_base_singleton();
        Ok(Tokenizer {
            vocab,
            label: "gpt2 (built-in r50k_base, tiktoken encoder)".into(),
            encode: Box::new(move |text: &str| Ok(bpe.encode_ordinary(text))),
        })
    }

    /// A Hugging Face `tokenizer.json`: the compiler's vocab from it (end
    /// of sequence from the `tokenizer_config.json` beside it) and the
    /// `tokenizers` crate's encoder.
    pub fn from_tokenizer_json(path: &Path, label: &str) -> Result<Tokenizer, String> {
        let vocab = Vocab::from_tokenizer_json(path, &[]).map_err(|e| e.to_string())?;
        let hf = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| format!("{}: tokenizers cannot load it: {e}", path.display()))?;
        Ok(Tokenizer {
            vocab,
            label: label.to_string(),
            encode: Box::new(move |text: &str| {
                hf.encode(text, false)
                    .map(|enc| enc.get_ids().to_vec())
                    .map_err(|e| e.to_string())
            }),
        })
    }

    /// The token ids of `text`.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, String> {
        (self.encode)(text)
    }
}

/// One schema with its instances (a test-suite group, a JSONSchemaBench
/// file).
#[derive(Debug, Clone)]
pub struct Group {
    /// Where it comes from: `type.json #3`, `Github_easy---o1.json`.
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub tests: Vec<Instance>,
}

/// One instance and whether the schema accepts it.
#[derive(Debug, Clone)]
pub struct Instance {
    pub description: String,
    pub data: Value,
    pub valid: bool,
}

/// Why a schema or tool was not compiled.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The compiler's error kind (`Unsupported`, `Schema`, `Limit`, ...),
    /// or `panic`.
    pub kind: String,
    /// The message without its place, with names that vary replaced, for
    /// grouping.
    pub reason: String,
    /// The whole message.
    pub message: String,
    /// Refused by the state budget ([`MAX_STATES`], [`MAX_NFA_STATES`]).
    pub budget: bool,
}

impl Refusal {
    /// From a compile error of the tool named `tool` in file `file`.
    pub fn from_error(e: &Error, file: &str, tool: &str) -> Refusal {
        let budget = e.kind() == ErrorKind::Limit && e.message().contains("grammar too large");
        Refusal {
            kind: if budget {
                "state budget".into()
            } else {
                format!("{:?}", e.kind())
            },
            reason: short_reason(e.message(), file, tool),
            message: e.message().to_string(),
            budget,
        }
    }

    /// A panic inside the compiler, caught.
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Refusal {
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "(no message)".into());
        Refusal {
            kind: "panic".into(),
            reason: first_line(&msg).to_string(),
            message: msg,
            budget: false,
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// JSON Schema keywords and type names: the quoted words a refusal message
/// keeps when it is shortened for grouping (other quoted words are names
/// that vary from schema to schema).
const KEEP_QUOTED: &[&str] = &[
    "$ref",
    "$defs",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$id",
    "$schema",
    "$vocabulary",
    "$recursiveRef",
    "$recursiveAnchor",
    "definitions",
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "unevaluatedItems",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contentMediaType",
    "contentEncoding",
    "contentSchema",
    "nullable",
    "object",
    "array",
    "string",
    "integer",
    "number",
    "boolean",
    "null",
    "true",
    "false",
    "function",
    "tools",
    "name",
    "parameters",
];

/// A message without its place (`FILE:L:C (at /p): tool "t": `), with the
/// quoted words that are not keywords replaced by `"…"` and long numbers by
/// `N`, so that equal causes group together.
pub fn short_reason(message: &str, file: &str, tool: &str) -> String {
    let mut m = first_line(message);
    let tool_prefix = format!("tool {tool:?}: ");
    if let Some(i) = m.find(&tool_prefix) {
        m = &m[i + tool_prefix.len()..];
    } else if m.starts_with(file) {
        // `FILE:L:C (at /p): rest` or `FILE: rest`.
        let rest = &m[file.len()..];
        if let Some(i) = rest.find(" (at ") {
            if let Some(j) = rest[i..].find("): ") {
                m = &rest[i + j + 3..];
            }
        } else if let Some(r) = rest.strip_prefix(": ") {
            m = r;
        }
    }
    // The last segment of the pointer the message names (the keyword of
    // an "unsupported keyword" error) is kept too.
    let last_segment = message
        .find(" (at ")
        .and_then(|i| message[i + 5..].split_once(')'))
        .and_then(|(p, _)| p.rsplit('/').next())
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .unwrap_or_default();
    // Replace quoted words that are not keywords.
    let mut out = String::with_capacity(m.len());
    let mut chars = m.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '"' {
            // Find the closing quote (skipping escapes).
            let mut end = None;
            let mut esc = false;
            for (j, d) in m[i + 1..].char_indices() {
                if esc {
                    esc = false;
                } else if d == '\\' {
                    esc = true;
                } else if d == '"' {
                    end = Some(i + 1 + j);
                    break;
                }
            }
            if let Some(end) = end {
                let word = &m[i + 1..end];
                if KEEP_QUOTED.contains(&word) || (!word.is_empty() && word == last_segment) {
                    out.push_str(&m[i..=end]);
                } else {
                    out.push_str("\"…\"");
                }
                while chars.peek().is_some_and(|&(k, _)| k <= end) {
                    chars.next();
                }
                continue;
            }
        }
        out.push(c);
    }
    // Places inside the message (`FILE:L:C`, `(at POINTER)`) and numbers
    // (sizes, positions, branch indexes) vary too.
    let out = drop_places(&out, file);
    let mut shortened = String::with_capacity(out.len());
    let mut in_digits = false;
    for c in out.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                shortened.push('N');
            }
            in_digits = true;
            continue;
        }
        in_digits = false;
        shortened.push(c);
    }
    const MAX: usize = 160;
    if shortened.chars().count() > MAX {
        shortened = shortened.chars().take(MAX).collect::<String>() + "…";
    }
    shortened
}

/// `s` with each ` (at POINTER)` (balanced parentheses) made ` (at …)` and
/// each `FILE:L:C` made `…`.
fn drop_places(s: &str, file: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find(" (at ") {
        out.push_str(&rest[..i]);
        let mut depth = 0usize;
        let mut end = rest.len();
        for (j, c) in rest[i + 1..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1 + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str(" (at …)");
        rest = &rest[end..];
    }
    out.push_str(rest);
    if file.is_empty() {
        return out;
    }
    let mut done = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(i) = rest.find(file) {
        done.push_str(&rest[..i]);
        let after = &rest[i + file.len()..];
        // `:L:C` (digits), as many as there are.
        let mut k = 0;
        let b = after.as_bytes();
        let mut colons = 0;
        while k < b.len() && b[k] == b':' && b.get(k + 1).is_some_and(u8::is_ascii_digit) {
            k += 1;
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            colons += 1;
        }
        if colons > 0 {
            done.push('…');
        } else {
            done.push_str(file);
        }
        rest = &after[k..];
    }
    done.push_str(rest);
    done
}

/// How one serialization of an instance fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Accepted,
    /// Token `index` (of `tokens`) was not allowed; `prefix` bytes of the
    /// text had been accepted before it.
    TokenRefused {
        index: usize,
        tokens: usize,
        prefix: usize,
    },
    /// Every token was allowed, but the end is not an accepting state.
    NotAccepting,
    /// The tokenizer failed on the text.
    Encode(String),
}

impl Verdict {
    pub fn accepted(&self) -> bool {
        *self == Verdict::Accepted
    }

    /// How many bytes of `text` the walk got through.
    pub fn progress(&self, text: &str) -> usize {
        match self {
            Verdict::TokenRefused { prefix, .. } => *prefix,
            Verdict::Encode(_) => 0,
            _ => text.len(),
        }
    }

    /// A short description for the report.
    pub fn describe(&self) -> String {
        match self {
            Verdict::Accepted => "accepted".into(),
            Verdict::TokenRefused {
                index,
                tokens,
                prefix,
            } => format!("token {}/{tokens} refused after {prefix} bytes", index + 1),
            Verdict::NotAccepting => "every token allowed, but not complete".into(),
            Verdict::Encode(e) => format!("tokenizer error: {e}"),
        }
    }
}

/// Walks `ids` through `g` from its start. Returns the verdict and how
/// many times the stored mask and the byte walk disagreed (a runtime or
/// compiler bug when nonzero).
pub fn walk_tokens(g: &Grammar<'_>, ids: &[u32]) -> (Verdict, usize) {
    let mut m = g.matcher();
    let mut disagreements = 0;
    let mut prefix = 0;
    for (index, &t) in ids.iter().enumerate() {
        let allowed = m
            .state()
            .and_then(|s| g.mask_id(s))
            .is_some_and(|id| g.mask_contains(id, t));
        let stepped = m.accept_token(t);
        if allowed != stepped {
            disagreements += 1;
        }
        if !(allowed && stepped) {
            return (
                Verdict::TokenRefused {
                    index,
                    tokens: ids.len(),
                    prefix,
                },
                disagreements,
            );
        }
        prefix += g.token_bytes(t).map_or(0, <[u8]>::len);
    }
    let accepting = m.is_accepting();
    let eos = g.eos_tokens();
    let (mask_eos, walk_eos) = if eos.is_empty() {
        (accepting, accepting)
    } else {
        let id = m.state().and_then(|s| g.mask_id(s));
        (
            eos.iter()
                .any(|&e| id.is_some_and(|id| g.mask_contains(id, e))),
            eos.iter().any(|&e| m.is_allowed(e)),
        )
    };
    disagreements += (mask_eos != walk_eos) as usize + (accepting != walk_eos) as usize;
    let v = if accepting && mask_eos && walk_eos {
        Verdict::Accepted
    } else {
        Verdict::NotAccepting
    };
    (v, disagreements)
}

/// An instance the machine got wrong: a valid one not accepted in both
/// forms, or an invalid one accepted in either.
#[derive(Debug, Clone)]
pub struct Miss {
    pub instance: String,
    pub valid: bool,
    pub compact: Verdict,
    pub spaced: Verdict,
    /// The text of the first form that went wrong, cut to a few hundred
    /// bytes around the place where the walk stopped, marked `⟨✗⟩`.
    pub text: String,
    /// The instance holds an integral double of magnitude 2^53 or more:
    /// most likely an integer beyond 64 bits in the source, which
    /// serde_json reads as a (rounded) double, so the text walked is not
    /// the source's spelling.
    pub lossy_number: bool,
}

/// Whether `v` holds a double that is integral and at least 2^53 in
/// magnitude (see [`Miss::lossy_number`]).
pub fn has_lossy_number(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            !n.is_i64()
                && !n.is_u64()
                && n.as_f64()
                    .is_some_and(|f| f.fract() == 0.0 && f.abs() >= 9_007_199_254_740_992.0)
        }
        Value::Array(a) => a.iter().any(has_lossy_number),
        Value::Object(o) => o.values().any(has_lossy_number),
        _ => false,
    }
}

/// The result of one schema.
#[derive(Debug, Clone, Default)]
pub struct SchemaResult {
    pub name: String,
    pub description: String,
    /// Lowering, automaton and crossing (the whole `compile_schema`), and
    /// loading the artifact with the runtime.
    pub compile: Duration,
    /// Tokenizing and walking every instance, both forms.
    pub walk: Duration,
    pub refusal: Option<Refusal>,
    /// States of the minimized DFA.
    pub states: usize,
    pub valid: usize,
    pub valid_accepted: usize,
    /// Valid instances accepted in exactly one of the two forms.
    pub valid_one_form: usize,
    pub invalid: usize,
    /// Invalid instances rejected in both forms.
    pub invalid_rejected: usize,
    /// Invalid instances accepted in exactly one of the two forms.
    pub invalid_one_form: usize,
    pub misses: Vec<Miss>,
    /// Mask/walk disagreements (must be 0).
    pub disagreements: usize,
}

impl SchemaResult {
    pub fn compiled(&self) -> bool {
        self.refusal.is_none()
    }
}

/// The most misses kept per schema.
pub const MISSES_KEPT: usize = 4;

/// The texts of an instance: compact and spaced (one space after each `:`
/// and `,`), each in the member orders of [`order`] (the global rank first;
/// the per-object order when it differs).
pub fn serializations(data: &Value, rank: &order::Rank) -> (Vec<String>, Vec<String>) {
    let mut compact = Vec::new();
    let mut spaced = Vec::new();
    for v in [order::reorder(data, rank), order::reorder_local(data, rank)] {
        let c = serde_json::to_string(&v).expect("a JSON value serializes");
        if !compact.contains(&c) {
            compact.push(c);
            spaced.push(tooldec_testkit::render::spaced(&v));
        }
    }
    (compact, spaced)
}

/// Compiles `group.schema` against `tok`'s vocab, loads the artifact with
/// the runtime and walks each instance in both serializations.
pub fn check_group(group: &Group, tok: &Tokenizer, opts: &Options) -> SchemaResult {
    let mut r = SchemaResult {
        name: group.name.clone(),
        description: group.description.clone(),
        ..SchemaResult::default()
    };
    const FILE: &str = "schema.json";
    let text = serde_json::to_string(&group.schema).expect("a JSON value serializes");
    let t = Instant::now();
    let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let set = spec::schema_document(FILE, &text)?;
        tooldec_compiler::compile_schema(&set, &tok.vocab, opts, &mut |_| {})
    }));
    let artifact = match compiled {
        Ok(Ok(c)) => {
            r.states = c.report.min_states;
            match Artifact::from_bytes(&c.artifact) {
                Ok(a) => a,
                Err(e) => {
                    r.compile = t.elapsed();
                    r.refusal = Some(Refusal {
                        kind: "runtime load".into(),
                        reason: e.to_string(),
                        message: e.to_string(),
                        budget: false,
                    });
                    return r;
                }
            }
        }
        Ok(Err(e)) => {
            r.compile = t.elapsed();
            r.refusal = Some(Refusal::from_error(&e, FILE, FILE));
            return r;
        }
        Err(p) => {
            r.compile = t.elapsed();
            r.refusal = Some(Refusal::from_panic(p.as_ref()));
            return r;
        }
    };
    r.compile = t.elapsed();
    let g = artifact.grammar();
    let t = Instant::now();
    let rank = order::Rank::of_schema(&group.schema);
    for inst in &group.tests {
        let (compacts, spaceds) = serializations(&inst.data, &rank);
        let mut verdict = |text: &str| match tok.encode(text) {
            Ok(ids) => {
                let (v, d) = walk_tokens(&g, &ids);
                r.disagreements += d;
                v
            }
            Err(e) => Verdict::Encode(e),
        };
        // A form is accepted when one of its member orders is; otherwise
        // the text whose walk got furthest is the one reported.
        let mut form = |texts: &[String]| {
            let mut best: Option<(String, Verdict)> = None;
            for t in texts {
                let v = verdict(t);
                if v.accepted() {
                    return (t.clone(), v);
                }
                if best
                    .as_ref()
                    .is_none_or(|(bt, bv)| v.progress(t) > bv.progress(bt))
                {
                    best = Some((t.clone(), v));
                }
            }
            best.expect("at least one text")
        };
        let (compact, vc) = form(&compacts);
        let (spaced, vs) = form(&spaceds);
        let n = vc.accepted() as usize + vs.accepted() as usize;
        let wrong = if inst.valid {
            r.valid += 1;
            r.valid_accepted += (n == 2) as usize;
            r.valid_one_form += (n == 1) as usize;
            n < 2
        } else {
            r.invalid += 1;
            r.invalid_rejected += (n == 0) as usize;
            r.invalid_one_form += (n == 1) as usize;
            n > 0
        };
        if wrong && r.misses.len() < MISSES_KEPT {
            let text = if (vc.accepted() != inst.valid) || vs.accepted() == inst.valid {
                marked(&compact, &vc)
            } else {
                marked(&spaced, &vs)
            };
            r.misses.push(Miss {
                instance: inst.description.clone(),
                valid: inst.valid,
                compact: vc,
                spaced: vs,
                text,
                lossy_number: has_lossy_number(&inst.data),
            });
        }
    }
    r.walk = t.elapsed();
    r
}

/// `text` with `⟨✗⟩` where the walk stopped (at the end when every token
/// was allowed), shortened to the 120 bytes before that place and 60 after.
pub fn marked(text: &str, v: &Verdict) -> String {
    let at = match v {
        Verdict::TokenRefused { prefix, .. } => (*prefix).min(text.len()),
        _ => text.len(),
    };
    let mut start = at.saturating_sub(120);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut at_b = at;
    while !text.is_char_boundary(at_b) {
        at_b -= 1;
    }
    let mut end = (at_b + 60).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}{}⟨✗⟩{}{}",
        if start > 0 { "…" } else { "" },
        &text[start..at_b],
        &text[at_b..end],
        if end < text.len() { "…" } else { "" }
    )
}

/// `s` cut to at most `max` bytes (on a character boundary), with `…`.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Runs `f` over `items` on `jobs` threads (in order of the items; results
/// in the same order), calling `done(index, &result)` as each finishes.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(&T) -> R + Sync,
    done: impl Fn(usize, &R) + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let jobs = jobs.max(1).min(items.len().max(1));
    if jobs == 1 {
        return items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let r = f(x);
                done(i, &r);
                r
            })
            .collect();
    }
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= items.len() {
                    break;
                }
                let r = f(&items[i]);
                done(i, &r);
                out.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item was processed"))
        .collect()
}
