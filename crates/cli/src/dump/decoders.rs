//! `--offsets-decoder` (`__consumer_offsets`, Kafka's `OffsetsMessageParser` with
//! `GroupCoordinatorRecordSerde`) and `--transaction-log-decoder` (`__transaction_state`, Kafka's
//! `TransactionLog.formatRecordKeyAndValue`). The record layouts are those of the schemas in
//! Kafka's `group-coordinator`, `clients` and `transaction-coordinator` modules.

use seglog_format::DecodeError;
use seglog_format::Record;
use seglog_format::schema::group_messages::{
    CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, schemas,
};
use seglog_format::schema::message::{Reader, Value, read, read_versioned, to_json};
use seglog_format::schema::transaction::{
    self, TransactionLogKey, TransactionState, is_missing_version,
};

use super::report::{SCALA_TABLE_LEN_INITIAL, scala_bucket, scala_improve_hash, scala_threshold};

enum OffsetsError {
    UnknownType(i16),
    Other(String),
}

/// Kafka's `OffsetsMessageParser.parse`: the key and payload texts of a
/// `__consumer_offsets` record. `Err` is where Kafka throws (a record without a key).
pub(super) fn offsets_key_value(
    record: &Record<'_>,
) -> Result<(Option<String>, Option<String>), String> {
    let Some(key) = record.key else {
        return Err(format!(
            "Failed to decode message at offset {} using offset topic decoder (message had a missing key)",
            record.offset
        ));
    };
    Ok(match offsets_json(key, record.value) {
        Ok((key, value)) => (Some(key), Some(value)),
        Err(OffsetsError::UnknownType(record_type)) => (
            Some(format!(
                "Unknown record type {record_type} at offset {}, skipping.",
                record.offset
            )),
            None,
        ),
        Err(OffsetsError::Other(message)) => {
            (Some(format!("Error at offset {}, skipping. {message}", record.offset)), None)
        }
    })
}

/// Kafka's texts for a key or value that did not read: `what` is `key` or `value`.
fn read_error(what: &str, version: Option<i16>, error: &DecodeError) -> OffsetsError {
    OffsetsError::Other(match version {
        None => format!("Could not read version from {what}'s buffer."),
        Some(version) => format!(
            "Could not read record with version {version} from {what}'s buffer due to: {error}."
        ),
    })
}

fn offsets_json(key: &[u8], value: Option<&[u8]>) -> Result<(String, String), OffsetsError> {
    let mut key_reader = Reader::new(key);
    let record_type = key_reader.version().map_err(|error| read_error("key", None, &error))?;
    let (key_schema, value_schema) =
        schemas(record_type).ok_or(OffsetsError::UnknownType(record_type))?;
    let key_data = read(key_schema, &mut key_reader, record_type)
        .map_err(|error| read_error("key", Some(record_type), &error))?;
    let value_text = match value {
        None => "<DELETE>".to_owned(),
        Some(value) => {
            let mut value_reader = Reader::new(value);
            let version =
                value_reader.version().map_err(|error| read_error("value", None, &error))?;
            let mut data = read(value_schema, &mut value_reader, version)
                .map_err(|error| read_error("value", Some(version), &error))?;
            if record_type == 2 {
                expand_consumer_protocol(&mut data);
            }
            format!("{{\"version\":\"{version}\",\"data\":{}}}", to_json(&data))
        }
    };
    let key_text = format!("{{\"type\":\"{record_type}\",\"data\":{}}}", to_json(&key_data));
    Ok((key_text, value_text))
}

/// For groups of protocol type `consumer`, Kafka shows each member's subscription and
/// assignment decoded (keeping the bytes when they do not decode).
fn expand_consumer_protocol(data: &mut Value) {
    if data.get("protocolType").and_then(Value::as_str) != Some("consumer") {
        return;
    }
    let Some(Value::Array(members)) = data.get_mut("members") else { return };
    for member in members {
        for (name, schema) in [
            ("subscription", &CONSUMER_PROTOCOL_SUBSCRIPTION),
            ("assignment", &CONSUMER_PROTOCOL_ASSIGNMENT),
        ] {
            let Some(slot) = member.get_mut(name) else { continue };
            let Value::Bytes(bytes) = slot else { continue };
            if let Ok((_, decoded)) = read_versioned(schema, bytes) {
                *slot = decoded;
            }
        }
    }
}

/// Java's texts for a transaction log key or value that did not read.
fn transaction_error(error: &DecodeError) -> String {
    match error {
        error if is_missing_version(error) => "java.nio.BufferUnderflowException".to_owned(),
        DecodeError::UnsupportedVersion { version, .. } => {
            format!("Unknown version {version} from the transaction log message value")
        }
        error => error.to_string(),
    }
}

