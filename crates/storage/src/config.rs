//! Topic and broker log configuration (spec §10): Kafka's key names, defaults and valid ranges,
//! plus seglog's own durability keys, and the Java `.properties` text they are written in.
//!
//! - [`LogConfig`] (Kafka's `LogConfig`): the per-topic settings storage reads, built from topic
//!   keys (`segment.bytes`, `retention.ms`, ...) over broker defaults.
//! - [`BrokerLogConfig`]: the broker keys storage needs (`log.dirs`, checkpoint intervals, ...)
//!   and the broker synonyms of the topic keys (`log.segment.bytes`, `log.retention.hours`, ...),
//!   which produce the default [`LogConfig`].
//! - [`parse_properties`] / [`write_properties`]: the subset of Java's `.properties` syntax used
//!   by `server.properties` and `meta.properties`.
//!
//! Values are parsed as Kafka's `ConfigDef` parses them: surrounding whitespace is trimmed,
//! integers are decimal, booleans are `true`/`false` in any case, lists are comma-separated, and
//! enumerated strings are case-sensitive. Keys that storage does not use are ignored, so a full
//! topic or broker configuration can be passed in; rejecting unknown topic keys (Kafka's
//! `LogConfig.validateNames`) is the broker's job, since Kafka's topic keys include
//! replication and tiered-storage settings that storage never reads.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::PathBuf;

use seglog_format::{Compression, TimestampType};

/// Why a configuration could not be parsed or validated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A key has a value that does not parse or is out of Kafka's valid range (Kafka's
    /// `ConfigException`). `value` is the text as given.
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    InvalidValue { key: String, value: String, reason: String },

    /// A line of `.properties` text is malformed. `line` is 1-based.
    #[error("malformed properties text at line {line}: {reason}")]
    Syntax { line: usize, reason: String },
}

impl ConfigError {
    /// An [`ConfigError::InvalidValue`] for `key`.
    pub fn invalid(key: &str, value: &str, reason: impl Into<String>) -> Self {
        Self::InvalidValue { key: key.to_owned(), value: value.to_owned(), reason: reason.into() }
    }

    /// The key named by an [`ConfigError::InvalidValue`].
    pub fn key(&self) -> Option<&str> {
        match self {
            Self::InvalidValue { key, .. } => Some(key),
            Self::Syntax { .. } => None,
        }
    }
}

/// The topic-level keys storage reads (Kafka's `TopicConfig` names), plus seglog's own.
pub mod topic {
    /// `segment.bytes`: the size at which a segment is rolled.
    pub const SEGMENT_BYTES: &str = "segment.bytes";
    /// `segment.ms`: the age at which a segment is rolled.
    pub const SEGMENT_MS: &str = "segment.ms";
    /// `segment.jitter.ms`: the bound of the random jitter subtracted from `segment.ms`.
    pub const SEGMENT_JITTER_MS: &str = "segment.jitter.ms";
    /// `segment.index.bytes`: the preallocated size of `.index` and `.timeindex`.
    pub const SEGMENT_INDEX_BYTES: &str = "segment.index.bytes";
    /// `index.interval.bytes`: bytes of batches between offset-index entries.
    pub const INDEX_INTERVAL_BYTES: &str = "index.interval.bytes";
    /// `flush.messages`: fsync after this many unflushed messages.
    pub const FLUSH_MESSAGES: &str = "flush.messages";
    /// `flush.ms`: fsync when the last flush is older than this.
    pub const FLUSH_MS: &str = "flush.ms";
    /// `retention.ms`: time retention (-1: forever).
    pub const RETENTION_MS: &str = "retention.ms";
    /// `retention.bytes`: size retention per partition (negative: unlimited).
    pub const RETENTION_BYTES: &str = "retention.bytes";
    /// `max.message.bytes`: the largest batch accepted, including the 12-byte log overhead.
    pub const MAX_MESSAGE_BYTES: &str = "max.message.bytes";
    /// `file.delete.delay.ms`: the delay before `*.deleted` files are removed.
    pub const FILE_DELETE_DELAY_MS: &str = "file.delete.delay.ms";
    /// `cleanup.policy`: a list of `delete` and `compact`.
    pub const CLEANUP_POLICY: &str = "cleanup.policy";
    /// `delete.retention.ms`: how long tombstones and markers survive cleaning.
    pub const DELETE_RETENTION_MS: &str = "delete.retention.ms";
    /// `min.compaction.lag.ms`: records younger than this are not compacted.
    pub const MIN_COMPACTION_LAG_MS: &str = "min.compaction.lag.ms";
    /// `max.compaction.lag.ms`: records older than this are compacted regardless of the ratio.
    pub const MAX_COMPACTION_LAG_MS: &str = "max.compaction.lag.ms";
    /// `min.cleanable.dirty.ratio`: the dirty ratio above which a log is cleaned.
    pub const MIN_CLEANABLE_DIRTY_RATIO: &str = "min.cleanable.dirty.ratio";
    /// `compression.type`: the codec batches are stored with (`producer`: keep the producer's).
    pub const COMPRESSION_TYPE: &str = "compression.type";
    /// `compression.gzip.level`.
    pub const COMPRESSION_GZIP_LEVEL: &str = "compression.gzip.level";
    /// `compression.lz4.level`.
    pub const COMPRESSION_LZ4_LEVEL: &str = "compression.lz4.level";
    /// `compression.zstd.level`.
    pub const COMPRESSION_ZSTD_LEVEL: &str = "compression.zstd.level";
    /// `preallocate`: preallocate new `.log` files to `segment.bytes`.
    pub const PREALLOCATE: &str = "preallocate";
    /// `message.timestamp.type`: `CreateTime` or `LogAppendTime`.
    pub const MESSAGE_TIMESTAMP_TYPE: &str = "message.timestamp.type";
    /// `message.timestamp.before.max.ms`: the largest age of a `CreateTime` timestamp.
    pub const MESSAGE_TIMESTAMP_BEFORE_MAX_MS: &str = "message.timestamp.before.max.ms";
    /// `message.timestamp.after.max.ms`: the largest future skew of a `CreateTime` timestamp.
    pub const MESSAGE_TIMESTAMP_AFTER_MAX_MS: &str = "message.timestamp.after.max.ms";
    /// `message.timestamp.difference.max.ms` (deprecated): the symmetric bound that the
    /// before/after keys fall back to when they are left at their default.
    pub const MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS: &str = "message.timestamp.difference.max.ms";
    /// `seglog.durability` (seglog's own): `page-cache`, `group-commit` or
    /// `fsync-every-append`.
    pub const SEGLOG_DURABILITY: &str = "seglog.durability";
    /// `seglog.group.commit.interval.ms` (seglog's own): the group-commit fsync period.
    pub const SEGLOG_GROUP_COMMIT_INTERVAL_MS: &str = "seglog.group.commit.interval.ms";
}

/// The broker-level keys storage reads (Kafka's `ServerLogConfigs` and friends).
pub mod broker {
    /// `log.dirs`: comma-separated log directories; falls back to `log.dir`.
    pub const LOG_DIRS: &str = "log.dirs";
    /// `log.dir`: a single log directory.
    pub const LOG_DIR: &str = "log.dir";
    /// `num.partitions`: partitions of an auto-created topic.
    pub const NUM_PARTITIONS: &str = "num.partitions";
    /// `num.recovery.threads.per.data.dir`.
    pub const NUM_RECOVERY_THREADS_PER_DATA_DIR: &str = "num.recovery.threads.per.data.dir";
    /// `log.retention.check.interval.ms`: the retention scheduler period.
    pub const LOG_RETENTION_CHECK_INTERVAL_MS: &str = "log.retention.check.interval.ms";
    /// `log.flush.scheduler.interval.ms`: the background flusher period (and `flush.ms`'s
    /// fallback).
    pub const LOG_FLUSH_SCHEDULER_INTERVAL_MS: &str = "log.flush.scheduler.interval.ms";
    /// `log.flush.offset.checkpoint.interval.ms`: the recovery-point checkpoint period.
    pub const LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS: &str =
        "log.flush.offset.checkpoint.interval.ms";
    /// `log.flush.start.offset.checkpoint.interval.ms`: the log-start-offset checkpoint period.
    pub const LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS: &str =
        "log.flush.start.offset.checkpoint.interval.ms";
    /// `replica.high.watermark.checkpoint.interval.ms`: the high-watermark checkpoint period.
    pub const REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: &str =
        "replica.high.watermark.checkpoint.interval.ms";
    /// `replica.fetch.max.bytes`: what a move between log directories copies per partition per
    /// step (Kafka's `ReplicaAlterLogDirsThread` fetches with it too).
    pub const REPLICA_FETCH_MAX_BYTES: &str = "replica.fetch.max.bytes";
    /// `replica.fetch.response.max.bytes`: what moves between log directories copy in all per
    /// step.
    pub const REPLICA_FETCH_RESPONSE_MAX_BYTES: &str = "replica.fetch.response.max.bytes";

