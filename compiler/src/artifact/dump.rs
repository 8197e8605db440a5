//! A readable text dump of a loaded artifact: header, states with their
//! byte-range transitions, and a summary of each state's allowed tokens.
//! Snapshot tests compare these dumps, never the binary bytes.

use std::fmt::Write;

use tooldec_runtime::Grammar;

/// How many allowed tokens a state's summary lists by name.
const SHOWN: usize = 8;

/// Renders a byte for display: printable ASCII as itself, others escaped.
fn show_byte(b: u8) -> String {
    match b {
        b'\'' => "\\'".into(),
        b'\\' => "\\\\".into(),
        0x21..=0x7e => (b as char).to_string(),
        b' ' => "' '".into(),
        b'\n' => "\\n".into(),
        b'\t' => "\\t".into(),
        b'\r' => "\\r".into(),
        _ => format!("\\x{b:02x}"),
    }
}

/// A token for display: its text in quotes, or its special name.
pub fn show_token(g: &Grammar<'_>, specials: &serde_json::Value, t: u32) -> String {
    match g.token_bytes(t) {
        // A special token the grammar uses reads as its reserved bytes.
        Some(b) if b.first() != Some(&0xFF) => format!("{:?}", String::from_utf8_lossy(b)),
        _ => match specials.get(t.to_string()).and_then(|v| v.as_str()) {
            Some(name) => format!("<special {name}>"),
            None => format!("<id {t}>"),
        },
    }
}

/// The whole dump.
pub fn dump(g: &Grammar<'_>) -> String {
    let meta: serde_json::Value = serde_json::from_str(g.metadata()).unwrap_or_default();
    let specials = meta.pointer("/vocab/specials").cloned().unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "format {} | tools {} | states {} (dead 0, start {}) | classes {} | masks {} | vocab {} ({} tokens) | eos {:?}",
        meta.get("format").and_then(|v| v.as_str()).unwrap_or("?"),
        meta.get("tools").map(|v| v.to_string()).unwrap_or_default(),
        g.state_count(),
        g.start_state(),
        g.class_count(),
        g.mask_count(),
        g.mask_width(),
        g.token_count(),
        g.eos_tokens(),
    );
    let entries: Vec<String> = g
        .entries()
        .map(|(n, s)| format!("{n} = state {s}"))
        .collect();
    let _ = writeln!(out, "entries: {}", entries.join(", "));
    let mut words = vec![0u32; g.mask_words()];
    for s in 1..g.state_count() as u32 {
        let dist = match g.distance(s) {
            Some(d) => format!(", {d} tokens to acceptance"),
            None => String::from(", no token sequence completes"),
        };
        let _ = writeln!(
            out,
            "state {s}{}{dist}",
            if g.is_accepting_state(s) {
                " (accepting)"
            } else {
                ""
            }
        );
        // Byte ranges with the same target, in byte order.
        let mut b = 0usize;
        while b < 256 {
            let t = g.next_state(s, b as u8);
            let mut e = b;
            while e + 1 < 256 && g.next_state(s, (e + 1) as u8) == t {
                e += 1;
            }
            if t != 0 {
                if b == e {
                    let _ = writeln!(out, "  {} -> {t}", show_byte(b as u8));
                } else {
                    let _ = writeln!(
                        out,
                        "  {}-{} -> {t}",
                        show_byte(b as u8),
                        show_byte(e as u8)
                    );
                }
            }
            b = e + 1;
        }
        let id = g.mask_id(s).unwrap_or(0);
        g.fill_mask_by_id(id, &mut words);
        let allowed: Vec<u32> = (0..g.mask_width() as u32)
            .filter(|&t| words[(t >> 5) as usize] >> (t & 31) & 1 == 1)
            .collect();
        let (form, len) = g.mask_storage(id).unwrap_or(("?", 0));
        let shown: Vec<String> = allowed
            .iter()
            .take(SHOWN)
            .map(|&t| show_token(g, &specials, t))
            .collect();
        let more = if allowed.len() > SHOWN {
            format!(", ... {} more", allowed.len() - SHOWN)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  mask #{id} ({form}, {len} words): {} tokens: {}{more}",
            allowed.len(),
            shown.join(", ")
        );
        // Budget tiers: with r tokens left the state serves the last tier
        // whose k is at most r - 1, its full mask from top tier + 1 on.
        let tiers: Vec<String> = g
            .tiers(s)
            .map(|(k, id)| {
                g.fill_mask_by_id(id, &mut words);
                let n: u32 = words.iter().map(|w| w.count_ones()).sum();
                format!("k {k} -> mask #{id} ({n} tokens)")
            })
            .collect();
        if !tiers.is_empty() {
            let _ = writeln!(
                out,
                "  tiers: {}; full mask from k {}",
                tiers.join(", "),
                g.top_tier(s)
            );
        }
    }
    out
}
