//! Kafka's bytes, with no I/O: record batches of magic 0, 1 and 2, their records and compression,
//! control records, index entries, file and directory names, checkpoint files, and producer-state
//! snapshots.
//!
//! Every decoder takes untrusted bytes and returns a [`DecodeError`] that says what is wrong and
//! where; none panics, and every decompression is bounded by [`DecodeLimits`].
//!
//! Start with [`Batches`] to walk a `.log` file or a fetched record set, [`RecordBatch`] for one
//! v2 batch, and [`RecordBatchBuilder`] to write one.

#![deny(clippy::indexing_slicing, clippy::expect_used)]

pub mod batch;
pub mod builder;
pub mod checkpoint;
pub mod compression;
pub mod control;
pub mod entry;
pub mod error;
pub mod index;
pub mod java;
pub mod legacy;
pub mod names;
pub mod producer_snapshot;
pub mod record;
pub mod scan;
pub mod schema;
#[cfg(feature = "testing")]
pub mod testing;
pub mod varint;

pub use batch::{
    RecordBatch, RecordBatchMut, TimestampType, decrement_sequence, increment_sequence,
};
pub use builder::{BatchHeader, EmptyHeader, RecordBatchBuilder, end_transaction_marker_batch};
pub use compression::{Compression, DecodeLimits};
pub use control::{ControlRecordType, EndTransactionMarker};
pub use entry::{Batch, BatchRecords, Batches, PositionedBatch, RecordIter};
pub use error::{DecodeError, Result};
pub use index::{AbortedTxn, OffsetIndexEntry, TimeIndexEntry};
pub use legacy::LegacyEntry;
pub use names::{DirState, FileKind, FileState, PartitionDir, SegmentFileName};
pub use producer_snapshot::{
    ProducerSnapshotEntry, decode_producer_snapshot, encode_producer_snapshot,
};
pub use record::{Header, HeaderRef, Headers, Record};
pub use scan::PlainRecordsScan;
pub use schema::group;
