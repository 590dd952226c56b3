//! The records of `__transaction_state` (Kafka's `TransactionLog` with the `TransactionLogKey`
//! and `TransactionLogValue` schemas of the `transaction-coordinator` module): the key and value
//! bytes of one record, every version Kafka has written.
//!
//! ```text
//! TransactionLogKey v0:   version int16 (0) | transactionalId string
//! TransactionLogValue v0: version int16 | producerId int64 | producerEpoch int16
//!                         | transactionTimeoutMs int32 | transactionStatus int8
//!                         | transactionPartitions [topic string, partitionIds [int32]] (nullable)
//!                         | transactionLastUpdateTimestampMs int64
//!                         | transactionStartTimestampMs int64
//! TransactionLogValue v1: the same fields, flexible (compact strings and arrays), then the
//!                         tagged previousProducerId (0), nextProducerId (1), both -1 by default,
//!                         and clientTransactionVersion (2), 0 by default
//! ```
//!
//! A record with a null value is a tombstone (a transactional id expired).

use super::message::{
    Default, Field, Message, MessageError, Reader, Struct, Ty, Value, Versions, read,
};
use crate::error::{DecodeError, Result};
use crate::varint::write_unsigned_varint;

const ALL: Versions = Versions::ALL;

/// The schema of `TransactionLogKey`.
pub static TRANSACTION_LOG_KEY: Message = Message {
    root: Struct {
        name: "TransactionLogKey",
        versions: Versions::only(0),
        fields: &[Field::new("transactionalId", Ty::Str, Versions::only(0))],
    },
    flexible: Versions::NONE,
};

static PARTITIONS_SCHEMA: Struct = Struct {
    name: "PartitionsSchema",
    versions: ALL,
    fields: &[
        Field::new("topic", Ty::Str, ALL),
        Field::new("partitionIds", Ty::Array(&Ty::Int32), ALL),
    ],
};

/// The schema of `TransactionLogValue`, versions 0 and 1.
pub static TRANSACTION_LOG_VALUE: Message = Message {
    root: Struct {
        name: "TransactionLogValue",
        versions: Versions::range(0, 1),
        fields: &[
            Field::new("producerId", Ty::Int64, ALL),
            Field::new("previousProducerId", Ty::Int64, Versions::from(1)).tagged(
                0,
                Versions::from(1),
                Default::Int(-1),
            ),
            Field::new("nextProducerId", Ty::Int64, Versions::from(1)).tagged(
                1,
                Versions::from(1),
                Default::Int(-1),
            ),
            Field::new("producerEpoch", Ty::Int16, ALL),
            Field::new("transactionTimeoutMs", Ty::Int32, ALL),
            Field::new("transactionStatus", Ty::Int8, ALL),
            Field::new("transactionPartitions", Ty::Array(&Ty::Struct(&PARTITIONS_SCHEMA)), ALL)
                .nullable(ALL),
            Field::new("transactionLastUpdateTimestampMs", Ty::Int64, ALL),
            Field::new("transactionStartTimestampMs", Ty::Int64, ALL),
            Field::new("clientTransactionVersion", Ty::Int16, Versions::from(1)).tagged(
                2,
                Versions::from(1),
                Default::Int(0),
            ),
        ],
    },
    flexible: Versions::from(1),
};

/// The newest `TransactionLogValue` version.
pub const TRANSACTION_LOG_VALUE_VERSION_MAX: i16 = 1;

/// Kafka's `TransactionState`, by the id stored in `transactionStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TransactionState {
    /// Every state, in id order.
    pub const ALL: [Self; 8] = [
        Self::Empty,
        Self::Ongoing,
        Self::PrepareCommit,
        Self::PrepareAbort,
        Self::CompleteCommit,
        Self::CompleteAbort,
        Self::Dead,
        Self::PrepareEpochFence,
    ];

    /// The state of a stored id (`None`: not one of Kafka's).
    pub fn from_id(id: i8) -> Option<Self> {
        usize::try_from(id).ok().and_then(|idx| Self::ALL.get(idx)).copied()
    }

    /// The stored id.
    pub const fn id(self) -> i8 {
        self as i8
    }

    /// Kafka's name (`TransactionState.toString`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::PrepareCommit => "PrepareCommit",
            Self::PrepareAbort => "PrepareAbort",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
            Self::Dead => "Dead",
            Self::PrepareEpochFence => "PrepareEpochFence",
        }
    }
}

/// The key of a `__transaction_state` record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TransactionLogKey {
    /// Version 0: the transactional id.
    TransactionalId(String),
    /// A key of a later version, which Kafka skips (`unknown::version=N`).
    UnknownVersion(i16),
}

/// One topic's partitions in a transaction (`PartitionsSchema`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionPartitions {
    pub topic: String,
    pub partition_ids: Vec<i32>,
}

