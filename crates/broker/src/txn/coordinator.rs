//! The transaction coordinator's requests and timers (Kafka's `TransactionCoordinator`), over
//! the metadata of every transactional id behind one mutex. Each id also has an append gate:
//! verified transactional produces hold it shared, and the preparation of a commit or abort
//! holds it exclusively, so no produce slips in between a transaction's end and its markers.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use kafka_protocol::ResponseError;
use seglog_format::schema::transaction::TransactionState;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::manager::LogManager;
use tokio::sync::Notify;

use super::TxnConfig;
use super::metadata::{TransactionMetadata, TxnTransit, is_epoch_exhausted};
use crate::cluster::link::ClusterLink;
use crate::group::GroupCoordinator;
use crate::replica::ReplicaManager;

/// How often a failing marker write is logged at warn level.
const MARKER_WARN_INTERVAL_MS: i64 = 5_000;

/// One transactional id: its metadata and its append gate.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) meta: TransactionMetadata,
    gate: Arc<RwLock<()>>,
    /// A completer is writing this prepared transaction's markers: no other may start (a
    /// second one's markers, landing after the completion, could end the producer's next
    /// transaction under the same epoch).
    pub(super) completing: bool,
}

impl Entry {
    pub(super) fn new(meta: TransactionMetadata) -> Self {
        Self { meta, gate: Arc::new(RwLock::new(())), completing: false }
    }
}

/// The state behind the mutex.
#[derive(Debug, Default)]
pub(super) struct Inner {
    pub(super) txns: HashMap<String, Entry>,
    /// Partitions of `__transaction_state` (0 until it exists).
    pub(super) partitions: i32,
    shutting_down: bool,
    last_abort_check_ms: Option<i64>,
    last_expire_check_ms: Option<i64>,
}

impl Inner {
    /// The metadata of `transactional_id` when `producer_id` is its producer; an unknown id or
    /// another producer is INVALID_PRODUCER_ID_MAPPING, as Kafka answers both.
    fn producer_meta(
        &self,
        transactional_id: &str,
        producer_id: i64,
    ) -> Result<&TransactionMetadata, ResponseError> {
        self.txns
            .get(transactional_id)
            .map(|entry| &entry.meta)
            .filter(|meta| meta.producer_id == producer_id)
            .ok_or(ResponseError::InvalidProducerIdMapping)
    }

    /// [`Inner::producer_meta`], to change it.
    fn producer_meta_mut(
        &mut self,
        transactional_id: &str,
        producer_id: i64,
    ) -> Result<&mut TransactionMetadata, ResponseError> {
        self.txns
            .get_mut(transactional_id)
            .map(|entry| &mut entry.meta)
            .filter(|meta| meta.producer_id == producer_id)
            .ok_or(ResponseError::InvalidProducerIdMapping)
    }
}

/// What DescribeTransactions answers for one id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnDescription {
    pub(crate) state: &'static str,
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) timeout_ms: i32,
    pub(crate) start_time_ms: i64,
    pub(crate) partitions: Vec<TopicPartition>,
}

/// One row of ListTransactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnListing {
    pub(crate) transactional_id: String,
    pub(crate) producer_id: i64,
    pub(crate) state: &'static str,
}

/// The transaction coordinator (Kafka's `TransactionCoordinator`).
#[derive(Debug)]
pub struct TransactionCoordinator {
    pub(super) manager: Arc<LogManager>,
    pub(super) config: TxnConfig,
    inner: Mutex<Inner>,
    /// Every write (to `__transaction_state` and the markers) goes through the one append path.
    pub(super) replicas: ReplicaManager,
    /// A cluster's broker: this broker coordinates the ids whose partition of
    /// `__transaction_state` it leads; producer ids come from the controller and markers for
    /// partitions led elsewhere go to their leaders. Unset on a single node.
    pub(super) cluster: std::sync::OnceLock<Arc<ClusterLink>>,
    /// When a marker failure was last logged at warn level (ms).
    marker_warned_ms: std::sync::atomic::AtomicI64,
    /// A cluster's broker: the partitions of `__transaction_state` whose ids are loaded (it
    /// leads them). Its own lock, never taken while `inner` is held.
    pub(super) loaded: Mutex<BTreeSet<i32>>,
    /// A simulated crash point, armed by the simulation (`sim_tests.rs`).
    #[cfg(test)]
    pub(super) fail_point: Mutex<Option<FailPoint>>,
}

