//! Consumer groups: the list (paged, filtered) with each group's state, protocol, members and
//! total lag, and a group's members, assignments and lag per partition (now and over the last
//! hour). Everything about a group is asked of the coordinator through Kafka's APIs
//! (ListGroups, DescribeGroups, ConsumerGroupDescribe, OffsetFetch); lag is the partition's
//! high watermark minus the committed offset, as kafka-consumer-groups.sh computes it.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, DescribeGroupsRequest, GroupId, ListGroupsRequest,
    OffsetFetchRequest,
};
use kafka_protocol::protocol::StrBytes;
use seglog_format::schema::group_messages::CONSUMER_PROTOCOL_ASSIGNMENT;
use seglog_format::schema::message::{read_versioned, to_json};
use seglog_storage::log::partition_log::TopicPartition;
use serde::{Deserialize, Serialize};

use super::topics::page_bounds;
use super::{ApiError, App, Path, Query, blocking, kafka};
use crate::Broker;

/// Groups asked of the coordinator in one OffsetFetch or Describe request.
const GROUPS_PER_REQUEST: usize = 100;

/// A group as ListGroups names it.
#[derive(Debug, Clone)]
struct Listed {
    group_id: String,
    state: String,
    /// `classic` or `consumer` (KIP-848).
    group_type: String,
    protocol_type: String,
}

async fn list_groups(app: &App) -> Result<Vec<Listed>, ApiError> {
    let response =
        kafka::call(&app.broker, app.session(), &ListGroupsRequest::default(), 5).await?;
    kafka::ok("ListGroups", response.error_code, None)?;
    let mut groups: Vec<Listed> = response
        .groups
        .into_iter()
        .map(|g| Listed {
            group_id: g.group_id.to_string(),
            state: g.group_state.to_string(),
            group_type: g.group_type.to_string(),
            protocol_type: g.protocol_type.to_string(),
        })
        .collect();
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    Ok(groups)
}

/// Committed offsets of `groups`, per group, per partition (`-1`: none).
async fn committed(
    app: &App,
    groups: &[String],
) -> Result<BTreeMap<String, BTreeMap<TopicPartition, i64>>, ApiError> {
    let mut all = BTreeMap::new();
    for chunk in groups.chunks(GROUPS_PER_REQUEST) {
        let request = OffsetFetchRequest::default().with_groups(
            chunk
                .iter()
                .map(|g| {
                    OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(StrBytes::from_string(g.clone())))
                        .with_topics(None)
                })
                .collect(),
        );
        let response = kafka::call(&app.broker, app.session(), &request, 8).await?;
        for group in response.groups {
            let mut offsets = BTreeMap::new();
            for topic in group.topics {
                for partition in topic.partitions {
                    if partition.committed_offset >= 0 {
                        offsets.insert(
                            TopicPartition {
                                topic: topic.name.to_string(),
                                partition: partition.partition_index,
                            },
                            partition.committed_offset,
                        );
                    }
                }
            }
            all.insert(group.group_id.to_string(), offsets);
        }
    }
    Ok(all)
}

/// The high watermark of each partition of `partitions` that exists.
fn high_watermarks(
    broker: &Broker,
    partitions: Vec<TopicPartition>,
) -> BTreeMap<TopicPartition, i64> {
    partitions
        .into_iter()
        .filter_map(|tp| {
            let log = broker.manager().get_log(&tp).ok()?;
            let hw = log.high_watermark().ok()?;
            Some((tp, hw))
        })
        .collect()
}

/// Lag of each committed partition: `(high watermark, lag)`.
async fn lags(
    app: &App,
    committed: &BTreeMap<String, BTreeMap<TopicPartition, i64>>,
) -> Result<BTreeMap<TopicPartition, i64>, ApiError> {
    let mut partitions: Vec<TopicPartition> =
        committed.values().flat_map(|offsets| offsets.keys().cloned()).collect();
    partitions.sort();
    partitions.dedup();
    let broker = Arc::clone(&app.broker);
    blocking(move || Ok(high_watermarks(&broker, partitions))).await
}

fn total_lag(offsets: &BTreeMap<TopicPartition, i64>, ends: &BTreeMap<TopicPartition, i64>) -> i64 {
    offsets.iter().filter_map(|(tp, committed)| Some((ends.get(tp)? - committed).max(0))).sum()
}

/// The partitions `group` has committed offsets for.
pub(super) async fn committed_partitions(
    app: &App,
    group: &str,
) -> Result<Vec<TopicPartition>, ApiError> {
    let committed = committed(app, &[group.to_owned()]).await?;
    Ok(committed.into_values().flat_map(BTreeMap::into_keys).collect())
}

