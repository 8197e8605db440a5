//! The stored masks: MASK_INDEX and MASK_DATA, and how each kind of mask
//! is filled and queried.

use super::header::Counts;
use super::layout::{kind, sec, KIND_SHIFT, OFFSET_MASK};
use super::Source;
use crate::error::{Error, ErrorKind};

/// Every distinct mask once: per mask `(kind << 30) | word offset` and a
/// length in words (MASK_INDEX), and the words themselves (MASK_DATA).
#[derive(Clone, Copy, Debug)]
pub struct Masks<'a> {
    /// MASK_INDEX: two words per mask.
    pub index: &'a [u32],
    /// MASK_DATA: the masks' words.
    pub data: &'a [u32],
}

impl<'a> Masks<'a> {
    /// Reads and checks both sections: each mask's range inside MASK_DATA,
    /// dense masks of the exact width with no bit at or past the token
    /// count, lists strictly ascending and below the token count, a
    /// delta's base in range and not itself a delta.
    pub(crate) fn read(src: &Source<'a>, vocab_size: u32, c: &Counts) -> Result<Self, Error> {
        let index = src.words(sec::MASK_INDEX, Some(c.n_masks.saturating_mul(2)))?;
        let data = src.words(sec::MASK_DATA, None)?;
        let masks = Masks { index, data };
        let width = super::layout::mask_words(vocab_size);
        for m in 0..c.n_masks {
            let head = index[2 * m];
            let len = index[2 * m + 1] as usize;
            let off = (head & OFFSET_MASK) as usize;
            let end = off.saturating_add(len);
            if end > data.len() {
                return Err(Error::range(
                    "mask end",
                    m as u64,
                    end as u64,
                    data.len() as u64 + 1,
                ));
            }
            let words = &data[off..end];
            match head >> KIND_SHIFT {
                kind::DENSE => check_dense(m, words, width, c.n_tokens)?,
                kind::ALLOW | kind::DENY => check_ids(m, words, c.n_tokens)?,
                // kind::DELTA, the last of the two-bit kinds.
                _ => masks.check_delta(m, words, c)?,
            }
        }
        Ok(masks)
    }

    fn check_delta(&self, m: usize, words: &[u32], c: &Counts) -> Result<(), Error> {
        let Some((&base, ids)) = words.split_first() else {
            return Err(Error::field("delta mask length (at least its base)", 1, 0));
        };
        if base as usize >= c.n_masks {
            return Err(Error::range(
                "delta base of mask",
                m as u64,
                base as u64,
                c.n_masks as u64,
            ));
        }
        if self.index[2 * base as usize] >> KIND_SHIFT == kind::DELTA {
            return Err(Error::new(ErrorKind::DeltaChain { mask: m as u32 }));
        }
        check_ids(m, ids, c.n_tokens)
    }

    /// The number of masks.
    #[inline]
    pub(crate) fn count(&self) -> usize {
        self.index.len() / 2
    }

    /// The kind and words of mask `id` (in range: checked by the caller).
    #[inline]
    pub(crate) fn parts(&self, id: u32) -> (u32, &'a [u32]) {
        let head = self.index[2 * id as usize];
        let len = self.index[2 * id as usize + 1] as usize;
        let off = (head & OFFSET_MASK) as usize;
        // In range: checked when the artifact was loaded.
        (head >> KIND_SHIFT, &self.data[off..off + len])
    }

    /// Fills mask `id` (in range) into `out`, exactly the mask's width.
    #[inline]
    pub(crate) fn fill(&self, id: u32, n_tokens: u32, out: &mut [u32]) {
        let (k, data) = self.parts(id);
        if k == kind::DELTA {
            // The loader checked that the base is in range and not a delta.
            self.fill_plain(data[0], n_tokens, out);
            for &t in &data[1..] {
                out[(t >> 5) as usize] &= !(1 << (t & 31));
            }
        } else {
            self.fill_plain(id, n_tokens, out);
        }
    }

