//! One topic partition's log (Kafka's `UnifiedLog`): validated leader appends and offset-keeping
//! follower appends, rolling, reads bounded by an isolation level, the high watermark, offsets
//! by timestamp, retention, truncation, and explicit durability.
//!
//! Transactions: the producer state (`producer_state`) opens a transaction at a producer's
//! first transactional batch and completes it at its COMMIT or ABORT marker (appended with
//! [`AppendOrigin::Coordinator`]); an aborted one is recorded in the active segment's
//! `.txnindex` (Kafka's `updateTxnIndex`). The last stable offset is the first unstable offset
//! (the earliest open transaction, or a completed one whose marker the high watermark has not
//! passed), at least the log start offset and at most the high watermark. A read_committed read
//! ([`Isolation::TxnCommitted`]) stops there and lists the aborted transactions overlapping it
//! from the `.txnindex` files (Kafka's `collectAbortedTransactions`). The LSO's position is
//! translated when a read needs it rather than cached as Kafka's `firstUnstableOffsetMetadata`
//! is, so no segment change can leave it stale. At open, the `.txnindex` of every recovered
//! segment (emptied by its recovery) is refilled by a replay of the producers from a snapshot at
//! or below the first of them.
//!
//! Locking: one `RwLock` guards the state. Appends, rolls and truncations take it for writing;
//! reads take it for reading. A flush takes it only to collect file handles and to move the
//! recovery point: its fsyncs run unlocked, so neither readers nor appenders wait for the disk.
//! An I/O error poisons the log: every later call fails with [`Error::Offline`].

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use seglog_format::{Compression, DecodeLimits};

use super::epoch_cache::LeaderEpochFileCache;
use super::load::{LoadParams, LoadReport, load};
use super::local_log::{FetchedRecords, LocalLog, LocalLogConfig};
use super::producer_rebuild::rebuild_producer_state;
use super::producer_state::{BatchMetadata, ProducerCheck, ProducerStateManager};
use super::validator::{
    AppendOrigin, TargetCompression, ValidatedAppend, ValidationConfig, analyze_follower_append,
    validate_and_assign_offsets,
};
use crate::config::{BrokerCompressionType, DurabilityMode, LogConfig};
use crate::error::{Error, IoFailure, Result};
use crate::segment::{FetchData, LogOffsetMetadata, LogSegment, RollParams, SegmentConfig};

mod background;
mod cleaning;
mod lazy;
mod offsets;
mod replica;
mod summary;
mod tiered;
mod txn;

pub use background::BackgroundQueue;
pub(crate) use cleaning::{CleanerView, SegmentView};
pub use lazy::CheckpointOffsets;
pub use summary::{LogFigures, LogSummary, SegmentSummary};
pub use tiered::ClosedSegment;
use txn::{
    aborted_transactions, aborted_transactions_below, last_stable_offset,
    last_stable_offset_metadata, set_high_watermark, update_producers,
};

/// `ListOffsets` special timestamp: the log end (or the high watermark, for consumers).
pub const LATEST_TIMESTAMP: i64 = -1;
/// `ListOffsets` special timestamp: the log start offset.
pub const EARLIEST_TIMESTAMP: i64 = -2;
/// `ListOffsets` special timestamp: the record with the largest timestamp.
pub const MAX_TIMESTAMP: i64 = -3;
/// `ListOffsets` special timestamp (KIP-405, v8+): the first local offset.
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
/// `ListOffsets` special timestamp (KIP-1005, v9+): the last offset in remote storage.
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;

/// A topic and partition (Kafka's `TopicPartition`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// How far a read may go (Kafka's `FetchIsolation`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Up to the log end offset (replicas, local tools).
    LogEnd,
    /// Up to the high watermark (`read_uncommitted` consumers).
    HighWatermark,
    /// Up to the last stable offset (`read_committed` consumers).
    TxnCommitted,
}

/// What an append did (Kafka's `LogAppendInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendInfo {
    /// The first offset written.
    pub first_offset: i64,
    /// The last offset written.
    pub last_offset: i64,
    /// The largest timestamp of the append.
    pub max_timestamp: i64,
    /// The broker time stamped on LogAppendTime batches, or -1.
    pub log_append_time: i64,
    /// The log start offset after the append.
    pub log_start_offset: i64,
    /// Records written.
    pub n_records: usize,
    /// Every offset below this is durable (fsynced) when the append returns.
    pub durable_offset: i64,
    /// The high watermark after the append (moved to the log end by
    /// [`PartitionLog::append_as_sole_leader`], else as it was).
    pub high_watermark: i64,
    /// The topic's durability mode at the append, so that the caller need not ask again.
    pub durability: DurabilityMode,
}

/// What one read of a partition saw, all under one lock (Kafka's `LogReadInfo`): the records
/// and the offsets that bounded them, so a Fetch never reports a watermark other than the one
/// its read stopped at.
#[derive(Debug)]
pub struct LogReadInfo<D = FetchData> {
    /// The records, or why they could not be read (an offset out of range): the offsets below
    /// are answered either way.
    pub data: Result<D>,
    /// The high watermark.
    pub high_watermark: i64,
    /// The last stable offset: the first offset of the earliest open transaction, bounded by
    /// the high watermark.
    pub last_stable_offset: i64,
    /// For a read_committed read ([`Isolation::TxnCommitted`]): the aborted transactions that
    /// overlap the records returned, from the segments' `.txnindex` files (Kafka's
    /// `collectAbortedTransactions`), in index order. `None` for other isolations.
    pub aborted_transactions: Option<Vec<AbortedTransaction>>,
    /// The log start offset.
    pub log_start_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
    /// The latest leader epoch of the epoch cache, if it has any entry.
    pub leader_epoch: Option<i32>,
}

