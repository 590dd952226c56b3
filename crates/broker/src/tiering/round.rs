//! One tiering round of one partition (Kafka's `RLMTask`: `RLMCopyTask` and
//! `RLMExpirationTask`): take the manifest, expire, upload, tell the log.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog_remote::{
    Change, Manifest, ManifestWriter, ObjectKind, RemoteError, SegmentEntry, delete_objects,
    delete_segment_objects, find_orphans, leader_epoch_slice, read_segment_files, upload_segment,
};
use seglog_storage::config::LogConfig;
use seglog_storage::log::partition_log::{ClosedSegment, PartitionLog, TopicPartition};

use super::{PartitionTier, TierError, TierTask, Tiering};
use crate::Broker;

/// The most segments one round uploads, so that one partition's backlog does not hold up the
/// others' rounds.
const UPLOADS_PER_ROUND_MAX: usize = 64;

/// Runs one round for `tp` unless it is fenced or waiting out a backoff; returns the bytes of
/// its local segments not in the bucket yet (the upload lag).
pub(super) async fn tier_partition(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tp: &TopicPartition,
) -> u64 {
    let Ok(log) = broker.manager.get_log(tp) else { return 0 };
    let tier = match tiering.partition(broker, tp) {
        Ok(tier) => tier,
        Err(error) => {
            tracing::warn!(partition = %tp, %error, "cannot tier partition");
            return 0;
        }
    };
    let mut task = tier.task.lock().await;
    let due = task.retry_at.is_none_or(|at| Instant::now() >= at);
    if !task.fenced && due {
        match round(broker, tiering, &tier, &mut task, &log).await {
            Ok(()) => {
                task.failures = 0;
                task.retry_at = None;
            }
            Err(TierError::Remote(error @ RemoteError::Fenced { .. })) => {
                tracing::error!(
                    partition = %tp,
                    %error,
                    "fenced: another broker took over tiering this partition; this broker stops tiering it"
                );
                ::metrics::counter!("seglog_remote_errors_total", "kind" => "fenced", "op" => "commit")
                    .increment(1);
                task.fenced = true;
                task.writer = None;
                tier.fenced.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Err(error) => {
                // A failed upload, commit or deletion may leave objects no manifest names.
                task.gc_pending = true;
                task.failures = task.failures.saturating_add(1);
                let backoff = backoff_ms(tiering, task.failures);
                task.retry_at = Some(Instant::now() + Duration::from_millis(backoff));
                tracing::warn!(
                    partition = %tp,
                    %error,
                    failures = task.failures,
                    retry_in_ms = backoff,
                    "tiering round failed; local data stays until it is uploaded"
                );
                ::metrics::counter!("seglog_remote_errors_total", "kind" => error.kind(), "op" => "round")
                    .increment(1);
            }
        }
    }
    drop(task);
    let lag = Arc::clone(&log);
    tokio::task::spawn_blocking(move || lag.bytes_not_in_remote_storage().unwrap_or(0))
        .await
        .unwrap_or(0)
}

/// `retry.backoff.ms` doubled per failure after the first, at most `retry.backoff.max.ms`.
fn backoff_ms(tiering: &Tiering, failures: u32) -> u64 {
    let doublings = failures.saturating_sub(1).min(32);
    tiering
        .config
        .retry_backoff_ms
        .saturating_mul(1u64 << doublings)
        .min(tiering.config.retry_backoff_max_ms)
}

pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TierError> + Send + 'static,
) -> Result<T, TierError> {
    tokio::task::spawn_blocking(work).await?
}

/// `work` on `log`, on a blocking thread (a log call may load the log or read a file).
pub(super) async fn on_log<T: Send + 'static>(
    log: &Arc<PartitionLog>,
    work: impl FnOnce(&PartitionLog) -> Result<T, TierError> + Send + 'static,
) -> Result<T, TierError> {
    let log = Arc::clone(log);
    blocking(move || work(&log)).await
}

async fn round(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tier: &PartitionTier,
    task: &mut TierTask,
    log: &Arc<PartitionLog>,
) -> Result<(), TierError> {
    let writer = match &mut task.writer {
        Some(writer) => writer,
        slot @ None => {
            let configs = broker.manager.topic_overrides(&log.topic_partition().topic);
            let store = Arc::clone(&tiering.store);
            let writer =
                ManifestWriter::acquire_with_configs(store, tier.layout.clone(), Some(configs))
                    .await?;
            tier.publish(writer.manifest());
            let now_ms = broker.manager.clock().now_ms();
            sync_log_with_manifest(log, writer.manifest(), now_ms).await?;
            task.gc_pending = true;
            slot.insert(writer)
        }
    };
    if task.gc_pending {
        let orphans =
            find_orphans(tiering.store.as_ref(), &tier.layout, writer.manifest(), &BTreeSet::new())
                .await?;
        delete_objects(tiering.store.as_ref(), &orphans).await?;
        if !orphans.is_empty() {
            tracing::info!(partition = %log.topic_partition(), orphans = orphans.len(), "deleted orphaned remote objects");
        }
        task.gc_pending = false;
    }
    expire(broker, tiering, tier, writer, log).await?;
    // Cleaned segments first: one that merged uploaded segments with newer ones extends the
    // remote log, after which the next upload follows on.
    super::compacted::reupload_cleaned(broker, tiering, tier, task, log).await?;
    super::compacted::delete_replaced(tiering, tier, task, log).await?;
    let Some(writer) = task.writer.as_mut() else { return Ok(()) };
    upload(broker, tiering, tier, writer, log).await
}

