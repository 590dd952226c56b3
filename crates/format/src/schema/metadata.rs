//! KRaft's metadata records (Kafka's `metadata` module's `common/metadata/*Record.json`), the
//! values of `__cluster_metadata` that are not control records, and their frame (Kafka's
//! `MetadataRecordSerde`, an `AbstractApiMessageSerde`): an unsigned varint frame version (1),
//! the record's api key and version as unsigned varints, then the record, flexible in every
//! version.
//!
//! [`schema`] gives the table of an api key; [`read_record`] reads a framed record with
//! Kafka's error texts, [`write_record`] frames one; [`type_name`] is Kafka's
//! `MetadataRecordType` constant (`REGISTER_BROKER_RECORD`), as `kafka-dump-log
//! --cluster-metadata-decoder` prints it.

use super::message::{self, Default, Field, Message, Reader, Struct, Ty, Value, Versions};

const ALL: Versions = Versions::ALL;
const INT32S: Ty = Ty::Array(&Ty::Int32);
const UUIDS: Ty = Ty::Array(&Ty::Uuid);

/// The frame version every metadata record is written with (`DEFAULT_FRAME_VERSION`).
pub const FRAME_VERSION: u32 = 1;

const fn record(name: &'static str, versions: Versions, fields: &'static [Field]) -> Message {
    Message { root: Struct { name, versions, fields }, flexible: ALL }
}

const fn tagged(
    name: &'static str,
    ty: Ty,
    versions: Versions,
    tag: u32,
    default: Default,
) -> Field {
    Field::new(name, ty, versions).tagged(tag, versions, default)
}

const fn nullable_tagged(name: &'static str, ty: Ty, versions: Versions, tag: u32) -> Field {
    Field::new(name, ty, versions).nullable(versions).tagged(tag, versions, Default::Null)
}

static ENDPOINT: Struct = Struct {
    name: "BrokerEndpoint",
    versions: ALL,
    fields: &[
        Field::new("name", Ty::Str, ALL),
        Field::new("host", Ty::Str, ALL),
        Field::new("port", Ty::Uint16, ALL),
        Field::new("securityProtocol", Ty::Int16, ALL),
    ],
};

static FEATURE: Struct = Struct {
    name: "BrokerFeature",
    versions: ALL,
    fields: &[
        Field::new("name", Ty::Str, ALL),
        Field::new("minSupportedVersion", Ty::Int16, ALL),
        Field::new("maxSupportedVersion", Ty::Int16, ALL),
    ],
};

static CONTROLLER_ENDPOINT: Struct =
    Struct { name: "ControllerEndpoint", versions: ALL, fields: ENDPOINT.fields };
static CONTROLLER_FEATURE: Struct =
    Struct { name: "ControllerFeature", versions: ALL, fields: FEATURE.fields };

static ENTITY_DATA: Struct = Struct {
    name: "EntityData",
    versions: ALL,
    fields: &[
        Field::new("entityType", Ty::Str, ALL),
        Field::new("entityName", Ty::Str, ALL).nullable(ALL),
    ],
};