/// Where a simulated crash stops the completion of a prepared transaction: the work after it is
/// left for the next load, as a process death there would leave it. Only the simulation arms
/// one; elsewhere [`TransactionCoordinator::hit`] is always false.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FailPoint {
    /// After PrepareCommit/PrepareAbort is durable, before any marker.
    AfterPrepare,
    /// After this many markers.
    AfterMarkers(usize),
}

/// A producer's id and epoch as a request names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerIdAndEpoch {
    pub(crate) producer_id: i64,
    pub(crate) epoch: i16,
}

impl TransactionCoordinator {
    /// Appends through a cluster's replication.
    pub(crate) fn use_replication(&self, replication: Arc<crate::replication::Replication>) {
        self.replicas.use_replication(replication);
    }

    pub(crate) fn new(manager: Arc<LogManager>, config: TxnConfig, appended: Arc<Notify>) -> Self {
        Self {
            replicas: ReplicaManager::new(Arc::clone(&manager), appended),
            manager,
            config,
            inner: Mutex::new(Inner::default()),
            cluster: std::sync::OnceLock::new(),
            marker_warned_ms: std::sync::atomic::AtomicI64::new(i64::MIN / 2),
            loaded: Mutex::new(BTreeSet::new()),
            #[cfg(test)]
            fail_point: Mutex::new(None),
        }
    }

    /// Whether the armed fail point is `point` (it fires once).
    #[cfg(test)]
    pub(super) fn hit(&self, point: FailPoint) -> bool {
        let mut armed = self.fail_point.lock().unwrap_or_else(PoisonError::into_inner);
        if *armed == Some(point) {
            *armed = None;
            return true;
        }
        false
    }

