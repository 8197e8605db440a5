//! The vocabulary as the grammar reads it: EOS, TOKEN_OFFSETS and
//! TOKEN_BYTES.

use super::header::Counts;
use super::layout::sec;
use super::Source;
use crate::error::Error;

/// The end-of-sequence ids and each token's bytes (`offsets[t]..offsets[t +
/// 1]` in `bytes`; empty for a token the grammar never uses as text).
#[derive(Clone, Copy, Debug)]
pub struct Tokens<'a> {
    /// EOS: end-of-sequence ids, strictly ascending.
    pub eos: &'a [u32],
    /// TOKEN_OFFSETS: token count + 1 byte offsets into `bytes`.
    pub offsets: &'a [u32],
    /// TOKEN_BYTES: the tokens' bytes, concatenated.
    pub bytes: &'a [u8],
}

impl<'a> Tokens<'a> {
    /// Reads and checks the three sections: EOS ids ascending, below the
    /// token count and without text; offsets starting at 0, never
    /// decreasing, and ending at TOKEN_BYTES' length.
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let eos = src.words(sec::EOS, Some(c.n_eos))?;
        for (i, &t) in eos.iter().enumerate() {
            if t >= c.n_tokens {
                return Err(Error::range(
                    "end-of-sequence token",
                    i as u64,
                    t as u64,
                    c.n_tokens as u64,
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
        let offsets = src.words(sec::TOKEN_OFFSETS, Some(c.n_tokens as usize + 1))?;
        let bytes = src.bytes(sec::TOKEN_BYTES);
        if offsets[0] != 0 {
            return Err(Error::field("first token offset", 0, offsets[0] as u64));
        }
        for i in 1..offsets.len() {
            if offsets[i] < offsets[i - 1] {
                return Err(Error::range(
                    "token offset",
                    i as u64,
                    offsets[i] as u64,
                    offsets[i - 1] as u64,
                ));
            }
        }
        let last = offsets[c.n_tokens as usize] as usize;
        if last != bytes.len() {
            return Err(Error::field(
                "token bytes length",
                last as u64,
                bytes.len() as u64,
            ));
        }
        if eos
            .iter()
            .any(|&t| offsets[t as usize] != offsets[t as usize + 1])
        {
            return Err(Error::field(
                "text length of an end-of-sequence token",
                0,
                1,
            ));
        }
        Ok(Tokens {
            eos,
            offsets,
            bytes,
        })
    }

    /// The tokenizer's token count.
    #[inline]
    pub(crate) fn count(&self) -> u32 {
        self.offsets.len().saturating_sub(1) as u32
    }

    /// Token `t`'s bytes; `None` when it has none or is out of range.
    #[inline]
    pub(crate) fn get(&self, t: u32) -> Option<&'a [u8]> {
        let t = t as usize;
        if t + 1 >= self.offsets.len() {
            return None;
        }
        // In range and ordered: checked when the artifact was loaded.
        let (lo, hi) = (self.offsets[t] as usize, self.offsets[t + 1] as usize);
        (lo != hi).then(|| &self.bytes[lo..hi])
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::EOS, self.eos);
        out.words(sec::TOKEN_OFFSETS, self.offsets);
        out.bytes(sec::TOKEN_BYTES, self.bytes);
    }
}

/// Builds TOKEN_OFFSETS and TOKEN_BYTES from each token's bytes in id
/// order.
#[cfg(feature = "std")]
#[derive(Clone, Debug)]
pub struct TokensBuilder {
    offsets: std::vec::Vec<u32>,
    bytes: std::vec::Vec<u8>,
}

#[cfg(feature = "std")]
impl Default for TokensBuilder {
    fn default() -> Self {
        TokensBuilder {
            offsets: std::vec![0],
            bytes: std::vec::Vec::new(),
        }
    }
}

#[cfg(feature = "std")]
impl TokensBuilder {
    /// No tokens yet.
    pub fn new() -> TokensBuilder {
        TokensBuilder::default()
    }

    /// Appends the next token: its bytes, or `None` (empty: never allowed
    /// as text).
    pub fn push(&mut self, bytes: Option<&[u8]>) {
        if let Some(b) = bytes {
            self.bytes.extend_from_slice(b);
        }
        self.offsets.push(self.bytes.len() as u32);
    }

    /// The sections as built, with the end-of-sequence ids `eos`.
    pub fn tokens<'a>(&'a self, eos: &'a [u32]) -> Tokens<'a> {
        Tokens {
            eos,
            offsets: &self.offsets,
            bytes: &self.bytes,
        }
    }
}
