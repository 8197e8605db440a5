//! Building masks, and keeping the distinct ones.
//!
//! A mask is `ceil(vocab / 32)` words (4,008 at 128k tokens), but most
//! masks of a tool grammar set a handful of them: a quote, a key, a digit.
//! Pass 3 builds a few masks per state, and clearing, combining, hashing
//! and comparing them word by word cost more than the walks that find
//! their tokens (DESIGN.md §5). A [`Building`] mask remembers which words
//! it set and which whole token sets it merged, a [`Memo`] gives a known
//! way of building a mask its id at once, and a [`MaskSet`] keeps each
//! distinct mask as its nonzero words.

use crate::automaton::dfa::WordMap;

use super::regions::Toks;

/// Token lists of a region's inside walk up to this long are set token by
/// token; longer ones are merged by reference, like bitsets.
const SHORT_LIST: usize = 32;

/// A mask under construction: whole token sets allowed as they are (a
/// region's inside tokens, most of the vocabulary), and the other tokens
/// as words that remember which of them are nonzero.
pub(super) struct Building<'w> {
    /// The token sets merged in whole, by reference: never copied until
    /// the mask turns out to be new (see [`Memo`]).
    bases: Vec<&'w Toks>,
    /// The tokens set one by one.
    words: Vec<u32>,
    /// The nonzero words' indices, in the order they were first set.
    used: Vec<u32>,
}

impl<'w> Building<'w> {
    /// An empty mask of `words` words.
    pub fn new(words: usize) -> Building<'w> {
        Building {
            bases: Vec::new(),
            words: vec![0; words],
            used: Vec::new(),
        }
    }

    /// Allows token `t`.
    pub fn set(&mut self, t: u32) {
        let i = (t >> 5) as usize;
        if self.words[i] == 0 {
            self.used.push(i as u32);
        }
        self.words[i] |= 1 << (t & 31);
    }

    /// Allows the tokens of `toks`: a short list at once, a long one or a
    /// bitset by reference.
    pub fn set_all(&mut self, toks: &'w Toks) {
        match toks {
            Toks::List(ids) if ids.len() <= SHORT_LIST => ids.iter().for_each(|&t| self.set(t)),
            _ => self.bases.push(toks),
        }
    }

    /// Allows every token `other` allows.
    pub fn merge(&mut self, other: &Building<'w>) {
        self.bases.extend_from_slice(&other.bases);
        for &i in &other.used {
            let i = i as usize;
            if self.words[i] == 0 {
                self.used.push(i as u32);
            }
            self.words[i] |= other.words[i];
        }
    }

    /// Whether it allows nothing.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty() && self.bases.is_empty()
    }

    /// Allows nothing again.
    pub fn clear(&mut self) {
        for &i in &self.used {
            self.words[i as usize] = 0;
        }
        self.used.clear();
        self.bases.clear();
    }

    /// Whether more than a sixteenth of the words set one by one are
    /// nonzero: past that, one pass over all the words is cheaper than
    /// sorting the indices of the nonzero ones.
    fn is_wide(&self) -> bool {
        self.used.len() * 16 > self.words.len()
    }

    /// The nonzero words set one by one as `(index, word)`, ascending,
    /// into `out`.
    fn nonzero(&mut self, out: &mut Vec<(u32, u32)>) {
        out.clear();
        self.used.sort_unstable();
        out.extend(self.used.iter().map(|&i| (i, self.words[i as usize])));
    }
}

/// A thread's mask ids by how the masks were built: the token sets merged
/// in whole (by address) and the other tokens' words. Equal recipes make equal
/// masks, so a known recipe gives its id without the mask's ~4,000 words
/// being combined, hashed and compared; a new one is built and looked up
/// in the [`MaskSet`] by content as before, so the ids are exactly those
/// the content alone gives (different recipes for one mask find one id).
/// Why: a string body's states each allow the same region bitset plus a
/// few exit tokens, and combining, hashing and comparing those bitsets
/// word by word was most of pass 3 (DESIGN.md §5). The `'w` borrow keeps
/// the bitsets alive, and so their addresses unique, while the memo lives.
pub(super) struct Memo<'w> {
    ids: WordMap<Box<[u64]>, u32>,
    key: Vec<u64>,
    pairs: Vec<(u32, u32)>,
    dense: Vec<u32>,
    /// The keys' bytes, for [`Memo::bytes`].
    held: usize,
    _bases: std::marker::PhantomData<&'w Toks>,
}

