//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics (applied live, and
//! persisted) and for this broker (its static settings under the dynamic ones of
//! `dynamic_configs.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use seglog_storage::config::{ConfigType, LogConfig};

use super::broker_configs::{broker_config_entries, cluster_default_entries, topic_synonyms};
use super::dynamic_configs::{Operation, alter_broker, apply_operations, incremental_alter_broker};
use super::{blocking, str_bytes};
use crate::Broker;
use crate::error::{Error, storage_error};
use crate::replication::quota::{
    FOLLOWER_THROTTLED_REPLICAS, LEADER_THROTTLED_REPLICAS, validate_throttled_replicas,
};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::{AclOperation, CLUSTER_NAME, ResourceType};

/// Kafka's `ConfigResource.Type` values.
const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const RESOURCE_BROKER_LOGGER: i8 = 8;
const RESOURCE_CLIENT_METRICS: i8 = 16;
const RESOURCE_GROUP: i8 = 32;
/// Kafka's `ConfigSource` values.
pub(crate) const SOURCE_TOPIC_CONFIG: i8 = 1;
pub(crate) const SOURCE_DEFAULT_CONFIG: i8 = 5;

/// Topic keys Kafka has that storage's `LogConfig` does not, with Kafka's types: the broker
/// reads some from the overrides (unclean election, tiered storage, the replication
/// throttles' replicas) and keeps the others without acting on them (message-format
/// conversion).
const ACCEPTED_UNUSED_KEYS: [(&str, ConfigType); 8] = [
    ("unclean.leader.election.enable", ConfigType::Boolean),
    ("message.format.version", ConfigType::String),
    ("message.downconversion.enable", ConfigType::Boolean),
    ("remote.storage.enable", ConfigType::Boolean),
    ("local.retention.ms", ConfigType::Long),
    ("local.retention.bytes", ConfigType::Long),
    ("leader.replication.throttled.replicas", ConfigType::List),
    ("follower.replication.throttled.replicas", ConfigType::List),
];

fn accepted_unused(key: &str) -> Option<ConfigType> {
    ACCEPTED_UNUSED_KEYS.iter().find(|(name, _)| *name == key).map(|(_, config_type)| *config_type)
}

/// One described config entry (`None`: Kafka's null value).
pub(crate) struct ConfigEntry {
    pub(crate) name: String,
    pub(crate) value: Option<String>,
    pub(crate) source: i8,
}

fn is_topic_key(key: &str) -> bool {
    LogConfig::key(key).is_some() || accepted_unused(key).is_some()
}

/// Checks topic overrides as Kafka's `LogConfig.validate` does: known keys, valid values.
pub(crate) fn check_topic_configs(
    broker: &Broker,
    overrides: &BTreeMap<String, String>,
) -> Result<(), Error> {
    if let Some(unknown) = overrides.keys().find(|key| !is_topic_key(key)) {
        return Err(Error::wire_with(
            ResponseError::InvalidConfig,
            format!("Unknown topic config name: {unknown}"),
        ));
    }
    for key in [LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS] {
        if let Some(value) = overrides.get(key) {
            validate_throttled_replicas(key, value)
                .map_err(|error| Error::wire_with(ResponseError::InvalidConfig, error))?;
        }
    }
    let config = broker
        .manager
        .default_log_config()
        .with_overrides(overrides)
        .map_err(|error| Error::wire_with(ResponseError::InvalidConfig, error.to_string()))?;
    // Kafka's `LogConfig.validateRemoteStorageOnlyIfSystemEnabled`.
    if config.remote_storage_enable && broker.tiering.is_none() {
        return Err(Error::wire_with(
            ResponseError::InvalidConfig,
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured \
             with remote log storage."
                .to_owned(),
        ));
    }
    Ok(())
}

