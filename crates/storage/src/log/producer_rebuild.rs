//! Rebuilding idempotent producers' state at open and after a truncation (Kafka's
//! `UnifiedLog.rebuildProducerState` and `loadProducersFromRecords`): the newest valid
//! `.snapshot`, then the batch headers after it.

use seglog_format::increment_sequence;

use super::local_log::LocalLog;
use super::producer_state::{BatchMetadata, ProducerStateManager};
use crate::error::Result;
use crate::segment::{EntryHeader, LogSegment};

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
pub(super) fn rebuild_producer_state(
    producers: &mut ProducerStateManager,
    local: &LocalLog,
    log_start_offset: i64,
    last_offset: i64,
    reload_from_clean_shutdown: bool,
) -> Result<()> {
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
                replay_producers(producers, active, start_offset, last_offset)?;
            }
            producers.update_map_end_offset(offset);
            producers.take_snapshot(true)?;
        }
        return Ok(());
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
            replay_producers(producers, segment, start_offset, last_offset)?;
        }
    }
    producers.update_map_end_offset(last_offset);
    producers.take_snapshot(true)?;
    Ok(())
}

/// Replays the idempotent batches of `segment` holding offsets in `[start_offset, last_offset)`
/// into `producers`, from their headers (Kafka's `loadProducersFromRecords`, as a follower
/// would: no checks).
fn replay_producers(
    producers: &mut ProducerStateManager,
    segment: &LogSegment,
    start_offset: i64,
    last_offset: i64,
) -> Result<()> {
    segment.for_each_batch_header(|header: &EntryHeader| {
        if header.last_offset < start_offset || header.base_offset >= last_offset {
            return;
        }
        if header.magic == 2 && header.producer_id >= 0 && header.base_sequence >= 0 {
            let delta = i32::try_from(header.last_offset - header.base_offset).unwrap_or(0);
            producers.update(
                header.producer_id,
                header.producer_epoch,
                BatchMetadata {
                    first_seq: header.base_sequence,
                    last_seq: increment_sequence(header.base_sequence, delta),
                    first_offset: header.base_offset,
                    last_offset: header.last_offset,
                    timestamp: header.max_timestamp,
                },
            );
        }
    })
}
