//! Every Kafka schema seglog reads or writes beyond the record batch: the records of the internal
//! topics and the KRaft control records, one module per schema, each with its reader and writer.
//!
//! - [`message`]: Kafka's schema-described messages in general (the JSON message schemas):
//!   field tables, a reader of any version (tagged fields included), Jackson's JSON.
//! - [`group`]: `__consumer_offsets`, typed, as the group coordinator reads and writes it;
//!   [`group_messages`]: the same schemas as tables, every record type and version.
//! - [`transaction`]: `__transaction_state` (`TransactionLogKey`/`Value`), typed and as tables.
//! - [`kraft`]: the KRaft control records `kafka-dump-log` prints.
//! - [`codec`]: a [`Decode`]/[`Encode`] pair for every typed record above.

pub mod codec;
pub mod group;
pub mod group_messages;
pub mod kraft;
pub mod message;
pub mod metadata;
pub mod transaction;

pub use codec::{Decode, Encode};

#[cfg(test)]
mod tests {
    use super::{group, group_messages, kraft, message, metadata, transaction};
    use crate::control::ControlRecordType;

    /// The body of the `small_codecs` fuzz target's schema part, over seeded inputs: every
    /// table reads arbitrary bytes without panicking, and what decodes re-encodes to the same
    /// value. Inputs are mutations of valid records, so the readers get past the version.
    #[test]
    fn schema_readers_fuzz() {
        let seeds: Vec<Vec<u8>> = vec![
            transaction::encode_key("txn").unwrap(),
            group::encode_key(&group::GroupRecordKey::GroupMetadata { group: "g".to_owned() })
                .unwrap(),
            group::encode_consumer_group_metadata_value(&group::ConsumerGroupMetadataValue {
                epoch: 3,
            }),
            vec![0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0, 0, 5],
            // A PartitionChangeRecord v0 with isr and leader tagged.
            vec![
                1, 5, 0, 0, 0, 0, 3, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 2, 0, 9, 3, 0,
                0, 0, 1, 0, 0, 0, 2, 1, 4, 0, 0, 0, 2,
            ],
        ];
        let mut state: u64 = 0x5eed;
        let mut next = move || {
            // SplitMix64.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for iteration in 0..4_000u32 {
            let seed = seeds.get(iteration as usize % seeds.len()).unwrap();
            let mut data = seed.clone();
            for _ in 0..(next() % 4) {
                let at = (next() % (data.len() as u64 + 1)) as usize;
                let byte = (next() & 0xff) as u8;
                match next() % 3 {
                    0 if at < data.len() => {
                        if let Some(slot) = data.get_mut(at) {
                            *slot = byte;
                        }
                    }
                    1 => data.insert(at, byte),
                    _ => data.truncate(at),
                }
            }
            for record_type in 0..16 {
                if let Some((key, value)) = group_messages::schemas(record_type) {
                    let _ = message::read_versioned(key, &data).map(|(_, v)| message::to_json(&v));
                    let _ = message::read_versioned(value, &data);
                }
            }
            for record_type in [3, 4, 5, 6] {
                if let Some(schema) = kraft::schema(ControlRecordType::from_id(record_type)) {
                    let _ = kraft::decode(schema, &data);
                }
            }
            if let Ok(record) = metadata::read_record(&data) {
                let bytes = metadata::write_record(record.api_key, record.version, &record.data);
                let again = bytes.and_then(|bytes| metadata::read_record(&bytes).ok());
                assert_eq!(again.map(|r| r.data), Some(record.data), "{data:?}");
            }
            if let Ok(transaction::TransactionLogKey::TransactionalId(id)) =
                transaction::decode_key(&data)
                && let Ok(bytes) = transaction::encode_key(&id)
            {
                let again = transaction::decode_key(&bytes).ok();
                assert_eq!(again, Some(transaction::TransactionLogKey::TransactionalId(id)));
            }
            if let Ok(value) = transaction::decode_value(&data)
                && let Ok(bytes) = transaction::encode_value(&value)
            {
                assert_eq!(transaction::decode_value(&bytes).ok(), Some(value), "{data:?}");
            }
            if let Ok(key) = group::decode_key(&data)
                && let Ok(bytes) = group::encode_key(&key)
            {
                assert_eq!(group::decode_key(&bytes).ok(), Some(key), "{data:?}");
            }
        }
    }
}
