//! One uniform way to walk a `.log` file or a fetched record set: v0, v1 and v2 entries, in any
//! mix, with Kafka's `FileLogInputStream` framing rules (spec §1.1).

use crate::batch::{
    BatchRecordsV2, HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET, NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, RecordBatch, RecordIterV2, TimestampType,
};
use crate::compression::{Compression, DecodeLimits};
use crate::error::{DecodeError, Result};
use crate::legacy::{LegacyEntry, LegacyRecordIter, LegacyRecords, RECORD_OVERHEAD_V0};
use crate::record::Record;

/// One entry of a log, whatever its magic (Kafka's `RecordBatch` interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Batch<'a> {
    /// A magic 2 record batch.
    V2(RecordBatch<'a>),
    /// A magic 0 or 1 message, possibly a compressed wrapper.
    Legacy(LegacyEntry<'a>),
}

impl<'a> Batch<'a> {
    /// Parses exactly one entry of any magic.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        match bytes.get(MAGIC_OFFSET).map(|&byte| byte as i8) {
            Some(2) => RecordBatch::new(bytes).map(Self::V2),
            Some(0 | 1) => LegacyEntry::new(bytes).map(Self::Legacy),
            Some(magic) => Err(DecodeError::UnsupportedMagic(magic)),
            None => Err(DecodeError::Truncated {
                needed: HEADER_SIZE_UP_TO_MAGIC,
                available: bytes.len(),
            }),
        }
    }

    /// Parses exactly one entry as Kafka's `FileLogInputStream` does: magic 2 and above as a v2
    /// batch (`DefaultRecordBatch`), anything below as a legacy message, so that a tool can show
    /// an entry of an unknown magic the way Kafka's tools do (its checks then fail, not its
    /// framing). Readers of data use [`Batch::new`].
    pub fn new_any_magic(bytes: &'a [u8]) -> Result<Self> {
        match bytes.get(MAGIC_OFFSET).map(|&byte| byte as i8) {
            Some(magic) if magic >= 2 => RecordBatch::new(bytes).map(Self::V2),
            _ => LegacyEntry::new(bytes).map(Self::Legacy),
        }
    }

    /// The entry's bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        match self {
            Self::V2(batch) => batch.as_bytes(),
            Self::Legacy(entry) => entry.as_bytes(),
        }
    }

    /// Bytes the entry occupies, prefix included.
    pub fn size_bytes(&self) -> usize {
        self.as_bytes().len()
    }

    /// The magic byte.
    pub fn magic(&self) -> i8 {
        match self {
            Self::V2(batch) => batch.magic(),
            Self::Legacy(entry) => entry.magic(),
        }
    }

    /// The last offset of the entry (for a legacy entry, its offset field).
    pub fn last_offset(&self) -> i64 {
        match self {
            Self::V2(batch) => batch.last_offset(),
            Self::Legacy(entry) => entry.offset(),
        }
    }

    /// The offset after this entry.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The first offset. A compressed legacy wrapper must be decompressed to know it.
    pub fn base_offset(&self, limits: DecodeLimits) -> Result<i64> {
        match self {
            Self::V2(batch) => Ok(batch.base_offset()),
            Self::Legacy(entry) if entry.compression()? == Compression::None => Ok(entry.offset()),
            Self::Legacy(entry) => Ok(entry.records(limits)?.first_offset()),
        }
    }

    /// The largest timestamp (v2 `maxTimestamp`, the v1 timestamp, or -1 for v0).
    pub fn max_timestamp(&self) -> i64 {
        match self {
            Self::V2(batch) => batch.max_timestamp(),
            Self::Legacy(entry) => entry.timestamp(),
        }
    }

    /// How timestamps were assigned.
    pub fn timestamp_type(&self) -> TimestampType {
        match self {
            Self::V2(batch) => batch.timestamp_type(),
            Self::Legacy(entry) => entry.timestamp_type(),
        }
    }

    /// The codec.
    pub fn compression(&self) -> Result<Compression> {
        match self {
            Self::V2(batch) => batch.compression(),
            Self::Legacy(entry) => entry.compression(),
        }
    }

    /// The stored checksum (CRC-32C for v2, CRC-32 for v0/v1).
    pub fn crc(&self) -> u32 {
        match self {
            Self::V2(batch) => batch.crc(),
            Self::Legacy(entry) => entry.crc(),
        }
    }

    /// Whether the checksum matches.
    pub fn is_valid(&self) -> bool {
        match self {
            Self::V2(batch) => batch.is_valid(),
            Self::Legacy(entry) => entry.is_valid(),
        }
    }

    /// Checks the entry without decompressing (see [`RecordBatch::validate`]).
    pub fn validate(&self) -> Result<()> {
        match self {
            Self::V2(batch) => batch.validate(),
            Self::Legacy(entry) => entry.validate(),
        }
    }

    /// For v2, what [`Batch::validate`] checks without walking the records (magic, CRC, unused
    /// attribute bits), for callers that decode every record next anyway; legacy entries are
    /// validated whole.
    pub fn validate_header(&self) -> Result<()> {
        match self {
            Self::V2(batch) => batch.validate_header(),
            Self::Legacy(entry) => entry.validate(),
        }
    }

    /// `partitionLeaderEpoch`, or -1 below magic 2.
    pub fn partition_leader_epoch(&self) -> i32 {
        match self {
            Self::V2(batch) => batch.partition_leader_epoch(),
            Self::Legacy(_) => NO_PARTITION_LEADER_EPOCH,
        }
    }

    /// `producerId`, or -1 below magic 2.
    pub fn producer_id(&self) -> i64 {
        match self {
            Self::V2(batch) => batch.producer_id(),
            Self::Legacy(_) => NO_PRODUCER_ID,
        }
    }

    /// `producerEpoch`, or -1 below magic 2.
    pub fn producer_epoch(&self) -> i16 {
        match self {
            Self::V2(batch) => batch.producer_epoch(),
            Self::Legacy(_) => NO_PRODUCER_EPOCH,
        }
    }

    /// `baseSequence`, or -1 below magic 2.
    pub fn base_sequence(&self) -> i32 {
        match self {
            Self::V2(batch) => batch.base_sequence(),
            Self::Legacy(_) => NO_SEQUENCE,
        }
    }

    /// The last sequence, or -1.
    pub fn last_sequence(&self) -> i32 {
        match self {
            Self::V2(batch) => batch.last_sequence(),
            Self::Legacy(_) => NO_SEQUENCE,
        }
    }

    /// Whether the entry is part of a transaction (never below magic 2).
    pub fn is_transactional(&self) -> bool {
        match self {
            Self::V2(batch) => batch.is_transactional(),
            Self::Legacy(_) => false,
        }
    }

    /// Whether the entry is a control batch (never below magic 2).
    pub fn is_control_batch(&self) -> bool {
        match self {
            Self::V2(batch) => batch.is_control_batch(),
            Self::Legacy(_) => false,
        }
    }

    /// `recordsCount` for v2; `None` for legacy entries, as Kafka's `countOrNull`.
    pub fn records_count(&self) -> Option<i32> {
        match self {
            Self::V2(batch) => Some(batch.records_count()),
            Self::Legacy(_) => None,
        }
    }

    /// The records, decompressing within `limits` when needed.
    pub fn records(&self, limits: DecodeLimits) -> Result<BatchRecords<'a>> {
        match self {
            Self::V2(batch) => batch.records(limits).map(BatchRecords::V2),
            Self::Legacy(entry) => entry.records(limits).map(BatchRecords::Legacy),
        }
    }
}

