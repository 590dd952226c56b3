//! Log compaction (Kafka's `LogCleaner` and `LogCleanerManager`): keep at least the last record
//! of every key of a `cleanup.policy=compact` topic, in Kafka's bytes.
//!
//! - `offset_map.rs`: `SkimpyOffsetMap`, the key-to-last-offset map in one fixed buffer.
//! - `clean.rs`: `Cleaner`, one round over one log: map the dirty section, rewrite group by
//!   group into `.cleaned` segments, swap each in (`.cleaned` -> `.swap` -> live).
//! - `txn.rs`: aborted transactions and markers as the cleaner meets them.
//! - `throttle.rs`: `log.cleaner.io.max.bytes.per.second`.
//! - this file: the configuration, the choice of the dirtiest log (`LogToClean`, the rules of
//!   `LogCleanerManager.cleanableOffsets`), the per-partition states (in progress, aborted,
//!   paused) and the uncleanable partitions, and the numbers behind the cleaner's metrics.
//!
//! The cleaner threads themselves, and the `cleaner-offset-checkpoint` of each log directory,
//! belong to the [`crate::manager::LogManager`] (`manager/cleaning.rs`).
//!
//! Unlike Kafka's, a cleaner thread never dies of an error: the partition whose round failed is
//! marked uncleanable with the reason (logged once, counted in the metrics), every other one goes
//! on, and a restart or a change of the topic's configuration retries it.

#![expect(clippy::cast_precision_loss, reason = "ratios, rates and utilizations are f64 by nature")]

mod clean;
#[cfg(test)]
mod model_tests;
mod offset_map;
#[cfg(test)]
pub(crate) mod tests;
mod throttle;
mod txn;
#[cfg(test)]
mod txn_tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

pub use clean::Cleaner;
#[cfg(test)]
pub(crate) use clean::group_segments_by_size;
pub use offset_map::{SLOT_BYTES, SkimpyOffsetMap};
pub(crate) use throttle::Throttler;

use crate::log::partition_log::{CleanerView, PartitionLog, TopicPartition};

/// The broker's cleaner settings (Kafka's `CleanerConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerConfig {
    /// `log.cleaner.enable` (true): without it compacted topics are neither cleaned nor have
    /// their retention applied, as in Kafka.
    pub enable: bool,
    /// `log.cleaner.threads` (1; at least 0).
    pub threads: u32,
    /// `log.cleaner.dedupe.buffer.size` (128 MiB): the offset maps of all threads together.
    pub dedupe_buffer_bytes: u64,
    /// `log.cleaner.io.buffer.load.factor` (0.9): how full an offset map gets.
    pub dedupe_buffer_load_factor: f64,
    /// `log.cleaner.io.buffer.size` (512 KiB): the read and write buffers of all threads.
    pub io_buffer_bytes: u32,
    /// `log.cleaner.io.max.bytes.per.second` (`Double.MAX_VALUE`: no limit).
    pub io_bytes_per_second_max: f64,
    /// `log.cleaner.backoff.ms` (15000): a thread's sleep when no log needs cleaning.
    pub backoff_ms: i64,
    /// `message.max.bytes` (1048588): the largest batch, so the largest I/O buffer.
    pub max_message_bytes: u32,
}

impl Default for CleanerConfig {
    fn default() -> Self {
        Self {
            enable: true,
            threads: 1,
            dedupe_buffer_bytes: 128 * 1024 * 1024,
            dedupe_buffer_load_factor: 0.9,
            io_buffer_bytes: 512 * 1024,
            io_bytes_per_second_max: f64::MAX,
            backoff_ms: 15_000,
            max_message_bytes: 1_048_588,
        }
    }
}

impl CleanerConfig {
    /// One thread's offset map bytes (Kafka: the buffer split over the threads, at most 2 GiB).
    pub fn map_bytes_per_thread(&self) -> usize {
        let per_thread = self.dedupe_buffer_bytes / u64::from(self.threads.max(1));
        usize::try_from(per_thread.min(i32::MAX as u64)).unwrap_or(i32::MAX as usize)
    }

    /// One thread's read buffer bytes (Kafka: the I/O buffer split over threads, then in two).
    pub fn io_buffer_bytes_per_thread(&self) -> usize {
        (self.io_buffer_bytes / self.threads.max(1) / 2) as usize
    }

    /// A cleaner for one thread with these settings.
    pub(crate) fn cleaner(&self, throttler: Arc<Throttler>) -> Cleaner {
        Cleaner::new(
            self.map_bytes_per_thread(),
            self.dedupe_buffer_load_factor,
            self.io_buffer_bytes_per_thread(),
            self.max_message_bytes as usize,
            throttler,
        )
    }
}

