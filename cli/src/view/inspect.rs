//! `tooldec inspect ART`: the header, the tools and their argument
//! machines, state and mask counts, bytes per section; `--state N`: one
//! state's place in the call and its allowed tokens, grouped.

use std::fmt::Write;

use tooldec_runtime::layout;

use super::{known, thousands, View};
use tooldec_compiler::automaton::region::Tag;
use tooldec_compiler::error::{Error, ErrorKind};

/// The artifact's file, for the sizes inspect reports.
pub struct Source<'a> {
    /// How the artifact is named in the report.
    pub name: &'a str,
    /// The file's length.
    pub file_bytes: usize,
    /// The payload (decompressed).
    pub payload: &'a [u8],
}

const SECTIONS: [&str; 17] = [
    "BYTE_CLASSES",
    "TRANSITIONS",
    "STATES",
    "MASK_INDEX",
    "MASK_DATA",
    "EOS",
    "TOKEN_OFFSETS",
    "TOKEN_BYTES",
    "META",
    "ENTRIES",
    "ENTRY_NAMES",
    "DISTANCE",
    "TIER_INDEX",
    "TIERS",
    "TOOLS",
    "STOP_TOKENS",
    "LOOPS",
];

/// What each section holds, in a few words.
const SECTION_WHAT: [&str; 17] = [
    "byte -> class, row shapes",
    "per state a row: its shape, its targets",
    "flags (accepting, ends a call, stop gate), loop set and mask id per state",
    "kind, offset and length per mask",
    "the masks' words",
    "end-of-sequence ids",
    "where each token's bytes start",
    "every token's bytes",
    "JSON: tools, format, vocabulary, regions",
    "entry states",
    "entry names",
    "tokens to acceptance and budget profile per state",
    "budget profiles: top tier, tier list",
    "budget tier lists",
    "one-tool matchers: names, name colours, gates, per-tool distances",
    "per stop gate, the tokens that run past a call's end",
    "the sets of tokens that lead a state back to itself",
];

fn word(payload: &[u8], i: usize) -> u32 {
    let b = &payload[i * 4..i * 4 + 4];
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// The whole report.
pub fn inspect(v: &View<'_>, src: &Source<'_>) -> String {
    let mut out = String::new();
    header(&mut out, v, src);
    counts(&mut out, v);
    tools(&mut out, v);
    sections(&mut out, src);
    out
}

/// The artifact, its vocabulary, format, entries and default budget.
fn header(o: &mut String, v: &View<'_>, src: &Source<'_>) {
    let g = &v.g;
    let _ = writeln!(
        o,
        "artifact      {}: {} bytes; payload {} bytes; format version {}",
        src.name,
        thousands(src.file_bytes as u64),
        thousands(src.payload.len() as u64),
        layout::VERSION
    );
    let _ = writeln!(o, "generator     {}", known(&v.meta.generator));
    let _ = writeln!(
        o,
        "vocabulary    {} ({}), {} tokens",
        v.vocab_label(),
        known(&v.meta.vocab.kind),
        thousands(g.token_count() as u64)
    );
    let fp: String = g
        .vocab_fingerprint()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let _ = writeln!(o, "fingerprint   sha256 {fp}");
    let _ = writeln!(
        o,
        "mask width    {} tokens = {} u32 words{}",
        thousands(g.mask_width() as u64),
        thousands(g.mask_words() as u64),
        if g.mask_width() > g.token_count() {
            format!(
                " (ids {} and up are padding, never allowed)",
                thousands(g.token_count() as u64)
            )
        } else {
            String::new()
        }
    );
    let eos: Vec<String> = g
        .eos_tokens()
        .iter()
        .map(|&t| format!("{t} {}", v.token(t)))
        .collect();
    let _ = writeln!(o, "eos           {}", eos.join(", "));
    let _ = writeln!(o, "format        {}", v.format_name());
    for (i, (name, state)) in g.entries().enumerate() {
        let shortest = g
            .distance(state)
            .map_or("none".to_string(), |d| d.to_string());
        let _ = writeln!(
            o,
            "{}{name}: state {state}, shortest complete output {shortest} tokens{}",
            if i == 0 {
                "entries       "
            } else {
                "              "
            },
            match (i == 0, g.entry(name).is_some_and(|e| e.1)) {
                (true, true) => " (default; stops after its first call)",
                (true, false) => " (default)",
                (false, true) => " (stops after its first call)",
                (false, false) => "",
            }
        );
    }
    let _ = match g.max_tokens() {
        Some(n) => writeln!(
            o,
            "budget        --max-tokens {n}: every matcher starts with {n} tokens (others can be asked for)"
        ),
        None => writeln!(
            o,
            "budget        none by default (matchers can be given any budget)"
        ),
    };
}

/// States, masks and budget tiers, counted.
fn counts(o: &mut String, v: &View<'_>) {
    let g = &v.g;
    let n = g.state_count();
    let accepting = (1..n as u32).filter(|&s| g.is_accepting_state(s)).count();
    let _ = writeln!(
        o,
        "states        {} (the dead state included), {} accepting, {} byte classes",
        thousands(n as u64),
        thousands(accepting as u64),
        g.class_count()
    );
    let mut kinds: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for id in 0..g.mask_count() as u32 {
        if let Some((kind, words)) = g.mask_storage(id) {
            let e = kinds.entry(kind).or_default();
            e.0 += 1;
            e.1 += words;
        }
    }
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(k, (c, w))| {
            format!(
                "{} {k} ({} words)",
                thousands(*c as u64),
                thousands(*w as u64)
            )
        })
        .collect();
    let _ = writeln!(
        o,
        "masks         {} distinct: {}",
        thousands(g.mask_count() as u64),
        kinds.join(", ")
    );
    let tiered = (1..n as u32)
        .filter(|&s| g.tiers(s).next().is_some())
        .count();
    let _ = writeln!(
        o,
        "budget tiers  {} states have a smaller mask for a small budget",
        thousands(tiered as u64)
    );
    let looping = (1..n as u32).filter(|&s| g.loop_count(s) > 0).count();
    let _ = writeln!(
        o,
        "loops         {} states take the tokens that lead back to them without a walk ({} shared sets)",
        thousands(looping as u64),
        g.payload().loops.set_count()
    );
}

