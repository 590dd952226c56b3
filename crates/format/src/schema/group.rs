//! The records of `__consumer_offsets` (Kafka's `GroupCoordinatorRecordSerde` with the
//! `OffsetCommitKey`/`OffsetCommitValue` and `GroupMetadataKey`/`GroupMetadataValue` schemas of
//! the `group-coordinator` module): the key and value bytes of one record, every version
//! Kafka has written.
//!
//! A key starts with its schema version: 0 and 1 are an offset commit, 2 the metadata of a
//! classic group, 3 and 5 to 8 a KIP-848 group's records (4, its deprecated partition
//! metadata, and 9 and above, share groups, are reported as [`GroupRecordKey::Other`]). A
//! record with a null value is a tombstone (an offset deleted, a group gone). Every decoder
//! reads through the schema tables of [`super::group_messages`], the one description of these
//! bytes. Writers use the versions Kafka 3.x writes: key 1 and value 3 for offsets, key 2
//! and value 3 for groups.

use super::group_messages::{
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    CONSUMER_GROUP_METADATA_VALUE, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE,
    schemas,
};
use super::message::{Message, Reader, Value, read};
use crate::error::{DecodeError, Result};
use crate::varint::write_unsigned_varint;

/// The version of `OffsetCommitValue` written (3: with the leader epoch, no expire timestamp).
pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// The version of `GroupMetadataValue` written (3: with group instance ids).
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// The key of a `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GroupRecordKey {
    /// `OffsetCommitKey` (versions 0 and 1): the committed offset of one partition.
    OffsetCommit { group: String, topic: String, partition: i32 },
    /// `GroupMetadataKey` (version 2): a classic group's generation and members.
    GroupMetadata { group: String },
    /// `ConsumerGroupMetadataKey` (version 3): a KIP-848 group's epoch.
    ConsumerGroupMetadata { group: String },
    /// `ConsumerGroupMemberMetadataKey` (version 5): one KIP-848 member's subscription.
    ConsumerGroupMemberMetadata { group: String, member: String },
    /// `ConsumerGroupTargetAssignmentMetadataKey` (version 6): the target's epoch.
    ConsumerGroupTargetAssignmentMetadata { group: String },
    /// `ConsumerGroupTargetAssignmentMemberKey` (version 7): one member's target partitions.
    ConsumerGroupTargetAssignmentMember { group: String, member: String },
    /// `ConsumerGroupCurrentMemberAssignmentKey` (version 8): one member's epoch and partitions.
    ConsumerGroupCurrentMemberAssignment { group: String, member: String },
    /// A key of a later schema (KIP-848 consumer groups, share groups): its version.
    Other(i16),
}

/// `OffsetCommitValue`: one committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    pub offset: i64,
    /// -1 when unknown (and in versions before 3).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Only version 1 carries it; -1 otherwise.
    pub expire_timestamp: i64,
}

/// One member in `GroupMetadataValue` (`MemberMetadata`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemberMetadata {
    pub member_id: String,
    /// Static membership (`group.instance.id`), version 3 and later.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Version 1 and later; version 0 stores the session timeout in its place when read.
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    /// The member's metadata for the group's chosen protocol.
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// `GroupMetadataValue`: the state of a classic group after a rebalance.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// Version 2 and later; -1 otherwise.
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadata>,
}

fn invalid(what: &'static str, reason: impl Into<String>) -> DecodeError {
    DecodeError::InvalidGroupRecord { what, reason: reason.into() }
}

// Every decoder reads through the schema tables of [`super::group_messages`] (strictly: a string
// that is not UTF-8 is an error), then takes the typed fields from the fields read. A field
// absent from the version read takes its documented default.

/// Reads a value through its table: its version and fields.
fn read_value(message: &Message, bytes: &[u8]) -> Result<Value> {
    let mut reader = Reader::strict(bytes);
    let version = reader.version()?;
    read(message, &mut reader, version)
}

fn int(data: &Value, name: &str, default: i64) -> i64 {
    data.get(name).and_then(Value::as_int).unwrap_or(default)
}

fn nullable_string(data: &Value, name: &str) -> Option<String> {
    data.get(name).and_then(Value::as_str).map(str::to_owned)
}

fn string(data: &Value, name: &str) -> String {
    nullable_string(data, name).unwrap_or_default()
}

