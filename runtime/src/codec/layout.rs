//! The byte layout of a decompressed artifact: the constants the codec's
//! section types read and write ([`crate::codec`]). `runtime/FORMAT.md`
//! describes the same layout in prose; the constants here are the single
//! source of truth.
//!
//! Everything is little-endian `u32` words. A payload is a fixed header of
//! [`HEADER_WORDS`] words, a section table of [`SECTION_COUNT`] entries of
//! three words each (`id`, byte offset, byte length), then the sections, each
//! starting on a 4-byte boundary. Header word [`hdr::CHECKSUM`] holds a
//! CRC-32C of every other byte of the payload ([`payload_checksum`]).
//!
//! A compressed `.tdm` file is an [`envelope`](mod@envelope) (a zstd skippable frame that
//! records the format version, the lengths and a CRC-32C of what follows)
//! and then one zstd frame holding the payload.

/// The first eight bytes of every decompressed artifact.
pub const MAGIC: [u8; 8] = *b"TOOLDEC\0";
/// Written as a native `u32`; reads back as this value only on a
/// little-endian machine.
pub const ENDIAN_CHECK: u32 = 0x0102_FEFF;
/// Bumped on every incompatible change of this layout (4: the payload
/// checksum and the envelope of compressed files; 5: TRANSITIONS as
/// overlaid sparse rows; 6: rows as a shared shape and their targets,
/// states' budget tiers as shared profiles; 7: TRANSITIONS, STATES and
/// DISTANCE as columns of the width their values need; 8: entries that
/// stop after their first call, [`ENTRY_STOPS`] and STATES' call-end bit;
/// 9: the default entry may stop after its first call, STOP_TOKENS lists
/// each stop gate's tokens; 10: LOOPS, the tokens that lead a state back
/// to itself).
pub const VERSION: u32 = 10;

/// The bit of an ENTRIES state word that says the entry stops after its
/// first call: its matcher walks the states from that state on, and at a
/// state whose STATES flags say it ends a call serves only the end of
/// sequence. The first (default) entry may carry it too (since version 9).
pub const ENTRY_STOPS: u32 = 1 << 31;

/// Header word indices (FORMAT.md describes each).
#[allow(missing_docs)]
pub mod hdr {
    pub const MAGIC0: usize = 0;
    pub const MAGIC1: usize = 1;
    pub const ENDIAN: usize = 2;
    pub const VERSION: usize = 3;
    pub const TOTAL_BYTES: usize = 4;
    pub const MASK_WIDTH: usize = 5;
    pub const N_TOKENS: usize = 6;
    pub const N_STATES: usize = 7;
    pub const N_CLASSES: usize = 8;
    pub const START: usize = 9;
    pub const N_MASKS: usize = 10;
    pub const N_EOS: usize = 11;
    /// Eight words: the SHA-256 vocabulary fingerprint.
    pub const FINGERPRINT: usize = 12;
    /// The token budget the artifact was compiled for (`--max-tokens`):
    /// the default budget of every new matcher; 0 = none.
    pub const MAX_TOKENS: usize = 20;
    pub const N_SECTIONS: usize = 21;
    /// CRC-32C of the payload without this word ([`super::payload_checksum`]).
    pub const CHECKSUM: usize = 22;
}
/// Words in the fixed header.
pub const HEADER_WORDS: usize = 23;

