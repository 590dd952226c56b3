//! The per-partition manifest: the committed remote segments, in offset order and contiguous,
//! the remote log start offset, the writer epoch and the version. The bucket alone is enough to
//! rebuild a partition's remote log from it.
//!
//! It is JSON (one object; unknown fields are refused, so a newer format is not half read):
//!
//! ```json
//! {"format":"seglog-remote-manifest","format_version":1,
//!  "topic":"orders","partition":0,"topic_id":"AAAAAAAAAAAAAAAAAAAAAQ",
//!  "manifest_version":7,"writer_epoch":2,"log_start_offset":100,
//!  "segments":[{"id":"0123456789abcdef0011223344556677","base_offset":100,"last_offset":199,
//!               "max_timestamp_ms":1700000000000,"log_bytes":16384,"log_crc32c":305419896,
//!               "objects":["log","index","timeindex","snapshot","leader-epoch-checkpoint"]}]}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{RemoteError, Result};
use crate::layout::{ObjectKind, SegmentId};

/// The `format` field of every manifest.
pub const MANIFEST_FORMAT: &str = "seglog-remote-manifest";
/// The manifest format this crate writes and reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// One committed remote segment (Kafka's `RemoteLogSegmentMetadata`, the fields a reader needs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SegmentEntry {
    /// The segment id, in every object key of the segment.
    pub id: SegmentId,
    /// The first offset it holds.
    pub base_offset: i64,
    /// The last offset it holds (a compacted segment may have holes below it).
    pub last_offset: i64,
    /// The largest record timestamp in it, or -1.
    pub max_timestamp_ms: i64,
    /// The `.log` object's size.
    pub log_bytes: u64,
    /// The `.log` object's CRC-32C, to check it against the bucket.
    pub log_crc32c: u32,
    /// Which of the segment's objects were uploaded (`.log` always).
    pub objects: Vec<ObjectKind>,
}

/// A partition's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// Always [`MANIFEST_FORMAT_VERSION`] for now.
    pub format_version: u32,
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The topic id.
    pub topic_id: String,
    /// Raised by one with every change; never goes back.
    pub manifest_version: u64,
    /// The epoch of the writer that made this version; a writer below it is fenced.
    pub writer_epoch: u64,
    /// The remote log start offset. With segments, inside the first one; without, the offset
    /// the next upload may start at or after.
    pub log_start_offset: i64,
    /// The committed segments, by offset, each starting right after the one before.
    pub segments: Vec<SegmentEntry>,
    /// The topic's configuration overrides as its writer last took the partition, so that a
    /// broker with an empty disk re-creates the topic as it was; absent (none) when empty.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topic_configs: BTreeMap<String, String>,
}

/// One change to a manifest, committed whole or not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// An uploaded segment joins the end of the remote log.
    Add(SegmentEntry),
    /// The remote log start moves up (retention, DeleteRecords): entries wholly below it leave.
    Expire {
        /// The new remote log start offset.
        log_start_offset: i64,
    },
    /// A run of entries is replaced by segments covering the same offsets (compaction's
    /// re-upload): readers see either the old run or the new one, never a gap or both.
    Replace {
        /// The ids of the replaced run, in offset order.
        replaced: Vec<SegmentId>,
        /// The new segments, in offset order.
        with: Vec<SegmentEntry>,
    },
}

impl Manifest {
    /// An empty manifest of version 0 (never stored: the first store is version 1).
    pub fn empty(topic: &str, partition: i32, topic_id: &str) -> Self {
        Self {
            format: MANIFEST_FORMAT.to_owned(),
            format_version: MANIFEST_FORMAT_VERSION,
            topic: topic.to_owned(),
            partition,
            topic_id: topic_id.to_owned(),
            manifest_version: 0,
            writer_epoch: 0,
            log_start_offset: 0,
            segments: Vec::new(),
            topic_configs: BTreeMap::new(),
        }
    }

    /// The offset after the last remote segment, or the log start when there is none.
    pub fn end_offset(&self) -> i64 {
        self.segments.last().map_or(self.log_start_offset, |last| last.last_offset + 1)
    }

