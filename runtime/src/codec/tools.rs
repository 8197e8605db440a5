//! TOOLS: what a matcher restricted to one tool reads (OpenAI's
//! `tool_choice` naming a function). Optional: an artifact without it
//! (written before it existed, or for a grammar with no tool-name trie)
//! loads and serves as before and refuses restriction.
//!
//! Words, little-endian, then the names' bytes:
//!
//! | words | what |
//! |---|---|
//! | 5 | `n_tools`, flags (bit 0: per-tool distances present), `n_classes`, `dist_words`, `names_len` |
//! | `n_tools` | rank of each tool (its place in the order the classes' ranges count in) |
//! | `n_tools + 1` | byte offsets of each tool's name in the names |
//! | column | per state `(gates, colour)`: two gate bits (bit 0 the gate, bit 1 the budget gate), then its colour (0 = not in a tool name); a [column](super::column) of `n_states` values, `split` 2 |
//! | `n_classes + 1` | word offsets of each colour's data in the class data |
//! | class data | per colour: `n_live`, `n_end`, `live_total`, then `n_live + n_end` rank ranges `[lo, hi)` |
//! | `n_states` (flag) | per state the first word of its row in the distance data, or `NO_ROW` |
//! | `n_states` (flag) | per state its tool top: the largest distance, over tools and allowed tokens, of the state a token leads to |
//! | `dist_words` (flag) | the rows: per tool (a coloured state: per tool of its live ranges, in order) its distance |
//! | bytes | the names, UTF-8, concatenated, padded to a word |
//!
//! A one-tool matcher for tool `t` (rank `r`) may move on a byte from `q`
//! to `q'` only if `r` is in `q'`'s live ranges when `q'` is coloured, and
//! in `q`'s end ranges when `q` is coloured and `q'` is not. The gate bit
//! says that some token the state allows passes such a check or ends in a
//! state whose distance for some tool differs from its distance; at other
//! states the stored mask is the one-tool mask.

use super::column::{self, Column};
use super::header::Counts;
use super::layout::{sec, NO_DISTANCE};
use super::Source;
use crate::error::{Error, ErrorKind};

/// A state's gate bit (of its low field): some token the state allows
/// passes a name state (or ends where some tool cannot finish): a
/// one-tool matcher filters the mask.
pub const GATE: u32 = 1;
/// A state's budget gate bit: some token the state allows ends in a state
/// with a distance row: a one-tool matcher with a budget filters the mask
/// when the tokens left are below the state's tool top.
pub const GATE_BUDGET: u32 = 2;
/// The width of a state's gate bits, below its colour.
const GATE_BITS: u32 = 2;
/// A distance index word for a state with no row (its distance for every
/// tool is its DISTANCE).
pub const NO_ROW: u32 = u32::MAX;
/// Flag bit: per-tool distances are present.
pub const HAS_DISTANCES: u32 = 1;
const HEAD: usize = 5;

/// The TOOLS section, borrowed; empty (`words` empty) when the artifact
/// has none.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tools<'a> {
    /// The section's words (names included, as words).
    pub words: &'a [u32],
    /// The section's bytes (the same storage).
    pub bytes: &'a [u8],
}

/// The parts of a validated section, as offsets into its words.
#[derive(Clone, Copy, Debug)]
struct Parts {
    n_tools: usize,
    flags: u32,
    n_classes: usize,
    rank: usize,
    name_off: usize,
    state: usize,
    class_index: usize,
    class_data: usize,
    dist_index: usize,
    dist_data: usize,
    dist_words: usize,
    names: usize,
    names_len: usize,
    /// The state count (the tool-top table follows the row index).
    n_states_words: usize,
}

impl Parts {
    /// The states' column, from the section's bytes.
    #[inline]
    fn states<'a>(&self, bytes: &'a [u8]) -> Column<'a> {
        Column::view(bytes, 4 * self.state)
    }
}

