//! Seeing a compiled machine: what `tooldec inspect`, `explain` and
//! `draw` print. Everything here reads a loaded artifact (its tables and
//! its metadata: tool names, the region tree and each state's regions, see
//! [`tooldec_compiler::automaton::region`]) and returns text; nothing here serves masks.

pub mod draw;
pub mod explain;
pub mod inspect;
pub mod parse;

use std::collections::BTreeMap;

use tooldec_compiler::artifact::meta::Meta;
use tooldec_compiler::automaton::region::{Region, Tag, FORMAT};
use tooldec_compiler::{Error, ErrorKind};
use tooldec_runtime::layout::reserved;
use tooldec_runtime::Grammar;

/// How many tokens a group of allowed tokens shows by name.
pub const SHOWN: usize = 8;

/// A loaded artifact with its metadata read.
pub struct View<'g> {
    /// The artifact's tables.
    pub g: Grammar<'g>,
    /// The artifact's metadata (META).
    pub meta: Meta,
    /// The tools' names, in tool order.
    pub tools: Vec<String>,
    /// The region tree, one entry per region in id order (the root alone
    /// when the artifact has no region table).
    pub regions: Vec<Region>,
    /// Each state's regions (sorted); empty for the dead state.
    pub labels: Vec<Vec<u32>>,
    /// Set when the artifact has no region table (compiled by an older
    /// release): every state is then "the format".
    pub no_regions: bool,
}

