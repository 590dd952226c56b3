//! Committed offsets (the offset half of Kafka's `GroupMetadataManager`, `OffsetMetadataManager`
//! in Kafka 4): OffsetCommit with `doCommitOffsets`' checks for both protocols, answered once
//! its records are durable; OffsetFetch; OffsetDelete, refused for topics a group subscribes to.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;

use super::classic::group::{Group, GroupState};
use super::classic::protocol::check_member;
use super::coordinator::GroupCoordinator;
use super::store::{offset_commit_key, offset_commit_record};
use crate::error::NONE;

/// A committed offset (Kafka's `OffsetAndMetadata`) and where it is in `__consumer_offsets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committed {
    pub(crate) offset: i64,
    pub(crate) leader_epoch: i32,
    pub(crate) metadata: String,
    pub(crate) commit_timestamp: i64,
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

/// Committed offsets by topic, then partition (`None`: nothing committed).
pub(crate) type FetchedOffsets = Vec<(String, Vec<(i32, Option<Committed>)>)>;

/// Topics and their partitions, as a request names them.
pub(crate) type TopicPartitions = Vec<(String, Vec<i32>)>;

/// The records of an OffsetCommit or TxnOffsetCommit, checked offset by offset.
struct OffsetRecords {
    /// One code per offset, in order.
    codes: Vec<i16>,
    records: Vec<super::store::KeyValue>,
    /// The indexes (in `codes`) of the accepted offsets.
    accepted: Vec<usize>,
    /// What the group keeps once the records are written.
    kept: Vec<((String, i32), Committed)>,
}

