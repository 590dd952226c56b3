//! The offset index, `.index` (Kafka's `OffsetIndex`): sparse `(relative offset, position)`
//! entries mapping an offset to a byte position in the `.log` at or before its batch.
//!
//! ```text
//! entry (8 bytes, big-endian)
//!   0  4  relativeOffset  int32  offset - segment base offset
//!   4  4  position        int32  position of the batch in the .log
//! ```

use std::path::Path;

use seglog_format::OffsetIndexEntry;
use seglog_format::index::OFFSET_INDEX_ENTRY_BYTES;

use super::file::{IndexEntry, IndexFile, impl_index_entry, index_constructors};
use crate::error::{Error, Result};
use crate::io::Fs;

impl_index_entry!(OffsetIndexEntry, OFFSET_INDEX_ENTRY_BYTES, may_follow_offset);

/// Offsets strictly increase and positions never decrease.
#[expect(clippy::trivially_copy_pass_by_ref, reason = "IndexEntry::may_follow takes references")]
fn may_follow_offset(entry: &OffsetIndexEntry, previous: &OffsetIndexEntry) -> bool {
    entry.relative_offset > previous.relative_offset && entry.position >= previous.position
}

/// An absolute offset and the byte position of the batch at or before it (Kafka's
/// `OffsetPosition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// The absolute offset.
    pub offset: i64,
    /// The position in the `.log`.
    pub position: u32,
}

/// A segment's offset index (Kafka's `OffsetIndex`).
#[derive(Debug)]
pub struct OffsetIndex {
    file: IndexFile<OffsetIndexEntry>,
}

impl OffsetIndex {
    index_constructors!(OffsetIndexEntry);

    fn absolute(&self, entry: OffsetIndexEntry) -> OffsetPosition {
        OffsetPosition {
            offset: self.file.base_offset() + i64::from(entry.relative_offset),
            position: entry.position,
        }
    }

    /// The largest entry whose offset is <= `target_offset`, or `(base_offset, 0)` when there is
    /// none (Kafka's `lookup`). Fails only when a sealed index's file cannot be read.
    pub fn lookup(&self, target_offset: i64) -> Result<OffsetPosition> {
        let base = self.file.base_offset();
        Ok(self
            .file
            .largest_lower_bound(target_offset, |e| base + i64::from(e.relative_offset))?
            .map_or(OffsetPosition { offset: base, position: 0 }, |entry| self.absolute(entry)))
    }

    /// The smallest entry whose position is >= `start_position + fetch_size` (Kafka's
    /// `fetchUpperBoundOffset`).
    pub fn fetch_upper_bound_offset(
        &self,
        start_position: u32,
        fetch_size: u32,
    ) -> Result<Option<OffsetPosition>> {
        let target = i64::from(start_position) + i64::from(fetch_size);
        Ok(self
            .file
            .smallest_upper_bound(target, |e| i64::from(e.position))?
            .map(|entry| self.absolute(entry)))
    }

    /// The entry at `entry_idx`, with an absolute offset.
    pub fn entry(&self, entry_idx: usize) -> Result<OffsetPosition> {
        self.file.entry(entry_idx).map(|entry| self.absolute(entry))
    }

