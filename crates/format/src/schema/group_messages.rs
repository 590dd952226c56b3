//! The `__consumer_offsets` schemas as message tables (Kafka's `group-coordinator` module's
//! `common/message/*Key.json` and `*Value.json`, and the `clients` module's
//! `ConsumerProtocolSubscription` and `ConsumerProtocolAssignment`): every record type Kafka
//! 4.x writes, 0 to 15, every version.
//!
//! [`schemas`] gives the key and value schema of a record type (the key's leading int16). The
//! typed records the group coordinator reads and writes are in [`super::group`], decoded
//! through these tables.

use super::message::{Default, Field, Message, Struct, Ty, Versions};

const ALL: Versions = Versions::ALL;

const fn group_id(version: i16) -> Field {
    Field::new("groupId", Ty::Str, Versions::only(version))
}

const fn member_id(version: i16) -> Field {
    Field::new("memberId", Ty::Str, Versions::only(version))
}

pub static OFFSET_COMMIT_KEY: Message = Message {
    root: Struct {
        name: "OffsetCommitKey",
        versions: Versions::range(0, 1),
        fields: &[
            Field::new("group", Ty::Str, Versions::range(0, 1)),
            Field::new("topic", Ty::Str, Versions::range(0, 1)),
            Field::new("partition", Ty::Int32, Versions::range(0, 1)),
        ],
    },
    flexible: Versions::NONE,
};
pub static GROUP_METADATA_KEY: Message =
    Message::key("GroupMetadataKey", 2, &[Field::new("group", Ty::Str, Versions::only(2))]);
pub static CONSUMER_GROUP_METADATA_KEY: Message =
    Message::key("ConsumerGroupMetadataKey", 3, &[group_id(3)]);
pub static CONSUMER_GROUP_PARTITION_METADATA_KEY: Message =
    Message::key("ConsumerGroupPartitionMetadataKey", 4, &[group_id(4)]);
pub static CONSUMER_GROUP_MEMBER_METADATA_KEY: Message =
    Message::key("ConsumerGroupMemberMetadataKey", 5, &[group_id(5), member_id(5)]);
pub static CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    Message::key("ConsumerGroupTargetAssignmentMetadataKey", 6, &[group_id(6)]);
pub static CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    Message::key("ConsumerGroupTargetAssignmentMemberKey", 7, &[group_id(7), member_id(7)]);
pub static CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    Message::key("ConsumerGroupCurrentMemberAssignmentKey", 8, &[group_id(8), member_id(8)]);
pub static SHARE_GROUP_PARTITION_METADATA_KEY: Message =
    Message::key("ShareGroupPartitionMetadataKey", 9, &[group_id(9)]);
pub static SHARE_GROUP_MEMBER_METADATA_KEY: Message =
    Message::key("ShareGroupMemberMetadataKey", 10, &[group_id(10), member_id(10)]);
pub static SHARE_GROUP_METADATA_KEY: Message =
    Message::key("ShareGroupMetadataKey", 11, &[group_id(11)]);
pub static SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Message =
    Message::key("ShareGroupTargetAssignmentMetadataKey", 12, &[group_id(12)]);
pub static SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Message =
    Message::key("ShareGroupTargetAssignmentMemberKey", 13, &[group_id(13), member_id(13)]);
pub static SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Message =
    Message::key("ShareGroupCurrentMemberAssignmentKey", 14, &[group_id(14), member_id(14)]);
pub static SHARE_GROUP_STATE_PARTITION_METADATA_KEY: Message =
    Message::key("ShareGroupStatePartitionMetadataKey", 15, &[group_id(15)]);

pub static OFFSET_COMMIT_VALUE: Message = Message {
    root: Struct {
        name: "OffsetCommitValue",
        versions: Versions::range(0, 4),
        fields: &[
            Field::new("offset", Ty::Int64, ALL),
            Field::new("leaderEpoch", Ty::Int32, Versions::from(3)),
            Field::new("metadata", Ty::Str, ALL),
            Field::new("commitTimestamp", Ty::Int64, ALL),
            Field::new("expireTimestamp", Ty::Int64, Versions::only(1)),
        ],
    },
    flexible: Versions::from(4),
};