impl<'g> View<'g> {
    /// Reads the metadata of `g`; `what` names the artifact in errors.
    pub fn new(g: Grammar<'g>, what: &str) -> Result<View<'g>, Error> {
        let bad = |m: String| Error::new(ErrorKind::Artifact, format!("{what}: metadata: {m}"));
        let meta = Meta::from_artifact_text(g.metadata()).map_err(bad)?;
        let n = g.state_count();
        let (regions, labels, no_regions) = match meta.regions(n).map_err(bad)? {
            Some((regions, labels)) => (regions, labels, false),
            None => (vec![Region::root()], vec![vec![FORMAT]; n], true),
        };
        Ok(View {
            tools: meta.tools.clone(),
            g,
            meta,
            regions,
            labels,
            no_regions,
        })
    }

    /// The call format's name (`react`, ...), or `?` when META has none.
    pub fn format_name(&self) -> &str {
        known(&self.meta.format)
    }

    /// The vocabulary's label, or `?` when META has none.
    pub fn vocab_label(&self) -> &str {
        known(&self.meta.vocab.label)
    }

    /// A token for display: its text as a quoted string, or its special
    /// token's name in angle brackets.
    pub fn token(&self, t: u32) -> String {
        match self.g.token_bytes(t) {
            Some(b) if b.first() != Some(&reserved::SPECIAL) && !b.is_empty() => quote(b),
            _ => match self.meta.vocab.specials.get(&t) {
                Some(name) => name.clone(),
                None => format!("<id {t}>"),
            },
        }
    }

    /// `tools` by name: "`a`", or "`a`, `b` (one shared machine)".
    pub fn tool_names(&self, tools: &[u32]) -> String {
        let names: Vec<String> = tools
            .iter()
            .map(|&t| {
                format!(
                    "`{}`",
                    self.tools.get(t as usize).map_or("?", String::as_str)
                )
            })
            .collect();
        match names.len() {
            0..=1 => names.concat(),
            n if n <= 8 => names.join(", "),
            n => format!("{} and {} more", names[..6].join(", "), n - 6),
        }
    }

    /// The property path of a key or value region: `flexible.days`.
    pub fn path(&self, mut r: u32) -> String {
        let mut parts = Vec::new();
        while let Some(Tag::Key { name } | Tag::Value { name, .. }) = &self.regions[r as usize].tag
        {
            if parts.last() != Some(name) {
                parts.push(name.clone())
            }
            r = self.regions[r as usize].parent;
        }
        parts.reverse();
        parts.join(".")
    }

    /// The tools whose arguments region `r` is in (empty outside arguments).
    pub fn args_tools(&self, mut r: u32) -> &[u32] {
        loop {
            match &self.regions[r as usize].tag {
                Some(Tag::Args { tools }) | Some(Tag::Call { tools }) => return tools,
                None => return &[],
                _ => {}
            }
            r = self.regions[r as usize].parent;
        }
    }

    /// Whether `a` is `b` or one of its ancestors.
    fn encloses(&self, a: u32, mut b: u32) -> bool {
        loop {
            if a == b {
                return true;
            }
            if b == FORMAT {
                return false;
            }
            b = self.regions[b as usize].parent;
        }
    }

    /// The most specific of `set`: those that enclose no other member.
    pub fn leaves(&self, set: &[u32]) -> Vec<u32> {
        set.iter()
            .copied()
            .filter(|&a| !set.iter().any(|&b| b != a && self.encloses(a, b)))
            .collect()
    }

    /// One region in words.
    pub fn describe_region(&self, r: u32) -> String {
        match &self.regions[r as usize].tag {
            None => "text the format writes".into(),
            Some(Tag::Text { rule }) => format!("free text (rule `{rule}`)"),
            Some(Tag::Name) => "a tool name".into(),
            Some(Tag::Call { tools }) => {
                format!("the call of {} after its name", self.tool_names(tools))
            }
            Some(Tag::Args { tools }) => format!("the arguments of {}", self.tool_names(tools)),
            Some(Tag::Key { .. }) => format!(
                "the name of argument `{}` of {}",
                self.path(r),
                self.tool_names(self.args_tools(r))
            ),
            Some(Tag::Value { ty, .. }) => format!(
                "the value of argument `{}`{} of {}",
                self.path(r),
                if ty.is_empty() {
                    String::new()
                } else {
                    format!(" ({ty})")
                },
                self.tool_names(self.args_tools(r))
            ),
        }
    }

    /// Where a state is, in words: its most specific regions. Several
    /// property names that a prefix still allows read as one phrase.
    pub fn describe_state(&self, state: u32) -> String {
        self.describe_state_for(state, None)
    }

    /// [`View::describe_state`], where the tool being called is known: of
    /// a state several tools' machines share, only that tool's places.
    pub fn describe_state_for(&self, state: u32, tool: Option<u32>) -> String {
        let Some(set) = self.labels.get(state as usize) else {
            return "no state".into();
        };
        if state == 0 {
            return "the dead state".into();
        }
        let mut leaves = self.leaves(set);
        if let Some(t) = tool {
            let mine: Vec<u32> = leaves
                .iter()
                .copied()
                .filter(|&r| self.args_tools(r).contains(&t))
                .collect();
            if !mine.is_empty() {
                leaves = mine;
            }
        }
        if leaves.is_empty() {
            return if self.g.is_accepting_state(state) {
                "the end of the output".into()
            } else {
                "text the format writes".into()
            };
        }
        let keys: Vec<u32> = leaves
            .iter()
            .copied()
            .filter(|&r| matches!(self.regions[r as usize].tag, Some(Tag::Key { .. })))
            .collect();
        let of_kind = |call: bool| -> Vec<u32> {
            leaves
                .iter()
                .copied()
                .filter(|&r| match self.regions[r as usize].tag {
                    Some(Tag::Args { .. }) => !call,
                    Some(Tag::Call { .. }) => call,
                    _ => false,
                })
                .collect()
        };
        let (calls, args) = (of_kind(true), of_kind(false));
        let mut parts: Vec<String> = Vec::new();
        for (regions, what) in [
            (&calls, "the call of {} after its name"),
            (&args, "the arguments of {}"),
        ] {
            if regions.len() > 1 {
                let mut tools: Vec<u32> = regions
                    .iter()
                    .flat_map(|&a| self.args_tools(a).iter().copied())
                    .collect();
                tools.sort_unstable();
                tools.dedup();
                parts.push(format!(
                    "{} (a state their machines share)",
                    what.replace("{}", &self.tool_names(&tools))
                ));
            }
        }
        if keys.len() > 1 {
            let names: Vec<String> = keys
                .iter()
                .map(|&k| format!("`{}`", self.path(k)))
                .collect();
            let mut tools: Vec<u32> = keys
                .iter()
                .flat_map(|&k| self.args_tools(k).iter().copied())
                .collect();
            tools.sort_unstable();
            tools.dedup();
            parts.push(format!(
                "an argument name of {} ({})",
                self.tool_names(&tools),
                names.join(", ")
            ));
        }
        for &r in &leaves {
            if (keys.len() > 1 && keys.contains(&r))
                || (args.len() > 1 && args.contains(&r))
                || (calls.len() > 1 && calls.contains(&r))
            {
                continue;
            }
            parts.push(self.describe_region(r));
        }
        if parts.len() > 3 {
            let more = parts.len() - 2;
            parts.truncate(2);
            parts.push(format!("{more} other places (a state they share)"));
        }
        parts.join(" or ")
    }

    /// The tools an argument-or-call region set belongs to (sorted).
    pub fn tools_of_state(&self, state: u32) -> Vec<u32> {
        let mut tools: Vec<u32> = self
            .labels
            .get(state as usize)
            .into_iter()
            .flatten()
            .flat_map(|&r| self.args_tools(r).iter().copied())
            .collect();
        tools.sort_unstable();
        tools.dedup();
        tools
    }

    /// The state a token leads to from `state`, if its bytes walk there.
    pub fn token_target(&self, state: u32, t: u32) -> Option<u32> {
        let bytes = self.g.token_bytes(t)?;
        if bytes.is_empty() {
            return None;
        }
        self.g.walk(state, bytes)
    }

    /// The tokens `mask` allows in `state`, grouped by where they lead:
    /// "N tokens that stay in X" / "N tokens that lead into Y", then EOS.
    pub fn allowed_groups(&self, state: u32, mask: &[u32]) -> Vec<Group> {
        self.allowed_groups_for(state, mask, None)
    }

    /// [`View::allowed_groups`], where the tool being called is known.
    pub fn allowed_groups_for(&self, state: u32, mask: &[u32], tool: Option<u32>) -> Vec<Group> {
        let here = self.describe_state_for(state, tool);
        let mut groups: BTreeMap<(u8, String), Vec<u32>> = BTreeMap::new();
        let mut eos = Vec::new();
        for t in 0..self.g.mask_width() as u32 {
            if mask[(t >> 5) as usize] >> (t & 31) & 1 == 0 {
                continue;
            }
            if self.g.is_eos(t) {
                eos.push(t);
                continue;
            }
            let to = self.token_target(state, t).unwrap_or(0);
            let there = self.describe_state_for(to, tool);
            let key = if there == here {
                (0, format!("stay in {there}"))
            } else {
                (1, format!("lead into {there}"))
            };
            groups.entry(key).or_default().push(t);
        }
        let mut out: Vec<Group> = groups
            .into_iter()
            .map(|((_, what), tokens)| Group { what, tokens })
            .collect();
        // The biggest group first; ties in name order.
        out.sort_by(|a, b| {
            b.tokens
                .len()
                .cmp(&a.tokens.len())
                .then(a.what.cmp(&b.what))
        });
        if !eos.is_empty() {
            out.push(Group {
                what: "end the output".into(),
                tokens: eos,
            });
        }
        out
    }

    /// A group as one line: "1,204 tokens that stay in X: `a`, `b`, ...".
    pub fn show_group(&self, grp: &Group) -> String {
        let mut shown: Vec<u32> = grp.tokens.clone();
        // The shortest first: they say the most about what is allowed.
        shown.sort_by_key(|&t| (self.g.token_bytes(t).map_or(0, <[u8]>::len), t));
        let names: Vec<String> = shown.iter().take(SHOWN).map(|&t| self.token(t)).collect();
        let more = if grp.tokens.len() > SHOWN {
            ", ..."
        } else {
            ""
        };
        let what = match (grp.tokens.len(), grp.what.split_once(' ')) {
            (1, Some((verb, rest))) => format!("{verb}s {rest}"),
            _ => grp.what.clone(),
        };
        format!(
            "{} {} that {what}: {}{more}",
            thousands(grp.tokens.len() as u64),
            if grp.tokens.len() == 1 {
                "token"
            } else {
                "tokens"
            },
            names.join(", ")
        )
    }

    /// The bytes that must come next from `state`: while the state is not
    /// accepting and exactly one byte leads on (to a state some token
    /// sequence completes), that byte; at most 80.
    pub fn forced(&self, mut state: u32) -> Vec<u8> {
        let mut out = Vec::new();
        while out.len() < 80 && !self.g.is_accepting_state(state) {
            let mut only = None;
            for b in 0..=255u8 {
                let t = self.g.next_state(state, b);
                if t != 0 && self.g.distance(t).is_some() {
                    if only.is_some() {
                        return out;
                    }
                    only = Some((b, t));
                }
            }
            match only {
                Some((b, t)) => {
                    out.push(b);
                    state = t;
                }
                None => break,
            }
        }
        out
    }

    /// Output bytes for display, special tokens (0xFF and a 3-byte id)
    /// by name: `Action: get_weather`, `<tool_call>\n{`.
    pub fn show_text(&self, bytes: &[u8]) -> String {
        let mut out = String::from("`");
        let mut i = 0;
        while i < bytes.len() {
            let j = bytes[i..]
                .iter()
                .position(|&b| b == reserved::SPECIAL)
                .map_or(bytes.len(), |k| i + k);
            let q = quote(&bytes[i..j]);
            out.push_str(&q[1..q.len() - 1]);
            if let Some(id) = reserved::marked_id(&bytes[j..]) {
                match self.meta.vocab.specials.get(&id) {
                    Some(name) => out.push_str(name),
                    None => out.push_str(&format!("<id {id}>")),
                }
                i = j + reserved::MARKER_BYTES;
            } else {
                let q = quote(&bytes[j.min(bytes.len())..]);
                out.push_str(&q[1..q.len() - 1]);
                break;
            }
        }
        out.push('`');
        out
    }

    /// The mask a state serves with `left` tokens of budget (`None`: none).
    pub fn state_mask(&self, state: u32, left: Option<u32>) -> Vec<u32> {
        let mut words = vec![0u32; self.g.mask_words()];
        match left {
            Some(n) => {
                self.g.fill_budget_mask(state, n, &mut words);
            }
            None => {
                if let Some(id) = self.g.mask_id(state) {
                    self.g.fill_mask_by_id(id, &mut words);
                }
            }
        }
        words
    }
}

/// `s`, or `?` when META left it out (an artifact older than the key).
pub(crate) fn known(s: &str) -> &str {
    if s.is_empty() {
        "?"
    } else {
        s
    }
}

/// Allowed tokens that lead to the same place.
#[derive(Debug, Clone)]
pub struct Group {
    /// Where they lead: "stay in X", "lead into Y", "end the output".
    pub what: String,
    /// The tokens, in id order.
    pub tokens: Vec<u32>,
}

/// Bytes as a readable quoted string: `"get_weather"`, `"\n{"`; bytes that
/// are not UTF-8 as `\xNN`.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::from("`");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '`' => out.push_str("\\`"),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('`');
    out
}

