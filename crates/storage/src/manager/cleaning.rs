//! The log cleaner as the [`LogManager`] runs it (Kafka's `LogCleaner` threads and the parts of
//! `LogCleanerManager` that touch the logs): choosing the dirtiest compacted log, one round on
//! it, the `cleaner-offset-checkpoint` of each log directory, retention of compacted logs after
//! each pass, aborting a round for a deletion, and the uncleanable partitions.

#![expect(clippy::cast_precision_loss, reason = "the cleaner's figures are f64 gauges")]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::LogManager;
use crate::cleaner::{
    Cleaner, CleanerConfig, CleanerManagerState, CleanerMetrics, CleaningState, LogToClean,
    PartitionCleanerState, Throttler,
};
use crate::dirs::checkpoint::{CLEANER_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile};
use crate::error::{Error, Result};
use crate::log::partition_log::{PartitionLog, TopicPartition};

/// The cleaner's shared state inside the [`LogManager`].
#[derive(Debug)]
pub(crate) struct CleanerShared {
    pub(crate) config: CleanerConfig,
    pub(crate) state: Mutex<CleanerManagerState>,
    /// Signalled when a round ends (for an abort that waits) and on shutdown.
    pub(crate) changed: Condvar,
    pub(crate) stop: AtomicBool,
    pub(crate) throttler: Arc<Throttler>,
    /// Failed rounds not yet reported: partition and reason.
    pub(crate) failures: Mutex<Vec<CleanerFailure>>,
}

