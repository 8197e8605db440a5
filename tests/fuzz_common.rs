//! Fuzzing support shared by the stable mutation fuzzer and the regression
//! tests (`tests/fuzz.rs`, `tests/loader.rs`) and the cargo-fuzz targets
//! (`fuzz/fuzz_targets/*.rs`, which include this file by path). It depends
//! on `tooldec_runtime` alone, so the fuzz crate stays small.
//!
//! Everything is driven by a byte string ([`Input`]): libFuzzer's input,
//! or bytes from a seeded generator in `cargo test`. The same bytes give the
//! same edits and the same API calls, so a crash reproduces from its input,
//! and a minimized one is kept as a short recipe of [`Edit`]s.
#![allow(dead_code)]

use tooldec_runtime::layout::{self, hdr, HEADER_WORDS, SECTION_COUNT};
use tooldec_runtime::{Checkpoint, Grammar, Matcher, RollbackMatcher};

/// Reads numbers from fuzz input; zeros once it is used up.
pub struct Input<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data, at: 0 }
    }
    pub fn is_empty(&self) -> bool {
        self.at >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let v = if n <= 256 {
            self.u8() as usize
        } else {
            self.u32() as usize
        };
        v % n
    }
    /// The rest of the input.
    pub fn rest(&mut self) -> &'a [u8] {
        let r = self.data.get(self.at..).unwrap_or(&[]);
        self.at = self.data.len();
        r
    }
}

/// A deterministic generator (xorshift64*) for the stable fuzzer.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Copies `bytes` into a 4-aligned buffer, as an engine loading from disk
/// would; [`view`] gives the bytes back.
pub fn aligned(bytes: &[u8]) -> Vec<u32> {
    let mut words = vec![0u32; bytes.len().div_ceil(4)];
    for (i, b) in bytes.iter().enumerate() {
        words[i / 4] |= (*b as u32) << (8 * (i % 4));
    }
    words
}

pub fn view(words: &[u32], len: usize) -> &[u8] {
    assert!(len <= words.len() * 4);
    // SAFETY: u8 has no alignment requirement; len is within the buffer.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), len) }
}

/// One edit of a payload. Regression tests keep a crash as the list of
/// edits that turn a seed payload into the crashing one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// Sets word `word` of the payload (little-endian).
    Word { word: usize, value: u32 },
    /// Xors byte `at` with `mask`.
    Xor { at: usize, mask: u8 },
    /// Cuts the payload to `len` bytes.
    Truncate { len: usize },
    /// Inserts `n` zero words before word `word`.
    Insert { word: usize, n: usize },
    /// Removes up to `n` words from word `word` on.
    Remove { word: usize, n: usize },
    /// Sets the high field (`hi`) or the low one of value `index` of the
    /// column whose head is at byte `at` (`tooldec_runtime::codec::column`),
    /// keeping the other; `value` is cut to the field's width. A column of
    /// one field (split 0) holds it as its high field.
    Field {
        at: usize,
        index: usize,
        hi: bool,
        value: u32,
    },
    /// Sets the header's total length to the payload's length.
    FixTotal,
}

/// The column whose head is at byte `at` of `p`: `(width, split, len)`.
pub fn column(p: &[u8], at: usize) -> (u32, u32, usize) {
    let head = word(p, at / 4);
    (head & 0xFF, head >> 8, word(p, at / 4 + 1) as usize)
}

/// The fields `(lo, hi)` of value `index` of the column at byte `at`.
pub fn field(p: &[u8], at: usize, index: usize) -> (u32, u32) {
    let (width, split, _) = column(p, at);
    let bit = 8 * (at + 8) + index * width as usize;
    let v = (0..width as usize).fold(0u64, |v, i| {
        let b = bit + i;
        v | (((p[b / 8] >> (b % 8)) & 1) as u64) << i
    });
    let lo = v & ((1u64 << split) - 1);
    (lo as u32, (v >> split) as u32)
}

/// Byte offset of the column after the one at byte `at`.
pub fn next_column(p: &[u8], at: usize) -> usize {
    let (width, _, len) = column(p, at);
    at + 4 * ((len * width as usize).div_ceil(32) + 4)
}

