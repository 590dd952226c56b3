//! An index file read the way Kafka reads an index it only looks at (`DumpLogSegments`, a
//! read-only `AbstractIndex`): every slot of the file, `length / entry size` of them, the
//! zero-filled preallocation and anything out of order included, each read when asked for.
//!
//! [`IndexFile`](super::IndexFile) is what a segment uses: it keeps only the longest
//! well-ordered prefix, in memory. `IndexSlots` keeps nothing and trusts nothing, so a tool can
//! show an index exactly as it is on disk.

use std::io;
use std::marker::PhantomData;

use super::IndexEntry;
use super::file::largest_lower_bound_slot;
use crate::io::File;

/// The slots of one `.index` or `.timeindex` file, read positionally.
#[derive(Debug)]
pub struct IndexSlots<E: IndexEntry> {
    file: Box<dyn File>,
    len_bytes: u64,
    base_offset: i64,
    entry: PhantomData<E>,
}

impl<E: IndexEntry> IndexSlots<E> {
    /// The slots of `file`, whose segment starts at `base_offset`.
    pub fn new(file: Box<dyn File>, base_offset: i64) -> io::Result<Self> {
        let len_bytes = file.len()?;
        Ok(Self { file, len_bytes, base_offset, entry: PhantomData })
    }

    /// The file's length.
    pub fn len_bytes(&self) -> u64 {
        self.len_bytes
    }

    /// The slots: the file's length over the entry size, rounded down.
    pub fn n_slots(&self) -> u64 {
        self.len_bytes / E::BYTES as u64
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// The absolute offset a slot's relative offset names.
    pub fn absolute(&self, entry: &E) -> i64 {
        self.base_offset.wrapping_add(i64::from(entry.relative_offset()))
    }

    /// The entry in slot `slot_idx`; an entry that does not decode (a relative offset or
    /// position above `i32::MAX`) is `InvalidData`.
    pub fn slot(&self, slot_idx: u64) -> io::Result<E> {
        let mut bytes = [0u8; 16];
        let bytes = bytes.get_mut(..E::BYTES).unwrap_or_default();
        self.file.read_exact_at(bytes, slot_idx * E::BYTES as u64)?;
        E::decode(bytes).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("index slot {slot_idx} holds a negative relative offset or position"),
            )
        })
    }

    /// The slot of the largest entry whose `key` is <= `target`, by Kafka's warm-section binary
    /// search over every slot (as Kafka searches a read-only index), or `None`.
    pub fn largest_lower_bound(
        &self,
        target: i64,
        key: impl Fn(&E) -> i64,
    ) -> io::Result<Option<u64>> {
        let n_slots = usize::try_from(self.n_slots())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "index too large"))?;
        let key_at = |slot: usize| self.slot(slot as u64).map(|entry| key(&entry));
        Ok(largest_lower_bound_slot(n_slots, E::BYTES, target, key_at)?.map(|slot| slot as u64))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use seglog_format::{OffsetIndexEntry, TimeIndexEntry};

    use super::*;
    use crate::io::{Fs, OpenMode, SimFs};

    fn slots<E: IndexEntry>(bytes: &[u8]) -> IndexSlots<E> {
        let fs = SimFs::new();
        let file = fs.open(Path::new("/i"), OpenMode::CreateNew).unwrap();
        file.write_all_at(bytes, 0).unwrap();
        IndexSlots::new(file, 100).unwrap()
    }

    #[test]
    fn every_slot_is_read_and_searched_as_kafka_does() {
        // Entries (100+1, 0), (100+5, 70), then a zero-filled preallocated slot and a partial one.
        let mut bytes = Vec::new();
        for (offset, position) in [(1u32, 0u32), (5, 70), (0, 0)] {
            bytes.extend_from_slice(
                &OffsetIndexEntry { relative_offset: offset, position }.encode(),
            );
        }
        bytes.extend_from_slice(&[0; 3]);
        let index = slots::<OffsetIndexEntry>(&bytes);
        assert_eq!((index.n_slots(), index.len_bytes()), (3, 27));
        let key = |entry: &OffsetIndexEntry| 100 + i64::from(entry.relative_offset);
        assert_eq!(index.slot(1).unwrap(), OffsetIndexEntry { relative_offset: 5, position: 70 });
        assert_eq!(index.absolute(&index.slot(1).unwrap()), 105);
        assert_eq!(index.largest_lower_bound(99, key).unwrap(), None);
        assert_eq!(index.largest_lower_bound(101, key).unwrap(), Some(0));
        assert_eq!(index.largest_lower_bound(104, key).unwrap(), Some(0));
        // The zero slot reads as offset 100 and the search lands on it, as Kafka's does.
        assert_eq!(index.largest_lower_bound(500, key).unwrap(), Some(2));
        assert!(index.slot(3).is_err());
        let negative = slots::<TimeIndexEntry>(&[0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0, 0, 0]);
        assert_eq!(negative.slot(0).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }
}
