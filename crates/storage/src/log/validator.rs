//! Leader-side validation and offset assignment (Kafka's `LogValidator`), with the batch analysis
//! of `UnifiedLog.analyzeAndValidateRecords` for leader and follower appends (spec §7.3, §7.4).
//!
//! A leader append ([`validate_and_assign_offsets`]) goes through two stages:
//!
//! 1. **Analysis** walks the shallow batches: a v2 batch from a client must have baseOffset 0,
//!    every batch must fit `max.message.bytes` and pass its CRC check, and the source codec is the
//!    last non-none codec seen.
//! 2. **Validation** checks the batches against each other and against the origin (one batch when
//!    v2 or compressed, the same magic throughout, a consistent offset range, no control batches
//!    and valid sequences from clients), then every record (a key on compacted topics, a
//!    CreateTime within `message.timestamp.{before,after}.max.ms`), collecting every bad record
//!    before failing. Offsets are then assigned in one of two ways:
//!    - **in place** when the single v2 batch can keep its records section: its codec is already
//!      the target's, or it is an uncompressed control batch (markers are never compressed), and
//!      its offset deltas are exactly 0..count-1. Only baseOffset, partitionLeaderEpoch and
//!      (with the CRC) the timestamp type and maxTimestamp change; the payload is byte-identical.
//!    - **rebuilt** otherwise (another codec, legacy v0/v1 input, irregular offsets): the records
//!      are decoded and written into one new v2 batch with the target codec, keeping the producer
//!      id, epoch, base sequence and transactional flag, at baseOffset = the log end offset.
//!
//! A follower append ([`analyze_follower_append`]) keeps the leader's offsets: it checks CRCs,
//! that offsets increase, and that the append does not start below the log end offset.
//!
//! Where this differs from Kafka, it is on input that Kafka would store inconsistently:
//! - an uncompressed v2 batch whose offset deltas are not 0..count-1 is rebuilt (Kafka rewrites
//!   only compressed batches and would store such a batch with duplicate offsets);
//! - a v2 batch with no records from a non-client origin is rejected (Kafka would give it an
//!   offset range overlapping the previous append);
//! - a leader append with trailing bytes that do not form a whole batch is rejected, where Kafka
//!   silently trims them (a producer never sends them, so they mean a damaged request);
//! - record errors are indexed across the whole append and all reported together, where Kafka
//!   fails at the first bad legacy batch and counts from 0 in each.

use std::borrow::Cow;

use super::producer_state::TxnMarker;
use seglog_format::batch::{
    BASE_OFFSET_OFFSET, MAGIC_V2, NO_PRODUCER_ID, NO_TIMESTAMP, PARTITION_LEADER_EPOCH_OFFSET,
    RECORD_BATCH_OVERHEAD,
};
use seglog_format::{
    Batch, BatchRecords, Batches, Compression, ControlRecordType, DecodeError, DecodeLimits,
    EndTransactionMarker, HeaderRef, PositionedBatch, Record, RecordBatch, RecordBatchBuilder,
    RecordBatchMut, TimestampType, increment_sequence,
};

/// Kafka's default `max.message.bytes`: 1 MiB plus the 12-byte log overhead.
pub const MAX_MESSAGE_BYTES_DEFAULT: usize = 1_048_588;

/// How many record errors an error message quotes (Kafka shows "the first three errors at most").
const RECORD_ERRORS_SHOWN_MAX: usize = 3;

/// Where an append comes from (Kafka's `AppendOrigin`); client appends get the strictest checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AppendOrigin {
    /// A producer's request.
    Client,
    /// A follower copying the leader's batches (see [`analyze_follower_append`]).
    Replication,
    /// A group or transaction coordinator writing its own records, such as transaction markers.
    Coordinator,
}

/// The topic's `compression.type` (Kafka's `BrokerCompressionType`): a codec, or `producer` to
/// keep the producer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TargetCompression {
    /// `producer`: keep the codec the producer used.
    Producer,
    /// Store every batch with this codec (`uncompressed` is [`Compression::None`]).
    Codec(Compression),
}

impl TargetCompression {
    /// Parses Kafka's values: `producer`, `uncompressed`, `gzip`, `snappy`, `lz4`, `zstd`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "producer" => Some(Self::Producer),
            "uncompressed" => Some(Self::Codec(Compression::None)),
            "none" => None,
            other => Compression::from_name(other).map(Self::Codec),
        }
    }

    /// The codec to store with, given the producer's (Kafka's `targetCompression`).
    pub fn resolve(self, source_compression: Compression) -> Compression {
        match self {
            Self::Producer => source_compression,
            Self::Codec(codec) => codec,
        }
    }
}

