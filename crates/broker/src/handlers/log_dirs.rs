//! DescribeLogDirs (API 35) and AlterReplicaLogDirs (API 34), Kafka's
//! `handleDescribeLogDirsRequest` and `handleAlterReplicaLogDirsRequest`: each log directory
//! with its space and replicas, and moving a partition to another directory of this broker (the
//! copy and the swap run in `LogManager::tick`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, DescribeLogDirsRequest,
    DescribeLogDirsResponse,
};
use seglog_storage::log::partition_log::TopicPartition;

use super::{blocking, cluster_allowed, str_bytes, topic_name};
use crate::Broker;
use crate::error::{Error, storage_error};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::AclOperation;

/// A byte count on the wire.
fn wire_bytes(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// DescribeLogDirs: every log directory (an offline one with `KAFKA_STORAGE_ERROR` and nothing
/// else), its replicas of the partitions asked for (all of them for a null list), and from v4
/// the size and free space of its file system.
pub(crate) async fn describe_log_dirs(
    broker: &Arc<Broker>,
    session: &Session,
    request: DescribeLogDirsRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka: DESCRIBE on the cluster, else no directories and (from v3, which has the field)
    // CLUSTER_AUTHORIZATION_FAILED.
    if !cluster_allowed(broker, session, AclOperation::Describe) {
        let mut response = DescribeLogDirsResponse::default();
        if version >= 3 {
            response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        }
        return encode(&response, version);
    }
    let broker = Arc::clone(broker);
    let response = blocking(move || {
        let wanted: Option<BTreeSet<TopicPartition>> = request.topics.as_ref().map(|topics| {
            topics
                .iter()
                .flat_map(|topic| {
                    topic.partitions.iter().map(|partition| TopicPartition {
                        topic: topic.topic.0.to_string(),
                        partition: *partition,
                    })
                })
                .collect()
        });
        let mut response = DescribeLogDirsResponse::default();
        for dir in broker.manager.describe_log_dirs(wanted.as_ref()) {
            let mut result = DescribeLogDirsResult::default();
            result.log_dir = str_bytes(&dir.path.display().to_string());
            if let Some(error) = &dir.error {
                result.error_code = storage_error(error).code();
                response.results.push(result);
                continue;
            }
            let mut topics: BTreeMap<&str, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
            for replica in &dir.replicas {
                let mut partition = DescribeLogDirsPartition::default();
                partition.partition_index = replica.topic_partition.partition;
                partition.partition_size = wire_bytes(replica.size_bytes);
                partition.offset_lag = replica.offset_lag;
                partition.is_future_key = replica.is_future;
                topics.entry(&replica.topic_partition.topic).or_default().push(partition);
            }
            for (name, partitions) in topics {
                let mut topic = DescribeLogDirsTopic::default();
                topic.name = topic_name(name);
                topic.partitions = partitions;
                result.topics.push(topic);
            }
            if version >= 4
                && let Some(space) = dir.space
            {
                result.total_bytes = wire_bytes(space.total_bytes);
                result.usable_bytes = wire_bytes(space.usable_bytes);
            }
            response.results.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// A partition the cluster's metadata has but this broker holds no log of (its replica not
/// created yet, or placed elsewhere): Kafka answers REPLICA_NOT_AVAILABLE, which
/// `kafka-reassign-partitions.sh` retries while a reassignment creates the replica.
fn not_created_yet(broker: &Broker, tp: &TopicPartition, error: &seglog_storage::Error) -> bool {
    let seglog_storage::Error::UnknownTopicOrPartition { .. } = error else { return false };
    broker.cluster().is_some_and(|link| {
        link.with_image(|image| {
            image.topic(&tp.topic).is_some_and(|t| t.partitions.contains_key(&tp.partition))
        })
    })
}

/// AlterReplicaLogDirs: for each partition, starts its move to the directory given, with
/// Kafka's per-partition errors: `LOG_DIR_NOT_FOUND` for a path that is not a log directory,
/// `KAFKA_STORAGE_ERROR` while a directory is offline, `UNKNOWN_TOPIC_OR_PARTITION`, in a
/// cluster `REPLICA_NOT_AVAILABLE` for a partition whose replica is not here. A partition
/// already in that directory succeeds.
pub(crate) async fn alter_replica_log_dirs(
    broker: &Arc<Broker>,
    session: &Session,
    request: AlterReplicaLogDirsRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka: ALTER on the cluster, else every partition is CLUSTER_AUTHORIZATION_FAILED.
    let allowed = cluster_allowed(broker, session, AclOperation::Alter);
    let broker = Arc::clone(broker);
    let response = blocking(move || {
        let mut by_topic: BTreeMap<String, Vec<AlterReplicaLogDirPartitionResult>> =
            BTreeMap::new();
        for dir in &request.dirs {
            let path = Path::new(dir.path.as_str());
            for topic in &dir.topics {
                let name = topic.name.0.to_string();
                for partition in &topic.partitions {
                    let tp = TopicPartition { topic: name.clone(), partition: *partition };
                    let mut result = AlterReplicaLogDirPartitionResult::default();
                    result.partition_index = *partition;
                    if !allowed {
                        result.error_code = ResponseError::ClusterAuthorizationFailed.code();
                    } else if let Err(error) = broker.manager.alter_log_dir(&tp, path) {
                        tracing::info!(%tp, dir = %path.display(), %error, "log dir move refused");
                        result.error_code = if not_created_yet(&broker, &tp, &error) {
                            ResponseError::ReplicaNotAvailable.code()
                        } else {
                            storage_error(&error).code()
                        };
                    }
                    by_topic.entry(name.clone()).or_default().push(result);
                }
            }
        }
        let mut response = AlterReplicaLogDirsResponse::default();
        for (name, partitions) in by_topic {
            let mut topic = AlterReplicaLogDirTopicResult::default();
            topic.topic_name = topic_name(&name);
            topic.partitions = partitions;
            response.results.push(topic);
        }
        response
    })
    .await?;
    encode(&response, version)
}
