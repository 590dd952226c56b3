//! Magic v2 batches: the spec's worked examples byte for byte (§1.9), and the behaviours Kafka's
//! own `DefaultRecordBatchTest`, `DefaultRecordTest` and `FileRecordsTest` check (§11.1).

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::pedantic,
    clippy::type_complexity
)]

use crate::common;

use common::{hex, hex_dump};
use seglog_format::{
    Batch, Batches, Compression, ControlRecordType, DecodeError, DecodeLimits, EmptyHeader,
    EndTransactionMarker, HeaderRef, RecordBatch, RecordBatchBuilder, RecordBatchMut,
    TimestampType, batch::RECORDS_COUNT_OFFSET, batch::compute_crc, decrement_sequence,
    end_transaction_marker_batch, increment_sequence,
};

const T0: i64 = 1_700_000_000_000;

fn example_one() -> Vec<u8> {
    hex_dump(
        "0000: 00 00 00 00 00 00 00 00 00 00 00 3d 00 00 00 00
         0010: 02 e6 41 a4 4b 00 00 00 00 00 00 00 00 01 8b cf
         0020: e5 68 00 00 00 01 8b cf e5 68 00 ff ff ff ff ff
         0030: ff ff ff ff ff ff ff ff ff 00 00 00 01 16 00 00
         0040: 00 01 0a 68 65 6c 6c 6f 00",
    )
}

fn example_two() -> Vec<u8> {
    hex_dump(
        "0000: 00 00 00 00 00 00 00 01 00 00 00 49 00 00 00 03
         0010: 02 f1 75 9b af 00 00 00 00 00 01 00 00 01 8b cf
         0020: e5 68 00 00 00 01 8b cf e5 68 05 ff ff ff ff ff
         0030: ff ff ff ff ff ff ff ff ff 00 00 00 02 1c 00 00
         0040: 00 04 6b 31 04 76 31 02 02 68 02 78 10 00 0a 02
         0050: 04 6b 32 01 00",
    )
}

fn records_of(bytes: &[u8]) -> Vec<(i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, i32)> {
    let batch = RecordBatch::new(bytes).unwrap();
    let records = batch.records(DecodeLimits::default()).unwrap();
    records
        .iter()
        .map(|record| {
            let record = record.unwrap();
            (
                record.offset,
                record.timestamp,
                record.key.map(<[u8]>::to_vec),
                record.value.map(<[u8]>::to_vec),
                record.sequence,
            )
        })
        .collect()
}

#[test]
fn worked_example_one_is_built_byte_for_byte() {
    let mut builder = RecordBatchBuilder::new(Compression::None).partition_leader_epoch(0);
    builder.append(0, T0, None, Some(b"hello"), &[]).unwrap();
    let built = builder.build().unwrap();
    assert_eq!(built, example_one());
    let batch = RecordBatch::new(&built).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.crc(), 3_863_061_579);
    assert_eq!(batch.size_bytes(), 73);
    assert_eq!(batch.batch_length(), 61);
    assert_eq!(records_of(&built), vec![(0, T0, None, Some(b"hello".to_vec()), -1)]);
}

#[test]
fn worked_example_two_is_built_byte_for_byte() {
    let mut builder =
        RecordBatchBuilder::new(Compression::None).base_offset(1).partition_leader_epoch(3);
    builder
        .append(1, T0, Some(b"k1"), Some(b"v1"), &[HeaderRef { key: "h", value: Some(b"x") }])
        .unwrap();
    builder.append(2, T0 + 5, Some(b"k2"), None, &[]).unwrap();
    let built = builder.build().unwrap();
    assert_eq!(built, example_two());
    let batch = RecordBatch::new(&built).unwrap();
    batch.validate().unwrap();
    assert_eq!(batch.crc(), 0xF175_9BAF);
    assert_eq!((batch.base_offset(), batch.last_offset(), batch.max_timestamp()), (1, 2, T0 + 5));
    let records = batch.records(DecodeLimits::default()).unwrap();
    let first = records.iter().next().unwrap().unwrap();
    let headers: Vec<_> = first.headers.iter().collect();
    assert_eq!(headers.len(), 1);
    assert_eq!((headers[0].key, headers[0].value), (&b"h"[..], Some(&b"x"[..])));
}

#[test]
fn the_two_examples_walk_as_one_segment() {
    let mut segment = example_one();
    segment.extend_from_slice(&example_two());
    let walked: Vec<_> = Batches::new(&segment).map(Result::unwrap).collect();
    assert_eq!(walked.len(), 2);
    assert_eq!((walked[0].position, walked[1].position), (0, 73));
    assert_eq!(walked[1].batch.last_offset(), 2);
}

