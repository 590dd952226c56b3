//! File and directory names (spec §3.2, §3.3): 20-digit segment file names with their suffixes,
//! partition directories `topic-N` and `topic-N.<uuid>-delete|-future|-stray`, and topic names.

use crate::error::{DecodeError, Result};

/// What a segment-related file holds, from its suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// `.log`: record batches.
    Log,
    /// `.index`: the offset index.
    Index,
    /// `.timeindex`: the time index.
    TimeIndex,
    /// `.txnindex`: the aborted-transaction index.
    TxnIndex,
    /// `.snapshot`: a producer-state snapshot.
    Snapshot,
}

impl FileKind {
    /// Every kind.
    pub const ALL: [Self; 5] =
        [Self::Log, Self::Index, Self::TimeIndex, Self::TxnIndex, Self::Snapshot];

    /// The suffix, dot included.
    pub const fn suffix(self) -> &'static str {
        match self {
            Self::Log => ".log",
            Self::Index => ".index",
            Self::TimeIndex => ".timeindex",
            Self::TxnIndex => ".txnindex",
            Self::Snapshot => ".snapshot",
        }
    }
}

/// A transient state appended to a file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileState {
    /// In use.
    Live,
    /// `.deleted`: scheduled for asynchronous deletion.
    Deleted,
    /// `.cleaned`: cleaner or split output not yet swapped in.
    Cleaned,
    /// `.swap`: being swapped in.
    Swap,
}

impl FileState {
    /// The appended suffix ("" for live files).
    pub const fn suffix(self) -> &'static str {
        match self {
            Self::Live => "",
            Self::Deleted => ".deleted",
            Self::Cleaned => ".cleaned",
            Self::Swap => ".swap",
        }
    }
}

/// A parsed segment-related file name such as `00000000000000000042.index.swap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentFileName {
    /// The offset in the name (a segment's base offset, or a snapshot's end offset).
    pub offset: i64,
    /// What the file holds.
    pub kind: FileKind,
    /// Its transient state.
    pub state: FileState,
}

/// Digits in a segment file name.
pub const OFFSET_DIGITS: usize = 20;

/// `offset` as 20 zero-padded decimal digits (Kafka's `LogFileUtils.filenamePrefixFromOffset`).
pub fn offset_prefix(offset: i64) -> String {
    format!("{offset:020}")
}

impl SegmentFileName {
    /// A live file name.
    pub const fn new(offset: i64, kind: FileKind) -> Self {
        Self { offset, kind, state: FileState::Live }
    }

    /// Parses a name of the form `<20 digits><suffix>[.deleted|.cleaned|.swap]`.
    pub fn parse(name: &str) -> Result<Self> {
        let invalid = || DecodeError::InvalidFileName { name: name.to_owned() };
        let (stem, state) = [FileState::Deleted, FileState::Cleaned, FileState::Swap]
            .into_iter()
            .find_map(|state| name.strip_suffix(state.suffix()).map(|stem| (stem, state)))
            .unwrap_or((name, FileState::Live));
        let (digits, kind) = FileKind::ALL
            .into_iter()
            .find_map(|kind| stem.strip_suffix(kind.suffix()).map(|digits| (digits, kind)))
            .ok_or_else(invalid)?;
        if digits.len() != OFFSET_DIGITS || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(invalid());
        }
        let offset = digits.parse::<i64>().map_err(|_| invalid())?;
        Ok(Self { offset, kind, state })
    }

    /// The file name.
    pub fn to_name(&self) -> String {
        format!("{}{}{}", offset_prefix(self.offset), self.kind.suffix(), self.state.suffix())
    }
}

impl std::fmt::Display for SegmentFileName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_name())
    }
}

/// The longest legal topic name.
pub const TOPIC_NAME_CHARS_MAX: usize = 249;

/// Checks a topic name as Kafka's `Topic.validate` does: 1 to 249 characters from
/// `[a-zA-Z0-9._-]`, and not `.` or `..`. A valid name can never escape its log directory.
pub fn validate_topic(name: &str) -> Result<()> {
    let invalid = |reason| DecodeError::InvalidTopic { name: name.to_owned(), reason };
    if name.is_empty() {
        return Err(invalid("the empty string is not allowed"));
    }
    if name == "." || name == ".." {
        return Err(invalid("'.' and '..' are not allowed"));
    }
    if name.len() > TOPIC_NAME_CHARS_MAX {
        return Err(invalid("longer than 249 characters"));
    }
    if !name.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Err(invalid("only ASCII alphanumerics, '.', '_' and '-' are allowed"));
    }
    Ok(())
}

/// The lifecycle state in a partition directory's name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DirState {
    /// `topic-N`: the live log.
    Live,
    /// `topic-N.<uuid>-delete`: renamed for asynchronous deletion.
    Delete(String),
    /// `topic-N.<uuid>-future`: a replica being moved between log directories.
    Future(String),
    /// `topic-N.<uuid>-stray`: not assigned to this broker.
    Stray(String),
}

/// A parsed partition directory name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartitionDir {
    /// The topic (possibly truncated in `-delete` and `-stray` names).
    pub topic: String,
    /// The partition number.
    pub partition: i32,
    /// Live, or one of the renamed states.
    pub state: DirState,
}