    /// Fills a mask that is not a delta into `out`.
    #[inline]
    fn fill_plain(&self, id: u32, n_tokens: u32, out: &mut [u32]) {
        let (k, data) = self.parts(id);
        match k {
            kind::DENSE => out.copy_from_slice(data),
            kind::ALLOW => {
                set_words(out, 0);
                write_listed(data, 0, out);
            }
            kind::DENY => {
                // Every real token, then clear the listed ones.
                let full = (n_tokens / 32) as usize;
                set_words(&mut out[..full], u32::MAX);
                set_words(&mut out[full..], 0);
                let tail = n_tokens % 32;
                if tail != 0 {
                    out[full] = u32::MAX;
                }
                write_listed(data, u32::MAX, out);
                if tail != 0 {
                    out[full] &= (1u32 << tail) - 1;
                }
            }
            // A delta's base is never a delta (checked when loading).
            _ => set_words(out, 0),
        }
    }

    /// Whether mask `id` (in range) allows `token` (below the token count).
    pub(crate) fn contains(&self, id: u32, token: u32) -> bool {
        let (k, data) = self.parts(id);
        if k == kind::DELTA {
            // The loader checked that the base is in range and not a delta.
            self.plain_contains(data[0], token) && data[1..].binary_search(&token).is_err()
        } else {
            self.plain_contains(id, token)
        }
    }

    fn plain_contains(&self, id: u32, token: u32) -> bool {
        let (k, data) = self.parts(id);
        match k {
            kind::DENSE => data[(token >> 5) as usize] & (1 << (token & 31)) != 0,
            kind::ALLOW => data.binary_search(&token).is_ok(),
            kind::DENY => data.binary_search(&token).is_err(),
            // A delta's base is never a delta (checked when loading).
            _ => false,
        }
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::MASK_INDEX, self.index);
        out.words(sec::MASK_DATA, self.data);
    }
}

/// Sets every word of `out` to `v`. A list mask is mostly this: at 128k
/// tokens 4,008 words, 16 KB, whose stores bound the fill (the list's
/// few words after them are cheap). Baseline x86-64 code stores 16 bytes
/// at a time; where the CPU has AVX2 (checked once by std and cached; in
/// a `no_std` build only when compiled for it) 32-byte stores halve it
/// (an AMD EPYC: 18 KB in 340 -> 180 ns).
#[inline]
pub(crate) fn set_words(out: &mut [u32], v: u32) {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::avx2() {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { set_words_avx2(out, v) };
    }
    out.fill(v)
}

/// [`set_words`] compiled for AVX2: the same loop, vectorized wider.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn set_words_avx2(out: &mut [u32], v: u32) {
    out.fill(v)
}

/// No bit of a dense mask at or beyond the token count.
fn check_dense(m: usize, words: &[u32], width: usize, n_tokens: u32) -> Result<(), Error> {
    if words.len() != width {
        return Err(Error::field(
            "dense mask length",
            width as u64,
            words.len() as u64,
        ));
    }
    // Only the words from the one holding token `n_tokens` on can have a
    // bit past the last token.
    let full = (n_tokens / 32) as usize;
    let tail = n_tokens % 32;
    let legal = |w: usize| match w.cmp(&full) {
        core::cmp::Ordering::Less => u32::MAX,
        core::cmp::Ordering::Equal => (1u32 << tail).wrapping_sub(1),
        core::cmp::Ordering::Greater => 0,
    };
    match (full..words.len()).find(|&w| words[w] & !legal(w) != 0) {
        Some(w) => Err(Error::range(
            "dense mask token",
            m as u64,
            w as u64 * 32 + 32,
            n_tokens as u64,
        )),
        None => Ok(()),
    }
}

/// Writes the ascending token list `ids` over `out`, whose every word
/// is `fresh` (0 or all ones): each listed token's bit is flipped. Lists
/// run dozens of tokens into one word (a string body denies every token
/// with a quote, and such tokens sit together), so a load and store per
/// token would chain each load on the store before it. Instead the
/// current word is kept in a register, started afresh when the word
/// changes (a select, not a branch: the changes are unpredictable), and
/// stored on every step without being read back.
#[inline(always)]
fn write_listed(ids: &[u32], fresh: u32, out: &mut [u32]) {
    let mut word = u32::MAX;
    let mut acc = fresh;
    for &t in ids {
        let w = t >> 5;
        acc = if w == word { acc } else { fresh };
        acc ^= 1 << (t & 31);
        word = w;
        out[w as usize] = acc;
    }
}

