//! Tests of the LogValidator: Kafka's checks, offsets, stamping and rebuilds, error codes.

use proptest::prelude::*;
use seglog_format::compression::compress;
use seglog_format::varint::{write_varint, write_varlong};
use seglog_format::{
    BatchHeader, ControlRecordType, EmptyHeader, RecordBatch, end_transaction_marker_batch,
};

use super::*;

/// The broker clock in every test.
const NOW: i64 = 1_700_000_000_000;
/// The log end offset every leader append starts at.
const NEXT_OFFSET: i64 = 100;
/// The leader epoch every leader append is stamped with.
const EPOCH: i32 = 7;

/// A record to write into a test batch, and what a validated batch must give back.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn rec(timestamp: i64, key: Option<&str>, value: &str) -> Rec {
    Rec {
        timestamp,
        key: key.map(|key| key.as_bytes().to_vec()),
        value: Some(value.as_bytes().to_vec()),
        headers: Vec::new(),
    }
}

fn three_recs(timestamp: i64) -> Vec<Rec> {
    ["hello", "there", "beautiful"].iter().map(|value| rec(timestamp, None, value)).collect()
}

fn push_all(builder: &mut RecordBatchBuilder, recs: &[Rec]) {
    for rec in recs {
        let headers: Vec<HeaderRef<'_>> = rec
            .headers
            .iter()
            .map(|(key, value)| HeaderRef { key, value: value.as_deref() })
            .collect();
        builder.push(rec.timestamp, rec.key.as_deref(), rec.value.as_deref(), &headers).unwrap();
    }
}

/// A producer's v2 batch: base offset 0, no producer id.
fn v2_batch(codec: Compression, recs: &[Rec]) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec);
    push_all(&mut builder, recs);
    builder.build().unwrap()
}

/// A v2 batch whose records carry the given offset deltas and whose header declares
/// `last_offset_delta`, which a builder would refuse to write.
fn v2_with_deltas(codec: Compression, deltas: &[i32], last_offset_delta: i32) -> Vec<u8> {
    let mut records = Vec::new();
    for (idx, &delta) in deltas.iter().enumerate() {
        let key = format!("k{idx}");
        let mut body = vec![0u8];
        write_varlong(&mut body, 0);
        write_varint(&mut body, delta);
        write_varint(&mut body, key.len() as i32);
        body.extend_from_slice(key.as_bytes());
        write_varint(&mut body, -1);
        write_varint(&mut body, 0);
        write_varint(&mut records, body.len() as i32);
        records.extend_from_slice(&body);
    }
    let payload =
        if codec == Compression::None { records } else { compress(codec, &records).unwrap() };
    BatchHeader {
        base_offset: 0,
        partition_leader_epoch: -1,
        attributes: codec.id(),
        last_offset_delta,
        base_timestamp: NOW,
        max_timestamp: NOW,
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records_count: deltas.len() as i32,
    }
    .encode(&payload)
    .unwrap()
}

/// CRC-32 (IEEE), which legacy messages use.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

/// One legacy (v0/v1) log entry.
fn legacy_message(magic: i8, offset: i64, attributes: u8, value: &[u8]) -> Vec<u8> {
    let mut body = vec![magic as u8, attributes];
    if magic == 1 {
        body.extend_from_slice(&NOW.to_be_bytes());
    }
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&(value.len() as i32).to_be_bytes());
    body.extend_from_slice(value);
    let mut entry = offset.to_be_bytes().to_vec();
    entry.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    entry.extend_from_slice(&crc32(&body).to_be_bytes());
    entry.extend_from_slice(&body);
    entry
}

/// A legacy compressed wrapper holding `inner` entries.
fn legacy_wrapper(magic: i8, codec: Compression, offset: i64, inner: &[Vec<u8>]) -> Vec<u8> {
    let payload = compress(codec, &inner.concat()).unwrap();
    legacy_message(magic, offset, codec.id(), &payload)
}

/// Inner messages with values `v0`, `v1`, ... at the given (relative or absolute) offsets.
fn legacy_inner(magic: i8, offsets: &[i64]) -> Vec<Vec<u8>> {
    offsets
        .iter()
        .enumerate()
        .map(|(idx, &offset)| legacy_message(magic, offset, 0, format!("v{idx}").as_bytes()))
        .collect()
}

fn config() -> ValidationConfig {
    ValidationConfig::default()
}

fn with_target(target: TargetCompression) -> ValidationConfig {
    ValidationConfig { target_compression: target, ..config() }
}

/// A leader's validation of `records` (copied and leaked, so that the append outlives a
/// temporary input: a test's few kilobytes).
fn validate(
    records: &[u8],
    config: &ValidationConfig,
) -> Result<ValidatedAppend<'static>, ValidationError> {
    let records: &'static [u8] = Box::leak(records.to_vec().into_boxed_slice());
    validate_and_assign_offsets(records, NEXT_OFFSET, EPOCH, NOW, AppendOrigin::Client, config)
}

