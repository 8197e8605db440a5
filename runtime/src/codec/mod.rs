//! The artifact codec: one type per group of sections, each of which
//! reads, checks and writes itself. The compiler writes payloads through
//! it ([`Payload::to_bytes`], the `std` feature) and the runtime reads them
//! ([`crate::Grammar::from_bytes`], [`crate::Artifact`]); `runtime/FORMAT.md`
//! describes the bytes, and [`layout`] holds their constants.
//!
//! | type | sections | what it is |
//! |---|---|---|
//! | [`Header`] | header | what the sections do not say: vocab size, start, fingerprint, default budget |
//! | [`Dfa`] | BYTE_CLASSES, TRANSITIONS, STATES | the machine over bytes (the per-state tables as [`column`]s) |
//! | [`Masks`] | MASK_INDEX, MASK_DATA | every distinct mask, dense or a list |
//! | [`Tokens`] | EOS, TOKEN_OFFSETS, TOKEN_BYTES | the vocabulary as the grammar reads it |
//! | META | META | the compiler's JSON description (UTF-8) |
//! | [`Entries`] | ENTRIES, ENTRY_NAMES | the format's entry points |
//! | [`Budget`] | DISTANCE, TIER_INDEX, TIERS | token distances and budget tiers |
//! | [`Tools`] | TOOLS (optional) | one-tool matchers: tool names, name colours, gates, per-tool distances |
//! | [`StopTokens`] | STOP_TOKENS (optional) | per stop gate, the tokens that run past a call's end |
//! | [`Loops`] | LOOPS (optional) | per state, the tokens that lead it back to itself |
//!
//! Reading is zero-copy and allocation-free: each type is a set of slices
//! of the caller's buffer. Writing (the `std` feature) takes the same
//! types, borrowed from the writer's vectors; the builders
//! ([`MasksBuilder`], [`TokensBuilder`], [`EntriesBuilder`],
//! [`BudgetBuilder`]) encode what is not a plain copy.
//!
//! # Validation order
//!
//! Reading ([`Grammar::from_bytes`](crate::Grammar::from_bytes),
//! [`Artifact::new`](crate::Artifact::new)) checks a payload in this order, each step trusting only what
//! the steps before it checked, and stops at the first failure with an
//! [`Error`] that says what was expected and what was found. Nothing
//! panics: all arithmetic on input values is checked or saturating.
//!
//! 1. **[`Header`]**: not a zstd frame or envelope (those are for
//!    [`crate::Artifact`]); 4-byte alignment; the label; the header's
//!    length; endianness; the version (when it is not ours but the
//!    checksum holds with ours written in, the version word was damaged);
//!    the declared length equals the buffer; **the payload checksum**,
//!    before anything else the header says is trusted, so a damaged
//!    payload is refused as such rather than by whichever structural check
//!    it happens to trip (with `std`, a payload of 4 MiB or more has it
//!    computed on a second thread, and then steps 8 and 9, while this one
//!    runs steps 3 to 7; the verdict is still the one of this order, since
//!    no step reads another section's verdict); then the counts (0 < tokens ≤ vocab size,
//!    2 ≤ states ≤ 2²⁴, 1 ≤ classes ≤ 256, 0 < start < states) and the
//!    section count.
//! 2. **Section table**: each entry's id in order, its start 4-aligned,
//!    no overlap with what precedes it, its end inside the payload.
//! 3. **[`Dfa`]**: byte classes below the class count; whole row shapes,
//!    each numbering no more targets than it counts; TRANSITIONS exactly
//!    two whole [columns](column) (each column: a width of at most 57 bits,
//!    fields of at most 32, its words inside its section), a row per
//!    state, each row's shape in range and its targets inside the target
//!    column, live states below the state count; the dead state without
//!    moves; STATES exactly one column of a value per state, mask ids below
//!    the mask count, loop set numbers at most LOOPS' set count, the dead
//!    state without flags.
//! 4. **[`Masks`]**: each mask inside MASK_DATA; dense masks of the exact
//!    width with no bit at or past the token count; lists strictly
//!    ascending below the token count; a delta's base in range and not a
//!    delta.
//! 5. **[`Tokens`]**: EOS ids ascending and below the token count; offsets
//!    from 0, never decreasing, ending at TOKEN_BYTES' length; EOS tokens
//!    without text.
//! 6. **META** is UTF-8.
//! 7. **[`Entries`]**: whole triples, at least one; states live and in
//!    range, the first the start state; names inside ENTRY_NAMES, UTF-8.
//! 8. **[`Budget`]**: DISTANCE exactly one column of a value per state;
//!    the dead state has no distance; TIERS is whole pairs
//!    forming head-led lists with mask ids in range and strictly ascending
//!    `k`s, each list checked once; each profile of TIER_INDEX names no
//!    list or one whole list, whose last `k` is below its top; each state's
//!    profile is in range, without tiers when it has no distance, and its
//!    `dist + (top + 1 - dist)` fits a word; a nonzero default budget is at
//!    least the start state's distance.
//! 9. **[`Tools`]** (when the table has it and it is not empty): counts
//!    consistent with its length; ranks below the tool count; name offsets
//!    ascending, names UTF-8; each colour's ranges non-empty and inside the
//!    tool count, its live total right; the states' column whole, a value
//!    per state, each colour in range, the dead state uncoloured; each
//!    distance row inside the distance data.
//! 10. **[`StopTokens`]** (when not empty): the gates ascending and below
//!     the state count, their lists in range, each list's tokens ascending
//!     and below the token count.
//! 11. **[`Loops`]** (when not empty): at most [`loops::MAX_SETS`] sets of
//!     the masks' width filling the section exactly, with no token at or
//!     past the token count. (STATES' loop set numbers were checked
//!     against its set count in step 3.)
//!
//! A word section's length (a whole number of words, and the count the
//! header gives) is checked when that section is reached. After step 8,
//! every index the serving path computes is in bounds, so serving needs no
//! further checks for memory safety. Validation is linear in the payload.

