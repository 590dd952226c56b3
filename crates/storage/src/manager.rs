//! All the partition logs of a broker (Kafka's `LogManager`): one or more log directories, each
//! locked, with its checkpoint files and clean-shutdown marker; topic creation and deletion;
//! the periodic work (retention, flushes, checkpoints, delayed deletes); and failure isolation:
//! an I/O error takes its log directory offline while the others keep working.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use seglog_format::names::{DirState, PartitionDir, validate_topic};

use crate::config::{BrokerLogConfig, LogConfig, parse_properties, write_properties};
use crate::dirs::checkpoint::{
    LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile, PartitionOffsets,
    RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE, read_text_if_exists,
    write_atomically,
};
use crate::dirs::meta::{MetaProperties, PartitionMetadata, uuid_to_base64};
use crate::error::{Error, IoFailure, Result};
use crate::io::{FileLock, Fs};
use crate::log::load::{LoadParams, LoadReport};
use crate::log::partition_log::{BackgroundQueue, PartitionLog, TopicPartition};
use crate::splitmix;

mod background;
mod checkpoints;
mod cleaning;
mod creation;
mod deletion;
mod loading;
mod log_dirs;

pub use cleaning::{CleanOutcome, CleanerFailure};
pub use loading::LazyLoadReport;
pub use log_dirs::{INVALID_OFFSET_LAG, LogDirDescription, ReplicaDescription};

/// The clean-shutdown marker of a log directory.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// The lock file of a log directory.
pub const LOCK_FILE: &str = ".lock";
/// KRaft's metadata log (`__cluster_metadata-0`), which a combined node keeps in its first log
/// directory: not a partition the manager opens.
pub const METADATA_PARTITION_DIR: &str = "__cluster_metadata-0";
/// seglog's per-topic configuration overrides, kept in the first log directory.
pub const TOPIC_CONFIGS_FILE: &str = "seglog-topic-configs";
/// Each partition's leader epoch at its recovery point (-1: none), in the offset-checkpoint
/// format, written with the offset checkpoints: a lazy open answers Metadata's leader epochs
/// from it without loading the logs. A crash cannot lose an epoch below the recovery point, so
/// loading a log only ever raises the epoch shown.
pub const LEADER_EPOCHS_FILE: &str = "seglog-leader-epochs";
/// The first producer id not yet handed out in a block, kept in the first log directory.
pub const PRODUCER_ID_BLOCK_FILE: &str = "seglog-producer-id-block";
/// Producer ids reserved per write of [`PRODUCER_ID_BLOCK_FILE`] (Kafka's controller hands
/// brokers blocks of 1000 the same way).
pub const PRODUCER_ID_BLOCK_IDS: i64 = 1000;

/// Where time comes from: the only way storage reads a clock.
pub trait Clock: Send + Sync + Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that moves only when told to, for tests and simulation.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock at `now_ms`.
    pub fn new(now_ms: i64) -> Self {
        Self(AtomicI64::new(now_ms))
    }

    /// Moves the clock to `now_ms`.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// A log directory that went offline, with the I/O error that took it there when known (the
/// role of an entry of Kafka's `LogDirFailureChannel`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirFailure {
    /// The log directory.
    pub dir: PathBuf,
    /// The first failed call in it, if a log or the manager saw one (not when a log handle
    /// found the directory already offline).
    pub failure: Option<IoFailure>,
}

/// One log directory.
#[derive(Debug)]
struct LogDir {
    path: PathBuf,
    offline: AtomicBool,
    lock: Mutex<Option<Box<dyn FileLock>>>,
}

/// What opening the log directories found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Partitions loaded, with what their loader did.
    pub partitions: BTreeMap<TopicPartition, LoadReport>,
    /// Directories renamed for deletion, removed during the open.
    pub deleted_dirs: Vec<PathBuf>,
    /// Directories that were closed cleanly.
    pub clean_dirs: Vec<PathBuf>,
    /// Checkpoint files that did not parse and were treated as empty (Kafka logs and goes on).
    pub unreadable_checkpoints: Vec<String>,
    /// Partitions whose move to another log directory was under way: their `-future` logs
    /// were loaded and the copy resumes.
    pub resumed_moves: Vec<TopicPartition>,
    /// Partitions whose move had passed its commit point (the old directory renamed for
    /// deletion) but not its last rename: the `-future` log became the live one.
    pub finished_moves: Vec<TopicPartition>,
    /// Topic creations (or partition additions) a crash interrupted, rolled back: the topic and
    /// its first new partition (`manager/creation.rs`).
    pub rolled_back_creations: Vec<(String, i32)>,
}

#[derive(Debug, Default)]
#[expect(clippy::struct_field_names, reason = "units last, as the house style asks")]
struct Timers {
    /// When the last retention pass ran.
    retention_ms: i64,
    /// When the recovery-point checkpoint was last written.
    recovery_checkpoint_ms: i64,
    /// When the high-watermark checkpoint was last written.
    high_watermark_checkpoint_ms: i64,
}

