//! The header (words 0–22) and the section table after it.

use super::crc::{crc32c, crc32c_update};
use super::envelope::ZSTD_MAGIC;
use super::layout::{self, hdr, HEADER_WORDS, MIN_SECTION_COUNT, SECTION_COUNT};
use crate::error::{Error, ErrorKind, Part};

/// The header fields that the sections do not already say: the counts of
/// states, classes, tokens, masks and EOS tokens are the sizes of their
/// sections (the writer derives them, the reader checks them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The mask width in tokens: the model's logits size.
    pub mask_width: u32,
    /// The default entry point's start state (≠ 0).
    pub start: u32,
    /// The SHA-256 vocabulary fingerprint.
    pub fingerprint: [u8; 32],
    /// The default token budget of every matcher; 0 = none.
    pub max_tokens: u32,
}

/// The counts the header states, which the sections must match.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Counts {
    pub(crate) n_tokens: u32,
    pub(crate) n_states: usize,
    pub(crate) n_classes: u32,
    pub(crate) n_masks: usize,
    pub(crate) n_eos: usize,
}

/// One section's place in the payload: byte offset and length.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Span {
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// The section table: where each section lies, indexed by id - 1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Table(pub(crate) [Span; SECTION_COUNT]);

impl Table {
    /// Section `id`'s span.
    pub(crate) fn span(&self, id: u32) -> Span {
        self.0[id as usize - 1]
    }

    /// Reads the table (the header was read): ids in order, 4-aligned,
    /// inside the payload, in ascending non-overlapping order after it.
    pub(crate) fn read(bytes: &[u8], words: &[u32]) -> Result<Table, Error> {
        // The header's section count was checked to be in range.
        let count = (words[hdr::N_SECTIONS] as usize).clamp(MIN_SECTION_COUNT, SECTION_COUNT);
        let table_end = (HEADER_WORDS + 3 * count) * 4;
        if bytes.len() < table_end {
            return Err(Error::short("section table", table_end, bytes.len()));
        }
        let mut spans = [Span::default(); SECTION_COUNT];
        let mut cursor = table_end;
        for (i, s) in spans.iter_mut().enumerate().take(count) {
            let entry = &words[HEADER_WORDS + 3 * i..HEADER_WORDS + 3 * i + 3];
            let id = (i + 1) as u32;
            if entry[0] != id {
                return Err(Error::section(
                    id,
                    "is missing from its place in the section table",
                ));
            }
            let (offset, len) = (entry[1] as usize, entry[2] as usize);
            if offset % 4 != 0 {
                return Err(Error::section(id, "does not start on a 4-byte boundary"));
            }
            if offset < cursor {
                return Err(Error::section(
                    id,
                    "overlaps the previous section or the header",
                ));
            }
            let end = offset
                .checked_add(len)
                .ok_or(Error::section(id, "has an overflowing length"))?;
            if end > bytes.len() {
                return Err(Error::short("section", end, bytes.len()));
            }
            cursor = end;
            *s = Span { offset, len };
        }
        Ok(Table(spans))
    }

    /// The table's words for sections of the given byte lengths, laid out
    /// one after another from the end of the table, each padded to a word;
    /// and the payload's total length.
    #[cfg(feature = "std")]
    pub(crate) fn layout(lens: [usize; SECTION_COUNT]) -> ([u32; 3 * SECTION_COUNT], usize) {
        let mut table = [0u32; 3 * SECTION_COUNT];
        let mut offset = (HEADER_WORDS + 3 * SECTION_COUNT) * 4;
        for (i, len) in lens.into_iter().enumerate() {
            table[3 * i..3 * i + 3].copy_from_slice(&[(i + 1) as u32, offset as u32, len as u32]);
            offset += layout::pad4(len);
        }
        (table, offset)
    }
}

/// Views `bytes` as little-endian words (the tail past the last whole
/// word left out). Requires 4-byte alignment.
pub(crate) fn as_words(bytes: &[u8]) -> Result<&[u32], Error> {
    if bytes.as_ptr() as usize % 4 != 0 {
        return Err(Error::new(ErrorKind::Alignment));
    }
    // SAFETY: the pointer is 4-aligned, the length is rounded down to whole
    // words inside the slice, and every bit pattern is a valid u32.
    Ok(unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4) })
}