/// Everything the validator needs from the topic config (Kafka's `LogConfig` subset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationConfig {
    /// `compression.type`.
    pub target_compression: TargetCompression,
    /// Whether `cleanup.policy` contains `compact`: then every record needs a key.
    pub compact: bool,
    /// `message.timestamp.type`: CreateTime or LogAppendTime (NoTimestampType reads as
    /// CreateTime).
    pub timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms`: how far in the past a CreateTime may be.
    pub timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: how far in the future a CreateTime may be.
    pub timestamp_after_max_ms: i64,
    /// `max.message.bytes`: the largest batch, 12-byte log overhead included.
    pub max_message_bytes: usize,
    /// Bounds on decompression.
    pub decode_limits: DecodeLimits,
}

impl Default for ValidationConfig {
    /// Kafka's topic defaults.
    fn default() -> Self {
        Self {
            target_compression: TargetCompression::Producer,
            compact: false,
            timestamp_type: TimestampType::CreateTime,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: i64::MAX,
            max_message_bytes: MAX_MESSAGE_BYTES_DEFAULT,
            decode_limits: DecodeLimits::default(),
        }
    }
}

impl ValidationConfig {
    /// The topic's timestamp type, with NoTimestampType (not a topic setting) read as CreateTime.
    fn topic_timestamp_type(&self) -> TimestampType {
        match self.timestamp_type {
            TimestampType::LogAppendTime => TimestampType::LogAppendTime,
            TimestampType::CreateTime | TimestampType::NoTimestampType => TimestampType::CreateTime,
        }
    }
}

/// The bytes a validated append writes (Kafka's validated `MemoryRecords`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendBytes<'a> {
    /// A batch the validator built (a rebuild, or a stamp that changed the CRC).
    Owned(Vec<u8>),
    /// The caller's bytes as they came (a follower's append, less a partial trailing batch).
    Borrowed(&'a [u8]),
    /// A leader's batch stamped in place without a copy: the stamped header (offsets and
    /// leader epoch, which the CRC does not cover), then the producer's bytes after it,
    /// untouched; written with one vectored write.
    Stamped {
        /// The batch's first [`RECORD_BATCH_OVERHEAD`] bytes, stamped.
        header: [u8; RECORD_BATCH_OVERHEAD],
        /// The rest of the producer's batch.
        rest: &'a [u8],
    },
}

impl AppendBytes<'_> {
    /// Bytes in all.
    pub fn len(&self) -> usize {
        match self {
            Self::Owned(bytes) => bytes.len(),
            Self::Borrowed(bytes) => bytes.len(),
            Self::Stamped { header, rest } => header.len() + rest.len(),
        }
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes as the parts written one after another.
    pub fn parts(&self) -> [&[u8]; 2] {
        match self {
            Self::Owned(bytes) => [bytes, &[]],
            Self::Borrowed(bytes) => [bytes, &[]],
            Self::Stamped { header, rest } => [header, rest],
        }
    }

    /// The bytes, concatenated into one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        self.parts().concat()
    }
}

/// The essentials of Kafka's `LogAppendInfo` for one validated append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidatedAppend<'a> {
    /// The bytes to write: the input stamped in place, rebuilt, or (for a follower) the input
    /// without a partial trailing batch.
    pub records: AppendBytes<'a>,
    /// The offset of the first record.
    pub first_offset: i64,
    /// The offset of the last record (the last offset of the last batch).
    pub last_offset: i64,
    /// The largest timestamp: `log_append_time` for LogAppendTime, else the largest record (or
    /// batch) timestamp, or -1.
    pub max_timestamp: i64,
    /// The last offset of the batch holding `max_timestamp`, for the time index.
    pub shallow_offset_of_max_timestamp: i64,
    /// The broker time stamped on the batch when the topic uses LogAppendTime, else -1.
    pub log_append_time: i64,
    /// Records in the append.
    pub n_records: usize,
    /// Batches in `records`.
    pub n_batches: usize,
    /// The producer's codec: the last non-none codec among the input batches.
    pub source_compression: Compression,
    /// The codec `records` is stored with.
    pub target_compression: Compression,
    /// Whether the records were rebuilt into a new batch rather than stamped in place (Kafka's
    /// `messageSizeMaybeChanged`).
    pub recompressed: bool,
    /// `(partitionLeaderEpoch, baseOffset)` of every v2 batch in `records`, for the leader-epoch
    /// cache.
    pub batches: Vec<(i32, i64)>,
    /// The idempotent producers' batches in `records`, taken while the batches are walked, so
    /// that producer state is updated without parsing them again.
    pub producer_batches: Vec<ProducerBatch>,
    /// The COMMIT and ABORT markers in `records` (control batches with a producer id), in offset
    /// order, for the producers' transactions.
    pub txn_markers: Vec<TxnMarker>,
    /// Whether `records` holds a legacy (v0/v1) batch, which makes Kafka clear the leader-epoch
    /// cache. Only a follower append can.
    pub has_legacy_batches: bool,
}

/// One rejected record (Kafka's `ProduceResponse.RecordError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    /// The record's index in the append, from 0 (Kafka's `batchIndex`).
    pub batch_idx: usize,
    /// Why the record was rejected.
    pub message: String,
}