/// The partition logs of all log directories (Kafka's `LogManager`).
#[derive(Debug)]
pub struct LogManager {
    fs: Arc<dyn Fs>,
    clock: Arc<dyn Clock>,
    config: BrokerLogConfig,
    dirs: Vec<LogDir>,
    logs: RwLock<BTreeMap<TopicPartition, (usize, Arc<PartitionLog>)>>,
    /// The `-future` logs of partitions being moved to another log directory (Kafka's
    /// `futureLogs`), with the index of that directory.
    futures: RwLock<BTreeMap<TopicPartition, (usize, Arc<PartitionLog>)>>,
    /// Held by every step of a move (start, copy, swap, abort) and by topic deletion, so that
    /// they never interleave; it holds the partitions whose future log caught up at the last
    /// step, to be swapped in by the next one.
    moves: Mutex<BTreeSet<TopicPartition>>,
    topic_overrides: RwLock<BTreeMap<String, BTreeMap<String, String>>>,
    /// The topic defaults now: the broker's `default_log_config`, or what a dynamic broker
    /// config made of it ([`Self::set_default_log_config`]).
    log_defaults: RwLock<LogConfig>,
    /// Topic ids read from `partition.metadata`, so that a metadata request for every topic
    /// does not read a file per topic.
    topic_ids: RwLock<BTreeMap<String, [u8; 16]>>,
    pending_dir_deletes: Mutex<Vec<(usize, PathBuf)>>,
    /// Held by every topic creation, partition addition and topic deletion, so that two
    /// never interleave: two CreateTopics of one name (or one and an auto-creation) would both
    /// pass the existence check and write the same creation marker.
    topic_changes: Mutex<()>,
    /// The logs that asked for background work since the last tick (`PartitionLog`'s
    /// `set_background_queue`), and those still being worked on: each tick visits these, not
    /// every log; a retention pass visits every log.
    background: Arc<BackgroundQueue>,
    background_logs: Mutex<BTreeMap<TopicPartition, (usize, Arc<PartitionLog>)>>,
    /// Logs visited by ticks so far.
    background_visits: AtomicU64,
    timers: Mutex<Timers>,
    delete_counter: AtomicU64,
    /// The next producer id and the end of the reserved block (`None` until the first use).
    producer_ids: Mutex<Option<(i64, i64)>>,
    /// Directories that went offline and have not been reported yet (at most one entry per
    /// directory: a directory goes offline once).
    failures: Mutex<Vec<DirFailure>>,
    /// The log cleaner's states, marks and figures (`manager/cleaning.rs`).
    cleaner: cleaning::CleanerShared,
    /// Set when [`LogManager::shutdown`] begins: background loading stops.
    closing: AtomicBool,
    /// What the last periodic checkpoint saw (`manager/checkpoints.rs`): when nothing has
    /// changed since, the next one writes nothing.
    checkpointed: Mutex<Option<checkpoints::CheckpointKey>>,
    /// Held by [`LogManager::load_unloaded`] while it runs; shutdown waits for it, so that no
    /// log loads after the logs are closed.
    loading: Mutex<()>,
}

/// A Kafka `Uuid` from `seed` and `path`: never all zero, different for different inputs.
fn random_uuid(seed: u64, path: &Path) -> [u8; 16] {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for byte in path.to_string_lossy().bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    // One SplitMix64 step from each state.
    let mix = |z: u64| splitmix::mix(z.wrapping_add(splitmix::GAMMA));
    let high = mix(hash);
    let low = mix(high) | 1;
    let mut uuid = [0u8; 16];
    let (first, second) = uuid.split_at_mut(8);
    first.copy_from_slice(&high.to_be_bytes());
    second.copy_from_slice(&low.to_be_bytes());
    uuid
}

fn read_offsets(fs: &dyn Fs, dir: &Path, name: &str, report: &mut OpenReport) -> PartitionOffsets {
    match OffsetCheckpointFile::in_dir(dir, name).read(fs) {
        Ok(offsets) => offsets,
        Err(error) => {
            report.unreadable_checkpoints.push(format!("{}: {error}", dir.join(name).display()));
            PartitionOffsets::new()
        }
    }
}