/// The one batch of a validated append, with its CRC and every record checked (its bytes
/// concatenated and leaked, so that the batch outlives the append: a test's few kilobytes).
fn only_batch(append: &ValidatedAppend<'_>) -> RecordBatch<'static> {
    let bytes: &'static [u8] = Box::leak(append.records.to_vec().into_boxed_slice());
    let mut batches = Batches::new(bytes);
    let Batch::V2(batch) = batches.next().unwrap().unwrap().batch else {
        panic!("a validated append holds a v2 batch");
    };
    assert!(batches.next().is_none());
    assert_eq!(batches.remaining_bytes(), 0);
    batch.validate_records(DecodeLimits::default()).unwrap();
    assert_eq!(append.n_batches, 1);
    assert_eq!(append.batches, vec![(EPOCH, NEXT_OFFSET)]);
    assert_eq!((batch.base_offset(), batch.partition_leader_epoch()), (NEXT_OFFSET, EPOCH));
    assert_eq!(batch.last_offset(), append.last_offset);
    assert_eq!(append.shallow_offset_of_max_timestamp, append.last_offset);
    batch
}

/// Every record of a batch: offset, reported timestamp and contents.
fn records_of(batch: RecordBatch<'_>) -> Vec<(i64, Rec)> {
    let records = batch.records(DecodeLimits::default()).unwrap();
    records
        .iter()
        .map(|record| {
            let record = record.unwrap();
            let headers = record
                .headers
                .iter()
                .map(|header| (header.key_str().into_owned(), header.value.map(<[u8]>::to_vec)))
                .collect();
            let rec = Rec {
                timestamp: record.timestamp,
                key: record.key.map(<[u8]>::to_vec),
                value: record.value.map(<[u8]>::to_vec),
                headers,
            };
            (record.offset, rec)
        })
        .collect()
}

/// Asserts that `batch` holds `recs` at consecutive offsets from [`NEXT_OFFSET`].
fn assert_records(batch: RecordBatch<'_>, recs: &[Rec]) {
    let expected: Vec<(i64, Rec)> = (NEXT_OFFSET..).zip(recs.iter().cloned()).collect();
    assert_eq!(records_of(batch), expected);
}

fn batch_idxs(error: &ValidationError) -> Vec<usize> {
    error.record_errors().iter().map(|error| error.batch_idx).collect()
}

#[test]
fn check_only_one_batch() {
    for codec in Compression::ALL {
        let mut records = v2_batch(codec, &[rec(NOW, None, "a")]);
        records.extend(v2_batch(codec, &[rec(NOW, None, "b"), rec(NOW, None, "c")]));
        for target in [TargetCompression::Producer, TargetCompression::Codec(Compression::Gzip)] {
            let error = validate(&records, &with_target(target)).unwrap_err();
            assert_eq!(error, invalid("Compressed outer record has more than one batch"));
        }
    }
    for magic in [0, 1] {
        let wrapper = legacy_wrapper(magic, Compression::Gzip, 1, &legacy_inner(magic, &[0, 1]));
        let records = [wrapper.clone(), wrapper].concat();
        let error = validate(&records, &config()).unwrap_err();
        assert_eq!(error, invalid("Compressed outer record has more than one batch"));
    }
}

#[test]
fn batch_without_records_not_allowed() {
    let empty = EmptyHeader {
        base_offset: 0,
        last_offset: 5,
        producer_id: 1324,
        producer_epoch: 10,
        base_sequence: 984,
        timestamp_type: TimestampType::CreateTime,
        timestamp: NOW,
        is_transactional: true,
        is_control: false,
        partition_leader_epoch: 40,
    }
    .encode()
    .unwrap();
    let targets = Compression::ALL.map(TargetCompression::Codec);
    for target in targets.into_iter().chain([TargetCompression::Producer]) {
        for origin in [AppendOrigin::Client, AppendOrigin::Coordinator] {
            let error =
                validate_and_assign_offsets(&empty, 0, 0, NOW, origin, &with_target(target))
                    .unwrap_err();
            assert_eq!(error, invalid("Invalid reported count for record batch: 0"));
        }
    }
}

#[test]
fn empty_record_set_has_no_batches_at_all() {
    let error = validate(&[], &config()).unwrap_err();
    assert_eq!(error, invalid("Record batch has no batches at all"));
}

#[test]
fn check_mismatch_magic() {
    // A compressed wrapper whose inner messages have another magic.
    for (wrapper_magic, inner_magic) in [(0, 1), (1, 0)] {
        let inner = legacy_inner(inner_magic, &[0, 1, 2]);
        let records = legacy_wrapper(wrapper_magic, Compression::Gzip, 2, &inner);
        let error = validate(&records, &config()).unwrap_err();
        assert_eq!((error.error_code(), error.error_name()), (87, "INVALID_RECORD"), "{error}");
    }
    // Batches of one append with different magics.
    let records = [legacy_message(0, 0, 0, b"a"), legacy_message(1, 1, 0, b"b")].concat();
    let error = validate(&records, &config()).unwrap_err();
    assert_eq!(error, invalid("Batch magic 1 is not the same as the first batch's magic byte 0"));
    let records =
        [legacy_message(1, 0, 0, b"a"), v2_batch(Compression::None, &three_recs(NOW))].concat();
    let error = validate(&records, &config()).unwrap_err();
    assert_eq!(error, invalid("Batch magic 2 is not the same as the first batch's magic byte 1"));
}

#[test]
fn check_allow_multi_batch() {
    // Uncompressed legacy messages come one per batch; they are converted into one v2 batch.
    for magic in [0, 1] {
        let records = legacy_inner(magic, &[0, 1, 2]).concat();
        for codec in [Compression::None, Compression::Gzip] {
            let append = validate(&records, &with_target(TargetCompression::Codec(codec))).unwrap();
            let batch = only_batch(&append);
            assert_eq!(batch.compression().unwrap(), codec);
            assert!(append.recompressed);
            assert_eq!((append.first_offset, append.last_offset), (100, 102));
            let timestamp = if magic == 0 { NO_TIMESTAMP } else { NOW };
            let values: Vec<Rec> = (0..3)
                .map(|idx| Rec { key: None, ..rec(timestamp, None, &format!("v{idx}")) })
                .collect();
            assert_records(batch, &values);
            assert_eq!(append.max_timestamp, timestamp);
        }
    }
}

#[test]
fn absolute_offset_assignment_in_place_for_every_codec() {
    let recs = three_recs(NOW);
    for codec in Compression::ALL {
        let input = v2_batch(codec, &recs);
        let append = validate(&input, &config()).unwrap();
        let batch = only_batch(&append);
        assert!(!append.recompressed);
        assert_eq!((append.source_compression, append.target_compression), (codec, codec));
        assert_eq!(batch.records_payload(), RecordBatch::new(&input).unwrap().records_payload());
        assert_eq!((append.first_offset, append.last_offset, append.n_records), (100, 102, 3));
        assert_records(batch, &recs);
    }
}

#[test]
fn relative_offset_assignment_for_legacy_compressed_wrappers() {
    // v1 wrappers carry relative inner offsets and the last one as their own offset; v0
    // wrappers carry absolute inner offsets.
    for (magic, inner_offsets, wrapper_offset) in [(1, [0, 1, 2], 2), (0, [5, 6, 7], 7)] {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let inner = legacy_inner(magic, &inner_offsets);
            let records = legacy_wrapper(magic, codec, wrapper_offset, &inner);
            let append = validate(&records, &config()).unwrap();
            let batch = only_batch(&append);
            assert!(append.recompressed);
            assert_eq!(batch.compression().unwrap(), codec);
            let offsets: Vec<i64> = records_of(batch).iter().map(|(offset, _)| *offset).collect();
            assert_eq!(offsets, vec![100, 101, 102]);
        }
    }
}