pub static MEMBER_METADATA: Struct = Struct {
    name: "MemberMetadata",
    versions: ALL,
    fields: &[
        Field::new("memberId", Ty::Str, ALL),
        Field::new("groupInstanceId", Ty::Str, Versions::from(3)).nullable(Versions::from(3)),
        Field::new("clientId", Ty::Str, ALL),
        Field::new("clientHost", Ty::Str, ALL),
        Field::new("rebalanceTimeout", Ty::Int32, Versions::from(1)),
        Field::new("sessionTimeout", Ty::Int32, ALL),
        Field::new("subscription", Ty::Bytes, ALL),
        Field::new("assignment", Ty::Bytes, ALL),
    ],
};

pub static GROUP_METADATA_VALUE: Message = Message {
    root: Struct {
        name: "GroupMetadataValue",
        versions: Versions::range(0, 4),
        fields: &[
            Field::new("protocolType", Ty::Str, ALL),
            Field::new("generation", Ty::Int32, ALL),
            Field::new("protocol", Ty::Str, ALL).nullable(ALL),
            Field::new("leader", Ty::Str, ALL).nullable(ALL),
            Field::new("currentStateTimestamp", Ty::Int64, Versions::from(2)),
            Field::new("members", Ty::Array(&Ty::Struct(&MEMBER_METADATA)), ALL),
        ],
    },
    flexible: Versions::from(4),
};

pub static PARTITION_METADATA: Struct = Struct {
    name: "PartitionMetadata",
    versions: ALL,
    fields: &[
        Field::new("partition", Ty::Int32, ALL),
        Field::new("racks", Ty::Array(&Ty::Str), ALL),
    ],
};

pub static TOPIC_METADATA: Struct = Struct {
    name: "TopicMetadata",
    versions: ALL,
    fields: &[
        Field::new("topicId", Ty::Uuid, ALL),
        Field::new("topicName", Ty::Str, ALL),
        Field::new("numPartitions", Ty::Int32, ALL),
        Field::new("partitionMetadata", Ty::Array(&Ty::Struct(&PARTITION_METADATA)), ALL),
    ],
};

pub static TOPIC_PARTITIONS: Struct = Struct {
    name: "TopicPartitions",
    versions: ALL,
    fields: &[
        Field::new("topicId", Ty::Uuid, ALL),
        Field::new("partitions", Ty::Array(&Ty::Int32), ALL),
    ],
};

pub static CLASSIC_PROTOCOL: Struct = Struct {
    name: "ClassicProtocol",
    versions: ALL,
    fields: &[Field::new("name", Ty::Str, ALL), Field::new("metadata", Ty::Bytes, ALL)],
};

pub static CLASSIC_MEMBER_METADATA: Struct = Struct {
    name: "ClassicMemberMetadata",
    versions: ALL,
    fields: &[
        Field::new("sessionTimeoutMs", Ty::Int32, ALL),
        Field::new("supportedProtocols", Ty::Array(&Ty::Struct(&CLASSIC_PROTOCOL)), ALL),
    ],
};

pub static CONSUMER_GROUP_METADATA_VALUE: Message =
    Message::flexible_v0("ConsumerGroupMetadataValue", &[Field::new("epoch", Ty::Int32, ALL)]);