/// The decoded records of one entry; [`BatchRecords::iter`] walks them.
#[derive(Debug, Clone)]
pub enum BatchRecords<'a> {
    /// Records of a v2 batch.
    V2(BatchRecordsV2<'a>),
    /// Records of a legacy entry.
    Legacy(LegacyRecords<'a>),
}

impl BatchRecords<'_> {
    /// The records in offset order.
    pub fn iter(&self) -> RecordIter<'_> {
        match self {
            Self::V2(records) => RecordIter::V2(records.iter()),
            Self::Legacy(records) => RecordIter::Legacy(records.iter()),
        }
    }
}

impl<'b> IntoIterator for &'b BatchRecords<'_> {
    type Item = Result<Record<'b>>;
    type IntoIter = RecordIter<'b>;
    fn into_iter(self) -> RecordIter<'b> {
        self.iter()
    }
}

/// Iterator over the records of any entry.
#[derive(Debug, Clone)]
pub enum RecordIter<'a> {
    /// Over a v2 batch.
    V2(RecordIterV2<'a>),
    /// Over a legacy entry.
    Legacy(LegacyRecordIter<'a>),
}

impl<'a> Iterator for RecordIter<'a> {
    type Item = Result<Record<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Self::V2(iter) => iter.next(),
            Self::Legacy(iter) => iter.next(),
        }
    }
}