#[test]
fn validation_of_batches_with_non_sequential_inner_offsets() {
    // Legacy v1 wrapper with gaps between inner offsets: rewritten, not rejected.
    let records = legacy_wrapper(1, Compression::Gzip, 4, &legacy_inner(1, &[0, 2, 4]));
    let append = validate(&records, &config()).unwrap();
    let offsets: Vec<i64> =
        records_of(only_batch(&append)).iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, vec![100, 101, 102]);
    // v2 with a consistent header but irregular deltas: rewritten too, compressed or not.
    for codec in [Compression::None, Compression::Gzip] {
        let append = validate(&v2_with_deltas(codec, &[1, 1, 2], 2), &config()).unwrap();
        assert!(append.recompressed);
        let records = records_of(only_batch(&append));
        let offsets: Vec<i64> = records.iter().map(|(offset, _)| *offset).collect();
        assert_eq!(offsets, vec![100, 101, 102]);
        assert_eq!(records[0].1.key.as_deref(), Some(&b"k0"[..]));
    }
    // v2 with gaps: the offset range disagrees with the count, which Kafka rejects.
    let error = validate(&v2_with_deltas(Compression::Gzip, &[0, 2, 4], 4), &config());
    assert_eq!(
        error.unwrap_err(),
        invalid("Inconsistent batch offset range [0, 4] and count of records 3")
    );
}

#[test]
fn check_recompression() {
    let recs = vec![rec(NOW - 1, None, "hello"), rec(NOW + 1, None, "there"), rec(NOW, None, "x")];
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(1324, 10, 984)
        .transactional(true)
        .partition_leader_epoch(40);
    push_all(&mut builder, &recs);
    let input = builder.build().unwrap();
    let target = TargetCompression::Codec(Compression::Gzip);
    let append = validate(&input, &with_target(target)).unwrap();
    let batch = only_batch(&append);
    assert!(append.recompressed);
    assert_eq!(
        (append.source_compression, append.target_compression),
        (Compression::None, Compression::Gzip)
    );
    assert_eq!(batch.compression().unwrap(), Compression::Gzip);
    assert_eq!(
        (batch.producer_id(), batch.producer_epoch(), batch.base_sequence()),
        (1324, 10, 984)
    );
    assert!(batch.is_transactional());
    assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
    assert_eq!((batch.base_timestamp(), batch.max_timestamp()), (NOW - 1, NOW + 1));
    assert_eq!((append.max_timestamp, append.shallow_offset_of_max_timestamp), (NOW + 1, 102));
    assert_eq!(append.log_append_time, NO_TIMESTAMP);
    assert_records(batch, &recs);
}

#[test]
fn different_codec_causes_recompression() {
    let recs = three_recs(NOW);
    let input = v2_batch(Compression::Gzip, &recs);
    let append =
        validate(&input, &with_target(TargetCompression::Codec(Compression::Lz4))).unwrap();
    let batch = only_batch(&append);
    assert!(append.recompressed);
    assert_eq!(batch.compression().unwrap(), Compression::Lz4);
    assert_records(batch, &recs);
}

#[test]
fn different_level_does_not_cause_recompression() {
    // Our codecs carry no level: the same codec keeps the producer's payload byte for byte.
    let recs = three_recs(NOW);
    for codec in Compression::ALL {
        let input = v2_batch(codec, &recs);
        let append = validate(&input, &with_target(TargetCompression::Codec(codec))).unwrap();
        let batch = only_batch(&append);
        assert!(!append.recompressed);
        assert_eq!(batch.records_payload(), RecordBatch::new(&input).unwrap().records_payload());
        assert_eq!(&append.records.to_vec()[61..], &input[61..]);
    }
}

