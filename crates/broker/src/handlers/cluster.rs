//! What a cluster's broker answers from the committed metadata (Kafka's `KRaftMetadataCache`
//! behind `KafkaApis`): Metadata and DescribeCluster list the live brokers and each partition's
//! leader, replicas and ISR; topic changes are forwarded to the active controller.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DescribeQuorumRequest, DescribeQuorumResponse, MetadataRequest, MetadataResponse,
    UnregisterBrokerRequest, UnregisterBrokerResponse,
};

use super::{authorized_operations, str_bytes, topic_allowed, topic_name};
use crate::Broker;
use crate::cluster::image::{MetadataImage, TopicState};
use crate::cluster::link::ClusterLink;
use crate::cluster::raft::network::{AdminRequest, fetch_status};
use crate::cluster::raft::node::QuorumStatus;
use crate::security::Session;
use crate::security::acl::{AclOperation, ResourceType};

/// The name of the listener `session` came through: brokers are listed with their endpoint
/// of the same name, as Kafka does.
fn listener_name<'a>(broker: &'a Broker, session: &Session) -> &'a str {
    broker
        .config
        .listeners
        .get(session.listener)
        .or_else(|| broker.config.listeners.first())
        .map_or("PLAINTEXT", |l| l.name.as_str())
}

/// The live (unfenced) brokers with an endpoint on `listener`: (id, host, port, rack).
fn live_brokers(image: &MetadataImage, listener: &str) -> Vec<(i32, String, i32, Option<String>)> {
    image
        .brokers
        .values()
        .filter(|b| !b.fenced)
        .filter_map(|b| {
            let endpoint = b.endpoints.iter().find(|e| e.name.eq_ignore_ascii_case(listener))?;
            Some((b.id, endpoint.host.clone(), i32::from(endpoint.port), b.rack.clone()))
        })
        .collect()
}

/// Metadata for a cluster's broker. A topic asked for by name that does not exist is created
/// through the controller when auto-creation is on (`num.partitions`, replication factor 1).
pub(crate) fn metadata(
    broker: &Broker,
    link: &ClusterLink,
    session: &Session,
    request: &MetadataRequest,
    version: i16,
) -> MetadataResponse {
    let listener = listener_name(broker, session);
    let mut response = MetadataResponse::default();
    let auto_create = broker.config.auto_create_topics && request.allow_auto_topic_creation;
    let all_topics = match &request.topics {
        None => true,
        Some(topics) => version == 0 && topics.is_empty(),
    };
    if !all_topics && auto_create {
        auto_create_topics(broker, link, session, request);
    }
    link.with_image(|image| {
        response.brokers = live_brokers(image, listener)
            .into_iter()
            .map(|(id, host, port, rack)| {
                MetadataResponseBroker::default()
                    .with_node_id(BrokerId(id))
                    .with_host(str_bytes(&host))
                    .with_port(port)
                    .with_rack(rack.as_deref().map(str_bytes))
            })
            .collect();
        if version >= 2 {
            response.cluster_id = Some(str_bytes(&broker.cluster_id));
        }
        if version >= 1 {
            // Kafka's KRaft brokers name a live broker: clients cannot reach controllers.
            response.controller_id = BrokerId(link.broker_id());
        }
        if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
            response.cluster_authorized_operations = super::cluster_operations(broker, session);
        }
        let topic_operations = version >= 8 && request.include_topic_authorized_operations;
        let wanted: Vec<(Option<String>, [u8; 16])> = if all_topics {
            image.topics.values().map(|t| (Some(t.name.clone()), [0; 16])).collect()
        } else {
            request
                .topics
                .iter()
                .flatten()
                .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), *t.topic_id.as_bytes()))
                .collect()
        };
        for (name, id) in wanted {
            let mut out = MetadataResponseTopic::default();
            let by_id = name.is_none();
            let topic = match &name {
                Some(name) => image.topic(name),
                None => image.topics.get(&id),
            };
            let Some(topic) = topic else {
                if let Some(name) = name {
                    out.name = Some(topic_name(&name));
                    out.error_code = if seglog_format::names::validate_topic(&name).is_err() {
                        ResponseError::InvalidTopicException.code()
                    } else {
                        ResponseError::UnknownTopicOrPartition.code()
                    };
                } else {
                    out.topic_id = uuid::Uuid::from_bytes(id);
                    out.error_code = ResponseError::UnknownTopicId.code();
                }
                response.topics.push(out);
                continue;
            };
            if !topic_allowed(broker, session, AclOperation::Describe, &topic.name) {
                if !all_topics {
                    if by_id {
                        out.topic_id = uuid::Uuid::from_bytes(id);
                    } else {
                        out.name = Some(topic_name(&topic.name));
                    }
                    out.error_code = ResponseError::TopicAuthorizationFailed.code();
                    response.topics.push(out);
                }
                continue;
            }
            out.name = Some(topic_name(&topic.name));
            out.is_internal =
                version >= 1 && crate::replica::INTERNAL_TOPICS.contains(&topic.name.as_str());
            if version >= 10 {
                out.topic_id = uuid::Uuid::from_bytes(topic.id);
            }
            if topic_operations {
                out.topic_authorized_operations =
                    authorized_operations(broker, session, ResourceType::Topic, &topic.name);
            }
            out.partitions = partitions(image, topic, version);
            response.topics.push(out);
        }
    });
    response
}