pub static REGISTER_BROKER_RECORD: Message = record(
    "RegisterBrokerRecord",
    Versions::range(0, 3),
    &[
        Field::new("brokerId", Ty::Int32, ALL),
        Field::new("isMigratingZkBroker", Ty::Bool, Versions::from(2)),
        Field::new("incarnationId", Ty::Uuid, ALL),
        Field::new("brokerEpoch", Ty::Int64, ALL),
        Field::new("endPoints", Ty::Array(&Ty::Struct(&ENDPOINT)), ALL),
        Field::new("features", Ty::Array(&Ty::Struct(&FEATURE)), ALL),
        Field::new("rack", Ty::Str, ALL).nullable(ALL),
        Field::new("fenced", Ty::Bool, ALL),
        Field::new("inControlledShutdown", Ty::Bool, Versions::from(1)),
        tagged("logDirs", UUIDS, Versions::from(3), 0, Default::Empty),
    ],
);
pub static UNREGISTER_BROKER_RECORD: Message = record(
    "UnregisterBrokerRecord",
    Versions::only(0),
    &[Field::new("brokerId", Ty::Int32, ALL), Field::new("brokerEpoch", Ty::Int64, ALL)],
);
pub static TOPIC_RECORD: Message = record(
    "TopicRecord",
    Versions::only(0),
    &[Field::new("name", Ty::Str, ALL), Field::new("topicId", Ty::Uuid, ALL)],
);
pub static PARTITION_RECORD: Message = record(
    "PartitionRecord",
    Versions::range(0, 2),
    &[
        Field::new("partitionId", Ty::Int32, ALL),
        Field::new("topicId", Ty::Uuid, ALL),
        Field::new("replicas", INT32S, ALL),
        Field::new("isr", INT32S, ALL),
        Field::new("removingReplicas", INT32S, ALL),
        Field::new("addingReplicas", INT32S, ALL),
        Field::new("leader", Ty::Int32, ALL),
        tagged("leaderRecoveryState", Ty::Int8, ALL, 0, Default::Int(0)),
        Field::new("leaderEpoch", Ty::Int32, ALL),
        Field::new("partitionEpoch", Ty::Int32, ALL),
        Field::new("directories", UUIDS, Versions::from(1)),
        nullable_tagged("eligibleLeaderReplicas", INT32S, Versions::from(2), 1),
        nullable_tagged("lastKnownElr", INT32S, Versions::from(2), 2),
    ],
);
pub static CONFIG_RECORD: Message = record(
    "ConfigRecord",
    Versions::only(0),
    &[
        Field::new("resourceType", Ty::Int8, ALL),
        Field::new("resourceName", Ty::Str, ALL),
        Field::new("name", Ty::Str, ALL),
        Field::new("value", Ty::Str, ALL).nullable(ALL),
    ],
);
pub static PARTITION_CHANGE_RECORD: Message = record(
    "PartitionChangeRecord",
    Versions::range(0, 2),
    &[
        Field::new("partitionId", Ty::Int32, ALL),
        Field::new("topicId", Ty::Uuid, ALL),
        nullable_tagged("isr", INT32S, ALL, 0),
        tagged("leader", Ty::Int32, ALL, 1, Default::Int(-2)),
        nullable_tagged("replicas", INT32S, ALL, 2),
        nullable_tagged("removingReplicas", INT32S, ALL, 3),
        nullable_tagged("addingReplicas", INT32S, ALL, 4),
        tagged("leaderRecoveryState", Ty::Int8, ALL, 5, Default::Int(-1)),
        nullable_tagged("directories", UUIDS, Versions::from(1), 8),
        nullable_tagged("eligibleLeaderReplicas", INT32S, Versions::from(2), 6),
        nullable_tagged("lastKnownElr", INT32S, Versions::from(2), 7),
    ],
);
pub static ACCESS_CONTROL_ENTRY_RECORD: Message = record(
    "AccessControlEntryRecord",
    Versions::only(0),
    &[
        Field::new("id", Ty::Uuid, ALL),
        Field::new("resourceType", Ty::Int8, ALL),
        Field::new("resourceName", Ty::Str, ALL),
        Field::new("patternType", Ty::Int8, ALL),
        Field::new("principal", Ty::Str, ALL),
        Field::new("host", Ty::Str, ALL),
        Field::new("operation", Ty::Int8, ALL),
        Field::new("permissionType", Ty::Int8, ALL),
    ],
);
pub static REMOVE_ACCESS_CONTROL_ENTRY_RECORD: Message =
    record("RemoveAccessControlEntryRecord", Versions::only(0), &[Field::new("id", Ty::Uuid, ALL)]);
const BROKER_ID_AND_EPOCH: &[Field] =
    &[Field::new("id", Ty::Int32, ALL), Field::new("epoch", Ty::Int64, ALL)];
pub static FENCE_BROKER_RECORD: Message =
    record("FenceBrokerRecord", Versions::only(0), BROKER_ID_AND_EPOCH);