mod budget;
pub mod column;
mod cpu;
mod crc;
mod dfa;
mod entries;
pub mod envelope;
mod header;
pub mod layout;
pub mod loops;
mod masks;
pub(crate) mod meta;
pub mod stop_tokens;
mod tokens;
pub mod tools;

pub use budget::Budget;
#[cfg(feature = "std")]
pub use dfa::Rows;
pub use dfa::{Dfa, Row};
pub use entries::Entries;
pub use header::Header;
pub use loops::Loops;
pub(crate) use masks::set_words;
pub use masks::Masks;
pub use stop_tokens::StopTokens;
pub use tokens::Tokens;
pub use tools::Tools;
#[cfg(feature = "std")]
pub use {
    budget::BudgetBuilder, dfa::StateFlags, entries::EntriesBuilder, loops::LoopsBuilder,
    masks::MasksBuilder, stop_tokens::StopTokensBuilder, tokens::TokensBuilder,
    tools::ToolsBuilder,
};

use header::{Counts, Span, Table};

use crate::error::Error;

/// Everything a payload holds, borrowed: what reading returns
/// ([`Grammar::payload`](crate::Grammar::payload)) and
/// [`Payload::to_bytes`] writes.
#[derive(Clone, Copy, Debug)]
pub struct Payload<'a> {
    /// The header's own values.
    pub header: Header,
    /// The machine.
    pub dfa: Dfa<'a>,
    /// The distinct masks.
    pub masks: Masks<'a>,
    /// The vocabulary as the grammar reads it.
    pub tokens: Tokens<'a>,
    /// META: UTF-8 JSON.
    pub meta: &'a [u8],
    /// The entry points.
    pub entries: Entries<'a>,
    /// Token distances and budget tiers.
    pub budget: Budget<'a>,
    /// What a one-tool matcher reads (empty when absent).
    pub tools: Tools<'a>,
    /// Per stop gate, the tokens that run past a call's end (empty when
    /// there are none).
    pub stop_tokens: StopTokens<'a>,
    /// Per state, the tokens that lead it back to itself (empty when no
    /// state has a set).
    pub loops: Loops<'a>,
}

/// What validation learned about a payload, enough to view it again in
/// constant time ([`Payload::view`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Index {
    header: Header,
    n_classes: u32,
    /// The heads of the rows, targets and STATES columns.
    dfa: [column::Head; 3],
    /// DISTANCE's head.
    distance: column::Head,
    /// Per section (id - 1), its range: in words for word sections, in
    /// bytes for byte sections (so that a view is one range per section).
    ranges: [(u32, u32); layout::SECTION_COUNT],
}

/// The sections read as bytes; the others are words.
fn is_byte_section(id: u32) -> bool {
    use layout::sec;
    matches!(
        id,
        sec::BYTE_CLASSES
            | sec::TRANSITIONS
            | sec::STATES
            | sec::TOKEN_BYTES
            | sec::META
            | sec::ENTRY_NAMES
            | sec::DISTANCE
    )
}