fn bytes_field(data: &Value, name: &str) -> Vec<u8> {
    match data.get(name) {
        Some(Value::Bytes(bytes)) => bytes.clone(),
        _ => Vec::new(),
    }
}

fn items<'v>(data: &'v Value, name: &str) -> &'v [Value] {
    data.get(name).and_then(Value::as_array).unwrap_or_default()
}

fn strings(data: &Value, name: &str) -> Vec<String> {
    items(data, name).iter().filter_map(Value::as_str).map(str::to_owned).collect()
}

fn ints(data: &Value, name: &str) -> Vec<i32> {
    items(data, name).iter().filter_map(Value::as_int).map(|value| value as i32).collect()
}

fn topic_partitions(data: &Value, name: &str) -> Vec<TopicPartitions> {
    items(data, name)
        .iter()
        .map(|topic| TopicPartitions {
            topic_id: match topic.get("topicId") {
                Some(Value::Uuid(id)) => *id,
                _ => [0; 16],
            },
            partitions: ints(topic, "partitions"),
        })
        .collect()
}

/// Decodes a record key.
pub fn decode_key(bytes: &[u8]) -> Result<GroupRecordKey> {
    let mut reader = Reader::strict(bytes);
    let version = reader.version()?;
    let typed = match version {
        0..=3 | 5..=8 => true,
        4 | 9.. => false,
        version => return Err(invalid("key", format!("unknown key version {version}"))),
    };
    let Some((schema, _)) = schemas(version).filter(|_| typed) else {
        return Ok(GroupRecordKey::Other(version));
    };
    let key = read(schema, &mut reader, version)?;
    let group = || string(&key, "groupId");
    let member = || string(&key, "memberId");
    Ok(match version {
        0 | 1 => GroupRecordKey::OffsetCommit {
            group: string(&key, "group"),
            topic: string(&key, "topic"),
            partition: int(&key, "partition", -1) as i32,
        },
        2 => GroupRecordKey::GroupMetadata { group: string(&key, "group") },
        3 => GroupRecordKey::ConsumerGroupMetadata { group: group() },
        5 => GroupRecordKey::ConsumerGroupMemberMetadata { group: group(), member: member() },
        6 => GroupRecordKey::ConsumerGroupTargetAssignmentMetadata { group: group() },
        7 => {
            GroupRecordKey::ConsumerGroupTargetAssignmentMember { group: group(), member: member() }
        }
        8 => GroupRecordKey::ConsumerGroupCurrentMemberAssignment {
            group: group(),
            member: member(),
        },
        version => GroupRecordKey::Other(version),
    })
}

/// Encodes a key: `OffsetCommitKey` version 1 or `GroupMetadataKey` version 2.
pub fn encode_key(key: &GroupRecordKey) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match key {
        GroupRecordKey::OffsetCommit { group, topic, partition } => {
            out.extend_from_slice(&1i16.to_be_bytes());
            put_string(&mut out, group)?;
            put_string(&mut out, topic)?;
            out.extend_from_slice(&partition.to_be_bytes());
        }
        GroupRecordKey::GroupMetadata { group } => {
            out.extend_from_slice(&2i16.to_be_bytes());
            put_string(&mut out, group)?;
        }
        GroupRecordKey::ConsumerGroupMetadata { group } => {
            out.extend_from_slice(&3i16.to_be_bytes());
            put_string(&mut out, group)?;
        }
        GroupRecordKey::ConsumerGroupMemberMetadata { group, member } => {
            out.extend_from_slice(&5i16.to_be_bytes());
            put_string(&mut out, group)?;
            put_string(&mut out, member)?;
        }
        GroupRecordKey::ConsumerGroupTargetAssignmentMetadata { group } => {
            out.extend_from_slice(&6i16.to_be_bytes());
            put_string(&mut out, group)?;
        }
        GroupRecordKey::ConsumerGroupTargetAssignmentMember { group, member } => {
            out.extend_from_slice(&7i16.to_be_bytes());
            put_string(&mut out, group)?;
            put_string(&mut out, member)?;
        }
        GroupRecordKey::ConsumerGroupCurrentMemberAssignment { group, member } => {
            out.extend_from_slice(&8i16.to_be_bytes());
            put_string(&mut out, group)?;
            put_string(&mut out, member)?;
        }
        GroupRecordKey::Other(_) => {
            return Err(DecodeError::Unencodable {
                reason: "only offset and group keys are written",
            });
        }
    }
    Ok(out)
}

