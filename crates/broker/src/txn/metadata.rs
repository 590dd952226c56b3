//! One transactional id's state (Kafka's `TransactionMetadata` and `TxnTransitMetadata`): the
//! producer id and epoch it hands out, the open transaction's partitions and timestamps, and the
//! state machine of Kafka's `TransactionState` with its valid previous states.
//!
//! A change is made in two steps, as in Kafka: `prepare_*` checks the transition and returns the
//! new state ([`TxnTransit`]) with the metadata marked pending; once the transit is durable in
//! `__transaction_state` the coordinator calls [`TransactionMetadata::complete`] (or
//! [`TransactionMetadata::abort_pending`] when the write failed).

use std::collections::BTreeSet;

use seglog_format::schema::transaction::{
    TransactionLogValue, TransactionPartitions, TransactionState,
};
use seglog_storage::log::partition_log::TopicPartition;

/// No producer id (Kafka's `RecordBatch.NO_PRODUCER_ID`).
pub(crate) const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (Kafka's `RecordBatch.NO_PRODUCER_EPOCH`).
pub(crate) const NO_PRODUCER_EPOCH: i16 = -1;

/// Kafka's `TransactionState.validPreviousStates`.
fn valid_previous(state: TransactionState) -> &'static [TransactionState] {
    use TransactionState::{
        CompleteAbort, CompleteCommit, Dead, Empty, Ongoing, PrepareAbort, PrepareCommit,
        PrepareEpochFence,
    };
    match state {
        Empty => &[Empty, CompleteCommit, CompleteAbort],
        Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
        PrepareCommit | PrepareEpochFence => &[Ongoing],
        PrepareAbort => &[Ongoing, PrepareEpochFence],
        CompleteCommit => &[PrepareCommit],
        CompleteAbort => &[PrepareAbort],
        Dead => &[Empty, CompleteAbort, CompleteCommit],
    }
}

/// Whether an epoch may no longer be handed out (Kafka's `isEpochExhausted`: `Short.MaxValue - 1`
/// and above, so that the coordinator can always fence once more).
pub(crate) fn is_epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// A state change waiting to be written (Kafka's `TxnTransitMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnTransit {
    pub(crate) producer_id: i64,
    pub(crate) previous_producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) last_producer_epoch: i16,
    pub(crate) txn_timeout_ms: i32,
    pub(crate) state: TransactionState,
    pub(crate) partitions: BTreeSet<TopicPartition>,
    pub(crate) txn_start_timestamp_ms: i64,
    pub(crate) txn_last_update_timestamp_ms: i64,
}

impl TxnTransit {
    /// The `__transaction_state` value that records it (Kafka's `TransactionLog.valueToBytes`,
    /// version 1; the partitions are null for an Empty transaction, as Kafka writes them).
    pub(crate) fn to_log_value(&self) -> TransactionLogValue {
        let partitions = if self.state == TransactionState::Empty {
            None
        } else {
            let mut topics: Vec<TransactionPartitions> = Vec::new();
            for tp in &self.partitions {
                match topics.last_mut() {
                    Some(last) if last.topic == tp.topic => last.partition_ids.push(tp.partition),
                    _ => topics.push(TransactionPartitions {
                        topic: tp.topic.clone(),
                        partition_ids: vec![tp.partition],
                    }),
                }
            }
            Some(topics)
        };
        TransactionLogValue {
            version: 1,
            producer_id: self.producer_id,
            previous_producer_id: self.previous_producer_id,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: self.producer_epoch,
            transaction_timeout_ms: self.txn_timeout_ms,
            transaction_status: self.state.id(),
            transaction_partitions: partitions,
            transaction_last_update_timestamp_ms: self.txn_last_update_timestamp_ms,
            transaction_start_timestamp_ms: self.txn_start_timestamp_ms,
            client_transaction_version: 0,
        }
    }
}

/// Why a prepared transition is not allowed (a coordinator bug if it ever happens: Kafka throws
/// `IllegalStateException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("transactional id {transactional_id}: cannot go from {from} to {to}{detail}")]
pub(crate) struct IllegalTransition {
    pub(crate) transactional_id: String,
    pub(crate) from: &'static str,
    pub(crate) to: &'static str,
    pub(crate) detail: String,
}

