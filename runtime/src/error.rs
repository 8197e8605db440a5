//! Load errors. Every malformed, truncated or mismatched input maps to one of
//! these; nothing in the loader panics.

use core::fmt;

/// Why an artifact could not be loaded.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug)]
pub(crate) enum ErrorKind {
    /// The buffer is shorter than what it must hold.
    TooShort {
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// The buffer does not start on a 4-byte boundary.
    Alignment,
    /// The first eight bytes are not the artifact label.
    Magic,
    /// The payload is a zstd frame; `Grammar::from_bytes` takes raw payloads.
    Compressed,
    /// Written on a machine of the other byte order, or read on a big-endian one.
    Endianness,
    /// A format version this runtime does not read.
    Version { found: u32 },
    /// The version word differs from this runtime's version, but the
    /// payload's checksum holds for this runtime's version: a damaged byte.
    VersionDamaged { found: u32 },
    /// A checksum does not match: the bytes were damaged after writing.
    Corrupt {
        part: Part,
        computed: u32,
        stored: u32,
    },
    /// The file is shorter than its envelope says.
    Truncated { says: u64, has: u64 },
    /// The file is longer than its envelope says.
    Trailing { says: u64, has: u64 },
    /// The artifact was compiled for another vocabulary: its label, and
    /// the first bytes of both fingerprints (what the message shows; the
    /// whole of them would make every `Result` of this crate larger).
    Vocabulary {
        label: Label,
        artifact: [u8; 8],
        given: [u8; 8],
    },
    /// The model's logits are narrower than the artifact's masks.
    LogitsWidth { logits: u64, vocab: u32 },
    /// A field does not have the value the rest of the payload requires.
    Field {
        what: &'static str,
        expected: u64,
        found: u64,
    },
    /// A field is out of the range it must lie in.
    Range {
        what: &'static str,
        index: u64,
        value: u64,
        limit: u64,
    },
    /// A section is missing, misplaced or overlaps another.
    Section { id: u32, why: &'static str },
    /// A token list in a mask is not strictly ascending.
    Order { mask: u32 },
    /// A delta mask's base is itself a delta.
    DeltaChain { mask: u32 },
    /// A budget profile's tiers are not below its top tier.
    TierOrder { profile: u32 },
    /// A state with no distance has budget tiers.
    Untiered { state: u32 },
    /// TIERS is not a sequence of lists, each after its head pair, with
    /// ascending `k`s.
    TierList { pair: u32, why: &'static str },
    /// A budget profile's tiers are not one whole list of TIERS.
    TierRef { profile: u32 },
    /// A matcher was asked for a budget below what the output needs.
    Budget { need: u32, budget: u32 },
    /// A matcher was asked for an entry point the format does not have.
    NoEntry,
    /// A one-tool matcher cannot be made: why (no TOOLS section, no such
    /// tool, no per-tool distances for a budget).
    Restrict { why: &'static str },
    /// The metadata section is not UTF-8.
    Utf8,
    /// The artifact was built for a different vocabulary.
    Mismatch { what: &'static str },
    /// The file could not be read.
    #[cfg(feature = "std")]
    Io(std::io::Error),
    /// zstd refused the compressed data.
    #[cfg(feature = "zstd")]
    Decompress(std::io::Error),
    /// The artifact is compressed and this build cannot decompress it.
    #[cfg(all(feature = "std", not(feature = "zstd")))]
    NoZstd,
    /// A compressed artifact claims to expand past the limit.
    TooLarge { limit: u64, found: u64 },
}

/// The part of an artifact a checksum covers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Part {
    /// The payload (header word 22).
    Payload { len: u64 },
    /// The envelope of a compressed file (its bytes 0-39).
    Envelope,
    /// The zstd frame after the envelope.
    Data { start: u64, end: u64 },
}

/// A vocabulary label read from META, kept inline (no allocator): its
/// first [`Label::CAP`] bytes of UTF-8, whole characters only.
#[derive(Clone, Copy)]
pub(crate) struct Label {
    bytes: [u8; Label::CAP],
    len: u8,
    cut: bool,
    present: bool,
}

impl Label {
    pub(crate) const CAP: usize = 96;

    /// No label (the metadata has none).
    pub(crate) const NONE: Label = Label {
        bytes: [0; Label::CAP],
        len: 0,
        cut: false,
        present: false,
    };

    /// An empty label, present.
    pub(crate) const fn empty() -> Label {
        Label {
            present: true,
            ..Label::NONE
        }
    }

    /// Appends `c`, or marks the label cut when it does not fit.
    pub(crate) fn push(&mut self, c: char) {
        let len = self.len as usize;
        if self.cut || len + c.len_utf8() > Label::CAP {
            self.cut = true;
            return;
        }
        c.encode_utf8(&mut self.bytes[len..]);
        self.len += c.len_utf8() as u8;
    }

    /// `s` as a label (cut, with an ellipsis, past [`Label::CAP`] bytes).
    pub(crate) fn of(s: &str) -> Label {
        let mut label = Label::empty();
        for c in s.chars() {
            label.push(c);
        }
        label
    }

    fn as_str(&self) -> Option<&str> {
        if !self.present {
            return None;
        }
        core::str::from_utf8(&self.bytes[..self.len as usize]).ok()
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_str() {
            Some(s) => write!(f, "Some({s:?})"),
            None => write!(f, "None"),
        }
    }
}

/// The first bytes of a fingerprint in hex, then an ellipsis.
struct Short<'a>(&'a [u8; 8]);

impl fmt::Display for Short<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, "\u{2026}")
    }
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Error {
        Error { kind }
    }
    pub(crate) fn short(what: &'static str, need: usize, have: usize) -> Error {
        Error::new(ErrorKind::TooShort { what, need, have })
    }
    pub(crate) fn field(what: &'static str, expected: u64, found: u64) -> Error {
        Error::new(ErrorKind::Field {
            what,
            expected,
            found,
        })
    }
    pub(crate) fn range(what: &'static str, index: u64, value: u64, limit: u64) -> Error {
        Error::new(ErrorKind::Range {
            what,
            index,
            value,
            limit,
        })
    }
    pub(crate) fn section(id: u32, why: &'static str) -> Error {
        Error::new(ErrorKind::Section { id, why })
    }
    /// Builds the error a caller returns when an artifact does not match the
    /// vocabulary it is used with (for example a different fingerprint).
    pub fn vocabulary_mismatch(what: &'static str) -> Error {
        Error::new(ErrorKind::Mismatch { what })
    }