    /// The manifest as stored.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Reads a stored manifest (`key` names it in errors) and checks its rules.
    pub fn parse(key: &str, bytes: &[u8]) -> Result<Self> {
        let malformed = |reason: String| RemoteError::Malformed { key: key.to_owned(), reason };
        let manifest: Self =
            serde_json::from_slice(bytes).map_err(|error| malformed(error.to_string()))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(malformed(format!(
                "format {:?}, not {MANIFEST_FORMAT:?}",
                manifest.format
            )));
        }
        if manifest.format_version != MANIFEST_FORMAT_VERSION {
            return Err(malformed(format!(
                "format version {}, this broker reads {MANIFEST_FORMAT_VERSION}",
                manifest.format_version
            )));
        }
        manifest.check().map_err(|error| match error {
            RemoteError::InvalidChange { reason } => malformed(reason),
            other => other,
        })?;
        Ok(manifest)
    }

    /// The rules every stored manifest keeps: segments ascending and contiguous, each with its
    /// `.log`, and the log start inside the first.
    fn check(&self) -> Result<()> {
        let mut expected_base = None;
        for entry in &self.segments {
            if entry.last_offset < entry.base_offset {
                return Err(RemoteError::invalid(format!(
                    "segment {} ends at {} before its base offset {}",
                    entry.id, entry.last_offset, entry.base_offset
                )));
            }
            if !entry.objects.contains(&ObjectKind::Log) {
                return Err(RemoteError::invalid(format!("segment {} has no .log", entry.id)));
            }
            if let Some(expected) = expected_base
                && entry.base_offset != expected
            {
                return Err(RemoteError::invalid(format!(
                    "segment {} starts at {}, not right after the one before ({expected})",
                    entry.id, entry.base_offset
                )));
            }
            expected_base = Some(entry.last_offset + 1);
        }
        if let Some(first) = self.segments.first()
            && !(first.base_offset..=first.last_offset).contains(&self.log_start_offset)
        {
            return Err(RemoteError::invalid(format!(
                "log start offset {} is outside the first segment [{}, {}]",
                self.log_start_offset, first.base_offset, first.last_offset
            )));
        }
        Ok(())
    }

    /// The manifest after `change` (its version and epoch as they were: the writer sets them),
    /// and the entries it dropped, whose objects may go once it is stored.
    pub fn apply(&self, change: &Change) -> Result<(Self, Vec<SegmentEntry>)> {
        let mut next = self.clone();
        let mut removed = Vec::new();
        match change {
            Change::Add(entry) => {
                if self.segments.is_empty() {
                    // The first segment may start below the log start (DeleteRecords inside
                    // it), not end there.
                    if entry.last_offset < self.log_start_offset {
                        return Err(RemoteError::invalid(format!(
                            "segment {} ends at {}, below the log start offset {}",
                            entry.id, entry.last_offset, self.log_start_offset
                        )));
                    }
                    next.log_start_offset = entry.base_offset.max(self.log_start_offset);
                } else if entry.base_offset != self.end_offset() {
                    return Err(RemoteError::invalid(format!(
                        "segment {} starts at {}, not at the remote log's end {}",
                        entry.id,
                        entry.base_offset,
                        self.end_offset()
                    )));
                }
                next.segments.push(entry.clone());
            }
            Change::Expire { log_start_offset } => {
                if *log_start_offset < self.log_start_offset {
                    return Err(RemoteError::invalid(format!(
                        "the log start offset cannot go back from {} to {log_start_offset}",
                        self.log_start_offset
                    )));
                }
                next.log_start_offset = *log_start_offset;
                let (gone, kept): (Vec<_>, Vec<_>) = next
                    .segments
                    .drain(..)
                    .partition(|entry| entry.last_offset < *log_start_offset);
                next.segments = kept;
                removed = gone;
                if next.segments.is_empty() {
                    next.log_start_offset = (*log_start_offset).max(self.end_offset());
                }
            }
            Change::Replace { replaced, with } => {
                let start = self
                    .segments
                    .iter()
                    .position(|entry| Some(&entry.id) == replaced.first())
                    .ok_or_else(|| {
                        RemoteError::invalid("the replaced run is not in the manifest")
                    })?;
                let run = self
                    .segments
                    .get(start..start + replaced.len())
                    .filter(|run| run.iter().map(|e| &e.id).eq(replaced.iter()))
                    .ok_or_else(|| {
                        RemoteError::invalid("the replaced segments are not one run, in order")
                    })?;
                let covered = |entries: &[SegmentEntry]| {
                    entries
                        .first()
                        .map(|f| f.base_offset)
                        .zip(entries.last().map(|l| l.last_offset))
                };
                // The same offsets; or, for a run at the end of the remote log, the same
                // start and a later end (a cleaned segment that merged uploaded segments with
                // newer ones).
                let at_end = start + replaced.len() == self.segments.len();
                let extends_end = at_end
                    && match (covered(run), covered(with)) {
                        (Some((run_base, run_last)), Some((with_base, with_last))) => {
                            run_base == with_base && with_last > run_last
                        }
                        _ => false,
                    };
                if covered(run) != covered(with) && !extends_end {
                    return Err(RemoteError::invalid(format!(
                        "the new segments cover {:?}, the replaced ones {:?}",
                        covered(with),
                        covered(run)
                    )));
                }
                removed = run.to_vec();
                next.segments.splice(start..start + replaced.len(), with.iter().cloned());
            }
        }
        next.check()?;
        Ok((next, removed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u128, base_offset: i64, last_offset: i64) -> SegmentEntry {
        SegmentEntry {
            id: SegmentId(id),
            base_offset,
            last_offset,
            max_timestamp_ms: 1_000,
            log_bytes: 100,
            log_crc32c: 7,
            objects: vec![ObjectKind::Log, ObjectKind::Index, ObjectKind::TimeIndex],
        }
    }

    #[test]
    fn adds_expiries_and_replacements_keep_the_log_contiguous() {
        let empty = Manifest::empty("orders", 0, "id");
        let (m, _) = empty.apply(&Change::Add(entry(1, 10, 19))).unwrap();
        assert_eq!((m.log_start_offset, m.end_offset()), (10, 20));
        let (m, _) = m.apply(&Change::Add(entry(2, 20, 29))).unwrap();
        let gap = m.apply(&Change::Add(entry(3, 31, 40))).unwrap_err();
        assert_eq!(
            gap.to_string(),
            "invalid manifest change: segment 00000000000000000000000000000003 starts at 31, not at the remote log's end 30"
        );
        // A compaction's re-upload of both as one segment.
        let replace = Change::Replace {
            replaced: vec![SegmentId(1), SegmentId(2)],
            with: vec![entry(4, 10, 29)],
        };
        let (replaced, removed) = m.apply(&replace).unwrap();
        assert_eq!(replaced.segments, vec![entry(4, 10, 29)]);
        assert_eq!(removed, vec![entry(1, 10, 19), entry(2, 20, 29)]);
        let short = Change::Replace { replaced: vec![SegmentId(1)], with: vec![entry(5, 10, 18)] };
        assert!(m.apply(&short).is_err(), "a replacement must cover the same offsets");
        // A run at the end may be replaced by a segment reaching further (the cleaner merged
        // uploaded segments with newer ones); a run inside may not.
        let longer = Change::Replace { replaced: vec![SegmentId(2)], with: vec![entry(6, 20, 35)] };
        let (extended, _) = m.apply(&longer).unwrap();
        assert_eq!(extended.end_offset(), 36);
        let inner = Change::Replace { replaced: vec![SegmentId(1)], with: vec![entry(7, 10, 22)] };
        assert!(m.apply(&inner).is_err(), "would overlap the next segment");
        // Expiry inside the second segment drops the first only.
        let (expired, removed) = m.apply(&Change::Expire { log_start_offset: 25 }).unwrap();
        assert_eq!((expired.log_start_offset, expired.segments.len()), (25, 1));
        assert_eq!(removed, vec![entry(1, 10, 19)]);
        assert!(expired.apply(&Change::Expire { log_start_offset: 24 }).is_err());
        // Past the end: empty, and the next upload starts at or after it.
        let (gone, removed) = expired.apply(&Change::Expire { log_start_offset: 40 }).unwrap();
        assert_eq!((gone.segments.len(), gone.log_start_offset, removed.len()), (0, 40, 1));
        assert!(gone.apply(&Change::Add(entry(6, 30, 39))).is_err(), "wholly below the start");
        let (resumed, _) = gone.apply(&Change::Add(entry(7, 39, 45))).unwrap();
        assert_eq!(resumed.log_start_offset, 40, "a segment holding the start, not below it");
    }

    #[test]
    fn a_stored_manifest_round_trips_and_a_broken_one_says_what_is_wrong() {
        let (m, _) =
            Manifest::empty("orders", 3, "id").apply(&Change::Add(entry(1, 0, 9))).unwrap();
        assert_eq!(Manifest::parse("k", &m.to_json()).unwrap(), m);
        let text = String::from_utf8(m.to_json()).unwrap();
        let cases = [
            (text.replace("seglog-remote-manifest", "other"), "format \"other\""),
            (text.replace("\"format_version\":1", "\"format_version\":2"), "format version 2"),
            (text.replace("\"log_start_offset\":0", "\"log_start_offset\":12"), "outside"),
            (text.replace("\"objects\":[\"log\",", "\"objects\":["), "has no .log"),
            (text.replace("\"topic\":", "\"extra\":1,\"topic\":"), "unknown field"),
            (text.replace("00000000000000000000000000000001", "xyz"), "32 hex digits"),
        ];
        for (broken, reason) in cases {
            let error =
                Manifest::parse("t/orders-3-id/manifest.json", broken.as_bytes()).unwrap_err();
            let message = error.to_string();
            assert!(
                message.starts_with("malformed manifest t/orders-3-id/manifest.json: ")
                    && message.contains(reason),
                "{message}"
            );
        }
    }
}