/// One transactional id (Kafka's `TransactionMetadata`).
#[derive(Debug, Clone)]
pub(crate) struct TransactionMetadata {
    pub(crate) transactional_id: String,
    pub(crate) producer_id: i64,
    pub(crate) previous_producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) last_producer_epoch: i16,
    pub(crate) txn_timeout_ms: i32,
    pub(crate) state: TransactionState,
    /// The partitions of the open transaction (those still without a marker while preparing).
    pub(crate) partitions: BTreeSet<TopicPartition>,
    pub(crate) txn_start_timestamp_ms: i64,
    pub(crate) txn_last_update_timestamp_ms: i64,
    /// The state being written, if a transition is in flight.
    pub(crate) pending: Option<TransactionState>,
    /// An epoch fence whose write failed: the next fence does not bump again (Kafka's
    /// `hasFailedEpochFence`).
    pub(crate) has_failed_epoch_fence: bool,
}

impl TransactionMetadata {
    /// A new id, before its first InitProducerId is written.
    pub(crate) fn new(
        transactional_id: &str,
        producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
    ) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state: TransactionState::Empty,
            partitions: BTreeSet::new(),
            txn_start_timestamp_ms: -1,
            txn_last_update_timestamp_ms: now_ms,
            pending: None,
            has_failed_epoch_fence: false,
        }
    }

    /// The metadata a `__transaction_state` value describes (Kafka's `TransactionLog.readTxnRecordValue`);
    /// `None` for a state id Kafka does not know.
    pub(crate) fn from_log_value(
        transactional_id: &str,
        value: &TransactionLogValue,
    ) -> Option<Self> {
        let state = TransactionState::from_id(value.transaction_status)?;
        let partitions = value
            .transaction_partitions
            .iter()
            .flatten()
            .flat_map(|topic| {
                topic.partition_ids.iter().map(|partition| TopicPartition {
                    topic: topic.topic.clone(),
                    partition: *partition,
                })
            })
            .collect();
        Some(Self {
            transactional_id: transactional_id.to_owned(),
            producer_id: value.producer_id,
            previous_producer_id: value.previous_producer_id,
            producer_epoch: value.producer_epoch,
            // Kafka 2.4+ keeps the last epoch in memory only; after a load it is unknown.
            last_producer_epoch: NO_PRODUCER_EPOCH,
            txn_timeout_ms: value.transaction_timeout_ms,
            state,
            partitions,
            txn_start_timestamp_ms: value.transaction_start_timestamp_ms,
            txn_last_update_timestamp_ms: value.transaction_last_update_timestamp_ms,
            pending: None,
            has_failed_epoch_fence: false,
        })
    }

    /// Whether a transition is being written (Kafka's `pendingTransitionInProgress`).
    pub(crate) fn pending_transition_in_progress(&self) -> bool {
        self.pending.is_some()
    }

    #[expect(clippy::too_many_arguments, reason = "Kafka's prepareTransitionTo, field by field")]
    fn prepare(
        &mut self,
        state: TransactionState,
        producer_id: i64,
        producer_epoch: i16,
        last_producer_epoch: i16,
        txn_timeout_ms: i32,
        partitions: BTreeSet<TopicPartition>,
        txn_start_timestamp_ms: i64,
        now_ms: i64,
    ) -> Result<TxnTransit, IllegalTransition> {
        let illegal = |detail: String| IllegalTransition {
            transactional_id: self.transactional_id.clone(),
            from: self.state.name(),
            to: state.name(),
            detail,
        };
        if let Some(pending) = self.pending {
            return Err(illegal(format!(" while {} is pending", pending.name())));
        }
        if producer_id < 0 {
            return Err(illegal(format!(" with producer id {producer_id}")));
        }
        if state != TransactionState::Dead && producer_epoch < 0 {
            return Err(illegal(format!(" with producer epoch {producer_epoch}")));
        }
        if !valid_previous(state).contains(&self.state) {
            return Err(illegal(String::new()));
        }
        self.pending = Some(state);
        Ok(TxnTransit {
            producer_id,
            previous_producer_id: self.producer_id,
            producer_epoch,
            last_producer_epoch,
            txn_timeout_ms,
            state,
            partitions,
            txn_start_timestamp_ms,
            txn_last_update_timestamp_ms: now_ms,
        })
    }

    /// Kafka's `prepareIncrementProducerEpoch`: Empty at the next epoch; with an expected epoch
    /// (KIP-360), a retry of a bump that succeeded returns the same epoch, and any other epoch is
    /// fenced (`Ok(None)`: answer PRODUCER_FENCED).
    pub(crate) fn prepare_increment_producer_epoch(
        &mut self,
        txn_timeout_ms: i32,
        expected_epoch: Option<i16>,
        now_ms: i64,
    ) -> Result<Option<TxnTransit>, IllegalTransition> {
        let bumped = self.producer_epoch.saturating_add(1);
        let (epoch, last) = match expected_epoch {
            None => (bumped, NO_PRODUCER_EPOCH),
            Some(expected)
                if self.producer_epoch == NO_PRODUCER_EPOCH || expected == self.producer_epoch =>
            {
                (bumped, self.producer_epoch)
            }
            Some(expected) if expected == self.last_producer_epoch => {
                (self.producer_epoch, self.last_producer_epoch)
            }
            Some(_) => return Ok(None),
        };
        self.prepare(
            TransactionState::Empty,
            self.producer_id,
            epoch,
            last,
            txn_timeout_ms,
            BTreeSet::new(),
            -1,
            now_ms,
        )
        .map(Some)
    }

    /// Kafka's `prepareProducerIdRotation`: a new producer id at epoch 0 once the epochs are spent.
    pub(crate) fn prepare_producer_id_rotation(
        &mut self,
        producer_id: i64,
        txn_timeout_ms: i32,
        now_ms: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransit, IllegalTransition> {
        let last = if record_last_epoch { self.producer_epoch } else { NO_PRODUCER_EPOCH };
        self.prepare(
            TransactionState::Empty,
            producer_id,
            0,
            last,
            txn_timeout_ms,
            BTreeSet::new(),
            -1,
            now_ms,
        )
    }

    /// Kafka's `prepareAddPartitions`: Ongoing with the partitions added; a new transaction's
    /// start time is now.
    pub(crate) fn prepare_add_partitions(
        &mut self,
        added: &BTreeSet<TopicPartition>,
        now_ms: i64,
    ) -> Result<TxnTransit, IllegalTransition> {
        let start = match self.state {
            TransactionState::Empty
            | TransactionState::CompleteAbort
            | TransactionState::CompleteCommit => now_ms,
            _ => self.txn_start_timestamp_ms,
        };
        let partitions = self.partitions.union(added).cloned().collect();
        self.prepare(
            TransactionState::Ongoing,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            partitions,
            start,
            now_ms,
        )
    }

    /// Kafka's `prepareAbortOrCommit` (transaction version 0/1: no epoch bump).
    pub(crate) fn prepare_abort_or_commit(
        &mut self,
        state: TransactionState,
        now_ms: i64,
    ) -> Result<TxnTransit, IllegalTransition> {
        self.prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.partitions.clone(),
            self.txn_start_timestamp_ms,
            now_ms,
        )
    }

    /// Kafka's `prepareComplete`: CompleteCommit or CompleteAbort, with no partitions left.
    pub(crate) fn prepare_complete(
        &mut self,
        now_ms: i64,
    ) -> Result<TxnTransit, IllegalTransition> {
        let state = if self.state == TransactionState::PrepareCommit {
            TransactionState::CompleteCommit
        } else {
            TransactionState::CompleteAbort
        };
        self.has_failed_epoch_fence = false;
        self.prepare(
            state,
            self.producer_id,
            self.producer_epoch,
            self.producer_epoch,
            self.txn_timeout_ms,
            BTreeSet::new(),
            self.txn_start_timestamp_ms,
            now_ms,
        )
    }

    /// Kafka's `prepareDead`: an expired id, written as a tombstone.
    pub(crate) fn prepare_dead(&mut self) -> Result<TxnTransit, IllegalTransition> {
        self.prepare(
            TransactionState::Dead,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            BTreeSet::new(),
            self.txn_start_timestamp_ms,
            self.txn_last_update_timestamp_ms,
        )
    }

    /// The transit is durable: apply it (Kafka's `completeTransitionTo`).
    pub(crate) fn complete(&mut self, transit: &TxnTransit) {
        self.pending = None;
        self.producer_id = transit.producer_id;
        self.previous_producer_id = transit.previous_producer_id;
        self.producer_epoch = transit.producer_epoch;
        self.last_producer_epoch = transit.last_producer_epoch;
        self.txn_timeout_ms = transit.txn_timeout_ms;
        self.state = transit.state;
        self.partitions.clone_from(&transit.partitions);
        self.txn_start_timestamp_ms = transit.txn_start_timestamp_ms;
        self.txn_last_update_timestamp_ms = transit.txn_last_update_timestamp_ms;
    }

    /// The transit's write failed: forget it (Kafka resets `pendingState`).
    pub(crate) fn abort_pending(&mut self) {
        self.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TransactionState::{CompleteCommit, Empty, Ongoing, PrepareCommit};

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition { topic: topic.to_owned(), partition }
    }

    fn started() -> TransactionMetadata {
        let mut meta = TransactionMetadata::new("t", 7, 60_000, 0);
        let transit = meta.prepare_increment_producer_epoch(60_000, None, 1).unwrap().unwrap();
        meta.complete(&transit);
        meta
    }

    #[test]
    fn a_new_id_starts_at_epoch_zero_and_empty() {
        let meta = started();
        assert_eq!((meta.state, meta.producer_epoch, meta.last_producer_epoch), (Empty, 0, -1));
    }

    #[test]
    fn add_commit_complete_runs_through_kafkas_states() {
        let mut meta = started();
        let added = meta.prepare_add_partitions(&BTreeSet::from([tp("a", 0)]), 10).unwrap();
        assert_eq!(added.txn_start_timestamp_ms, 10);
        meta.complete(&added);
        let more = meta.prepare_add_partitions(&BTreeSet::from([tp("a", 1)]), 20).unwrap();
        assert_eq!(more.txn_start_timestamp_ms, 10, "the start time stays that of the transaction");
        meta.complete(&more);
        assert_eq!(meta.partitions.len(), 2);
        let prepare = meta.prepare_abort_or_commit(PrepareCommit, 30).unwrap();
        meta.complete(&prepare);
        let complete = meta.prepare_complete(40).unwrap();
        assert_eq!(complete.state, CompleteCommit);
        assert!(complete.partitions.is_empty());
        meta.complete(&complete);
        assert_eq!(meta.last_producer_epoch, 0);
    }

    #[test]
    fn a_second_transition_while_one_is_pending_is_illegal() {
        let mut meta = started();
        let _pending = meta.prepare_add_partitions(&BTreeSet::from([tp("a", 0)]), 10).unwrap();
        let error = meta.prepare_add_partitions(&BTreeSet::from([tp("a", 1)]), 11).unwrap_err();
        assert!(error.to_string().contains("while Ongoing is pending"), "{error}");
        meta.abort_pending();
        assert!(meta.prepare_add_partitions(&BTreeSet::from([tp("a", 1)]), 12).is_ok());
    }

    #[test]
    fn commit_from_empty_is_illegal() {
        let mut meta = started();
        let error = meta.prepare_abort_or_commit(PrepareCommit, 5).unwrap_err();
        assert_eq!((error.from, error.to), ("Empty", "PrepareCommit"));
    }

    #[test]
    fn kip_360_retries_of_a_bump_get_the_same_epoch_and_others_are_fenced() {
        let mut meta = started();
        // The producer at epoch 0 asks for a bump: epoch 1, last 0.
        let bump = meta.prepare_increment_producer_epoch(60_000, Some(0), 5).unwrap().unwrap();
        assert_eq!((bump.producer_epoch, bump.last_producer_epoch), (1, 0));
        meta.complete(&bump);
        // Its retry (it never saw the answer) gets epoch 1 again.
        let retry = meta.prepare_increment_producer_epoch(60_000, Some(0), 6).unwrap().unwrap();
        assert_eq!(retry.producer_epoch, 1);
        meta.abort_pending();
        // A zombie at an older epoch is fenced.
        assert_eq!(meta.prepare_increment_producer_epoch(60_000, Some(-5), 7).unwrap(), None);
    }

    #[test]
    fn the_log_value_round_trips_and_empty_writes_null_partitions() {
        let mut meta = started();
        let transit = meta
            .prepare_add_partitions(&BTreeSet::from([tp("a", 1), tp("a", 0), tp("b", 3)]), 9)
            .unwrap();
        let value = transit.to_log_value();
        let topics = value.transaction_partitions.clone().unwrap();
        assert_eq!(topics.len(), 2);
        assert_eq!(topics[0].partition_ids, vec![0, 1]);
        let bytes = seglog_format::schema::transaction::encode_value(&value).unwrap();
        let back = seglog_format::schema::transaction::decode_value(&bytes).unwrap();
        let read = TransactionMetadata::from_log_value("t", &back).unwrap();
        assert_eq!(read.state, Ongoing);
        assert_eq!(read.partitions, transit.partitions);
        meta.abort_pending();
        let empty = meta.prepare_increment_producer_epoch(1000, None, 3).unwrap().unwrap();
        assert_eq!(empty.to_log_value().transaction_partitions, None);
    }

    #[test]
    fn epochs_near_the_top_are_exhausted() {
        assert!(!is_epoch_exhausted(i16::MAX - 2));
        assert!(is_epoch_exhausted(i16::MAX - 1));
        assert!(is_epoch_exhausted(i16::MAX));
    }
}
