//! Moving a partition between the log directories of one broker (Kafka's
//! `ReplicaManager.alterReplicaLogDirs`, the `ReplicaAlterLogDirsThread` and
//! `LogManager.replaceCurrentWithFutureLog`), and what DescribeLogDirs reports of each directory.
//!
//! A move creates `topic-N.<id>-future` in the target directory and copies the current log into
//! it as a follower would (batches with their offsets and leader epochs), a bounded number of
//! bytes per [`LogManager::tick`]. Once the future log has caught up, the swap runs with the
//! current log held still ([`PartitionLog::replace_with`]): the last batches are copied, the
//! future log is closed (everything fsynced), and then
//!
//! 1. the current directory is renamed `topic-N.<id>-delete` and its parent fsynced: the commit
//!    point, after which the future log is the partition;
//! 2. the future directory is renamed `topic-N` and its parent fsynced;
//! 3. the log there is opened and takes the current log's place, for every handle on it.
//!
//! A crash before step 1 is durable leaves the live log and the future one: the next open loads
//! the future log and the copy resumes (Kafka's behaviour). A crash between 1 and 2 leaves a
//! `-future` directory and no live one anywhere: the next open finishes the move (the future
//! log held everything when step 1 began). After 2 the partition is simply live in its new
//! directory. So exactly one directory is the partition at every moment.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, TryLockError};

use seglog_format::names::{DirState, PartitionDir};
use seglog_format::{Batches, DecodeLimits};

use super::{LogManager, OpenReport};
use crate::dirs::meta::PartitionMetadata;
use crate::error::{Error, Result};
use crate::io::FsSpace;
use crate::log::load::{LoadParams, LoadReport};
use crate::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use crate::segment::FetchData;

/// DescribeLogDirs' `offset_lag` when the current log of a future one is unavailable (Kafka's
/// `DescribeLogDirsResponse.INVALID_OFFSET_LAG`).
pub const INVALID_OFFSET_LAG: i64 = -1;

/// One log directory as DescribeLogDirs shows it.
#[derive(Debug)]
pub struct LogDirDescription {
    /// The directory, made absolute as Kafka shows it.
    pub path: PathBuf,
    /// Why the directory cannot be described: [`Error::Offline`] after an I/O error, or the
    /// failed file-system query. `space` and `replicas` are empty then.
    pub error: Option<Error>,
    /// The size and free space of its file system.
    pub space: Option<FsSpace>,
    /// Its replicas, in partition order, a partition's future log after its current one.
    pub replicas: Vec<ReplicaDescription>,
}

/// One replica (a current or a future log) of a log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaDescription {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// Bytes of its segments (Kafka's `UnifiedLog.size`).
    pub size_bytes: u64,
    /// 0 for a current log (the leader is its own high watermark); for a future log, the current
    /// log end offset minus the future one.
    pub offset_lag: i64,
    /// A future log: the target of a move.
    pub is_future: bool,
}

/// The two logs of a copy step, and which one an error came from.
enum CopyError {
    /// Reading the current log failed.
    Source(Error),
    /// Writing the future log failed.
    Future(Error),
}

/// What the copy reads of the current log.
#[derive(Debug, Clone, Copy)]
struct SourceOffsets {
    log_start_offset: i64,
    log_end_offset: i64,
    high_watermark: i64,
}

/// The two logs of a move: the current one and its future one, with their directories.
#[derive(Clone, Copy)]
struct Logs<'a> {
    current_idx: usize,
    current: &'a PartitionLog,
    future_idx: usize,
    future: &'a PartitionLog,
}

/// Why a swap did not happen.
enum SwapFailure {
    /// More was appended than one step copies; the next tick tries again.
    NotCaughtUp,
    /// An error in the directory `dir_idx`.
    Failed { dir_idx: usize, error: Error },
    /// The current log was offline already.
    CurrentOffline(Error),
}

impl From<Error> for SwapFailure {
    fn from(error: Error) -> Self {
        Self::CurrentOffline(error)
    }
}

