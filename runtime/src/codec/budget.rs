//! Token budgets: DISTANCE, TIER_INDEX and TIERS. In range and ordered,
//! so that serving a budget indexes only inside them. (Whether the
//! distances are right is the compiler's guarantee; a wrong table yields
//! wrong masks, never an out-of-bounds read.)

#[cfg(feature = "std")]
use super::column;
use super::column::{Column, Head};
use super::header::Counts;
use super::layout::{sec, NO_DISTANCE, TIER_LIST_HEAD};
use super::Source;
use crate::error::{Error, ErrorKind};

/// Per state its distance to acceptance and its budget profile; per
/// profile its top tier (relative) and its list of lower budget tiers; the
/// lists, each stored once.
///
/// Why profiles: a state's top tier and tiers are stored relative to its
/// distance, so the states in the same place of a repeated structure have
/// the same pair, and at 10,000 tools 2.78 million states have a few
/// thousand: a state names its pair (one word) instead of holding it (two
/// words after its distance, 22 MB of the 242 MB payload).
///
/// DISTANCE is a [`Column`] of `(dist + 1, profile)` per state, 0 for no
/// distance: at 10,000 distinct tools 22 bits a state, against the two
/// words of format 6.
#[derive(Clone, Copy, Debug, Default)]
pub struct Budget<'a> {
    /// DISTANCE's bytes: per state `dist + 1` (0: none) and its profile,
    /// a pair of TIER_INDEX, as a column.
    pub distance: &'a [u8],
    /// The column DISTANCE holds.
    column: Column<'a>,
    /// TIER_INDEX: per profile `top + 1 - dist` and the first pair of its
    /// list in TIERS (0: none; the list's length is its head's).
    pub tier_index: &'a [u32],
    /// TIERS: lists of `(k + 1 - dist, mask id)`, each after a head pair.
    pub tiers: &'a [u32],
}

impl<'a> Budget<'a> {
    /// The budget tables of these sections, DISTANCE's head read from
    /// it: constant time, never panics.
    pub fn view(distance: &'a [u8], tier_index: &'a [u32], tiers: &'a [u32]) -> Budget<'a> {
        let head = Column::view(distance, 0).head();
        Budget::with_head(distance, tier_index, tiers, head)
    }

    /// The budget tables with the DISTANCE head that [`Budget::head`]
    /// gave when they were read: no load from the sections.
    #[inline]
    pub(crate) fn with_head(
        distance: &'a [u8],
        tier_index: &'a [u32],
        tiers: &'a [u32],
        head: Head,
    ) -> Budget<'a> {
        Budget {
            distance,
            column: Column::at(distance, head),
            tier_index,
            tiers,
        }
    }

    /// DISTANCE's head.
    pub(crate) fn head(&self) -> Head {
        self.column.head()
    }

    /// Reads and checks the three sections, then the default budget
    /// against the start state's distance.
    pub(crate) fn read(
        src: &Source<'a>,
        start: u32,
        max_tokens: u32,
        c: &Counts,
    ) -> Result<Self, Error> {
        let distance = src.bytes(sec::DISTANCE);
        let column = Column::read(distance, 0, sec::DISTANCE)?;
        if column.end() != distance.len() || column.len() != c.n_states {
            return Err(Error::field(
                "states in DISTANCE",
                c.n_states as u64,
                column.len() as u64,
            ));
        }
        let tier_index = src.words(sec::TIER_INDEX, None)?;
        if tier_index.len() % 2 != 0 {
            return Err(Error::section(
                sec::TIER_INDEX,
                "is not a list of (top, tier list) pairs",
            ));
        }
        let tiers = src.words(sec::TIERS, None)?;
        if tiers.len() % 2 != 0 {
            return Err(Error::section(
                sec::TIERS,
                "is not a list of (k, mask id) pairs",
            ));
        }
        let budget = Budget::with_head(distance, tier_index, tiers, column.head());
        if budget.distance(0) != NO_DISTANCE {
            return Err(Error::field(
                "distance of the dead state",
                NO_DISTANCE as u64,
                budget.distance(0) as u64,
            ));
        }
        budget.check_lists(c.n_masks)?;
        budget.check_profiles()?;
        budget.check_states(c.n_states)?;
        let need = budget.distance(start);
        if max_tokens != 0 && need > max_tokens {
            return Err(Error::field(
                "default budget (at least the start state's distance)",
                need as u64,
                max_tokens as u64,
            ));
        }
        Ok(budget)
    }

    /// The lists, each checked once (profiles share them): a head pair
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

    /// Each profile's list, in constant time: none, or a whole list (the
    /// pair before it is a head, which only a list's head can be) whose
    /// last `k` is below the profile's top.
    fn check_profiles(&self) -> Result<(), Error> {
        let tiers = self.tiers;
        let pairs = tiers.len() / 2;
        for (p, profile) in self.tier_index.chunks_exact(2).enumerate() {
            let (rel_top, off) = (profile[0], profile[1] as usize);
            if off == 0 {
                continue;
            }
            if off > pairs || tiers[2 * (off - 1)] != TIER_LIST_HEAD {
                return Err(Error::new(ErrorKind::TierRef { profile: p as u32 }));
            }
            // Inside TIERS: the head was checked with its list.
            let end = off + tiers[2 * (off - 1) + 1] as usize;
            if tiers[2 * (end - 1)] >= rel_top {
                return Err(Error::new(ErrorKind::TierOrder { profile: p as u32 }));
            }
        }
        Ok(())
    }