/// Why an append was refused (Kafka's `CorruptRecordException`, `RecordTooLargeException`,
/// `RecordBatchTooLargeException`, `InvalidTimestampException`, `InvalidRecordException`,
/// `UnsupportedForMessageFormatException`, `OffsetsOutOfOrderException` and
/// `UnexpectedAppendOffsetException`, as one enum); [`ValidationError::error_code`] is the wire
/// code a produce response carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The bytes do not decode: bad framing, a CRC mismatch, a codec that will not decompress.
    /// (A malformed record inside a batch whose CRC holds is [`ValidationError::InvalidRecord`],
    /// as in Kafka.)
    #[error("corrupt message: {0}")]
    Decode(DecodeError),

    /// A leader append ends with bytes that do not form a whole batch.
    #[error(
        "corrupt message: {remaining_bytes} trailing bytes at byte {position} do not form a whole batch"
    )]
    PartialBatch { position: u64, remaining_bytes: usize },

    /// A batch exceeds `max.message.bytes` (Kafka's `RecordTooLargeException`).
    #[error(
        "The record batch size in the append is {batch_bytes} bytes which exceeds the maximum configured value of {max_message_bytes}."
    )]
    RecordTooLarge { position: u64, batch_bytes: usize, max_message_bytes: usize },

    /// An append exceeds `segment.bytes` (Kafka's `RecordBatchTooLargeException`); the partition
    /// log raises it, since only it knows the segment size.
    #[error(
        "Message batch size is {records_bytes} bytes in append which exceeds the maximum configured segment size of {segment_bytes}."
    )]
    RecordBatchTooLarge { records_bytes: usize, segment_bytes: usize },

    /// At least one record has an out-of-range or forbidden timestamp; `record_errors` lists
    /// every bad record (and any other record error found with them).
    #[error(
        "One or more records have been rejected due to invalid timestamp: {}",
        summarize(.record_errors)
    )]
    InvalidTimestamp { record_errors: Vec<RecordError> },

    /// A batch breaks a rule or holds a malformed record (`record_errors` empty), or records
    /// break the record rules (each one listed).
    #[error("{message}")]
    InvalidRecord { message: String, record_errors: Vec<RecordError> },

    /// The data needs a newer message format than the target's. The target is always magic 2,
    /// so this is not raised today; it keeps the error mapping complete.
    #[error("{message}")]
    UnsupportedForMessageFormat { message: String },

    /// A follower append's batches do not have increasing last offsets.
    #[error("Out of order offsets found in append: last offsets of the batches are {}", join(.last_offsets))]
    OffsetsOutOfOrder { last_offsets: Vec<i64> },

    /// A follower append starts below the log end offset. `checked_offset` is the first offset,
    /// or for a legacy first batch its last offset (all Kafka reads without decompressing).
    #[error(
        "Unexpected offset in append. {} {checked_offset} is less than the next offset {log_end_offset}. First offset in append: {first_offset}, last offset in append: {last_offset}",
        checked_offset_name(*.first_batch_is_legacy)
    )]
    UnexpectedAppendOffset {
        first_offset: i64,
        last_offset: i64,
        checked_offset: i64,
        log_end_offset: i64,
        first_batch_is_legacy: bool,
    },

    /// An idempotent producer's batch does not follow its previous one (Kafka's
    /// `OutOfOrderSequenceException`).
    #[error(
        "Out of order sequence number for producer {producer_id}: {found} (incoming seq. number), {expected} (expected)"
    )]
    OutOfOrderSequence { producer_id: i64, expected: i32, found: i32 },

    /// A producer epoch older than the producer's current one (Kafka's
    /// `InvalidProducerEpochException`).
    #[error(
        "Epoch of producer {producer_id} at offset append is {epoch}, which is smaller than the last seen epoch {current_epoch}"
    )]
    InvalidProducerEpoch { producer_id: i64, epoch: i16, current_epoch: i16 },

    /// A batch that does not fit the producer's transaction state (Kafka's
    /// `InvalidTxnStateException`): a non-transactional batch while a transaction is open, a
    /// transaction marker with no transaction to end.
    #[error("{message}")]
    InvalidTxnState { message: String },

    /// A transaction marker from an older coordinator than the producer's last marker (Kafka's
    /// `TransactionCoordinatorFencedException`).
    #[error("{message}")]
    TransactionCoordinatorFenced { message: String },
}

impl ValidationError {
    /// Kafka's wire error code for this error (`Errors.code()`).
    pub fn error_code(&self) -> i16 {
        match self {
            Self::Decode(_) | Self::PartialBatch { .. } => 2,
            Self::RecordTooLarge { .. } => 10,
            Self::RecordBatchTooLarge { .. } => 18,
            Self::InvalidTimestamp { .. } => 32,
            Self::UnsupportedForMessageFormat { .. } => 43,
            Self::InvalidRecord { .. } => 87,
            Self::OffsetsOutOfOrder { .. } | Self::UnexpectedAppendOffset { .. } => -1,
            Self::OutOfOrderSequence { .. } => 45,
            Self::InvalidProducerEpoch { .. } => 47,
            Self::InvalidTxnState { .. } => 48,
            Self::TransactionCoordinatorFenced { .. } => 52,
        }
    }

    /// Kafka's name for the error code (the `Errors` enum constant).
    pub fn error_name(&self) -> &'static str {
        match self {
            Self::Decode(_) | Self::PartialBatch { .. } => "CORRUPT_MESSAGE",
            Self::RecordTooLarge { .. } => "MESSAGE_TOO_LARGE",
            Self::RecordBatchTooLarge { .. } => "RECORD_LIST_TOO_LARGE",
            Self::InvalidTimestamp { .. } => "INVALID_TIMESTAMP",
            Self::UnsupportedForMessageFormat { .. } => "UNSUPPORTED_FOR_MESSAGE_FORMAT",
            Self::InvalidRecord { .. } => "INVALID_RECORD",
            Self::OffsetsOutOfOrder { .. } | Self::UnexpectedAppendOffset { .. } => {
                "UNKNOWN_SERVER_ERROR"
            }
            Self::OutOfOrderSequence { .. } => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            Self::InvalidProducerEpoch { .. } => "INVALID_PRODUCER_EPOCH",
            Self::InvalidTxnState { .. } => "INVALID_TXN_STATE",
            Self::TransactionCoordinatorFenced { .. } => "TRANSACTION_COORDINATOR_FENCED",
        }
    }

    /// The rejected records, when the error is about records.
    pub fn record_errors(&self) -> &[RecordError] {
        match self {
            Self::InvalidTimestamp { record_errors }
            | Self::InvalidRecord { record_errors, .. } => record_errors,
            _ => &[],
        }
    }
}