/// After taking the manifest: a log with an empty disk starts at the remote log's end, and the
/// log learns how far the bucket reaches and where the remote log starts.
pub(super) async fn sync_log_with_manifest(
    log: &Arc<PartitionLog>,
    manifest: &Manifest,
    now_ms: i64,
) -> Result<(), TierError> {
    if manifest.segments.is_empty() {
        return Ok(());
    }
    let (log, remote_start, remote_end) =
        (Arc::clone(log), manifest.log_start_offset, manifest.end_offset());
    blocking(move || {
        if log.start_at_remote_end(remote_start, remote_end, now_ms)? {
            tracing::info!(
                partition = %log.topic_partition(),
                log_start_offset = remote_start,
                local_log_start_offset = remote_end,
                "rebuilt an empty local log at the end of its remote log"
            );
        }
        log.update_highest_offset_in_remote_storage(remote_end - 1)?;
        if remote_start > log.log_start_offset()? && remote_start <= log.high_watermark()? {
            log.maybe_increment_log_start_offset(remote_start)?;
        }
        Ok(())
    })
    .await
}

/// Remote retention (Kafka's `RLMExpirationTask`): the new remote log start that DeleteRecords
/// (the log's start), `retention.ms` and `retention.bytes` (over the remote segments and the
/// local ones not uploaded yet) ask for, if it is above the manifest's.
pub(crate) fn remote_log_start_after_retention(
    manifest: &Manifest,
    log_start_offset: i64,
    config: &LogConfig,
    local_only_bytes: u64,
    now_ms: i64,
) -> Option<i64> {
    let mut start = manifest.log_start_offset.max(log_start_offset);
    if config.is_delete() {
        if config.retention_ms >= 0 {
            let expired = manifest
                .segments
                .iter()
                .take_while(|entry| {
                    now_ms.saturating_sub(entry.max_timestamp_ms) > config.retention_ms
                })
                .last();
            if let Some(entry) = expired {
                start = start.max(entry.last_offset + 1);
            }
        }
        if let Ok(retention_bytes) = u64::try_from(config.retention_bytes) {
            let total: u64 = manifest.segments.iter().map(|entry| entry.log_bytes).sum::<u64>()
                + local_only_bytes;
            let mut breached = total.saturating_sub(retention_bytes);
            for entry in &manifest.segments {
                if breached == 0 || breached < entry.log_bytes {
                    break;
                }
                breached -= entry.log_bytes;
                start = start.max(entry.last_offset + 1);
            }
        }
    }
    (start > manifest.log_start_offset).then_some(start)
}

async fn expire(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tier: &PartitionTier,
    writer: &mut ManifestWriter,
    log: &Arc<PartitionLog>,
) -> Result<(), TierError> {
    let (log_start, config, local_only_bytes) = on_log(log, move |state| {
        Ok((state.log_start_offset()?, state.config()?, state.bytes_not_in_remote_storage()?))
    })
    .await?;
    let now_ms = broker.manager.clock().now_ms();
    let Some(new_start) = remote_log_start_after_retention(
        writer.manifest(),
        log_start,
        &config,
        local_only_bytes,
        now_ms,
    ) else {
        return Ok(());
    };
    // The manifest first: a crash after it leaves orphans, never an entry without objects.
    let removed = writer.commit(&Change::Expire { log_start_offset: new_start }).await?;
    tier.publish(writer.manifest());
    for entry in &removed {
        delete_segment_objects(tiering.store.as_ref(), &tier.layout, entry).await?;
    }
    ::metrics::counter!("seglog_remote_expired_segments_total").increment(removed.len() as u64);
    on_log(log, move |state| {
        let bound = new_start.min(state.high_watermark()?);
        state.maybe_increment_log_start_offset(bound)?;
        Ok(())
    })
    .await
}

