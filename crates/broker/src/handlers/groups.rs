//! The group APIs (Kafka's `KafkaApis.handle*Group*` and offset handlers): FindCoordinator,
//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, ListGroups,
//! DescribeGroups, DeleteGroups and OffsetDelete, translated to and from the coordinator
//! (`crate::group`). Fields a version does not carry stay at their defaults, as the codec
//! requires.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribeAssignment, DescribedGroup as ConsumerDescribedGroup,
    Member as ConsumerDescribedMember, TopicPartitions as DescribeTopicPartitions,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment as HeartbeatAssignment, TopicPartitions as HeartbeatTopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
};

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest,
    DescribeGroupsResponse, FindCoordinatorRequest, FindCoordinatorResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{
    TopicIds, authorized_operations, blocking, cluster_allowed, group_allowed, now_ms, str_bytes,
    topic_allowed, topic_name, txn_id_allowed,
};
use crate::Broker;
use crate::error::{Error, NONE};
use crate::group::{
    ConsumerHeartbeat, FetchedOffsets, JoinRequest, OffsetToCommit, Partition, SyncRequest,
    TopicPartitions,
};
use crate::request::{Reply, Request, encode};
use crate::security::Session;
use crate::security::acl::{AclOperation, ResourceType};

/// GROUP_AUTHORIZATION_FAILED's code.
const GROUP_DENIED: i16 = ResponseError::GroupAuthorizationFailed.code();
/// TOPIC_AUTHORIZATION_FAILED's code.
const TOPIC_DENIED: i16 = ResponseError::TopicAuthorizationFailed.code();

/// What the coordinator may be asked about a FindCoordinator key (Kafka's
/// `getCoordinator`): DESCRIBE on the group or the transactional id.
fn coordinator_refusal(
    broker: &Broker,
    session: &Session,
    key_type: i8,
    key: &str,
) -> Option<(i16, &'static str)> {
    match key_type {
        0 if !group_allowed(broker, session, AclOperation::Describe, key) => {
            Some((GROUP_DENIED, "Group authorization failed."))
        }
        1 if !txn_id_allowed(broker, session, AclOperation::Describe, key) => Some((
            ResponseError::TransactionalIdAuthorizationFailed.code(),
            "Transactional Id authorization failed.",
        )),
        _ => None,
    }
}

/// The group's authorized operations when asked for (else Kafka's "omitted", `i32::MIN`).
fn group_operations(broker: &Broker, session: &Session, asked: bool, group: &str) -> i32 {
    if asked {
        authorized_operations(broker, session, ResourceType::Group, group)
    } else {
        i32::MIN
    }
}

fn text(value: &StrBytes) -> String {
    value.as_str().to_owned()
}

fn group_id(value: &str) -> GroupId {
    GroupId(str_bytes(value))
}

/// Who coordinates `key`: this node, or in a cluster the leader of the key's partition of
/// `__consumer_offsets` (`key_type` 0) or `__transaction_state` (1).
fn locate_coordinator(
    broker: &Broker,
    session: &Session,
    key_type: i8,
    key: &str,
) -> Result<(i32, String, i32), ResponseError> {
    let Some(link) = broker.cluster() else {
        let (host, port) = broker.advertised(session);
        return Ok((broker.config.node_id, host.to_owned(), port));
    };
    let tp = if key_type == 1 {
        broker.txns.partition_of(key)?
    } else {
        seglog_storage::log::partition_log::TopicPartition {
            topic: crate::group::OFFSETS_TOPIC.to_owned(),
            partition: broker.groups.partition_of(key),
        }
    };
    super::cluster::coordinator_at(broker, link, session, &tp)
}