impl<'a> Tools<'a> {
    /// Reads and checks the section (absent: empty).
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let words = src.words(sec::TOOLS, None)?;
        let t = Tools {
            words,
            bytes: src.bytes(sec::TOOLS),
        };
        if !words.is_empty() {
            t.check(c.n_states)?;
        }
        Ok(t)
    }

    /// Whether the artifact has the section.
    #[inline]
    pub fn present(&self) -> bool {
        !self.words.is_empty()
    }

    fn parts(&self, n_states: usize) -> Option<Parts> {
        let w = self.words;
        if w.len() < HEAD {
            return None;
        }
        let n_tools = w[0] as usize;
        let flags = w[1];
        let n_classes = w[2] as usize;
        let dist_words = w[3] as usize;
        let names_len = w[4] as usize;
        let rank = HEAD;
        let name_off = rank.checked_add(n_tools)?;
        let state = name_off.checked_add(n_tools)?.checked_add(1)?;
        let width = *w.get(state)? & 0xFF;
        let class_index = state.checked_add(column::words(n_states, width)?)?;
        let class_data = class_index.checked_add(n_classes)?.checked_add(1)?;
        let data_len = *w.get(class_data - 1)? as usize;
        let after_classes = class_data.checked_add(data_len)?;
        let (dist_index, dist_data, after) = if flags & HAS_DISTANCES != 0 {
            let di = after_classes;
            let dd = di.checked_add(n_states)?.checked_add(n_states)?;
            (di, dd, dd.checked_add(dist_words)?)
        } else {
            (after_classes, after_classes, after_classes)
        };
        Some(Parts {
            n_tools,
            flags,
            n_classes,
            rank,
            name_off,
            state,
            class_index,
            class_data,
            dist_index,
            dist_data,
            dist_words,
            names: after,
            names_len,
            n_states_words: n_states,
        })
    }

    fn check(&self, n_states: usize) -> Result<(), Error> {
        let bad = |why| Error::section(sec::TOOLS, why);
        let p = self
            .parts(n_states)
            .ok_or(bad("is shorter than its counts say"))?;
        let w = self.words;
        let names_words = p.names_len.div_ceil(4);
        if p.names.checked_add(names_words) != Some(w.len()) {
            return Err(bad("does not end where its counts say"));
        }
        if p.n_tools == 0 || p.n_classes == 0 || p.flags & !HAS_DISTANCES != 0 {
            return Err(bad("has no tools, no colours or unknown flags"));
        }
        let n_tools = p.n_tools as u32;
        if w[p.rank..p.rank + p.n_tools].iter().any(|&r| r >= n_tools) {
            return Err(bad("ranks a tool past the tool count"));
        }
        // Names: offsets from 0, ascending, ending at the names' length.
        let offs = &w[p.name_off..p.name_off + p.n_tools + 1];
        if offs[0] != 0
            || offs.windows(2).any(|x| x[0] > x[1])
            || offs[p.n_tools] as usize != p.names_len
        {
            return Err(bad("has name offsets out of order"));
        }
        let names = &self.bytes[4 * p.names..4 * p.names + p.names_len];
        if core::str::from_utf8(names).is_err() {
            return Err(Error::new(ErrorKind::Utf8));
        }
        // Colours: offsets ascending inside the data, each well formed.
        let idx = &w[p.class_index..p.class_index + p.n_classes + 1];
        let data_len = idx[p.n_classes] as usize;
        if idx[0] != 0 {
            return Err(bad("has class offsets that do not start at 0"));
        }
        for c in 0..p.n_classes {
            let (a, z) = (idx[c] as usize, idx[c + 1] as usize);
            if z < a.saturating_add(3) || z > data_len {
                return Err(bad("has a colour outside its data"));
            }
            let d = &w[p.class_data + a..p.class_data + z];
            let (n_live, n_end, total) = (d[0] as usize, d[1] as usize, d[2]);
            if Some(z - a) != n_live.checked_add(n_end).map(|n| 3 + 2 * n) {
                return Err(bad("has a colour of the wrong length"));
            }
            let mut sum: u64 = 0;
            for (i, r) in d[3..].chunks_exact(2).enumerate() {
                if r[0] >= r[1] || r[1] > n_tools {
                    return Err(bad("has an empty or out-of-range tool range"));
                }
                if i < n_live {
                    sum += (r[1] - r[0]) as u64;
                }
            }
            if sum != total as u64 {
                return Err(bad("has a colour whose live total is wrong"));
            }
        }
        let states = Column::read(self.bytes, 4 * p.state, sec::TOOLS)?;
        if states.len() != n_states || states.split() != GATE_BITS {
            return Err(bad("does not have one colour and gate pair per state"));
        }
        if states.pairs().any(|(_, c)| c as usize >= p.n_classes) {
            return Err(bad("gives a state a colour past the colour count"));
        }
        if states.pair(0).1 != 0 {
            return Err(bad("colours the dead state"));
        }
        if p.flags & HAS_DISTANCES != 0 {
            for s in 0..n_states {
                let row = w[p.dist_index + s];
                if row == NO_ROW {
                    continue;
                }
                let len = self.row_len_in(&p, states, s);
                if (row as usize)
                    .checked_add(len)
                    .is_none_or(|e| e > p.dist_words)
                {
                    return Err(Error::range(
                        "tool distance row of state",
                        s as u64,
                        row as u64,
                        p.dist_words as u64,
                    ));
                }
            }
        }
        Ok(())
    }

    fn row_len_in(&self, p: &Parts, states: Column<'_>, s: usize) -> usize {
        let c = states.pair(s).1 as usize;
        if c == 0 {
            p.n_tools
        } else {
            let a = self.words[p.class_index + c] as usize;
            self.words[p.class_data + a + 2] as usize
        }
    }

    /// The number of tools (0 without the section).
    #[inline]
    pub fn count(&self) -> u32 {
        self.words.first().copied().unwrap_or(0)
    }

    /// Whether the section holds per-tool distances (a budget can be
    /// served to a one-tool matcher).
    pub fn has_distances(&self) -> bool {
        self.words.get(1).is_some_and(|f| f & HAS_DISTANCES != 0)
    }

    /// Tool `i`'s name.
    pub fn name(&self, i: u32, n_states: usize) -> Option<&'a str> {
        let p = self.parts(n_states)?;
        if i as usize >= p.n_tools {
            return None;
        }
        let a = self.words[p.name_off + i as usize] as usize;
        let z = self.words[p.name_off + i as usize + 1] as usize;
        let base = 4 * p.names;
        core::str::from_utf8(self.bytes.get(base + a..base + z)?).ok()
    }

    /// The index of the tool named `name`.
    pub fn index(&self, name: &str, n_states: usize) -> Option<u32> {
        (0..self.count()).find(|&i| self.name(i, n_states) == Some(name))
    }

    /// A view for serving tool `tool` (checked in range).
    #[inline]
    pub(crate) fn view(&self, n_states: usize, tool: u32) -> Option<ToolView<'a>> {
        let p = self.parts(n_states)?;
        let rank = *self.words.get(p.rank + tool as usize)?;
        Some(ToolView {
            w: self.words,
            states: p.states(self.bytes),
            p,
            rank,
        })
    }

    /// The sections' bytes (nothing when absent).
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::TOOLS, self.words);
    }
}

