//! The envelope of a compressed artifact: a zstd skippable frame in front
//! of the one zstd frame that holds the payload (its layout:
//! [`layout::envelope`](mod@super::layout::envelope)). Writing it and
//! checking it need no decompressor, so both work without the `zstd`
//! feature.

use super::crc::{crc32c, crc32c_update};
use super::layout::{envelope, VERSION};
use crate::error::{Error, ErrorKind, Part};

/// The most a compressed artifact may expand to (4 GiB): larger claims are
/// refused before any memory is reserved for them.
pub const MAX_DECOMPRESSED_BYTES: u64 = 4 << 30;

/// The most a zstd frame can expand: a block (at most 128 KiB of output)
/// takes at least 4 bytes (an RLE block). A larger claim is a lie, refused
/// before any memory is reserved for it.
pub(crate) const MAX_RATIO: u64 = 128 * 1024 / 4;

/// The first bytes of a zstd frame.
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The envelope for a zstd frame `data` holding a payload of `payload_len`
/// bytes (see [`layout::envelope`](mod@super::layout::envelope)).
pub fn write(payload_len: u32, data: &[u8]) -> [u8; envelope::BYTES] {
    let mut e = [0u8; envelope::BYTES];
    e[0..4].copy_from_slice(&envelope::MAGIC.to_le_bytes());
    e[4..8].copy_from_slice(&envelope::FRAME_SIZE.to_le_bytes());
    e[8..16].copy_from_slice(&envelope::TAG);
    e[16..20].copy_from_slice(&VERSION.to_le_bytes());
    e[20..24].copy_from_slice(&payload_len.to_le_bytes());
    e[24..32].copy_from_slice(&(data.len() as u64).to_le_bytes());
    e[32..36].copy_from_slice(&crc32c(data).to_le_bytes());
    let own = crc32c(&e[..envelope::AT_SELF_CRC]);
    e[36..40].copy_from_slice(&own.to_le_bytes());
    e
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Checks the envelope of a compressed artifact and the data frame it
/// covers, in constant time except for one CRC over the data frame; returns
/// the payload length and the data frame. The order: the envelope's own
/// CRC (telling another version's envelope from a damaged one), the
/// version, the file's length, the payload length's limits, the data CRC.
pub fn open(bytes: &[u8]) -> Result<(u32, &[u8]), Error> {
    if bytes.len() < envelope::BYTES {
        return Err(Error::short("envelope", envelope::BYTES, bytes.len()));
    }
    let head = &bytes[..envelope::BYTES];
    check_own_crc(head)?;
    let version = u32_at(head, envelope::AT_VERSION);
    if version != VERSION {
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
    let computed = crc32c(data);
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

/// The envelope's own CRC (bytes 0–35 against 36–39). When it fails, a
/// tooldec envelope of another version is reported as that version (its
/// layout may differ), unless the CRC holds with this runtime's version
/// written in: then only the version field was damaged.
fn check_own_crc(head: &[u8]) -> Result<(), Error> {
    let version = u32_at(head, envelope::AT_VERSION);
    let stored = u32_at(head, envelope::AT_SELF_CRC);
    let computed = crc32c(&head[..envelope::AT_SELF_CRC]);
    let ours = u32_at(head, 4) == envelope::FRAME_SIZE && head[8..16] == envelope::TAG;
    if ours && computed == stored {
        return Ok(());
    }
    let as_this_version = {
        let crc = crc32c(&head[..envelope::AT_VERSION]);
        let crc = crc32c_update(crc, &VERSION.to_le_bytes());
        crc32c_update(crc, &head[envelope::AT_VERSION + 4..envelope::AT_SELF_CRC])
    };
    if head[8..16] == envelope::TAG && version != VERSION && !(ours && as_this_version == stored) {
        return Err(Error::new(ErrorKind::Version { found: version }));
    }
    Err(Error::new(ErrorKind::Corrupt {
        part: Part::Envelope,
        computed,
        stored,
    }))
}