/// Each tool's parameters and machine, and what `--relax` approximated.
fn tools(o: &mut String, v: &View<'_>) {
    let _ = writeln!(o, "tools         {}", v.tools.len());
    if v.no_regions {
        let _ = writeln!(
            o,
            "  (no region table: compiled by an older release or with --no-regions; recompile to see each tool's machine)"
        );
    }
    let width = v.tools.iter().map(|t| t.len()).max().unwrap_or(0).min(32);
    let census = Census::new(v);
    for (i, name) in v.tools.iter().enumerate() {
        let _ = writeln!(o, "  {name:<width$}  {}", tool_line(v, &census, i as u32));
    }
    let r = &v.meta.relaxed;
    if !r.is_empty() {
        let _ = writeln!(o, "relaxed       {} over-approximation(s):", r.len());
        for line in r {
            let _ = writeln!(o, "  {line}");
        }
    }
}

/// Bytes per section of the payload.
fn sections(o: &mut String, src: &Source<'_>) {
    let _ = writeln!(o, "sections      bytes");
    let count = word(src.payload, layout::hdr::N_SECTIONS) as usize;
    let total: u64 = src.payload.len() as u64;
    let table_bytes = (layout::HEADER_WORDS + 3 * count) * 4;
    let _ = writeln!(
        o,
        "  {:<14}{:>12}  header and section table",
        "HEADER",
        thousands(table_bytes as u64)
    );
    for i in 0..count {
        let at = layout::HEADER_WORDS + 3 * i;
        let (id, len) = (
            word(src.payload, at) as usize,
            word(src.payload, at + 2) as u64,
        );
        let name = SECTIONS.get(id.wrapping_sub(1)).copied().unwrap_or("?");
        let what = SECTION_WHAT.get(id.wrapping_sub(1)).copied().unwrap_or("");
        let _ = writeln!(
            o,
            "  {name:<14}{:>12}  {:>5.1}%  {what}",
            thousands(len),
            100.0 * len as f64 / total as f64
        );
    }
}

/// Per region, counted in one pass over the states: how many states lie
/// in it or in a region within it.
struct Census {
    states: Vec<usize>,
}

impl Census {
    fn new(v: &View<'_>) -> Census {
        let n = v.regions.len();
        let mut states = vec![0usize; n];
        let mut seen = vec![usize::MAX; n];
        for (s, labels) in v.labels.iter().enumerate().skip(1) {
            for &r in labels {
                let mut r = r as usize;
                // Up the tree, each region once per state.
                while seen[r] != s {
                    seen[r] = s;
                    states[r] += 1;
                    if r == 0 {
                        break;
                    }
                    r = v.regions[r].parent as usize;
                }
            }
        }
        Census { states }
    }
}