/// Decodes an `OffsetCommitValue` of any version (0 to 4).
pub fn decode_offset_commit_value(bytes: &[u8]) -> Result<OffsetCommitValue> {
    let data = read_value(&OFFSET_COMMIT_VALUE, bytes)?;
    Ok(OffsetCommitValue {
        offset: int(&data, "offset", -1),
        leader_epoch: int(&data, "leaderEpoch", -1) as i32,
        metadata: string(&data, "metadata"),
        commit_timestamp: int(&data, "commitTimestamp", -1),
        expire_timestamp: int(&data, "expireTimestamp", -1),
    })
}

/// Encodes an `OffsetCommitValue` at version 3.
pub fn encode_offset_commit_value(value: &OffsetCommitValue) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(30 + value.metadata.len());
    out.extend_from_slice(&OFFSET_COMMIT_VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(&value.offset.to_be_bytes());
    out.extend_from_slice(&value.leader_epoch.to_be_bytes());
    put_string(&mut out, &value.metadata)?;
    out.extend_from_slice(&value.commit_timestamp.to_be_bytes());
    Ok(out)
}

/// Decodes a `GroupMetadataValue` of any version (0 to 4).
pub fn decode_group_metadata_value(bytes: &[u8]) -> Result<GroupMetadataValue> {
    let data = read_value(&GROUP_METADATA_VALUE, bytes)?;
    let members = items(&data, "members")
        .iter()
        .map(|member| {
            let session_timeout = int(member, "sessionTimeout", 0) as i32;
            MemberMetadata {
                member_id: string(member, "memberId"),
                group_instance_id: nullable_string(member, "groupInstanceId"),
                client_id: string(member, "clientId"),
                client_host: string(member, "clientHost"),
                // Version 0 has no rebalance timeout: the session timeout stands in.
                rebalance_timeout: int(member, "rebalanceTimeout", i64::from(session_timeout))
                    as i32,
                session_timeout,
                subscription: bytes_field(member, "subscription"),
                assignment: bytes_field(member, "assignment"),
            }
        })
        .collect();
    Ok(GroupMetadataValue {
        protocol_type: string(&data, "protocolType"),
        generation: int(&data, "generation", -1) as i32,
        protocol: nullable_string(&data, "protocol"),
        leader: nullable_string(&data, "leader"),
        current_state_timestamp: int(&data, "currentStateTimestamp", -1),
        members,
    })
}

/// Encodes a `GroupMetadataValue` at version 3.
pub fn encode_group_metadata_value(value: &GroupMetadataValue) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(&GROUP_METADATA_VALUE_VERSION.to_be_bytes());
    put_string(&mut out, &value.protocol_type)?;
    out.extend_from_slice(&value.generation.to_be_bytes());
    put_nullable_string(&mut out, value.protocol.as_deref())?;
    put_nullable_string(&mut out, value.leader.as_deref())?;
    out.extend_from_slice(&value.current_state_timestamp.to_be_bytes());
    let n_members = i32::try_from(value.members.len())
        .map_err(|_| DecodeError::Unencodable { reason: "too many members" })?;
    out.extend_from_slice(&n_members.to_be_bytes());
    for member in &value.members {
        put_string(&mut out, &member.member_id)?;
        put_nullable_string(&mut out, member.group_instance_id.as_deref())?;
        put_string(&mut out, &member.client_id)?;
        put_string(&mut out, &member.client_host)?;
        out.extend_from_slice(&member.rebalance_timeout.to_be_bytes());
        out.extend_from_slice(&member.session_timeout.to_be_bytes());
        put_bytes(&mut out, &member.subscription)?;
        put_bytes(&mut out, &member.assignment)?;
    }
    Ok(out)
}

// ------------------------------------------------------------------- KIP-848 values
//
// Every value below is version 0 of a flexible schema: compact strings and arrays (unsigned
// varint of length + 1), UUIDs as 16 bytes, and tagged fields closing each struct.

/// Partitions of one topic, by topic id (`TopicPartitions`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TopicPartitions {
    pub topic_id: [u8; 16],
    pub partitions: Vec<i32>,
}

/// `ConsumerGroupMetadataValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerGroupMetadataValue {
    pub epoch: i32,
}

/// `ConsumerGroupMemberMetadataValue` (its tagged `classicMemberMetadata` is skipped when read
/// and never written).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupMemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
}

/// `ConsumerGroupTargetAssignmentMetadataValue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerGroupTargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
}

/// `ConsumerGroupTargetAssignmentMemberValue`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupTargetAssignmentMemberValue {
    pub topic_partitions: Vec<TopicPartitions>,
}

/// `ConsumerGroupCurrentMemberAssignmentValue`; `state` is Kafka's `MemberState` (0 stable, 1
/// unrevoked partitions, 2 unreleased partitions).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupCurrentMemberAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: i8,
    pub assigned_partitions: Vec<TopicPartitions>,
    pub partitions_pending_revocation: Vec<TopicPartitions>,
}

/// Decodes a `ConsumerGroupMetadataValue`.
pub fn decode_consumer_group_metadata_value(bytes: &[u8]) -> Result<ConsumerGroupMetadataValue> {
    let data = read_value(&CONSUMER_GROUP_METADATA_VALUE, bytes)?;
    Ok(ConsumerGroupMetadataValue { epoch: int(&data, "epoch", -1) as i32 })
}

/// Decodes a `ConsumerGroupMemberMetadataValue`.
pub fn decode_consumer_group_member_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupMemberMetadataValue> {
    let data = read_value(&CONSUMER_GROUP_MEMBER_METADATA_VALUE, bytes)?;
    Ok(ConsumerGroupMemberMetadataValue {
        instance_id: nullable_string(&data, "instanceId"),
        rack_id: nullable_string(&data, "rackId"),
        client_id: string(&data, "clientId"),
        client_host: string(&data, "clientHost"),
        subscribed_topic_names: strings(&data, "subscribedTopicNames"),
        subscribed_topic_regex: nullable_string(&data, "subscribedTopicRegex"),
        rebalance_timeout_ms: int(&data, "rebalanceTimeoutMs", -1) as i32,
        server_assignor: nullable_string(&data, "serverAssignor"),
    })
}

/// Decodes a `ConsumerGroupTargetAssignmentMetadataValue`.
pub fn decode_consumer_group_target_assignment_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupTargetAssignmentMetadataValue> {
    let data = read_value(&CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, bytes)?;
    Ok(ConsumerGroupTargetAssignmentMetadataValue {
        assignment_epoch: int(&data, "assignmentEpoch", -1) as i32,
    })
}

/// Decodes a `ConsumerGroupTargetAssignmentMemberValue`.
pub fn decode_consumer_group_target_assignment_member_value(
    bytes: &[u8],
) -> Result<ConsumerGroupTargetAssignmentMemberValue> {
    let data = read_value(&CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE, bytes)?;
    Ok(ConsumerGroupTargetAssignmentMemberValue {
        topic_partitions: topic_partitions(&data, "topicPartitions"),
    })
}

/// Decodes a `ConsumerGroupCurrentMemberAssignmentValue`.
pub fn decode_consumer_group_current_member_assignment_value(
    bytes: &[u8],
) -> Result<ConsumerGroupCurrentMemberAssignmentValue> {
    let data = read_value(&CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE, bytes)?;
    Ok(ConsumerGroupCurrentMemberAssignmentValue {
        member_epoch: int(&data, "memberEpoch", -1) as i32,
        previous_member_epoch: int(&data, "previousMemberEpoch", -1) as i32,
        state: int(&data, "state", 0) as i8,
        assigned_partitions: topic_partitions(&data, "assignedPartitions"),
        partitions_pending_revocation: topic_partitions(&data, "partitionsPendingRevocation"),
    })
}

fn put_compact_nullable(out: &mut Vec<u8>, text: Option<&str>) -> Result<()> {
    match text {
        None => out.push(0),
        Some(text) => {
            let length = u32::try_from(text.len() + 1)
                .map_err(|_| DecodeError::Unencodable { reason: "string too long" })?;
            write_unsigned_varint(out, length);
            out.extend_from_slice(text.as_bytes());
        }
    }
    Ok(())
}

fn put_compact_count(out: &mut Vec<u8>, count: usize) -> Result<()> {
    let count = u32::try_from(count + 1)
        .map_err(|_| DecodeError::Unencodable { reason: "array too long" })?;
    write_unsigned_varint(out, count);
    Ok(())
}