    /// No fail point outside tests.
    #[cfg(not(test))]
    #[expect(clippy::unused_self, reason = "the test build's twin reads self")]
    pub(super) fn hit(&self, _point: FailPoint) -> bool {
        false
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The coordinator's settings.
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Refuses new requests, for a broker shutdown.
    pub(crate) fn shutdown(&self) {
        self.lock().shutting_down = true;
    }

    fn check_active(&self) -> Result<(), ResponseError> {
        if self.lock().shutting_down {
            return Err(ResponseError::CoordinatorNotAvailable);
        }
        Ok(())
    }

    /// The gate of `transactional_id`, if the id is known.
    fn gate(&self, transactional_id: &str) -> Option<Arc<RwLock<()>>> {
        self.lock().txns.get(transactional_id).map(|entry| Arc::clone(&entry.gate))
    }

    /// Writes `transit` and applies it, or forgets it when the write fails.
    fn persist_and_complete(
        &self,
        transactional_id: &str,
        transit: &TxnTransit,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        let written = self.write_transit(transactional_id, Some(transit), now_ms);
        let mut inner = self.lock();
        let Some(entry) = inner.txns.get_mut(transactional_id) else {
            return Err(ResponseError::CoordinatorNotAvailable);
        };
        match written {
            Ok(()) => {
                entry.meta.complete(transit);
                Ok(())
            }
            Err(error) => {
                entry.meta.abort_pending();
                Err(error)
            }
        }
    }

    /// InitProducerId with a transactional id (Kafka's `handleInitProducerId`): a new id gets a
    /// producer id at epoch 0; a known one the next epoch (fencing older producers), or a new
    /// producer id once the epochs are spent. An open transaction is first aborted with a bumped
    /// epoch, and the caller told CONCURRENT_TRANSACTIONS to retry.
    pub(crate) fn init_producer_id(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        txn_timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
        now_ms: i64,
    ) -> Result<ProducerIdAndEpoch, ResponseError> {
        self.check_active()?;
        self.check_coordinator(transactional_id)?;
        if txn_timeout_ms <= 0 || txn_timeout_ms > self.config.max_timeout_ms {
            return Err(ResponseError::InvalidTransactionTimeout);
        }
        self.ensure_topic()?;
        if !self.lock().txns.contains_key(transactional_id) {
            let producer_id = self.allocate_producer_id()?;
            self.lock().txns.entry(transactional_id.to_owned()).or_insert_with(|| {
                Entry::new(TransactionMetadata::new(
                    transactional_id,
                    producer_id,
                    txn_timeout_ms,
                    now_ms,
                ))
            });
        }
        let transit = {
            let mut inner = self.lock();
            let Some(entry) = inner.txns.get_mut(transactional_id) else {
                return Err(ResponseError::CoordinatorNotAvailable);
            };
            let meta = &mut entry.meta;
            let valid = |expected: &ProducerIdAndEpoch| {
                meta.producer_epoch < 0
                    || expected.producer_id == meta.producer_id
                    || (expected.producer_id == meta.previous_producer_id
                        && is_epoch_exhausted(expected.epoch))
            };
            if meta.pending_transition_in_progress() {
                return Err(ResponseError::ConcurrentTransactions);
            }
            if expected.as_ref().is_some_and(|expected| !valid(expected)) {
                return Err(ResponseError::ProducerFenced);
            }
            match meta.state {
                TransactionState::PrepareAbort | TransactionState::PrepareCommit => {
                    return Err(ResponseError::ConcurrentTransactions);
                }
                TransactionState::Ongoing => None,
                TransactionState::Empty
                | TransactionState::CompleteAbort
                | TransactionState::CompleteCommit => {
                    let rotate = is_epoch_exhausted(meta.producer_epoch)
                        && expected.is_none_or(|expected| expected.epoch == meta.producer_epoch);
                    drop(inner);
                    Some(self.prepare_new_epoch(
                        transactional_id,
                        txn_timeout_ms,
                        expected,
                        rotate,
                        now_ms,
                    )?)
                }
                TransactionState::Dead | TransactionState::PrepareEpochFence => {
                    tracing::error!(
                        transactional_id,
                        state = meta.state.name(),
                        "transaction coordinator: a state that is never stored"
                    );
                    return Err(ResponseError::UnknownServerError);
                }
            }
        };
        let Some(transit) = transit else {
            // Ongoing: abort it under a bumped epoch, then let the producer retry.
            let producer_id =
                self.lock().txns.get(transactional_id).map_or(-1, |entry| entry.meta.producer_id);
            self.end_transaction(
                groups,
                transactional_id,
                producer_id,
                -1,
                false,
                End::Fence,
                now_ms,
            )?;
            return Err(ResponseError::ConcurrentTransactions);
        };
        self.persist_and_complete(transactional_id, &transit, now_ms)?;
        tracing::info!(
            transactional_id,
            producer_id = transit.producer_id,
            producer_epoch = transit.producer_epoch,
            "initialized transactional id"
        );
        Ok(ProducerIdAndEpoch { producer_id: transit.producer_id, epoch: transit.producer_epoch })
    }

    /// The next epoch of a transactional id with no open transaction, or (`rotate`, the epochs
    /// spent) a new producer id at epoch 0.
    fn prepare_new_epoch(
        &self,
        transactional_id: &str,
        txn_timeout_ms: i32,
        expected: Option<ProducerIdAndEpoch>,
        rotate: bool,
        now_ms: i64,
    ) -> Result<TxnTransit, ResponseError> {
        let new_producer_id = if rotate { Some(self.allocate_producer_id()?) } else { None };
        let mut inner = self.lock();
        let meta = inner
            .txns
            .get_mut(transactional_id)
            .map(|entry| &mut entry.meta)
            .ok_or(ResponseError::CoordinatorNotAvailable)?;
        if meta.pending_transition_in_progress() {
            return Err(ResponseError::ConcurrentTransactions);
        }
        let transit = match new_producer_id {
            Some(producer_id) => meta.prepare_producer_id_rotation(
                producer_id,
                txn_timeout_ms,
                now_ms,
                expected.is_some(),
            ),
            None => match meta.prepare_increment_producer_epoch(
                txn_timeout_ms,
                expected.map(|expected| expected.epoch),
                now_ms,
            ) {
                Ok(None) => return Err(ResponseError::ProducerFenced),
                Ok(Some(transit)) => Ok(transit),
                Err(error) => Err(error),
            },
        };
        transit.map_err(|error| {
            tracing::error!(%error, "transaction coordinator: illegal transition");
            ResponseError::UnknownServerError
        })
    }

    fn allocate_producer_id(&self) -> Result<i64, ResponseError> {
        if let Some(link) = self.cluster.get() {
            // Blocks from the controller, as an idempotent producer's (called on a blocking
            // thread of the runtime).
            let allocated = tokio::runtime::Handle::current().block_on(link.allocate_producer_id());
            return allocated.map_err(|refusal| {
                tracing::warn!(%refusal, "no producer id from the controller");
                ResponseError::CoordinatorNotAvailable
            });
        }
        self.manager.allocate_producer_id().map_err(|error| {
            tracing::warn!(%error, "cannot allocate a producer id");
            ResponseError::CoordinatorNotAvailable
        })
    }

    /// AddPartitionsToTxn (Kafka's `handleAddPartitionsToTransaction`) and AddOffsetsToTxn
    /// (which adds the group's partition of `__consumer_offsets`).
    pub(crate) fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        self.check_active()?;
        self.check_coordinator(transactional_id)?;
        let transit = {
            let mut inner = self.lock();
            let meta = inner.producer_meta_mut(transactional_id, producer_id)?;
            if meta.producer_epoch != producer_epoch {
                return Err(ResponseError::ProducerFenced);
            }
            if meta.pending_transition_in_progress()
                || matches!(
                    meta.state,
                    TransactionState::PrepareCommit | TransactionState::PrepareAbort
                )
            {
                return Err(ResponseError::ConcurrentTransactions);
            }
            if meta.state == TransactionState::Ongoing && partitions.is_subset(&meta.partitions) {
                return Ok(());
            }
            meta.prepare_add_partitions(partitions, now_ms).map_err(|error| {
                tracing::error!(%error, "transaction coordinator: illegal transition");
                ResponseError::UnknownServerError
            })?
        };
        self.persist_and_complete(transactional_id, &transit, now_ms)
    }