pub static CONSUMER_GROUP_PARTITION_METADATA_VALUE: Message = Message::flexible_v0(
    "ConsumerGroupPartitionMetadataValue",
    &[Field::new("topics", Ty::Array(&Ty::Struct(&TOPIC_METADATA)), ALL)],
);
pub static CONSUMER_GROUP_MEMBER_METADATA_VALUE: Message = Message::flexible_v0(
    "ConsumerGroupMemberMetadataValue",
    &[
        Field::new("instanceId", Ty::Str, ALL).nullable(ALL),
        Field::new("rackId", Ty::Str, ALL).nullable(ALL),
        Field::new("clientId", Ty::Str, ALL),
        Field::new("clientHost", Ty::Str, ALL),
        Field::new("subscribedTopicNames", Ty::Array(&Ty::Str), ALL),
        Field::new("subscribedTopicRegex", Ty::Str, ALL).nullable(ALL),
        Field::new("rebalanceTimeoutMs", Ty::Int32, ALL),
        Field::new("serverAssignor", Ty::Str, ALL).nullable(ALL),
        Field::new("classicMemberMetadata", Ty::Struct(&CLASSIC_MEMBER_METADATA), ALL)
            .nullable(ALL)
            .tagged(0, ALL, Default::Null),
    ],
);
pub static CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message = Message::flexible_v0(
    "ConsumerGroupTargetAssignmentMetadataValue",
    &[Field::new("assignmentEpoch", Ty::Int32, ALL)],
);
pub static CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message = Message::flexible_v0(
    "ConsumerGroupTargetAssignmentMemberValue",
    &[Field::new("topicPartitions", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS)), ALL)],
);
pub static CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message::flexible_v0(
    "ConsumerGroupCurrentMemberAssignmentValue",
    &[
        Field::new("memberEpoch", Ty::Int32, ALL),
        Field::new("previousMemberEpoch", Ty::Int32, ALL),
        Field::new("state", Ty::Int8, ALL),
        Field::new("assignedPartitions", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS)), ALL),
        Field::new("partitionsPendingRevocation", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS)), ALL),
    ],
);
pub static SHARE_GROUP_PARTITION_METADATA_VALUE: Message = Message::flexible_v0(
    "ShareGroupPartitionMetadataValue",
    &[Field::new("topics", Ty::Array(&Ty::Struct(&TOPIC_METADATA)), ALL)],
);
pub static SHARE_GROUP_MEMBER_METADATA_VALUE: Message = Message::flexible_v0(
    "ShareGroupMemberMetadataValue",
    &[
        Field::new("rackId", Ty::Str, ALL).nullable(ALL),
        Field::new("clientId", Ty::Str, ALL),
        Field::new("clientHost", Ty::Str, ALL),
        Field::new("subscribedTopicNames", Ty::Array(&Ty::Str), ALL),
    ],
);
pub static SHARE_GROUP_METADATA_VALUE: Message =
    Message::flexible_v0("ShareGroupMetadataValue", &[Field::new("epoch", Ty::Int32, ALL)]);
pub static SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Message = Message::flexible_v0(
    "ShareGroupTargetAssignmentMetadataValue",
    &[Field::new("assignmentEpoch", Ty::Int32, ALL)],
);
pub static SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Message = Message::flexible_v0(
    "ShareGroupTargetAssignmentMemberValue",
    &[Field::new("topicPartitions", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS)), ALL)],
);
pub static SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Message = Message::flexible_v0(
    "ShareGroupCurrentMemberAssignmentValue",
    &[
        Field::new("memberEpoch", Ty::Int32, ALL),
        Field::new("previousMemberEpoch", Ty::Int32, ALL),
        Field::new("state", Ty::Int8, ALL),
        Field::new("assignedPartitions", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS)), ALL),
    ],
);

pub static TOPIC_PARTITIONS_INFO: Struct = Struct {
    name: "TopicPartitionsInfo",
    versions: ALL,
    fields: &[
        Field::new("topicId", Ty::Uuid, ALL),
        Field::new("topicName", Ty::Str, ALL),
        Field::new("partitions", Ty::Array(&Ty::Int32), ALL),
    ],
};

pub static TOPIC_INFO: Struct = Struct {
    name: "TopicInfo",
    versions: ALL,
    fields: &[Field::new("topicId", Ty::Uuid, ALL), Field::new("topicName", Ty::Str, ALL)],
};