/// FindCoordinator: this node, for groups and transactional ids alike (creating
/// `__consumer_offsets` on first use, as Kafka does); share-group keys (type 2) are refused.
pub(crate) async fn find_coordinator(
    broker: &Arc<Broker>,
    session: &Session,
    request: FindCoordinatorRequest,
    version: i16,
) -> Result<Reply, Error> {
    let for_groups = Arc::clone(broker);
    let key_type = request.key_type;
    let keys = if version < 4 {
        std::slice::from_ref(&request.key)
    } else {
        request.coordinator_keys.as_slice()
    };
    let refusals: Vec<Option<(i16, &'static str)>> = keys
        .iter()
        .map(|key| coordinator_refusal(broker, session, key_type, key.as_str()))
        .collect();
    // Kafka creates the coordinator's topic on the first FindCoordinator for its key type,
    // once a key is authorized.
    let ensured = if refusals.iter().any(Option::is_none) {
        blocking(move || match (for_groups.cluster(), key_type) {
            (Some(link), _) => {
                super::cluster::ensure_coordinator_topic(&for_groups, link, key_type).map(|()| 0)
            }
            (None, 1) => for_groups.txns.ensure_topic(),
            (None, _) => for_groups.groups.ensure_offsets_topic(),
        })
        .await?
    } else {
        Ok(0)
    };
    // Who coordinates each key: this node, or in a cluster the leader of the key's partition.
    let located: Vec<Result<(i32, String, i32), ResponseError>> = keys
        .iter()
        .map(|key| locate_coordinator(broker, session, key_type, key.as_str()))
        .collect();
    let answer = |idx: usize, key: &StrBytes| -> (i16, Option<&'static str>) {
        if request.key_type != 0 && request.key_type != 1 {
            return (
                ResponseError::InvalidRequest.code(),
                Some("only group (0) and transaction (1) keys are served"),
            );
        }
        if let Some(Some((code, message))) = refusals.get(idx) {
            return (*code, Some(*message));
        }
        if key.is_empty() {
            let message = if request.key_type == 0 {
                "the group id is empty"
            } else {
                "the transactional id is empty"
            };
            return (ResponseError::InvalidRequest.code(), Some(message));
        }
        match (&ensured, located.get(idx)) {
            (Ok(_), Some(Ok(_))) => (NONE, None),
            (Ok(_), _) => (
                ResponseError::CoordinatorNotAvailable.code(),
                Some("the coordinator's partition has no leader"),
            ),
            (Err(code), _) => (code.code(), Some("the coordinator's topic is not available")),
        }
    };
    let mut response = FindCoordinatorResponse::default();
    if version < 4 {
        let (code, message) = answer(0, &request.key);
        response.error_code = code;
        if let (NONE, Some(Ok((id, host, port)))) = (code, located.first()) {
            response.node_id = BrokerId(*id);
            response.host = str_bytes(host);
            response.port = *port;
        } else {
            response.node_id = BrokerId(-1);
            response.port = -1;
        }
        if version >= 1 {
            response.error_message = message.map(str_bytes);
        }
    } else {
        for (idx, key) in request.coordinator_keys.iter().enumerate() {
            let (code, message) = answer(idx, key);
            let mut coordinator = Coordinator::default()
                .with_key(key.clone())
                .with_error_code(code)
                .with_error_message(message.map(str_bytes));
            if let (NONE, Some(Ok((id, host, port)))) = (code, located.get(idx)) {
                coordinator.node_id = BrokerId(*id);
                coordinator.host = str_bytes(host);
                coordinator.port = *port;
            } else {
                coordinator.node_id = BrokerId(-1);
                coordinator.port = -1;
            }
            response.coordinators.push(coordinator);
        }
    }
    encode(&response, version)
}

pub(crate) async fn join_group(
    broker: &Arc<Broker>,
    request_frame: &Request,
    request: JoinGroupRequest,
    version: i16,
) -> Result<Reply, Error> {
    let join = JoinRequest {
        group_id: text(&request.group_id.0),
        member_id: text(&request.member_id),
        group_instance_id: request.group_instance_id.as_ref().map(text),
        client_id: request_frame.header.client_id.as_ref().map(text).unwrap_or_default(),
        client_host: request_frame.client_host(),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: the session timeout stands in (as in Kafka).
        rebalance_timeout_ms: if version == 0 {
            request.session_timeout_ms
        } else {
            request.rebalance_timeout_ms
        },
        protocol_type: text(&request.protocol_type),
        protocols: request
            .protocols
            .into_iter()
            .map(|protocol| (text(&protocol.name), protocol.metadata))
            .collect(),
        require_known_member_id: version >= 4,
    };
    let member_id = join.member_id.clone();
    let result =
        if group_allowed(broker, &request_frame.session, AclOperation::Read, &join.group_id) {
            let for_groups = Arc::clone(broker);
            let receiver = blocking(move || for_groups.groups.join(join, now_ms())).await?;
            receiver.await.unwrap_or_else(|_| {
                crate::group::JoinResult::error(
                    &member_id,
                    ResponseError::RebalanceInProgress.code(),
                )
            })
        } else {
            // Kafka's `JoinGroupRequest.getErrorResponse`: no member id, generation -1.
            crate::group::JoinResult::error("", GROUP_DENIED)
        };
    let mut response = JoinGroupResponse::default();
    response.error_code = result.error_code;
    response.generation_id = result.generation_id;
    response.protocol_name = if version >= 7 {
        result.protocol_name.as_deref().map(str_bytes)
    } else {
        // Before v7 the field is not nullable: an empty name stands for none.
        Some(str_bytes(result.protocol_name.as_deref().unwrap_or_default()))
    };
    if version >= 7 {
        response.protocol_type = result.protocol_type.as_deref().map(str_bytes);
    }
    response.leader = str_bytes(&result.leader);
    response.member_id = str_bytes(&result.member_id);
    if version >= 9 {
        response.skip_assignment = result.skip_assignment;
    }
    response.members = result
        .members
        .into_iter()
        .map(|(member_id, instance, metadata)| {
            let mut member =
                JoinGroupResponseMember::default().with_member_id(str_bytes(&member_id));
            if version >= 5 {
                member.group_instance_id = instance.as_deref().map(str_bytes);
            }
            member.metadata = metadata;
            member
        })
        .collect();
    encode(&response, version)
}

pub(crate) async fn sync_group(
    broker: &Arc<Broker>,
    session: &Session,
    request: SyncGroupRequest,
    version: i16,
) -> Result<Reply, Error> {
    let sync = SyncRequest {
        group_id: text(&request.group_id.0),
        generation_id: request.generation_id,
        member_id: text(&request.member_id),
        group_instance_id: request.group_instance_id.as_ref().map(text),
        protocol_type: request.protocol_type.as_ref().map(text),
        protocol_name: request.protocol_name.as_ref().map(text),
        assignments: request
            .assignments
            .into_iter()
            .map(|assignment| (text(&assignment.member_id), assignment.assignment))
            .collect(),
    };
    let result = if group_allowed(broker, session, AclOperation::Read, &sync.group_id) {
        let for_groups = Arc::clone(broker);
        let receiver = blocking(move || for_groups.groups.sync(sync, now_ms())).await?;
        receiver.await.unwrap_or_else(|_| {
            crate::group::SyncResult::error(ResponseError::RebalanceInProgress.code())
        })
    } else {
        crate::group::SyncResult::error(GROUP_DENIED)
    };
    let mut response = SyncGroupResponse::default();
    response.error_code = result.error_code;
    response.assignment = result.assignment;
    if version >= 5 {
        response.protocol_type = result.protocol_type.as_deref().map(str_bytes);
        response.protocol_name = result.protocol_name.as_deref().map(str_bytes);
    }
    encode(&response, version)
}

pub(crate) async fn heartbeat(
    broker: &Arc<Broker>,
    session: &Session,
    request: HeartbeatRequest,
    version: i16,
) -> Result<Reply, Error> {
    if !group_allowed(broker, session, AclOperation::Read, request.group_id.0.as_str()) {
        return encode(&HeartbeatResponse::default().with_error_code(GROUP_DENIED), version);
    }
    let for_groups = Arc::clone(broker);
    let code = blocking(move || {
        for_groups.groups.heartbeat(
            request.group_id.0.as_str(),
            request.generation_id,
            request.member_id.as_str(),
            request.group_instance_id.as_ref().map(StrBytes::as_str),
            now_ms(),
        )
    })
    .await?;
    encode(&HeartbeatResponse::default().with_error_code(code), version)
}

pub(crate) async fn leave_group(
    broker: &Arc<Broker>,
    session: &Session,
    request: LeaveGroupRequest,
    version: i16,
) -> Result<Reply, Error> {
    let leaving: Vec<(String, Option<String>)> = if version < 3 {
        vec![(text(&request.member_id), None)]
    } else {
        request
            .members
            .iter()
            .map(|member| (text(&member.member_id), member.group_instance_id.as_ref().map(text)))
            .collect()
    };
    let group = text(&request.group_id.0);
    if !group_allowed(broker, session, AclOperation::Read, &group) {
        // Kafka's `LeaveGroupRequest.getErrorResponse`: the code alone, no members.
        return encode(&LeaveGroupResponse::default().with_error_code(GROUP_DENIED), version);
    }
    let for_groups = Arc::clone(broker);
    let asked = leaving.clone();
    let (code, codes) = blocking(move || for_groups.groups.leave(&group, &asked, now_ms())).await?;
    let mut response = LeaveGroupResponse::default();
    if version < 3 {
        response.error_code =
            if code == NONE { codes.first().copied().unwrap_or(code) } else { code };
    } else {
        response.error_code = code;
        response.members = leaving
            .iter()
            .zip(codes.iter().copied().chain(std::iter::repeat(code)))
            .map(|((member_id, instance), code)| {
                MemberResponse::default()
                    .with_member_id(str_bytes(member_id))
                    .with_group_instance_id(instance.as_deref().map(str_bytes))
                    .with_error_code(code)
            })
            .collect();
    }
    encode(&response, version)
}

pub(crate) async fn offset_commit(
    broker: &Arc<Broker>,
    session: &Session,
    request: OffsetCommitRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka's `handleOffsetCommitRequest`: READ on the group, else every partition is
    // GROUP_AUTHORIZATION_FAILED; then READ on each topic, else TOPIC_AUTHORIZATION_FAILED.
    // It answers UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist and commits
    // the others.
    let group_ok = group_allowed(broker, session, AclOperation::Read, request.group_id.0.as_str());
    let readable: BTreeSet<&str> = request
        .topics
        .iter()
        .map(|topic| topic.name.0.as_str())
        .filter(|name| group_ok && topic_allowed(broker, session, AclOperation::Read, name))
        .collect();
    let counts = broker.topic_counts();
    let exists = |topic: &str, partition: i32| {
        readable.contains(topic)
            && counts.get(topic).is_some_and(|count| (0..*count).contains(&partition))
    };
    let offsets: Vec<OffsetToCommit> = request
        .topics
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(move |partition| OffsetToCommit {
                topic: text(&topic.name.0),
                partition: partition.partition_index,
                offset: partition.committed_offset,
                leader_epoch: if version >= 6 { partition.committed_leader_epoch } else { -1 },
                metadata: partition.committed_metadata.as_ref().map(text).unwrap_or_default(),
            })
        })
        .filter(|offset| exists(&offset.topic, offset.partition))
        .collect();
    let group = text(&request.group_id.0);
    let member = text(&request.member_id);
    let instance = request.group_instance_id.as_ref().map(text);
    let generation = request.generation_id_or_member_epoch;
    let for_groups = Arc::clone(broker);
    let asked = offsets.clone();
    let codes = if group_ok {
        blocking(move || {
            for_groups.groups.commit_offsets(
                &group,
                generation,
                &member,
                instance.as_deref(),
                &asked,
                now_ms(),
            )
        })
        .await?
    } else {
        Vec::new()
    };
    let mut response = OffsetCommitResponse::default();
    let mut codes = codes.into_iter();
    for topic in &request.topics {
        let mut out = OffsetCommitResponseTopic::default();
        out.name = topic.name.clone();
        for partition in &topic.partitions {
            let code = if !group_ok {
                GROUP_DENIED
            } else if !readable.contains(topic.name.0.as_str()) {
                TOPIC_DENIED
            } else if exists(topic.name.0.as_str(), partition.partition_index) {
                codes.next().unwrap_or(ResponseError::UnknownServerError.code())
            } else {
                ResponseError::UnknownTopicOrPartition.code()
            };
            out.partitions.push(
                OffsetCommitResponsePartition::default()
                    .with_partition_index(partition.partition_index)
                    .with_error_code(code),
            );
        }
        response.topics.push(out);
    }
    encode(&response, version)
}