fn put_topic_partitions(out: &mut Vec<u8>, topics: &[TopicPartitions]) -> Result<()> {
    put_compact_count(out, topics.len())?;
    for topic in topics {
        out.extend_from_slice(&topic.topic_id);
        put_compact_count(out, topic.partitions.len())?;
        for partition in &topic.partitions {
            out.extend_from_slice(&partition.to_be_bytes());
        }
        out.push(0);
    }
    Ok(())
}

/// Encodes a `ConsumerGroupMetadataValue`.
pub fn encode_consumer_group_metadata_value(value: &ConsumerGroupMetadataValue) -> Vec<u8> {
    let mut out = vec![0, 0];
    out.extend_from_slice(&value.epoch.to_be_bytes());
    out.push(0);
    out
}

/// Encodes a `ConsumerGroupMemberMetadataValue`.
pub fn encode_consumer_group_member_metadata_value(
    value: &ConsumerGroupMemberMetadataValue,
) -> Result<Vec<u8>> {
    let mut out = vec![0, 0];
    put_compact_nullable(&mut out, value.instance_id.as_deref())?;
    put_compact_nullable(&mut out, value.rack_id.as_deref())?;
    put_compact_nullable(&mut out, Some(&value.client_id))?;
    put_compact_nullable(&mut out, Some(&value.client_host))?;
    put_compact_count(&mut out, value.subscribed_topic_names.len())?;
    for topic in &value.subscribed_topic_names {
        put_compact_nullable(&mut out, Some(topic))?;
    }
    put_compact_nullable(&mut out, value.subscribed_topic_regex.as_deref())?;
    out.extend_from_slice(&value.rebalance_timeout_ms.to_be_bytes());
    put_compact_nullable(&mut out, value.server_assignor.as_deref())?;
    out.push(0);
    Ok(out)
}

/// Encodes a `ConsumerGroupTargetAssignmentMetadataValue`.
pub fn encode_consumer_group_target_assignment_metadata_value(
    value: &ConsumerGroupTargetAssignmentMetadataValue,
) -> Vec<u8> {
    let mut out = vec![0, 0];
    out.extend_from_slice(&value.assignment_epoch.to_be_bytes());
    out.push(0);
    out
}

/// Encodes a `ConsumerGroupTargetAssignmentMemberValue`.
pub fn encode_consumer_group_target_assignment_member_value(
    value: &ConsumerGroupTargetAssignmentMemberValue,
) -> Result<Vec<u8>> {
    let mut out = vec![0, 0];
    put_topic_partitions(&mut out, &value.topic_partitions)?;
    out.push(0);
    Ok(out)
}

/// Encodes a `ConsumerGroupCurrentMemberAssignmentValue`.
pub fn encode_consumer_group_current_member_assignment_value(
    value: &ConsumerGroupCurrentMemberAssignmentValue,
) -> Result<Vec<u8>> {
    let mut out = vec![0, 0];
    out.extend_from_slice(&value.member_epoch.to_be_bytes());
    out.extend_from_slice(&value.previous_member_epoch.to_be_bytes());
    out.push(value.state.to_be_bytes()[0]);
    put_topic_partitions(&mut out, &value.assigned_partitions)?;
    put_topic_partitions(&mut out, &value.partitions_pending_revocation)?;
    out.push(0);
    Ok(out)
}

fn put_string(out: &mut Vec<u8>, text: &str) -> Result<()> {
    put_nullable_string(out, Some(text))
}

