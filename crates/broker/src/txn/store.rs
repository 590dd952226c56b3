//! `__transaction_state` (Kafka's `TransactionStateManager` and `TransactionLog`): which
//! partition holds an id (`Utils.abs(transactionalId.hashCode) % partitions`), the topic's
//! creation (compacted, uncompressed, `transaction.state.log.segment.bytes`), the write of one
//! transition (acks=-1: durable under the topic's mode before it takes effect) and the replay at
//! start, after which prepared transactions get their markers written again.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use seglog_format::schema::transaction::{self as records, TransactionLogKey};
use seglog_format::{Compression, RecordBatchBuilder};
use seglog_storage::config::BrokerCompressionType;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;

use super::TRANSACTION_STATE_TOPIC;
use super::coordinator::{Entry, TransactionCoordinator};
use super::metadata::{TransactionMetadata, TxnTransit};
use crate::cluster::link::ClusterLink;
use crate::error::Error;
use crate::group::GroupCoordinator;
use crate::replay::{Replayed, replay_partition};
use crate::replica::Acks;

/// Kafka's `partitionFor`: `Utils.abs(transactionalId.hashCode) % partitions`.
pub(super) fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    let hash = seglog_format::java::string_hash(transactional_id);
    let abs = if hash == i32::MIN { 0 } else { hash.abs() };
    if partitions <= 0 { 0 } else { abs % partitions }
}

impl TransactionCoordinator {
    /// Creates `__transaction_state` if it does not exist yet (Kafka creates it on the first
    /// FindCoordinator for a transactional id), and returns its partition count.
    pub(crate) fn ensure_topic(&self) -> Result<i32, ResponseError> {
        let mut inner = self.lock();
        if inner.partitions > 0 {
            return Ok(inner.partitions);
        }
        if let Some(link) = self.cluster.get() {
            // A cluster's topic, created through the controller (FindCoordinator does it).
            let count = link.with_image(|image| {
                image.topic(TRANSACTION_STATE_TOPIC).map(|topic| topic.partitions.len())
            });
            let count = count.and_then(|count| i32::try_from(count).ok()).filter(|c| *c > 0);
            inner.partitions = count.ok_or(ResponseError::CoordinatorNotAvailable)?;
            return Ok(inner.partitions);
        }
        if let Some(count) = self.manager.topic_partition_counts().get(TRANSACTION_STATE_TOPIC) {
            inner.partitions = *count;
            return Ok(*count);
        }
        inner.partitions = crate::replica::create_internal_topic(
            &self.manager,
            TRANSACTION_STATE_TOPIC,
            self.config.state_log_partitions,
            BrokerCompressionType::Uncompressed,
            self.config.state_log_segment_bytes,
        )?;
        Ok(inner.partitions)
    }

    /// Makes this coordinator a cluster's broker's (before [`Self::load`]).
    pub(crate) fn use_cluster(&self, link: std::sync::Arc<ClusterLink>) {
        let _ = self.cluster.set(link);
    }

    /// The partition of `__transaction_state` that holds `transactional_id`.
    pub(crate) fn partition_of(
        &self,
        transactional_id: &str,
    ) -> Result<TopicPartition, ResponseError> {
        let partitions = self.ensure_topic()?;
        Ok(TopicPartition {
            topic: TRANSACTION_STATE_TOPIC.to_owned(),
            partition: partition_for(transactional_id, partitions),
        })
    }

    /// Where `transactional_id` is coordinated: `Ok(None)` here, `Ok(Some(broker id))` on
    /// another broker of the cluster; COORDINATOR_NOT_AVAILABLE while its partition has no
    /// leader or this broker has not made its replica yet.
    pub(crate) fn coordinator_of(
        &self,
        transactional_id: &str,
    ) -> Result<Option<i32>, ResponseError> {
        let Some(link) = self.cluster.get() else { return Ok(None) };
        let tp = self.partition_of(transactional_id)?;
        match link.leader_of(&tp) {
            Some((leader, _)) if leader == link.broker_id() => {
                // Its ids are loaded once this broker leads the partition.
                let loaded = self
                    .loaded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .contains(&tp.partition);
                if loaded { Ok(None) } else { Err(ResponseError::CoordinatorLoadInProgress) }
            }
            Some((leader, _)) if leader >= 0 => Ok(Some(leader)),
            _ => Err(ResponseError::CoordinatorNotAvailable),
        }
    }

