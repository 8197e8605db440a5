//! Shared helpers for the integration tests.
//!
//! - [`data_dir`] / [`data_file`]: where the real data lives (`TOOLDEC_DATA`).
//! - [`bfcl`] and [`toolbench`]: converters from published tool lists to the
//!   compiler's input (OpenAI function form).
//! - [`react`]: a ReAct output parser written independently of the compiler.
//! - [`schema`]: argument validation with the `jsonschema` crate.
//! - [`walk`]: a random walker over a loaded grammar (biased toward finishing).
//! - [`render`]: ground-truth calls rendered as JSON text (compact or spaced).
//! - [`parsers`]: output parsers for every shipped call format, written from
//!   the formats' descriptions, and the ToolkenGPT (FuncQA, KAMEL) tool lists.
//!
//! Everything here is test support: it panics with a clear message on
//! missing files rather than returning errors.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod parsers;

/// The environment variable naming the real-data directory.
pub const DATA_ENV: &str = "TOOLDEC_DATA";

/// The real-data directory, or `None` when `TOOLDEC_DATA` is unset (or
/// empty): real-data tests then print `TOOLDEC_DATA unset: skipping ...` and
/// pass.
///
/// A relative path is taken relative to the current directory when it exists
/// there, else relative to the workspace root (cargo runs test binaries in
/// the package directory, so `TOOLDEC_DATA=../shared/data` given from the
/// workspace root still works).
pub fn data_dir() -> Option<PathBuf> {
    let raw = std::env::var_os(DATA_ENV)?;
    if raw.is_empty() {
        return None;
    }
    let p = PathBuf::from(raw);
    if p.is_absolute() || p.exists() {
        return Some(p);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let from_root = root.join(&p);
    if from_root.exists() {
        Some(from_root)
    } else {
        Some(p)
    }
}

/// The path of `rel` under the data directory. Panics with a clear message
/// when `TOOLDEC_DATA` is unset or the file is missing: call it only after
/// [`data_dir`] returned `Some`.
pub fn data_file(rel: &str) -> PathBuf {
    let dir = data_dir().unwrap_or_else(|| {
        panic!("{DATA_ENV} is unset: cannot locate {rel} (check data_dir() first)")
    });
    let p = dir.join(rel);
    if !p.exists() {
        panic!(
            "{DATA_ENV}={} is set but the needed file {} is missing (see the data README.md)",
            dir.display(),
            p.display()
        );
    }
    p
}

/// Reads a file to a string, panicking with its path on error.
pub fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Parses JSON, panicking with the path and line on error.
pub fn parse_json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: invalid JSON: {e}"))
}

/// Number of random walks per tokenizer: `TOOLDEC_WALKS` or `default`.
pub fn walks_from_env(default: usize) -> usize {
    match std::env::var("TOOLDEC_WALKS") {
        Ok(s) if !s.trim().is_empty() => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TOOLDEC_WALKS={s:?} is not a number")),
        _ => default,
    }
}

/// The Berkeley Function-Calling Leaderboard (BFCL v4) question files.
pub mod bfcl {
    use super::*;

    /// One line of a BFCL question file, its functions converted.
    #[derive(Debug, Clone)]
    pub struct BfclSet {
        /// The line's `id` (e.g. `multiple_0`).
        pub id: String,
        /// The converted functions (bare OpenAI form `{name, description, parameters}`).
        pub tools: Vec<Value>,
        /// `tools` as compiler input text (a JSON array).
        pub text: String,
    }

    /// Converts a BFCL schema to standard JSON Schema, recursively:
    /// `dict` → `object`, `float` → `number`, `tuple` → `array`, and the
    /// non-standard `optional` key is dropped. Everything else is kept (a
    /// BFCL type `any` stays; the compiler refuses it).
    pub fn convert_schema(schema: &Value) -> Value {
        let Value::Object(obj) = schema else {
            return schema.clone();
        };
        let mut out = serde_json::Map::with_capacity(obj.len());
        for (k, v) in obj {
            let nv = match k.as_str() {
                "optional" => continue,
                // BFCL's `any`: no type constraint at all.
                "type" if v == "any" => continue,
                "type" => match v {
                    Value::String(t) => Value::String(convert_type(t).to_string()),
                    Value::Array(ts) => Value::Array(
                        ts.iter()
                            .map(|t| match t {
                                Value::String(t) => Value::String(convert_type(t).to_string()),
                                other => other.clone(),
                            })
                            .collect(),
                    ),
                    other => other.clone(),
                },
                "properties" => match v {
                    Value::Object(props) => Value::Object(
                        props
                            .iter()
                            .map(|(n, s)| (n.clone(), convert_schema(s)))
                            .collect(),
                    ),
                    other => other.clone(),
                },
                "items" => match v {
                    Value::Array(items) => Value::Array(items.iter().map(convert_schema).collect()),
                    other => convert_schema(other),
                },
                "additionalProperties" => convert_schema(v),
                _ => v.clone(),
            };
            out.insert(k.clone(), nv);
        }
        Value::Object(out)
    }

