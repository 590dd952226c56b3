//! The group coordinator for classic consumer groups (Kafka's `GroupCoordinator` with its
//! `GroupMetadataManager`): membership and rebalances with Kafka's timing, committed offsets,
//! and their durable form in the internal topic `__consumer_offsets`, written and replayed
//! through seglog's own log with Kafka's record schemas (`seglog_format::group`).
//!
//! Every group lives in one partition of `__consumer_offsets`, chosen as Kafka chooses it
//! (`abs(groupId.hashCode) % partitions`). A single node coordinates every group. State is one
//! map under one mutex; JoinGroup and SyncGroup answers that must wait for other members are
//! `oneshot` channels completed by later requests or by [`GroupCoordinator::tick`], which the
//! server runs every 100 ms for session timeouts, the initial rebalance delay, rebalance
//! timeouts and pending syncs.
//!
//! Until log compaction exists, `__consumer_offsets` stays bounded by rewriting: when a
//! partition grows past `offsets.topic.segment.bytes` and past twice its live state, the live
//! state (every committed offset and group of that partition) is appended again and the log
//! start offset moves to the first rewritten record, so retention deletes the older segments.
//! A crash part-way leaves the old start in place and replays to the same state.

mod consumer;
mod heartbeat;
mod state;

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use seglog_format::group::{
    self as records, GroupMetadataValue, GroupRecordKey, MemberMetadata, OffsetCommitValue,
};
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_storage::config::DurabilityMode;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::LogManager;
use tokio::sync::{Notify, oneshot};

pub(crate) use consumer::Partition;
pub(crate) use heartbeat::ConsumerHeartbeat;
pub(crate) use state::{Committed, GroupState, JoinResult, SyncResult};
use state::{Group, JoinTimer, Member};

use crate::errors;

/// The internal topic of committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// The largest batch the coordinator writes at once (below `message.max.bytes`' default).
const WRITE_BATCH_BYTES_MAX: usize = 512 * 1024;
/// Kafka's `offsets.retention.check.interval.ms` default: how often expired offsets go.
const OFFSETS_RETENTION_CHECK_INTERVAL_MS: i64 = 600_000;
/// How much of `__consumer_offsets` one read during loading returns.
const LOAD_READ_BYTES_MAX: u32 = 8 << 20;

/// The coordinator's settings, with Kafka's keys and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions` (50).
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes` (104857600); also the size past which a partition of
    /// `__consumer_offsets` is rewritten to its live state.
    pub offsets_topic_segment_bytes: u64,
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: i32,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.retention.minutes` (10080) in milliseconds: offsets of an empty group are
    /// deleted this long after it became empty.
    pub offsets_retention_ms: i64,
    /// `group.consumer.heartbeat.interval.ms` (5000): KIP-848 members' heartbeat interval.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms` (45000): KIP-848 members' session timeout.
    pub consumer_session_timeout_ms: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            initial_rebalance_delay_ms: 3000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            offset_metadata_max_bytes: 4096,
            offsets_retention_ms: 10080 * 60 * 1000,
            consumer_heartbeat_interval_ms: 5000,
            consumer_session_timeout_ms: 45_000,
        }
    }
}

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

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone)]
pub(crate) struct OffsetToCommit {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) leader_epoch: i32,
    pub(crate) metadata: String,
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

/// The shared state behind the mutex.
#[derive(Debug, Default)]
struct Inner {
    groups: HashMap<String, Group>,
    /// Partitions of `__consumer_offsets` (0 until it exists).
    partitions: i32,
    shutting_down: bool,
    /// When offsets of empty groups were last checked for expiry.
    last_retention_check_ms: Option<i64>,
    /// Partitions of `__consumer_offsets` written since the bound was last checked.
    appended_partitions: std::collections::BTreeSet<i32>,
}

/// The group coordinator (Kafka's `GroupCoordinator`).
#[derive(Debug)]
pub struct GroupCoordinator {
    manager: Arc<LogManager>,
    config: GroupConfig,
    inner: Mutex<Inner>,
    appended: Arc<Notify>,
    member_ids: MemberIds,
}

/// Kafka's member ids: the client id, a dash and a random UUID.
#[derive(Debug)]
struct MemberIds {
    seed: RandomState,
    counter: AtomicU64,
}

impl MemberIds {
    fn next(&self, client_id: &str) -> String {
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        let high = self.seed.hash_one(count);
        let low = self.seed.hash_one(high ^ 0x9E37_79B9_7F4A_7C15);
        let mut bytes = [0u8; 16];
        let (first, second) = bytes.split_at_mut(8);
        first.copy_from_slice(&high.to_be_bytes());
        second.copy_from_slice(&low.to_be_bytes());
        // Version 4, variant 1, as java.util.UUID.randomUUID.
        if let Some(byte) = bytes.get_mut(6) {
            *byte = (*byte & 0x0f) | 0x40;
        }
        if let Some(byte) = bytes.get_mut(8) {
            *byte = (*byte & 0x3f) | 0x80;
        }
        format!("{client_id}-{}", uuid::Uuid::from_bytes(bytes).hyphenated())
    }
}

/// Kafka's `partitionFor`: `Utils.abs(groupId.hashCode) % partitions`.
pub(crate) fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let hash = seglog_format::java::string_hash(group_id);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    if partitions <= 0 { 0 } else { abs % partitions }
}

/// Committed offsets by topic, then partition (`None`: nothing committed).
pub(crate) type FetchedOffsets = Vec<(String, Vec<(i32, Option<Committed>)>)>;

/// Topics and their partitions, as a request names them.
pub(crate) type TopicPartitions = Vec<(String, Vec<i32>)>;

