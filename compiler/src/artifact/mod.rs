//! The artifact stage: the DFA, its masks and the vocab written in the
//! layout `tooldec_runtime` reads in place ([`write`]), the metadata
//! section's keys written and read in one place ([`meta`]), and a readable
//! text dump of a loaded artifact for snapshot tests ([`dump`]).

pub mod dump;
pub mod meta;
pub mod write;