/// Copies batches from the current log (read through `read`) into `future`, at most about
/// `budget_bytes` (always at least one batch), as Kafka's `ReplicaAlterLogDirsThread` fetches
/// and appends as a follower; the future log's high watermark and log start offset follow the
/// current log's. Adds the bytes copied to `copied_bytes`; returns whether the future log reached
/// `source.log_end_offset`.
fn catch_up(
    future: &PartitionLog,
    source: SourceOffsets,
    read: impl Fn(i64, u32) -> Result<FetchData>,
    budget_bytes: u32,
    copied_bytes: &mut u64,
    now_ms: i64,
) -> std::result::Result<bool, CopyError> {
    let mut future_end = future.log_end_offset().map_err(CopyError::Future)?;
    if future_end > source.log_end_offset {
        // The current log lost a tail (an unclean restart) that the future log had copied.
        future.truncate_to(source.log_end_offset, now_ms).map_err(CopyError::Future)?;
        future_end = source.log_end_offset;
    }
    let mut left_bytes = u64::from(budget_bytes);
    if future_end < source.log_start_offset {
        // What the future log lacks is gone from the current one (retention, DeleteRecords):
        // start again at the batch holding the log start offset.
        let data = read(source.log_start_offset, budget_bytes).map_err(CopyError::Source)?;
        let first_base = match Batches::new(&data.records).next() {
            Some(Ok(positioned)) => positioned
                .batch
                .base_offset(DecodeLimits::default())
                .map_err(|error| CopyError::Source(Error::InvalidArgument(error.to_string())))?,
            _ => source.log_start_offset,
        };
        future.truncate_fully_and_start_at(first_base, now_ms).map_err(CopyError::Future)?;
        if !data.records.is_empty() {
            future.append_as_follower(&data.records, now_ms).map_err(CopyError::Future)?;
        }
        left_bytes = left_bytes.saturating_sub(data.records.len() as u64);
        *copied_bytes += data.records.len() as u64;
        future_end = future.log_end_offset().map_err(CopyError::Future)?;
    }
    while left_bytes > 0 && future_end < source.log_end_offset {
        let max_bytes = u32::try_from(left_bytes).unwrap_or(u32::MAX);
        let data = read(future_end, max_bytes).map_err(CopyError::Source)?;
        if data.records.is_empty() {
            break;
        }
        future.append_as_follower(&data.records, now_ms).map_err(CopyError::Future)?;
        left_bytes = left_bytes.saturating_sub(data.records.len() as u64);
        *copied_bytes += data.records.len() as u64;
        future_end = future.log_end_offset().map_err(CopyError::Future)?;
    }
    let high_watermark =
        future.update_high_watermark(source.high_watermark).map_err(CopyError::Future)?;
    let future_start = future.log_start_offset().map_err(CopyError::Future)?;
    let new_start = source.log_start_offset.min(high_watermark);
    if new_start > future_start {
        future.maybe_increment_log_start_offset(new_start).map_err(CopyError::Future)?;
    }
    Ok(future_end == source.log_end_offset)
}

/// `path` made absolute without touching the disk (Kafka compares `getAbsolutePath`s).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

