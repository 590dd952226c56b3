//! Transactions in the partition log (Kafka's `UnifiedLog` transaction paths): completing a
//! transaction into the `.txnindex`, the last stable offset and its position, the aborted
//! transactions of a read_committed read, the producers as DescribeProducers sees them, and the
//! refill of recovered segments' `.txnindex` at open.

use std::path::Path;
use std::sync::Arc;

use seglog_format::AbortedTxn;

use super::{AbortedTransaction, ActiveProducer, AppendInfo, PartitionLog, State, offset_metadata};
use crate::error::Result;
use crate::io::Fs;
use crate::log::load::LoadedLog;
use crate::log::local_log::LocalLog;
use crate::log::producer_rebuild::replay_aborted_txns;
use crate::log::producer_state::{BatchMetadata, CompletedTxn};
use crate::log::validator::AppendOrigin;
use crate::log::validator::ValidatedAppend;
use crate::segment::{FetchData, LogOffsetMetadata, LogSegment};

impl PartitionLog {
    /// [`append_as_sole_leader`](Self::append_as_sole_leader) of a transactional write verified
    /// under `guard` ([`start_verification`](Self::start_verification)), refused as
    /// INVALID_TXN_STATE if a marker ended the transaction since.
    pub fn append_as_sole_leader_verified(
        &self,
        records: &[u8],
        origin: AppendOrigin,
        now_ms: i64,
        guard: Option<u64>,
    ) -> Result<AppendInfo> {
        self.append_at_latest_epoch(records, (origin, guard), now_ms, true)
    }

    /// Starts the verification of a transactional write of `producer_id` with a remote
    /// coordinator (KIP-890): the guard to append it with
    /// ([`append_as_sole_leader_verified`](Self::append_as_sole_leader_verified)).
    pub fn start_verification(&self, producer_id: i64) -> Result<u64> {
        Ok(self.write_state()?.producers.start_verification(producer_id))
    }

    /// The last stable offset (Kafka's `lastStableOffset`): the first offset of the earliest
    /// transaction not yet decided (or decided above the high watermark), bounded by the high
    /// watermark; the high watermark when none is.
    pub fn last_stable_offset(&self) -> Result<i64> {
        Ok(last_stable_offset(&*self.read_state()?))
    }

    /// Every producer the partition tracks, by producer id (Kafka's `activeProducers`, as
    /// DescribeProducers reads it).
    pub fn active_producers(&self) -> Result<Vec<ActiveProducer>> {
        Ok(self.read_state()?.producers.active_producers())
    }

    /// Whether `producer_id` has an open transaction in this partition (Kafka's
    /// `ProducerStateEntry.currentTxnFirstOffset` is set).
    pub fn has_ongoing_transaction(&self, producer_id: i64) -> Result<bool> {
        Ok(self.read_state()?.producers.current_txn_first_offset(producer_id).is_some())
    }

    /// The open transactions, as (first offset, producer id), by first offset (Kafka's
    /// `ongoingTxns`).
    pub fn ongoing_transactions(&self) -> Result<Vec<(i64, i64)>> {
        Ok(self.read_state()?.producers.ongoing_txns())
    }
}

/// Refills the `.txnindex` of the segments the load recovered (their recovery emptied it): a
/// replay from a snapshot at or below the first of them (Kafka's `recoverSegment` rebuilds the
/// producer state to each recovered segment's base and lets `LogSegment.recover` index the
/// aborted transactions it meets).
pub(super) fn restore_recovered_txn_indexes(
    fs: Arc<dyn Fs>,
    dir: &Path,
    loaded: &mut LoadedLog,
    log_end_offset: i64,
) -> Result<()> {
    let Some(&first_recovered) = loaded.report.recovered_base_offsets.first() else {
        return Ok(());
    };
    let aborted = replay_aborted_txns(
        fs,
        dir,
        &loaded.local,
        loaded.log_start_offset,
        first_recovered,
        log_end_offset,
    )?;
    for txn in aborted {
        let in_recovered = loaded
            .local
            .segments()
            .floor_segment(txn.last_offset)
            .is_some_and(|s| loaded.report.recovered_base_offsets.contains(&s.base_offset()));
        if in_recovered && loaded.local.restore_aborted_txn(txn)? {
            loaded.report.aborted_txns_restored += 1;
        }
    }
    Ok(())
}