    /// NOT_COORDINATOR unless this broker coordinates `transactional_id` (Kafka's
    /// `TransactionStateManager.getTransactionState` on a partition it does not own).
    pub(super) fn check_coordinator(&self, transactional_id: &str) -> Result<(), ResponseError> {
        match self.coordinator_of(transactional_id)? {
            None => Ok(()),
            Some(_) => Err(ResponseError::NotCoordinator),
        }
    }

    /// The coordinator epoch of the markers for `transactional_id`: the leader epoch of its
    /// partition of `__transaction_state` (0 on a single node, where it never changes).
    pub(super) fn coordinator_epoch(&self, transactional_id: &str) -> i32 {
        let Some(link) = self.cluster.get() else { return super::markers::COORDINATOR_EPOCH };
        self.partition_of(transactional_id)
            .ok()
            .and_then(|tp| link.leader_of(&tp))
            .map_or(super::markers::COORDINATOR_EPOCH, |(_, epoch)| epoch.max(0))
    }

    /// Writes one id's state (`None`: a tombstone, the id expired) to its partition and waits
    /// until it is durable under the topic's mode (Kafka's `appendTransactionToLog`, acks=-1).
    pub(super) fn write_transit(
        &self,
        transactional_id: &str,
        transit: Option<&TxnTransit>,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        let partitions = self.ensure_topic()?;
        let key = records::encode_key(transactional_id).map_err(|error| {
            tracing::warn!(%error, transactional_id, "cannot encode a transaction log key");
            ResponseError::UnknownServerError
        })?;
        let value = transit
            .map(|transit| records::encode_value(&transit.to_log_value()))
            .transpose()
            .map_err(|error| {
                tracing::warn!(%error, transactional_id, "cannot encode a transaction log value");
                ResponseError::UnknownServerError
            })?;
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder
            .push(now_ms, Some(&key), value.as_deref(), &[])
            .map_err(|_| ResponseError::UnknownServerError)?;
        let batch = builder.build().map_err(|_| ResponseError::UnknownServerError)?;
        let tp = TopicPartition {
            topic: TRANSACTION_STATE_TOPIC.to_owned(),
            partition: partition_for(transactional_id, partitions),
        };
        self.replicas
            .append(&tp, &batch, AppendOrigin::Coordinator, Acks::All, now_ms)
            .map(|_| ())
            .map_err(|error| {
                tracing::warn!(%error, %tp, "cannot append to {TRANSACTION_STATE_TOPIC}");
                ResponseError::CoordinatorNotAvailable
            })
    }

    /// Loads every id from `__transaction_state`, if it exists (Kafka's
    /// `loadTransactionsForTxnTopicPartition`): the last value of each key wins, a tombstone
    /// removes it. Then every prepared transaction gets its markers and completion written
    /// (a crash between PrepareCommit and the markers is finished here). Called once before the
    /// broker serves, after the group coordinator has loaded (the markers to
    /// `__consumer_offsets` complete its pending transactional offsets). Returns how many ids
    /// were loaded.
    pub fn load(&self, groups: &GroupCoordinator, now_ms: i64) -> Result<usize, Error> {
        if let Some(replication) = self.replicas.replication() {
            // A cluster's broker: the partitions it leads and has not loaded yet; the rest load
            // as leadership comes (`load_partition`).
            let partitions = self.cluster.get().map_or(0, |link| {
                link.with_image(|image| {
                    image.topic(TRANSACTION_STATE_TOPIC).map_or(0, |topic| topic.partitions.len())
                })
            });
            let mut count = 0;
            for partition in 0..i32::try_from(partitions).unwrap_or(0) {
                let tp = TopicPartition { topic: TRANSACTION_STATE_TOPIC.to_owned(), partition };
                let loaded = self
                    .loaded
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .contains(&partition);
                if replication.leader_epoch(&tp).is_some() && !loaded {
                    count = self.load_partition(groups, partition, now_ms)?;
                }
            }
            return Ok(count);
        }
        let partitions = self
            .manager
            .topic_partition_counts()
            .get(TRANSACTION_STATE_TOPIC)
            .map_or(0, |count| usize::try_from(*count).unwrap_or(0));
        let partitions = i32::try_from(partitions).unwrap_or(0);
        let local: Vec<i32> = self
            .manager
            .partitions()
            .into_iter()
            .filter(|tp| tp.topic == TRANSACTION_STATE_TOPIC)
            .map(|tp| tp.partition)
            .collect();
        self.load_partitions(groups, partitions, &local, now_ms)
    }

