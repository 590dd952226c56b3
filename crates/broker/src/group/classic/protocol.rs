//! The classic rebalance protocol on the coordinator (Kafka's `GroupCoordinator`:
//! `handleJoinGroup`, `handleSyncGroup`, `handleHeartbeat`, `handleLeaveGroup`, and
//! `GroupMetadata.summary` for DescribeGroups): joins with Kafka's timing (the initial delay,
//! KIP-394 member ids, static members), the leader's assignment, heartbeats and leaves, and
//! the classic members' timers (sessions, lapsed member ids, pending syncs, the join phase).

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState, JoinResult, JoinTimer, Member, SyncResult};
use crate::error::NONE;
use crate::group::GroupConfig;
use crate::group::coordinator::GroupCoordinator;

/// A JoinGroup, as the coordinator needs it.
#[derive(Debug, Clone)]
pub(crate) struct JoinRequest {
    pub(crate) group_id: String,
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout_ms: i32,
    pub(crate) rebalance_timeout_ms: i32,
    pub(crate) protocol_type: String,
    pub(crate) protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new dynamic member must first get its id (KIP-394).
    pub(crate) require_known_member_id: bool,
}

/// A SyncGroup, as the coordinator needs it.
#[derive(Debug, Clone)]
pub(crate) struct SyncRequest {
    pub(crate) group_id: String,
    pub(crate) generation_id: i32,
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) protocol_type: Option<String>,
    pub(crate) protocol_name: Option<String>,
    pub(crate) assignments: Vec<(String, Bytes)>,
}

/// A group as DescribeGroups shows it.
#[derive(Debug, Clone)]
pub(crate) struct GroupSummary {
    pub(crate) state: &'static str,
    pub(crate) protocol_type: String,
    pub(crate) protocol: String,
    /// member id, instance id, client id, client host, metadata, assignment.
    pub(crate) members: Vec<(String, Option<String>, String, String, Bytes, Bytes)>,
}