    /// Runs `append` if the coordinator holds `transactional_id`'s transaction Ongoing for this
    /// producer with `tp` added (KIP-890 part 1's verification, Kafka's
    /// `handleVerifyPartitionsInTransaction`), holding the id's gate shared so that no commit
    /// or abort is prepared meanwhile. Refusals are the coordinator's codes: unknown id or
    /// producer INVALID_PRODUCER_ID_MAPPING, another epoch PRODUCER_FENCED, a transaction
    /// ending CONCURRENT_TRANSACTIONS, a partition not added TRANSACTION_ABORTABLE.
    pub(crate) fn with_verified<T>(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        tp: &TopicPartition,
        append: impl FnOnce() -> T,
    ) -> Result<T, ResponseError> {
        self.check_coordinator(transactional_id)?;
        let gate = self.gate(transactional_id).ok_or(ResponseError::InvalidProducerIdMapping)?;
        let _shared = gate.read().unwrap_or_else(PoisonError::into_inner);
        {
            let inner = self.lock();
            let meta = inner.producer_meta(transactional_id, producer_id)?;
            if meta.producer_epoch != producer_epoch {
                return Err(ResponseError::ProducerFenced);
            }
            let ending = matches!(
                meta.state,
                TransactionState::PrepareCommit | TransactionState::PrepareAbort
            ) || matches!(
                meta.pending,
                Some(
                    TransactionState::PrepareCommit
                        | TransactionState::PrepareAbort
                        | TransactionState::PrepareEpochFence
                )
            );
            if ending {
                return Err(ResponseError::ConcurrentTransactions);
            }
            if meta.state != TransactionState::Ongoing || !meta.partitions.contains(tp) {
                return Err(ResponseError::TransactionAbortable);
            }
        }
        Ok(append())
    }

    /// EndTxn from a client (Kafka's `handleEndTransaction`).
    pub(crate) fn end_txn(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        self.check_active()?;
        self.check_coordinator(transactional_id)?;
        let end = if commit { End::Commit } else { End::Abort };
        self.end_transaction(
            groups,
            transactional_id,
            producer_id,
            producer_epoch,
            true,
            end,
            now_ms,
        )
    }