/// Validates a LogAppendTime topic's append and checks that the batch and every record report
/// the broker's time.
fn check_log_append_time(source: Compression, target: TargetCompression, rebuilt: bool) {
    let recs = three_recs(NOW - 5_000);
    let config = ValidationConfig {
        timestamp_type: TimestampType::LogAppendTime,
        timestamp_before_max_ms: 1_000,
        ..with_target(target)
    };
    let append = validate(&v2_batch(source, &recs), &config).unwrap();
    let batch = only_batch(&append);
    assert_eq!(append.recompressed, rebuilt);
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batch.max_timestamp(), NOW);
    assert_eq!((append.max_timestamp, append.log_append_time), (NOW, NOW));
    let expected: Vec<Rec> = recs.into_iter().map(|rec| Rec { timestamp: NOW, ..rec }).collect();
    assert_records(batch, &expected);
}

#[test]
fn check_log_append_time_with_recompression() {
    let target = TargetCompression::Codec(Compression::None);
    check_log_append_time(Compression::Gzip, target, true);
}

#[test]
fn check_log_append_time_without_recompression() {
    check_log_append_time(Compression::Gzip, TargetCompression::Producer, false);
}

#[test]
fn check_log_append_time_non_compressed() {
    check_log_append_time(Compression::None, TargetCompression::Producer, false);
}

#[test]
fn producer_set_log_append_time_is_rejected_or_range_checked() {
    let mut builder = RecordBatchBuilder::new(Compression::None).log_append_time(NOW - 10);
    push_all(&mut builder, &three_recs(NOW - 20));
    let input = builder.build().unwrap();
    let log_append_topic =
        ValidationConfig { timestamp_type: TimestampType::LogAppendTime, ..config() };
    let error = validate(&input, &log_append_topic).unwrap_err();
    assert_eq!(error.error_code(), 32);
    assert_eq!(batch_idxs(&error), vec![0, 1, 2]);
    assert!(error.record_errors()[0].message.contains("Producer should not set timestamp type"));
    // A CreateTime topic range-checks the batch's timestamp instead, and keeps CreateTime.
    let append = validate(&input, &config()).unwrap();
    assert_eq!(only_batch(&append).timestamp_type(), TimestampType::CreateTime);
    assert_eq!(append.max_timestamp, NOW - 10);
    let strict = ValidationConfig { timestamp_before_max_ms: 5, ..config() };
    assert_eq!(batch_idxs(&validate(&input, &strict).unwrap_err()), vec![0, 1, 2]);
}

#[test]
fn invalid_create_time_reports_every_record() {
    let config = ValidationConfig {
        timestamp_before_max_ms: 1_000,
        timestamp_after_max_ms: 1_000,
        ..config()
    };
    for codec in [Compression::None, Compression::Gzip] {
        for timestamp in [NOW - 1_001, NOW + 1_001] {
            let error = validate(&v2_batch(codec, &three_recs(timestamp)), &config).unwrap_err();
            assert_eq!((error.error_code(), error.error_name()), (32, "INVALID_TIMESTAMP"));
            assert_eq!(batch_idxs(&error), vec![0, 1, 2]);
        }
    }
    // A legacy v1 message set is checked the same way.
    let records = legacy_inner(1, &[0, 1, 2]).concat();
    let error = validate_and_assign_offsets(
        &records,
        NEXT_OFFSET,
        EPOCH,
        NOW + 1_001,
        AppendOrigin::Client,
        &config,
    )
    .unwrap_err();
    assert_eq!(batch_idxs(&error), vec![0, 1, 2]);
}

#[test]
fn record_with_past_timestamp_is_rejected() {
    let config = ValidationConfig { timestamp_before_max_ms: 1_000, ..config() };
    let error = validate(&v2_batch(Compression::None, &three_recs(NOW - 2_000)), &config);
    let error = error.unwrap_err();
    assert_eq!(batch_idxs(&error), vec![0, 1, 2]);
    let expected = format!(
        "Timestamp {} of message with offset 1 is out of range. The timestamp should be within [{}, {}]",
        NOW - 2_000,
        NOW - 1_000,
        i64::MAX
    );
    assert_eq!(error.record_errors()[1].message, expected);
    // The bound is inclusive.
    validate(&v2_batch(Compression::None, &three_recs(NOW - 1_000)), &config).unwrap();
}

#[test]
fn record_with_future_timestamp_is_rejected() {
    let config = ValidationConfig { timestamp_after_max_ms: 1_000, ..config() };
    let error = validate(&v2_batch(Compression::Lz4, &three_recs(NOW + 2_000)), &config);
    let error = error.unwrap_err();
    assert_eq!(batch_idxs(&error), vec![0, 1, 2]);
    assert!(error.record_errors()[2].message.contains(&format!(
        "within [{}, {}]",
        NOW - i64::MAX,
        NOW + 1_000
    )));
    validate(&v2_batch(Compression::Lz4, &three_recs(NOW + 1_000)), &config).unwrap();
}

