//! The magic v2 record batch (Kafka's `DefaultRecordBatch`): a zero-copy view, validation, record
//! iteration, and in-place stamping of the fields a broker rewrites.
//!
//! ```text
//! byte  size  field
//!    0     8  baseOffset            int64
//!    8     4  batchLength           int32   bytes after this field (size - 12)
//!   12     4  partitionLeaderEpoch  int32   not covered by the CRC
//!   16     1  magic                 int8    2
//!   17     4  crc                   uint32  CRC-32C of bytes [21, end)
//!   21     2  attributes            int16   codec 0-2, timestamp type 3, transactional 4,
//!                                            control 5, delete horizon 6
//!   23     4  lastOffsetDelta       int32
//!   27     8  baseTimestamp         int64
//!   35     8  maxTimestamp          int64
//!   43     8  producerId            int64
//!   51     2  producerEpoch         int16
//!   53     4  baseSequence          int32
//!   57     4  recordsCount          int32
//!   61     -  records               (compressed as one stream when codec != none)
//! ```

use std::borrow::Cow;

use crate::compression::{Compression, DecodeLimits, decompress};
use crate::error::{DecodeError, Result};
use crate::record::{Record, RecordContext, decode_record};
use crate::varint::Reader;

/// Offset plus size: the prefix every log entry of every magic starts with.
pub const LOG_OVERHEAD: usize = 12;
/// Bytes up to and including the magic byte.
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
/// The fixed v2 header size.
pub const RECORD_BATCH_OVERHEAD: usize = 61;

/// Byte position of `baseOffset`.
pub const BASE_OFFSET_OFFSET: usize = 0;
/// Byte position of `batchLength`.
pub const LENGTH_OFFSET: usize = 8;
/// Byte position of `partitionLeaderEpoch`.
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
/// Byte position of the magic byte.
pub const MAGIC_OFFSET: usize = 16;
/// Byte position of the CRC.
pub const CRC_OFFSET: usize = 17;
/// Byte position of the attributes; the CRC covers from here to the end.
pub const ATTRIBUTES_OFFSET: usize = 21;
/// Byte position of `lastOffsetDelta`.
pub const LAST_OFFSET_DELTA_OFFSET: usize = 23;
/// Byte position of `baseTimestamp`.
pub const BASE_TIMESTAMP_OFFSET: usize = 27;
/// Byte position of `maxTimestamp`.
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
/// Byte position of `producerId`.
pub const PRODUCER_ID_OFFSET: usize = 43;
/// Byte position of `producerEpoch`.
pub const PRODUCER_EPOCH_OFFSET: usize = 51;
/// Byte position of `baseSequence`.
pub const BASE_SEQUENCE_OFFSET: usize = 53;
/// Byte position of `recordsCount`.
pub const RECORDS_COUNT_OFFSET: usize = 57;

const _: () = assert!(RECORDS_COUNT_OFFSET + 4 == RECORD_BATCH_OVERHEAD);
const _: () = assert!(MAGIC_OFFSET + 1 == HEADER_SIZE_UP_TO_MAGIC);

/// The current magic.
pub const MAGIC_V2: i8 = 2;
/// `producerId` of a non-idempotent producer.
pub const NO_PRODUCER_ID: i64 = -1;
/// `producerEpoch` of a non-idempotent producer.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// `baseSequence` of a non-idempotent producer.
pub const NO_SEQUENCE: i32 = -1;
/// `partitionLeaderEpoch` before a leader stamps it.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// A missing timestamp.
pub const NO_TIMESTAMP: i64 = -1;

const COMPRESSION_MASK: u8 = 0x07;
const TIMESTAMP_TYPE_MASK: u8 = 0x08;
const TRANSACTIONAL_MASK: u8 = 0x10;
const CONTROL_MASK: u8 = 0x20;
const DELETE_HORIZON_MASK: u8 = 0x40;