    /// Synonym of `segment.bytes`.
    pub const LOG_SEGMENT_BYTES: &str = "log.segment.bytes";
    /// Synonym of `segment.ms`, before `log.roll.hours`.
    pub const LOG_ROLL_MS: &str = "log.roll.ms";
    /// Synonym of `segment.ms` in hours.
    pub const LOG_ROLL_HOURS: &str = "log.roll.hours";
    /// Synonym of `segment.jitter.ms`, before `log.roll.jitter.hours`.
    pub const LOG_ROLL_JITTER_MS: &str = "log.roll.jitter.ms";
    /// Synonym of `segment.jitter.ms` in hours.
    pub const LOG_ROLL_JITTER_HOURS: &str = "log.roll.jitter.hours";
    /// Synonym of `segment.index.bytes`.
    pub const LOG_INDEX_SIZE_MAX_BYTES: &str = "log.index.size.max.bytes";
    /// Synonym of `index.interval.bytes`.
    pub const LOG_INDEX_INTERVAL_BYTES: &str = "log.index.interval.bytes";
    /// Synonym of `flush.messages`.
    pub const LOG_FLUSH_INTERVAL_MESSAGES: &str = "log.flush.interval.messages";
    /// Synonym of `flush.ms`, before `log.flush.scheduler.interval.ms`.
    pub const LOG_FLUSH_INTERVAL_MS: &str = "log.flush.interval.ms";
    /// Synonym of `retention.ms`, before `log.retention.minutes` and `log.retention.hours`.
    pub const LOG_RETENTION_MS: &str = "log.retention.ms";
    /// Synonym of `retention.ms` in minutes, before `log.retention.hours`.
    pub const LOG_RETENTION_MINUTES: &str = "log.retention.minutes";
    /// Synonym of `retention.ms` in hours.
    pub const LOG_RETENTION_HOURS: &str = "log.retention.hours";
    /// Synonym of `retention.bytes`.
    pub const LOG_RETENTION_BYTES: &str = "log.retention.bytes";
    /// Synonym of `max.message.bytes`.
    pub const MESSAGE_MAX_BYTES: &str = "message.max.bytes";
    /// Synonym of `file.delete.delay.ms`.
    pub const LOG_SEGMENT_DELETE_DELAY_MS: &str = "log.segment.delete.delay.ms";
    /// Synonym of `cleanup.policy`.
    pub const LOG_CLEANUP_POLICY: &str = "log.cleanup.policy";
    /// Synonym of `delete.retention.ms`.
    pub const LOG_CLEANER_DELETE_RETENTION_MS: &str = "log.cleaner.delete.retention.ms";
    /// Synonym of `min.compaction.lag.ms`.
    pub const LOG_CLEANER_MIN_COMPACTION_LAG_MS: &str = "log.cleaner.min.compaction.lag.ms";
    /// Synonym of `max.compaction.lag.ms`.
    pub const LOG_CLEANER_MAX_COMPACTION_LAG_MS: &str = "log.cleaner.max.compaction.lag.ms";
    /// Synonym of `min.cleanable.dirty.ratio`.
    pub const LOG_CLEANER_MIN_CLEANABLE_RATIO: &str = "log.cleaner.min.cleanable.ratio";
    /// Synonym of `preallocate`.
    pub const LOG_PREALLOCATE: &str = "log.preallocate";
    /// Synonym of `message.timestamp.type`.
    pub const LOG_MESSAGE_TIMESTAMP_TYPE: &str = "log.message.timestamp.type";
    /// Synonym of `message.timestamp.before.max.ms`.
    pub const LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS: &str = "log.message.timestamp.before.max.ms";
    /// Synonym of `message.timestamp.after.max.ms`.
    pub const LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS: &str = "log.message.timestamp.after.max.ms";
    /// Synonym of `message.timestamp.difference.max.ms` (deprecated).
    pub const LOG_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS: &str =
        "log.message.timestamp.difference.max.ms";
}

const MS_PER_MINUTE: i64 = 60 * 1000;
const MS_PER_HOUR: i64 = 60 * MS_PER_MINUTE;

/// The smallest `segment.bytes` (Kafka's `LegacyRecord.RECORD_OVERHEAD_V0`).
pub const SEGMENT_BYTES_MIN: i64 = 14;
/// seglog's default log directory when neither `log.dirs` nor `log.dir` is set (Kafka's is
/// `/tmp/kafka-logs`).
pub const LOG_DIR_DEFAULT: &str = "./seglog-data";

/// One value of `cleanup.policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CleanupPolicy {
    /// `compact`: keep the last record of each key (the log cleaner).
    Compact,
    /// `delete`: remove whole segments past `retention.ms` / `retention.bytes`.
    Delete,
}

impl CleanupPolicy {
    /// Kafka's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Compact => "compact",
            Self::Delete => "delete",
        }
    }
}

/// The target codec of a topic (Kafka's `BrokerCompressionType`): a codec, or `producer` to keep
/// each batch as the producer compressed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BrokerCompressionType {
    /// `producer`: store batches with the producer's codec.
    Producer,
    /// `uncompressed`.
    Uncompressed,
    /// `gzip`.
    Gzip,
    /// `snappy`.
    Snappy,
    /// `lz4`.
    Lz4,
    /// `zstd`.
    Zstd,
}

impl BrokerCompressionType {
    /// Every value, in Kafka's order.
    pub const ALL: [Self; 6] =
        [Self::Uncompressed, Self::Zstd, Self::Lz4, Self::Snappy, Self::Gzip, Self::Producer];

    /// Kafka's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Producer => "producer",
            Self::Uncompressed => "uncompressed",
            Self::Gzip => "gzip",
            Self::Snappy => "snappy",
            Self::Lz4 => "lz4",
            Self::Zstd => "zstd",
        }
    }

    /// Parses Kafka's name (case-sensitive, as Kafka's validator is).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|value| value.name() == name)
    }

    /// The codec batches are rewritten to, or `None` for `producer` (keep the producer's).
    pub const fn target(self) -> Option<Compression> {
        match self {
            Self::Producer => None,
            Self::Uncompressed => Some(Compression::None),
            Self::Gzip => Some(Compression::Gzip),
            Self::Snappy => Some(Compression::Snappy),
            Self::Lz4 => Some(Compression::Lz4),
            Self::Zstd => Some(Compression::Zstd),
        }
    }
}

/// When an append becomes durable (`seglog.durability`; seglog's own key, which Kafka does not
/// have). Whatever the mode, a segment is fsynced when it is rolled and at clean shutdown, and
/// `flush.messages` / `flush.ms` still force a flush when they are set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DurabilityMode {
    /// `page-cache`, Kafka's behaviour and the default: an append is acknowledged once it is in
    /// the page cache, and fsync happens only when `flush.messages` or `flush.ms` says so (both
    /// `Long.MAX` by default, that is never: Kafka relies on replication, and recovery truncates
    /// a torn tail after a crash). Acknowledged appends can be lost on power failure.
    #[default]
    PageCache,
    /// `group-commit`: a background flusher fsyncs the active segment every
    /// `seglog.group.commit.interval.ms` (5 by default); an append is acknowledged after the
    /// fsync that covers it, so many appends share one fsync. Nothing acknowledged is lost.
    GroupCommit,
    /// `fsync-every-append`: each append is fsynced before it is acknowledged. Nothing
    /// acknowledged is lost; the slowest mode.
    FsyncEveryAppend,
}

impl DurabilityMode {
    /// Every value.
    pub const ALL: [Self; 3] = [Self::PageCache, Self::GroupCommit, Self::FsyncEveryAppend];

    /// The value of `seglog.durability`.
    pub const fn name(self) -> &'static str {
        match self {
            Self::PageCache => "page-cache",
            Self::GroupCommit => "group-commit",
            Self::FsyncEveryAppend => "fsync-every-append",
        }
    }

    /// Parses a value of `seglog.durability`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|value| value.name() == name)
    }
}

impl fmt::Display for DurabilityMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The settings of one topic's logs (Kafka's `LogConfig`): every §10.1 topic key storage uses,
/// typed, with Kafka's defaults, plus seglog's durability keys.
///
/// Kafka's sentinels are kept as they are: `retention.ms = -1` keeps data forever, a negative
/// `retention.bytes` means no size limit, and `Long.MAX` (`i64::MAX`) for `flush.messages` /
/// `flush.ms` / the timestamp bounds means "never" / "unbounded".
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` (1 GiB; at least 14).
    pub segment_bytes: u32,
    /// `segment.ms` (7 days; at least 1).
    pub segment_ms: i64,
    /// `segment.jitter.ms` (0; at least 0).
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes` (10 MiB; at least 4).
    pub segment_index_bytes: u32,
    /// `index.interval.bytes` (4096; at least 0).
    pub index_interval_bytes: u32,
    /// `flush.messages` (`Long.MAX`; at least 1).
    pub flush_messages: i64,
    /// `flush.ms` (`Long.MAX`; at least 0).
    pub flush_ms: i64,
    /// `retention.ms` (7 days; at least -1, where -1 is forever).
    pub retention_ms: i64,
    /// `retention.bytes` (-1, unlimited; any value, negative is unlimited).
    pub retention_bytes: i64,
    /// `max.message.bytes` (1048588, 1 MiB + 12; at least 0).
    pub max_message_bytes: u32,
    /// `file.delete.delay.ms` (60000; at least 0).
    pub file_delete_delay_ms: i64,
    /// `cleanup.policy` (`delete`). May be empty (Kafka's list validator accepts an empty list),
    /// which neither deletes nor compacts.
    pub cleanup_policy: BTreeSet<CleanupPolicy>,
    /// `delete.retention.ms` (1 day; at least 0).
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms` (0; at least 0, at most `max.compaction.lag.ms`).
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (`Long.MAX`; at least 1).
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio` (0.5; between 0 and 1).
    pub min_cleanable_dirty_ratio: f64,
    /// `compression.type` (`producer`).
    pub compression_type: BrokerCompressionType,
    /// `compression.gzip.level` (-1, the codec's default; 1 to 9 or -1).
    pub compression_gzip_level: i32,
    /// `compression.lz4.level` (9; 1 to 17).
    pub compression_lz4_level: i32,
    /// `compression.zstd.level` (3; -131072 to 22).
    pub compression_zstd_level: i32,
    /// `preallocate` (false).
    pub preallocate: bool,
    /// `message.timestamp.type` (`CreateTime`; `CreateTime` or `LogAppendTime`, never
    /// `NoTimestampType`).
    pub message_timestamp_type: TimestampType,
    /// `message.timestamp.before.max.ms` as Kafka resolves it: the key's value, or
    /// `message.timestamp.difference.max.ms` when the key is left at `Long.MAX`.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`, resolved like `message_timestamp_before_max_ms`.
    pub message_timestamp_after_max_ms: i64,
    /// `message.timestamp.difference.max.ms` (deprecated; `Long.MAX`; at least 0) as given.
    pub message_timestamp_difference_max_ms: i64,
    /// `seglog.durability` (`page-cache`).
    pub durability: DurabilityMode,
    /// `seglog.group.commit.interval.ms` (5; at least 1): the fsync period of
    /// [`DurabilityMode::GroupCommit`].
    pub group_commit_interval_ms: i64,
}

