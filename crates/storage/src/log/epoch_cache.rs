//! The leader-epoch cache of a partition and its `leader-epoch-checkpoint` file (spec §7.13):
//! which leader epoch began at which offset, as OffsetsForLeaderEpoch and log truncation need.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::checkpoint::{
    EpochEntry, parse_leader_epoch_checkpoint, write_leader_epoch_checkpoint,
};

use crate::dirs::checkpoint::{
    CHECKPOINT_BYTES_MAX, malformed_checkpoint, read_text_if_exists, write_atomically,
    write_replacing,
};
use crate::error::{Error, Result};
use crate::io::Fs;

/// The leader-epoch checkpoint of a partition directory.
pub const LEADER_EPOCH_CHECKPOINT_FILE: &str = "leader-epoch-checkpoint";

/// Kafka's `UNDEFINED_EPOCH`: no epoch.
pub const UNDEFINED_EPOCH: i32 = -1;
/// Kafka's `UNDEFINED_EPOCH_OFFSET`: no offset.
pub const UNDEFINED_EPOCH_OFFSET: i64 = -1;

/// The leader-epoch cache of one partition (Kafka's `LeaderEpochFileCache`): for each leader
/// epoch that wrote to the log, the first offset it wrote, persisted in the partition
/// directory's `leader-epoch-checkpoint`.
///
/// Entries are kept sorted by epoch, and their start offsets strictly increase with the epoch:
/// every change below preserves that, and loading applies [`LeaderEpochFileCache::assign`]'s
/// rules to each entry of the file, as Kafka does, so an out-of-order file is repaired.
///
/// Every change is written to the checkpoint synchronously and atomically before the method
/// returns. Kafka writes truncations asynchronously (and restores consistency at load by
/// truncating again); writing them at once never leaves stale entries behind. A truncation
/// from the start (retention, DeleteRecords) is written whole but without the directory's
/// fsync ([`write_replacing`]): the older file it may leave after a crash holds only entries
/// below the log start, which the load truncates again.
#[derive(Debug)]
pub struct LeaderEpochFileCache {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    entries: Vec<EpochEntry>,
}

impl LeaderEpochFileCache {
    /// Loads the cache of the partition directory `dir` from its `leader-epoch-checkpoint`. A
    /// missing file is an empty cache (nothing is created until the first change). A malformed
    /// file, or one with a negative epoch or offset, is an [`Error::Malformed`] naming the file
    /// and line (Kafka fails the log's load the same way).
    pub fn load(fs: Arc<dyn Fs>, dir: &Path) -> Result<Self> {
        let path = dir.join(LEADER_EPOCH_CHECKPOINT_FILE);
        let text = read_text_if_exists(fs.as_ref(), &path, CHECKPOINT_BYTES_MAX)?;
        let file_entries = match text {
            Some(text) => parse_leader_epoch_checkpoint(&text)
                .map_err(|error| malformed_checkpoint(&path, &error))?,
            None => Vec::new(),
        };
        let mut cache = Self { fs, path, entries: Vec::with_capacity(file_entries.len()) };
        for (entry_idx, entry) in file_entries.into_iter().enumerate() {
            if entry.epoch < 0 || entry.start_offset < 0 {
                return Err(Error::Malformed {
                    path: cache.path,
                    line: Some(entry_idx + 3),
                    reason: format!(
                        "invalid leader epoch entry (epoch {}, start offset {})",
                        entry.epoch, entry.start_offset
                    ),
                });
            }
            cache.assign_in_memory(entry);
        }
        Ok(cache)
    }

