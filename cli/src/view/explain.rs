//! `tooldec explain ART`: walks a text's tokens through a matcher and says
//! whether the machine accepts it; if not, which token it refused, where in
//! the call that was, and what would have been allowed there.

use std::fmt::Write;

use super::{thousands, View};
use tooldec_compiler::automaton::region::Tag;

/// How many bytes of the text so far a report shows (the end of it).
const CONTEXT: usize = 160;

/// The outcome of [`explain`].
pub struct Explained {
    /// The report, as printed.
    pub report: String,
    /// The machine accepts the whole text (a complete output).
    pub accepted: bool,
}

/// Walks `tokens` from `entry` (the default entry when `None`) with the
/// artifact's default budget. `source` says where the ids came from
/// ("the built-in GPT-2 tokenizer", "--tokens").
pub fn explain(v: &View<'_>, entry: Option<&str>, tokens: &[u32], source: &str) -> Explained {
    let g = &v.g;
    let mut out = String::new();
    let o = &mut out;
    let mut m = match entry {
        Some(name) => match g.matcher_at(name) {
            Some(m) => m,
            None => {
                let names: Vec<&str> = g.entries().map(|(n, _)| n).collect();
                let _ = writeln!(
                    o,
                    "error: the artifact has no entry {name:?}; its entries: {}",
                    names.join(", ")
                );
                return Explained {
                    report: out,
                    accepted: false,
                };
            }
        },
        None => g.matcher(),
    };
    let entry_name = entry.map_or_else(
        || g.entries().next().map_or("?", |(n, _)| n).to_string(),
        str::to_string,
    );
    let _ = writeln!(
        o,
        "{} tokens ({source}), entry `{entry_name}`{}",
        thousands(tokens.len() as u64),
        match m.tokens_left() {
            Some(n) => format!(", budget {n} tokens"),
            None => String::new(),
        }
    );
    let mut w = Walked::default();
    for (i, &t) in tokens.iter().enumerate() {
        let Some(state) = m.state() else {
            let _ = writeln!(
                o,
                "rejected: token {} of {} (id {t}, {}) comes after the end of sequence",
                i + 1,
                tokens.len(),
                v.token(t)
            );
            return Explained {
                report: out,
                accepted: false,
            };
        };
        if m.accept_token(t) {
            if g.is_eos(t) {
                continue;
            }
            w.follow(v, state, g.token_bytes(t).unwrap_or_default());
            continue;
        }
        let _ = writeln!(
            o,
            "rejected: token {} of {} (id {t}, {}) at byte {}",
            i + 1,
            tokens.len(),
            v.token(t),
            thousands(w.text.len() as u64)
        );
        let words = served(&m);
        refused(
            o,
            v,
            &w,
            (state, t),
            m.tokens_left(),
            m.stops_after_call(),
            &words,
        );
        return Explained {
            report: out,
            accepted: false,
        };
    }
    if m.is_terminated() {
        let _ = writeln!(
            o,
            "accepted: a complete output, ended by the end-of-sequence token"
        );
        return Explained {
            report: out,
            accepted: true,
        };
    }
    let state = m.state().unwrap_or(0);
    if m.is_accepting() {
        let _ = writeln!(
            o,
            "accepted: a complete output (state {state}); the end-of-sequence token may follow"
        );
        return Explained {
            report: out,
            accepted: true,
        };
    }
    incomplete(o, v, &w, state, &served(&m));
    Explained {
        report: out,
        accepted: false,
    }
}

/// What the walk has accepted so far.
#[derive(Default)]
struct Walked {
    /// The text accepted so far.
    text: Vec<u8>,
    /// Where in `text` the tool name being written began.
    name_from: Option<usize>,
    /// The last tool name written.
    tool: Option<String>,
}

