//! Compile errors: each says what went wrong and where (file, tool, JSON
//! pointer, line:column) in one message, with a kind for programs to match.

use std::fmt;

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
}

/// A compile error.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with its message (what went wrong and, where one exists, the fix).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
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

/// A size bound that the automaton construction exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The NFA exceeded this many states (`--max-nfa-states`).
    NfaStates(usize),
    /// The DFA exceeded this many states (`--max-states`).
    DfaStates(usize),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::NfaStates(n) => write!(f, "the NFA exceeds {n} states (raise --max-nfa-states)"),
            Limit::DfaStates(n) => write!(f, "the DFA exceeds {n} states (raise --max-states)"),
        }
    }
}

impl From<Limit> for Error {
    fn from(l: Limit) -> Error {
        Error::new(ErrorKind::Limit, format!("grammar too large: {l}"))
    }
}
