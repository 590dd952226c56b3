//! The offset checkpoints a log directory keeps (Kafka's `LogManager.checkpointLogRecoveryOffsets`,
//! `checkpointLogStartOffsets` and `ReplicaManager.checkpointHighWatermarks`), and the leader
//! epochs a clean shutdown records for a lazy open.

use std::sync::PoisonError;

use super::{
    LEADER_EPOCHS_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, LogManager, OffsetCheckpointFile,
    PartitionOffsets, RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE,
};
use crate::error::Result;

/// What a periodic checkpoint depends on: the logs' changes counted by the background queue,
/// the number of logs and future logs, and the directories offline. Equal keys, equal files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CheckpointKey {
    changes: u64,
    logs: usize,
    futures: usize,
    offline_dirs: usize,
}

impl LogManager {
    /// The periodic checkpoint (`tick`): [`LogManager::checkpoint`], unless nothing it records
    /// has changed since the last one (an idle broker of 100,000 partitions would otherwise
    /// rewrite four files of a megabyte each, every 5 s).
    pub(super) fn checkpoint_if_changed(&self) -> Result<()> {
        // Read before the checkpoint: a change made while it runs makes the next one write.
        let key = CheckpointKey {
            changes: self.background.changes(),
            logs: self.logs.read().unwrap_or_else(PoisonError::into_inner).len(),
            futures: self.futures.read().unwrap_or_else(PoisonError::into_inner).len(),
            offline_dirs: (0..self.dirs.len()).filter(|idx| self.dir_is_offline(*idx)).count(),
        };
        let mut checkpointed = self.checkpointed.lock().unwrap_or_else(PoisonError::into_inner);
        if *checkpointed == Some(key) {
            return Ok(());
        }
        self.checkpoint()?;
        *checkpointed = Some(key);
        Ok(())
    }

    /// Writes the recovery-point, log-start-offset and replication (high watermark) checkpoints
    /// of every online directory, atomically, and [`LEADER_EPOCHS_FILE`]: each log's leader
    /// epoch at its recovery point, which a crash cannot take back (so Metadata after any
    /// restart shows an epoch that loading the log only raises).
    pub fn checkpoint(&self) -> Result<()> {
        for dir_idx in 0..self.dirs.len() {
            self.checkpoint_dir(dir_idx)?;
        }
        Ok(())
    }

    /// [`LogManager::checkpoint`] of one directory (nothing if it is offline).
    pub(super) fn checkpoint_dir(&self, dir_idx: usize) -> Result<()> {
        let Some(dir) = self.dirs.get(dir_idx) else { return Ok(()) };
        if self.dir_is_offline(dir_idx) {
            return Ok(());
        }
        let mut recovery_points = PartitionOffsets::new();
        let mut log_starts = PartitionOffsets::new();
        let mut high_watermarks = PartitionOffsets::new();
        let mut leader_epochs = PartitionOffsets::new();
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner).clone();
        let futures = self.futures.read().unwrap_or_else(PoisonError::into_inner).clone();
        // A partition is never live and future in the same directory, so the keys of one
        // directory's files are unique (Kafka checkpoints future logs the same way).
        for (tp, (log_dir_idx, log)) in logs.iter().chain(futures.iter()) {
            if *log_dir_idx != dir_idx || log.is_offline() {
                continue;
            }
            let key = (tp.topic.clone(), tp.partition);
            let offsets = log.checkpoint_offsets()?;
            recovery_points.insert(key.clone(), offsets.recovery_point);
            if let Some(log_start) = offsets.log_start_offset {
                log_starts.insert(key.clone(), log_start);
            }
            if let Some(epoch) = offsets.durable_leader_epoch
                && !futures.contains_key(tp)
            {
                leader_epochs.insert(key.clone(), i64::from(epoch));
            }
            if let Some(high_watermark) = offsets.high_watermark {
                high_watermarks.insert(key, high_watermark);
            }
        }
        let fs = self.fs.as_ref();
        let result = OffsetCheckpointFile::in_dir(&dir.path, RECOVERY_POINT_CHECKPOINT_FILE)
            .write(fs, &recovery_points)
            .and_then(|()| {
                OffsetCheckpointFile::in_dir(&dir.path, LOG_START_OFFSET_CHECKPOINT_FILE)
                    .write(fs, &log_starts)
            })
            .and_then(|()| {
                OffsetCheckpointFile::in_dir(&dir.path, REPLICATION_OFFSET_CHECKPOINT_FILE)
                    .write(fs, &high_watermarks)
            })
            .and_then(|()| {
                OffsetCheckpointFile::in_dir(&dir.path, LEADER_EPOCHS_FILE)
                    .write(fs, &leader_epochs)
            });
        self.observe(dir_idx, result)?;
        Ok(())
    }
}
