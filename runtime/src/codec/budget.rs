//! Token budgets: DISTANCE, TIER_INDEX and TIERS. In range and ordered,
//! so that serving a budget indexes only inside them. (Whether the
//! distances are right is the compiler's guarantee; a wrong table yields
//! wrong masks, never an out-of-bounds read.)

use super::header::Counts;
use super::layout::{sec, NO_DISTANCE, TIER_LIST_HEAD};
use super::Source;
use crate::error::{Error, ErrorKind};

/// Per state its distance to acceptance and top tier (relative), per state
/// the list of its lower budget tiers, and the lists, each stored once.
#[derive(Clone, Copy, Debug)]
pub struct Budget<'a> {
    /// DISTANCE: per state `dist` ([`NO_DISTANCE`]: none) and
    /// `top + 1 - dist`.
    pub distance: &'a [u32],
    /// TIER_INDEX: per state the first pair of its list and its length.
    pub tier_index: &'a [u32],
    /// TIERS: lists of `(k + 1 - dist, mask id)`, each after a head pair.
    pub tiers: &'a [u32],
}

impl<'a> Budget<'a> {
    /// Reads and checks the three sections, then the default budget
    /// against the start state's distance.
    pub(crate) fn read(
        src: &Source<'a>,
        start: u32,
        max_tokens: u32,
        c: &Counts,
    ) -> Result<Self, Error> {
        let distance = src.words(sec::DISTANCE, Some(c.n_states.saturating_mul(2)))?;
        if distance[0] != NO_DISTANCE {
            return Err(Error::field(
                "distance of the dead state",
                NO_DISTANCE as u64,
                distance[0] as u64,
            ));
        }
        let tier_index = src.words(sec::TIER_INDEX, Some(c.n_states.saturating_mul(2)))?;
        let tiers = src.words(sec::TIERS, None)?;
        if tiers.len() % 2 != 0 {
            return Err(Error::section(
                sec::TIERS,
                "is not a list of (k, mask id) pairs",
            ));
        }
        let budget = Budget {
            distance,
            tier_index,
            tiers,
        };
        budget.check_lists(c.n_masks)?;
        budget.check_states(c.n_states)?;
        let need = distance[2 * start as usize];
        if max_tokens != 0 && need > max_tokens {
            return Err(Error::field(
                "default budget (at least the start state's distance)",
                need as u64,
                max_tokens as u64,
            ));
        }
        Ok(budget)
    }

    /// The lists, each checked once (states share them): a head pair
    /// (TIER_LIST_HEAD, n), then n pairs with mask ids in range and `k`s
    /// strictly ascending, so that no `k` is a head; the lists fill TIERS.
    fn check_lists(&self, n_masks: usize) -> Result<(), Error> {
        let tiers = self.tiers;
        let pairs = tiers.len() / 2;
        let mut at = 0;
        while at < pairs {
            let (head, n) = (tiers[2 * at], tiers[2 * at + 1] as usize);
            if head != TIER_LIST_HEAD || n == 0 || n > pairs - at - 1 {
                return Err(Error::new(ErrorKind::TierList {
                    pair: at as u32,
                    why: "is not the head of a list of one or more pairs inside the section",
                }));
            }
            let first = at + 1;
            let mut prev: Option<u32> = None;
            for (i, pair) in tiers[2 * first..2 * (first + n)]
                .chunks_exact(2)
                .enumerate()
            {
                let (k, mask) = (pair[0], pair[1]);
                if mask as usize >= n_masks {
                    return Err(Error::range(
                        "tier mask id of pair",
                        (first + i) as u64,
                        mask as u64,
                        n_masks as u64,
                    ));
                }
                if k == TIER_LIST_HEAD || prev.is_some_and(|p| p >= k) {
                    return Err(Error::new(ErrorKind::TierList {
                        pair: at as u32,
                        why: "heads a list whose k values are not strictly ascending",
                    }));
                }
                prev = Some(k);
            }
            at = first + n;
        }
        Ok(())
    }

