//! Loading a log at open or at its first use. A log made by [`PartitionLog::unloaded`] holds
//! only what loading it needs (its directory, configuration and checkpointed offsets): the
//! first call that needs its segments loads it (Kafka's `LogLoader.load`, the same steps as
//! [`PartitionLog::open`]), under the `unloaded` lock so that it loads once. Until then the
//! checkpoints keep the offsets it was opened with ([`PartitionLog::checkpoint_offsets`]), a
//! shutdown has nothing to flush, and a directory failure only marks it offline. So a broker
//! with many partitions serves as soon as it has listed them, and loads them in the background
//! ([`crate::manager::LogManager::load_unloaded`]) or as clients reach them.
//!
//! Loading later is safe after an unclean shutdown too: nothing reads or writes the files of an
//! unloaded log, and a crash before it loads leaves the same files and checkpoints to recover
//! from at the next start.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, RwLock};

use super::{
    LeaderEpochFileCache, LoadParams, LoadReport, LogConfig, PartitionLog, ProducerStateManager,
    State, TopicPartition, load, local_config, offset_metadata, rebuild_producer_state,
    set_high_watermark, txn,
};
use crate::error::{Error, IoFailure, Result};
use crate::io::Fs;

/// What an unloaded log keeps until it loads.
#[derive(Debug)]
pub(super) struct Unloaded {
    fs: Arc<dyn Fs>,
    config: LogConfig,
    params: LoadParams,
    /// From `replication-offset-checkpoint`, applied at load.
    high_watermark: Option<i64>,
    /// Whether the log start offset came from `log-start-offset-checkpoint` (which lists only
    /// logs whose start is above their first segment's base).
    log_start_checkpointed: bool,
    /// [`PartitionLog::make_leader`] was called: the high watermark goes to the log end at load.
    leader: bool,
    /// Its directory went offline, or loading it failed: it never loads.
    offline: bool,
    /// The leader epoch at the recovery point, as the last checkpoint recorded it
    /// (`seglog-leader-epochs`): -1 for a log with no epoch, `None` when unknown.
    latest_epoch: Option<i32>,
}

/// The offsets a checkpoint records for one log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointOffsets {
    /// For `recovery-point-offset-checkpoint`.
    pub recovery_point: i64,
    /// For `log-start-offset-checkpoint`, when the log start is above the first segment's base.
    pub log_start_offset: Option<i64>,
    /// For `replication-offset-checkpoint`; `None` for an unloaded log that had none.
    pub high_watermark: Option<i64>,
    /// For `seglog-leader-epochs`: the epoch of the last offset below the recovery point (-1:
    /// none); `None` for an unloaded log that does not know it.
    pub durable_leader_epoch: Option<i32>,
}

