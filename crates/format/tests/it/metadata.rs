//! KRaft metadata records (`schema::metadata`) against real `__cluster_metadata` logs written by
//! Kafka (`apache-kafka-kraft-testdirs`): every record reads, and writing what was read gives
//! Kafka's bytes back, tagged fields and all.

#![allow(clippy::unwrap_used, clippy::pedantic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use seglog_format::schema::message::{Value, to_json};
use seglog_format::schema::metadata::{
    self, api_key, dump_payload, read_record, type_name, write_record,
};
use seglog_format::{Batches, DecodeLimits};

use crate::common;

fn metadata_logs(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            metadata_logs(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "log")
            && path.parent().and_then(Path::file_name).is_some_and(|n| n == "__cluster_metadata-0")
        {
            out.push(path);
        }
    }
}

/// Every non-control record value of every `__cluster_metadata-0` log, with its offset.
fn fixture_values(root: &Path) -> Vec<(PathBuf, i64, Vec<u8>)> {
    let mut logs = Vec::new();
    metadata_logs(root, &mut logs);
    logs.sort();
    assert!(logs.len() >= 6, "found only {} __cluster_metadata logs", logs.len());
    let mut values = Vec::new();
    for path in logs {
        let bytes = std::fs::read(&path).unwrap();
        for item in Batches::new(&bytes) {
            let batch = item.unwrap().batch;
            if batch.is_control_batch() {
                continue;
            }
            for record in &batch.records(DecodeLimits::default()).unwrap() {
                let record = record.unwrap();
                values.push((path.clone(), record.offset, record.value.unwrap().to_vec()));
            }
        }
    }
    values
}

#[test]
fn every_kafka_metadata_record_reads_and_writes_back_byte_identical() {
    let Some(root) = common::kafka_real() else { return };
    let values = fixture_values(&root.join("apache-kafka-kraft-testdirs"));
    let mut kinds: BTreeMap<(String, i16), usize> = BTreeMap::new();
    let mut unreadable: BTreeMap<String, usize> = BTreeMap::new();
    for (path, offset, value) in &values {
        let record = match read_record(value) {
            Ok(record) => record,
            Err(error) => {
                let head = value.iter().take(3).map(|b| format!("{b:02x}")).collect::<String>();
                *unreadable.entry(format!("{head}: {error}")).or_default() += 1;
                continue;
            }
        };
        *kinds.entry((type_name(record.schema), record.version)).or_default() += 1;
        let written = write_record(record.api_key, record.version, &record.data).unwrap();
        assert_eq!(
            &written,
            value,
            "{} offset {offset}: {}",
            path.display(),
            to_json(&record.data)
        );
    }
    // What Kafka 3.7/3.8's test harness wrote: brokers v2 and v3, controllers, topics,
    // partitions, configs, changes, features, registration changes, no-ops, migration state
    // and the KIP-868 transaction records.
    let names: Vec<String> = kinds.keys().map(|(name, v)| format!("{name} v{v}")).collect();
    assert_eq!(
        names.join(", "),
        "BEGIN_TRANSACTION_RECORD v0, BROKER_REGISTRATION_CHANGE_RECORD v0, CONFIG_RECORD v0, \
         END_TRANSACTION_RECORD v0, FEATURE_LEVEL_RECORD v0, NO_OP_RECORD v0, \
         PARTITION_CHANGE_RECORD v1, REGISTER_BROKER_RECORD v2, \
         REGISTER_BROKER_RECORD v3, REGISTER_CONTROLLER_RECORD v0, TOPIC_RECORD v0, \
         ZK_MIGRATION_STATE_RECORD v0"
    );
    // The harness ran a trunk build of October 2023, whose PartitionRecord v1 carried KIP-966's
    // ELR tags (1 and 2) where every release since 3.7 has KIP-858's Directories: Kafka's
    // reader fails on those 18, and so does this one, in Kafka's words.
    let expected = "010301: Failed to deserialize record with type 3";
    assert_eq!(unreadable.keys().collect::<Vec<_>>(), [expected], "{unreadable:#?}");
    assert_eq!(unreadable.get(expected), Some(&18));
    assert_eq!(kinds.values().sum::<usize>() + 18, values.len());
}