/// Checks the header up to the payload checksum, in the order the codec's
/// documentation gives: everything that must hold before the checksum can
/// be computed over the right bytes. The checksum ([`check_checksum`])
/// and the counts ([`read_counts`]) come next.
pub(crate) fn check_frame(bytes: &[u8]) -> Result<&[u32], Error> {
    if bytes.len() >= 4
        && (bytes[..4] == ZSTD_MAGIC || bytes[..4] == layout::envelope::MAGIC.to_le_bytes())
    {
        return Err(Error::new(ErrorKind::Compressed));
    }
    let words = as_words(bytes)?;
    if bytes.len() < 8 {
        return Err(Error::short("label", 8, bytes.len()));
    }
    if bytes[..8] != layout::MAGIC {
        return Err(Error::new(ErrorKind::Magic));
    }
    if words.len() < HEADER_WORDS {
        return Err(Error::short("header", HEADER_WORDS * 4, bytes.len()));
    }
    if cfg!(target_endian = "big") || words[hdr::ENDIAN] != layout::ENDIAN_CHECK {
        return Err(Error::new(ErrorKind::Endianness));
    }
    check_version(bytes, words)?;
    check_length(bytes, words)?;
    Ok(words)
}

/// The header's counts and section count (after [`check_frame`]).
pub(crate) fn read_counts(words: &[u32]) -> Result<(Header, Counts), Error> {
    let (header, counts) = counts(words)?;
    let n = words[hdr::N_SECTIONS] as usize;
    if !(MIN_SECTION_COUNT..=SECTION_COUNT).contains(&n) {
        return Err(Error::field(
            "section count",
            SECTION_COUNT as u64,
            words[hdr::N_SECTIONS] as u64,
        ));
    }
    Ok((header, counts))
}

/// The version; when it differs but the checksum holds with this
/// runtime's version written in, the version word was damaged.
fn check_version(bytes: &[u8], words: &[u32]) -> Result<(), Error> {
    let found = words[hdr::VERSION];
    if found == layout::VERSION {
        return Ok(());
    }
    if words[hdr::TOTAL_BYTES] as usize == bytes.len()
        && checksum_as_this_version(bytes) == words[hdr::CHECKSUM]
    {
        return Err(Error::new(ErrorKind::VersionDamaged { found }));
    }
    Err(Error::new(ErrorKind::Version { found }))
}

/// The declared length against the buffer.
fn check_length(bytes: &[u8], words: &[u32]) -> Result<(), Error> {
    let total = words[hdr::TOTAL_BYTES] as usize;
    if total > bytes.len() {
        return Err(Error::short("payload", total, bytes.len()));
    }
    if total != bytes.len() {
        return Err(Error::field(
            "payload length",
            total as u64,
            bytes.len() as u64,
        ));
    }
    Ok(())
}

/// The payload checksum against the header's (after [`check_frame`]).
pub(crate) fn check_checksum(bytes: &[u8], words: &[u32]) -> Result<(), Error> {
    let computed = payload_checksum(bytes);
    if computed != words[hdr::CHECKSUM] {
        return Err(Error::new(ErrorKind::Corrupt {
            part: Part::Payload {
                len: bytes.len() as u64,
            },
            computed,
            stored: words[hdr::CHECKSUM],
        }));
    }
    Ok(())
}

