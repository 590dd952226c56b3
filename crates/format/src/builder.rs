//! Building v2 batches (Kafka's `MemoryRecordsBuilder` for magic 2), and the 61-byte empty header
//! the log cleaner writes (`DefaultRecordBatch.writeEmptyHeader`).

use crate::batch::{
    ATTRIBUTES_OFFSET, CRC_OFFSET, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, TimestampType,
    compute_attributes, compute_crc,
};
use crate::compression::{Compression, compress};
use crate::control::{ControlRecordType, EndTransactionMarker};
use crate::error::{DecodeError, Result};
use crate::record::{HeaderRef, Record, encode_record, encode_record_with_headers};

/// Builds one magic v2 batch from records (the role of Kafka's `MemoryRecordsBuilder`).
///
/// Offsets are absolute and must increase; each record's offset delta is taken from
/// `base_offset`. The first record's timestamp becomes `baseTimestamp`, as in Kafka.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    compression: Compression,
    timestamp_type: TimestampType,
    log_append_time: i64,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    is_transactional: bool,
    is_control: bool,
    delete_horizon_ms: Option<i64>,
    last_offset_override: Option<i64>,
    records: Vec<u8>,
    n_records: i32,
    last_offset: Option<i64>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
}

impl RecordBatchBuilder {
    /// A builder for a batch at `base_offset` 0 with CreateTime and no producer id.
    pub fn new(compression: Compression) -> Self {
        Self {
            compression,
            timestamp_type: TimestampType::CreateTime,
            log_append_time: NO_TIMESTAMP,
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            is_transactional: false,
            is_control: false,
            delete_horizon_ms: None,
            last_offset_override: None,
            records: Vec::new(),
            n_records: 0,
            last_offset: None,
            base_timestamp: None,
            max_timestamp: NO_TIMESTAMP,
        }
    }

    /// Sets `baseOffset` (before any record is appended).
    #[must_use]
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    /// Sets `partitionLeaderEpoch`.
    #[must_use]
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Sets the idempotent producer's id, epoch and first sequence.
    #[must_use]
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Marks the batch transactional.
    #[must_use]
    pub fn transactional(mut self, is_transactional: bool) -> Self {
        self.is_transactional = is_transactional;
        self
    }

    /// Marks the batch as a control batch.
    #[must_use]
    pub fn control(mut self, is_control: bool) -> Self {
        self.is_control = is_control;
        self
    }

    /// Makes the batch LogAppendTime with `log_append_time` as its max timestamp.
    #[must_use]
    pub fn log_append_time(mut self, log_append_time: i64) -> Self {
        self.timestamp_type = TimestampType::LogAppendTime;
        self.log_append_time = log_append_time;
        self
    }

    /// Sets a compaction delete horizon (stored in `baseTimestamp`).
    #[must_use]
    pub fn delete_horizon_ms(mut self, delete_horizon_ms: i64) -> Self {
        self.delete_horizon_ms = Some(delete_horizon_ms);
        self
    }

    /// Records appended so far.
    pub fn n_records(&self) -> i32 {
        self.n_records
    }

    /// Uncompressed size of the batch built so far.
    pub fn estimated_size_bytes(&self) -> usize {
        RECORD_BATCH_OVERHEAD + self.records.len()
    }

    /// The offset the next [`RecordBatchBuilder::push`] will use.
    pub fn next_offset(&self) -> i64 {
        self.last_offset.map_or(self.base_offset, |last| last + 1)
    }