impl LogManager {
    /// Opens every log directory of `config` (creating missing ones), locks each, and loads
    /// every partition in it, recovering those that were not shut down cleanly.
    pub fn open(
        fs: Arc<dyn Fs>,
        clock: Arc<dyn Clock>,
        config: BrokerLogConfig,
    ) -> Result<(Self, OpenReport)> {
        let mut report = OpenReport::default();
        let mut dirs = Vec::new();
        for path in &config.log_dirs {
            fs.create_dir_all(path).map_err(|e| Error::io("create log dir", path, e))?;
            for ancestor in path.ancestors().filter(|a| !a.as_os_str().is_empty()) {
                fs.sync_dir(ancestor).map_err(|e| Error::io("fsync dir", ancestor, e))?;
            }
            let lock = fs.lock_exclusive(&path.join(LOCK_FILE)).map_err(|e| {
                Error::io("lock log dir (is another process using it?)", path.join(LOCK_FILE), e)
            })?;
            let stored = MetaProperties::read(fs.as_ref(), path)?;
            if let (Some(expected), Some(stored)) =
                (config.node_id, stored.as_ref().and_then(|meta| meta.node_id))
                && expected != stored
            {
                // Kafka refuses, so that one node's data is never served as another's.
                return Err(Error::InvalidArgument(format!(
                    "log directory {} belongs to node {stored} (meta.properties), not node.id {expected}",
                    path.display()
                )));
            }
            if stored.is_none() {
                // A new directory gets its identity, as `kafka-storage format` would write it.
                let seed = clock.now_ms().cast_unsigned();
                let meta = MetaProperties {
                    version: 1,
                    node_id: Some(config.node_id.unwrap_or(1)),
                    cluster_id: Some(uuid_to_base64(&random_uuid(seed, path))),
                    directory_id: Some(uuid_to_base64(&random_uuid(seed ^ 0x5EED, path))),
                    other: BTreeMap::new(),
                };
                meta.write(fs.as_ref(), path)?;
            }
            dirs.push(LogDir {
                path: path.clone(),
                offline: AtomicBool::new(false),
                lock: Mutex::new(Some(lock)),
            });
        }
        let cleaner = cleaning::CleanerShared::new(config.cleaner.clone());
        let log_defaults = RwLock::new(config.default_log_config.clone());
        let manager = Self {
            fs,
            clock,
            config,
            dirs,
            logs: RwLock::default(),
            futures: RwLock::default(),
            moves: Mutex::default(),
            topic_overrides: RwLock::default(),
            log_defaults,
            topic_ids: RwLock::default(),
            pending_dir_deletes: Mutex::default(),
            topic_changes: Mutex::default(),
            background: Arc::default(),
            background_logs: Mutex::default(),
            background_visits: AtomicU64::new(0),
            timers: Mutex::default(),
            delete_counter: AtomicU64::new(0),
            producer_ids: Mutex::new(None),
            failures: Mutex::default(),
            cleaner,
            closing: AtomicBool::new(false),
            loading: Mutex::new(()),
            checkpointed: Mutex::new(None),
        };
        manager.load_topic_overrides()?;
        let mut futures = Vec::new();
        for dir_idx in 0..manager.dirs.len() {
            manager.load_dir(dir_idx, &mut report, &mut futures)?;
        }
        manager.resolve_futures(futures, &mut report)?;
        manager.recover_creations(&mut report)?;
        let now_ms = manager.clock.now_ms();
        *manager.timers.lock().unwrap_or_else(PoisonError::into_inner) = Timers {
            retention_ms: now_ms,
            recovery_checkpoint_ms: now_ms,
            high_watermark_checkpoint_ms: now_ms,
        };
        report.deleted_dirs = manager.delete_pending_dirs()?;
        Ok((manager, report))
    }

    /// Loads the partitions of one log directory; its `-future` logs go to `futures`, for
    /// [`LogManager::resolve_futures`] once every directory is loaded.
    fn load_dir(
        &self,
        dir_idx: usize,
        report: &mut OpenReport,
        futures: &mut Vec<(usize, PathBuf, PartitionLog, LoadReport)>,
    ) -> Result<()> {
        let fs = self.fs.as_ref();
        let dir = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
        let marker = dir.join(CLEAN_SHUTDOWN_FILE);
        let clean = fs.exists(&marker).map_err(|e| Error::io("stat", &marker, e))?;
        if clean {
            // Removed before loading, so that a crash while loading counts as unclean.
            fs.remove(&marker)
                .map_err(|e| Error::io("remove clean shutdown marker", &marker, e))?;
            fs.sync_dir(&dir).map_err(|e| Error::io("fsync dir", &dir, e))?;
            report.clean_dirs.push(dir.clone());
        }
        let recovery_points = read_offsets(fs, &dir, RECOVERY_POINT_CHECKPOINT_FILE, report);
        let log_starts = read_offsets(fs, &dir, LOG_START_OFFSET_CHECKPOINT_FILE, report);
        let high_watermarks = read_offsets(fs, &dir, REPLICATION_OFFSET_CHECKPOINT_FILE, report);
        let leader_epochs = if self.config.load_lazily {
            read_offsets(fs, &dir, LEADER_EPOCHS_FILE, report)
        } else {
            PartitionOffsets::new()
        };
        let now_ms = self.clock.now_ms();
        // Directories only: a file whose name looks like a partition is not one.
        for entry in fs.list_dirs(&dir).map_err(|e| Error::io("list log dir", &dir, e))? {
            let name =
                entry.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            // KRaft's metadata log shares the directory in a combined node; its own store
            // keeps it (Kafka's `LogManager` skips it too).
            if name == METADATA_PARTITION_DIR {
                continue;
            }
            let Ok(parsed) = PartitionDir::parse(&name) else { continue };
            let is_future = match parsed.state {
                DirState::Live => false,
                DirState::Future(_) => true,
                DirState::Delete(_) => {
                    self.pending_dir_deletes
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((dir_idx, entry));
                    continue;
                }
                DirState::Stray(_) => continue,
            };
            let tp = TopicPartition { topic: parsed.topic.clone(), partition: parsed.partition };
            let key = (tp.topic.clone(), tp.partition);
            let params = LoadParams {
                had_clean_shutdown: clean,
                log_start_offset_checkpoint: log_starts.get(&key).copied().unwrap_or(0),
                recovery_point_checkpoint: recovery_points.get(&key).copied().unwrap_or(0),
                now_ms,
            };
            let config = self.topic_config(&tp.topic)?;
            if self.config.load_lazily && !is_future {
                let log = PartitionLog::unloaded(
                    Arc::clone(&self.fs),
                    &entry,
                    tp.clone(),
                    config,
                    params,
                    high_watermarks.get(&key).copied(),
                    log_starts.contains_key(&key),
                );
                if let Some(epoch) = leader_epochs.get(&key) {
                    log.set_unloaded_latest_epoch(i32::try_from(*epoch).unwrap_or(-1));
                }
                log.set_background_queue(Arc::clone(&self.background));
                self.logs
                    .write()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(tp, (dir_idx, Arc::new(log)));
                continue;
            }
            let (log, load_report) =
                PartitionLog::open(Arc::clone(&self.fs), &entry, tp.clone(), config, params)?;
            if let Some(high_watermark) = high_watermarks.get(&key) {
                log.update_high_watermark(*high_watermark)?;
            }
            if is_future {
                futures.push((dir_idx, entry, log, load_report));
                continue;
            }
            report.partitions.insert(tp.clone(), load_report);
            log.set_background_queue(Arc::clone(&self.background));
            self.logs
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(tp, (dir_idx, Arc::new(log)));
        }
        Ok(())
    }