impl GroupCoordinator {
    /// JoinGroup (Kafka's `handleJoinGroup`). The receiver completes when the rebalance does.
    pub(crate) fn join(&self, request: JoinRequest, now_ms: i64) -> oneshot::Receiver<JoinResult> {
        let (sender, receiver) = oneshot::channel();
        let reply = |sender: oneshot::Sender<JoinResult>, code: i16, member_id: &str| {
            let _ = sender.send(JoinResult::error(member_id, code));
        };
        if request.group_id.is_empty() {
            reply(sender, ResponseError::InvalidGroupId.code(), &request.member_id);
            return receiver;
        }
        if request.session_timeout_ms < self.config.min_session_timeout_ms
            || request.session_timeout_ms > self.config.max_session_timeout_ms
        {
            reply(sender, ResponseError::InvalidSessionTimeout.code(), &request.member_id);
            return receiver;
        }
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, &request.group_id) {
            reply(sender, refusal.code(), &request.member_id);
            return receiver;
        }
        if let Err(code) = self.ensure_offsets_topic_locked(&mut inner) {
            reply(sender, code.code(), &request.member_id);
            return receiver;
        }
        let is_unknown = request.member_id.is_empty();
        if !inner.groups.contains_key(&request.group_id) {
            if !is_unknown {
                reply(sender, ResponseError::UnknownMemberId.code(), &request.member_id);
                return receiver;
            }
            inner.groups.insert(request.group_id.clone(), Group::new(&request.group_id, now_ms));
        }
        let config = self.config.clone();
        let Some(group) = inner.groups.get_mut(&request.group_id) else {
            reply(sender, ResponseError::CoordinatorNotAvailable.code(), &request.member_id);
            return receiver;
        };
        if group.is(GroupState::Dead) {
            reply(sender, ResponseError::CoordinatorNotAvailable.code(), &request.member_id);
            return receiver;
        }
        if group.has_consumer_members()
            || !group.supports_protocols(&request.protocol_type, &request.protocols)
        {
            reply(sender, ResponseError::InconsistentGroupProtocol.code(), &request.member_id);
            return receiver;
        }
        let mut store = false;
        if is_unknown {
            let member_id = self.member_ids.next(&request.client_id);
            let existing = request
                .group_instance_id
                .as_ref()
                .and_then(|instance| group.static_members.get(instance).cloned());
            if let Some(old_member_id) = existing {
                store = replace_static_member(
                    group,
                    &old_member_id,
                    &member_id,
                    request,
                    sender,
                    &config,
                    now_ms,
                );
            } else if request.require_known_member_id && request.group_instance_id.is_none() {
                group
                    .pending_members
                    .insert(member_id.clone(), now_ms + i64::from(request.session_timeout_ms));
                reply(sender, ResponseError::MemberIdRequired.code(), &member_id);
            } else {
                add_member_and_rebalance(group, member_id, request, sender, &config, now_ms);
            }
        } else if group.pending_members.remove(&request.member_id).is_some() {
            let member_id = request.member_id.clone();
            add_member_and_rebalance(group, member_id, request, sender, &config, now_ms);
        } else {
            join_known_member(group, request, sender, &config, now_ms);
        }
        let group_id = group.group_id.clone();
        if group.holds_nothing() {
            // A failed first join leaves nothing behind.
            inner.groups.remove(&group_id);
        } else if store {
            let _ = self.store_group(&mut inner, &group_id, now_ms);
        }
        receiver
    }

    /// SyncGroup (Kafka's `handleSyncGroup`). The receiver completes when the leader's
    /// assignment is stored.
    pub(crate) fn sync(&self, request: SyncRequest, now_ms: i64) -> oneshot::Receiver<SyncResult> {
        let (sender, receiver) = oneshot::channel();
        let reply = |sender: oneshot::Sender<SyncResult>, code: i16| {
            let _ = sender.send(SyncResult::error(code));
        };
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, &request.group_id) {
            reply(sender, refusal.code());
            return receiver;
        }
        let Some(group) = inner.groups.get_mut(&request.group_id) else {
            reply(sender, ResponseError::UnknownMemberId.code());
            return receiver;
        };
        if group.is(GroupState::Dead) {
            reply(sender, ResponseError::CoordinatorNotAvailable.code());
            return receiver;
        }
        if let Some(code) =
            check_member(group, &request.member_id, request.group_instance_id.as_deref())
        {
            reply(sender, code);
            return receiver;
        }
        if request.generation_id != group.generation_id {
            reply(sender, ResponseError::IllegalGeneration.code());
            return receiver;
        }
        let type_mismatch = request
            .protocol_type
            .as_ref()
            .is_some_and(|name| group.protocol_type.as_ref() != Some(name));
        let name_mismatch = request
            .protocol_name
            .as_ref()
            .is_some_and(|name| group.protocol.as_ref() != Some(name));
        if type_mismatch || name_mismatch {
            reply(sender, ResponseError::InconsistentGroupProtocol.code());
            return receiver;
        }
        match group.state {
            GroupState::Empty | GroupState::Dead => {
                reply(sender, ResponseError::UnknownMemberId.code());
            }
            GroupState::PreparingRebalance => {
                reply(sender, ResponseError::RebalanceInProgress.code());
            }
            GroupState::Stable => {
                group.pending_sync.remove(&request.member_id);
                let result = sync_result(group, &request.member_id);
                if let Some(member) = group.members.get_mut(&request.member_id) {
                    member.last_heartbeat_ms = now_ms;
                }
                let _ = sender.send(result);
            }
            GroupState::CompletingRebalance => {
                group.pending_sync.remove(&request.member_id);
                let is_leader = group.is_leader(&request.member_id);
                if let Some(member) = group.members.get_mut(&request.member_id) {
                    member.last_heartbeat_ms = now_ms;
                    member.awaiting_sync = Some(sender);
                }
                if is_leader {
                    let assignments: HashMap<String, Bytes> =
                        request.assignments.into_iter().collect();
                    for member in group.members.values_mut() {
                        member.assignment =
                            assignments.get(&member.member_id).cloned().unwrap_or_default();
                    }
                    let group_id = group.group_id.clone();
                    let stored = self.store_group(&mut inner, &group_id, now_ms);
                    let Some(group) = inner.groups.get_mut(&group_id) else { return receiver };
                    match stored {
                        Ok(()) => {
                            group.transition(GroupState::Stable, now_ms);
                            let ids: Vec<String> = group.members.keys().cloned().collect();
                            for member_id in ids {
                                let result = sync_result(group, &member_id);
                                if let Some(waiter) = group
                                    .members
                                    .get_mut(&member_id)
                                    .and_then(|member| member.awaiting_sync.take())
                                {
                                    let _ = waiter.send(result);
                                }
                            }
                        }
                        Err(code) => {
                            group.fail_syncs(code.code());
                            prepare_rebalance(group, &self.config, now_ms);
                        }
                    }
                }
            }
        }
        receiver
    }

    /// Heartbeat (Kafka's `handleHeartbeat`).
    pub(crate) fn heartbeat(
        &self,
        group_id: &str,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        now_ms: i64,
    ) -> i16 {
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return refusal.code();
        }
        let Some(group) = inner.groups.get_mut(group_id) else {
            return ResponseError::UnknownMemberId.code();
        };
        match group.state {
            GroupState::Dead => return ResponseError::CoordinatorNotAvailable.code(),
            GroupState::Empty => return ResponseError::UnknownMemberId.code(),
            _ => {}
        }
        if let Some(code) = check_member(group, member_id, group_instance_id) {
            return code;
        }
        if generation_id != group.generation_id {
            return ResponseError::IllegalGeneration.code();
        }
        if let Some(member) = group.members.get_mut(member_id) {
            member.last_heartbeat_ms = now_ms;
        }
        if group.is(GroupState::PreparingRebalance) {
            ResponseError::RebalanceInProgress.code()
        } else {
            NONE
        }
    }

    /// LeaveGroup (Kafka's `handleLeaveGroup`): `(member id, instance id)` pairs; returns the
    /// group's error and each member's.
    pub(crate) fn leave(
        &self,
        group_id: &str,
        leaving: &[(String, Option<String>)],
        now_ms: i64,
    ) -> (i16, Vec<i16>) {
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return (refusal.code(), Vec::new());
        }
        let Some(group) = inner.groups.get_mut(group_id) else {
            return (NONE, vec![ResponseError::UnknownMemberId.code(); leaving.len()]);
        };
        if group.is(GroupState::Dead) {
            return (ResponseError::CoordinatorNotAvailable.code(), Vec::new());
        }
        let mut codes = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let code = if let Some(instance) = instance {
                match group.static_members.get(instance).cloned() {
                    None => ResponseError::UnknownMemberId.code(),
                    Some(current) if !member_id.is_empty() && current != *member_id => {
                        ResponseError::FencedInstanceId.code()
                    }
                    Some(current) => {
                        remove_member_and_update_group(group, &current, &self.config, now_ms);
                        NONE
                    }
                }
            } else if group.pending_members.remove(member_id).is_some() {
                try_complete_join(group, now_ms);
                NONE
            } else if group.members.contains_key(member_id) {
                remove_member_and_update_group(group, member_id, &self.config, now_ms);
                NONE
            } else {
                ResponseError::UnknownMemberId.code()
            };
            codes.push(code);
        }
        if group.is(GroupState::Empty) && group.members.is_empty() {
            let group_id = group.group_id.clone();
            let _ = self.store_group(&mut inner, &group_id, now_ms);
        }
        (NONE, codes)
    }

    /// DescribeGroups for one group (Kafka's `GroupMetadata.summary`): members' metadata and
    /// assignments only when the group is stable.
    pub(crate) fn describe_group(&self, group_id: &str) -> Option<GroupSummary> {
        let inner = self.lock();
        let group = inner.groups.get(group_id)?;
        let stable = group.is(GroupState::Stable);
        let protocol = group.protocol.clone().unwrap_or_default();
        let members = group
            .members
            .values()
            .map(|member| {
                let (metadata, assignment) = if stable {
                    (member.metadata(&protocol), member.assignment.clone())
                } else {
                    (Bytes::new(), Bytes::new())
                };
                (
                    member.member_id.clone(),
                    member.group_instance_id.clone(),
                    member.client_id.clone(),
                    member.client_host.clone(),
                    metadata,
                    assignment,
                )
            })
            .collect();
        Some(GroupSummary {
            state: group.state.name(),
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol: if stable { protocol } else { String::new() },
            members,
        })
    }
}