pub static UNFENCE_BROKER_RECORD: Message =
    record("UnfenceBrokerRecord", Versions::only(0), BROKER_ID_AND_EPOCH);
pub static REMOVE_TOPIC_RECORD: Message =
    record("RemoveTopicRecord", Versions::only(0), &[Field::new("topicId", Ty::Uuid, ALL)]);
pub static DELEGATION_TOKEN_RECORD: Message = record(
    "DelegationTokenRecord",
    Versions::only(0),
    &[
        Field::new("owner", Ty::Str, ALL),
        Field::new("requester", Ty::Str, ALL),
        Field::new("renewers", Ty::Array(&Ty::Str), ALL),
        Field::new("issueTimestamp", Ty::Int64, ALL),
        Field::new("maxTimestamp", Ty::Int64, ALL),
        Field::new("expirationTimestamp", Ty::Int64, ALL),
        Field::new("tokenId", Ty::Str, ALL),
    ],
);
pub static USER_SCRAM_CREDENTIAL_RECORD: Message = record(
    "UserScramCredentialRecord",
    Versions::only(0),
    &[
        Field::new("name", Ty::Str, ALL),
        Field::new("mechanism", Ty::Int8, ALL),
        Field::new("salt", Ty::Bytes, ALL),
        Field::new("storedKey", Ty::Bytes, ALL),
        Field::new("serverKey", Ty::Bytes, ALL),
        Field::new("iterations", Ty::Int32, ALL),
    ],
);
pub static FEATURE_LEVEL_RECORD: Message = record(
    "FeatureLevelRecord",
    Versions::only(0),
    &[Field::new("name", Ty::Str, ALL), Field::new("featureLevel", Ty::Int16, ALL)],
);
pub static CLIENT_QUOTA_RECORD: Message = record(
    "ClientQuotaRecord",
    Versions::only(0),
    &[
        Field::new("entity", Ty::Array(&Ty::Struct(&ENTITY_DATA)), ALL),
        Field::new("key", Ty::Str, ALL),
        Field::new("value", Ty::Float64, ALL),
        Field::new("remove", Ty::Bool, ALL),
    ],
);
pub static PRODUCER_IDS_RECORD: Message = record(
    "ProducerIdsRecord",
    Versions::only(0),
    &[
        Field::new("brokerId", Ty::Int32, ALL),
        Field::new("brokerEpoch", Ty::Int64, ALL),
        Field::new("nextProducerId", Ty::Int64, ALL),
    ],
);
pub static BROKER_REGISTRATION_CHANGE_RECORD: Message = record(
    "BrokerRegistrationChangeRecord",
    Versions::range(0, 2),
    &[
        Field::new("brokerId", Ty::Int32, ALL),
        Field::new("brokerEpoch", Ty::Int64, ALL),
        tagged("fenced", Ty::Int8, ALL, 0, Default::Int(0)),
        tagged("inControlledShutdown", Ty::Int8, Versions::from(1), 1, Default::Int(0)),
        tagged("logDirs", UUIDS, Versions::from(2), 2, Default::Empty),
    ],
);
pub static NO_OP_RECORD: Message = record("NoOpRecord", Versions::only(0), &[]);
pub static ZK_MIGRATION_STATE_RECORD: Message = record(
    "ZkMigrationStateRecord",
    Versions::only(0),
    &[Field::new("zkMigrationState", Ty::Int8, ALL)],
);
pub static REMOVE_USER_SCRAM_CREDENTIAL_RECORD: Message = record(
    "RemoveUserScramCredentialRecord",
    Versions::only(0),
    &[Field::new("name", Ty::Str, ALL), Field::new("mechanism", Ty::Int8, ALL)],
);
pub static BEGIN_TRANSACTION_RECORD: Message = record(
    "BeginTransactionRecord",
    Versions::only(0),
    &[nullable_tagged("name", Ty::Str, ALL, 0)],
);
pub static END_TRANSACTION_RECORD: Message = record("EndTransactionRecord", Versions::only(0), &[]);
pub static ABORT_TRANSACTION_RECORD: Message = record(
    "AbortTransactionRecord",
    Versions::only(0),
    &[nullable_tagged("reason", Ty::Str, ALL, 0)],
);
pub static REMOVE_DELEGATION_TOKEN_RECORD: Message = record(
    "RemoveDelegationTokenRecord",
    Versions::only(0),
    &[Field::new("tokenId", Ty::Str, ALL)],
);
pub static REGISTER_CONTROLLER_RECORD: Message = record(
    "RegisterControllerRecord",
    Versions::only(0),
    &[
        Field::new("controllerId", Ty::Int32, ALL),
        Field::new("incarnationId", Ty::Uuid, ALL),
        Field::new("zkMigrationReady", Ty::Bool, ALL),
        Field::new("endPoints", Ty::Array(&Ty::Struct(&CONTROLLER_ENDPOINT)), ALL),
        Field::new("features", Ty::Array(&Ty::Struct(&CONTROLLER_FEATURE)), ALL),
    ],
);

