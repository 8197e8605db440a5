//! Building masks, and keeping the distinct ones.
//!
//! A mask is `ceil(vocab / 32)` words (4,008 at 128k tokens), but most
//! masks of a tool grammar set a handful of them: a quote, a key, a digit.
//! Pass 3 builds a few masks per state, and clearing, combining, hashing
//! and comparing them word by word cost more than the walks that find
//! their tokens (DESIGN.md §5). A [`Building`] mask remembers which words
//! it set, and a [`MaskSet`] keeps each distinct mask as its nonzero words.

use std::collections::HashMap;

use super::regions::Toks;

/// A mask under construction: its words, and which of them are nonzero.
pub(super) struct Building {
    words: Vec<u32>,
    /// The nonzero words' indices, in the order they were first set;
    /// unused once `dense`.
    used: Vec<u32>,
    /// A whole bitset was merged in: any word may be nonzero.
    dense: bool,
}

impl Building {
    /// An empty mask of `words` words.
    pub fn new(words: usize) -> Building {
        Building {
            words: vec![0; words],
            used: Vec::new(),
            dense: false,
        }
    }

    /// Allows token `t`.
    pub fn set(&mut self, t: u32) {
        let i = (t >> 5) as usize;
        if self.words[i] == 0 && !self.dense {
            self.used.push(i as u32);
        }
        self.words[i] |= 1 << (t & 31);
    }

    /// Allows the tokens of `toks`.
    pub fn set_all(&mut self, toks: &Toks) {
        match toks {
            Toks::List(ids) => ids.iter().for_each(|&t| self.set(t)),
            Toks::Bits(bits) => self.or_words(bits),
        }
    }

    /// Allows every token `other` allows.
    pub fn merge(&mut self, other: &Building) {
        if other.dense {
            return self.or_words(&other.words);
        }
        for &i in &other.used {
            let i = i as usize;
            if self.words[i] == 0 && !self.dense {
                self.used.push(i as u32);
            }
            self.words[i] |= other.words[i];
        }
    }

    fn or_words(&mut self, bits: &[u32]) {
        self.dense = true;
        for (m, b) in self.words.iter_mut().zip(bits) {
            *m |= b;
        }
    }

    /// Allows nothing again.
    pub fn clear(&mut self) {
        if self.dense {
            self.words.fill(0);
        } else {
            for &i in &self.used {
                self.words[i as usize] = 0;
            }
        }
        self.used.clear();
        self.dense = false;
    }

    /// Whether any word may be nonzero, or more than a sixteenth are: past
    /// that, one pass over all the words is cheaper than sorting the
    /// indices of the nonzero ones.
    fn is_wide(&self) -> bool {
        self.dense || self.used.len() * 16 > self.words.len()
    }

    /// The nonzero words of a mask that is not [wide](Building::is_wide) as
    /// `(index, word)`, ascending, into `out`.
    fn nonzero(&mut self, out: &mut Vec<(u32, u32)>) {
        out.clear();
        self.used.sort_unstable();
        out.extend(self.used.iter().map(|&i| (i, self.words[i as usize])));
    }
}

/// A thread's distinct masks, found by hash.
#[derive(Default)]
pub(super) struct MaskSet {
    by_hash: HashMap<u64, Vec<u32>>,
    /// Each distinct mask as its nonzero words, ascending.
    pub list: Vec<Vec<(u32, u32)>>,
    /// Each mask's hash, for merging the threads' sets.
    pub hashes: Vec<u64>,
    scratch: Vec<(u32, u32)>,
    /// The nonzero words stored over all masks.
    words: usize,
}

impl MaskSet {
    /// What the stored masks hold, for the compile's memory account.
    pub fn bytes(&self) -> usize {
        self.words * 8 + self.list.len() * 48
    }

    /// The id of `mask`'s tokens, new or seen before.
    pub fn id(&mut self, mask: &mut Building) -> u32 {
        if mask.is_wide() {
            return self.id_dense(&mask.words);
        }
        mask.nonzero(&mut self.scratch);
        let h = hash_words(&self.scratch);
        let scratch = &self.scratch;
        let found = self.find(h, |stored| stored == scratch.as_slice());
        found.unwrap_or_else(|| self.insert(h, self.scratch.clone()))
    }

