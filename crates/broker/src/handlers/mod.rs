//! The API handlers (Kafka's `KafkaApis`): each takes a decoded request and returns the
//! encoded response body. Storage calls run on tokio's blocking pool, never on the reactor.

mod admin;
mod broker_configs;
pub(crate) mod cluster;
pub(crate) use cluster::{describe_quorum, elect_leaders, unregister_broker};
mod configs;
mod data;
mod dynamic_configs;
pub(crate) mod groups;
mod log_dirs;
mod produce;
mod reassignments;
pub(crate) use reassignments::{alter_partition_reassignments, list_partition_reassignments};
pub(crate) mod security;
mod txn;

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, BrokerId, DescribeClusterRequest,
    DescribeClusterResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_storage::manager::{Clock, SystemClock};

pub(crate) use admin::{create_partitions, create_topics, delete_records, delete_topics, metadata};
pub(crate) use configs::{alter_configs, describe_configs, incremental_alter_configs};
pub(crate) use data::{fetch, list_offsets, offset_for_leader_epoch};
pub(crate) use dynamic_configs::{apply_from_metadata, load_dynamic_configs};
pub(crate) use log_dirs::{alter_replica_log_dirs, describe_log_dirs};
pub(crate) use produce::produce;
pub(crate) use txn::{
    add_offsets_to_txn, add_partitions_to_txn, describe_producers, describe_transactions, end_txn,
    init_producer_id, list_transactions, txn_offset_commit, write_txn_markers,
};

use crate::Broker;
use crate::error::Error;
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::{AclOperation, CLUSTER_NAME, ResourceType};

/// Whether `session` may perform `operation` on the topic `name` (Kafka's
/// `AuthHelper.authorize` on a TOPIC resource); always, without an authorizer.
pub(crate) fn topic_allowed(
    broker: &Broker,
    session: &Session,
    operation: AclOperation,
    name: &str,
) -> bool {
    broker.security.authorize(session, operation, ResourceType::Topic, name)
}

/// Whether `session` may perform `operation` on the group `id`.
pub(crate) fn group_allowed(
    broker: &Broker,
    session: &Session,
    operation: AclOperation,
    id: &str,
) -> bool {
    broker.security.authorize(session, operation, ResourceType::Group, id)
}

/// Whether `session` may perform `operation` on the transactional id `id`.
pub(crate) fn txn_id_allowed(
    broker: &Broker,
    session: &Session,
    operation: AclOperation,
    id: &str,
) -> bool {
    broker.security.authorize(session, operation, ResourceType::TransactionalId, id)
}

/// Whether `session` may perform `operation` on the cluster (`kafka-cluster`).
pub(crate) fn cluster_allowed(broker: &Broker, session: &Session, operation: AclOperation) -> bool {
    broker.security.authorize(session, operation, ResourceType::Cluster, CLUSTER_NAME)
}

/// The cluster's authorized operations as Metadata (v8-10) and DescribeCluster answer them:
/// the bit field only with DESCRIBE on the cluster, else 0 (Kafka's `handleTopicMetadataRequest`
/// and `AuthHelper.computeDescribeClusterResponse`).
pub(crate) fn cluster_operations(broker: &Broker, session: &Session) -> i32 {
    if cluster_allowed(broker, session, AclOperation::Describe) {
        authorized_operations(broker, session, ResourceType::Cluster, CLUSTER_NAME)
    } else {
        0
    }
}

/// The operations `session` may perform on a resource, as the "authorized operations" bit
/// field (every operation the type supports, without an authorizer).
pub(crate) fn authorized_operations(
    broker: &Broker,
    session: &Session,
    resource_type: ResourceType,
    name: &str,
) -> i32 {
    broker.security.authorized_operations(session, resource_type, name)
}