    /// Each state's profile: in range, without tiers when the state has no
    /// distance, and with a top that `dist` plus it fits a word.
    fn check_states(&self, n_states: usize) -> Result<(), Error> {
        let n_profiles = self.tier_index.len() / 2;
        for s in 0..n_states {
            let (dist, p) = self.state(s);
            if p >= n_profiles {
                return Err(Error::range(
                    "budget profile of state",
                    s as u64,
                    p as u64,
                    n_profiles as u64,
                ));
            }
            let (rel_top, off) = (self.tier_index[2 * p], self.tier_index[2 * p + 1]);
            if dist == NO_DISTANCE {
                if off != 0 {
                    return Err(Error::new(ErrorKind::Untiered { state: s as u32 }));
                }
                continue;
            }
            // `top + 1 = (top + 1 - dist) + dist` must be a u32: serving
            // adds the two.
            if dist.checked_add(rel_top).is_none() {
                return Err(Error::range(
                    "top tier (relative) of state",
                    s as u64,
                    rel_top as u64,
                    (u32::MAX - dist) as u64 + 1,
                ));
            }
        }
        Ok(())
    }

    /// `dist` of state `s` ([`NO_DISTANCE`] when none or out of range)
    /// and its profile's index.
    #[inline]
    pub(crate) fn state(&self, s: usize) -> (u32, usize) {
        let (d, p) = self.column.pair(s);
        (d.wrapping_sub(1), p as usize)
    }

    /// `dist` of `state` ([`NO_DISTANCE`] when none or out of range).
    #[inline]
    pub(crate) fn distance(&self, state: u32) -> u32 {
        self.state(state as usize).0
    }

    /// The profile pair of state `s` (in range).
    #[inline]
    fn profile(&self, s: usize) -> (u32, usize) {
        let p = self.state(s).1;
        (self.tier_index[2 * p], self.tier_index[2 * p + 1] as usize)
    }

    /// `top + 1 - dist` of state `s` (in range).
    #[inline]
    pub(crate) fn rel_top(&self, s: usize) -> u32 {
        self.profile(s).0
    }

    /// The stored (relative) tier pairs of state `s` (in range).
    #[inline]
    pub(crate) fn tier_list(&self, s: usize) -> &'a [u32] {
        let off = self.profile(s).1;
        if off == 0 {
            return &[];
        }
        // In range: checked when the artifact was loaded.
        let len = self.tiers[2 * (off - 1) + 1] as usize;
        &self.tiers[2 * off..2 * (off + len)]
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.bytes(sec::DISTANCE, self.distance);
        out.words(sec::TIER_INDEX, self.tier_index);
        out.words(sec::TIERS, self.tiers);
    }
}

/// Builds the three sections state by state, storing each tier list and
/// each profile once (relative to its state's distance, so that states in
/// the same place of a repeated structure share one).
#[cfg(feature = "std")]
#[derive(Clone, Debug, Default)]
pub struct BudgetBuilder {
    /// Per state `(dist + 1 or 0, profile)`.
    states: std::vec::Vec<(u32, u32)>,
    /// DISTANCE as [`BudgetBuilder::budget`] last encoded it.
    distance: std::vec::Vec<u8>,
    tier_index: std::vec::Vec<u32>,
    tiers: std::vec::Vec<u32>,
    lists: std::collections::HashMap<std::vec::Vec<u32>, u32>,
    profiles: std::collections::HashMap<(u32, u32), u32>,
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
            let p = self.profile(0, 0);
            self.states.push((0, p));
            return;
        };
        let list: std::vec::Vec<u32> = tiers.iter().flat_map(|&(k, m)| [k + 1 - d, m]).collect();
        let offset = if list.is_empty() {
            0
        } else {
            let tiers = &mut self.tiers;
            *self.lists.entry(list).or_insert_with_key(|list| {
                // Each list once, after its head pair: the loader checks
                // every list once, and a profile's reference in O(1).
                tiers.extend([TIER_LIST_HEAD, (list.len() / 2) as u32]);
                let at = (tiers.len() / 2) as u32;
                tiers.extend_from_slice(list);
                at
            })
        };
        let p = self.profile(top + 1 - d, offset);
        self.states.push((d + 1, p));
    }

    /// The index of profile `(rel_top, list)`, added when new.
    fn profile(&mut self, rel_top: u32, list: u32) -> u32 {
        let index = &mut self.tier_index;
        *self.profiles.entry((rel_top, list)).or_insert_with(|| {
            index.extend([rel_top, list]);
            (index.len() / 2 - 1) as u32
        })
    }

    /// The sections as built: DISTANCE is encoded here, at the widths
    /// the largest distance and profile need.
    pub fn budget(&mut self) -> Budget<'_> {
        let max_d = self.states.iter().map(|s| s.0).max().unwrap_or(0);
        let split = column::bits(max_d as u64);
        let values: std::vec::Vec<u64> = self
            .states
            .iter()
            .map(|&(d, p)| column::join(d, p, split))
            .collect();
        let mut words = std::vec::Vec::new();
        column::push(&mut words, &values, split);
        self.distance = super::le_bytes(&words);
        Budget::view(&self.distance, &self.tier_index, &self.tiers)
    }
}