/// The header's values, each in its range.
fn counts(words: &[u32]) -> Result<(Header, Counts), Error> {
    let vocab_size = words[hdr::MASK_WIDTH]; // the mask width
    let n_tokens = words[hdr::N_TOKENS];
    let n_states = words[hdr::N_STATES] as usize;
    let n_classes = words[hdr::N_CLASSES] as usize;
    let start = words[hdr::START];
    if n_tokens > vocab_size {
        return Err(Error::range(
            "token count",
            0,
            n_tokens as u64,
            vocab_size as u64 + 1,
        ));
    }
    if n_tokens == 0 {
        return Err(Error::field("token count", 1, 0));
    }
    if !(2..=layout::MAX_STATES).contains(&n_states) {
        return Err(Error::range(
            "state count",
            0,
            n_states as u64,
            layout::MAX_STATES as u64 + 1,
        ));
    }
    if n_classes == 0 || n_classes > 256 {
        return Err(Error::range("class count", 0, n_classes as u64, 257));
    }
    if start == layout::DEAD_STATE || start as usize >= n_states {
        return Err(Error::range(
            "start state",
            0,
            start as u64,
            n_states as u64,
        ));
    }
    let mut fingerprint = [0u8; 32];
    for (i, w) in words[hdr::FINGERPRINT..hdr::FINGERPRINT + 8]
        .iter()
        .enumerate()
    {
        fingerprint[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    let header = Header {
        mask_width: vocab_size,
        start,
        fingerprint,
        max_tokens: words[hdr::MAX_TOKENS],
    };
    let counts = Counts {
        n_tokens,
        n_states,
        n_classes: n_classes as u32,
        n_masks: words[hdr::N_MASKS] as usize,
        n_eos: words[hdr::N_EOS] as usize,
    };
    Ok((header, counts))
}

impl Header {
    /// The header's words for a payload of `total` bytes with `counts`
    /// (the checksum word left 0, stamped once the payload is complete).
    #[cfg(feature = "std")]
    pub(crate) fn words(&self, counts: &Counts, total: u32) -> [u32; HEADER_WORDS] {
        let mut h = [0u32; HEADER_WORDS];
        let m = layout::MAGIC;
        h[hdr::MAGIC0] = u32::from_le_bytes([m[0], m[1], m[2], m[3]]);
        h[hdr::MAGIC1] = u32::from_le_bytes([m[4], m[5], m[6], m[7]]);
        h[hdr::ENDIAN] = layout::ENDIAN_CHECK;
        h[hdr::VERSION] = layout::VERSION;
        h[hdr::TOTAL_BYTES] = total;
        h[hdr::MASK_WIDTH] = self.mask_width;
        h[hdr::N_TOKENS] = counts.n_tokens;
        h[hdr::N_STATES] = counts.n_states as u32;
        h[hdr::N_CLASSES] = counts.n_classes;
        h[hdr::START] = self.start;
        h[hdr::N_MASKS] = counts.n_masks as u32;
        h[hdr::N_EOS] = counts.n_eos as u32;
        for (i, c) in self.fingerprint.chunks_exact(4).enumerate() {
            h[hdr::FINGERPRINT + i] = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        h[hdr::MAX_TOKENS] = self.max_tokens;
        h[hdr::N_SECTIONS] = SECTION_COUNT as u32;
        h
    }
}

/// The payload checksum: CRC-32C of the payload's bytes without header
/// word [`hdr::CHECKSUM`] (the bytes before it, then the bytes after it).
/// A payload shorter than the header has none; this returns the CRC of
/// all of it.
pub fn payload_checksum(payload: &[u8]) -> u32 {
    let at = hdr::CHECKSUM * 4;
    if payload.len() < at + 4 {
        return crc32c(payload);
    }
    crc32c_update(crc32c(&payload[..at]), &payload[at + 4..])
}

/// Writes [`payload_checksum`] into header word [`hdr::CHECKSUM`]: for
/// tools and tests that edit a payload and want the loader's structural
/// checks (not the checksum) to judge it. False if the payload is shorter
/// than the header.
pub fn stamp_checksum(payload: &mut [u8]) -> bool {
    let at = hdr::CHECKSUM * 4;
    if payload.len() < HEADER_WORDS * 4 {
        return false;
    }
    let c = payload_checksum(payload);
    payload[at..at + 4].copy_from_slice(&c.to_le_bytes());
    true
}

/// The payload checksum the bytes would have with this runtime's version
/// in the version word: equal to the stored checksum when only the version
/// word was damaged. `bytes` holds at least the header.
fn checksum_as_this_version(bytes: &[u8]) -> u32 {
    let (v, c) = (hdr::VERSION * 4, hdr::CHECKSUM * 4);
    let crc = crc32c(&bytes[..v]);
    let crc = crc32c_update(crc, &layout::VERSION.to_le_bytes());
    let crc = crc32c_update(crc, &bytes[v + 4..c]);
    crc32c_update(crc, &bytes[c + 4..])
}