    fn convert_type(t: &str) -> &str {
        match t {
            "dict" => "object",
            "float" => "number",
            "tuple" => "array",
            other => other,
        }
    }

    /// Converts one BFCL function doc `{name, description, parameters}`.
    pub fn convert_function(f: &Value) -> Value {
        let mut out = serde_json::Map::new();
        if let Value::Object(o) = f {
            for (k, v) in o {
                if k == "parameters" {
                    out.insert(k.clone(), convert_schema(v));
                } else {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(out)
    }

    /// The non-empty lines of a BFCL JSONL file as `(id, line value)`.
    fn jsonl(path: &Path) -> Vec<(String, Value)> {
        let text = read_text(path);
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v = parse_json(line, &format!("{}:{}", path.display(), i + 1));
            let id = v
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{}:{}: no \"id\"", path.display(), i + 1))
                .to_string();
            out.push((id, v));
        }
        out
    }

    /// Loads a BFCL JSONL question file: one converted tool set per line.
    pub fn load_sets(path: &Path) -> Vec<BfclSet> {
        jsonl(path)
            .into_iter()
            .map(|(id, v)| {
                let funcs = v
                    .get("function")
                    .and_then(Value::as_array)
                    .unwrap_or_else(|| panic!("{}: {id}: no \"function\" array", path.display()));
                let tools: Vec<Value> = funcs.iter().map(convert_function).collect();
                let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
                BfclSet { id, tools, text }
            })
            .collect()
    }

    /// One ground-truth line: `(id, [{tool_name: {param: [acceptable values]}}])`.
    pub fn load_answers(path: &Path) -> Vec<(String, Vec<Value>)> {
        jsonl(path)
            .into_iter()
            .map(|(id, v)| {
                let gt = v
                    .get("ground_truth")
                    .and_then(Value::as_array)
                    .unwrap_or_else(|| panic!("{}: {id}: no \"ground_truth\"", path.display()))
                    .clone();
                (id, gt)
            })
            .collect()
    }
}

/// ToolBench / StableToolBench test queries (RapidAPI `api_list` form).
pub mod toolbench {
    use super::*;

    /// The folder of the test query files, relative to the data directory.
    pub const QUERY_DIR: &str = "tools/toolbench/StableToolBench/solvable_queries/test_instruction";

    /// Why APIs were left out of the conversion.
    #[derive(Debug, Clone, Default)]
    pub struct SkipCounts {
        /// A parameter of type ARRAY, OBJECT or an unknown type.
        pub unsupported_type: usize,
        /// Two parameters with the same name.
        pub duplicate_param: usize,
        /// The standardized name is empty.
        pub empty_name: usize,
        /// A second API with the same converted name (within the scope).
        pub duplicate_name: usize,
    }

    /// One query's API list as a tool set.
    #[derive(Debug, Clone)]
    pub struct QuerySet {
        /// `FILE#query_id`.
        pub id: String,
        /// Converted tools (bare OpenAI form).
        pub tools: Vec<Value>,
        /// `tools` as compiler input text.
        pub text: String,
    }