/// Applies `edits` in order (out-of-range edits do nothing), then stamps
/// the payload checksum so that the structural checks judge the result.
pub fn apply(payload: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut p = payload.to_vec();
    for e in edits {
        match *e {
            Edit::Word { word, value } => {
                if let Some(w) = p.get_mut(4 * word..4 * word + 4) {
                    w.copy_from_slice(&value.to_le_bytes());
                }
            }
            Edit::Xor { at, mask } => {
                if let Some(b) = p.get_mut(at) {
                    *b ^= mask;
                }
            }
            Edit::Truncate { len } => p.truncate(len),
            Edit::Insert { word, n } => {
                let at = (4 * word).min(p.len());
                p.splice(at..at, std::iter::repeat_n(0u8, 4 * n));
            }
            Edit::Remove { word, n } => {
                let at = (4 * word).min(p.len());
                let end = (at + 4 * n).min(p.len());
                p.drain(at..end);
            }
            Edit::Field {
                at,
                index,
                hi,
                value,
            } => set_field(&mut p, at, index, hi, value),
            Edit::FixTotal => {
                let len = p.len() as u32;
                if let Some(w) = p.get_mut(4 * hdr::TOTAL_BYTES..4 * hdr::TOTAL_BYTES + 4) {
                    w.copy_from_slice(&len.to_le_bytes());
                }
            }
        }
    }
    layout::stamp_checksum(&mut p);
    p
}

fn set_field(p: &mut [u8], at: usize, index: usize, hi: bool, value: u32) {
    if at + 8 > p.len() {
        return;
    }
    let (width, split, len) = column(p, at);
    if index >= len {
        return;
    }
    let (lo_v, hi_v) = field(p, at, index);
    let (lo_v, hi_v) = if hi { (lo_v, value) } else { (value, hi_v) };
    let v = (lo_v as u64 & ((1u64 << split) - 1)) | (hi_v as u64) << split;
    let bit = 8 * (at + 8) + index * width as usize;
    for i in 0..width as usize {
        let b = bit + i;
        let mask = 1u8 << (b % 8);
        if let Some(byte) = p.get_mut(b / 8) {
            *byte = (*byte & !mask) | (((v >> i) & 1) as u8) << (b % 8);
        }
    }
}

fn word(p: &[u8], i: usize) -> u32 {
    p.get(4 * i..4 * i + 4)
        .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// The `(byte offset, byte length)` of section `id` (1-based) in the
/// payload's table.
pub fn section(p: &[u8], id: u32) -> (usize, usize) {
    let e = HEADER_WORDS + 3 * (id as usize - 1);
    (word(p, e + 1) as usize, word(p, e + 2) as usize)
}

/// A value for a word that was `old`: boundaries of the header's counts
/// and of the sections, and the extremes, more often than chance would.
fn interesting(input: &mut Input<'_>, p: &[u8], old: u32) -> u32 {
    let counts = [
        hdr::MASK_WIDTH,
        hdr::N_TOKENS,
        hdr::N_STATES,
        hdr::N_CLASSES,
        hdr::N_MASKS,
        hdr::N_EOS,
    ];
    match input.u8() % 12 {
        0 => 0,
        1 => 1 + input.u8() as u32 % 4,
        2 => old.wrapping_add(1),
        3 => old.wrapping_sub(1),
        4 => u32::MAX - input.u8() as u32 % 3,
        5 => [
            0x7FFF_FFFF,
            0x8000_0000,
            layout::OFFSET_MASK,
            1 << 30,
            3 << 30,
        ][input.below(5)],
        6 => {
            let c = word(p, counts[input.below(counts.len())]);
            c.wrapping_add(input.u8() as u32 % 3).wrapping_sub(1)
        }
        7 => {
            // A section's length in words or pairs, give or take one.
            let (_, len) = section(p, 1 + input.below(SECTION_COUNT) as u32);
            let unit = [4, 8][input.below(2)] as u32;
            (len as u32 / unit)
                .wrapping_add(input.u8() as u32 % 3)
                .wrapping_sub(1)
        }
        8 => old ^ (1 << (input.u8() % 32)),
        9 => old | (1 << 31),
        10 => input.u8() as u32,
        _ => input.u32(),
    }
}

/// Reads one to four edits of payload `p` from the input, aimed mostly at
/// the header, the section table and the sections' words.
pub fn edits(input: &mut Input<'_>, p: &[u8]) -> Vec<Edit> {
    let n = 1 + input.below(4);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let words = p.len() / 4;
        let e = match input.u8() % 10 {
            0 => {
                let w = input.below(HEADER_WORDS);
                Edit::Word {
                    word: w,
                    value: interesting(input, p, word(p, w)),
                }
            }
            1 => {
                let w = HEADER_WORDS + input.below(3 * SECTION_COUNT);
                Edit::Word {
                    word: w,
                    value: interesting(input, p, word(p, w)),
                }
            }
            2..=5 => {
                let (off, len) = section(p, 1 + input.below(SECTION_COUNT) as u32);
                let w = off / 4 + input.below((len / 4).max(1));
                Edit::Word {
                    word: w,
                    value: interesting(input, p, word(p, w)),
                }
            }
            6 => Edit::Xor {
                at: input.below(p.len()),
                mask: input.u8() | 1,
            },
            7 => Edit::Truncate {
                len: input.below(p.len()),
            },
            8 => Edit::Insert {
                word: input.below(words + 1),
                n: 1 + input.below(3),
            },
            _ => Edit::Remove {
                word: input.below(words),
                n: 1 + input.below(3),
            },
        };
        out.push(e);
    }
    if input.u8() & 1 == 0 {
        out.push(Edit::FixTotal);
    }
    out
}