/// One tool's line: its parameters and its argument machine's size.
fn tool_line(v: &View<'_>, census: &Census, tool: u32) -> String {
    // The tool's argument regions (one Args region, or one per entry).
    let args: Vec<u32> = (0..v.regions.len() as u32)
        .filter(|&r| matches!(&v.regions[r as usize].tag, Some(Tag::Args { tools }) if tools.contains(&tool)))
        .collect();
    let mut params: Vec<(usize, String)> = Vec::new();
    let mut sharing: Vec<u32> = Vec::new();
    for &a in &args {
        if let Some(Tag::Args { tools }) = &v.regions[a as usize].tag {
            sharing.extend(tools.iter().filter(|&&t| t != tool));
        }
        for (id, r) in v.regions.iter().enumerate() {
            if r.parent == a {
                if let Some(Tag::Value { name, ty }) = &r.tag {
                    let p = if ty.is_empty() {
                        name.clone()
                    } else {
                        format!("{name}: {ty}")
                    };
                    // The NFA is built right to left, so the regions of
                    // later members get the smaller ids: descending ids
                    // are the declared order.
                    if !params.iter().any(|(_, q)| *q == p) {
                        params.push((usize::MAX - id, p));
                    }
                }
            }
        }
    }
    params.sort();
    let params: Vec<String> = params.into_iter().map(|(_, p)| p).collect();
    sharing.sort_unstable();
    sharing.dedup();
    // A tool has one argument region per place it is called from; they
    // do not overlap.
    let states: usize = args.iter().map(|&a| census.states[a as usize]).sum();
    let mut line = format!(
        "{} parameter{}{}; arguments: {} states",
        params.len(),
        if params.len() == 1 { "" } else { "s" },
        if params.is_empty() {
            String::new()
        } else {
            format!(" ({})", params.join(", "))
        },
        thousands(states as u64)
    );
    if !sharing.is_empty() {
        let _ = write!(line, ", one machine shared with {}", v.tool_names(&sharing));
    }
    line
}

/// `--state N`: where the state is and what it allows, grouped.
pub fn state(v: &View<'_>, state: u32, left: Option<u32>) -> Result<String, Error> {
    let g = &v.g;
    if state as usize >= g.state_count() {
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "--state {state}: the artifact has states 0 to {}",
                g.state_count() - 1
            ),
        ));
    }
    let mut out = String::new();
    let o = &mut out;
    let _ = writeln!(o, "state {state}: {}", v.describe_state(state));
    let dist = match g.distance(state) {
        Some(d) => format!("{d} tokens to the shortest complete output"),
        None => "no token sequence completes from here".into(),
    };
    let mask = match g
        .mask_id(state)
        .and_then(|id| Some((id, g.mask_storage(id)?)))
    {
        Some((id, (kind, words))) => {
            format!("mask #{id} ({kind}, {} words)", thousands(words as u64))
        }
        None => "no mask".into(),
    };
    let _ = writeln!(
        o,
        "  {}; {dist}; {mask}",
        if g.is_accepting_state(state) {
            "accepting (end of sequence allowed)"
        } else {
            "not accepting"
        }
    );
    let words = v.state_mask(state, left);
    let total: u64 = words.iter().map(|w| w.count_ones() as u64).sum();
    let _ = writeln!(
        o,
        "  allowed: {} token{}{}",
        thousands(total),
        if total == 1 { "" } else { "s" },
        match left {
            Some(n) => format!(" with {n} tokens left"),
            None => String::new(),
        }
    );
    for grp in v.allowed_groups(state, &words) {
        let _ = writeln!(o, "    {}", v.show_group(&grp));
    }
    if let (0, Some(d)) = (total, g.distance(state)) {
        let _ = writeln!(
            o,
            "    (a complete output from here takes at least {d} more tokens)"
        );
    }
    let loops = g.loop_count(state);
    if loops > 0 {
        let _ = writeln!(
            o,
            "  loops: {} of them lead back here (taken without a walk)",
            thousands(loops as u64)
        );
    }
    let forced = v.forced(state);
    if !forced.is_empty() {
        let _ = writeln!(
            o,
            "  forced: the next bytes can only be {}",
            v.show_text(&forced)
        );
    }
    Ok(out)
}
