//! The byte layout of a decompressed artifact, shared by the writer (the
//! compiler) and the reader (this crate). `runtime/FORMAT.md` describes the
//! same layout in prose; the constants here are the single source of truth.
//!
//! Everything is little-endian `u32` words. A payload is a fixed header of
//! [`HEADER_WORDS`] words, a section table of [`SECTION_COUNT`] entries of
//! three words each (`id`, byte offset, byte length), then the sections, each
//! starting on a 4-byte boundary.

/// The first eight bytes of every decompressed artifact.
pub const MAGIC: [u8; 8] = *b"TOOLDEC\0";
/// Written as a native `u32`; reads back as this value only on a
/// little-endian machine.
pub const ENDIAN_CHECK: u32 = 0x0102_FEFF;
/// Bumped on every incompatible change of this layout.
pub const VERSION: u32 = 3;

/// Header word indices (FORMAT.md describes each).
#[allow(missing_docs)]
pub mod hdr {
    pub const MAGIC0: usize = 0;
    pub const MAGIC1: usize = 1;
    pub const ENDIAN: usize = 2;
    pub const VERSION: usize = 3;
    pub const TOTAL_BYTES: usize = 4;
    pub const VOCAB_SIZE: usize = 5;
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
}
/// Words in the fixed header.
pub const HEADER_WORDS: usize = 22;

/// Section ids, in the order they must appear in the section table.
pub mod sec {
    /// 256 bytes: the equivalence class of each input byte.
    pub const BYTE_CLASSES: u32 = 1;
    /// `n_states * n_classes` words: the next state for (state, class).
    pub const TRANSITIONS: u32 = 2;
    /// `n_states` words: bit 31 = accepting, bits 0..31 = mask id.
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
    /// `n_entries * 3` words: each entry point's start state, then the byte
    /// offset and length of its name in ENTRY_NAMES. The first entry is the
    /// default and its state is the header's START.
    pub const ENTRIES: u32 = 10;
    /// The UTF-8 names of the entry points, concatenated.
    pub const ENTRY_NAMES: u32 = 11;
    /// `n_states * 2` words: per state `dist`, the fewest tokens that lead
    /// from it to acceptance ([`super::NO_DISTANCE`] when no token sequence
    /// does), then `top + 1 - dist`, where `top` (its top tier) is the
    /// largest finite `dist` among the states its allowed tokens lead to.
    pub const DISTANCE: u32 = 12;
    /// `n_states * 2` words: per state, the first pair of its lower tiers in
    /// TIERS and their number. States may share one list.
    pub const TIER_INDEX: u32 = 13;
    /// Pairs `(k + 1 - dist, mask id)`, strictly ascending in `k` per list
    /// and all below the state's `top`: the mask of the tokens whose next
    /// state is at most `k` tokens from acceptance (EOS included in
    /// accepting states). With `r` tokens left a state serves its pair with
    /// the largest `k <= r - 1`, its STATES mask when `r - 1 >= top`.
    pub const TIERS: u32 = 14;
}
/// Entries in the section table.
pub const SECTION_COUNT: usize = 14;

/// A DISTANCE word for "no token sequence reaches acceptance".
pub const NO_DISTANCE: u32 = u32::MAX;

/// Bit 31 of a STATES word: the state is accepting.
pub const STATE_ACCEPTING: u32 = 1 << 31;
/// The dead state: every transition from it leads back to it.
pub const DEAD_STATE: u32 = 0;

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

/// Rounds a byte length up to a multiple of four.
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// `ceil(vocab_size / 32)`: the number of `u32` words of a token mask.
pub const fn mask_words(vocab_size: u32) -> usize {
    (vocab_size as usize).div_ceil(32)
}