impl Walked {
    /// Appends an accepted token's bytes, read from `state`, noting where
    /// a tool name begins and, once it ends, which tool it names.
    fn follow(&mut self, v: &View<'_>, state: u32, bytes: &[u8]) {
        let mut s = state;
        for &b in bytes {
            match (v.in_name(s), self.name_from) {
                (true, None) => self.name_from = Some(self.text.len()),
                (false, Some(from)) => {
                    self.tool = Some(name_text(&self.text[from..]));
                    self.name_from = None;
                }
                _ => {}
            }
            self.text.push(b);
            s = v.g.next_state(s, b);
        }
    }
}

/// Token `t` refused in `state`: say why, where, and what was allowed.
fn refused(
    o: &mut String,
    v: &View<'_>,
    w: &Walked,
    (state, t): (u32, u32),
    left: Option<u32>,
    stops: bool,
    words: &[u32],
) {
    let g = &v.g;
    let focus = place(o, v, &w.text, state, w.tool.as_deref());
    let _ = writeln!(o, "  why: {}", why(v, state, t, left, stops));
    if let Some(from) = w.name_from {
        let dies = g
            .token_bytes(t)
            .filter(|b| !b.is_empty() && g.walk(state, b).is_none());
        let _ = writeln!(o, "  {}", name_hint(v, &w.text[from..], dies));
    } else if let Some(tool) = &w.tool {
        let in_args = v.labels[state as usize]
            .iter()
            .any(|&r| !v.args_tools(r).is_empty());
        if in_args {
            let _ = writeln!(o, "  writing the call of `{tool}`");
        }
    }
    allowed(o, v, state, words, focus);
}

/// The mask `m` serves: its entry's stop and its budget applied.
fn served(m: &tooldec_runtime::Matcher<'_>) -> Vec<u32> {
    let mut words = vec![0u32; m.grammar().mask_words()];
    m.fill_mask(&mut words);
    words
}

/// The text ended in `state`, before the output is complete.
fn incomplete(o: &mut String, v: &View<'_>, w: &Walked, state: u32, words: &[u32]) {
    let _ = writeln!(
        o,
        "incomplete: the text ends before the output is complete, at byte {}",
        thousands(w.text.len() as u64)
    );
    let focus = place(o, v, &w.text, state, w.tool.as_deref());
    if let Some(d) = v.g.distance(state) {
        let _ = writeln!(
            o,
            "  the shortest completion takes {d} more token{}",
            if d == 1 { "" } else { "s" }
        );
    }
    if let Some(from) = w.name_from {
        let _ = writeln!(o, "  {}", name_hint(v, &w.text[from..], None));
    }
    allowed(o, v, state, words, focus);
}

/// Where the walk stopped: the text so far and the state in words (only
/// the called tool's places, when the text has named one). Returns that
/// tool's index.
fn place(o: &mut String, v: &View<'_>, text: &[u8], state: u32, tool: Option<&str>) -> Option<u32> {
    let _ = writeln!(o, "  text so far: {}", v.show_text(tail(text)));
    let focus = tool
        .and_then(|n| v.tools.iter().position(|t| t == n))
        .map(|i| i as u32);
    let _ = writeln!(o, "  state {state}: {}", v.describe_state_for(state, focus));
    focus
}

/// The last [`CONTEXT`] bytes, whole characters.
fn tail(text: &[u8]) -> &[u8] {
    let mut from = text.len().saturating_sub(CONTEXT);
    while from > 0 && from < text.len() && (text[from] & 0xC0) == 0x80 {
        from += 1;
    }
    &text[from..]
}

/// A written name: itself, or the string a JSON-quoted name holds.
fn name_text(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    serde_json::from_str::<String>(&s).unwrap_or_else(|_| s.into_owned())
}

fn allowed(o: &mut String, v: &View<'_>, state: u32, words: &[u32], tool: Option<u32>) {
    let total: u64 = words.iter().map(|w| w.count_ones() as u64).sum();
    let _ = writeln!(
        o,
        "  allowed here: {} token{}",
        thousands(total),
        if total == 1 { "" } else { "s" }
    );
    for grp in v.allowed_groups_for(state, words, tool) {
        let _ = writeln!(o, "    {}", v.show_group(&grp));
    }
    let forced = v.forced(state);
    if !forced.is_empty() {
        let _ = writeln!(o, "  the machine expects {} next", v.show_text(&forced));
    }
}