    /// ToolBench's name standardization, simplified: lowercase, every char
    /// outside `[a-z0-9_]` becomes `_`, runs of `_` collapse to one, and
    /// leading/trailing `_` are trimmed.
    pub fn standardize(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars().flat_map(char::to_lowercase) {
            let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                c
            } else {
                '_'
            };
            if c == '_' && out.ends_with('_') {
                continue;
            }
            out.push(c);
        }
        out.trim_matches('_').to_string()
    }

    /// The tool name ToolBench gives an API: `{api}_for_{tool}`.
    pub fn tool_name(api_name: &str, tool_name: &str) -> String {
        format!("{}_for_{}", standardize(api_name), standardize(tool_name))
    }

    fn param_type(t: &str) -> Option<&'static str> {
        let up = t.to_ascii_uppercase();
        if up == "STRING"
            || up.starts_with("DATE")
            || up.starts_with("TIME")
            || up == "BINARY"
            || up == "ENUM"
        {
            Some("string")
        } else if up == "NUMBER" {
            Some("number")
        } else if up == "BOOLEAN" {
            Some("boolean")
        } else {
            None
        }
    }

    /// Converts one `api_list` entry to a tool, or says why it is skipped.
    pub fn convert_api(api: &Value, skips: &mut SkipCounts) -> Option<Value> {
        let s = |k: &str| api.get(k).and_then(Value::as_str).unwrap_or("");
        let name = tool_name(s("api_name"), s("tool_name"));
        if standardize(s("api_name")).is_empty() || standardize(s("tool_name")).is_empty() {
            skips.empty_name += 1;
            return None;
        }
        let mut props = serde_json::Map::new();
        let mut required = Vec::new();
        for (list, req) in [
            ("required_parameters", true),
            ("optional_parameters", false),
        ] {
            let Some(params) = api.get(list).and_then(Value::as_array) else {
                continue;
            };
            for p in params {
                let pname = p.get("name").and_then(Value::as_str).unwrap_or("");
                let ptype = p.get("type").and_then(Value::as_str).unwrap_or("");
                let Some(ty) = param_type(ptype) else {
                    skips.unsupported_type += 1;
                    return None;
                };
                if props.contains_key(pname) {
                    skips.duplicate_param += 1;
                    return None;
                }
                let mut schema = serde_json::Map::new();
                schema.insert("type".into(), ty.into());
                if let Some(d) = p.get("description").and_then(Value::as_str) {
                    if !d.is_empty() {
                        schema.insert("description".into(), d.into());
                    }
                }
                props.insert(pname.to_string(), Value::Object(schema));
                if req {
                    required.push(Value::String(pname.to_string()));
                }
            }
        }
        let mut parameters = serde_json::Map::new();
        parameters.insert("type".into(), "object".into());
        parameters.insert("properties".into(), Value::Object(props));
        parameters.insert("required".into(), Value::Array(required));
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), name.into());
        tool.insert(
            "description".into(),
            s("api_description").to_string().into(),
        );
        tool.insert("parameters".into(), Value::Object(parameters));
        Some(Value::Object(tool))
    }

    /// The query files, sorted by name, with their parsed queries.
    pub fn query_files() -> Vec<(String, Vec<Value>)> {
        let dir = data_file(QUERY_DIR);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "no *.json query files in {}",
            dir.display()
        );
        files
            .into_iter()
            .map(|p| {
                let v = parse_json(&read_text(&p), &p.display().to_string());
                let Value::Array(queries) = v else {
                    panic!("{}: expected a JSON array of queries", p.display());
                };
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, queries)
            })
            .collect()
    }

    /// The first `n` APIs, unique by converted tool name, across the query
    /// files in sorted order; with the counts of APIs left out.
    pub fn unique_apis(n: usize) -> (Vec<Value>, SkipCounts) {
        let mut skips = SkipCounts::default();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for (_, queries) in query_files() {
            for q in &queries {
                for api in q
                    .get("api_list")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if out.len() >= n {
                        return (out, skips);
                    }
                    let Some(tool) = convert_api(api, &mut skips) else {
                        continue;
                    };
                    let name = tool["name"].as_str().unwrap().to_string();
                    if seen.insert(name) {
                        out.push(tool);
                    }
                }
            }
        }
        (out, skips)
    }

    /// Every query's API list as a tool set (names deduplicated within a
    /// list; queries whose APIs were all skipped are left out).
    pub fn query_sets() -> (Vec<QuerySet>, SkipCounts) {
        let mut skips = SkipCounts::default();
        let mut out = Vec::new();
        for (file, queries) in query_files() {
            for (i, q) in queries.iter().enumerate() {
                let qid = q
                    .get("query_id")
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| format!("#{i}"));
                let mut seen = std::collections::HashSet::new();
                let mut tools = Vec::new();
                for api in q
                    .get("api_list")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(tool) = convert_api(api, &mut skips) else {
                        continue;
                    };
                    if seen.insert(tool["name"].as_str().unwrap().to_string()) {
                        tools.push(tool);
                    } else {
                        skips.duplicate_name += 1;
                    }
                }
                if tools.is_empty() {
                    continue;
                }
                let text = serde_json::to_string(&Value::Array(tools.clone())).unwrap();
                out.push(QuerySet {
                    id: format!("{file}#{qid}"),
                    tools,
                    text,
                });
            }
        }
        (out, skips)
    }
}

/// A ReAct output parser, written independently of the compiler's grammar.
pub mod react {
    use super::*;

