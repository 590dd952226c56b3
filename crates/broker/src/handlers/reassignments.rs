//! AlterPartitionReassignments (45) and ListPartitionReassignments (46), Kafka's KIP-455
//! (`KafkaApis`/`ControllerApis.handleAlterPartitionReassignments` and
//! `handleListPartitionReassignments`): ALTER and DESCRIBE on the cluster. In a cluster the
//! controller decides (`Controller::alter_partition_reassignments`, forwarded like every
//! change); the list is read from this broker's committed image. A single node hosts every
//! replica itself: a target of this node alone is already in place, anything else names a
//! broker that is not registered.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, BrokerId,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, TopicName,
};

use super::{cluster_allowed, str_bytes};
use crate::Broker;
use crate::cluster::raft::network::AdminRequest;
use crate::error::Error;
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::AclOperation;

/// Kafka's texts of the partition errors.
fn message(code: i16) -> Option<&'static str> {
    match ResponseError::try_from_code(code) {
        Some(ResponseError::NoReassignmentInProgress) => {
            Some("No partition reassignment is in progress.")
        }
        Some(ResponseError::InvalidReplicaAssignment) => Some("Replica assignment is invalid."),
        Some(ResponseError::InvalidReplicationFactor) => {
            Some("The replication factor of the reassignment is not the partition's.")
        }
        Some(ResponseError::UnknownTopicOrPartition) => {
            Some("This server does not host this topic-partition.")
        }
        Some(ResponseError::ClusterAuthorizationFailed) => Some("Cluster authorization failed."),
        _ => None,
    }
}

/// AlterPartitionReassignments v0-1: each partition's result; the top-level error only for an
/// authorization failure or a refused forward.
pub(crate) async fn alter_partition_reassignments(
    broker: &Arc<Broker>,
    session: &Session,
    request: AlterPartitionReassignmentsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let asked: Vec<(String, i32, Option<Vec<i32>>)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let target = p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect());
                (t.name.0.to_string(), p.partition_index, target)
            })
        })
        .collect();
    let allow_rf_change = version < 1 || request.allow_replication_factor_change;
    let mut response = AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_rf_change);
    let each = |code: i16| -> Vec<(String, i32, i16)> {
        asked.iter().map(|(t, p, _)| (t.clone(), *p, code)).collect()
    };
    let results = if !cluster_allowed(broker, session, AclOperation::Alter) {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        each(response.error_code)
    } else if let Some(link) = broker.cluster() {
        let forwarded = AdminRequest::AlterPartitionReassignments {
            partitions: asked.clone(),
            allow_replication_factor_change: allow_rf_change,
        };
        match link.forward(forwarded).await {
            Ok(reply) => reply.elections,
            Err(refusal) => {
                response.error_code = refusal.code;
                each(refusal.code)
            }
        }
    } else {
        single_node(broker, &asked)
    };
    response.responses = super::group_by_topic(
        results,
        |partition, code| {
            ReassignablePartitionResponse::default()
                .with_partition_index(partition)
                .with_error_code(code)
                .with_error_message(message(code).map(str_bytes))
        },
        |name, partitions| {
            ReassignableTopicResponse::default()
                .with_name(TopicName(str_bytes(&name)))
                .with_partitions(partitions)
        },
    );
    encode(&response, version)
}

/// A single node's answers: its own replica is already every partition's whole assignment.
fn single_node(
    broker: &Broker,
    asked: &[(String, i32, Option<Vec<i32>>)],
) -> Vec<(String, i32, i16)> {
    let counts = broker.topic_counts();
    let node = broker.config.node_id;
    asked
        .iter()
        .map(|(topic, partition, target)| {
            let exists = counts.get(topic).is_some_and(|n| (0..*n).contains(partition));
            let code = match target {
                _ if !exists => ResponseError::UnknownTopicOrPartition.code(),
                None => ResponseError::NoReassignmentInProgress.code(),
                Some(target) if target.as_slice() == [node] => 0,
                Some(_) => ResponseError::InvalidReplicaAssignment.code(),
            };
            (topic.clone(), *partition, code)
        })
        .collect()
}

/// ListPartitionReassignments v0: the reassignments under way in this broker's committed
/// image, of every topic or of the named partitions (unknown ones left out, as Kafka).
pub(crate) fn list_partition_reassignments(
    broker: &Arc<Broker>,
    session: &Session,
    request: &ListPartitionReassignmentsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = ListPartitionReassignmentsResponse::default();
    if !cluster_allowed(broker, session, AclOperation::Describe) {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        response.error_message = message(response.error_code).map(str_bytes);
        return encode(&response, version);
    }
    let asked: Option<BTreeMap<String, Vec<i32>>> = request.topics.as_ref().map(|topics| {
        topics.iter().map(|t| (t.name.0.to_string(), t.partition_indexes.clone())).collect()
    });
    let Some(link) = broker.cluster() else { return encode(&response, version) };
    response.topics = link.with_image(|image| {
        let ids = |ids: &[i32]| ids.iter().map(|b| BrokerId(*b)).collect::<Vec<_>>();
        image
            .topics
            .values()
            .filter_map(|topic| {
                let named = asked.as_ref().map(|a| a.get(&topic.name));
                if named == Some(None) {
                    return None;
                }
                let partitions: Vec<OngoingPartitionReassignment> = topic
                    .partitions
                    .iter()
                    .filter(|(id, p)| {
                        p.reassigning() && named.flatten().is_none_or(|wanted| wanted.contains(id))
                    })
                    .map(|(id, p)| {
                        OngoingPartitionReassignment::default()
                            .with_partition_index(*id)
                            .with_replicas(ids(&p.replicas))
                            .with_adding_replicas(ids(&p.adding_replicas))
                            .with_removing_replicas(ids(&p.removing_replicas))
                    })
                    .collect();
                (!partitions.is_empty()).then(|| {
                    OngoingTopicReassignment::default()
                        .with_name(TopicName(str_bytes(&topic.name)))
                        .with_partitions(partitions)
                })
            })
            .collect()
    });
    encode(&response, version)
}