impl LogManager {
    /// The log directories, as configured.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|dir| dir.path.clone()).collect()
    }

    /// Every log directory with its space and the replicas in it, limited to `wanted` when
    /// given (Kafka's `ReplicaManager.describeLogDirs`). An offline directory is listed with
    /// [`Error::Offline`] and nothing else.
    pub fn describe_log_dirs(
        &self,
        wanted: Option<&BTreeSet<TopicPartition>>,
    ) -> Vec<LogDirDescription> {
        self.refresh_offline();
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner).clone();
        let futures = self.futures.read().unwrap_or_else(PoisonError::into_inner).clone();
        let is_wanted = |tp: &TopicPartition| wanted.is_none_or(|wanted| wanted.contains(tp));
        let mut described = Vec::new();
        for (dir_idx, dir) in self.dirs.iter().enumerate() {
            let mut description = LogDirDescription {
                path: absolute(&dir.path),
                error: None,
                space: None,
                replicas: Vec::new(),
            };
            if self.dir_is_offline(dir_idx) {
                description.error = Some(Error::Offline { dir: dir.path.clone() });
                described.push(description);
                continue;
            }
            match self.fs.space(&dir.path) {
                Ok(space) => description.space = Some(space),
                Err(error) => {
                    description.error = Some(Error::io("statvfs", &dir.path, error));
                    described.push(description);
                    continue;
                }
            }
            for (tp, (log_dir_idx, log)) in &logs {
                if *log_dir_idx != dir_idx || !is_wanted(tp) {
                    continue;
                }
                let Ok(size_bytes) = log.size_bytes() else { continue };
                description.replicas.push(ReplicaDescription {
                    topic_partition: tp.clone(),
                    size_bytes,
                    offset_lag: 0,
                    is_future: false,
                });
            }
            for (tp, (future_dir_idx, future)) in &futures {
                if *future_dir_idx != dir_idx || !is_wanted(tp) {
                    continue;
                }
                let (Ok(size_bytes), Ok(future_end)) =
                    (future.size_bytes(), future.log_end_offset())
                else {
                    continue;
                };
                let offset_lag = logs
                    .get(tp)
                    .and_then(|(_, current)| current.log_end_offset().ok())
                    .map_or(INVALID_OFFSET_LAG, |current_end| current_end - future_end);
                description.replicas.push(ReplicaDescription {
                    topic_partition: tp.clone(),
                    size_bytes,
                    offset_lag,
                    is_future: true,
                });
            }
            description.replicas.sort_by(|a, b| {
                (&a.topic_partition, a.is_future).cmp(&(&b.topic_partition, b.is_future))
            });
            described.push(description);
        }
        described
    }

    /// Moves `tp` to the log directory `dir` (Kafka's `alterReplicaLogDirs`): a future log is
    /// created there and filled by [`LogManager::tick`], which swaps it in once it has caught up.
    /// Moving to the directory the partition is in succeeds and cancels a move elsewhere; moving
    /// to where it is already being moved changes nothing.
    pub fn alter_log_dir(&self, tp: &TopicPartition, dir: &Path) -> Result<()> {
        let mut caught_up = self.moves.lock().unwrap_or_else(PoisonError::into_inner);
        let wanted = absolute(dir);
        let target_idx = self
            .dirs
            .iter()
            .position(|d| absolute(&d.path) == wanted)
            .ok_or_else(|| Error::LogDirNotFound { dir: dir.to_owned() })?;
        self.refresh_offline();
        if self.dir_is_offline(target_idx) {
            return Err(Error::Offline { dir: dir.to_owned() });
        }
        let current = self.get_log(tp)?;
        let current_idx = self
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(tp)
            .map(|(dir_idx, _)| *dir_idx)
            .ok_or_else(|| Error::UnknownTopicOrPartition {
                topic: tp.topic.clone(),
                partition: tp.partition,
            })?;
        let moving_to =
            self.futures.read().unwrap_or_else(PoisonError::into_inner).get(tp).map(|(d, _)| *d);
        if moving_to == Some(target_idx) {
            return Ok(());
        }
        if moving_to.is_some() {
            self.abort_move(tp, &mut caught_up)?;
        }
        if current_idx == target_idx {
            return Ok(());
        }
        // As Kafka: no future log while a directory is offline, so that a partition never gets
        // future logs in two directories.
        if let Some(offline) = self.offline_dirs().into_iter().next() {
            return Err(Error::Offline { dir: offline });
        }
        // The target's checkpoints must not hold this partition's entries from an earlier stay
        // there, which the future log would load after a crash.
        self.checkpoint()?;
        let topic_id = self.topic_id(&tp.topic);
        let config = self.topic_config(&tp.topic)?;
        let parent = self.dirs.get(target_idx).map(|d| d.path.clone()).unwrap_or_default();
        let path = parent.join(
            PartitionDir {
                topic: tp.topic.clone(),
                partition: tp.partition,
                state: DirState::Future(self.unique_dir_id()),
            }
            .to_name(),
        );
        let now_ms = self.clock.now_ms();
        let result = (|| {
            self.fs.create_dir_all(&path).map_err(|e| Error::io("create future dir", &path, e))?;
            self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e))?;
            if let Some(topic_id) = topic_id {
                // The load's fsync of the new directory, after its first segment, covers it.
                PartitionMetadata::new(topic_id).write_before_dir_sync(self.fs.as_ref(), &path)?;
            }
            let params = LoadParams {
                had_clean_shutdown: true,
                log_start_offset_checkpoint: 0,
                recovery_point_checkpoint: 0,
                now_ms,
            };
            PartitionLog::open(Arc::clone(&self.fs), &path, tp.clone(), config, params)
        })();
        let (future, _) = self.observe(target_idx, result)?;
        drop(current);
        self.futures
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tp.clone(), (target_idx, Arc::new(future)));
        Ok(())
    }

    /// A name part for a `-delete` or `-future` directory: 32 hex digits, never reused.
    fn unique_dir_id(&self) -> String {
        let unique = self.delete_counter.fetch_add(1, Ordering::SeqCst);
        format!("{:016x}{:016x}", self.clock.now_ms(), unique)
    }

    /// Renames the partition directory `dir` of `tp` (in log directory `dir_idx`) for deletion,
    /// durably, and queues its removal.
    fn discard_dir(&self, dir_idx: usize, tp: &TopicPartition, dir: &Path) -> Result<()> {
        let parent = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
        let to = parent.join(
            PartitionDir {
                topic: tp.topic.clone(),
                partition: tp.partition,
                state: DirState::Delete(self.unique_dir_id()),
            }
            .to_name(),
        );
        let result =
            self.fs.rename(dir, &to).map_err(|e| Error::io("rename for delete", dir, e)).and_then(
                |()| self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e)),
            );
        self.observe(dir_idx, result)?;
        self.pending_dir_deletes.lock().unwrap_or_else(PoisonError::into_inner).push((dir_idx, to));
        Ok(())
    }

    /// Drops the move of `tp`, if any: its future log is renamed for deletion (Kafka's
    /// `removeFutureLocalReplica`). The caller holds `moves` (`caught_up` is what it guards).
    pub(super) fn abort_move(
        &self,
        tp: &TopicPartition,
        caught_up: &mut BTreeSet<TopicPartition>,
    ) -> Result<()> {
        caught_up.remove(tp);
        let removed = self.futures.write().unwrap_or_else(PoisonError::into_inner).remove(tp);
        let Some((dir_idx, future)) = removed else { return Ok(()) };
        future.take_offline();
        if self.dir_is_offline(dir_idx) {
            // Its directory failed: the files stay, and the next open resumes the move.
            return Ok(());
        }
        self.discard_dir(dir_idx, tp, &future.dir())
    }

    /// One round of every move: a bounded copy (`replica.fetch.max.bytes` per partition, and no
    /// partition started once `replica.fetch.response.max.bytes` are copied in the round, so a
    /// round's time is bounded too), then the swap of each future log that caught up. Errors
    /// take their directory offline.
    pub(super) fn step_moves(&self, now_ms: i64) {
        let mut caught_up = match self.moves.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // A move is being started or aborted: the next tick copies.
            Err(TryLockError::WouldBlock) => return,
        };
        let moving = self.futures.read().unwrap_or_else(PoisonError::into_inner).clone();
        let mut copied_bytes = 0;
        for (tp, (future_idx, future)) in moving {
            if copied_bytes >= u64::from(self.config.replica_fetch_response_max_bytes) {
                break;
            }
            let current =
                self.logs.read().unwrap_or_else(PoisonError::into_inner).get(&tp).cloned();
            let Some((current_idx, current)) = current else {
                let _ = self.abort_move(&tp, &mut caught_up);
                continue;
            };
            if self.dir_is_offline(future_idx)
                || self.dir_is_offline(current_idx)
                || future.is_offline()
                || current.is_offline()
            {
                continue;
            }
            // The future log is flushed as any log is (`flush.ms`), which bounds what a crash
            // makes the copy do again.
            if self.observe(future_idx, future.flush_if_due(now_ms)).is_err() {
                continue;
            }
            // A future log that caught up at the last step is swapped in now: the swap copies,
            // with the current log held still, what was appended since.
            if caught_up.remove(&tp) {
                let logs = Logs { current_idx, current: &current, future_idx, future: &future };
                self.swap(&tp, &logs, &mut copied_bytes, now_ms);
                continue;
            }
            let source = (|| {
                Ok(SourceOffsets {
                    log_start_offset: current.log_start_offset()?,
                    log_end_offset: current.log_end_offset()?,
                    high_watermark: current.high_watermark()?,
                })
            })();
            let Ok(source) = self.observe(current_idx, source) else { continue };
            let read = |offset, max_bytes| current.read(offset, max_bytes, Isolation::LogEnd, true);
            let budget_bytes = self.config.replica_fetch_max_bytes;
            match catch_up(&future, source, read, budget_bytes, &mut copied_bytes, now_ms) {
                Ok(true) => {
                    caught_up.insert(tp);
                }
                Ok(false) => {}
                Err(CopyError::Source(error)) => {
                    let _ = self.observe::<()>(current_idx, Err(error));
                }
                Err(CopyError::Future(error)) => {
                    let _ = self.observe::<()>(future_idx, Err(error));
                }
            }
        }
    }

    /// Swaps `future` in for `current` once the last batches are copied, in the order the module
    /// docs give.
    fn swap(&self, tp: &TopicPartition, logs: &Logs<'_>, copied_bytes: &mut u64, now_ms: i64) {
        let Logs { current_idx, current, future_idx, future } = *logs;
        // The target's checkpoints get the future log's log start offset and recovery point
        // (keyed by partition, as the live log's will be) before it becomes the live log.
        if self.checkpoint_dir(future_idx).is_err() || self.dir_is_offline(future_idx) {
            return;
        }
        let Ok(config) = self.topic_config(&tp.topic) else { return };
        let source_parent = self.dirs.get(current_idx).map(|d| d.path.clone()).unwrap_or_default();
        let target_parent = self.dirs.get(future_idx).map(|d| d.path.clone()).unwrap_or_default();
        let old_dir = current.dir();
        let deleted = source_parent.join(
            PartitionDir {
                topic: tp.topic.clone(),
                partition: tp.partition,
                state: DirState::Delete(self.unique_dir_id()),
            }
            .to_name(),
        );
        let future_dir = future.dir();
        let live = target_parent.join(PartitionDir::live(&tp.topic, tp.partition).to_name());
        let budget_bytes = self.config.replica_fetch_max_bytes;
        let fs = self.fs.as_ref();
        let outcome = current.replace_with(|frozen| {
            let source = SourceOffsets {
                log_start_offset: frozen.log_start_offset(),
                log_end_offset: frozen.log_end_offset(),
                high_watermark: frozen.high_watermark(),
            };
            let in_source = |error| (SwapFailure::Failed { dir_idx: current_idx, error }, false);
            let in_future = |error| (SwapFailure::Failed { dir_idx: future_idx, error }, false);
            match catch_up(
                future,
                source,
                |offset, max| frozen.read(offset, max),
                budget_bytes,
                copied_bytes,
                now_ms,
            ) {
                Ok(true) => {}
                Ok(false) => return Err((SwapFailure::NotCaughtUp, false)),
                Err(CopyError::Source(error)) => return Err(in_source(error)),
                Err(CopyError::Future(error)) => return Err(in_future(error)),
            }
            let log_start_offset = future.log_start_offset().map_err(in_future)?;
            // Everything fsynced, and a producer snapshot at the end: the reopen below is clean.
            future.close(now_ms).map_err(in_future)?;
            // The commit point: from here on the future log is the partition.
            let committed = |dir_idx, error| (SwapFailure::Failed { dir_idx, error }, true);
            fs.rename(&old_dir, &deleted)
                .map_err(|e| committed(current_idx, Error::io("rename for delete", &old_dir, e)))?;
            fs.sync_dir(&source_parent)
                .map_err(|e| committed(current_idx, Error::io("fsync dir", &source_parent, e)))?;
            fs.rename(&future_dir, &live)
                .map_err(|e| committed(future_idx, Error::io("rename future", &future_dir, e)))?;
            fs.sync_dir(&target_parent)
                .map_err(|e| committed(future_idx, Error::io("fsync dir", &target_parent, e)))?;
            let params = LoadParams {
                had_clean_shutdown: true,
                log_start_offset_checkpoint: log_start_offset,
                recovery_point_checkpoint: source.log_end_offset,
                now_ms,
            };
            let (log, _) =
                PartitionLog::open(Arc::clone(&self.fs), &live, tp.clone(), config, params)
                    .map_err(|error| committed(future_idx, error))?;
            log.update_high_watermark(source.high_watermark)
                .map_err(|error| committed(future_idx, error))?;
            Ok(log)
        });
        match outcome {
            Ok(()) => {
                let mut logs = self.logs.write().unwrap_or_else(PoisonError::into_inner);
                if let Some(entry) = logs.get_mut(tp) {
                    entry.0 = future_idx;
                }
                drop(logs);
                self.futures.write().unwrap_or_else(PoisonError::into_inner).remove(tp);
                self.pending_dir_deletes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push((current_idx, deleted));
                // The moved partition's offsets move with it, to the target's checkpoints.
                let _ = self.checkpoint();
            }
            Err(SwapFailure::NotCaughtUp) => {}
            Err(SwapFailure::Failed { dir_idx, error }) => {
                let _ = self.observe::<()>(dir_idx, Err(error));
            }
            Err(SwapFailure::CurrentOffline(error)) => {
                let _ = self.observe::<()>(current_idx, Err(error));
            }
        }
    }

    /// Settles the `-future` logs found at open: one whose live log exists elsewhere resumes its
    /// move (trimmed to the live log's end, in case the live log lost an unflushed tail the copy
    /// had taken); one with no live log anywhere passed the swap's commit point and becomes the
    /// live log; any other is discarded.
    pub(super) fn resolve_futures(
        &self,
        loaded: Vec<(usize, PathBuf, PartitionLog, LoadReport)>,
        report: &mut OpenReport,
    ) -> Result<()> {
        let now_ms = self.clock.now_ms();
        let mut finished: BTreeMap<TopicPartition, usize> = BTreeMap::new();
        for (dir_idx, path, future, load_report) in loaded {
            let tp = future.topic_partition().clone();
            let current =
                self.logs.read().unwrap_or_else(PoisonError::into_inner).get(&tp).cloned();
            let already_moving =
                self.futures.read().unwrap_or_else(PoisonError::into_inner).contains_key(&tp);
            match current {
                Some((current_idx, current))
                    if current_idx != dir_idx && !already_moving && !finished.contains_key(&tp) =>
                {
                    let current_end = current.log_end_offset()?;
                    if future.log_end_offset()? > current_end {
                        future.truncate_to(current_end, now_ms)?;
                    }
                    self.futures
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(tp.clone(), (dir_idx, Arc::new(future)));
                    report.resumed_moves.push(tp);
                }
                Some(_) => {
                    drop(future);
                    self.discard_dir(dir_idx, &tp, &path)?;
                }
                None => {
                    let log_start_offset = future.log_start_offset()?;
                    let log_end_offset = future.log_end_offset()?;
                    let high_watermark = future.high_watermark()?;
                    future.close(now_ms)?;
                    drop(future);
                    let parent = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
                    let live = parent.join(PartitionDir::live(&tp.topic, tp.partition).to_name());
                    self.fs
                        .rename(&path, &live)
                        .map_err(|e| Error::io("rename future", &path, e))?;
                    self.fs.sync_dir(&parent).map_err(|e| Error::io("fsync dir", &parent, e))?;
                    let params = LoadParams {
                        had_clean_shutdown: true,
                        log_start_offset_checkpoint: log_start_offset,
                        recovery_point_checkpoint: log_end_offset,
                        now_ms,
                    };
                    let config = self.topic_config(&tp.topic)?;
                    let (log, _) = PartitionLog::open(
                        Arc::clone(&self.fs),
                        &live,
                        tp.clone(),
                        config,
                        params,
                    )?;
                    log.update_high_watermark(high_watermark)?;
                    log.set_background_queue(Arc::clone(&self.background));
                    self.logs
                        .write()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(tp.clone(), (dir_idx, Arc::new(log)));
                    report.partitions.insert(tp.clone(), load_report);
                    report.finished_moves.push(tp.clone());
                    finished.insert(tp, dir_idx);
                }
            }
        }
        Ok(())
    }
}
