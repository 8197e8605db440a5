//! Columns: a table's values stored at the width they need.
//!
//! Per-state tables (a state's row, its mask id, its distance) are most of
//! a large artifact, and their values are far narrower than a word: at
//! 10,000 distinct tools a mask id needs 16 bits, a distance 7, a budget
//! profile 15, a row's first target 22 and its shape 11. A column stores
//! `len` values of `width` bits (0 to [`MAX_WIDTH`]) packed little-endian
//! after a two-word head `[width | split << 8, len]`, and then two zero
//! words, so that every value is one unaligned 8-byte load, a shift and a
//! mask, with no bounds to find but the slice's. A value may hold two
//! fields, `lo | hi << split`, each at most 32 bits: one load serves both
//! (a state's first target and its shape; a distance and its profile).

use crate::error::Error;

/// The widest value a column stores: a value starting at any bit of a byte
/// still lies inside one 8-byte load.
pub const MAX_WIDTH: u32 = 57;
/// Words before a column's values: `width | split << 8`, then `len`.
pub const HEAD_WORDS: usize = 2;
/// Zero words after a column's values, so the last value's 8-byte load
/// stays inside the column.
pub const PAD_WORDS: usize = 2;

/// The words a column of `len` values of `width` bits takes, its head and
/// padding included (`None` past `usize`).
pub const fn words(len: usize, width: u32) -> Option<usize> {
    match len.checked_mul(width as usize) {
        Some(bits) => Some(bits.div_ceil(32) + HEAD_WORDS + PAD_WORDS),
        None => None,
    }
}

/// The bits a value up to `max` needs (0 for 0).
pub const fn bits(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// A column's head and where it lies in its section: what
/// [`Column::read`] learned, enough to view the column again with no load
/// from the payload (a served grammar is viewed again at every call).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The byte offset of the column's head in its section.
    at: usize,
    width: u32,
    split: u32,
    len: usize,
}

impl Head {
    /// The head at byte `at` of `section` (zeros where it is cut off),
    /// its width and split clamped to what a column can be.
    #[inline]
    fn load(section: &[u8], at: usize) -> Head {
        let word = |i: usize| {
            section
                .get(at.saturating_add(4 * i)..at.saturating_add(4 * i + 4))
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (head, len) = (word(0), word(1) as usize);
        Head {
            at,
            width: (head & 0xFF).min(MAX_WIDTH),
            split: (head >> 8).min(32),
            len,
        }
    }

    /// The byte offset just past the column in its section.
    #[inline]
    pub fn end(&self) -> usize {
        words(self.len, self.width)
            .map_or(usize::MAX, |w| w.saturating_mul(4))
            .saturating_add(self.at)
    }
}

/// A column, borrowed: its values' bytes (padding included) and its head.
#[derive(Clone, Copy, Debug, Default)]
pub struct Column<'a> {
    bytes: &'a [u8],
    head: Head,
}

impl<'a> Column<'a> {
    /// The column at byte `at` of section `id`'s bytes, checked: a whole
    /// head, a width of at most [`MAX_WIDTH`] whose fields each fit 32
    /// bits, and all of its words inside the section.
    pub(crate) fn read(section: &'a [u8], at: usize, id: u32) -> Result<Self, Error> {
        if section.len() < at.saturating_add(4 * HEAD_WORDS) {
            return Err(Error::section(id, "has a column shorter than its head"));
        }
        let word = |i: usize| {
            let b = &section[at + 4 * i..at + 4 * i + 4];
            u32::from_le_bytes([b[0], b[1], b[2], b[3]])
        };
        let (width, split) = (word(0) & 0xFF, word(0) >> 8);
        if width > MAX_WIDTH || split > width || split > 32 || width - split > 32 {
            return Err(Error::section(
                id,
                "has a column wider than 57 bits or with a field over 32",
            ));
        }
        let head = Head::load(section, at);
        if head.end() > section.len() {
            return Err(Error::section(id, "has a column that runs past its end"));
        }
        Ok(Column::at(section, head))
    }

    /// The column `head` describes in `section`, as [`Column::read`]
    /// checked it: constant time, no load from the section, never panics
    /// (a head that was not checked gives an empty or wrong column, never
    /// an out-of-bounds read).
    #[inline]
    pub(crate) fn at(section: &'a [u8], head: Head) -> Self {
        let body = head.at.saturating_add(4 * HEAD_WORDS);
        Column {
            bytes: section
                .get(body..head.end().min(section.len()))
                .unwrap_or_default(),
            head,
        }
    }

    /// The column at byte `at` of `section`, its head read from there.
    #[inline]
    pub(crate) fn view(section: &'a [u8], at: usize) -> Self {
        Column::at(section, Head::load(section, at))
    }

    /// Its head and place.
    #[inline]
    pub fn head(&self) -> Head {
        self.head
    }

    /// The byte offset just past the column in its section.
    #[inline]
    pub fn end(&self) -> usize {
        self.head.end()
    }

