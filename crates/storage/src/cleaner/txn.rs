//! Transactions as the cleaner meets them (Kafka's `CleanedTransactionMetadata`): the records of
//! aborted transactions are dropped whatever their keys, and a transaction's marker is kept
//! until no batch of its transaction is left.
//!
//! seglog does not write transactions yet; this reads those of logs written by Kafka (their
//! `.txnindex` files), so that cleaning them never lets an aborted value replace a committed one.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use seglog_format::{AbortedTxn, Batch, ControlRecordType, DecodeLimits};

use crate::error::{Error, Result};

/// An aborted transaction met while walking the log, and whether any of its batches was seen.
#[derive(Debug, Clone, Copy)]
struct Ongoing {
    txn: AbortedTxn,
    seen_a_batch: bool,
}

/// The transactions open at the point of a walk over the log.
#[derive(Debug, Default)]
pub(crate) struct CleanedTransactionMetadata {
    /// Aborted transactions not reached yet, by first offset.
    pending: VecDeque<AbortedTxn>,
    ongoing_committed: BTreeSet<i64>,
    ongoing_aborted: BTreeMap<i64, Ongoing>,
    /// ABORT markers kept since the last take, for the cleaned segment's `.txnindex`.
    retained_aborted: Vec<AbortedTxn>,
}

impl CleanedTransactionMetadata {
    /// The metadata for a walk over a log whose aborted transactions are `aborted`.
    pub(crate) fn new(aborted: &[AbortedTxn]) -> Self {
        let mut pending: Vec<AbortedTxn> = aborted.to_vec();
        pending.sort_by_key(|txn| txn.first_offset);
        Self { pending: pending.into(), ..Self::default() }
    }

    fn consume_aborted_up_to(&mut self, offset: i64) {
        while self.pending.front().is_some_and(|txn| txn.first_offset <= offset) {
            if let Some(txn) = self.pending.pop_front() {
                self.ongoing_aborted
                    .entry(txn.producer_id)
                    .or_insert(Ongoing { txn, seen_a_batch: false });
            }
        }
    }

    /// A data batch: whether it belongs to an aborted transaction (Kafka's `onBatchRead`).
    pub(crate) fn on_batch_read(&mut self, batch: &Batch<'_>) -> bool {
        self.consume_aborted_up_to(batch.last_offset());
        if !batch.is_transactional() {
            return false;
        }
        if let Some(ongoing) = self.ongoing_aborted.get_mut(&batch.producer_id()) {
            ongoing.seen_a_batch = true;
            true
        } else {
            self.ongoing_committed.insert(batch.producer_id());
            false
        }
    }

    /// A control batch: whether its marker may go, because no batch of its transaction is left
    /// (Kafka's `onControlBatchRead`).
    pub(crate) fn on_control_batch_read(
        &mut self,
        batch: &Batch<'_>,
        limits: DecodeLimits,
    ) -> Result<bool> {
        self.consume_aborted_up_to(batch.last_offset());
        let records = batch.records(limits).map_err(|e| decode(&e))?;
        let Some(first) = records.iter().next() else {
            // An empty control batch was cleaned already.
            return Ok(true);
        };
        let first = first.map_err(|e| decode(&e))?;
        let Some(kind) = first.key.and_then(|key| ControlRecordType::parse_key(key).ok()) else {
            return Ok(false);
        };
        let producer_id = batch.producer_id();
        Ok(match kind {
            ControlRecordType::Abort => match self.ongoing_aborted.remove(&producer_id) {
                Some(ongoing) if ongoing.seen_a_batch => {
                    self.retained_aborted.push(ongoing.txn);
                    false
                }
                _ => true,
            },
            ControlRecordType::Commit => !self.ongoing_committed.remove(&producer_id),
            _ => false,
        })
    }

    /// The aborted transactions whose markers were kept since the last call.
    pub(crate) fn take_retained_aborted(&mut self) -> Vec<AbortedTxn> {
        std::mem::take(&mut self.retained_aborted)
    }
}

fn decode(source: &seglog_format::DecodeError) -> Error {
    Error::InvalidArgument(format!("undecodable control batch: {source}"))
}
