//! The one error type of `seglog-storage`: every variant says what went wrong and where.

use std::io;
use std::path::PathBuf;

use seglog_format::DecodeError;

/// Why a storage operation failed (the role of Kafka's `KafkaStorageException`,
/// `CorruptRecordException` and `OffsetOutOfRangeException`, as one enum).
///
/// Messages are lowercase and name the operation, file or directory involved; the underlying
/// cause, when there is one, is the error's `source()`, not part of its message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file-system call failed. `op` is the call (`"open"`, `"write"`, `"sync_data"`, ...).
    #[error("{op} failed on {}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// Bytes in a data file could not be decoded. `position` is the byte position in the file.
    #[error("corrupt data in {} at byte {position}", path.display())]
    Corrupt {
        path: PathBuf,
        position: u64,
        #[source]
        source: DecodeError,
    },

    /// A `.log` holds an entry header that cannot be right (a size below 14, an unknown magic).
    #[error("corrupt log {} at byte {position}: {reason}", path.display())]
    CorruptLog { path: PathBuf, position: u64, reason: String },

    /// An offset does not fit the 31-bit relative range of its segment (Kafka's
    /// `LogSegmentOffsetOverflowException`).
    #[error(
        "offset {offset} does not fit a segment based at {base_offset} (relative offsets are 31-bit)"
    )]
    OffsetOverflow { base_offset: i64, offset: i64 },

    /// An index file fails its sanity check (Kafka's `CorruptIndexException`).
    #[error("corrupt index {}: {reason}", path.display())]
    CorruptIndex { path: PathBuf, reason: String },

    /// A small text file of a log or partition directory (a checkpoint, `meta.properties`,
    /// `partition.metadata`) does not parse. `line` is 1-based, or `None` when the file as a
    /// whole is wrong (a required key is missing, the file is not UTF-8 or too large).
    #[error(
        "malformed {}{}: {reason}",
        path.display(),
        line.map_or_else(String::new, |line| format!(" line {line}"))
    )]
    Malformed { path: PathBuf, line: Option<usize>, reason: String },

    /// An offset outside `[log_start, log_end)` was asked for.
    #[error("offset {requested} is out of range [{log_start}, {log_end})")]
    OffsetOutOfRange { requested: i64, log_start: i64, log_end: i64 },

    /// An offset of a tiered log below its local segments was asked for: it is in the bucket
    /// (Kafka's `UnifiedLog.read` throws `OffsetOutOfRangeException` and the `ReplicaManager`
    /// reads it remotely).
    #[error(
        "offset {requested} is below the local log start {local_log_start}: it is in remote storage"
    )]
    OffsetNotLocal { requested: i64, local_log_start: i64 },

    /// The log directory had an earlier failed write or fsync; nothing in it is touched again
    /// (Kafka's `LogDirFailureChannel`).
    #[error("log directory {} is offline after an earlier i/o error", dir.display())]
    Offline { dir: PathBuf },

    /// The caller broke a precondition, such as appending a non-monotonic index entry. The
    /// message is lowercase and says which argument and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A leader or follower append was refused; the inner error carries Kafka's error code.
    #[error(transparent)]
    Validation(#[from] crate::log::validator::ValidationError),

    /// A cleaning round stopped without changing the log (Kafka's
    /// `LogCleaningAbortedException`): its partition is being deleted, truncated or moved, its
    /// segments changed during the round, or the cleaner shuts down.
    #[error("cleaning of {partition} stopped: {reason}")]
    CleaningAborted { partition: String, reason: &'static str },

    /// No such topic or partition (Kafka's `UNKNOWN_TOPIC_OR_PARTITION`).
    #[error("unknown topic or partition {topic}-{partition}")]
    UnknownTopicOrPartition { topic: String, partition: i32 },

    /// The topic exists already (Kafka's `TOPIC_ALREADY_EXISTS`).
    #[error("topic {topic} already exists")]
    TopicAlreadyExists { topic: String },

    /// A path that is not one of the broker's log directories (Kafka's `LOG_DIR_NOT_FOUND`).
    #[error("{} is not a log directory of this broker", dir.display())]
    LogDirNotFound { dir: PathBuf },
}

/// The result of a storage operation.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::Io`] for the call `op` on `path`.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io { op, path: path.into(), source }
    }
}

/// The I/O error that took a log or a log directory offline: the call, the file and the
/// cause, kept for the operator (Kafka logs it with the offline directory at ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoFailure {
    /// The call that failed (`"write"`, `"sync_data"`, ...).
    pub op: &'static str,
    /// The file or directory it failed on.
    pub path: PathBuf,
    /// The operating system's words (`No space left on device (os error 28)`).
    pub cause: String,
    /// The kind of the error, so that a full disk can be told apart.
    pub kind: io::ErrorKind,
}

impl IoFailure {
    /// The failure an [`Error::Io`] describes; `None` for every other error.
    pub fn of(error: &Error) -> Option<Self> {
        match error {
            Error::Io { op, path, source } => Some(Self {
                op,
                path: path.clone(),
                cause: source.to_string(),
                kind: source.kind(),
            }),
            _ => None,
        }
    }
}

impl std::fmt::Display for IoFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed on {}: {}", self.op, self.path.display(), self.cause)
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn messages_name_what_and_where() {
        let error = Error::io(
            "sync_data",
            "/d/t-0/00000000000000000000.log",
            io::Error::from_raw_os_error(5),
        );
        assert_eq!(error.to_string(), "sync_data failed on /d/t-0/00000000000000000000.log");
        assert_eq!(
            error.source().map(ToString::to_string),
            Some(io::Error::from_raw_os_error(5).to_string())
        );

        let error = Error::Corrupt {
            path: "/d/t-0/00000000000000000000.log".into(),
            position: 4096,
            source: DecodeError::UnsupportedMagic(7),
        };
        assert_eq!(
            error.to_string(),
            "corrupt data in /d/t-0/00000000000000000000.log at byte 4096"
        );
        assert!(error.source().is_some());

        let error = Error::CorruptIndex {
            path: "/d/t-0/0.index".into(),
            reason: "entry 3 is not increasing".into(),
        };
        assert_eq!(error.to_string(), "corrupt index /d/t-0/0.index: entry 3 is not increasing");

        let error = Error::OffsetOutOfRange { requested: 9, log_start: 0, log_end: 5 };
        assert_eq!(error.to_string(), "offset 9 is out of range [0, 5)");

        let error = Error::Offline { dir: "/d".into() };
        assert_eq!(error.to_string(), "log directory /d is offline after an earlier i/o error");

        let error = Error::InvalidArgument("offset 3 is not larger than the last offset 5".into());
        assert_eq!(
            error.to_string(),
            "invalid argument: offset 3 is not larger than the last offset 5"
        );
    }
}