impl PartitionLog {
    /// Loads (or, for an empty directory, creates) the log in `dir`, recovering it as Kafka's
    /// loader does.
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        params: LoadParams,
    ) -> Result<(Self, LoadReport)> {
        let log = Self::unloaded(fs, dir, topic_partition, config, params, None, false);
        let report = log.load()?.unwrap_or_default();
        Ok((log, report))
    }

    /// A log that loads at its first use (or at [`PartitionLog::load`]), from the files in
    /// `dir` and the checkpointed `params`; `high_watermark` is its entry in the replication
    /// checkpoint, and `log_start_checkpointed` whether `params` had one from the log start
    /// checkpoint. Nothing is read until then.
    pub fn unloaded(
        fs: Arc<dyn Fs>,
        dir: &Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        params: LoadParams,
        high_watermark: Option<i64>,
        log_start_checkpointed: bool,
    ) -> Self {
        let unloaded = Unloaded {
            fs,
            config,
            params,
            high_watermark,
            log_start_checkpointed,
            leader: false,
            offline: false,
            latest_epoch: None,
        };
        Self {
            topic_partition,
            dir: RwLock::new(dir.to_owned()),
            state: std::sync::OnceLock::new(),
            unloaded: Mutex::new(Some(unloaded)),
            flush_lock: Mutex::new(()),
            durable: (Mutex::new(params.recovery_point_checkpoint), Condvar::new()),
            segments_generation: std::sync::atomic::AtomicU64::new(0),
            background: std::sync::OnceLock::new(),
            queued: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the log is loaded.
    pub fn is_loaded(&self) -> bool {
        self.state.get().is_some()
    }

    /// Loads the log if it is not loaded yet; the report when this call loaded it, `None` when
    /// it was loaded already. A failure takes the log offline: the error is returned once, and
    /// every later call fails with [`Error::Offline`].
    pub fn load(&self) -> Result<Option<LoadReport>> {
        if self.state.get().is_some() {
            return Ok(None);
        }
        let mut unloaded = self.lock_unloaded();
        let Some(pending) = unloaded.as_mut() else { return Ok(None) }; // loaded meanwhile
        if pending.offline {
            return Err(Error::Offline { dir: self.dir() });
        }
        let dir = self.dir();
        match load_state(pending, &dir) {
            Ok((state, report)) => {
                let recovery_point = state.local.recovery_point();
                let _ = self.state.set(RwLock::new(state));
                *unloaded = None;
                drop(unloaded);
                let (lock, signal) = &self.durable;
                *lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = recovery_point;
                signal.notify_all();
                self.mark_background();
                Ok(Some(report))
            }
            Err(error) => {
                pending.offline = true;
                drop(unloaded);
                self.mark_background(); // so that the manager sees it and its directory
                Err(error)
            }
        }
    }

    /// The state, loading the log first if needed.
    pub(super) fn state(&self) -> Result<&RwLock<State>> {
        if let Some(state) = self.state.get() {
            return Ok(state);
        }
        self.load()?;
        self.state.get().ok_or_else(|| Error::Offline { dir: self.dir() })
    }

    fn lock_unloaded(&self) -> std::sync::MutexGuard<'_, Option<Unloaded>> {
        self.unloaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the log offline: its directory failed elsewhere. Every later call fails with
    /// [`Error::Offline`]; an unloaded log never loads.
    pub fn take_offline(&self) {
        let marked_unloaded = self.state.get().is_none()
            && self.lock_unloaded().as_mut().is_some_and(|pending| {
                pending.offline = true;
                true
            });
        if !marked_unloaded && let Some(state) = self.state.get() {
            // Loaded, perhaps between the two looks.
            state.write().unwrap_or_else(std::sync::PoisonError::into_inner).poisoned = true;
        }
        let (lock, signal) = &self.durable;
        drop(lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
        signal.notify_all();
    }

    /// Whether an I/O error took this log offline (or its load failed).
    pub fn is_offline(&self) -> bool {
        if let Some(state) = self.state.get() {
            return state.read().map_or(true, |state| state.poisoned);
        }
        match self.lock_unloaded().as_ref() {
            Some(pending) => pending.offline,
            None => self.state.get().is_none_or(|s| s.read().map_or(true, |s| s.poisoned)),
        }
    }

    /// The I/O error that took this log offline, when it failed on its own.
    pub fn failure(&self) -> Option<IoFailure> {
        let state = self.state.get()?;
        state.read().unwrap_or_else(std::sync::PoisonError::into_inner).failure.clone()
    }

    /// Tells an unloaded log its leader epoch at its recovery point, as the last checkpoint
    /// recorded it, so that Metadata need not load it to learn it. Ignored once loaded.
    pub fn set_unloaded_latest_epoch(&self, epoch: i32) {
        if let Some(pending) = self.lock_unloaded().as_mut() {
            pending.latest_epoch = Some(epoch.max(-1));
        }
    }

    /// The leader epoch Metadata shows: the latest, or for an unloaded log that knows it, its
    /// epoch at the recovery point (what the last checkpoint recorded; loading only raises it),
    /// so that Metadata of every partition loads none.
    pub fn metadata_leader_epoch(&self) -> Result<Option<i32>> {
        if self.state.get().is_none()
            && let Some(known) = self
                .lock_unloaded()
                .as_ref()
                .filter(|pending| !pending.offline)
                .and_then(|p| p.latest_epoch)
        {
            return Ok((known >= 0).then_some(known));
        }
        self.latest_leader_epoch()
    }

    /// Makes this node the log's leader, its only replica: the high watermark moves to the log
    /// end ([`PartitionLog::maybe_increment_leader_high_watermark`]), now or when it loads.
    pub fn make_leader(&self) -> Result<()> {
        if self.state.get().is_none()
            && let Some(pending) = self.lock_unloaded().as_mut()
        {
            pending.leader = true;
            return Ok(());
        }
        self.maybe_increment_leader_high_watermark().map(|_| ())
    }

    /// Takes leadership at `leader_epoch`, as a cluster's metadata assigns it (Kafka's
    /// `Partition.makeLeader` with `maybeAssignEpochStartOffset`): an epoch above the latest
    /// starts at the log end, and the high watermark moves to the log end (the only replica).
    /// Returns whether the epoch was new.
    pub fn become_leader(&self, leader_epoch: i32) -> Result<bool> {
        let mut state = self.write_state()?;
        let latest = state.epoch_cache.latest_epoch();
        let assigned = if latest.is_none_or(|latest| leader_epoch > latest) {
            let log_end = state.local.log_end_offset();
            state.epoch_cache.assign(leader_epoch, log_end)?
        } else {
            false
        };
        if state.high_watermark.message_offset < state.local.log_end_offset() {
            let log_end = state.local.next_offset_metadata();
            set_high_watermark(&mut state, log_end);
        }
        Ok(assigned)
    }

    /// Applies a new topic configuration to an unloaded log (it loads with it); `false` when
    /// the log is loaded.
    pub(super) fn set_unloaded_config(&self, config: &LogConfig) -> bool {
        if self.state.get().is_some() {
            return false;
        }
        match self.lock_unloaded().as_mut() {
            Some(pending) => {
                pending.config = config.clone();
                true
            }
            None => false,
        }
    }

    /// The configuration of an unloaded log (`None` when it is loaded): what the cleaner and
    /// the background work ask of every log, answered without loading it.
    pub(super) fn unloaded_config(&self) -> Option<LogConfig> {
        if self.state.get().is_some() {
            return None;
        }
        self.lock_unloaded().as_ref().filter(|pending| !pending.offline).map(|p| p.config.clone())
    }

    /// Whether closing the log has nothing to do: it is unloaded, and was shut down cleanly
    /// before (an unloaded log that still needs recovery is loaded, so recovered, before a
    /// clean-shutdown marker can vouch for it).
    pub(super) fn unloaded_clean(&self) -> bool {
        self.state.get().is_none()
            && self
                .lock_unloaded()
                .as_ref()
                .is_some_and(|pending| pending.params.had_clean_shutdown && !pending.offline)
    }

    /// What the offset checkpoints record for this log: for an unloaded one, the offsets it
    /// was opened with (nothing has moved them), so that a checkpoint never loads a log.
    pub fn checkpoint_offsets(&self) -> Result<CheckpointOffsets> {
        if self.state.get().is_none()
            && let Some(pending) = self.lock_unloaded().as_ref()
        {
            if pending.offline {
                return Err(Error::Offline { dir: self.dir() });
            }
            return Ok(CheckpointOffsets {
                recovery_point: pending.params.recovery_point_checkpoint,
                log_start_offset: pending
                    .log_start_checkpointed
                    .then_some(pending.params.log_start_offset_checkpoint),
                high_watermark: pending.high_watermark,
                durable_leader_epoch: pending.latest_epoch,
            });
        }
        let state = self.read_state()?;
        let first_base = state
            .local
            .segments()
            .first_segment()
            .map_or(0, crate::segment::LogSegment::base_offset);
        Ok(CheckpointOffsets {
            recovery_point: state.local.recovery_point(),
            log_start_offset: (state.log_start_offset > first_base
                || state.config.remote_storage_enable)
                .then_some(state.log_start_offset),
            high_watermark: Some(state.high_watermark.message_offset),
            durable_leader_epoch: Some(
                state.epoch_cache.epoch_for_offset(state.local.recovery_point() - 1).unwrap_or(-1),
            ),
        })
    }
}

/// Kafka's `LogLoader.load` and the rest of `UnifiedLog`'s construction: the segments, the
/// leader epochs, the producers, the `.txnindex` of recovered segments, the high watermark.
fn load_state(pending: &Unloaded, dir: &Path) -> Result<(State, LoadReport)> {
    let fs = &pending.fs;
    let params = pending.params;
    let loaded = load(fs.clone(), dir, local_config(&pending.config), params)?;
    let mut epoch_cache = LeaderEpochFileCache::load(fs.clone(), dir)?;
    for (epoch, start_offset) in &loaded.report.leader_epochs {
        if epoch_cache.latest_epoch().is_none_or(|latest| *epoch > latest) {
            epoch_cache.assign(*epoch, *start_offset)?;
        }
    }
    let log_end_offset = loaded.local.log_end_offset();
    epoch_cache.truncate_from_end(log_end_offset)?;
    epoch_cache.truncate_from_start(loaded.log_start_offset)?;
    // Idempotent producers: the newest valid snapshot, then the batches after it (Kafka's
    // `LogLoader.load`: `removeStraySnapshots`, then `rebuildProducerState`).
    let mut producers = ProducerStateManager::open(fs.clone(), dir)?;
    producers.remove_stray_snapshots(&loaded.local.segments().base_offsets())?;
    rebuild_producer_state(
        &mut producers,
        &loaded.local,
        loaded.log_start_offset,
        log_end_offset,
        params.had_clean_shutdown,
    )?;
    let mut loaded = loaded;
    txn::restore_recovered_txn_indexes(fs.clone(), dir, &mut loaded, log_end_offset)?;
    let mut report = loaded.report;
    report.corrupt_snapshots = producers.take_corrupt_snapshots();
    // A tiered log's start is the checkpoint's, below its local segments (Kafka's `LogLoader`:
    // `if (isRemoteLogEnabled) logStartOffsetCheckpoint`).
    let local_log_start_offset = loaded.log_start_offset;
    let log_start_offset = if pending.config.remote_storage_enable {
        params.log_start_offset_checkpoint.clamp(0, local_log_start_offset)
    } else {
        local_log_start_offset
    };
    let high_watermark = offset_metadata(&loaded.local, local_log_start_offset)?;
    let mut state = State {
        config: pending.config.clone(),
        local: loaded.local,
        log_start_offset,
        local_log_start_offset,
        highest_offset_in_remote_storage: -1,
        high_watermark,
        epoch_cache,
        producers,
        poisoned: false,
        failure: None,
        roll_flush_to: None,
    };
    // The checkpointed high watermark (`update_high_watermark`), then this node's leadership
    // (`maybe_increment_leader_high_watermark`), as for a log loaded at open.
    if let Some(checkpointed) = pending.high_watermark {
        let clamped = checkpointed.clamp(state.local_log_start_offset, log_end_offset);
        let metadata = offset_metadata(&state.local, clamped)?;
        set_high_watermark(&mut state, metadata);
    }
    if pending.leader && state.high_watermark.message_offset < log_end_offset {
        let log_end = state.local.next_offset_metadata();
        set_high_watermark(&mut state, log_end);
    }
    Ok((state, report))
}
