//! The time index, `.timeindex` (Kafka's `TimeIndex`): sparse `(timestamp, relative offset)`
//! entries, appended only when the segment's largest timestamp grows. The last slot is reserved
//! for the entry written when the segment becomes inactive.
//!
//! ```text
//! entry (12 bytes, big-endian)
//!   0  8  timestamp       int64  largest timestamp up to the offset
//!   8  4  relativeOffset  int32  offset - segment base offset
//! ```

use std::path::Path;

use seglog_format::TimeIndexEntry;
use seglog_format::index::TIME_INDEX_ENTRY_BYTES;

use super::file::{IndexEntry, IndexFile, impl_index_entry, index_constructors};
use crate::error::{Error, Result};
use crate::io::Fs;

impl_index_entry!(TimeIndexEntry, TIME_INDEX_ENTRY_BYTES, may_follow_time);

/// Timestamps strictly increase (equal ones are never appended) and offsets never decrease.
fn may_follow_time(entry: &TimeIndexEntry, previous: &TimeIndexEntry) -> bool {
    entry.timestamp > previous.timestamp && entry.relative_offset >= previous.relative_offset
}

/// A timestamp and an absolute offset (Kafka's `TimestampOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// The timestamp, or -1.
    pub timestamp: i64,
    /// The absolute offset.
    pub offset: i64,
}

/// A segment's time index (Kafka's `TimeIndex`).
#[derive(Debug)]
pub struct TimeIndex {
    file: IndexFile<TimeIndexEntry>,
}

impl TimeIndex {
    index_constructors!(TimeIndexEntry);

    fn absolute(&self, entry: TimeIndexEntry) -> TimestampOffset {
        TimestampOffset {
            timestamp: entry.timestamp,
            offset: self.file.base_offset() + i64::from(entry.relative_offset),
        }
    }

    fn empty_entry(&self) -> TimestampOffset {
        TimestampOffset { timestamp: -1, offset: self.file.base_offset() }
    }

    /// The largest entry whose timestamp is <= `timestamp`, or `(-1, base_offset)`. Fails only
    /// when a sealed index's file cannot be read.
    pub fn lookup(&self, timestamp: i64) -> Result<TimestampOffset> {
        Ok(self
            .file
            .largest_lower_bound(timestamp, |e| e.timestamp)?
            .map_or(self.empty_entry(), |entry| self.absolute(entry)))
    }

    /// The last entry, or `(-1, base_offset)` when empty (Kafka's `lastEntry`).
    pub fn last_entry(&self) -> TimestampOffset {
        self.file.last().map_or(self.empty_entry(), |e| self.absolute(e))
    }

    /// The entry at `entry_idx`.
    pub fn entry(&self, entry_idx: usize) -> Result<TimestampOffset> {
        self.file.entry(entry_idx).map(|entry| self.absolute(entry))
    }

    /// Appends `(timestamp, offset)` when `timestamp` exceeds the last entry's (Kafka's
    /// `maybeAppend`). `skip_full_check` is for the final entry of an inactive segment, which uses
    /// the reserved last slot.
    pub fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<()> {
        if !skip_full_check && self.is_full() {
            return Err(Error::InvalidArgument(format!(
                "attempt to append to a full time index (size = {})",
                self.file.n_entries()
            )));
        }
        let last = self.last_entry();
        if self.file.n_entries() > 0 && offset < last.offset {
            return Err(Error::InvalidArgument(format!(
                "attempt to append an offset ({offset}) to slot {} no larger than the last offset appended ({}) to {}",
                self.file.n_entries(),
                last.offset,
                self.file.path().display()
            )));
        }
        if self.file.n_entries() > 0 && timestamp < last.timestamp {
            return Err(Error::InvalidArgument(format!(
                "attempt to append a timestamp ({timestamp}) smaller than the last timestamp ({}) to {}",
                last.timestamp,
                self.file.path().display()
            )));
        }
        if timestamp <= last.timestamp {
            return Ok(());
        }
        let relative_offset = self.file.relative_offset_of(offset)?;
        self.file.push(TimeIndexEntry { timestamp, relative_offset })
    }