/// How record timestamps were assigned (Kafka's `TimestampType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Magic 0: there are no timestamps.
    NoTimestampType,
    /// The producer's clock.
    CreateTime,
    /// The broker's clock at append.
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name, as DumpLogSegments prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::NoTimestampType => "NoTimestampType",
            Self::CreateTime => "CreateTime",
            Self::LogAppendTime => "LogAppendTime",
        }
    }

    /// Kafka's id: -1, 0 or 1.
    pub const fn id(self) -> i8 {
        match self {
            Self::NoTimestampType => -1,
            Self::CreateTime => 0,
            Self::LogAppendTime => 1,
        }
    }
}

impl std::fmt::Display for TimestampType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Adds `delta` to a producer sequence, wrapping from `i32::MAX` to 0 (Kafka's
/// `DefaultRecordBatch.incrementSequence`). Both come from untrusted bytes, so the arithmetic
/// wraps as Java's `int` does instead of overflowing.
pub const fn increment_sequence(sequence: i32, delta: i32) -> i32 {
    if sequence > i32::MAX.wrapping_sub(delta) {
        delta.wrapping_sub(i32::MAX.wrapping_sub(sequence)).wrapping_sub(1)
    } else {
        sequence.wrapping_add(delta)
    }
}

/// Subtracts `delta` from a producer sequence, wrapping below 0 to `i32::MAX`, with Java's
/// wrapping `int` arithmetic.
pub const fn decrement_sequence(sequence: i32, delta: i32) -> i32 {
    if sequence < delta {
        i32::MAX.wrapping_sub(delta.wrapping_sub(sequence)).wrapping_add(1)
    } else {
        sequence.wrapping_sub(delta)
    }
}

/// The attributes byte for the given fields (Kafka's `computeAttributes`).
pub(crate) const fn compute_attributes(
    compression: Compression,
    timestamp_type: TimestampType,
    is_transactional: bool,
    is_control: bool,
    has_delete_horizon: bool,
) -> u8 {
    let mut attributes = compression.id();
    if matches!(timestamp_type, TimestampType::LogAppendTime) {
        attributes |= TIMESTAMP_TYPE_MASK;
    }
    if is_transactional {
        attributes |= TRANSACTIONAL_MASK;
    }
    if is_control {
        attributes |= CONTROL_MASK;
    }
    if has_delete_horizon {
        attributes |= DELETE_HORIZON_MASK;
    }
    attributes
}

#[inline]
fn be<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut array = [0u8; N];
    if let Some(slice) = bytes.get(at..at + N) {
        array.copy_from_slice(slice);
    }
    array
}

#[inline]
fn put(bytes: &mut [u8], at: usize, value: &[u8]) {
    if let Some(slice) = bytes.get_mut(at..at + value.len()) {
        slice.copy_from_slice(value);
    }
}

/// Computes the CRC-32C a v2 batch should store: over bytes `[21, end)`.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or_default())
}

/// A zero-copy view over exactly one magic v2 batch (Kafka's `DefaultRecordBatch`).
///
/// Construction checks only that the slice holds the 61-byte header and matches `batchLength`;
/// [`RecordBatch::validate`] checks the magic, the CRC and the record count.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RecordBatch<'a> {
    bytes: &'a [u8],
}

impl std::fmt::Debug for RecordBatch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatch")
            .field("base_offset", &self.base_offset())
            .field("last_offset", &self.last_offset())
            .field("size_bytes", &self.size_bytes())
            .field("records_count", &self.records_count())
            .finish_non_exhaustive()
    }
}