    /// Kafka's `endTransaction`: checks, prepares (under the exclusive gate), writes
    /// PrepareCommit or PrepareAbort, then writes the markers and the completion. A fence
    /// (`End::Fence`: a timeout, or InitProducerId finding the transaction open) aborts under
    /// a bumped epoch, checked by producer id only.
    #[expect(clippy::too_many_arguments, reason = "Kafka's endTransaction, one argument each")]
    fn end_transaction(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        from_client: bool,
        end: End,
        now_ms: i64,
    ) -> Result<(), ResponseError> {
        let gate = self.gate(transactional_id).ok_or(ResponseError::InvalidProducerIdMapping)?;
        let transit = {
            let _exclusive = gate.write().unwrap_or_else(PoisonError::into_inner);
            let mut inner = self.lock();
            let meta = inner.producer_meta_mut(transactional_id, producer_id)?;
            if meta.pending_transition_in_progress() {
                return Err(ResponseError::ConcurrentTransactions);
            }
            let commit = end == End::Commit;
            if end == End::Fence {
                if meta.state != TransactionState::Ongoing {
                    return Err(ResponseError::ConcurrentTransactions);
                }
                if !meta.has_failed_epoch_fence {
                    meta.producer_epoch = meta.producer_epoch.saturating_add(1);
                }
                meta.last_producer_epoch = super::metadata::NO_PRODUCER_EPOCH;
            } else {
                let valid_epoch = (!from_client || producer_epoch == meta.producer_epoch)
                    && producer_epoch >= meta.producer_epoch;
                if !valid_epoch {
                    return Err(ResponseError::ProducerFenced);
                }
            }
            let invalid = || {
                tracing::debug!(
                    transactional_id,
                    state = meta.state.name(),
                    commit,
                    "EndTxn refused"
                );
                ResponseError::InvalidTxnState
            };
            match meta.state {
                TransactionState::Ongoing => {
                    let next = if commit {
                        TransactionState::PrepareCommit
                    } else {
                        TransactionState::PrepareAbort
                    };
                    meta.prepare_abort_or_commit(next, now_ms).map_err(|error| {
                        tracing::error!(%error, "transaction coordinator: illegal transition");
                        ResponseError::UnknownServerError
                    })?
                }
                TransactionState::CompleteCommit if commit => return Ok(()),
                TransactionState::CompleteAbort if !commit => return Ok(()),
                TransactionState::PrepareCommit if commit => {
                    return Err(ResponseError::ConcurrentTransactions);
                }
                TransactionState::PrepareAbort if !commit => {
                    return Err(ResponseError::ConcurrentTransactions);
                }
                _ => return Err(invalid()),
            }
        };
        let written = self.write_transit(transactional_id, Some(&transit), now_ms);
        {
            let mut inner = self.lock();
            let Some(entry) = inner.txns.get_mut(transactional_id) else {
                return Err(ResponseError::CoordinatorNotAvailable);
            };
            match written {
                Ok(()) => entry.meta.complete(&transit),
                Err(error) => {
                    entry.meta.abort_pending();
                    if end == End::Fence {
                        entry.meta.has_failed_epoch_fence = true;
                    }
                    return Err(error);
                }
            }
        }
        // The decision is durable: the client is answered NONE whatever the markers meet; a
        // marker that cannot be written now is written by the next tick.
        self.complete_prepared(groups, transactional_id, now_ms);
        Ok(())
    }

    /// Writes the markers of a prepared transaction and then its completion (Kafka's
    /// `TransactionMarkerChannelManager` and `TransactionMarkerRequestCompletionHandler`).
    /// Returns whether the transaction is complete; if not, a later tick tries again. One
    /// completer at a time per id: EndTxn and the tick may both try, and the one that comes
    /// second while markers are in flight leaves them to the first.
    pub(super) fn complete_prepared(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        now_ms: i64,
    ) -> bool {
        {
            let mut inner = self.lock();
            let Some(entry) = inner.txns.get_mut(transactional_id) else { return false };
            if entry.completing {
                return false;
            }
            entry.completing = true;
        }
        let completed = self.complete_claimed(groups, transactional_id, now_ms);
        if let Some(entry) = self.lock().txns.get_mut(transactional_id) {
            entry.completing = false;
        }
        completed
    }