#[test]
fn batch_with_invalid_records_and_invalid_timestamp() {
    // A timestamp error anywhere makes the append INVALID_TIMESTAMP, listing key errors too.
    let config = ValidationConfig { compact: true, timestamp_before_max_ms: 1_000, ..config() };
    let recs = [rec(NOW, None, "a"), rec(NOW - 5_000, Some("k"), "b"), rec(NOW, Some("k"), "c")];
    let error = validate(&v2_batch(Compression::Gzip, &recs), &config).unwrap_err();
    assert_eq!(error.error_code(), 32);
    assert_eq!(batch_idxs(&error), vec![0, 1]);
}

#[test]
fn check_invalid_checksum() {
    let mut records = v2_batch(Compression::Gzip, &three_recs(NOW));
    *records.last_mut().unwrap() ^= 0xFF;
    let error = validate(&records, &config()).unwrap_err();
    assert_eq!((error.error_code(), error.error_name()), (2, "CORRUPT_MESSAGE"));
    let ValidationError::Decode(decode) = &error else { panic!("{error:?}") };
    assert!(matches!(decode.root(), DecodeError::CrcMismatch { .. }), "{decode:?}");
    // Legacy: a bad outer CRC, and a bad inner CRC inside a compressed wrapper.
    for magic in [0, 1] {
        let mut message = legacy_message(magic, 0, 0, b"hello");
        message[12] ^= 0xFF;
        assert_eq!(validate(&message, &config()).unwrap_err().error_code(), 2);
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let mut inner = legacy_inner(magic, &[0]);
            inner[0][12] ^= 0xFF;
            let wrapper = legacy_wrapper(magic, codec, 0, &inner);
            assert_eq!(validate(&wrapper, &config()).unwrap_err().error_code(), 2);
        }
    }
}

#[test]
fn check_invalid_sequence() {
    for codec in Compression::ALL {
        let mut builder = RecordBatchBuilder::new(codec).producer(1234, 0, -1);
        push_all(&mut builder, &three_recs(NOW));
        let error = validate(&builder.build().unwrap(), &config()).unwrap_err();
        assert_eq!(
            error,
            invalid("Invalid sequence number -1 in record batch with producerId 1234")
        );
    }
}

#[test]
fn check_no_key_compacted_topic() {
    let config = ValidationConfig { compact: true, ..config() };
    let recs = [rec(NOW, None, "a"), rec(NOW, Some("k"), "b"), rec(NOW, None, "c")];
    for codec in [Compression::None, Compression::Gzip] {
        let error = validate(&v2_batch(codec, &recs), &config).unwrap_err();
        assert_eq!((error.error_code(), error.error_name()), (87, "INVALID_RECORD"));
        assert_eq!(batch_idxs(&error), vec![0, 2]);
        assert_eq!(
            error.record_errors()[0].message,
            "Compacted topic cannot accept message without key"
        );
        assert!(error.to_string().contains("due to 2 record errors in total"), "{error}");
    }
    let keyed = [rec(NOW, Some("a"), "a"), rec(NOW, Some(""), "b")];
    validate(&v2_batch(Compression::None, &keyed), &config).unwrap();
}

#[test]
fn control_records_not_allowed_from_clients() {
    let marker =
        end_transaction_marker_batch(0, NOW, -1, 1234, 0, ControlRecordType::Commit, 5).unwrap();
    let error = validate(&marker, &config()).unwrap_err();
    assert_eq!(error, invalid("Clients are not allowed to write control records"));
    // A coordinator may; an uncompressed marker stays uncompressed whatever the topic codec.
    let target = TargetCompression::Codec(Compression::Gzip);
    let append = validate_and_assign_offsets(
        &marker,
        NEXT_OFFSET,
        EPOCH,
        NOW,
        AppendOrigin::Coordinator,
        &with_target(target),
    )
    .unwrap();
    let batch = only_batch(&append);
    assert!(!append.recompressed && batch.is_control_batch() && batch.is_transactional());
    assert_eq!(batch.compression().unwrap(), Compression::None);
    assert_eq!(append.target_compression, Compression::Gzip);
}

#[test]
fn client_batch_must_have_base_offset_zero() {
    let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(5);
    push_all(&mut builder, &three_recs(NOW));
    let input = builder.build().unwrap();
    let error = validate(&input, &config()).unwrap_err();
    assert_eq!(
        error,
        invalid("The baseOffset of the record batch in the append should be 0, but it is 5")
    );
    let append = validate_and_assign_offsets(
        &input,
        NEXT_OFFSET,
        EPOCH,
        NOW,
        AppendOrigin::Coordinator,
        &config(),
    )
    .unwrap();
    assert_records(only_batch(&append), &three_recs(NOW));
}

#[test]
fn inconsistent_batch_offset_range() {
    let error = validate(&v2_with_deltas(Compression::None, &[0, 1, 2], 5), &config());
    assert_eq!(
        error.unwrap_err(),
        invalid("Inconsistent batch offset range [0, 5] and count of records 3")
    );
    let error = validate(&v2_with_deltas(Compression::None, &[0], -3), &config());
    assert_eq!(error.unwrap_err(), invalid("Batch has an invalid offset range: [0, -3]"));
}

