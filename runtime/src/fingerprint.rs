//! The vocabulary fingerprint, computed token by token.
//!
//! An artifact's header holds the SHA-256 fingerprint of the vocabulary it
//! was compiled for (`runtime/FORMAT.md`, "Vocabulary fingerprint"). This
//! module is the one definition of that hash: the compiler's
//! `Vocab::fingerprint` feeds it the tokenizer it read, and a serving engine
//! feeds it its own tokenizer's tokens (through the C ABI or Python when it
//! is not written in Rust), then hands the result to
//! [`Grammar::check_vocabulary`](crate::Grammar::check_vocabulary), which
//! refuses an artifact built for another vocabulary.
//!
//! The builder is `no_std` and allocation-free: an engine pushes each
//! token's bytes as it reads them from its tokenizer, in id order, and
//! nothing holds the whole vocabulary.
//!
//! What is hashed: the bytes `tooldec-vocab-v1\0`, the token count as a
//! little-endian `u32`, then per token id a kind byte (0 text, 1 special,
//! 2 unused), the length of its bytes as a little-endian `u32`, and the
//! bytes (a text token's exact bytes, a special token's name, nothing for
//! an unused id).
//!
//! ```
//! use tooldec_runtime::fingerprint::Fingerprint;
//!
//! let mut f = Fingerprint::new(3);
//! f.push_text(b"a");
//! f.push_special("<|endoftext|>");
//! f.push_unused();
//! assert_eq!(f.pushed(), 3);
//! let fingerprint: [u8; 32] = f.finish();
//! # let _ = fingerprint;
//! ```

use sha2::{Digest, Sha256};

/// What the hash starts with: the fingerprint's name and version.
const TAG: &[u8] = b"tooldec-vocab-v1\0";

/// The kind byte of a text token.
const TEXT: u8 = 0;
/// The kind byte of a special token.
const SPECIAL: u8 = 1;
/// The kind byte of an id the tokenizer leaves unused.
const UNUSED: u8 = 2;

/// An incremental vocabulary fingerprint: push every token of the
/// vocabulary in id order, then [`Fingerprint::finish`].
#[derive(Clone, Debug)]
pub struct Fingerprint {
    hash: Sha256,
    tokens: u32,
    pushed: u32,
}

impl Fingerprint {
    /// Starts the fingerprint of a vocabulary of `tokens` tokens (the
    /// tokenizer's token count, not the model's logits width).
    pub fn new(tokens: u32) -> Fingerprint {
        let mut hash = Sha256::new();
        hash.update(TAG);
        hash.update(tokens.to_le_bytes());
        Fingerprint {
            hash,
            tokens,
            pushed: 0,
        }
    }

    /// The next id is a text token whose exact bytes are `bytes`.
    pub fn push_text(&mut self, bytes: &[u8]) {
        self.push(TEXT, bytes);
    }

    /// The next id is a special token named `name` (a control token, an
    /// added token marked special; a non-special added token is text): it
    /// never matches text, so its name is hashed apart from text tokens'.
    pub fn push_special(&mut self, name: impl AsRef<[u8]>) {
        self.push(SPECIAL, name.as_ref());
    }

    /// The next id is one the tokenizer leaves unused.
    pub fn push_unused(&mut self) {
        self.push(UNUSED, &[]);
    }

    fn push(&mut self, kind: u8, bytes: &[u8]) {
        self.hash.update([kind]);
        // A token's bytes never approach 4 GiB; the compiler has always
        // hashed the length as a u32.
        self.hash.update((bytes.len() as u32).to_le_bytes());
        self.hash.update(bytes);
        self.pushed = self.pushed.wrapping_add(1);
    }

    /// The token count given to [`Fingerprint::new`].
    pub fn tokens(&self) -> u32 {
        self.tokens
    }

    /// How many tokens were pushed so far. A fingerprint finished with
    /// fewer or more than [`Fingerprint::tokens`] matches no artifact;
    /// callers that read an engine's vocabulary can check this first and
    /// say so.
    pub fn pushed(&self) -> u32 {
        self.pushed
    }

    /// The SHA-256 fingerprint.
    pub fn finish(self) -> [u8; 32] {
        self.hash.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash input spelled out, hashed in one piece.
    #[test]
    fn hashes_what_the_format_says() {
        let mut f = Fingerprint::new(3);
        f.push_text(b"ab");
        f.push_special("<s>");
        f.push_unused();
        assert_eq!((f.tokens(), f.pushed()), (3, 3));
        let mut input = [0u8; 64];
        let mut n = 0;
        for part in [
            &b"tooldec-vocab-v1\0"[..],
            &3u32.to_le_bytes(),
            &[0],
            &2u32.to_le_bytes(),
            b"ab",
            &[1],
            &3u32.to_le_bytes(),
            b"<s>",
            &[2],
            &0u32.to_le_bytes(),
        ] {
            input[n..n + part.len()].copy_from_slice(part);
            n += part.len();
        }
        let whole: [u8; 32] = Sha256::digest(&input[..n]).into();
        assert_eq!(f.finish(), whole);
    }

    #[test]
    fn a_special_token_is_not_its_text() {
        let mut text = Fingerprint::new(1);
        text.push_text(b"<s>");
        let mut special = Fingerprint::new(1);
        special.push_special(b"<s>");
        assert_ne!(text.finish(), special.finish());
    }
}
