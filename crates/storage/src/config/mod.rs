//! Topic and broker log configuration (spec §10): Kafka's key names, defaults and valid ranges,
//! plus seglog's own durability keys, and the Java `.properties` text they are written in.
//!
//! - [`TOPIC_CONFIGS`]: one definition per topic key (Kafka's `ConfigDef`: name, type, default,
//!   validator, importance, doc, broker synonyms with their units). The same definitions make
//!   [`LogConfig`]'s fields, their parsing, [`LogConfig::to_properties`], the [`topic`] names
//!   and the broker defaults; the broker's DescribeConfigs and docs/configuration.md read them.
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

mod def;
mod properties;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use seglog_format::{Compression, TimestampType};

use def::Validator::{Any, AtLeast, Between, GzipLevel, Ratio, Retention};
pub use def::{ConfigKey, ConfigType, ConfigValue, Importance, Reader, Unit, Validator};
pub use properties::{parse_properties, write_properties};

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

/// Defines every topic key once: the [`topic`] name constants, [`LogConfig`]'s fields and
/// defaults, their parsing and writing, and [`TOPIC_CONFIGS`].
macro_rules! topic_configs {
    ($(
        $(#[doc = $doc:literal])+
        $field:ident: $ty:ty = $default:expr, $konst:ident $name:literal $kind:ident
            $validator:expr, [$($synonym:literal $unit:ident),*], $importance:ident, $kafka:expr;
    )*) => {
        /// The topic-level keys storage reads (Kafka's `TopicConfig` names), plus seglog's own.
        pub mod topic {
            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $konst: &str = $name;
            )*
        }

        /// The settings of one topic's logs (Kafka's `LogConfig`): every §10.1 topic key
        /// storage uses, typed, with Kafka's defaults, plus seglog's durability keys. Each
        /// field is one line of [`TOPIC_CONFIGS`], which gives its key, range and synonyms.
        ///
        /// Kafka's sentinels are kept as they are: `retention.ms = -1` keeps data forever, a
        /// negative `retention.bytes` means no size limit, and `Long.MAX` (`i64::MAX`) for
        /// `flush.messages` / `flush.ms` / the timestamp bounds means "never" / "unbounded".
        #[derive(Debug, Clone, PartialEq)]
        pub struct LogConfig {
            $( $(#[doc = $doc])+ pub $field: $ty, )*
        }

        impl Default for LogConfig {
            /// Kafka's defaults (`LogConfig` / `ServerLogConfigs`), and seglog's `page-cache`
            /// durability.
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        /// Every topic key storage reads, in Kafka's `ConfigDef` terms.
        pub const TOPIC_CONFIGS: &[ConfigKey] = &[
            $(
                ConfigKey {
                    name: $name,
                    config_type: ConfigType::$kind,
                    validator: $validator,
                    synonyms: &[$(($synonym, Unit::$unit)),*],
                    importance: Importance::$importance,
                    doc: concat!($($doc),+),
                    kafka_default: $kafka,
                },
            )*
        ];

        impl LogConfig {
            /// Each key as given in `r`, else from `defaults`; values as given (the timestamp
            /// bounds are resolved afterwards).
            fn read_fields(r: &Reader<'_>, defaults: &Self) -> Result<Self, ConfigError> {
                Ok(Self { $( $field: r.value($name, &defaults.$field, $validator)?, )* })
            }

            /// Every key of this config with its value, as DescribeConfigs shows them. The
            /// timestamp bounds are the resolved ones, as Kafka's `extractLogConfigMap` passes
            /// them on, so [`LogConfig::from_properties`] of the result gives this config back.
            pub fn to_properties(&self) -> BTreeMap<String, String> {
                BTreeMap::from([ $( ($name.to_owned(), ConfigValue::to_text(&self.$field)), )* ])
            }
        }
    };
}

const LONG_MAX: i64 = i64::MAX;

// One line per key: field: type = default, NAME "name" Type validator, [broker synonyms with
// units, first set wins], importance, Kafka's default where seglog's differs.
#[rustfmt::skip]
topic_configs! {
    /// The size at which a segment is rolled (also the largest append).
    segment_bytes: u32 = 1024 * 1024 * 1024, SEGMENT_BYTES "segment.bytes" Int AtLeast(SEGMENT_BYTES_MIN), ["log.segment.bytes" Same], High, None;
    /// The age at which a segment is rolled.
    segment_ms: i64 = 7 * 24 * MS_PER_HOUR, SEGMENT_MS "segment.ms" Long AtLeast(1), ["log.roll.ms" Same, "log.roll.hours" Hours], Medium, None;
    /// The bound of the random jitter subtracted from `segment.ms`.
    segment_jitter_ms: i64 = 0, SEGMENT_JITTER_MS "segment.jitter.ms" Long AtLeast(0), ["log.roll.jitter.ms" Same, "log.roll.jitter.hours" Hours], Medium, None;
    /// The preallocated size of `.index` and `.timeindex`.
    segment_index_bytes: u32 = 10 * 1024 * 1024, SEGMENT_INDEX_BYTES "segment.index.bytes" Int AtLeast(4), ["log.index.size.max.bytes" Same], Medium, None;
    /// Bytes of batches between offset-index entries.
    index_interval_bytes: u32 = 4096, INDEX_INTERVAL_BYTES "index.interval.bytes" Int AtLeast(0), ["log.index.interval.bytes" Same], Medium, None;
    /// Fsync after this many unflushed messages (`Long.MAX`: never).
    flush_messages: i64 = LONG_MAX, FLUSH_MESSAGES "flush.messages" Long AtLeast(1), ["log.flush.interval.messages" Same], Medium, None;
    /// Fsync when the last flush is older than this (`Long.MAX`: never).
    flush_ms: i64 = LONG_MAX, FLUSH_MS "flush.ms" Long AtLeast(0), ["log.flush.interval.ms" Same, "log.flush.scheduler.interval.ms" Same], Medium, None;
    /// Time retention (-1: forever).
    retention_ms: i64 = 7 * 24 * MS_PER_HOUR, RETENTION_MS "retention.ms" Long Retention, ["log.retention.ms" Same, "log.retention.minutes" Minutes, "log.retention.hours" Hours], Medium, None;
    /// Size retention per partition (negative: unlimited).
    retention_bytes: i64 = -1, RETENTION_BYTES "retention.bytes" Long Any, ["log.retention.bytes" Same], Medium, None;
    /// The largest batch accepted, including the 12-byte log overhead.
    max_message_bytes: u32 = 1024 * 1024 + 12, MAX_MESSAGE_BYTES "max.message.bytes" Int AtLeast(0), ["message.max.bytes" Same], Medium, None;
    /// The delay before `*.deleted` files are removed.
    file_delete_delay_ms: i64 = 60_000, FILE_DELETE_DELAY_MS "file.delete.delay.ms" Long AtLeast(0), ["log.segment.delete.delay.ms" Same], Medium, None;
    /// A list of `delete` and `compact`; may be empty (neither deletes nor compacts).
    cleanup_policy: BTreeSet<CleanupPolicy> = BTreeSet::from([CleanupPolicy::Delete]), CLEANUP_POLICY "cleanup.policy" List Any, ["log.cleanup.policy" Same], Medium, None;
    /// How long tombstones and markers survive cleaning.
    delete_retention_ms: i64 = 24 * MS_PER_HOUR, DELETE_RETENTION_MS "delete.retention.ms" Long AtLeast(0), ["log.cleaner.delete.retention.ms" Same], Medium, None;
    /// Records younger than this are not compacted (at most `max.compaction.lag.ms`).
    min_compaction_lag_ms: i64 = 0, MIN_COMPACTION_LAG_MS "min.compaction.lag.ms" Long AtLeast(0), ["log.cleaner.min.compaction.lag.ms" Same], Medium, None;
    /// Records older than this are compacted regardless of the dirty ratio.
    max_compaction_lag_ms: i64 = LONG_MAX, MAX_COMPACTION_LAG_MS "max.compaction.lag.ms" Long AtLeast(1), ["log.cleaner.max.compaction.lag.ms" Same], Medium, None;
    /// The dirty ratio above which a log is cleaned.
    min_cleanable_dirty_ratio: f64 = 0.5, MIN_CLEANABLE_DIRTY_RATIO "min.cleanable.dirty.ratio" Double Ratio, ["log.cleaner.min.cleanable.ratio" Same], Medium, None;
    /// The codec batches are stored with (`producer`: keep the producer's).
    compression_type: BrokerCompressionType = BrokerCompressionType::Producer, COMPRESSION_TYPE "compression.type" String Any, ["compression.type" Same], Medium, None;
    /// The gzip level (-1: the codec's default).
    compression_gzip_level: i32 = -1, COMPRESSION_GZIP_LEVEL "compression.gzip.level" Int GzipLevel, ["compression.gzip.level" Same], Medium, None;
    /// The lz4 level.
    compression_lz4_level: i32 = 9, COMPRESSION_LZ4_LEVEL "compression.lz4.level" Int Between(1, 17), ["compression.lz4.level" Same], Medium, None;
    /// The zstd level.
    compression_zstd_level: i32 = 3, COMPRESSION_ZSTD_LEVEL "compression.zstd.level" Int Between(-131_072, 22), ["compression.zstd.level" Same], Medium, None;
    /// Preallocate new `.log` files to `segment.bytes`.
    preallocate: bool = false, PREALLOCATE "preallocate" Boolean Any, ["log.preallocate" Same], Medium, None;
    /// `CreateTime` or `LogAppendTime`.
    message_timestamp_type: TimestampType = TimestampType::CreateTime, MESSAGE_TIMESTAMP_TYPE "message.timestamp.type" String Any, ["log.message.timestamp.type" Same], Medium, None;
    /// The largest age of a `CreateTime` timestamp, resolved as Kafka does: the key, or `message.timestamp.difference.max.ms` when the key is left at `Long.MAX`.
    message_timestamp_before_max_ms: i64 = LONG_MAX, MESSAGE_TIMESTAMP_BEFORE_MAX_MS "message.timestamp.before.max.ms" Long AtLeast(0), ["log.message.timestamp.before.max.ms" Same], Medium, None;
    /// The largest future skew of a `CreateTime` timestamp, resolved like the `before` bound.
    message_timestamp_after_max_ms: i64 = LONG_MAX, MESSAGE_TIMESTAMP_AFTER_MAX_MS "message.timestamp.after.max.ms" Long AtLeast(0), ["log.message.timestamp.after.max.ms" Same], Medium, Some("3600000");
    /// Deprecated: the symmetric bound the `before` and `after` keys fall back to, as given.
    message_timestamp_difference_max_ms: i64 = LONG_MAX, MESSAGE_TIMESTAMP_DIFFERENCE_MAX_MS "message.timestamp.difference.max.ms" Long AtLeast(0), ["log.message.timestamp.difference.max.ms" Same], Medium, None;
    /// Tiered storage for this topic (KIP-405): closed segments go to the bucket, and local retention applies to what is uploaded.
    remote_storage_enable: bool = false, REMOTE_STORAGE_ENABLE "remote.storage.enable" Boolean Any, [], Medium, None;
    /// How long uploaded segments stay on local disk (-2: `retention.ms`; -1: forever), for a tiered topic.
    local_retention_ms: i64 = -2, LOCAL_RETENTION_MS "local.retention.ms" Long AtLeast(-2), ["log.local.retention.ms" Same], Medium, None;
    /// How many bytes of uploaded segments stay on local disk (-2: `retention.bytes`; -1: no limit), for a tiered topic.
    local_retention_bytes: i64 = -2, LOCAL_RETENTION_BYTES "local.retention.bytes" Long AtLeast(-2), ["log.local.retention.bytes" Same], Medium, None;
    /// The in-sync replicas an `acks=all` append needs (NOT_ENOUGH_REPLICAS below it); read by the broker's replication.
    min_insync_replicas: u32 = 1, MIN_INSYNC_REPLICAS "min.insync.replicas" Int AtLeast(1), ["min.insync.replicas" Same], Medium, None;
    /// seglog's own: when an append is durable: `page-cache`, `group-commit` or `fsync-every-append`.
    durability: DurabilityMode = DurabilityMode::PageCache, SEGLOG_DURABILITY "seglog.durability" String Any, ["seglog.durability" Same], High, Some("");
    /// seglog's own: the fsync period of `group-commit` durability.
    group_commit_interval_ms: i64 = 5, SEGLOG_GROUP_COMMIT_INTERVAL_MS "seglog.group.commit.interval.ms" Long AtLeast(1), ["seglog.group.commit.interval.ms" Same], Medium, Some("");
}

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
        use topic::{MAX_COMPACTION_LAG_MS, MIN_COMPACTION_LAG_MS};
        let mut config = Self::read_fields(&Reader { properties }, defaults)?;
        let difference_max_ms = config.message_timestamp_difference_max_ms;
        config.message_timestamp_before_max_ms =
            resolve_timestamp_bound(config.message_timestamp_before_max_ms, difference_max_ms);
        config.message_timestamp_after_max_ms =
            resolve_timestamp_bound(config.message_timestamp_after_max_ms, difference_max_ms);
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
        config.check_local_retention()?;
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

    /// The definition of topic key `name`, if storage has it.
    pub fn key(name: &str) -> Option<&'static ConfigKey> {
        TOPIC_CONFIGS.iter().find(|key| key.name == name)
    }

    /// Whether `cleanup.policy` includes `compact`.
    pub fn is_compact(&self) -> bool {
        self.cleanup_policy.contains(&CleanupPolicy::Compact)
    }

    /// `local.retention.ms` resolved (Kafka's `localRetentionMs`): -2 takes `retention.ms`.
    pub fn local_retention_ms_resolved(&self) -> i64 {
        if self.local_retention_ms == -2 { self.retention_ms } else { self.local_retention_ms }
    }

    /// `local.retention.bytes` resolved (Kafka's `localRetentionBytes`): -2 takes
    /// `retention.bytes`.
    pub fn local_retention_bytes_resolved(&self) -> i64 {
        if self.local_retention_bytes == -2 {
            self.retention_bytes
        } else {
            self.local_retention_bytes
        }
    }

    /// Kafka's `LogConfig.validateRemoteStorageRetentionTime` and `...Size` for tiered topics:
    /// local retention may not keep more than the whole log's retention.
    fn check_local_retention(&self) -> Result<(), ConfigError> {
        use topic::{LOCAL_RETENTION_BYTES, LOCAL_RETENTION_MS, RETENTION_BYTES, RETENTION_MS};
        if !self.remote_storage_enable {
            return Ok(());
        }
        let checks = [
            (LOCAL_RETENTION_MS, self.local_retention_ms, RETENTION_MS, self.retention_ms),
            (
                LOCAL_RETENTION_BYTES,
                self.local_retention_bytes,
                RETENTION_BYTES,
                self.retention_bytes,
            ),
        ];
        for (local_key, local, total_key, total) in checks {
            if local == -2 || total < 0 {
                continue;
            }
            if local == -1 {
                return Err(ConfigError::invalid(
                    local_key,
                    &local.to_string(),
                    format!("Value must not be -1 as {total_key} value is set as {total}"),
                ));
            }
            if local > total {
                return Err(ConfigError::invalid(
                    local_key,
                    &local.to_string(),
                    format!("Value must not be more than {total_key} property value: {total}"),
                ));
            }
        }
        Ok(())
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
    /// `log.cleaner.enable`: whether compacted topics are cleaned.
    pub const LOG_CLEANER_ENABLE: &str = "log.cleaner.enable";
    /// `log.cleaner.threads`: cleaner threads.
    pub const LOG_CLEANER_THREADS: &str = "log.cleaner.threads";
    /// `log.cleaner.dedupe.buffer.size`: bytes of offset map over all cleaner threads.
    pub const LOG_CLEANER_DEDUPE_BUFFER_SIZE: &str = "log.cleaner.dedupe.buffer.size";
    /// `log.cleaner.io.buffer.load.factor`: how full an offset map gets.
    pub const LOG_CLEANER_IO_BUFFER_LOAD_FACTOR: &str = "log.cleaner.io.buffer.load.factor";
    /// `log.cleaner.io.buffer.size`: bytes of I/O buffers over all cleaner threads.
    pub const LOG_CLEANER_IO_BUFFER_SIZE: &str = "log.cleaner.io.buffer.size";
    /// `log.cleaner.io.max.bytes.per.second`: the cleaner's I/O rate limit.
    pub const LOG_CLEANER_IO_MAX_BYTES_PER_SECOND: &str = "log.cleaner.io.max.bytes.per.second";
    /// `log.cleaner.backoff.ms`: a cleaner thread's sleep when nothing is due.
    pub const LOG_CLEANER_BACKOFF_MS: &str = "log.cleaner.backoff.ms";
    /// `message.max.bytes`: the largest batch (the cleaner's largest buffer).
    pub const MESSAGE_MAX_BYTES: &str = "message.max.bytes";
    /// `seglog.open.files.max`: the descriptors the logs may hold open at once (seglog's own
    /// key; 0, the default, means a tenth of RLIMIT_NOFILE as raised at start, at least 64).
    pub const SEGLOG_OPEN_FILES_MAX: &str = "seglog.open.files.max";
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
    /// The log cleaner's `log.cleaner.*` keys.
    pub cleaner: crate::cleaner::CleanerConfig,
    /// `seglog.open.files.max` (0: a tenth of RLIMIT_NOFILE, at least 64; see
    /// [`crate::io::open_files_max_default`]): the budget of the logs' [`crate::io::BudgetFs`].
    pub open_files_max: u32,
    /// Whether partitions load at their first use, or in the background
    /// ([`crate::manager::LogManager::load_unloaded`]), instead of all at open: the broker's
    /// choice, so that it serves as soon as it has listed its partitions. Tools load at open
    /// (false), and report what recovery did.
    pub load_lazily: bool,
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
            cleaner: crate::cleaner::CleanerConfig::default(),
            open_files_max: 0,
            load_lazily: false,
        }
    }
}

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
            cleaner: cleaner_config(&r)?,
            open_files_max: r.uint(broker::SEGLOG_OPEN_FILES_MAX, d.open_files_max, 0)?,
            load_lazily: d.load_lazily,
        })
    }

    /// Parses `server.properties` text ([`parse_properties`]) and builds the settings from it.
    pub fn from_server_properties(text: &str) -> Result<Self, ConfigError> {
        Self::from_properties(&parse_properties(text)?)
    }
}