/// A log chosen for cleaning, with its dirty section (Kafka's `LogToClean`).
#[derive(Debug, Clone)]
pub(crate) struct LogToClean {
    /// The partition.
    pub(crate) topic_partition: TopicPartition,
    /// The log.
    pub(crate) log: Arc<PartitionLog>,
    /// The log as it stood when chosen.
    pub(crate) view: CleanerView,
    /// Where the dirty section starts.
    pub(crate) first_dirty_offset: i64,
    /// Where cleaning must stop: the base of the segment holding the first uncleanable offset.
    pub(crate) first_uncleanable_offset: i64,
    /// Bytes of the clean section.
    pub(crate) clean_bytes: u64,
    /// Bytes of the dirty section that may be cleaned.
    pub(crate) cleanable_bytes: u64,
    /// Whether `max.compaction.lag.ms` has passed for some dirty segment.
    pub(crate) need_compaction_now: bool,
    /// How far past `max.compaction.lag.ms` the oldest dirty record is.
    pub(crate) compaction_delay_ms: i64,
    /// The first dirty offset had to be reset (below the log start or past the log end).
    pub(crate) force_checkpoint: bool,
}

impl LogToClean {
    /// The dirty ratio: cleanable bytes over all bytes.
    pub(crate) fn cleanable_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.cleanable_bytes;
        if total == 0 { 0.0 } else { self.cleanable_bytes as f64 / total as f64 }
    }

    /// The dirty section of `view` (Kafka's `cleanableOffsets`, `calculateCleanableBytes` and
    /// `maxCompactionDelay`), given the checkpointed first dirty offset.
    pub(crate) fn new(
        topic_partition: TopicPartition,
        log: Arc<PartitionLog>,
        view: CleanerView,
        checkpointed: Option<i64>,
        now_ms: i64,
    ) -> Self {
        let log_start = view.log_start_offset;
        let (first_dirty_offset, force_checkpoint) = match checkpointed {
            Some(offset) if offset < log_start => (log_start, true),
            Some(offset) if offset > view.log_end_offset => (log_start, true),
            Some(offset) => (offset, false),
            None => (log_start, false),
        };
        let min_lag_ms = view.config.min_compaction_lag_ms.max(0);
        let lagging = (min_lag_ms > 0)
            .then(|| {
                view.non_active_from(first_dirty_offset)
                    .find(|s| s.largest_timestamp > now_ms.saturating_sub(min_lag_ms))
                    .map(|s| s.base_offset)
            })
            .flatten();
        let uncleanable = [Some(view.last_stable_offset), Some(view.active_base_offset()), lagging]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(first_dirty_offset)
            .max(first_dirty_offset);
        // Rounded down to the base of the segment holding it (or the active segment's).
        let first_uncleanable_offset = view
            .non_active_from(uncleanable)
            .next()
            .map_or(view.active_base_offset(), |s| s.base_offset);
        let clean_bytes: u64 = view
            .segments_in(-1, first_dirty_offset)
            .filter(|s| s.base_offset < first_dirty_offset)
            .map(|s| u64::from(s.size_bytes))
            .sum();
        let cleanable_bytes: u64 = view
            .segments_in(first_dirty_offset.min(first_uncleanable_offset), first_uncleanable_offset)
            .map(|s| u64::from(s.size_bytes))
            .sum();
        let max_lag_ms = view.config.max_compaction_lag_ms.max(0);
        let earliest_dirty_ms = view
            .non_active_from(first_dirty_offset)
            .map(|s| s.first_batch_timestamp)
            .filter(|ts| *ts > 0)
            .min()
            .unwrap_or(i64::MAX);
        let clean_until_ms = now_ms.saturating_sub(max_lag_ms);
        let compaction_delay_ms =
            if earliest_dirty_ms < clean_until_ms { clean_until_ms - earliest_dirty_ms } else { 0 };
        Self {
            topic_partition,
            log,
            view,
            first_dirty_offset,
            first_uncleanable_offset,
            clean_bytes,
            cleanable_bytes,
            need_compaction_now: compaction_delay_ms > 0,
            compaction_delay_ms,
            force_checkpoint,
        }
    }

    /// Whether the log is due: dirtier than `min.cleanable.dirty.ratio`, or past
    /// `max.compaction.lag.ms` with something to clean.
    pub(crate) fn is_cleanable(&self) -> bool {
        let ratio_due = self.cleanable_ratio() > self.view.config.min_cleanable_dirty_ratio;
        self.clean_bytes + self.cleanable_bytes > 0
            && ((self.need_compaction_now && self.cleanable_bytes > 0) || ratio_due)
    }
}