    /// Removes every entry with an offset >= `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let base = self.file.base_offset();
        let keep = self.file.partition_point(|e| base + i64::from(e.relative_offset) < offset)?;
        self.file.truncate_entries(keep)
    }

    /// Full one entry early: the last slot is reserved for the inactive-segment entry.
    pub fn is_full(&self) -> bool {
        self.file.n_entries() + 1 >= self.file.max_entries()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::io::SimFs;

    const BASE: i64 = 45;

    fn path() -> PathBuf {
        PathBuf::from("/p/00000000000000000045.timeindex")
    }

    fn index(max_entries: u64) -> (SimFs, TimeIndex) {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/p")).unwrap();
        let index = TimeIndex::create(&fs, &path(), BASE, max_entries * 12).unwrap();
        (fs, index)
    }

    /// `testLookUp` and `testLastEntry`.
    #[test]
    fn lookup_and_last_entry() {
        let (_fs, mut index) = index(30);
        let empty = TimestampOffset { timestamp: -1, offset: BASE };
        assert_eq!(index.lookup(100).unwrap(), empty);
        assert_eq!(index.last_entry(), empty);
        for idx in 1..10 {
            index.maybe_append(idx * 10, idx * 10 + BASE, false).unwrap();
        }
        assert_eq!(index.last_entry(), TimestampOffset { timestamp: 90, offset: 90 + BASE });
        assert_eq!(index.lookup(9).unwrap(), empty, "below the first");
        assert_eq!(index.lookup(25).unwrap(), TimestampOffset { timestamp: 20, offset: 20 + BASE });
        assert_eq!(index.lookup(30).unwrap(), TimestampOffset { timestamp: 30, offset: 30 + BASE });
        assert_eq!(index.lookup(1000).unwrap().timestamp, 90);
    }

    /// `testEntry`, `testEntryOverflow`, `testTruncate`.
    #[test]
    fn entries_and_truncate() {
        let (_fs, mut index) = index(30);
        assert!(index.entry(0).is_err());
        for (timestamp, relative) in [(10, 55), (20, 65), (30, 75)] {
            index.maybe_append(timestamp, BASE + relative, false).unwrap();
        }
        assert_eq!(index.entry(1).unwrap(), TimestampOffset { timestamp: 20, offset: BASE + 65 });
        index.truncate_to(BASE + 65).unwrap();
        assert_eq!(index.n_entries(), 1);
        index.truncate().unwrap();
        assert_eq!(index.n_entries(), 0);
    }

    /// `testAppend` and `testIsFull`: the last slot is reserved.
    #[test]
    fn append_rules_and_reserved_slot() {
        let (_fs, mut index) = index(4);
        index.maybe_append(10, BASE + 1, false).unwrap();
        index.maybe_append(10, BASE + 2, false).unwrap();
        assert_eq!(index.n_entries(), 1, "an equal timestamp is ignored");
        index.maybe_append(20, BASE + 2, false).unwrap();
        index.maybe_append(30, BASE + 3, false).unwrap();
        assert!(index.is_full(), "full at max_entries - 1");
        assert!(index.maybe_append(40, BASE + 4, false).is_err());
        assert!(index.maybe_append(40, BASE + 2, true).is_err(), "offset below the last");
        assert!(index.maybe_append(25, BASE + 9, true).is_err(), "timestamp below the last");
        index.maybe_append(40, BASE + 4, true).unwrap();
        assert_eq!(index.n_entries(), 4);
        // Timestamp -1 (magic 0 data) is never indexed.
        let (_fs, mut empty) = self::index(4);
        empty.maybe_append(-1, BASE + 3, false).unwrap();
        assert_eq!(empty.n_entries(), 0);
    }

    /// `testSanityCheck`.
    #[test]
    fn sanity_check() {
        let (fs, mut index) = index(10);
        index.maybe_append(10, BASE + 1, false).unwrap();
        index.maybe_append(20, BASE + 2, false).unwrap();
        index.file_mut().close().unwrap();
        let reopened = TimeIndex::open(&fs, &path(), BASE, 120).unwrap();
        assert_eq!(reopened.n_entries(), 2);
        reopened.sanity_check().unwrap();
        let file = fs.open(&path(), crate::io::OpenMode::ReadWrite).unwrap();
        // The last timestamp below the first.
        file.write_all_at(&TimeIndexEntry { timestamp: 5, relative_offset: 3 }.encode(), 24)
            .unwrap();
        assert!(TimeIndex::open(&fs, &path(), BASE, 120).unwrap().sanity_check().is_err());
        file.set_len(13).unwrap();
        assert!(TimeIndex::open(&fs, &path(), BASE, 120).unwrap().sanity_check().is_err());
    }

    /// `testResize`.
    #[test]
    fn resize() {
        let (_fs, mut index) = index(10);
        assert!(!index.file_mut().resize(120).unwrap());
        assert!(index.file_mut().resize(60).unwrap());
        assert_eq!(index.file().max_entries(), 5);
    }
}