impl Default for LogConfig {
    /// Kafka's defaults (`LogConfig` / `ServerLogConfigs`), and seglog's `page-cache` durability.
    fn default() -> Self {
        Self {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * MS_PER_HOUR,
            segment_jitter_ms: 0,
            segment_index_bytes: 10 * 1024 * 1024,
            index_interval_bytes: 4096,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            retention_ms: 7 * 24 * MS_PER_HOUR,
            retention_bytes: -1,
            max_message_bytes: 1024 * 1024 + 12,
            file_delete_delay_ms: 60_000,
            cleanup_policy: BTreeSet::from([CleanupPolicy::Delete]),
            delete_retention_ms: 24 * MS_PER_HOUR,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            compression_type: BrokerCompressionType::Producer,
            compression_gzip_level: -1,
            compression_lz4_level: 9,
            compression_zstd_level: 3,
            preallocate: false,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            message_timestamp_difference_max_ms: i64::MAX,
            durability: DurabilityMode::PageCache,
            group_commit_interval_ms: 5,
        }
    }
}

/// Reads typed values from a key-value map with Kafka's `ConfigDef` parsing rules.
struct Reader<'a> {
    properties: &'a BTreeMap<String, String>,
}

impl Reader<'_> {
    /// The trimmed value of `key`, if set.
    fn raw(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(|value| value.trim())
    }

    /// A `LONG` in `min..=max`, if set.
    fn long_opt(&self, key: &str, min: i64, max: i64) -> Result<Option<i64>, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(None) };
        let parsed: i64 =
            value.parse().map_err(|_| ConfigError::invalid(key, value, "not a 64-bit integer"))?;
        check_range(key, value, parsed, min, max)?;
        Ok(Some(parsed))
    }

    /// An `INT` in `min..=max`, if set.
    fn int_opt(&self, key: &str, min: i64, max: i64) -> Result<Option<i32>, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(None) };
        let parsed: i32 =
            value.parse().map_err(|_| ConfigError::invalid(key, value, "not a 32-bit integer"))?;
        check_range(key, value, i64::from(parsed), min, max)?;
        Ok(Some(parsed))
    }

    /// A `LONG` of at least `min`.
    fn long(&self, key: &str, default: i64, min: i64) -> Result<i64, ConfigError> {
        Ok(self.long_opt(key, min, i64::MAX)?.unwrap_or(default))
    }

    /// An `INT` in `min..=max`.
    fn int(&self, key: &str, default: i32, min: i64, max: i64) -> Result<i32, ConfigError> {
        Ok(self.int_opt(key, min, max)?.unwrap_or(default))
    }

    /// An `INT` of at least `min` (itself at least 0), as `u32`.
    fn uint(&self, key: &str, default: u32, min: i64) -> Result<u32, ConfigError> {
        assert!(min >= 0, "uint keys have a non-negative minimum");
        let value = self.int_opt(key, min, i64::from(i32::MAX))?;
        Ok(value.map_or(default, i32::unsigned_abs))
    }

    /// A `DOUBLE` between 0 and 1.
    fn ratio(&self, key: &str, default: f64) -> Result<f64, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(default) };
        let parsed: f64 =
            value.parse().map_err(|_| ConfigError::invalid(key, value, "not a number"))?;
        if !(0.0..=1.0).contains(&parsed) {
            return Err(ConfigError::invalid(key, value, "value must be between 0 and 1"));
        }
        Ok(parsed)
    }

    /// A `BOOLEAN`: `true` or `false` in any case.
    fn boolean(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(default) };
        if value.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if value.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(ConfigError::invalid(key, value, "expected true or false"))
        }
    }

    /// One of `all`, by `name` (case-sensitive, as Kafka's `ValidString`).
    fn choice<T: Copy>(
        &self,
        key: &str,
        default: T,
        all: &[T],
        name: fn(T) -> &'static str,
    ) -> Result<T, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(default) };
        all.iter().copied().find(|candidate| name(*candidate) == value).ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|candidate| name(*candidate)).collect();
            ConfigError::invalid(key, value, format!("string must be one of: {}", names.join(", ")))
        })
    }

    /// `compression.gzip.level`: -1 (the codec's default) or 1 to 9.
    fn gzip_level(&self, key: &str, default: i32) -> Result<i32, ConfigError> {
        let level = self.int(key, default, -1, 9)?;
        if level == 0 {
            let value = self.raw(key).unwrap_or("0");
            return Err(ConfigError::invalid(key, value, "value must be -1 or between 1 and 9"));
        }
        Ok(level)
    }

    /// A `cleanup.policy` list: comma-separated `compact` and `delete`, possibly empty.
    fn cleanup_policy(
        &self,
        key: &str,
        default: &BTreeSet<CleanupPolicy>,
    ) -> Result<BTreeSet<CleanupPolicy>, ConfigError> {
        let Some(value) = self.raw(key) else { return Ok(default.clone()) };
        let mut policies = BTreeSet::new();
        if value.is_empty() {
            return Ok(policies);
        }
        for item in value.split(',').map(str::trim) {
            let policy = match item {
                "compact" => CleanupPolicy::Compact,
                "delete" => CleanupPolicy::Delete,
                _ => {
                    return Err(ConfigError::invalid(
                        key,
                        value,
                        format!("invalid item {item:?}: each item must be compact or delete"),
                    ));
                }
            };
            policies.insert(policy);
        }
        Ok(policies)
    }
}

fn check_range(key: &str, value: &str, parsed: i64, min: i64, max: i64) -> Result<(), ConfigError> {
    if parsed < min {
        return Err(ConfigError::invalid(key, value, format!("value must be at least {min}")));
    }
    if parsed > max {
        return Err(ConfigError::invalid(key, value, format!("value must be no more than {max}")));
    }
    Ok(())
}

/// The valid `message.timestamp.type` values.
const MESSAGE_TIMESTAMP_TYPES: [TimestampType; 2] =
    [TimestampType::CreateTime, TimestampType::LogAppendTime];

/// Kafka's fallback for the timestamp bounds: a bound left at `Long.MAX` takes the deprecated
/// `message.timestamp.difference.max.ms`.
fn resolve_timestamp_bound(bound_ms: i64, difference_max_ms: i64) -> i64 {
    if bound_ms == i64::MAX { difference_max_ms } else { bound_ms }
}