/// A committed offset as OffsetFetch answers it: offset, leader epoch, metadata; nothing
/// committed is offset -1 with empty metadata, as in Kafka.
fn committed_fields(committed: Option<&crate::group::Committed>) -> (i64, i32, StrBytes) {
    committed
        .map_or((-1, -1, str_bytes("")), |c| (c.offset, c.leader_epoch, str_bytes(&c.metadata)))
}

pub(crate) async fn offset_fetch(
    broker: &Arc<Broker>,
    session: &Session,
    request: OffsetFetchRequest,
    version: i16,
) -> Result<Reply, Error> {
    // (group, topics or None for all) per group asked.
    let asked: Vec<(String, Option<TopicPartitions>)> = if version < 8 {
        let topics = request.topics.as_ref().map(|topics| {
            topics
                .iter()
                .map(|topic| (text(&topic.name.0), topic.partition_indexes.clone()))
                .collect()
        });
        vec![(text(&request.group_id.0), topics)]
    } else {
        request
            .groups
            .iter()
            .map(|group| {
                let topics = group.topics.as_ref().map(|topics| {
                    topics
                        .iter()
                        .map(|topic| (text(&topic.name.0), topic.partition_indexes.clone()))
                        .collect()
                });
                (text(&group.group_id.0), topics)
            })
            .collect()
    };
    // KIP-447: with `require_stable` (v7+), offsets pending in an open transaction are not
    // answered: UNSTABLE_OFFSET_COMMIT, which the consumer retries.
    let require_stable = version >= 7 && request.require_stable;
    let results = fetch_group_offsets(broker, session, asked, require_stable).await?;
    let mut response = OffsetFetchResponse::default();
    for (group, fetched, errors) in results {
        let (code, topics) = match fetched {
            Ok(topics) => (NONE, topics),
            Err(code) => (code.code(), Vec::new()),
        };
        if version < 8 {
            if version >= 2 {
                response.error_code = code;
            }
            for (topic, partitions) in topics {
                let mut out = OffsetFetchResponseTopic::default();
                out.name = topic_name(&topic);
                for (partition, committed) in partitions {
                    let error = errors.get(&(topic.clone(), partition)).copied();
                    let committed = committed.filter(|_| error.is_none());
                    let (offset, leader_epoch, metadata) = committed_fields(committed.as_ref());
                    let mut entry = OffsetFetchResponsePartition::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_metadata(Some(metadata));
                    if let Some(code) = error {
                        entry.error_code = code;
                    }
                    if version >= 5 {
                        entry.committed_leader_epoch = leader_epoch;
                    }
                    out.partitions.push(entry);
                }
                response.topics.push(out);
            }
        } else {
            let mut out = OffsetFetchResponseGroup::default();
            out.group_id = group_id(&group);
            out.error_code = code;
            for (topic, partitions) in topics {
                let mut topic_out = OffsetFetchResponseTopics::default();
                topic_out.name = topic_name(&topic);
                for (partition, committed) in partitions {
                    let error = errors.get(&(topic.clone(), partition)).copied();
                    let committed = committed.filter(|_| error.is_none());
                    let (offset, leader_epoch, metadata) = committed_fields(committed.as_ref());
                    let mut entry = OffsetFetchResponsePartitions::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(leader_epoch)
                        .with_metadata(Some(metadata));
                    if let Some(code) = error {
                        entry.error_code = code;
                    }
                    topic_out.partitions.push(entry);
                }
                out.topics.push(topic_out);
            }
            response.groups.push(out);
        }
    }
    encode(&response, version)
}

