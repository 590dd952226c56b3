//! One [`Decode`]/[`Encode`] pair for every typed internal-topic record, so that callers (and
//! round-trip tests) handle each record type the same way. Each impl is the schema module's
//! reader and writer: `T::decode(bytes)` reads any version Kafka wrote, `value.encode()` writes
//! the version seglog writes.

use super::group::{
    self, ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataValue, ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataValue, GroupMetadataValue, GroupRecordKey,
    OffsetCommitValue,
};
use super::transaction::{self, TransactionLogKey, TransactionLogValue};
use crate::error::{DecodeError, Result};

/// Reads a record key or value from untrusted bytes.
pub trait Decode: Sized {
    /// The value the bytes hold, or why they do not hold one.
    fn decode(bytes: &[u8]) -> Result<Self>;
}

/// Writes a record key or value in Kafka's bytes.
pub trait Encode {
    /// The bytes, or why the value cannot be written (a string or an array too long).
    fn encode(&self) -> Result<Vec<u8>>;
}

/// Implements both traits with a module's reader and writer.
macro_rules! codec {
    ($ty:ty, $decode:path, $encode:expr) => {
        impl Decode for $ty {
            fn decode(bytes: &[u8]) -> Result<Self> {
                $decode(bytes)
            }
        }

        impl Encode for $ty {
            fn encode(&self) -> Result<Vec<u8>> {
                let encode: fn(&$ty) -> Result<Vec<u8>> = $encode;
                encode(self)
            }
        }
    };
}

codec!(GroupRecordKey, group::decode_key, group::encode_key);
codec!(OffsetCommitValue, group::decode_offset_commit_value, group::encode_offset_commit_value);
codec!(GroupMetadataValue, group::decode_group_metadata_value, group::encode_group_metadata_value);
codec!(ConsumerGroupMetadataValue, group::decode_consumer_group_metadata_value, |value| Ok(
    group::encode_consumer_group_metadata_value(value)
));
codec!(
    ConsumerGroupMemberMetadataValue,
    group::decode_consumer_group_member_metadata_value,
    group::encode_consumer_group_member_metadata_value
);
codec!(
    ConsumerGroupTargetAssignmentMetadataValue,
    group::decode_consumer_group_target_assignment_metadata_value,
    |value| Ok(group::encode_consumer_group_target_assignment_metadata_value(value))
);
codec!(
    ConsumerGroupTargetAssignmentMemberValue,
    group::decode_consumer_group_target_assignment_member_value,
    group::encode_consumer_group_target_assignment_member_value
);
codec!(
    ConsumerGroupCurrentMemberAssignmentValue,
    group::decode_consumer_group_current_member_assignment_value,
    group::encode_consumer_group_current_member_assignment_value
);
codec!(TransactionLogKey, transaction::decode_key, |key| match key {
    TransactionLogKey::TransactionalId(id) => transaction::encode_key(id),
    TransactionLogKey::UnknownVersion(_) => {
        Err(DecodeError::Unencodable { reason: "only version 0 transaction log keys are written" })
    }
});
codec!(TransactionLogValue, transaction::decode_value, transaction::encode_value);

#[cfg(test)]
mod tests {
    use std::fmt::Debug;

    use super::*;
    use crate::schema::group::TopicPartitions;
    use crate::schema::transaction::TransactionPartitions;

    /// Encodes, decodes and encodes again: the same value, the same bytes.
    fn check_round_trip<T: Decode + Encode + PartialEq + Debug>(value: &T) {
        let bytes = value.encode().unwrap();
        let decoded = T::decode(&bytes).unwrap();
        assert_eq!(&decoded, value);
        assert_eq!(decoded.encode().unwrap(), bytes);
    }

    #[test]
    fn every_record_type_round_trips_through_its_pair() {
        let topic = TopicPartitions { topic_id: [7; 16], partitions: vec![0, 3] };
        check_round_trip(&GroupRecordKey::OffsetCommit {
            group: "g".to_owned(),
            topic: "t".to_owned(),
            partition: 1,
        });
        check_round_trip(&GroupRecordKey::ConsumerGroupCurrentMemberAssignment {
            group: "g".to_owned(),
            member: "m".to_owned(),
        });
        check_round_trip(&OffsetCommitValue {
            offset: 9,
            leader_epoch: 2,
            metadata: String::new(),
            commit_timestamp: 5,
            expire_timestamp: -1,
        });
        check_round_trip(&GroupMetadataValue {
            protocol_type: "consumer".to_owned(),
            generation: 1,
            protocol: None,
            leader: None,
            current_state_timestamp: 3,
            members: vec![],
        });
        check_round_trip(&ConsumerGroupMetadataValue { epoch: 4 });
        check_round_trip(&ConsumerGroupMemberMetadataValue {
            client_id: "c".to_owned(),
            subscribed_topic_regex: Some("t.*".to_owned()),
            ..ConsumerGroupMemberMetadataValue::default()
        });
        check_round_trip(&ConsumerGroupTargetAssignmentMetadataValue { assignment_epoch: 6 });
        check_round_trip(&ConsumerGroupTargetAssignmentMemberValue {
            topic_partitions: vec![topic.clone()],
        });
        check_round_trip(&ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: 2,
            previous_member_epoch: 1,
            state: 0,
            assigned_partitions: vec![],
            partitions_pending_revocation: vec![topic],
        });
        check_round_trip(&TransactionLogKey::TransactionalId("txn".to_owned()));
        assert!(TransactionLogKey::UnknownVersion(1).encode().is_err());
        for version in [0, 1] {
            check_round_trip(&TransactionLogValue {
                version,
                producer_id: 8,
                previous_producer_id: if version == 1 { 7 } else { -1 },
                next_producer_id: -1,
                producer_epoch: 3,
                transaction_timeout_ms: 60_000,
                transaction_status: 1,
                transaction_partitions: Some(vec![TransactionPartitions {
                    topic: "t".to_owned(),
                    partition_ids: vec![2],
                }]),
                transaction_last_update_timestamp_ms: 11,
                transaction_start_timestamp_ms: 10,
                client_transaction_version: 0,
            });
        }
    }
}