impl LogConfig {
    /// Builds a config from topic keys over Kafka's defaults, validating each key against
    /// Kafka's range (spec §10.1). Keys storage does not use are ignored.
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        Self::from_properties_over(properties, &Self::default())
    }

    /// Builds a config from topic keys, taking each missing key from `defaults`.
    fn from_properties_over(
        properties: &BTreeMap<String, String>,
        defaults: &Self,
    ) -> Result<Self, ConfigError> {
        use topic::{
            CLEANUP_POLICY, COMPRESSION_GZIP_LEVEL, COMPRESSION_LZ4_LEVEL, COMPRESSION_TYPE,
            COMPRESSION_ZSTD_LEVEL, DELETE_RETENTION_MS, FILE_DELETE_DELAY_MS, FLUSH_MESSAGES,
            FLUSH_MS, INDEX_INTERVAL_BYTES, MAX_COMPACTION_LAG_MS, MAX_MESSAGE_BYTES,
            MESSAGE_TIMESTAMP_AFTER_MAX_MS, MESSAGE_TIMESTAMP_BEFORE_MAX_MS,
            MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, MESSAGE_TIMESTAMP_TYPE, MIN_CLEANABLE_DIRTY_RATIO,
            MIN_COMPACTION_LAG_MS, PREALLOCATE, RETENTION_BYTES, RETENTION_MS, SEGLOG_DURABILITY,
            SEGLOG_GROUP_COMMIT_INTERVAL_MS, SEGMENT_BYTES, SEGMENT_INDEX_BYTES, SEGMENT_JITTER_MS,
            SEGMENT_MS,
        };
        let (r, d) = (Reader { properties }, defaults);
        let difference_max_ms =
            r.long(MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, d.message_timestamp_difference_max_ms, 0)?;
        let before_max_ms =
            r.long(MESSAGE_TIMESTAMP_BEFORE_MAX_MS, d.message_timestamp_before_max_ms, 0)?;
        let after_max_ms =
            r.long(MESSAGE_TIMESTAMP_AFTER_MAX_MS, d.message_timestamp_after_max_ms, 0)?;
        let compressions = &BrokerCompressionType::ALL;
        let config = Self {
            segment_bytes: r.uint(SEGMENT_BYTES, d.segment_bytes, SEGMENT_BYTES_MIN)?,
            segment_ms: r.long(SEGMENT_MS, d.segment_ms, 1)?,
            segment_jitter_ms: r.long(SEGMENT_JITTER_MS, d.segment_jitter_ms, 0)?,
            segment_index_bytes: r.uint(SEGMENT_INDEX_BYTES, d.segment_index_bytes, 4)?,
            index_interval_bytes: r.uint(INDEX_INTERVAL_BYTES, d.index_interval_bytes, 0)?,
            flush_messages: r.long(FLUSH_MESSAGES, d.flush_messages, 1)?,
            flush_ms: r.long(FLUSH_MS, d.flush_ms, 0)?,
            retention_ms: r.long(RETENTION_MS, d.retention_ms, -1)?,
            retention_bytes: r.long(RETENTION_BYTES, d.retention_bytes, i64::MIN)?,
            max_message_bytes: r.uint(MAX_MESSAGE_BYTES, d.max_message_bytes, 0)?,
            file_delete_delay_ms: r.long(FILE_DELETE_DELAY_MS, d.file_delete_delay_ms, 0)?,
            cleanup_policy: r.cleanup_policy(CLEANUP_POLICY, &d.cleanup_policy)?,
            delete_retention_ms: r.long(DELETE_RETENTION_MS, d.delete_retention_ms, 0)?,
            min_compaction_lag_ms: r.long(MIN_COMPACTION_LAG_MS, d.min_compaction_lag_ms, 0)?,
            max_compaction_lag_ms: r.long(MAX_COMPACTION_LAG_MS, d.max_compaction_lag_ms, 1)?,
            min_cleanable_dirty_ratio: r
                .ratio(MIN_CLEANABLE_DIRTY_RATIO, d.min_cleanable_dirty_ratio)?,
            compression_type: r.choice(
                COMPRESSION_TYPE,
                d.compression_type,
                compressions,
                BrokerCompressionType::name,
            )?,
            compression_gzip_level: r
                .gzip_level(COMPRESSION_GZIP_LEVEL, d.compression_gzip_level)?,
            compression_lz4_level: r.int(COMPRESSION_LZ4_LEVEL, d.compression_lz4_level, 1, 17)?,
            compression_zstd_level: r.int(
                COMPRESSION_ZSTD_LEVEL,
                d.compression_zstd_level,
                -131_072,
                22,
            )?,
            preallocate: r.boolean(PREALLOCATE, d.preallocate)?,
            message_timestamp_type: r.choice(
                MESSAGE_TIMESTAMP_TYPE,
                d.message_timestamp_type,
                &MESSAGE_TIMESTAMP_TYPES,
                TimestampType::name,
            )?,
            message_timestamp_before_max_ms: resolve_timestamp_bound(
                before_max_ms,
                difference_max_ms,
            ),
            message_timestamp_after_max_ms: resolve_timestamp_bound(
                after_max_ms,
                difference_max_ms,
            ),
            message_timestamp_difference_max_ms: difference_max_ms,
            durability: r.choice(
                SEGLOG_DURABILITY,
                d.durability,
                &DurabilityMode::ALL,
                DurabilityMode::name,
            )?,
            group_commit_interval_ms: r.long(
                SEGLOG_GROUP_COMMIT_INTERVAL_MS,
                d.group_commit_interval_ms,
                1,
            )?,
        };
        // Kafka's LogConfig.validateValues.
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms {
            return Err(ConfigError::invalid(
                MIN_COMPACTION_LAG_MS,
                &config.min_compaction_lag_ms.to_string(),
                format!(
                    "conflicting topic config setting {MIN_COMPACTION_LAG_MS} ({}) > \
                     {MAX_COMPACTION_LAG_MS} ({})",
                    config.min_compaction_lag_ms, config.max_compaction_lag_ms
                ),
            ));
        }
        Ok(config)
    }

    /// This config (the broker's defaults) with a topic's overrides applied (Kafka's
    /// `LogConfig.fromProps(defaults, overrides)`); the overrides are validated like
    /// [`LogConfig::from_properties`].
    pub fn with_overrides(
        &self,
        topic_overrides: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        Self::from_properties_over(topic_overrides, self)
    }

    /// Every key of this config with its value, as DescribeConfigs shows them. The timestamp
    /// bounds are the resolved ones, as Kafka's `extractLogConfigMap` passes them on, so
    /// [`LogConfig::from_properties`] of the result gives this config back.
    pub fn to_properties(&self) -> BTreeMap<String, String> {
        use topic::{
            CLEANUP_POLICY, COMPRESSION_GZIP_LEVEL, COMPRESSION_LZ4_LEVEL, COMPRESSION_TYPE,
            COMPRESSION_ZSTD_LEVEL, DELETE_RETENTION_MS, FILE_DELETE_DELAY_MS, FLUSH_MESSAGES,
            FLUSH_MS, INDEX_INTERVAL_BYTES, MAX_COMPACTION_LAG_MS, MAX_MESSAGE_BYTES,
            MESSAGE_TIMESTAMP_AFTER_MAX_MS, MESSAGE_TIMESTAMP_BEFORE_MAX_MS,
            MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, MESSAGE_TIMESTAMP_TYPE, MIN_CLEANABLE_DIRTY_RATIO,
            MIN_COMPACTION_LAG_MS, PREALLOCATE, RETENTION_BYTES, RETENTION_MS, SEGLOG_DURABILITY,
            SEGLOG_GROUP_COMMIT_INTERVAL_MS, SEGMENT_BYTES, SEGMENT_INDEX_BYTES, SEGMENT_JITTER_MS,
            SEGMENT_MS,
        };
        let policies: Vec<&str> = self.cleanup_policy.iter().map(|policy| policy.name()).collect();
        let entries: [(&str, String); 27] = [
            (SEGMENT_BYTES, self.segment_bytes.to_string()),
            (SEGMENT_MS, self.segment_ms.to_string()),
            (SEGMENT_JITTER_MS, self.segment_jitter_ms.to_string()),
            (SEGMENT_INDEX_BYTES, self.segment_index_bytes.to_string()),
            (INDEX_INTERVAL_BYTES, self.index_interval_bytes.to_string()),
            (FLUSH_MESSAGES, self.flush_messages.to_string()),
            (FLUSH_MS, self.flush_ms.to_string()),
            (RETENTION_MS, self.retention_ms.to_string()),
            (RETENTION_BYTES, self.retention_bytes.to_string()),
            (MAX_MESSAGE_BYTES, self.max_message_bytes.to_string()),
            (FILE_DELETE_DELAY_MS, self.file_delete_delay_ms.to_string()),
            (CLEANUP_POLICY, policies.join(",")),
            (DELETE_RETENTION_MS, self.delete_retention_ms.to_string()),
            (MIN_COMPACTION_LAG_MS, self.min_compaction_lag_ms.to_string()),
            (MAX_COMPACTION_LAG_MS, self.max_compaction_lag_ms.to_string()),
            (MIN_CLEANABLE_DIRTY_RATIO, format!("{:?}", self.min_cleanable_dirty_ratio)),
            (COMPRESSION_TYPE, self.compression_type.name().to_owned()),
            (COMPRESSION_GZIP_LEVEL, self.compression_gzip_level.to_string()),
            (COMPRESSION_LZ4_LEVEL, self.compression_lz4_level.to_string()),
            (COMPRESSION_ZSTD_LEVEL, self.compression_zstd_level.to_string()),
            (PREALLOCATE, self.preallocate.to_string()),
            (MESSAGE_TIMESTAMP_TYPE, self.message_timestamp_type.name().to_owned()),
            (MESSAGE_TIMESTAMP_BEFORE_MAX_MS, self.message_timestamp_before_max_ms.to_string()),
            (MESSAGE_TIMESTAMP_AFTER_MAX_MS, self.message_timestamp_after_max_ms.to_string()),
            (
                MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS,
                self.message_timestamp_difference_max_ms.to_string(),
            ),
            (SEGLOG_DURABILITY, self.durability.name().to_owned()),
            (SEGLOG_GROUP_COMMIT_INTERVAL_MS, self.group_commit_interval_ms.to_string()),
        ];
        entries.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
    }

    /// Whether `cleanup.policy` includes `compact`.
    pub fn is_compact(&self) -> bool {
        self.cleanup_policy.contains(&CleanupPolicy::Compact)
    }

    /// Whether `cleanup.policy` includes `delete`.
    pub fn is_delete(&self) -> bool {
        self.cleanup_policy.contains(&CleanupPolicy::Delete)
    }

    /// The age at which a segment is rolled (Kafka's `maxSegmentMs`): `segment.ms`, capped by
    /// `max.compaction.lag.ms` for compacted topics.
    pub fn max_segment_ms(&self) -> i64 {
        if self.is_compact() && self.max_compaction_lag_ms > 0 {
            self.max_compaction_lag_ms.min(self.segment_ms)
        } else {
            self.segment_ms
        }
    }

    /// A new segment's roll jitter (Kafka's `randomSegmentJitter`) from a random number the
    /// caller draws (storage has no random source of its own): `random % min(jitter, segment.ms)`,
    /// or 0 without jitter.
    pub fn segment_jitter_ms_for(&self, random: u64) -> i64 {
        if self.segment_jitter_ms == 0 {
            return 0;
        }
        let bound = self.segment_jitter_ms.min(self.segment_ms);
        assert!(bound > 0, "segment.jitter.ms and segment.ms are validated positive");
        (random % bound.unsigned_abs()) as i64
    }

    /// The size a new `.log` is created with (Kafka's `initFileSize`): `segment.bytes` with
    /// `preallocate`, else 0.
    pub fn init_file_bytes(&self) -> u32 {
        if self.preallocate { self.segment_bytes } else { 0 }
    }
}