/// `TransactionLogValue`: a transactional id's producer and its transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionLogValue {
    /// The version read, or to write (0 or 1).
    pub version: i16,
    pub producer_id: i64,
    /// Version 1 (tagged); -1 otherwise.
    pub previous_producer_id: i64,
    /// Version 1 (tagged); -1 otherwise.
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    pub transaction_timeout_ms: i32,
    /// The [`TransactionState`] id, as stored (it may be one Kafka does not know).
    pub transaction_status: i8,
    /// `None` when stored as null (Kafka writes null for an `Empty` transaction).
    pub transaction_partitions: Option<Vec<TransactionPartitions>>,
    pub transaction_last_update_timestamp_ms: i64,
    pub transaction_start_timestamp_ms: i64,
    /// Version 1 (tagged); 0 otherwise.
    pub client_transaction_version: i16,
}

/// Decodes a key. A missing version is [`MessageError::MissingVersion`].
pub fn decode_key(bytes: &[u8]) -> Result<TransactionLogKey> {
    let mut reader = Reader::new(bytes);
    let version = reader.version()?;
    if version != 0 {
        return Ok(TransactionLogKey::UnknownVersion(version));
    }
    let key = read(&TRANSACTION_LOG_KEY, &mut reader, version)?;
    let id = key.get("transactionalId").and_then(Value::as_str).unwrap_or_default();
    Ok(TransactionLogKey::TransactionalId(id.to_owned()))
}

/// Encodes a version 0 key.
pub fn encode_key(transactional_id: &str) -> Result<Vec<u8>> {
    let mut out = 0i16.to_be_bytes().to_vec();
    put_string(&mut out, transactional_id, false)?;
    Ok(out)
}

/// Decodes a value of version 0 or 1. A missing version is [`MessageError::MissingVersion`],
/// another version [`DecodeError::UnsupportedVersion`].
pub fn decode_value(bytes: &[u8]) -> Result<TransactionLogValue> {
    let mut reader = Reader::new(bytes);
    let version = reader.version()?;
    if !(0..=TRANSACTION_LOG_VALUE_VERSION_MAX).contains(&version) {
        return Err(DecodeError::UnsupportedVersion { file: "TransactionLogValue", version });
    }
    let data = read(&TRANSACTION_LOG_VALUE, &mut reader, version)?;
    let int = |name: &str, default: i64| data.get(name).and_then(Value::as_int).unwrap_or(default);
    let transaction_partitions =
        data.get("transactionPartitions").and_then(Value::as_array).map(|topics| {
            topics
                .iter()
                .map(|topic| TransactionPartitions {
                    topic: topic.get("topic").and_then(Value::as_str).unwrap_or("").to_owned(),
                    partition_ids: topic
                        .get("partitionIds")
                        .and_then(Value::as_array)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(Value::as_int)
                        .map(|id| id as i32)
                        .collect(),
                })
                .collect()
        });
    Ok(TransactionLogValue {
        version,
        producer_id: int("producerId", -1),
        previous_producer_id: int("previousProducerId", -1),
        next_producer_id: int("nextProducerId", -1),
        producer_epoch: int("producerEpoch", -1) as i16,
        transaction_timeout_ms: int("transactionTimeoutMs", 0) as i32,
        transaction_status: int("transactionStatus", 0) as i8,
        transaction_partitions,
        transaction_last_update_timestamp_ms: int("transactionLastUpdateTimestampMs", -1),
        transaction_start_timestamp_ms: int("transactionStartTimestampMs", -1),
        client_transaction_version: int("clientTransactionVersion", 0) as i16,
    })
}

/// Encodes a value at its `version` (0, or 1 with the tagged fields that differ from their
/// defaults, in tag order, as Kafka's generated writer does).
pub fn encode_value(value: &TransactionLogValue) -> Result<Vec<u8>> {
    let flexible = match value.version {
        0 => false,
        1 => true,
        _ => return Err(DecodeError::Unencodable { reason: "TransactionLogValue version" }),
    };
    let mut out = value.version.to_be_bytes().to_vec();
    out.extend_from_slice(&value.producer_id.to_be_bytes());
    out.extend_from_slice(&value.producer_epoch.to_be_bytes());
    out.extend_from_slice(&value.transaction_timeout_ms.to_be_bytes());
    out.extend_from_slice(&value.transaction_status.to_be_bytes());
    match &value.transaction_partitions {
        None if flexible => out.push(0),
        None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        Some(topics) => {
            put_count(&mut out, topics.len(), flexible)?;
            for topic in topics {
                put_string(&mut out, &topic.topic, flexible)?;
                put_count(&mut out, topic.partition_ids.len(), flexible)?;
                for id in &topic.partition_ids {
                    out.extend_from_slice(&id.to_be_bytes());
                }
                if flexible {
                    out.push(0);
                }
            }
        }
    }
    out.extend_from_slice(&value.transaction_last_update_timestamp_ms.to_be_bytes());
    out.extend_from_slice(&value.transaction_start_timestamp_ms.to_be_bytes());
    if flexible {
        let mut tags: Vec<(u32, Vec<u8>)> = Vec::new();
        if value.previous_producer_id != -1 {
            tags.push((0, value.previous_producer_id.to_be_bytes().to_vec()));
        }
        if value.next_producer_id != -1 {
            tags.push((1, value.next_producer_id.to_be_bytes().to_vec()));
        }
        if value.client_transaction_version != 0 {
            tags.push((2, value.client_transaction_version.to_be_bytes().to_vec()));
        }
        // At most three tags of at most eight bytes: the casts cannot truncate.
        write_unsigned_varint(&mut out, tags.len() as u32);
        for (tag, bytes) in tags {
            write_unsigned_varint(&mut out, tag);
            write_unsigned_varint(&mut out, bytes.len() as u32);
            out.extend_from_slice(&bytes);
        }
    }
    Ok(out)
}