/// A classic group's timers (from `tick`): sessions, lapsed member ids, pending syncs, and the
/// join phase's delay or timeout.
pub(in crate::group) fn run_classic_timers(group: &mut Group, config: &GroupConfig, now_ms: i64) {
    let expired: Vec<String> = group
        .members
        .values()
        .filter(|member| member.expired(now_ms))
        .map(|member| member.member_id.clone())
        .collect();
    for member_id in expired {
        tracing::info!(group = %group.group_id, %member_id, "member session expired");
        remove_member_and_update_group(group, &member_id, config, now_ms);
    }
    let lapsed: Vec<String> = group
        .pending_members
        .iter()
        .filter(|(_, deadline)| **deadline < now_ms)
        .map(|(member_id, _)| member_id.clone())
        .collect();
    for member_id in lapsed {
        group.pending_members.remove(&member_id);
        try_complete_join(group, now_ms);
    }
    if group.sync_deadline_ms.is_some_and(|deadline| now_ms >= deadline) {
        group.sync_deadline_ms = None;
        if !group.pending_sync.is_empty()
            && matches!(group.state, GroupState::CompletingRebalance | GroupState::Stable)
        {
            let late: Vec<String> = group.pending_sync.drain().collect();
            for member_id in late {
                tracing::info!(group = %group.group_id, %member_id, "member did not sync in time");
                group.remove_member(&member_id);
            }
            prepare_rebalance(group, config, now_ms);
        }
    }
    run_join_timer(group, config, now_ms);
}

