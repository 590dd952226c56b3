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
}

/// `BrokerRegistrationChangeRecord`'s tri-states: 1 sets, -1 clears, 0 keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRegistrationChange {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub fenced: i8,
    pub in_controlled_shutdown: i8,
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
    /// A record the image does not interpret (ACLs, quotas, SCRAM, tokens, migration).
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
            Self::Partition(p) => (
                api_key::PARTITION,
                0,
                object(vec![
                    ("partitionId", Value::Int(i64::from(p.partition_id))),
                    ("topicId", Value::Uuid(p.topic_id)),
                    ("replicas", int32s_value(&p.replicas)),
                    ("isr", int32s_value(&p.isr)),
                    ("removingReplicas", Value::Array(Vec::new())),
                    ("addingReplicas", Value::Array(Vec::new())),
                    ("leader", Value::Int(i64::from(p.leader))),
                    ("leaderEpoch", Value::Int(i64::from(p.leader_epoch))),
                    ("partitionEpoch", Value::Int(i64::from(p.partition_epoch))),
                ]),
            ),
            Self::PartitionChange(c) => {
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
                (api_key::PARTITION_CHANGE, 0, object(fields))
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
            Self::ProducerIds { broker_id, broker_epoch, next_producer_id } => (
                api_key::PRODUCER_IDS,
                0,
                object(vec![
                    ("brokerId", Value::Int(i64::from(*broker_id))),
                    ("brokerEpoch", Value::Int(*broker_epoch)),
                    ("nextProducerId", Value::Int(*next_producer_id)),
                ]),
            ),
            Self::NoOp => (api_key::NO_OP, 0, object(Vec::new())),
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