#[test]
fn the_dump_payload_is_kafkas_json() {
    let Some(root) = common::kafka_real() else { return };
    let values = fixture_values(&root.join("apache-kafka-kraft-testdirs"));
    let payloads: Vec<String> =
        values.iter().map(|(_, offset, value)| dump_payload(Some(value), *offset)).collect();
    let find = |prefix: &str| {
        payloads.iter().find(|p| p.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix}"))
    };
    // A feature level (bytes `00 10`), and a v3 broker whose log dirs (tagged) are written.
    assert_eq!(
        find("{\"type\":\"FEATURE_LEVEL_RECORD\""),
        "{\"type\":\"FEATURE_LEVEL_RECORD\",\"version\":0,\"data\":{\"name\":\"metadata.version\",\"featureLevel\":16}}"
    );
    let broker = find("{\"type\":\"REGISTER_BROKER_RECORD\",\"version\":3");
    assert!(broker.contains("\"logDirs\":[\""), "{broker}");
    assert!(
        broker.contains("\"rack\":null,\"fenced\":true,\"inControlledShutdown\":false"),
        "{broker}"
    );
    // A registration change leaves out `fenced` when it holds its default (0).
    let change = find("{\"type\":\"BROKER_REGISTRATION_CHANGE_RECORD\"");
    assert!(change.contains("\"fenced\":-1}}") || change.contains("\"fenced\":1}}"), "{change}");
    assert_eq!(
        find("{\"type\":\"NO_OP_RECORD\""),
        "{\"type\":\"NO_OP_RECORD\",\"version\":0,\"data\":{}}"
    );
}

#[test]
fn bad_frames_get_kafkas_texts() {
    // DumpLogSegmentsTest's bogus record: two unsigned varints of 10000.
    assert_eq!(
        dump_payload(Some(&[0x90, 0x4e, 0x90, 0x4e]), 7),
        "Error at 7, skipping. Could not deserialize metadata record due to unknown frame \
         version 10000(only frame version 1 is supported)"
    );
    assert_eq!(
        dump_payload(Some(&[0]), 1),
        "Error at 1, skipping. Could not deserialize metadata record with frame version 0. \
         Note that upgrades from the preview release of KRaft in 2.8 to newer versions are not \
         supported."
    );
    assert_eq!(dump_payload(None, 2), "Error at 2, skipping. Error while reading frame version");
    assert_eq!(
        dump_payload(Some(&[1, 99, 0]), 3),
        "Error at 3, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: \
         Unknown metadata id 99"
    );
    assert_eq!(
        dump_payload(Some(&[1, 2, 0, 5]), 4),
        "Error at 4, skipping. Failed to deserialize record with type 2"
    );
    assert_eq!(
        dump_payload(Some(&[1, 20, 0, 0, 9]), 5),
        "Error at 5, skipping. Found 1 byte(s) of garbage after 20"
    );
    assert_eq!(
        dump_payload(Some(&[1, 0xff, 0xff, 0x03]), 6),
        "Error at 6, skipping. Value for type was too large."
    );
}

#[test]
fn written_records_read_back_with_defaults_left_out() {
    let topic_id = Value::Uuid([7; 16]);
    let change = Value::Object(vec![
        ("partitionId", Value::Int(3)),
        ("topicId", topic_id.clone()),
        ("isr", Value::Array(vec![Value::Int(1), Value::Int(2)])),
        ("leader", Value::Int(2)),
        // Defaults: not written, not read back.
        ("replicas", Value::Null),
        ("leaderRecoveryState", Value::Int(-1)),
    ]);
    let bytes = write_record(api_key::PARTITION_CHANGE, 0, &change).unwrap();
    let read = read_record(&bytes).unwrap();
    assert_eq!(
        to_json(&read.data),
        "{\"partitionId\":3,\"topicId\":\"BwcHBwcHBwcHBwcHBwcHBw\",\"isr\":[1,2],\"leader\":2}"
    );
    // The frame, the fields, then the tags in order: isr (0, a compact array of 2) and
    // leader (1).
    assert_eq!(&bytes[..7], &[1, 5, 0, 0, 0, 0, 3]);
    assert_eq!(&bytes[23..], &[2, 0, 9, 3, 0, 0, 0, 1, 0, 0, 0, 2, 1, 4, 0, 0, 0, 2]);
    let quota = Value::Object(vec![
        (
            "entity",
            Value::Array(vec![Value::Object(vec![
                ("entityType", Value::Str("user".to_owned())),
                ("entityName", Value::Null),
            ])]),
        ),
        ("key", Value::Str("producer_byte_rate".to_owned())),
        ("value", Value::Float(1_048_576.0f64.to_bits())),
        ("remove", Value::Bool(false)),
    ]);
    let bytes = write_record(14, 0, &quota).unwrap();
    assert_eq!(
        dump_payload(Some(&bytes), 0),
        "{\"type\":\"CLIENT_QUOTA_RECORD\",\"version\":0,\"data\":{\"entity\":[{\"entityType\":\"user\",\"entityName\":null}],\"key\":\"producer_byte_rate\",\"value\":1048576.0,\"remove\":false}}"
    );
    assert!(metadata::schema(6).is_none());
}
