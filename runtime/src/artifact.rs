//! Loading artifacts from files and byte buffers (the `std` feature).

use std::path::Path;
use std::vec;
use std::vec::Vec;

use crate::error::{Error, ErrorKind};
use crate::load::{self, Parts};
use crate::Grammar;

/// The most a compressed artifact may expand to (4 GiB): larger claims are
/// refused before any memory is reserved for them.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// An owned, validated artifact: the decompressed payload in an aligned
/// buffer. [`Artifact::grammar`] returns a view over it without copying.
pub struct Artifact {
    words: Vec<u32>,
    len: usize,
    parts: Parts,
}

impl Artifact {
    /// Reads, decompresses and validates the artifact at `path`.
    pub fn open<P: AsRef<Path>>(path: P) -> Result<Artifact, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::new(ErrorKind::Io(e)))?;
        Artifact::from_bytes(&bytes)
    }

    /// Decompresses (when the buffer is a zstd frame) and validates an
    /// artifact held in memory. Raw payloads are accepted too.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, Error> {
        let (words, len) = if bytes.starts_with(&ZSTD_MAGIC) {
            decompress(bytes)?
        } else {
            let mut words = vec![0u32; bytes.len().div_ceil(4)];
            as_bytes_mut(&mut words)[..bytes.len()].copy_from_slice(bytes);
            (words, bytes.len())
        };
        let parts = load::validate(&as_bytes(&words)[..len])?;
        Ok(Artifact { words, len, parts })
    }

    /// The validated grammar. Cheap: validation happened when loading.
    pub fn grammar(&self) -> Grammar<'_> {
        // The payload was validated into `parts` and is immutable since.
        load::assemble(self.payload(), &self.parts)
    }

    /// The decompressed payload bytes.
    pub fn payload(&self) -> &[u8] {
        &as_bytes(&self.words)[..self.len]
    }
}

fn decompress(bytes: &[u8]) -> Result<(Vec<u32>, usize), Error> {
    use std::io::Read;
    let declared = zstd::zstd_safe::get_frame_content_size(bytes)
        .ok()
        .flatten();
    if let Some(size) = declared {
        if size > MAX_DECOMPRESSED_BYTES {
            return Err(Error::new(ErrorKind::TooLarge {
                limit: MAX_DECOMPRESSED_BYTES,
                found: size,
            }));
        }
        let mut words = vec![0u32; (size as usize).div_ceil(4)];
        let n =
            zstd::bulk::decompress_to_buffer(bytes, &mut as_bytes_mut(&mut words)[..size as usize])
                .map_err(|e| Error::new(ErrorKind::Decompress(e)))?;
        if n as u64 != size {
            return Err(Error::field("decompressed length", size, n as u64));
        }
        return Ok((words, n));
    }
    let mut out = Vec::new();
    let decoder = zstd::stream::read::Decoder::new(bytes)
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

fn as_bytes(words: &[u32]) -> &[u8] {
    // SAFETY: u8 has no alignment requirement and the length is exact.
    unsafe { core::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 4) }
}

fn as_bytes_mut(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: as above; the borrow is unique.
    unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4) }
}
