//! The metadata records the controller writes and every node replays, typed (Kafka's
//! `ApiMessageAndVersion` of `common/metadata`), over `seglog_format::schema::metadata`'s
//! tables: [`MetadataRecord::encode`] gives Kafka's bytes, [`MetadataRecord::decode`] reads
//! Kafka's (a record kind the image does not use is kept as [`MetadataRecord::Other`]).

use seglog_format::schema::message::Value;
use seglog_format::schema::metadata::{self, MetadataParseError, api_key};

/// `PartitionChangeRecord.leader` when the leader does not change (`NO_LEADER_CHANGE`).
pub const NO_LEADER_CHANGE: i32 = -2;
/// A partition without a leader (`NO_LEADER`).
pub const NO_LEADER: i32 = -1;

/// The `metadata.version` seglog's controller writes (`3.6-IV2`): the record versions below.
pub const METADATA_VERSION_LEVEL: i16 = 14;

/// A broker listener as registered (`BrokerEndpoint`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    /// Kafka's `SecurityProtocol` id (0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL).
    pub security_protocol: i16,
}

/// `RegisterBrokerRecord`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterBroker {
    pub broker_id: i32,
    pub incarnation_id: [u8; 16],
    /// The offset of this record in the metadata log (Kafka's broker epoch).
    pub broker_epoch: i64,
    pub endpoints: Vec<Endpoint>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
}

/// `PartitionRecord`: a partition as created (or as a snapshot holds it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRecord {
    pub topic_id: [u8; 16],
    pub partition_id: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// KIP-966's eligible leader replicas (written as version 2 when not empty).
    pub elr: Vec<i32>,
    /// KIP-966's last known leader, when the ISR became empty.
    pub last_known_elr: Vec<i32>,
    /// A reassignment under way (KIP-455): the replicas being added and removed.
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
}

/// `PartitionChangeRecord`: what changes of a partition; `None` keeps the current value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionChange {
    pub topic_id: [u8; 16],
    pub partition_id: i32,
    pub isr: Option<Vec<i32>>,
    /// The new leader, or [`NO_LEADER_CHANGE`]; a change bumps the leader epoch.
    pub leader: i32,
    pub replicas: Option<Vec<i32>>,
    /// KIP-966's eligible leader replicas (version 2 when set).
    pub elr: Option<Vec<i32>>,
    /// KIP-966's last known leader (version 2 when set).
    pub last_known_elr: Option<Vec<i32>>,
    /// A reassignment's replicas being added and removed (tags 3 and 4, every version).
    pub adding_replicas: Option<Vec<i32>>,
    pub removing_replicas: Option<Vec<i32>>,
}

impl PartitionChange {
    /// A change of nothing yet: no ISR, leader, replicas or ELR change.
    pub fn new(topic_id: [u8; 16], partition_id: i32) -> Self {
        Self {
            topic_id,
            partition_id,
            isr: None,
            leader: NO_LEADER_CHANGE,
            replicas: None,
            elr: None,
            last_known_elr: None,
            adding_replicas: None,
            removing_replicas: None,
        }
    }
}

/// `BrokerRegistrationChangeRecord`'s tri-states: 1 sets, -1 clears, 0 keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistrationChange {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub fenced: i8,
    pub in_controlled_shutdown: i8,
}

/// `AccessControlEntryRecord`: one ACL, by id (the enums as Kafka's codes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct AclEntry {
    pub id: [u8; 16],
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl AclEntry {
    /// Whether both name the same ACL, whatever their ids.
    pub fn same_acl(&self, other: &Self) -> bool {
        Self { id: other.id, ..self.clone() } == *other
    }
}

/// `UserScramCredentialRecord`: a user's credential for one mechanism (Kafka's
/// `ScramMechanism.type()`: 1 SHA-256, 2 SHA-512).
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ScramCredentialEntry {
    pub name: String,
    pub mechanism: i8,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

impl std::fmt::Debug for ScramCredentialEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredentialEntry")
            .field("name", &self.name)
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// `ClientQuotaRecord`: one quota of an entity (its `(type, name)` components), set or
/// removed. The value is kept as its IEEE 754 bits, so records compare as Java's `equals`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientQuotaEntry {
    pub entity: Vec<(String, Option<String>)>,
    pub key: String,
    pub value_bits: u64,
    pub remove: bool,
}

