//! Rebuilding producers' state at open and after a truncation (Kafka's
//! `UnifiedLog.rebuildProducerState` and `loadProducersFromRecords`): the newest valid
//! `.snapshot`, then the batches after it: data batch headers (their sequences, and the
//! transactions transactional ones open) and the COMMIT and ABORT markers of control batches
//! (read whole, one record each), which complete the transactions. The aborted transactions
//! completed by the replay are handed back, so that the recovery of a segment can refill its
//! `.txnindex` (Kafka's `LogSegment.recover` calling `updateTxnIndex`).

use seglog_format::{
    AbortedTxn, Batch, ControlRecordType, DecodeLimits, EndTransactionMarker, increment_sequence,
};

use std::path::Path;
use std::sync::Arc;

use super::local_log::LocalLog;
use super::producer_state::{BatchMetadata, ProducerStateManager, TxnMarker};
use crate::error::{Error, Result};
use crate::io::Fs;
use crate::segment::{EntryHeader, LogSegment};

/// Attributes bit 4: the batch is part of a transaction.
const TRANSACTIONAL_FLAG: i16 = 0x10;
/// Attributes bit 5: the batch holds control records.
const CONTROL_FLAG: i16 = 0x20;

/// Rebuilds the producer state up to `last_offset` from the snapshots and the log (Kafka's
/// `UnifiedLog.rebuildProducerState`), at open and after a truncation: the newest snapshot at or
/// below `last_offset` (snapshots above it, or at or below the log start, are deleted), then the
/// batch headers after it. Snapshots are taken at the last two segments' base offsets when the
/// replay passes them, and at `last_offset`.
///
/// One deliberate difference: after a clean shutdown with no snapshot at all, Kafka assumes an
/// upgrade from a broker without idempotence and starts empty. seglog wrote no snapshots before
/// it kept producer state, so it replays the active segment instead (what it did then), and
/// takes Kafka's snapshots.
///
/// Returns the aborted transactions whose ABORT marker the replay passed, each with the last
/// stable offset Kafka's `lastStableOffset(completedTxn)` gave it when it was appended.
pub(super) fn rebuild_producer_state(
    producers: &mut ProducerStateManager,
    local: &LocalLog,
    log_start_offset: i64,
    last_offset: i64,
    reload_from_clean_shutdown: bool,
) -> Result<Vec<AbortedTxn>> {
    let mut aborted = Vec::new();
    let segments = local.segments();
    let mut offsets_to_snapshot = Vec::new();
    if let Some(active) = segments.active_segment() {
        let active_base = active.base_offset();
        if let Some(lower) = segments.lower_segment(active_base) {
            offsets_to_snapshot.push(lower.base_offset());
        }
        offsets_to_snapshot.push(active_base);
    }
    offsets_to_snapshot.push(last_offset);
    if reload_from_clean_shutdown && producers.latest_snapshot_offset().is_none() {
        for &offset in &offsets_to_snapshot {
            if offset == last_offset
                && let Some(active) = segments.active_segment()
            {
                let start_offset = active.base_offset().max(log_start_offset);
                replay_producers(producers, active, start_offset, last_offset, &mut aborted)?;
            }
            producers.update_map_end_offset(offset);
            producers.take_snapshot(true)?;
        }
        return Ok(aborted);
    }
    // Without producers and with nothing to cut, a truncation cannot bring any back.
    let is_empty_before_truncation =
        producers.is_empty() && producers.map_end_offset() >= last_offset;
    producers.truncate_and_reload(log_start_offset, last_offset)?;
    if last_offset > producers.map_end_offset() && !is_empty_before_truncation {
        for segment in segments.values(producers.map_end_offset(), last_offset)? {
            let start_offset =
                segment.base_offset().max(producers.map_end_offset()).max(log_start_offset);
            producers.update_map_end_offset(start_offset);
            if offsets_to_snapshot.contains(&segment.base_offset()) {
                producers.take_snapshot(true)?;
            }
            replay_producers(producers, segment, start_offset, last_offset, &mut aborted)?;
        }
    }
    producers.update_map_end_offset(last_offset);
    producers.take_snapshot(true)?;
    Ok(aborted)
}

