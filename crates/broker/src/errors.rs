//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`) that the broker answers
//! with, and the mapping from storage errors to them.

use seglog_storage::Error;

pub(crate) const NONE: i16 = 0;
pub(crate) const UNKNOWN_SERVER_ERROR: i16 = -1;
pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub(crate) const LEADER_NOT_AVAILABLE: i16 = 5;
pub(crate) const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
pub(crate) const UNSUPPORTED_VERSION: i16 = 35;
pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
pub(crate) const INVALID_PARTITIONS: i16 = 37;
pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub(crate) const INVALID_CONFIG: i16 = 40;
pub(crate) const INVALID_REQUEST: i16 = 42;
pub(crate) const KAFKA_STORAGE_ERROR: i16 = 56;
pub(crate) const LOG_DIR_NOT_FOUND: i16 = 57;
pub(crate) const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
pub(crate) const FENCED_LEADER_EPOCH: i16 = 74;
pub(crate) const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub(crate) const UNKNOWN_TOPIC_ID: i16 = 100;
pub(crate) const MISMATCHED_ENDPOINT_TYPE: i16 = 114;
pub(crate) const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;
pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub(crate) const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub(crate) const ILLEGAL_GENERATION: i16 = 22;
pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub(crate) const INVALID_GROUP_ID: i16 = 24;
pub(crate) const UNKNOWN_MEMBER_ID: i16 = 25;
pub(crate) const INVALID_SESSION_TIMEOUT: i16 = 26;
pub(crate) const REBALANCE_IN_PROGRESS: i16 = 27;
pub(crate) const NON_EMPTY_GROUP: i16 = 68;
pub(crate) const GROUP_ID_NOT_FOUND: i16 = 69;
pub(crate) const MEMBER_ID_REQUIRED: i16 = 79;
pub(crate) const FENCED_INSTANCE_ID: i16 = 82;
pub(crate) const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub(crate) const FENCED_MEMBER_EPOCH: i16 = 110;
pub(crate) const UNSUPPORTED_ASSIGNOR: i16 = 112;
pub(crate) const STALE_MEMBER_EPOCH: i16 = 113;
pub(crate) const INVALID_REGULAR_EXPRESSION: i16 = 128;

/// The Kafka error code a storage error answers with.
pub(crate) fn code(error: &Error) -> i16 {
    match error {
        Error::UnknownTopicOrPartition { .. } => UNKNOWN_TOPIC_OR_PARTITION,
        Error::OffsetOutOfRange { .. } => OFFSET_OUT_OF_RANGE,
        Error::Validation(validation) => match validation.error_code() {
            -1 => UNKNOWN_SERVER_ERROR,
            code => code,
        },
        Error::TopicAlreadyExists { .. } => TOPIC_ALREADY_EXISTS,
        Error::InvalidArgument(_) => INVALID_REQUEST,
        Error::Io { .. }
        | Error::Offline { .. }
        | Error::Corrupt { .. }
        | Error::CorruptLog { .. }
        | Error::CorruptIndex { .. }
        | Error::Malformed { .. } => KAFKA_STORAGE_ERROR,
        Error::OffsetOverflow { .. } => UNKNOWN_SERVER_ERROR,
        Error::LogDirNotFound { .. } => LOG_DIR_NOT_FOUND,
    }
}

/// The leader-epoch check of Fetch, ListOffsets and OffsetForLeaderEpoch: a client's epoch
/// older than the partition's is fenced, a newer one is unknown; -1 means not given.
pub(crate) fn check_leader_epoch(requested: i32, current: i32) -> i16 {
    if requested < 0 || requested == current {
        NONE
    } else if requested < current {
        FENCED_LEADER_EPOCH
    } else {
        UNKNOWN_LEADER_EPOCH
    }
}
