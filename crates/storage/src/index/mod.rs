//! The indexes of a segment: [`OffsetIndex`] (`.index`) and [`TimeIndex`] (`.timeindex`), both
//! over [`IndexFile`], which keeps the entries in memory and writes Kafka's bytes through
//! [`crate::io::Fs`]; and [`TransactionIndex`] (`.txnindex`), the segment's aborted transactions.
//! [`IndexSlots`] reads an index file slot by slot, as it is on disk, for tools.

mod file;
mod offset_index;
mod slots;
mod time_index;
mod txn_index;

pub use file::{IndexEntry, IndexFile, SearchKey, WARM_SECTION_BYTES, largest_lower_bound_slot};
pub use offset_index::{OffsetIndex, OffsetPosition};
pub use slots::IndexSlots;
pub use time_index::{TimeIndex, TimestampOffset};
pub use txn_index::{TransactionIndex, TxnIndexSearchResult};

/// Kafka's default `segment.index.bytes` (`log.index.size.max.bytes`): 10 MiB.
pub const INDEX_BYTES_MAX_DEFAULT: u64 = 10 * 1024 * 1024;