/// The broker-level settings storage needs (Kafka's `KafkaConfig`, storage subset, spec §10.2),
/// with the default [`LogConfig`] built from the broker synonyms of the topic keys.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerLogConfig {
    /// `log.dirs`, else `log.dir`, else seglog's [`LOG_DIR_DEFAULT`]. Never empty, no
    /// duplicates.
    pub log_dirs: Vec<PathBuf>,
    /// `num.partitions` (1; at least 1).
    pub n_partitions: u32,
    /// `num.recovery.threads.per.data.dir` (1; at least 1).
    pub n_recovery_threads_per_data_dir: u32,
    /// `log.retention.check.interval.ms` (300000; at least 1).
    pub retention_check_interval_ms: i64,
    /// `log.flush.scheduler.interval.ms` (`Long.MAX`; at least 0, a bound Kafka does not check).
    pub flush_scheduler_interval_ms: i64,
    /// `log.flush.offset.checkpoint.interval.ms` (60000; at least 0).
    pub flush_offset_checkpoint_interval_ms: i64,
    /// `log.flush.start.offset.checkpoint.interval.ms` (60000; at least 0).
    pub flush_start_offset_checkpoint_interval_ms: i64,
    /// `replica.high.watermark.checkpoint.interval.ms` (5000; at least 1, a bound Kafka does not
    /// check).
    pub high_watermark_checkpoint_interval_ms: i64,
    /// The topic defaults: the broker synonyms (`log.segment.bytes`, `log.retention.hours`,
    /// ...) mapped onto a [`LogConfig`].
    pub default_log_config: LogConfig,
    /// The node a broker runs as (`node.id`): written into a new directory's
    /// `meta.properties`, and checked against an existing one as Kafka does. `None` (tools)
    /// checks nothing and gives new directories node 1.
    pub node_id: Option<i32>,
    /// `replica.fetch.max.bytes` (1048576; at least 0): bytes a move between log directories
    /// copies per partition per [`crate::manager::LogManager::tick`] (at least one batch).
    pub replica_fetch_max_bytes: u32,
    /// `replica.fetch.response.max.bytes` (10485760; at least 0): once moves have copied this
    /// much in one tick, no other partition's copy starts in it.
    pub replica_fetch_response_max_bytes: u32,
}

impl Default for BrokerLogConfig {
    fn default() -> Self {
        Self {
            log_dirs: vec![PathBuf::from(LOG_DIR_DEFAULT)],
            n_partitions: 1,
            n_recovery_threads_per_data_dir: 1,
            retention_check_interval_ms: 300_000,
            flush_scheduler_interval_ms: i64::MAX,
            flush_offset_checkpoint_interval_ms: 60_000,
            flush_start_offset_checkpoint_interval_ms: 60_000,
            high_watermark_checkpoint_interval_ms: 5_000,
            default_log_config: LogConfig::default(),
            node_id: None,
            replica_fetch_max_bytes: 1_048_576,
            replica_fetch_response_max_bytes: 10_485_760,
        }
    }
}

/// Broker keys that map one-to-one onto a topic key (`log.segment.bytes` -> `segment.bytes`):
/// the broker key is the topic key's default.
pub const DIRECT_SYNONYMS: [(&str, &str); 21] = [
    (broker::LOG_SEGMENT_BYTES, topic::SEGMENT_BYTES),
    (broker::LOG_INDEX_SIZE_MAX_BYTES, topic::SEGMENT_INDEX_BYTES),
    (broker::LOG_INDEX_INTERVAL_BYTES, topic::INDEX_INTERVAL_BYTES),
    (broker::LOG_FLUSH_INTERVAL_MESSAGES, topic::FLUSH_MESSAGES),
    (broker::LOG_RETENTION_BYTES, topic::RETENTION_BYTES),
    (broker::MESSAGE_MAX_BYTES, topic::MAX_MESSAGE_BYTES),
    (broker::LOG_SEGMENT_DELETE_DELAY_MS, topic::FILE_DELETE_DELAY_MS),
    (broker::LOG_CLEANUP_POLICY, topic::CLEANUP_POLICY),
    (broker::LOG_CLEANER_DELETE_RETENTION_MS, topic::DELETE_RETENTION_MS),
    (broker::LOG_CLEANER_MIN_COMPACTION_LAG_MS, topic::MIN_COMPACTION_LAG_MS),
    (broker::LOG_CLEANER_MAX_COMPACTION_LAG_MS, topic::MAX_COMPACTION_LAG_MS),
    (broker::LOG_CLEANER_MIN_CLEANABLE_RATIO, topic::MIN_CLEANABLE_DIRTY_RATIO),
    (topic::COMPRESSION_TYPE, topic::COMPRESSION_TYPE),
    (topic::COMPRESSION_GZIP_LEVEL, topic::COMPRESSION_GZIP_LEVEL),
    (topic::COMPRESSION_LZ4_LEVEL, topic::COMPRESSION_LZ4_LEVEL),
    (topic::COMPRESSION_ZSTD_LEVEL, topic::COMPRESSION_ZSTD_LEVEL),
    (broker::LOG_PREALLOCATE, topic::PREALLOCATE),
    (broker::LOG_MESSAGE_TIMESTAMP_TYPE, topic::MESSAGE_TIMESTAMP_TYPE),
    (broker::LOG_MESSAGE_TIMESTAMP_BEFORE_MAX_MS, topic::MESSAGE_TIMESTAMP_BEFORE_MAX_MS),
    (broker::LOG_MESSAGE_TIMESTAMP_AFTER_MAX_MS, topic::MESSAGE_TIMESTAMP_AFTER_MAX_MS),
    (broker::LOG_MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS, topic::MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS),
];

/// seglog's keys, spelled the same at broker and topic level.
pub const SEGLOG_KEYS: [&str; 2] =
    [topic::SEGLOG_DURABILITY, topic::SEGLOG_GROUP_COMMIT_INTERVAL_MS];

impl BrokerLogConfig {
    /// Builds the broker settings from `server.properties` keys, with Kafka's defaults and
    /// ranges; errors name the broker key. Keys storage does not use are ignored.
    ///
    /// Precedence where Kafka has several keys for one setting (first set wins):
    /// `log.roll.ms`, `log.roll.hours`; `log.roll.jitter.ms`, `log.roll.jitter.hours`;
    /// `log.retention.ms`, `log.retention.minutes`, `log.retention.hours` (a negative result
    /// becomes -1, retain forever); `log.flush.interval.ms`, `log.flush.scheduler.interval.ms`;
    /// `log.dirs`, `log.dir`.
    pub fn from_properties(properties: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        use broker::{
            LOG_DIR, LOG_DIRS, LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS,
            LOG_FLUSH_SCHEDULER_INTERVAL_MS, LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS,
            LOG_RETENTION_CHECK_INTERVAL_MS, NUM_PARTITIONS, NUM_RECOVERY_THREADS_PER_DATA_DIR,
            REPLICA_FETCH_MAX_BYTES, REPLICA_FETCH_RESPONSE_MAX_BYTES,
            REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
        };
        let (r, d) = (Reader { properties }, Self::default());
        let int_max = i64::from(i32::MAX);
        let log_dirs = match (r.raw(LOG_DIRS), r.raw(LOG_DIR)) {
            (Some(value), _) => parse_log_dirs(LOG_DIRS, value)?,
            (None, Some(value)) => parse_log_dirs(LOG_DIR, value)?,
            (None, None) => d.log_dirs,
        };
        let flush_offset_checkpoint_interval_ms =
            r.int(LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS, 60_000, 0, int_max)?;
        let flush_start_offset_checkpoint_interval_ms =
            r.int(LOG_FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS, 60_000, 0, int_max)?;
        Ok(Self {
            log_dirs,
            n_partitions: r.uint(NUM_PARTITIONS, d.n_partitions, 1)?,
            n_recovery_threads_per_data_dir: r.uint(
                NUM_RECOVERY_THREADS_PER_DATA_DIR,
                d.n_recovery_threads_per_data_dir,
                1,
            )?,
            retention_check_interval_ms: r.long(
                LOG_RETENTION_CHECK_INTERVAL_MS,
                d.retention_check_interval_ms,
                1,
            )?,
            flush_scheduler_interval_ms: r.long(
                LOG_FLUSH_SCHEDULER_INTERVAL_MS,
                d.flush_scheduler_interval_ms,
                0,
            )?,
            flush_offset_checkpoint_interval_ms: i64::from(flush_offset_checkpoint_interval_ms),
            flush_start_offset_checkpoint_interval_ms: i64::from(
                flush_start_offset_checkpoint_interval_ms,
            ),
            high_watermark_checkpoint_interval_ms: r.long(
                REPLICA_HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS,
                d.high_watermark_checkpoint_interval_ms,
                1,
            )?,
            default_log_config: default_log_config(&r)?,
            node_id: None,
            replica_fetch_max_bytes: r.uint(
                REPLICA_FETCH_MAX_BYTES,
                d.replica_fetch_max_bytes,
                0,
            )?,
            replica_fetch_response_max_bytes: r.uint(
                REPLICA_FETCH_RESPONSE_MAX_BYTES,
                d.replica_fetch_response_max_bytes,
                0,
            )?,
        })
    }

    /// Parses `server.properties` text ([`parse_properties`]) and builds the settings from it.
    pub fn from_server_properties(text: &str) -> Result<Self, ConfigError> {
        Self::from_properties(&parse_properties(text)?)
    }
}