    /// Parses `Thought: ...\nAction: NAME\nAction Input: {JSON}`.
    ///
    /// One leading space is stripped first (SentencePiece decoders may leave
    /// or drop it). The thought ends at the first line that begins with
    /// `Action: `; the name runs up to the following `\nAction Input: `; the
    /// rest must be exactly one JSON object (strict `serde_json`), with
    /// nothing after it.
    pub fn parse(text: &str) -> Result<(String, Value), String> {
        let text = text.strip_prefix(' ').unwrap_or(text);
        if !text.starts_with("Thought: ") {
            return Err("does not start with \"Thought: \"".into());
        }
        const ACTION: &str = "\nAction: ";
        const INPUT: &str = "\nAction Input: ";
        let a = text
            .find(ACTION)
            .ok_or("no line beginning with \"Action: \"")?;
        let after = &text[a + ACTION.len()..];
        let i = after
            .find(INPUT)
            .ok_or("no \"\\nAction Input: \" after the Action line")?;
        let name = &after[..i];
        if name.contains('\n') {
            return Err(format!(
                "the Action line is followed by another line before \"Action Input: \": {name:?}"
            ));
        }
        if name.is_empty() {
            return Err("empty tool name".into());
        }
        let rest = &after[i + INPUT.len()..];
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let value = match stream.next() {
            Some(Ok(v)) => v,
            Some(Err(e)) => return Err(format!("Action Input is not valid JSON: {e}")),
            None => return Err("Action Input is empty".into()),
        };
        let end = stream.byte_offset();
        if end != rest.len() {
            return Err(format!("text after the JSON arguments: {:?}", &rest[end..]));
        }
        if !value.is_object() {
            return Err(format!("the arguments are not a JSON object: {value}"));
        }
        Ok((name.to_string(), value))
    }
}

/// Validating arguments against the tools' (converted) JSON Schemas.
pub mod schema {
    use super::*;

    /// One compiled validator per tool of a set.
    pub struct ToolValidators {
        tools: Vec<(String, jsonschema::Validator)>,
    }

    impl ToolValidators {
        /// Builds validators for tools in OpenAI form (bare or wrapped in
        /// `{"type": "function", "function": ...}`). Panics if a schema is
        /// not a valid JSON Schema.
        pub fn new(tools: &[Value]) -> Self {
            Self::try_new(tools).unwrap_or_else(|e| panic!("{e}"))
        }

        /// Like [`ToolValidators::new`], returning the error instead.
        pub fn try_new(tools: &[Value]) -> Result<Self, String> {
            let mut out = Vec::with_capacity(tools.len());
            for t in tools {
                let f = t.get("function").unwrap_or(t);
                let name = f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("a tool has no name: {t}"))?;
                let params = f
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
                let v = jsonschema::validator_for(&params)
                    .map_err(|e| format!("tool {name:?}: invalid JSON Schema: {e}"))?;
                out.push((name.to_string(), v));
            }
            Ok(ToolValidators { tools: out })
        }

        /// Checks that `name` is one of the tools and `args` satisfies its schema.
        pub fn check(&self, name: &str, args: &Value) -> Result<(), String> {
            let Some((_, v)) = self.tools.iter().find(|(n, _)| n == name) else {
                return Err(format!("unknown tool {name:?}"));
            };
            let errors: Vec<String> = v
                .iter_errors(args)
                .take(3)
                .map(|e| format!("{} (at {})", e, e.instance_path))
                .collect();
            if errors.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "arguments of {name:?} fail the schema: {}",
                    errors.join("; ")
                ))
            }
        }
    }
}

/// Random walks over a loaded grammar, biased toward finishing.
pub mod walk {
    use tooldec_runtime::Grammar;

    /// The SplitMix64 generator: small, fast, good enough for tests.
    #[derive(Debug, Clone)]
    pub struct SplitMix64(u64);

    impl SplitMix64 {
        /// A generator from a seed.
        pub fn new(seed: u64) -> Self {
            SplitMix64(seed)
        }

        /// The next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }

        /// Uniform in `0..n` (`n > 0`).
        pub fn below(&mut self, n: u64) -> u64 {
            ((self.next_u64() as u128 * n as u128) >> 64) as u64
        }

