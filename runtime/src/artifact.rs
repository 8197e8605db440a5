//! [`Artifact`]: a validated payload in storage of the caller's choosing
//! (owned, borrowed, shared), viewed as a [`Grammar`] in constant time; and
//! with the `std` feature, loading one from a file or a compressed buffer
//! (decompression needs the `zstd` feature).

use crate::codec::{self, Index, Payload};
use crate::error::Error;
use crate::Grammar;

/// The storage an [`Artifact`] has when none is named: an owned
/// `Vec<u32>` with the `std` feature; without it, a `&'static [u32]` (an
/// artifact in the program's image).
#[cfg(feature = "std")]
pub type DefaultStorage = std::vec::Vec<u32>;
/// The storage an [`Artifact`] has when none is named: an owned
/// `Vec<u32>` with the `std` feature; without it, a `&'static [u32]` (an
/// artifact in the program's image).
#[cfg(not(feature = "std"))]
pub type DefaultStorage = &'static [u32];

/// A validated payload held in `T`: owned (`Vec<u32>`, `Box<[u32]>`, what
/// [`Artifact::open`] gives), borrowed (`&[u32]`) or shared
/// (`Arc<[u32]>`). Stored as words, so the payload is always aligned and
/// viewing it needs no `unsafe`. [`Artifact::grammar`] returns a view
/// over it without copying, in constant time: validation happened once,
/// when the artifact was created.
///
/// `T` must give the same words every time (every owned, borrowed and
/// shared buffer does); one whose contents changed since validation can
/// make serving panic, never read out of bounds.
#[derive(Clone, Debug)]
pub struct Artifact<T = DefaultStorage> {
    words: T,
    /// The payload's length in bytes (at most the words' length).
    len: usize,
    index: Index,
}

impl<T: AsRef<[u32]>> Artifact<T> {
    /// Validates the payload held in `words` (all of them: its length is
    /// a whole number of words, as every payload the compiler writes).
    pub fn new(words: T) -> Result<Artifact<T>, Error> {
        let len = 4 * words.as_ref().len();
        Artifact::with_len(words, len)
    }

    /// Validates the payload in the first `len` bytes of `words`.
    fn with_len(words: T, len: usize) -> Result<Artifact<T>, Error> {
        let bytes = words_as_bytes(words.as_ref());
        let bytes = bytes
            .get(..len)
            .ok_or(Error::short("payload", len, bytes.len()))?;
        let (_, index) = codec::read(bytes)?;
        Ok(Artifact { words, len, index })
    }

    /// The validated grammar. Cheap: validation happened when loading.
    #[inline]
    pub fn grammar(&self) -> Grammar<'_> {
        Grammar::validated(Payload::view(self.words.as_ref(), &self.index))
    }

    /// The decompressed payload bytes.
    pub fn payload(&self) -> &[u8] {
        let bytes = words_as_bytes(self.words.as_ref());
        bytes.get(..self.len).unwrap_or(bytes)
    }

    /// The storage, given back.
    pub fn into_inner(self) -> T {
        self.words
    }
}

/// The bytes of `words`, in memory order (little-endian on the hosts
/// that read artifacts).
#[inline]
fn words_as_bytes(words: &[u32]) -> &[u8] {
    // SAFETY: `u8` has no alignment requirement, every byte of a `u32` is
    // initialized, and the length covers exactly the words.
    unsafe {
        core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), core::mem::size_of_val(words))
    }
}

#[cfg(feature = "std")]
mod load {
    use std::path::Path;
    use std::vec;
    use std::vec::Vec;

    use super::Artifact;
    use crate::codec::envelope::{self, ZSTD_MAGIC};
    use crate::error::{Error, ErrorKind};

    impl Artifact<Vec<u32>> {
        /// Reads, decompresses and validates the artifact at `path`.
        pub fn open<P: AsRef<Path>>(path: P) -> Result<Artifact, Error> {
            let bytes = std::fs::read(path).map_err(|e| Error::new(ErrorKind::Io(e)))?;
            Artifact::from_bytes(&bytes)
        }