/// A payload's bytes and words, and its section table, as the section
/// readers see them.
pub(crate) struct Source<'a> {
    bytes: &'a [u8],
    words: &'a [u32],
    table: Table,
}

impl<'a> Source<'a> {
    /// Section `id`'s bytes (empty if its span is not in the buffer).
    pub(crate) fn bytes(&self, id: u32) -> &'a [u8] {
        let s = self.table.span(id);
        self.bytes
            .get(s.offset..s.offset.saturating_add(s.len))
            .unwrap_or_default()
    }

    /// Section `id`'s words, checked to be whole words and, if `expect`
    /// says so, exactly that many.
    pub(crate) fn words(&self, id: u32, expect: Option<usize>) -> Result<&'a [u32], Error> {
        let s = self.table.span(id);
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
        Ok(self.words_unchecked(id))
    }

    /// Section `id`'s whole words (empty if its span is not in the
    /// buffer); never panics.
    fn words_unchecked(&self, id: u32) -> &'a [u32] {
        let Span { offset, len } = self.table.span(id);
        self.words
            .get(offset / 4..(offset / 4).saturating_add(len / 4))
            .unwrap_or_default()
    }
}

/// Checks a payload, in the order the module documentation gives, and
/// returns its sections (borrowed) and what it takes to view them again.
/// `bytes` must start on a 4-byte boundary.
pub(crate) fn read(bytes: &[u8]) -> Result<(Payload<'_>, Index), Error> {
    let words = header::check_frame(bytes)?;
    #[cfg(feature = "std")]
    if bytes.len() >= CHECKSUM_BESIDE_BYTES {
        return read_beside(bytes, words);
    }
    header::check_checksum(bytes, words)?;
    let (header, counts, src) = layout_of(bytes, words)?;
    let front = front_checks(&src, &header, &counts)?;
    let back = back_checks(&src, &header, &counts)?;
    Ok(assemble(header, front, back, &src.table))
}

/// Payloads from this size on are checked on two threads (with `std`):
/// the checksum and then the budget and tools sections on a second one,
/// the machine, masks, tokens and entries on this one. At 10,000 distinct
/// tools the checksum is a fifth of loading and the per-state columns
/// most of the rest. Below it a thread costs more than it saves.
#[cfg(feature = "std")]
const CHECKSUM_BESIDE_BYTES: usize = 4 << 20;

/// [`read`] on two threads, with the verdict of one after the other: the
/// checksum's error first, then the header's and the table's, then the
/// first failing section in id order. Each section's checks trust only
/// the header and the table (none reads another section's verdict), so
/// running them side by side changes no answer, and they are safe on any
/// bytes, so running them on a payload the checksum refuses only wastes
/// their time.
#[cfg(feature = "std")]
fn read_beside<'a>(bytes: &'a [u8], words: &'a [u32]) -> Result<(Payload<'a>, Index), Error> {
    let found = layout_of(bytes, words);
    let ready = found.as_ref().ok();
    let (front, sum, back) = std::thread::scope(|scope| {
        let beside = std::thread::Builder::new()
            .name("tooldec-checksum".into())
            .spawn_scoped(scope, move || {
                let sum = header::check_checksum(bytes, words);
                let back = ready.map(|(h, c, src)| back_checks(src, h, c));
                (sum, back)
            });
        match beside {
            Ok(handle) => {
                let front = ready.map(|(h, c, src)| front_checks(src, h, c));
                // The closure cannot panic (it only reads and compares).
                let (sum, back) = handle
                    .join()
                    .unwrap_or_else(|_| (header::check_checksum(bytes, words), None));
                (front, sum, back)
            }
            // No thread to be had: one after the other.
            Err(_) => (None, header::check_checksum(bytes, words), None),
        }
    });
    sum?;
    let (header, counts, src) = found?;
    let front = front.unwrap_or_else(|| front_checks(&src, &header, &counts))?;
    let back = back.unwrap_or_else(|| back_checks(&src, &header, &counts))?;
    Ok(assemble(header, front, back, &src.table))
}

/// Step 1's counts and step 2: the header's values and the section table.
fn layout_of<'a>(bytes: &'a [u8], words: &'a [u32]) -> Result<(Header, Counts, Source<'a>), Error> {
    let (header, counts) = header::read_counts(words)?;
    let table = Table::read(bytes, words)?;
    let src = Source {
        bytes,
        words,
        table,
    };
    Ok((header, counts, src))
}