fn two_record_batch(codec: Compression) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec).base_offset(1_234_567);
    builder.append(1_234_567, 1, Some(b"a"), Some(b"1"), &[]).unwrap();
    builder.append(1_234_568, 2, Some(b"b"), Some(b"2"), &[]).unwrap();
    builder.build().unwrap()
}

#[test]
fn build_default_record_batch() {
    let bytes = two_record_batch(Compression::None);
    let batch = RecordBatch::new(&bytes).unwrap();
    assert!(batch.is_valid());
    assert_eq!((batch.base_offset(), batch.last_offset()), (1_234_567, 1_234_568));
    assert_eq!(batch.max_timestamp(), 2);
    assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.base_sequence()), (-1, -1, -1));
    assert_eq!(batch.last_sequence(), -1);
    let offsets: Vec<i64> = records_of(&bytes).into_iter().map(|r| r.0).collect();
    assert_eq!(offsets, [1_234_567, 1_234_568]);
}

#[test]
fn build_default_record_batch_with_producer_id() {
    let mut builder = RecordBatchBuilder::new(Compression::None).producer(23_423, 145, 983);
    builder.push(1, Some(b"a"), Some(b"1"), &[]).unwrap();
    builder.push(2, Some(b"b"), Some(b"2"), &[]).unwrap();
    let bytes = builder.build().unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    assert_eq!((batch.producer_id(), batch.producer_epoch()), (23_423, 145));
    assert_eq!((batch.base_sequence(), batch.last_sequence()), (983, 984));
    let sequences: Vec<i32> = records_of(&bytes).into_iter().map(|r| r.4).collect();
    assert_eq!(sequences, [983, 984]);
}

