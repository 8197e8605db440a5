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
    /// A state's budget tiers are not strictly ascending below its top tier,
    /// or a state with no distance has tiers.
    TierOrder { state: u32 },
    /// A matcher was asked for a budget below what the output needs.
    Budget { need: u32, budget: u32 },
    /// A matcher was asked for an entry point the format does not have.
    NoEntry,
    /// The metadata section is not UTF-8.
    Utf8,
    /// The artifact was built for a different vocabulary.
    Mismatch { what: &'static str },
    #[cfg(feature = "std")]
    Io(std::io::Error),
    #[cfg(feature = "std")]
    Decompress(std::io::Error),
    #[cfg(feature = "std")]
    TooLarge { limit: u64, found: u64 },
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
                 (std feature), or compile with --uncompressed"
            ),
            Endianness => write!(
                f,
                "endianness mismatch: artifacts are little-endian and this reader cannot use them"
            ),
            Version { found } => write!(
                f,
                "unsupported artifact format version {found}: this runtime reads version {}",
                crate::layout::VERSION
            ),
            Field {
                what,
                expected,
                found,
            } => {
                write!(
                    f,
                    "invalid artifact: {what} is {found}, expected {expected}"
                )
            }
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
            TierOrder { state } => write!(
                f,
                "invalid artifact: the budget tiers of state {state} are not strictly ascending below its top tier, or it has tiers and no distance"
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
            Utf8 => write!(f, "invalid artifact: the metadata section is not UTF-8"),
            Mismatch { what } => write!(f, "vocabulary mismatch: {what}"),
            #[cfg(feature = "std")]
            Io(e) => write!(f, "cannot read artifact: {e}"),
            #[cfg(feature = "std")]
            Decompress(e) => write!(f, "cannot decompress artifact: {e}"),
            #[cfg(feature = "std")]
            TooLarge { limit, found } => write!(
                f,
                "artifact too large: it decompresses to {found} bytes, the limit is {limit}"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ErrorKind::Io(e) | ErrorKind::Decompress(e) => Some(e),
            _ => None,
        }
    }
}