/// One group's OffsetFetch answer: its offsets, and the partitions answered with an error
/// instead (pending in a transaction, or of a topic the client may not describe).
type GroupOffsets = (String, Result<FetchedOffsets, ResponseError>, BTreeMap<(String, i32), i16>);

/// Each group's offsets, as Kafka's `handleOffsetFetchRequestFromCoordinator` authorizes them:
/// DESCRIBE on the group, else GROUP_AUTHORIZATION_FAILED; of the topics asked for, those the
/// client may not DESCRIBE are TOPIC_AUTHORIZATION_FAILED (offset -1), and of all the group's
/// topics (a null list) they are left out.
async fn fetch_group_offsets(
    broker: &Arc<Broker>,
    session: &Session,
    asked: Vec<(String, Option<TopicPartitions>)>,
    require_stable: bool,
) -> Result<Vec<GroupOffsets>, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    blocking(move || {
        let describable =
            |name: &str| topic_allowed(&broker, &session, AclOperation::Describe, name);
        asked
            .into_iter()
            .map(|(group, topics)| {
                if !group_allowed(&broker, &session, AclOperation::Describe, &group) {
                    return (group, Err(ResponseError::GroupAuthorizationFailed), BTreeMap::new());
                }
                let all = topics.is_none();
                let (topics, denied): (Option<TopicPartitions>, TopicPartitions) = match topics {
                    None => (None, Vec::new()),
                    Some(topics) => {
                        let (ok, denied) =
                            topics.into_iter().partition(|(name, _)| describable(name));
                        (Some(ok), denied)
                    }
                };
                let mut errors = BTreeMap::new();
                if require_stable {
                    for partition in broker.groups.unstable_partitions(&group) {
                        errors.insert(partition, ResponseError::UnstableOffsetCommit.code());
                    }
                }
                let fetched = broker.groups.fetch_offsets(&group, topics).map(|mut fetched| {
                    if all {
                        fetched.retain(|(name, _)| describable(name));
                    }
                    for (name, partitions) in denied {
                        for partition in &partitions {
                            errors.insert((name.clone(), *partition), TOPIC_DENIED);
                        }
                        fetched.push((name, partitions.into_iter().map(|p| (p, None)).collect()));
                    }
                    fetched
                });
                (group, fetched, errors)
            })
            .collect()
    })
    .await
}

