//! Metadata and topic administration: Metadata (with auto-creation), CreateTopics,
//! DeleteTopics, CreatePartitions and DeleteRecords.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteRecordsRequest, DeleteRecordsResponse, DeleteTopicsRequest,
    DeleteTopicsResponse, MetadataRequest, MetadataResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_format::names::validate_topic;
use seglog_storage::Error as StorageError;
use seglog_storage::log::partition_log::TopicPartition;

use super::configs::{check_topic_configs, topic_config_entries};
use super::{
    TopicIds, authorized_operations, blocking, cluster_allowed, now_ms, str_bytes, topic_allowed,
    topic_name,
};
use crate::Broker;
use crate::error::{Error, storage_error};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::{AclOperation, ResourceType};

/// Topics that only the broker creates: the metadata log and the coordinators' state.
const INTERNAL_TOPICS: [&str; 3] =
    ["__cluster_metadata", crate::replica::INTERNAL_TOPICS[0], crate::replica::INTERNAL_TOPICS[1]];

fn uuid(id: [u8; 16]) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

/// Metadata: this node leads every partition. A topic asked for by name that does not exist is
/// created with `num.partitions` partitions when both the broker and the request allow it.
/// v13's top-level error code (KIP-1102) is for REBOOTSTRAP_REQUIRED, which a broker that
/// knows its cluster never answers: it stays 0.
pub(crate) async fn metadata(
    broker: &Arc<Broker>,
    session: &Session,
    request: MetadataRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response =
        blocking(move || metadata_blocking(&broker, &session, &request, version)).await?;
    encode(&response, version)
}

fn metadata_blocking(
    broker: &Broker,
    session: &Session,
    request: &MetadataRequest,
    version: i16,
) -> MetadataResponse {
    if let Some(link) = broker.cluster() {
        return super::cluster::metadata(broker, link, session, request, version);
    }
    let node = BrokerId(broker.config.node_id);
    let mut response = MetadataResponse::default();
    response.brokers = vec![
        MetadataResponseBroker::default()
            .with_node_id(node)
            .with_host(str_bytes(broker.advertised(session).0))
            .with_port(broker.advertised(session).1),
    ];
    if version >= 2 {
        response.cluster_id = Some(str_bytes(&broker.cluster_id));
    }
    if version >= 1 {
        response.controller_id = node;
    }
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = super::cluster_operations(broker, session);
    }
    let topic_operations = version >= 8 && request.include_topic_authorized_operations;
    let counts = broker.manager.topic_partition_counts();
    let all_topics = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    let wanted: Vec<(Option<String>, [u8; 16])> = if all_topics {
        counts.keys().map(|name| (Some(name.clone()), [0; 16])).collect()
    } else {
        request
            .topics
            .iter()
            .flatten()
            .map(|topic| (topic.name.as_ref().map(|n| n.0.to_string()), *topic.topic_id.as_bytes()))
            .collect()
    };
    let auto_create = broker.config.auto_create_topics && request.allow_auto_topic_creation;
    // Kafka's `getTopicMetadata` auto-creation rule: CREATE on the cluster covers every name.
    let mut cluster_create = None;
    for (name, id) in wanted {
        let mut out = MetadataResponseTopic::default();
        let by_id = name.is_none();
        let name = if let Some(name) = name {
            name
        } else {
            // By topic id (v12): find the topic that has it.
            let found =
                counts.keys().find(|topic| broker.manager.topic_id(topic) == Some(id)).cloned();
            let Some(name) = found else {
                out.topic_id = uuid(id);
                out.error_code = ResponseError::UnknownTopicId.code();
                response.topics.push(out);
                continue;
            };
            name
        };
        // Without DESCRIBE a topic is left out of the all-topics form, and asked for, it is
        // TOPIC_AUTHORIZATION_FAILED whether it exists or not (by id, with the id, not the name).
        if !topic_allowed(broker, session, AclOperation::Describe, &name) {
            response.topics.extend(undescribable(&name, by_id.then_some(id), all_topics));
            continue;
        }
        out.name = Some(topic_name(&name));
        out.is_internal = version >= 1 && crate::replica::INTERNAL_TOPICS.contains(&name.as_str());
        let mut n_partitions = counts.get(&name).copied().unwrap_or(0);
        if n_partitions == 0
            && auto_create
            && !may_create(broker, session, &mut cluster_create, &name)
        {
            out.error_code = ResponseError::TopicAuthorizationFailed.code();
            response.topics.push(out);
            continue;
        }
        if topic_operations {
            out.topic_authorized_operations =
                authorized_operations(broker, session, ResourceType::Topic, &name);
        }
        if n_partitions == 0 {
            if validate_topic(&name).is_err() {
                out.error_code = ResponseError::InvalidTopicException.code();
                response.topics.push(out);
                continue;
            }
            if !auto_create {
                out.error_code = ResponseError::UnknownTopicOrPartition.code();
                response.topics.push(out);
                continue;
            }
            match auto_create_topic(broker, &name) {
                Ok(count) => n_partitions = count,
                Err(code) => {
                    out.error_code = code.code();
                    response.topics.push(out);
                    continue;
                }
            }
        }
        if version >= 10 {
            out.topic_id = uuid(broker.manager.topic_id(&name).unwrap_or([0; 16]));
        }
        out.partitions = metadata_partitions(broker, &name, n_partitions, version);
        response.topics.push(out);
    }
    response
}