    /// Whether this is a vocabulary error
    /// ([`crate::Grammar::check_vocabulary`]).
    pub fn is_vocabulary_mismatch(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Vocabulary { .. } | ErrorKind::Mismatch { .. }
        )
    }

    /// For a version error: the format version the artifact says it has.
    pub fn artifact_version(&self) -> Option<u32> {
        match self.kind {
            ErrorKind::Version { found } => Some(found),
            _ => None,
        }
    }

    /// Whether the input was refused because a checksum does not match
    /// (the bytes were damaged or edited after they were written).
    pub fn is_corrupt(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::Corrupt { .. } | ErrorKind::VersionDamaged { .. }
        )
    }

    /// For a budget error ([`crate::Grammar::matcher_with_budget`]): the
    /// fewest tokens the output needs, and the budget that was given.
    pub fn budget_shortfall(&self) -> Option<(u32, u32)> {
        match self.kind {
            ErrorKind::Budget { need, budget } => Some((need, budget)),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match &self.kind {
            TooShort { .. } | Alignment | Magic | Compressed | Endianness | Version { .. } => {
                self.fmt_envelope(f)
            }
            Corrupt {
                part,
                computed,
                stored,
            } => fmt_corrupt(f, *part, *computed, *stored),
            VersionDamaged { found } => write!(
                f,
                "corrupt artifact: the header's version word reads {found}, but the payload's \
                 checksum holds for version {}: the version word was damaged",
                crate::layout::VERSION
            ),
            Vocabulary {
                label,
                artifact,
                given,
            } => fmt_vocabulary(f, label, artifact, given),
            LogitsWidth { logits, vocab } => write!(
                f,
                "the model's logits width {logits} is smaller than the artifact's vocab size \
                 {vocab}: compile the artifact with --vocab-size {logits}, or for the model it \
                 serves"
            ),
            Budget { need, budget } if *need == crate::layout::NO_DISTANCE => write!(
                f,
                "token budget {budget}: no sequence of tokens completes the output from here"
            ),
            Budget { need, budget } => write!(
                f,
                "token budget {budget} is too small: the shortest complete output from here takes {need} tokens"
            ),
            NoEntry => write!(f, "the artifact's format has no such entry point"),
            Restrict { why } => write!(f, "cannot restrict the matcher to one tool: {why}"),
            Mismatch { what } => write!(f, "vocabulary mismatch: {what}"),
            Field { .. }
            | Range { .. }
            | Section { .. }
            | Order { .. }
            | DeltaChain { .. }
            | TierOrder { .. }
            | Untiered { .. }
            | TierList { .. }
            | TierRef { .. }
            | Utf8 => self.fmt_structure(f),
            Truncated { .. } | Trailing { .. } | TooLarge { .. } => self.fmt_file(f),
            #[cfg(feature = "std")]
            Io(_) => self.fmt_file(f),
            #[cfg(all(feature = "std", not(feature = "zstd")))]
            NoZstd => self.fmt_file(f),
            #[cfg(feature = "zstd")]
            Decompress(_) => self.fmt_file(f),
        }
    }
}