/// The default [`LogConfig`] a broker configuration implies: each topic key takes the first of
/// its broker synonyms that is set ([`ConfigKey::synonyms`]), converted from its unit, and
/// errors name the broker key and the value as given.
fn default_log_config(r: &Reader<'_>) -> Result<LogConfig, ConfigError> {
    let mut topic_properties = BTreeMap::new();
    let mut sources: BTreeMap<&str, (&str, &str)> = BTreeMap::new();
    for key in TOPIC_CONFIGS {
        let given = key.synonyms.iter().find_map(|&(name, unit)| Some((name, unit, r.raw(name)?)));
        let Some((synonym, unit, text)) = given else { continue };
        let mut value = unit.to_topic_unit(synonym, text)?;
        if key.validator == Retention {
            // Kafka's KafkaConfig.logRetentionTimeMillis: the broker keys have no range, and a
            // negative result means "retain forever".
            let ms = i64::parse(synonym, &value, Any)?;
            value = ms.max(-1).to_string();
        }
        topic_properties.insert(key.name.to_owned(), value);
        sources.insert(key.name, (synonym, text));
    }
    LogConfig::from_properties(&topic_properties).map_err(|error| match error {
        ConfigError::InvalidValue { key, value, reason } => match sources.get(key.as_str()) {
            Some((synonym, text)) => ConfigError::invalid(synonym, text, reason),
            None => ConfigError::InvalidValue { key, value, reason },
        },
        syntax @ ConfigError::Syntax { .. } => syntax,
    })
}