/// The aborted transactions whose ABORT marker lies in `[from_offset, last_offset)`, found by a
/// replay from the newest snapshot at or below `from_offset` (or the log start) in a manager of
/// its own: the snapshots stay as they are, and none is taken. `PartitionLog::open` refills the
/// `.txnindex` of recovered segments with them.
pub(super) fn replay_aborted_txns(
    fs: Arc<dyn Fs>,
    dir: &Path,
    local: &LocalLog,
    log_start_offset: i64,
    from_offset: i64,
    last_offset: i64,
) -> Result<Vec<AbortedTxn>> {
    let mut producers = ProducerStateManager::open(fs, dir)?;
    producers.load_at_or_below(log_start_offset, from_offset)?;
    let mut aborted = Vec::new();
    if last_offset > producers.map_end_offset() {
        for segment in local.segments().values(producers.map_end_offset(), last_offset)? {
            let start_offset =
                segment.base_offset().max(producers.map_end_offset()).max(log_start_offset);
            replay_producers(&mut producers, segment, start_offset, last_offset, &mut aborted)?;
        }
    }
    aborted.retain(|txn| txn.last_offset >= from_offset);
    Ok(aborted)
}

/// Replays the producer batches of `segment` holding offsets in `[start_offset, last_offset)`
/// into `producers` (Kafka's `loadProducersFromRecords`, as a follower would: no checks): data
/// batches from their headers, markers from their one control record. Aborted transactions
/// completed on the way are pushed to `aborted`.
fn replay_producers(
    producers: &mut ProducerStateManager,
    segment: &LogSegment,
    start_offset: i64,
    last_offset: i64,
    aborted: &mut Vec<AbortedTxn>,
) -> Result<()> {
    let mut headers = Vec::new();
    segment.for_each_batch_header(|header: &EntryHeader| {
        if header.last_offset >= start_offset
            && header.base_offset < last_offset
            && header.magic == 2
            && header.producer_id >= 0
        {
            headers.push(*header);
        }
    })?;
    for header in &headers {
        if header.attributes & CONTROL_FLAG != 0 {
            let Some(marker) = marker_of(segment, header)? else { continue };
            if let Some(completed) = producers.update_end_txn_marker(&marker) {
                if completed.is_aborted {
                    aborted.push(AbortedTxn {
                        producer_id: completed.producer_id,
                        first_offset: completed.first_offset,
                        last_offset: completed.last_offset,
                        last_stable_offset: producers.last_stable_offset_of(&completed),
                    });
                }
                producers.complete_txn(&completed);
            }
        } else if header.base_sequence >= 0 {
            let delta = i32::try_from(header.last_offset - header.base_offset).unwrap_or(0);
            producers.update_data(
                header.producer_id,
                header.producer_epoch,
                BatchMetadata {
                    first_seq: header.base_sequence,
                    last_seq: increment_sequence(header.base_sequence, delta),
                    first_offset: header.base_offset,
                    last_offset: header.last_offset,
                    timestamp: header.max_timestamp,
                },
                header.attributes & TRANSACTIONAL_FLAG != 0,
            );
        }
    }
    Ok(())
}

/// The COMMIT or ABORT marker of the control batch `header` describes, or `None` for an empty
/// control batch (its marker cleaned away) or another control type, as Kafka's
/// `ProducerAppendInfo.append` skips them.
fn marker_of(segment: &LogSegment, header: &EntryHeader) -> Result<Option<TxnMarker>> {
    let bytes = segment.read_entry(header)?;
    let corrupt = |reason: String| Error::CorruptLog {
        path: segment.log_path().to_owned(),
        position: u64::from(header.position),
        reason,
    };
    let batch = Batch::new(&bytes).map_err(|e| corrupt(e.to_string()))?;
    let records = batch.records(DecodeLimits::default()).map_err(|e| corrupt(e.to_string()))?;
    let Some(record) = records.iter().next() else { return Ok(None) };
    let record = record.map_err(|e| corrupt(e.to_string()))?;
    let is_abort = match ControlRecordType::parse_key(record.key.unwrap_or_default()) {
        Ok(ControlRecordType::Abort) => true,
        Ok(ControlRecordType::Commit) => false,
        _ => return Ok(None),
    };
    let marker = EndTransactionMarker::parse(record.value.unwrap_or_default())
        .map_err(|e| corrupt(format!("transaction marker: {e}")))?;
    Ok(Some(TxnMarker {
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        coordinator_epoch: marker.coordinator_epoch,
        offset: header.base_offset,
        timestamp: record.timestamp,
        is_abort,
    }))
}