/// Every config of a topic: its overrides marked TOPIC_CONFIG, the rest DEFAULT_CONFIG.
pub(crate) fn topic_config_entries(
    broker: &Broker,
    _topic: &str,
    overrides: &BTreeMap<String, String>,
) -> Vec<ConfigEntry> {
    let defaults = broker.manager.default_log_config();
    let effective = defaults.with_overrides(overrides).unwrap_or(defaults);
    let mut entries: Vec<ConfigEntry> = effective
        .to_properties()
        .into_iter()
        .map(|(name, value)| {
            let source = if overrides.contains_key(&name) {
                SOURCE_TOPIC_CONFIG
            } else {
                SOURCE_DEFAULT_CONFIG
            };
            ConfigEntry { name, value: Some(value), source }
        })
        .collect();
    for (name, value) in overrides {
        if accepted_unused(name).is_some() {
            entries.push(ConfigEntry {
                name: name.clone(),
                value: Some(value.clone()),
                source: SOURCE_TOPIC_CONFIG,
            });
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// Kafka's `ConfigDef.Type` id of a topic key, for DescribeConfigs v3+ (from its definition).
fn config_type(name: &str) -> i8 {
    LogConfig::key(name)
        .map(|key| key.config_type)
        .or_else(|| accepted_unused(name))
        .unwrap_or(ConfigType::String)
        .id()
}

/// The refusal of `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config resource, as
/// Kafka's `ConfigHelper` and `ControllerApis` check it: a broker, broker logger or client
/// metrics resource needs the operation on the cluster, a topic or group on itself. `None` when
/// allowed, and for a type configs do not apply to (refused later as INVALID_REQUEST).
fn config_refusal(
    broker: &Broker,
    session: &Session,
    operation: AclOperation,
    resource_type: i8,
    name: &str,
) -> Option<Error> {
    let (acl_type, acl_name, refusal) = match resource_type {
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS => {
            (ResourceType::Cluster, CLUSTER_NAME, ResponseError::ClusterAuthorizationFailed)
        }
        RESOURCE_TOPIC => (ResourceType::Topic, name, ResponseError::TopicAuthorizationFailed),
        RESOURCE_GROUP => (ResourceType::Group, name, ResponseError::GroupAuthorizationFailed),
        _ => return None,
    };
    let message = match refusal {
        ResponseError::ClusterAuthorizationFailed => "Cluster authorization failed.",
        ResponseError::TopicAuthorizationFailed => "Topic authorization failed.",
        _ => "Group authorization failed.",
    };
    (!broker.security.authorize(session, operation, acl_type, acl_name))
        .then(|| Error::wire_with(refusal, message.to_owned()))
}

/// DescribeConfigs for topics and for this broker.
pub(crate) fn describe_configs(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeConfigsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = DescribeConfigsResponse::default();
    for resource in &request.resources {
        let name = resource.resource_name.to_string();
        let mut result = DescribeConfigsResult::default();
        result.resource_type = resource.resource_type;
        result.resource_name = resource.resource_name.clone();
        let kind = resource.resource_type;
        let refusal = config_refusal(broker, session, AclOperation::DescribeConfigs, kind, &name);
        let entries = match (refusal, resource.resource_type) {
            (Some(refusal), _) => Err(refusal),
            (None, RESOURCE_TOPIC) => {
                let dynamic = broker.dynamic_configs();
                if broker.topic_counts().contains_key(&name) {
                    let overrides = broker.topic_overrides_of(&name);
                    Ok(topic_config_entries(broker, &name, &overrides)
                        .into_iter()
                        .map(|mut entry| {
                            let config_type = config_type(&entry.name);
                            let given = overrides.get(&entry.name).map(String::as_str);
                            let synonyms =
                                topic_synonyms(&broker.config, &dynamic, &entry.name, given);
                            // Kafka's source is the first synonym's: a key the broker sets is
                            // STATIC_BROKER_CONFIG, not DEFAULT_CONFIG.
                            if let Some(first) = synonyms.first() {
                                entry.source = first.source;
                            }
                            (entry, config_type, false, None, synonyms)
                        })
                        .collect::<Vec<_>>())
                } else {
                    Err(Error::wire_with(
                        ResponseError::UnknownTopicOrPartition,
                        format!("Topic {name} does not exist."),
                    ))
                }
            }
            (None, RESOURCE_BROKER) => broker_entries(broker, &name),
            (None, other) => Err(Error::wire_with(
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {other}"),
            )),
        };
        match entries {
            Ok(entries) => {
                // Null or empty: every key (Kafka's ConfigHelper).
                let wanted = resource.configuration_keys.as_ref().filter(|keys| !keys.is_empty());
                result.configs = entries
                    .into_iter()
                    .filter(|(entry, ..)| {
                        wanted.is_none_or(|keys| keys.iter().any(|key| key.as_str() == entry.name))
                    })
                    .map(|(entry, config_type, read_only, documentation, synonyms)| {
                        let sensitive = config_type == ConfigType::Password.id();
                        let hide = |value: Option<String>| if sensitive { None } else { value };
                        let mut config = DescribeConfigsResourceResult::default();
                        if version >= 3 {
                            config.config_type = config_type;
                            if request.include_documentation {
                                config.documentation = documentation.map(str_bytes);
                            }
                        }
                        if request.include_synonyms {
                            config.synonyms = synonyms
                                .into_iter()
                                .map(|synonym| {
                                    DescribeConfigsSynonym::default()
                                        .with_name(str_bytes(&synonym.name))
                                        .with_value(hide(synonym.value).as_deref().map(str_bytes))
                                        .with_source(synonym.source)
                                })
                                .collect();
                        }
                        config.name = str_bytes(&entry.name);
                        config.value = hide(entry.value).as_deref().map(str_bytes);
                        config.config_source = entry.source;
                        config.read_only = read_only;
                        config.is_sensitive = sensitive;
                        config
                    })
                    .collect();
            }
            Err(error) => {
                result.error_code = error.code();
                result.error_message = Some(str_bytes(&error.message()));
            }
        }
        response.results.push(result);
    }
    encode(&response, version)
}

/// A described entry: the entry, its type, whether read-only, its documentation, its synonyms.
type Described = (ConfigEntry, i8, bool, Option<&'static str>, Vec<super::broker_configs::Synonym>);

/// The entries of the BROKER resource `name`: this broker's every key, or the cluster
/// default's keys (the empty name).
fn broker_entries(broker: &Broker, name: &str) -> Result<Vec<Described>, Error> {
    let dynamic = broker.dynamic_configs();
    if name.is_empty() {
        // The cluster default (`<default>`): only what is set there, as Kafka.
        Ok(cluster_default_entries(&dynamic)
            .into_iter()
            .map(|e| (e.entry, e.config_type, e.read_only, e.documentation, e.synonyms))
            .collect())
    } else if name == broker.config.node_id.to_string() {
        Ok(broker_config_entries(&broker.config, &dynamic)
            .into_iter()
            .map(|e| (e.entry, e.config_type, e.read_only, e.documentation, e.synonyms))
            .collect())
    } else {
        Err(Error::wire_with(
            ResponseError::InvalidRequest,
            format!("Unexpected broker id, expected {} but received {name}", broker.config.node_id),
        ))
    }
}

/// Applies new topic overrides after checking them; with `validate_only`, only checks.
fn apply_topic_overrides(
    broker: &Broker,
    topic_name: &str,
    overrides: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), Error> {
    if !broker.topic_counts().contains_key(topic_name) {
        return Err(Error::wire_with(
            ResponseError::UnknownTopicOrPartition,
            format!("Topic {topic_name} does not exist."),
        ));
    }
    check_topic_configs(broker, &overrides)?;
    if validate_only {
        return Ok(());
    }
    if let Some(link) = broker.cluster() {
        // The controller's, for every broker: each applies it to its replicas.
        let request = crate::cluster::raft::network::AdminRequest::SetTopicConfigs {
            name: topic_name.to_owned(),
            overrides,
        };
        return super::cluster::forward(link, request).map_err(|(code, text)| {
            Error::wire_with(
                ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError),
                text,
            )
        });
    }
    broker
        .manager
        .set_topic_overrides(topic_name, overrides)
        .map_err(|error| Error::wire_with(storage_error(&error), error.to_string()))
}

/// Runs `topic` for a topic resource and `broker` for a broker resource unless the change is
/// refused (`refusal`, an authorization error); anything else is not a resource type configs
/// apply to.
fn for_resource(
    resource_type: i8,
    refusal: Option<Error>,
    topic: impl FnOnce() -> Result<(), Error>,
    broker: impl FnOnce() -> Result<(), Error>,
) -> Result<(), Error> {
    if let Some(refusal) = refusal {
        return Err(refusal);
    }
    match resource_type {
        RESOURCE_TOPIC => topic(),
        RESOURCE_BROKER => broker(),
        other => Err(Error::wire_with(
            ResponseError::InvalidRequest,
            format!("Unsupported resource type {other}"),
        )),
    }
}

/// AlterConfigs: the given set replaces all of a topic's overrides, as in Kafka.
pub(crate) async fn alter_configs(
    broker: &Arc<Broker>,
    session: &Session,
    request: AlterConfigsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = AlterConfigsResponse::default();
        for resource in &request.resources {
            let name = resource.resource_name.to_string();
            // Legacy AlterConfigs does not take broker loggers (INVALID_REQUEST, below).
            let refusal = (resource.resource_type != RESOURCE_BROKER_LOGGER)
                .then(|| {
                    config_refusal(
                        &broker,
                        &session,
                        AclOperation::AlterConfigs,
                        resource.resource_type,
                        &name,
                    )
                })
                .flatten();
            let configs = || -> Result<BTreeMap<String, String>, Error> {
                let mut configs = BTreeMap::new();
                for config in &resource.configs {
                    let Some(value) = &config.value else {
                        return Err(Error::wire_with(
                            ResponseError::InvalidRequest,
                            format!("Null value not supported for : {}", config.name.as_str()),
                        ));
                    };
                    configs.insert(config.name.to_string(), value.to_string());
                }
                Ok(configs)
            };
            let outcome = for_resource(
                resource.resource_type,
                refusal,
                || apply_topic_overrides(&broker, &name, configs()?, request.validate_only),
                || alter_broker(&broker, &name, configs()?, request.validate_only),
            );
            let mut result = AlterConfigsResourceResponse::default();
            result.resource_type = resource.resource_type;
            result.resource_name = resource.resource_name.clone();
            if let Err(error) = outcome {
                result.error_code = error.code();
                result.error_message = Some(str_bytes(&error.message()));
            }
            response.responses.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// IncrementalAlterConfigs: SET (0), DELETE (1), and APPEND (2) / SUBTRACT (3) on list keys.
pub(crate) async fn incremental_alter_configs(
    broker: &Arc<Broker>,
    session: &Session,
    request: IncrementalAlterConfigsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = IncrementalAlterConfigsResponse::default();
        for resource in &request.resources {
            let name = resource.resource_name.to_string();
            let refusal = config_refusal(
                &broker,
                &session,
                AclOperation::AlterConfigs,
                resource.resource_type,
                &name,
            );
            let outcome = for_resource(
                resource.resource_type,
                refusal,
                || incremental_topic(&broker, &name, resource, request.validate_only),
                || {
                    let operations = incremental_operations(resource)?;
                    incremental_alter_broker(&broker, &name, operations, request.validate_only)
                },
            );
            let mut result = IncrementalResult::default();
            result.resource_type = resource.resource_type;
            result.resource_name = resource.resource_name.clone();
            if let Err(error) = outcome {
                result.error_code = error.code();
                result.error_message = Some(str_bytes(&error.message()));
            }
            response.responses.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

fn incremental_topic(
    broker: &Broker,
    name: &str,
    resource: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
    validate_only: bool,
) -> Result<(), Error> {
    let mut overrides = broker.topic_overrides_of(name);
    let effective = broker
        .manager
        .default_log_config()
        .with_overrides(&overrides)
        .map(|config| config.to_properties())
        .unwrap_or_default();
    apply_operations(
        &mut overrides,
        incremental_operations(resource)?,
        |key| config_type(key) == ConfigType::List.id(),
        |key| effective.get(key).cloned(),
    )?;
    apply_topic_overrides(broker, name, overrides, validate_only)
}

/// A resource's IncrementalAlterConfigs operations, after Kafka's checks of the request (no key
/// twice, a value for every operation but DELETE, known operations).
fn incremental_operations(
    resource: &kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource,
) -> Result<Vec<(String, Operation)>, Error> {
    let mut seen = std::collections::BTreeSet::new();
    let mut operations = Vec::new();
    for config in &resource.configs {
        let key = config.name.to_string();
        if !seen.insert(key.clone()) {
            return Err(Error::wire_with(
                ResponseError::InvalidRequest,
                "Error due to duplicate config keys".to_owned(),
            ));
        }
        let value = config.value.as_ref().map(ToString::to_string);
        let operation = match (config.config_operation, value) {
            (0, Some(value)) => Operation::Set(value),
            (1, _) => Operation::Delete,
            (2, Some(value)) => Operation::Append(value),
            (3, Some(value)) => Operation::Subtract(value),
            (0 | 2 | 3, None) => {
                return Err(Error::wire_with(
                    ResponseError::InvalidRequest,
                    format!("Null value not supported for : {key}"),
                ));
            }
            (other, _) => {
                return Err(Error::wire_with(
                    ResponseError::InvalidRequest,
                    format!("Unknown operations type {other}"),
                ));
            }
        };
        operations.push((key, operation));
    }
    Ok(operations)
}