/// Every group's total lag (the history's sample), read from the coordinator itself: the
/// sampler has no caller to authorize, and a group's history is shown only to a caller whose
/// own ListGroups names the group.
pub(super) fn all_lags(broker: &Broker) -> BTreeMap<String, i64> {
    let mut committed: BTreeMap<String, BTreeMap<TopicPartition, i64>> = BTreeMap::new();
    let groups = broker.groups.list_groups(&[], &[]);
    for (group, _, _, _) in groups.into_iter().take(super::history::GROUPS_TRACKED_MAX) {
        let Ok(topics) = broker.groups.fetch_offsets(&group, None) else { continue };
        let offsets = topics
            .into_iter()
            .flat_map(|(topic, partitions)| {
                partitions.into_iter().filter_map(move |(partition, committed)| {
                    let tp = TopicPartition { topic: topic.clone(), partition };
                    committed.map(|committed| (tp, committed.offset))
                })
            })
            .collect();
        committed.insert(group, offsets);
    }
    let mut partitions: Vec<TopicPartition> =
        committed.values().flat_map(|offsets| offsets.keys().cloned()).collect();
    partitions.sort();
    partitions.dedup();
    let ends = high_watermarks(broker, partitions);
    committed.iter().map(|(group, offsets)| (group.clone(), total_lag(offsets, &ends))).collect()
}

#[derive(Debug, Clone, Serialize)]
struct Member {
    #[serde(rename = "member_id")]
    id: String,
    client_id: String,
    client_host: String,
    /// Assigned partitions per topic.
    assignment: Assignment,
}

impl Member {
    fn new(id: &StrBytes, client_id: &StrBytes, host: &StrBytes, assignment: Assignment) -> Self {
        Self {
            id: id.to_string(),
            client_id: client_id.to_string(),
            client_host: host.to_string(),
            assignment,
        }
    }
}

/// Assigned partitions per topic.
type Assignment = BTreeMap<String, Vec<i32>>;

/// Members of classic groups (DescribeGroups) and consumer groups (ConsumerGroupDescribe).
async fn members(app: &App, groups: &[Listed]) -> Result<BTreeMap<String, Vec<Member>>, ApiError> {
    let mut all = BTreeMap::new();
    let (consumer, classic): (Vec<&Listed>, Vec<&Listed>) =
        groups.iter().partition(|g| g.group_type == "consumer");
    for chunk in classic.chunks(GROUPS_PER_REQUEST) {
        let request = DescribeGroupsRequest::default().with_groups(
            chunk.iter().map(|g| GroupId(StrBytes::from_string(g.group_id.clone()))).collect(),
        );
        let response = kafka::call(&app.broker, app.session(), &request, 5).await?;
        for group in response.groups {
            let consumer_protocol = group.protocol_type.as_str() == "consumer";
            let members = group
                .members
                .into_iter()
                .map(|m| {
                    let assignment = if consumer_protocol {
                        classic_assignment(&m.member_assignment)
                    } else {
                        BTreeMap::new()
                    };
                    Member::new(&m.member_id, &m.client_id, &m.client_host, assignment)
                })
                .collect();
            all.insert(group.group_id.to_string(), members);
        }
    }
    for chunk in consumer.chunks(GROUPS_PER_REQUEST) {
        let request = ConsumerGroupDescribeRequest::default().with_group_ids(
            chunk.iter().map(|g| GroupId(StrBytes::from_string(g.group_id.clone()))).collect(),
        );
        let response = kafka::call(&app.broker, app.session(), &request, 0).await?;
        for group in response.groups {
            let members = group
                .members
                .into_iter()
                .map(|m| {
                    let assignment = m
                        .assignment
                        .topic_partitions
                        .iter()
                        .map(|t| (t.topic_name.to_string(), t.partitions.clone()))
                        .collect();
                    Member::new(&m.member_id, &m.client_id, &m.client_host, assignment)
                })
                .collect();
            all.insert(group.group_id.to_string(), members);
        }
    }
    Ok(all)
}

/// A classic consumer's assignment bytes (`ConsumerProtocolAssignment`), by topic; empty when
/// they do not decode.
fn classic_assignment(bytes: &[u8]) -> BTreeMap<String, Vec<i32>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Assignment {
        assigned_partitions: Vec<TopicPartitions>,
    }
    #[derive(Deserialize)]
    struct TopicPartitions {
        topic: String,
        partitions: Vec<i32>,
    }
    let Ok((_, value)) = read_versioned(&CONSUMER_PROTOCOL_ASSIGNMENT, bytes) else {
        return BTreeMap::new();
    };
    serde_json::from_str::<Assignment>(&to_json(&value))
        .map(|a| a.assigned_partitions.into_iter().map(|t| (t.topic, t.partitions)).collect())
        .unwrap_or_default()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    filter: Option<String>,
    offset: Option<usize>,
    limit: Option<usize>,
}