pub(crate) fn list_groups(
    broker: &Arc<Broker>,
    session: &Session,
    request: &ListGroupsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let states: Vec<String> = request.states_filter.iter().map(text).collect();
    let types: Vec<String> = request.types_filter.iter().map(text).collect();
    let mut response = ListGroupsResponse::default();
    // Kafka's `handleListGroupsRequest`: DESCRIBE on the cluster lists every group, else only
    // the groups the client may DESCRIBE.
    let all = cluster_allowed(broker, session, AclOperation::Describe);
    for (id, protocol_type, state, kind) in broker.groups.list_groups(&states, &types) {
        if !all && !group_allowed(broker, session, AclOperation::Describe, &id) {
            continue;
        }
        let mut group = ListedGroup::default()
            .with_group_id(group_id(&id))
            .with_protocol_type(str_bytes(&protocol_type));
        if version >= 4 {
            group.group_state = str_bytes(state);
        }
        if version >= 5 {
            group.group_type = str_bytes(kind);
        }
        response.groups.push(group);
    }
    encode(&response, version)
}

pub(crate) fn describe_groups(
    broker: &Arc<Broker>,
    session: &Session,
    request: &DescribeGroupsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = DescribeGroupsResponse::default();
    for id in &request.groups {
        let mut described = DescribedGroup::default().with_group_id(id.clone());
        if version >= 3 {
            described.authorized_operations = i32::MIN;
        }
        if !group_allowed(broker, session, AclOperation::Describe, id.0.as_str()) {
            // Kafka's `DescribeGroupsResponse.groupError`: empty state, protocol and members.
            described.error_code = GROUP_DENIED;
            response.groups.push(described);
            continue;
        }
        if version >= 3 {
            described.authorized_operations = group_operations(
                broker,
                session,
                request.include_authorized_operations,
                id.0.as_str(),
            );
        }
        if id.0.is_empty() {
            described.error_code = ResponseError::InvalidGroupId.code();
        } else if broker.groups.not_coordinator(id.0.as_str()) {
            described.error_code = ResponseError::NotCoordinator.code();
        } else if let Some(summary) = broker.groups.describe_group(id.0.as_str()) {
            described.group_state = str_bytes(summary.state);
            described.protocol_type = str_bytes(&summary.protocol_type);
            described.protocol_data = str_bytes(&summary.protocol);
            described.members = summary
                .members
                .into_iter()
                .map(|(member_id, instance, client_id, client_host, metadata, assignment)| {
                    let mut member = DescribedGroupMember::default()
                        .with_member_id(str_bytes(&member_id))
                        .with_client_id(str_bytes(&client_id))
                        .with_client_host(str_bytes(&client_host))
                        .with_member_metadata(metadata)
                        .with_member_assignment(assignment);
                    if version >= 4 {
                        member.group_instance_id = instance.as_deref().map(str_bytes);
                    }
                    member
                })
                .collect();
        } else {
            // Kafka describes an unknown group as Dead; from v6 with GROUP_ID_NOT_FOUND.
            described.group_state = str_bytes("Dead");
            if version >= 6 {
                described.error_code = ResponseError::GroupIdNotFound.code();
                described.error_message =
                    Some(str_bytes(&format!("Group {} not found.", id.0.as_str())));
            }
        }
        response.groups.push(described);
    }
    encode(&response, version)
}