pub static SHARE_GROUP_STATE_PARTITION_METADATA_VALUE: Message = Message::flexible_v0(
    "ShareGroupStatePartitionMetadataValue",
    &[
        Field::new("initializedTopics", Ty::Array(&Ty::Struct(&TOPIC_PARTITIONS_INFO)), ALL),
        Field::new("deletingTopics", Ty::Array(&Ty::Struct(&TOPIC_INFO)), ALL),
    ],
);

/// The key and value schemas of a `__consumer_offsets` record type (`None`: not one of Kafka's).
pub fn schemas(record_type: i16) -> Option<(&'static Message, &'static Message)> {
    Some(match record_type {
        0 | 1 => (&OFFSET_COMMIT_KEY, &OFFSET_COMMIT_VALUE),
        2 => (&GROUP_METADATA_KEY, &GROUP_METADATA_VALUE),
        3 => (&CONSUMER_GROUP_METADATA_KEY, &CONSUMER_GROUP_METADATA_VALUE),
        4 => (&CONSUMER_GROUP_PARTITION_METADATA_KEY, &CONSUMER_GROUP_PARTITION_METADATA_VALUE),
        5 => (&CONSUMER_GROUP_MEMBER_METADATA_KEY, &CONSUMER_GROUP_MEMBER_METADATA_VALUE),
        6 => (
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        7 => (
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
            &CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
        ),
        8 => (
            &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            &CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        9 => (&SHARE_GROUP_PARTITION_METADATA_KEY, &SHARE_GROUP_PARTITION_METADATA_VALUE),
        10 => (&SHARE_GROUP_MEMBER_METADATA_KEY, &SHARE_GROUP_MEMBER_METADATA_VALUE),
        11 => (&SHARE_GROUP_METADATA_KEY, &SHARE_GROUP_METADATA_VALUE),
        12 => (
            &SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
            &SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
        ),
        13 => {
            (&SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, &SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE)
        }
        14 => (
            &SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
            &SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
        ),
        15 => {
            (&SHARE_GROUP_STATE_PARTITION_METADATA_KEY, &SHARE_GROUP_STATE_PARTITION_METADATA_VALUE)
        }
        _ => return None,
    })
}

static CONSUMER_TOPIC_PARTITION: Struct = Struct {
    name: "TopicPartition",
    versions: ALL,
    fields: &[
        Field::new("topic", Ty::Str, ALL),
        Field::new("partitions", Ty::Array(&Ty::Int32), ALL),
    ],
};

static OWNED_TOPIC_PARTITION: Struct = Struct {
    name: "TopicPartition",
    versions: Versions::from(1),
    fields: &[
        Field::new("topic", Ty::Str, Versions::from(1)),
        Field::new("partitions", Ty::Array(&Ty::Int32), Versions::from(1)),
    ],
};

pub static CONSUMER_PROTOCOL_SUBSCRIPTION: Message = Message {
    root: Struct {
        name: "ConsumerProtocolSubscription",
        versions: Versions::range(0, 3),
        fields: &[
            Field::new("topics", Ty::Array(&Ty::Str), ALL),
            Field::new("userData", Ty::Bytes, ALL).nullable(ALL),
            Field::new(
                "ownedPartitions",
                Ty::Array(&Ty::Struct(&OWNED_TOPIC_PARTITION)),
                Versions::from(1),
            ),
            Field::new("generationId", Ty::Int32, Versions::from(2)),
            Field::new("rackId", Ty::Str, Versions::from(3)).nullable(Versions::from(3)),
        ],
    },
    flexible: Versions::NONE,
};

pub static CONSUMER_PROTOCOL_ASSIGNMENT: Message = Message {
    root: Struct {
        name: "ConsumerProtocolAssignment",
        versions: Versions::range(0, 3),
        fields: &[
            Field::new(
                "assignedPartitions",
                Ty::Array(&Ty::Struct(&CONSUMER_TOPIC_PARTITION)),
                ALL,
            ),
            Field::new("userData", Ty::Bytes, ALL).nullable(ALL),
        ],
    },
    flexible: Versions::NONE,
};