/// Metadata's auto-creation in a cluster: each named topic that does not exist, through the
/// controller, when the client may create it.
fn auto_create_topics(
    broker: &Broker,
    link: &ClusterLink,
    session: &Session,
    request: &MetadataRequest,
) {
    for topic in request.topics.iter().flatten() {
        let Some(name) = &topic.name else { continue };
        let name = name.0.to_string();
        let exists = link.with_image(|image| image.topic_ids.contains_key(&name));
        let allowed = topic_allowed(broker, session, AclOperation::Create, &name)
            || super::cluster_allowed(broker, session, AclOperation::Create);
        if !exists
            && allowed
            && seglog_format::names::validate_topic(&name).is_ok()
            && !name.starts_with("__")
        {
            let partitions = i32::try_from(broker.config.log.n_partitions).unwrap_or(1);
            let created = forward(
                link,
                AdminRequest::CreateTopic {
                    name: name.clone(),
                    partitions,
                    replication_factor: broker.config.replication.default_replication_factor,
                    configs: Vec::new(),
                    assignments: None,
                    validate_only: false,
                },
            );
            match created {
                Ok(()) => tracing::info!(topic = %name, partitions, "auto-created topic"),
                Err((code, text)) => {
                    tracing::debug!(topic = %name, code, %text, "auto-creation refused");
                }
            }
        }
    }
}

/// A topic's partitions as Metadata lists them (Kafka's `KRaftMetadataCache.partitionMetadata`):
/// a partition without a leader is LEADER_NOT_AVAILABLE; replicas on brokers that are not live
/// are offline (v5+).
fn partitions(
    image: &MetadataImage,
    topic: &TopicState,
    version: i16,
) -> Vec<MetadataResponsePartition> {
    topic
        .partitions
        .iter()
        .map(|(index, state)| {
            let mut p = MetadataResponsePartition::default();
            p.partition_index = *index;
            p.leader_id = BrokerId(state.leader);
            p.leader_epoch = if version >= 7 { state.leader_epoch } else { -1 };
            p.replica_nodes = state.replicas.iter().copied().map(BrokerId).collect();
            p.isr_nodes = state.isr.iter().copied().map(BrokerId).collect();
            if version >= 5 {
                p.offline_replicas = state
                    .replicas
                    .iter()
                    .filter(|r| image.brokers.get(r).is_none_or(|b| b.fenced))
                    .copied()
                    .map(BrokerId)
                    .collect();
            }
            if state.leader < 0 {
                p.error_code = ResponseError::LeaderNotAvailable.code();
            }
            p
        })
        .collect()
}

/// DescribeCluster's brokers (v2 `include_fenced_brokers` lists the fenced ones too, marked).
pub(crate) fn describe_cluster_brokers(
    broker: &Broker,
    link: &ClusterLink,
    session: &Session,
    include_fenced: bool,
) -> Vec<DescribeClusterBroker> {
    let listener = listener_name(broker, session);
    link.with_image(|image| {
        image
            .brokers
            .values()
            .filter(|b| include_fenced || !b.fenced)
            .filter_map(|b| {
                let endpoint =
                    b.endpoints.iter().find(|e| e.name.eq_ignore_ascii_case(listener))?;
                Some(
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(b.id))
                        .with_host(str_bytes(&endpoint.host))
                        .with_port(i32::from(endpoint.port))
                        .with_rack(b.rack.as_deref().map(str_bytes))
                        .with_is_fenced(b.fenced),
                )
            })
            .collect()
    })
}

