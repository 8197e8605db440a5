//! CRC-32C, the checksum that covers every byte of an artifact (the
//! payload's header word [`hdr::CHECKSUM`](super::layout::hdr::CHECKSUM)
//! and the envelope of a compressed file).

/// CRC-32C (Castagnoli; the reflected polynomial `0x82F63B78`, initial and
/// final value inverted) of `bytes`: `crc32c(b"123456789") == 0xE306_9283`.
/// It detects every error burst of up to 32 bits, hence every changed byte.
/// Uses the SSE 4.2 instruction where the CPU has it, else tables.
pub fn crc32c(bytes: &[u8]) -> u32 {
    crc32c_update(0, bytes)
}

/// Continues a CRC-32C: `crc32c_update(crc32c(a), b) == crc32c(a ++ b)`.
pub fn crc32c_update(crc: u32, bytes: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if super::cpu::sse42() {
        // SAFETY: the CPU supports SSE 4.2 (checked just above).
        return unsafe { sse42(crc, bytes) };
    }
    portable(crc, bytes)
}

/// The table-driven CRC-32C, whatever the CPU (for tests that compare it
/// with the accelerated one).
#[doc(hidden)]
pub fn crc32c_portable(crc: u32, bytes: &[u8]) -> u32 {
    portable(crc, bytes)
}

/// The reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

/// Slice-by-8 tables: `T[0]` is the bytewise table, `T[k][b]` the CRC
/// of byte `b` followed by `k` zero bytes.
static T: [[u32; 256]; 8] = tables();

const fn tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        let mut k = 1;
        while k < 8 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            k += 1;
        }
        i += 1;
    }
    t
}

fn portable(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    let mut chunks = bytes.chunks_exact(8);
    for ch in &mut chunks {
        let lo = u32::from_le_bytes([ch[0], ch[1], ch[2], ch[3]]) ^ c;
        let hi = u32::from_le_bytes([ch[4], ch[5], ch[6], ch[7]]);
        c = T[7][(lo & 0xFF) as usize]
            ^ T[6][((lo >> 8) & 0xFF) as usize]
            ^ T[5][((lo >> 16) & 0xFF) as usize]
            ^ T[4][(lo >> 24) as usize]
            ^ T[3][(hi & 0xFF) as usize]
            ^ T[2][((hi >> 8) & 0xFF) as usize]
            ^ T[1][((hi >> 16) & 0xFF) as usize]
            ^ T[0][(hi >> 24) as usize];
    }
    for &b in chunks.remainder() {
        c = T[0][((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

/// `a(x) * b(x) mod P` in the reflected representation (bit 31 is x⁰).
#[cfg(target_arch = "x86_64")]
const fn multmodp(a: u32, mut b: u32) -> u32 {
    let mut m = 1u32 << 31;
    let mut p = 0u32;
    loop {
        if a & m != 0 {
            p ^= b;
            if a & (m - 1) == 0 {
                break;
            }
        }
        m >>= 1;
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
    }
    p
}

/// `x^(8 n) mod P`: multiplying a CRC by it appends `n` zero bytes to
/// its message (without the final inversions).
#[cfg(target_arch = "x86_64")]
fn shift_bytes(n: u64) -> u32 {
    // x^(2^k) mod P for k = 3.. (x^8, x^16, ...), by repeated squaring.
    let mut power = 1u32 << (31 - 8); // x^8
    let mut p = 1u32 << 31; // x^0
    let mut n = n;
    while n != 0 {
        if n & 1 != 0 {
            p = multmodp(power, p);
        }
        power = multmodp(power, power);
        n >>= 1;
    }
    p
}

/// The SSE 4.2 CRC-32C: three independent streams over the bulk of a
/// long buffer (the instruction's latency is three times its
/// throughput), joined by polynomial shifts, then one stream.
///
/// # Safety
/// The CPU must support SSE 4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn sse42(crc: u32, bytes: &[u8]) -> u32 {
    use core::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let p = bytes.as_ptr();
    // SAFETY: every call below reads 8 bytes at an offset `i` with
    // `i + 8 <= bytes.len()`, unaligned.
    let word = |i: usize| unsafe { p.add(i).cast::<u64>().read_unaligned() };
    let mut c = !crc;
    let mut i = 0;
    if bytes.len() >= 3 * 1024 {
        let block = bytes.len() / 24 * 8;
        let (mut ca, mut cb, mut cd) = (c as u64, 0u64, 0u64);
        while i < block {
            ca = _mm_crc32_u64(ca, word(i));
            cb = _mm_crc32_u64(cb, word(block + i));
            cd = _mm_crc32_u64(cd, word(2 * block + i));
            i += 8;
        }
        // The raw (uninverted) register is linear: crc(A ++ B) is
        // crc(A) shifted over |B| zero bytes, xor the register of B
        // started from zero.
        let shift = shift_bytes(block as u64);
        c = multmodp(shift, multmodp(shift, ca as u32) ^ cb as u32) ^ cd as u32;
        i = 3 * block;
    }
    let mut c64 = c as u64;
    while i + 8 <= bytes.len() {
        c64 = _mm_crc32_u64(c64, word(i));
        i += 8;
    }
    let mut c = c64 as u32;
    for &b in &bytes[i..] {
        c = _mm_crc32_u8(c, b);
    }
    !c
}
