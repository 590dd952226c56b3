//! The API handlers (Kafka's `KafkaApis`): each takes a decoded request and returns the
//! encoded response body. Storage calls run on tokio's blocking pool, never on the reactor.

mod admin;
mod configs;
mod data;
pub(crate) mod groups;
mod log_dirs;

use std::sync::Arc;

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, BrokerId, DescribeClusterRequest,
    DescribeClusterResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_storage::manager::{Clock, SystemClock};

pub(crate) use admin::{create_partitions, create_topics, delete_records, delete_topics, metadata};
pub(crate) use configs::{alter_configs, describe_configs, incremental_alter_configs};
pub(crate) use data::{fetch, list_offsets, offset_for_leader_epoch, produce};
pub(crate) use log_dirs::{alter_replica_log_dirs, describe_log_dirs};

use crate::Broker;
use crate::dispatch::{Reply, api_version_list, encode};
use crate::errors;

/// Kafka's `AclOperation` codes as a bit field, for "authorized operations": with no
/// authorizer, Kafka grants every operation a resource type supports.
const fn operations(codes: &[u8]) -> i32 {
    let mut bits = 0;
    let mut idx = 0;
    while idx < codes.len() {
        bits |= 1 << codes[idx];
        idx += 1;
    }
    bits
}

/// READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
pub(crate) const TOPIC_OPERATIONS: i32 = operations(&[3, 4, 5, 6, 7, 8, 10, 11]);
/// CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
pub(crate) const CLUSTER_OPERATIONS: i32 = operations(&[5, 7, 8, 9, 10, 11, 12]);

/// A `kafka-protocol` string from a Rust one.
pub(crate) fn str_bytes(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

/// A topic name for a response.
pub(crate) fn topic_name(text: &str) -> TopicName {
    TopicName(str_bytes(text))
}

/// The wall clock, in milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemClock.now_ms()
}

/// Runs storage work on the blocking pool.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, String>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work).await.map_err(|error| format!("handler failed: {error}"))
}

/// ApiVersions: the served APIs and their version ranges. A v3+ client's software name and
/// version must match Kafka's pattern, else INVALID_REQUEST.
pub(crate) fn api_versions(request: &ApiVersionsRequest, version: i16) -> Result<Reply, String> {
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
        response.error_code = errors::INVALID_REQUEST;
    }
    response.api_keys = api_version_list();
    encode(&response, version)
}

/// InitProducerId for idempotent producers: a producer id never handed out before (reserved
/// durably in blocks) at epoch 0. Transactional ids need the transaction coordinator, which
/// seglog does not have yet: TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a fatal error for the
/// client rather than an endless retry.
pub(crate) async fn init_producer_id(
    broker: &Arc<Broker>,
    request: &InitProducerIdRequest,
    version: i16,
) -> Result<Reply, String> {
    let mut response = InitProducerIdResponse::default();
    response.producer_id = ProducerId(-1);
    response.producer_epoch = -1;
    match &request.transactional_id {
        None => {}
        // Kafka's TransactionCoordinator answers an empty transactional id this way.
        Some(id) if id.0.is_empty() => {
            response.error_code = errors::INVALID_REQUEST;
            return encode(&response, version);
        }
        Some(_) => {
            response.error_code = errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
            return encode(&response, version);
        }
    }
    let manager = Arc::clone(broker.manager());
    match blocking(move || manager.allocate_producer_id()).await? {
        Ok(producer_id) => {
            response.producer_id = ProducerId(producer_id);
            response.producer_epoch = 0;
        }
        Err(error) => response.error_code = errors::code(&error),
    }
    encode(&response, version)
}

/// DescribeCluster: this one node, which is also the controller.
pub(crate) fn describe_cluster(
    broker: &Arc<Broker>,
    request: &DescribeClusterRequest,
    version: i16,
) -> Result<Reply, String> {
    let mut response = DescribeClusterResponse::default();
    if request.endpoint_type != 1 {
        // Only brokers are described here (endpoint type 1); controllers have no listener.
        response.error_code = errors::UNSUPPORTED_VERSION;
        response.error_message = Some(str_bytes("only the broker endpoint type (1) is served"));
    }
    response.endpoint_type = request.endpoint_type;
    if request.include_cluster_authorized_operations {
        response.cluster_authorized_operations = CLUSTER_OPERATIONS;
    }
    response.cluster_id = str_bytes(&broker.cluster_id);
    response.controller_id = BrokerId(broker.config.node_id);
    response.brokers = vec![
        DescribeClusterBroker::default()
            .with_broker_id(BrokerId(broker.config.node_id))
            .with_host(str_bytes(&broker.advertised_host))
            .with_port(broker.advertised_port),
    ];
    encode(&response, version)
}
