//! Loading artifacts from files and byte buffers (the `std` feature).

use std::path::Path;
use std::vec;
use std::vec::Vec;

use crate::error::{Error, ErrorKind, Part};
use crate::layout::{self, envelope};
use crate::load::{self, Parts};
use crate::Grammar;

/// The most a compressed artifact may expand to (4 GiB): larger claims are
/// refused before any memory is reserved for them.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The most a zstd frame can expand: a block (at most 128 KiB of output)
/// takes at least 4 bytes (an RLE block). A larger claim is a lie, refused
/// before any memory is reserved for it.
const MAX_RATIO: u64 = 128 * 1024 / 4;

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

    /// Checks, decompresses and validates an artifact held in memory: a
    /// compressed `.tdm` file (its envelope first: the version, the exact
    /// length and a checksum of the compressed data, all before
    /// decompressing), a bare zstd frame holding a payload, or a raw
    /// payload (`--uncompressed`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, Error> {
        let (words, len) = if bytes.starts_with(&envelope::MAGIC.to_le_bytes()) {
            let (payload_len, data) = open_envelope(bytes)?;
            decompress_exact(data, payload_len)?
        } else if bytes.starts_with(&ZSTD_MAGIC) {
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

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Checks the envelope of a compressed artifact and the data frame it
/// covers, in constant time except for one CRC over the data frame; returns
/// the payload length and the data frame.
fn open_envelope(bytes: &[u8]) -> Result<(u32, &[u8]), Error> {
    if bytes.len() < envelope::BYTES {
        return Err(Error::short("envelope", envelope::BYTES, bytes.len()));
    }
    let head = &bytes[..envelope::BYTES];
    let version = u32_at(head, envelope::AT_VERSION);
    let stored = u32_at(head, envelope::AT_SELF_CRC);
    let computed = layout::crc32c(&head[..envelope::AT_SELF_CRC]);
    let ours = u32_at(head, 4) == envelope::FRAME_SIZE && head[8..16] == envelope::TAG;
    if !ours || computed != stored {
        // A tooldec envelope that fails its check: another version's (its
        // layout may differ), or damaged. A damaged version field is told
        // apart by the check holding with this runtime's version.
        let as_this_version = {
            let crc = layout::crc32c(&head[..envelope::AT_VERSION]);
            let crc = layout::crc32c_update(crc, &layout::VERSION.to_le_bytes());
            layout::crc32c_update(crc, &head[envelope::AT_VERSION + 4..envelope::AT_SELF_CRC])
        };
        if head[8..16] == envelope::TAG
            && version != layout::VERSION
            && !(ours && as_this_version == stored)
        {
            return Err(Error::new(ErrorKind::Version { found: version }));
        }
        return Err(Error::new(ErrorKind::Corrupt {
            part: Part::Envelope,
            computed,
            stored,
        }));
    }
    if version != layout::VERSION {
        return Err(Error::new(ErrorKind::Version { found: version }));
    }
    let data_len = u64::from_le_bytes(
        head[envelope::AT_DATA_LEN..envelope::AT_DATA_LEN + 8]
            .try_into()
            .unwrap_or([0xFF; 8]),
    );
    let says = (envelope::BYTES as u64).saturating_add(data_len);
    let has = bytes.len() as u64;
    if has < says {
        return Err(Error::new(ErrorKind::Truncated { says, has }));
    }
    if has > says {
        return Err(Error::new(ErrorKind::Trailing { says, has }));
    }
    let data = &bytes[envelope::BYTES..];
    let payload_len = u32_at(head, envelope::AT_PAYLOAD_LEN);
    if payload_len as u64 > MAX_DECOMPRESSED_BYTES {
        return Err(Error::new(ErrorKind::TooLarge {
            limit: MAX_DECOMPRESSED_BYTES,
            found: payload_len as u64,
        }));
    }
    if payload_len as u64 > data_len.saturating_mul(MAX_RATIO) {
        return Err(Error::field(
            "payload length (at most 32768 times the compressed length)",
            data_len.saturating_mul(MAX_RATIO),
            payload_len as u64,
        ));
    }
    let stored = u32_at(head, envelope::AT_DATA_CRC);
    let computed = layout::crc32c(data);
    if computed != stored {
        return Err(Error::new(ErrorKind::Corrupt {
            part: Part::Data {
                start: envelope::BYTES as u64,
                end: has,
            },
            computed,
            stored,
        }));
    }
    Ok((payload_len, data))
}

/// Decompresses `data` into exactly `size` bytes.
fn decompress_exact(data: &[u8], size: u32) -> Result<(Vec<u32>, usize), Error> {
    let size = size as usize;
    let mut words = vec![0u32; size.div_ceil(4)];
    let n = zstd::bulk::decompress_to_buffer(data, &mut as_bytes_mut(&mut words)[..size])
        .map_err(|e| Error::new(ErrorKind::Decompress(e)))?;
    if n != size {
        return Err(Error::field("decompressed length", size as u64, n as u64));
    }
    Ok((words, n))
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
        let possible = (bytes.len() as u64).saturating_mul(MAX_RATIO);
        if size > possible {
            return Err(Error::field(
                "decompressed length (at most 32768 times the compressed length)",
                possible,
                size,
            ));
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
