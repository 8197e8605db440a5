//! The entry points: ENTRIES and ENTRY_NAMES.

use super::header::Counts;
use super::layout::{self, sec};
use super::Source;
use crate::error::{Error, ErrorKind};

/// Per entry point its start state and the range of its name in `names`;
/// the first entry is the default, at the header's start state.
#[derive(Clone, Copy, Debug)]
pub struct Entries<'a> {
    /// ENTRIES: `(state, name offset, name length)` per entry.
    pub table: &'a [u32],
    /// ENTRY_NAMES: the names, UTF-8, concatenated.
    pub names: &'a [u8],
}

impl<'a> Entries<'a> {
    /// Reads and checks both sections: one or more whole triples, each
    /// state live and below the state count, the first the start state
    /// (stopping after its first call or not), each name inside
    /// ENTRY_NAMES and UTF-8.
    pub(crate) fn read(src: &Source<'a>, start: u32, c: &Counts) -> Result<Self, Error> {
        let table = src.words(sec::ENTRIES, None)?;
        let names = src.bytes(sec::ENTRY_NAMES);
        if table.is_empty() || table.len() % 3 != 0 {
            return Err(Error::section(
                sec::ENTRIES,
                "is not one or more (state, name offset, name length) triples",
            ));
        }
        for (i, e) in table.chunks_exact(3).enumerate() {
            let (state, off, len) = (e[0] & !layout::ENTRY_STOPS, e[1] as usize, e[2] as usize);
            if state == layout::DEAD_STATE || state as usize >= c.n_states {
                return Err(Error::range(
                    "entry state",
                    i as u64,
                    state as u64,
                    c.n_states as u64,
                ));
            }
            if i == 0 && state != start {
                return Err(Error::field(
                    "state of the first entry (the start state)",
                    start as u64,
                    e[0] as u64,
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
        Ok(Entries { table, names })
    }

    /// Whether the default entry stops after its first call.
    pub(crate) fn default_stops(&self) -> bool {
        self.table
            .first()
            .is_some_and(|&w| w & layout::ENTRY_STOPS != 0)
    }

    /// `(name, start state)` per entry, the default first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        self.iter_stops().map(|(name, state, _)| (name, state))
    }

    /// `(name, start state, stops after its first call)` per entry, the
    /// default first.
    pub(crate) fn iter_stops(&self) -> impl Iterator<Item = (&'a str, u32, bool)> + 'a {
        let names = self.names;
        self.table.chunks_exact(3).map(move |e| {
            let (off, len) = (e[1] as usize, e[2] as usize);
            // The loader checked each name's range and UTF-8.
            let name = names
                .get(off..off.saturating_add(len))
                .and_then(|n| core::str::from_utf8(n).ok())
                .unwrap_or("");
            let stops = e[0] & layout::ENTRY_STOPS != 0;
            (name, e[0] & !layout::ENTRY_STOPS, stops)
        })
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::ENTRIES, self.table);
        out.bytes(sec::ENTRY_NAMES, self.names);
    }
}

/// Builds ENTRIES and ENTRY_NAMES, the default entry first.
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct EntriesBuilder {
    table: std::vec::Vec<u32>,
    names: std::vec::Vec<u8>,
}

#[cfg(feature = "std")]
impl EntriesBuilder {
    /// No entries yet.
    pub fn new() -> EntriesBuilder {
        EntriesBuilder::default()
    }

    /// Appends entry `name`, starting at `state`; `stops`: it stops after
    /// its first call ([`layout::ENTRY_STOPS`]).
    pub fn push(&mut self, name: &str, state: u32, stops: bool) {
        let word = state | if stops { layout::ENTRY_STOPS } else { 0 };
        self.table
            .extend([word, self.names.len() as u32, name.len() as u32]);
        self.names.extend_from_slice(name.as_bytes());
    }

    /// The sections as built.
    pub fn entries(&self) -> Entries<'_> {
        Entries {
            table: &self.table,
            names: &self.names,
        }
    }
}