    /// The checkpoint file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records that leader epoch `epoch` began at `start_offset`, and writes the checkpoint if
    /// that changed anything. Returns whether it did.
    ///
    /// Kafka's rules: both must be at least 0 (else [`Error::InvalidArgument`]); the entry is
    /// ignored when the latest entry has the same epoch and a start offset no larger; otherwise,
    /// every entry from the end whose epoch is at least `epoch` or whose start offset is at least
    /// `start_offset` is removed, and the new entry appended.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<bool> {
        let entry = checked_entry(epoch, start_offset)?;
        if !self.assign_in_memory(entry) {
            return Ok(false);
        }
        self.write()?;
        Ok(true)
    }

    /// [`LeaderEpochFileCache::assign`] for each entry in turn, with one checkpoint write at the
    /// end if anything changed (Kafka's `assign(List<EpochEntry>)`, used by segment recovery).
    /// Every entry is checked before any is applied.
    pub fn assign_all(&mut self, entries: &[EpochEntry]) -> Result<bool> {
        for entry in entries {
            checked_entry(entry.epoch, entry.start_offset)?;
        }
        let mut changed = false;
        for entry in entries {
            changed |= self.assign_in_memory(*entry);
        }
        if changed {
            self.write()?;
        }
        Ok(changed)
    }

    /// Applies `entry` without writing; returns whether the cache changed.
    fn assign_in_memory(&mut self, entry: EpochEntry) -> bool {
        let needed = self.entries.last().is_none_or(|latest| {
            entry.epoch != latest.epoch || entry.start_offset < latest.start_offset
        });
        if !needed {
            return false;
        }
        while self.entries.last().is_some_and(|last| {
            last.epoch >= entry.epoch || last.start_offset >= entry.start_offset
        }) {
            self.entries.pop();
        }
        self.entries.push(entry);
        self.check_invariant();
        true
    }

    /// All entries, sorted by epoch (and so by start offset).
    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    /// Whether the cache has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry of the latest epoch.
    pub fn latest_entry(&self) -> Option<EpochEntry> {
        self.entries.last().copied()
    }

    /// The latest epoch (the current leader epoch that is still being written to).
    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|entry| entry.epoch)
    }

    /// The entry of the earliest cached epoch.
    pub fn earliest_entry(&self) -> Option<EpochEntry> {
        self.entries.first().copied()
    }

    /// The epoch that wrote `offset`: the largest epoch whose start offset is at most `offset`
    /// (Kafka's `epochForOffset`), or `None` if `offset` is before every cached epoch.
    pub fn epoch_for_offset(&self, offset: i64) -> Option<i32> {
        let n_at_or_before = self.entries.partition_point(|entry| entry.start_offset <= offset);
        n_at_or_before.checked_sub(1).map(|entry_idx| self.entries[entry_idx].epoch)
    }

    /// The answer to OffsetsForLeaderEpoch for `requested_epoch` (Kafka's `endOffsetFor`): the
    /// largest cached epoch at most `requested_epoch`, and the end offset of that epoch, which is
    /// the start offset of the next higher cached epoch.
    ///
    /// - `requested_epoch` is [`UNDEFINED_EPOCH`]: (-1, -1).
    /// - `requested_epoch` is the latest epoch: (`requested_epoch`, `log_end_offset`).
    /// - no cached epoch is higher (the request is above every epoch, or the cache is empty):
    ///   (-1, -1).
    /// - no cached epoch is at most `requested_epoch` (it is below every epoch):
    ///   (`requested_epoch`, start offset of the first cached epoch).
    /// - otherwise: (largest cached epoch at most `requested_epoch`, start offset of the first
    ///   cached epoch above `requested_epoch`).
    pub fn end_offset_for(&self, requested_epoch: i32, log_end_offset: i64) -> (i32, i64) {
        if requested_epoch == UNDEFINED_EPOCH {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        if self.latest_epoch() == Some(requested_epoch) {
            return (requested_epoch, log_end_offset);
        }
        let n_at_or_below = self.entries.partition_point(|entry| entry.epoch <= requested_epoch);
        let Some(higher) = self.entries.get(n_at_or_below) else {
            return (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        };
        match n_at_or_below.checked_sub(1) {
            None => (requested_epoch, higher.start_offset),
            Some(floor_idx) => (self.entries[floor_idx].epoch, higher.start_offset),
        }
    }

    /// Removes every entry whose start offset is at least `end_offset` (log truncation; Kafka's
    /// `truncateFromEnd`), and writes the checkpoint if that changed anything. Nothing happens
    /// when `end_offset` is negative or above the latest entry's start offset. Returns whether
    /// anything was removed.
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<bool> {
        let latest_at_or_after =
            self.entries.last().is_some_and(|latest| latest.start_offset >= end_offset);
        if end_offset < 0 || !latest_at_or_after {
            return Ok(false);
        }
        let n_kept = self.entries.partition_point(|entry| entry.start_offset < end_offset);
        self.entries.truncate(n_kept);
        self.write()?;
        Ok(true)
    }

    /// Moves the cache's start to `start_offset` (segment deletion, DeleteRecords; Kafka's
    /// `truncateFromStart`): removes every entry whose start offset is at most `start_offset`,
    /// then re-inserts the last one removed with `start_offset` as its start, since that epoch
    /// still owns the offsets from there on. For example, {(0, 40), (1, 90)} truncated from
    /// the start at 100 is {(1, 100)}. Writes the checkpoint if anything changed; returns
    /// whether it did.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<bool> {
        let n_removed = self.entries.partition_point(|entry| entry.start_offset <= start_offset);
        let Some(last_removed_idx) = n_removed.checked_sub(1) else { return Ok(false) };
        let epoch = self.entries[last_removed_idx].epoch;
        // Kafka reports a change (and rewrites the file) even when the first entry already
        // starts there, as at every load; the file is left alone then.
        let unchanged = last_removed_idx == 0 && self.entries[0].start_offset == start_offset;
        self.entries.drain(..last_removed_idx);
        self.entries[0] = EpochEntry { epoch, start_offset };
        self.check_invariant();
        if !unchanged {
            let text = write_leader_epoch_checkpoint(&self.entries);
            write_replacing(self.fs.as_ref(), &self.path, text.as_bytes())?;
        }
        Ok(true)
    }

    /// Removes every entry and writes the empty checkpoint (Kafka's `clearAndFlush`).
    pub fn clear(&mut self) -> Result<()> {
        self.entries.clear();
        self.write()
    }

    /// Writes the checkpoint atomically.
    fn write(&self) -> Result<()> {
        let text = write_leader_epoch_checkpoint(&self.entries);
        write_atomically(self.fs.as_ref(), &self.path, text.as_bytes())
    }

    fn check_invariant(&self) {
        debug_assert!(
            self.entries.windows(2).all(|pair| {
                pair[0].epoch < pair[1].epoch && pair[0].start_offset < pair[1].start_offset
            }),
            "epochs and start offsets strictly increase: {:?}",
            self.entries
        );
    }
}