pub(crate) async fn delete_groups(
    broker: &Arc<Broker>,
    session: &Session,
    request: DeleteGroupsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let names: Vec<String> = request.groups_names.iter().map(|id| text(&id.0)).collect();
    // Kafka's `handleDeleteGroupsRequest`: DELETE on each group.
    let allowed: Vec<bool> = names
        .iter()
        .map(|name| group_allowed(broker, session, AclOperation::Delete, name))
        .collect();
    let for_groups = Arc::clone(broker);
    let asked: Vec<(String, bool)> = names.iter().cloned().zip(allowed).collect();
    let codes =
        blocking(move || {
            let now = now_ms();
            asked
                .iter()
                .map(|(group, allowed)| {
                    if *allowed { for_groups.groups.delete_group(group, now) } else { GROUP_DENIED }
                })
                .collect::<Vec<_>>()
        })
        .await?;
    let mut response = DeleteGroupsResponse::default();
    response.results = names
        .iter()
        .zip(codes)
        .map(|(name, code)| {
            DeletableGroupResult::default().with_group_id(group_id(name)).with_error_code(code)
        })
        .collect();
    encode(&response, version)
}

pub(crate) async fn offset_delete(
    broker: &Arc<Broker>,
    session: &Session,
    request: OffsetDeleteRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka's `handleOffsetDeleteRequest`: DELETE on the group, then READ on each topic.
    if !group_allowed(broker, session, AclOperation::Delete, request.group_id.0.as_str()) {
        return encode(&OffsetDeleteResponse::default().with_error_code(GROUP_DENIED), version);
    }
    let readable: BTreeSet<&str> = request
        .topics
        .iter()
        .map(|topic| topic.name.0.as_str())
        .filter(|name| topic_allowed(broker, session, AclOperation::Read, name))
        .collect();
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
        .filter(|topic| readable.contains(topic.name.0.as_str()))
        .flat_map(|topic| {
            topic
                .partitions
                .iter()
                .map(move |partition| (text(&topic.name.0), partition.partition_index))
        })
        .collect();
    let group = text(&request.group_id.0);
    let for_groups = Arc::clone(broker);
    let (code, codes) =
        blocking(move || for_groups.groups.delete_offsets(&group, &partitions, now_ms())).await?;
    let mut response = OffsetDeleteResponse::default().with_error_code(code);
    if code == NONE {
        let mut codes = codes.into_iter();
        for topic in &request.topics {
            let mut out = OffsetDeleteResponseTopic::default();
            out.name = topic.name.clone();
            let allowed = readable.contains(topic.name.0.as_str());
            for partition in &topic.partitions {
                let code = if allowed {
                    codes.next().unwrap_or(ResponseError::UnknownServerError.code())
                } else {
                    TOPIC_DENIED
                };
                out.partitions.push(
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(partition.partition_index)
                        .with_error_code(code),
                );
            }
            response.topics.push(out);
        }
    }
    encode(&response, version)
}