/// Forwards a topic change from a handler's blocking thread: `Ok` once the controller has
/// committed it and this broker has applied it, else Kafka's code and message.
pub(crate) fn forward(link: &ClusterLink, request: AdminRequest) -> Result<(), (i16, String)> {
    let name = match &request {
        AdminRequest::CreateTopic { name, .. }
        | AdminRequest::CreatePartitions { name, .. }
        | AdminRequest::DeleteTopic { name }
        | AdminRequest::SetTopicConfigs { name, .. } => name.clone(),
        AdminRequest::AllocateProducerIds { .. }
        | AdminRequest::UnregisterBroker { .. }
        | AdminRequest::Security(_)
        | AdminRequest::AlterPartition(_)
        | AdminRequest::ElectLeaders { .. }
        | AdminRequest::AlterPartitionReassignments { .. }
        | AdminRequest::SetBrokerConfigs { .. } => String::new(),
    };
    let factor = match &request {
        AdminRequest::CreateTopic { replication_factor, .. } => *replication_factor,
        _ => 1,
    };
    let answer = tokio::runtime::Handle::current().block_on(link.forward(request));
    answer.map(|_| ()).map_err(|refusal| {
        let live = link.with_image(|image| image.brokers.values().filter(|b| b.is_active()).count());
        let code = refusal.code;
        let text = if code == ResponseError::TopicAlreadyExists.code() {
            format!("Topic '{name}' already exists.")
        } else if code == ResponseError::UnknownTopicOrPartition.code() {
            format!("The topic '{name}' does not exist.")
        } else if code == ResponseError::InvalidReplicationFactor.code() {
            format!(
                "Unable to replicate the partition {factor} time(s): The target replication factor of {factor} cannot be reached because only {live} broker(s) are registered."
            )
        } else {
            refusal.message
        };
        (code, text)
    })
}

/// Creates a coordinator's internal topic through the controller if the metadata lacks it
/// (Kafka creates `__consumer_offsets` and `__transaction_state` on the first FindCoordinator
/// for their key type): `key_type` 0 the group coordinator's, 1 the transaction coordinator's.
pub(crate) fn ensure_coordinator_topic(
    broker: &Broker,
    link: &ClusterLink,
    key_type: i8,
) -> Result<(), ResponseError> {
    let replication = &broker.config.replication;
    let (name, partitions, configs, replication_factor) = if key_type == 1 {
        let txn = broker.txns.config();
        let mut configs = crate::replica::internal_topic_overrides(
            seglog_storage::config::BrokerCompressionType::Uncompressed,
            txn.state_log_segment_bytes,
        );
        configs.insert(
            "min.insync.replicas".to_owned(),
            replication.transaction_state_log_min_isr.to_string(),
        );
        (
            crate::txn::TRANSACTION_STATE_TOPIC,
            txn.state_log_partitions,
            configs,
            replication.transaction_state_log_replication_factor,
        )
    } else {
        (
            crate::group::OFFSETS_TOPIC,
            broker.config.groups.offsets_topic_partitions,
            broker.groups.offsets_topic_overrides(),
            replication.offsets_topic_replication_factor,
        )
    };
    if link.with_image(|image| image.topic_ids.contains_key(name)) {
        return Ok(());
    }
    let request = AdminRequest::CreateTopic {
        name: name.to_owned(),
        partitions,
        replication_factor,
        configs: configs.into_iter().collect(),
        assignments: None,
        validate_only: false,
    };
    match forward(link, request) {
        Ok(()) => Ok(()),
        // Another broker created it first.
        Err((code, _)) if code == ResponseError::TopicAlreadyExists.code() => Ok(()),
        Err((code, text)) => {
            tracing::warn!(code, %text, "cannot create {name}");
            Err(ResponseError::CoordinatorNotAvailable)
        }
    }
}

/// The coordinator of a key whose state is in `tp` (a partition of `__consumer_offsets` or
/// `__transaction_state`): the partition's leader, with its endpoint on the listener of
/// `session`; COORDINATOR_NOT_AVAILABLE while it has none.
pub(crate) fn coordinator_at(
    broker: &Broker,
    link: &ClusterLink,
    session: &Session,
    tp: &seglog_storage::log::partition_log::TopicPartition,
) -> Result<(i32, String, i32), ResponseError> {
    let listener = listener_name(broker, session);
    let leader = link
        .leader_of(tp)
        .map(|(leader, _)| leader)
        .filter(|leader| *leader >= 0)
        .ok_or(ResponseError::CoordinatorNotAvailable)?;
    link.with_image(|image| {
        live_brokers(image, listener)
            .into_iter()
            .find(|(id, ..)| *id == leader)
            .map(|(id, host, port, _)| (id, host, port))
            .ok_or(ResponseError::CoordinatorNotAvailable)
    })
}