/// One metadata record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetadataRecord {
    RegisterBroker(RegisterBroker),
    UnregisterBroker {
        broker_id: i32,
        broker_epoch: i64,
    },
    Topic {
        name: String,
        topic_id: [u8; 16],
    },
    Partition(PartitionRecord),
    PartitionChange(PartitionChange),
    /// `ConfigRecord`: `value` `None` deletes the key.
    Config {
        resource_type: i8,
        resource_name: String,
        name: String,
        value: Option<String>,
    },
    RemoveTopic {
        topic_id: [u8; 16],
    },
    FeatureLevel {
        name: String,
        level: i16,
    },
    BrokerRegistrationChange(BrokerRegistrationChange),
    /// `FenceBrokerRecord` and `UnfenceBrokerRecord` (before `BrokerRegistrationChange`).
    FenceBroker {
        broker_id: i32,
        broker_epoch: i64,
        fenced: bool,
    },
    ProducerIds {
        broker_id: i32,
        broker_epoch: i64,
        next_producer_id: i64,
    },
    NoOp,
    AccessControlEntry(AclEntry),
    RemoveAccessControlEntry {
        id: [u8; 16],
    },
    UserScramCredential(ScramCredentialEntry),
    RemoveUserScramCredential {
        name: String,
        mechanism: i8,
    },
    ClientQuota(ClientQuotaEntry),
    /// A record the image does not interpret (delegation tokens, migration, KRaft's own).
    Other {
        api_key: i16,
        version: i16,
    },
}

/// `ConfigResource.Type` ids of `ConfigRecord.resourceType`.
pub const CONFIG_RESOURCE_TOPIC: i8 = 2;
pub const CONFIG_RESOURCE_BROKER: i8 = 4;

fn int(value: &Value, name: &str) -> i64 {
    value.get(name).and_then(Value::as_int).unwrap_or(0)
}

fn narrow<T: TryFrom<i64> + Default>(value: &Value, name: &str) -> T {
    T::try_from(int(value, name)).unwrap_or_default()
}

fn text(value: &Value, name: &str) -> Option<String> {
    value.get(name).and_then(Value::as_str).map(str::to_owned)
}

fn uuid(value: &Value, name: &str) -> [u8; 16] {
    match value.get(name) {
        Some(Value::Uuid(bytes)) => *bytes,
        _ => [0; 16],
    }
}

fn bytes(value: &Value, name: &str) -> Vec<u8> {
    match value.get(name) {
        Some(Value::Bytes(bytes)) => bytes.clone(),
        _ => Vec::new(),
    }
}

fn int32s(value: &Value, name: &str) -> Option<Vec<i32>> {
    let items = value.get(name)?.as_array()?;
    Some(
        items
            .iter()
            .map(|item| item.as_int().and_then(|n| i32::try_from(n).ok()).unwrap_or(-1))
            .collect(),
    )
}

fn int32s_value(items: &[i32]) -> Value {
    Value::Array(items.iter().map(|n| Value::Int(i64::from(*n))).collect())
}

fn flag(value: &Value, name: &str) -> bool {
    value.get(name) == Some(&Value::Bool(true))
}

fn opt_str(text: Option<&String>) -> Value {
    text.map_or(Value::Null, |text| Value::Str(text.clone()))
}

/// A `PartitionRecord`'s version and fields: version 0's bytes unless an ELR field holds
/// something (Kafka's `PartitionRegistration.toRecord`: the tags only when not empty); version
/// 2 carries `directories`, empty (Kafka reads it as unassigned, "migrating").
fn partition_value(p: &PartitionRecord) -> (i16, Value) {
    let mut fields = vec![
        ("partitionId", Value::Int(i64::from(p.partition_id))),
        ("topicId", Value::Uuid(p.topic_id)),
        ("replicas", int32s_value(&p.replicas)),
        ("isr", int32s_value(&p.isr)),
        ("removingReplicas", int32s_value(&p.removing_replicas)),
        ("addingReplicas", int32s_value(&p.adding_replicas)),
        ("leader", Value::Int(i64::from(p.leader))),
        ("leaderEpoch", Value::Int(i64::from(p.leader_epoch))),
        ("partitionEpoch", Value::Int(i64::from(p.partition_epoch))),
    ];
    if p.elr.is_empty() && p.last_known_elr.is_empty() {
        return (0, Value::Object(fields));
    }
    fields.push(("directories", Value::Array(Vec::new())));
    if !p.elr.is_empty() {
        fields.push(("eligibleLeaderReplicas", int32s_value(&p.elr)));
    }
    if !p.last_known_elr.is_empty() {
        fields.push(("lastKnownElr", int32s_value(&p.last_known_elr)));
    }
    (2, Value::Object(fields))
}