impl TopicIds {
    /// Partitions by topic id, for a KIP-848 response.
    fn by_topic(&self, partitions: &BTreeSet<Partition>) -> Vec<(uuid::Uuid, String, Vec<i32>)> {
        let mut grouped: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (topic, partition) in partitions {
            grouped.entry(topic.as_str()).or_default().push(*partition);
        }
        grouped
            .into_iter()
            .map(|(topic, partitions)| {
                let id = self.by_name.get(topic).copied().unwrap_or_else(uuid::Uuid::nil);
                (id, topic.to_owned(), partitions)
            })
            .collect()
    }
}

/// ConsumerGroupHeartbeat (KIP-848): join, heartbeat, leave; the answer carries the member's
/// epoch and, when it changed, its whole assignment.
pub(crate) async fn consumer_group_heartbeat(
    broker: &Arc<Broker>,
    request_frame: &Request,
    request: ConsumerGroupHeartbeatRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka's `handleConsumerGroupHeartbeat`: READ on the group, else the code alone.
    if !group_allowed(
        broker,
        &request_frame.session,
        AclOperation::Read,
        request.group_id.0.as_str(),
    ) {
        return encode(
            &ConsumerGroupHeartbeatResponse::default().with_error_code(GROUP_DENIED),
            version,
        );
    }
    let client_id = request_frame.header.client_id.as_ref().map(text).unwrap_or_default();
    let client_host = request_frame.client_host();
    let for_groups = Arc::clone(broker);
    let (result, ids) = blocking(move || {
        let ids = TopicIds::new(&for_groups);
        let owned = request.topic_partitions.as_ref().map(|topics| {
            topics
                .iter()
                .filter_map(|topic| ids.by_id.get(&topic.topic_id).map(|name| (name, topic)))
                .flat_map(|(name, topic)| {
                    topic.partitions.iter().map(move |partition| (name.clone(), *partition))
                })
                .collect::<BTreeSet<Partition>>()
        });
        let heartbeat = ConsumerHeartbeat {
            group_id: text(&request.group_id.0),
            member_id: text(&request.member_id),
            member_epoch: request.member_epoch,
            instance_id: request.instance_id.as_ref().map(text),
            rack_id: request.rack_id.as_ref().map(text),
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            subscribed_topics: request
                .subscribed_topic_names
                .as_ref()
                .map(|names| names.iter().map(|name| text(&name.0)).collect()),
            subscribed_regex: request.subscribed_topic_regex.as_ref().map(text),
            server_assignor: request.server_assignor.as_ref().map(text),
            owned,
            client_id,
            client_host,
        };
        let result = for_groups.groups.consumer_heartbeat(&heartbeat, &ids.counts, now_ms());
        (result, ids)
    })
    .await?;
    let mut response = ConsumerGroupHeartbeatResponse::default()
        .with_error_code(result.error_code)
        .with_error_message(result.error_message.as_deref().map(str_bytes))
        .with_member_epoch(result.member_epoch)
        .with_heartbeat_interval_ms(result.heartbeat_interval_ms);
    if !result.member_id.is_empty() {
        response.member_id = Some(str_bytes(&result.member_id));
    }
    response.assignment = result.assignment.map(|assigned| {
        HeartbeatAssignment::default().with_topic_partitions(
            ids.by_topic(&assigned)
                .into_iter()
                .map(|(id, _, partitions)| {
                    HeartbeatTopicPartitions::default()
                        .with_topic_id(id)
                        .with_partitions(partitions)
                })
                .collect(),
        )
    });
    encode(&response, version)
}