    /// [`Self::complete_prepared`] once this caller holds the id's completion.
    fn complete_claimed(
        &self,
        groups: &GroupCoordinator,
        transactional_id: &str,
        now_ms: i64,
    ) -> bool {
        let (producer_id, producer_epoch, commit, partitions) = {
            let inner = self.lock();
            let Some(entry) = inner.txns.get(transactional_id) else { return false };
            let meta = &entry.meta;
            let commit = match meta.state {
                TransactionState::PrepareCommit => true,
                TransactionState::PrepareAbort => false,
                _ => return false,
            };
            if meta.pending_transition_in_progress() {
                return false;
            }
            (meta.producer_id, meta.producer_epoch, commit, meta.partitions.clone())
        };
        if self.hit(FailPoint::AfterPrepare) {
            return false;
        }
        let end = super::markers::TxnEnd {
            producer_id,
            producer_epoch,
            commit,
            coordinator_epoch: self.coordinator_epoch(transactional_id),
        };
        if let Err(error) = self.write_markers(groups, &partitions, end, now_ms) {
            // Tried again every tick while a leader is away: said at most every few seconds.
            let last = self.marker_warned_ms.load(std::sync::atomic::Ordering::Relaxed);
            if now_ms - last >= MARKER_WARN_INTERVAL_MS {
                self.marker_warned_ms.store(now_ms, std::sync::atomic::Ordering::Relaxed);
                tracing::warn!(
                    transactional_id,
                    %error,
                    "cannot write a transaction's markers; the next tick tries again"
                );
            } else {
                tracing::debug!(transactional_id, %error, "cannot write a transaction's markers");
            }
            return false;
        }
        let transit = {
            let mut inner = self.lock();
            let Some(entry) = inner.txns.get_mut(transactional_id) else { return false };
            match entry.meta.prepare_complete(now_ms) {
                Ok(transit) => transit,
                Err(error) => {
                    tracing::error!(%error, "transaction coordinator: illegal transition");
                    return false;
                }
            }
        };
        match self.persist_and_complete(transactional_id, &transit, now_ms) {
            Ok(()) => true,
            Err(error) => {
                tracing::warn!(transactional_id, ?error, "cannot write a transaction's completion");
                false
            }
        }
    }

    /// DescribeTransactions for one id (Kafka's `handleDescribeTransactions`).
    pub(crate) fn describe(&self, transactional_id: &str) -> Result<TxnDescription, ResponseError> {
        self.check_active()?;
        if transactional_id.is_empty() {
            return Err(ResponseError::InvalidRequest);
        }
        self.check_coordinator(transactional_id)?;
        let inner = self.lock();
        let meta = inner
            .txns
            .get(transactional_id)
            .map(|entry| &entry.meta)
            .filter(|meta| meta.state != TransactionState::Dead)
            .ok_or(ResponseError::TransactionalIdNotFound)?;
        Ok(TxnDescription {
            state: meta.state.name(),
            producer_id: meta.producer_id,
            producer_epoch: meta.producer_epoch,
            timeout_ms: meta.txn_timeout_ms,
            start_time_ms: meta.txn_start_timestamp_ms,
            partitions: meta.partitions.iter().cloned().collect(),
        })
    }

    /// ListTransactions (Kafka's `listTransactionStates`): every id, or those in `states`
    /// (Kafka's names), of `producer_ids`, and open for at least `duration_ms` (-1: any).
    pub(crate) fn list(
        &self,
        states: &[String],
        producer_ids: &[i64],
        duration_ms: i64,
        now_ms: i64,
    ) -> Result<Vec<TxnListing>, ResponseError> {
        self.check_active()?;
        let inner = self.lock();
        let mut listed: Vec<TxnListing> = inner
            .txns
            .iter()
            .filter(|(_, entry)| entry.meta.state != TransactionState::Dead)
            .filter(|(_, entry)| {
                states.is_empty() || states.iter().any(|state| state == entry.meta.state.name())
            })
            .filter(|(_, entry)| {
                producer_ids.is_empty() || producer_ids.contains(&entry.meta.producer_id)
            })
            .filter(|(_, entry)| {
                duration_ms < 0
                    || (entry.meta.txn_start_timestamp_ms >= 0
                        && now_ms - entry.meta.txn_start_timestamp_ms >= duration_ms)
            })
            .map(|(id, entry)| TxnListing {
                transactional_id: id.clone(),
                producer_id: entry.meta.producer_id,
                state: entry.meta.state.name(),
            })
            .collect();
        listed.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        Ok(listed)
    }