        /// Uniform in `[0, 1)`.
        pub fn unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A seed mixed from a label and indices (stable across runs).
    pub fn seed(label: &str, a: u64, b: u64) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &x in label.as_bytes() {
            h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
        let mut r = SplitMix64::new(h ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64() ^ b.wrapping_mul(0xD6E8_FEB8_6659_FD93)
    }

    /// Byte distance from each DFA state to acceptance (`u32::MAX` when
    /// unreachable, e.g. the dead state 0): a backward BFS over
    /// [`Grammar::next_state`] for all bytes, accepting states at 0.
    pub fn distances(g: &Grammar<'_>) -> Vec<u32> {
        let n = g.state_count();
        // Reverse edges, deduplicated per source state.
        let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut stamp = vec![u32::MAX; n];
        for s in 1..n as u32 {
            for b in 0..=255u8 {
                let t = g.next_state(s, b);
                if t == 0 || t == s || stamp[t as usize] == s {
                    continue;
                }
                stamp[t as usize] = s;
                rev[t as usize].push(s);
            }
        }
        let mut dist = vec![u32::MAX; n];
        let mut queue = std::collections::VecDeque::new();
        for s in 1..n as u32 {
            if g.is_accepting_state(s) {
                dist[s as usize] = 0;
                queue.push_back(s);
            }
        }
        while let Some(t) = queue.pop_front() {
            let d = dist[t as usize] + 1;
            for &s in &rev[t as usize] {
                if dist[s as usize] == u32::MAX {
                    dist[s as usize] = d;
                    queue.push_back(s);
                }
            }
        }
        dist
    }

    /// A walk that went wrong: the runtime contradicted itself.
    #[derive(Debug, Clone)]
    pub struct WalkError {
        /// The tokens accepted before the problem.
        pub tokens: Vec<u32>,
        /// What happened.
        pub message: String,
    }

    /// Walks one grammar many times; holds the distance table and buffers.
    pub struct Walker<'g, 'a> {
        g: &'g Grammar<'a>,
        dist: Vec<u32>,
        vocab_len: usize,
        words: Vec<u32>,
        prefix: Vec<u32>,
        /// The one-byte token of each byte, if any.
        byte_tokens: Vec<Option<u32>>,
        /// After this many steps the walk goes exact-greedy (always ends).
        pub greedy_after: usize,
    }

    impl<'g, 'a> Walker<'g, 'a> {
        /// Prepares walks over `g`; tokens at or beyond `vocab_len` are never
        /// chosen (they are never allowed anyway).
        pub fn new(g: &'g Grammar<'a>, vocab_len: usize) -> Self {
            let mut byte_tokens = vec![None; 256];
            for t in 0..vocab_len.min(g.token_count()) as u32 {
                if let Some(&[b]) = g.token_bytes(t) {
                    byte_tokens[b as usize].get_or_insert(t);
                }
            }
            Walker {
                byte_tokens,
                g,
                dist: distances(g),
                vocab_len,
                words: vec![0; g.mask_words()],
                prefix: vec![0; g.mask_words() + 1],
                greedy_after: 400,
            }
        }

        /// The distance table (see [`distances`]).
        pub fn distances(&self) -> &[u32] {
            &self.dist
        }

        /// Score of a token from the current matcher: the distance of the
        /// state it leads to, -1 for an accepted EOS, `None` if refused.
        fn score(&self, m: &tooldec_runtime::Matcher<'_>, t: u32) -> Option<i64> {
            let mut next = *m;
            if !next.accept_token(t) {
                return None;
            }
            Some(match next.state() {
                None => -1,
                Some(s) => self.dist[s as usize] as i64,
            })
        }

        /// The `k`-th set bit (0-based) of the mask, using `prefix`.
        fn kth(&self, k: u32) -> u32 {
            // Last word w with prefix[w] <= k.
            let w = self.prefix.partition_point(|&p| p <= k) - 1;
            let mut bits = self.words[w];
            for _ in 0..(k - self.prefix[w]) {
                bits &= bits - 1;
            }
            (w as u32) * 32 + bits.trailing_zeros()
        }

        /// One walk: random tokens, more and more greedy toward acceptance,
        /// ending with an accepted EOS. Returns the token ids, EOS included.
        ///
        /// Step `i` picks greedily with probability `min(cap, age / ramp)`:
        /// half of the walks use `age = i`, `(cap, ramp) = (0.95, 40)`; the
        /// others `age` = steps since the distance to acceptance last reached
        /// a new low, with `(0.95, 30)` or `(0.9, 60)`. A greedy pick is the
        /// best of up to 256 random allowed tokens and the allowed one-byte
        /// tokens (all allowed tokens when at most 256 are); else one allowed
        /// token uniformly at random. Ties are broken at random. From
        /// step [`Walker::greedy_after`] on it is exact-greedy over every
        /// allowed token, which ends the walk (every byte has a one-byte
        /// token in the vocabularies used here). `max_steps` bounds the
        /// whole walk (an error past it).
        pub fn walk(
            &mut self,
            rng: &mut SplitMix64,
            max_steps: usize,
        ) -> Result<Vec<u32>, WalkError> {
            let start = self.g.matcher();
            self.walk_from(rng, max_steps, start)
        }

        /// Like [`Walker::walk`], from `start` instead of the grammar's
        /// default start: a matcher of the same grammar at another entry
        /// ([`Grammar::matcher_at`]) or after a forced prefix. Returns the
        /// tokens from there on, EOS included.
        pub fn walk_from(
            &mut self,
            rng: &mut SplitMix64,
            max_steps: usize,
            start: tooldec_runtime::Matcher<'_>,
        ) -> Result<Vec<u32>, WalkError> {
            assert_eq!(
                start.grammar().state_count(),
                self.g.state_count(),
                "walk_from: the matcher is not of this walker's grammar"
            );
            let mut m = start;
            let mut tokens = Vec::new();
            // Each walk draws how it turns greedy: half of the walks by the
            // step count (`min(0.95, step / 40)`); the others by the steps
            // since the distance last reached a new low, so every structural
            // choice (tool name, optional members, array lengths) starts out
            // random and greed only grows while the walk is stuck.
            let (ramp, cap, since_record) = match rng.below(4) {
                0 => (30.0, 0.95, true),
                1 => (60.0, 0.9, true),
                _ => (40.0, 0.95, false),
            };
            // A terminated start has nothing left to walk (the loop returns
            // at once); its distance is that of acceptance.
            let mut record = m.state().map_or(0, |s| self.dist[s as usize]);
            let mut record_step = 0usize;
            let err = |tokens: &Vec<u32>, message: String| WalkError {
                tokens: tokens.clone(),
                message,
            };
            for step in 0..max_steps {
                if m.is_terminated() {
                    return Ok(tokens);
                }
                m.fill_mask(&mut self.words);
                // Clear padding bits beyond the tokenizer (never allowed).
                let mut total = 0u32;
                for (w, &x) in self.words.iter().enumerate() {
                    self.prefix[w] = total;
                    let mut x = x;
                    let base = w * 32;
                    if base + 32 > self.vocab_len {
                        let keep = self.vocab_len.saturating_sub(base);
                        let keep_mask = if keep >= 32 {
                            u32::MAX
                        } else {
                            (1u32 << keep) - 1
                        };
                        if x & !keep_mask != 0 {
                            return Err(err(
                                &tokens,
                                format!(
                                    "the mask allows a token id >= {} (word {w} = {x:#x})",
                                    self.vocab_len
                                ),
                            ));
                        }
                        x &= keep_mask;
                    }
                    total += x.count_ones();
                }
                self.prefix[self.words.len()] = total;
                if total == 0 {
                    return Err(err(
                        &tokens,
                        format!("empty mask in state {:?} (not terminated)", m.state()),
                    ));
                }
                let exact = step >= self.greedy_after;
                let age = if since_record {
                    step - record_step
                } else {
                    step
                };
                let p = (age as f64 / ramp).min(cap);
                let greedy = exact || rng.unit() < p;
                let choice = if !greedy {
                    self.kth(rng.below(total as u64) as u32)
                } else {
                    let mut best: Option<(i64, u32)> = None;
                    let mut ties = 0u64;
                    let mut consider = |t: u32, rng: &mut SplitMix64, this: &Self| {
                        let Some(s) = this.score(&m, t) else {
                            return Err(t);
                        };
                        match best {
                            Some((b, _)) if s > b => {}
                            Some((b, _)) if s == b => {
                                ties += 1;
                                if rng.below(ties + 1) == 0 {
                                    best = Some((s, t));
                                }
                            }
                            _ => {
                                best = Some((s, t));
                                ties = 0;
                            }
                        }
                        Ok(())
                    };
                    if exact || total <= 256 {
                        for (w, &x) in self.words.iter().enumerate() {
                            let mut bits = x;
                            while bits != 0 {
                                let t = (w as u32) * 32 + bits.trailing_zeros();
                                bits &= bits - 1;
                                if (t as usize) < self.vocab_len {
                                    if let Err(t) = consider(t, rng, self) {
                                        return Err(err(&tokens, refused(t, &m)));
                                    }
                                }
                            }
                        }
                    } else {
                        for _ in 0..256 {
                            let t = self.kth(rng.below(total as u64) as u32);
                            if let Err(t) = consider(t, rng, self) {
                                return Err(err(&tokens, refused(t, &m)));
                            }
                        }
                        // The allowed one-byte tokens too: one of them is on
                        // a shortest path, so a greedy step always gets
                        // closer to acceptance.
                        for &t in self.byte_tokens.iter().flatten() {
                            if self.words[(t >> 5) as usize] & (1 << (t & 31)) != 0 {
                                if let Err(t) = consider(t, rng, self) {
                                    return Err(err(&tokens, refused(t, &m)));
                                }
                            }
                        }
                    }
                    best.expect("a nonempty mask").1
                };
                if !m.accept_token(choice) {
                    return Err(err(&tokens, refused(choice, &m)));
                }
                tokens.push(choice);
                if let Some(s) = m.state() {
                    if self.dist[s as usize] < record {
                        record = self.dist[s as usize];
                        record_step = step + 1;
                    }
                }
            }
            if m.is_terminated() {
                return Ok(tokens);
            }
            Err(err(
                &tokens,
                format!("no EOS within {max_steps} steps (state {:?})", m.state()),
            ))
        }
    }

    fn refused(t: u32, m: &tooldec_runtime::Matcher<'_>) -> String {
        format!(
            "the mask allows token {t} but accept_token refuses it (state {:?})",
            m.state()
        )
    }

    /// One walk over `g` (builds a [`Walker`]; reuse a `Walker` for many
    /// walks, its distance table costs a pass over the DFA).
    pub fn walk(
        g: &Grammar<'_>,
        rng: &mut SplitMix64,
        vocab_len: usize,
        max_steps: usize,
    ) -> Result<Vec<u32>, WalkError> {
        Walker::new(g, vocab_len).walk(rng, max_steps)
    }
}

/// Feeds `text`'s real tokenization (no special tokens added) through
/// `m`, checking each token is in the mask before it and accepted; then
/// that the end is accepting and EOS is allowed and accepted. `Err`
/// describes the first problem; `Ok` holds the token ids.
pub fn check_text(
    g: &tooldec_runtime::Grammar<'_>,
    mut m: tooldec_runtime::Matcher<'_>,
    hf: &tokenizers::Tokenizer,
    words: &mut [u32],
    text: &str,
) -> Result<Vec<u32>, String> {
    let enc = hf
        .encode(text, false)
        .map_err(|e| format!("the tokenizer cannot encode: {e}"))?;
    let ids = enc.get_ids();
    for (i, &t) in ids.iter().enumerate() {
        m.fill_mask(words);
        let allowed = words
            .get((t >> 5) as usize)
            .is_some_and(|w| w & (1 << (t & 31)) != 0);
        let shown = || {
            let before = hf.decode(&ids[..i], false).unwrap_or_default();
            format!(
                "token #{i} = {t} {:?} (bytes {:?}); text before it: {before:?}; ids: {ids:?}",
                hf.id_to_token(t).unwrap_or_default(),
                g.token_bytes(t).map(String::from_utf8_lossy)
            )
        };
        if !allowed {
            return Err(format!("not in the mask: {}", shown()));
        }
        if !m.accept_token(t) {
            return Err(format!(
                "in the mask but accept_token refuses it: {}",
                shown()
            ));
        }
    }
    if !m.is_accepting() {
        return Err(format!(
            "all {} tokens accepted but the end is not accepting (state {:?}); ids: {ids:?}",
            ids.len(),
            m.state()
        ));
    }
    m.fill_mask(words);
    let eos_allowed = g
        .eos_tokens()
        .iter()
        .any(|&t| words[(t >> 5) as usize] & (1 << (t & 31)) != 0);
    if !eos_allowed {
        return Err("accepting at the end, but no EOS token in the mask".into());
    }
    if !m.accept_token(g.eos_tokens()[0]) || !m.is_terminated() {
        return Err("EOS in the mask but not accepted".into());
    }
    Ok(ids.to_vec())
}

/// Real tokenizers loaded once per test binary, and per-key caches that
/// tests running in parallel share.
pub mod loaded {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use tooldec_compiler::vocab::Vocab;