impl CleanerShared {
    pub(crate) fn new(config: CleanerConfig) -> Self {
        let throttler = Arc::new(Throttler::new(config.io_bytes_per_second_max));
        Self {
            config,
            state: Mutex::default(),
            changed: Condvar::new(),
            stop: AtomicBool::new(false),
            throttler,
            failures: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CleanerManagerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A cleaning round that failed: the partition is uncleanable until a restart or a change of
/// its topic's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanerFailure {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// What went wrong, with its causes.
    pub reason: String,
}

/// What one call of [`LogManager::clean_once`] did.
#[derive(Debug, Clone)]
pub enum CleanOutcome {
    /// No compacted log needed cleaning.
    Idle,
    /// A round completed.
    Cleaned {
        /// The partition.
        topic_partition: TopicPartition,
        /// The dirty section cleaned: `[from, to)`.
        from: i64,
        /// The new first dirty offset.
        to: i64,
        /// The round's figures.
        stats: crate::cleaner::CleanerStats,
    },
    /// The round stopped for a deletion, a truncation or shutdown; nothing changed.
    Aborted(TopicPartition),
    /// The round failed; the partition is now uncleanable.
    Failed(CleanerFailure),
}

/// The full text of an error and its sources.
fn describe(error: &Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl LogManager {
    /// The log of `tp` and the index of its directory.
    fn log_and_dir(&self, tp: &TopicPartition) -> Result<(usize, Arc<PartitionLog>)> {
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner);
        let Some((dir_idx, log)) = logs.get(tp) else {
            return Err(Error::UnknownTopicOrPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
            });
        };
        Ok((*dir_idx, Arc::clone(log)))
    }

    /// The cleaner settings.
    pub fn cleaner_config(&self) -> &CleanerConfig {
        &self.cleaner.config
    }

    /// A cleaner for one thread (its offset map and buffers), for [`LogManager::clean_once`].
    pub fn new_cleaner(&self) -> Cleaner {
        self.cleaner.config.cleaner(Arc::clone(&self.cleaner.throttler))
    }

    fn cleaner_checkpoint(&self, dir_idx: usize) -> Option<OffsetCheckpointFile> {
        self.dirs
            .get(dir_idx)
            .map(|dir| OffsetCheckpointFile::in_dir(&dir.path, CLEANER_OFFSET_CHECKPOINT_FILE))
    }

    /// The checkpointed first dirty offset of `tp` in directory `dir_idx`; an unreadable file
    /// counts as empty (Kafka logs it and goes on).
    fn checkpointed_dirty_offset(&self, dir_idx: usize, tp: &TopicPartition) -> Option<i64> {
        let file = self.cleaner_checkpoint(dir_idx)?;
        let offsets = file.read(self.fs.as_ref()).ok()?;
        offsets.get(&(tp.topic.clone(), tp.partition)).copied()
    }

    /// Sets (or, with `None`, removes) `tp`'s first dirty offset in its directory's
    /// `cleaner-offset-checkpoint`.
    fn update_cleaner_checkpoint(
        &self,
        dir_idx: usize,
        tp: &TopicPartition,
        offset: Option<i64>,
    ) -> Result<()> {
        let Some(file) = self.cleaner_checkpoint(dir_idx) else { return Ok(()) };
        if self.dir_is_offline(dir_idx) {
            return Ok(());
        }
        // One writer at a time: the state lock orders the read-modify-write.
        let _state = self.cleaner.lock();
        let mut offsets = file.read(self.fs.as_ref()).unwrap_or_default();
        let key = (tp.topic.clone(), tp.partition);
        match offset {
            Some(offset) => offsets.insert(key, offset),
            None => offsets.remove(&key),
        };
        let result = file.write(self.fs.as_ref(), &offsets);
        self.observe(dir_idx, result)
    }

    /// The compacted logs the cleaner may take now, each with its directory.
    fn compacted_logs(&self) -> Vec<(TopicPartition, usize, Arc<PartitionLog>)> {
        self.logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (dir_idx, log))| !self.dir_is_offline(*dir_idx) && !log.is_offline())
            .filter(|(_, (_, log))| log.config().is_ok_and(|config| config.is_compact()))
            .map(|(tp, (dir_idx, log))| (tp.clone(), *dir_idx, Arc::clone(log)))
            .collect()
    }

    /// Kafka's `grabFilthiestCompactedLog`: the dirtiest cleanable log, marked in progress.
    fn grab_filthiest(&self, now_ms: i64) -> Option<(usize, LogToClean)> {
        let mut candidates = Vec::new();
        let mut max_delay_ms = 0;
        for (tp, dir_idx, log) in self.compacted_logs() {
            {
                let state = self.cleaner.lock();
                if state.in_progress.contains_key(&tp) {
                    continue;
                }
                if let Some((_, failed_with)) = state.uncleanable.get(&tp)
                    && log.config().is_ok_and(|config| config == *failed_with)
                {
                    continue;
                }
            }
            let Ok(view) = log.cleaner_view() else { continue };
            let checkpointed = self.checkpointed_dirty_offset(dir_idx, &tp);
            let to_clean = LogToClean::new(tp.clone(), log, view, checkpointed, now_ms);
            if to_clean.force_checkpoint {
                let _ =
                    self.update_cleaner_checkpoint(dir_idx, &tp, Some(to_clean.first_dirty_offset));
            }
            max_delay_ms = max_delay_ms.max(to_clean.compaction_delay_ms);
            if to_clean.clean_bytes + to_clean.cleanable_bytes > 0 {
                candidates.push((dir_idx, to_clean));
            }
        }
        let mut state = self.cleaner.lock();
        state.last_run = Some(Instant::now());
        state.metrics.max_dirty_percent =
            candidates.iter().map(|(_, c)| c.cleanable_ratio()).fold(0.0, f64::max) * 100.0;
        state.metrics.max_compaction_delay_secs = max_delay_ms as f64 / 1000.0;
        // A partition whose config changed since it failed is retried: forget the mark.
        let retried: Vec<TopicPartition> = candidates
            .iter()
            .filter(|(_, c)| state.uncleanable.contains_key(&c.topic_partition))
            .map(|(_, c)| c.topic_partition.clone())
            .collect();
        for tp in retried {
            state.uncleanable.remove(&tp);
        }
        let best = candidates
            .into_iter()
            .filter(|(_, c)| {
                c.is_cleanable() && !state.in_progress.contains_key(&c.topic_partition)
            })
            .max_by(|(_, a), (_, b)| a.cleanable_ratio().total_cmp(&b.cleanable_ratio()))?;
        state.in_progress.insert(best.1.topic_partition.clone(), CleaningState::InProgress);
        Some(best)
    }

    /// One pass of a cleaner thread (Kafka's `cleanFilthiestLog`): cleans the dirtiest
    /// compacted log, if one is due, then applies retention to the compacted logs. A failure
    /// marks its partition uncleanable and is queued for [`LogManager::take_cleaner_failures`];
    /// nothing panics and the caller goes on.
    pub fn clean_once(&self, cleaner: &mut Cleaner, now_ms: i64) -> CleanOutcome {
        let outcome = match self.grab_filthiest(now_ms) {
            None => CleanOutcome::Idle,
            Some((dir_idx, to_clean)) => self.clean_log(cleaner, dir_idx, &to_clean, now_ms),
        };
        self.retain_compacted(now_ms);
        outcome
    }

    /// One round on `tp` now, whatever its dirty ratio or `cleanup.policy` (the offline
    /// `seglog compact`); `Idle` once nothing below the first uncleanable offset is dirty. Call
    /// until then. The log must not be served meanwhile.
    pub fn clean_partition_now(
        &self,
        cleaner: &mut Cleaner,
        tp: &TopicPartition,
        now_ms: i64,
    ) -> Result<CleanOutcome> {
        let (dir_idx, log) = self.log_and_dir(tp)?;
        {
            let mut state = self.cleaner.lock();
            if state.in_progress.contains_key(tp) {
                return Ok(CleanOutcome::Idle);
            }
            state.in_progress.insert(tp.clone(), CleaningState::InProgress);
        }
        let result = log.cleaner_view();
        let view = match result {
            Ok(view) => view,
            Err(error) => {
                self.done_cleaning(tp);
                return Err(error);
            }
        };
        let checkpointed = self.checkpointed_dirty_offset(dir_idx, tp);
        let to_clean = LogToClean::new(tp.clone(), log, view, checkpointed, now_ms);
        if to_clean.cleanable_bytes == 0 {
            self.done_cleaning(tp);
            return Ok(CleanOutcome::Idle);
        }
        Ok(self.clean_log(cleaner, dir_idx, &to_clean, now_ms))
    }

    fn clean_log(
        &self,
        cleaner: &mut Cleaner,
        dir_idx: usize,
        to_clean: &LogToClean,
        now_ms: i64,
    ) -> CleanOutcome {
        let tp = to_clean.topic_partition.clone();
        let check_done = || -> Result<()> {
            let aborted = self.cleaner.stop.load(Ordering::SeqCst)
                || self.cleaner.lock().in_progress.get(&tp) == Some(&CleaningState::Aborted);
            if aborted {
                Err(Error::CleaningAborted { partition: tp.to_string(), reason: "aborted" })
            } else {
                Ok(())
            }
        };
        let result = if cleaner.map_capacity() < 1 {
            Err(Error::InvalidArgument("the offset map holds no key".to_owned()))
        } else {
            cleaner.clean(to_clean, now_ms, &check_done)
        };
        let outcome = match result {
            Ok((end_offset, stats)) => {
                match self.update_cleaner_checkpoint(dir_idx, &tp, Some(end_offset)) {
                    Ok(()) => {
                        let mut shared = self.cleaner.lock();
                        let m = &mut shared.metrics;
                        m.completed_rounds += 1;
                        m.bytes_read += stats.bytes_read;
                        m.bytes_written += stats.bytes_written;
                        m.recopy_percent = if stats.bytes_read == 0 {
                            0.0
                        } else {
                            100.0 * stats.bytes_written as f64 / stats.bytes_read as f64
                        };
                        m.max_buffer_utilization_percent = 100.0 * stats.buffer_utilization;
                        m.max_clean_time_secs = stats.elapsed_secs();
                        CleanOutcome::Cleaned {
                            topic_partition: tp.clone(),
                            from: to_clean.first_dirty_offset,
                            to: end_offset,
                            stats,
                        }
                    }
                    Err(error) => self.fail(&tp, to_clean, &error),
                }
            }
            Err(Error::CleaningAborted { .. }) => CleanOutcome::Aborted(tp.clone()),
            Err(error) => {
                // A log the round poisoned takes its directory offline, as any I/O error of
                // a live log does.
                if to_clean.log.is_offline() {
                    self.take_dir_offline(dir_idx, to_clean.log.failure());
                }
                self.fail(&tp, to_clean, &error)
            }
        };
        self.done_cleaning(&tp);
        outcome
    }

    fn fail(&self, tp: &TopicPartition, to_clean: &LogToClean, error: &Error) -> CleanOutcome {
        let reason = describe(error);
        let failure = CleanerFailure { topic_partition: tp.clone(), reason: reason.clone() };
        let mut state = self.cleaner.lock();
        state.uncleanable.insert(tp.clone(), (reason, to_clean.view.config.clone()));
        state.metrics.failed_rounds += 1;
        drop(state);
        self.cleaner.failures.lock().unwrap_or_else(PoisonError::into_inner).push(failure.clone());
        CleanOutcome::Failed(failure)
    }

    /// Kafka's `doneCleaning`: an aborted round leaves the partition paused for its aborter;
    /// waiters are woken.
    fn done_cleaning(&self, tp: &TopicPartition) {
        let mut state = self.cleaner.lock();
        match state.in_progress.get(tp) {
            Some(CleaningState::Aborted) => {
                state.in_progress.insert(tp.clone(), CleaningState::Paused(1));
            }
            Some(CleaningState::InProgress) => {
                state.in_progress.remove(tp);
            }
            _ => {}
        }
        drop(state);
        self.cleaner.changed.notify_all();
    }

    /// Retention of the compacted logs, run by the cleaner after each pass as in Kafka (the
    /// background tick leaves them to it): time and size for `compact,delete`, and segments
    /// below the log start for all.
    fn retain_compacted(&self, now_ms: i64) {
        for (tp, dir_idx, log) in self.compacted_logs() {
            {
                let mut state = self.cleaner.lock();
                if state.in_progress.contains_key(&tp) {
                    continue;
                }
                state.in_progress.insert(tp.clone(), CleaningState::Paused(1));
            }
            let _ = self.observe(dir_idx, log.delete_old_segments(now_ms));
            self.resume_cleaning(&tp);
        }
    }

    /// Stops any round in progress on `tp` and waits for it to end, then keeps the cleaner off
    /// `tp` until [`LogManager::resume_cleaning`] (Kafka's `abortAndPauseCleaning`): before a
    /// deletion, a truncation or a move. Pauses nest.
    pub fn abort_and_pause_cleaning(&self, tp: &TopicPartition) {
        let mut state = self.cleaner.lock();
        loop {
            match state.in_progress.get(tp).copied() {
                None => {
                    state.in_progress.insert(tp.clone(), CleaningState::Paused(1));
                    return;
                }
                Some(CleaningState::Paused(n)) => {
                    state.in_progress.insert(tp.clone(), CleaningState::Paused(n + 1));
                    return;
                }
                Some(CleaningState::InProgress) => {
                    state.in_progress.insert(tp.clone(), CleaningState::Aborted);
                }
                Some(CleaningState::Aborted) => {}
            }
            // The round checks between batches; the timeout only guards a lost wake-up.
            state = self
                .cleaner
                .changed
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Undoes one [`LogManager::abort_and_pause_cleaning`] (Kafka's `resumeCleaning`).
    pub fn resume_cleaning(&self, tp: &TopicPartition) {
        let mut state = self.cleaner.lock();
        match state.in_progress.get(tp).copied() {
            Some(CleaningState::Paused(n)) if n > 1 => {
                state.in_progress.insert(tp.clone(), CleaningState::Paused(n - 1));
            }
            Some(CleaningState::Paused(_)) => {
                state.in_progress.remove(tp);
            }
            _ => {}
        }
    }

    /// Forgets `tp` (its topic was deleted): its state, its mark and its checkpoint entry.
    pub(crate) fn forget_cleaning(&self, dir_idx: usize, tp: &TopicPartition) {
        {
            let mut state = self.cleaner.lock();
            state.in_progress.remove(tp);
            state.uncleanable.remove(tp);
        }
        let _ = self.update_cleaner_checkpoint(dir_idx, tp, None);
    }

    /// The cleaner's figures for `/metrics`.
    pub fn cleaner_metrics(&self) -> CleanerMetrics {
        let state = self.cleaner.lock();
        let mut metrics = state.metrics.clone();
        metrics.time_since_last_run_ms =
            state.last_run.map_or(0, |last| last.elapsed().as_millis() as i64);
        metrics.uncleanable_partitions_count = state.uncleanable.len() as u64;
        let uncleanable: Vec<TopicPartition> = state.uncleanable.keys().cloned().collect();
        drop(state);
        metrics.uncleanable_bytes = uncleanable
            .iter()
            .filter_map(|tp| self.get_log(tp).ok())
            .filter_map(|log| log.size_bytes().ok())
            .sum();
        metrics
    }

    /// How the cleaner stands for `tp`, if its topic is compacted.
    pub fn partition_cleaner_state(
        &self,
        tp: &TopicPartition,
    ) -> Result<Option<PartitionCleanerState>> {
        let (dir_idx, log) = self.log_and_dir(tp)?;
        if !log.config()?.is_compact() {
            return Ok(None);
        }
        let view = log.cleaner_view()?;
        let checkpointed = self.checkpointed_dirty_offset(dir_idx, tp);
        let now_ms = self.clock.now_ms();
        let to_clean = LogToClean::new(tp.clone(), log, view, checkpointed, now_ms);
        let state = self.cleaner.lock();
        Ok(Some(PartitionCleanerState {
            first_dirty_offset: to_clean.first_dirty_offset,
            first_uncleanable_offset: to_clean.first_uncleanable_offset,
            dirty_ratio: to_clean.cleanable_ratio(),
            state: state.in_progress.get(tp).copied(),
            uncleanable: state.uncleanable.get(tp).map(|(reason, _)| reason.clone()),
        }))
    }

    /// The failed rounds since the last call, each once, for the broker to log.
    pub fn take_cleaner_failures(&self) -> Vec<CleanerFailure> {
        std::mem::take(&mut *self.cleaner.failures.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Asks every cleaner thread to stop, and wakes the sleeping ones.
    pub(crate) fn stop_cleaner(&self) {
        self.cleaner.stop.store(true, Ordering::SeqCst);
        self.cleaner.changed.notify_all();
    }

    /// One cleaner thread's loop: clean while there is work, else sleep `log.cleaner.backoff.ms`
    /// (woken early by shutdown).
    pub(crate) fn run_cleaner_thread(&self) {
        let mut cleaner = self.new_cleaner();
        let backoff =
            Duration::from_millis(u64::try_from(self.cleaner.config.backoff_ms).unwrap_or(0));
        while !self.cleaner.stop.load(Ordering::SeqCst) {
            let outcome = self.clean_once(&mut cleaner, self.clock.now_ms());
            if matches!(outcome, CleanOutcome::Cleaned { .. }) {
                continue;
            }
            let state = self.cleaner.lock();
            if self.cleaner.stop.load(Ordering::SeqCst) {
                break;
            }
            drop(
                self.cleaner
                    .changed
                    .wait_timeout(state, backoff)
                    .unwrap_or_else(PoisonError::into_inner),
            );
        }
    }
}
