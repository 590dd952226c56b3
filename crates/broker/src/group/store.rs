//! Loading from and writing to `__consumer_offsets` (Kafka's `GroupMetadataManager`:
//! `storeGroup`, `loadGroupsAndOffsets`, and the records of `GroupCoordinatorRecordHelpers`):
//! which partition a group lives in, the append and its wait for durability, a classic group's
//! metadata record, a KIP-848 group's `ConsumerGroup*` records (written as differences from the
//! last write), tombstones, and the replay at start.
//!
//! `__consumer_offsets` is created as Kafka creates it (`cleanup.policy=compact`,
//! `compression.type=producer`, `segment.bytes` from `offsets.topic.segment.bytes`), and the log
//! cleaner keeps it bounded: each key's last record survives, tombstones go after
//! `delete.retention.ms`, so a replay reads the live state and little else.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A transactional writer of offsets: producer id, epoch, and the verification guard of a
/// remote coordinator's check (KIP-890), if any.
pub(crate) type TxnWriter = (i64, i16, Option<u64>);

use bytes::Bytes;
use kafka_protocol::ResponseError;
use seglog_format::group::{
    self as records, GroupMetadataValue, GroupRecordKey, MemberMetadata, OffsetCommitValue,
};
use seglog_format::{Compression, ControlRecordType, DecodeLimits, RecordBatchBuilder};
use seglog_storage::config::BrokerCompressionType;
use seglog_storage::log::partition_log::{AppendInfo, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;

use super::OFFSETS_TOPIC;
use super::classic::group::{Group, GroupState, Member};
use super::consumer::group::{
    ConsumerGroup, ConsumerMember, Partition, refresh_subscriptions, subscription_regex,
};
use super::coordinator::{GroupCoordinator, Inner};
use super::offsets::Committed;
use crate::error::{Cause, Error};
use crate::replay::Replayed;
use crate::replica::{Acks, ReplicaManager};

/// The largest batch the coordinator writes at once (below `message.max.bytes`' default).
const WRITE_BATCH_BYTES_MAX: usize = 512 * 1024;

/// Kafka's `partitionFor`: `Utils.abs(groupId.hashCode) % partitions`.
pub(super) fn partition_for(group_id: &str, partitions: i32) -> i32 {
    let hash = seglog_format::java::string_hash(group_id);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    if partitions <= 0 { 0 } else { abs % partitions }
}

/// The offset commits of one open transaction in a partition, in log order.
type PendingTxnOffsets = Vec<((String, String, i32), OffsetCommitValue)>;

/// One record to write: key and value (`None`: a tombstone).
pub(super) type KeyValue = (Vec<u8>, Option<Vec<u8>>);

impl GroupCoordinator {
    /// Loads every group and committed offset from `__consumer_offsets`, if it exists (Kafka's
    /// `GroupMetadataManager.loadGroupsAndOffsets`), replaying each partition from its log
    /// start. Called once before the broker serves. A cluster's broker loads the partitions it
    /// leads and has not loaded yet (the rest load as leadership comes,
    /// [`Self::load_partition`]). Returns how many groups are loaded.
    pub fn load(&self, now_ms: i64) -> Result<usize, Error> {
        if let Some(replication) = self.replicas.replication() {
            let led: Vec<i32> = (0..self.config.offsets_topic_partitions)
                .filter(|p| {
                    let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition: *p };
                    replication.leader_epoch(&tp).is_some() && !self.lock().loaded.contains(p)
                })
                .collect();
            for partition in led {
                self.load_partition(partition, now_ms)?;
            }
            return Ok(self.lock().groups.len());
        }
        let partitions =
            self.manager.topic_partition_counts().get(OFFSETS_TOPIC).copied().unwrap_or(0);
        let local: Vec<i32> = self
            .manager
            .partitions()
            .into_iter()
            .filter(|tp| tp.topic == OFFSETS_TOPIC)
            .map(|tp| tp.partition)
            .collect();
        self.load_partitions(partitions, &local, now_ms)
    }

    /// Kafka's `onElection`: this broker leads `partition` of `__consumer_offsets` now, so its
    /// groups and offsets are loaded afresh from its log (what the last leader wrote, as
    /// replicated here) and served. Returns how many groups are loaded in all.
    pub(crate) fn load_partition(&self, partition: i32, now_ms: i64) -> Result<usize, Error> {
        self.unload_partition(partition);
        let count =
            self.load_partitions(self.config.offsets_topic_partitions, &[partition], now_ms)?;
        self.lock().loaded.insert(partition);
        tracing::info!(partition, "loaded the groups of {OFFSETS_TOPIC}-{partition}");
        Ok(count)
    }

    /// Kafka's `onResignation`: this broker no longer leads `partition`, so its groups are
    /// dropped from memory (NOT_COORDINATOR from now on).
    pub(crate) fn unload_partition(&self, partition: i32) {
        let mut inner = self.lock();
        let partitions = if inner.partitions > 0 {
            inner.partitions
        } else {
            self.config.offsets_topic_partitions
        };
        if inner.loaded.remove(&partition) {
            tracing::info!(partition, "unloaded the groups of {OFFSETS_TOPIC}-{partition}");
        }
        inner.groups.retain(|group_id, _| partition_for(group_id, partitions) != partition);
    }

    /// Replays `local` partitions of `__consumer_offsets` (of `partitions`) into the groups.
    fn load_partitions(&self, partitions: i32, local: &[i32], now_ms: i64) -> Result<usize, Error> {
        let local = local.to_vec();
        let mut offsets: BTreeMap<(String, String, i32), Option<OffsetCommitValue>> =
            BTreeMap::new();
        let mut metadata: BTreeMap<String, Option<GroupMetadataValue>> = BTreeMap::new();
        let mut consumer: BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>> = BTreeMap::new();
        let mut pending: BTreeMap<(i32, i64), PendingTxnOffsets> = BTreeMap::new();
        for partition in local {
            let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
            let log = self.manager.get_log(&tp).map_err(|error| Error::GroupLoad {
                at: format!("{OFFSETS_TOPIC}-{partition}"),
                source: error.into(),
            })?;
            let mut open = BTreeMap::new();
            replay_partition(
                &log,
                partition,
                &mut offsets,
                &mut metadata,
                &mut consumer,
                &mut open,
            )?;
            pending
                .extend(open.into_iter().map(|(producer_id, txn)| ((partition, producer_id), txn)));
        }
        let mut inner = self.lock();
        inner.partitions = partitions;
        for (group_id, value) in metadata {
            let Some(value) = value else { continue };
            let group = group_entry(&mut inner, &group_id, now_ms);
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
            let restored = restore_consumer_group(&live, &topic_names, &topic_counts, now_ms)
                .map_err(|error| Error::GroupLoad {
                    at: format!("group {group_id}"),
                    source: error.into(),
                })?;
            let group = group_entry(&mut inner, &group_id, now_ms);
            group.protocol_type = Some("consumer".to_owned());
            group.consumer = Some(restored);
        }
        for ((group_id, topic, partition), value) in offsets {
            let Some(value) = value else { continue };
            let group = group_entry(&mut inner, &group_id, now_ms);
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
        // Transactions still open at the end of the log: their offsets wait for the marker.
        for ((_, producer_id), txn) in pending {
            for ((group_id, topic, partition), value) in txn {
                let group = group_entry(&mut inner, &group_id, now_ms);
                group.pending_txn_offsets.entry(producer_id).or_default().insert(
                    (topic, partition),
                    Committed {
                        offset: value.offset,
                        leader_epoch: value.leader_epoch,
                        metadata: value.metadata,
                        commit_timestamp: value.commit_timestamp,
                    },
                );
            }
        }
        Ok(inner.groups.len())
    }

    /// Makes this coordinator a cluster broker's (before [`Self::load`]).
    /// Appends through a cluster's replication.
    pub(crate) fn use_replication(&self, replication: Arc<crate::replication::Replication>) {
        self.replicas.use_replication(replication);
    }

    pub(crate) fn use_cluster_metadata(&self) {
        self.in_cluster.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub(super) fn in_cluster(&self) -> bool {
        self.in_cluster.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why this coordinator does not serve `group_id` now (Kafka's `isActive` and
    /// `isCoordinatorForGroup`): shutting down, COORDINATOR_NOT_AVAILABLE; in a cluster, a group
    /// whose partition of `__consumer_offsets` this broker does not have, NOT_COORDINATOR (so a
    /// misdirected request neither reads nor makes a group here).
    pub(super) fn refusal(&self, inner: &Inner, group_id: &str) -> Option<ResponseError> {
        if inner.shutting_down {
            return Some(ResponseError::CoordinatorNotAvailable);
        }
        if self.in_cluster() {
            let partitions = if inner.partitions > 0 {
                inner.partitions
            } else {
                self.config.offsets_topic_partitions
            };
            // Loaded: this broker leads the group's partition and has its groups.
            if !inner.loaded.contains(&partition_for(group_id, partitions)) {
                return Some(ResponseError::NotCoordinator);
            }
        }
        None
    }

    /// Whether a cluster's broker would answer NOT_COORDINATOR for `group_id`.
    pub(crate) fn not_coordinator(&self, group_id: &str) -> bool {
        let inner = self.lock();
        self.refusal(&inner, group_id) == Some(ResponseError::NotCoordinator)
    }

    /// Kafka's `partitionFor` over this coordinator's partition count (the configured one in a
    /// cluster).
    pub(crate) fn partition_of(&self, group_id: &str) -> i32 {
        let partitions = self.lock().partitions;
        let partitions =
            if partitions > 0 { partitions } else { self.config.offsets_topic_partitions };
        partition_for(group_id, partitions)
    }

    /// The settings of `__consumer_offsets` as the coordinator creates it.
    pub(crate) fn offsets_topic_overrides(&self) -> BTreeMap<String, String> {
        crate::replica::internal_topic_overrides(
            BrokerCompressionType::Producer,
            self.config.offsets_topic_segment_bytes,
        )
    }

    /// Creates `__consumer_offsets` if it does not exist yet (Kafka creates it on the first
    /// FindCoordinator), and returns its partition count.
    pub(crate) fn ensure_offsets_topic(&self) -> Result<i32, ResponseError> {
        let mut inner = self.lock();
        self.ensure_offsets_topic_locked(&mut inner)
    }

    pub(super) fn ensure_offsets_topic_locked(
        &self,
        inner: &mut Inner,
    ) -> Result<i32, ResponseError> {
        if inner.partitions > 0 {
            return Ok(inner.partitions);
        }
        if self.in_cluster() {
            inner.partitions = self.config.offsets_topic_partitions;
            return Ok(inner.partitions);
        }
        if let Some(count) = self.manager.topic_partition_counts().get(OFFSETS_TOPIC) {
            inner.partitions = *count;
            return Ok(*count);
        }
        inner.partitions = crate::replica::create_internal_topic(
            &self.manager,
            OFFSETS_TOPIC,
            self.config.offsets_topic_partitions,
            BrokerCompressionType::Producer,
            self.config.offsets_topic_segment_bytes,
        )?;
        Ok(inner.partitions)
    }

    /// Appends records to the group's partition of `__consumer_offsets`. Returns the log and
    /// the last append, for [`Self::await_durable`].
    pub(super) fn append(
        &self,
        inner: &mut Inner,
        group_id: &str,
        records: &[KeyValue],
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, AppendInfo), ResponseError> {
        self.append_as(inner, group_id, records, None, now_ms)
    }

    /// [`Self::append`], with a producer as its transactional batch (and the verification
    /// guard of its remote coordinator's check, if any).
    pub(super) fn append_as(
        &self,
        inner: &mut Inner,
        group_id: &str,
        records: &[KeyValue],
        producer: Option<TxnWriter>,
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, AppendInfo), ResponseError> {
        let partitions = self.ensure_offsets_topic_locked(inner)?;
        let partition = partition_for(group_id, partitions);
        self.append_to(partition, records, producer, now_ms)
    }

    /// Appends records to a partition of `__consumer_offsets`; with a producer, as one
    /// transactional batch of that producer (Kafka's `storeOffsets` for TxnOffsetCommit: base
    /// sequence 0, which a coordinator's append does not check).
    fn append_to(
        &self,
        partition: i32,
        records: &[KeyValue],
        producer: Option<TxnWriter>,
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, AppendInfo), ResponseError> {
        let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
        if self.in_cluster() && self.manager.get_log(&tp).is_err() {
            // Another broker leads this group's partition.
            return Err(ResponseError::NotCoordinator);
        }
        let mut written = None;
        let mut rest = records;
        while !rest.is_empty() {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            if let Some((producer_id, producer_epoch, _)) = producer {
                builder = builder.producer(producer_id, producer_epoch, 0).transactional(true);
            }
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
                    .map_err(|_| ResponseError::UnknownServerError)?;
                taken += 1;
            }
            rest = rest.get(taken..).unwrap_or_default();
            let batch = builder.build().map_err(|_| ResponseError::UnknownServerError)?;
            let appended = self
                .replicas
                .append_verified(
                    &tp,
                    &batch,
                    (AppendOrigin::Coordinator, producer.and_then(|(_, _, guard)| guard)),
                    Acks::Leader,
                    now_ms,
                )
                .map_err(|error| {
                    tracing::warn!(%error, partition, "cannot append to {OFFSETS_TOPIC}");
                    ResponseError::CoordinatorNotAvailable
                })?;
            written = Some(appended);
        }
        written.ok_or(ResponseError::UnknownServerError)
    }

    /// Waits until the append `info` is durable under the topic's durability mode and, in a
    /// cluster, in the partition's ISR (acks=-1, as Kafka's `offsets.commit.required.acks`);
    /// a failure is Kafka's mapping of the append's error (`GroupMetadataManager`).
    pub(super) fn await_durable(
        &self,
        log: &PartitionLog,
        info: &AppendInfo,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        ReplicaManager::await_acks(log, info, Acks::All, now_ms).map_err(|error| {
            tracing::warn!(%error, "{OFFSETS_TOPIC} fsync failed");
            ResponseError::CoordinatorNotAvailable
        })?;
        self.replicas.await_replicated(log.topic_partition(), info).map_err(|code| {
            tracing::warn!(?code, partition = %log.topic_partition(), "{OFFSETS_TOPIC} write not replicated");
            match code {
                ResponseError::NotLeaderOrFollower => ResponseError::NotCoordinator,
                _ => ResponseError::CoordinatorNotAvailable,
            }
        })
    }

    /// Writes a group's metadata record (Kafka's `storeGroup`).
    pub(super) fn store_group(
        &self,
        inner: &mut Inner,
        group_id: &str,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        let Some(group) = inner.groups.get(group_id) else { return Ok(()) };
        let record = group_metadata_record(group).map_err(|_| ResponseError::UnknownServerError)?;
        let (log, info) = self.append(inner, group_id, &[record], now_ms)?;
        self.await_durable(&log, &info, now_ms)
    }

    /// [`Self::persist_consumer_group`], then waits until the write is durable under the
    /// topic's mode.
    pub(super) fn persist_and_wait(
        &self,
        inner: &mut Inner,
        group_id: &str,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        match self.persist_consumer_group(inner, group_id, now_ms)? {
            Some((log, info)) => self.await_durable(&log, &info, now_ms),
            None => Ok(()),
        }
    }

    /// Writes what changed in a KIP-848 group since its last write (new or changed records,
    /// tombstones for those gone) as one batch. Returns the write to wait for, if any.
    fn persist_consumer_group(
        &self,
        inner: &mut Inner,
        group_id: &str,
        now_ms: i64,
    ) -> Result<Option<(Arc<PartitionLog>, AppendInfo)>, ResponseError> {
        let Some(consumer) = inner.groups.get(group_id).and_then(|group| group.consumer.as_ref())
        else {
            return Ok(None);
        };
        let manager = Arc::clone(&self.manager);
        let topic_id = move |topic: &str| manager.topic_id(topic);
        let desired = consumer_records(group_id, consumer, &topic_id).map_err(|error| {
            tracing::warn!(%error, group = group_id, "cannot encode a consumer group's records");
            ResponseError::UnknownServerError
        })?;
        let mut writes: Vec<KeyValue> = desired
            .iter()
            .filter(|(key, value)| consumer.persisted.get(*key) != Some(*value))
            .map(|(key, value)| (key.clone(), Some(value.clone())))
            .collect();
        writes.extend(
            consumer
                .persisted
                .keys()
                .filter(|key| !desired.contains_key(*key))
                .map(|key| (key.clone(), None)),
        );
        if writes.is_empty() {
            return Ok(None);
        }
        let written = self.append(inner, group_id, &writes, now_ms)?;
        if let Some(consumer) =
            inner.groups.get_mut(group_id).and_then(|group| group.consumer.as_mut())
        {
            consumer.persisted = desired;
        }
        Ok(Some(written))
    }
}

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

/// The group `group_id`, created empty if there is none yet.
fn group_entry<'a>(inner: &'a mut Inner, group_id: &str, now_ms: i64) -> &'a mut Group {
    inner.groups.entry(group_id.to_owned()).or_insert_with(|| Group::new(group_id, now_ms))
}

/// The key of a committed offset's record.
pub(super) fn offset_commit_key(
    group_id: &str,
    topic: &str,
    partition: i32,
) -> Result<Vec<u8>, seglog_format::DecodeError> {
    records::encode_key(&GroupRecordKey::OffsetCommit {
        group: group_id.to_owned(),
        topic: topic.to_owned(),
        partition,
    })
}

/// A committed offset's record (Kafka's `OffsetCommitValue`, with no expiry, as Kafka 2.1+).
pub(super) fn offset_commit_record(
    group_id: &str,
    topic: &str,
    partition: i32,
    committed: &Committed,
) -> Result<KeyValue, seglog_format::DecodeError> {
    let value = records::encode_offset_commit_value(&OffsetCommitValue {
        offset: committed.offset,
        leader_epoch: committed.leader_epoch,
        metadata: committed.metadata.clone(),
        commit_timestamp: committed.commit_timestamp,
        expire_timestamp: -1,
    })?;
    Ok((offset_commit_key(group_id, topic, partition)?, Some(value)))
}

/// Tombstones for a group's offsets and metadata.
pub(super) fn tombstones(group: &Group) -> Result<Vec<KeyValue>, seglog_format::DecodeError> {
    let mut out: Vec<KeyValue> = group
        .consumer
        .iter()
        .flat_map(|consumer| consumer.persisted.keys().map(|key| (key.clone(), None)))
        .collect();
    for (topic, partition) in group.offsets.keys() {
        out.push((offset_commit_key(&group.group_id, topic, *partition)?, None));
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
    partition: i32,
    offsets: &mut BTreeMap<(String, String, i32), Option<OffsetCommitValue>>,
    metadata: &mut BTreeMap<String, Option<GroupMetadataValue>>,
    consumer: &mut BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>,
    pending: &mut BTreeMap<i64, PendingTxnOffsets>,
) -> Result<(), Error> {
    let failed_at = |offset: i64, error: Cause| Error::GroupLoad {
        at: format!("{OFFSETS_TOPIC}-{partition}: offset {offset}"),
        source: error,
    };
    crate::replay::replay_partition(log, OFFSETS_TOPIC, partition, |replayed| {
        let (batch, record) = match replayed {
            Replayed::Control(batch) => {
                if batch.is_transactional() {
                    replay_marker(batch, DecodeLimits::default(), offsets, pending)
                        .map_err(|error| failed_at(batch.last_offset(), error.into()))?;
                }
                return Ok(());
            }
            Replayed::Record(batch, record) => (batch, record),
        };
        let txn_producer = batch.is_transactional().then(|| batch.producer_id());
        let Some(key) = record.key else { return Ok(()) };
        match records::decode_key(key) {
            Ok(GroupRecordKey::OffsetCommit { group, topic, partition }) => {
                let value = record
                    .value
                    .map(records::decode_offset_commit_value)
                    .transpose()
                    .map_err(|error| failed_at(record.offset, error.into()))?;
                match (txn_producer, value) {
                    (Some(producer_id), Some(value)) => pending
                        .entry(producer_id)
                        .or_default()
                        .push(((group, topic, partition), value)),
                    (_, value) => {
                        offsets.insert((group, topic, partition), value);
                    }
                }
            }
            Ok(GroupRecordKey::GroupMetadata { group }) => {
                let value = record
                    .value
                    .map(records::decode_group_metadata_value)
                    .transpose()
                    .map_err(|error| failed_at(record.offset, error.into()))?;
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
            Err(error) => return Err(failed_at(record.offset, error.into())),
        }
        Ok(())
    })
}

/// A transaction marker: the offsets of its producer's open transaction become committed, or
/// are dropped (Kafka's `replayEndTransactionMarker`).
fn replay_marker(
    batch: &seglog_format::Batch<'_>,
    limits: DecodeLimits,
    offsets: &mut BTreeMap<(String, String, i32), Option<OffsetCommitValue>>,
    pending: &mut BTreeMap<i64, PendingTxnOffsets>,
) -> Result<(), seglog_format::DecodeError> {
    let batch_records = batch.records(limits)?;
    let marker = batch_records
        .iter()
        .next()
        .transpose()?
        .and_then(|record| record.key.map(ControlRecordType::parse_key))
        .transpose()?;
    let txn = pending.remove(&batch.producer_id()).unwrap_or_default();
    if marker == Some(ControlRecordType::Commit) {
        for (key, value) in txn {
            offsets.insert(key, Some(value));
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

/// Kafka's `MemberState` byte: 0 stable, 1 unrevoked partitions, 2 unreleased partitions.
fn member_state(member: &ConsumerMember, target: Option<&BTreeSet<Partition>>) -> i8 {
    if !member.pending_revocation.is_empty() {
        1
    } else if target.is_some_and(|target| *target != member.assigned) {
        2
    } else {
        0
    }
}

fn by_topic_id(
    partitions: &BTreeSet<Partition>,
    topic_id: &dyn Fn(&str) -> Option<[u8; 16]>,
) -> Vec<records::TopicPartitions> {
    let mut grouped: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        grouped.entry(topic.as_str()).or_default().push(*partition);
    }
    grouped
        .into_iter()
        .filter_map(|(topic, partitions)| {
            topic_id(topic).map(|topic_id| records::TopicPartitions { topic_id, partitions })
        })
        .collect()
}

/// The records that describe a KIP-848 group now (Kafka's `ConsumerGroup*` records, keys 3 and
/// 5 to 8), key bytes to value bytes.
fn consumer_records(
    group_id: &str,
    consumer: &ConsumerGroup,
    topic_id: &dyn Fn(&str) -> Option<[u8; 16]>,
) -> Result<BTreeMap<Vec<u8>, Vec<u8>>, seglog_format::DecodeError> {
    let group = || group_id.to_owned();
    let mut out = BTreeMap::new();
    out.insert(
        records::encode_key(&GroupRecordKey::ConsumerGroupMetadata { group: group() })?,
        records::encode_consumer_group_metadata_value(&records::ConsumerGroupMetadataValue {
            epoch: consumer.group_epoch,
        }),
    );
    out.insert(
        records::encode_key(&GroupRecordKey::ConsumerGroupTargetAssignmentMetadata {
            group: group(),
        })?,
        records::encode_consumer_group_target_assignment_metadata_value(
            &records::ConsumerGroupTargetAssignmentMetadataValue {
                assignment_epoch: consumer.assignment_epoch,
            },
        ),
    );
    for member in consumer.members.values() {
        let member_key = || member.member_id.clone();
        out.insert(
            records::encode_key(&GroupRecordKey::ConsumerGroupMemberMetadata {
                group: group(),
                member: member_key(),
            })?,
            records::encode_consumer_group_member_metadata_value(
                &records::ConsumerGroupMemberMetadataValue {
                    instance_id: member.instance_id.clone(),
                    rack_id: member.rack_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    subscribed_topic_names: member.subscribed_topics.iter().cloned().collect(),
                    subscribed_topic_regex: member
                        .subscribed_regex
                        .as_ref()
                        .map(|(text, _)| text.clone()),
                    rebalance_timeout_ms: member.rebalance_timeout_ms,
                    server_assignor: member.server_assignor.clone(),
                },
            )?,
        );
        let target = consumer.target.get(&member.member_id);
        out.insert(
            records::encode_key(&GroupRecordKey::ConsumerGroupTargetAssignmentMember {
                group: group(),
                member: member_key(),
            })?,
            records::encode_consumer_group_target_assignment_member_value(
                &records::ConsumerGroupTargetAssignmentMemberValue {
                    topic_partitions: by_topic_id(&target.cloned().unwrap_or_default(), topic_id),
                },
            )?,
        );
        out.insert(
            records::encode_key(&GroupRecordKey::ConsumerGroupCurrentMemberAssignment {
                group: group(),
                member: member_key(),
            })?,
            records::encode_consumer_group_current_member_assignment_value(
                &records::ConsumerGroupCurrentMemberAssignmentValue {
                    member_epoch: member.member_epoch,
                    previous_member_epoch: member.previous_member_epoch,
                    state: member_state(member, target),
                    assigned_partitions: by_topic_id(&member.assigned, topic_id),
                    partitions_pending_revocation: by_topic_id(
                        &member.pending_revocation,
                        topic_id,
                    ),
                },
            )?,
        );
    }
    Ok(out)
}

/// A KIP-848 group from its live records after a replay: members keep their epochs and
/// partitions and must heartbeat within their session from now.
fn restore_consumer_group(
    live: &BTreeMap<Vec<u8>, Vec<u8>>,
    topic_names: &BTreeMap<[u8; 16], String>,
    topic_counts: &BTreeMap<String, i32>,
    now_ms: i64,
) -> Result<ConsumerGroup, seglog_format::DecodeError> {
    let partitions = |topics: &[records::TopicPartitions]| -> BTreeSet<Partition> {
        topics
            .iter()
            .filter_map(|topic| topic_names.get(&topic.topic_id).map(|name| (name, topic)))
            .flat_map(|(name, topic)| topic.partitions.iter().map(move |p| (name.clone(), *p)))
            .collect()
    };
    let mut consumer = ConsumerGroup { persisted: live.clone(), ..ConsumerGroup::default() };
    let mut current = BTreeMap::new();
    for (key, value) in live {
        match records::decode_key(key)? {
            GroupRecordKey::ConsumerGroupMetadata { .. } => {
                consumer.group_epoch = records::decode_consumer_group_metadata_value(value)?.epoch;
            }
            GroupRecordKey::ConsumerGroupTargetAssignmentMetadata { .. } => {
                consumer.assignment_epoch =
                    records::decode_consumer_group_target_assignment_metadata_value(value)?
                        .assignment_epoch;
            }
            GroupRecordKey::ConsumerGroupMemberMetadata { member, .. } => {
                let value = records::decode_consumer_group_member_metadata_value(value)?;
                let subscribed: BTreeSet<String> =
                    value.subscribed_topic_names.into_iter().collect();
                let regex = value
                    .subscribed_topic_regex
                    .and_then(|pattern| subscription_regex(&pattern).ok());
                let restored = ConsumerMember {
                    instance_id: value.instance_id,
                    rack_id: value.rack_id,
                    client_id: value.client_id,
                    client_host: value.client_host,
                    rebalance_timeout_ms: value.rebalance_timeout_ms,
                    resolved_topics: subscribed.clone(),
                    subscribed_topics: subscribed,
                    subscribed_regex: regex,
                    server_assignor: value.server_assignor,
                    ..ConsumerMember::new(&member, now_ms)
                };
                consumer.members.insert(member, restored);
            }
            GroupRecordKey::ConsumerGroupTargetAssignmentMember { member, .. } => {
                let value = records::decode_consumer_group_target_assignment_member_value(value)?;
                consumer.target.insert(member, partitions(&value.topic_partitions));
            }
            GroupRecordKey::ConsumerGroupCurrentMemberAssignment { member, .. } => {
                current.insert(
                    member,
                    records::decode_consumer_group_current_member_assignment_value(value)?,
                );
            }
            _ => {}
        }
    }
    for (member_id, value) in current {
        if let Some(member) = consumer.members.get_mut(&member_id) {
            member.member_epoch = value.member_epoch;
            member.previous_member_epoch = value.previous_member_epoch;
            member.assigned = partitions(&value.assigned_partitions);
            member.pending_revocation = partitions(&value.partitions_pending_revocation);
            if !member.pending_revocation.is_empty() {
                member.revoking_since_ms = Some(now_ms);
            }
        }
    }
    // The subscriptions as of now, so that the first heartbeat moves the epoch only if the
    // topics changed while the broker was down.
    refresh_subscriptions(&mut consumer, topic_counts);
    Ok(consumer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_for_matches_java_string_hash_code() {
        // "polygenelubricants" hashes to Integer.MIN_VALUE in Java: Kafka's Utils.abs makes it 0.
        assert_eq!(seglog_format::java::string_hash("polygenelubricants"), i32::MIN);
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        assert_eq!(partition_for("abc", 50), 4);
        // Negative hashes: "console-consumer-1" style ids must still land in range.
        for id in ["console-consumer-12345", "zzzzzzzzzzzzzz", "g"] {
            assert!((0..50).contains(&partition_for(id, 50)), "{id}");
        }
    }
}