/// The default [`LogConfig`] a broker configuration implies: each broker synonym is mapped to
/// its topic key, and errors are renamed back to the broker key they came from.
fn default_log_config(r: &Reader<'_>) -> Result<LogConfig, ConfigError> {
    use broker::{
        LOG_FLUSH_INTERVAL_MS, LOG_FLUSH_SCHEDULER_INTERVAL_MS, LOG_RETENTION_HOURS,
        LOG_RETENTION_MINUTES, LOG_RETENTION_MS, LOG_ROLL_HOURS, LOG_ROLL_JITTER_HOURS,
        LOG_ROLL_JITTER_MS, LOG_ROLL_MS,
    };
    let int_max = i64::from(i32::MAX);
    let mut topic_properties = BTreeMap::new();
    let mut sources: BTreeMap<&str, &str> = BTreeMap::new();
    let mut set = |topic_key: &'static str, broker_key: &'static str, value: String| {
        topic_properties.insert(topic_key.to_owned(), value);
        sources.insert(topic_key, broker_key);
    };
    for (broker_key, topic_key) in DIRECT_SYNONYMS {
        if let Some(value) = r.raw(broker_key) {
            set(topic_key, broker_key, value.to_owned());
        }
    }
    for key in SEGLOG_KEYS {
        if let Some(value) = r.raw(key) {
            set(key, key, value.to_owned());
        }
    }
    if let Some(value) = r.raw(LOG_ROLL_MS) {
        set(topic::SEGMENT_MS, LOG_ROLL_MS, value.to_owned());
    } else if let Some(hours) = r.int_opt(LOG_ROLL_HOURS, 1, int_max)? {
        set(topic::SEGMENT_MS, LOG_ROLL_HOURS, (i64::from(hours) * MS_PER_HOUR).to_string());
    }
    if let Some(value) = r.raw(LOG_ROLL_JITTER_MS) {
        set(topic::SEGMENT_JITTER_MS, LOG_ROLL_JITTER_MS, value.to_owned());
    } else if let Some(hours) = r.int_opt(LOG_ROLL_JITTER_HOURS, 0, int_max)? {
        let jitter_ms = (i64::from(hours) * MS_PER_HOUR).to_string();
        set(topic::SEGMENT_JITTER_MS, LOG_ROLL_JITTER_HOURS, jitter_ms);
    }
    if let Some(value) = r.raw(LOG_FLUSH_INTERVAL_MS) {
        set(topic::FLUSH_MS, LOG_FLUSH_INTERVAL_MS, value.to_owned());
    } else if let Some(value) = r.raw(LOG_FLUSH_SCHEDULER_INTERVAL_MS) {
        set(topic::FLUSH_MS, LOG_FLUSH_SCHEDULER_INTERVAL_MS, value.to_owned());
    }
    // Kafka's KafkaConfig.logRetentionTimeMillis: the broker keys have no range, and a negative
    // result means "retain forever".
    let retention = if let Some(ms) = r.long_opt(LOG_RETENTION_MS, i64::MIN, i64::MAX)? {
        Some((ms, LOG_RETENTION_MS))
    } else if let Some(minutes) = r.int_opt(LOG_RETENTION_MINUTES, i64::MIN, int_max)? {
        Some((i64::from(minutes) * MS_PER_MINUTE, LOG_RETENTION_MINUTES))
    } else {
        r.int_opt(LOG_RETENTION_HOURS, i64::MIN, int_max)?
            .map(|hours| (i64::from(hours) * MS_PER_HOUR, LOG_RETENTION_HOURS))
    };
    if let Some((retention_ms, key)) = retention {
        set(topic::RETENTION_MS, key, retention_ms.max(-1).to_string());
    }
    LogConfig::from_properties(&topic_properties).map_err(|error| match error {
        ConfigError::InvalidValue { key, value, reason } => {
            let key = sources.get(key.as_str()).map_or(key, |broker_key| (*broker_key).to_owned());
            ConfigError::InvalidValue { key, value, reason }
        }
        syntax @ ConfigError::Syntax { .. } => syntax,
    })
}

/// A comma-separated list of directories: trimmed, none empty, no duplicates.
fn parse_log_dirs(key: &str, value: &str) -> Result<Vec<PathBuf>, ConfigError> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for item in value.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(ConfigError::invalid(key, value, "empty directory in the list"));
        }
        let dir = PathBuf::from(item);
        if dirs.contains(&dir) {
            return Err(ConfigError::invalid(key, value, format!("duplicate entry {item:?}")));
        }
        dirs.push(dir);
    }
    Ok(dirs)
}

/// Parses Java `.properties` text, the subset that `server.properties` and `meta.properties`
/// use: one `key=value` (or `key:value`) per line; blank lines and lines starting with `#` or
/// `!` are skipped; keys and values are trimmed; backslash escapes (`\t`, `\n`, `\r`, `\f`,
/// `\uXXXX`, and `\` before any other character) are decoded; a later duplicate key wins, as in
/// Java. Not supported (an error naming the line): a line without `=` or `:`, an empty key, and
/// line continuations (a line ending in an odd number of backslashes).
pub fn parse_properties(text: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    let mut properties = BTreeMap::new();
    for (line_idx, line) in text.split('\n').enumerate() {
        let line_no = line_idx + 1;
        let syntax =
            |reason: &str| ConfigError::Syntax { line: line_no, reason: reason.to_owned() };
        let line = line.strip_suffix('\r').unwrap_or(line);
        let line = line.trim_start_matches([' ', '\t', '\x0c']);
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let trailing_backslashes = line.chars().rev().take_while(|c| *c == '\\').count();
        if trailing_backslashes % 2 == 1 {
            return Err(syntax("line continuations are not supported"));
        }
        let separator = unescaped_separator(line).ok_or_else(|| syntax("no '=' or ':'"))?;
        let (raw_key, raw_value) = (&line[..separator], &line[separator + 1..]);
        let key = unescape_trimmed(raw_key).map_err(|reason| syntax(&reason))?;
        if key.is_empty() {
            return Err(syntax("empty key"));
        }
        let value = unescape_trimmed(raw_value).map_err(|reason| syntax(&reason))?;
        properties.insert(key, value);
    }
    Ok(properties)
}

/// The byte position of the first `=` or `:` not preceded by an escaping backslash.
fn unescaped_separator(line: &str) -> Option<usize> {
    let mut escaped = false;
    for (position, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '=' | ':' => return Some(position),
            _ => {}
        }
    }
    None
}

/// Decodes backslash escapes, dropping whitespace at either end that is not escaped.
fn unescape_trimmed(raw: &str) -> Result<String, String> {
    let mut chars: Vec<(char, bool)> = Vec::with_capacity(raw.len());
    let mut input = raw.chars();
    while let Some(c) = input.next() {
        if c != '\\' {
            chars.push((c, false));
            continue;
        }
        let escaped = input.next().ok_or_else(|| "a lone backslash at the end".to_owned())?;
        let decoded = match escaped {
            't' => '\t',
            'n' => '\n',
            'r' => '\r',
            'f' => '\x0c',
            'u' => {
                let code = read_hex4(&mut input)?;
                if (0xD800..0xDC00).contains(&code) {
                    // A UTF-16 surrogate pair, as Java writes characters beyond the BMP.
                    let low = match (input.next(), input.next()) {
                        (Some('\\'), Some('u')) => read_hex4(&mut input)?,
                        _ => return Err("a high surrogate without its low half".to_owned()),
                    };
                    if !(0xDC00..0xE000).contains(&low) {
                        return Err("a high surrogate without its low half".to_owned());
                    }
                    let code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code).ok_or_else(|| "an invalid surrogate pair".to_owned())?
                } else {
                    char::from_u32(code).ok_or_else(|| "a lone low surrogate".to_owned())?
                }
            }
            other => other,
        };
        chars.push((decoded, true));
    }
    let is_blank = |&(c, escaped): &(char, bool)| !escaped && matches!(c, ' ' | '\t' | '\x0c');
    let start = chars.iter().position(|c| !is_blank(c)).unwrap_or(chars.len());
    let end = chars.iter().rposition(|c| !is_blank(c)).map_or(start, |end| end + 1);
    Ok(chars[start..end].iter().map(|(c, _)| *c).collect())
}