fn summarize(record_errors: &[RecordError]) -> String {
    let shown: Vec<String> = record_errors
        .iter()
        .take(RECORD_ERRORS_SHOWN_MAX)
        .map(|error| {
            format!("RecordError(batchIndex={}, message='{}')", error.batch_idx, error.message)
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

fn checked_offset_name(first_batch_is_legacy: bool) -> &'static str {
    if first_batch_is_legacy { "Last offset of the first batch" } else { "First offset" }
}

fn join(offsets: &[i64]) -> String {
    offsets.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

/// A batch-level [`ValidationError::InvalidRecord`].
fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError::InvalidRecord { message: message.into(), record_errors: Vec::new() }
}

/// Sorts a decode error the way Kafka's exceptions fall: a malformed record inside a batch whose
/// CRC holds is Kafka's `InvalidRecordException` (INVALID_RECORD); anything else (framing, CRC,
/// codec) is corruption (CORRUPT_MESSAGE).
fn classify(error: DecodeError) -> ValidationError {
    match error.root() {
        DecodeError::RecordCountMismatch { .. }
        | DecodeError::InvalidRecord { .. }
        | DecodeError::InvalidRecordSize { .. }
        | DecodeError::InvalidVarint { .. }
        | DecodeError::InvalidVarlong { .. }
        | DecodeError::InvalidWrapper { .. } => invalid(error.to_string()),
        _ => ValidationError::Decode(error),
    }
}

/// Walks `records` into whole entries; also returns the bytes they cover.
fn walk(records: &[u8]) -> Result<(Vec<PositionedBatch<'_>>, usize), ValidationError> {
    let mut walker = Batches::new(records);
    let mut entries = Vec::new();
    for entry in walker.by_ref() {
        entries.push(entry.map_err(ValidationError::Decode)?);
    }
    let valid_bytes = usize::try_from(walker.next_position()).unwrap_or(records.len());
    Ok((entries, valid_bytes))
}

/// Kafka's `analyzeAndValidateRecords` for a leader append: per-batch base offset (clients),
/// size and CRC checks. Returns the source codec.
fn analyze_leader(
    entries: &[PositionedBatch<'_>],
    origin: AppendOrigin,
    config: &ValidationConfig,
) -> Result<Compression, ValidationError> {
    let mut source_compression = Compression::None;
    for entry in entries {
        let batch = entry.batch;
        if let Batch::V2(v2) = batch
            && origin == AppendOrigin::Client
            && v2.base_offset() != 0
        {
            return Err(invalid(format!(
                "The baseOffset of the record batch in the append should be 0, but it is {}",
                v2.base_offset()
            )));
        }
        if batch.size_bytes() > config.max_message_bytes {
            return Err(ValidationError::RecordTooLarge {
                position: entry.position,
                batch_bytes: batch.size_bytes(),
                max_message_bytes: config.max_message_bytes,
            });
        }
        // The records themselves are decoded and checked once, by `scan_records`.
        batch.validate_header().map_err(|error| classify(error.at(entry.position)))?;
        let codec = batch.compression().map_err(|error| classify(error.at(entry.position)))?;
        if codec != Compression::None {
            source_compression = codec;
        }
    }
    Ok(source_compression)
}

/// Kafka's `LogValidator.validateBatch`: the batch-level rules.
fn validate_batch(
    first: &Batch<'_>,
    batch: &Batch<'_>,
    origin: AppendOrigin,
) -> Result<(), ValidationError> {
    if batch.magic() != first.magic() {
        return Err(invalid(format!(
            "Batch magic {} is not the same as the first batch's magic byte {}",
            batch.magic(),
            first.magic()
        )));
    }
    if origin != AppendOrigin::Client {
        return Ok(());
    }
    if let Batch::V2(v2) = batch {
        let (base_offset, last_offset) = (v2.base_offset(), v2.last_offset());
        let count_from_offsets = i64::from(v2.last_offset_delta()) + 1;
        if count_from_offsets <= 0 {
            return Err(invalid(format!(
                "Batch has an invalid offset range: [{base_offset}, {last_offset}]"
            )));
        }
        let count = i64::from(v2.records_count());
        if count <= 0 {
            return Err(invalid(format!("Invalid reported count for record batch: {count}")));
        }
        if count_from_offsets != count {
            return Err(invalid(format!(
                "Inconsistent batch offset range [{base_offset}, {last_offset}] and count of records {count}"
            )));
        }
    }
    if batch.is_control_batch() {
        return Err(invalid("Clients are not allowed to write control records"));
    }
    if batch.producer_id() > NO_PRODUCER_ID && batch.base_sequence() < 0 {
        return Err(invalid(format!(
            "Invalid sequence number {} in record batch with producerId {}",
            batch.base_sequence(),
            batch.producer_id()
        )));
    }
    Ok(())
}

/// What a record error is about; a timestamp error makes the whole append INVALID_TIMESTAMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Problem {
    Record,
    Timestamp,
}

/// Kafka's `validateRecord`: a key on compacted topics, then the timestamp rules.
fn check_record(
    record: &Record<'_>,
    batch_timestamp_type: TimestampType,
    now_ms: i64,
    config: &ValidationConfig,
) -> Option<(Problem, String)> {
    if config.compact && record.key.is_none() {
        return Some((Problem::Record, "Compacted topic cannot accept message without key".into()));
    }
    let timestamp = record.timestamp;
    if config.topic_timestamp_type() == TimestampType::CreateTime && timestamp != NO_TIMESTAMP {
        // Kafka computes `now - timestamp` in wrapping Java longs; i128 cannot overflow.
        let age_ms = i128::from(now_ms) - i128::from(timestamp);
        if age_ms > i128::from(config.timestamp_before_max_ms)
            || -age_ms > i128::from(config.timestamp_after_max_ms)
        {
            return Some((
                Problem::Timestamp,
                format!(
                    "Timestamp {timestamp} of message with offset {} is out of range. The timestamp should be within [{}, {}]",
                    record.offset,
                    now_ms.saturating_sub(config.timestamp_before_max_ms),
                    now_ms.saturating_add(config.timestamp_after_max_ms),
                ),
            ));
        }
    } else if batch_timestamp_type == TimestampType::LogAppendTime {
        return Some((
            Problem::Timestamp,
            format!(
                "Invalid timestamp type in message with offset {}. Producer should not set timestamp type to LogAppendTime.",
                record.offset
            ),
        ));
    }
    None
}

/// The decoded records of an append and what the validator learned from them.
struct Scan<'a> {
    /// Every batch's records, kept for a rebuild (empty after `scan_plain`, whose appends are
    /// stamped in place).
    decoded: Vec<BatchRecords<'a>>,
    n_records: usize,
    /// The largest record timestamp, or -1.
    max_timestamp: i64,
    /// Whether every v2 record's offset delta equals its index in the batch.
    offsets_contiguous: bool,
}

/// Runs the batch and record rules over every batch, collecting every bad record.
fn scan_records<'a>(
    entries: &[PositionedBatch<'a>],
    origin: AppendOrigin,
    now_ms: i64,
    config: &ValidationConfig,
) -> Result<Scan<'a>, ValidationError> {
    let mut scan = Scan {
        decoded: Vec::with_capacity(entries.len()),
        n_records: 0,
        max_timestamp: NO_TIMESTAMP,
        offsets_contiguous: true,
    };
    let mut record_errors = Vec::new();
    let mut has_timestamp_error = false;
    let Some(first) = entries.first().map(|entry| entry.batch) else {
        return Ok(scan);
    };
    for entry in entries {
        let batch = entry.batch;
        validate_batch(&first, &batch, origin)?;
        let locate = |error: DecodeError| classify(error.at(entry.position));
        let decoded = batch.records(config.decode_limits).map_err(locate)?;
        let base_offset = match batch {
            Batch::V2(v2) => Some(v2.base_offset()),
            Batch::Legacy(_) => None,
        };
        for (idx_in_batch, record) in decoded.iter().enumerate() {
            let record = record.map_err(locate)?;
            if let Some((problem, message)) =
                check_record(&record, batch.timestamp_type(), now_ms, config)
            {
                has_timestamp_error |= problem == Problem::Timestamp;
                record_errors.push(RecordError { batch_idx: scan.n_records, message });
            }
            if base_offset.is_some_and(|base| {
                record.offset.wrapping_sub(base) != i64::try_from(idx_in_batch).unwrap_or(-1)
            }) {
                scan.offsets_contiguous = false;
            }
            scan.max_timestamp = scan.max_timestamp.max(record.timestamp);
            scan.n_records += 1;
        }
        scan.decoded.push(decoded);
    }
    if record_errors.is_empty() {
        Ok(scan)
    } else if has_timestamp_error {
        Err(ValidationError::InvalidTimestamp { record_errors })
    } else {
        Err(ValidationError::InvalidRecord {
            message: format!(
                "One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: {}",
                record_errors.len(),
                summarize(&record_errors)
            ),
            record_errors,
        })
    }
}