#[test]
fn message_too_large() {
    let input = v2_batch(Compression::None, &[rec(NOW, None, &"x".repeat(200))]);
    let config = ValidationConfig { max_message_bytes: 200, ..config() };
    let error = validate(&input, &config).unwrap_err();
    assert_eq!((error.error_code(), error.error_name()), (10, "MESSAGE_TOO_LARGE"));
    assert_eq!(
        error,
        ValidationError::RecordTooLarge {
            position: 0,
            batch_bytes: input.len(),
            max_message_bytes: 200
        }
    );
    // Followers copy what the leader accepted, whatever its size.
    analyze_follower_append(&input, 0, &config).unwrap();
    // A rebuilt batch is checked again: this one fits compressed but not uncompressed.
    let input = v2_batch(Compression::Gzip, &[rec(NOW, None, &"x".repeat(2_000))]);
    assert!(input.len() < 200);
    let target = TargetCompression::Codec(Compression::None);
    let error = validate(&input, &ValidationConfig { target_compression: target, ..config });
    assert_eq!(error.unwrap_err().error_code(), 10);
}

#[test]
fn partial_trailing_batch() {
    let whole = v2_batch(Compression::None, &three_recs(NOW));
    let records = [&whole[..], &whole[..20]].concat();
    let error = validate(&records, &config()).unwrap_err();
    assert_eq!(
        error,
        ValidationError::PartialBatch { position: whole.len() as u64, remaining_bytes: 20 }
    );
    assert_eq!(error.error_code(), 2);
    // A follower trims it, as a fetch response may end mid-batch.
    let append = analyze_follower_append(&records, 0, &config()).unwrap();
    assert_eq!(append.records, AppendBytes::Borrowed(&whole));
    let append = analyze_follower_append(&whole[..20], 0, &config()).unwrap();
    assert_eq!((append.n_batches, append.records.len()), (0, 0));
}

/// A batch as a leader wrote it: at `base_offset`, with `epoch`, `n` records at `timestamp`.
fn leader_batch(base_offset: i64, epoch: i32, n: usize, timestamp: i64) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::Snappy)
        .base_offset(base_offset)
        .partition_leader_epoch(epoch);
    push_all(&mut builder, &vec![rec(timestamp, Some("k"), "v"); n]);
    builder.build().unwrap()
}

#[test]
fn follower_append_keeps_offsets() {
    let records = [leader_batch(100, 3, 3, NOW + 5), leader_batch(103, 4, 2, NOW)].concat();
    let append = analyze_follower_append(&records, 100, &config()).unwrap();
    assert_eq!(append.records, AppendBytes::Borrowed(&records));
    assert_eq!((append.first_offset, append.last_offset), (100, 104));
    assert_eq!((append.n_records, append.n_batches), (5, 2));
    assert_eq!((append.max_timestamp, append.shallow_offset_of_max_timestamp), (NOW + 5, 102));
    assert_eq!(append.batches, vec![(3, 100), (4, 103)]);
    assert_eq!(append.source_compression, Compression::Snappy);
    assert!(!append.recompressed && !append.has_legacy_batches);
}

#[test]
fn follower_out_of_order_offsets() {
    let records = [leader_batch(105, 3, 3, NOW), leader_batch(100, 3, 2, NOW)].concat();
    let error = analyze_follower_append(&records, 100, &config()).unwrap_err();
    assert_eq!(error, ValidationError::OffsetsOutOfOrder { last_offsets: vec![107, 101] });
    assert_eq!((error.error_code(), error.error_name()), (-1, "UNKNOWN_SERVER_ERROR"));
}

#[test]
fn follower_append_below_log_end_offset() {
    let records = leader_batch(90, 3, 3, NOW);
    let error = analyze_follower_append(&records, 100, &config()).unwrap_err();
    assert_eq!(
        error,
        ValidationError::UnexpectedAppendOffset {
            first_offset: 90,
            last_offset: 92,
            checked_offset: 90,
            log_end_offset: 100,
            first_batch_is_legacy: false,
        }
    );
    // A legacy wrapper is judged by its last offset, as Kafka reads it without decompressing.
    let wrapper = legacy_wrapper(1, Compression::Gzip, 102, &legacy_inner(1, &[0, 1, 2]));
    let append = analyze_follower_append(&wrapper, 101, &config()).unwrap();
    assert_eq!((append.first_offset, append.last_offset, append.n_records), (100, 102, 3));
    assert!(append.has_legacy_batches && append.batches.is_empty());
    let error = analyze_follower_append(&wrapper, 103, &config()).unwrap_err();
    assert!(error.to_string().contains("Last offset of the first batch 102"), "{error}");
}

#[test]
fn follower_append_checks_crc() {
    let mut records = leader_batch(100, 3, 3, NOW);
    records[30] ^= 1;
    let error = analyze_follower_append(&records, 100, &config()).unwrap_err();
    assert_eq!(error.error_code(), 2);
}

#[test]
fn error_codes_are_kafkas() {
    let cases = [
        (ValidationError::Decode(DecodeError::UnsupportedMagic(3)), 2, "CORRUPT_MESSAGE"),
        (ValidationError::PartialBatch { position: 0, remaining_bytes: 1 }, 2, "CORRUPT_MESSAGE"),
        (
            ValidationError::RecordTooLarge { position: 0, batch_bytes: 2, max_message_bytes: 1 },
            10,
            "MESSAGE_TOO_LARGE",
        ),
        (
            ValidationError::RecordBatchTooLarge { records_bytes: 2, segment_bytes: 1 },
            18,
            "RECORD_LIST_TOO_LARGE",
        ),
        (ValidationError::InvalidTimestamp { record_errors: vec![] }, 32, "INVALID_TIMESTAMP"),
        (
            ValidationError::UnsupportedForMessageFormat { message: String::new() },
            43,
            "UNSUPPORTED_FOR_MESSAGE_FORMAT",
        ),
        (invalid("x"), 87, "INVALID_RECORD"),
        (ValidationError::OffsetsOutOfOrder { last_offsets: vec![] }, -1, "UNKNOWN_SERVER_ERROR"),
        (
            ValidationError::UnexpectedAppendOffset {
                first_offset: 0,
                last_offset: 0,
                checked_offset: 0,
                log_end_offset: 1,
                first_batch_is_legacy: false,
            },
            -1,
            "UNKNOWN_SERVER_ERROR",
        ),
    ];
    for (error, code, name) in cases {
        assert_eq!((error.error_code(), error.error_name()), (code, name), "{error:?}");
    }
}