/// A topic the client may not DESCRIBE, as Metadata answers it: left out of the all-topics
/// form; asked for, TOPIC_AUTHORIZATION_FAILED whether it exists or not, with its name, or when
/// asked by id with the id alone (Kafka's `handleTopicMetadataRequest`).
fn undescribable(
    name: &str,
    id: Option<[u8; 16]>,
    all_topics: bool,
) -> Option<MetadataResponseTopic> {
    if all_topics {
        return None;
    }
    let mut out = MetadataResponseTopic::default();
    match id {
        Some(id) => {
            out.topic_id = uuid(id);
            out.name = None;
        }
        None => out.name = Some(topic_name(name)),
    }
    out.error_code = ResponseError::TopicAuthorizationFailed.code();
    Some(out)
}

/// Whether Metadata may auto-create `name`: CREATE on the cluster (asked once per request,
/// kept in `cluster_create`) or on the topic.
fn may_create(
    broker: &Broker,
    session: &Session,
    cluster_create: &mut Option<bool>,
    name: &str,
) -> bool {
    *cluster_create.get_or_insert_with(|| cluster_allowed(broker, session, AclOperation::Create))
        || topic_allowed(broker, session, AclOperation::Create, name)
}

/// Creates a topic a Metadata request named, returning its partition count or the error code.
/// `__consumer_offsets` is created as the group coordinator creates it (Kafka's
/// AutoTopicCreationManager gives an internal topic its own settings: offsets.topic.num.partitions,
/// compaction); `__transaction_state` (whose coordinator seglog does not have yet) and
/// `__cluster_metadata` are never created as plain topics.
fn auto_create_topic(broker: &Broker, name: &str) -> Result<i32, ResponseError> {
    if name == crate::group::OFFSETS_TOPIC {
        return broker.groups.ensure_offsets_topic();
    }
    if INTERNAL_TOPICS.contains(&name) {
        return Err(ResponseError::UnknownTopicOrPartition);
    }
    let default_partitions = i32::try_from(broker.config.log.n_partitions).unwrap_or(1);
    match broker.manager.create_topic(name, default_partitions, BTreeMap::new()) {
        Ok(created) => {
            tracing::info!(topic = %name, partitions = created.len(), "auto-created topic");
            Ok(default_partitions)
        }
        Err(StorageError::TopicAlreadyExists { .. }) => {
            Ok(broker.manager.topic_partition_counts().get(name).copied().unwrap_or(0))
        }
        Err(error) => Err(storage_error(&error)),
    }
}

fn metadata_partitions(
    broker: &Broker,
    name: &str,
    n_partitions: i32,
    version: i16,
) -> Vec<MetadataResponsePartition> {
    let node = BrokerId(broker.config.node_id);
    let mut partitions = Vec::new();
    for partition in 0..n_partitions {
        let mut p = MetadataResponsePartition::default();
        p.partition_index = partition;
        if let Ok(log) =
            broker.manager.get_log(&TopicPartition { topic: name.to_owned(), partition })
        {
            p.leader_id = node;
            p.leader_epoch = if version >= 7 { Broker::metadata_leader_epoch(&log) } else { -1 };
            p.replica_nodes = vec![node];
            p.isr_nodes = vec![node];
        } else {
            p.error_code = ResponseError::LeaderNotAvailable.code();
            p.leader_id = BrokerId(-1);
            p.leader_epoch = -1;
            p.replica_nodes = vec![node];
            if version >= 5 {
                p.offline_replicas = vec![node];
            }
        }
        partitions.push(p);
    }
    partitions
}