impl<D> LogReadInfo<D> {
    /// The same read with its records turned into `E` by `f` (a read that failed stays
    /// failed; a failure of `f` becomes the read's).
    pub fn map_data<E>(self, f: impl FnOnce(D) -> Result<E>) -> LogReadInfo<E> {
        LogReadInfo {
            data: self.data.and_then(f),
            high_watermark: self.high_watermark,
            last_stable_offset: self.last_stable_offset,
            aborted_transactions: self.aborted_transactions,
            log_start_offset: self.log_start_offset,
            log_end_offset: self.log_end_offset,
            leader_epoch: self.leader_epoch,
        }
    }
}

/// An aborted transaction a read_committed fetch must skip (Kafka's
/// `FetchResponseData.AbortedTransaction`): its producer and first offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    /// The producer id of the transaction.
    pub producer_id: i64,
    /// The first offset of the transaction.
    pub first_offset: i64,
}

/// One producer the partition tracks (what Kafka's `DescribeProducers` answers per producer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveProducer {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch.
    pub producer_epoch: i16,
    /// The last sequence of its last batch, or -1.
    pub last_sequence: i32,
    /// The max timestamp of its last batch, or -1.
    pub last_timestamp: i64,
    /// The coordinator epoch of its last transaction marker, or -1.
    pub coordinator_epoch: i32,
    /// The first offset of its open transaction, or -1 when none is open.
    pub current_txn_start_offset: i64,
}

/// A timestamp search result (Kafka's `TimestampAndOffset`); timestamp -1 for special searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAndTimestamp {
    /// The record's timestamp, or -1.
    pub timestamp: i64,
    /// The offset.
    pub offset: i64,
    /// The leader epoch, when known.
    pub leader_epoch: Option<i32>,
}

fn target_compression(kind: BrokerCompressionType) -> TargetCompression {
    match kind {
        BrokerCompressionType::Producer => TargetCompression::Producer,
        BrokerCompressionType::Uncompressed => TargetCompression::Codec(Compression::None),
        BrokerCompressionType::Gzip => TargetCompression::Codec(Compression::Gzip),
        BrokerCompressionType::Snappy => TargetCompression::Codec(Compression::Snappy),
        BrokerCompressionType::Lz4 => TargetCompression::Codec(Compression::Lz4),
        BrokerCompressionType::Zstd => TargetCompression::Codec(Compression::Zstd),
    }
}

/// The segment settings of `config`, with this segment's roll jitter.
fn local_config(config: &LogConfig) -> LocalLogConfig {
    LocalLogConfig {
        segment: SegmentConfig {
            index_interval_bytes: config.index_interval_bytes,
            index_bytes_max: u64::from(config.segment_index_bytes),
            roll_jitter_ms: 0,
            decode_limits: DecodeLimits::default(),
            preallocate_bytes: if config.preallocate { config.segment_bytes } else { 0 },
        },
        file_delete_delay_ms: config.file_delete_delay_ms,
        segment_jitter_bound_ms: if config.segment_jitter_ms > 0 {
            config.segment_jitter_ms.min(config.segment_ms)
        } else {
            0
        },
    }
}

fn validation_config(config: &LogConfig) -> ValidationConfig {
    ValidationConfig {
        target_compression: target_compression(config.compression_type),
        compact: config.is_compact(),
        timestamp_type: config.message_timestamp_type,
        timestamp_before_max_ms: config.message_timestamp_before_max_ms,
        timestamp_after_max_ms: config.message_timestamp_after_max_ms,
        max_message_bytes: config.max_message_bytes as usize,
        decode_limits: DecodeLimits::default(),
    }
}

#[derive(Debug)]
struct State {
    config: LogConfig,
    local: LocalLog,
    /// The first offset of the whole log, the remote part of a tiered topic included.
    log_start_offset: i64,
    /// The first offset of the local segments (Kafka's `localLogStartOffset`): the log start
    /// unless segments of a tiered topic left local disk after their upload.
    local_log_start_offset: i64,
    /// The last offset the bucket holds (Kafka's `highestOffsetInRemoteStorage`), -1 until the
    /// broker's tiering says; local retention deletes only segments at or below it.
    highest_offset_in_remote_storage: i64,
    high_watermark: LogOffsetMetadata,
    epoch_cache: LeaderEpochFileCache,
    /// Idempotent producers' recent batches and the `.snapshot` files (see `producer_state`).
    producers: ProducerStateManager,
    /// Set by the first failed write or fsync; the log is offline from then on.
    poisoned: bool,
    /// That first failure, when it was this log's own (not its directory's elsewhere).
    failure: Option<IoFailure>,
    /// The base offset of the newest segment a roll made, until a flush reaches it: the
    /// background flushes the segments before it (Kafka's `flush-log` task that `roll`
    /// schedules), so that rolled segments do not stay unsynced until shutdown.
    roll_flush_to: Option<i64>,
}

impl State {
    /// The newest roll's base offset while the segments before it are not yet all durable.
    fn roll_flush_pending(&self) -> Option<i64> {
        self.roll_flush_to.filter(|base| *base > self.local.recovery_point())
    }
}

/// A topic partition's log (Kafka's `UnifiedLog`).
#[derive(Debug)]
pub struct PartitionLog {
    topic_partition: TopicPartition,
    /// The partition directory; it changes only when a move between log directories swaps a
    /// new log in ([`PartitionLog::replace_with`]).
    dir: RwLock<PathBuf>,
    /// Set once the log is loaded (`lazy.rs`): at open, or at the first call that needs it.
    state: std::sync::OnceLock<RwLock<State>>,
    /// Until then, what loading it needs and what the checkpoints keep meanwhile.
    unloaded: Mutex<Option<lazy::Unloaded>>,
    /// One flush at a time; appends and reads do not take it.
    flush_lock: Mutex<()>,
    /// Signalled whenever the recovery point moves, for callers waiting to be durable.
    durable: (Mutex<i64>, Condvar),
    /// Bumped, under the state lock for writing, whenever segments leave the log or shrink
    /// (retention, truncation, a swap): the log cleaner reads segments without the lock and
    /// swaps its output in only if nothing of the kind happened meanwhile.
    segments_generation: std::sync::atomic::AtomicU64,
    /// The manager's background queue (`background.rs`), set once; none in tools and tests.
    background: std::sync::OnceLock<Arc<BackgroundQueue>>,
    /// Whether the log is queued: a mutation queues it once, not at every call.
    queued: std::sync::atomic::AtomicBool,
}