/// The api keys of the metadata records (Kafka's `MetadataRecordType` ids).
pub mod api_key {
    pub const REGISTER_BROKER: i16 = 0;
    pub const UNREGISTER_BROKER: i16 = 1;
    pub const TOPIC: i16 = 2;
    pub const PARTITION: i16 = 3;
    pub const CONFIG: i16 = 4;
    pub const PARTITION_CHANGE: i16 = 5;
    pub const FENCE_BROKER: i16 = 7;
    pub const UNFENCE_BROKER: i16 = 8;
    pub const REMOVE_TOPIC: i16 = 9;
    pub const USER_SCRAM_CREDENTIAL: i16 = 11;
    pub const FEATURE_LEVEL: i16 = 12;
    pub const CLIENT_QUOTA: i16 = 14;
    pub const PRODUCER_IDS: i16 = 15;
    pub const BROKER_REGISTRATION_CHANGE: i16 = 17;
    pub const ACCESS_CONTROL_ENTRY: i16 = 18;
    pub const REMOVE_ACCESS_CONTROL_ENTRY: i16 = 19;
    pub const NO_OP: i16 = 20;
    pub const REMOVE_USER_SCRAM_CREDENTIAL: i16 = 22;
    pub const REGISTER_CONTROLLER: i16 = 27;
}

/// The schema of a metadata record's api key.
pub fn schema(api_key: i16) -> Option<&'static Message> {
    Some(match api_key {
        0 => &REGISTER_BROKER_RECORD,
        1 => &UNREGISTER_BROKER_RECORD,
        2 => &TOPIC_RECORD,
        3 => &PARTITION_RECORD,
        4 => &CONFIG_RECORD,
        5 => &PARTITION_CHANGE_RECORD,
        7 => &FENCE_BROKER_RECORD,
        8 => &UNFENCE_BROKER_RECORD,
        9 => &REMOVE_TOPIC_RECORD,
        10 => &DELEGATION_TOKEN_RECORD,
        11 => &USER_SCRAM_CREDENTIAL_RECORD,
        12 => &FEATURE_LEVEL_RECORD,
        14 => &CLIENT_QUOTA_RECORD,
        15 => &PRODUCER_IDS_RECORD,
        17 => &BROKER_REGISTRATION_CHANGE_RECORD,
        18 => &ACCESS_CONTROL_ENTRY_RECORD,
        19 => &REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
        20 => &NO_OP_RECORD,
        21 => &ZK_MIGRATION_STATE_RECORD,
        22 => &REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
        23 => &BEGIN_TRANSACTION_RECORD,
        24 => &END_TRANSACTION_RECORD,
        25 => &ABORT_TRANSACTION_RECORD,
        26 => &REMOVE_DELEGATION_TOKEN_RECORD,
        27 => &REGISTER_CONTROLLER_RECORD,
        _ => return None,
    })
}