/// Why token `t` is not allowed in `state` (by a matcher whose entry
/// stops after its first call, with `stops`).
fn why(v: &View<'_>, state: u32, t: u32, left: Option<u32>, stops: bool) -> String {
    let g = &v.g;
    if g.is_eos(t) {
        return "the end of sequence is only allowed where the output is complete".into();
    }
    let Some(bytes) = g.token_bytes(t).filter(|b| !b.is_empty()) else {
        return "a token the grammar never uses (a special token, or text it cannot hold)".into();
    };
    let mut s = state;
    for (k, &b) in bytes.iter().enumerate() {
        if stops && g.ends_call(s) {
            return format!(
                "this entry stops after its first call, which ends {}: only the end of sequence may follow",
                if k == 0 {
                    "here".to_string()
                } else {
                    format!("after {}", v.show_text(&bytes[..k]))
                }
            );
        }
        let next = g.next_state(s, b);
        if next == 0 {
            let ok = &bytes[..k];
            return if k == 0 {
                format!(
                    "no output continues with {} here",
                    v.show_text(&bytes[..char_end(bytes, 0)])
                )
            } else {
                format!(
                    "its first {k} byte{} ({}) fit, but {} cannot follow",
                    if k == 1 { "" } else { "s" },
                    v.show_text(ok),
                    v.show_text(&bytes[k..char_end(bytes, k)])
                )
            };
        }
        s = next;
    }
    match (g.distance(s), left) {
        (None, _) => "its bytes fit, but no sequence of this vocabulary's tokens completes the output from where they lead".into(),
        (Some(d), Some(n)) if d + 1 > n => format!(
            "its bytes fit, but the budget does not: {n} token{} left, and the shortest completion after it takes {d} more (at most {} fit)",
            if n == 1 { "" } else { "s" },
            n.saturating_sub(1)
        ),
        _ => "it is not in this state's mask".into(),
    }
}

/// The end of the character starting at byte `k` (for showing a whole
/// character where a byte is refused).
fn char_end(bytes: &[u8], k: usize) -> usize {
    let len = match bytes[k] {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    };
    (k + len).min(bytes.len())
}

/// Which tools a partly written name could still become.
fn name_hint(v: &View<'_>, written: &[u8], refused: Option<&[u8]>) -> String {
    let so_far = String::from_utf8_lossy(written);
    let so_far = so_far.trim_start_matches('"');
    let fits: Vec<&String> = v
        .tools
        .iter()
        .filter(|n| n.as_bytes().starts_with(so_far.as_bytes()))
        .collect();
    let shown: Vec<String> = fits.iter().take(8).map(|n| format!("`{n}`")).collect();
    let more = if fits.len() > 8 {
        format!(" and {} more", fits.len() - 8)
    } else {
        String::new()
    };
    let tried = refused
        .map(|b| {
            format!(
                "; no tool name begins with `{so_far}{}`",
                String::from_utf8_lossy(b)
            )
        })
        .unwrap_or_default();
    if so_far.is_empty() {
        format!("tool names: {}{more}{tried}", shown.join(", "))
    } else {
        format!(
            "tool name so far `{so_far}`: {} tool{} begin{} this way: {}{more}{tried}",
            fits.len(),
            if fits.len() == 1 { "" } else { "s" },
            if fits.len() == 1 { "s" } else { "" },
            shown.join(", ")
        )
    }
}

impl View<'_> {
    /// Whether the next byte from `state` is part of a tool name.
    pub fn in_name(&self, state: u32) -> bool {
        self.labels.get(state as usize).is_some_and(|l| {
            l.iter()
                .any(|&r| matches!(self.regions[r as usize].tag, Some(Tag::Name)))
        })
    }
}
