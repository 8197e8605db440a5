//! The machine: BYTE_CLASSES, TRANSITIONS and STATES.

use super::header::Counts;
use super::layout::{self, sec, STATE_ACCEPTING};
use super::Source;
use crate::error::Error;

/// The DFA over bytes: each byte's class, the transition table (row 0, the
/// dead state, all zeros) and per state its mask id and accepting flag.
#[derive(Clone, Copy, Debug)]
pub struct Dfa<'a> {
    /// BYTE_CLASSES: the class of each byte value (256 bytes).
    pub classes: &'a [u8],
    /// The number of byte classes (1–256): the width of a row.
    pub n_classes: u32,
    /// TRANSITIONS: the next state of (state, class), row-major.
    pub transitions: &'a [u32],
    /// STATES: bit 31 accepting ([`STATE_ACCEPTING`]), bits 0–30 the mask id.
    pub states: &'a [u32],
}

impl<'a> Dfa<'a> {
    /// Reads and checks the three sections: byte classes below the class
    /// count; every transition below the state count and row 0 all dead;
    /// every mask id below the mask count and the dead state not accepting.
    pub(crate) fn read(src: &Source<'a>, c: &Counts) -> Result<Self, Error> {
        let n_classes = c.n_classes;
        let nc = n_classes as usize;
        let classes = src.bytes(sec::BYTE_CLASSES);
        if classes.len() != 256 {
            return Err(Error::field(
                "byte class table length",
                256,
                classes.len() as u64,
            ));
        }
        if let Some((b, &k)) = classes.iter().enumerate().find(|(_, &k)| k as usize >= nc) {
            return Err(Error::range(
                "byte class of byte",
                b as u64,
                k as u64,
                nc as u64,
            ));
        }
        let n_trans = c
            .n_states
            .checked_mul(nc)
            .ok_or(Error::section(sec::TRANSITIONS, "has an overflowing size"))?;
        let transitions = src.words(sec::TRANSITIONS, Some(n_trans))?;
        for (i, &t) in transitions.iter().enumerate() {
            if t as usize >= c.n_states {
                return Err(Error::range(
                    "transition",
                    i as u64,
                    t as u64,
                    c.n_states as u64,
                ));
            }
            if i < nc && t != layout::DEAD_STATE {
                return Err(Error::field(
                    "transition out of the dead state",
                    0,
                    t as u64,
                ));
            }
        }
        let states = src.words(sec::STATES, Some(c.n_states))?;
        for (i, &w) in states.iter().enumerate() {
            let mask = w & !STATE_ACCEPTING;
            if mask as usize >= c.n_masks {
                return Err(Error::range(
                    "mask id of state",
                    i as u64,
                    mask as u64,
                    c.n_masks as u64,
                ));
            }
        }
        if states[0] & STATE_ACCEPTING != 0 {
            return Err(Error::field("accepting flag of the dead state", 0, 1));
        }
        Ok(Dfa {
            classes,
            n_classes,
            transitions,
            states,
        })
    }

    /// The state reached from `state` on `byte` (0: dead, or out of range).
    #[inline]
    pub(crate) fn next_state(&self, state: u32, byte: u8) -> u32 {
        if state as usize >= self.states.len() {
            return layout::DEAD_STATE;
        }
        let class = self.classes[byte as usize] as usize;
        self.transitions[state as usize * self.n_classes as usize + class]
    }

    /// Walks `bytes` from `state`; `None` if the walk dies.
    #[inline]
    pub(crate) fn walk(&self, mut state: u32, bytes: &[u8]) -> Option<u32> {
        if state as usize >= self.states.len() {
            return None;
        }
        let nc = self.n_classes as usize;
        for &b in bytes {
            let class = self.classes[b as usize] as usize;
            state = self.transitions[state as usize * nc + class];
            if state == layout::DEAD_STATE {
                return None;
            }
        }
        Some(state)
    }

    /// Whether `state` accepts (false out of range).
    #[inline]
    pub(crate) fn is_accepting(&self, state: u32) -> bool {
        self.states
            .get(state as usize)
            .is_some_and(|w| w & STATE_ACCEPTING != 0)
    }

    /// The mask id `state` serves without a budget.
    #[inline]
    pub(crate) fn mask_id(&self, state: u32) -> Option<u32> {
        self.states
            .get(state as usize)
            .map(|w| w & !STATE_ACCEPTING)
    }

    /// The one text byte that leads on from `state`, if exactly one does:
    /// `None` when there is a choice, no way on, or only a reserved byte
    /// (a special token or an entry selector, never text).
    pub(crate) fn only_byte(&self, state: u32) -> Option<u8> {
        let nc = self.n_classes as usize;
        let row = self
            .transitions
            .get(state as usize * nc..(state as usize + 1) * nc)?;
        let mut live = row
            .iter()
            .enumerate()
            .filter(|(_, &t)| t != layout::DEAD_STATE);
        let (class, _) = live.next()?;
        if live.next().is_some() {
            return None;
        }
        let mut bytes = (0..=255u8).filter(|&b| self.classes[b as usize] as usize == class);
        let byte = bytes.next()?;
        (bytes.next().is_none() && !layout::reserved::is_reserved(byte)).then_some(byte)
    }

    /// The sections' bytes, in id order.
    #[cfg(feature = "std")]
    pub(crate) fn write(&self, out: &mut super::Writer) {
        out.bytes(sec::BYTE_CLASSES, self.classes);
        out.words(sec::TRANSITIONS, self.transitions);
        out.words(sec::STATES, self.states);
    }
}