    /// Kafka's `TransactionCoordinator.onElection`: this broker leads `partition` of
    /// `__transaction_state` now, so its ids are loaded afresh from its log (what the last
    /// leader wrote, as replicated here), prepared transactions completed, and served. Returns
    /// how many ids are loaded in all.
    pub(crate) fn load_partition(
        &self,
        groups: &GroupCoordinator,
        partition: i32,
        now_ms: i64,
    ) -> Result<usize, Error> {
        self.unload_partition(partition);
        let partitions = self.cluster.get().map_or(0, |link| {
            link.with_image(|image| {
                image.topic(TRANSACTION_STATE_TOPIC).map_or(0, |topic| topic.partitions.len())
            })
        });
        let partitions = i32::try_from(partitions).unwrap_or(0);
        let count = self.load_partitions(groups, partitions, &[partition], now_ms)?;
        self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(partition);
        tracing::info!(
            partition,
            "loaded the transactional ids of {TRANSACTION_STATE_TOPIC}-{partition}"
        );
        Ok(count)
    }

    /// Kafka's `onResignation`: this broker no longer leads `partition`, so its ids are dropped
    /// from memory (NOT_COORDINATOR from now on).
    pub(crate) fn unload_partition(&self, partition: i32) {
        let removed = self
            .loaded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&partition);
        let mut inner = self.lock();
        let partitions = inner.partitions;
        if partitions > 0 {
            inner.txns.retain(|id, _| partition_for(id, partitions) != partition);
        }
        if removed {
            tracing::info!(
                partition,
                "unloaded the transactional ids of {TRANSACTION_STATE_TOPIC}-{partition}"
            );
        }
    }

    /// Replays `local` partitions of `__transaction_state` (of `partitions`) into the ids, then
    /// completes the prepared transactions among them.
    fn load_partitions(
        &self,
        groups: &GroupCoordinator,
        partitions: i32,
        local: &[i32],
        now_ms: i64,
    ) -> Result<usize, Error> {
        let local = local.to_vec();
        let mut loaded: BTreeMap<String, Option<TransactionMetadata>> = BTreeMap::new();
        for partition in local {
            let tp = TopicPartition { topic: TRANSACTION_STATE_TOPIC.to_owned(), partition };
            let log = self
                .manager
                .get_log(&tp)
                .map_err(|error| Error::GroupLoad { at: tp.to_string(), source: error.into() })?;
            replay_partition(&log, TRANSACTION_STATE_TOPIC, partition, |replayed| {
                let Replayed::Record(_, record) = replayed else { return Ok(()) };
                let Some(key) = record.key else { return Ok(()) };
                let at = |error: seglog_format::DecodeError| {
                    // The schema reader keeps Java's texts for `seglog dump`, where a buffer
                    // underflow prints `null`; say what it means here.
                    let reason = match error.to_string().as_str() {
                        "null" => "the record ends inside a field".to_owned(),
                        text => text.to_owned(),
                    };
                    Error::GroupLoad {
                        at: format!("{tp}: offset {}", record.offset),
                        source: format!("undecodable transaction log record: {reason}").into(),
                    }
                };
                let TransactionLogKey::TransactionalId(id) =
                    records::decode_key(key).map_err(at)?
                else {
                    // A key of a later version: Kafka skips it too.
                    return Ok(());
                };
                let meta = match record.value {
                    None => None,
                    Some(value) => {
                        let value = records::decode_value(value).map_err(at)?;
                        TransactionMetadata::from_log_value(&id, &value)
                    }
                };
                loaded.insert(id, meta);
                Ok(())
            })?;
        }
        let mut prepared = Vec::new();
        let count = {
            let mut inner = self.lock();
            inner.partitions = partitions;
            for (id, meta) in loaded {
                let Some(meta) = meta else { continue };
                if matches!(
                    meta.state,
                    seglog_format::schema::transaction::TransactionState::PrepareCommit
                        | seglog_format::schema::transaction::TransactionState::PrepareAbort
                ) {
                    prepared.push(id.clone());
                }
                inner.txns.insert(id, Entry::new(meta));
            }
            inner.txns.len()
        };
        for id in prepared {
            if self.complete_prepared(groups, &id, now_ms) {
                tracing::info!(transactional_id = id, "completed a prepared transaction at load");
            }
        }
        Ok(count)
    }
}