    /// Appends `(offset, position)`. The index must not be full, the offset must exceed the last
    /// one and fit in 31 bits relative to the base offset.
    pub fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        let relative_offset = self.file.relative_offset_of(offset)?;
        if let Some(last) = self.file.last()
            && relative_offset <= last.relative_offset
        {
            return Err(Error::InvalidArgument(format!(
                "attempt to append an offset ({offset}) no larger than the last offset appended ({}) to {}",
                self.last_offset(),
                self.file.path().display()
            )));
        }
        self.file.push(OffsetIndexEntry { relative_offset, position })
    }

    /// The last entry's offset, or the base offset when empty.
    pub fn last_offset(&self) -> i64 {
        self.file.last().map_or(self.file.base_offset(), |e| self.absolute(e).offset)
    }

    /// The last entry.
    pub fn last_entry(&self) -> Option<OffsetPosition> {
        self.file.last().map(|e| self.absolute(e))
    }

    /// Removes every entry with an offset >= `offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let base = self.file.base_offset();
        let keep = self.file.partition_point(|e| base + i64::from(e.relative_offset) < offset)?;
        self.file.truncate_entries(keep)
    }

    /// Whether no more entries fit.
    pub fn is_full(&self) -> bool {
        self.file.n_entries() >= self.file.max_entries()
    }

    /// Entries the file has room for.
    pub fn max_entries(&self) -> usize {
        self.file.max_entries()
    }

    /// Bytes of valid entries.
    pub fn size_bytes(&self) -> u64 {
        self.file.size_bytes()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::io::SimFs;

    const BASE: i64 = 45;

    fn index(max_bytes: u64) -> (SimFs, OffsetIndex) {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/p")).unwrap();
        let index = OffsetIndex::create(&fs, &path(), BASE, max_bytes).unwrap();
        (fs, index)
    }

    fn path() -> PathBuf {
        PathBuf::from("/p/00000000000000000045.index")
    }

    /// `randomLookupTest`: lookups agree with a brute-force search over the entries.
    #[test]
    fn random_lookup() {
        let (_fs, mut index) = index(30 * 8);
        assert_eq!(
            index.lookup(BASE + 1000).unwrap(),
            OffsetPosition { offset: BASE, position: 0 }
        );
        let mut state = 17u64;
        let mut offset = BASE;
        let mut entries = Vec::new();
        for position in 0..30u32 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            offset += 1 + (state >> 60) as i64;
            index.append(offset, position * 100).unwrap();
            entries.push((offset, position * 100));
        }
        for target in BASE - 5..offset + 10 {
            let expected = entries
                .iter()
                .rev()
                .find(|(o, _)| *o <= target)
                .map_or(OffsetPosition { offset: BASE, position: 0 }, |&(offset, position)| {
                    OffsetPosition { offset, position }
                });
            assert_eq!(index.lookup(target).unwrap(), expected, "target {target}");
        }
    }

    /// A sealed index (an inactive segment's) answers every lookup, entry and upper bound as it
    /// did in memory, holds no entries in the heap, and truncates and unseals to take appends
    /// again; a reopen reads what the sealed truncation left.
    #[test]
    fn a_sealed_index_answers_from_its_file_as_it_did_from_memory() {
        let n_entries = 3_000usize;
        let (fs, mut index) = index(n_entries as u64 * 8 + 800);
        let mut state = 99u64;
        let mut offset = BASE;
        for position in 0..n_entries as u32 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            offset += 1 + (state >> 61) as i64;
            index.append(offset, position * 70).unwrap();
        }
        let end = offset;
        let probe = |index: &OffsetIndex| {
            let lookups: Vec<_> =
                (BASE - 3..end + 3).step_by(3).map(|t| index.lookup(t).unwrap()).collect();
            let bounds: Vec<_> = (0..n_entries as u32 * 70 + 100)
                .step_by(97)
                .map(|p| index.fetch_upper_bound_offset(p, 50).unwrap())
                .collect();
            let entries: Vec<_> = (0..index.n_entries()).map(|i| index.entry(i).unwrap()).collect();
            (lookups, bounds, entries, index.last_entry(), index.last_offset(), index.size_bytes())
        };
        let in_memory = probe(&index);
        index.file_mut().trim_to_valid_size().unwrap();
        index.file_mut().seal().unwrap();
        assert!(index.file().is_sealed());
        assert_eq!(index.file().heap_bytes(), 0, "a sealed index keeps no entries");
        assert_eq!(probe(&index), in_memory, "sealed answers equal the in-memory ones");
        assert!(index.entry(n_entries).is_err());

        // Truncation stays sealed and zeroes the dropped entries in the file.
        let cut = in_memory.2[2_000].offset;
        index.truncate_to(cut).unwrap();
        assert!(index.file().is_sealed());
        assert_eq!(index.n_entries(), 2_000);
        assert_eq!(index.last_entry(), Some(in_memory.2[1_999]));
        assert_eq!(index.lookup(end).unwrap(), in_memory.2[1_999]);
        let reopened = OffsetIndex::open(&fs, &path(), BASE, 1 << 20).unwrap();
        assert_eq!(reopened.n_entries(), 2_000, "the file holds what the sealed truncation kept");

        // An append unseals: the entries come back into memory and the index grows again.
        index.file_mut().resize_to_max().unwrap();
        assert!(!index.file().is_sealed());
        index.append(cut + 5, 2_000 * 70).unwrap();
        assert_eq!(index.n_entries(), 2_001);
        assert_eq!(
            index.lookup(cut + 6).unwrap(),
            OffsetPosition { offset: cut + 5, position: 140_000 }
        );
        assert_eq!(index.entry(1_000).unwrap(), in_memory.2[1_000]);
    }

    /// `lookupExtremeCases`, `testEntry`, `testEntryOverflow`.
    #[test]
    fn extremes_and_entries() {
        let (_fs, mut index) = index(10 * 8);
        assert!(index.entry(0).is_err());
        index.append(BASE + 1, 10).unwrap();
        index.append(BASE + 10, 20).unwrap();
        assert_eq!(index.lookup(BASE).unwrap(), OffsetPosition { offset: BASE, position: 0 });
        assert_eq!(
            index.lookup(BASE + 1).unwrap(),
            OffsetPosition { offset: BASE + 1, position: 10 }
        );
        assert_eq!(
            index.lookup(BASE + 10).unwrap(),
            OffsetPosition { offset: BASE + 10, position: 20 }
        );
        assert_eq!(index.entry(1).unwrap(), OffsetPosition { offset: BASE + 10, position: 20 });
        assert!(index.entry(2).is_err());
    }

    /// `appendTooMany` and `appendOutOfOrder`.
    #[test]
    fn append_rules() {
        let (_fs, mut index) = index(3 * 8);
        assert_eq!(index.max_entries(), 3);
        index.append(BASE + 51, 0).unwrap();
        assert!(index.append(BASE + 50, 1).is_err(), "out of order");
        assert!(index.append(BASE + 51, 1).is_err(), "equal offset");
        index.append(BASE + 52, 1).unwrap();
        index.append(BASE + 53, 2).unwrap();
        assert!(index.is_full());
        assert!(index.append(BASE + 54, 3).is_err(), "full");
        assert!(index.append(BASE - 1, 3).is_err(), "below the base");
    }

    /// `testFetchUpperBoundOffset`.
    #[test]
    fn fetch_upper_bound_offset() {
        let (_fs, mut index) = index(10 * 8);
        for (offset, position) in [(BASE, 0), (BASE + 1, 100), (BASE + 2, 200), (BASE + 3, 300)] {
            index.append(offset, position).unwrap();
        }
        assert_eq!(
            index.fetch_upper_bound_offset(0, 200).unwrap(),
            Some(OffsetPosition { offset: BASE + 2, position: 200 })
        );
        assert_eq!(
            index.fetch_upper_bound_offset(0, 201).unwrap(),
            Some(OffsetPosition { offset: BASE + 3, position: 300 })
        );
        assert_eq!(
            index.fetch_upper_bound_offset(200, 100).unwrap(),
            Some(OffsetPosition { offset: BASE + 3, position: 300 })
        );
        assert_eq!(index.fetch_upper_bound_offset(200, 101).unwrap(), None);
    }

    /// `testReopen`: a trimmed, closed index reopens with its entries and refuses appends.
    #[test]
    fn reopen_after_close() {
        let (fs, mut index) = index(10 * 8);
        index.append(BASE + 5, 0).unwrap();
        index.append(BASE + 9, 100).unwrap();
        index.file_mut().close().unwrap();
        let mut reopened = OffsetIndex::open(&fs, &path(), BASE, 10 * 8).unwrap();
        assert_eq!(reopened.n_entries(), 2);
        assert_eq!(reopened.last_offset(), BASE + 9);
        assert!(reopened.is_full());
        assert!(reopened.append(BASE + 10, 200).is_err());
        reopened.sanity_check().unwrap();
    }

    /// A preallocated file left by a crash: zeros after the valid entries are not entries.
    #[test]
    fn zero_tail_of_a_preallocated_file_is_not_entries() {
        let (fs, mut index) = index(100 * 8);
        index.append(BASE + 5, 0).unwrap();
        index.append(BASE + 9, 100).unwrap();
        index.file_mut().flush().unwrap();
        let reopened = OffsetIndex::open(&fs, &path(), BASE, 100 * 8).unwrap();
        assert_eq!((reopened.n_entries(), reopened.max_entries()), (2, 100));
        reopened.sanity_check().unwrap();
    }

    /// `truncate`.
    #[test]
    fn truncate() {
        let (fs, mut index) = index(20 * 8);
        for idx in 0..10 {
            index.append(BASE + idx * 2, (idx * 10) as u32).unwrap();
        }
        index.file_mut().flush().unwrap();
        index.truncate_to(BASE + 100).unwrap();
        assert_eq!(index.n_entries(), 10, "past the end is a no-op");
        index.truncate_to(BASE + 8).unwrap();
        assert_eq!(index.last_offset(), BASE + 6, "an exact entry is removed");
        index.truncate_to(BASE + 5).unwrap();
        assert_eq!(index.last_offset(), BASE + 4, "between entries keeps the lower");
        index.append(BASE + 5, 100).unwrap();
        assert_eq!(
            index.lookup(BASE + 7).unwrap().offset,
            BASE + 5,
            "appends work after truncation"
        );
        index.file_mut().flush().unwrap();
        // The truncated entries are gone from the file too.
        let reopened = OffsetIndex::open(&fs, &path(), BASE, 20 * 8).unwrap();
        assert_eq!(reopened.n_entries(), 4);
        reopened.sanity_check().unwrap();
        index.truncate().unwrap();
        assert_eq!(index.n_entries(), 0);
    }

    /// `testSanityLastOffsetEqualToBaseOffset`, and corruption detection.
    #[test]
    fn sanity_check() {
        let (fs, mut index) = index(10 * 8);
        index.append(BASE, 0).unwrap();
        index.file_mut().close().unwrap();
        OffsetIndex::open(&fs, &path(), BASE, 80).unwrap().sanity_check().unwrap();
        // Length not a multiple of 8.
        let file = fs.open(&path(), crate::io::OpenMode::ReadWrite).unwrap();
        file.set_len(12).unwrap();
        assert!(OffsetIndex::open(&fs, &path(), BASE, 80).unwrap().sanity_check().is_err());
        // An entry that goes backwards after valid ones.
        let mut bytes = Vec::new();
        for (offset, position) in [(5u32, 0u32), (9, 100), (7, 200)] {
            bytes.extend_from_slice(
                &OffsetIndexEntry { relative_offset: offset, position }.encode(),
            );
        }
        file.set_len(0).unwrap();
        file.write_all_at(&bytes, 0).unwrap();
        let reopened = OffsetIndex::open(&fs, &path(), BASE, 80).unwrap();
        assert_eq!(reopened.n_entries(), 2);
        assert!(reopened.sanity_check().is_err());
    }

    /// Resizing back to the maximum makes a trimmed index appendable again.
    #[test]
    fn resize_round_trip() {
        let (_fs, mut index) = index(10 * 8);
        index.append(BASE + 1, 0).unwrap();
        assert!(index.file_mut().trim_to_valid_size().unwrap());
        assert!(!index.file_mut().trim_to_valid_size().unwrap(), "same size: false");
        assert!(index.is_full());
        assert!(index.file_mut().resize_to_max().unwrap());
        index.append(BASE + 2, 10).unwrap();
        index.file_mut().reset().unwrap();
        assert_eq!((index.n_entries(), index.max_entries()), (0, 10));
    }
}