/// DescribeQuorum (Kafka's `KafkaRaftClient.handleDescribeQuorumRequest`, which a broker
/// forwards to the controllers): the metadata quorum as its leader sees it, with DESCRIBE on
/// the cluster. Only `__cluster_metadata-0` is a quorum's partition; any other, and every
/// partition on a node without a quorum (a single node), is UNKNOWN_TOPIC_OR_PARTITION.
/// Fetch and catch-up times are not tracked (-1).
pub(crate) async fn describe_quorum(
    broker: &std::sync::Arc<Broker>,
    session: &Session,
    request: DescribeQuorumRequest,
    version: i16,
) -> Result<crate::request::Reply, crate::error::Error> {
    use kafka_protocol::messages::describe_quorum_response as out;
    let mut response = DescribeQuorumResponse::default();
    if !super::cluster_allowed(broker, session, AclOperation::Describe) {
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return crate::request::encode(&response, version);
    }
    let status = match broker.cluster() {
        Some(link) => Some(leader_status(link).await),
        None => None,
    };
    for topic in &request.topics {
        let mut topic_out = out::TopicData::default().with_topic_name(topic.topic_name.clone());
        for partition in &topic.partitions {
            let mut p =
                out::PartitionData::default().with_partition_index(partition.partition_index);
            let ours = topic.topic_name.0.as_str()
                == crate::cluster::raft::log_store::METADATA_TOPIC
                && partition.partition_index == 0;
            match (&status, ours) {
                (Some(Some(status)), true) => {
                    let replica = |id: &u64| {
                        let end = status
                            .progress
                            .iter()
                            .find(|(member, _)| member == id)
                            .map_or(-1, |(_, end)| *end);
                        out::ReplicaState::default()
                            .with_replica_id(BrokerId(i32::try_from(*id).unwrap_or(-1)))
                            .with_log_end_offset(end)
                            .with_last_fetch_timestamp(-1)
                            .with_last_caught_up_timestamp(-1)
                    };
                    p.leader_id =
                        BrokerId(status.leader.and_then(|l| i32::try_from(l).ok()).unwrap_or(-1));
                    p.leader_epoch = i32::try_from(status.term).unwrap_or(i32::MAX);
                    p.high_watermark = status.high_watermark;
                    p.current_voters = status.voters.iter().map(replica).collect();
                    p.observers = status.learners.iter().map(replica).collect();
                }
                (Some(None), true) => {
                    p.error_code = ResponseError::NotLeaderOrFollower.code();
                    if version >= 2 {
                        p.error_message =
                            Some(str_bytes("no leader of the metadata quorum is known"));
                    }
                }
                _ => p.error_code = ResponseError::UnknownTopicOrPartition.code(),
            }
            topic_out.partitions.push(p);
        }
        response.topics.push(topic_out);
    }
    if version >= 2
        && let Some(Some(status)) = &status
    {
        response.nodes = status
            .addresses
            .iter()
            .filter(|(id, _)| status.voters.contains(id))
            .filter_map(|(id, addr)| {
                let (host, port) = addr.rsplit_once(':')?;
                Some(
                    out::Node::default()
                        .with_node_id(BrokerId(i32::try_from(*id).ok()?))
                        .with_listeners(vec![
                            out::Listener::default()
                                .with_name(str_bytes("CONTROLLER"))
                                .with_host(str_bytes(host))
                                .with_port(port.parse().ok()?),
                        ]),
                )
            })
            .collect();
    }
    crate::request::encode(&response, version)
}

/// The quorum's status as its leader reports it (asked of the leader when this node is not
/// it); `None` without a known, reachable leader.
async fn leader_status(link: &ClusterLink) -> Option<QuorumStatus> {
    let local = link.member().node().status();
    let leader = local.leader?;
    if leader == local.node_id {
        return Some(local);
    }
    let addr = local.addresses.iter().find(|(id, _)| *id == leader).map(|(_, a)| a.clone())?;
    let transport = link.member().node().transport();
    fetch_status(&addr, std::time::Duration::from_secs(5), transport).await.ok()
}