#[test]
fn target_compression_names_are_kafkas() {
    assert_eq!(TargetCompression::from_name("producer"), Some(TargetCompression::Producer));
    assert_eq!(
        TargetCompression::from_name("uncompressed"),
        Some(TargetCompression::Codec(Compression::None))
    );
    assert_eq!(
        TargetCompression::from_name("zstd"),
        Some(TargetCompression::Codec(Compression::Zstd))
    );
    assert_eq!(TargetCompression::from_name("none"), None);
    assert_eq!(TargetCompression::Producer.resolve(Compression::Lz4), Compression::Lz4);
}

fn rec_strategy() -> impl Strategy<Value = Rec> {
    let bytes = |max: usize| proptest::collection::vec(any::<u8>(), 0..max);
    let header = ("[a-zA-Z0-9._-]{0,8}", proptest::option::of(bytes(8)));
    (
        -100_000i64..100_000,
        proptest::option::of(bytes(16)),
        proptest::option::of(bytes(64)),
        proptest::collection::vec(header, 0..3),
    )
        .prop_map(|(age_ms, key, value, headers)| Rec {
            timestamp: NOW + age_ms,
            key,
            value,
            headers,
        })
}

fn target_strategy() -> impl Strategy<Value = TargetCompression> {
    prop_oneof![
        Just(TargetCompression::Producer),
        proptest::sample::select(Compression::ALL.to_vec()).prop_map(TargetCompression::Codec),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn validate_fuzz(
        source in proptest::sample::select(Compression::ALL.to_vec()),
        target in target_strategy(),
        log_append_time in any::<bool>(),
        next_offset in 0i64..1 << 40,
        epoch in 0i32..1_000,
        recs in proptest::collection::vec(rec_strategy(), 1..20),
    ) {
        let timestamp_type = if log_append_time {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        };
        let config = ValidationConfig { timestamp_type, ..with_target(target) };
        let input = v2_batch(source, &recs);
        let append = validate_and_assign_offsets(
            &input, next_offset, epoch, NOW, AppendOrigin::Client, &config,
        ).unwrap();
        let bytes = append.records.to_vec();
        let Batch::V2(batch) = Batch::new(&bytes).unwrap() else {
            panic!("a validated append holds a v2 batch");
        };
        batch.validate_records(DecodeLimits::default()).unwrap();
        prop_assert_eq!(batch.compression().unwrap(), target.resolve(source));
        prop_assert_eq!(append.recompressed, target.resolve(source) != source);
        prop_assert_eq!((batch.base_offset(), batch.partition_leader_epoch()), (next_offset, epoch));
        let last_offset = next_offset + recs.len() as i64 - 1;
        prop_assert_eq!((append.first_offset, append.last_offset), (next_offset, last_offset));
        prop_assert_eq!(batch.last_offset(), last_offset);
        let records = batch.records(DecodeLimits::default()).unwrap();
        let mut n_records = 0;
        for (record, (offset, rec)) in records.iter().zip((next_offset..).zip(&recs)) {
            let record = record.unwrap();
            prop_assert_eq!(record.offset, offset);
            let expected_timestamp = if log_append_time { NOW } else { rec.timestamp };
            prop_assert_eq!(record.timestamp, expected_timestamp);
            prop_assert_eq!(record.key, rec.key.as_deref());
            prop_assert_eq!(record.value, rec.value.as_deref());
            let headers: Vec<(String, Option<Vec<u8>>)> = record
                .headers
                .iter()
                .map(|header| (header.key_str().into_owned(), header.value.map(<[u8]>::to_vec)))
                .collect();
            prop_assert_eq!(&headers, &rec.headers);
            n_records += 1;
        }
        prop_assert_eq!(n_records, recs.len());
        let max_timestamp = if log_append_time {
            NOW
        } else {
            recs.iter().map(|rec| rec.timestamp).max().unwrap()
        };
        prop_assert_eq!((append.max_timestamp, batch.max_timestamp()), (max_timestamp, max_timestamp));
    }
}

/// A leader append whose CRC-covered fields stay as the producer set them is written without a
/// copy: a stamped header, then the producer's own bytes; one that changes them (LogAppendTime)
/// is stamped into a copy with a new CRC. Both are the same bytes a full copy would have been.
#[test]
fn an_in_place_stamp_copies_only_the_header_unless_the_crc_changes() {
    let input = v2_batch(Compression::None, &three_recs(NOW - 10));
    let leader = |config: &ValidationConfig| {
        validate_and_assign_offsets(&input, NEXT_OFFSET, EPOCH, NOW, AppendOrigin::Client, config)
            .unwrap()
    };
    let append = leader(&config());
    let AppendBytes::Stamped { header, rest } = &append.records else {
        panic!("expected a header-only stamp: {:?}", append.records);
    };
    assert_eq!(rest.as_ptr(), input[61..].as_ptr(), "the producer's bytes, not a copy");
    assert_eq!(header[17..], input[17..61], "the CRC and every field it covers as they came");
    let bytes = append.records.to_vec();
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate_records(DecodeLimits::default()).unwrap();
    assert_eq!((batch.base_offset(), batch.partition_leader_epoch()), (NEXT_OFFSET, EPOCH));
    assert_eq!(batch.last_offset(), NEXT_OFFSET + 2);
    assert_eq!(append.records.len(), input.len());

    let log_append_time =
        ValidationConfig { timestamp_type: TimestampType::LogAppendTime, ..config() };
    let append = leader(&log_append_time);
    let AppendBytes::Owned(bytes) = &append.records else {
        panic!("a LogAppendTime stamp changes the CRC: {:?}", append.records);
    };
    let batch = RecordBatch::new(bytes).unwrap();
    batch.validate_records(DecodeLimits::default()).unwrap();
    assert_eq!(batch.max_timestamp(), NOW);
}

/// Damage to a producer batch's records section or record count, CRC recomputed (so the
/// records themselves are what is wrong): what a hostile or broken producer sends.
fn damaged(mut bytes: Vec<u8>, damages: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(at, kind, byte) in damages {
        let section = bytes.len() - 61;
        match kind % 5 {
            0 if section > 0 => bytes[61 + at % section] ^= byte | 1,
            1 if section > 0 => bytes[61 + at % section] = byte,
            2 => bytes.truncate(61 + at % (section + 1)),
            3 => bytes.extend_from_slice(&[byte, byte ^ 0x80]),
            4 => {
                let count = i32::from_be_bytes(bytes[57..61].try_into().unwrap());
                let delta = i32::from(byte as i8);
                bytes[57..61].copy_from_slice(&count.wrapping_add(delta).to_be_bytes());
            }
            _ => {}
        }
    }
    let length = i32::try_from(bytes.len() - 12).unwrap();
    bytes[8..12].copy_from_slice(&length.to_be_bytes());
    RecordBatchMut::new(&mut bytes).unwrap().update_crc();
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The plain scan is only a shortcut: every append, well formed or damaged, under every
    /// topic rule, gets exactly what the full scan gives it (the same bytes and figures, or the
    /// same error).
    #[test]
    fn the_plain_scan_gives_every_append_what_the_full_scan_gives_it(
        recs in proptest::collection::vec(rec_strategy(), 1..12),
        null_timestamp in any::<bool>(),
        damages in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..3),
        compact in any::<bool>(),
        log_append_time in any::<bool>(),
        before_max_ms in prop_oneof![Just(i64::MAX), 0i64..200_000],
        after_max_ms in prop_oneof![Just(i64::MAX), 0i64..200_000],
        origin in proptest::sample::select(vec![AppendOrigin::Client, AppendOrigin::Coordinator]),
        target in prop_oneof![
            Just(TargetCompression::Producer),
            Just(TargetCompression::Codec(Compression::None)),
            Just(TargetCompression::Codec(Compression::Gzip)),
        ],
    ) {
        let mut recs = recs;
        if null_timestamp {
            recs[0].timestamp = NO_TIMESTAMP;
        }
        let input = damaged(v2_batch(Compression::None, &recs), &damages);
        let config = ValidationConfig {
            compact,
            timestamp_type: if log_append_time {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            timestamp_before_max_ms: before_max_ms,
            timestamp_after_max_ms: after_max_ms,
            ..with_target(target)
        };
        let validate = |scanning| {
            validate_leader_append(&input, NEXT_OFFSET, EPOCH, NOW, origin, &config, scanning)
        };
        prop_assert_eq!(validate(Scanning::PlainFirst), validate(Scanning::FullOnly));
    }
}

/// The plain scan takes the usual produce (so the fast path is the one appends use) and
/// declines what it cannot vouch for.
#[test]
fn the_plain_scan_takes_the_usual_produce_and_declines_the_rest() {
    let plain = |input: &[u8], config: &ValidationConfig| {
        let (entries, _) = walk(input).unwrap();
        let target = config.target_compression.resolve(Compression::None);
        scan_plain(&entries, AppendOrigin::Client, NOW, config, target)
            .unwrap()
            .map(|scan| (scan.n_records, scan.max_timestamp, scan.decoded.len()))
    };
    let input = v2_batch(Compression::None, &three_recs(NOW - 10));
    assert_eq!(plain(&input, &config()), Some((3, NOW - 10, 0)));
    // A record a topic rule rejects, a rewrite and a compressed batch go the full way.
    let keyless_on_compacted = ValidationConfig { compact: true, ..config() };
    assert_eq!(plain(&input, &keyless_on_compacted), None);
    let too_old = ValidationConfig { timestamp_before_max_ms: 5, ..config() };
    assert_eq!(plain(&input, &too_old), None);
    let recompressed = with_target(TargetCompression::Codec(Compression::Zstd));
    assert_eq!(plain(&input, &recompressed), None);
    assert_eq!(plain(&v2_batch(Compression::Snappy, &three_recs(NOW)), &config()), None);
    assert_eq!(plain(&v2_with_deltas(Compression::None, &[0, 2, 1], 2), &config()), None);
}
