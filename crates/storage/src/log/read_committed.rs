//! What a read_committed consumer keeps of what it fetches (Kafka's consumer `CompletedFetch`
//! with its `abortedProducerIds`): the aborted transactions a read lists, by first offset, and
//! the producers whose aborted transaction the reader is inside. Storage's own tools (`seglog
//! consume --isolation read-committed`) and the tests that read as a consumer use it.

use std::collections::BTreeSet;

use seglog_format::Batch;

use super::partition_log::AbortedTransaction;

/// The aborted-transaction filter of one partition's read_committed reader.
#[derive(Debug, Default)]
pub struct AbortedFilter {
    /// (first offset, producer id) of the listed aborted transactions not reached yet.
    pending: BTreeSet<(i64, i64)>,
    /// Producers whose aborted transaction the reader is inside.
    aborted: BTreeSet<i64>,
}

impl AbortedFilter {
    /// Adds the aborted transactions a read listed (`LogReadInfo::aborted_transactions`).
    pub fn add(&mut self, listed: &[AbortedTransaction]) {
        self.pending.extend(listed.iter().map(|txn| (txn.first_offset, txn.producer_id)));
    }

    /// Whether the records of `batch`, the next batch in offset order, are skipped: a control
    /// batch always is (and an ABORT marker ends its producer's aborted transaction), a
    /// transactional batch of a producer inside an aborted transaction is.
    pub fn skips(&mut self, batch: &Batch<'_>) -> bool {
        while let Some(&(first_offset, producer_id)) = self.pending.first() {
            if first_offset > batch.last_offset() {
                break;
            }
            self.pending.pop_first();
            self.aborted.insert(producer_id);
        }
        if batch.is_control_batch() {
            self.aborted.remove(&batch.producer_id());
            return true;
        }
        batch.is_transactional() && self.aborted.contains(&batch.producer_id())
    }
}