    fn topic_configs_path(&self) -> Option<PathBuf> {
        self.dirs.first().map(|dir| dir.path.join(TOPIC_CONFIGS_FILE))
    }

    /// Reads a broker metadata file of the first log directory (`seglog-security`: ACLs, SCRAM
    /// credentials and quotas), through `Fs`; `None` when it does not exist.
    pub fn read_metadata_file(&self, name: &str, bytes_max: u64) -> Result<Option<String>> {
        let Some(dir) = self.dirs.first() else { return Ok(None) };
        if self.dir_is_offline(0) {
            return Err(Error::Offline { dir: dir.path.clone() });
        }
        let result = read_text_if_exists(self.fs.as_ref(), &dir.path.join(name), bytes_max);
        self.observe(0, result)
    }

    /// Replaces a broker metadata file of the first log directory atomically and durably (a
    /// temporary file, fsync, rename, fsync of the directory), through `Fs`. A failure takes the
    /// directory offline, as for any other write.
    pub fn write_metadata_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let Some(dir) = self.dirs.first() else {
            return Err(Error::InvalidArgument("no log directory".to_owned()));
        };
        if self.dir_is_offline(0) {
            return Err(Error::Offline { dir: dir.path.clone() });
        }
        let result = write_atomically(self.fs.as_ref(), &dir.path.join(name), bytes);
        self.observe(0, result)
    }

    fn load_topic_overrides(&self) -> Result<()> {
        let Some(path) = self.topic_configs_path() else { return Ok(()) };
        let Some(text) = read_text_if_exists(self.fs.as_ref(), &path, 16 << 20)? else {
            return Ok(());
        };
        let properties = parse_properties(&text).map_err(|error| Error::Malformed {
            path: path.clone(),
            line: None,
            reason: error.to_string(),
        })?;
        let mut overrides: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (key, value) in properties {
            if let Some((topic, config_key)) = key.split_once('/') {
                overrides.entry(topic.to_owned()).or_default().insert(config_key.to_owned(), value);
            }
        }
        *self.topic_overrides.write().unwrap_or_else(PoisonError::into_inner) = overrides;
        Ok(())
    }

    fn store_topic_overrides(&self) -> Result<()> {
        let Some(path) = self.topic_configs_path() else { return Ok(()) };
        let overrides = self.topic_overrides.read().unwrap_or_else(PoisonError::into_inner);
        let flat: BTreeMap<String, String> = overrides
            .iter()
            .flat_map(|(topic, keys)| {
                keys.iter().map(move |(k, v)| (format!("{topic}/{k}"), v.clone()))
            })
            .collect();
        write_atomically(self.fs.as_ref(), &path, write_properties(&flat).as_bytes())
    }

    /// The effective configuration of `topic`: the broker defaults with its overrides.
    pub fn topic_config(&self, topic: &str) -> Result<LogConfig> {
        let overrides = self.topic_overrides.read().unwrap_or_else(PoisonError::into_inner);
        match overrides.get(topic) {
            Some(keys) => self
                .default_log_config()
                .with_overrides(keys)
                .map_err(|error| Error::InvalidArgument(format!("topic {topic}: {error}"))),
            None => Ok(self.default_log_config()),
        }
    }

    /// The topic defaults now (the broker's `log.*` keys, with any dynamic update).
    pub fn default_log_config(&self) -> LogConfig {
        self.log_defaults.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Replaces the topic defaults, live (Kafka's `LogManager.reconfigureDefaultLogConfig`, for a
    /// dynamic broker config): every log takes the new defaults under its topic's overrides. A
    /// topic whose overrides do not fit the new defaults (a `segment.bytes` below a new
    /// `log.roll` rule, say) is an error and nothing changes.
    pub fn set_default_log_config(&self, defaults: LogConfig) -> Result<()> {
        let overrides = self.topic_overrides.read().unwrap_or_else(PoisonError::into_inner).clone();
        let mut configs = BTreeMap::new();
        for (topic, keys) in &overrides {
            let config = defaults
                .with_overrides(keys)
                .map_err(|error| Error::InvalidArgument(format!("topic {topic}: {error}")))?;
            configs.insert(topic.clone(), config);
        }
        *self.log_defaults.write().unwrap_or_else(PoisonError::into_inner) = defaults.clone();
        let config_of =
            |topic: &str| configs.get(topic).cloned().unwrap_or_else(|| defaults.clone());
        let logs: Vec<_> = self
            .logs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .chain(self.futures.read().unwrap_or_else(PoisonError::into_inner).iter())
            .map(|(tp, (_, log))| (tp.topic.clone(), Arc::clone(log)))
            .collect();
        for (topic, log) in logs {
            log.set_config(config_of(&topic))?;
        }
        *self.log_defaults.write().unwrap_or_else(PoisonError::into_inner) = defaults;
        Ok(())
    }

    /// The topic's configuration overrides (what DescribeConfigs shows as topic-level).
    pub fn topic_overrides(&self, topic: &str) -> BTreeMap<String, String> {
        self.topic_overrides
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .cloned()
            .unwrap_or_default()
    }

    /// Replaces the topic's overrides and applies the new configuration to its logs, live.
    pub fn set_topic_overrides(
        &self,
        topic: &str,
        overrides: BTreeMap<String, String>,
    ) -> Result<()> {
        let config = self
            .default_log_config()
            .with_overrides(&overrides)
            .map_err(|error| Error::InvalidArgument(format!("topic {topic}: {error}")))?;
        self.topic_overrides
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), overrides);
        self.store_topic_overrides()?;
        for log in self.partitions_of(topic) {
            log.set_config(config.clone())?;
        }
        for (tp, (_, future)) in self.futures.read().unwrap_or_else(PoisonError::into_inner).iter()
        {
            if tp.topic == topic {
                future.set_config(config.clone())?;
            }
        }
        Ok(())
    }

    fn dir_is_offline(&self, dir_idx: usize) -> bool {
        self.dirs.get(dir_idx).is_none_or(|dir| dir.offline.load(Ordering::SeqCst))
    }

    /// Takes the log directory of a failed call offline (Kafka's `LogDirFailureChannel`).
    fn observe<T>(&self, dir_idx: usize, result: Result<T>) -> Result<T> {
        match &result {
            // The process is out of descriptors (EMFILE, ENFILE): the disk is fine, and the call
            // that could not open its file fails alone, with that error.
            Err(Error::Io { source, .. }) if crate::io::is_descriptor_exhaustion(source) => {}
            Err(error @ (Error::Io { .. } | Error::Offline { .. })) => {
                self.take_dir_offline(dir_idx, IoFailure::of(error));
            }
            _ => {}
        }
        result
    }

    /// Takes a directory offline and every log in it: nothing more is acknowledged there, even
    /// through a log handle taken before the failure. The first time, the directory and its
    /// first failure are queued for [`take_dir_failures`](Self::take_dir_failures).
    fn take_dir_offline(&self, dir_idx: usize, failure: Option<IoFailure>) {
        let Some(dir) = self.dirs.get(dir_idx) else { return };
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner);
        if !dir.offline.swap(true, Ordering::SeqCst) {
            // The failure that caused it: the caller's, else the first a log of the directory
            // recorded for itself.
            let failure = failure.or_else(|| {
                logs.values()
                    .filter(|(log_dir_idx, _)| *log_dir_idx == dir_idx)
                    .find_map(|(_, log)| log.failure())
            });
            self.failures
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(DirFailure { dir: dir.path.clone(), failure });
        }
        for (log_dir_idx, log) in logs.values() {
            if *log_dir_idx == dir_idx {
                log.take_offline();
            }
        }
        for (future_dir_idx, future) in
            self.futures.read().unwrap_or_else(PoisonError::into_inner).values()
        {
            if *future_dir_idx == dir_idx {
                future.take_offline();
            }
        }
    }

    /// The directories that went offline since the last call, each once, with the I/O error
    /// that took it offline (for the broker's error log: Kafka's `LogDirFailureHandler`).
    pub fn take_dir_failures(&self) -> Vec<DirFailure> {
        self.refresh_offline();
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The directories that went offline.
    pub fn offline_dirs(&self) -> Vec<PathBuf> {
        self.refresh_offline();
        self.dirs
            .iter()
            .filter(|d| d.offline.load(Ordering::SeqCst))
            .map(|d| d.path.clone())
            .collect()
    }

    /// The log of `tp`; `Offline` when its directory failed.
    pub fn get_log(&self, tp: &TopicPartition) -> Result<Arc<PartitionLog>> {
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner);
        let (dir_idx, log) = logs.get(tp).ok_or_else(|| Error::UnknownTopicOrPartition {
            topic: tp.topic.clone(),
            partition: tp.partition,
        })?;
        if self.dir_is_offline(*dir_idx) || log.is_offline() {
            let (dir_idx, dir) =
                (*dir_idx, self.dirs.get(*dir_idx).map(|d| d.path.clone()).unwrap_or_default());
            let failure = log.failure();
            drop(logs);
            self.take_dir_offline(dir_idx, failure);
            return Err(Error::Offline { dir });
        }
        Ok(Arc::clone(log))
    }

    /// Every partition, in order.
    pub fn partitions(&self) -> Vec<TopicPartition> {
        self.logs.read().unwrap_or_else(PoisonError::into_inner).keys().cloned().collect()
    }

    /// The topics, in order.
    pub fn topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self.partitions().into_iter().map(|tp| tp.topic).collect();
        topics.dedup();
        topics
    }

    fn partitions_of(&self, topic: &str) -> Vec<Arc<PartitionLog>> {
        let logs = self.logs.read().unwrap_or_else(PoisonError::into_inner);
        logs.iter()
            .filter(|(tp, _)| tp.topic == topic)
            .map(|(_, (_, log))| Arc::clone(log))
            .collect()
    }

    /// Creates `topic` with `n_partitions` partitions, each in the online directory holding the
    /// fewest partitions. The topic name is checked as Kafka does, so it never escapes the
    /// directory. `overrides` are topic-level configuration keys.
    pub fn create_topic(
        &self,
        topic: &str,
        n_partitions: i32,
        overrides: BTreeMap<String, String>,
    ) -> Result<Vec<TopicPartition>> {
        self.create_topic_with_id(topic, n_partitions, overrides, None)
    }

    /// [`create_topic`](Self::create_topic) with the topic id `topic_id` when given (a topic
    /// re-created from remote storage keeps the id its bucket folders are named by), else a new
    /// one.
    pub fn create_topic_with_id(
        &self,
        topic: &str,
        n_partitions: i32,
        overrides: BTreeMap<String, String>,
        topic_id: Option<[u8; 16]>,
    ) -> Result<Vec<TopicPartition>> {
        validate_topic(topic).map_err(|error| Error::InvalidArgument(error.to_string()))?;
        if n_partitions < 1 {
            return Err(Error::InvalidArgument(format!(
                "a topic needs at least one partition, not {n_partitions}"
            )));
        }
        let _serialized = self.topic_changes.lock().unwrap_or_else(PoisonError::into_inner);
        if !self.partitions_of(topic).is_empty() {
            return Err(Error::TopicAlreadyExists { topic: topic.to_owned() });
        }
        let config = self
            .default_log_config()
            .with_overrides(&overrides)
            .map_err(|error| Error::InvalidArgument(format!("topic {topic}: {error}")))?;
        if !overrides.is_empty() {
            self.topic_overrides
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(topic.to_owned(), overrides);
            self.store_topic_overrides()?;
        }
        let now_ms = self.clock.now_ms();
        let topic_id = topic_id.unwrap_or_else(|| self.new_topic_id(topic, now_ms));
        let created = self.add_partitions(topic, topic_id, 0..n_partitions, &config)?;
        self.topic_ids
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), topic_id);
        Ok(created)
    }

    /// Grows `topic` to `n_partitions_total` partitions (Kafka's CreatePartitions); the new ones
    /// share the topic id of partition 0. Fewer or equal partitions than it has is an error.
    pub fn create_partitions(
        &self,
        topic: &str,
        n_partitions_total: i32,
    ) -> Result<Vec<TopicPartition>> {
        let _serialized = self.topic_changes.lock().unwrap_or_else(PoisonError::into_inner);
        let existing = self.partitions_of(topic);
        let Some(first) = existing.first() else {
            return Err(Error::UnknownTopicOrPartition { topic: topic.to_owned(), partition: -1 });
        };
        let current = i32::try_from(existing.len()).unwrap_or(i32::MAX);
        if n_partitions_total <= current {
            return Err(Error::InvalidArgument(format!(
                "topic {topic} has {current} partitions; the new count {n_partitions_total} must be larger"
            )));
        }
        let topic_id = PartitionMetadata::read(self.fs.as_ref(), &first.dir())?
            .map_or_else(|| self.new_topic_id(topic, self.clock.now_ms()), |meta| meta.topic_id);
        let config = self.topic_config(topic)?;
        self.add_partitions(topic, topic_id, current..n_partitions_total, &config)
    }

    /// The topic id of `topic`, from the `partition.metadata` of its first partition.
    pub fn topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        if let Some(id) = self.topic_ids.read().unwrap_or_else(PoisonError::into_inner).get(topic) {
            return Some(*id);
        }
        let first = self.partitions_of(topic).into_iter().next()?;
        let id = PartitionMetadata::read(self.fs.as_ref(), &first.dir()).ok().flatten()?.topic_id;
        self.topic_ids.write().unwrap_or_else(PoisonError::into_inner).insert(topic.to_owned(), id);
        Some(id)
    }

    /// The partition count of every topic, in name order.
    pub fn topic_partition_counts(&self) -> BTreeMap<String, i32> {
        let mut counts: BTreeMap<String, i32> = BTreeMap::new();
        for tp in self.logs.read().unwrap_or_else(PoisonError::into_inner).keys() {
            *counts.entry(tp.topic.clone()).or_default() += 1;
        }
        counts
    }

    /// A producer id never handed out before, even across restarts (Kafka's
    /// `ProducerIdManager`): ids are reserved in blocks of [`PRODUCER_ID_BLOCK_IDS`] by a
    /// durable write of the block's end before any of them is used.
    pub fn allocate_producer_id(&self) -> Result<i64> {
        let mut ids = self.producer_ids.lock().unwrap_or_else(PoisonError::into_inner);
        let (next, end) = match *ids {
            Some((next, end)) if next < end => (next, end),
            current => {
                let path = self
                    .dirs
                    .first()
                    .map(|dir| dir.path.join(PRODUCER_ID_BLOCK_FILE))
                    .unwrap_or_default();
                let start = match current {
                    Some((_, end)) => end,
                    None => match read_text_if_exists(self.fs.as_ref(), &path, 64)? {
                        Some(text) => text.trim().parse::<i64>().map_err(|_| Error::Malformed {
                            path: path.clone(),
                            line: Some(1),
                            reason: format!("{:?} is not a producer id", text.trim()),
                        })?,
                        None => 0,
                    },
                };
                let end = start + PRODUCER_ID_BLOCK_IDS;
                write_atomically(self.fs.as_ref(), &path, format!("{end}\n").as_bytes())?;
                (start, end)
            }
        };
        *ids = Some((next + 1, end));
        Ok(next)
    }

    /// The cluster id of the first log directory's `meta.properties`.
    pub fn cluster_id(&self) -> Option<String> {
        let dir = self.dirs.first()?;
        MetaProperties::read(self.fs.as_ref(), &dir.path).ok().flatten()?.cluster_id
    }

    /// Creates the partitions `partitions` of `topic` whole or not at all
    /// (`manager/creation.rs`): on an error every one of them is removed again and the error
    /// returned.
    fn add_partitions(
        &self,
        topic: &str,
        topic_id: [u8; 16],
        partitions: std::ops::Range<i32>,
        config: &LogConfig,
    ) -> Result<Vec<TopicPartition>> {
        let first = partitions.start;
        if let Err(error) = self.begin_creation(topic, first) {
            // The markers written before the failure go (nothing else was made yet).
            let _unfinished = self.roll_back_creation(topic, first);
            return Err(error);
        }
        let mut parents: Vec<usize> = Vec::new();
        let created = self.create_partition_logs(topic, topic_id, partitions, config, &mut parents);
        let result = created.and_then(|created| {
            self.commit_creation(topic, &parents)?;
            Ok(created)
        });
        if result.is_err() {
            // If the rollback fails too, its directory went offline (queued as a failure) and
            // the markers stay: the next open finishes the rollback. The caller gets the error
            // that stopped the creation.
            let _unfinished = self.roll_back_creation(topic, first);
        }
        result
    }

    /// The partition logs of [`LogManager::add_partitions`], each in the least loaded online
    /// directory; `parents` gets the directories used.
    fn create_partition_logs(
        &self,
        topic: &str,
        topic_id: [u8; 16],
        partitions: std::ops::Range<i32>,
        config: &LogConfig,
        parents: &mut Vec<usize>,
    ) -> Result<Vec<TopicPartition>> {
        let now_ms = self.clock.now_ms();
        // Counted once: a count per partition would make a large topic quadratic.
        let mut loads: Vec<usize> = vec![0; self.dirs.len()];
        for (dir_idx, _) in self.logs.read().unwrap_or_else(PoisonError::into_inner).values() {
            if let Some(load) = loads.get_mut(*dir_idx) {
                *load += 1;
            }
        }
        let mut created = Vec::new();
        for partition in partitions {
            let dir_idx = (0..self.dirs.len())
                .filter(|dir_idx| !self.dir_is_offline(*dir_idx))
                .min_by_key(|dir_idx| loads.get(*dir_idx).copied().unwrap_or(usize::MAX))
                .ok_or_else(|| Error::Offline {
                    dir: self.dirs.first().map(|d| d.path.clone()).unwrap_or_default(),
                })?;
            if !parents.contains(&dir_idx) {
                parents.push(dir_idx);
            }
            let parent = self.dirs.get(dir_idx).map(|d| d.path.clone()).unwrap_or_default();
            let path = parent.join(PartitionDir::live(topic, partition).to_name());
            let result = (|| {
                // Its entry in the parent is made durable once, for every new partition, by
                // `commit_creation`; until then the marker covers a crash.
                self.fs
                    .create_dir_all(&path)
                    .map_err(|e| Error::io("create partition dir", &path, e))?;
                // Written before any data, as Kafka does (spec §3.6); the new directory's
                // one fsync, after its first segment is made (the load's), covers its entry.
                PartitionMetadata::new(topic_id).write_before_dir_sync(self.fs.as_ref(), &path)?;
                let tp = TopicPartition { topic: topic.to_owned(), partition };
                let params = LoadParams {
                    had_clean_shutdown: true,
                    log_start_offset_checkpoint: 0,
                    recovery_point_checkpoint: 0,
                    now_ms,
                };
                PartitionLog::open(Arc::clone(&self.fs), &path, tp, config.clone(), params)
            })();
            let (log, _) = self.observe(dir_idx, result)?;
            let tp = log.topic_partition().clone();
            log.set_background_queue(Arc::clone(&self.background));
            self.logs
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(tp.clone(), (dir_idx, Arc::new(log)));
            if let Some(load) = loads.get_mut(dir_idx) {
                *load += 1;
            }
            created.push(tp);
        }
        Ok(created)
    }

    /// A topic id for a new topic: 16 bytes, never all zero, different for every creation.
    fn new_topic_id(&self, topic: &str, now_ms: i64) -> [u8; 16] {
        let unique = self.delete_counter.fetch_add(1, Ordering::SeqCst);
        // FNV-1a over the name, then mixed with the clock and a counter (SplitMix64 finalizer).
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in topic.bytes() {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        let high = splitmix::mix(hash ^ now_ms.cast_unsigned());
        let low = splitmix::mix(high ^ unique.wrapping_add(splitmix::GAMMA)) | 1;
        let mut id = [0u8; 16];
        let (first, second) = id.split_at_mut(8);
        first.copy_from_slice(&high.to_be_bytes());
        second.copy_from_slice(&low.to_be_bytes());
        id
    }

    /// One round of background work at `now_ms`: flushes that are due (`flush.ms`, group
    /// commit), retention every `log.retention.check.interval.ms`, checkpoints, delayed file
    /// and directory deletes. Errors take their directory offline; the round goes on.
    pub fn tick(&self, now_ms: i64) {
        let (retention_due, checkpoint_due) = {
            let mut timers = self.timers.lock().unwrap_or_else(PoisonError::into_inner);
            let retention_due =
                now_ms - timers.retention_ms >= self.config.retention_check_interval_ms;
            if retention_due {
                timers.retention_ms = now_ms;
            }
            let checkpoint_due = now_ms - timers.recovery_checkpoint_ms
                >= self.config.flush_offset_checkpoint_interval_ms
                || now_ms - timers.high_watermark_checkpoint_ms
                    >= self.config.high_watermark_checkpoint_interval_ms;
            if checkpoint_due {
                timers.recovery_checkpoint_ms = now_ms;
                timers.high_watermark_checkpoint_ms = now_ms;
            }
            (retention_due, checkpoint_due)
        };
        let logs = self.logs_to_visit(retention_due);
        // A log that poisoned itself did it in a mutation, which queued it: its directory goes
        // offline here (every log is looked at on a retention pass, and `offline_dirs` looks
        // at every log too).
        if retention_due {
            self.refresh_offline();
        }
        for (dir_idx, log) in &logs {
            if log.is_offline() && !self.dir_is_offline(*dir_idx) {
                self.take_dir_offline(*dir_idx, None);
            }
            if self.dir_is_offline(*dir_idx) || log.is_offline() {
                continue;
            }
            let _ = self.observe(*dir_idx, log.flush_if_due(now_ms));
            // Compacted logs get their retention from the cleaner, after each pass (Kafka's
            // `cleanupLogs` leaves them to it, and with `log.cleaner.enable=false` to nobody).
            if retention_due && !log.config().is_ok_and(|config| config.is_compact()) {
                let _ = self.observe(*dir_idx, log.delete_old_segments(now_ms));
            }
            let _ = self.observe(*dir_idx, log.delete_expired(now_ms));
        }
        self.release_visited();
        self.step_moves(now_ms);
        if checkpoint_due {
            let _ = self.checkpoint_if_changed();
        }
        let _ = self.delete_pending_dirs();
    }

    /// Closes everything cleanly: every log flushed and trimmed, checkpoints written, the clean
    /// shutdown marker written in each healthy directory, and the directory locks released.
    pub fn shutdown(&self) -> Result<()> {
        self.closing.store(true, Ordering::SeqCst);
        drop(self.loading.lock().unwrap_or_else(PoisonError::into_inner));
        self.stop_cleaner();
        self.refresh_offline();
        let now_ms = self.clock.now_ms();
        let mut first_error = None;
        for (dir_idx, log) in self.logs.read().unwrap_or_else(PoisonError::into_inner).values() {
            if self.dir_is_offline(*dir_idx) || log.is_offline() {
                continue;
            }
            if let Err(error) = self.observe(*dir_idx, log.close(now_ms)) {
                first_error.get_or_insert(error);
            }
        }
        for (dir_idx, future) in
            self.futures.read().unwrap_or_else(PoisonError::into_inner).values()
        {
            if self.dir_is_offline(*dir_idx) || future.is_offline() {
                continue;
            }
            if let Err(error) = self.observe(*dir_idx, future.close(now_ms)) {
                first_error.get_or_insert(error);
            }
        }
        if let Err(error) = self.checkpoint() {
            first_error.get_or_insert(error);
        }
        for (dir_idx, dir) in self.dirs.iter().enumerate() {
            if !self.dir_is_offline(dir_idx) {
                let marker = dir.path.join(CLEAN_SHUTDOWN_FILE);
                let result = write_atomically(
                    self.fs.as_ref(),
                    &marker,
                    br#"{"version":0,"brokerEpoch":-1}"#,
                );
                if let Err(error) = self.observe(dir_idx, result) {
                    first_error.get_or_insert(error);
                }
            }
            dir.lock.lock().unwrap_or_else(PoisonError::into_inner).take();
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Starts the one background thread that runs [`LogManager::tick`] every `period` (Kafka's
    /// scheduler: retention, flushes and group commit, checkpoints, delayed deletes). The thread
    /// stops when the returned handle is dropped.
    ///
    /// With `log.cleaner.enable`, `log.cleaner.threads` cleaner threads start too (Kafka's
    /// `LogCleaner.startup`), stopped and joined with the handle.
    pub fn start_background(self: &Arc<Self>, period: Duration) -> Result<Background> {
        let (stop, stopped) = mpsc::channel::<()>();
        let manager = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("seglog-log-manager".to_owned())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(period) {
                    manager.tick(manager.clock.now_ms());
                }
            })
            .map_err(|error| Error::io("spawn background thread", "seglog-log-manager", error))?;
        let mut background = Background {
            stop: Some(stop),
            thread: Some(thread),
            cleaners: Vec::new(),
            manager: None,
        };
        if self.cleaner.config.enable {
            self.cleaner.stop.store(false, Ordering::SeqCst);
            for thread_idx in 0..self.cleaner.config.threads {
                let manager = Arc::clone(self);
                let name = format!("seglog-log-cleaner-{thread_idx}");
                let thread = std::thread::Builder::new()
                    .name(name.clone())
                    .spawn(move || manager.run_cleaner_thread())
                    .map_err(|error| Error::io("spawn cleaner thread", name, error))?;
                background.cleaners.push(thread);
            }
            background.manager = Some(Arc::clone(self));
        }
        Ok(background)
    }
}

/// The running background thread of a [`LogManager`]; dropping it stops and joins the thread.
#[derive(Debug)]
pub struct Background {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    cleaners: Vec<JoinHandle<()>>,
    /// Set when cleaner threads run, to stop them.
    manager: Option<Arc<LogManager>>,
}

impl Drop for Background {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(manager) = self.manager.take() {
            manager.stop_cleaner();
        }
        for cleaner in self.cleaners.drain(..) {
            let _ = cleaner.join();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