impl PartitionLog {
    /// The topic partition.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.topic_partition
    }

    /// The partition directory.
    pub fn dir(&self) -> PathBuf {
        self.dir.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn read_state(&self) -> Result<RwLockReadGuard<'_, State>> {
        let state = self.state()?.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.poisoned {
            return Err(Error::Offline { dir: self.dir() });
        }
        Ok(state)
    }

    fn write_state(&self) -> Result<RwLockWriteGuard<'_, State>> {
        self.mark_background(); // every mutation comes here: the manager's background looks
        let state = self.state()?.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.poisoned {
            return Err(Error::Offline { dir: self.dir() });
        }
        Ok(state)
    }

    /// The topic configuration.
    pub fn config(&self) -> Result<LogConfig> {
        if let Some(config) = self.unloaded_config() {
            return Ok(config);
        }
        Ok(self.read_state()?.config.clone())
    }

    /// The topic's `min.insync.replicas`, without copying the config (a replicated leader
    /// reads it at every append and follower fetch).
    pub fn min_insync_replicas(&self) -> Result<u32> {
        match self.unloaded_config() {
            Some(config) => Ok(config.min_insync_replicas),
            None => Ok(self.read_state()?.config.min_insync_replicas),
        }
    }

    /// Applies a new topic configuration; new segments and appends use it.
    pub fn set_config(&self, config: LogConfig) -> Result<()> {
        if self.set_unloaded_config(&config) {
            return Ok(());
        }
        let mut state = self.write_state()?;
        state.local.set_config(local_config(&config));
        state.config = config;
        Ok(())
    }

    /// The offset of the next record appended.
    pub fn log_end_offset(&self) -> Result<i64> {
        Ok(self.read_state()?.local.log_end_offset())
    }

    /// The earliest offset readable.
    pub fn log_start_offset(&self) -> Result<i64> {
        Ok(self.read_state()?.log_start_offset)
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> Result<i64> {
        Ok(self.read_state()?.high_watermark.message_offset)
    }

    /// The first offset not known to be durable.
    pub fn recovery_point(&self) -> Result<i64> {
        Ok(self.read_state()?.local.recovery_point())
    }

    /// Bytes of all segments.
    pub fn size_bytes(&self) -> Result<u64> {
        Ok(self.read_state()?.local.segments().size_bytes())
    }

    /// Base offsets of the segments.
    pub fn segment_base_offsets(&self) -> Result<Vec<i64>> {
        Ok(self.read_state()?.local.segments().base_offsets())
    }

    /// The topic's durability mode (without cloning the whole configuration).
    pub fn durability(&self) -> Result<DurabilityMode> {
        Ok(self.read_state()?.config.durability)
    }

    /// The latest leader epoch of the epoch cache, if it has any entry.
    pub fn latest_leader_epoch(&self) -> Result<Option<i32>> {
        Ok(self.read_state()?.epoch_cache.latest_epoch())
    }

    /// The leader epoch entries `(epoch, start offset)`.
    pub fn leader_epochs(&self) -> Result<Vec<(i32, i64)>> {
        Ok(self
            .read_state()?
            .epoch_cache
            .entries()
            .iter()
            .map(|e| (e.epoch, e.start_offset))
            .collect())
    }

    /// Validates `records` as a leader does (Kafka's `LogValidator`), assigns offsets from the
    /// log end, stamps `leader_epoch`, rolls when needed, and appends. The result says which
    /// offsets are durable: with `fsync-every-append` all of them.
    pub fn append_as_leader(
        &self,
        records: &[u8],
        leader_epoch: i32,
        origin: AppendOrigin,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let (info, flush_messages) = {
            let mut state = self.write_state()?;
            let info =
                Self::append_locked(&mut state, records, leader_epoch, (origin, None), now_ms)?;
            (info, state.config.flush_messages)
        };
        self.after_append(info, flush_messages, now_ms)
    }

    /// The append of a leader that is its partition's only replica (Kafka's
    /// `Partition.appendRecordsToLeader` with ISR = {self}), under one lock: the leader epoch is
    /// the latest the log has (0 for a new log), the records are validated and appended, and the
    /// high watermark moves to the log end. The result carries everything a produce answers
    /// with and the durability mode, so the caller takes no lock again; the durability mode is
    /// then applied as in [`append_as_leader`](Self::append_as_leader).
    pub fn append_as_sole_leader(
        &self,
        records: &[u8],
        origin: AppendOrigin,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        self.append_as_sole_leader_verified(records, origin, now_ms, None)
    }

    /// Validates `records` as a leader (assigning offsets from the log end, stamping
    /// `leader_epoch`), answers a duplicate of an idempotent producer's batch with its original
    /// offsets, and appends.
    fn append_locked(
        state: &mut State,
        records: &[u8],
        leader_epoch: i32,
        (origin, guard): (AppendOrigin, Option<u64>),
        now_ms: i64,
    ) -> Result<AppendInfo> {
        let validation = validation_config(&state.config);
        let next_offset = state.local.log_end_offset();
        let validated = validate_and_assign_offsets(
            records,
            next_offset,
            leader_epoch,
            now_ms,
            origin,
            &validation,
        )
        .map_err(Error::Validation)?;
        // A leader append is one batch: at most one producer batch, or one marker. Only a
        // client's batch is checked for duplicates, sequence and transaction state (Kafka's
        // `analyzeAndValidateProducerState`): the coordinators write with base sequence 0
        // every time.
        for marker in &validated.txn_markers {
            state.producers.check_end_txn_marker(marker).map_err(Error::Validation)?;
        }
        if let Some(batch) =
            validated.producer_batches.first().filter(|_| origin == AppendOrigin::Client)
        {
            let check = state
                .producers
                .check(batch.producer_id, batch.producer_epoch, batch.first_seq, batch.last_seq)
                .map_err(Error::Validation)?;
            if check == ProducerCheck::Append {
                let producers = &state.producers;
                producers
                    .check_txn_state(batch.producer_id, batch.first_offset, batch.is_transactional)
                    .and_then(|()| producers.check_verification(batch.producer_id, guard))
                    .map_err(Error::Validation)?;
            }
            if let ProducerCheck::Duplicate(original) = check {
                // A retry of an appended batch: its original offsets, nothing written.
                return Ok(AppendInfo {
                    first_offset: original.first_offset,
                    last_offset: original.last_offset,
                    max_timestamp: -1,
                    log_append_time: -1,
                    log_start_offset: state.log_start_offset,
                    n_records: 0,
                    durable_offset: state.local.recovery_point(),
                    high_watermark: state.high_watermark.message_offset,
                    durability: state.config.durability,
                });
            }
        }
        // A coordinator's transactional batch (TxnOffsetCommit's offsets) is checked against its
        // verification guard too.
        if let Some(batch) =
            validated.producer_batches.first().filter(|_| origin != AppendOrigin::Client)
        {
            state
                .producers
                .check_verification(batch.producer_id, guard)
                .map_err(Error::Validation)?;
        }
        let result = append_validated(state, &validated, now_ms);
        poison(state, result)
    }

    /// Appends batches that already carry offsets (a follower, or a restore): they must start at
    /// or after the log end offset and increase.
    pub fn append_as_follower(&self, records: &[u8], now_ms: i64) -> Result<AppendInfo> {
        let (info, flush_messages) = {
            let mut state = self.write_state()?;
            let validation = validation_config(&state.config);
            let log_end_offset = state.local.log_end_offset();
            let validated = analyze_follower_append(records, log_end_offset, &validation)
                .map_err(Error::Validation)?;
            let result = append_validated(&mut state, &validated, now_ms);
            (poison(&mut state, result)?, state.config.flush_messages)
        };
        self.after_append(info, flush_messages, now_ms)
    }

    /// Applies the durability mode once the append is in the page cache.
    /// `flush_messages` is the topic's `flush.messages`, read under the append's lock.
    fn after_append(
        &self,
        mut info: AppendInfo,
        flush_messages: i64,
        now_ms: i64,
    ) -> Result<AppendInfo> {
        // `durable_offset` is the recovery point when the append was made.
        let unflushed = info.last_offset + 1 - info.durable_offset;
        if info.durability == DurabilityMode::FsyncEveryAppend || unflushed >= flush_messages {
            info.durable_offset = self.flush(now_ms)?;
        }
        Ok(info)
    }

    /// Fsyncs everything appended so far (data, then indexes, then the directory if segments
    /// were created) and moves the recovery point to the log end. Returns the durable offset.
    /// Readers and appenders proceed while the fsyncs run.
    pub fn flush(&self, now_ms: i64) -> Result<i64> {
        let _one_flush = self.flush_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.flush_locked(now_ms, None)
    }

    /// Makes every offset below `offset` durable, sharing fsyncs with concurrent callers (group
    /// commit): callers queue for the one flush at a time; each flush covers everything appended
    /// when it starts, so a caller whose offset an earlier flush covered returns without an
    /// fsync of its own. Latency is one to two fsyncs, whatever the background interval.
    /// Returns the durable offset.
    pub fn sync_to(&self, offset: i64, now_ms: i64) -> Result<i64> {
        let _one_flush = self.flush_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let durable = *self.durable.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if durable >= offset {
            if self.is_offline() {
                return Err(Error::Offline { dir: self.dir() });
            }
            return Ok(durable);
        }
        self.flush_locked(now_ms, None)
    }

    /// [`PartitionLog::flush`] with `flush_lock` held: everything below `upto` (the log end
    /// offset when `None`) made durable.
    fn flush_locked(&self, now_ms: i64, upto: Option<i64>) -> Result<i64> {
        let plan = {
            let mut state = self.write_state()?;
            let log_end_offset = state.local.log_end_offset();
            let result = state.local.prepare_flush(upto.unwrap_or(log_end_offset));
            let mut plan = poison(&mut state, result)?;
            // The snapshots of rolls since the last flush become durable with it.
            plan.sync_files_too(state.producers.take_unsynced_snapshots());
            plan
        };
        let executed = plan.execute();
        let mut state = self.state()?.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Err(error) = executed {
            // A failed fsync is never retried: the data's fate is unknown, so the log goes offline.
            let result = poison(&mut state, Err(error));
            state.poisoned = true;
            return result;
        }
        state.local.complete_flush(&plan, now_ms);
        let durable_offset = state.local.recovery_point();
        state.roll_flush_to = state.roll_flush_pending();
        drop(state);
        let (lock, signal) = &self.durable;
        let mut durable = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *durable = (*durable).max(durable_offset);
        signal.notify_all();
        Ok(durable_offset)
    }

    /// Flushes when the topic's `flush.ms` or group-commit interval has passed since the last
    /// flush and there is unflushed data, or else the segments before the newest roll (the
    /// background flusher's job). Returns whether it did.
    pub fn flush_if_due(&self, now_ms: i64) -> Result<bool> {
        let (due, rolled) = {
            let state = self.read_state()?;
            let interval = match state.config.durability {
                DurabilityMode::GroupCommit => {
                    state.config.group_commit_interval_ms.min(state.config.flush_ms)
                }
                _ => state.config.flush_ms,
            };
            let unflushed = state.local.log_end_offset() > state.local.recovery_point();
            let rolled = state.roll_flush_pending();
            (unflushed && now_ms.saturating_sub(state.local.last_flush_ms()) >= interval, rolled)
        };
        if due {
            self.flush(now_ms)?;
        } else if let Some(base) = rolled {
            let _one_flush =
                self.flush_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            self.flush_locked(now_ms, Some(base))?;
        }
        Ok(due || rolled.is_some())
    }

    /// Blocks until every offset below `offset` is durable, or `timeout` passes. Returns whether
    /// it became durable (group commit: the background flusher signals it).
    pub fn wait_durable(&self, offset: i64, timeout: Duration) -> Result<bool> {
        let (lock, signal) = &self.durable;
        let durable = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (durable, _) = signal
            .wait_timeout_while(durable, timeout, |durable| *durable < offset && !self.is_offline())
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.is_offline() {
            return Err(Error::Offline { dir: self.dir() });
        }
        Ok(*durable >= offset)
    }

    /// Reads whole batches from `start_offset`, up to `max_bytes` (or one whole batch with
    /// `min_one_message`), never at or past the bound `isolation` sets (Kafka's `read`).
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u32,
        isolation: Isolation,
        min_one_message: bool,
    ) -> Result<FetchData> {
        self.read_info(start_offset, max_bytes, isolation, min_one_message)?.data
    }

    /// [`read`](Self::read), with the offsets that bounded it, all under one lock (Kafka's
    /// `UnifiedLog.read` returning a `LogReadInfo`). Only an offline log is an `Err`; an offset
    /// out of range is in [`LogReadInfo::data`].
    pub fn read_info(
        &self,
        start_offset: i64,
        max_bytes: u32,
        isolation: Isolation,
        min_one_message: bool,
    ) -> Result<LogReadInfo> {
        self.read_info_with(
            start_offset,
            isolation,
            |local, bound| local.read(start_offset, max_bytes, min_one_message, bound),
            |local, fetch| aborted_transactions(local, start_offset, fetch),
        )
    }

    /// [`read_info`](Self::read_info) whose records may be left in their segment's file, to be
    /// sent from there ([`LocalLog::read_file_slice`]): the same bytes and offsets, the
    /// aborted transactions of a sliced read_committed read collected up to the slice's
    /// upper bound (Kafka's `collectAbortedTransactions` bound: at most a few more than a
    /// read into memory lists, which the consumer ignores).
    pub fn read_info_file_slice(
        &self,
        start_offset: i64,
        max_bytes: u32,
        isolation: Isolation,
        min_one_message: bool,
    ) -> Result<LogReadInfo<FetchedRecords>> {
        self.read_info_with(
            start_offset,
            isolation,
            |local, bound| local.read_file_slice(start_offset, max_bytes, min_one_message, bound),
            |local, fetched| match fetched {
                FetchedRecords::Memory(fetch) => aborted_transactions(local, start_offset, fetch),
                FetchedRecords::File { upper_bound_offset, .. } => {
                    aborted_transactions_below(local, start_offset, *upper_bound_offset)
                }
            },
        )
    }

    /// A read under one read lock: `read` bounded by the isolation's offset, the offsets
    /// around it, and for read_committed the aborted transactions `aborted` lists.
    fn read_info_with<D>(
        &self,
        start_offset: i64,
        isolation: Isolation,
        read: impl FnOnce(&LocalLog, LogOffsetMetadata) -> Result<D>,
        aborted: impl FnOnce(&LocalLog, &D) -> Vec<AbortedTransaction>,
    ) -> Result<LogReadInfo<D>> {
        let state = self.read_state()?;
        let log_end_offset = state.local.log_end_offset();
        let data = if start_offset < state.log_start_offset || start_offset > log_end_offset {
            Err(Error::OffsetOutOfRange {
                requested: start_offset,
                log_start: state.log_start_offset,
                log_end: log_end_offset,
            })
        } else if start_offset < state.local_log_start_offset {
            Err(Error::OffsetNotLocal {
                requested: start_offset,
                local_log_start: state.local_log_start_offset,
            })
        } else {
            let bound = match isolation {
                Isolation::LogEnd => Ok(state.local.next_offset_metadata()),
                Isolation::HighWatermark => Ok(state.high_watermark),
                Isolation::TxnCommitted => last_stable_offset_metadata(&state),
            };
            bound.and_then(|bound| read(&state.local, bound))
        };
        let aborted_transactions = (isolation == Isolation::TxnCommitted)
            .then(|| data.as_ref().map(|fetch| aborted(&state.local, fetch)).unwrap_or_default());
        Ok(LogReadInfo {
            data,
            high_watermark: state.high_watermark.message_offset,
            last_stable_offset: last_stable_offset(&state),
            aborted_transactions,
            log_start_offset: state.log_start_offset,
            log_end_offset,
            leader_epoch: state.epoch_cache.latest_epoch(),
        })
    }

    /// The end offset of `requested_epoch` (OffsetForLeaderEpoch): `(epoch, end offset)` from the
    /// leader-epoch cache, as Kafka's `LeaderEpochFileCache.endOffsetFor`.
    pub fn end_offset_for_epoch(&self, requested_epoch: i32) -> Result<(i32, i64)> {
        let state = self.read_state()?;
        Ok(state.epoch_cache.end_offset_for(requested_epoch, state.local.log_end_offset()))
    }

    /// Sets the high watermark, clamped to `[log start, log end]` (Kafka's
    /// `updateHighWatermark`). Returns the value set.
    pub fn update_high_watermark(&self, offset: i64) -> Result<i64> {
        let mut state = self.write_state()?;
        let clamped = offset.clamp(state.local_log_start_offset, state.local.log_end_offset());
        let metadata = offset_metadata(&state.local, clamped)?;
        set_high_watermark(&mut state, metadata);
        Ok(clamped)
    }

    /// Moves the high watermark of a leader that is its partition's only replica to the log
    /// end (Kafka's `Partition.maybeIncrementLeaderHW` with ISR = {self}: the minimum log end
    /// of the in-sync replicas is this log's end). Called when the broker becomes leader, which
    /// for one node is every load, and after every append. The high-watermark checkpoint is
    /// still read at load (`update_high_watermark`) and written, for when followers exist;
    /// with no follower it only ever lags. Returns the new high watermark.
    pub fn maybe_increment_leader_high_watermark(&self) -> Result<i64> {
        let mut state = self.write_state()?;
        let log_end_offset = state.local.log_end_offset();
        if state.high_watermark.message_offset < log_end_offset {
            let log_end = state.local.next_offset_metadata();
            set_high_watermark(&mut state, log_end);
        }
        Ok(state.high_watermark.message_offset)
    }

    /// Raises the log start offset (DeleteRecords); it must not pass the high watermark. Whole
    /// segments below it are deleted by the next retention pass, or at once by
    /// [`delete_segments_below_log_start`](Self::delete_segments_below_log_start).
    pub fn maybe_increment_log_start_offset(&self, new_start: i64) -> Result<i64> {
        let mut state = self.write_state()?;
        if new_start > state.high_watermark.message_offset {
            return Err(Error::OffsetOutOfRange {
                requested: new_start,
                log_start: state.log_start_offset,
                log_end: state.high_watermark.message_offset,
            });
        }
        if new_start > state.log_start_offset {
            state.log_start_offset = new_start;
            state.local_log_start_offset = state.local_log_start_offset.max(new_start);
            state.producers.on_log_start_offset_incremented(new_start);
            let result = state.epoch_cache.truncate_from_start(new_start);
            poison(&mut state, result)?;
        }
        Ok(state.log_start_offset)
    }

    /// Applies retention (Kafka's `deleteOldSegments`): segments wholly below the log start,
    /// and, when `cleanup.policy` has `delete`, those past `retention.ms` or over
    /// `retention.bytes`. Segments at or above the high watermark stay. Returns how many went.
    pub fn delete_old_segments(&self, now_ms: i64) -> Result<usize> {
        let mut state = self.write_state()?;
        let result = delete_segments(&mut state, now_ms, Retention::All);
        self.segments_changed_if(result.as_ref().is_ok_and(|n| *n > 0));
        poison(&mut state, result)
    }

    /// Deletes only the segments wholly below the log start offset (Kafka's
    /// `deleteLogStartOffsetBreachedSegments`), for DeleteRecords: time and size retention are
    /// left to the background pass. Returns how many went.
    pub fn delete_segments_below_log_start(&self, now_ms: i64) -> Result<usize> {
        let mut state = self.write_state()?;
        let result = delete_segments(&mut state, now_ms, Retention::LogStartOnly);
        self.segments_changed_if(result.as_ref().is_ok_and(|n| *n > 0));
        poison(&mut state, result)
    }

    /// Starts a new, empty active segment at the log end unless the active one is empty already
    /// (Kafka's `UnifiedLog.roll`): `seglog compact` rolls so that the whole log can be cleaned.
    pub fn roll(&self, now_ms: i64) -> Result<()> {
        let mut state = self.write_state()?;
        if state.local.active_segment().size_bytes() == 0 {
            return Ok(());
        }
        let result = roll_and_snapshot(&mut state, None, now_ms);
        poison(&mut state, result).map(|_| ())
    }

    /// Removes `.deleted` files whose delay has passed.
    pub fn delete_expired(&self, now_ms: i64) -> Result<usize> {
        let mut state = self.write_state()?;
        let result = state.local.delete_expired(now_ms);
        poison(&mut state, result)
    }

    /// Removes every record at or after `target` (Kafka's `truncateTo`). Returns whether
    /// anything was removed.
    pub fn truncate_to(&self, target: i64, now_ms: i64) -> Result<bool> {
        if target < 0 {
            return Err(Error::InvalidArgument(format!(
                "cannot truncate to a negative offset {target}"
            )));
        }
        let mut state = self.write_state()?;
        self.segments_changed_if(true);
        let result = truncate_to(&mut state, target, now_ms);
        poison(&mut state, result)
    }

    /// Deletes everything and starts again at `new_offset` (Kafka's `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&self, new_offset: i64, now_ms: i64) -> Result<()> {
        let mut state = self.write_state()?;
        self.segments_changed_if(true);
        let result = (|| {
            let state: &mut State = &mut state;
            state.local.truncate_fully_and_start_at(new_offset, now_ms)?;
            state.epoch_cache.clear()?;
            state.producers.truncate_fully_and_start_at(new_offset)?;
            state.log_start_offset = new_offset;
            state.local_log_start_offset = new_offset;
            rebuild_producer_state(
                &mut state.producers,
                &state.local,
                new_offset,
                new_offset,
                false,
            )?;
            let metadata = offset_metadata(&state.local, new_offset)?;
            set_high_watermark(state, metadata);
            Ok(())
        })();
        poison(&mut state, result)
    }

    /// Flushes everything, takes a producer snapshot at the log end offset (so that a restart
    /// need not scan the log), and closes the segments (trimmed files, final time index entries).
    pub fn close(&self, now_ms: i64) -> Result<()> {
        if self.unloaded_clean() {
            return Ok(()); // its files are as the last clean shutdown left them
        }
        self.flush(now_ms)?;
        let mut state = self.write_state()?;
        let log_end_offset = state.local.log_end_offset();
        let result = (|| {
            state.producers.update_map_end_offset(log_end_offset);
            state.producers.take_snapshot(true)?;
            state.local.close()
        })();
        poison(&mut state, result)
    }

    /// Bumps [`PartitionLog::segments_generation`] when `changed`; called with the state lock
    /// held for writing.
    fn segments_changed_if(&self, changed: bool) {
        if changed {
            self.segments_generation.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// The epoch and last batch of an idempotent producer, when the log knows it (Kafka's
    /// `ProducerStateManager.lastEntry`).
    pub fn producer_last_entry(
        &self,
        producer_id: i64,
    ) -> Result<Option<(i16, Option<BatchMetadata>)>> {
        Ok(self.read_state()?.producers.last_entry(producer_id))
    }

    /// The offsets of the producer `.snapshot` files.
    pub fn producer_snapshot_offsets(&self) -> Result<Vec<i64>> {
        Ok(self.read_state()?.producers.snapshot_offsets())
    }

    /// Swaps another log in place of this one (the end of a move between log directories,
    /// Kafka's `replaceCurrentWithFutureLog`). With every appender, reader and flusher of this
    /// log held off (its flush lock, then its state lock for writing), `swap` sees the log as it
    /// stands ([`Frozen`]), finishes the copy and the renames, and returns the log to take its
    /// place; its state and directory then become this log's, so every handle on this
    /// `PartitionLog` sees the new one, and none can write to the old files after the swap.
    ///
    /// `swap` must not call back into this log (it holds its locks). An error it returns with
    /// `true` (past its commit point: this log's files were renamed away) takes this log
    /// offline, so nothing more is acknowledged from them.
    pub(crate) fn replace_with<E, F>(&self, swap: F) -> std::result::Result<(), E>
    where
        E: From<Error>,
        F: FnOnce(&Frozen<'_>) -> std::result::Result<PartitionLog, (E, bool)>,
    {
        let _one_flush = self.flush_lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut state = self.write_state()?;
        self.segments_changed_if(true);
        let replacement = match swap(&Frozen { state: &state }) {
            Ok(replacement) => replacement,
            Err((error, committed)) => {
                if committed {
                    state.poisoned = true;
                }
                return Err(error);
            }
        };
        let PartitionLog { dir, state: new_state, .. } = replacement;
        let Some(new_state) = new_state.into_inner() else {
            return Err(Error::InvalidArgument("a log swapped in must be loaded".to_owned()).into());
        };
        let old = std::mem::replace(
            &mut *state,
            new_state.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let recovery_point = state.local.recovery_point();
        *self.dir.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            dir.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        drop(state);
        drop(old);
        let (lock, signal) = &self.durable;
        let mut durable = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *durable = (*durable).max(recovery_point);
        signal.notify_all();
        Ok(())
    }
}

/// A log held still for [`PartitionLog::replace_with`]: what the swap reads of it.
#[derive(Debug)]
pub(crate) struct Frozen<'a> {
    state: &'a State,
}

impl Frozen<'_> {
    /// The log end offset.
    pub(crate) fn log_end_offset(&self) -> i64 {
        self.state.local.log_end_offset()
    }

    /// The log start offset.
    pub(crate) fn log_start_offset(&self) -> i64 {
        self.state.log_start_offset
    }

    /// The high watermark.
    pub(crate) fn high_watermark(&self) -> i64 {
        self.state.high_watermark.message_offset
    }

    /// Whole batches from `start_offset` up to the log end, at most `max_bytes` (at least one).
    pub(crate) fn read(&self, start_offset: i64, max_bytes: u32) -> Result<FetchData> {
        let bound = self.state.local.next_offset_metadata();
        self.state.local.read(start_offset, max_bytes, true, bound)
    }
}

/// Marks the log offline after an I/O error, and passes the error on.
fn poison<T>(state: &mut State, result: Result<T>) -> Result<T> {
    if let Err(error @ Error::Io { .. }) = &result {
        if !state.poisoned {
            state.failure = IoFailure::of(error);
        }
        state.poisoned = true;
    }
    result
}

/// Rolls when needed and appends a validated append to the active segment.
fn append_validated(
    state: &mut State,
    validated: &ValidatedAppend<'_>,
    now_ms: i64,
) -> Result<AppendInfo> {
    let segment_bytes = state.config.segment_bytes as usize;
    if validated.records.len() > segment_bytes {
        return Err(Error::Validation(super::validator::ValidationError::RecordBatchTooLarge {
            records_bytes: validated.records.len(),
            segment_bytes,
        }));
    }
    let roll = RollParams {
        segment_ms_max: state.config.max_segment_ms(),
        segment_bytes_max: state.config.segment_bytes,
        max_timestamp_in_messages: validated.max_timestamp,
        max_offset_in_messages: validated.last_offset,
        messages_bytes: validated.records.len() as u32,
        now_ms,
    };
    if state.local.active_segment().should_roll(&roll) {
        let expected = if validated.has_legacy_batches {
            validated.last_offset - i64::from(i32::MAX)
        } else {
            validated.first_offset
        };
        roll_and_snapshot(state, Some(expected), now_ms)?;
    }
    state.local.append_parts(
        validated.last_offset,
        validated.max_timestamp,
        validated.shallow_offset_of_max_timestamp,
        &validated.records.parts(),
    )?;
    update_producers(state, validated)?;
    state.producers.update_map_end_offset(state.local.log_end_offset());
    for (epoch, base_offset) in &validated.batches {
        if *epoch >= 0 {
            state.epoch_cache.assign(*epoch, *base_offset)?;
        }
    }
    Ok(AppendInfo {
        first_offset: validated.first_offset,
        last_offset: validated.last_offset,
        max_timestamp: validated.max_timestamp,
        log_append_time: validated.log_append_time,
        log_start_offset: state.log_start_offset,
        n_records: validated.n_records,
        durable_offset: state.local.recovery_point(),
        high_watermark: state.high_watermark.message_offset,
        durability: state.config.durability,
    })
}

/// Rolls to a new active segment (Kafka's `UnifiedLog.roll`) and takes a producer snapshot at
/// its base offset, so that recovering the new segment can start from it. The snapshot is not
/// fsynced here, under the lock: the next flush does it (Kafka's KAFKA-15046).
fn roll_and_snapshot(
    state: &mut State,
    expected_next_offset: Option<i64>,
    now_ms: i64,
) -> Result<i64> {
    let new_base = state.local.roll(expected_next_offset, now_ms)?;
    state.roll_flush_to = Some(new_base);
    state.producers.update_map_end_offset(new_base);
    state.producers.take_snapshot(false)?;
    Ok(new_base)
}

/// The full metadata of `offset` (segment and position), as the read path needs it.
fn offset_metadata(local: &LocalLog, offset: i64) -> Result<LogOffsetMetadata> {
    if offset >= local.log_end_offset() {
        return Ok(LogOffsetMetadata { message_offset: offset, ..local.next_offset_metadata() });
    }
    let segment =
        local.segments().floor_segment(offset).or_else(|| local.segments().first_segment());
    let Some(segment) = segment else { return Ok(local.next_offset_metadata()) };
    let position =
        segment.translate_offset(offset, 0)?.map_or(segment.size_bytes(), |found| found.position);
    Ok(LogOffsetMetadata {
        message_offset: offset,
        segment_base_offset: segment.base_offset(),
        relative_position: position,
    })
}

fn truncate_to(state: &mut State, target: i64, now_ms: i64) -> Result<bool> {
    let log_end_offset = state.local.log_end_offset();
    if target >= log_end_offset {
        state.epoch_cache.truncate_from_end(log_end_offset)?;
        return Ok(false);
    }
    let first_base = state.local.segments().first_segment().map_or(0, LogSegment::base_offset);
    if target < first_base {
        state.local.truncate_fully_and_start_at(target, now_ms)?;
        state.epoch_cache.clear()?;
        state.producers.truncate_fully_and_start_at(target)?;
        state.log_start_offset = target;
        state.local_log_start_offset = target;
    } else {
        state.local.truncate_to(target, now_ms)?;
        state.epoch_cache.truncate_from_end(target)?;
        state.log_start_offset = state.log_start_offset.min(target);
        state.local_log_start_offset = state.local_log_start_offset.min(target);
    }
    // Snapshots above the new end go; the state is reloaded from the newest one left and the
    // batches after it (Kafka's `rebuildProducerState(targetOffset)`).
    let log_end_offset = state.local.log_end_offset();
    rebuild_producer_state(
        &mut state.producers,
        &state.local,
        state.log_start_offset,
        log_end_offset,
        false,
    )?;
    let high_watermark = state.high_watermark.message_offset.min(state.local.log_end_offset());
    let metadata = offset_metadata(&state.local, high_watermark)?;
    set_high_watermark(state, metadata);
    Ok(true)
}

/// Which of Kafka's `deleteOldSegments` checks a deletion pass applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retention {
    /// The log start offset, `retention.ms` and `retention.bytes` (the background pass).
    All,
    /// Only the log start offset (DeleteRecords).
    LogStartOnly,
}