async fn upload(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tier: &PartitionTier,
    writer: &mut ManifestWriter,
    log: &Arc<PartitionLog>,
) -> Result<(), TierError> {
    let from = writer.manifest().end_offset();
    let closed = on_log(log, move |state| Ok(state.closed_segments_from(from)?)).await?;
    for segment in closed.into_iter().take(UPLOADS_PER_ROUND_MAX) {
        let manifest = writer.manifest();
        let contiguous = if manifest.segments.is_empty() {
            segment.end_offset > manifest.log_start_offset
        } else {
            segment.base_offset == manifest.end_offset()
        };
        if !contiguous && segment.base_offset < manifest.end_offset() {
            break; // a cleaned segment reaching into the remote log: re-uploaded next round
        }
        if !contiguous {
            tracing::warn!(
                partition = %log.topic_partition(),
                base_offset = segment.base_offset,
                remote_end_offset = manifest.end_offset(),
                "a local segment does not follow the remote log; it is not uploaded"
            );
            break;
        }
        tiering.throttle.acquire(u64::from(segment.size_bytes)).await;
        let entry = upload_one(broker, tiering, tier, log, segment).await?;
        let log_bytes = entry.log_bytes;
        writer.commit(&Change::Add(entry)).await?;
        tier.publish(writer.manifest());
        let last_offset = segment.end_offset - 1;
        on_log(log, move |state| Ok(state.update_highest_offset_in_remote_storage(last_offset)?))
            .await?;
        ::metrics::counter!("seglog_remote_copy_bytes_total").increment(log_bytes);
        ::metrics::counter!("seglog_remote_copy_segments_total").increment(1);
    }
    Ok(())
}

/// Reads a closed segment's files and the log's leader epochs, and uploads them under a new
/// segment id; the entry to commit.
pub(super) async fn upload_one(
    broker: &Arc<Broker>,
    tiering: &Tiering,
    tier: &PartitionTier,
    log: &Arc<PartitionLog>,
    segment: ClosedSegment,
) -> Result<SegmentEntry, TierError> {
    let fs = Arc::clone(&broker.log_files);
    let objects = on_log(log, move |state| {
        let dir = state.dir();
        let mut objects =
            read_segment_files(fs.as_ref(), &dir, segment.base_offset, segment.end_offset)?;
        let epochs = state.leader_epochs()?;
        if let Some(slice) =
            leader_epoch_slice(&epochs, segment.base_offset, segment.end_offset - 1)
        {
            objects.push((ObjectKind::LeaderEpochs, slice));
        }
        Ok(objects)
    })
    .await?;
    Ok(upload_segment(
        tiering.store.as_ref(),
        &tier.layout,
        segment.base_offset,
        segment.end_offset - 1,
        segment.largest_timestamp_ms,
        &objects,
    )
    .await?)
}

#[cfg(test)]
mod tests {
    use seglog_remote::{Manifest, ObjectKind, SegmentEntry, SegmentId};
    use seglog_storage::config::LogConfig;

    use super::remote_log_start_after_retention;

    fn manifest(entries: &[(i64, i64, i64, u64)]) -> Manifest {
        let mut manifest = Manifest::empty("t", 0, "id");
        manifest.segments = entries
            .iter()
            .enumerate()
            .map(|(idx, (base, last, ts, bytes))| SegmentEntry {
                id: SegmentId(idx as u128),
                base_offset: *base,
                last_offset: *last,
                max_timestamp_ms: *ts,
                log_bytes: *bytes,
                log_crc32c: 0,
                objects: vec![ObjectKind::Log],
            })
            .collect();
        manifest.log_start_offset = entries.first().map_or(0, |e| e.0);
        manifest
    }

    #[test]
    fn remote_retention_by_time_size_and_log_start() {
        let m = manifest(&[(0, 9, 100, 1000), (10, 19, 200, 1000), (20, 29, 300, 1000)]);
        let forever = LogConfig { retention_ms: -1, retention_bytes: -1, ..LogConfig::default() };
        assert_eq!(remote_log_start_after_retention(&m, 0, &forever, 0, 10_000), None);
        assert_eq!(
            remote_log_start_after_retention(&m, 15, &forever, 0, 10_000),
            Some(15),
            "DeleteRecords"
        );
        let by_time = LogConfig { retention_ms: 9_850, ..forever.clone() };
        assert_eq!(
            remote_log_start_after_retention(&m, 0, &by_time, 0, 10_000),
            Some(10),
            "only the first is older"
        );
        let by_size = LogConfig { retention_bytes: 2_500, ..forever.clone() };
        assert_eq!(
            remote_log_start_after_retention(&m, 0, &by_size, 0, 0),
            None,
            "3000 - 1000 < 2500"
        );
        assert_eq!(
            remote_log_start_after_retention(&m, 0, &by_size, 1_600, 0),
            Some(20),
            "local bytes count: 4600 total, two segments fit the breach"
        );
        let compacted = LogConfig {
            cleanup_policy: [seglog_storage::config::CleanupPolicy::Compact].into(),
            ..by_time
        };
        assert_eq!(remote_log_start_after_retention(&m, 0, &compacted, 0, 10_000), None);
    }
}