/// Kafka's checks shared by SyncGroup, Heartbeat and OffsetCommit: a static member whose
/// instance now belongs to another member id is fenced; an unknown member id is unknown.
pub(in crate::group) fn check_member(
    group: &Group,
    member_id: &str,
    group_instance_id: Option<&str>,
) -> Option<i16> {
    if let Some(instance) = group_instance_id
        && group.static_members.get(instance).is_some_and(|current| current != member_id)
    {
        return Some(ResponseError::FencedInstanceId.code());
    }
    if !group.members.contains_key(member_id) {
        return Some(ResponseError::UnknownMemberId.code());
    }
    None
}

fn new_member(
    member_id: String,
    request: JoinRequest,
    sender: oneshot::Sender<JoinResult>,
    now_ms: i64,
) -> Member {
    Member {
        member_id,
        group_instance_id: request.group_instance_id,
        client_id: request.client_id,
        client_host: request.client_host,
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        protocols: request.protocols,
        assignment: Bytes::new(),
        awaiting_join: Some(sender),
        awaiting_sync: None,
        last_heartbeat_ms: now_ms,
        is_new: true,
    }
}

/// Kafka's `addMemberAndRebalance`.
fn add_member_and_rebalance(
    group: &mut Group,
    member_id: String,
    request: JoinRequest,
    sender: oneshot::Sender<JoinResult>,
    config: &GroupConfig,
    now_ms: i64,
) {
    if group.members.is_empty() {
        group.protocol_type = Some(request.protocol_type.clone());
    }
    if group.leader.is_none() {
        group.leader = Some(member_id.clone());
    }
    if let Some(instance) = &request.group_instance_id {
        group.static_members.insert(instance.clone(), member_id.clone());
    }
    if matches!(group.join_timer, Some(JoinTimer::Initial { .. })) {
        group.new_member_added = true;
    }
    let member = new_member(member_id.clone(), request, sender, now_ms);
    group.members.insert(member_id, member);
    maybe_prepare_rebalance(group, config, now_ms);
    try_complete_join(group, now_ms);
}

/// Kafka's `updateStaticMemberAndRebalance`: a static member rejoined with a new member id.
/// Returns whether the group must be stored (a stable group keeps its assignment).
fn replace_static_member(
    group: &mut Group,
    old_member_id: &str,
    new_member_id: &str,
    request: JoinRequest,
    sender: oneshot::Sender<JoinResult>,
    config: &GroupConfig,
    now_ms: i64,
) -> bool {
    let Some(mut old) = group.members.remove(old_member_id) else {
        add_member_and_rebalance(group, new_member_id.to_owned(), request, sender, config, now_ms);
        return false;
    };
    // The old instance is fenced: a waiting join or sync of its learns so.
    old.fail_waiters(ResponseError::FencedInstanceId.code());
    let protocols_changed = !old.same_protocols(&request.protocols);
    let was_leader = group.is_leader(old_member_id);
    let mut member = new_member(new_member_id.to_owned(), request, sender, now_ms);
    member.assignment = old.assignment;
    member.is_new = false;
    if let Some(instance) = &member.group_instance_id {
        group.static_members.insert(instance.clone(), new_member_id.to_owned());
    }
    if group.pending_sync.remove(old_member_id) {
        group.pending_sync.insert(new_member_id.to_owned());
    }
    if was_leader {
        group.leader = Some(new_member_id.to_owned());
    }
    group.members.insert(new_member_id.to_owned(), member);
    match group.state {
        GroupState::Stable if !protocols_changed => {
            // No rebalance: the member gets the current generation and keeps its assignment.
            let result = join_result(group, new_member_id, was_leader);
            if let Some(waiter) =
                group.members.get_mut(new_member_id).and_then(|member| member.awaiting_join.take())
            {
                let _ = waiter.send(result);
            }
            true
        }
        GroupState::CompletingRebalance | GroupState::Stable => {
            prepare_rebalance(group, config, now_ms);
            false
        }
        _ => {
            try_complete_join(group, now_ms);
            false
        }
    }
}