/// Loads `bytes` (copied to an aligned buffer) with `Grammar::from_bytes`
/// and, if it loads, serves from it driven by `input`. Returns whether it
/// loaded.
pub fn load_and_serve(bytes: &[u8], input: &mut Input<'_>) -> bool {
    let words = aligned(bytes);
    match Grammar::from_bytes(view(&words, bytes.len())) {
        Ok(g) => {
            // A mutated grammar may serve wrong masks (the tables are the
            // compiler's guarantee), but never panics or reads out of
            // bounds: no invariants beyond that.
            serve(&g, input, false);
            true
        }
        Err(e) => {
            assert!(!e.to_string().is_empty());
            false
        }
    }
}

/// Bits set in a mask.
fn has(mask: &[u32], t: u32) -> bool {
    mask.get((t >> 5) as usize)
        .is_some_and(|w| w >> (t & 31) & 1 == 1)
}

fn allowed(mask: &[u32]) -> impl Iterator<Item = u32> + '_ {
    mask.iter().enumerate().flat_map(|(i, &w)| {
        (0..32)
            .filter(move |b| w >> b & 1 == 1)
            .map(move |b| i as u32 * 32 + b)
    })
}

/// A token to try: mostly one the mask allows, sometimes any id (past the
/// vocabulary too) or an end-of-sequence token.
fn pick(input: &mut Input<'_>, g: &Grammar<'_>, mask: &[u32]) -> u32 {
    match input.u8() % 8 {
        0 => input.below(g.mask_width() + 3) as u32,
        1 => g.eos_tokens().first().copied().unwrap_or(0),
        2 => input.u32(),
        _ => {
            let n = mask.iter().map(|w| w.count_ones() as usize).sum::<usize>();
            let k = input.below(n.max(1));
            allowed(mask).nth(k).unwrap_or(0)
        }
    }
}

/// Where a matcher is: what rollback must restore exactly.
#[derive(Debug, PartialEq, Eq, Clone)]
struct Snapshot {
    state: Option<u32>,
    left: Option<u32>,
    accepting: bool,
    mask: Vec<u32>,
}

fn snapshot(m: &Matcher<'_>, words: usize) -> Snapshot {
    let mut mask = vec![0u32; words];
    m.fill_mask(&mut mask);
    Snapshot {
        state: m.state(),
        left: m.tokens_left(),
        accepting: m.is_accepting(),
        mask,
    }
}

/// Checks the mask of `m` against `accept_token`, `is_allowed` and the
/// token count: every id up to a few thousand tokens, else the allowed
/// ones (up to 64) and a sample of the rest.
fn check_mask(g: &Grammar<'_>, m: &Matcher<'_>, mask: &[u32], input: &mut Input<'_>) {
    let words = g.mask_words();
    for (i, &w) in mask.iter().enumerate().skip(words) {
        assert_eq!(w, 0, "fill_mask left word {i} past mask_words() set");
    }
    if let Some(t) = allowed(&mask[..words]).find(|&t| t as usize >= g.token_count()) {
        panic!(
            "mask allows id {t}, at or past the token count {}",
            g.token_count()
        );
    }
    let check = |t: u32| {
        let bit = has(mask, t);
        assert_eq!(
            m.clone().accept_token(t),
            bit,
            "accept_token({t}) disagrees with the mask bit ({bit}) at {:?}",
            m.state()
        );
        assert_eq!(
            m.is_allowed(t),
            bit,
            "is_allowed({t}) disagrees with the mask"
        );
    };
    if g.mask_width() <= 4096 {
        (0..g.mask_width() as u32 + 2).for_each(check);
    } else {
        allowed(mask).take(64).for_each(check);
        for _ in 0..64 {
            check(input.below(g.mask_width() + 2) as u32);
        }
        g.eos_tokens().iter().copied().for_each(check);
    }
    if m.is_terminated() {
        let only_eos = allowed(&mask[..words]).all(|t| g.is_eos(t));
        assert!(
            only_eos,
            "a terminated matcher allows a token that is not EOS"
        );
    }
}