/// 1234567 as "1,234,567".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The tokenizer an artifact was compiled for, to turn text into the ids a
/// model would see.
pub enum Tokenizer {
    /// The built-in GPT-2 vocabulary (`r50k_base`).
    Builtin,
    /// A Hugging Face `tokenizer.json`.
    Hf(Box<tokenizers::Tokenizer>),
}

/// The label the built-in vocabulary carries in metadata.
const BUILTIN_LABEL: &str = "gpt2 (built-in r50k_base)";

impl Tokenizer {
    /// The artifact's tokenizer: the built-in one when the artifact was
    /// compiled with it, else the `tokenizer.json` at `path`, which must
    /// have the artifact's vocabulary fingerprint.
    pub fn for_artifact(
        view: &View<'_>,
        path: Option<&std::path::Path>,
    ) -> Result<Tokenizer, Error> {
        let label = view.vocab_label();
        let fp_hex = |fp: &[u8; 32]| fp.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let Some(path) = path else {
            if label == BUILTIN_LABEL {
                let v = tooldec_compiler::vocab::Vocab::builtin_gpt2()?;
                if &v.fingerprint() == view.g.vocab_fingerprint() {
                    return Ok(Tokenizer::Builtin);
                }
            }
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "the artifact was compiled for the vocabulary {label:?}; pass its tokenizer.json with \
                     --tokenizer PATH, or give token ids with --tokens"
                ),
            ));
        };
        if tooldec_compiler::vocab::is_gguf(path) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{}: a GGUF file has no tokenizer this tool can run; pass the model's tokenizer.json, \
                     or give token ids with --tokens",
                    path.display()
                ),
            ));
        }
        let tok = tokenizers::Tokenizer::from_file(path).map_err(|e| {
            Error::new(
                ErrorKind::Vocab,
                format!("{}: cannot load tokenizer: {e}", path.display()),
            )
        })?;
        let size = tok.get_vocab_size(true);
        if size != view.g.token_count() {
            return Err(Error::new(
                ErrorKind::Vocab,
                format!(
                    "{}: not the artifact's tokenizer: it has {size} tokens, the artifact's vocabulary {label:?} has {}",
                    path.display(),
                    view.g.token_count()
                ),
            ));
        }
        let eos: Vec<String> = view.g.eos_tokens().iter().map(u32::to_string).collect();
        let v = tooldec_compiler::vocab::Vocab::from_tokenizer_json(path, &eos)?;
        if &v.fingerprint() != view.g.vocab_fingerprint() {
            return Err(Error::new(
                ErrorKind::Vocab,
                format!(
                    "{}: not the artifact's tokenizer: the artifact was compiled for {label:?} (sha256 {}), \
                     this one has sha256 {}",
                    path.display(),
                    fp_hex(view.g.vocab_fingerprint()),
                    fp_hex(&v.fingerprint())
                ),
            ));
        }
        Ok(Tokenizer::Hf(Box::new(tok)))
    }

    /// The ids of `text`, special tokens spelled in it included.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, Error> {
        match self {
            Tokenizer::Builtin => {
                Ok(tiktoken_rs::r50k_base_singleton().encode_with_special_tokens(text))
            }
            Tokenizer::Hf(t) => t
                .encode(text, false)
                .map(|e| e.get_ids().to_vec())
                .map_err(|e| Error::new(ErrorKind::Vocab, format!("cannot tokenize: {e}"))),
        }
    }
}
