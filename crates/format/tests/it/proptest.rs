//! Property tests: encode -> decode -> encode gives identical bytes for batches of every codec,
//! and every small codec (varints, index entries, names, checkpoints) round-trips.
//! proptest prints the failing input and its seed; `PROPTEST_CASES` raises the case count.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::pedantic,
    clippy::type_complexity
)]

use proptest::prelude::*;
use seglog_format::checkpoint::{
    EpochEntry, OffsetCheckpointEntry, parse_leader_epoch_checkpoint, parse_offset_checkpoint,
    write_leader_epoch_checkpoint, write_offset_checkpoint,
};
use seglog_format::varint::{Reader, write_varint, write_varlong};
use seglog_format::{
    Batches, Compression, DecodeLimits, FileKind, HeaderRef, OffsetIndexEntry, PartitionDir,
    RecordBatch, RecordBatchBuilder, SegmentFileName, TimeIndexEntry,
};

#[derive(Debug, Clone)]
struct Rec {
    offset_gap: i64,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        1i64..5,
        prop_oneof![Just(-1i64), 0i64..=i64::from(u32::MAX) * 1000],
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
        proptest::collection::vec(
            ("[a-z]{0,8}", proptest::option::of(proptest::collection::vec(any::<u8>(), 0..10))),
            0..4,
        ),
    )
        .prop_map(|(offset_gap, timestamp, key, value, headers)| Rec {
            offset_gap,
            timestamp,
            key,
            value,
            headers,
        })
}

fn codec() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

fn build(
    codec: Compression,
    base_offset: i64,
    producer: (i64, i16, i32),
    records: &[Rec],
) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec)
        .base_offset(base_offset)
        .partition_leader_epoch(7)
        .producer(producer.0, producer.1, producer.2);
    let mut offset = base_offset - 1;
    for rec in records {
        offset += rec.offset_gap;
        let headers: Vec<HeaderRef<'_>> =
            rec.headers.iter().map(|(k, v)| HeaderRef { key: k, value: v.as_deref() }).collect();
        builder
            .append(offset, rec.timestamp, rec.key.as_deref(), rec.value.as_deref(), &headers)
            .unwrap();
    }
    builder.build().unwrap()
}

/// Rebuilds a batch from what decoding it yields.
fn rebuild(bytes: &[u8]) -> Vec<u8> {
    let batch = RecordBatch::new(bytes).unwrap();
    batch.validate_records(DecodeLimits::default()).unwrap();
    let mut builder = RecordBatchBuilder::new(batch.compression().unwrap())
        .base_offset(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(batch.producer_id(), batch.producer_epoch(), batch.base_sequence());
    let records = batch.records(DecodeLimits::default()).unwrap();
    for record in &records {
        let record = record.unwrap();
        let keys: Vec<String> = record.headers.iter().map(|h| h.key_str().into_owned()).collect();
        let headers: Vec<HeaderRef<'_>> = record
            .headers
            .iter()
            .zip(&keys)
            .map(|(h, key)| HeaderRef { key, value: h.value })
            .collect();
        builder
            .append(record.offset, record.timestamp, record.key, record.value, &headers)
            .unwrap();
    }
    builder.build().unwrap()
}

proptest! {
    #[test]
    fn batches_round_trip_for_every_codec(
        codec in codec(),
        base_offset in 0i64..1 << 40,
        producer in prop_oneof![Just((-1i64, -1i16, -1i32)), (0i64..1000, 0i16..10, 0i32..=i32::MAX)],
        records in proptest::collection::vec(rec(), 1..30),
    ) {
        let bytes = build(codec, base_offset, producer, &records);
        let batch = RecordBatch::new(&bytes).unwrap();
        prop_assert!(batch.is_valid());
        prop_assert_eq!(batch.records_count() as usize, records.len());
        prop_assert_eq!(rebuild(&bytes), bytes.clone());
        // Inside a stream of entries, the batch walks the same.
        let mut stream = bytes.clone();
        stream.extend_from_slice(&bytes);
        prop_assert_eq!(Batches::new(&stream).filter(Result::is_ok).count(), 2);
    }

    #[test]
    fn varints_round_trip(value in any::<i32>(), long in any::<i64>()) {
        let mut out = Vec::new();
        write_varint(&mut out, value);
        write_varlong(&mut out, long);
        let mut reader = Reader::new(&out);
        prop_assert_eq!(reader.varint().unwrap(), value);
        prop_assert_eq!(reader.varlong().unwrap(), long);
        prop_assert_eq!(reader.remaining(), 0);
    }

    #[test]
    fn index_entries_round_trip(relative_offset in 0u32..=i32::MAX as u32, position in 0u32..=i32::MAX as u32, timestamp in any::<i64>()) {
        let entry = OffsetIndexEntry { relative_offset, position };
        prop_assert_eq!(OffsetIndexEntry::decode(&entry.encode()).unwrap(), entry);
        let entry = TimeIndexEntry { timestamp, relative_offset };
        prop_assert_eq!(TimeIndexEntry::decode(&entry.encode()).unwrap(), entry);
    }

    #[test]
    fn names_round_trip(offset in 0i64..=i64::MAX, topic in "[a-zA-Z0-9._-]{1,60}", partition in 0i32..=i32::MAX) {
        for kind in FileKind::ALL {
            let name = SegmentFileName::new(offset, kind);
            prop_assert_eq!(SegmentFileName::parse(&name.to_name()).unwrap(), name);
        }
        let dir = PartitionDir::live(&topic, partition);
        prop_assert_eq!(PartitionDir::parse(&dir.to_name()).unwrap(), dir);
    }

    #[test]
    fn checkpoints_round_trip(
        entries in proptest::collection::vec(("[a-zA-Z0-9._-]{1,30}", 0i32..1000, any::<i64>()), 0..20),
        epochs in proptest::collection::vec((any::<i32>(), any::<i64>()), 0..20),
    ) {
        let entries: Vec<_> = entries
            .into_iter()
            .map(|(topic, partition, offset)| OffsetCheckpointEntry { topic, partition, offset })
            .collect();
        prop_assert_eq!(parse_offset_checkpoint(&write_offset_checkpoint(&entries)).unwrap(), entries);
        let epochs: Vec<_> =
            epochs.into_iter().map(|(epoch, start_offset)| EpochEntry { epoch, start_offset }).collect();
        prop_assert_eq!(parse_leader_epoch_checkpoint(&write_leader_epoch_checkpoint(&epochs)).unwrap(), epochs);
    }

    /// Flipping any byte covered by the CRC is detected; flipping any byte at all never panics.
    #[test]
    fn damage_is_detected_and_never_panics(
        codec in codec(),
        records in proptest::collection::vec(rec(), 1..5),
        flip_at in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let mut bytes = build(codec, 0, (-1, -1, -1), &records);
        let at = flip_at.index(bytes.len());
        bytes[at] ^= flip;
        for item in Batches::new(&bytes) {
            let Ok(item) = item else { continue };
            let valid = item.batch.validate().is_ok();
            if at >= 21 {
                prop_assert!(!valid, "flip at {} undetected", at);
            }
            if let Ok(records) = item.batch.records(DecodeLimits { decompressed_bytes_max: 1 << 20 }) {
                for record in &records {
                    let _ = record;
                }
            }
        }
    }
}