/// The fast path of [`scan_records`] for the usual produce: one uncompressed v2 batch of
/// CreateTime records, stored as it came, whose records pass in one pass without being built
/// (`RecordBatch::scan_plain_records`). `Ok(None)` when the append is anything else, or when a
/// record may break a rule: the full scan then decides, with its errors. The batch rules come
/// first, as in the full scan.
fn scan_plain<'a>(
    entries: &[PositionedBatch<'a>],
    origin: AppendOrigin,
    now_ms: i64,
    config: &ValidationConfig,
    target_compression: Compression,
) -> Result<Option<Scan<'a>>, ValidationError> {
    let [entry] = entries else { return Ok(None) };
    let Batch::V2(batch) = entry.batch else { return Ok(None) };
    // A control batch's marker is read from its decoded record; a rewrite needs them all.
    if batch.is_control_batch() || target_compression != Compression::None {
        return Ok(None);
    }
    validate_batch(&entry.batch, &entry.batch, origin)?;
    let Some(found) = batch.scan_plain_records() else { return Ok(None) };
    if i64::from(batch.last_offset_delta()) + 1 != i64::from(found.count)
        || (config.compact && found.has_null_key)
    {
        return Ok(None);
    }
    // `check_record`'s timestamp rule for a CreateTime batch, on the extremes: if the oldest and
    // the newest pass, every record does (a -1 among them may only send this to the full scan).
    if config.topic_timestamp_type() == TimestampType::CreateTime {
        let (before_max, after_max) =
            (i128::from(config.timestamp_before_max_ms), i128::from(config.timestamp_after_max_ms));
        let oldest_age_ms = i128::from(now_ms) - i128::from(found.min_timestamp);
        let newest_age_ms = i128::from(now_ms) - i128::from(found.max_timestamp);
        if oldest_age_ms > before_max || -newest_age_ms > after_max {
            return Ok(None);
        }
    }
    Ok(Some(Scan {
        decoded: Vec::new(),
        n_records: usize::try_from(found.count).unwrap_or(0),
        max_timestamp: found.max_timestamp.max(NO_TIMESTAMP),
        offsets_contiguous: true,
    }))
}

