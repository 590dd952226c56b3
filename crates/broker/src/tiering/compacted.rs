//! Compacted topics in the bucket, which KIP-405 does not allow: when the log cleaner has
//! rewritten segments the bucket already holds, the cleaned segment is uploaded anew and one
//! conditional update of the manifest swaps it for the entries it covers (`Change::Replace`),
//! so that a reader sees the old run or the new one, never a gap or both. The replaced
//! objects go after `file.delete.delay.ms`, as Kafka's `.deleted` files do locally.

use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog_remote::{Change, SegmentEntry, delete_segment_objects};
use seglog_storage::log::partition_log::{ClosedSegment, PartitionLog};

use super::round::{on_log, upload_one};
use super::{PartitionTier, TierError, TierTask, Tiering};
use crate::Broker;

/// The most cleaned segments one round re-uploads.
const REUPLOADS_PER_ROUND_MAX: usize = 16;

/// The run of `entries` that `segment`'s re-upload replaces: the entries covering exactly its
/// offsets, or, for a segment that starts in the remote log and ends past it (the cleaner
/// merged uploaded segments with newer ones), the entries from its base to the end. `None`
/// when it is as uploaded (one entry of the same size) or its bounds meet no entry's.
pub(crate) fn run_to_replace<'a>(
    entries: &'a [SegmentEntry],
    segment: &ClosedSegment,
) -> Option<&'a [SegmentEntry]> {
    let first = entries.iter().position(|entry| entry.base_offset == segment.base_offset)?;
    let remote_end = entries.last()?.last_offset + 1;
    let run = if segment.end_offset > remote_end {
        &entries[first..]
    } else {
        let len = entries[first..]
            .iter()
            .position(|entry| entry.last_offset == segment.end_offset - 1)?;
        &entries[first..=first + len]
    };
    let unchanged = run.len() == 1 && run[0].log_bytes == u64::from(segment.size_bytes);
    (!unchanged).then_some(run)
}

/// Re-uploads the cleaned segments of a compacted topic that the bucket holds as they were
/// before cleaning.
pub(super) async fn reupload_cleaned(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tier: &PartitionTier,
    task: &mut TierTask,
    log: &Arc<PartitionLog>,
) -> Result<(), TierError> {
    let Some(writer) = task.writer.as_mut() else { return Ok(()) };
    let compact = on_log(log, move |state| Ok(state.config()?.is_compact())).await?;
    if !compact {
        return Ok(());
    }
    let remote_start = writer.manifest().log_start_offset;
    let remote_end = writer.manifest().end_offset();
    let closed = on_log(log, move |state| Ok(state.closed_segments_from(remote_start)?)).await?;
    let mut reuploaded = 0;
    for segment in closed.into_iter().filter(|segment| segment.base_offset < remote_end) {
        if reuploaded == REUPLOADS_PER_ROUND_MAX {
            break;
        }
        let Some(run) = run_to_replace(&writer.manifest().segments, &segment) else { continue };
        let replaced: Vec<_> = run.iter().map(|entry| entry.id).collect();
        tiering.throttle.acquire(u64::from(segment.size_bytes)).await;
        let entry = upload_one(broker, tiering, tier, log, segment).await?;
        let last_offset = entry.last_offset;
        let removed = writer.commit(&Change::Replace { replaced, with: vec![entry] }).await?;
        tier.publish(writer.manifest());
        on_log(log, move |state| Ok(state.update_highest_offset_in_remote_storage(last_offset)?))
            .await?;
        let now = Instant::now();
        task.replaced.extend(removed.into_iter().map(|entry| (now, entry)));
        ::metrics::counter!("seglog_remote_reuploaded_segments_total").increment(1);
        reuploaded += 1;
    }
    Ok(())
}

/// Deletes the objects of replaced entries once `file.delete.delay.ms` has passed.
pub(super) async fn delete_replaced(
    tiering: &Tiering,
    tier: &PartitionTier,
    task: &mut TierTask,
    log: &Arc<PartitionLog>,
) -> Result<(), TierError> {
    if task.replaced.is_empty() {
        return Ok(());
    }
    let delay_ms = on_log(log, move |state| Ok(state.config()?.file_delete_delay_ms)).await?;
    let delay = Duration::from_millis(u64::try_from(delay_ms).unwrap_or(0));
    while let Some((replaced_at, entry)) = task.replaced.first() {
        if replaced_at.elapsed() < delay {
            break;
        }
        delete_segment_objects(tiering.store.as_ref(), &tier.layout, entry).await?;
        task.replaced.remove(0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use seglog_remote::{ObjectKind, SegmentEntry, SegmentId};
    use seglog_storage::log::partition_log::ClosedSegment;

    use super::run_to_replace;

    fn entry(id: u128, base_offset: i64, last_offset: i64, log_bytes: u64) -> SegmentEntry {
        SegmentEntry {
            id: SegmentId(id),
            base_offset,
            last_offset,
            max_timestamp_ms: 0,
            log_bytes,
            log_crc32c: 0,
            objects: vec![ObjectKind::Log],
        }
    }

    fn segment(base_offset: i64, end_offset: i64, size_bytes: u32) -> ClosedSegment {
        ClosedSegment { base_offset, end_offset, size_bytes, largest_timestamp_ms: 0 }
    }

    #[test]
    fn a_cleaned_segment_replaces_the_run_it_covers_and_an_unchanged_one_nothing() {
        let entries = [entry(1, 0, 9, 500), entry(2, 10, 19, 500), entry(3, 20, 29, 500)];
        assert_eq!(run_to_replace(&entries, &segment(10, 20, 500)), None, "as uploaded");
        let shrunk = run_to_replace(&entries, &segment(10, 20, 300)).expect("cleaned");
        assert_eq!(shrunk.iter().map(|e| e.id.0).collect::<Vec<_>>(), [2]);
        let merged = run_to_replace(&entries, &segment(0, 30, 700)).expect("groups merged");
        assert_eq!(merged.iter().map(|e| e.id.0).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(run_to_replace(&entries, &segment(5, 20, 100)), None, "no exact cover");
        assert_eq!(run_to_replace(&entries, &segment(0, 15, 100)), None, "no exact cover");
        let straddling = run_to_replace(&entries, &segment(20, 45, 900)).expect("past the end");
        assert_eq!(straddling.iter().map(|e| e.id.0).collect::<Vec<_>>(), [3]);
        let merged_tail = run_to_replace(&entries, &segment(10, 45, 900)).expect("past the end");
        assert_eq!(merged_tail.iter().map(|e| e.id.0).collect::<Vec<_>>(), [2, 3]);
    }
}