/// A `PartitionChangeRecord`'s version and fields. Versions 1 and 2 add tagged fields only:
/// version 0's bytes, plus the ELR's tags (version 2) when set.
fn partition_change_value(c: &PartitionChange) -> (i16, Value) {
    let mut fields = vec![
        ("partitionId", Value::Int(i64::from(c.partition_id))),
        ("topicId", Value::Uuid(c.topic_id)),
        ("leader", Value::Int(i64::from(c.leader))),
    ];
    if let Some(isr) = &c.isr {
        fields.push(("isr", int32s_value(isr)));
    }
    if let Some(replicas) = &c.replicas {
        fields.push(("replicas", int32s_value(replicas)));
    }
    if let Some(removing) = &c.removing_replicas {
        fields.push(("removingReplicas", int32s_value(removing)));
    }
    if let Some(adding) = &c.adding_replicas {
        fields.push(("addingReplicas", int32s_value(adding)));
    }
    let mut version = 0;
    if let Some(elr) = &c.elr {
        fields.push(("eligibleLeaderReplicas", int32s_value(elr)));
        version = 2;
    }
    if let Some(last_known_elr) = &c.last_known_elr {
        fields.push(("lastKnownElr", int32s_value(last_known_elr)));
        version = 2;
    }
    (version, Value::Object(fields))
}

impl MetadataRecord {
    /// Kafka's framed bytes of this record, at the versions of [`METADATA_VERSION_LEVEL`].
    pub fn encode(&self) -> Vec<u8> {
        let (key, version, data) = self.to_value();
        metadata::write_record(key, version, &data).unwrap_or_default()
    }

    /// Reads a framed record.
    pub fn decode(bytes: &[u8]) -> Result<Self, MetadataParseError> {
        let record = metadata::read_record(bytes)?;
        Ok(Self::from_value(record.api_key, record.version, &record.data))
    }