/// The section as one tool's matcher reads it (valid: read checked it).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ToolView<'a> {
    w: &'a [u32],
    /// Per state `(gates, colour)`.
    states: Column<'a>,
    p: Parts,
    rank: u32,
}

impl ToolView<'_> {
    #[inline]
    fn color(&self, s: u32) -> usize {
        self.states.pair(s as usize).1 as usize
    }

    /// Whether `s`'s mask must be filtered for this tool with `left` tokens
    /// left (`u32::MAX`: no budget).
    #[inline]
    pub(crate) fn gated(&self, s: u32, left: u32) -> bool {
        let gates = self.states.pair(s as usize).0;
        if gates & GATE != 0 {
            return true;
        }
        if gates & GATE_BUDGET == 0 || left == u32::MAX || self.p.flags & HAS_DISTANCES == 0 {
            return false;
        }
        let top = self.w[self.p.dist_index + self.p.n_states_words + s as usize];
        left.saturating_sub(1) < top
    }

    /// Colour `c`'s `(live, end)` ranges.
    #[inline]
    fn ranges(&self, c: usize) -> (&[u32], &[u32]) {
        let a = self.w[self.p.class_index + c] as usize;
        let d = &self.w[self.p.class_data + a..];
        let (n_live, n_end) = (d[0] as usize, d[1] as usize);
        (
            &d[3..3 + 2 * n_live],
            &d[3 + 2 * n_live..3 + 2 * (n_live + n_end)],
        )
    }

    #[inline]
    fn within(ranges: &[u32], r: u32) -> bool {
        ranges.chunks_exact(2).any(|x| x[0] <= r && r < x[1])
    }

    /// Whether the move `from -> to` on one byte keeps the output inside
    /// this tool's calls.
    #[inline]
    pub(crate) fn step(&self, from: u32, to: u32) -> bool {
        let ct = self.color(to);
        if ct != 0 {
            return Self::within(self.ranges(ct).0, self.rank);
        }
        let cf = self.color(from);
        cf == 0 || Self::within(self.ranges(cf).1, self.rank)
    }

    /// This tool's distance at `s`, given its distance `dist` over all
    /// tools: the row's entry where the state has one. Without distances
    /// in the section, `dist`.
    #[inline]
    pub(crate) fn distance(&self, s: u32, dist: u32) -> u32 {
        if self.p.flags & HAS_DISTANCES == 0 {
            return dist;
        }
        let row = self.w[self.p.dist_index + s as usize];
        if row == NO_ROW {
            return dist;
        }
        let c = self.color(s);
        let at = if c == 0 {
            self.rank as usize
        } else {
            let mut at = 0usize;
            let mut found = None;
            for x in self.ranges(c).0.chunks_exact(2) {
                if x[0] <= self.rank && self.rank < x[1] {
                    found = Some(at + (self.rank - x[0]) as usize);
                    break;
                }
                at += (x[1] - x[0]) as usize;
            }
            match found {
                Some(a) => a,
                None => return NO_DISTANCE,
            }
        };
        self.w
            .get(self.p.dist_data + row as usize + at)
            .copied()
            .unwrap_or(NO_DISTANCE)
    }

    /// Whether the section holds distances.
    #[inline]
    pub(crate) fn has_distances(&self) -> bool {
        self.p.flags & HAS_DISTANCES != 0
    }
}