/// The retention pass of Kafka's `deleteOldSegments`. For a tiered topic it is local retention:
/// `local.retention.ms` and `local.retention.bytes` over the local segments, only segments the
/// bucket holds go, and the log start stays where the remote part begins.
fn delete_segments(state: &mut State, now_ms: i64, retention: Retention) -> Result<usize> {
    let high_watermark = state.high_watermark.message_offset;
    let log_end_offset = state.local.log_end_offset();
    let delete_policy = retention == Retention::All && state.config.is_delete();
    let tiered = state.config.remote_storage_enable;
    let (retention_ms, retention_bytes) = if tiered {
        (state.config.local_retention_ms_resolved(), state.config.local_retention_bytes_resolved())
    } else {
        (state.config.retention_ms, state.config.retention_bytes)
    };
    let uploaded_below = state.highest_offset_in_remote_storage.saturating_add(1);
    let segments: Vec<&LogSegment> = state.local.segments().iter().collect();
    let total_bytes: i64 = segments.iter().map(|s| i64::from(s.size_bytes())).sum();
    let mut size_left = total_bytes.saturating_sub(retention_bytes);
    let mut deletable = Vec::new();
    for (segment_idx, segment) in segments.iter().enumerate() {
        let next_base = segments.get(segment_idx + 1).map(|next| next.base_offset());
        let upper_bound = next_base.unwrap_or(log_end_offset);
        let is_last_and_empty = next_base.is_none() && segment.size_bytes() == 0;
        if high_watermark < upper_bound || is_last_and_empty {
            break;
        }
        let start_offset_breached = next_base.is_some_and(|next| next <= state.log_start_offset);
        let time_breached = delete_policy
            && retention_ms >= 0
            && now_ms.saturating_sub(segment.largest_timestamp()?) > retention_ms;
        let size_breached = delete_policy
            && retention_bytes >= 0
            && total_bytes >= retention_bytes
            && size_left - i64::from(segment.size_bytes()) >= 0;
        if !(start_offset_breached || time_breached || size_breached) {
            break;
        }
        if tiered && !start_offset_breached && upper_bound > uploaded_below {
            break; // not in the bucket yet: it stays, however old or large
        }
        if size_breached {
            size_left -= i64::from(segment.size_bytes());
        }
        deletable.push(segment.base_offset());
    }
    if deletable.is_empty() {
        return Ok(0);
    }
    if deletable.len() == state.local.segments().len() {
        // Every segment goes: roll an empty active segment first so the log keeps its end.
        roll_and_snapshot(state, None, now_ms)?;
        let active_base = state.local.active_segment().base_offset();
        deletable.retain(|base| *base != active_base);
    }
    let next_start = state
        .local
        .segments()
        .higher_segment(*deletable.last().unwrap_or(&0))
        .map_or(log_end_offset, LogSegment::base_offset);
    state.local.remove_and_delete_segments(&deletable, true, now_ms)?;
    state.local_log_start_offset = state.local_log_start_offset.max(next_start);
    if next_start > state.log_start_offset && !tiered {
        state.log_start_offset = next_start;
        state.epoch_cache.truncate_from_start(next_start)?;
        state.producers.on_log_start_offset_incremented(next_start);
    }
    // The deleted segments' snapshots go with them (Kafka's `deleteProducerSnapshots`, here
    // at once rather than after `file.delete.delay.ms`: nothing reads a snapshot but a load).
    state.producers.delete_snapshots_before(next_start)?;
    Ok(deletable.len())
}