impl Error {
    /// What the first bytes say: too short, misaligned, not an artifact,
    /// compressed, another byte order or version.
    fn fmt_envelope(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match &self.kind {
            TooShort { what, need, have } => write!(
                f,
                "artifact truncated: {what} needs {need} bytes, only {have} present"
            ),
            Alignment => write!(
                f,
                "alignment mismatch: the artifact buffer must start on a 4-byte boundary \
                 (copy it into a Vec<u32>, or use Artifact::from_bytes)"
            ),
            Magic => write!(f, "not a tooldec artifact: the label TOOLDEC\\0 is missing"),
            Compressed => write!(
                f,
                "the artifact is zstd-compressed: decompress it first, use Artifact::open \
                 (zstd feature), or compile with --uncompressed"
            ),
            Endianness => write!(
                f,
                "endianness mismatch: artifacts are little-endian and this reader cannot use them"
            ),
            Version { found } => {
                let v = crate::layout::VERSION;
                write!(
                    f,
                    "artifact format version {found}; this runtime reads version {v}"
                )?;
                if *found < v {
                    write!(
                        f,
                        " (recompile the artifact with this release's tooldec-compile)"
                    )
                } else {
                    write!(f, " (it needs a newer tooldec runtime)")
                }
            }
            // The other kinds are not formatted here (see `fmt`).
            _ => Ok(()),
        }
    }