/// Kafka's join of a member that already has its id.
fn join_known_member(
    group: &mut Group,
    request: JoinRequest,
    sender: oneshot::Sender<JoinResult>,
    config: &GroupConfig,
    now_ms: i64,
) {
    let member_id = request.member_id.clone();
    if let Some(code) = check_member(group, &member_id, request.group_instance_id.as_deref()) {
        let _ = sender.send(JoinResult::error(&member_id, code));
        return;
    }
    let same = group
        .members
        .get(&member_id)
        .is_some_and(|member| member.same_protocols(&request.protocols));
    match group.state {
        GroupState::Empty | GroupState::Dead => {
            let _ =
                sender.send(JoinResult::error(&member_id, ResponseError::UnknownMemberId.code()));
        }
        GroupState::CompletingRebalance if same => {
            // The member missed its join response: send it again.
            let leader = group.is_leader(&member_id);
            let _ = sender.send(join_result(group, &member_id, leader));
        }
        GroupState::Stable if same && !group.is_leader(&member_id) => {
            let _ = sender.send(join_result(group, &member_id, false));
        }
        GroupState::PreparingRebalance | GroupState::CompletingRebalance | GroupState::Stable => {
            update_member_and_rebalance(group, request, sender, config, now_ms);
        }
    }
}

/// Kafka's `updateMemberAndRebalance`.
fn update_member_and_rebalance(
    group: &mut Group,
    request: JoinRequest,
    sender: oneshot::Sender<JoinResult>,
    config: &GroupConfig,
    now_ms: i64,
) {
    if let Some(member) = group.members.get_mut(&request.member_id) {
        member.protocols = request.protocols;
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.last_heartbeat_ms = now_ms;
        member.awaiting_join = Some(sender);
    }
    maybe_prepare_rebalance(group, config, now_ms);
    try_complete_join(group, now_ms);
}

fn maybe_prepare_rebalance(group: &mut Group, config: &GroupConfig, now_ms: i64) {
    if matches!(
        group.state,
        GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
    ) {
        prepare_rebalance(group, config, now_ms);
    }
}

/// Kafka's `prepareRebalance`: waiting syncs learn of the rebalance; an empty group starts
/// with the initial delay, any other with the rebalance timeout.
fn prepare_rebalance(group: &mut Group, config: &GroupConfig, now_ms: i64) {
    if group.is(GroupState::CompletingRebalance) {
        group.fail_syncs(ResponseError::RebalanceInProgress.code());
    }
    group.pending_sync.clear();
    group.sync_deadline_ms = None;
    let rebalance_timeout_ms = group.rebalance_timeout_ms();
    group.join_timer = if group.is(GroupState::Empty) && config.initial_rebalance_delay_ms > 0 {
        let delay_ms = config.initial_rebalance_delay_ms.min(rebalance_timeout_ms);
        group.new_member_added = false;
        Some(JoinTimer::Initial {
            deadline_ms: now_ms + delay_ms,
            delay_ms: config.initial_rebalance_delay_ms,
            remaining_ms: (rebalance_timeout_ms - delay_ms).max(0),
        })
    } else {
        Some(JoinTimer::Rebalance { deadline_ms: now_ms + rebalance_timeout_ms })
    };
    group.transition(GroupState::PreparingRebalance, now_ms);
    // Kafka's tryCompleteElseWatch: a group whose members are all in (or that has none left)
    // completes at once.
    try_complete_join(group, now_ms);
    tracing::debug!(group = %group.group_id, generation = group.generation_id, "preparing to rebalance");
}

/// Completes the join phase early when every member is in (never during the initial delay).
fn try_complete_join(group: &mut Group, now_ms: i64) {
    if group.is(GroupState::PreparingRebalance)
        && matches!(group.join_timer, Some(JoinTimer::Rebalance { .. }))
        && group.all_members_joined()
    {
        complete_join(group, now_ms);
    }
}