fn put_nullable_string(out: &mut Vec<u8>, text: Option<&str>) -> Result<()> {
    match text {
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
        Some(text) => {
            let length = i16::try_from(text.len()).map_err(|_| DecodeError::Unencodable {
                reason: "string longer than 32767 bytes",
            })?;
            out.extend_from_slice(&length.to_be_bytes());
            out.extend_from_slice(text.as_bytes());
        }
    }
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<()> {
    let length = i32::try_from(bytes.len())
        .map_err(|_| DecodeError::Unencodable { reason: "bytes longer than 2 GiB" })?;
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Writes a compact (flexible) string, for tests of version 4 values.
#[doc(hidden)]
pub fn put_compact_string(out: &mut Vec<u8>, text: &str) {
    write_unsigned_varint(out, u32::try_from(text.len() + 1).unwrap_or(u32::MAX));
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_commit_key_golden_bytes() {
        let key = GroupRecordKey::OffsetCommit {
            group: "g".to_owned(),
            topic: "t".to_owned(),
            partition: 3,
        };
        let bytes = encode_key(&key).unwrap();
        assert_eq!(bytes, [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]);
        assert_eq!(decode_key(&bytes).unwrap(), key);
        // Version 0 has the same fields.
        assert_eq!(decode_key(&[0, 0, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]).unwrap(), key);
        let group = GroupRecordKey::GroupMetadata { group: "g".to_owned() };
        assert_eq!(encode_key(&group).unwrap(), [0, 2, 0, 1, b'g']);
        assert_eq!(decode_key(&[0, 2, 0, 1, b'g']).unwrap(), group);
        assert_eq!(decode_key(&[0, 4, 0, 1, b'g']).unwrap(), GroupRecordKey::Other(4));
        let member = GroupRecordKey::ConsumerGroupMemberMetadata {
            group: "g".to_owned(),
            member: "m".to_owned(),
        };
        assert_eq!(encode_key(&member).unwrap(), [0, 5, 0, 1, b'g', 0, 1, b'm']);
        assert_eq!(decode_key(&[0, 5, 0, 1, b'g', 0, 1, b'm']).unwrap(), member);
    }

    #[test]
    fn offset_commit_value_versions() {
        let value = OffsetCommitValue {
            offset: 42,
            leader_epoch: 7,
            metadata: "m".to_owned(),
            commit_timestamp: 1000,
            expire_timestamp: -1,
        };
        let bytes = encode_offset_commit_value(&value).unwrap();
        let mut expected = vec![0, 3];
        expected.extend_from_slice(&42i64.to_be_bytes());
        expected.extend_from_slice(&7i32.to_be_bytes());
        expected.extend_from_slice(&[0, 1, b'm']);
        expected.extend_from_slice(&1000i64.to_be_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(decode_offset_commit_value(&bytes).unwrap(), value);

        // Version 1: with the expire timestamp, no leader epoch.
        let mut v1 = vec![0, 1];
        v1.extend_from_slice(&42i64.to_be_bytes());
        v1.extend_from_slice(&[0, 0]);
        v1.extend_from_slice(&1000i64.to_be_bytes());
        v1.extend_from_slice(&2000i64.to_be_bytes());
        let decoded = decode_offset_commit_value(&v1).unwrap();
        assert_eq!((decoded.leader_epoch, decoded.expire_timestamp), (-1, 2000));

        // Version 4: flexible, compact string and empty tagged fields.
        let mut v4 = vec![0, 4];
        v4.extend_from_slice(&42i64.to_be_bytes());
        v4.extend_from_slice(&7i32.to_be_bytes());
        put_compact_string(&mut v4, "m");
        v4.extend_from_slice(&1000i64.to_be_bytes());
        v4.push(0);
        assert_eq!(decode_offset_commit_value(&v4).unwrap(), value);
    }

    #[test]
    fn group_metadata_value_round_trip_and_v0() {
        let value = GroupMetadataValue {
            protocol_type: "consumer".to_owned(),
            generation: 3,
            protocol: Some("range".to_owned()),
            leader: Some("m-1".to_owned()),
            current_state_timestamp: 99,
            members: vec![MemberMetadata {
                member_id: "m-1".to_owned(),
                group_instance_id: Some("i".to_owned()),
                client_id: "c".to_owned(),
                client_host: "/127.0.0.1".to_owned(),
                rebalance_timeout: 300_000,
                session_timeout: 45_000,
                subscription: vec![1, 2],
                assignment: vec![3],
            }],
        };
        let bytes = encode_group_metadata_value(&value).unwrap();
        assert_eq!(decode_group_metadata_value(&bytes).unwrap(), value);

        // Version 0: no timestamp, no instance id, no rebalance timeout.
        let mut v0 = vec![0, 0, 0, 1, b'c', 0, 0, 0, 1, 0, 1, b'r', 0, 1, b'm', 0, 0, 0, 1];
        v0.extend_from_slice(&[0, 1, b'm', 0, 1, b'c', 0, 1, b'h']);
        v0.extend_from_slice(&10_000i32.to_be_bytes());
        v0.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1, 9]);
        let decoded = decode_group_metadata_value(&v0).unwrap();
        assert_eq!(decoded.current_state_timestamp, -1);
        let member = decoded.members.first().unwrap();
        assert_eq!((member.rebalance_timeout, member.session_timeout), (10_000, 10_000));
        assert_eq!(member.assignment, [9]);
    }

    #[test]
    fn consumer_group_values_golden_bytes_and_round_trips() {
        let epoch = ConsumerGroupMetadataValue { epoch: 7 };
        assert_eq!(encode_consumer_group_metadata_value(&epoch), [0, 0, 0, 0, 0, 7, 0]);
        assert_eq!(decode_consumer_group_metadata_value(&[0, 0, 0, 0, 0, 7, 0]).unwrap(), epoch);
        let member = ConsumerGroupMemberMetadataValue {
            instance_id: None,
            rack_id: None,
            client_id: "c".to_owned(),
            client_host: "/h".to_owned(),
            subscribed_topic_names: vec!["t".to_owned()],
            subscribed_topic_regex: None,
            rebalance_timeout_ms: 300,
            server_assignor: Some("uniform".to_owned()),
        };
        let bytes = encode_consumer_group_member_metadata_value(&member).unwrap();
        let mut expected = vec![0, 0, 0, 0, 2, b'c', 3, b'/', b'h', 2, 2, b't', 0, 0, 0, 1, 44, 8];
        expected.extend_from_slice(b"uniform");
        expected.push(0);
        assert_eq!(bytes, expected);
        assert_eq!(decode_consumer_group_member_metadata_value(&bytes).unwrap(), member);
        let topic = TopicPartitions { topic_id: [9; 16], partitions: vec![0, 2] };
        let current = ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: 3,
            previous_member_epoch: 2,
            state: 1,
            assigned_partitions: vec![topic.clone()],
            partitions_pending_revocation: vec![],
        };
        let bytes = encode_consumer_group_current_member_assignment_value(&current).unwrap();
        let mut expected = vec![0, 0, 0, 0, 0, 3, 0, 0, 0, 2, 1, 2];
        expected.extend_from_slice(&[9; 16]);
        expected.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0]);
        assert_eq!(bytes, expected);
        assert_eq!(decode_consumer_group_current_member_assignment_value(&bytes).unwrap(), current);
        let target = ConsumerGroupTargetAssignmentMemberValue { topic_partitions: vec![topic] };
        let bytes = encode_consumer_group_target_assignment_member_value(&target).unwrap();
        assert_eq!(decode_consumer_group_target_assignment_member_value(&bytes).unwrap(), target);
        let meta = ConsumerGroupTargetAssignmentMetadataValue { assignment_epoch: 4 };
        let bytes = encode_consumer_group_target_assignment_metadata_value(&meta);
        assert_eq!(decode_consumer_group_target_assignment_metadata_value(&bytes).unwrap(), meta);
        assert!(decode_consumer_group_metadata_value(&[0, 1, 0, 0, 0, 7, 0]).is_err());
    }

    #[test]
    fn hostile_values_are_errors_not_panics() {
        assert!(decode_key(&[0]).is_err());
        assert!(decode_key(&[0xff, 0xff]).is_err());
        // A member count far beyond the bytes left.
        let mut bytes = vec![0, 3, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&0i64.to_be_bytes());
        bytes.extend_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(
            decode_group_metadata_value(&bytes).unwrap_err().to_string(),
            "Tried to allocate a collection of size 2147483647, but there are only 0 bytes remaining."
        );
        assert!(decode_offset_commit_value(&[0, 9]).is_err());
        let mut non_utf8 = vec![0, 2, 0, 2, 0xc3, 0x28];
        assert_eq!(
            decode_key(&non_utf8).unwrap_err().to_string(),
            "string field group is not UTF-8"
        );
        non_utf8.truncate(4);
        assert!(decode_key(&non_utf8).is_err());
        // A null member array, as Kafka's reader refuses it.
        let mut null_members = vec![0, 3, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        null_members.extend_from_slice(&0i64.to_be_bytes());
        null_members.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(
            decode_group_metadata_value(&null_members).unwrap_err().to_string(),
            "non-nullable field members was serialized as null"
        );
    }
}