    use crate::data_file;

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
}

/// Collecting a test's failures and reporting them together.
pub mod failures {
    use tooldec_compiler::ErrorKind;

    /// A refusal the compiler may legitimately give for real-world schemas.
    pub fn acceptable_refusal(kind: ErrorKind) -> bool {
        matches!(kind, ErrorKind::Unsupported | ErrorKind::Schema)
    }

    /// One failed case: what it was, and what went wrong.
    pub struct Failure {
        pub what: String,
        pub detail: String,
    }

    /// Panics with the count and the first eight failures, if any.
    pub fn report_failures(label: &str, failures: &[Failure]) {
        if failures.is_empty() {
            return;
        }
        let mut msg = format!("{label}: {} failure(s); first ones:\n", failures.len());
        for f in failures.iter().take(8) {
            msg.push_str(&format!("--- {}\n{}\n", f.what, f.detail));
        }
        panic!("{msg}");
    }
}

/// Rendering tool calls as text.
pub mod render {
    use super::*;

    /// JSON with `", "` and `": "` separators (Python's `json.dumps` default
    /// style): `{"a": 1, "b": [1, 2]}`.
    pub fn spaced(v: &Value) -> String {
        let mut out = String::new();
        spaced_into(v, &mut out);
        out
    }

    fn spaced_into(v: &Value, out: &mut String) {
        match v {
            Value::Object(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&serde_json::to_string(k).unwrap());
                    out.push_str(": ");
                    spaced_into(x, out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    spaced_into(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&serde_json::to_string(other).unwrap()),
        }
    }

    /// A ReAct call text: `Thought: I will call the tool.\nAction: NAME\nAction Input: ARGS`.
    pub fn react_call(name: &str, args_text: &str) -> String {
        format!("Thought: I will call the tool.\nAction: {name}\nAction Input: {args_text}")
    }

    /// Resolves a BFCL ground-truth value: inside dicts every value is a
    /// list of acceptable values, of which the first is taken (`""` means
    /// "leave it out"); lists are mapped element-wise.
    pub fn resolve_ground_truth(v: &Value) -> Value {
        match v {
            Value::Object(o) => {
                let mut out = serde_json::Map::new();
                for (k, alts) in o {
                    let first = match alts {
                        Value::Array(a) => match a.first() {
                            Some(f) => f,
                            None => continue,
                        },
                        other => other,
                    };
                    if first == "" {
                        continue;
                    }
                    out.insert(k.clone(), resolve_ground_truth(first));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(resolve_ground_truth).collect()),
            other => other.clone(),
        }
    }

    /// Fits a value to the schema's shape as the grammar writes it: object
    /// members in declared order (an undeclared member is an error: the
    /// grammar's objects are closed), integral floats under `integer` as
    /// integers, arrays element-wise.
    pub fn conform(schema: &Value, v: &Value) -> Result<Value, String> {
        let ty = schema.get("type").and_then(Value::as_str);
        match v {
            Value::Number(n) if ty == Some("integer") && !(n.is_i64() || n.is_u64()) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    Ok(Value::from(f as i64))
                } else {
                    Ok(v.clone())
                }
            }
            Value::Object(o) if ty == Some("object") || schema.get("properties").is_some() => {
                let empty = serde_json::Map::new();
                let props = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                for k in o.keys() {
                    if !props.contains_key(k) {
                        return Err(format!(
                            "member {k:?} is not declared (the grammar's objects are closed)"
                        ));
                    }
                }
                let mut out = serde_json::Map::new();
                for (k, sub) in props {
                    if let Some(x) = o.get(k) {
                        out.insert(k.clone(), conform(sub, x)?);
                    }
                }
                Ok(Value::Object(out))
            }
            Value::Array(a) => match schema.get("items") {
                Some(items) if items.is_object() => Ok(Value::Array(
                    a.iter()
                        .map(|x| conform(items, x))
                        .collect::<Result<_, _>>()?,
                )),
                _ => Ok(v.clone()),
            },
            _ => Ok(v.clone()),
        }
    }