/// Updates the producers with an appended batch's data batches and markers (Kafka's
/// `updateProducers`).
pub(super) fn update_producers(state: &mut State, validated: &ValidatedAppend<'_>) -> Result<()> {
    // Kafka updates producers for leader and follower appends alike (the follower's without
    // checks), from the fields the validator took, batch by batch in offset order: data batches
    // open transactions, markers complete them.
    let mut data = validated.producer_batches.iter().peekable();
    let mut markers = validated.txn_markers.iter().peekable();
    loop {
        let take_data = match (data.peek(), markers.peek()) {
            (Some(batch), Some(marker)) => batch.first_offset < marker.offset,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_data {
            let Some(batch) = data.next() else { break };
            state.producers.update_data(
                batch.producer_id,
                batch.producer_epoch,
                BatchMetadata {
                    first_seq: batch.first_seq,
                    last_seq: batch.last_seq,
                    first_offset: batch.first_offset,
                    last_offset: batch.last_offset,
                    timestamp: batch.max_timestamp,
                },
                batch.is_transactional,
            );
        } else {
            let Some(marker) = markers.next() else { break };
            if let Some(completed) = state.producers.update_end_txn_marker(marker) {
                complete_txn(state, &completed)?;
            }
        }
    }
    Ok(())
}

/// Completes a transaction whose marker was just appended (Kafka's `UnifiedLog.append`:
/// `lastStableOffset(completedTxn)`, `LogSegment.updateTxnIndex`, then `completeTxn`): an
/// aborted one is recorded in the active segment's `.txnindex`, the segment holding its marker.
pub(super) fn complete_txn(state: &mut State, completed: &CompletedTxn) -> Result<()> {
    if completed.is_aborted {
        let last_stable_offset = state.producers.last_stable_offset_of(completed);
        state.local.append_aborted_txn(AbortedTxn {
            producer_id: completed.producer_id,
            first_offset: completed.first_offset,
            last_offset: completed.last_offset,
            last_stable_offset,
        })?;
    }
    state.producers.complete_txn(completed);
    Ok(())
}

/// Sets the high watermark (Kafka's `updateHighWatermarkMetadata`): completed transactions whose
/// markers it passed become stable.
pub(super) fn set_high_watermark(state: &mut State, high_watermark: LogOffsetMetadata) {
    state.high_watermark = high_watermark;
    state.producers.on_high_watermark_updated(high_watermark.message_offset);
}

/// The last stable offset (Kafka's `lastStableOffset`): the first unstable offset (the earliest
/// transaction open, or completed above the high watermark), at least the log start offset (as
/// Kafka's `maybeIncrementFirstUnstableOffset` bounds it), and at most the high watermark.
pub(super) fn last_stable_offset(state: &State) -> i64 {
    let high_watermark = state.high_watermark.message_offset;
    state.producers.first_unstable_offset().map_or(high_watermark, |first_unstable| {
        first_unstable.max(state.log_start_offset).min(high_watermark)
    })
}

/// Where the last stable offset is (Kafka's `fetchLastStableOffsetMetadata`): the high
/// watermark's metadata, or the first unstable offset translated to its segment and position.
pub(super) fn last_stable_offset_metadata(state: &State) -> Result<LogOffsetMetadata> {
    let last_stable_offset = last_stable_offset(state);
    if last_stable_offset >= state.high_watermark.message_offset {
        return Ok(state.high_watermark);
    }
    offset_metadata(&state.local, last_stable_offset)
}

/// The aborted transactions a read_committed read from `start_offset` that returned `fetch`
/// must skip (Kafka's `LocalLog.addAbortedTransactions`): from the segment holding
/// `start_offset`, each segment's `.txnindex` entries overlapping
/// `[start_offset, upper bound)`, until one's last stable offset reaches the bound. The bound is
/// the offset after the last batch returned (Kafka takes the next indexed offset past the bytes
/// read, a coarser bound that lists more); with no whole batch header in the bytes, the next
/// segment's base offset or the log end.
pub(super) fn aborted_transactions(
    local: &LocalLog,
    start_offset: i64,
    fetch: &FetchData,
) -> Vec<AbortedTransaction> {
    if fetch.records.is_empty() {
        return Vec::new();
    }
    let segments = local.segments();
    // A read that began in the bucket goes on from the first local segment.
    let first = segments.floor_segment(start_offset).or_else(|| segments.first_segment());
    let Some(first) = first else { return Vec::new() };
    let upper_bound_offset = next_offset_after(&fetch.records).unwrap_or_else(|| {
        segments
            .higher_segment(first.base_offset())
            .map_or(local.log_end_offset(), LogSegment::base_offset)
    });
    aborted_transactions_below(local, start_offset, upper_bound_offset)
}

/// The aborted transactions that overlap `start_offset..upper_bound_offset`, from the
/// `.txnindex` of the segment holding `start_offset` and those after it.
pub(super) fn aborted_transactions_below(
    local: &LocalLog,
    start_offset: i64,
    upper_bound_offset: i64,
) -> Vec<AbortedTransaction> {
    let segments = local.segments();
    let Some(first) = segments.floor_segment(start_offset) else { return Vec::new() };
    let mut aborted = Vec::new();
    for segment in std::iter::once(first).chain(segments.higher_segments(first.base_offset())) {
        let found = segment.collect_aborted_txns(start_offset, upper_bound_offset);
        aborted.extend(found.aborted.iter().map(|txn| AbortedTransaction {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
        }));
        if found.is_complete {
            break;
        }
    }
    aborted
}

/// The offset after the last batch whose header `records` holds whole (the last batch may be
/// cut short by the byte limit), or `None` when none is.
fn next_offset_after(records: &[u8]) -> Option<i64> {
    const LOG_OVERHEAD_BYTES: usize = 12;
    const V2_LAST_OFFSET_DELTA_END: usize = 27;
    let mut position = 0usize;
    let mut next = None;
    while let Some(prefix) = records.get(position..position + LOG_OVERHEAD_BYTES) {
        let base_offset = i64::from_be_bytes(prefix[..8].try_into().ok()?);
        let size_bytes =
            usize::try_from(i32::from_be_bytes(prefix[8..12].try_into().ok()?)).ok()?;
        let last_offset = match records.get(position + 16) {
            Some(2) => {
                let delta = records.get(position + 23..position + V2_LAST_OFFSET_DELTA_END)?;
                base_offset + i64::from(i32::from_be_bytes(delta.try_into().ok()?))
            }
            Some(_) => base_offset,
            None => return next,
        };
        next = Some(last_offset + 1);
        position += LOG_OVERHEAD_BYTES + size_bytes;
    }
    next
}
