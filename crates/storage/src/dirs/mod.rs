//! Log directories: checkpoint files written atomically ([`checkpoint`]), `meta.properties`,
//! `partition.metadata` and the clean-shutdown marker ([`meta`]).

pub mod checkpoint;
pub mod meta;