/// ConsumerGroupDescribe (KIP-848): epochs, assignor, and each member's current and target
/// assignment; a group that is not a KIP-848 group answers GROUP_ID_NOT_FOUND.
pub(crate) fn consumer_group_describe(
    broker: &Arc<Broker>,
    session: &Session,
    request: &ConsumerGroupDescribeRequest,
    version: i16,
) -> Result<Reply, Error> {
    let ids = TopicIds::new(broker);
    let assignment = |partitions: &BTreeSet<Partition>| {
        DescribeAssignment::default().with_topic_partitions(
            ids.by_topic(partitions)
                .into_iter()
                .map(|(id, name, partitions)| {
                    DescribeTopicPartitions::default()
                        .with_topic_id(id)
                        .with_topic_name(topic_name(&name))
                        .with_partitions(partitions)
                })
                .collect(),
        )
    };
    let mut response = ConsumerGroupDescribeResponse::default();
    for id in &request.group_ids {
        let mut described = ConsumerDescribedGroup::default().with_group_id(id.clone());
        described.authorized_operations = i32::MIN;
        if !group_allowed(broker, session, AclOperation::Describe, id.0.as_str()) {
            described.error_code = GROUP_DENIED;
            response.groups.push(described);
            continue;
        }
        described.authorized_operations =
            group_operations(broker, session, request.include_authorized_operations, id.0.as_str());
        if id.0.is_empty() {
            described.error_code = ResponseError::InvalidGroupId.code();
        } else if broker.groups.not_coordinator(id.0.as_str()) {
            described.error_code = ResponseError::NotCoordinator.code();
        } else if let Some(summary) = broker.groups.describe_consumer_group(id.0.as_str()) {
            described.group_state = str_bytes(summary.state);
            described.group_epoch = summary.group_epoch;
            described.assignment_epoch = summary.assignment_epoch;
            described.assignor_name = str_bytes(summary.assignor);
            described.members = summary
                .members
                .iter()
                .map(|entry| {
                    let member = &entry.member;
                    let mut out = ConsumerDescribedMember::default()
                        .with_member_id(str_bytes(&member.member_id))
                        .with_instance_id(member.instance_id.as_deref().map(str_bytes))
                        .with_rack_id(member.rack_id.as_deref().map(str_bytes))
                        .with_member_epoch(member.member_epoch)
                        .with_client_id(str_bytes(&member.client_id))
                        .with_client_host(str_bytes(&member.client_host))
                        .with_subscribed_topic_names(
                            member.subscribed_topics.iter().map(|name| topic_name(name)).collect(),
                        )
                        .with_subscribed_topic_regex(
                            member.subscribed_regex.as_ref().map(|(text, _)| str_bytes(text)),
                        )
                        .with_assignment(assignment(&member.assigned))
                        .with_target_assignment(assignment(&entry.target));
                    if version >= 1 {
                        // 1: the consumer protocol (0 would be a classic member).
                        out.member_type = 1;
                    }
                    out
                })
                .collect();
        } else {
            described.error_code = ResponseError::GroupIdNotFound.code();
            described.error_message =
                Some(str_bytes(&format!("Group {} not found.", id.0.as_str())));
        }
        response.groups.push(described);
    }
    encode(&response, version)
}
