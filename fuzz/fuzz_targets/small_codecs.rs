//! Everything else that decodes untrusted bytes: file and directory names, topic names,
//! checkpoint files, index entries, control record keys and values, `__consumer_offsets`,
//! `__transaction_state` and KRaft records (typed and through the schema tables) and
//! producer-state snapshots, and each codec's
//! decompressor (bounded to 1 MiB).
//!
//! The first 8 bytes (big-endian) pick the index entry to read; the whole input is used for
//! everything else.

#![no_main]

use std::hint::black_box;

use libfuzzer_sys::fuzz_target;
use seglog_format::checkpoint::{parse_leader_epoch_checkpoint, parse_offset_checkpoint};
use seglog_format::compression::{decompress, decompress_magic};
use seglog_format::names::validate_topic;
use seglog_format::schema::{group_messages, kraft, message, transaction};
use seglog_format::{
    Compression, ControlRecordType, DecodeLimits, EndTransactionMarker, OffsetIndexEntry,
    PartitionDir, SegmentFileName, TimeIndexEntry,
};
use seglog_format::{group, producer_snapshot};

const LIMITS: DecodeLimits = DecodeLimits { decompressed_bytes_max: 1 << 20 };

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(name) = SegmentFileName::parse(&text) {
        assert_eq!(SegmentFileName::parse(&name.to_name()), Ok(name), "segment name round trip");
    }
    if let Ok(dir) = PartitionDir::parse(&text) {
        black_box(dir.to_name());
    }
    let _ = black_box(validate_topic(&text));
    let _ = black_box(parse_offset_checkpoint(&text));
    let _ = black_box(parse_leader_epoch_checkpoint(&text));

    let mut idx = [0u8; 8];
    for (slot, byte) in idx.iter_mut().zip(data) {
        *slot = *byte;
    }
    let idx = u64::from_be_bytes(idx);
    for entry_idx in [idx as usize, (idx & 0xFF) as usize, 0] {
        let _ = black_box(OffsetIndexEntry::read(data, entry_idx));
        let _ = black_box(TimeIndexEntry::read(data, entry_idx));
    }

    // __consumer_offsets records: what decodes encodes and decodes again to the same value.
    if let Ok(key) = group::decode_key(data) {
        if let Ok(bytes) = group::encode_key(&key) {
            assert_eq!(group::decode_key(&bytes).ok(), Some(key), "group record key round trip");
        }
    }
    if let Ok(value) = group::decode_offset_commit_value(data) {
        let bytes = group::encode_offset_commit_value(&value).expect("re-encodes");
        let again = group::decode_offset_commit_value(&bytes).expect("decodes again");
        // Version 3 keeps everything but the version-1-only expire timestamp.
        assert_eq!((again.offset, &again.metadata), (value.offset, &value.metadata));
    }
    if let Ok(value) = group::decode_group_metadata_value(data) {
        if let Ok(bytes) = group::encode_group_metadata_value(&value) {
            let again = group::decode_group_metadata_value(&bytes).expect("decodes again");
            assert_eq!(again.members.len(), value.members.len(), "group metadata round trip");
            assert_eq!(again.generation, value.generation);
        }
    }
    // Every __consumer_offsets and KRaft schema table, at the version the bytes lead with.
    for record_type in 0..16 {
        if let Some((key, value)) = group_messages::schemas(record_type) {
            black_box(message::read_versioned(key, data).map(|(_, v)| message::to_json(&v)).ok());
            black_box(message::read_versioned(value, data).ok());
        }
    }
    for record_type in [3, 4, 5, 6] {
        if let Some(schema) = kraft::schema(ControlRecordType::from_id(record_type)) {
            black_box(kraft::decode(schema, data).ok());
        }
    }
    // __transaction_state records: what decodes encodes and decodes again to the same value.
    if let Ok(transaction::TransactionLogKey::TransactionalId(id)) = transaction::decode_key(data)
        && let Ok(bytes) = transaction::encode_key(&id)
    {
        let again = transaction::decode_key(&bytes).ok();
        assert_eq!(again, Some(transaction::TransactionLogKey::TransactionalId(id)));
    }
    if let Ok(value) = transaction::decode_value(data)
        && let Ok(bytes) = transaction::encode_value(&value)
    {
        assert_eq!(transaction::decode_value(&bytes).ok(), Some(value), "txn value round trip");
    }
    // KIP-848 values: what decodes encodes and decodes again to the same value.
    if let Ok(value) = group::decode_consumer_group_member_metadata_value(data) {
        if let Ok(bytes) = group::encode_consumer_group_member_metadata_value(&value) {
            assert_eq!(
                group::decode_consumer_group_member_metadata_value(&bytes).ok(),
                Some(value)
            );
        }
    }
    if let Ok(value) = group::decode_consumer_group_current_member_assignment_value(data) {
        if let Ok(bytes) = group::encode_consumer_group_current_member_assignment_value(&value) {
            let again = group::decode_consumer_group_current_member_assignment_value(&bytes);
            assert_eq!(again.ok(), Some(value));
        }
    }
    if let Ok(value) = group::decode_consumer_group_target_assignment_member_value(data) {
        if let Ok(bytes) = group::encode_consumer_group_target_assignment_member_value(&value) {
            let again = group::decode_consumer_group_target_assignment_member_value(&bytes);
            assert_eq!(again.ok(), Some(value));
        }
    }
    let _ = black_box(group::decode_consumer_group_metadata_value(data));
    let _ = black_box(group::decode_consumer_group_target_assignment_metadata_value(data));
    let _ = black_box(producer_snapshot::decode_producer_snapshot(data));

    let _ = black_box(ControlRecordType::parse_key(data));
    let _ = black_box(EndTransactionMarker::parse(data));

    for codec in Compression::ALL {
        let _ = black_box(decompress(codec, data, LIMITS));
    }
    let _ = black_box(decompress_magic(Compression::Lz4, data, LIMITS, 0));
});