impl<'a> RecordBatch<'a> {
    /// A view over `bytes`, which must be one whole batch.
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        if bytes.len() < LOG_OVERHEAD {
            return Err(DecodeError::Truncated { needed: LOG_OVERHEAD, available: bytes.len() });
        }
        let declared =
            i64::from(i32::from_be_bytes(be(bytes, LENGTH_OFFSET))) + LOG_OVERHEAD as i64;
        if declared < RECORD_BATCH_OVERHEAD as i64 {
            return Err(DecodeError::BatchTooSmall { size: declared });
        }
        if declared != bytes.len() as i64 {
            return Err(DecodeError::Truncated {
                needed: usize::try_from(declared).unwrap_or(usize::MAX),
                available: bytes.len(),
            });
        }
        Ok(Self { bytes })
    }

    /// The batch's bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// `baseOffset`: the offset of the first record.
    pub fn base_offset(&self) -> i64 {
        i64::from_be_bytes(be(self.bytes, BASE_OFFSET_OFFSET))
    }

    /// `batchLength`: the size minus 12.
    pub fn batch_length(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, LENGTH_OFFSET))
    }

    /// Bytes the batch occupies in a log, including the 12-byte prefix.
    pub fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// `partitionLeaderEpoch`.
    pub fn partition_leader_epoch(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, PARTITION_LEADER_EPOCH_OFFSET))
    }

    /// The magic byte (2 for a valid batch).
    pub fn magic(&self) -> i8 {
        i8::from_be_bytes(be(self.bytes, MAGIC_OFFSET))
    }

    /// The stored CRC.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(be(self.bytes, CRC_OFFSET))
    }

    /// The CRC-32C the batch should have.
    pub fn compute_crc(&self) -> u32 {
        compute_crc(self.bytes)
    }

    /// The attributes (only the low byte is meaningful).
    pub fn attributes(&self) -> i16 {
        i16::from_be_bytes(be(self.bytes, ATTRIBUTES_OFFSET))
    }

    fn attributes_byte(&self) -> u8 {
        self.attributes() as u8
    }

    /// The codec of the records section.
    pub fn compression(&self) -> Result<Compression> {
        Compression::from_id(self.attributes_byte() & COMPRESSION_MASK)
    }

    /// CreateTime or LogAppendTime.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes_byte() & TIMESTAMP_TYPE_MASK == 0 {
            TimestampType::CreateTime
        } else {
            TimestampType::LogAppendTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes_byte() & TRANSACTIONAL_MASK != 0
    }

    /// Whether the batch holds control records.
    pub fn is_control_batch(&self) -> bool {
        self.attributes_byte() & CONTROL_MASK != 0
    }

    /// Whether `baseTimestamp` holds the compaction delete horizon.
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes_byte() & DELETE_HORIZON_MASK != 0
    }

    /// The compaction delete horizon, when the batch carries one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        self.has_delete_horizon().then(|| self.base_timestamp())
    }

    /// `lastOffsetDelta`.
    pub fn last_offset_delta(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, LAST_OFFSET_DELTA_OFFSET))
    }

    /// The offset of the last record (the last offset the batch ever held, after compaction).
    pub fn last_offset(&self) -> i64 {
        self.base_offset().wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// `baseTimestamp`.
    pub fn base_timestamp(&self) -> i64 {
        i64::from_be_bytes(be(self.bytes, BASE_TIMESTAMP_OFFSET))
    }

    /// `maxTimestamp`.
    pub fn max_timestamp(&self) -> i64 {
        i64::from_be_bytes(be(self.bytes, MAX_TIMESTAMP_OFFSET))
    }

    /// `producerId`.
    pub fn producer_id(&self) -> i64 {
        i64::from_be_bytes(be(self.bytes, PRODUCER_ID_OFFSET))
    }

    /// `producerEpoch`.
    pub fn producer_epoch(&self) -> i16 {
        i16::from_be_bytes(be(self.bytes, PRODUCER_EPOCH_OFFSET))
    }

    /// `baseSequence`.
    pub fn base_sequence(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, BASE_SEQUENCE_OFFSET))
    }

    /// The sequence of the last record, or -1.
    pub fn last_sequence(&self) -> i32 {
        let base = self.base_sequence();
        if base == NO_SEQUENCE {
            NO_SEQUENCE
        } else {
            increment_sequence(base, self.last_offset_delta())
        }
    }

    /// Whether the batch comes from an idempotent or transactional producer.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id() > NO_PRODUCER_ID
    }

    /// `recordsCount`.
    pub fn records_count(&self) -> i32 {
        i32::from_be_bytes(be(self.bytes, RECORDS_COUNT_OFFSET))
    }

    /// The records section as stored (compressed when the codec is not none).
    pub fn records_payload(&self) -> &'a [u8] {
        self.bytes.get(RECORD_BATCH_OVERHEAD..).unwrap_or_default()
    }

    /// Kafka's `isValid`: the size is legal and the CRC matches.
    pub fn is_valid(&self) -> bool {
        self.magic() == MAGIC_V2 && self.crc() == self.compute_crc()
    }

    /// Checks the magic, the CRC-32C, the codec id and, for uncompressed batches, that the records
    /// fill the batch exactly and number `recordsCount`. Compressed batches get their count checked
    /// when iterated (see [`RecordBatch::validate_records`]), since that needs decompression.
    pub fn validate(&self) -> Result<()> {
        self.validate_header()?;
        if self.compression()? == Compression::None {
            self.check_records(Cow::Borrowed(self.records_payload()))?;
        }
        Ok(())
    }

    /// As [`RecordBatch::validate`], and for compressed batches decompresses (within `limits`) and
    /// checks every record.
    pub fn validate_records(&self, limits: DecodeLimits) -> Result<()> {
        self.validate_header()?;
        let data = self.decompressed(limits)?;
        self.check_records(data)
    }

    /// What [`RecordBatch::validate`] checks without walking the records: the magic, the CRC
    /// and the unused attribute bits. For callers that walk the records next anyway.
    pub fn validate_header(&self) -> Result<()> {
        if self.magic() != MAGIC_V2 {
            return Err(DecodeError::UnsupportedMagic(self.magic()));
        }
        let (stored, computed) = (self.crc(), self.compute_crc());
        if stored != computed {
            return Err(DecodeError::CrcMismatch { stored, computed });
        }
        if self.attributes() as u16 & 0xFF80 != 0 {
            return Err(DecodeError::InvalidRecord {
                at: ATTRIBUTES_OFFSET,
                reason: "unused attribute bits are set",
            });
        }
        self.compression()?;
        Ok(())
    }

    fn check_records(&self, data: Cow<'a, [u8]>) -> Result<()> {
        let records = BatchRecordsV2 { batch: *self, data };
        for record in &records {
            record?;
        }
        Ok(())
    }

    fn decompressed(&self, limits: DecodeLimits) -> Result<Cow<'a, [u8]>> {
        match self.compression()? {
            Compression::None => Ok(Cow::Borrowed(self.records_payload())),
            codec => Ok(Cow::Owned(decompress(codec, self.records_payload(), limits)?)),
        }
    }

    /// The batch's records, decompressed within `limits` when needed.
    pub fn records(&self, limits: DecodeLimits) -> Result<BatchRecordsV2<'a>> {
        Ok(BatchRecordsV2 { batch: *self, data: self.decompressed(limits)? })
    }

    pub(crate) fn record_context(&self) -> RecordContext {
        RecordContext {
            base_offset: self.base_offset(),
            base_timestamp: self.base_timestamp(),
            max_timestamp: self.max_timestamp(),
            timestamp_type: self.timestamp_type(),
            base_sequence: self.base_sequence(),
        }
    }
}