/// A short token sequence that mostly follows the grammar (each token
/// picked from the mask after the previous ones), sometimes not.
fn draft(input: &mut Input<'_>, g: &Grammar<'_>, m: &Matcher<'_>) -> Vec<u32> {
    let mut probe = *m;
    let mut mask = vec![0u32; g.mask_words()];
    let mut out = Vec::new();
    for _ in 0..1 + input.below(6) {
        probe.fill_mask(&mut mask);
        let t = pick(input, g, &mask);
        probe.accept_token(t);
        out.push(t);
    }
    out
}

/// Runs up to 64 API calls read from `input` on matchers of `g`. With
/// `strict` (a grammar the compiler wrote) it checks the serving
/// invariants: `accept_token(t)` succeeds exactly when `t`'s mask bit is
/// set; refused calls change nothing; `validate_tokens` agrees with
/// `accept_tokens` and does not advance; rollback restores the exact
/// earlier position and mask; budgets count down. Without, only that
/// nothing panics.
pub fn serve(g: &Grammar<'_>, input: &mut Input<'_>, strict: bool) {
    let words = g.mask_words();
    // One spare word: fill_mask must zero it.
    let mut mask = vec![u32::MAX; words + 1];
    let mut m = g.matcher();
    let mut created_budget = m.tokens_left();
    let mut rm = RollbackMatcher::new(g.matcher(), [Checkpoint::default(); 4]);
    let mut snaps: Vec<Snapshot> = Vec::new();
    let entries: Vec<(String, u32)> = g.entries().map(|(n, s)| (n.to_string(), s)).collect();
    // The vocabulary spells every single byte: forced bytes then always
    // lead to a state some token sequence goes on from.
    let byte_vocab = strict
        && (0..=255u8).all(|b| {
            (0..g.token_count().min(512) as u32).any(|t| g.token_bytes(t) == Some(&[b][..]))
        });
    for _ in 0..64 {
        if input.is_empty() {
            break;
        }
        m.fill_mask(&mut mask);
        match input.u8() % 16 {
            0 => {
                if strict {
                    check_mask(g, &m, &mask, input);
                }
            }
            1 | 2 => {
                let t = pick(input, g, &mask);
                let before = m;
                let ok = m.accept_token(t);
                if strict {
                    assert_eq!(ok, has(&mask, t), "accept_token({t}) vs its mask bit");
                    if ok && !before.is_terminated() {
                        if let Some(l) = before.tokens_left() {
                            // (EOS is allowed with none left, and free then.)
                            let want = Some(l.saturating_sub(1));
                            assert_eq!(m.tokens_left(), want, "a token costs one");
                        }
                    } else {
                        assert_eq!(snapshot(&m, words), snapshot(&before, words));
                    }
                }
            }
            3 => {
                let ts = draft(input, g, &m);
                let v = m.validate_tokens(&ts);
                let before = m;
                let n = m.accept_tokens(&ts);
                if strict {
                    assert_eq!(v, n, "validate_tokens vs accept_tokens on {ts:?}");
                    let mut one = before;
                    let k = ts.iter().take_while(|&&t| one.accept_token(t)).count();
                    assert_eq!(k, n, "accept_tokens vs accept_token one by one");
                    assert_eq!(snapshot(&one, words), snapshot(&m, words));
                    let mut again = vec![0u32; words];
                    before.fill_mask(&mut again);
                    assert_eq!(again, mask[..words], "validate_tokens advanced");
                }
            }
            4 => {
                let mut buf = [0u8; 8];
                let bytes: Vec<u8> = match input.u8() % 3 {
                    0 => {
                        let n = m.forced_bytes(&mut buf);
                        buf[..n].to_vec()
                    }
                    1 => {
                        let t = pick(input, g, &mask);
                        g.token_bytes(t).unwrap_or(b"").to_vec()
                    }
                    _ => {
                        let n = input.below(5);
                        (0..n).map(|_| input.u8()).collect()
                    }
                };
                let before = m;
                if !m.accept_bytes(&bytes) && strict {
                    assert_eq!(snapshot(&m, words), snapshot(&before, words));
                }
            }
            5 => {
                let left = match input.u8() % 4 {
                    0 => None,
                    1 => Some(input.u8() as u32 % 40),
                    2 => Some(u32::MAX - input.u8() as u32 % 2),
                    _ => Some(input.u32()),
                };
                let before = m;
                match m.set_budget(left) {
                    Ok(()) if strict => {
                        let want = left.map(|n| n.min(u32::MAX - 1));
                        assert_eq!(m.tokens_left(), want, "set_budget({left:?})");
                    }
                    Err(e) if strict => {
                        assert!(e.budget_shortfall().is_some(), "{e}");
                        assert_eq!(snapshot(&m, words), snapshot(&before, words));
                    }
                    _ => {}
                }
            }
            6 => {
                m.reset();
                if strict {
                    assert_eq!(m.state(), Some(g.start_state()));
                    assert_eq!(m.tokens_left(), created_budget);
                }
            }
            7 => {
                let k = input.below(entries.len() + 1);
                let name = entries.get(k).map_or("no such entry", |e| e.0.as_str());
                let before = m;
                let ok = m.reset_to(name);
                if strict {
                    if ok {
                        assert_eq!(m.state(), entries.get(k).map(|e| e.1));
                        assert_eq!(m.tokens_left(), created_budget);
                    } else {
                        assert_eq!(snapshot(&m, words), snapshot(&before, words));
                    }
                }
            }
            8 => {
                let mut buf = [0u8; 16];
                let cap = input.below(17);
                let n = m.forced_bytes(&mut buf[..cap]);
                assert!(n <= cap);
                if strict {
                    assert!(buf[..n].iter().all(|&b| b < 0xFE), "forced {:?}", &buf[..n]);
                    if n > 0 && byte_vocab && !m.is_accepting() {
                        let mut free = m;
                        if free.set_budget(None).is_ok() {
                            assert!(
                                free.accept_bytes(&buf[..n]),
                                "forced bytes {:?} refused by accept_bytes",
                                &buf[..n]
                            );
                        }
                    }
                }
            }
            9 | 10 => {
                let mut rmask = vec![0u32; words];
                rm.fill_mask(&mut rmask);
                let t = pick(input, g, &rmask);
                let before = snapshot(rm.matcher(), words);
                let ok = rm.accept_token(t);
                if strict {
                    assert_eq!(ok, has(&rmask, t), "rollback matcher accept_token({t})");
                }
                if ok {
                    snaps.push(before);
                    if snaps.len() > rm.capacity() {
                        snaps.remove(0);
                    }
                }
                if strict {
                    assert_eq!(rm.depth(), snaps.len());
                }
            }
            11 => {
                let n = input.below(rm.capacity() + 2);
                let before = snapshot(rm.matcher(), words);
                let ok = rm.rollback(n);
                if strict {
                    assert_eq!(
                        ok,
                        n <= snaps.len(),
                        "rollback({n}) at depth {}",
                        snaps.len()
                    );
                }
                if ok && n > 0 {
                    let want = snaps[snaps.len() - n].clone();
                    snaps.truncate(snaps.len() - n);
                    if strict {
                        assert_eq!(snapshot(rm.matcher(), words), want, "rollback({n})");
                    }
                } else if strict {
                    assert_eq!(snapshot(rm.matcher(), words), before);
                }
            }
            12 => {
                let ts = draft(input, g, rm.matcher());
                let before = snapshot(rm.matcher(), words);
                let v = rm.validate_tokens(&ts);
                let n = rm.accept_tokens(&ts);
                if strict {
                    assert_eq!(v, n);
                }
                // Roll the whole draft back at once: the position before it
                // comes back; checkpoints older than the capacity allowed
                // are gone.
                if rm.rollback(n) {
                    if strict {
                        assert_eq!(snapshot(rm.matcher(), words), before, "rollback of a draft");
                    }
                    let d = rm.depth();
                    if snaps.len() > d {
                        snaps.drain(..snaps.len() - d);
                    }
                } else {
                    rm.forget();
                    snaps.clear();
                }
                if strict {
                    assert_eq!(rm.depth(), snaps.len());
                }
            }
            13 => {
                match input.u8() % 4 {
                    0 => rm.reset(),
                    1 => {
                        // Rolling back restores the earlier tokens left:
                        // the snapshots stay valid.
                        let _ = rm.set_budget(Some(input.u8() as u32 % 50));
                        continue;
                    }
                    2 => {
                        let k = input.below(entries.len() + 1);
                        let name = entries.get(k).map_or("nope", |e| e.0.as_str());
                        if !rm.reset_to(name) {
                            continue;
                        }
                    }
                    _ => rm.forget(),
                }
                snaps.clear();
                assert_eq!(rm.depth(), 0);
            }
            14 => {
                // A fresh matcher: budgeted, at an entry, or both.
                let n = match input.u8() % 3 {
                    0 => input.u8() as u32 % 64,
                    1 => g.min_tokens(),
                    _ => input.u32(),
                };
                let k = input.below(entries.len() + 1);
                let name = entries.get(k).map_or("nope", |e| e.0.as_str());
                let fresh = match input.u8() % 4 {
                    0 => g.matcher_with_budget(n).ok(),
                    1 => g.matcher_at(name),
                    2 => g.matcher_at_with_budget(name, n).ok(),
                    _ => Some(g.matcher()),
                };
                if let Some(f) = fresh {
                    if strict && input.u8() & 1 == 0 {
                        let mut fm = vec![0u32; words + 1];
                        f.fill_mask(&mut fm);
                        check_mask(g, &f, &fm, input);
                    }
                    m = f;
                    created_budget = m.tokens_left();
                }
            }
            _ => {
                // The grammar's own queries, on any state (in range or not).
                let s = match input.u8() % 3 {
                    0 => m.state().unwrap_or(0),
                    1 => input.below(g.state_count() + 2) as u32,
                    _ => input.u32(),
                };
                let left = [0, 1, 2, input.u8() as u32, u32::MAX][input.below(5)];
                let mut buf = vec![0u32; words];
                g.fill_budget_mask(s, left, &mut buf);
                let _ = (g.budget_mask_id(s, left), g.distance(s), g.top_tier(s));
                let _ = (g.tiers(s).count(), g.mask_id(s), g.is_accepting_state(s));
                let _ = (
                    g.next_state(s, input.u8()),
                    g.walk(s, &[input.u8(), input.u8()]),
                );
                let id = input.below(g.mask_count() + 1) as u32;
                let filled = g.fill_mask_by_id(id, &mut buf);
                let _ = g.mask_storage(id);
                if strict && filled {
                    for _ in 0..16 {
                        let t = input.below(g.mask_width() + 1) as u32;
                        assert_eq!(g.mask_contains(id, t), has(&buf, t), "mask {id} token {t}");
                    }
                }
            }
        }
    }
}