/// The sections steps 3 to 7 check.
type Front<'a> = (Dfa<'a>, Masks<'a>, Tokens<'a>, &'a [u8], Entries<'a>);

/// Steps 3 to 7: the machine, the masks, the tokens, META and the entries.
fn front_checks<'a>(src: &Source<'a>, header: &Header, c: &Counts) -> Result<Front<'a>, Error> {
    Ok((
        Dfa::read(src, c)?,
        Masks::read(src, header.mask_width, c)?,
        Tokens::read(src, c)?,
        meta::read(src)?,
        Entries::read(src, header.start, c)?,
    ))
}

/// The sections steps 8 to 11 check.
type Back<'a> = (Budget<'a>, Tools<'a>, StopTokens<'a>, Loops<'a>);

/// Steps 8 to 11: the budget tables, TOOLS, STOP_TOKENS and LOOPS.
fn back_checks<'a>(src: &Source<'a>, header: &Header, c: &Counts) -> Result<Back<'a>, Error> {
    Ok((
        Budget::read(src, header.start, header.max_tokens, c)?,
        Tools::read(src, c)?,
        StopTokens::read(src, c)?,
        Loops::read(src, header.mask_width, c)?,
    ))
}

/// The payload the checks accepted, and its index.
fn assemble<'a>(
    header: Header,
    (dfa, masks, tokens, meta, entries): Front<'a>,
    (budget, tools, stop_tokens, loops): Back<'a>,
    table: &Table,
) -> (Payload<'a>, Index) {
    let payload = Payload {
        header,
        dfa,
        masks,
        tokens,
        meta,
        entries,
        budget,
        tools,
        stop_tokens,
        loops,
    };
    let mut ranges = [(0, 0); layout::SECTION_COUNT];
    for (i, r) in ranges.iter_mut().enumerate() {
        let s = table.0[i];
        // Inside a payload of at most 4 GiB: checked when reading the table.
        let (start, end) = (s.offset as u32, (s.offset + s.len) as u32);
        *r = if is_byte_section(i as u32 + 1) {
            (start, end)
        } else {
            (start / 4, end / 4)
        };
    }
    let n_classes = payload.dfa.n_classes;
    (
        payload,
        Index {
            header,
            n_classes,
            dfa: payload.dfa.heads(),
            distance: payload.budget.head(),
            ranges,
        },
    )
}

impl<'a> Payload<'a> {
    /// The sections of a payload [`read`] accepted, from its words (the
    /// payload's bytes viewed as little-endian `u32`s) and what reading
    /// learned. Constant time; never panics (a span outside `words` gives
    /// an empty section, which only storage that changed since it was
    /// validated can cause).
    #[inline]
    pub(crate) fn view(words: &'a [u32], index: &Index) -> Payload<'a> {
        // SAFETY: `u8` has no alignment requirement and every byte of a
        // `u32` is initialized; the length covers exactly the words.
        let bytes = unsafe {
            core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), core::mem::size_of_val(words))
        };
        let r = |id: u32| {
            let (a, b) = index.ranges[id as usize - 1];
            (a as usize, b as usize)
        };
        let b = |id: u32| {
            let (a, e) = r(id);
            bytes.get(a..e).unwrap_or_default()
        };
        let w = |id: u32| {
            let (a, e) = r(id);
            words.get(a..e).unwrap_or_default()
        };
        use layout::sec;
        Payload {
            header: index.header,
            dfa: {
                let classes = b(sec::BYTE_CLASSES);
                let (classes, shapes) = classes.split_at(classes.len().min(256));
                Dfa::with_heads(
                    classes,
                    shapes,
                    index.n_classes,
                    b(sec::TRANSITIONS),
                    b(sec::STATES),
                    index.dfa,
                )
            },
            masks: Masks {
                index: w(sec::MASK_INDEX),
                data: w(sec::MASK_DATA),
            },
            tokens: Tokens {
                eos: w(sec::EOS),
                offsets: w(sec::TOKEN_OFFSETS),
                bytes: b(sec::TOKEN_BYTES),
            },
            meta: b(sec::META),
            entries: Entries {
                table: w(sec::ENTRIES),
                names: b(sec::ENTRY_NAMES),
            },
            budget: Budget::with_head(
                b(sec::DISTANCE),
                w(sec::TIER_INDEX),
                w(sec::TIERS),
                index.distance,
            ),
            tools: Tools {
                words: w(sec::TOOLS),
                bytes: {
                    let (a, e) = r(sec::TOOLS);
                    bytes.get(4 * a..4 * e).unwrap_or_default()
                },
            },
            stop_tokens: StopTokens {
                words: w(sec::STOP_TOKENS),
            },
            loops: Loops {
                words: w(sec::LOOPS),
            },
        }
    }
}