    /// [`MaskSet::id`] for a [wide](Building::is_wide) mask (a string
    /// body's: most of the vocabulary). Such masks recur state after
    /// state, so the words are hashed and compared where they lie and
    /// collected as pairs only when the mask is new.
    fn id_dense(&mut self, words: &[u32]) -> u32 {
        let nonzero = || {
            words
                .iter()
                .enumerate()
                .filter(|(_, &w)| w != 0)
                .map(|(i, &w)| (i as u32, w))
        };
        let (h, n) = hash_dense(words);
        let found = self.find(h, |stored| {
            stored.len() == n && stored.iter().all(|&(i, w)| words[i as usize] == w)
        });
        found.unwrap_or_else(|| self.insert(h, nonzero().collect()))
    }

    fn find(&self, h: u64, equal: impl Fn(&[(u32, u32)]) -> bool) -> Option<u32> {
        let ids = self.by_hash.get(&h)?;
        ids.iter()
            .copied()
            .find(|&id| equal(&self.list[id as usize]))
    }

    fn insert(&mut self, h: u64, mask: Vec<(u32, u32)>) -> u32 {
        let id = self.list.len() as u32;
        self.words += mask.len();
        self.list.push(mask);
        self.hashes.push(h);
        self.by_hash.entry(h).or_default().push(id);
        id
    }
}

/// The dense form of a mask kept as its nonzero words.
pub fn dense(nonzero: &[(u32, u32)], words: usize) -> Vec<u32> {
    let mut out = vec![0; words];
    for &(i, w) in nonzero {
        out[i as usize] = w;
    }
    out
}

/// A hash of a mask's nonzero words given as `(index, word)` pairs: the
/// same as [`hash_dense`] gives for the same tokens.
fn hash_words(words: &[(u32, u32)]) -> u64 {
    words
        .iter()
        .fold(0u64, |h, &(i, w)| h.wrapping_add(mix(i, w)))
}

/// [`hash_words`] over every word of a mask, and the number of nonzero
/// words: a sum of each nonzero word's mix, so it needs no branch and no
/// order over the ~4,000 words of a string body's mask.
fn hash_dense(words: &[u32]) -> (u64, usize) {
    let h = words
        .iter()
        .enumerate()
        .map(|(i, &w)| if w != 0 { mix(i as u32, w) } else { 0 })
        .fold(0u64, u64::wrapping_add);
    (h, words.iter().filter(|&&w| w != 0).count())
}

/// One word's share of a mask's hash.
#[inline]
fn mix(i: u32, w: u32) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let x = ((i as u64) << 32 | w as u64).wrapping_mul(K);
    (x ^ x >> 29).wrapping_mul(K)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same tokens give the same id however the mask was built (token
    /// by token, from a bitset, merged), and different tokens another.
    #[test]
    fn equal_masks_get_one_id_however_built() {
        let mut set = MaskSet::default();
        let mut a = Building::new(8);
        for t in [200, 3, 40, 3] {
            a.set(t);
        }
        let mut bits = vec![0u32; 8];
        for t in [3, 40, 200] {
            bits[t / 32] |= 1 << (t % 32);
        }
        let mut b = Building::new(8);
        b.set_all(&Toks::Bits(bits));
        let mut c = Building::new(8);
        let mut part = Building::new(8);
        part.set_all(&Toks::List(vec![3, 200]));
        c.set(40);
        c.merge(&part);
        let id = set.id(&mut a);
        assert_eq!(set.id(&mut b), id);
        assert_eq!(set.id(&mut c), id);
        c.set(41);
        assert_ne!(set.id(&mut c), id);
        // Cleared, a dense mask is empty again and tracks words anew.
        b.clear();
        b.set(7);
        let mut d = Building::new(8);
        d.set(7);
        assert_eq!(set.id(&mut b), set.id(&mut d));
        assert_eq!(dense(&set.list[id as usize], 8)[1], 1 << 8);
    }

    /// A mask hashes the same from its pairs and from its words.
    #[test]
    fn pairs_and_words_hash_alike() {
        let words: Vec<u32> = (0..500u32)
            .map(|i| {
                if i % 3 == 0 {
                    0
                } else {
                    i.wrapping_mul(2_654_435_761)
                }
            })
            .collect();
        let pairs: Vec<(u32, u32)> = words
            .iter()
            .enumerate()
            .filter(|(_, &w)| w != 0)
            .map(|(i, &w)| (i as u32, w))
            .collect();
        assert_eq!(hash_dense(&words), (hash_words(&pairs), pairs.len()));
        let mut other = words.clone();
        other[7] ^= 1;
        assert_ne!(hash_dense(&other).0, hash_words(&pairs));
    }
}