#[derive(Serialize)]
struct GroupItem {
    group_id: String,
    state: String,
    protocol: String,
    protocol_type: String,
    members: usize,
    partitions: usize,
    lag: i64,
}

#[derive(Serialize)]
pub(super) struct GroupList {
    total: usize,
    offset: usize,
    limit: usize,
    groups: Vec<GroupItem>,
}

/// `GET /api/v1/groups`.
pub(super) async fn list(
    State(app): State<App>,
    Query(query): Query<ListQuery>,
) -> Result<Json<GroupList>, ApiError> {
    let (offset, limit) = page_bounds(query.offset, query.limit)?;
    let mut groups = list_groups(&app).await?;
    if let Some(filter) = query.filter.as_deref().filter(|f| !f.is_empty()) {
        let filter = filter.to_lowercase();
        groups.retain(|g| g.group_id.to_lowercase().contains(&filter));
    }
    let total = groups.len();
    let page: Vec<Listed> = groups.into_iter().skip(offset).take(limit).collect();
    let ids: Vec<String> = page.iter().map(|g| g.group_id.clone()).collect();
    let committed = committed(&app, &ids).await?;
    let ends = lags(&app, &committed).await?;
    let members = members(&app, &page).await?;
    let groups = page
        .into_iter()
        .map(|g| {
            let offsets = committed.get(&g.group_id).cloned().unwrap_or_default();
            GroupItem {
                members: members.get(&g.group_id).map_or(0, Vec::len),
                partitions: offsets.len(),
                lag: total_lag(&offsets, &ends),
                group_id: g.group_id,
                state: g.state,
                protocol: g.group_type,
                protocol_type: g.protocol_type,
            }
        })
        .collect();
    Ok(Json(GroupList { total, offset, limit, groups }))
}

#[derive(Serialize)]
struct PartitionLag {
    topic: String,
    partition: i32,
    committed_offset: i64,
    high_watermark: Option<i64>,
    lag: Option<i64>,
    member_id: Option<String>,
}

#[derive(Serialize)]
struct LagPoint {
    t_ms: i64,
    lag: i64,
}

#[derive(Serialize)]
pub(super) struct GroupView {
    group_id: String,
    state: String,
    protocol: String,
    protocol_type: String,
    members: Vec<Member>,
    lag: i64,
    partitions: Vec<PartitionLag>,
    lag_history: Vec<LagPoint>,
}

/// `GET /api/v1/groups/{group}`.
pub(super) async fn describe(
    State(app): State<App>,
    Path(group): Path<String>,
) -> Result<Json<GroupView>, ApiError> {
    let Some(listed) = list_groups(&app).await?.into_iter().find(|g| g.group_id == group) else {
        return Err(ApiError::not_found(format!("no group {group:?}")));
    };
    let committed = committed(&app, std::slice::from_ref(&group)).await?;
    let ends = lags(&app, &committed).await?;
    let members =
        members(&app, std::slice::from_ref(&listed)).await?.remove(&group).unwrap_or_default();
    let offsets = committed.get(&group).cloned().unwrap_or_default();
    let owner = |tp: &TopicPartition| {
        members
            .iter()
            .find(|m| m.assignment.get(&tp.topic).is_some_and(|ps| ps.contains(&tp.partition)))
            .map(|m| m.id.clone())
    };
    let partitions = offsets
        .iter()
        .map(|(tp, committed)| {
            let high_watermark = ends.get(tp).copied();
            PartitionLag {
                topic: tp.topic.clone(),
                partition: tp.partition,
                committed_offset: *committed,
                high_watermark,
                lag: high_watermark.map(|hw| (hw - committed).max(0)),
                member_id: owner(tp),
            }
        })
        .collect();
    Ok(Json(GroupView {
        lag: total_lag(&offsets, &ends),
        lag_history: app
            .history
            .lag(&group)
            .into_iter()
            .map(|(t_ms, lag)| LagPoint { t_ms, lag })
            .collect(),
        group_id: listed.group_id,
        state: listed.state,
        protocol: listed.group_type,
        protocol_type: listed.protocol_type,
        members,
        partitions,
    }))
}