impl GroupCoordinator {
    /// Each offset's record, or its refusal (metadata over `offset.metadata.max.bytes`).
    fn offset_records(
        &self,
        group_id: &str,
        offsets: &[OffsetToCommit],
        now_ms: i64,
    ) -> OffsetRecords {
        let mut out = OffsetRecords {
            codes: Vec::with_capacity(offsets.len()),
            records: Vec::new(),
            accepted: Vec::new(),
            kept: Vec::new(),
        };
        for offset in offsets {
            if offset.metadata.len() > self.config.offset_metadata_max_bytes {
                out.codes.push(ResponseError::OffsetMetadataTooLarge.code());
                continue;
            }
            let committed = Committed {
                offset: offset.offset,
                leader_epoch: offset.leader_epoch,
                metadata: offset.metadata.clone(),
                commit_timestamp: now_ms,
            };
            match offset_commit_record(group_id, &offset.topic, offset.partition, &committed) {
                Ok(record) => {
                    out.records.push(record);
                    out.accepted.push(out.codes.len());
                    out.codes.push(NONE);
                    out.kept.push(((offset.topic.clone(), offset.partition), committed));
                }
                Err(_) => out.codes.push(ResponseError::InvalidRequest.code()),
            }
        }
        out
    }

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
        let member = (generation_id, member_id, group_instance_id);
        self.commit(group_id, None, member, offsets, now_ms)
    }

    /// The partition of `__consumer_offsets` that holds `group_id` (creating the topic if need
    /// be): what AddOffsetsToTxn adds to a transaction.
    pub(crate) fn offsets_partition(&self, group_id: &str) -> Result<i32, ResponseError> {
        let partitions = self.ensure_offsets_topic()?;
        Ok(super::store::partition_for(group_id, partitions))
    }

    /// TxnOffsetCommit (Kafka's `handleTxnCommitOffsets`): the offsets are written to the
    /// group's partition as one transactional batch of the producer and kept pending until the
    /// transaction's marker ([`Self::complete_transaction`]). A member's commit is fenced by its
    /// generation (or KIP-848 member epoch) as OffsetCommit is; a commit with no member and no
    /// generation (TxnOffsetCommit before v3) is not. One error code per offset, in order.
    #[expect(clippy::too_many_arguments, reason = "the request's fields")]
    pub(crate) fn txn_commit_offsets(
        &self,
        group_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        generation_id: i32,
        member_id: &str,
        group_instance_id: Option<&str>,
        offsets: &[OffsetToCommit],
        (now_ms, guard): (i64, Option<u64>),
    ) -> Vec<i16> {
        let member = (generation_id, member_id, group_instance_id);
        self.commit(group_id, Some((producer_id, producer_epoch, guard)), member, offsets, now_ms)
    }

    /// OffsetCommit, or with a producer TxnOffsetCommit: the checks, the records, their write
    /// (as the producer's transactional batch) and, once durable, the answer; the group keeps
    /// the offsets, or holds them pending for the producer's transaction.
    fn commit(
        &self,
        group_id: &str,
        producer: Option<super::store::TxnWriter>,
        (generation_id, member_id, group_instance_id): (i32, &str, Option<&str>),
        offsets: &[OffsetToCommit],
        now_ms: i64,
    ) -> Vec<i16> {
        let all = |code: i16| vec![code; offsets.len()];
        if group_id.is_empty() {
            return all(ResponseError::InvalidGroupId.code());
        }
        let mut inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return all(refusal.code());
        }
        if !inner.groups.contains_key(group_id) {
            if generation_id >= 0 {
                return all(ResponseError::IllegalGeneration.code());
            }
            inner.groups.insert(group_id.to_owned(), Group::new(group_id, now_ms));
        }
        let Some(group) = inner.groups.get_mut(group_id) else {
            return all(ResponseError::CoordinatorNotAvailable.code());
        };
        // A transactional commit with no member and no generation (before v3) is not fenced.
        let unfenced = producer.is_some() && member_id.is_empty() && generation_id < 0;
        if !unfenced {
            let code = check_commit(group, generation_id, member_id, group_instance_id, now_ms);
            if code != NONE {
                return all(code);
            }
        }
        let OffsetRecords { mut codes, records, accepted, kept } =
            self.offset_records(group_id, offsets, now_ms);
        if records.is_empty() {
            return codes;
        }
        let written = match self.append_as(&mut inner, group_id, &records, producer, now_ms) {
            Ok(written) => written,
            Err(code) => {
                fail_accepted(&mut codes, &accepted, code.code());
                return codes;
            }
        };
        if let Some(group) = inner.groups.get_mut(group_id) {
            match producer {
                Some((producer_id, _, _)) => {
                    group.pending_txn_offsets.entry(producer_id).or_default().extend(kept);
                }
                None => group.offsets.extend(kept),
            }
        }
        drop(inner);
        if let Err(code) = self.await_durable(&written.0, &written.1, now_ms) {
            fail_accepted(&mut codes, &accepted, code.code());
        }
        codes
    }

    /// A transaction marker was written to `offsets_partition` of `__consumer_offsets` for
    /// `producer_id` (Kafka's `scheduleHandleTxnCompletion`): its pending offsets in the groups
    /// of that partition become committed, or are dropped.
    pub(crate) fn complete_transaction(
        &self,
        offsets_partition: i32,
        producer_id: i64,
        commit: bool,
    ) {
        let mut inner = self.lock();
        let partitions = inner.partitions;
        for group in inner.groups.values_mut() {
            if super::store::partition_for(&group.group_id, partitions) != offsets_partition {
                continue;
            }
            if let Some(pending) = group.pending_txn_offsets.remove(&producer_id)
                && commit
            {
                group.offsets.extend(pending);
            }
        }
    }

    /// The partitions of `group_id` with offsets pending in an open transaction (OffsetFetch
    /// with `require_stable` answers UNSTABLE_OFFSET_COMMIT for them).
    pub(crate) fn unstable_partitions(
        &self,
        group_id: &str,
    ) -> std::collections::BTreeSet<(String, i32)> {
        let inner = self.lock();
        inner
            .groups
            .get(group_id)
            .map(|group| {
                group
                    .pending_txn_offsets
                    .values()
                    .flat_map(|offsets| offsets.keys().cloned())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// OffsetFetch for one group: `None` topics means every committed offset. Unknown groups and
    /// partitions answer offset -1, as Kafka does.
    pub(crate) fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<Vec<(String, Vec<i32>)>>,
    ) -> Result<FetchedOffsets, ResponseError> {
        let inner = self.lock();
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return Err(refusal);
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
        if let Some(refusal) = self.refusal(&inner, group_id) {
            return (refusal.code(), Vec::new());
        }
        let Some(group) = inner.groups.get(group_id) else {
            return (ResponseError::GroupIdNotFound.code(), Vec::new());
        };
        if group.is(GroupState::Dead) {
            return (ResponseError::GroupIdNotFound.code(), Vec::new());
        }
        let subscribed = if group.is(GroupState::Empty) {
            Some(std::collections::HashSet::new())
        } else {
            group.subscribed_topics()
        };
        let Some(subscribed) = subscribed else {
            return (ResponseError::NonEmptyGroup.code(), Vec::new());
        };
        let mut codes = Vec::with_capacity(partitions.len());
        let mut records = Vec::new();
        let mut deleted = Vec::new();
        for (topic, partition) in partitions {
            if subscribed.contains(topic) {
                codes.push(ResponseError::GroupSubscribedToTopic.code());
                continue;
            }
            codes.push(NONE);
            if group.offsets.contains_key(&(topic.clone(), *partition))
                && let Ok(key) = offset_commit_key(group_id, topic, *partition)
            {
                records.push((key, None));
                deleted.push((topic.clone(), *partition));
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
                Err(code) => return (code.code(), Vec::new()),
            }
        }
        (NONE, codes)
    }
}

/// Sets the codes of the accepted offsets (at `accepted`) to `code`: their write failed.
fn fail_accepted(codes: &mut [i16], accepted: &[usize], code: i16) {
    for idx in accepted {
        if let Some(slot) = codes.get_mut(*idx) {
            *slot = code;
        }
    }
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
            None => ResponseError::UnknownMemberId.code(),
            Some(member) if member.member_epoch != generation_id => {
                ResponseError::StaleMemberEpoch.code()
            }
            Some(member) => {
                member.last_heartbeat_ms = now_ms;
                NONE
            }
        };
    }
    if group.is(GroupState::Dead) {
        ResponseError::CoordinatorNotAvailable.code()
    } else if generation_id < 0 && group.is(GroupState::Empty) {
        NONE
    } else if group.is(GroupState::CompletingRebalance) {
        ResponseError::RebalanceInProgress.code()
    } else if let Some(code) = check_member(group, member_id, group_instance_id) {
        code
    } else if generation_id != group.generation_id {
        ResponseError::IllegalGeneration.code()
    } else {
        if let Some(member) = group.members.get_mut(member_id) {
            member.last_heartbeat_ms = now_ms;
        }
        NONE
    }
}
