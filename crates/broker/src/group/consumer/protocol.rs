//! ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) on the coordinator: joining,
//! leaving, fencing, subscription changes, the target assignment and each member's
//! reconciliation (see `reconcile.rs`), and the timers of these members.
//!
//! A group's state is written to `__consumer_offsets` in Kafka's `ConsumerGroup*` records
//! (keys 3 and 5 to 8): after each change, the records that differ from the last write and
//! tombstones for members gone, in one batch, before the heartbeat is answered (`store.rs`);
//! `load` replays them, so members go on at their epochs after a restart.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::ResponseError;

use super::assignor::ASSIGNORS;
use super::group::{
    ConsumerGroup, ConsumerMember, Partition, refresh_subscriptions, subscription_regex,
};
use crate::error::NONE;
use crate::group::classic::group::{Group, GroupState};
use crate::group::coordinator::GroupCoordinator;

/// A ConsumerGroupHeartbeat, as the coordinator needs it.
#[derive(Debug, Clone)]
pub(crate) struct ConsumerHeartbeat {
    pub(crate) group_id: String,
    pub(crate) member_id: String,
    pub(crate) member_epoch: i32,
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) subscribed_topics: Option<Vec<String>>,
    /// `Some("")` clears a pattern; `None` leaves it as it is.
    pub(crate) subscribed_regex: Option<String>,
    pub(crate) server_assignor: Option<String>,
    /// What the member owns (`None`: unchanged since its last heartbeat).
    pub(crate) owned: Option<BTreeSet<Partition>>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
}

/// Its answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConsumerHeartbeatResult {
    pub(crate) error_code: i16,
    pub(crate) error_message: Option<String>,
    pub(crate) member_id: String,
    pub(crate) member_epoch: i32,
    pub(crate) heartbeat_interval_ms: i32,
    /// The member's whole assignment, when it changed (`None`: unchanged).
    pub(crate) assignment: Option<BTreeSet<Partition>>,
}

impl ConsumerHeartbeatResult {
    fn error(code: i16, message: impl Into<String>) -> Self {
        Self {
            error_code: code,
            error_message: Some(message.into()),
            member_epoch: -1,
            ..Self::default()
        }
    }
}

/// A KIP-848 group as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone)]
pub(crate) struct ConsumerGroupSummary {
    pub(crate) state: &'static str,
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) assignor: &'static str,
    pub(crate) members: Vec<ConsumerMemberSummary>,
}