        /// Checks, decompresses and validates an artifact held in memory: a
        /// compressed `.tdm` file (its envelope first: the version, the exact
        /// length and a checksum of the compressed data, all before
        /// decompressing), a bare zstd frame holding a payload, or a raw
        /// payload (`--uncompressed`). Without the `zstd` feature a
        /// compressed artifact's envelope is checked and then refused.
        pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, Error> {
            let (words, len) = if bytes.starts_with(&layout_magic()) {
                let (payload_len, data) = envelope::open(bytes)?;
                zstd::decompress_exact(data, payload_len as usize)?
            } else if bytes.starts_with(&ZSTD_MAGIC) {
                zstd::decompress(bytes)?
            } else {
                let mut words = vec![0u32; bytes.len().div_ceil(4)];
                as_bytes_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
                (words, bytes.len())
            };
            Artifact::with_len(words, len)
        }
    }

    fn layout_magic() -> [u8; 4] {
        crate::codec::layout::envelope::MAGIC.to_le_bytes()
    }

    fn as_bytes_mut(words: &mut [u32]) -> &mut [u8] {
        let len = std::mem::size_of_val(words);
        // SAFETY: `u8` has no alignment requirement, any byte pattern is a
        // valid `u32`, the length covers exactly the words, and the borrow
        // is unique.
        unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
    }

    /// Decompression, with the `zstd` feature.
    #[cfg(feature = "zstd")]
    mod zstd {
        use std::vec;
        use std::vec::Vec;

        use super::as_bytes_mut;
        use crate::codec::envelope::{MAX_DECOMPRESSED_BYTES, MAX_RATIO};
        use crate::error::{Error, ErrorKind};

        /// Decompresses `data` into exactly `size` bytes.
        pub(super) fn decompress_exact(
            data: &[u8],
            size: usize,
        ) -> Result<(Vec<u32>, usize), Error> {
            let mut words = vec![0u32; size.div_ceil(4)];
            let n = ::zstd::bulk::decompress_to_buffer(data, &mut as_bytes_mut(&mut words)[..size])
                .map_err(|e| Error::new(ErrorKind::Decompress(e)))?;
            if n != size {
                return Err(Error::field("decompressed length", size as u64, n as u64));
            }
            Ok((words, n))
        }

        /// Decompresses a bare zstd frame (no envelope), within the limits
        /// its declared size allows.
        pub(super) fn decompress(bytes: &[u8]) -> Result<(Vec<u32>, usize), Error> {
            let declared = ::zstd::zstd_safe::get_frame_content_size(bytes)
                .ok()
                .flatten();
            if let Some(size) = declared {
                if size > MAX_DECOMPRESSED_BYTES {
                    return Err(Error::new(ErrorKind::TooLarge {
                        limit: MAX_DECOMPRESSED_BYTES,
                        found: size,
                    }));
                }
                let possible = (bytes.len() as u64).saturating_mul(MAX_RATIO);
                if size > possible {
                    return Err(Error::field(
                        "decompressed length (at most 32768 times the compressed length)",
                        possible,
                        size,
                    ));
                }
                return decompress_exact(bytes, size as usize);
            }
            stream(bytes)
        }

        /// A frame without a declared size: streamed, up to the limit.
        fn stream(bytes: &[u8]) -> Result<(Vec<u32>, usize), Error> {
            use std::io::Read;
            let mut out = Vec::new();
            let decoder = ::zstd::stream::read::Decoder::new(bytes)
                .map_err(|e| Error::new(ErrorKind::Decompress(e)))?;
            decoder
                .take(MAX_DECOMPRESSED_BYTES + 1)
                .read_to_end(&mut out)
                .map_err(|e| Error::new(ErrorKind::Decompress(e)))?;
            if out.len() as u64 > MAX_DECOMPRESSED_BYTES {
                return Err(Error::new(ErrorKind::TooLarge {
                    limit: MAX_DECOMPRESSED_BYTES,
                    found: out.len() as u64,
                }));
            }
            let mut words = vec![0u32; out.len().div_ceil(4)];
            as_bytes_mut(&mut words)[..out.len()].copy_from_slice(&out);
            Ok((words, out.len()))
        }
    }

    /// Without the `zstd` feature: compressed artifacts are refused.
    #[cfg(not(feature = "zstd"))]
    mod zstd {
        use std::vec::Vec;

        use crate::error::{Error, ErrorKind};

        pub(super) fn decompress_exact(_: &[u8], _: usize) -> Result<(Vec<u32>, usize), Error> {
            Err(Error::new(ErrorKind::NoZstd))
        }

        pub(super) fn decompress(_: &[u8]) -> Result<(Vec<u32>, usize), Error> {
            Err(Error::new(ErrorKind::NoZstd))
        }
    }
}