/// The decompressed records section of one v2 batch.
#[derive(Debug, Clone)]
pub struct BatchRecordsV2<'a> {
    batch: RecordBatch<'a>,
    data: Cow<'a, [u8]>,
}

impl BatchRecordsV2<'_> {
    /// The records in order. The iterator yields an error, and then stops, when a record is
    /// malformed or the records do not match `recordsCount`.
    pub fn iter(&self) -> RecordIterV2<'_> {
        let declared = self.batch.records_count();
        RecordIterV2 {
            reader: Reader::with_origin(&self.data, RECORD_BATCH_OVERHEAD),
            ctx: self.batch.record_context(),
            declared,
            left: declared,
            done: false,
        }
    }
}

impl<'b> IntoIterator for &'b BatchRecordsV2<'_> {
    type Item = Result<Record<'b>>;
    type IntoIter = RecordIterV2<'b>;
    fn into_iter(self) -> RecordIterV2<'b> {
        self.iter()
    }
}

/// Iterator over the records of one v2 batch (Kafka's `DefaultRecordBatch.RecordIterator`).
#[derive(Debug, Clone)]
pub struct RecordIterV2<'a> {
    reader: Reader<'a>,
    ctx: RecordContext,
    declared: i32,
    left: i32,
    done: bool,
}