    /// The arguments of a BFCL ground-truth call, in the tool schema's
    /// declared property order (see [`resolve_ground_truth`], [`conform`]).
    pub fn ground_truth_args(parameters: &Value, call_args: &Value) -> Result<Value, String> {
        let resolved = resolve_ground_truth(call_args);
        conform(parameters, &resolved)
    }
}

/// The served part of a loaded grammar, as `runtime/FORMAT.md` defines it,
/// for oracles that must not read the compiler's own tables.
pub mod served {
    use tooldec_runtime::Grammar;

    /// The reserved bytes a special token `id` the grammar uses reads as.
    pub fn marker(id: u32) -> [u8; 4] {
        [0xFF, (id >> 16) as u8, (id >> 8) as u8, id as u8]
    }

    /// Walks `bytes` from `s` with [`Grammar::next_state`]; 0 if it dies.
    pub fn walk_bytes(g: &Grammar<'_>, mut s: u32, bytes: &[u8]) -> u32 {
        for &b in bytes {
            s = g.next_state(s, b);
            if s == 0 {
                break;
            }
        }
        s
    }

    /// The special token ids the grammar uses (from the metadata).
    pub fn grammar_specials(g: &Grammar<'_>) -> Vec<u32> {
        let meta: serde_json::Value = serde_json::from_str(g.metadata()).unwrap();
        meta["grammar_specials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect()
    }

    /// The states a matcher can be in: reached from the entries over text
    /// bytes (below the reserved `0xFE`) and the whole special tokens the
    /// grammar uses.
    pub fn served_states(g: &Grammar<'_>, specials: &[u32]) -> Vec<bool> {
        let mut served = vec![false; g.state_count()];
        let mut stack: Vec<u32> = g.entries().map(|e| e.1).collect();
        while let Some(s) = stack.pop() {
            if std::mem::replace(&mut served[s as usize], true) {
                continue;
            }
            let next = (0..0xFEu8)
                .map(|b| g.next_state(s, b))
                .chain(specials.iter().map(|&id| walk_bytes(g, s, &marker(id))));
            stack.extend(next.filter(|&t| t != 0 && !served[t as usize]));
        }
        served
    }
}