/// Kafka's `TransactionLog.formatRecordKeyAndValue`. `Err` is where Kafka throws.
pub(super) fn transaction_key_value(
    record: &Record<'_>,
) -> Result<(Option<String>, Option<String>), String> {
    let key = record.key.ok_or("java.lang.NullPointerException: the record has no key")?;
    let transactional_id = match transaction::decode_key(key) {
        Ok(TransactionLogKey::TransactionalId(id)) => id,
        Ok(TransactionLogKey::UnknownVersion(version)) => {
            return Ok((Some(format!("unknown::version={version}")), None));
        }
        Err(error) => return Err(transaction_error(&error)),
    };
    let key_text = format!("transaction_metadata::transactionalId={transactional_id}");
    let Some(value) = record.value else {
        return Ok((Some(key_text), Some("<DELETE>".to_owned())));
    };
    let value_text = transaction_value_text(value)?;
    Ok((Some(key_text), Some(value_text)))
}

/// `TransactionMetadata`'s text; `Err` is a Java exception's text.
fn transaction_value_text(value: &[u8]) -> Result<String, String> {
    let data = transaction::decode_value(value).map_err(|error| transaction_error(&error))?;
    let status = data.transaction_status;
    let state = TransactionState::from_id(status).ok_or_else(|| {
        format!("Unknown transaction state id {status} from the transaction status message")
    })?;
    let mut groups = Vec::new();
    if state != TransactionState::Empty {
        let Some(topics) = &data.transaction_partitions else {
            return Err("java.lang.NullPointerException: null transaction partitions".to_owned());
        };
        for topic in topics {
            groups.push(topic.partition_ids.iter().map(|id| (topic.topic.clone(), *id)).collect());
        }
    }
    let partitions: Vec<String> = scala_hash_set_order(&groups)
        .into_iter()
        .map(|(topic, partition)| format!("{topic}-{partition}"))
        .collect();
    Ok(format!(
        "producerId:{},producerEpoch:{},state={},partitions=[{}],txnLastUpdateTimestamp={},txnTimeoutMs={}",
        data.producer_id,
        data.producer_epoch,
        state.name(),
        partitions.join(","),
        data.transaction_last_update_timestamp_ms,
        data.transaction_timeout_ms,
    ))
}

/// Java's `TopicPartition.hashCode`.
pub(super) fn topic_partition_hash(topic: &str, partition: i32) -> i32 {
    31i32
        .wrapping_mul(31i32.wrapping_add(partition))
        .wrapping_add(seglog_format::java::string_hash(topic))
}

/// Scala 2.13's `tableSizeFor`.
fn table_size_for(capacity: usize) -> usize {
    let capacity = capacity.saturating_sub(1).max(4);
    let highest_one_bit = 1usize << (usize::BITS - 1 - capacity.leading_zeros());
    (highest_one_bit * 2).min(1 << 30)
}