/// An entry for [`LeaderEpochFileCache::assign`], if both numbers are valid.
fn checked_entry(epoch: i32, start_offset: i64) -> Result<EpochEntry> {
    if epoch < 0 || start_offset < 0 {
        return Err(Error::InvalidArgument(format!(
            "invalid leader epoch entry: epoch {epoch}, start offset {start_offset}"
        )));
    }
    Ok(EpochEntry { epoch, start_offset })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{FaultKind, FaultPlan, OpenMode, SimFs, read_all};
    use crate::testing::sim_with_dir;

    const DIR: &str = "/d/t-0";

    fn load(fs: &SimFs) -> LeaderEpochFileCache {
        LeaderEpochFileCache::load(Arc::new(fs.clone()), Path::new(DIR)).unwrap()
    }

    /// A cache holding exactly `entries` (assigned in order, over a cleared checkpoint).
    fn cache_with(fs: &SimFs, entries: &[(i32, i64)]) -> LeaderEpochFileCache {
        let mut cache = load(fs);
        cache.clear().unwrap();
        for &(epoch, start_offset) in entries {
            cache.assign(epoch, start_offset).unwrap();
        }
        cache
    }

    fn pairs(cache: &LeaderEpochFileCache) -> Vec<(i32, i64)> {
        cache.entries().iter().map(|entry| (entry.epoch, entry.start_offset)).collect()
    }

    fn file_text(fs: &SimFs) -> String {
        let path = Path::new(DIR).join(LEADER_EPOCH_CHECKPOINT_FILE);
        let file = fs.open(&path, OpenMode::Read).unwrap();
        String::from_utf8(read_all(file.as_ref()).unwrap()).unwrap()
    }

    fn write_file(fs: &SimFs, text: &str) {
        let path = Path::new(DIR).join(LEADER_EPOCH_CHECKPOINT_FILE);
        let file = fs.open(&path, OpenMode::CreateOrOpen).unwrap();
        file.set_len(0).unwrap();
        file.write_all_at(text.as_bytes(), 0).unwrap();
    }

    #[test]
    fn assign_appends_and_writes_the_checkpoint_synchronously() {
        let fs = sim_with_dir(DIR);
        let mut cache = load(&fs);
        assert!(cache.is_empty());
        assert!(!fs.exists(cache.path()).unwrap(), "load creates nothing");
        assert!(cache.assign(0, 0).unwrap());
        assert!(cache.assign(3, 1520).unwrap());
        assert_eq!(file_text(&fs), "0\n2\n0 0\n3 1520\n", "spec §3.5's example");
        fs.crash(9);
        assert_eq!(pairs(&load(&fs)), [(0, 0), (3, 1520)], "durable on return");
    }

    #[test]
    fn assign_ignores_the_latest_epoch_at_the_same_or_a_later_offset() {
        let fs = sim_with_dir(DIR);
        let mut cache = cache_with(&fs, &[(2, 6)]);
        let n_ops = fs.op_count();
        assert!(!cache.assign(2, 6).unwrap());
        assert!(!cache.assign(2, 10).unwrap());
        assert_eq!(fs.op_count(), n_ops, "nothing written");
        assert_eq!(pairs(&cache), [(2, 6)]);
        // The same epoch at a smaller offset replaces it.
        assert!(cache.assign(2, 4).unwrap());
        assert_eq!(pairs(&cache), [(2, 4)]);
    }

    #[test]
    fn assign_removes_entries_with_a_higher_epoch_or_offset() {
        let fs = sim_with_dir(DIR);
        // A lower epoch removes the higher ones (an epoch >= the new one).
        let mut cache = cache_with(&fs, &[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.assign(3, 12).unwrap());
        assert_eq!(pairs(&cache), [(2, 6), (3, 12)]);
        // A higher epoch at a lower offset removes those starting at or after it.
        let mut cache = cache_with(&fs, &[(2, 6), (3, 8), (4, 11)]);
        assert!(cache.assign(5, 8).unwrap());
        assert_eq!(pairs(&cache), [(2, 6), (5, 8)]);
        // Both rules at once, down to an empty prefix.
        let mut cache = cache_with(&fs, &[(2, 6), (3, 8)]);
        assert!(cache.assign(1, 5).unwrap());
        assert_eq!(pairs(&cache), [(1, 5)]);
        assert_eq!(file_text(&fs), "0\n1\n1 5\n");
        // An older epoch at a later offset still replaces the newer epochs.
        let mut cache = cache_with(&fs, &[(2, 6), (3, 8)]);
        assert!(cache.assign(2, 20).unwrap());
        assert_eq!(pairs(&cache), [(2, 20)]);
    }

    #[test]
    fn assign_rejects_negative_epochs_and_offsets() {
        let fs = sim_with_dir(DIR);
        let mut cache = cache_with(&fs, &[(1, 5)]);
        for (epoch, start_offset) in [(-1, 0), (0, -1), (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)] {
            let error = cache.assign(epoch, start_offset).unwrap_err();
            assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
        }
        let error = cache
            .assign_all(&[
                EpochEntry { epoch: 2, start_offset: 6 },
                EpochEntry { epoch: -3, start_offset: 7 },
            ])
            .unwrap_err();
        assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
        assert_eq!(pairs(&cache), [(1, 5)], "nothing applied");
    }

    #[test]
    fn assign_all_writes_once() {
        let fs = sim_with_dir(DIR);
        let mut cache = load(&fs);
        let entries: Vec<EpochEntry> =
            (0..5).map(|epoch| EpochEntry { epoch, start_offset: i64::from(epoch) * 10 }).collect();
        let n_ops = fs.op_count();
        assert!(cache.assign_all(&entries).unwrap());
        assert_eq!(fs.op_count() - n_ops, 6, "one atomic write");
        assert_eq!(cache.entries(), entries.as_slice());
        assert!(!cache.assign_all(&entries[4..]).unwrap(), "already there");
        assert!(!cache.assign_all(&[]).unwrap());
    }

    #[test]
    fn latest_and_earliest() {
        let fs = sim_with_dir(DIR);
        let cache = load(&fs);
        assert_eq!(
            (cache.latest_epoch(), cache.latest_entry(), cache.earliest_entry()),
            (None, None, None)
        );
        let cache = cache_with(&fs, &[(1, 10), (3, 20), (5, 30)]);
        assert_eq!(cache.latest_epoch(), Some(5));
        assert_eq!(cache.latest_entry(), Some(EpochEntry { epoch: 5, start_offset: 30 }));
        assert_eq!(cache.earliest_entry(), Some(EpochEntry { epoch: 1, start_offset: 10 }));
    }

    #[test]
    fn epoch_for_offset_is_the_largest_epoch_starting_at_or_before() {
        let fs = sim_with_dir(DIR);
        assert_eq!(load(&fs).epoch_for_offset(0), None);
        let cache = cache_with(&fs, &[(1, 10), (3, 20), (5, 30)]);
        for (offset, epoch) in [
            (0, None),
            (9, None),
            (10, Some(1)),
            (15, Some(1)),
            (19, Some(1)),
            (20, Some(3)),
            (29, Some(3)),
            (30, Some(5)),
            (i64::MAX, Some(5)),
        ] {
            assert_eq!(cache.epoch_for_offset(offset), epoch, "offset {offset}");
        }
    }

    #[test]
    fn end_offset_for_covers_every_case() {
        let fs = sim_with_dir(DIR);
        let empty = load(&fs);
        assert_eq!(empty.end_offset_for(UNDEFINED_EPOCH, 100), (-1, -1));
        assert_eq!(empty.end_offset_for(0, 100), (-1, -1), "nothing cached");
        let cache = cache_with(&fs, &[(1, 10), (3, 20), (5, 30)]);
        let log_end_offset = 42;
        for (requested_epoch, expected) in [
            (UNDEFINED_EPOCH, (-1, -1)),
            (5, (5, 42)),   // the latest epoch: the log end offset
            (6, (-1, -1)),  // above every epoch
            (3, (3, 30)),   // a cached epoch: the next epoch's start
            (4, (3, 30)),   // between: the floor epoch and the next epoch's start
            (2, (1, 20)),   // between
            (1, (1, 20)),   // the first epoch
            (0, (0, 10)),   // below every epoch: itself and the first start
            (-5, (-5, 10)), // any other negative epoch is below every epoch too
        ] {
            assert_eq!(
                cache.end_offset_for(requested_epoch, log_end_offset),
                expected,
                "epoch {requested_epoch}"
            );
        }
    }

    #[test]
    fn truncate_from_end_removes_entries_starting_at_or_after() {
        let fs = sim_with_dir(DIR);
        let mut cache = cache_with(&fs, &[(2, 6), (3, 8), (4, 11)]);
        assert!(!cache.truncate_from_end(12).unwrap(), "past the latest start");
        assert!(!cache.truncate_from_end(-1).unwrap(), "negative: ignored");
        assert_eq!(pairs(&cache), [(2, 6), (3, 8), (4, 11)]);
        assert!(cache.truncate_from_end(11).unwrap());
        assert_eq!(pairs(&cache), [(2, 6), (3, 8)]);
        assert!(cache.truncate_from_end(7).unwrap());
        assert_eq!(pairs(&cache), [(2, 6)]);
        assert_eq!(file_text(&fs), "0\n1\n2 6\n", "written");
        assert!(cache.truncate_from_end(0).unwrap());
        assert!(cache.is_empty());
        assert!(!cache.truncate_from_end(0).unwrap(), "empty");
    }

    #[test]
    fn truncate_from_start_reinserts_the_last_removed_epoch() {
        let fs = sim_with_dir(DIR);
        for (start_offset, expected, changed) in [
            (100, &[(1, 100)][..], true), // spec §7.13's example
            (90, &[(1, 90)], true),
            (89, &[(0, 89), (1, 90)], true),
            (40, &[(0, 40), (1, 90)], true),
            (39, &[(0, 40), (1, 90)], false),
        ] {
            let mut cache = cache_with(&fs, &[(0, 40), (1, 90)]);
            assert_eq!(cache.truncate_from_start(start_offset).unwrap(), changed);
            assert_eq!(pairs(&cache), expected, "start offset {start_offset}");
            assert_eq!(pairs(&load(&fs)), expected, "written");
        }
        let mut cache = cache_with(&fs, &[(1, 10), (3, 20), (5, 30)]);
        assert!(cache.truncate_from_start(25).unwrap());
        assert_eq!(pairs(&cache), [(3, 25), (5, 30)]);
        let mut empty = cache_with(&fs, &[]);
        assert!(!empty.truncate_from_start(5).unwrap());
    }

    #[test]
    fn clear_writes_an_empty_checkpoint() {
        let fs = sim_with_dir(DIR);
        let mut cache = cache_with(&fs, &[(1, 10)]);
        cache.clear().unwrap();
        assert!(cache.is_empty());
        assert_eq!(file_text(&fs), "0\n0\n");
        assert!(load(&fs).is_empty());
    }

    #[test]
    fn load_applies_assigns_rules_to_the_file() {
        let fs = sim_with_dir(DIR);
        write_file(&fs, "0\n3\n1 10\n2 5\n3 20\n");
        assert_eq!(pairs(&load(&fs)), [(2, 5), (3, 20)]);
        write_file(&fs, "0\n3\n5 50\n1 10\n1 60\n");
        assert_eq!(pairs(&load(&fs)), [(1, 10)]);
        write_file(&fs, "");
        assert!(load(&fs).is_empty());
    }

    #[test]
    fn load_rejects_malformed_files_naming_the_line() {
        let fs = sim_with_dir(DIR);
        for (text, line) in
            [("1\n0\n", 1), ("0\n2\n0 0\n", 4), ("0\n1\n0\n", 3), ("0\n2\n0 0\n-1 5\n", 4)]
        {
            write_file(&fs, text);
            match LeaderEpochFileCache::load(Arc::new(fs.clone()), Path::new(DIR)) {
                Err(Error::Malformed { path, line: found, .. }) => {
                    assert_eq!(path, Path::new("/d/t-0/leader-epoch-checkpoint"));
                    assert_eq!(found, Some(line), "{text:?}");
                }
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn a_failed_write_is_an_io_error() {
        let fs = sim_with_dir(DIR);
        let mut cache = cache_with(&fs, &[(1, 10)]);
        fs.set_fault_plan(FaultPlan::FailNth { n: 4, kind: FaultKind::Eio });
        match cache.assign(2, 20) {
            Err(Error::Io { op: "sync_data", .. }) => {}
            other => panic!("{other:?}"),
        }
        fs.crash(0);
        assert_eq!(pairs(&load(&fs)), [(1, 10)], "the old checkpoint survives");
    }
}