fn message(text: impl Into<String>) -> Option<StrBytes> {
    let text: String = text.into();
    (!text.is_empty()).then(|| StrBytes::from_string(text))
}

/// CreateTopics: one node, so the replication factor must be 1 (or -1 for the default);
/// configs are checked against Kafka's topic keys; `validate_only` checks without creating.
pub(crate) async fn create_topics(
    broker: &Arc<Broker>,
    session: &Session,
    request: CreateTopicsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = CreateTopicsResponse::default();
        let cluster_create = cluster_allowed(&broker, &session, AclOperation::Create);
        let mut seen = BTreeMap::new();
        for topic in &request.topics {
            *seen.entry(topic.name.0.to_string()).or_insert(0) += 1;
        }
        for topic in &request.topics {
            let name = topic.name.0.to_string();
            let result = if seen.get(&name).copied().unwrap_or(0) > 1 {
                let mut result = CreatableTopicResult::default();
                result.error_code = ResponseError::InvalidRequest.code();
                result.error_message = message(format!(
                    "Create topics request from client contains multiple entries for the following topics: {name}"
                ));
                result
            } else if name != INTERNAL_TOPICS[0]
                && !cluster_create
                && !topic_allowed(&broker, &session, AclOperation::Create, &name)
            {
                // Kafka's `ControllerApis.createTopics`: CREATE on the cluster or the topic.
                CreatableTopicResult::default()
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                    .with_error_message(message("Authorization failed."))
            } else {
                let result = create_topic(&broker, topic, request.validate_only);
                if result.error_code == 0
                    && !topic_allowed(&broker, &session, AclOperation::DescribeConfigs, &name)
                {
                    // Kafka's `ReplicationControlManager.createTopic`: no configs, partition
                    // count or replication factor without DESCRIBE_CONFIGS.
                    result
                        .with_num_partitions(-1)
                        .with_replication_factor(-1)
                        .with_configs(Some(Vec::new()))
                        .with_topic_config_error_code(ResponseError::TopicAuthorizationFailed.code())
                } else {
                    result
                }
            };
            let result = if version < 5 {
                result
                    .with_num_partitions(-1)
                    .with_replication_factor(-1)
                    .with_configs(None)
                    .with_topic_config_error_code(0)
            } else {
                result
            };
            let result = if version < 7 { result.with_topic_id(uuid::Uuid::nil()) } else { result };
            response.topics.push(result.with_name(topic.name.clone()));
        }
        response
    })
    .await?;
    encode(&response, version)
}

