//! Validation of a decompressed payload, in the order `runtime/FORMAT.md`
//! lists: alignment, label, byte order, version, declared length, checksum,
//! header counts, section table, then each section against the counts.
//! The checksum comes before anything the header says beyond the version
//! and the length is trusted, so a damaged payload is refused as such
//! rather than by whichever structural check it happens to trip. After it
//! succeeds every index the serving path computes is in bounds, so serving
//! needs no further checks for memory safety. Nothing here panics: all
//! arithmetic on input values is checked or done in `u64`.

use crate::error::{Error, ErrorKind, Label, Part};
use crate::layout::{self, hdr, kind, sec, HEADER_WORDS, KIND_SHIFT, OFFSET_MASK, SECTION_COUNT};
use crate::Grammar;

/// Views `bytes` as little-endian words. Requires 4-byte alignment.
fn as_words(bytes: &[u8]) -> Result<&[u32], Error> {
    if bytes.as_ptr() as usize % 4 != 0 {
        return Err(Error::new(ErrorKind::Alignment));
    }
    // SAFETY: the pointer is 4-aligned, the length is rounded down to whole
    // words inside the slice, and every bit pattern is a valid u32.
    Ok(unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4) })
}

#[derive(Clone, Copy, Debug, Default)]
struct Section {
    offset: usize,
    len: usize,
}

/// What validation learned about a payload: enough to build a [`Grammar`]
/// view in constant time.
#[derive(Clone, Debug)]
pub(crate) struct Parts {
    sections: [Section; SECTION_COUNT],
    fingerprint: [u8; 32],
    vocab_size: u32,
    n_tokens: u32,
    n_classes: u32,
    start: u32,
    max_tokens: u32,
}

pub(crate) fn grammar_from_bytes(bytes: &[u8]) -> Result<Grammar<'_>, Error> {
    let parts = validate(bytes)?;
    Ok(assemble(bytes, &parts))
}

/// Builds the view over a payload that [`validate`] accepted.
pub(crate) fn assemble<'a>(bytes: &'a [u8], parts: &Parts) -> Grammar<'a> {
    let b = |id: u32| {
        let s = parts.sections[id as usize - 1];
        &bytes[s.offset..s.offset + s.len]
    };
    let w = |id: u32| {
        let bytes = b(id);
        // SAFETY: validate() checked that the payload and every word section
        // start on 4-byte boundaries and have whole-word lengths; every bit
        // pattern is a valid u32.
        unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u32>(), bytes.len() / 4) }
    };
    // SAFETY: validate() checked that META is UTF-8.
    let meta = unsafe { core::str::from_utf8_unchecked(b(sec::META)) };
    Grammar {
        byte_classes: b(sec::BYTE_CLASSES),
        transitions: w(sec::TRANSITIONS),
        states: w(sec::STATES),
        mask_index: w(sec::MASK_INDEX),
        mask_data: w(sec::MASK_DATA),
        eos: w(sec::EOS),
        token_offsets: w(sec::TOKEN_OFFSETS),
        token_bytes: b(sec::TOKEN_BYTES),
        entries: w(sec::ENTRIES),
        entry_names: b(sec::ENTRY_NAMES),
        distance: w(sec::DISTANCE),
        tier_index: w(sec::TIER_INDEX),
        tiers: w(sec::TIERS),
        meta,
        fingerprint: parts.fingerprint,
        vocab_size: parts.vocab_size,
        n_tokens: parts.n_tokens,
        n_classes: parts.n_classes,
        start: parts.start,
        max_tokens: parts.max_tokens,
    }
}

/// Checks that the token ids of mask `m` are below the token count and
/// strictly ascending.
fn check_ids(m: usize, ids: &[u32], n_tokens: u32) -> Result<(), Error> {
    let mut prev: Option<u32> = None;
    for &t in ids {
        if t >= n_tokens {
            return Err(Error::range(
                "mask token",
                m as u64,
                t as u64,
                n_tokens as u64,
            ));
        }
        if prev.is_some_and(|p| p >= t) {
            return Err(Error::new(ErrorKind::Order { mask: m as u32 }));
        }
        prev = Some(t);
    }
    Ok(())
}