    fn to_value(&self) -> (i16, i16, Value) {
        let object = |fields: Vec<(&'static str, Value)>| Value::Object(fields);
        match self {
            Self::RegisterBroker(r) => (api_key::REGISTER_BROKER, 2, register_broker_value(r)),
            Self::UnregisterBroker { broker_id, broker_epoch } => (
                api_key::UNREGISTER_BROKER,
                0,
                object(vec![
                    ("brokerId", Value::Int(i64::from(*broker_id))),
                    ("brokerEpoch", Value::Int(*broker_epoch)),
                ]),
            ),
            Self::Topic { name, topic_id } => (
                api_key::TOPIC,
                0,
                object(vec![
                    ("name", Value::Str(name.clone())),
                    ("topicId", Value::Uuid(*topic_id)),
                ]),
            ),
            Self::Partition(p) => {
                let (version, value) = partition_value(p);
                (api_key::PARTITION, version, value)
            }
            Self::PartitionChange(c) => {
                let (version, value) = partition_change_value(c);
                (api_key::PARTITION_CHANGE, version, value)
            }
            Self::Config { resource_type, resource_name, name, value } => (
                api_key::CONFIG,
                0,
                object(vec![
                    ("resourceType", Value::Int(i64::from(*resource_type))),
                    ("resourceName", Value::Str(resource_name.clone())),
                    ("name", Value::Str(name.clone())),
                    ("value", opt_str(value.as_ref())),
                ]),
            ),
            Self::RemoveTopic { topic_id } => {
                (api_key::REMOVE_TOPIC, 0, object(vec![("topicId", Value::Uuid(*topic_id))]))
            }
            Self::FeatureLevel { name, level } => (
                api_key::FEATURE_LEVEL,
                0,
                object(vec![
                    ("name", Value::Str(name.clone())),
                    ("featureLevel", Value::Int(i64::from(*level))),
                ]),
            ),
            Self::BrokerRegistrationChange(c) => (
                api_key::BROKER_REGISTRATION_CHANGE,
                1,
                object(vec![
                    ("brokerId", Value::Int(i64::from(c.broker_id))),
                    ("brokerEpoch", Value::Int(c.broker_epoch)),
                    ("fenced", Value::Int(i64::from(c.fenced))),
                    ("inControlledShutdown", Value::Int(i64::from(c.in_controlled_shutdown))),
                ]),
            ),
            Self::FenceBroker { broker_id, broker_epoch, fenced } => (
                if *fenced { api_key::FENCE_BROKER } else { api_key::UNFENCE_BROKER },
                0,
                object(vec![
                    ("id", Value::Int(i64::from(*broker_id))),
                    ("epoch", Value::Int(*broker_epoch)),
                ]),
            ),
            Self::ProducerIds { broker_id, broker_epoch, next_producer_id } => {
                producer_ids_value(*broker_id, *broker_epoch, *next_producer_id)
            }
            Self::NoOp => (api_key::NO_OP, 0, object(Vec::new())),
            Self::AccessControlEntry(_)
            | Self::RemoveAccessControlEntry { .. }
            | Self::UserScramCredential(_)
            | Self::RemoveUserScramCredential { .. }
            | Self::ClientQuota(_) => security_value(self),
            Self::Other { api_key, version } => (*api_key, *version, object(Vec::new())),
        }
    }

    fn from_value(key: i16, version: i16, v: &Value) -> Self {
        match key {
            api_key::REGISTER_BROKER => {
                let endpoints = v
                    .get("endPoints")
                    .and_then(Value::as_array)
                    .unwrap_or_default()
                    .iter()
                    .map(|e| Endpoint {
                        name: text(e, "name").unwrap_or_default(),
                        host: text(e, "host").unwrap_or_default(),
                        port: narrow(e, "port"),
                        security_protocol: narrow(e, "securityProtocol"),
                    })
                    .collect();
                Self::RegisterBroker(RegisterBroker {
                    broker_id: narrow(v, "brokerId"),
                    incarnation_id: uuid(v, "incarnationId"),
                    broker_epoch: int(v, "brokerEpoch"),
                    endpoints,
                    rack: text(v, "rack"),
                    fenced: flag(v, "fenced"),
                    in_controlled_shutdown: flag(v, "inControlledShutdown"),
                })
            }
            api_key::UNREGISTER_BROKER => Self::UnregisterBroker {
                broker_id: narrow(v, "brokerId"),
                broker_epoch: int(v, "brokerEpoch"),
            },
            api_key::TOPIC => Self::Topic {
                name: text(v, "name").unwrap_or_default(),
                topic_id: uuid(v, "topicId"),
            },
            api_key::PARTITION => Self::Partition(PartitionRecord {
                topic_id: uuid(v, "topicId"),
                partition_id: narrow(v, "partitionId"),
                replicas: int32s(v, "replicas").unwrap_or_default(),
                isr: int32s(v, "isr").unwrap_or_default(),
                leader: narrow(v, "leader"),
                leader_epoch: narrow(v, "leaderEpoch"),
                partition_epoch: narrow(v, "partitionEpoch"),
                elr: int32s(v, "eligibleLeaderReplicas").unwrap_or_default(),
                last_known_elr: int32s(v, "lastKnownElr").unwrap_or_default(),
                adding_replicas: int32s(v, "addingReplicas").unwrap_or_default(),
                removing_replicas: int32s(v, "removingReplicas").unwrap_or_default(),
            }),
            api_key::PARTITION_CHANGE => Self::PartitionChange(PartitionChange {
                topic_id: uuid(v, "topicId"),
                partition_id: narrow(v, "partitionId"),
                isr: int32s(v, "isr"),
                // Left out of the bytes when it holds its default, NO_LEADER_CHANGE.
                leader: v
                    .get("leader")
                    .and_then(Value::as_int)
                    .and_then(|n| i32::try_from(n).ok())
                    .unwrap_or(NO_LEADER_CHANGE),
                replicas: int32s(v, "replicas"),
                elr: int32s(v, "eligibleLeaderReplicas"),
                last_known_elr: int32s(v, "lastKnownElr"),
                adding_replicas: int32s(v, "addingReplicas"),
                removing_replicas: int32s(v, "removingReplicas"),
            }),
            api_key::CONFIG => Self::Config {
                resource_type: narrow(v, "resourceType"),
                resource_name: text(v, "resourceName").unwrap_or_default(),
                name: text(v, "name").unwrap_or_default(),
                value: text(v, "value"),
            },
            api_key::REMOVE_TOPIC => Self::RemoveTopic { topic_id: uuid(v, "topicId") },
            api_key::FEATURE_LEVEL => Self::FeatureLevel {
                name: text(v, "name").unwrap_or_default(),
                level: narrow(v, "featureLevel"),
            },
            api_key::BROKER_REGISTRATION_CHANGE => {
                Self::BrokerRegistrationChange(BrokerRegistrationChange {
                    broker_id: narrow(v, "brokerId"),
                    broker_epoch: int(v, "brokerEpoch"),
                    fenced: narrow(v, "fenced"),
                    in_controlled_shutdown: narrow(v, "inControlledShutdown"),
                })
            }
            api_key::FENCE_BROKER | api_key::UNFENCE_BROKER => Self::FenceBroker {
                broker_id: narrow(v, "id"),
                broker_epoch: int(v, "epoch"),
                fenced: key == api_key::FENCE_BROKER,
            },
            api_key::PRODUCER_IDS => Self::ProducerIds {
                broker_id: narrow(v, "brokerId"),
                broker_epoch: int(v, "brokerEpoch"),
                next_producer_id: int(v, "nextProducerId"),
            },
            api_key::NO_OP => Self::NoOp,
            api_key::ACCESS_CONTROL_ENTRY
            | api_key::REMOVE_ACCESS_CONTROL_ENTRY
            | api_key::USER_SCRAM_CREDENTIAL
            | api_key::REMOVE_USER_SCRAM_CREDENTIAL
            | api_key::CLIENT_QUOTA => security_from_value(key, v),
            _ => Self::Other { api_key: key, version },
        }
    }
}

/// `RegisterBrokerRecord` v2's fields, with the `metadata.version` range seglog supports.
fn register_broker_value(r: &RegisterBroker) -> Value {
    let endpoints = r
        .endpoints
        .iter()
        .map(|e| {
            Value::Object(vec![
                ("name", Value::Str(e.name.clone())),
                ("host", Value::Str(e.host.clone())),
                ("port", Value::Int(i64::from(e.port))),
                ("securityProtocol", Value::Int(i64::from(e.security_protocol))),
            ])
        })
        .collect();
    let features = vec![Value::Object(vec![
        ("name", Value::Str("metadata.version".to_owned())),
        ("minSupportedVersion", Value::Int(1)),
        ("maxSupportedVersion", Value::Int(i64::from(METADATA_VERSION_LEVEL))),
    ])];
    Value::Object(vec![
        ("brokerId", Value::Int(i64::from(r.broker_id))),
        ("isMigratingZkBroker", Value::Bool(false)),
        ("incarnationId", Value::Uuid(r.incarnation_id)),
        ("brokerEpoch", Value::Int(r.broker_epoch)),
        ("endPoints", Value::Array(endpoints)),
        ("features", Value::Array(features)),
        ("rack", opt_str(r.rack.as_ref())),
        ("fenced", Value::Bool(r.fenced)),
        ("inControlledShutdown", Value::Bool(r.in_controlled_shutdown)),
    ])
}

/// The security records' fields (ACLs, SCRAM credentials, client quotas).
fn security_value(record: &MetadataRecord) -> (i16, i16, Value) {
    let object = |fields: Vec<(&'static str, Value)>| Value::Object(fields);
    match record {
        MetadataRecord::AccessControlEntry(a) => (
            api_key::ACCESS_CONTROL_ENTRY,
            0,
            object(vec![
                ("id", Value::Uuid(a.id)),
                ("resourceType", Value::Int(i64::from(a.resource_type))),
                ("resourceName", Value::Str(a.resource_name.clone())),
                ("patternType", Value::Int(i64::from(a.pattern_type))),
                ("principal", Value::Str(a.principal.clone())),
                ("host", Value::Str(a.host.clone())),
                ("operation", Value::Int(i64::from(a.operation))),
                ("permissionType", Value::Int(i64::from(a.permission_type))),
            ]),
        ),
        MetadataRecord::RemoveAccessControlEntry { id } => {
            (api_key::REMOVE_ACCESS_CONTROL_ENTRY, 0, object(vec![("id", Value::Uuid(*id))]))
        }
        MetadataRecord::UserScramCredential(c) => (
            api_key::USER_SCRAM_CREDENTIAL,
            0,
            object(vec![
                ("name", Value::Str(c.name.clone())),
                ("mechanism", Value::Int(i64::from(c.mechanism))),
                ("salt", Value::Bytes(c.salt.clone())),
                ("storedKey", Value::Bytes(c.stored_key.clone())),
                ("serverKey", Value::Bytes(c.server_key.clone())),
                ("iterations", Value::Int(i64::from(c.iterations))),
            ]),
        ),
        MetadataRecord::RemoveUserScramCredential { name, mechanism } => (
            api_key::REMOVE_USER_SCRAM_CREDENTIAL,
            0,
            object(vec![
                ("name", Value::Str(name.clone())),
                ("mechanism", Value::Int(i64::from(*mechanism))),
            ]),
        ),
        MetadataRecord::ClientQuota(q) => {
            let entity = q
                .entity
                .iter()
                .map(|(entity_type, name)| {
                    object(vec![
                        ("entityType", Value::Str(entity_type.clone())),
                        ("entityName", opt_str(name.as_ref())),
                    ])
                })
                .collect();
            (
                api_key::CLIENT_QUOTA,
                0,
                object(vec![
                    ("entity", Value::Array(entity)),
                    ("key", Value::Str(q.key.clone())),
                    ("value", Value::Float(q.value_bits)),
                    ("remove", Value::Bool(q.remove)),
                ]),
            )
        }
        other => {
            (api_key::NO_OP, 0, object(vec![("unexpected", Value::Str(format!("{other:?}")))]))
        }
    }
}

/// A security record from its fields.
fn security_from_value(key: i16, v: &Value) -> MetadataRecord {
    match key {
        api_key::ACCESS_CONTROL_ENTRY => MetadataRecord::AccessControlEntry(AclEntry {
            id: uuid(v, "id"),
            resource_type: narrow(v, "resourceType"),
            resource_name: text(v, "resourceName").unwrap_or_default(),
            pattern_type: narrow(v, "patternType"),
            principal: text(v, "principal").unwrap_or_default(),
            host: text(v, "host").unwrap_or_default(),
            operation: narrow(v, "operation"),
            permission_type: narrow(v, "permissionType"),
        }),
        api_key::REMOVE_ACCESS_CONTROL_ENTRY => {
            MetadataRecord::RemoveAccessControlEntry { id: uuid(v, "id") }
        }
        api_key::USER_SCRAM_CREDENTIAL => {
            MetadataRecord::UserScramCredential(ScramCredentialEntry {
                name: text(v, "name").unwrap_or_default(),
                mechanism: narrow(v, "mechanism"),
                salt: bytes(v, "salt"),
                stored_key: bytes(v, "storedKey"),
                server_key: bytes(v, "serverKey"),
                iterations: narrow(v, "iterations"),
            })
        }
        api_key::REMOVE_USER_SCRAM_CREDENTIAL => MetadataRecord::RemoveUserScramCredential {
            name: text(v, "name").unwrap_or_default(),
            mechanism: narrow(v, "mechanism"),
        },
        api_key::CLIENT_QUOTA => MetadataRecord::ClientQuota(ClientQuotaEntry {
            entity: v
                .get("entity")
                .and_then(Value::as_array)
                .unwrap_or_default()
                .iter()
                .map(|e| (text(e, "entityType").unwrap_or_default(), text(e, "entityName")))
                .collect(),
            key: text(v, "key").unwrap_or_default(),
            value_bits: match v.get("value") {
                Some(Value::Float(bits)) => *bits,
                _ => 0,
            },
            remove: flag(v, "remove"),
        }),
        _ => MetadataRecord::NoOp,
    }
}

/// `ProducerIdsRecord`'s fields.
fn producer_ids_value(
    broker_id: i32,
    broker_epoch: i64,
    next_producer_id: i64,
) -> (i16, i16, Value) {
    (
        api_key::PRODUCER_IDS,
        0,
        Value::Object(vec![
            ("brokerId", Value::Int(i64::from(broker_id))),
            ("brokerEpoch", Value::Int(broker_epoch)),
            ("nextProducerId", Value::Int(next_producer_id)),
        ]),
    )
}