fn create_topic(
    broker: &Broker,
    topic: &CreatableTopic,
    validate_only: bool,
) -> CreatableTopicResult {
    let name = topic.name.0.to_string();
    let mut result = CreatableTopicResult::default();
    result.num_partitions = -1;
    result.replication_factor = -1;
    let fail = |mut result: CreatableTopicResult, code: i16, text: String| {
        result.error_code = code;
        result.error_message = message(text);
        result
    };
    if let Err(error) = validate_topic(&name) {
        return fail(result, ResponseError::InvalidTopicException.code(), error.to_string());
    }
    if INTERNAL_TOPICS.contains(&name.as_str()) {
        // Kafka's ControllerApis.createTopics refuses `__cluster_metadata` with these words.
        // It lets a client create `__consumer_offsets` and `__transaction_state` as ordinary
        // topics; seglog refuses them too: their coordinators create them on first use with
        // the partition count and `cleanup.policy=compact` that their records need (a
        // one-partition, delete-policy `__consumer_offsets` would lose committed offsets to
        // retention). docs/broker.md says so.
        return fail(
            result,
            ResponseError::InvalidRequest.code(),
            format!("Creation of internal topic {name} is prohibited."),
        );
    }
    let mut n_partitions = topic.num_partitions;
    if !topic.assignments.is_empty() {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return fail(
                result,
                ResponseError::InvalidRequest.code(),
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".to_owned(),
            );
        }
        let node = BrokerId(broker.config.node_id);
        for assignment in &topic.assignments {
            // The controller checks a cluster's assignments.
            if broker.cluster().is_none() && assignment.broker_ids != [node] {
                return fail(
                    result,
                    ResponseError::InvalidReplicaAssignment.code(),
                    format!(
                        "partition {} must be assigned to broker {} alone",
                        assignment.partition_index, broker.config.node_id
                    ),
                );
            }
        }
        n_partitions = i32::try_from(topic.assignments.len()).unwrap_or(i32::MAX);
    }
    if n_partitions == -1 {
        n_partitions = i32::try_from(broker.config.log.n_partitions).unwrap_or(1);
    }
    if n_partitions < 1 {
        return fail(
            result,
            ResponseError::InvalidPartitions.code(),
            "Number of partitions was set to an invalid non-positive value.".to_owned(),
        );
    }
    if n_partitions > broker.config.topic_partitions_max {
        return fail(
            result,
            ResponseError::InvalidPartitions.code(),
            format!(
                "{n_partitions} partitions exceed seglog.topic.partitions.max = {}",
                broker.config.topic_partitions_max
            ),
        );
    }
    if let Some((code, text)) =
        replication_refusal(topic.replication_factor, broker.cluster().is_some())
    {
        return fail(result, code, text);
    }
    if let Some(link) = broker.cluster() {
        return create_in_cluster(broker, link, topic, n_partitions, validate_only, result);
    }
    let overrides = match topic_overrides(broker, topic) {
        Ok(overrides) => overrides,
        Err((code, text)) => return fail(result, code, text),
    };
    if broker.manager.topic_partition_counts().contains_key(&name) {
        return fail(
            result,
            ResponseError::TopicAlreadyExists.code(),
            format!("Topic '{name}' already exists."),
        );
    }
    if !validate_only {
        if let Err(error) = broker.manager.create_topic(&name, n_partitions, overrides.clone()) {
            return fail(result, storage_error(&error).code(), error.to_string());
        }
        result.topic_id = uuid(broker.manager.topic_id(&name).unwrap_or([0; 16]));
    }
    created(broker, &name, n_partitions, &overrides, result)
}

/// A CreateTopics entry's configs, checked against Kafka's topic keys.
fn topic_overrides(
    broker: &Broker,
    topic: &CreatableTopic,
) -> Result<BTreeMap<String, String>, (i16, String)> {
    let mut overrides = BTreeMap::new();
    for config in &topic.configs {
        let Some(value) = &config.value else {
            return Err((
                ResponseError::InvalidConfig.code(),
                format!("Null value not supported for topic configs: {}", config.name.as_str()),
            ));
        };
        overrides.insert(config.name.to_string(), value.to_string());
    }
    check_topic_configs(broker, &overrides).map_err(|error| (error.code(), error.message()))?;
    Ok(overrides)
}

/// Why a CreateTopics replication factor is refused: a single node keeps one replica a
/// partition; a cluster's controller checks the factor against its brokers.
fn replication_refusal(factor: i16, in_cluster: bool) -> Option<(i16, String)> {
    let code = ResponseError::InvalidReplicationFactor.code();
    match factor {
        -1 | 1 => None,
        factor if factor < 1 => Some((
            code,
            "Replication factor must be larger than 0, or -1 to use the default value.".to_owned(),
        )),
        _ if in_cluster => None,
        factor => Some((
            code,
            format!(
                "Unable to replicate the partition {factor} time(s): The target replication factor of {factor} cannot be reached because only 1 broker(s) are registered."
            ),
        )),
    }
}