/// UnregisterBroker (Kafka's `kafka-cluster.sh unregister`), with ALTER on the cluster: a
/// cluster's broker forwards it to the controller; a single node has no registrations
/// (BROKER_ID_NOT_REGISTERED).
pub(crate) async fn unregister_broker(
    broker: &std::sync::Arc<Broker>,
    session: &Session,
    request: &UnregisterBrokerRequest,
    version: i16,
) -> Result<crate::request::Reply, crate::error::Error> {
    let mut response = UnregisterBrokerResponse::default();
    let answer = if !super::cluster_allowed(broker, session, AclOperation::Alter) {
        Err((ResponseError::ClusterAuthorizationFailed.code(), None))
    } else if let Some(link) = broker.cluster() {
        let link = std::sync::Arc::clone(link);
        let request = AdminRequest::UnregisterBroker { broker_id: request.broker_id.0 };
        super::blocking(move || forward(&link, request))
            .await?
            .map_err(|(code, text)| (code, Some(text)))
    } else {
        Err((
            ResponseError::BrokerIdNotRegistered.code(),
            Some("this node is not in a cluster (process.roles is unset)".to_owned()),
        ))
    };
    if let Err((code, text)) = answer {
        response.error_code = code;
        response.error_message = text.map(|t| str_bytes(&t));
    }
    crate::request::encode(&response, version)
}

/// Kafka's default texts of ElectLeaders' partition errors.
fn election_message(code: i16) -> Option<&'static str> {
    match ResponseError::try_from_code(code) {
        Some(ResponseError::ElectionNotNeeded) => {
            Some("Leader election not needed for topic partition.")
        }
        Some(ResponseError::PreferredLeaderNotAvailable) => {
            Some("The preferred leader was not available.")
        }
        Some(ResponseError::EligibleLeadersNotAvailable) => {
            Some("Eligible topic partition leaders are not available.")
        }
        Some(ResponseError::UnknownTopicOrPartition) => {
            Some("This server does not host this topic-partition.")
        }
        Some(ResponseError::ClusterAuthorizationFailed) => Some("Cluster authorization failed."),
        _ => None,
    }
}

/// ElectLeaders (Kafka's `KafkaApis.handleElectLeaders`, decided by the controller's
/// `electLeaders`): ALTER on the cluster. In a cluster the controller elects the preferred
/// replica (type 0, the only one before v1) or, for a leaderless partition, an ISR member or
/// any live replica (type 1, unclean), and answers for each partition; every partition when
/// none is named, its ELECTION_NOT_NEEDED results left out. A single node leads each of its
/// partitions already: ELECTION_NOT_NEEDED.
pub(crate) async fn elect_leaders(
    broker: &std::sync::Arc<Broker>,
    session: &Session,
    request: kafka_protocol::messages::ElectLeadersRequest,
    version: i16,
) -> Result<crate::request::Reply, crate::error::Error> {
    use kafka_protocol::messages::ElectLeadersResponse;
    use kafka_protocol::messages::elect_leaders_response::{
        PartitionResult, ReplicaElectionResult,
    };
    let election_type = if version >= 1 { request.election_type } else { 0 };
    let asked: Option<Vec<(String, i32)>> = request.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), *p)))
            .collect()
    });
    let each = |code: i16| -> Vec<(String, i32, i16)> {
        asked.iter().flatten().map(|(t, p)| (t.clone(), *p, code)).collect()
    };
    let mut response = ElectLeadersResponse::default();
    let results = if !super::cluster_allowed(broker, session, AclOperation::Alter) {
        if version >= 1 {
            response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        }
        each(ResponseError::ClusterAuthorizationFailed.code())
    } else if let Some(link) = broker.cluster() {
        let request = AdminRequest::ElectLeaders { election_type, partitions: asked.clone() };
        match link.forward(request).await {
            Ok(reply) => reply.elections,
            Err(refusal) => {
                if version >= 1 && asked.is_none() {
                    response.error_code = refusal.code;
                }
                each(refusal.code)
            }
        }
    } else {
        let counts = broker.topic_counts();
        asked
            .iter()
            .flatten()
            .map(|(t, p)| {
                let exists = counts.get(t).is_some_and(|n| (0..*n).contains(p));
                let code = if exists {
                    ResponseError::ElectionNotNeeded
                } else {
                    ResponseError::UnknownTopicOrPartition
                };
                (t.clone(), *p, code.code())
            })
            .collect()
    };
    response.replica_election_results = super::group_by_topic(
        results,
        |partition, code| {
            PartitionResult::default()
                .with_partition_id(partition)
                .with_error_code(code)
                .with_error_message(election_message(code).map(str_bytes))
        },
        |topic, partition_result| {
            ReplicaElectionResult::default()
                .with_topic(kafka_protocol::messages::TopicName(str_bytes(&topic)))
                .with_partition_result(partition_result)
        },
    );
    crate::request::encode(&response, version)
}
