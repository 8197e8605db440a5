//! Compile errors: each says what went wrong and where (file, tool, JSON
//! pointer, line:column) in one message, with a kind for programs to match.

use std::fmt;
use std::time::Duration;

use crate::limits::bytes_text;

/// What class of problem stopped the compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A file could not be read or written.
    Io,
    /// A file is not valid JSON.
    Json,
    /// The tool list does not have the expected shape.
    Spec,
    /// A schema uses a keyword or construct this compiler cannot express.
    Unsupported,
    /// A schema is contradictory or malformed.
    Schema,
    /// A bound (states, nesting depth, whitespace) was exceeded.
    Limit,
    /// The tokenizer cannot be used (unmappable tokens, unknown EOS, ...).
    Vocab,
    /// The grammar cannot be served with this vocabulary or is empty.
    Grammar,
    /// Invalid command-line options.
    Usage,
    /// A format file does not parse or is inconsistent.
    CallFormat,
    /// `--max-tokens` is below the fewest tokens a complete output needs.
    Budget,
    /// An artifact cannot be loaded, or lacks what a command asks of it.
    Artifact,
    /// The compile was cancelled from another thread
    /// ([`Cancel`](crate::limits::Cancel)).
    Cancelled,
}

/// A compile error.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    /// The bound behind an error of kind `Limit` or `Cancelled`.
    limit: Option<Limit>,
}

impl Error {
    /// An error of `kind` with its message (what went wrong and, where one exists, the fix).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            limit: None,
        }
    }

    /// The same error with another message (more said of where).
    pub fn with_message(mut self, message: impl Into<String>) -> Error {
        self.message = message.into();
        self
    }

    /// The bound that stopped the compile, for errors that come from one
    /// (sizes, time, memory, a cancel).
    pub fn limit(&self) -> Option<Limit> {
        self.limit
    }

    /// What kind of error it is (the command-line tools map it to an exit code).
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message, as `Display` writes it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// A bound that a compile exceeded: a size, its time or memory budget
/// ([`crate::limits`]), or a cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The NFA exceeded this many states (`--max-nfa-states`).
    NfaStates(usize),
    /// The DFA exceeded this many states (`--max-states`).
    DfaStates(usize),
    /// The compile ran past its time limit during `phase`.
    Time {
        /// The phase it was in.
        phase: &'static str,
        /// The limit.
        limit: Duration,
        /// The region of the grammar (`Nfa::regions`) the phase was
        /// building, where it knows one.
        region: Option<u32>,
    },
    /// What `phase` holds passed the memory budget.
    Memory {
        /// The phase it was in.
        phase: &'static str,
        /// What the phase held.
        bytes: usize,
        /// The budget.
        limit: usize,
        /// As for `Time`.
        region: Option<u32>,
    },
    /// The compile was cancelled during `phase`.
    Cancelled {
        /// The phase it was in.
        phase: &'static str,
    },
    /// The minimized machine outgrows what the artifact format addresses
    /// (its moves are packed as the format stores them).
    Layout(tooldec_runtime::codec::WriteError),
}

impl Limit {
    /// The same limit, found while building `region` of the grammar.
    pub fn in_region(self, at: u32) -> Limit {
        match self {
            Limit::Time { phase, limit, .. } => Limit::Time {
                phase,
                limit,
                region: Some(at),
            },
            Limit::Memory {
                phase,
                bytes,
                limit,
                ..
            } => Limit::Memory {
                phase,
                bytes,
                limit,
                region: Some(at),
            },
            other => other,
        }
    }

    /// The region of the grammar being built when the limit was met.
    pub fn region(&self) -> Option<u32> {
        match self {
            Limit::Time { region, .. } | Limit::Memory { region, .. } => *region,
            _ => None,
        }
    }

    /// A size or memory bound, which a part of the schemas may exceed on
    /// its own (so that blame can look for it); not time or a cancel.
    pub fn is_size(&self) -> bool {
        matches!(
            self,
            Limit::NfaStates(_) | Limit::DfaStates(_) | Limit::Memory { .. } | Limit::Layout(_)
        )
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::NfaStates(n) => write!(f, "the NFA exceeds {n} states (raise --max-nfa-states)"),
            Limit::DfaStates(n) => write!(f, "the DFA exceeds {n} states (raise --max-states)"),
            Limit::Time { phase, limit, .. } => write!(
                f,
                "the compile ran past its time limit of {} s during {phase} (raise --time-limit)",
                limit.as_secs_f64()
            ),
            Limit::Memory {
                phase,
                bytes,
                limit,
                ..
            } => write!(
                f,
                "{phase} needs more than the memory budget of {} ({} so far; raise --memory-limit)",
                bytes_text(*limit),
                bytes_text(*bytes)
            ),
            Limit::Cancelled { phase } => write!(f, "the compile was cancelled during {phase}"),
            Limit::Layout(e) => write!(f, "{e}"),
        }
    }
}

impl From<Limit> for Error {
    fn from(l: Limit) -> Error {
        let mut e = match l {
            Limit::Cancelled { .. } => Error::new(ErrorKind::Cancelled, l.to_string()),
            Limit::Time { .. } => Error::new(ErrorKind::Limit, format!("grammar too costly: {l}")),
            _ => Error::new(ErrorKind::Limit, format!("grammar too large: {l}")),
        };
        e.limit = Some(l);
        e
    }
}