/// What one cleaning round did (Kafka's `CleanerStats`).
#[derive(Debug, Clone)]
pub struct CleanerStats {
    /// When the round started.
    pub start: Instant,
    /// When the offset map was complete.
    pub map_done: Option<Instant>,
    /// When the round ended.
    pub end: Option<Instant>,
    /// Bytes of the segments rewritten.
    pub bytes_read: u64,
    /// Bytes written to the cleaned segments.
    pub bytes_written: u64,
    /// Bytes read to build the offset map.
    pub map_bytes_read: u64,
    /// Records read to build the offset map.
    pub map_messages_read: u64,
    /// Records of the rewritten segments.
    pub messages_read: u64,
    /// Records kept.
    pub messages_written: u64,
    /// The offset map's fill at the end, 0 to 1.
    pub buffer_utilization: f64,
}

impl CleanerStats {
    pub(crate) fn started() -> Self {
        Self {
            start: Instant::now(),
            map_done: None,
            end: None,
            bytes_read: 0,
            bytes_written: 0,
            map_bytes_read: 0,
            map_messages_read: 0,
            messages_read: 0,
            messages_written: 0,
            buffer_utilization: 0.0,
        }
    }

    /// Seconds the round took.
    pub fn elapsed_secs(&self) -> f64 {
        self.end.unwrap_or_else(Instant::now).duration_since(self.start).as_secs_f64()
    }
}

/// A partition's place in the cleaner (Kafka's `LogCleaningState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CleaningState {
    /// A cleaner thread is on it.
    InProgress,
    /// An operation asked the round in progress to stop, and waits for it.
    Aborted,
    /// Not cleaned until resumed as many times as paused (truncation, deletion, a move).
    Paused(u32),
}

/// How the cleaner stands for one compacted partition (`seglog topics describe`).
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionCleanerState {
    /// The first dirty offset (the cleaner checkpoint, or the log start).
    pub first_dirty_offset: i64,
    /// Where cleaning must stop now.
    pub first_uncleanable_offset: i64,
    /// The dirty ratio, 0 to 1.
    pub dirty_ratio: f64,
    /// Cleaning in progress, aborted or paused; `None`: idle.
    pub state: Option<CleaningState>,
    /// Why the partition is uncleanable, if it is.
    pub uncleanable: Option<String>,
}

/// The cleaner's figures for `/metrics` (Kafka's `LogCleaner` and `LogCleanerManager` gauges).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanerMetrics {
    /// `max-dirty-percent`: the dirtiest compacted log's dirty ratio at the last check, percent.
    pub max_dirty_percent: f64,
    /// `time-since-last-run-ms`.
    pub time_since_last_run_ms: i64,
    /// `cleaner-recopy-percent`: bytes kept over bytes read in the last round, percent.
    pub recopy_percent: f64,
    /// `max-buffer-utilization-percent`: the offset map's fill in the last round, percent.
    pub max_buffer_utilization_percent: f64,
    /// `max-clean-time-secs`: the last round's duration.
    pub max_clean_time_secs: f64,
    /// `max-compaction-delay-secs`: how far past `max.compaction.lag.ms` the worst log is.
    pub max_compaction_delay_secs: f64,
    /// `uncleanable-partitions-count`.
    pub uncleanable_partitions_count: u64,
    /// `uncleanable-bytes`: bytes of the uncleanable partitions.
    pub uncleanable_bytes: u64,
    /// Rounds that failed since start (each marks a partition uncleanable).
    pub failed_rounds: u64,
    /// Rounds completed since start.
    pub completed_rounds: u64,
    /// Bytes read by completed rounds since start.
    pub bytes_read: u64,
    /// Bytes written by completed rounds since start.
    pub bytes_written: u64,
    /// `DeadThreadCount`: always 0 here, a thread never dies.
    pub dead_thread_count: u64,
}

/// The cleaner's bookkeeping (Kafka's `LogCleanerManager`): which partitions are being cleaned,
/// aborted or paused, which are uncleanable and why, and the figures.
#[derive(Debug, Default)]
pub(crate) struct CleanerManagerState {
    pub(crate) in_progress: BTreeMap<TopicPartition, CleaningState>,
    /// Uncleanable partitions with the reason, and the config they failed with (a config
    /// change clears the mark).
    pub(crate) uncleanable: BTreeMap<TopicPartition, (String, crate::config::LogConfig)>,
    pub(crate) metrics: CleanerMetrics,
    pub(crate) last_run: Option<Instant>,
}
