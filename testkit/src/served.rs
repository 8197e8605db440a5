//! The served part of a loaded grammar, as `runtime/FORMAT.md` defines it,
//! for oracles that must not read the compiler's own tables.

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

/// The mask `m` fills, in a buffer of the grammar's width.
pub fn mask_of(m: &tooldec_runtime::Matcher<'_>) -> Vec<u32> {
    let mut w = vec![0u32; m.grammar().mask_words()];
    m.fill_mask(&mut w);
    w
}

/// The token ids whose bits are set in `words`, ascending.
pub fn set_ids(words: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, &w) in words.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push(i as u32 * 32 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    out
}