    /// The number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.head.len
    }

    /// Whether the column has no values.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.len == 0
    }

    /// The values' width in bits.
    pub fn width(&self) -> u32 {
        self.head.width
    }

    /// The width of a value's low field.
    pub fn split(&self) -> u32 {
        self.head.split
    }

    /// Value `i` (0 out of range).
    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        let bit = i.wrapping_mul(self.head.width as usize);
        let at = bit >> 3;
        match self.bytes.get(at..at.wrapping_add(8)) {
            Some(b) if i < self.head.len => {
                let w = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                (w >> (bit & 7)) & ((1u64 << self.head.width) - 1)
            }
            _ => 0,
        }
    }

    /// Value `i`'s two fields, `(lo, hi)` ((0, 0) out of range).
    #[inline]
    pub fn pair(&self, i: usize) -> (u32, u32) {
        let v = self.get(i);
        let lo = v & ((1u64 << self.head.split) - 1);
        (lo as u32, (v >> self.head.split) as u32)
    }

    /// Every value, in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        let c = *self;
        (0..c.head.len).map(move |i| c.get(i))
    }

    /// Every value's fields, in order.
    pub fn pairs(&self) -> impl Iterator<Item = (u32, u32)> + 'a {
        let c = *self;
        (0..c.head.len).map(move |i| c.pair(i))
    }
}

/// Appends a column of `values` to `out`: the narrowest width that holds
/// the largest (`lo | hi << split` values are given whole, with `split`
/// their low field's width), its head, the values and the padding.
#[cfg(feature = "std")]
pub fn push(out: &mut std::vec::Vec<u32>, values: &[u64], split: u32) {
    let max = values.iter().copied().max().unwrap_or(0);
    let width = bits(max).max(split);
    debug_assert!(width <= MAX_WIDTH && width - split <= 32 && split <= 32);
    let body = values.len() * width as usize;
    out.extend([width | split << 8, values.len() as u32]);
    let start = out.len();
    out.resize(start + body.div_ceil(32) + PAD_WORDS, 0);
    let words = &mut out[start..];
    for (i, &v) in values.iter().enumerate() {
        let bit = i * width as usize;
        let (w, shift) = (bit / 32, bit % 32);
        let wide = (v as u128) << shift;
        for (k, word) in words[w..].iter_mut().take(3).enumerate() {
            *word |= (wide >> (32 * k)) as u32;
        }
    }
}

/// `lo | hi << split`: a two-field value for [`push`].
#[inline]
pub const fn join(lo: u32, hi: u32, split: u32) -> u64 {
    lo as u64 | (hi as u64) << split
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn bytes(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn values_read_back_at_every_width() {
        for width in 0..=MAX_WIDTH {
            let max = if width == 0 { 0 } else { (1u64 << width) - 1 };
            let values: Vec<u64> = (0..300u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 3) & max)
                .chain([max])
                .collect();
            // Fields of at most 32 bits: wider values are two fields.
            let split = width.saturating_sub(32);
            let mut out = Vec::new();
            push(&mut out, &values, split);
            assert_eq!(out.len(), words(values.len(), width).unwrap());
            let b = bytes(&out);
            let col = Column::read(&b, 0, 0).unwrap();
            assert_eq!(col.end(), b.len());
            assert_eq!(col.width(), width);
            assert_eq!(col.iter().collect::<Vec<_>>(), values, "width {width}");
            assert_eq!(col.get(values.len()), 0);
        }
    }

    #[test]
    fn pairs_split_where_they_were_joined() {
        let values: Vec<u64> = (0..100u32).map(|i| join(i % 7, i * 1000, 3)).collect();
        let mut out = Vec::new();
        push(&mut out, &values, 3);
        out.push(0xABCD);
        let b = bytes(&out);
        let col = Column::read(&b, 0, 0).unwrap();
        assert_eq!(&b[col.end()..], &0xABCDu32.to_le_bytes());
        assert_eq!(
            Column::at(&b, col.head()).pairs().collect::<Vec<_>>(),
            col.pairs().collect::<Vec<_>>()
        );
        for i in 0..100 {
            assert_eq!(col.pair(i as usize), (i % 7, i * 1000));
        }
    }

    #[test]
    fn bad_heads_are_refused() {
        let b = bytes(&[58, 0, 0, 0]);
        assert!(Column::read(&b, 0, 0).is_err());
        let b = bytes(&[40, 0, 0, 0]);
        assert!(Column::read(&b, 0, 0).is_err(), "a 40-bit field");
        let b = bytes(&[8, 10, 0, 0]);
        assert!(Column::read(&b, 0, 0).is_err(), "past the section");
        assert!(Column::read(&bytes(&[8]), 0, 0).is_err());
        assert!(Column::read(&bytes(&[8, 0, 0, 0]), 4, 0).is_err());
        let short = bytes(&[8, 1_000_000, 0]);
        let col = Column::view(&short, 0);
        assert_eq!(col.get(999_999), 0);
    }
}