/// The `log.cleaner.*` keys, with Kafka's defaults and ranges.
fn cleaner_config(r: &Reader<'_>) -> Result<crate::cleaner::CleanerConfig, ConfigError> {
    use broker::{
        LOG_CLEANER_BACKOFF_MS, LOG_CLEANER_DEDUPE_BUFFER_SIZE, LOG_CLEANER_ENABLE,
        LOG_CLEANER_IO_BUFFER_LOAD_FACTOR, LOG_CLEANER_IO_BUFFER_SIZE,
        LOG_CLEANER_IO_MAX_BYTES_PER_SECOND, LOG_CLEANER_THREADS, MESSAGE_MAX_BYTES,
    };
    let d = crate::cleaner::CleanerConfig::default();
    let dedupe = r.long(LOG_CLEANER_DEDUPE_BUFFER_SIZE, d.dedupe_buffer_bytes as i64, 0)?;
    Ok(crate::cleaner::CleanerConfig {
        enable: r.value(LOG_CLEANER_ENABLE, &d.enable, Any)?,
        threads: r.uint(LOG_CLEANER_THREADS, d.threads, 0)?,
        dedupe_buffer_bytes: dedupe as u64,
        dedupe_buffer_load_factor: r.value(
            LOG_CLEANER_IO_BUFFER_LOAD_FACTOR,
            &d.dedupe_buffer_load_factor,
            Any,
        )?,
        io_buffer_bytes: r.uint(LOG_CLEANER_IO_BUFFER_SIZE, d.io_buffer_bytes, 0)?,
        io_bytes_per_second_max: r.value(
            LOG_CLEANER_IO_MAX_BYTES_PER_SECOND,
            &d.io_bytes_per_second_max,
            Any,
        )?,
        backoff_ms: r.long(LOG_CLEANER_BACKOFF_MS, d.backoff_ms, 0)?,
        max_message_bytes: r.uint(MESSAGE_MAX_BYTES, d.max_message_bytes, 0)?,
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