/// Checks that the token ids of mask `m` are below the token count and
/// strictly ascending.
fn check_ids(m: usize, ids: &[u32], n_tokens: u32) -> Result<(), Error> {
    // Strictly ascending and the last below the token count: then all
    // are. One pass without early exits (it vectorizes); the precise
    // error only when it fails.
    let ascending = ids.windows(2).fold(true, |ok, w| ok & (w[0] < w[1]));
    if ascending && ids.last().is_none_or(|&t| t < n_tokens) {
        return Ok(());
    }
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

/// Builds MASK_INDEX and MASK_DATA, one mask at a time, in the kind the
/// writer chose for it.
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct MasksBuilder {
    index: std::vec::Vec<u32>,
    data: std::vec::Vec<u32>,
}

#[cfg(feature = "std")]
impl MasksBuilder {
    /// An empty table.
    pub fn new() -> MasksBuilder {
        MasksBuilder::default()
    }

    /// Appends a mask of kind `k` ([`kind`]) whose words are `words`
    /// (see FORMAT.md for each kind's words); its id is the number of
    /// masks before it. Fails when MASK_DATA outgrows the 30-bit offsets.
    pub fn push(
        &mut self,
        k: u32,
        words: impl IntoIterator<Item = u32>,
    ) -> Result<(), super::WriteError> {
        let offset = self.data.len();
        if offset > OFFSET_MASK as usize {
            return Err(super::WriteError::MaskData);
        }
        self.data.extend(words);
        let len = (self.data.len() - offset) as u32;
        self.index.extend([(k << KIND_SHIFT) | offset as u32, len]);
        Ok(())
    }

    /// Words of MASK_DATA so far.
    pub fn data_words(&self) -> usize {
        self.data.len()
    }

    /// The sections as built.
    pub fn masks(&self) -> Masks<'_> {
        Masks {
            index: &self.index,
            data: &self.data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One mask of `kind` over `words`, as MASK_INDEX and MASK_DATA.
    fn one(kind: u32, words: &[u32]) -> ([u32; 2], &[u32]) {
        ([kind << KIND_SHIFT, words.len() as u32], words)
    }

    /// The mask a list means, one bit at a time.
    fn naive(kind: u32, ids: &[u32], n_tokens: u32) -> [u32; WIDTH] {
        let mut out = [0u32; WIDTH];
        for t in 0..n_tokens {
            let listed = ids.contains(&t);
            if listed == (kind == kind::ALLOW) {
                out[(t >> 5) as usize] |= 1 << (t & 31);
            }
        }
        out
    }

    const WIDTH: usize = 7;

    #[test]
    fn set_words_writes_every_word_and_nothing_past_them() {
        // Every length up to a few vectors, at every offset of a 32-byte
        // line: the wide loop's head and tail are where it could go wrong.
        let mut buf = [0u32; 80];
        for v in [0, u32::MAX, 0x1234_5678] {
            for at in 0..8 {
                for len in 0..64 {
                    buf.fill(0xA5A5_A5A5);
                    set_words(&mut buf[at..at + len], v);
                    for (i, &w) in buf.iter().enumerate() {
                        let inside = (at..at + len).contains(&i);
                        assert_eq!(
                            w,
                            if inside { v } else { 0xA5A5_A5A5 },
                            "{at}+{len}, word {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lists_fill_as_their_bits_say() {
        // Runs inside one word, a change of word at every id, the first
        // and last ids, and a last word only partly inside the token count.
        let n_tokens = 200;
        let lists: [&[u32]; 6] = [
            &[],
            &[0],
            &[199],
            &[1, 2, 3, 31, 32, 33, 63, 64, 100, 101, 102, 103],
            &[5, 40, 70, 130, 160, 199],
            &[192, 193, 194, 195, 196, 197, 198, 199],
        ];
        for kind in [kind::ALLOW, kind::DENY] {
            for ids in lists {
                let (index, data) = one(kind, ids);
                let masks = Masks {
                    index: &index,
                    data,
                };
                // Stale bits everywhere: a fill writes every word.
                let mut out = [0xA5A5_A5A5u32; WIDTH];
                masks.fill(0, n_tokens, &mut out);
                assert_eq!(out, naive(kind, ids, n_tokens), "kind {kind}, {ids:?}");
            }
        }
    }
}
