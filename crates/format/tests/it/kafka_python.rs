//! Independent golden data: batches built by kafka-python's record builders
//! (`testdata/kafka-python`, see its README). We decode every one and compare each field with the
//! manifest; we rebuild every v2 batch with our builder and get identical bytes where the format
//! is deterministic (uncompressed), and identical records sections after decompression otherwise.

#![allow(
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::pedantic,
    clippy::type_complexity
)]

use crate::common;

use seglog_format::{
    Batch, Batches, Compression, DecodeLimits, HeaderRef, RecordBatch, RecordBatchBuilder,
    RecordBatchMut, TimestampType, compression::decompress,
};
use serde_json::Value;

/// One expected record from the manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Expected {
    offset: i64,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn bytes_of(value: &Value) -> Option<Vec<u8>> {
    value.as_str().map(common::hex)
}

fn codec_of(case: &Value) -> Compression {
    Compression::from_name(case["compression"].as_str().unwrap()).unwrap()
}

/// The records a case describes, with offsets made absolute as a broker would read them.
fn expected_records(case: &Value) -> Vec<Expected> {
    let magic = case["magic"].as_i64().unwrap();
    let patched = case["patched_base_offset"].as_i64();
    let records = case["records"].as_array().unwrap();
    let last_inner = records.last().unwrap()["offset"].as_i64().unwrap();
    let codec = codec_of(case);
    records
        .iter()
        .map(|record| {
            let inner = record["offset"].as_i64().unwrap();
            let offset = match (magic, codec) {
                (2, _) => patched.unwrap_or(0) + inner,
                (1, Compression::None) | (0, _) => inner,
                // v1 wrapper: absolute = wrapper offset - last inner + inner; a wrapper offset
                // of 0 (the builder's own) keeps the inner offsets.
                _ => match patched {
                    Some(wrapper) if wrapper != 0 => wrapper - last_inner + inner,
                    _ => inner,
                },
            };
            Expected {
                offset,
                timestamp: if magic == 0 { -1 } else { record["timestamp"].as_i64().unwrap() },
                key: bytes_of(&record["key"]),
                value: bytes_of(&record["value"]),
                headers: record["headers"]
                    .as_array()
                    .map(|headers| {
                        headers
                            .iter()
                            .map(|h| (h[0].as_str().unwrap().to_owned(), bytes_of(&h[1])))
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Decodes every record of `entries` (validated deeply).
fn decoded_records(entries: &[Batch<'_>]) -> Vec<Expected> {
    let mut out = Vec::new();
    for batch in entries {
        batch.validate().unwrap();
        let records = batch.records(DecodeLimits::default()).unwrap();
        for record in &records {
            let record = record.unwrap();
            out.push(Expected {
                offset: record.offset,
                timestamp: record.timestamp,
                key: record.key.map(<[u8]>::to_vec),
                value: record.value.map(<[u8]>::to_vec),
                headers: record
                    .headers
                    .iter()
                    .map(|h| (h.key_str().into_owned(), h.value.map(<[u8]>::to_vec)))
                    .collect(),
            });
        }
    }
    out
}

/// Our builder, fed the same inputs as kafka-python's `DefaultRecordBatchBuilder`.
fn rebuild_v2(case: &Value, codec: Compression) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec)
        .partition_leader_epoch(0) // kafka-python writes 0, where the Java producer writes -1
        .producer(
            case["producer_id"].as_i64().unwrap(),
            i16::try_from(case["producer_epoch"].as_i64().unwrap()).unwrap(),
            i32::try_from(case["base_sequence"].as_i64().unwrap()).unwrap(),
        )
        .transactional(case["is_transactional"].as_bool().unwrap());
    for record in case["records"].as_array().unwrap() {
        let key = bytes_of(&record["key"]);
        let value = bytes_of(&record["value"]);
        let header_values: Vec<(String, Option<Vec<u8>>)> = record["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().to_owned(), bytes_of(&h[1])))
            .collect();
        let headers: Vec<HeaderRef<'_>> = header_values
            .iter()
            .map(|(key, value)| HeaderRef { key, value: value.as_deref() })
            .collect();
        builder
            .append(
                record["offset"].as_i64().unwrap(),
                record["timestamp"].as_i64().unwrap(),
                key.as_deref(),
                value.as_deref(),
                &headers,
            )
            .unwrap();
    }
    let mut bytes = builder.build().unwrap();
    if let Some(base) = case["patched_base_offset"].as_i64() {
        RecordBatchMut::new(&mut bytes).unwrap().set_base_offset(base);
    }
    bytes
}

/// Checks one v2 batch built by kafka-python against ours.
fn check_v2_rebuild(case: &Value, theirs: &RecordBatch<'_>) -> bool {
    let codec = codec_of(case);
    assert_eq!(theirs.compression().unwrap(), codec);
    let ours = rebuild_v2(case, codec);
    if codec == Compression::None {
        assert_eq!(ours, theirs.as_bytes(), "{}: uncompressed bytes differ", case["file"]);
        return true;
    }
    // Compressed: the records sections are identical once inflated, and so is every header field
    // except the length and the CRC, which cover the codec's own bytes.
    let ours_batch = RecordBatch::new(&ours).unwrap();
    let limits = DecodeLimits::default();
    let inflated_theirs = decompress(codec, theirs.records_payload(), limits).unwrap();
    let inflated_ours = decompress(codec, ours_batch.records_payload(), limits).unwrap();
    assert_eq!(inflated_ours, inflated_theirs, "{}: records sections differ", case["file"]);
    let uncompressed = rebuild_v2(case, Compression::None);
    assert_eq!(RecordBatch::new(&uncompressed).unwrap().records_payload(), &inflated_theirs[..]);
    let header = |batch: &RecordBatch<'_>| {
        (
            batch.base_offset(),
            batch.partition_leader_epoch(),
            batch.attributes(),
            batch.last_offset_delta(),
            batch.base_timestamp(),
            batch.max_timestamp(),
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
            batch.records_count(),
        )
    };
    assert_eq!(header(&ours_batch), header(theirs), "{}: header fields differ", case["file"]);
    false
}

#[test]
fn kafka_python_batches_decode_and_rebuild() {
    let dir = common::testdata().join("kafka-python");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest["generator"].as_str().unwrap().starts_with("kafka-python"));
    let mut codecs_seen = std::collections::BTreeSet::new();
    let mut magics_seen = std::collections::BTreeSet::new();
    let (mut identical, mut n_cases) = (0, 0);
    for case in manifest["cases"].as_array().unwrap() {
        let file = case["file"].as_str().unwrap();
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let mut walk = Batches::new(&bytes);
        let entries: Vec<Batch<'_>> = walk.by_ref().map(|item| item.unwrap().batch).collect();
        assert_eq!(walk.remaining_bytes(), 0, "{file}");
        // A case is one batch (v2), a run of legacy messages, or a list of either.
        let parts: Vec<&Value> = match case["batches"].as_array() {
            Some(batches) => batches.iter().collect(),
            None => vec![case],
        };
        let expected: Vec<Expected> =
            parts.iter().flat_map(|part| expected_records(part)).collect();
        assert_eq!(decoded_records(&entries), expected, "{file}");
        let mut entry_idx = 0;
        for part in parts {
            let magic = part["magic"].as_i64().unwrap();
            codecs_seen.insert(format!("v{magic}-{}", codec_of(part)));
            magics_seen.insert(magic);
            n_cases += 1;
            if magic == 2 {
                let Batch::V2(theirs) = entries[entry_idx] else { panic!("{file}: not v2") };
                assert_eq!(theirs.timestamp_type(), TimestampType::CreateTime);
                if check_v2_rebuild(part, &theirs) {
                    identical += 1;
                }
                entry_idx += 1;
            } else {
                // Uncompressed legacy messages are one entry each; a wrapper is one entry.
                entry_idx += if codec_of(part) == Compression::None {
                    part["records"].as_array().unwrap().len()
                } else {
                    1
                };
                for batch in &entries[..entry_idx] {
                    assert!(batch.is_valid());
                }
            }
        }
        assert_eq!(entry_idx, entries.len(), "{file}: entries accounted for");
    }
    for needed in [
        "v2-none",
        "v2-gzip",
        "v2-snappy",
        "v2-lz4",
        "v2-zstd",
        "v0-none",
        "v0-gzip",
        "v0-snappy",
        "v0-lz4",
        "v1-none",
        "v1-gzip",
        "v1-snappy",
        "v1-lz4",
    ] {
        assert!(codecs_seen.contains(needed), "no {needed} case");
    }
    assert_eq!(magics_seen.len(), 3);
    assert!(identical >= 8, "only {identical} byte-identical rebuilds");
    println!("kafka-python: {n_cases} batches checked, {identical} rebuilt byte for byte");
}