/// An array count (int32, or when flexible an unsigned varint of count + 1).
fn put_count(out: &mut Vec<u8>, count: usize, flexible: bool) -> Result<()> {
    if flexible {
        let count =
            u32::try_from(count + 1).map_err(|_| DecodeError::Unencodable { reason: "count" })?;
        write_unsigned_varint(out, count);
    } else {
        let count =
            i32::try_from(count).map_err(|_| DecodeError::Unencodable { reason: "count" })?;
        out.extend_from_slice(&count.to_be_bytes());
    }
    Ok(())
}

fn put_string(out: &mut Vec<u8>, text: &str, flexible: bool) -> Result<()> {
    let length = i16::try_from(text.len())
        .map_err(|_| DecodeError::Unencodable { reason: "string longer than 32767 bytes" })?;
    if flexible {
        write_unsigned_varint(out, u32::from(length.unsigned_abs()) + 1);
    } else {
        out.extend_from_slice(&length.to_be_bytes());
    }
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

/// Whether `error` is the missing leading version of a key or value.
pub fn is_missing_version(error: &DecodeError) -> bool {
    *error == DecodeError::Message(MessageError::MissingVersion)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(version: i16) -> TransactionLogValue {
        TransactionLogValue {
            version,
            producer_id: 1,
            previous_producer_id: -1,
            next_producer_id: -1,
            producer_epoch: 0,
            transaction_timeout_ms: 100,
            transaction_status: TransactionState::PrepareCommit.id(),
            transaction_partitions: Some(vec![TransactionPartitions {
                topic: "foo".to_owned(),
                partition_ids: vec![0, 1, 2],
            }]),
            transaction_last_update_timestamp_ms: 5,
            transaction_start_timestamp_ms: 4,
            client_transaction_version: 0,
        }
    }

    #[test]
    fn keys_and_values_golden_bytes_and_round_trips() {
        let key = encode_key("t").unwrap();
        assert_eq!(key, [0, 0, 0, 1, b't']);
        assert_eq!(decode_key(&key).unwrap(), TransactionLogKey::TransactionalId("t".to_owned()));
        assert_eq!(decode_key(&[0, 3]).unwrap(), TransactionLogKey::UnknownVersion(3));
        assert!(is_missing_version(&decode_key(&[0]).unwrap_err()));

        let v0 = value(0);
        let bytes = encode_value(&v0).unwrap();
        let mut expected = vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 100, 2];
        expected.extend_from_slice(&[0, 0, 0, 1, 0, 3, b'f', b'o', b'o', 0, 0, 0, 3]);
        expected.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2]);
        expected.extend_from_slice(&5i64.to_be_bytes());
        expected.extend_from_slice(&4i64.to_be_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(decode_value(&bytes).unwrap(), v0);

        let mut v1 = value(1);
        v1.previous_producer_id = 77;
        v1.client_transaction_version = 2;
        v1.transaction_partitions = None;
        let bytes = encode_value(&v1).unwrap();
        assert_eq!(decode_value(&bytes).unwrap(), v1);
        assert!(bytes.ends_with(&[2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 77, 2, 2, 0, 2]));
        assert_eq!(
            decode_value(&[0, 2]).unwrap_err(),
            DecodeError::UnsupportedVersion { file: "TransactionLogValue", version: 2 }
        );
        assert_eq!(decode_value(&[0, 0, 0]).unwrap_err().to_string(), "null");
        assert_eq!(TransactionState::from_id(2), Some(TransactionState::PrepareCommit));
        assert_eq!(TransactionState::from_id(8), None);
        assert_eq!(TransactionState::PrepareEpochFence.name(), "PrepareEpochFence");
    }
}