    /// The timers: prepared transactions whose markers failed are completed (every tick),
    /// transactions open past their timeout are aborted under a bumped epoch
    /// (`transaction.abort.timed.out.transaction.cleanup.interval.ms`), and ids idle past `transactional.id.expiration.ms`
    /// are forgotten (`transaction.remove.expired.transaction.cleanup.interval.ms`).
    pub(crate) fn tick(&self, groups: &GroupCoordinator, now_ms: i64) {
        let (abort_due, expire_due) = {
            let mut inner = self.lock();
            if inner.shutting_down {
                return;
            }
            let due = |last: &mut Option<i64>, interval: i64| {
                let due = last.is_none_or(|last| now_ms - last >= interval);
                if due {
                    *last = Some(now_ms);
                }
                due
            };
            let abort_interval = self.config.abort_timed_out_interval_ms;
            let expire_interval = self.config.remove_expired_interval_ms;
            (
                due(&mut inner.last_abort_check_ms, abort_interval),
                due(&mut inner.last_expire_check_ms, expire_interval),
            )
        };
        // Prepared transactions whose markers could not all be written (a partition's leader
        // away): every tick, as Kafka's marker channel retries them at once.
        let prepared: Vec<String> = self
            .lock()
            .txns
            .iter()
            .filter(|(_, entry)| {
                !entry.meta.pending_transition_in_progress()
                    && matches!(
                        entry.meta.state,
                        TransactionState::PrepareCommit | TransactionState::PrepareAbort
                    )
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in prepared {
            self.complete_prepared(groups, &id, now_ms);
        }
        if abort_due {
            let timed_out: Vec<(String, i64)> = self
                .lock()
                .txns
                .iter()
                .filter(|(_, entry)| {
                    let meta = &entry.meta;
                    !meta.pending_transition_in_progress()
                        && meta.state == TransactionState::Ongoing
                        && meta.txn_start_timestamp_ms + i64::from(meta.txn_timeout_ms) < now_ms
                })
                .map(|(id, entry)| (id.clone(), entry.meta.producer_id))
                .collect();
            for (id, producer_id) in timed_out {
                match self.end_transaction(groups, &id, producer_id, -1, false, End::Fence, now_ms)
                {
                    Ok(()) => tracing::info!(
                        transactional_id = id,
                        "rolled back a transaction open past its timeout"
                    ),
                    Err(error) => tracing::debug!(
                        transactional_id = id,
                        ?error,
                        "the rollback of a timed-out transaction was cancelled"
                    ),
                }
            }
        }
        if expire_due {
            self.expire_ids(now_ms);
        }
    }

    /// Forgets ids idle past `transactional.id.expiration.ms` (Kafka's
    /// `removeExpiredTransactionalIds`): a tombstone, then the entry goes.
    fn expire_ids(&self, now_ms: i64) {
        let expired: Vec<String> = {
            let mut inner = self.lock();
            let expiration = self.config.id_expiration_ms;
            let mut expired = Vec::new();
            for (id, entry) in &mut inner.txns {
                let meta = &mut entry.meta;
                let idle = matches!(
                    meta.state,
                    TransactionState::Empty
                        | TransactionState::CompleteCommit
                        | TransactionState::CompleteAbort
                ) && !meta.pending_transition_in_progress()
                    && meta.txn_last_update_timestamp_ms + expiration <= now_ms;
                if idle && meta.prepare_dead().is_ok() {
                    expired.push(id.clone());
                }
            }
            expired
        };
        for id in expired {
            let written = self.write_transit(&id, None, now_ms);
            let mut inner = self.lock();
            match written {
                Ok(()) => {
                    inner.txns.remove(&id);
                    tracing::info!(transactional_id = id, "expired an idle transactional id");
                }
                Err(_) => {
                    if let Some(entry) = inner.txns.get_mut(&id) {
                        entry.meta.abort_pending();
                    }
                }
            }
        }
    }

    /// The code of a verification refusal as a Produce answers it (Kafka's
    /// `AddPartitionsToTxnManager`): PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH,
    /// TRANSACTION_ABORTABLE becomes INVALID_TXN_STATE for clients older than Produce v11, and a
    /// transaction still ending, or a coordinator that is moving or cannot be reached,
    /// NOT_ENOUGH_REPLICAS, which producers retry (Kafka's `ReplicaManager`).
    pub(crate) fn produce_error(error: ResponseError, produce_version: i16) -> i16 {
        match error {
            ResponseError::ProducerFenced => ResponseError::InvalidProducerEpoch.code(),
            ResponseError::TransactionAbortable if produce_version < 11 => {
                ResponseError::InvalidTxnState.code()
            }
            ResponseError::ConcurrentTransactions
            | ResponseError::NetworkException
            | ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator => ResponseError::NotEnoughReplicas.code(),
            other => other.code(),
        }
    }
}

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Commit,
    Abort,
    /// An abort under a bumped epoch (timeout, or a new producer with the same id).
    Fence,
}
