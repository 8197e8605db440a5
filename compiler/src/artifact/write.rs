//! Writing the artifact: the payload in the layout of
//! `tooldec_runtime::layout` (described in `runtime/FORMAT.md`) with its
//! checksum, then the envelope and one zstd frame.
//!
//! Each distinct mask is stored once, in one of three forms: the dense
//! bitmask (`mask_words` words), the list of allowed ids, or the list of
//! disallowed ids below the token count. The runtime fills a dense mask with
//! one copy and a list by zeroing (or filling) and setting (or clearing) its
//! bits, so a list is used only while it is short (at most
//! [`LIST_FRACTION`]th of the dense words), where it is both smaller and
//! about as fast.

use tooldec_runtime::layout::{self, hdr, kind, sec, HEADER_WORDS, KIND_SHIFT, SECTION_COUNT};

use crate::automaton::dfa::Dfa;
use crate::cross::Masks;
use crate::error::{Error, ErrorKind};
use crate::vocab::{TokenText, Vocab};

/// How many masks of each storage form were written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaskForms {
    pub dense: usize,
    pub allow: usize,
    pub deny: usize,
    /// Budget tiers stored as their state's full mask minus a list.
    pub delta: usize,
    /// Words of MASK_DATA.
    pub words: usize,
}

/// A mask is stored as a list of ids only when the list has at most
/// `words / LIST_FRACTION` entries (see [`payload`]).
pub const LIST_FRACTION: usize = 8;