    /// Each state's reference, in constant time: a whole list (the pair
    /// before it is a head, which only a list's head can be, with the
    /// state's length), whose last `k` is below the state's top.
    fn check_states(&self, n_states: usize) -> Result<(), Error> {
        let (distance, tier_index, tiers) = (self.distance, self.tier_index, self.tiers);
        let pairs = tiers.len() / 2;
        for s in 0..n_states {
            // `top + 1 = (top + 1 - dist) + dist` must be a u32: serving
            // adds the two.
            let (dist, rel_top) = (distance[2 * s], distance[2 * s + 1]);
            if dist != NO_DISTANCE && dist.checked_add(rel_top).is_none() {
                return Err(Error::range(
                    "top tier (relative) of state",
                    s as u64,
                    rel_top as u64,
                    (u32::MAX - dist) as u64 + 1,
                ));
            }
            let (off, len) = (tier_index[2 * s] as usize, tier_index[2 * s + 1] as usize);
            let end = off.saturating_add(len);
            if end > pairs {
                return Err(Error::range(
                    "tier list end of state",
                    s as u64,
                    end as u64,
                    pairs as u64 + 1,
                ));
            }
            if len == 0 {
                continue;
            }
            if dist == NO_DISTANCE {
                return Err(Error::new(ErrorKind::TierOrder { state: s as u32 }));
            }
            let whole = off > 0
                && tiers[2 * (off - 1)] == TIER_LIST_HEAD
                && tiers[2 * (off - 1) + 1] as usize == len;
            if !whole {
                return Err(Error::new(ErrorKind::TierRef { state: s as u32 }));
            }
            if tiers[2 * (end - 1)] >= rel_top {
                return Err(Error::new(ErrorKind::TierOrder { state: s as u32 }));
            }
        }
        Ok(())
    }

    /// `dist` of `state` ([`NO_DISTANCE`] when none or out of range).
    #[inline]
    pub(crate) fn distance(&self, state: u32) -> u32 {
        self.distance
            .get(2 * state as usize)
            .copied()
            .unwrap_or(NO_DISTANCE)
    }

    /// `top + 1 - dist` of state `s` (in range).
    #[inline]
    pub(crate) fn rel_top(&self, s: usize) -> u32 {
        self.distance[2 * s + 1]
    }

    /// The stored (relative) tier pairs of state `s` (in range).
    #[inline]
    pub(crate) fn tier_list(&self, s: usize) -> &'a [u32] {
        let (off, len) = (
            self.tier_index[2 * s] as usize,
            self.tier_index[2 * s + 1] as usize,
        );
        // In range: checked when the artifact was loaded.
        &self.tiers[2 * off..2 * (off + len)]
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.words(sec::DISTANCE, self.distance);
        out.words(sec::TIER_INDEX, self.tier_index);
        out.words(sec::TIERS, self.tiers);
    }
}

/// Builds the three sections state by state, storing each tier list once
/// (relative to its state's distance, so that states in the same place of
/// a repeated structure share one).
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct BudgetBuilder {
    distance: std::vec::Vec<u32>,
    tier_index: std::vec::Vec<u32>,
    tiers: std::vec::Vec<u32>,
    lists: std::collections::HashMap<std::vec::Vec<u32>, u32>,
}

#[cfg(feature = "std")]
impl BudgetBuilder {
    /// No states yet.
    pub fn new() -> BudgetBuilder {
        BudgetBuilder::default()
    }

    /// Appends the next state: its distance to acceptance (`None`: no
    /// token sequence reaches it), its top tier (the largest distance its
    /// tokens lead to) and its lower tiers `(k, mask id)`, ascending in
    /// `k` (none when it has no distance).
    pub fn push(&mut self, dist: Option<u32>, top: u32, tiers: &[(u32, u32)]) {
        let Some(d) = dist else {
            debug_assert!(tiers.is_empty());
            self.distance.extend([NO_DISTANCE, 0]);
            self.tier_index.extend([0, 0]);
            return;
        };
        self.distance.extend([d, top + 1 - d]);
        let list: std::vec::Vec<u32> = tiers.iter().flat_map(|&(k, m)| [k + 1 - d, m]).collect();
        let offset = if list.is_empty() {
            0
        } else {
            let tiers = &mut self.tiers;
            *self.lists.entry(list).or_insert_with_key(|list| {
                // Each list once, after its head pair: the loader checks
                // every list once, and a state's reference in O(1).
                tiers.extend([TIER_LIST_HEAD, (list.len() / 2) as u32]);
                let at = (tiers.len() / 2) as u32;
                tiers.extend_from_slice(list);
                at
            })
        };
        self.tier_index.extend([offset, tiers.len() as u32]);
    }

    /// The sections as built.
    pub fn budget(&self) -> Budget<'_> {
        Budget {
            distance: &self.distance,
            tier_index: &self.tier_index,
            tiers: &self.tiers,
        }
    }
}