/// Why a payload could not be written: it outgrows what the format
/// addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// MASK_DATA outgrows the 30-bit word offsets of MASK_INDEX.
    MaskData,
    /// The payload would be this many bytes, over 4 GiB.
    TooLarge(u64),
    /// The machine has this many states, more than the format addresses
    /// ([`layout::MAX_STATES`]).
    States(usize),
    /// This state moves to more distinct states than a row shape numbers
    /// ([`layout::shape::MAX_TARGETS`]).
    Targets(usize),
}

impl core::fmt::Display for WriteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriteError::MaskData => write!(f, "mask data exceeds 4 GiB"),
            WriteError::TooLarge(n) => write!(
                f,
                "the artifact would be {n} bytes, over the 4 GiB the format addresses"
            ),
            WriteError::States(n) => write!(
                f,
                "the machine has {n} states, over the {} the format addresses",
                layout::MAX_STATES
            ),
            WriteError::Targets(s) => write!(
                f,
                "state {s} moves to more than {} distinct states, the most a row shape numbers",
                layout::shape::MAX_TARGETS
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WriteError {}

/// Words as their little-endian bytes (a section built as words).
#[cfg(feature = "std")]
pub(crate) fn le_bytes(words: &[u32]) -> std::vec::Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Collects the sections' bytes in id order, each padded to a word.
#[cfg(feature = "std")]
pub(crate) struct Writer {
    body: std::vec::Vec<u8>,
    lens: [usize; layout::SECTION_COUNT],
    next: u32,
}

#[cfg(feature = "std")]
impl Writer {
    pub(crate) fn bytes(&mut self, id: u32, bytes: &[u8]) {
        self.byte_parts(id, &[bytes]);
    }

    /// One byte section written from consecutive parts.
    pub(crate) fn byte_parts(&mut self, id: u32, parts: &[&[u8]]) {
        debug_assert_eq!(id, self.next + 1, "sections are written in id order");
        self.next = id;
        self.lens[id as usize - 1] = parts.iter().map(|p| p.len()).sum();
        for p in parts {
            self.body.extend_from_slice(p);
        }
        self.body.resize(layout::pad4(self.body.len()), 0);
    }

    pub(crate) fn words(&mut self, id: u32, words: &[u32]) {
        debug_assert_eq!(id, self.next + 1, "sections are written in id order");
        self.next = id;
        self.lens[id as usize - 1] = 4 * words.len();
        self.body.reserve(4 * words.len());
        for w in words {
            self.body.extend_from_slice(&w.to_le_bytes());
        }
    }
}

#[cfg(feature = "std")]
impl Payload<'_> {
    /// The payload's bytes: the header (its counts taken from the
    /// sections), the section table, the sections in id order, and the
    /// checksum stamped last.
    pub fn to_bytes(&self) -> Result<std::vec::Vec<u8>, WriteError> {
        use layout::{HEADER_WORDS, SECTION_COUNT};
        let mut w = Writer {
            body: std::vec::Vec::new(),
            lens: [0; SECTION_COUNT],
            next: 0,
        };
        self.dfa.write(&mut w);
        self.masks.write(&mut w);
        self.tokens.write(&mut w);
        w.bytes(layout::sec::META, self.meta);
        self.entries.write(&mut w);
        self.budget.write(&mut w);
        self.tools.write(&mut w);
        self.stop_tokens.write(&mut w);
        self.loops.write(&mut w);
        let (table, total) = Table::layout(w.lens);
        let total = u32::try_from(total).map_err(|_| WriteError::TooLarge(total as u64))?;
        let counts = Counts {
            n_tokens: self.tokens.count(),
            n_states: self.dfa.n_states(),
            n_classes: self.dfa.n_classes,
            n_masks: self.masks.count(),
            n_eos: self.tokens.eos.len(),
        };
        let header = self.header.words(&counts, total);
        let mut out = std::vec::Vec::with_capacity(total as usize);
        for word in header.iter().chain(&table) {
            out.extend_from_slice(&word.to_le_bytes());
        }
        debug_assert_eq!(out.len(), (HEADER_WORDS + 3 * SECTION_COUNT) * 4);
        out.extend_from_slice(&w.body);
        debug_assert_eq!(out.len(), total as usize);
        header::stamp_checksum(&mut out);
        Ok(out)
    }
}