/// Kafka's `MetadataRecordType` constant of a record name: `MessageGenerator.toSnakeCase`,
/// upper case (`RegisterBrokerRecord` is `REGISTER_BROKER_RECORD`).
pub fn type_name(message: &Message) -> String {
    let mut out = String::new();
    let mut previous_upper = true;
    for ch in message.root.name.chars() {
        if ch.is_ascii_uppercase() {
            if !previous_upper {
                out.push('_');
            }
            previous_upper = true;
        } else {
            previous_upper = false;
        }
        out.push(ch.to_ascii_uppercase());
    }
    out
}

/// A metadata record as read from its frame.
#[derive(Debug, Clone)]
pub struct MetadataRecord {
    pub api_key: i16,
    pub version: i16,
    pub schema: &'static Message,
    /// The record's fields, tagged ones left out where they hold their default.
    pub data: Value,
}

/// Why a metadata record's frame or body did not read: Kafka's `MetadataParseException` texts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MetadataParseError(String);

fn unsigned_to_short(reader: &mut Reader<'_>, entity: &str) -> Result<i16, MetadataParseError> {
    let value = reader
        .unsigned_varint()
        .map_err(|_| MetadataParseError(format!("Error while reading {entity}")))?;
    i16::try_from(value)
        .map_err(|_| MetadataParseError(format!("Value for {entity} was too large.")))
}

/// Reads a framed metadata record (Kafka's `AbstractApiMessageSerde.read`), every byte of
/// `bytes`.
pub fn read_record(bytes: &[u8]) -> Result<MetadataRecord, MetadataParseError> {
    let mut reader = Reader::new(bytes);
    let frame_version = unsigned_to_short(&mut reader, "frame version")?;
    if frame_version == 0 {
        return Err(MetadataParseError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades \
             from the preview release of KRaft in 2.8 to newer versions are not supported."
                .to_owned(),
        ));
    }
    if i64::from(frame_version) != i64::from(FRAME_VERSION) {
        return Err(MetadataParseError(format!(
            "Could not deserialize metadata record due to unknown frame version \
             {frame_version}(only frame version {FRAME_VERSION} is supported)"
        )));
    }
    let api_key = unsigned_to_short(&mut reader, "type")?;
    let version = unsigned_to_short(&mut reader, "version")?;
    let schema = schema(api_key).ok_or_else(|| {
        MetadataParseError(format!(
            "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id \
             {api_key}"
        ))
    })?;
    // Kafka's exception wraps the reader's, and the dump prints only its own message.
    let data = message::read(schema, &mut reader, version).map_err(|_| {
        MetadataParseError(format!("Failed to deserialize record with type {api_key}"))
    })?;
    if reader.remaining() > 0 {
        return Err(MetadataParseError(format!(
            "Found {} byte(s) of garbage after {api_key}",
            reader.remaining()
        )));
    }
    Ok(MetadataRecord { api_key, version, schema, data })
}

/// Frames a metadata record (Kafka's `AbstractApiMessageSerde.write`): `data` holds its fields
/// by their JSON names.
pub fn write_record(api_key: i16, version: i16, data: &Value) -> Option<Vec<u8>> {
    let schema = schema(api_key)?;
    let mut out = Vec::with_capacity(64);
    out.push(FRAME_VERSION as u8);
    write_small(api_key, &mut out);
    write_small(version, &mut out);
    message::write(schema, version, data, &mut out);
    Some(out)
}

fn write_small(value: i16, out: &mut Vec<u8>) {
    let mut value = value as u16;
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// `kafka-dump-log --cluster-metadata-decoder`'s payload for a record value (Kafka's
/// `ClusterMetadataLogMessageParser`): `{"type":..,"version":..,"data":{..}}`, or `Error at
/// <offset>, skipping. <why>`.
pub fn dump_payload(value: Option<&[u8]>, offset: i64) -> String {
    match read_record(value.unwrap_or_default()) {
        Ok(record) => {
            let mut json = String::from("{\"type\":\"");
            json.push_str(&type_name(record.schema));
            json.push_str("\",\"version\":");
            json.push_str(&record.version.to_string());
            json.push_str(",\"data\":");
            message::write_json(&record.data, &mut json);
            json.push('}');
            json
        }
        Err(error) => format!("Error at {offset}, skipping. {error}"),
    }
}