/// Validates a leader append and assigns its offsets from `next_offset` (the log end offset):
/// Kafka's `UnifiedLog.analyzeAndValidateRecords` followed by
/// `LogValidator.validateMessagesAndAssignOffsets`, for a target magic of 2.
///
/// The result holds exactly one v2 batch at `next_offset`, stamped with `partition_leader_epoch`
/// and, for a LogAppendTime topic, with `now_ms`. Coordinator appends skip the client-only rules.
/// `next_offset` must be a log end offset (non-negative, far from `i64::MAX`).
pub fn validate_and_assign_offsets<'a>(
    records: &'a [u8],
    next_offset: i64,
    partition_leader_epoch: i32,
    now_ms: i64,
    origin: AppendOrigin,
    config: &ValidationConfig,
) -> Result<ValidatedAppend<'a>, ValidationError> {
    validate_leader_append(
        records,
        next_offset,
        partition_leader_epoch,
        now_ms,
        origin,
        config,
        Scanning::PlainFirst,
    )
}

/// How [`validate_leader_append`] checks the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scanning {
    /// `scan_plain` when it vouches for the append, else the full scan (what appends use).
    PlainFirst,
    /// Always the full scan (tests compare the two).
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests compare the two scans"))]
    FullOnly,
}

/// [`validate_and_assign_offsets`], with the records scan chosen.
fn validate_leader_append<'a>(
    records: &'a [u8],
    next_offset: i64,
    partition_leader_epoch: i32,
    now_ms: i64,
    origin: AppendOrigin,
    config: &ValidationConfig,
    scanning: Scanning,
) -> Result<ValidatedAppend<'a>, ValidationError> {
    assert!(
        (0..=i64::MAX - i64::from(i32::MAX)).contains(&next_offset),
        "next_offset {next_offset} is not a log end offset"
    );
    let (entries, valid_bytes) = walk(records)?;
    // Kafka trims trailing bytes that do not form a whole batch. A producer never sends them, so
    // on the leader they mean a damaged request, and taking the prefix could store half of what
    // the producer meant; refuse instead.
    if valid_bytes < records.len() {
        return Err(ValidationError::PartialBatch {
            position: valid_bytes as u64,
            remaining_bytes: records.len() - valid_bytes,
        });
    }
    let Some(first) = entries.first().map(|entry| entry.batch) else {
        return Err(invalid("Record batch has no batches at all"));
    };
    let source_compression = analyze_leader(&entries, origin, config)?;
    let target_compression = config.target_compression.resolve(source_compression);
    // A v2 append, or a compressed legacy one, is exactly one batch; only uncompressed legacy
    // messages come many to an append.
    if entries.len() > 1 && (first.magic() >= MAGIC_V2 || source_compression != Compression::None) {
        return Err(invalid("Compressed outer record has more than one batch"));
    }
    let plain = match scanning {
        Scanning::PlainFirst => scan_plain(&entries, origin, now_ms, config, target_compression)?,
        Scanning::FullOnly => None,
    };
    let scan = match plain {
        Some(scan) => scan,
        None => scan_records(&entries, origin, now_ms, config)?,
    };
    if scan.n_records == 0 {
        return Err(invalid("Invalid reported count for record batch: 0"));
    }
    let n_records = i64::try_from(scan.n_records).unwrap_or(i64::MAX);
    let last_offset = next_offset + n_records - 1;
    let log_append_time = match config.topic_timestamp_type() {
        TimestampType::LogAppendTime => now_ms,
        _ => NO_TIMESTAMP,
    };
    let in_place = match first {
        Batch::V2(v2) => {
            let codec_kept = source_compression == target_compression
                || (source_compression == Compression::None && v2.is_control_batch());
            codec_kept
                && scan.offsets_contiguous
                && i64::from(v2.last_offset_delta()) + 1 == n_records
        }
        Batch::Legacy(_) => false,
    };
    let out = if in_place {
        stamp_in_place(records, last_offset, partition_leader_epoch, log_append_time, &scan)?
    } else {
        let out = rebuild(
            &scan,
            &first,
            target_compression,
            next_offset,
            partition_leader_epoch,
            log_append_time,
        )?;
        // Kafka re-checks sizes whenever the validator may have changed them.
        if out.len() > config.max_message_bytes {
            return Err(ValidationError::RecordTooLarge {
                position: 0,
                batch_bytes: out.len(),
                max_message_bytes: config.max_message_bytes,
            });
        }
        AppendBytes::Owned(out)
    };
    let max_timestamp =
        if log_append_time == NO_TIMESTAMP { scan.max_timestamp } else { log_append_time };
    let producer_batches = match &first {
        Batch::V2(v2) => {
            ProducerBatch::of(v2, next_offset, last_offset, max_timestamp).into_iter().collect()
        }
        Batch::Legacy(_) => Vec::new(),
    };
    let txn_markers = match (&first, scan.decoded.first()) {
        (Batch::V2(v2), Some(records)) => {
            txn_marker_of(v2, records, next_offset, log_append_time)?.into_iter().collect()
        }
        _ => Vec::new(),
    };
    Ok(ValidatedAppend {
        records: out,
        first_offset: next_offset,
        last_offset,
        max_timestamp,
        // The output is one batch, so this is its last offset (Kafka's
        // `shallowOffsetOfMaxTimestamp`).
        shallow_offset_of_max_timestamp: last_offset,
        log_append_time,
        n_records: scan.n_records,
        n_batches: 1,
        source_compression,
        target_compression,
        recompressed: !in_place,
        batches: vec![(partition_leader_epoch, next_offset)],
        producer_batches,
        txn_markers,
        has_legacy_batches: false,
    })
}