/// The iteration order of a Scala 2.13 `mutable.HashSet[TopicPartition]` filled by one
/// `++=` of an immutable set per group (Kafka's `TransactionMetadata.addPartitions`).
fn scala_hash_set_order(groups: &[Vec<(String, i32)>]) -> Vec<(String, i32)> {
    let mut table_len = SCALA_TABLE_LEN_INITIAL;
    let mut nodes: Vec<(i32, usize, (String, i32))> = Vec::new();
    for group in groups {
        let mut distinct: Vec<&(String, i32)> = Vec::new();
        for item in group {
            if !distinct.contains(&item) {
                distinct.push(item);
            }
        }
        // `addAll` first calls `sizeHint(xs.knownSize)`: a table for `(n + 1) / 0.75`
        // entries. Sets of up to four elements are then added one by one through `add`
        // (which grows a 75 % full table); larger (hash) sets go straight to `addElem`.
        let n = distinct.len();
        table_len = table_len.max(table_size_for((n + 1) * 4 / 3));
        for item in distinct {
            if n <= 4 && nodes.len() + 1 >= scala_threshold(table_len) {
                table_len *= 2;
            }
            if nodes.iter().all(|(_, _, existing)| existing != item) {
                let hash = scala_improve_hash(topic_partition_hash(&item.0, item.1));
                nodes.push((hash, nodes.len(), item.clone()));
            }
        }
    }
    nodes.sort_by_key(|(hash, idx, _)| (scala_bucket(*hash, table_len), *hash, *idx));
    nodes.into_iter().map(|(_, _, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use seglog_format::schema::transaction::{TransactionLogValue, TransactionPartitions};

    use super::super::tests::record;
    use super::*;

    #[test]
    fn topic_partition_hash_matches_java() {
        // `TopicPartition.hashCode` = 31 * (31 + partition) + topic.hashCode(); "abc".hashCode()
        // is 96354, and "polygenelubricants".hashCode() is Integer.MIN_VALUE.
        assert_eq!(topic_partition_hash("abc", 0), 961 + 96_354);
        assert_eq!(topic_partition_hash("abc", 2), 31 * 33 + 96_354);
        assert_eq!(topic_partition_hash("polygenelubricants", 0), i32::MIN.wrapping_add(961));
    }

    #[test]
    fn offsets_decoder_edge_cases() {
        let key = [0u8, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 0];
        let value = [0u8, 5, 0, 0];
        let (key_text, payload) = offsets_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(
            key_text.unwrap(),
            "Error at offset 5, skipping. Could not read record with version 5 from value's \
             buffer due to: Can't read version 5 of OffsetCommitValue."
        );
        assert_eq!(payload, None);
        let (key_text, _) = offsets_key_value(&record(Some(&[0, 1, 0]), None)).unwrap();
        assert_eq!(
            key_text.unwrap(),
            "Error at offset 5, skipping. Could not read record with version 1 from key's buffer \
             due to: null."
        );
        assert!(offsets_key_value(&record(None, Some(&value))).is_err());
        // A group of another protocol type keeps its member bytes as base64.
        let mut group = vec![0u8, 2, 0, 1, b'g'];
        let mut value = vec![0u8, 0];
        for text in ["connect", "1", "l"] {
            value.extend_from_slice(&(text.len() as i16).to_be_bytes());
            value.extend_from_slice(text.as_bytes());
        }
        value.splice(11..11, 7i32.to_be_bytes());
        value.extend_from_slice(&1i32.to_be_bytes());
        for text in ["m", "c", "h"] {
            value.extend_from_slice(&(text.len() as i16).to_be_bytes());
            value.extend_from_slice(text.as_bytes());
        }
        value.extend_from_slice(&10i32.to_be_bytes());
        value.extend_from_slice(&1i32.to_be_bytes());
        value.push(0xAB);
        value.extend_from_slice(&0i32.to_be_bytes());
        group.truncate(5);
        let (key_text, payload) = offsets_key_value(&record(Some(&group), Some(&value))).unwrap();
        assert_eq!(key_text.unwrap(), "{\"type\":\"2\",\"data\":{\"group\":\"g\"}}");
        assert_eq!(
            payload.unwrap(),
            "{\"version\":\"0\",\"data\":{\"protocolType\":\"connect\",\"generation\":7,\
             \"protocol\":\"1\",\"leader\":\"l\",\"members\":[{\"memberId\":\"m\",\"clientId\":\"c\",\
             \"clientHost\":\"h\",\"sessionTimeout\":10,\"subscription\":\"qw==\",\
             \"assignment\":\"\"}]}}"
        );
    }

    /// A `TransactionLogValue` (producer 1, epoch 0, timeout 100, updated at 5, started at 4)
    /// written by format's writer.
    fn transaction_value(
        version: i16,
        state: TransactionState,
        transaction_partitions: Option<Vec<TransactionPartitions>>,
        previous_producer_id: i64,
    ) -> Vec<u8> {
        transaction::encode_value(&TransactionLogValue {
            version,
            producer_id: 1,
            previous_producer_id,
            next_producer_id: -1,
            producer_epoch: 0,
            transaction_timeout_ms: 100,
            transaction_status: state.id(),
            transaction_partitions,
            transaction_last_update_timestamp_ms: 5,
            transaction_start_timestamp_ms: 4,
            client_transaction_version: 0,
        })
        .unwrap()
    }

    #[test]
    fn transaction_partitions_in_scala_set_order() {
        // Worked by hand: "foo".hashCode() = 101574, TopicPartition hash = 31 * (31 + p) +
        // 101574, improved by `h ^ (h >>> 16)`, buckets of 16: p=2 -> 4, p=0 -> 6, p=1 -> 7.
        let partitions =
            TransactionPartitions { topic: "foo".to_owned(), partition_ids: vec![0, 1, 2] };
        let value =
            transaction_value(0, TransactionState::PrepareCommit, Some(vec![partitions]), -1);
        let key = [0u8, 0, 0, 1, b't'];
        let (key_text, payload) = transaction_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(key_text.unwrap(), "transaction_metadata::transactionalId=t");
        assert_eq!(
            payload.unwrap(),
            "producerId:1,producerEpoch:0,state=PrepareCommit,partitions=[foo-2,foo-0,foo-1],\
             txnLastUpdateTimestamp=5,txnTimeoutMs=100"
        );
        let (unknown, none) = transaction_key_value(&record(Some(&[0, 3]), None)).unwrap();
        assert_eq!((unknown.as_deref(), none), (Some("unknown::version=3"), None));
        let mut bad_state = value.clone();
        bad_state[16] = 9;
        assert_eq!(
            transaction_key_value(&record(Some(&key), Some(&bad_state))).unwrap_err(),
            "Unknown transaction state id 9 from the transaction status message"
        );
    }

    #[test]
    fn flexible_tagged_fields() {
        // TransactionLogValue v1: tagged previousProducerId (tag 0) shows only when not -1.
        let value = transaction_value(1, TransactionState::Empty, None, 77);
        assert!(value.ends_with(&[1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 77]), "{value:?}");
        let key = [0u8, 0, 0, 1, b't'];
        let (_, payload) = transaction_key_value(&record(Some(&key), Some(&value))).unwrap();
        assert_eq!(
            payload.unwrap(),
            "producerId:1,producerEpoch:0,state=Empty,partitions=[],txnLastUpdateTimestamp=5,\
             txnTimeoutMs=100"
        );
    }
}