/// Section ids, in the order they must appear in the section table.
pub mod sec {
    /// 256 bytes, the equivalence class of each input byte; then the row
    /// shapes, `n_classes + 1` bytes each ([`super::shape`]).
    pub const BYTE_CLASSES: u32 = 1;
    /// Two [columns](crate::codec::column): per state its row, `(first
    /// target, shape index)`; then the targets, row after row. The move of
    /// `(state, class)` is the row's target numbered by the shape's byte
    /// for `class` (target `k` is value `first + k - 1` of the second
    /// column), the dead state for 0 ([`super::shape`]).
    pub const TRANSITIONS: u32 = 2;
    /// A column: per state `(flags, mask id)`. The flags are one bit,
    /// accepting, or three when some state ends a call: bit 1 set where a
    /// call ends (such a state accepts), bit 2 where a token can run past
    /// a call's end (a stop gate), both read by entries that stop after
    /// their first call ([`super::ENTRY_STOPS`]).
    pub const STATES: u32 = 3;
    /// `n_masks * 2` words: `(kind << 30) | word offset` into MASK_DATA,
    /// then the length in words.
    pub const MASK_INDEX: u32 = 4;
    /// The words of every distinct mask.
    pub const MASK_DATA: u32 = 5;
    /// `n_eos` words: end-of-sequence token ids, ascending.
    pub const EOS: u32 = 6;
    /// `n_tokens + 1` words: byte offsets of each token's text in TOKEN_BYTES.
    /// A token with no text (special tokens) has an empty range.
    pub const TOKEN_OFFSETS: u32 = 7;
    /// The concatenated text bytes of all tokens.
    pub const TOKEN_BYTES: u32 = 8;
    /// UTF-8 JSON: format, tool names, vocabulary description, generator.
    pub const META: u32 = 9;
    /// `n_entries * 3` words: each entry point's start state (with
    /// [`super::ENTRY_STOPS`] when it stops after its first call), then the
    /// byte offset and length of its name in ENTRY_NAMES. The first entry
    /// is the default and its state is the header's START.
    pub const ENTRIES: u32 = 10;
    /// The UTF-8 names of the entry points, concatenated.
    pub const ENTRY_NAMES: u32 = 11;
    /// A column: per state `(dist + 1, profile)`, where `dist` is the
    /// fewest tokens that lead from it to acceptance (0 in the column when
    /// no token sequence does: [`super::NO_DISTANCE`] to a reader) and the
    /// profile is a pair of TIER_INDEX.
    pub const DISTANCE: u32 = 12;
    /// The budget profiles, two words each: `top + 1 - dist`, where `top`
    /// (a state's top tier) is the largest finite `dist` among the states
    /// its allowed tokens lead to, then the first pair of its lower tiers
    /// in TIERS (0: none; the list's length is in its head pair). Relative
    /// to `dist`, so the states in the same place of a repeated structure
    /// share one profile.
    pub const TIER_INDEX: u32 = 13;
    /// Lists of pairs `(k + 1 - dist, mask id)`, strictly ascending in `k`
    /// per list and all below the state's `top`: the mask of the tokens
    /// whose next state is at most `k` tokens from acceptance (EOS included
    /// in accepting states). With `r` tokens left a state serves its pair
    /// with the largest `k <= r - 1`, its STATES mask when `r - 1 >= top`.
    /// Each list is stored once, after a head pair
    /// `(`[`super::TIER_LIST_HEAD`]`, its length in pairs)`, and the lists
    /// fill the section; a TIER_INDEX profile points at a list's first
    /// pair (after its head).
    pub const TIERS: u32 = 14;
    /// What a matcher restricted to one tool reads: the tool names, each
    /// state's tool-name colour and gate bit, the colours' tool ranges and
    /// optional per-tool distances (`codec::tools` describes the words).
    /// Optional: a payload whose table stops at [`TIERS`] has none.
    pub const TOOLS: u32 = 15;
    /// Per stop gate, the tokens that run past a call's end from it
    /// (`codec::stop_tokens` describes the words). Optional: a payload
    /// whose table stops before it has none.
    pub const STOP_TOKENS: u32 = 16;
    /// Per state, the tokens whose bytes lead from it back to it, as
    /// shared bitsets (`codec::loops` describes the bytes). Optional: a
    /// payload whose table stops before it has none.
    pub const LOOPS: u32 = 17;
}
/// Entries in the section table that this runtime writes.
pub const SECTION_COUNT: usize = 17;
/// The fewest entries a section table may have: payloads written before
/// the optional TOOLS, STOP_TOKENS and LOOPS sections stop at TIERS.
pub const MIN_SECTION_COUNT: usize = 14;

/// The first word of the head pair before each list in TIERS (no tier's
/// `k` takes this value): the validator checks each list once, and a
/// state's reference to a list in constant time.
pub const TIER_LIST_HEAD: u32 = u32::MAX;

/// The distance of a state from which no token sequence reaches
/// acceptance.
pub const NO_DISTANCE: u32 = u32::MAX;

/// The dead state: every transition from it leads back to it.
pub const DEAD_STATE: u32 = 0;
/// The most states a payload may have: what the header's check, the
/// compiler's limits and the rows' shape field assume.
pub const MAX_STATES: usize = 1 << 24;

/// A row shape: which of its row's targets each byte class leads to.
///
/// A state's moves are a few distinct targets (a string body: itself on
/// ~90 classes, the closing quote, an escape), and states of the same
/// kind branch the same way on different targets: at 10,000 tools, 2.78
/// million states have 1,684 shapes and 2.5 targets each. So a row is the
/// index of its shape and its targets; the shape, `n_classes + 1` bytes
/// in BYTE_CLASSES, is the row's number of targets `g` (at most
/// [`MAX_TARGETS`]), then per class the target's number 1..=g in the row,
/// or 0 for the dead state. A move reads the state's row (its first
/// target and its shape, one value of a column), the shape's byte (a
/// table small enough to stay in cache) and the target.
pub mod shape {
    /// The most distinct targets a row may have (a shape byte numbers them).
    pub const MAX_TARGETS: usize = 255;

    /// The bytes one shape takes: its target count, then a byte per class.
    #[inline]
    pub const fn stride(n_classes: u32) -> usize {
        n_classes as usize + 1
    }
}