/// CreateTopics in a cluster: the controller places the replicas (the request's factor, or
/// `default.replication.factor` for -1) and creates the topic; this broker answers once it has
/// applied it.
fn create_in_cluster(
    broker: &Broker,
    link: &crate::cluster::link::ClusterLink,
    topic: &CreatableTopic,
    n_partitions: i32,
    validate_only: bool,
    mut result: CreatableTopicResult,
) -> CreatableTopicResult {
    let name = topic.name.0.to_string();
    let fail = |mut result: CreatableTopicResult, (code, text): (i16, String)| {
        result.error_code = code;
        result.error_message = message(text);
        result
    };
    let overrides = match topic_overrides(broker, topic) {
        Ok(overrides) => overrides,
        Err(refusal) => return fail(result, refusal),
    };
    let request = crate::cluster::raft::network::AdminRequest::CreateTopic {
        name: name.clone(),
        partitions: n_partitions,
        replication_factor: replication_factor(broker, topic.replication_factor),
        configs: overrides.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        assignments: (!topic.assignments.is_empty()).then(|| {
            let mut by_partition: Vec<_> = topic.assignments.iter().collect();
            by_partition.sort_by_key(|a| a.partition_index);
            by_partition.iter().map(|a| a.broker_ids.iter().map(|b| b.0).collect()).collect()
        }),
        validate_only,
    };
    if let Err(refusal) = super::cluster::forward(link, request) {
        return fail(result, refusal);
    }
    if !validate_only {
        result.topic_id = uuid(broker.topic_id(&name).unwrap_or([0; 16]));
    }
    let mut result = created(broker, &name, n_partitions, &overrides, result);
    result.replication_factor = match topic.assignments.first() {
        Some(assignment) => i16::try_from(assignment.broker_ids.len()).unwrap_or(i16::MAX),
        None => replication_factor(broker, topic.replication_factor),
    };
    result
}

/// A CreateTopics factor in a cluster: as asked, or `default.replication.factor` for -1.
pub(crate) fn replication_factor(broker: &Broker, asked: i16) -> i16 {
    if asked == -1 { broker.config.replication.default_replication_factor } else { asked }
}

/// A created (or validated) topic's result: its partition count, replication factor and
/// configs with their sources.
fn created(
    broker: &Broker,
    name: &str,
    n_partitions: i32,
    overrides: &BTreeMap<String, String>,
    mut result: CreatableTopicResult,
) -> CreatableTopicResult {
    result.num_partitions = n_partitions;
    result.replication_factor = 1;
    result.configs = Some(
        topic_config_entries(broker, name, overrides)
            .into_iter()
            .map(|entry| {
                CreatableTopicConfigs::default()
                    .with_name(str_bytes(&entry.name))
                    .with_value(entry.value.as_deref().map(str_bytes))
                    .with_config_source(entry.source)
            })
            .collect(),
    );
    result
}