/// Builds the raw payload.
#[allow(clippy::too_many_arguments)]
pub fn payload(
    dfa: &Dfa,
    entries: &[(String, u32)],
    crossed: &Masks,
    text: &TokenText<'_>,
    vocab: &Vocab,
    vocab_size: u32,
    max_tokens: Option<u32>,
    meta: &str,
) -> Result<(Vec<u8>, MaskForms), Error> {
    let (masks, state_mask) = (&crossed.masks, &crossed.state_mask);
    let n_tokens = vocab.len() as u32;
    let mut forms = MaskForms::default();
    let mut mask_index = Vec::with_capacity(masks.len() * 2);
    let mut mask_data: Vec<u32> = Vec::new();
    // A budget tier may be stored as a delta of its state's full mask: the
    // full mask of the first state (in state order) it is a tier of, unless
    // it is some state's full mask itself (so a base is never a delta).
    let mut is_full = vec![false; masks.len()];
    for &m in state_mask {
        is_full[m as usize] = true;
    }
    let mut base_of: Vec<Option<u32>> = vec![None; masks.len()];
    for (s, &full) in state_mask.iter().enumerate() {
        let (lo, hi) = (
            crossed.tier_index[s] as usize,
            crossed.tier_index[s + 1] as usize,
        );
        for &(_, m) in &crossed.tiers[lo..hi] {
            if !is_full[m as usize] && base_of[m as usize].is_none() {
                base_of[m as usize] = Some(full);
            }
        }
    }
    for (id, m) in masks.iter().enumerate() {
        let allowed: u32 = m.iter().map(|w| w.count_ones()).sum();
        let words = m.len();
        let denied = n_tokens - allowed;
        let offset = mask_data.len() as u32;
        if offset > layout::OFFSET_MASK {
            return Err(Error::new(ErrorKind::Limit, "mask data exceeds 4 GiB"));
        }
        let ids = |want: bool| {
            (0..n_tokens).filter(move |&t| (m[(t >> 5) as usize] >> (t & 31)) & 1 == want as u32)
        };
        // A list costs a clear of the whole buffer plus one store per id,
        // a dense mask one copy: past an eighth of the dense size a list is
        // slower to serve than the copy, so it is stored dense.
        let list_max = words / LIST_FRACTION;
        // A delta costs its base's fill plus one store per id.
        let delta = base_of[id].map(|b| {
            let base = &masks[b as usize];
            debug_assert!(m.iter().zip(base).all(|(x, y)| x & !y == 0));
            let removed: u32 = m.iter().zip(base).map(|(x, y)| (y & !x).count_ones()).sum();
            (b, removed)
        });
        let (k, len) = if let Some((b, removed)) =
            delta.filter(|&(_, r)| (r as usize) < list_max && r < allowed.min(denied))
        {
            let base = &masks[b as usize];
            mask_data.push(b);
            mask_data.extend((0..n_tokens).filter(|&t| {
                let (w, bit) = ((t >> 5) as usize, 1 << (t & 31));
                base[w] & bit != 0 && m[w] & bit == 0
            }));
            forms.delta += 1;
            (kind::DELTA, removed + 1)
        } else if (allowed as usize) <= list_max && allowed <= denied {
            mask_data.extend(ids(true));
            forms.allow += 1;
            (kind::ALLOW, allowed)
        } else if (denied as usize) <= list_max {
            mask_data.extend(ids(false));
            forms.deny += 1;
            (kind::DENY, denied)
        } else {
            mask_data.extend_from_slice(m);
            forms.dense += 1;
            (kind::DENSE, words as u32)
        };
        mask_index.push((k << KIND_SHIFT) | offset);
        mask_index.push(len);
    }
    forms.words = mask_data.len();

    let states: Vec<u32> = (0..dfa.n_states())
        .map(|s| {
            state_mask[s]
                | if dfa.accept[s] {
                    layout::STATE_ACCEPTING
                } else {
                    0
                }
        })
        .collect();
    let mut offsets = Vec::with_capacity(vocab.len() + 1);
    let mut token_bytes = Vec::new();
    offsets.push(0u32);
    for id in 0..n_tokens {
        if let Some(b) = text.get(id) {
            token_bytes.extend_from_slice(b);
        }
        offsets.push(token_bytes.len() as u32);
    }

    let mut entry_words = Vec::with_capacity(3 * entries.len());
    let mut entry_names = Vec::new();
    for (name, state) in entries {
        entry_words.extend([*state, entry_names.len() as u32, name.len() as u32]);
        entry_names.extend_from_slice(name.as_bytes());
    }
    // Distances and tiers, relative to each state's distance so that states
    // in the same position of a repeated structure share one tier list:
    // `top + 1 - dist`, and lists of `(k + 1 - dist, mask)` stored once.
    let mut distance = Vec::with_capacity(2 * dfa.n_states());
    let mut tier_index = Vec::with_capacity(2 * dfa.n_states());
    let mut tiers: Vec<u32> = Vec::new();
    let mut lists: std::collections::HashMap<Vec<u32>, u32> = std::collections::HashMap::new();
    for s in 0..dfa.n_states() {
        let d = crossed.distance[s];
        let (lo, hi) = (
            crossed.tier_index[s] as usize,
            crossed.tier_index[s + 1] as usize,
        );
        if d == layout::NO_DISTANCE {
            debug_assert_eq!(lo, hi);
            distance.extend([d, 0]);
            tier_index.extend([0, 0]);
            continue;
        }
        distance.push(d);
        distance.push(crossed.top_tier[s] + 1 - d);
        let list: Vec<u32> = crossed.tiers[lo..hi]
            .iter()
            .flat_map(|&(k, m)| [k + 1 - d, m])
            .collect();
        let offset = if list.is_empty() {
            0
        } else {
            *lists.entry(list).or_insert_with_key(|list| {
                // Each list once, after its head pair: the loader checks
                // every list once, and a state's reference in O(1).
                tiers.extend([layout::TIER_LIST_HEAD, (list.len() / 2) as u32]);
                let at = (tiers.len() / 2) as u32;
                tiers.extend_from_slice(list);
                at
            })
        };
        tier_index.extend([offset, (hi - lo) as u32]);
    }
    let words_le = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let sections: [(u32, Vec<u8>); SECTION_COUNT] = [
        (sec::BYTE_CLASSES, dfa.classes.to_vec()),
        (sec::TRANSITIONS, words_le(&dfa.trans)),
        (sec::STATES, words_le(&states)),
        (sec::MASK_INDEX, words_le(&mask_index)),
        (sec::MASK_DATA, words_le(&mask_data)),
        (sec::EOS, words_le(&vocab.eos)),
        (sec::TOKEN_OFFSETS, words_le(&offsets)),
        (sec::TOKEN_BYTES, token_bytes),
        (sec::META, meta.as_bytes().to_vec()),
        (sec::ENTRIES, words_le(&entry_words)),
        (sec::ENTRY_NAMES, entry_names),
        (sec::DISTANCE, words_le(&distance)),
        (sec::TIER_INDEX, words_le(&tier_index)),
        (sec::TIERS, words_le(&tiers)),
    ];
    let mut header = vec![0u32; HEADER_WORDS];
    let magic = layout::MAGIC;
    header[hdr::MAGIC0] = u32::from_le_bytes([magic[0], magic[1], magic[2], magic[3]]);
    header[hdr::MAGIC1] = u32::from_le_bytes([magic[4], magic[5], magic[6], magic[7]]);
    header[hdr::ENDIAN] = layout::ENDIAN_CHECK;
    header[hdr::VERSION] = layout::VERSION;
    header[hdr::VOCAB_SIZE] = vocab_size;
    header[hdr::N_TOKENS] = n_tokens;
    header[hdr::N_STATES] = dfa.n_states() as u32;
    header[hdr::N_CLASSES] = dfa.n_classes as u32;
    header[hdr::START] = entries.first().map_or(dfa.start, |e| e.1);
    header[hdr::N_MASKS] = masks.len() as u32;
    header[hdr::N_EOS] = vocab.eos.len() as u32;
    let fp = vocab.fingerprint();
    for i in 0..8 {
        header[hdr::FINGERPRINT + i] =
            u32::from_le_bytes([fp[4 * i], fp[4 * i + 1], fp[4 * i + 2], fp[4 * i + 3]]);
    }
    header[hdr::MAX_TOKENS] = max_tokens.unwrap_or(0);
    header[hdr::N_SECTIONS] = SECTION_COUNT as u32;
    // hdr::CHECKSUM is stamped once the payload is complete.

    let mut table = Vec::with_capacity(3 * SECTION_COUNT);
    let mut offset = (HEADER_WORDS + 3 * SECTION_COUNT) * 4;
    for (id, bytes) in &sections {
        table.extend([*id, offset as u32, bytes.len() as u32]);
        offset += layout::pad4(bytes.len());
    }
    if offset > u32::MAX as usize {
        return Err(Error::new(
            ErrorKind::Limit,
            format!("the artifact would be {offset} bytes, over the 4 GiB the format addresses"),
        ));
    }
    header[hdr::TOTAL_BYTES] = offset as u32;
    let mut out = Vec::with_capacity(offset);
    out.extend(words_le(&header));
    out.extend(words_le(&table));
    for (_, bytes) in &sections {
        out.extend_from_slice(bytes);
        out.resize(layout::pad4(out.len()), 0);
    }
    debug_assert_eq!(out.len(), offset);
    layout::stamp_checksum(&mut out);
    Ok((out, forms))
}

/// The compressed artifact file: the envelope (format version, lengths,
/// CRC-32C of the frame; `layout::envelope`), then the payload in one zstd
/// frame with its content size, so the loader can allocate once. `zstd -d`
/// skips the envelope (a skippable frame) and writes the payload.
pub fn compress(payload: &[u8], level: i32) -> Result<Vec<u8>, Error> {
    let len = u32::try_from(payload.len()).map_err(|_| {
        Error::new(
            ErrorKind::Limit,
            "the payload is over the 4 GiB the format addresses",
        )
    })?;
    let frame = zstd::bulk::compress(payload, level)
        .map_err(|e| Error::new(ErrorKind::Io, format!("zstd compression failed: {e}")))?;
    let mut out = Vec::with_capacity(layout::envelope::BYTES + frame.len());
    out.extend_from_slice(&layout::envelope(len, &frame));
    out.extend_from_slice(&frame);
    Ok(out)
}