/// An entry and the position where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositionedBatch<'a> {
    /// Byte position of the entry in the file (or stream) being walked.
    pub position: u64,
    /// The entry.
    pub batch: Batch<'a>,
}

/// Walks the entries of a log or record set (Kafka's `FileLogInputStream`):
/// - fewer than 18 bytes left ends the walk;
/// - a size below 14 is corruption (an error, then the walk ends);
/// - an entry that runs past the end is a partial trailing entry and ends the walk quietly;
/// - a magic other than 0, 1 or 2 is an error.
///
/// After the walk, [`Batches::next_position`] is where the valid entries end, and
/// [`Batches::remaining_bytes`] what was left unread.
#[derive(Debug, Clone)]
pub struct Batches<'a> {
    bytes: &'a [u8],
    offset_in_bytes: usize,
    start_position: u64,
    done: bool,
}

impl<'a> Batches<'a> {
    /// Walks `bytes` from its start.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self::at_position(bytes, 0)
    }

    /// Walks `bytes`, reporting positions as if `bytes` started at `start_position` of a file.
    pub fn at_position(bytes: &'a [u8], start_position: u64) -> Self {
        Self { bytes, offset_in_bytes: 0, start_position, done: false }
    }

    /// Position of the first byte not yet walked.
    pub fn next_position(&self) -> u64 {
        self.start_position + self.offset_in_bytes as u64
    }

    /// Bytes after [`Batches::next_position`].
    pub fn remaining_bytes(&self) -> usize {
        self.bytes.len() - self.offset_in_bytes
    }

    fn fail(&mut self, error: DecodeError) -> Result<PositionedBatch<'a>> {
        self.done = true;
        Err(error.at(self.next_position()))
    }
}

impl<'a> Iterator for Batches<'a> {
    type Item = Result<PositionedBatch<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.remaining_bytes() <= HEADER_SIZE_UP_TO_MAGIC {
            self.done = true;
            return None;
        }
        let rest = self.bytes.get(self.offset_in_bytes..).unwrap_or_default();
        let size = rest
            .get(8..12)
            .map_or(0, |bytes| i32::from_be_bytes(bytes.try_into().unwrap_or_default()));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Some(self.fail(DecodeError::EntryTooSmall { size }));
        }
        let entry_len = LOG_OVERHEAD + size as usize;
        let Some(entry) = rest.get(..entry_len) else {
            self.done = true;
            return None;
        };
        match Batch::new(entry) {
            Ok(batch) => {
                let position = self.next_position();
                self.offset_in_bytes += entry_len;
                Some(Ok(PositionedBatch { position, batch }))
            }
            Err(error) => Some(self.fail(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::RecordBatchBuilder;

    #[test]
    fn any_magic_reads_magic_above_two_as_kafka_does() {
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder.push(1_000, None, Some(b"v"), &[]).unwrap();
        let mut bytes = builder.build().unwrap();
        assert!(Batch::new_any_magic(&bytes).unwrap().is_valid());
        if let Some(magic) = bytes.get_mut(MAGIC_OFFSET) {
            *magic = 3;
        }
        assert_eq!(Batch::new(&bytes).unwrap_err(), DecodeError::UnsupportedMagic(3));
        let batch = Batch::new_any_magic(&bytes).unwrap();
        assert_eq!((batch.magic(), batch.is_valid()), (3, false));
        // Below 2 (here a negative magic) is framed as a legacy message.
        if let Some(magic) = bytes.get_mut(MAGIC_OFFSET) {
            *magic = 0xff;
        }
        let legacy = Batch::new_any_magic(&bytes).unwrap();
        assert_eq!((legacy.magic(), legacy.records_count()), (-1, None));
    }
}