/// Builds the TOOLS section.
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct ToolsBuilder {
    words: std::vec::Vec<u32>,
    bytes: std::vec::Vec<u8>,
}

#[cfg(feature = "std")]
impl ToolsBuilder {
    /// The section for `names` (tool order), `rank` (each tool's place in
    /// the order ranges count in), per state its colour and gate bit,
    /// per colour (0 first: no name) its live and end rank ranges, and
    /// optionally per state a distance row (`None`: same as DISTANCE for
    /// every tool), each row as long as the state's live tools (all tools
    /// for colour 0), in rank order, and its tool top. A state is
    /// `(colour, gate, budget gate)`.
    #[allow(clippy::type_complexity)]
    pub fn new(
        names: &[&str],
        rank: &[u32],
        states: &[(u32, bool, bool)],
        classes: &[(std::vec::Vec<(u32, u32)>, std::vec::Vec<(u32, u32)>)],
        distances: Option<(&[Option<std::vec::Vec<u32>>], &[u32])>,
    ) -> ToolsBuilder {
        let mut data = std::vec::Vec::new();
        let mut index = std::vec![0u32];
        for (live, end) in classes {
            let total: u32 = live.iter().map(|r| r.1 - r.0).sum();
            data.extend([live.len() as u32, end.len() as u32, total]);
            for r in live.iter().chain(end) {
                data.extend([r.0, r.1]);
            }
            index.push(data.len() as u32);
        }
        let mut name_bytes = std::vec::Vec::new();
        let mut offs = std::vec![0u32];
        for n in names {
            name_bytes.extend_from_slice(n.as_bytes());
            offs.push(name_bytes.len() as u32);
        }
        let (mut dist_index, mut dist_data) = (std::vec::Vec::new(), std::vec::Vec::new());
        if let Some((rows, _)) = distances {
            for row in rows {
                match row {
                    None => dist_index.push(NO_ROW),
                    Some(r) => {
                        dist_index.push(dist_data.len() as u32);
                        dist_data.extend_from_slice(r);
                    }
                }
            }
        }
        let mut w = std::vec![
            names.len() as u32,
            if distances.is_some() {
                HAS_DISTANCES
            } else {
                0
            },
            classes.len() as u32,
            dist_data.len() as u32,
            name_bytes.len() as u32,
        ];
        w.extend_from_slice(rank);
        w.extend_from_slice(&offs);
        let states: std::vec::Vec<u64> = states
            .iter()
            .map(|&(c, g, b)| {
                let gates = if g { GATE } else { 0 } | if b { GATE_BUDGET } else { 0 };
                column::join(gates, c, GATE_BITS)
            })
            .collect();
        column::push(&mut w, &states, GATE_BITS);
        w.extend_from_slice(&index);
        w.extend_from_slice(&data);
        w.extend_from_slice(&dist_index);
        if let Some((_, top)) = distances {
            w.extend_from_slice(top);
        }
        w.extend_from_slice(&dist_data);
        name_bytes.resize(super::layout::pad4(name_bytes.len()), 0);
        w.extend(
            name_bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
        ToolsBuilder {
            bytes: super::le_bytes(&w),
            words: w,
        }
    }

    /// The section as built.
    pub fn tools(&self) -> Tools<'_> {
        Tools {
            words: &self.words,
            bytes: &self.bytes,
        }
    }
}