impl<'a> Iterator for RecordIterV2<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let error = if self.left < 0 {
            Some(DecodeError::RecordCountMismatch {
                declared: self.declared,
                detail: "a negative count is invalid",
            })
        } else if self.left == 0 {
            (self.reader.remaining() != 0).then_some(DecodeError::RecordCountMismatch {
                declared: self.declared,
                detail: "records still remaining",
            })
        } else if self.reader.remaining() == 0 {
            Some(DecodeError::RecordCountMismatch {
                declared: self.declared,
                detail: "premature EOF reached",
            })
        } else {
            self.left -= 1;
            let record = decode_record(&mut self.reader, &self.ctx);
            if record.is_err() {
                self.done = true;
            }
            return Some(record);
        };
        self.done = true;
        error.map(Err)
    }
}

/// Mutating operations on a v2 batch in place: the fields a broker rewrites on append.
#[derive(Debug)]
pub struct RecordBatchMut<'a> {
    bytes: &'a mut [u8],
}

impl<'a> RecordBatchMut<'a> {
    /// A mutable view; the same checks as [`RecordBatch::new`].
    pub fn new(bytes: &'a mut [u8]) -> Result<Self> {
        RecordBatch::new(bytes)?;
        Ok(Self { bytes })
    }

    /// The read-only view.
    pub fn as_batch(&self) -> RecordBatch<'_> {
        RecordBatch { bytes: self.bytes }
    }

    /// Sets `baseOffset` (not covered by the CRC).
    pub fn set_base_offset(&mut self, base_offset: i64) {
        put(self.bytes, BASE_OFFSET_OFFSET, &base_offset.to_be_bytes());
    }

    /// Sets `baseOffset` so that the last offset is `last_offset` (Kafka's `setLastOffset`).
    pub fn set_last_offset(&mut self, last_offset: i64) {
        let delta = i64::from(self.as_batch().last_offset_delta());
        self.set_base_offset(last_offset.wrapping_sub(delta));
    }

    /// Sets `partitionLeaderEpoch` (not covered by the CRC).
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        put(self.bytes, PARTITION_LEADER_EPOCH_OFFSET, &epoch.to_be_bytes());
    }

    /// Sets the timestamp type and `maxTimestamp` and recomputes the CRC, which covers both
    /// (Kafka's `setMaxTimestamp`). A no-op when both already hold these values.
    pub fn set_max_timestamp(
        &mut self,
        timestamp_type: TimestampType,
        max_timestamp: i64,
    ) -> Result<()> {
        if timestamp_type == TimestampType::NoTimestampType {
            return Err(DecodeError::Unencodable {
                reason: "NoTimestampType cannot be set on a v2 batch",
            });
        }
        let batch = self.as_batch();
        if batch.timestamp_type() == timestamp_type && batch.max_timestamp() == max_timestamp {
            return Ok(());
        }
        let attributes = compute_attributes(
            batch.compression()?,
            timestamp_type,
            batch.is_transactional(),
            batch.is_control_batch(),
            batch.has_delete_horizon(),
        );
        put(self.bytes, ATTRIBUTES_OFFSET, &i16::from(attributes).to_be_bytes());
        put(self.bytes, MAX_TIMESTAMP_OFFSET, &max_timestamp.to_be_bytes());
        self.update_crc();
        Ok(())
    }

    /// Rewrites the stored CRC from the bytes.
    pub fn update_crc(&mut self) {
        let crc = compute_crc(self.bytes);
        put(self.bytes, CRC_OFFSET, &crc.to_be_bytes());
    }
}