/// The `loader` fuzz target's body: `files` are compressed seed artifacts,
/// `payloads` their payloads. The first input byte picks the mode:
/// - 0: the rest as a file, to `Artifact::from_bytes` (envelope, zstd, raw);
/// - 1: the rest as a payload, checksum re-stamped, to `Grammar::from_bytes`;
/// - 2, 3: structured edits of a seed payload, checksum re-stamped, then
///   served if it loads;
/// - 4: one byte of a compressed seed file changed, or the file cut: must
///   be refused (the envelope covers every byte).
pub fn fuzz_loader(data: &[u8], files: &[&[u8]], payloads: &[Vec<u8>]) {
    let mut input = Input::new(data);
    match input.u8() % 5 {
        0 => {
            let _ = tooldec_runtime::Artifact::from_bytes(input.rest());
        }
        1 => {
            let mut q = input.rest().to_vec();
            layout::stamp_checksum(&mut q);
            load_and_serve(&q, &mut Input::new(&[]));
        }
        2 | 3 => {
            let p = &payloads[input.below(payloads.len())];
            let e = edits(&mut input, p);
            let q = apply(p, &e);
            load_and_serve(&q, &mut input);
        }
        _ => {
            let mut f = files[input.below(files.len())].to_vec();
            if input.u8() & 1 == 0 {
                let at = input.below(f.len());
                f[at] ^= input.u8().max(1);
            } else {
                f.truncate(input.below(f.len()));
            }
            assert!(
                tooldec_runtime::Artifact::from_bytes(&f).is_err(),
                "a damaged file loaded"
            );
        }
    }
}

/// The `matcher` fuzz target's body: API calls on one of `grammars` (the
/// last, a large one, one time in eight), invariants checked.
pub fn fuzz_matcher(data: &[u8], grammars: &[Grammar<'_>]) {
    let mut input = Input::new(data);
    let last = grammars.len() - 1;
    let which = match input.u8() % 8 {
        0 => last,
        k => k as usize % last.max(1),
    };
    serve(&grammars[which], &mut input, true);
}