impl PartitionDir {
    /// A live partition directory.
    pub fn live(topic: &str, partition: i32) -> Self {
        Self { topic: topic.to_owned(), partition, state: DirState::Live }
    }

    /// Parses a directory name as Kafka's `LocalLog.parseTopicPartitionName` does.
    pub fn parse(name: &str) -> Result<Self> {
        let invalid = |reason| DecodeError::InvalidPartitionDir { name: name.to_owned(), reason };
        let suffixed = [("-delete", 0), ("-future", 1), ("-stray", 2)]
            .into_iter()
            .find_map(|(suffix, kind)| name.strip_suffix(suffix).map(|stem| (stem, kind)));
        let (topic_partition, state) = match suffixed {
            Some((stem, kind)) => {
                let (topic_partition, uuid) =
                    stem.rsplit_once('.').ok_or_else(|| invalid("missing '.uniqueId'"))?;
                if uuid.is_empty() || uuid.contains(char::is_whitespace) {
                    return Err(invalid("invalid uniqueId"));
                }
                let uuid = uuid.to_owned();
                let state = match kind {
                    0 => DirState::Delete(uuid),
                    1 => DirState::Future(uuid),
                    _ => DirState::Stray(uuid),
                };
                (topic_partition, state)
            }
            None => (name, DirState::Live),
        };
        let (topic, partition) =
            topic_partition.rsplit_once('-').ok_or_else(|| invalid("no '-' separator"))?;
        if topic.is_empty() {
            return Err(invalid("empty topic"));
        }
        if topic.contains(char::is_whitespace) {
            return Err(invalid("whitespace in topic"));
        }
        let partition = partition
            .parse::<i32>()
            .ok()
            .filter(|partition| *partition >= 0 && !partition.to_string().is_empty())
            .ok_or_else(|| invalid("partition is not a non-negative integer"))?;
        Ok(Self { topic: topic.to_owned(), partition, state })
    }

    /// The directory name.
    pub fn to_name(&self) -> String {
        match &self.state {
            DirState::Live => format!("{}-{}", self.topic, self.partition),
            DirState::Delete(uuid) => format!("{}-{}.{uuid}-delete", self.topic, self.partition),
            DirState::Future(uuid) => format!("{}-{}.{uuid}-future", self.topic, self.partition),
            DirState::Stray(uuid) => format!("{}-{}.{uuid}-stray", self.topic, self.partition),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip() {
        assert_eq!(SegmentFileName::new(0, FileKind::Log).to_name(), "00000000000000000000.log");
        assert_eq!(offset_prefix(368_769), "00000000000000368769");
        for name in [
            "00000000000000000000.log",
            "00000000000000368769.index",
            "00000000000000000042.timeindex.deleted",
            "00000000000000000042.txnindex.swap",
            "00000000000000001234.snapshot",
            "00000000000000000007.log.cleaned",
            "09223372036854775807.log",
        ] {
            assert_eq!(SegmentFileName::parse(name).unwrap().to_name(), name);
        }
        let parsed = SegmentFileName::parse("00000000000000000042.index.swap").unwrap();
        assert_eq!(
            parsed,
            SegmentFileName { offset: 42, kind: FileKind::Index, state: FileState::Swap }
        );
    }

    #[test]
    fn bad_segment_names_are_rejected() {
        for name in [
            "0.log",
            "00000000000000000000.lg",
            "0000000000000000000a.log",
            "99999999999999999999.log",
            "leader-epoch-checkpoint",
            "00000000000000000000.log.tmp",
        ] {
            assert!(SegmentFileName::parse(name).is_err(), "{name}");
        }
    }

    #[test]
    fn partition_dirs_parse_like_kafka() {
        let dir = PartitionDir::parse("my-topic-with-dashes-12").unwrap();
        assert_eq!((dir.topic.as_str(), dir.partition), ("my-topic-with-dashes", 12));
        let dir =
            PartitionDir::parse("test-topic-0.8b3a0d3be4f14b43a7b0c4dd1b1d0a2c-delete").unwrap();
        assert_eq!(dir.topic, "test-topic");
        assert_eq!(dir.state, DirState::Delete("8b3a0d3be4f14b43a7b0c4dd1b1d0a2c".into()));
        assert_eq!(dir.to_name(), "test-topic-0.8b3a0d3be4f14b43a7b0c4dd1b1d0a2c-delete");
        assert_eq!(
            PartitionDir::parse("t-1.abc-future").unwrap().state,
            DirState::Future("abc".into())
        );
        // The partition is after the last '-', so a topic may end in '-'.
        assert_eq!(PartitionDir::parse("topic--1").unwrap().topic, "topic-");
        for bad in ["topic", "-1", "topic-", "topic-x", "topic-1.-delete", "t-1-delete"] {
            assert!(PartitionDir::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn topic_names_follow_kafka_rules() {
        validate_topic("orders.v1_eu-west").unwrap();
        validate_topic(&"a".repeat(249)).unwrap();
        for bad in ["", ".", "..", "a/b", "../etc", "a b", "\u{fc}", &"a".repeat(250)] {
            assert!(validate_topic(bad).is_err(), "{bad}");
        }
    }
}