/// A `kafka-protocol` string from a Rust one.
pub(crate) fn str_bytes(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// A topic name for a response.
pub(crate) fn topic_name(text: &str) -> TopicName {
    TopicName(str_bytes(text))
}

/// Topic names and ids, both ways, read once per request, for the APIs that name topics by id
/// (Fetch v13+, Produce v13, DeleteTopics v6, the KIP-848 group APIs). `LogManager::topic_id`
/// may read a `partition.metadata` file: the data path builds this on the blocking pool.
pub(crate) struct TopicIds {
    /// Every topic's partition count.
    pub(crate) counts: BTreeMap<String, i32>,
    pub(crate) by_name: BTreeMap<String, uuid::Uuid>,
    pub(crate) by_id: BTreeMap<uuid::Uuid, String>,
}

impl TopicIds {
    pub(crate) fn new(broker: &Broker) -> Self {
        let counts = broker.topic_counts();
        let by_name: BTreeMap<String, uuid::Uuid> = counts
            .keys()
            .filter_map(|name| {
                broker.topic_id(name).map(|id| (name.clone(), uuid::Uuid::from_bytes(id)))
            })
            .collect();
        let by_id = by_name.iter().map(|(name, id)| (*id, name.clone())).collect();
        Self { counts, by_name, by_id }
    }

    /// The name of the topic with this id; never for the nil id.
    pub(crate) fn name(&self, id: &uuid::Uuid) -> Option<&str> {
        self.by_id.get(id).map(String::as_str).filter(|_| !id.is_nil())
    }
}

/// The wall clock, in milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// Per-partition results `(topic, partition, code)` as a response's topics, in name order:
/// `partition` builds each partition's item, `topic` each topic's.
pub(crate) fn group_by_topic<P, T>(
    results: Vec<(String, i32, i16)>,
    partition: impl Fn(i32, i16) -> P,
    topic: impl Fn(String, Vec<P>) -> T,
) -> Vec<T> {
    let mut by_topic: BTreeMap<String, Vec<P>> = BTreeMap::new();
    for (name, index, code) in results {
        by_topic.entry(name).or_default().push(partition(index, code));
    }
    by_topic.into_iter().map(|(name, partitions)| topic(name, partitions)).collect()
}

/// Runs storage work on the blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, Error>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|source| Error::Task { what: "handler", source })
}

/// ApiVersions: the served APIs and their version ranges (`api_keys`, from the API table).
/// A v3+ client's software name and version must match Kafka's pattern, else INVALID_REQUEST.
pub(crate) fn api_versions(
    request: &ApiVersionsRequest,
    version: i16,
    api_keys: Vec<ApiVersion>,
) -> Result<Reply, Error> {
    let mut response = ApiVersionsResponse::default();
    let valid = |text: &StrBytes| {
        let bytes = text.as_bytes();
        !bytes.is_empty()
            && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
    };
    if version >= 3
        && !(valid(&request.client_software_name) && valid(&request.client_software_version))
    {
        response.error_code = ResponseError::InvalidRequest.code();
    }
    response.api_keys = api_keys;
    encode(&response, version)
}

/// DescribeCluster: this one node, which is also the controller. It is never fenced, so
/// `include_fenced_brokers` (v2) lists the same broker, with `is_fenced` false. Asking this
/// broker listener for controllers (endpoint type 2) or an unknown type is refused as Kafka's
/// `AuthHelper.computeDescribeClusterResponse` refuses it.
pub(crate) fn describe_cluster(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeClusterRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = DescribeClusterResponse::default();
    let refusal = match request.endpoint_type {
        1 => None,
        2 => Some((
            ResponseError::MismatchedEndpointType.code(),
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of \
             type CONTROLLER"
                .to_owned(),
        )),
        other => Some((
            ResponseError::UnsupportedEndpointType.code(),
            format!("Unsupported endpoint type {other}"),
        )),
    };
    if let Some((code, message)) = refusal {
        response.error_code = code;
        response.error_message = Some(str_bytes(&message));
        return encode(&response, version);
    }
    response.endpoint_type = request.endpoint_type;
    if request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = cluster_operations(broker, session);
    }
    response.cluster_id = str_bytes(&broker.cluster_id);
    response.controller_id = BrokerId(broker.config.node_id);
    if let Some(link) = broker.cluster() {
        response.brokers = cluster::describe_cluster_brokers(
            broker,
            link,
            session,
            version >= 2 && request.include_fenced_brokers,
        );
        return encode(&response, version);
    }
    response.brokers = vec![
        DescribeClusterBroker::default()
            .with_broker_id(BrokerId(broker.config.node_id))
            .with_host(str_bytes(broker.advertised(session).0))
            .with_port(broker.advertised(session).1),
    ];
    encode(&response, version)
}