    /// A section that breaks the layout's rules.
    fn fmt_structure(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match &self.kind {
            Field {
                what,
                expected,
                found,
            } => write!(
                f,
                "invalid artifact: {what} is {found}, expected {expected}"
            ),
            Range {
                what,
                index,
                value,
                limit,
            } => write!(
                f,
                "invalid artifact: {what} #{index} is {value}, must be below {limit}"
            ),
            Section { id, why } => write!(f, "invalid artifact: section {id} {why}"),
            Order { mask } => write!(
                f,
                "invalid artifact: token list of mask {mask} is not strictly ascending"
            ),
            DeltaChain { mask } => write!(
                f,
                "invalid artifact: the base of delta mask {mask} is itself a delta"
            ),
            TierOrder { profile } => write!(
                f,
                "invalid artifact: the budget tiers of profile {profile} (TIER_INDEX) do not \
                 stay below its top tier"
            ),
            Untiered { state } => write!(
                f,
                "invalid artifact: state {state} has budget tiers and no distance"
            ),
            TierList { pair, why } => {
                write!(
                    f,
                    "invalid artifact: pair {pair} of the budget tiers (TIERS) {why}"
                )
            }
            TierRef { profile } => write!(
                f,
                "invalid artifact: the budget tiers of profile {profile} (TIER_INDEX) are not \
                 one whole list of TIERS (a list starts after its head pair)"
            ),
            Utf8 => write!(f, "invalid artifact: the metadata section is not UTF-8"),
            // The other kinds are not formatted here (see `fmt`).
            _ => Ok(()),
        }
    }

    /// Reading and decompressing a file.
    fn fmt_file(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match &self.kind {
            Truncated { says, has } => write!(
                f,
                "artifact truncated: the artifact says {says} bytes, the file has {has}"
            ),
            Trailing { says, has } => write!(
                f,
                "invalid artifact: the artifact says {says} bytes, the file has {has} \
                 ({} bytes after its end)",
                has - says
            ),
            #[cfg(feature = "std")]
            Io(e) => write!(f, "cannot read artifact: {e}"),
            #[cfg(feature = "zstd")]
            Decompress(e) => write!(f, "cannot decompress artifact: {e}"),
            #[cfg(all(feature = "std", not(feature = "zstd")))]
            NoZstd => write!(
                f,
                "the artifact is zstd-compressed and this tooldec runtime was built without its \
                 `zstd` feature: enable the feature, decompress the file first (zstd -d), or \
                 compile with --uncompressed"
            ),
            TooLarge { limit, found } => write!(
                f,
                "artifact too large: it decompresses to {found} bytes, the limit is {limit}"
            ),
            // The other kinds are not formatted here (see `fmt`).
            _ => Ok(()),
        }
    }
}

/// A checksum that does not match, and which bytes it covers.
fn fmt_corrupt(f: &mut fmt::Formatter<'_>, part: Part, computed: u32, stored: u32) -> fmt::Result {
    write!(f, "corrupt artifact: ")?;
    match part {
        Part::Payload { len } => write!(
            f,
            "the CRC-32C of the {len}-byte payload is {computed:08x}, its header \
             (word 22) records {stored:08x}"
        )?,
        Part::Envelope => write!(
            f,
            "the envelope (bytes 0-39) fails its CRC-32C check: computed \
             {computed:08x}, recorded {stored:08x}"
        )?,
        Part::Data { start, end } => write!(
            f,
            "the compressed data (bytes {start}-{}) has CRC-32C {computed:08x}, \
             the envelope records {stored:08x}",
            end - 1
        )?,
    }
    write!(f, "; the file was damaged or edited after it was written")
}

/// The vocabulary an artifact was compiled for against the one given.
fn fmt_vocabulary(
    f: &mut fmt::Formatter<'_>,
    label: &Label,
    artifact: &[u8; 8],
    given: &[u8; 8],
) -> fmt::Result {
    write!(f, "artifact was compiled for ")?;
    match label.as_str() {
        Some(s) => {
            write!(f, "vocabulary \"{}", s.escape_debug())?;
            if label.cut {
                write!(f, "\u{2026}")?;
            }
            write!(f, "\" ")?;
        }
        None => write!(f, "another vocabulary ")?,
    }
    write!(
        f,
        "(sha256 {}), not this one (sha256 {})",
        Short(artifact),
        Short(given)
    )
}

#[cfg(feature = "std")]
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) => Some(e),
            #[cfg(feature = "zstd")]
            ErrorKind::Decompress(e) => Some(e),
            _ => None,
        }
    }
}