/// One record to write: key and value (`None`: a tombstone).
type KeyValue = (Vec<u8>, Option<Vec<u8>>);

impl GroupCoordinator {
    pub(crate) fn new(
        manager: Arc<LogManager>,
        config: GroupConfig,
        appended: Arc<Notify>,
    ) -> Self {
        Self {
            manager,
            config,
            inner: Mutex::new(Inner::default()),
            appended,
            member_ids: MemberIds { seed: RandomState::new(), counter: AtomicU64::new(0) },
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The coordinator's settings.
    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// Loads every group and committed offset from `__consumer_offsets`, if it exists (Kafka's
    /// `GroupMetadataManager.loadGroupsAndOffsets`), replaying each partition from its log
    /// start. Called once before the broker serves. Returns how many groups were loaded.
    pub fn load(&self, now_ms: i64) -> Result<usize, String> {
        let partitions =
            self.manager.topic_partition_counts().get(OFFSETS_TOPIC).copied().unwrap_or(0);
        let mut offsets: BTreeMap<(String, String, i32), Option<OffsetCommitValue>> =
            BTreeMap::new();
        let mut metadata: BTreeMap<String, Option<GroupMetadataValue>> = BTreeMap::new();
        let mut consumer: BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
        for partition in 0..partitions {
            let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
            let log = self
                .manager
                .get_log(&tp)
                .map_err(|error| format!("{OFFSETS_TOPIC}-{partition}: {error}"))?;
            replay_partition(&log, &mut offsets, &mut metadata, &mut consumer)
                .map_err(|error| format!("{OFFSETS_TOPIC}-{partition}: {error}"))?;
        }
        let mut inner = self.lock();
        inner.partitions = partitions;
        for (group_id, value) in metadata {
            let Some(value) = value else { continue };
            let group = inner
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(&group_id, now_ms));
            restore_group(group, value, now_ms);
        }
        let topic_counts = self.manager.topic_partition_counts();
        let topic_names: BTreeMap<[u8; 16], String> = topic_counts
            .keys()
            .filter_map(|name| self.manager.topic_id(name).map(|id| (id, name.clone())))
            .collect();
        for (group_id, live) in consumer {
            if live.is_empty() {
                continue;
            }
            let restored =
                heartbeat::restore_consumer_group(&live, &topic_names, &topic_counts, now_ms)
                    .map_err(|error| format!("group {group_id}: {error}"))?;
            let group = inner
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(&group_id, now_ms));
            group.protocol_type = Some("consumer".to_owned());
            group.consumer = Some(restored);
        }
        for ((group_id, topic, partition), value) in offsets {
            let Some(value) = value else { continue };
            let group = inner
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(&group_id, now_ms));
            group.offsets.insert(
                (topic, partition),
                Committed {
                    offset: value.offset,
                    leader_epoch: value.leader_epoch,
                    metadata: value.metadata,
                    commit_timestamp: value.commit_timestamp,
                },
            );
        }
        Ok(inner.groups.len())
    }

    /// Fails every waiting JoinGroup and SyncGroup (so in-flight requests finish) and refuses
    /// new ones, for a broker shutdown.
    pub(crate) fn shutdown(&self) {
        let mut inner = self.lock();
        inner.shutting_down = true;
        for group in inner.groups.values_mut() {
            for member in group.members.values_mut() {
                if let Some(waiter) = member.awaiting_join.take() {
                    let _ = waiter.send(JoinResult::error(
                        &member.member_id,
                        errors::COORDINATOR_NOT_AVAILABLE,
                    ));
                }
                if let Some(waiter) = member.awaiting_sync.take() {
                    let _ = waiter.send(SyncResult::error(errors::COORDINATOR_NOT_AVAILABLE));
                }
            }
        }
    }

    /// Creates `__consumer_offsets` if it does not exist yet (Kafka creates it on the first
    /// FindCoordinator), and returns its partition count.
    pub(crate) fn ensure_offsets_topic(&self) -> Result<i32, i16> {
        let mut inner = self.lock();
        self.ensure_offsets_topic_locked(&mut inner)
    }

    fn ensure_offsets_topic_locked(&self, inner: &mut Inner) -> Result<i32, i16> {
        if inner.partitions > 0 {
            return Ok(inner.partitions);
        }
        if let Some(count) = self.manager.topic_partition_counts().get(OFFSETS_TOPIC) {
            inner.partitions = *count;
            return Ok(*count);
        }
        let overrides = BTreeMap::from([
            ("cleanup.policy".to_owned(), "compact".to_owned()),
            ("compression.type".to_owned(), "producer".to_owned()),
            ("segment.bytes".to_owned(), self.config.offsets_topic_segment_bytes.to_string()),
        ]);
        match self.manager.create_topic(
            OFFSETS_TOPIC,
            self.config.offsets_topic_partitions,
            overrides,
        ) {
            Ok(_) => {
                tracing::info!(
                    partitions = self.config.offsets_topic_partitions,
                    "created {OFFSETS_TOPIC}"
                );
                inner.partitions = self.config.offsets_topic_partitions;
                Ok(inner.partitions)
            }
            Err(error) => {
                tracing::warn!(%error, "cannot create {OFFSETS_TOPIC}");
                Err(errors::COORDINATOR_NOT_AVAILABLE)
            }
        }
    }

    /// Appends records to the group's partition of `__consumer_offsets`. Returns the log and
    /// the last offset written, for [`Self::await_durable`].
    fn append(
        &self,
        inner: &mut Inner,
        group_id: &str,
        records: &[KeyValue],
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, i64), i16> {
        let partitions = self.ensure_offsets_topic_locked(inner)?;
        let partition = partition_for(group_id, partitions);
        inner.appended_partitions.insert(partition);
        self.append_to(partition, records, now_ms)
    }

    fn append_to(
        &self,
        partition: i32,
        records: &[KeyValue],
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, i64), i16> {
        let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
        let log = self.manager.get_log(&tp).map_err(|error| {
            tracing::warn!(%error, partition, "{OFFSETS_TOPIC} partition unavailable");
            errors::COORDINATOR_NOT_AVAILABLE
        })?;
        let leader_epoch = log.latest_leader_epoch().ok().flatten().unwrap_or(0).max(0);
        let mut last_offset = -1;
        let mut rest = records;
        while !rest.is_empty() {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            let mut taken = 0;
            for (key, value) in rest {
                if taken > 0
                    && builder.estimated_size_bytes()
                        + key.len()
                        + value.as_ref().map_or(0, Vec::len)
                        > WRITE_BATCH_BYTES_MAX
                {
                    break;
                }
                builder
                    .push(now_ms, Some(key), value.as_deref(), &[])
                    .map_err(|_| errors::UNKNOWN_SERVER_ERROR)?;
                taken += 1;
            }
            rest = rest.get(taken..).unwrap_or_default();
            let batch = builder.build().map_err(|_| errors::UNKNOWN_SERVER_ERROR)?;
            let info = log
                .append_as_leader(&batch, leader_epoch, AppendOrigin::Coordinator, now_ms)
                .map_err(|error| {
                    tracing::warn!(%error, partition, "cannot append to {OFFSETS_TOPIC}");
                    errors::COORDINATOR_NOT_AVAILABLE
                })?;
            let _ = log.maybe_increment_leader_high_watermark();
            last_offset = info.last_offset;
        }
        self.appended.notify_waiters();
        Ok((log, last_offset))
    }

    /// Waits until `last_offset` is durable under the topic's durability mode (acks=-1, as
    /// Kafka's `offsets.commit.required.acks`).
    fn await_durable(log: &PartitionLog, last_offset: i64, now_ms: i64) -> Result<(), i16> {
        if log.durability().is_ok_and(|mode| mode == DurabilityMode::GroupCommit) {
            log.sync_to(last_offset + 1, now_ms).map_err(|error| {
                tracing::warn!(%error, "{OFFSETS_TOPIC} fsync failed");
                errors::COORDINATOR_NOT_AVAILABLE
            })?;
        }
        Ok(())
    }

    /// Writes a group's metadata record (Kafka's `storeGroup`).
    fn store_group(&self, inner: &mut Inner, group_id: &str, now_ms: i64) -> Result<(), i16> {
        let Some(group) = inner.groups.get(group_id) else { return Ok(()) };
        let record = group_metadata_record(group).map_err(|_| errors::UNKNOWN_SERVER_ERROR)?;
        let (log, last_offset) = self.append(inner, group_id, &[record], now_ms)?;
        Self::await_durable(&log, last_offset, now_ms)
    }

    // ---------------------------------------------------------------- membership

    /// JoinGroup (Kafka's `handleJoinGroup`). The receiver completes when the rebalance does.
    pub(crate) fn join(&self, request: JoinRequest, now_ms: i64) -> oneshot::Receiver<JoinResult> {
        let (sender, receiver) = oneshot::channel();
        let reply = |sender: oneshot::Sender<JoinResult>, code: i16, member_id: &str| {
            let _ = sender.send(JoinResult::error(member_id, code));
        };
        if request.group_id.is_empty() {
            reply(sender, errors::INVALID_GROUP_ID, &request.member_id);
            return receiver;
        }
        if request.session_timeout_ms < self.config.min_session_timeout_ms
            || request.session_timeout_ms > self.config.max_session_timeout_ms
        {
            reply(sender, errors::INVALID_SESSION_TIMEOUT, &request.member_id);
            return receiver;
        }
        let mut inner = self.lock();
        if inner.shutting_down {
            reply(sender, errors::COORDINATOR_NOT_AVAILABLE, &request.member_id);
            return receiver;
        }
        if let Err(code) = self.ensure_offsets_topic_locked(&mut inner) {
            reply(sender, code, &request.member_id);
            return receiver;
        }
        let is_unknown = request.member_id.is_empty();
        if !inner.groups.contains_key(&request.group_id) {
            if !is_unknown {
                reply(sender, errors::UNKNOWN_MEMBER_ID, &request.member_id);
                return receiver;
            }
            inner.groups.insert(request.group_id.clone(), Group::new(&request.group_id, now_ms));
        }
        let config = self.config.clone();
        let Some(group) = inner.groups.get_mut(&request.group_id) else {
            reply(sender, errors::COORDINATOR_NOT_AVAILABLE, &request.member_id);
            return receiver;
        };
        if group.is(GroupState::Dead) {
            reply(sender, errors::COORDINATOR_NOT_AVAILABLE, &request.member_id);
            return receiver;
        }
        let consumer_members = group.consumer.as_ref().is_some_and(|c| !c.members.is_empty());
        if consumer_members || !group.supports_protocols(&request.protocol_type, &request.protocols)
        {
            reply(sender, errors::INCONSISTENT_GROUP_PROTOCOL, &request.member_id);
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
                reply(sender, errors::MEMBER_ID_REQUIRED, &member_id);
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
        let unused = group.is(GroupState::Empty)
            && group.members.is_empty()
            && group.pending_members.is_empty()
            && group.offsets.is_empty()
            && group.generation_id == 0;
        if unused {
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
        if inner.shutting_down {
            reply(sender, errors::COORDINATOR_NOT_AVAILABLE);
            return receiver;
        }
        let Some(group) = inner.groups.get_mut(&request.group_id) else {
            reply(sender, errors::UNKNOWN_MEMBER_ID);
            return receiver;
        };
        if group.is(GroupState::Dead) {
            reply(sender, errors::COORDINATOR_NOT_AVAILABLE);
            return receiver;
        }
        if let Some(code) =
            check_member(group, &request.member_id, request.group_instance_id.as_deref())
        {
            reply(sender, code);
            return receiver;
        }
        if request.generation_id != group.generation_id {
            reply(sender, errors::ILLEGAL_GENERATION);
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
            reply(sender, errors::INCONSISTENT_GROUP_PROTOCOL);
            return receiver;
        }
        match group.state {
            GroupState::Empty | GroupState::Dead => reply(sender, errors::UNKNOWN_MEMBER_ID),
            GroupState::PreparingRebalance => reply(sender, errors::REBALANCE_IN_PROGRESS),
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
                            for member in group.members.values_mut() {
                                member.assignment = Bytes::new();
                                if let Some(waiter) = member.awaiting_sync.take() {
                                    let _ = waiter.send(SyncResult::error(code));
                                }
                            }
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
        if inner.shutting_down {
            return errors::COORDINATOR_NOT_AVAILABLE;
        }
        let Some(group) = inner.groups.get_mut(group_id) else { return errors::UNKNOWN_MEMBER_ID };
        match group.state {
            GroupState::Dead => return errors::COORDINATOR_NOT_AVAILABLE,
            GroupState::Empty => return errors::UNKNOWN_MEMBER_ID,
            _ => {}
        }
        if let Some(code) = check_member(group, member_id, group_instance_id) {
            return code;
        }
        if generation_id != group.generation_id {
            return errors::ILLEGAL_GENERATION;
        }
        if let Some(member) = group.members.get_mut(member_id) {
            member.last_heartbeat_ms = now_ms;
        }
        if group.is(GroupState::PreparingRebalance) {
            errors::REBALANCE_IN_PROGRESS
        } else {
            errors::NONE
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
        if inner.shutting_down {
            return (errors::COORDINATOR_NOT_AVAILABLE, Vec::new());
        }
        let Some(group) = inner.groups.get_mut(group_id) else {
            return (errors::NONE, vec![errors::UNKNOWN_MEMBER_ID; leaving.len()]);
        };
        if group.is(GroupState::Dead) {
            return (errors::COORDINATOR_NOT_AVAILABLE, Vec::new());
        }
        let mut codes = Vec::with_capacity(leaving.len());
        for (member_id, instance) in leaving {
            let code = if let Some(instance) = instance {
                match group.static_members.get(instance).cloned() {
                    None => errors::UNKNOWN_MEMBER_ID,
                    Some(current) if !member_id.is_empty() && current != *member_id => {
                        errors::FENCED_INSTANCE_ID
                    }
                    Some(current) => {
                        remove_member_and_update_group(group, &current, &self.config, now_ms);
                        errors::NONE
                    }
                }
            } else if group.pending_members.remove(member_id).is_some() {
                try_complete_join(group, now_ms);
                errors::NONE
            } else if group.members.contains_key(member_id) {
                remove_member_and_update_group(group, member_id, &self.config, now_ms);
                errors::NONE
            } else {
                errors::UNKNOWN_MEMBER_ID
            };
            codes.push(code);
        }
        if group.is(GroupState::Empty) && group.members.is_empty() {
            let group_id = group.group_id.clone();
            let _ = self.store_group(&mut inner, &group_id, now_ms);
        }
        (errors::NONE, codes)
    }

    // ---------------------------------------------------------------- offsets

    /// OffsetCommit (Kafka's `handleCommitOffsets`): one error code per offset, in order.
    pub(crate) fn commit_offsets(
        &self,
        group_id: &str,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: &[OffsetToCommit],
        now_ms: i64,
    ) -> Vec<i16> {
        let all = |code: i16| vec![code; offsets.len()];
        if group_id.is_empty() {
            return all(errors::INVALID_GROUP_ID);
        }
        let mut inner = self.lock();
        if inner.shutting_down {
            return all(errors::COORDINATOR_NOT_AVAILABLE);
        }
        if !inner.groups.contains_key(group_id) {
            if generation_id >= 0 {
                return all(errors::ILLEGAL_GENERATION);
            }
            inner.groups.insert(group_id.to_owned(), Group::new(group_id, now_ms));
        }
        let Some(group) = inner.groups.get_mut(group_id) else {
            return all(errors::COORDINATOR_NOT_AVAILABLE);
        };
        let code = check_commit(group, generation_id, member_id, group_instance_id, now_ms);
        if code != errors::NONE {
            return all(code);
        }
        let mut codes = Vec::with_capacity(offsets.len());
        let mut records = Vec::new();
        let mut accepted = Vec::new();
        for offset in offsets {
            if offset.metadata.len() > self.config.offset_metadata_max_bytes {
                codes.push(errors::OFFSET_METADATA_TOO_LARGE);
                continue;
            }
            let key = GroupRecordKey::OffsetCommit {
                group: group_id.to_owned(),
                topic: offset.topic.clone(),
                partition: offset.partition,
            };
            let value = OffsetCommitValue {
                offset: offset.offset,
                leader_epoch: offset.leader_epoch,
                metadata: offset.metadata.clone(),
                commit_timestamp: now_ms,
                expire_timestamp: -1,
            };
            match (records::encode_key(&key), records::encode_offset_commit_value(&value)) {
                (Ok(key), Ok(value)) => {
                    records.push((key, Some(value)));
                    accepted.push(codes.len());
                    codes.push(errors::NONE);
                }
                _ => codes.push(errors::INVALID_REQUEST),
            }
        }
        if records.is_empty() {
            return codes;
        }
        let written = match self.append(&mut inner, group_id, &records, now_ms) {
            Ok(written) => written,
            Err(code) => {
                for idx in accepted {
                    if let Some(slot) = codes.get_mut(idx) {
                        *slot = code;
                    }
                }
                return codes;
            }
        };
        if let Some(group) = inner.groups.get_mut(group_id) {
            for (offset, code) in offsets.iter().zip(&codes) {
                if *code == errors::NONE {
                    group.offsets.insert(
                        (offset.topic.clone(), offset.partition),
                        Committed {
                            offset: offset.offset,
                            leader_epoch: offset.leader_epoch,
                            metadata: offset.metadata.clone(),
                            commit_timestamp: now_ms,
                        },
                    );
                }
            }
        }
        drop(inner);
        if let Err(code) = Self::await_durable(&written.0, written.1, now_ms) {
            for idx in accepted {
                if let Some(slot) = codes.get_mut(idx) {
                    *slot = code;
                }
            }
        }
        codes
    }

    /// OffsetFetch for one group: `None` topics means every committed offset. Unknown groups and
    /// partitions answer offset -1, as Kafka does.
    pub(crate) fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
    ) -> Result<FetchedOffsets, i16> {
        let inner = self.lock();
        if inner.shutting_down {
            return Err(errors::COORDINATOR_NOT_AVAILABLE);
        }
        let group = inner.groups.get(group_id);
        let Some(topics) = topics else {
            let mut by_topic: BTreeMap<String, Vec<(i32, Option<Committed>)>> = BTreeMap::new();
            for ((topic, partition), committed) in
                group.map(|group| &group.offsets).into_iter().flatten()
            {
                by_topic
                    .entry(topic.clone())
                    .or_default()
                    .push((*partition, Some(committed.clone())));
            }
            return Ok(by_topic.into_iter().collect());
        };
        Ok(topics
            .into_iter()
            .map(|(topic, partitions)| {
                let found = partitions
                    .into_iter()
                    .map(|partition| {
                        let committed = group.and_then(|group| {
                            group.offsets.get(&(topic.clone(), partition)).cloned()
                        });
                        (partition, committed)
                    })
                    .collect();
                (topic, found)
            })
            .collect())
    }

    /// OffsetDelete (Kafka's `handleDeleteOffsets`): the group's error, and each partition's.
    pub(crate) fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        now_ms: i64,
    ) -> (i16, Vec<i16>) {
        let mut inner = self.lock();
        let Some(group) = inner.groups.get(group_id) else {
            return (errors::GROUP_ID_NOT_FOUND, Vec::new());
        };
        if group.is(GroupState::Dead) {
            return (errors::GROUP_ID_NOT_FOUND, Vec::new());
        }
        let subscribed = if group.is(GroupState::Empty) {
            Some(std::collections::HashSet::new())
        } else {
            group.subscribed_topics()
        };
        let Some(subscribed) = subscribed else {
            return (errors::NON_EMPTY_GROUP, Vec::new());
        };
        let mut codes = Vec::with_capacity(partitions.len());
        let mut records = Vec::new();
        let mut deleted = Vec::new();
        for (topic, partition) in partitions {
            if subscribed.contains(topic) {
                codes.push(errors::GROUP_SUBSCRIBED_TO_TOPIC);
                continue;
            }
            codes.push(errors::NONE);
            if group.offsets.contains_key(&(topic.clone(), *partition)) {
                let key = GroupRecordKey::OffsetCommit {
                    group: group_id.to_owned(),
                    topic: topic.clone(),
                    partition: *partition,
                };
                if let Ok(key) = records::encode_key(&key) {
                    records.push((key, None));
                    deleted.push((topic.clone(), *partition));
                }
            }
        }
        if !records.is_empty() {
            match self.append(&mut inner, group_id, &records, now_ms) {
                Ok(_) => {
                    if let Some(group) = inner.groups.get_mut(group_id) {
                        for key in deleted {
                            group.offsets.remove(&key);
                        }
                    }
                }
                Err(code) => return (code, Vec::new()),
            }
        }
        (errors::NONE, codes)
    }

    // ---------------------------------------------------------------- groups

    /// ListGroups: `(group id, protocol type, state)`, optionally only in some states
    /// (case-insensitive, as Kafka compares them).
    /// ListGroups: `(group id, protocol type, state, type)`, optionally only in some states
    /// (case-insensitive, as Kafka compares them) and of some types (`classic`, `consumer`).
    pub(crate) fn list_groups(
        &self,
        states: &[String],
        types: &[String],
    ) -> Vec<(String, String, &'static str, &'static str)> {
        let inner = self.lock();
        let mut groups: Vec<_> = inner
            .groups
            .values()
            .filter(|group| !group.is(GroupState::Dead))
            .map(|group| {
                let (state, kind) = match &group.consumer {
                    Some(consumer) => (consumer.state(), "consumer"),
                    None => (group.state.name(), "classic"),
                };
                (
                    group.group_id.clone(),
                    group.protocol_type.clone().unwrap_or_default(),
                    state,
                    kind,
                )
            })
            .filter(|(_, _, state, kind)| {
                (states.is_empty() || states.iter().any(|s| s.eq_ignore_ascii_case(state)))
                    && (types.is_empty() || types.iter().any(|t| t.eq_ignore_ascii_case(kind)))
            })
            .collect();
        groups.sort();
        groups
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

    /// DeleteGroups for one group: only an empty group can go; its offsets and metadata get
    /// tombstones.
    pub(crate) fn delete_group(&self, group_id: &str, now_ms: i64) -> i16 {
        if group_id.is_empty() {
            return errors::INVALID_GROUP_ID;
        }
        let mut inner = self.lock();
        let Some(group) = inner.groups.get(group_id) else { return errors::GROUP_ID_NOT_FOUND };
        if group.is(GroupState::Dead) {
            return errors::GROUP_ID_NOT_FOUND;
        }
        if !group.is(GroupState::Empty)
            || group.consumer.as_ref().is_some_and(|c| !c.members.is_empty())
        {
            return errors::NON_EMPTY_GROUP;
        }
        match tombstones(group) {
            Ok(records) => {
                if let Err(code) = self.append(&mut inner, group_id, &records, now_ms) {
                    return code;
                }
            }
            Err(_) => return errors::UNKNOWN_SERVER_ERROR,
        }
        inner.groups.remove(group_id);
        errors::NONE
    }

    // ---------------------------------------------------------------- time

    /// Expires sessions, pending member ids and pending syncs, runs the join timers, removes
    /// the offsets of long-empty groups, and keeps `__consumer_offsets` bounded.
    pub fn tick(&self, now_ms: i64) {
        let mut inner = self.lock();
        if inner.shutting_down {
            return;
        }
        let mut to_store = Vec::new();
        let mut to_expire = Vec::new();
        let check_retention = match inner.last_retention_check_ms {
            Some(last) if now_ms - last < OFFSETS_RETENTION_CHECK_INTERVAL_MS => false,
            Some(_) => true,
            None => {
                inner.last_retention_check_ms = Some(now_ms);
                false
            }
        };
        if check_retention {
            inner.last_retention_check_ms = Some(now_ms);
        }
        let mut consumer_changed = Vec::new();
        for group in inner.groups.values_mut() {
            if heartbeat::expire_consumer_members(
                group,
                i64::from(self.config.consumer_session_timeout_ms),
                now_ms,
            ) {
                consumer_changed.push(group.group_id.clone());
            }
            let before = (group.state, group.generation_id);
            run_classic_timers(group, &self.config, now_ms);
            let became_empty = group.is(GroupState::Empty)
                && group.members.is_empty()
                && (before.0 != GroupState::Empty || before.1 != group.generation_id);
            if became_empty {
                to_store.push(group.group_id.clone());
            }
            // Kafka's cleanupGroupMetadata: offsets of a group empty for the retention time
            // expire, and an empty group with no offsets goes.
            let retention_over = check_retention
                && group.is(GroupState::Empty)
                && group.consumer.as_ref().is_none_or(|c| c.members.is_empty())
                && group.members.is_empty()
                && group.pending_members.is_empty()
                && (group.offsets.is_empty()
                    || now_ms.saturating_sub(group.state_timestamp_ms)
                        > self.config.offsets_retention_ms);
            if retention_over {
                to_expire.push(group.group_id.clone());
            }
        }
        for group_id in to_store {
            let _ = self.store_group(&mut inner, &group_id, now_ms);
        }
        for group_id in consumer_changed {
            let _ = self.persist_and_wait(&mut inner, &group_id, now_ms);
        }
        for group_id in to_expire {
            let Some(group) = inner.groups.get(&group_id) else { continue };
            if let Ok(records) = tombstones(group)
                && self.append(&mut inner, &group_id, &records, now_ms).is_ok()
            {
                tracing::info!(group = %group_id, "offsets expired (offsets.retention.minutes)");
                inner.groups.remove(&group_id);
            }
        }
        // Groups that hold nothing (no member, pending member, offset or stored generation)
        // go at once, so a client inventing group ids cannot grow memory for long.
        inner.groups.retain(|_, group| {
            !(group.is(GroupState::Empty)
                && group.generation_id == 0
                && group.members.is_empty()
                && group.pending_members.is_empty()
                && group.offsets.is_empty()
                && group
                    .consumer
                    .as_ref()
                    .is_none_or(|c| c.members.is_empty() && c.group_epoch == 0))
        });
        self.bound_offsets_topic(&mut inner, now_ms);
    }

    /// Rewrites any partition of `__consumer_offsets` that outgrew its bound (see the module
    /// documentation).
    fn bound_offsets_topic(&self, inner: &mut Inner, now_ms: i64) {
        // Only a partition written since the last check can have outgrown its bound.
        for partition in std::mem::take(&mut inner.appended_partitions) {
            let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
            let Ok(log) = self.manager.get_log(&tp) else { continue };
            let Ok(size) = log.size_bytes() else { continue };
            if size <= self.config.offsets_topic_segment_bytes {
                continue;
            }
            let mut live = Vec::new();
            for group in inner.groups.values() {
                if partition_for(&group.group_id, inner.partitions) == partition
                    && let Ok(records) = live_records(group)
                {
                    live.extend(records);
                }
            }
            let live_bytes: u64 = live
                .iter()
                .map(|(key, value)| (key.len() + value.as_ref().map_or(0, Vec::len) + 16) as u64)
                .sum();
            if live_bytes.saturating_mul(2) >= size {
                continue;
            }
            let Ok(start) = log.log_end_offset() else { continue };
            if !live.is_empty() && self.append_to(partition, &live, now_ms).is_err() {
                continue;
            }
            let new_start =
                if live.is_empty() { log.log_end_offset().unwrap_or(start) } else { start };
            match log.maybe_increment_log_start_offset(new_start) {
                Ok(_) => {
                    let deleted = log.delete_old_segments(now_ms).unwrap_or(0);
                    tracing::info!(
                        partition,
                        size,
                        live_bytes,
                        new_start,
                        deleted,
                        "rewrote {OFFSETS_TOPIC} partition to its live state"
                    );
                }
                Err(error) => {
                    tracing::warn!(%error, partition, "cannot advance {OFFSETS_TOPIC} log start");
                }
            }
        }
    }
}

// -------------------------------------------------------------------- rules (Kafka's names)

/// A classic group's timers (from `tick`): sessions, lapsed member ids, pending syncs, and the
/// join phase's delay or timeout.
fn run_classic_timers(group: &mut Group, config: &GroupConfig, now_ms: i64) {
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
fn check_member(group: &Group, member_id: &str, group_instance_id: Option<&str>) -> Option<i16> {
    if let Some(instance) = group_instance_id
        && group.static_members.get(instance).is_some_and(|current| current != member_id)
    {
        return Some(errors::FENCED_INSTANCE_ID);
    }
    if !group.members.contains_key(member_id) {
        return Some(errors::UNKNOWN_MEMBER_ID);
    }
    None
}

/// Kafka's `doCommitOffsets` checks: a standalone commit (generation < 0) needs an empty
/// group; a member's needs its generation, and not during CompletingRebalance.
fn check_commit(
    group: &mut Group,
    generation_id: i32,
    member_id: &str,
    group_instance_id: Option<&str>,
    now_ms: i64,
) -> i16 {
    if let Some(consumer) = group.consumer.as_mut().filter(|c| !c.members.is_empty()) {
        // A KIP-848 group: the member epoch stands in for the generation.
        return match consumer.members.get_mut(member_id) {
            None => errors::UNKNOWN_MEMBER_ID,
            Some(member) if member.member_epoch != generation_id => errors::STALE_MEMBER_EPOCH,
            Some(member) => {
                member.last_heartbeat_ms = now_ms;
                errors::NONE
            }
        };
    }
    if group.is(GroupState::Dead) {
        errors::COORDINATOR_NOT_AVAILABLE
    } else if generation_id < 0 && group.is(GroupState::Empty) {
        errors::NONE
    } else if group.is(GroupState::CompletingRebalance) {
        errors::REBALANCE_IN_PROGRESS
    } else if let Some(code) = check_member(group, member_id, group_instance_id) {
        code
    } else if generation_id != group.generation_id {
        errors::ILLEGAL_GENERATION
    } else {
        if let Some(member) = group.members.get_mut(member_id) {
            member.last_heartbeat_ms = now_ms;
        }
        errors::NONE
    }
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
    if let Some(waiter) = old.awaiting_join.take() {
        let _ = waiter.send(JoinResult::error(old_member_id, errors::FENCED_INSTANCE_ID));
    }
    if let Some(waiter) = old.awaiting_sync.take() {
        let _ = waiter.send(SyncResult::error(errors::FENCED_INSTANCE_ID));
    }
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
            let _ = sender.send(JoinResult::error(&member_id, errors::UNKNOWN_MEMBER_ID));
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
        for member in group.members.values_mut() {
            member.assignment = Bytes::new();
            if let Some(waiter) = member.awaiting_sync.take() {
                let _ = waiter.send(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
            }
        }
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
        error_code: errors::NONE,
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
        error_code: errors::NONE,
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
        if let Some(waiter) = member.awaiting_join.take() {
            let _ = waiter.send(JoinResult::error(member_id, errors::UNKNOWN_MEMBER_ID));
        }
        if let Some(waiter) = member.awaiting_sync.take() {
            let _ = waiter.send(SyncResult::error(errors::UNKNOWN_MEMBER_ID));
        }
    }
    match group.state {
        GroupState::Dead | GroupState::Empty => {}
        GroupState::Stable | GroupState::CompletingRebalance => {
            prepare_rebalance(group, config, now_ms);
        }
        GroupState::PreparingRebalance => try_complete_join(group, now_ms),
    }
}

// -------------------------------------------------------------------- records

fn group_metadata_record(group: &Group) -> Result<KeyValue, seglog_format::DecodeError> {
    let key =
        records::encode_key(&GroupRecordKey::GroupMetadata { group: group.group_id.clone() })?;
    let protocol = group.protocol.clone().unwrap_or_default();
    let value = GroupMetadataValue {
        protocol_type: group.protocol_type.clone().unwrap_or_default(),
        generation: group.generation_id,
        protocol: group.protocol.clone(),
        leader: group.leader.clone(),
        current_state_timestamp: group.state_timestamp_ms,
        members: group
            .members
            .values()
            .map(|member| MemberMetadata {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                rebalance_timeout: member.rebalance_timeout_ms,
                session_timeout: member.session_timeout_ms,
                subscription: member.metadata(&protocol).to_vec(),
                assignment: member.assignment.to_vec(),
            })
            .collect(),
    };
    Ok((key, Some(records::encode_group_metadata_value(&value)?)))
}

/// Every live record of a group: its metadata (classic, or KIP-848's records) and its offsets.
fn live_records(group: &Group) -> Result<Vec<KeyValue>, seglog_format::DecodeError> {
    let mut out = match &group.consumer {
        Some(consumer) => consumer
            .persisted
            .iter()
            .map(|(key, value)| (key.clone(), Some(value.clone())))
            .collect(),
        None => vec![group_metadata_record(group)?],
    };
    for ((topic, partition), committed) in &group.offsets {
        let key = records::encode_key(&GroupRecordKey::OffsetCommit {
            group: group.group_id.clone(),
            topic: topic.clone(),
            partition: *partition,
        })?;
        let value = records::encode_offset_commit_value(&OffsetCommitValue {
            offset: committed.offset,
            leader_epoch: committed.leader_epoch,
            metadata: committed.metadata.clone(),
            commit_timestamp: committed.commit_timestamp,
            expire_timestamp: -1,
        })?;
        out.push((key, Some(value)));
    }
    Ok(out)
}

/// Tombstones for a group's offsets and metadata.
fn tombstones(group: &Group) -> Result<Vec<KeyValue>, seglog_format::DecodeError> {
    let mut out: Vec<KeyValue> = group
        .consumer
        .iter()
        .flat_map(|consumer| consumer.persisted.keys().map(|key| (key.clone(), None)))
        .collect();
    for (topic, partition) in group.offsets.keys() {
        let key = records::encode_key(&GroupRecordKey::OffsetCommit {
            group: group.group_id.clone(),
            topic: topic.clone(),
            partition: *partition,
        })?;
        out.push((key, None));
    }
    out.push((
        records::encode_key(&GroupRecordKey::GroupMetadata { group: group.group_id.clone() })?,
        None,
    ));
    Ok(out)
}

/// Replays one partition of `__consumer_offsets` from its log start.
fn replay_partition(
    log: &PartitionLog,
    offsets: &mut BTreeMap<(String, String, i32), Option<OffsetCommitValue>>,
    metadata: &mut BTreeMap<String, Option<GroupMetadataValue>>,
    consumer: &mut BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>,
) -> Result<(), String> {
    let end = log.log_end_offset().map_err(|error| error.to_string())?;
    let mut next = log.log_start_offset().map_err(|error| error.to_string())?;
    let limits = DecodeLimits::default();
    while next < end {
        let data = log
            .read(next, LOAD_READ_BYTES_MAX, Isolation::LogEnd, true)
            .map_err(|error| error.to_string())?;
        if data.records.is_empty() {
            break;
        }
        let before = next;
        for entry in Batches::new(&data.records) {
            let entry = entry.map_err(|error| error.to_string())?;
            let batch = entry.batch;
            next = next.max(batch.last_offset() + 1);
            if batch.is_control_batch() {
                continue;
            }
            let batch_records = batch.records(limits).map_err(|error| error.to_string())?;
            for record in &batch_records {
                let record = record.map_err(|error| error.to_string())?;
                if record.offset < before {
                    continue;
                }
                let Some(key) = record.key else { continue };
                match records::decode_key(key) {
                    Ok(GroupRecordKey::OffsetCommit { group, topic, partition }) => {
                        let value = record
                            .value
                            .map(records::decode_offset_commit_value)
                            .transpose()
                            .map_err(|error| format!("offset {}: {error}", record.offset))?;
                        offsets.insert((group, topic, partition), value);
                    }
                    Ok(GroupRecordKey::GroupMetadata { group }) => {
                        let value = record
                            .value
                            .map(records::decode_group_metadata_value)
                            .transpose()
                            .map_err(|error| format!("offset {}: {error}", record.offset))?;
                        metadata.insert(group, value);
                    }
                    Ok(
                        GroupRecordKey::ConsumerGroupMetadata { group }
                        | GroupRecordKey::ConsumerGroupMemberMetadata { group, .. }
                        | GroupRecordKey::ConsumerGroupTargetAssignmentMetadata { group }
                        | GroupRecordKey::ConsumerGroupTargetAssignmentMember { group, .. }
                        | GroupRecordKey::ConsumerGroupCurrentMemberAssignment { group, .. },
                    ) => {
                        // KIP-848 records: kept as bytes, decoded once the replay is done.
                        let live = consumer.entry(group).or_default();
                        match record.value {
                            Some(value) => live.insert(key.to_vec(), value.to_vec()),
                            None => live.remove(key),
                        };
                    }
                    Ok(GroupRecordKey::Other(version)) => {
                        tracing::debug!(
                            version,
                            offset = record.offset,
                            "skipping a record of a later group schema"
                        );
                    }
                    Err(error) => return Err(format!("offset {}: {error}", record.offset)),
                }
            }
        }
        if next <= before {
            return Err(format!("no progress reading at offset {before}"));
        }
    }
    Ok(())
}

/// A group as its last metadata record left it: stable with its members if it had any (they
/// keep their generation and must heartbeat within their session), else empty.
fn restore_group(group: &mut Group, value: GroupMetadataValue, now_ms: i64) {
    group.protocol_type =
        if value.protocol_type.is_empty() { None } else { Some(value.protocol_type) };
    group.generation_id = value.generation;
    group.protocol = value.protocol;
    group.leader = value.leader;
    group.members.clear();
    group.static_members.clear();
    let protocol = group.protocol.clone().unwrap_or_default();
    for member in value.members {
        if let Some(instance) = &member.group_instance_id {
            group.static_members.insert(instance.clone(), member.member_id.clone());
        }
        group.members.insert(
            member.member_id.clone(),
            Member {
                member_id: member.member_id,
                group_instance_id: member.group_instance_id,
                client_id: member.client_id,
                client_host: member.client_host,
                session_timeout_ms: member.session_timeout,
                rebalance_timeout_ms: member.rebalance_timeout,
                protocols: vec![(protocol.clone(), Bytes::from(member.subscription))],
                assignment: Bytes::from(member.assignment),
                awaiting_join: None,
                awaiting_sync: None,
                last_heartbeat_ms: now_ms,
                is_new: false,
            },
        );
    }
    let state = if group.members.is_empty() { GroupState::Empty } else { GroupState::Stable };
    group.transition(
        state,
        if value.current_state_timestamp > 0 { value.current_state_timestamp } else { now_ms },
    );
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod sim_tests;
