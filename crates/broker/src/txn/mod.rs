//! The transaction coordinator (Kafka's `TransactionCoordinator`, `TransactionStateManager` and
//! `TransactionMarkerChannelManager`). On a single node it coordinates every transactional id;
//! a cluster's broker coordinates the ids whose partition of `__transaction_state` it leads,
//! answers NOT_COORDINATOR for the others, and sends markers for partitions led elsewhere to
//! their leaders (WriteTxnMarkers).
//!
//! - `metadata.rs`: one transactional id's state machine (`TransactionMetadata`).
//! - `coordinator.rs`: the requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn,
//!   EndTxn, the verification of a transactional produce, DescribeTransactions,
//!   ListTransactions) and the timers (timed-out transactions, expired ids).
//! - `store.rs`: `__transaction_state`: the partition of an id, the topic's creation, the write
//!   of a transition and the replay at start.
//! - `markers.rs`: the COMMIT and ABORT markers, written through the one append path to every
//!   partition of a transaction (or, in a cluster, sent to the partition's leader), and the
//!   completion of the transaction after them.
//!
//! Ordering (what keeps a transaction whole, the holes Jepsen found in other brokers closed):
//! a transactional produce to a partition is appended only while the coordinator holds its
//! transaction Ongoing with that partition added (KIP-890 part 1, checked in-process under
//! the transaction's append gate); EndTxn takes the gate exclusively before it prepares, so every
//! append it let through is in the log before the PrepareCommit/PrepareAbort record, and every
//! later one is refused. Markers are written only after that record is durable; a restart
//! finds a prepared transaction and writes its markers again (markers are idempotent: a second
//! marker for a producer with no open transaction ends nothing).

mod coordinator;
mod markers;
mod metadata;
#[cfg(test)]
mod sim_tests;
mod store;

pub(crate) use coordinator::ProducerIdAndEpoch;
pub use coordinator::TransactionCoordinator;
pub(crate) use markers::{MarkerError, TxnEnd, append_marker};

/// The internal topic of transaction state.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The coordinator's settings, with Kafka's keys and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.state.log.num.partitions` (50).
    pub state_log_partitions: i32,
    /// `transaction.state.log.segment.bytes` (104857600).
    pub state_log_segment_bytes: u64,
    /// `transaction.max.timeout.ms` (900000): the longest timeout a producer may ask for.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms` (604800000): an idle id is forgotten after this.
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10000).
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms` (3600000).
    pub remove_expired_interval_ms: i64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            state_log_partitions: 50,
            state_log_segment_bytes: 104_857_600,
            max_timeout_ms: 900_000,
            id_expiration_ms: 604_800_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
        }
    }
}