/// How a mask's words are stored.
pub mod kind {
    /// Exactly `mask_words` words, the bitmask itself.
    pub const DENSE: u32 = 0;
    /// Ascending token ids that are allowed; all others are not.
    pub const ALLOW: u32 = 1;
    /// Ascending token ids below `n_tokens` that are not allowed; every other
    /// id below `n_tokens` is.
    pub const DENY: u32 = 2;
    /// A base mask's id (a mask of another kind), then ascending token ids
    /// the base allows and this mask does not: a budget tier stored as its
    /// state's full mask minus the tokens the budget rules out.
    pub const DELTA: u32 = 3;
}
/// A MASK_INDEX head word holds the kind above this bit.
pub const KIND_SHIFT: u32 = 30;
/// A MASK_INDEX head word holds the word offset below the kind.
pub const OFFSET_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// The two bytes UTF-8 never contains, which the grammar uses for what is
/// not text. Every reader and writer of these bytes goes through here.
///
/// - A special token the grammar uses is the four bytes
///   `[SPECIAL, id >> 16, id >> 8, id]` ([`reserved::special_marker`]): the
///   DFA reads it, the vocab's TOKEN_BYTES store it for that token, and no
///   text token can spell it.
/// - An entry selector is `[ENTRY, k]`: from the DFA's own start state it
///   leads to entry `k`'s start (the ENTRIES section records where each
///   entry begins, so a matcher never reads a selector).
pub mod reserved {
    /// First byte of a special token's marker.
    pub const SPECIAL: u8 = 0xFF;
    /// First byte of an entry selector.
    pub const ENTRY: u8 = 0xFE;
    /// The lowest reserved byte: text bytes are below it.
    pub const FIRST: u8 = ENTRY;
    /// Bytes in a special token's marker.
    pub const MARKER_BYTES: usize = 4;
    /// The largest token id a marker can address (three bytes).
    pub const MAX_MARKED_ID: u32 = (1 << 24) - 1;

    /// True for a byte that is never text (`0xFE`, `0xFF`).
    pub const fn is_reserved(byte: u8) -> bool {
        byte >= FIRST
    }

    /// The marker of special token `id`, or `None` when the id does not fit
    /// the marker's three bytes (above [`MAX_MARKED_ID`]).
    pub const fn special_marker(id: u32) -> Option<[u8; MARKER_BYTES]> {
        if id > MAX_MARKED_ID {
            return None;
        }
        Some([SPECIAL, (id >> 16) as u8, (id >> 8) as u8, id as u8])
    }

    /// The token id of a marker at the start of `bytes`, if it starts with
    /// one.
    pub fn marked_id(bytes: &[u8]) -> Option<u32> {
        match bytes {
            [SPECIAL, a, b, c, ..] => Some(u32::from_be_bytes([0, *a, *b, *c])),
            _ => None,
        }
    }

    /// The selector of entry `k` (at most 256 entries can be told apart).
    pub const fn entry_selector(k: u8) -> [u8; 2] {
        [ENTRY, k]
    }
}

/// Rounds a byte length up to a multiple of four.
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// `ceil(mask_width / 32)`: the number of `u32` words of a token mask.
pub const fn mask_words(mask_width: u32) -> usize {
    (mask_width as usize).div_ceil(32)
}

/// The envelope in front of a compressed artifact's zstd frame: a zstd
/// *skippable frame* (so `zstd -d` skips it and writes the payload) whose
/// 32 bytes of content are, little-endian:
///
/// | bytes | field |
/// |---|---|
/// | 0–3 | [`envelope::MAGIC`] (the skippable frame's magic number) |
/// | 4–7 | [`envelope::FRAME_SIZE`]: 32, the bytes that follow in the skippable frame |
/// | 8–15 | [`envelope::TAG`] |
/// | 16–19 | the format version ([`VERSION`]) |
/// | 20–23 | the payload's length (decompressed) |
/// | 24–31 | the data frame's exact length in bytes (`u64`) |
/// | 32–35 | CRC-32C of the data frame |
/// | 36–39 | CRC-32C of bytes 0–35 (the envelope itself) |
///
/// The data frame follows at byte [`envelope::BYTES`] and ends the file.
pub mod envelope {
    /// A zstd skippable frame magic number (`0x184D2A50`–`0x184D2A5F`).
    pub const MAGIC: u32 = 0x184D_2A5E;
    /// The skippable frame's content length.
    pub const FRAME_SIZE: u32 = 32;
    /// Says the skippable frame is a tooldec envelope.
    pub const TAG: [u8; 8] = *b"TOOLDECZ";
    /// The envelope's length: the data frame starts here.
    pub const BYTES: usize = 40;
    /// Byte offset of the format version.
    pub const AT_VERSION: usize = 16;
    /// Byte offset of the payload length.
    pub const AT_PAYLOAD_LEN: usize = 20;
    /// Byte offset of the data frame's length (`u64`).
    pub const AT_DATA_LEN: usize = 24;
    /// Byte offset of the data frame's CRC-32C.
    pub const AT_DATA_CRC: usize = 32;
    /// Byte offset of the envelope's own CRC-32C (of the bytes before it).
    pub const AT_SELF_CRC: usize = 36;
}

pub use super::crc::{crc32c, crc32c_portable, crc32c_update};
pub use super::envelope::write as envelope;
pub use super::header::{payload_checksum, stamp_checksum};