fn run_join_timer(group: &mut Group, _config: &GroupConfig, now_ms: i64) {
    if !group.is(GroupState::PreparingRebalance) {
        return;
    }
    match group.join_timer {
        Some(JoinTimer::Initial { deadline_ms, delay_ms, remaining_ms })
            if now_ms >= deadline_ms =>
        {
            if group.new_member_added && remaining_ms > 0 {
                group.new_member_added = false;
                let delay = delay_ms.min(remaining_ms);
                group.join_timer = Some(JoinTimer::Initial {
                    deadline_ms: now_ms + delay,
                    delay_ms,
                    remaining_ms: remaining_ms - delay,
                });
            } else {
                complete_join(group, now_ms);
            }
        }
        Some(JoinTimer::Rebalance { deadline_ms })
            if now_ms >= deadline_ms || group.all_members_joined() =>
        {
            complete_join(group, now_ms);
        }
        _ => {}
    }
}

/// Kafka's `onCompleteJoin`: members that did not rejoin are dropped, the next generation
/// begins, and every member gets its answer (the leader with all members' metadata).
fn complete_join(group: &mut Group, now_ms: i64) {
    group.join_timer = None;
    let not_rejoined: Vec<String> = group
        .members
        .values()
        .filter(|member| member.awaiting_join.is_none())
        .map(|member| member.member_id.clone())
        .collect();
    for member_id in not_rejoined {
        tracing::info!(group = %group.group_id, %member_id, "member did not rejoin in time");
        group.remove_member(&member_id);
    }
    group.generation_id += 1;
    if group.members.is_empty() {
        group.protocol = None;
        group.leader = None;
        group.transition(GroupState::Empty, now_ms);
        return;
    }
    group.protocol = group.select_protocol();
    if group.leader.as_ref().is_none_or(|leader| !group.members.contains_key(leader)) {
        group.leader = group.members.keys().next().cloned();
    }
    group.transition(GroupState::CompletingRebalance, now_ms);
    let ids: Vec<String> = group.members.keys().cloned().collect();
    group.pending_sync = ids.iter().cloned().collect();
    group.sync_deadline_ms = Some(now_ms + group.rebalance_timeout_ms());
    for member_id in ids {
        let leader = group.is_leader(&member_id);
        let result = join_result(group, &member_id, leader);
        if let Some(member) = group.members.get_mut(&member_id) {
            member.is_new = false;
            member.last_heartbeat_ms = now_ms;
            if let Some(waiter) = member.awaiting_join.take() {
                let _ = waiter.send(result);
            }
        }
    }
    tracing::info!(group = %group.group_id, generation = group.generation_id, members = group.members.len(), protocol = ?group.protocol, "rebalance complete; awaiting sync");
}

fn join_result(group: &Group, member_id: &str, with_members: bool) -> JoinResult {
    let protocol = group.protocol.clone().unwrap_or_default();
    JoinResult {
        error_code: NONE,
        generation_id: group.generation_id,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol.clone(),
        leader: group.leader.clone().unwrap_or_default(),
        member_id: member_id.to_owned(),
        skip_assignment: false,
        members: if with_members {
            group
                .members
                .values()
                .map(|member| {
                    (
                        member.member_id.clone(),
                        member.group_instance_id.clone(),
                        member.metadata(&protocol),
                    )
                })
                .collect()
        } else {
            Vec::new()
        },
    }
}

fn sync_result(group: &Group, member_id: &str) -> SyncResult {
    SyncResult {
        error_code: NONE,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol.clone(),
        assignment: group
            .members
            .get(member_id)
            .map(|member| member.assignment.clone())
            .unwrap_or_default(),
    }
}

/// Kafka's `removeMemberAndUpdateGroup`.
fn remove_member_and_update_group(
    group: &mut Group,
    member_id: &str,
    config: &GroupConfig,
    now_ms: i64,
) {
    if let Some(mut member) = group.remove_member(member_id) {
        member.fail_waiters(ResponseError::UnknownMemberId.code());
    }
    match group.state {
        GroupState::Dead | GroupState::Empty => {}
        GroupState::Stable | GroupState::CompletingRebalance => {
            prepare_rebalance(group, config, now_ms);
        }
        GroupState::PreparingRebalance => try_complete_join(group, now_ms),
    }
}