impl<'w> Memo<'w> {
    pub fn new() -> Memo<'w> {
        Memo {
            ids: WordMap::default(),
            key: Vec::new(),
            pairs: Vec::new(),
            dense: Vec::new(),
            held: 0,
            _bases: std::marker::PhantomData,
        }
    }

    /// What the memo holds, for the compile's memory account.
    pub fn bytes(&self) -> usize {
        self.held + self.dense.len() * 4
    }

    /// The id in `set` of `mask`'s tokens.
    pub fn id(&mut self, set: &mut MaskSet, mask: &mut Building<'w>) -> u32 {
        if mask.bases.is_empty() {
            return set.id(mask);
        }
        let address = |b: &&Toks| *b as *const Toks as u64;
        mask.bases.sort_unstable_by_key(address);
        mask.bases.dedup_by_key(|b| address(b));
        mask.nonzero(&mut self.pairs);
        self.key.clear();
        self.key.extend(mask.bases.iter().map(address));
        self.key.push(u64::MAX);
        self.key
            .extend(self.pairs.iter().map(|&(i, w)| (i as u64) << 32 | w as u64));
        if let Some(&id) = self.ids.get(self.key.as_slice()) {
            return id;
        }
        self.dense.clear();
        self.dense.extend_from_slice(&mask.words);
        for base in &mask.bases {
            base.or_into(&mut self.dense);
        }
        let id = set.id_dense(&self.dense);
        self.held += self.key.len() * 8 + 48;
        self.ids.insert(self.key.as_slice().into(), id);
        id
    }
}

/// A thread's distinct masks, found by hash.
#[derive(Default)]
pub(super) struct MaskSet {
    by_hash: WordMap<u64, Vec<u32>>,
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

    /// The id of `mask`'s tokens, new or seen before; `mask` has no
    /// bitsets merged in (those go through a [`Memo`]).
    pub fn id(&mut self, mask: &mut Building<'_>) -> u32 {
        debug_assert!(mask.bases.is_empty());
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
    pub fn id_dense(&mut self, words: &[u32]) -> u32 {
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
    /// by token, from a bitset or a long list by reference, merged, through
    /// the memo or not), and different tokens another.
    #[test]
    fn equal_masks_get_one_id_however_built() {
        let tokens: Vec<u32> = (0..100).map(|i| i * 2 + i % 3).collect();
        let mut bits = vec![0u32; 8];
        for &t in &tokens {
            bits[t as usize / 32] |= 1 << (t % 32);
        }
        let bits = Toks::Bits(bits);
        let long = Toks::List(tokens[..60].to_vec());
        let short = Toks::List(tokens[60..70].to_vec());
        let (mut set, mut memo) = (MaskSet::default(), Memo::new());
        let mut a = Building::new(8);
        tokens.iter().rev().for_each(|&t| a.set(t));
        let id = set.id(&mut a);
        let mut b = Building::new(8);
        b.set_all(&bits);
        assert_eq!(memo.id(&mut set, &mut b), id);
        // A long list by reference, a short one token by token, the rest
        // merged from another mask that also holds the long list.
        let mut c = Building::new(8);
        c.set_all(&long);
        c.set_all(&short);
        let mut part = Building::new(8);
        part.set_all(&long);
        tokens[70..].iter().for_each(|&t| part.set(t));
        c.merge(&part);
        assert_eq!(memo.id(&mut set, &mut c), id);
        // Known recipes, again and after a clear.
        assert_eq!(memo.id(&mut set, &mut c), id);
        b.clear();
        b.set_all(&bits);
        assert_eq!(memo.id(&mut set, &mut b), id);
        // One more token: another mask.
        b.set(255);
        let other = memo.id(&mut set, &mut b);
        assert_ne!(other, id);
        a.set(255);
        assert_eq!(set.id(&mut a), other);
        // Cleared, a mask is empty again and tracks words anew.
        b.clear();
        b.set(7);
        let mut d = Building::new(8);
        d.set(7);
        assert_eq!(set.id(&mut b), set.id(&mut d));
        assert_eq!(dense(&set.list[id as usize], 8), {
            let Toks::Bits(w) = &bits else { unreachable!() };
            w.clone()
        });
        assert_eq!(set.list.len(), 3);
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
