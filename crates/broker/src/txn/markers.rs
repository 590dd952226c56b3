//! The transaction markers (Kafka's `TransactionMarkerChannelManager` and `WriteTxnMarkers` on
//! one node): a COMMIT or ABORT control batch with the transaction's producer id and epoch and
//! the coordinator epoch, appended as the coordinator through the one append path with
//! acks=-1. A marker to a group's partition of `__consumer_offsets` also tells the group
//! coordinator to make the transaction's offsets visible, or drop them. A partition whose topic
//! is gone is skipped, as Kafka drops markers for partitions it no longer has.

use seglog_format::{ControlRecordType, end_transaction_marker_batch};
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;

use super::coordinator::TransactionCoordinator;
use crate::group::{GroupCoordinator, OFFSETS_TOPIC};
use crate::replica::{Acks, AppendError};

/// The coordinator epoch markers carry: the leader epoch of a `__transaction_state` partition,
/// which on one node never changes from 0.
pub(crate) const COORDINATOR_EPOCH: i32 = 0;

/// Why a marker was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MarkerError {
    #[error("cannot encode the marker: {0}")]
    Encode(#[from] seglog_format::DecodeError),
    #[error(transparent)]
    Append(#[from] AppendError),
}

impl TransactionCoordinator {
    /// Writes one marker (Kafka's `WriteTxnMarkers` for one partition).
    pub(super) fn write_marker(
        &self,
        groups: &GroupCoordinator,
        tp: &TopicPartition,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
        now_ms: i64,
    ) -> Result<(), MarkerError> {
        let marker = if commit { ControlRecordType::Commit } else { ControlRecordType::Abort };
        let batch = end_transaction_marker_batch(
            0,
            now_ms,
            0,
            producer_id,
            producer_epoch,
            marker,
            COORDINATOR_EPOCH,
        )?;
        match self.replicas.append(tp, &batch, AppendOrigin::Coordinator, Acks::All, now_ms) {
            Ok(_) => {}
            Err(AppendError::Storage(seglog_storage::Error::UnknownTopicOrPartition {
                ..
            })) => {
                tracing::info!(%tp, producer_id, "a transaction marker's partition is gone");
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        }
        if tp.topic == OFFSETS_TOPIC {
            groups.complete_transaction(tp.partition, producer_id, commit);
        }
        Ok(())
    }
}