#[test]
fn build_default_record_batch_with_sequence_wrap_around() {
    let mut builder =
        RecordBatchBuilder::new(Compression::None).producer(23_423, 145, i32::MAX - 1);
    for timestamp in 1..=3 {
        builder.push(timestamp, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    let bytes = builder.build().unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    assert_eq!(batch.last_sequence(), 0);
    let sequences: Vec<i32> = records_of(&bytes).into_iter().map(|r| r.4).collect();
    assert_eq!(sequences, [i32::MAX - 1, i32::MAX, 0]);
}

#[test]
fn increment_and_decrement_sequence_wrap() {
    assert_eq!(increment_sequence(5, 10), 15);
    assert_eq!(increment_sequence(i32::MAX, 10), 9);
    assert_eq!(increment_sequence(i32::MAX - 5, 10), 4);
    assert_eq!(decrement_sequence(0, 0), 0);
    assert_eq!(decrement_sequence(10, 5), 5);
    assert_eq!(decrement_sequence(9, 10), i32::MAX);
    assert_eq!(decrement_sequence(4, 10), i32::MAX - 5);
}

#[test]
fn size_in_bytes_matches_serialized_size() {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    let headers =
        [HeaderRef { key: "null", value: None }, HeaderRef { key: "h", value: Some(b"") }];
    builder.push(0, None, None, &headers).unwrap();
    builder.push(1, Some(b""), Some(b"value"), &[]).unwrap();
    builder.push(2, Some(b"key"), None, &headers[..1]).unwrap();
    let estimated = builder.estimated_size_bytes();
    let bytes = builder.build().unwrap();
    assert_eq!(bytes.len(), estimated);
    assert_eq!(RecordBatch::new(&bytes).unwrap().size_bytes(), bytes.len());
    let sizes: usize = RecordBatch::new(&bytes)
        .unwrap()
        .records(DecodeLimits::default())
        .unwrap()
        .iter()
        .map(|record| record.unwrap().size_bytes)
        .sum();
    assert_eq!(sizes + 61, bytes.len());
}

#[test]
fn write_empty_header_keeps_producer_and_offsets() {
    let header = EmptyHeader {
        base_offset: 3_000,
        last_offset: 3_050,
        producer_id: 23_423,
        producer_epoch: 145,
        base_sequence: 983,
        timestamp_type: TimestampType::CreateTime,
        timestamp: 1_500,
        is_transactional: true,
        is_control: false,
        partition_leader_epoch: 15,
    }
    .encode()
    .unwrap();
    assert_eq!(header.len(), 61);
    let batch = RecordBatch::new(&header).unwrap();
    batch.validate().unwrap();
    assert_eq!((batch.base_offset(), batch.last_offset()), (3_000, 3_050));
    assert_eq!(
        (batch.producer_id(), batch.producer_epoch(), batch.base_sequence()),
        (23_423, 145, 983)
    );
    assert_eq!(batch.last_sequence(), 983 + 50);
    assert_eq!((batch.max_timestamp(), batch.base_timestamp()), (1_500, -1));
    assert_eq!(batch.partition_leader_epoch(), 15);
    assert!(batch.is_transactional() && !batch.is_control_batch());
    assert_eq!(batch.records_count(), 0);
    assert_eq!(batch.records(DecodeLimits::default()).unwrap().iter().count(), 0);
}

#[test]
fn invalid_record_size_is_rejected() {
    let mut bytes = two_record_batch(Compression::None);
    bytes[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert_eq!(RecordBatch::new(&bytes), Err(DecodeError::BatchTooSmall { size: 22 }));
    assert!(Batch::new(&bytes).is_err());
    // The file walker, like Kafka's `FileLogInputStream`, calls any entry below 14 bytes corrupt.
    let error = Batches::new(&bytes).next().unwrap().unwrap_err();
    assert_eq!(error, DecodeError::EntryTooSmall { size: 10 }.at(0));
    // Between 14 and 61 it is a v2 batch too small for its header.
    bytes[8..12].copy_from_slice(&40i32.to_be_bytes());
    let error = Batches::new(&bytes).next().unwrap().unwrap_err();
    assert_eq!(error, DecodeError::BatchTooSmall { size: 52 }.at(0));
}

/// Rewrites `recordsCount` and fixes the CRC, so that only the count is wrong.
fn with_count(mut bytes: Vec<u8>, count: i32) -> Vec<u8> {
    bytes[RECORDS_COUNT_OFFSET..RECORDS_COUNT_OFFSET + 4].copy_from_slice(&count.to_be_bytes());
    RecordBatchMut::new(&mut bytes).unwrap().update_crc();
    bytes
}

#[test]
fn invalid_record_count_too_many_and_too_little() {
    for codec in Compression::ALL {
        for (count, detail) in [
            (3, "premature EOF reached"),
            (1, "records still remaining"),
            (-1, "a negative count is invalid"),
        ] {
            let bytes = with_count(two_record_batch(codec), count);
            let batch = RecordBatch::new(&bytes).unwrap();
            assert!(batch.is_valid(), "the CRC was fixed");
            let error = batch.validate_records(DecodeLimits::default()).unwrap_err();
            assert_eq!(
                error,
                DecodeError::RecordCountMismatch { declared: count, detail },
                "{codec} count {count}"
            );
            if codec == Compression::None {
                assert!(batch.validate().is_err());
            }
        }
    }
}

#[test]
fn invalid_crc_is_detected() {
    let mut bytes = two_record_batch(Compression::None);
    bytes[23..27].copy_from_slice(&5i32.to_be_bytes());
    let batch = RecordBatch::new(&bytes).unwrap();
    assert!(!batch.is_valid());
    assert_eq!(
        batch.validate(),
        Err(DecodeError::CrcMismatch { stored: batch.crc(), computed: compute_crc(&bytes) })
    );
}

#[test]
fn set_last_offset_shifts_every_offset_and_keeps_the_crc() {
    for codec in Compression::ALL {
        let mut bytes = two_record_batch(codec);
        RecordBatchMut::new(&mut bytes).unwrap().set_last_offset(9_999);
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.validate_records(DecodeLimits::default()).unwrap();
        assert_eq!((batch.base_offset(), batch.last_offset()), (9_998, 9_999));
        let offsets: Vec<i64> = records_of(&bytes).into_iter().map(|r| r.0).collect();
        assert_eq!(offsets, [9_998, 9_999]);
    }
}

#[test]
fn set_partition_leader_epoch_keeps_the_crc() {
    let mut bytes = two_record_batch(Compression::Gzip);
    RecordBatchMut::new(&mut bytes).unwrap().set_partition_leader_epoch(15);
    let batch = RecordBatch::new(&bytes).unwrap();
    assert_eq!(batch.partition_leader_epoch(), 15);
    batch.validate().unwrap();
}

#[test]
fn set_log_append_time_makes_every_record_report_it() {
    for codec in Compression::ALL {
        let mut bytes = two_record_batch(codec);
        let before = RecordBatch::new(&bytes).unwrap().crc();
        RecordBatchMut::new(&mut bytes)
            .unwrap()
            .set_max_timestamp(TimestampType::LogAppendTime, 1_234)
            .unwrap();
        let batch = RecordBatch::new(&bytes).unwrap();
        batch.validate_records(DecodeLimits::default()).unwrap();
        assert_ne!(batch.crc(), before, "the CRC covers maxTimestamp and attributes");
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(batch.compression().unwrap(), codec);
        let records = batch.records(DecodeLimits::default()).unwrap();
        for record in &records {
            let record = record.unwrap();
            assert_eq!(
                (record.timestamp, record.timestamp_type),
                (1_234, TimestampType::LogAppendTime)
            );
        }
    }
}

#[test]
fn set_no_timestamp_type_is_not_allowed() {
    let mut bytes = two_record_batch(Compression::None);
    let original = bytes.clone();
    let result = RecordBatchMut::new(&mut bytes)
        .unwrap()
        .set_max_timestamp(TimestampType::NoTimestampType, 1);
    assert!(result.is_err());
    assert_eq!(bytes, original);
}

#[test]
fn read_and_write_control_batch() {
    let bytes =
        end_transaction_marker_batch(42, 9, 3, 4_000, 5, ControlRecordType::Commit, 77).unwrap();
    let batch = RecordBatch::new(&bytes).unwrap();
    batch.validate().unwrap();
    assert!(batch.is_control_batch() && batch.is_transactional());
    assert_eq!((batch.producer_id(), batch.producer_epoch(), batch.base_offset()), (4_000, 5, 42));
    let records = batch.records(DecodeLimits::default()).unwrap();
    let all: Vec<_> = records.iter().map(Result::unwrap).collect();
    assert_eq!(all.len(), 1);
    assert_eq!(
        ControlRecordType::parse_key(all[0].key.unwrap()).unwrap(),
        ControlRecordType::Commit
    );
    assert_eq!(EndTransactionMarker::parse(all[0].value.unwrap()).unwrap().coordinator_epoch, 77);
    assert!(
        end_transaction_marker_batch(0, 0, 0, 1, 0, ControlRecordType::LeaderChange, 0).is_err()
    );
}

#[test]
fn iteration_is_consistent_across_codecs() {
    let mut reference = None;
    for codec in Compression::ALL {
        let mut builder = RecordBatchBuilder::new(codec).base_offset(100).producer(7, 1, 50);
        for idx in 0..200u32 {
            let value = idx.to_be_bytes().repeat(idx as usize % 17);
            let key = (idx % 3 != 0).then(|| idx.to_string().into_bytes());
            builder
                .append(
                    100 + i64::from(idx) * 2,
                    T0 + i64::from(idx % 7),
                    key.as_deref(),
                    Some(&value),
                    &[],
                )
                .unwrap();
        }
        let bytes = builder.build().unwrap();
        let seen = records_of(&bytes);
        assert_eq!(seen.len(), 200);
        match &reference {
            None => reference = Some(seen),
            Some(reference) => assert_eq!(&seen, reference, "{codec}"),
        }
    }
}

#[test]
fn partial_trailing_batch_ends_iteration_quietly() {
    let mut segment = example_one();
    segment.extend_from_slice(&example_two());
    for cut in 1..85 {
        let bytes = &segment[..segment.len() - cut];
        let mut walk = Batches::new(bytes);
        let found: Vec<_> = walk.by_ref().map(Result::unwrap).collect();
        assert_eq!(found.len(), 1, "cut {cut}");
        assert_eq!(walk.next_position(), 73);
        assert_eq!(walk.remaining_bytes(), 85 - cut);
    }
}

#[test]
fn a_slice_one_byte_short_of_a_batch_yields_none() {
    let bytes = example_one();
    assert_eq!(Batches::new(&bytes[..72]).count(), 0);
    assert_eq!(Batches::new(&bytes).count(), 1);
}

#[test]
fn unknown_magic_is_an_error_with_its_position() {
    let mut segment = example_one();
    let mut second = example_two();
    second[16] = 3;
    segment.extend_from_slice(&second);
    let results: Vec<_> = Batches::new(&segment).collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[1], Err(DecodeError::UnsupportedMagic(3).at(73)));
}

#[test]
fn unused_attribute_bits_are_rejected() {
    let mut bytes = example_one();
    bytes[21] = 0x01; // attribute bit 8
    RecordBatchMut::new(&mut bytes).unwrap().update_crc();
    assert!(RecordBatch::new(&bytes).unwrap().validate().is_err());
}

#[test]
fn hex_helper_reads_spec_layout() {
    assert_eq!(hex("00 0a | ff"), [0, 10, 255]);
}