/// One idempotent producer's batch of an append (the fields Kafka's `ProducerAppendInfo` reads):
/// a v2 batch with a producer id and a base sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerBatch {
    /// The producer id.
    pub producer_id: i64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The base sequence.
    pub first_seq: i32,
    /// The last sequence (wrapping past `i32::MAX` as Kafka's does).
    pub last_seq: i32,
    /// The batch's base offset, as appended.
    pub first_offset: i64,
    /// The batch's last offset, as appended.
    pub last_offset: i64,
    /// The batch's max timestamp, as appended.
    pub max_timestamp: i64,
    /// Whether the batch is transactional (attributes bit 4).
    pub is_transactional: bool,
}

/// The COMMIT or ABORT marker of a control batch with a producer id, from its first record
/// (Kafka's `EndTransactionMarker.deserialize`), at `offset`; `log_append_time` (or -1) stands
/// for the record's timestamp on a LogAppendTime topic. An empty control batch (its marker
/// cleaned away) and other control types are no marker.
fn txn_marker_of(
    batch: &RecordBatch<'_>,
    records: &BatchRecords<'_>,
    offset: i64,
    log_append_time: i64,
) -> Result<Option<TxnMarker>, ValidationError> {
    if !batch.is_control_batch() || batch.producer_id() < 0 {
        return Ok(None);
    }
    let Some(record) = records.iter().next() else { return Ok(None) };
    let record = record.map_err(classify)?;
    let kind = ControlRecordType::parse_key(record.key.unwrap_or_default())
        .map_err(|error| invalid(format!("invalid control record key: {error}")))?;
    let is_abort = match kind {
        ControlRecordType::Abort => true,
        ControlRecordType::Commit => false,
        _ => return Ok(None),
    };
    let marker = EndTransactionMarker::parse(record.value.unwrap_or_default())
        .map_err(|error| invalid(format!("invalid transaction marker: {error}")))?;
    Ok(Some(TxnMarker {
        producer_id: batch.producer_id(),
        producer_epoch: batch.producer_epoch(),
        coordinator_epoch: marker.coordinator_epoch,
        offset,
        timestamp: if log_append_time == NO_TIMESTAMP { record.timestamp } else { log_append_time },
        is_abort,
    }))
}

impl ProducerBatch {
    /// The producer fields of `batch` as it is appended (its offsets and max timestamp given),
    /// or `None` when it has no producer id or no sequence.
    fn of(
        batch: &RecordBatch<'_>,
        first_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
    ) -> Option<Self> {
        (batch.producer_id() >= 0 && batch.base_sequence() >= 0).then(|| Self {
            producer_id: batch.producer_id(),
            producer_epoch: batch.producer_epoch(),
            first_seq: batch.base_sequence(),
            last_seq: increment_sequence(
                batch.base_sequence(),
                i32::try_from(last_offset - first_offset).unwrap_or(i32::MAX),
            ),
            first_offset,
            last_offset,
            max_timestamp,
            is_transactional: batch.is_transactional(),
        })
    }
}

/// Stamps the single v2 batch: offsets, leader epoch, timestamp type and max timestamp.
fn stamp_in_place<'a>(
    records: &'a [u8],
    last_offset: i64,
    partition_leader_epoch: i32,
    log_append_time: i64,
    scan: &Scan<'_>,
) -> Result<AppendBytes<'a>, ValidationError> {
    let (timestamp_type, max_timestamp) = if log_append_time == NO_TIMESTAMP {
        (TimestampType::CreateTime, scan.max_timestamp)
    } else {
        (TimestampType::LogAppendTime, log_append_time)
    };
    let batch = RecordBatch::new(records).map_err(ValidationError::Decode)?;
    if batch.timestamp_type() == timestamp_type
        && batch.max_timestamp() == max_timestamp
        && let (Some(head), Some(rest)) =
            (records.get(..RECORD_BATCH_OVERHEAD), records.get(RECORD_BATCH_OVERHEAD..))
    {
        // Only fields outside the CRC change: stamp a copy of the header and write the
        // producer's bytes after it as they came.
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        header.copy_from_slice(head);
        let base_offset = last_offset.wrapping_sub(i64::from(batch.last_offset_delta()));
        put_be(&mut header, BASE_OFFSET_OFFSET, &base_offset.to_be_bytes());
        put_be(&mut header, PARTITION_LEADER_EPOCH_OFFSET, &partition_leader_epoch.to_be_bytes());
        return Ok(AppendBytes::Stamped { header, rest });
    }
    let mut out = records.to_vec();
    let mut batch = RecordBatchMut::new(&mut out).map_err(ValidationError::Decode)?;
    batch.set_last_offset(last_offset);
    batch.set_partition_leader_epoch(partition_leader_epoch);
    batch.set_max_timestamp(timestamp_type, max_timestamp).map_err(ValidationError::Decode)?;
    Ok(AppendBytes::Owned(out))
}

/// Writes `value` into `header` at `at` (the field offsets are Kafka's, inside the header).
fn put_be(header: &mut [u8; RECORD_BATCH_OVERHEAD], at: usize, value: &[u8]) {
    if let Some(field) = header.get_mut(at..at + value.len()) {
        field.copy_from_slice(value);
    }
}