    /// Appends a record at the next offset.
    pub fn push(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<()> {
        self.append(self.next_offset(), timestamp, key, value, headers)
    }

    /// Appends a record at absolute `offset`, which must exceed every earlier one.
    pub fn append(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<()> {
        let (offset_delta, timestamp_delta) = self.deltas(offset, timestamp)?;
        encode_record(&mut self.records, timestamp_delta, offset_delta, key, value, headers)?;
        self.n_records += 1;
        self.last_offset = Some(offset);
        self.max_timestamp = self.max_timestamp.max(timestamp);
        Ok(())
    }

    /// Appends `record` as it was read from another batch, at its own offset and timestamp, with
    /// its headers copied byte for byte (the log cleaner's rewrite, Kafka's
    /// `MemoryRecordsBuilder.append(Record)`).
    pub fn append_record(&mut self, record: &Record<'_>) -> Result<()> {
        let (offset_delta, timestamp_delta) = self.deltas(record.offset, record.timestamp)?;
        encode_record_with_headers(
            &mut self.records,
            timestamp_delta,
            offset_delta,
            record.key,
            record.value,
            &record.headers,
        )?;
        self.n_records += 1;
        self.last_offset = Some(record.offset);
        self.max_timestamp = self.max_timestamp.max(record.timestamp);
        Ok(())
    }

    /// Makes the batch end at `last_offset` whatever its last record (Kafka's
    /// `overrideLastOffset`): a rewritten batch keeps its `lastOffsetDelta`, so the producer's
    /// last sequence stays what it was.
    pub fn override_last_offset(&mut self, last_offset: i64) -> Result<()> {
        if self.last_offset.is_some_and(|last| last_offset < last) || last_offset < self.base_offset
        {
            return Err(DecodeError::Unencodable {
                reason: "the last offset cannot be below a record's offset",
            });
        }
        self.last_offset_override = Some(last_offset);
        Ok(())
    }

    /// The offset and timestamp deltas of a record at `offset` with `timestamp`, checked.
    fn deltas(&mut self, offset: i64, timestamp: i64) -> Result<(i32, i64)> {
        if self.last_offset.is_some_and(|last| offset <= last) || offset < self.base_offset {
            return Err(DecodeError::Unencodable { reason: "offsets must be strictly increasing" });
        }
        if timestamp < 0 && timestamp != NO_TIMESTAMP {
            return Err(DecodeError::Unencodable { reason: "timestamps must be >= 0 or -1" });
        }
        let offset_delta = i32::try_from(offset - self.base_offset)
            .map_err(|_| DecodeError::Unencodable { reason: "offset delta exceeds i32" })?;
        if self.n_records == i32::MAX {
            return Err(DecodeError::Unencodable { reason: "too many records in one batch" });
        }
        let base_timestamp = *self.base_timestamp.get_or_insert(timestamp);
        let timestamp_delta = match self.delete_horizon_ms {
            Some(horizon) => timestamp.wrapping_sub(horizon),
            None => timestamp.wrapping_sub(base_timestamp),
        };
        Ok((offset_delta, timestamp_delta))
    }

    /// Encodes the batch, compressing the records and computing the CRC.
    pub fn build(self) -> Result<Vec<u8>> {
        let Some(last_offset) = self.last_offset else {
            return Err(DecodeError::Unencodable { reason: "a batch needs at least one record" });
        };
        let last_offset = self.last_offset_override.unwrap_or(last_offset).max(last_offset);
        if self.is_transactional && self.producer_id < 0 {
            return Err(DecodeError::Unencodable {
                reason: "a transactional batch needs a producer id",
            });
        }
        let payload = match self.compression {
            Compression::None => self.records,
            codec => compress(codec, &self.records)?,
        };
        let header = BatchHeader {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes: compute_attributes(
                self.compression,
                self.timestamp_type,
                self.is_transactional,
                self.is_control,
                self.delete_horizon_ms.is_some(),
            ),
            last_offset_delta: i32::try_from(last_offset - self.base_offset)
                .map_err(|_| DecodeError::Unencodable { reason: "offset delta exceeds i32" })?,
            base_timestamp: self
                .delete_horizon_ms
                .unwrap_or_else(|| self.base_timestamp.unwrap_or(NO_TIMESTAMP)),
            max_timestamp: match self.timestamp_type {
                TimestampType::LogAppendTime => self.log_append_time,
                _ => self.max_timestamp,
            },
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            records_count: self.n_records,
        };
        header.encode(&payload)
    }
}

/// Every header field of a v2 batch except length, magic and CRC, which are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// `baseOffset`.
    pub base_offset: i64,
    /// `partitionLeaderEpoch`.
    pub partition_leader_epoch: i32,
    /// The attributes' low byte.
    pub attributes: u8,
    /// `lastOffsetDelta`.
    pub last_offset_delta: i32,
    /// `baseTimestamp`.
    pub base_timestamp: i64,
    /// `maxTimestamp`.
    pub max_timestamp: i64,
    /// `producerId`.
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence`.
    pub base_sequence: i32,
    /// `recordsCount`.
    pub records_count: i32,
}

impl BatchHeader {
    /// Writes the header followed by `payload` (the records section as stored), with the CRC.
    pub fn encode(&self, payload: &[u8]) -> Result<Vec<u8>> {
        let size = RECORD_BATCH_OVERHEAD + payload.len();
        let batch_length = i32::try_from(size - 12)
            .map_err(|_| DecodeError::Unencodable { reason: "batch larger than 2 GiB" })?;
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.extend_from_slice(&MAGIC_V2.to_be_bytes());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&i16::from(self.attributes).to_be_bytes());
        out.extend_from_slice(&self.last_offset_delta.to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.records_count.to_be_bytes());
        assert_eq!(out.len(), RECORD_BATCH_OVERHEAD);
        out.extend_from_slice(payload);
        let crc = compute_crc(&out);
        if let Some(slot) = out.get_mut(CRC_OFFSET..ATTRIBUTES_OFFSET) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        Ok(out)
    }
}

/// The fields of an empty batch header (Kafka's `DefaultRecordBatch.writeEmptyHeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmptyHeader {
    /// `baseOffset` of the batch it replaces.
    pub base_offset: i64,
    /// The last offset of the batch it replaces.
    pub last_offset: i64,
    /// `producerId`.
    pub producer_id: i64,
    /// `producerEpoch`.
    pub producer_epoch: i16,
    /// `baseSequence`.
    pub base_sequence: i32,
    /// The timestamp type to keep.
    pub timestamp_type: TimestampType,
    /// Becomes `maxTimestamp`.
    pub timestamp: i64,
    /// Whether the batch was transactional.
    pub is_transactional: bool,
    /// Whether it was a control batch.
    pub is_control: bool,
    /// `partitionLeaderEpoch`.
    pub partition_leader_epoch: i32,
}

impl EmptyHeader {
    /// The 61-byte header with zero records, baseTimestamp -1 and no codec.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let last_offset_delta = i32::try_from(self.last_offset - self.base_offset)
            .map_err(|_| DecodeError::Unencodable { reason: "offset span exceeds i32" })?;
        BatchHeader {
            base_offset: self.base_offset,
            partition_leader_epoch: self.partition_leader_epoch,
            attributes: compute_attributes(
                Compression::None,
                self.timestamp_type,
                self.is_transactional,
                self.is_control,
                false,
            ),
            last_offset_delta,
            base_timestamp: NO_TIMESTAMP,
            max_timestamp: self.timestamp,
            producer_id: self.producer_id,
            producer_epoch: self.producer_epoch,
            base_sequence: self.base_sequence,
            records_count: 0,
        }
        .encode(&[])
    }
}

/// Builds a transaction marker batch: one COMMIT or ABORT control record (Kafka's
/// `MemoryRecords.withEndTransactionMarker`).
pub fn end_transaction_marker_batch(
    offset: i64,
    timestamp: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    marker: ControlRecordType,
    coordinator_epoch: i32,
) -> Result<Vec<u8>> {
    if !matches!(marker, ControlRecordType::Abort | ControlRecordType::Commit) {
        return Err(DecodeError::Unencodable { reason: "a transaction marker is ABORT or COMMIT" });
    }
    let key = marker.encode_key();
    let value = EndTransactionMarker { coordinator_epoch }.encode();
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .base_offset(offset)
        .partition_leader_epoch(partition_leader_epoch)
        .producer(producer_id, producer_epoch, NO_SEQUENCE)
        .transactional(true)
        .control(true);
    builder.append(offset, timestamp, Some(&key), Some(&value), &[])?;
    builder.build()
}