/// DeleteTopics: by name (v1-5) or, from v6, each entry by name or by id. As Kafka's
/// `ControllerApis.deleteTopics` answers: an entry with neither or both is INVALID_REQUEST, and
/// so is a name or id given twice (answered once); an id no topic has is UNKNOWN_TOPIC_ID; v6
/// answers every deleted topic with its name and id.
pub(crate) async fn delete_topics(
    broker: &Arc<Broker>,
    session: &Session,
    request: DeleteTopicsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let cluster_delete = cluster_allowed(&broker, &session, AclOperation::Delete);
        let asked: Vec<(Option<TopicName>, uuid::Uuid)> = if version >= 6 {
            request.topics.iter().map(|topic| (topic.name.clone(), topic.topic_id)).collect()
        } else {
            request.topic_names.iter().map(|name| (Some(name.clone()), uuid::Uuid::nil())).collect()
        };
        let ids = (version >= 6).then(|| TopicIds::new(&broker));
        let mut n_names: BTreeMap<&str, usize> = BTreeMap::new();
        let mut n_ids: BTreeMap<uuid::Uuid, usize> = BTreeMap::new();
        for (name, id) in &asked {
            match (name, id.is_nil()) {
                (Some(name), true) => *n_names.entry(name.0.as_str()).or_default() += 1,
                (None, false) => *n_ids.entry(*id).or_default() += 1,
                _ => {}
            }
        }
        let mut answered_names = BTreeSet::new();
        let mut answered_ids = BTreeSet::new();
        let mut response = DeleteTopicsResponse::default();
        for (name, id) in &asked {
            let answered = match (name, id.is_nil()) {
                (Some(name), true) => !answered_names.insert(name.0.as_str()),
                (None, false) => !answered_ids.insert(*id),
                _ => false,
            };
            if answered {
                continue;
            }
            let mut result = DeletableTopicResult::default().with_name(name.clone());
            let target = match (name, id.is_nil()) {
                (None, true) => Err((
                    ResponseError::InvalidRequest.code(),
                    "Neither topic name nor id were specified.",
                )),
                (Some(_), false) => Err((
                    ResponseError::InvalidRequest.code(),
                    "You may not specify both topic name and topic id.",
                )),
                (Some(name), true) if n_names.get(name.0.as_str()).copied() > Some(1) => {
                    Err((ResponseError::InvalidRequest.code(), "Duplicate topic name."))
                }
                (None, false) if n_ids.get(id).copied() > Some(1) => {
                    Err((ResponseError::InvalidRequest.code(), "Duplicate topic id."))
                }
                (Some(name), true) => Ok(name.0.to_string()),
                (None, false) => {
                    ids.as_ref().and_then(|ids| ids.name(id)).map(str::to_owned).ok_or((
                        ResponseError::UnknownTopicId.code(),
                        "This server does not host this topic ID.",
                    ))
                }
            };
            if version >= 6 {
                result.topic_id = *id;
            }
            match target {
                Err((code, text)) => {
                    result.error_code = code;
                    if version >= 5 {
                        result.error_message = message(text);
                    }
                }
                Ok(target) => {
                    if let Some(ids) = &ids {
                        result.name = Some(topic_name(&target));
                        result.topic_id = ids.by_name.get(&target).copied().unwrap_or_default();
                    }
                    let refused = delete_refused(&broker, &session, cluster_delete, &target);
                    if let Some(describable) = refused {
                        // By id, the name is told only to a client that may describe it.
                        if name.is_none() && !describable {
                            result.name = None;
                        }
                        if name.is_some() {
                            result.topic_id = uuid::Uuid::nil();
                        }
                        result.error_code = ResponseError::TopicAuthorizationFailed.code();
                    } else if let Err(error) = delete_topic(&broker, &target) {
                        result.error_code = storage_error(&error).code();
                        if version >= 5 {
                            result.error_message = message(error.to_string());
                        }
                    }
                }
            }
            response.responses.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// Deletes `topic`'s partitions and, for a tiered topic, its remote data (the manifests
/// before the answer, on this blocking thread; the objects in the background).
fn delete_topic(broker: &Broker, topic: &str) -> Result<(), StorageError> {
    if let Some(link) = broker.cluster() {
        // The controller removes it; each broker's applier deletes its replicas.
        let request =
            crate::cluster::raft::network::AdminRequest::DeleteTopic { name: topic.to_owned() };
        return super::cluster::forward(link, request).map_err(|(code, text)| {
            if code == ResponseError::UnknownTopicOrPartition.code() {
                StorageError::UnknownTopicOrPartition { topic: topic.to_owned(), partition: -1 }
            } else {
                StorageError::InvalidArgument(text)
            }
        });
    }
    let topic_id = broker.manager.topic_id(topic);
    let n_partitions = broker.manager.topic_partition_counts().get(topic).copied();
    broker.manager.delete_topic(topic)?;
    if let (Some(tiering), Some(id), Some(n)) = (&broker.tiering, topic_id, n_partitions) {
        tokio::runtime::Handle::current().block_on(tiering.delete_topic(topic, &id, n));
    }
    Ok(())
}

/// Whether a DeleteTopics of `topic` is refused (Kafka's `ControllerApis.deleteTopics`): DELETE
/// on the cluster covers every topic; otherwise a topic needs DELETE, and one that does not
/// exist is refused unless the client may DESCRIBE it (then it learns the topic is unknown).
/// `Some(describable)` when refused.
fn delete_refused(
    broker: &Broker,
    session: &Session,
    cluster_delete: bool,
    topic: &str,
) -> Option<bool> {
    if cluster_delete {
        return None;
    }
    let describable = topic_allowed(broker, session, AclOperation::Describe, topic);
    let exists = broker.topic_counts().contains_key(topic);
    let deletable = topic_allowed(broker, session, AclOperation::Delete, topic);
    let allowed = if exists { deletable } else { describable };
    (!allowed).then_some(describable)
}

/// CreatePartitions: grows a topic; assignments, when given, must name this node.
pub(crate) async fn create_partitions(
    broker: &Arc<Broker>,
    session: &Session,
    request: CreatePartitionsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = CreatePartitionsResponse::default();
        for topic in &request.topics {
            let name = topic.name.0.to_string();
            let mut result = CreatePartitionsTopicResult::default();
            result.name = topic.name.clone();
            // Kafka's `ControllerApis.createPartitions`: ALTER on the topic, before existence.
            if !topic_allowed(&broker, &session, AclOperation::Alter, &name) {
                result.error_code = ResponseError::TopicAuthorizationFailed.code();
                response.results.push(result);
                continue;
            }
            let current = broker.topic_counts().get(&name).copied();
            let node = BrokerId(broker.config.node_id);
            let outcome = match current {
                None => Err((
                    ResponseError::UnknownTopicOrPartition.code(),
                    format!("The topic '{name}' does not exist."),
                )),
                Some(current) if topic.count == current => {
                    Err((ResponseError::InvalidPartitions.code(), format!("Topic already has {current} partitions.")))
                }
                Some(current) if topic.count < current => Err((
                    ResponseError::InvalidPartitions.code(),
                    format!(
                        "Topic currently has {current} partitions, which is higher than the requested {}.",
                        topic.count
                    ),
                )),
                Some(_) if topic.count > broker.config.topic_partitions_max => Err((
                    ResponseError::InvalidPartitions.code(),
                    format!(
                        "{} partitions exceed seglog.topic.partitions.max = {}",
                        topic.count, broker.config.topic_partitions_max
                    ),
                )),
                Some(_) if let Some(link) = broker.cluster() => super::cluster::forward(
                    link,
                    crate::cluster::raft::network::AdminRequest::CreatePartitions {
                        name: name.clone(),
                        total: topic.count,
                        assignments: topic.assignments.as_ref().map(|assignments| {
                            assignments
                                .iter()
                                .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                                .collect()
                        }),
                        validate_only: request.validate_only,
                    },
                ),
                Some(_)
                    if topic.assignments.as_ref().is_some_and(|assignments| {
                        assignments.iter().any(|a| a.broker_ids != [node])
                    }) =>
                {
                    Err((
                        ResponseError::InvalidReplicaAssignment.code(),
                        format!("new partitions must be assigned to broker {} alone", node.0),
                    ))
                }
                Some(_) if request.validate_only => Ok(()),
                Some(_) => broker
                    .manager
                    .create_partitions(&name, topic.count)
                    .map(|_| ())
                    .map_err(|error| (storage_error(&error).code(), error.to_string())),
            };
            if let Err((code, text)) = outcome {
                result.error_code = code;
                result.error_message = message(text);
            }
            response.results.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// DeleteRecords: raises each partition's log start offset (-1 means the high watermark);
/// whole segments below it are deleted at once.
pub(crate) async fn delete_records(
    broker: &Arc<Broker>,
    session: &Session,
    request: DeleteRecordsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = DeleteRecordsResponse::default();
        for topic in &request.topics {
            let name = topic.name.0.to_string();
            let mut out = DeleteRecordsTopicResult::default();
            out.name = topic.name.clone();
            // Kafka's `handleDeleteRecordsRequest`: DELETE on the topic, before existence.
            let allowed = topic_allowed(&broker, &session, AclOperation::Delete, &name);
            for partition in &topic.partitions {
                let mut result = DeleteRecordsPartitionResult::default();
                result.partition_index = partition.partition_index;
                result.low_watermark = -1;
                if !allowed {
                    result.error_code = ResponseError::TopicAuthorizationFailed.code();
                    out.partitions.push(result);
                    continue;
                }
                if let Some((code, _)) = broker.not_led_here(&name, partition.partition_index) {
                    result.error_code = code;
                    out.partitions.push(result);
                    continue;
                }
                let tp =
                    TopicPartition { topic: name.clone(), partition: partition.partition_index };
                let outcome = broker.manager.get_log(&tp).and_then(|log| {
                    let high_watermark = log.high_watermark()?;
                    let target =
                        if partition.offset == -1 { high_watermark } else { partition.offset };
                    if target < 0 {
                        return Err(StorageError::OffsetOutOfRange {
                            requested: target,
                            log_start: log.log_start_offset()?,
                            log_end: high_watermark,
                        });
                    }
                    let low_watermark = log.maybe_increment_log_start_offset(target)?;
                    log.delete_segments_below_log_start(now_ms())?;
                    Ok(low_watermark)
                });
                match outcome {
                    Ok(low_watermark) => result.low_watermark = low_watermark,
                    Err(error) => result.error_code = storage_error(&error).code(),
                }
                out.partitions.push(result);
            }
            response.topics.push(out);
        }
        response
    })
    .await?;
    encode(&response, version)
}