/// One member in a [`ConsumerGroupSummary`].
#[derive(Debug, Clone)]
pub(crate) struct ConsumerMemberSummary {
    pub(crate) member: ConsumerMember,
    pub(crate) target: BTreeSet<Partition>,
}

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`).
    /// `topics` holds every topic clients may subscribe to, with its partition count.
    pub(crate) fn consumer_heartbeat(
        &self,
        request: &ConsumerHeartbeat,
        topics: &BTreeMap<String, i32>,
        now_ms: i64,
    ) -> ConsumerHeartbeatResult {
        let regex = match check_heartbeat(request) {
            Ok(regex) => regex,
            Err(refused) => return refused,
        };
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, &request.group_id) {
            let why = if refusal == ResponseError::NotCoordinator {
                "another broker coordinates this group"
            } else {
                "shutting down"
            };
            return ConsumerHeartbeatResult::error(refusal.code(), why);
        }
        if let Err(code) = self.ensure_offsets_topic_locked(&mut inner) {
            return ConsumerHeartbeatResult::error(
                code.code(),
                "the coordinator's topic is not available",
            );
        }
        if !inner.groups.contains_key(&request.group_id) {
            if request.member_epoch != 0 {
                return unknown_member(&request.member_id, &request.group_id);
            }
            inner.groups.insert(request.group_id.clone(), Group::new(&request.group_id, now_ms));
        }
        let Some(group) = inner.groups.get_mut(&request.group_id) else {
            return ConsumerHeartbeatResult::error(
                ResponseError::CoordinatorNotAvailable.code(),
                "group vanished",
            );
        };
        if !group.members.is_empty() || !matches!(group.state, GroupState::Empty) {
            return ConsumerHeartbeatResult::error(
                ResponseError::GroupIdNotFound.code(),
                format!("Group {} is not a consumer group.", request.group_id),
            );
        }
        group.protocol_type = Some("consumer".to_owned());
        let consumer = group.consumer.get_or_insert_with(ConsumerGroup::default);
        let member_id = if request.member_id.is_empty() {
            self.member_ids.next("").trim_start_matches('-').to_owned()
        } else {
            request.member_id.clone()
        };
        if request.member_epoch < 0 {
            if consumer.remove_member(&member_id) {
                consumer.group_epoch += 1;
            }
            if let Err(code) = self.persist_and_wait(&mut inner, &request.group_id, now_ms) {
                return ConsumerHeartbeatResult::error(
                    code.code(),
                    "the group's records were not written",
                );
            }
            return ConsumerHeartbeatResult {
                member_id,
                member_epoch: request.member_epoch,
                ..ConsumerHeartbeatResult::default()
            };
        }
        // One heartbeat moves the group epoch at most once, whatever changed.
        let mut bump = if request.member_epoch == 0 {
            join_member(consumer, &member_id, request, regex, now_ms);
            true
        } else {
            match update_member(consumer, &member_id, request, regex, now_ms) {
                Ok(changed) => changed,
                Err(refused) => return refused,
            }
        };
        bump |= refresh_subscriptions(consumer, topics);
        if bump {
            consumer.group_epoch += 1;
        }
        let partitions_of = |topic: &str| topics.get(topic).copied().unwrap_or(0);
        consumer.maybe_compute_target(&partitions_of);
        consumer.reconcile(&member_id, request.owned.as_ref(), now_ms);
        let Some(member) = consumer.members.get_mut(&member_id) else {
            return unknown_member(&member_id, &request.group_id);
        };
        // The assignment travels when it changed, on a join, or when the member's view differs.
        let send = request.member_epoch == 0
            || member.sent_assignment.as_ref() != Some(&member.assigned)
            || request.owned.as_ref().is_some_and(|owned| *owned != member.assigned);
        if send {
            member.sent_assignment = Some(member.assigned.clone());
        }
        let result = ConsumerHeartbeatResult {
            error_code: NONE,
            error_message: None,
            member_id,
            member_epoch: member.member_epoch,
            heartbeat_interval_ms: self.config.consumer_heartbeat_interval_ms,
            assignment: send.then(|| member.assigned.clone()),
        };
        // Answered only once what changed is written (acks=-1, as Kafka's coordinator).
        if let Err(code) = self.persist_and_wait(&mut inner, &request.group_id, now_ms) {
            return ConsumerHeartbeatResult::error(
                code.code(),
                "the group's records were not written",
            );
        }
        result
    }

    /// The state and member count of a KIP-848 group, for tests and tools.
    pub fn consumer_group_state(&self, group_id: &str) -> Option<(&'static str, usize)> {
        let inner = self.lock();
        let consumer = inner.groups.get(group_id)?.consumer.as_ref()?;
        Some((consumer.state(), consumer.members.len()))
    }

    /// ConsumerGroupDescribe for one group: `None` when there is no such KIP-848 group.
    pub(crate) fn describe_consumer_group(&self, group_id: &str) -> Option<ConsumerGroupSummary> {
        let inner = self.lock();
        let consumer = inner.groups.get(group_id)?.consumer.as_ref()?;
        Some(ConsumerGroupSummary {
            state: consumer.state(),
            group_epoch: consumer.group_epoch,
            assignment_epoch: consumer.assignment_epoch,
            assignor: consumer.assignor(),
            members: consumer
                .members
                .values()
                .map(|member| ConsumerMemberSummary {
                    member: member.clone(),
                    target: consumer.target.get(&member.member_id).cloned().unwrap_or_default(),
                })
                .collect(),
        })
    }
}

/// The KIP-848 members' timers (from `tick`): a member silent for the session timeout, or
/// holding partitions it must revoke for longer than its rebalance timeout, is removed and
/// the group epoch moves.
pub(crate) fn expire_consumer_members(
    group: &mut Group,
    session_timeout_ms: i64,
    now_ms: i64,
) -> bool {
    let Some(consumer) = group.consumer.as_mut() else { return false };
    let expired: Vec<String> = consumer
        .members
        .values()
        .filter(|member| {
            now_ms > member.last_heartbeat_ms + session_timeout_ms
                || member
                    .revoking_since_ms
                    .is_some_and(|since| now_ms > since + i64::from(member.rebalance_timeout_ms))
        })
        .map(|member| member.member_id.clone())
        .collect();
    let changed = !expired.is_empty();
    for member_id in expired {
        tracing::info!(group = %group.group_id, %member_id, "consumer group member expired");
        consumer.remove_member(&member_id);
        consumer.group_epoch += 1;
    }
    changed
}

fn unknown_member(member_id: &str, group_id: &str) -> ConsumerHeartbeatResult {
    ConsumerHeartbeatResult::error(
        ResponseError::UnknownMemberId.code(),
        format!("Member {member_id} is not a member of group {group_id}."),
    )
}

/// Kafka's request checks, before the group is looked at; the compiled pattern, if any.
fn check_heartbeat(
    request: &ConsumerHeartbeat,
) -> Result<Option<(String, regex::Regex)>, ConsumerHeartbeatResult> {
    let regex = match request.subscribed_regex.as_deref() {
        None | Some("") => None,
        Some(pattern) => match subscription_regex(pattern) {
            Ok(regex) => Some(regex),
            Err(error) => {
                return Err(ConsumerHeartbeatResult::error(
                    ResponseError::InvalidRegularExpression.code(),
                    format!(
                        "SubscribedTopicRegex `{pattern}` is not a valid regular expression: {error}."
                    ),
                ));
            }
        },
    };
    let invalid = |message: &str| {
        Err(ConsumerHeartbeatResult::error(ResponseError::InvalidRequest.code(), message))
    };
    if request.group_id.is_empty() {
        return invalid("GroupId can't be empty.");
    }
    if request.member_epoch == 0 && request.subscribed_topics.is_none() && regex.is_none() {
        return invalid("SubscribedTopicNames must be set in first request.");
    }
    if request.member_epoch == 0 && request.rebalance_timeout_ms < 0 {
        return invalid("RebalanceTimeoutMs must be provided in first request.");
    }
    if let Some(name) = &request.server_assignor
        && !ASSIGNORS.contains(&name.as_str())
    {
        return Err(ConsumerHeartbeatResult::error(
            ResponseError::UnsupportedAssignor.code(),
            format!("ServerAssignor {name} is not supported. Supported assignors: uniform, range."),
        ));
    }
    Ok(regex)
}

/// A (re)join at epoch 0; a static instance replaces its previous member.
fn join_member(
    consumer: &mut ConsumerGroup,
    member_id: &str,
    request: &ConsumerHeartbeat,
    regex: Option<(String, regex::Regex)>,
    now_ms: i64,
) {
    if let Some(instance) = &request.instance_id {
        let previous: Vec<String> = consumer
            .members
            .values()
            .filter(|member| {
                member.instance_id.as_ref() == Some(instance) && member.member_id != member_id
            })
            .map(|member| member.member_id.clone())
            .collect();
        for old in previous {
            consumer.remove_member(&old);
        }
    }
    consumer.members.insert(
        member_id.to_owned(),
        ConsumerMember {
            instance_id: request.instance_id.clone(),
            rack_id: request.rack_id.clone(),
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            subscribed_topics: request.subscribed_topics.iter().flatten().cloned().collect(),
            subscribed_regex: regex,
            server_assignor: request.server_assignor.clone(),
            ..ConsumerMember::new(member_id, now_ms)
        },
    );
}

/// A heartbeat of a known member: epoch check (its previous epoch is accepted while it owns
/// no more than it was given), then subscription and assignor changes. Returns whether the
/// group epoch must move.
fn update_member(
    consumer: &mut ConsumerGroup,
    member_id: &str,
    request: &ConsumerHeartbeat,
    regex: Option<(String, regex::Regex)>,
    now_ms: i64,
) -> Result<bool, ConsumerHeartbeatResult> {
    let Some(member) = consumer.members.get_mut(member_id) else {
        return Err(unknown_member(member_id, &request.group_id));
    };
    let previous_ok = request.member_epoch == member.previous_member_epoch
        && request.owned.as_ref().is_some_and(|owned| owned.is_subset(&member.assigned));
    if request.member_epoch != member.member_epoch && !previous_ok {
        return Err(ConsumerHeartbeatResult::error(
            ResponseError::FencedMemberEpoch.code(),
            format!(
                "The consumer group member has a smaller member epoch ({}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                request.member_epoch, member.member_epoch
            ),
        ));
    }
    member.last_heartbeat_ms = now_ms;
    let mut changed = false;
    if let Some(topics) = &request.subscribed_topics {
        let topics: BTreeSet<String> = topics.iter().cloned().collect();
        if topics != member.subscribed_topics {
            member.subscribed_topics = topics;
            changed = true;
        }
    }
    if let Some(pattern) = request.subscribed_regex.as_deref()
        && member.subscribed_regex.as_ref().map(|(text, _)| text.as_str()) != Some(pattern)
    {
        // What it matches is compared by `refresh_subscriptions`.
        member.subscribed_regex = regex;
    }
    if request.server_assignor.is_some() && request.server_assignor != member.server_assignor {
        member.server_assignor.clone_from(&request.server_assignor);
        changed = true;
    }
    if request.rebalance_timeout_ms >= 0 {
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    Ok(changed)
}