/// The four hex digits of a `\\uXXXX` escape.
fn read_hex4(input: &mut std::str::Chars<'_>) -> Result<u32, String> {
    let hex: String = input.by_ref().take(4).collect();
    u32::from_str_radix(&hex, 16)
        .ok()
        .filter(|_| hex.len() == 4 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
        .ok_or_else(|| format!("malformed \\u escape {hex:?}"))
}

/// Writes `key=value` lines in key order, escaped so that [`parse_properties`] and Java's
/// `Properties.load` read the same map back: `\`, `=`, `:`, `#`, `!`, spaces and control
/// characters are escaped, and characters outside printable ASCII are written as `\uXXXX`.
pub fn write_properties(properties: &BTreeMap<String, String>) -> String {
    let mut text = String::new();
    for (key, value) in properties {
        escape_into(&mut text, key);
        text.push('=');
        escape_into(&mut text, value);
        text.push('\n');
    }
    text
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' | '=' | ':' | '#' | '!' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{unit:04X}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()
    }

    /// Asserts that `pairs` are rejected, naming `key` and the value as given.
    fn check_rejected(pairs: &[(&str, &str)], key: &str) {
        let error = LogConfig::from_properties(&props(pairs)).unwrap_err();
        assert_eq!(error.key(), Some(key), "{pairs:?}: {error}");
        let message = error.to_string();
        assert!(message.contains(key), "{message}");
        let value = pairs.iter().find(|(k, _)| *k == key).map_or("", |(_, value)| value.trim());
        assert!(message.contains(&format!("{value:?}")), "{message}");
    }

    fn check_broker_rejected(pairs: &[(&str, &str)], key: &str) {
        let error = BrokerLogConfig::from_properties(&props(pairs)).unwrap_err();
        assert_eq!(error.key(), Some(key), "{pairs:?}: {error}");
        assert!(error.to_string().contains(key));
    }

    #[test]
    fn defaults_equal_kafkas() {
        let config = LogConfig::default();
        assert_eq!(config.segment_bytes, 1_073_741_824);
        assert_eq!(config.segment_ms, 604_800_000);
        assert_eq!(config.segment_jitter_ms, 0);
        assert_eq!(config.segment_index_bytes, 10_485_760);
        assert_eq!(config.index_interval_bytes, 4096);
        assert_eq!(config.flush_messages, 9_223_372_036_854_775_807);
        assert_eq!(config.flush_ms, 9_223_372_036_854_775_807);
        assert_eq!(config.retention_ms, 604_800_000);
        assert_eq!(config.retention_bytes, -1);
        assert_eq!(config.max_message_bytes, 1_048_588);
        assert_eq!(config.file_delete_delay_ms, 60_000);
        assert_eq!(config.cleanup_policy, BTreeSet::from([CleanupPolicy::Delete]));
        assert!(config.is_delete() && !config.is_compact());
        assert_eq!(config.delete_retention_ms, 86_400_000);
        assert_eq!(config.min_compaction_lag_ms, 0);
        assert_eq!(config.max_compaction_lag_ms, i64::MAX);
        assert!((config.min_cleanable_dirty_ratio - 0.5).abs() < f64::EPSILON);
        assert_eq!(config.compression_type, BrokerCompressionType::Producer);
        assert_eq!(config.compression_type.target(), None);
        assert_eq!(
            (config.compression_gzip_level, config.compression_lz4_level),
            (-1, 9),
            "gzip and lz4 levels"
        );
        assert_eq!(config.compression_zstd_level, 3);
        assert!(!config.preallocate);
        assert_eq!(config.message_timestamp_type, TimestampType::CreateTime);
        assert_eq!(config.message_timestamp_before_max_ms, i64::MAX);
        assert_eq!(config.message_timestamp_after_max_ms, i64::MAX);
        assert_eq!(config.message_timestamp_difference_max_ms, i64::MAX);
        assert_eq!(config.durability, DurabilityMode::PageCache);
        assert_eq!(config.group_commit_interval_ms, 5);

        // An empty map and an empty server.properties give the same defaults.
        assert_eq!(LogConfig::from_properties(&BTreeMap::new()).unwrap(), config);
        let broker = BrokerLogConfig::from_server_properties("").unwrap();
        assert_eq!(broker, BrokerLogConfig::default());
        assert_eq!(broker.default_log_config, config);
        assert_eq!(broker.log_dirs, vec![PathBuf::from("./seglog-data")]);
        assert_eq!(broker.n_partitions, 1);
        assert_eq!(broker.n_recovery_threads_per_data_dir, 1);
        assert_eq!(broker.retention_check_interval_ms, 300_000);
        assert_eq!(broker.flush_scheduler_interval_ms, i64::MAX);
        assert_eq!(broker.flush_offset_checkpoint_interval_ms, 60_000);
        assert_eq!(broker.flush_start_offset_checkpoint_interval_ms, 60_000);
        assert_eq!(broker.high_watermark_checkpoint_interval_ms, 5_000);
    }

    #[test]
    fn topic_keys_parse_typed_values() {
        let config = LogConfig::from_properties(&props(&[
            ("segment.bytes", " 1048576 "),
            ("segment.ms", "3600000"),
            ("segment.jitter.ms", "1000"),
            ("segment.index.bytes", "4096"),
            ("index.interval.bytes", "0"),
            ("flush.messages", "1"),
            ("flush.ms", "0"),
            ("retention.ms", "-1"),
            ("retention.bytes", "-5"),
            ("max.message.bytes", "0"),
            ("file.delete.delay.ms", "0"),
            ("cleanup.policy", "delete, compact"),
            ("compression.type", "zstd"),
            ("compression.zstd.level", "-131072"),
            ("preallocate", "TRUE"),
            ("message.timestamp.type", "LogAppendTime"),
            ("message.timestamp.before.max.ms", "10"),
            ("message.timestamp.after.max.ms", "20"),
            ("seglog.durability", "group-commit"),
            ("seglog.group.commit.interval.ms", "2"),
            ("unclean.leader.election.enable", "true"),
        ]))
        .unwrap();
        assert_eq!(config.segment_bytes, 1_048_576);
        assert_eq!(config.segment_ms, 3_600_000);
        assert_eq!(config.segment_jitter_ms, 1000);
        assert_eq!(config.segment_index_bytes, 4096);
        assert_eq!(config.index_interval_bytes, 0);
        assert_eq!((config.flush_messages, config.flush_ms), (1, 0));
        assert_eq!((config.retention_ms, config.retention_bytes), (-1, -5));
        assert_eq!(config.max_message_bytes, 0);
        assert_eq!(config.file_delete_delay_ms, 0);
        assert!(config.is_compact() && config.is_delete());
        assert_eq!(config.compression_type.target(), Some(Compression::Zstd));
        assert_eq!(config.compression_zstd_level, -131_072);
        assert!(config.preallocate);
        assert_eq!(config.init_file_bytes(), 1_048_576);
        assert_eq!(config.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(config.message_timestamp_before_max_ms, 10);
        assert_eq!(config.message_timestamp_after_max_ms, 20);
        assert_eq!(config.durability, DurabilityMode::GroupCommit);
        assert_eq!(config.group_commit_interval_ms, 2);

        let config = LogConfig::from_properties(&props(&[("cleanup.policy", "")])).unwrap();
        assert!(config.cleanup_policy.is_empty());
        let config = LogConfig::from_properties(&props(&[("cleanup.policy", "compact")])).unwrap();
        assert!(config.is_compact() && !config.is_delete());
        for mode in DurabilityMode::ALL {
            let config =
                LogConfig::from_properties(&props(&[("seglog.durability", mode.name())])).unwrap();
            assert_eq!(config.durability, mode);
            assert_eq!(mode.to_string(), mode.name());
        }
    }

    #[test]
    fn deprecated_timestamp_difference_is_the_fallback_of_both_bounds() {
        let config =
            LogConfig::from_properties(&props(&[("message.timestamp.difference.max.ms", "500")]))
                .unwrap();
        assert_eq!(config.message_timestamp_before_max_ms, 500);
        assert_eq!(config.message_timestamp_after_max_ms, 500);
        assert_eq!(config.message_timestamp_difference_max_ms, 500);

        let config = LogConfig::from_properties(&props(&[
            ("message.timestamp.difference.max.ms", "500"),
            ("message.timestamp.before.max.ms", "100"),
        ]))
        .unwrap();
        assert_eq!(config.message_timestamp_before_max_ms, 100);
        assert_eq!(config.message_timestamp_after_max_ms, 500);

        // The broker's deprecated key falls back the same way.
        let broker = BrokerLogConfig::from_properties(&props(&[
            ("log.message.timestamp.difference.max.ms", "700"),
            ("log.message.timestamp.after.max.ms", "50"),
        ]))
        .unwrap();
        assert_eq!(broker.default_log_config.message_timestamp_before_max_ms, 700);
        assert_eq!(broker.default_log_config.message_timestamp_after_max_ms, 50);
    }

    #[test]
    fn invalid_topic_values_are_rejected_naming_the_key() {
        let cases: &[(&str, &str)] = &[
            ("segment.bytes", "13"),
            ("segment.bytes", "2147483648"),
            ("segment.bytes", "1g"),
            ("segment.ms", "0"),
            ("segment.jitter.ms", "-1"),
            ("segment.index.bytes", "3"),
            ("index.interval.bytes", "-1"),
            ("flush.messages", "0"),
            ("flush.ms", "-1"),
            ("retention.ms", "-2"),
            ("retention.bytes", "lots"),
            ("max.message.bytes", "-1"),
            ("file.delete.delay.ms", "-1"),
            ("cleanup.policy", "delete,archive"),
            ("cleanup.policy", "delete,"),
            ("cleanup.policy", "Delete"),
            ("delete.retention.ms", "-1"),
            ("max.compaction.lag.ms", "0"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("min.cleanable.dirty.ratio", "NaN"),
            ("compression.type", "brotli"),
            ("compression.type", "GZIP"),
            ("compression.gzip.level", "0"),
            ("compression.gzip.level", "10"),
            ("compression.lz4.level", "18"),
            ("compression.zstd.level", "23"),
            ("preallocate", "yes"),
            ("message.timestamp.type", "createtime"),
            ("message.timestamp.type", "NoTimestampType"),
            ("message.timestamp.before.max.ms", "-1"),
            ("message.timestamp.after.max.ms", "-1"),
            ("message.timestamp.difference.max.ms", "-1"),
            ("seglog.durability", "fsync"),
            ("seglog.group.commit.interval.ms", "0"),
        ];
        for &(key, value) in cases {
            check_rejected(&[(key, value)], key);
        }
        let error = LogConfig::from_properties(&props(&[("segment.bytes", "13")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid value \"13\" for configuration segment.bytes: value must be at least 14"
        );
        let error = LogConfig::from_properties(&props(&[
            ("min.compaction.lag.ms", "10"),
            ("max.compaction.lag.ms", "5"),
        ]))
        .unwrap_err();
        assert_eq!(error.key(), Some("min.compaction.lag.ms"));
    }

    #[test]
    fn overrides_apply_over_the_broker_defaults() {
        let broker = BrokerLogConfig::from_properties(&props(&[
            ("log.segment.bytes", "2097152"),
            ("log.retention.hours", "1"),
            ("compression.type", "lz4"),
        ]))
        .unwrap();
        let defaults = &broker.default_log_config;
        let topic = defaults
            .with_overrides(&props(&[("retention.ms", "1000"), ("cleanup.policy", "compact")]))
            .unwrap();
        assert_eq!(topic.segment_bytes, 2_097_152, "from the broker");
        assert_eq!(topic.compression_type, BrokerCompressionType::Lz4, "from the broker");
        assert_eq!(topic.retention_ms, 1000, "overridden");
        assert!(topic.is_compact() && !topic.is_delete(), "overridden");
        assert_eq!(defaults.with_overrides(&BTreeMap::new()).unwrap(), *defaults);
        let error = defaults.with_overrides(&props(&[("segment.ms", "0")])).unwrap_err();
        assert_eq!(error.key(), Some("segment.ms"));
    }

    #[test]
    fn to_properties_round_trips() {
        let configs = [
            LogConfig::default(),
            LogConfig::from_properties(&props(&[
                ("segment.bytes", "14"),
                ("cleanup.policy", "compact,delete"),
                ("min.cleanable.dirty.ratio", "1"),
                ("compression.type", "gzip"),
                ("compression.gzip.level", "9"),
                ("preallocate", "true"),
                ("message.timestamp.difference.max.ms", "42"),
                ("seglog.durability", "fsync-every-append"),
            ]))
            .unwrap(),
            LogConfig::from_properties(&props(&[("cleanup.policy", "")])).unwrap(),
        ];
        for config in configs {
            let properties = config.to_properties();
            assert_eq!(properties.len(), 27);
            assert_eq!(LogConfig::from_properties(&properties).unwrap(), config);
            let text = write_properties(&properties);
            assert_eq!(parse_properties(&text).unwrap(), properties);
        }
        let properties = LogConfig::default().to_properties();
        assert_eq!(properties["segment.bytes"], "1073741824");
        assert_eq!(properties["cleanup.policy"], "delete");
        assert_eq!(properties["min.cleanable.dirty.ratio"], "0.5");
        assert_eq!(properties["message.timestamp.type"], "CreateTime");
        assert_eq!(properties["compression.type"], "producer");
        assert_eq!(properties["seglog.durability"], "page-cache");
    }

    #[test]
    fn broker_retention_precedence_is_ms_then_minutes_then_hours() {
        let retention = |pairs: &[(&str, &str)]| {
            BrokerLogConfig::from_properties(&props(pairs)).unwrap().default_log_config.retention_ms
        };
        assert_eq!(retention(&[]), 168 * 3_600_000);
        assert_eq!(retention(&[("log.retention.hours", "2")]), 2 * 3_600_000);
        assert_eq!(
            retention(&[("log.retention.hours", "2"), ("log.retention.minutes", "3")]),
            3 * 60_000
        );
        assert_eq!(
            retention(&[
                ("log.retention.hours", "2"),
                ("log.retention.minutes", "3"),
                ("log.retention.ms", "4"),
            ]),
            4
        );
        assert_eq!(retention(&[("log.retention.ms", "4"), ("log.retention.hours", "2")]), 4);
    }

    #[test]
    fn negative_broker_retention_means_forever() {
        let retention = |pairs: &[(&str, &str)]| {
            BrokerLogConfig::from_properties(&props(pairs)).unwrap().default_log_config.retention_ms
        };
        assert_eq!(retention(&[("log.retention.ms", "-1")]), -1);
        assert_eq!(retention(&[("log.retention.ms", "-100")]), -1);
        assert_eq!(retention(&[("log.retention.minutes", "-5")]), -1);
        assert_eq!(retention(&[("log.retention.hours", "-1")]), -1);
        assert_eq!(retention(&[("log.retention.ms", "0")]), 0);
        // At topic level the same value is out of range.
        check_rejected(&[("retention.ms", "-100")], "retention.ms");
    }

    #[test]
    fn broker_synonyms_produce_the_default_log_config() {
        let broker = BrokerLogConfig::from_server_properties(
            "# server.properties\n\
             log.dirs=/data/a, /data/b\n\
             log.dir=/ignored\n\
             num.partitions=3\n\
             num.recovery.threads.per.data.dir=4\n\
             log.retention.check.interval.ms=1000\n\
             log.flush.scheduler.interval.ms=2000\n\
             log.flush.offset.checkpoint.interval.ms=3000\n\
             log.flush.start.offset.checkpoint.interval.ms=4000\n\
             replica.high.watermark.checkpoint.interval.ms=6000\n\
             log.segment.bytes=1048576\n\
             log.roll.hours=2\n\
             log.roll.jitter.hours=1\n\
             log.index.size.max.bytes=8192\n\
             log.index.interval.bytes=100\n\
             log.flush.interval.messages=10\n\
             log.retention.bytes=5000\n\
             message.max.bytes=2000\n\
             log.segment.delete.delay.ms=7\n\
             log.cleanup.policy=compact\n\
             log.cleaner.delete.retention.ms=8\n\
             log.cleaner.min.compaction.lag.ms=9\n\
             log.cleaner.max.compaction.lag.ms=10\n\
             log.cleaner.min.cleanable.ratio=0.25\n\
             compression.type=snappy\n\
             log.preallocate=true\n\
             log.message.timestamp.type=LogAppendTime\n\
             seglog.durability=fsync-every-append\n\
             listeners=PLAINTEXT://:9092\n\
             segment.bytes=99\n",
        )
        .unwrap();
        assert_eq!(broker.log_dirs, vec![PathBuf::from("/data/a"), PathBuf::from("/data/b")]);
        assert_eq!(broker.n_partitions, 3);
        assert_eq!(broker.n_recovery_threads_per_data_dir, 4);
        assert_eq!(broker.retention_check_interval_ms, 1000);
        assert_eq!(broker.flush_scheduler_interval_ms, 2000);
        assert_eq!(broker.flush_offset_checkpoint_interval_ms, 3000);
        assert_eq!(broker.flush_start_offset_checkpoint_interval_ms, 4000);
        assert_eq!(broker.high_watermark_checkpoint_interval_ms, 6000);
        let config = &broker.default_log_config;
        assert_eq!(config.segment_bytes, 1_048_576, "log.segment.bytes, not segment.bytes");
        assert_eq!(config.segment_ms, 2 * 3_600_000);
        assert_eq!(config.segment_jitter_ms, 3_600_000);
        assert_eq!(config.segment_index_bytes, 8192);
        assert_eq!(config.index_interval_bytes, 100);
        assert_eq!(config.flush_messages, 10);
        assert_eq!(config.flush_ms, 2000, "falls back to log.flush.scheduler.interval.ms");
        assert_eq!(config.retention_bytes, 5000);
        assert_eq!(config.max_message_bytes, 2000);
        assert_eq!(config.file_delete_delay_ms, 7);
        assert!(config.is_compact() && !config.is_delete());
        assert_eq!(config.delete_retention_ms, 8);
        assert_eq!(config.min_compaction_lag_ms, 9);
        assert_eq!(config.max_compaction_lag_ms, 10);
        assert_eq!(config.max_segment_ms(), 10, "capped by max.compaction.lag.ms");
        assert!((config.min_cleanable_dirty_ratio - 0.25).abs() < f64::EPSILON);
        assert_eq!(config.compression_type, BrokerCompressionType::Snappy);
        assert!(config.preallocate);
        assert_eq!(config.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(config.durability, DurabilityMode::FsyncEveryAppend);

        let broker = BrokerLogConfig::from_properties(&props(&[
            ("log.roll.ms", "5"),
            ("log.roll.hours", "2"),
            ("log.roll.jitter.ms", "3"),
            ("log.flush.interval.ms", "4"),
            ("log.flush.scheduler.interval.ms", "2000"),
            ("log.dir", "/single"),
        ]))
        .unwrap();
        assert_eq!(broker.default_log_config.segment_ms, 5, "log.roll.ms wins");
        assert_eq!(broker.default_log_config.segment_jitter_ms, 3);
        assert_eq!(broker.default_log_config.flush_ms, 4, "log.flush.interval.ms wins");
        assert_eq!(broker.log_dirs, vec![PathBuf::from("/single")]);
    }

    #[test]
    fn invalid_broker_values_are_rejected_naming_the_broker_key() {
        let cases: &[(&str, &str)] = &[
            ("log.segment.bytes", "13"),
            ("log.roll.ms", "0"),
            ("log.roll.hours", "0"),
            ("log.roll.jitter.hours", "-1"),
            ("log.index.size.max.bytes", "3"),
            ("log.flush.interval.messages", "0"),
            ("log.flush.interval.ms", "-1"),
            ("log.flush.scheduler.interval.ms", "-1"),
            ("message.max.bytes", "-1"),
            ("log.cleanup.policy", "archive"),
            ("log.message.timestamp.type", "Now"),
            ("log.retention.ms", "soon"),
            ("log.retention.hours", "99999999999"),
            ("num.partitions", "0"),
            ("num.recovery.threads.per.data.dir", "0"),
            ("log.retention.check.interval.ms", "0"),
            ("log.flush.offset.checkpoint.interval.ms", "-1"),
            ("log.flush.start.offset.checkpoint.interval.ms", "-1"),
            ("log.dirs", "/a,,/b"),
            ("log.dirs", "/a,/a"),
            ("log.dirs", ""),
            ("log.dir", ""),
            ("seglog.durability", "always"),
        ];
        for &(key, value) in cases {
            check_broker_rejected(&[(key, value)], key);
        }
    }

    #[test]
    fn jitter_is_bounded_by_segment_ms() {
        let config = LogConfig::from_properties(&props(&[
            ("segment.ms", "100"),
            ("segment.jitter.ms", "1000"),
        ]))
        .unwrap();
        assert_eq!(config.segment_jitter_ms_for(250), 50);
        assert_eq!(config.segment_jitter_ms_for(u64::MAX), (u64::MAX % 100) as i64);
        assert_eq!(LogConfig::default().segment_jitter_ms_for(12_345), 0);
        assert_eq!(LogConfig::default().max_segment_ms(), 604_800_000);
        assert_eq!(LogConfig::default().init_file_bytes(), 0);
    }

    #[test]
    fn properties_text_subset() {
        let text = "# comment\n\
                    ! another comment\n\
                    \n\
                    \t  key.one = value one  \r\n\
                    key.two:two\n\
                    key.three=a\\=b\\:c\\\\d\\ \n\
                    key\\ four=\\u0041\\t\n\
                    key.one=later wins\n\
                    empty=\n";
        let properties = parse_properties(text).unwrap();
        assert_eq!(
            properties,
            props(&[
                ("key.one", "later wins"),
                ("key.two", "two"),
                ("key.three", "a=b:c\\d "),
                ("key four", "A\t"),
                ("empty", ""),
            ])
        );
        assert_eq!(parse_properties(&write_properties(&properties)).unwrap(), properties);
        let unusual = props(&[("k", " lead#!\n\u{e9}\u{1F600}trail ")]);
        let text = write_properties(&unusual);
        assert!(text.is_ascii(), "{text}");
        assert_eq!(parse_properties(&text).unwrap(), unusual);

        for (text, line) in [
            ("a=1\nnovalue\n", 2),
            ("=1\n", 1),
            ("a=1\\\nb=2\n", 1),
            ("a=\\u00G1\n", 1),
            ("a=\\u12\n", 1),
        ] {
            match parse_properties(text) {
                Err(ConfigError::Syntax { line: found, .. }) => assert_eq!(found, line, "{text:?}"),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }
}