/// Checks a payload, in the order FORMAT.md lists.
pub(crate) fn validate(bytes: &[u8]) -> Result<Parts, Error> {
    if bytes.len() >= 4
        && (bytes[..4] == [0x28, 0xB5, 0x2F, 0xFD]
            || bytes[..4] == layout::envelope::MAGIC.to_le_bytes())
    {
        return Err(Error::new(ErrorKind::Compressed));
    }
    let words = as_words(bytes)?;
    if bytes.len() < 8 || bytes[..8] != layout::MAGIC {
        if bytes.len() < 8 {
            return Err(Error::short("label", 8, bytes.len()));
        }
        return Err(Error::new(ErrorKind::Magic));
    }
    if words.len() < HEADER_WORDS {
        return Err(Error::short("header", HEADER_WORDS * 4, bytes.len()));
    }
    if cfg!(target_endian = "big") || words[hdr::ENDIAN] != layout::ENDIAN_CHECK {
        return Err(Error::new(ErrorKind::Endianness));
    }
    if words[hdr::VERSION] != layout::VERSION {
        let found = words[hdr::VERSION];
        if words[hdr::TOTAL_BYTES] as usize == bytes.len()
            && checksum_as_this_version(bytes) == words[hdr::CHECKSUM]
        {
            return Err(Error::new(ErrorKind::VersionDamaged { found }));
        }
        return Err(Error::new(ErrorKind::Version { found }));
    }
    let total = words[hdr::TOTAL_BYTES] as usize;
    if total != bytes.len() {
        if total > bytes.len() {
            return Err(Error::short("payload", total, bytes.len()));
        }
        return Err(Error::field(
            "payload length",
            total as u64,
            bytes.len() as u64,
        ));
    }
    let computed = layout::payload_checksum(bytes);
    if computed != words[hdr::CHECKSUM] {
        return Err(Error::new(ErrorKind::Corrupt {
            part: Part::Payload {
                len: bytes.len() as u64,
            },
            computed,
            stored: words[hdr::CHECKSUM],
        }));
    }
    let vocab_size = words[hdr::VOCAB_SIZE];
    let n_tokens = words[hdr::N_TOKENS];
    let n_states = words[hdr::N_STATES] as usize;
    let n_classes = words[hdr::N_CLASSES] as usize;
    let start = words[hdr::START];
    let n_masks = words[hdr::N_MASKS] as usize;
    let n_eos = words[hdr::N_EOS] as usize;
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
    if n_states < 2 || n_states >= layout::STATE_ACCEPTING as usize {
        return Err(Error::range(
            "state count",
            0,
            n_states as u64,
            layout::STATE_ACCEPTING as u64,
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
    if words[hdr::N_SECTIONS] as usize != SECTION_COUNT {
        return Err(Error::field(
            "section count",
            SECTION_COUNT as u64,
            words[hdr::N_SECTIONS] as u64,
        ));
    }
    let mut fingerprint = [0u8; 32];
    fingerprint.copy_from_slice(&bytes[hdr::FINGERPRINT * 4..hdr::FINGERPRINT * 4 + 32]);

    // Section table: ids in order, 4-aligned, inside the payload, in
    // ascending non-overlapping order after the table.
    let table_end = (HEADER_WORDS + 3 * SECTION_COUNT) * 4;
    if bytes.len() < table_end {
        return Err(Error::short("section table", table_end, bytes.len()));
    }
    let mut sections = [Section::default(); SECTION_COUNT];
    let mut cursor = table_end;
    for (i, s) in sections.iter_mut().enumerate() {
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
        *s = Section { offset, len };
    }
    let byte_sec = |id: u32| {
        let s = &sections[id as usize - 1];
        &bytes[s.offset..s.offset + s.len]
    };
    let word_sec = |id: u32, expect: Option<usize>| -> Result<&[u32], Error> {
        let s = &sections[id as usize - 1];
        if s.len % 4 != 0 {
            return Err(Error::section(id, "length is not a whole number of words"));
        }
        if let Some(n) = expect {
            if s.len / 4 != n {
                return Err(Error::field(
                    "section length in words",
                    n as u64,
                    (s.len / 4) as u64,
                ));
            }
        }
        Ok(&words[s.offset / 4..(s.offset + s.len) / 4])
    };

    let byte_classes = byte_sec(sec::BYTE_CLASSES);
    if byte_classes.len() != 256 {
        return Err(Error::field(
            "byte class table length",
            256,
            byte_classes.len() as u64,
        ));
    }
    for (b, &c) in byte_classes.iter().enumerate() {
        if c as usize >= n_classes {
            return Err(Error::range(
                "byte class of byte",
                b as u64,
                c as u64,
                n_classes as u64,
            ));
        }
    }

    let n_trans = n_states
        .checked_mul(n_classes)
        .ok_or(Error::section(sec::TRANSITIONS, "has an overflowing size"))?;
    let transitions = word_sec(sec::TRANSITIONS, Some(n_trans))?;
    for (i, &t) in transitions.iter().enumerate() {
        if t as usize >= n_states {
            return Err(Error::range(
                "transition",
                i as u64,
                t as u64,
                n_states as u64,
            ));
        }
        if i < n_classes && t != layout::DEAD_STATE {
            return Err(Error::field(
                "transition out of the dead state",
                0,
                t as u64,
            ));
        }
    }

    let states = word_sec(sec::STATES, Some(n_states))?;
    for (i, &w) in states.iter().enumerate() {
        let mask = w & !layout::STATE_ACCEPTING;
        if mask as usize >= n_masks {
            return Err(Error::range(
                "mask id of state",
                i as u64,
                mask as u64,
                n_masks as u64,
            ));
        }
    }
    if states[0] & layout::STATE_ACCEPTING != 0 {
        return Err(Error::field("accepting flag of the dead state", 0, 1));
    }

    let mask_words = layout::mask_words(vocab_size);
    let mask_index = word_sec(sec::MASK_INDEX, Some(n_masks.saturating_mul(2)))?;
    let mask_data = word_sec(sec::MASK_DATA, None)?;
    for m in 0..n_masks {
        let head = mask_index[2 * m];
        let len = mask_index[2 * m + 1] as usize;
        let off = (head & OFFSET_MASK) as usize;
        let end = off.saturating_add(len);
        if end > mask_data.len() {
            return Err(Error::range(
                "mask end",
                m as u64,
                end as u64,
                mask_data.len() as u64 + 1,
            ));
        }
        let data = &mask_data[off..end];
        match head >> KIND_SHIFT {
            kind::DENSE => {
                if len != mask_words {
                    return Err(Error::field(
                        "dense mask length",
                        mask_words as u64,
                        len as u64,
                    ));
                }
                // No bit at or beyond the token count.
                for (w, &word) in data.iter().enumerate() {
                    let first = w as u64 * 32;
                    let allowed_bits = (n_tokens as u64).saturating_sub(first).min(32);
                    let legal = if allowed_bits == 32 {
                        u32::MAX
                    } else {
                        (1u32 << allowed_bits) - 1
                    };
                    if word & !legal != 0 {
                        return Err(Error::range(
                            "dense mask token",
                            m as u64,
                            first + 32,
                            n_tokens as u64,
                        ));
                    }
                }
            }
            kind::ALLOW | kind::DENY => check_ids(m, data, n_tokens)?,
            // kind::DELTA, the last of the two-bit kinds.
            _ => {
                let Some((&base, ids)) = data.split_first() else {
                    return Err(Error::field("delta mask length (at least its base)", 1, 0));
                };
                if base as usize >= n_masks {
                    return Err(Error::range(
                        "delta base of mask",
                        m as u64,
                        base as u64,
                        n_masks as u64,
                    ));
                }
                if mask_index[2 * base as usize] >> KIND_SHIFT == kind::DELTA {
                    return Err(Error::new(ErrorKind::DeltaChain { mask: m as u32 }));
                }
                check_ids(m, ids, n_tokens)?;
            }
        }
    }

    let eos = word_sec(sec::EOS, Some(n_eos))?;
    for (i, &t) in eos.iter().enumerate() {
        if t >= n_tokens {
            return Err(Error::range(
                "end-of-sequence token",
                i as u64,
                t as u64,
                n_tokens as u64,
            ));
        }
        if i > 0 && eos[i - 1] >= t {
            return Err(Error::field(
                "end-of-sequence tokens in ascending order",
                1,
                0,
            ));
        }
    }

    let token_offsets = word_sec(sec::TOKEN_OFFSETS, Some(n_tokens as usize + 1))?;
    let token_bytes = byte_sec(sec::TOKEN_BYTES);
    if token_offsets[0] != 0 {
        return Err(Error::field(
            "first token offset",
            0,
            token_offsets[0] as u64,
        ));
    }
    for i in 1..token_offsets.len() {
        if token_offsets[i] < token_offsets[i - 1] {
            return Err(Error::range(
                "token offset",
                i as u64,
                token_offsets[i] as u64,
                token_offsets[i - 1] as u64,
            ));
        }
    }
    let last = token_offsets[n_tokens as usize] as usize;
    if last != token_bytes.len() {
        return Err(Error::field(
            "token bytes length",
            last as u64,
            token_bytes.len() as u64,
        ));
    }
    for &t in eos {
        if token_offsets[t as usize] != token_offsets[t as usize + 1] {
            return Err(Error::field(
                "text length of an end-of-sequence token",
                0,
                1,
            ));
        }
    }

    let meta =
        core::str::from_utf8(byte_sec(sec::META)).map_err(|_| Error::new(ErrorKind::Utf8))?;

    let _ = meta;

    let entries = word_sec(sec::ENTRIES, None)?;
    let names = byte_sec(sec::ENTRY_NAMES);
    if entries.is_empty() || entries.len() % 3 != 0 {
        return Err(Error::section(
            sec::ENTRIES,
            "is not one or more (state, name offset, name length) triples",
        ));
    }
    for (i, e) in entries.chunks_exact(3).enumerate() {
        let (state, off, len) = (e[0], e[1] as usize, e[2] as usize);
        if state == layout::DEAD_STATE || state as usize >= n_states {
            return Err(Error::range(
                "entry state",
                i as u64,
                state as u64,
                n_states as u64,
            ));
        }
        if i == 0 && state != start {
            return Err(Error::field(
                "state of the first entry (the start state)",
                start as u64,
                state as u64,
            ));
        }
        let end = off
            .checked_add(len)
            .filter(|&end| end <= names.len())
            .ok_or(Error::section(
                sec::ENTRY_NAMES,
                "is shorter than an entry's name",
            ))?;
        if core::str::from_utf8(&names[off..end]).is_err() {
            return Err(Error::new(ErrorKind::Utf8));
        }
    }

    // Distances and tiers: in range and ordered, so that serving a budget
    // indexes only inside them. (Whether the distances are right is the
    // compiler's guarantee; a wrong table yields wrong masks, never an
    // out-of-bounds read.)
    let distance = word_sec(sec::DISTANCE, Some(n_states.saturating_mul(2)))?;
    if distance[0] != layout::NO_DISTANCE {
        return Err(Error::field(
            "distance of the dead state",
            layout::NO_DISTANCE as u64,
            distance[0] as u64,
        ));
    }
    let tier_index = word_sec(sec::TIER_INDEX, Some(n_states.saturating_mul(2)))?;
    let tiers = word_sec(sec::TIERS, None)?;
    if tiers.len() % 2 != 0 {
        return Err(Error::section(
            sec::TIERS,
            "is not a list of (k, mask id) pairs",
        ));
    }
    let pairs = tiers.len() / 2;
    // The lists, each checked once (states share them): a head pair
    // (TIER_LIST_HEAD, n), then n pairs with mask ids in range and `k`s
    // strictly ascending, so that no `k` is a head; the lists fill TIERS.
    let mut at = 0;
    while at < pairs {
        let (head, n) = (tiers[2 * at], tiers[2 * at + 1] as usize);
        if head != layout::TIER_LIST_HEAD || n == 0 || n > pairs - at - 1 {
            return Err(Error::new(ErrorKind::TierList {
                pair: at as u32,
                why: "is not the head of a list of one or more pairs inside the section",
            }));
        }
        let first = at + 1;
        let mut prev: Option<u32> = None;
        for (i, pair) in tiers[2 * first..2 * (first + n)]
            .chunks_exact(2)
            .enumerate()
        {
            let (k, mask) = (pair[0], pair[1]);
            if mask as usize >= n_masks {
                return Err(Error::range(
                    "tier mask id of pair",
                    (first + i) as u64,
                    mask as u64,
                    n_masks as u64,
                ));
            }
            if k == layout::TIER_LIST_HEAD || prev.is_some_and(|p| p >= k) {
                return Err(Error::new(ErrorKind::TierList {
                    pair: at as u32,
                    why: "heads a list whose k values are not strictly ascending",
                }));
            }
            prev = Some(k);
        }
        at = first + n;
    }
    // Each state's reference, in constant time: a whole list (the pair
    // before it is a head, which only a list's head can be, with the
    // state's length), whose last `k` is below the state's top.
    for s in 0..n_states {
        // `top + 1 = (top + 1 - dist) + dist` must be a u32: serving adds
        // the two.
        let (dist, rel_top) = (distance[2 * s], distance[2 * s + 1]);
        if dist != layout::NO_DISTANCE && dist.checked_add(rel_top).is_none() {
            return Err(Error::range(
                "top tier (relative) of state",
                s as u64,
                rel_top as u64,
                (u32::MAX - dist) as u64 + 1,
            ));
        }
        let (off, len) = (tier_index[2 * s] as usize, tier_index[2 * s + 1] as usize);
        let end = off.saturating_add(len);
        if end > pairs {
            return Err(Error::range(
                "tier list end of state",
                s as u64,
                end as u64,
                pairs as u64 + 1,
            ));
        }
        if len == 0 {
            continue;
        }
        if dist == layout::NO_DISTANCE {
            return Err(Error::new(ErrorKind::TierOrder { state: s as u32 }));
        }
        let whole = off > 0
            && tiers[2 * (off - 1)] == layout::TIER_LIST_HEAD
            && tiers[2 * (off - 1) + 1] as usize == len;
        if !whole {
            return Err(Error::new(ErrorKind::TierRef { state: s as u32 }));
        }
        if tiers[2 * (end - 1)] >= rel_top {
            return Err(Error::new(ErrorKind::TierOrder { state: s as u32 }));
        }
    }
    let max_tokens = words[hdr::MAX_TOKENS];
    if max_tokens != 0 && distance[2 * start as usize] > max_tokens {
        return Err(Error::field(
            "default budget (at least the start state's distance)",
            distance[2 * start as usize] as u64,
            max_tokens as u64,
        ));
    }

    Ok(Parts {
        sections,
        fingerprint,
        vocab_size,
        n_tokens,
        n_classes: n_classes as u32,
        start,
        max_tokens,
    })
}

/// The payload checksum the bytes would have with this runtime's version
/// in the version word: equal to the stored checksum when only the version
/// word was damaged. `bytes` holds at least the header.
fn checksum_as_this_version(bytes: &[u8]) -> u32 {
    let (v, c) = (hdr::VERSION * 4, hdr::CHECKSUM * 4);
    let crc = layout::crc32c(&bytes[..v]);
    let crc = layout::crc32c_update(crc, &layout::VERSION.to_le_bytes());
    let crc = layout::crc32c_update(crc, &bytes[v + 4..c]);
    layout::crc32c_update(crc, &bytes[c + 4..])
}

impl<'a> Grammar<'a> {
    /// Checks that the artifact was compiled for the vocabulary whose
    /// fingerprint is `fingerprint` (the SHA-256 `runtime/FORMAT.md`
    /// defines; `tooldec_compiler::vocab::Vocab::fingerprint` computes it
    /// from a tokenizer). The error names the artifact's vocabulary (its
    /// label in the metadata) and both fingerprints.
    pub fn check_vocabulary(&self, fingerprint: &[u8; 32]) -> Result<(), Error> {
        if &self.fingerprint == fingerprint {
            return Ok(());
        }
        let prefix = |f: &[u8; 32]| {
            let mut p = [0u8; 8];
            p.copy_from_slice(&f[..8]);
            p
        };
        Err(Error::new(ErrorKind::Vocabulary {
            label: meta_label(self.meta),
            artifact: prefix(&self.fingerprint),
            given: prefix(fingerprint),
        }))
    }

    /// Checks that masks of this artifact fit a model with `logits` output
    /// logits: engines hand the runtime a mask buffer of the model's width.
    /// Wider is fine (ids from [`Grammar::vocab_size`] on are never
    /// allowed, and [`Matcher::fill_mask`](crate::Matcher::fill_mask)
    /// zeroes the words past [`Grammar::mask_words`]); narrower means the
    /// artifact was compiled for another model.
    pub fn check_vocab_size(&self, logits: usize) -> Result<(), Error> {
        if logits < self.vocab_size as usize {
            return Err(Error::new(ErrorKind::LogitsWidth {
                logits: logits as u64,
                vocab: self.vocab_size,
            }));
        }
        Ok(())
    }
}

/// The vocabulary label in META (`{"vocab": {"label": "..."}}`), if the
/// metadata has one. A small scanner, not a JSON parser: linear, without
/// recursion or allocation, and gives up (no label) on anything unexpected.
fn meta_label(meta: &str) -> Label {
    let mut j = Json {
        s: meta.as_bytes(),
        i: 0,
    };
    (|| {
        j.member(b"vocab")?;
        j.member(b"label")?;
        j.ws();
        j.string_into(meta)
    })()
    .unwrap_or(Label::NONE)
}

struct Json<'a> {
    s: &'a [u8],
    i: usize,
}

impl Json<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek() == Some(c)).then(|| self.i += 1)
    }

    /// Skips a string (at its opening quote); returns its raw content.
    fn string(&mut self) -> Option<(usize, usize)> {
        if self.peek() != Some(b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        while i < self.s.len() {
            match self.s[i] {
                b'\\' => i += 2,
                b'"' => {
                    self.i = i + 1;
                    return Some((start, i));
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Skips one value: a string, a scalar (up to the next `,`, `}` or
    /// `]`), or a bracketed value by depth counting.
    fn value(&mut self) -> Option<()> {
        self.ws();
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        return Some(());
                    }
                    depth -= 1;
                    self.i += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b',' if depth == 0 => return Some(()),
                _ => self.i += 1,
            }
        }
    }

    /// In the object starting here, moves to the value of member `key`.
    fn member(&mut self, key: &[u8]) -> Option<()> {
        self.eat(b'{')?;
        loop {
            self.ws();
            let (a, b) = self.string()?;
            self.eat(b':')?;
            if &self.s[a..b] == key {
                return Some(());
            }
            self.value()?;
            self.eat(b',')?;
        }
    }

    /// Decodes the string starting here into a label.
    fn string_into(&mut self, text: &str) -> Option<Label> {
        let (a, b) = self.string()?;
        // Quotes are ASCII, so the content is whole characters.
        let mut chars = text.get(a..b)?.chars();
        let mut label = Label::empty();
        while let Some(c) = chars.next() {
            if c != '\\' {
                label.push(c);
                continue;
            }
            let c = match chars.next()? {
                'b' => '\u{8}',
                'f' => '\u{c}',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'u' => {
                    let hi = hex4(&mut chars)?;
                    let code = if (0xD800..0xDC00).contains(&hi) {
                        // A surrogate pair: "\uD83D\uDE00".
                        if chars.next() != Some('\\') || chars.next() != Some('u') {
                            return None;
                        }
                        let lo = hex4(&mut chars).filter(|lo| (0xDC00..0xE000).contains(lo))?;
                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                    } else {
                        hi
                    };
                    char::from_u32(code).unwrap_or('\u{FFFD}')
                }
                c => c,
            };
            label.push(c);
        }
        Some(label)
    }
}

/// Four hex digits of a `\\u` escape.
fn hex4(chars: &mut core::str::Chars<'_>) -> Option<u32> {
    let mut v = 0u32;
    for _ in 0..4 {
        v = v * 16 + chars.next()?.to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::meta_label;
    use core::fmt::Write;

    /// The label as the error shows it (`Some("...")` or `None`).
    fn label(meta: &str) -> std::string::String {
        let mut s = std::string::String::new();
        write!(s, "{:?}", meta_label(meta)).unwrap();
        s
    }

    #[test]
    fn the_vocabulary_label_is_found_in_the_metadata() {
        assert_eq!(
            label(
                r#"{"format":"react","tools":["label","vocab"],"vocab":{"label":"gpt2 (built-in r50k_base)","kind":"byte-level BPE"}}"#
            ),
            r#"Some("gpt2 (built-in r50k_base)")"#
        );
        // Members before it of every kind, nested, with strings that hold
        // brackets, quotes and the keys themselves.
        assert_eq!(
            label(
                r#" { "a" : [1, {"label": "no"}, "]}"], "b": -1.5e3, "c": null, "d": {"vocab": {"label": "inner"}}, "vocab" : { "kind": "x", "label" : "q\"\\\u00e9\ud83d\ude00\n" } }"#
            ),
            "Some(\"q\\\"\\\\é😀\\n\")"
        );
        for none in [
            "",
            "{}",
            "[]",
            r#"{"vocab":{"kind":"x"}}"#,
            r#"{"vocab":{"label":3}}"#,
            r#"{"vocab":{"label":"unterminated}}"#,
            r#"{"vocab":{"label":"bad escape \u12"}}"#,
            r#"{"vocab":{"label":"lone surrogate \ud800 x"}}"#,
            r#"{"vocab""label":"x"}"#,
            "{\"vocab\":",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
        ] {
            assert_eq!(label(none), "None", "{none}");
        }
        // Long labels are cut at a character boundary.
        let long = std::format!(r#"{{"vocab":{{"label":"{}"}}}}"#, "é".repeat(100));
        assert_eq!(label(&long), std::format!("Some({:?})", "é".repeat(48)));
    }
}