/// Writes every scanned record into one new v2 batch (Kafka's `buildRecordsAndAssignOffsets` and
/// `convertAndAssignOffsetsNonCompressed`).
fn rebuild(
    scan: &Scan<'_>,
    first: &Batch<'_>,
    target_compression: Compression,
    next_offset: i64,
    partition_leader_epoch: i32,
    log_append_time: i64,
) -> Result<Vec<u8>, ValidationError> {
    let unencodable = |error: DecodeError| match error {
        DecodeError::Unencodable { .. } => invalid(format!("cannot rebuild the batch: {error}")),
        other => ValidationError::Decode(other),
    };
    let mut builder = RecordBatchBuilder::new(target_compression)
        .base_offset(next_offset)
        .partition_leader_epoch(partition_leader_epoch)
        .producer(first.producer_id(), first.producer_epoch(), first.base_sequence())
        .transactional(first.is_transactional())
        .control(first.is_control_batch());
    if log_append_time != NO_TIMESTAMP {
        builder = builder.log_append_time(log_append_time);
    }
    for decoded in &scan.decoded {
        for record in decoded {
            let record = record.map_err(classify)?;
            // Kafka's header keys are Java strings, decoded from UTF-8 with replacement.
            let keys: Vec<Cow<'_, str>> =
                record.headers.iter().map(|header| header.key_str()).collect();
            let headers: Vec<HeaderRef<'_>> = keys
                .iter()
                .zip(record.headers.iter())
                .map(|(key, header)| HeaderRef { key: key.as_ref(), value: header.value })
                .collect();
            builder
                .push(record.timestamp, record.key, record.value, &headers)
                .map_err(unencodable)?;
        }
    }
    // Only the full scan keeps the decoded records; the plain scan is for in-place appends.
    assert_eq!(
        usize::try_from(builder.n_records()).ok(),
        Some(scan.n_records),
        "a rebuild needs every record decoded"
    );
    builder.build().map_err(unencodable)
}

/// Checks a follower (or restore) append whose offsets the leader already assigned: Kafka's
/// `analyzeAndValidateRecords` with offsets required monotonic, plus the append's check that it
/// does not start below `log_end_offset`.
///
/// Every batch's CRC must hold and last offsets must increase; `max.message.bytes` is not
/// enforced (the leader accepted the batches). Trailing bytes that do not form a whole batch are
/// trimmed, as Kafka does, because a fetch response may legitimately end mid-batch. An append
/// with no whole batch is returned with `n_batches == 0` and nothing to write.
pub fn analyze_follower_append<'a>(
    records: &'a [u8],
    log_end_offset: i64,
    config: &ValidationConfig,
) -> Result<ValidatedAppend<'a>, ValidationError> {
    let (entries, valid_bytes) = walk(records)?;
    let mut append = ValidatedAppend {
        records: AppendBytes::Borrowed(records.get(..valid_bytes).unwrap_or_default()),
        first_offset: log_end_offset,
        last_offset: log_end_offset - 1,
        max_timestamp: NO_TIMESTAMP,
        shallow_offset_of_max_timestamp: -1,
        log_append_time: NO_TIMESTAMP,
        n_records: 0,
        n_batches: entries.len(),
        source_compression: Compression::None,
        target_compression: Compression::None,
        recompressed: false,
        batches: Vec::new(),
        producer_batches: Vec::new(),
        txn_markers: Vec::new(),
        has_legacy_batches: false,
    };
    let Some(first) = entries.first() else {
        return Ok(append);
    };
    let mut last_offsets: Vec<i64> = Vec::with_capacity(entries.len());
    for (batch_idx, entry) in entries.iter().enumerate() {
        let batch = entry.batch;
        let locate = |error: DecodeError| classify(error.at(entry.position));
        batch.validate().map_err(locate)?;
        let last_offset = batch.last_offset();
        if last_offsets.last().is_some_and(|&previous| previous >= last_offset) {
            return Err(ValidationError::OffsetsOutOfOrder {
                last_offsets: entries.iter().map(|entry| entry.batch.last_offset()).collect(),
            });
        }
        last_offsets.push(last_offset);
        if batch_idx == 0 || batch.max_timestamp() > append.max_timestamp {
            append.max_timestamp = batch.max_timestamp();
            append.shallow_offset_of_max_timestamp = last_offset;
        }
        let codec = batch.compression().map_err(locate)?;
        if codec != Compression::None {
            append.source_compression = codec;
        }
        append.n_records += match batch {
            Batch::V2(v2) => {
                append.batches.push((v2.partition_leader_epoch(), v2.base_offset()));
                let producer =
                    ProducerBatch::of(&v2, v2.base_offset(), last_offset, v2.max_timestamp());
                append.producer_batches.extend(producer);
                if v2.is_control_batch() && v2.producer_id() >= 0 {
                    let records = batch.records(config.decode_limits).map_err(locate)?;
                    let marker = txn_marker_of(&v2, &records, v2.base_offset(), NO_TIMESTAMP)?;
                    append.txn_markers.extend(marker);
                }
                usize::try_from(v2.records_count()).unwrap_or(0)
            }
            Batch::Legacy(_) => {
                append.has_legacy_batches = true;
                let decoded = batch.records(config.decode_limits).map_err(locate)?;
                let mut n_records = 0;
                for record in &decoded {
                    record.map_err(locate)?;
                    n_records += 1;
                }
                n_records
            }
        };
    }
    append.target_compression = append.source_compression;
    append.last_offset = last_offsets.last().copied().unwrap_or(log_end_offset - 1);
    append.first_offset = first
        .batch
        .base_offset(config.decode_limits)
        .map_err(|error| classify(error.at(first.position)))?;
    let (checked_offset, first_batch_is_legacy) = match first.batch {
        Batch::V2(v2) => (v2.base_offset(), false),
        Batch::Legacy(entry) => (entry.offset(), true),
    };
    if checked_offset < log_end_offset {
        return Err(ValidationError::UnexpectedAppendOffset {
            first_offset: append.first_offset,
            last_offset: append.last_offset,
            checked_offset,
            log_end_offset,
            first_batch_is_legacy,
        });
    }
    Ok(append)
}

#[cfg(test)]
#[path = "validator_tests.rs"]
mod tests;
