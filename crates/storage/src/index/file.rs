//! The storage shared by both indexes (Kafka's `AbstractIndex`): a fixed-size entry file,
//! preallocated while the segment is active and trimmed to its valid entries when it is not,
//! searched with Kafka's warm-section binary search.
//!
//! An active segment's entries are mirrored in memory. A sealed index (an inactive segment's,
//! [`IndexFile::seal`]) holds only its entry count and last entry, and searches its file,
//! one read of an entry per probe through the page cache: so the heap an index holds does not
//! grow with the data kept, as Kafka's memory maps, paged by the kernel, do not (a 1 GiB
//! segment's indexes are about 5 MiB). A mutation unseals it first (reads its entries back).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::io::{File, Fs, OpenMode};

/// Bytes read at a time when an index is opened.
const OPEN_WINDOW_BYTES: u64 = 64 * 1024;

/// Entries in the last 8 KiB of an index are searched first: nearly every lookup hits the tail.
pub const WARM_SECTION_BYTES: usize = 8192;

/// One fixed-size index entry.
pub trait IndexEntry: Copy + std::fmt::Debug + PartialEq {
    /// Bytes per entry on disk.
    const BYTES: usize;
    /// Decodes one entry from exactly `BYTES` bytes.
    fn decode(bytes: &[u8]) -> Option<Self>;
    /// Encodes the entry.
    fn encode(&self, out: &mut Vec<u8>);
    /// The relative offset this entry names.
    fn relative_offset(&self) -> u32;
    /// Whether this entry may follow `previous` (the index's ordering rule).
    fn may_follow(&self, previous: &Self) -> bool;
}

/// Implements [`IndexEntry`] for one of `format`'s fixed-size entries (`OffsetIndexEntry`,
/// `TimeIndexEntry`), whose ordering rule is `$may_follow(entry, previous)`.
macro_rules! impl_index_entry {
    ($entry:ty, $bytes:expr, $may_follow:path) => {
        impl IndexEntry for $entry {
            const BYTES: usize = $bytes;

            fn decode(bytes: &[u8]) -> Option<Self> {
                let bytes = <&[u8; $bytes]>::try_from(bytes).ok()?;
                <$entry>::decode(bytes).ok()
            }

            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&<$entry>::encode(self));
            }

            fn relative_offset(&self) -> u32 {
                self.relative_offset
            }

            fn may_follow(&self, previous: &Self) -> bool {
                $may_follow(self, previous)
            }
        }
    };
}
pub(crate) use impl_index_entry;

/// What every index type has over its `file` field: `create` (new, preallocated, empty), `open`
/// (Kafka's file, with or without a zero-filled preallocated tail), and the plain delegations.
macro_rules! index_constructors {
    ($entry:ty) => {
        /// Creates a new, preallocated, empty index.
        pub fn create(
            fs: &dyn Fs,
            path: &Path,
            base_offset: i64,
            index_bytes_max: u64,
        ) -> Result<Self> {
            Ok(Self { file: IndexFile::create(fs, path, base_offset, index_bytes_max)? })
        }

        /// Opens an existing index (Kafka's, with or without a zero-filled preallocated tail).
        pub fn open(
            fs: &dyn Fs,
            path: &Path,
            base_offset: i64,
            index_bytes_max: u64,
        ) -> Result<Self> {
            Ok(Self { file: IndexFile::open(fs, path, base_offset, index_bytes_max)? })
        }

        /// Removes every entry.
        pub fn truncate(&mut self) -> Result<()> {
            self.file.truncate_entries(0)
        }

        /// Number of entries.
        pub fn n_entries(&self) -> usize {
            self.file.n_entries()
        }

        /// Kafka's `sanityCheck`, plus garbage after the valid entries (and, for the time
        /// index, timestamps going backwards).
        pub fn sanity_check(&self) -> Result<()> {
            self.file.sanity_check()
        }

        /// The underlying file (trim, resize, flush, close).
        pub fn file_mut(&mut self) -> &mut IndexFile<$entry> {
            &mut self.file
        }

        /// The underlying file.
        pub fn file(&self) -> &IndexFile<$entry> {
            &self.file
        }
    };
}
pub(crate) use index_constructors;

/// Which column a lookup searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchKey {
    /// The entry's offset.
    Offset,
    /// The entry's value: a position (offset index) or a timestamp (time index).
    Value,
}

/// An index file and its entries (the role of Kafka's `AbstractIndex`).
#[derive(Debug)]
pub struct IndexFile<E: IndexEntry> {
    path: PathBuf,
    file: Arc<dyn File>,
    base_offset: i64,
    /// The entries while unsealed; empty while sealed.
    entries: Vec<E>,
    /// Set while sealed: the entries are read from the file, not kept.
    sealed: Option<Sealed<E>>,
    /// Entries `[written_entries..]` are not yet in the file.
    written_entries: usize,
    /// Entries the file has room for (its length / entry size).
    max_entries: usize,
    /// Bytes the file is preallocated to while active.
    index_bytes_max: u64,
}

/// What a sealed index keeps of its entries.
#[derive(Debug, Clone, Copy)]
struct Sealed<E> {
    n_entries: usize,
    last: Option<E>,
}

fn rounded(bytes: u64, entry_bytes: usize) -> u64 {
    bytes - bytes % entry_bytes as u64
}

impl<E: IndexEntry> IndexFile<E> {
    /// Creates (or truncates) the file at `path`, preallocated to `index_bytes_max` rounded down
    /// to whole entries, with no entries.
    pub fn create(
        fs: &dyn Fs,
        path: &Path,
        base_offset: i64,
        index_bytes_max: u64,
    ) -> Result<Self> {
        let file = fs
            .open(path, OpenMode::CreateOrOpen)
            .map_err(|e| Error::io("create index", path, e))?;
        let len = rounded(index_bytes_max, E::BYTES);
        file.set_len(0).map_err(|e| Error::io("truncate index", path, e))?;
        file.set_len(len).map_err(|e| Error::io("preallocate index", path, e))?;
        Ok(Self {
            path: path.to_owned(),
            file: Arc::from(file),
            base_offset,
            entries: Vec::new(),
            sealed: None,
            written_entries: 0,
            max_entries: (len / E::BYTES as u64) as usize,
            index_bytes_max,
        })
    }

    /// Opens an existing file and loads its valid entries: the longest prefix that obeys the
    /// ordering rule and whose offsets fit an `i64` above `base_offset`. A zero-filled tail
    /// (Kafka's preallocation, left by an unclean shutdown) is expected;
    /// [`IndexFile::sanity_check`] reports anything else after the prefix.
    pub fn open(fs: &dyn Fs, path: &Path, base_offset: i64, index_bytes_max: u64) -> Result<Self> {
        let file =
            fs.open(path, OpenMode::ReadWrite).map_err(|e| Error::io("open index", path, e))?;
        let file: Arc<dyn File> = Arc::from(file);
        let len = file.len().map_err(|e| Error::io("stat index", path, e))?;
        // Read a window at a time and stop at the first entry that breaks the order: an active
        // segment's file is preallocated (10 MiB by default) and mostly zeros.
        let window_entries = OPEN_WINDOW_BYTES / E::BYTES as u64;
        let mut entries: Vec<E> = Vec::new();
        let mut position = 0u64;
        let mut buffer = Vec::new();
        'scan: while position + E::BYTES as u64 <= len {
            let n_entries = ((len - position) / E::BYTES as u64).min(window_entries);
            buffer.resize((n_entries * E::BYTES as u64) as usize, 0);
            file.read_exact_at(&mut buffer, position)
                .map_err(|e| Error::io("read index", path, e))?;
            for chunk in buffer.chunks_exact(E::BYTES) {
                match E::decode(chunk) {
                    Some(entry)
                        if entries.last().is_none_or(|last| entry.may_follow(last))
                            && base_offset
                                .checked_add(i64::from(entry.relative_offset()))
                                .is_some() =>
                    {
                        entries.push(entry);
                    }
                    _ => break 'scan,
                }
            }
            position += buffer.len() as u64;
        }
        let max_entries = (len / E::BYTES as u64) as usize;
        let written_entries = entries.len();
        Ok(Self {
            path: path.to_owned(),
            file,
            base_offset,
            entries,
            sealed: None,
            written_entries,
            max_entries,
            index_bytes_max,
        })
    }

    /// Checks the file as Kafka's `sanityCheck` does (length a multiple of the entry size), and
    /// that the slot after the valid entries is empty; the caller rebuilds the index on failure.
    pub fn sanity_check(&self) -> Result<()> {
        let corrupt = |reason: String| Error::CorruptIndex { path: self.path.clone(), reason };
        let len = self.file.len().map_err(|e| Error::io("stat index", &self.path, e))?;
        if len % E::BYTES as u64 != 0 {
            return Err(corrupt(format!(
                "found {len} bytes which is neither positive nor a multiple of {}",
                E::BYTES
            )));
        }
        // The slot after the valid entries is the one an append would write next: it must be
        // empty (zeros) or past the end. Further slots are never read, so they cannot mislead.
        let written = (self.written_entries.min(self.n_entries()) * E::BYTES) as u64;
        if written + E::BYTES as u64 <= len {
            let mut slot = vec![0u8; E::BYTES];
            self.file
                .read_exact_at(&mut slot, written)
                .map_err(|e| Error::io("read index", &self.path, e))?;
            if slot.iter().any(|b| *b != 0) {
                let entry_idx = written / E::BYTES as u64;
                return Err(corrupt(format!(
                    "entry {entry_idx} breaks the index order (or is garbage after the last valid entry)"
                )));
            }
        }
        Ok(())
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renames the file; the open handle keeps working under the new name.
    pub fn rename_to(&mut self, fs: &dyn Fs, path: &Path) -> Result<()> {
        fs.rename(&self.path, path).map_err(|e| Error::io("rename index", &self.path, e))?;
        path.clone_into(&mut self.path);
        Ok(())
    }

    /// `offset` relative to the base offset, when it fits the index's 31 bits.
    pub fn relative_offset_of(&self, offset: i64) -> Result<u32> {
        offset
            .checked_sub(self.base_offset())
            .and_then(|relative| i32::try_from(relative).ok())
            .filter(|relative| *relative >= 0)
            .map(i32::unsigned_abs)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "offset {offset} is out of the 31-bit range of an index based at {}",
                    self.base_offset()
                ))
            })
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Whether the index is sealed ([`IndexFile::seal`]).
    pub fn is_sealed(&self) -> bool {
        self.sealed.is_some()
    }

    /// Drops the in-memory entries of a trimmed index whose entries are all written: lookups
    /// read the file from now on, and a mutation reads them back first ([`IndexFile::unseal`]).
    /// For an inactive segment's indexes. A no-op when already sealed.
    pub fn seal(&mut self) -> Result<()> {
        if self.sealed.is_some() {
            return Ok(());
        }
        self.write_pending()?;
        self.sealed =
            Some(Sealed { n_entries: self.entries.len(), last: self.entries.last().copied() });
        self.entries = Vec::new();
        Ok(())
    }

    /// Reads a sealed index's entries back into memory, for a mutation (or a segment that is
    /// active again). A no-op when not sealed.
    pub fn unseal(&mut self) -> Result<()> {
        let Some(sealed) = self.sealed else { return Ok(()) };
        let mut bytes = vec![0u8; sealed.n_entries * E::BYTES];
        self.file
            .read_exact_at(&mut bytes, 0)
            .map_err(|e| Error::io("read index", &self.path, e))?;
        let mut entries = Vec::with_capacity(sealed.n_entries);
        for (entry_idx, chunk) in bytes.chunks_exact(E::BYTES).enumerate() {
            entries.push(self.decode_at(entry_idx, chunk)?);
        }
        self.entries = entries;
        self.written_entries = sealed.n_entries;
        self.sealed = None;
        Ok(())
    }

    fn decode_at(&self, entry_idx: usize, bytes: &[u8]) -> Result<E> {
        E::decode(bytes).ok_or_else(|| Error::CorruptIndex {
            path: self.path.clone(),
            reason: format!("entry {entry_idx} of a sealed index does not decode"),
        })
    }

    /// A sealed index's entry at `entry_idx`, read from the file.
    fn read_entry(&self, entry_idx: usize) -> Result<E> {
        let mut bytes = [0u8; 16];
        let bytes = bytes.get_mut(..E::BYTES).unwrap_or_default();
        self.file
            .read_exact_at(bytes, (entry_idx * E::BYTES) as u64)
            .map_err(|e| Error::io("read index", &self.path, e))?;
        self.decode_at(entry_idx, bytes)
    }

    /// Number of entries.
    pub fn n_entries(&self) -> usize {
        self.sealed.map_or(self.entries.len(), |sealed| sealed.n_entries)
    }

    /// Entries the file has room for.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Bytes of valid entries (Kafka's `sizeInBytes`).
    pub fn size_bytes(&self) -> u64 {
        (self.n_entries() * E::BYTES) as u64
    }

    /// Bytes of entries held in memory (none while sealed).
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * size_of::<E>()
    }

    /// The last entry.
    pub fn last(&self) -> Option<E> {
        match self.sealed {
            Some(sealed) => sealed.last,
            None => self.entries.last().copied(),
        }
    }

    /// The entry at `entry_idx`.
    pub fn entry(&self, entry_idx: usize) -> Result<E> {
        let n_entries = self.n_entries();
        if entry_idx >= n_entries {
            return Err(Error::InvalidArgument(format!(
                "attempt to fetch the {entry_idx}th entry from an index of size {n_entries}"
            )));
        }
        match self.entries.get(entry_idx) {
            Some(entry) if self.sealed.is_none() => Ok(*entry),
            _ => self.read_entry(entry_idx),
        }
    }

    /// Appends an entry; the caller has checked the index rules.
    pub fn push(&mut self, entry: E) -> Result<()> {
        self.unseal()?;
        if self.entries.len() >= self.max_entries {
            return Err(Error::InvalidArgument(format!(
                "attempt to append to a full index (size = {})",
                self.entries.len()
            )));
        }
        if let Some(last) = self.entries.last()
            && !entry.may_follow(last)
        {
            return Err(Error::InvalidArgument(format!(
                "attempt to append an entry {entry:?} that does not follow the last entry {last:?} in {}",
                self.path.display()
            )));
        }
        self.entries.push(entry);
        Ok(())
    }

    /// The largest entry whose `key` is <= `target` (Kafka's `largestLowerBoundSlotFor`, warm
    /// section first), or `None`.
    pub fn largest_lower_bound(&self, target: i64, key: impl Fn(&E) -> i64) -> Result<Option<E>> {
        if self.sealed.is_none() {
            let key_at = |slot: usize| {
                Ok::<_, std::convert::Infallible>(self.entries.get(slot).map_or(i64::MAX, &key))
            };
            let Ok(slot) = largest_lower_bound_slot(self.entries.len(), E::BYTES, target, key_at);
            return Ok(slot.and_then(|slot| self.entries.get(slot).copied()));
        }
        let key_at = |slot: usize| self.read_entry(slot).map(|entry| key(&entry));
        match largest_lower_bound_slot(self.n_entries(), E::BYTES, target, key_at)? {
            Some(slot) => self.read_entry(slot).map(Some),
            None => Ok(None),
        }
    }

    /// The number of leading entries for which `below` holds (entries are ordered so that it
    /// holds for a prefix): a binary search, of the file when sealed.
    pub fn partition_point(&self, below: impl Fn(&E) -> bool) -> Result<usize> {
        if self.sealed.is_none() {
            return Ok(self.entries.partition_point(below));
        }
        let (mut lo, mut hi) = (0, self.n_entries());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if below(&self.read_entry(mid)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The smallest entry whose `key` is >= `target`, or `None`.
    pub fn smallest_upper_bound(&self, target: i64, key: impl Fn(&E) -> i64) -> Result<Option<E>> {
        let slot = self.partition_point(|entry| key(entry) < target)?;
        if slot < self.n_entries() { self.entry(slot).map(Some) } else { Ok(None) }
    }

    /// Removes every entry from `keep` on, and zeroes their bytes in the file so a later reopen
    /// cannot read them back.
    pub fn truncate_entries(&mut self, keep: usize) -> Result<()> {
        if keep >= self.n_entries() {
            return Ok(());
        }
        if let Some(sealed) = self.sealed {
            // Every entry of a sealed index is in the file: zero the dropped ones there, and
            // stay sealed.
            let zeros = vec![0u8; (sealed.n_entries - keep) * E::BYTES];
            self.file
                .write_all_at(&zeros, (keep * E::BYTES) as u64)
                .map_err(|e| Error::io("truncate index", &self.path, e))?;
            let last = match keep.checked_sub(1) {
                Some(last_idx) => Some(self.read_entry(last_idx)?),
                None => None,
            };
            self.sealed = Some(Sealed { n_entries: keep, last });
            self.written_entries = keep;
            return Ok(());
        }
        let written_end = self.written_entries.min(self.entries.len());
        if keep < written_end {
            let zeros = vec![0u8; (written_end - keep) * E::BYTES];
            self.file
                .write_all_at(&zeros, (keep * E::BYTES) as u64)
                .map_err(|e| Error::io("truncate index", &self.path, e))?;
        }
        self.entries.truncate(keep);
        self.written_entries = self.written_entries.min(keep);
        Ok(())
    }

    /// The file handle, for an fsync made outside the owner's lock (see `LogSegment::prepare_sync`).
    pub fn handle(&self) -> Arc<dyn File> {
        Arc::clone(&self.file)
    }

    /// Writes entries not yet in the file (without an fsync).
    pub fn write_pending(&mut self) -> Result<()> {
        if self.sealed.is_some() {
            return Ok(());
        }
        let Some(pending) = self.entries.get(self.written_entries..) else { return Ok(()) };
        if pending.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(pending.len() * E::BYTES);
        for entry in pending {
            entry.encode(&mut bytes);
        }
        self.file
            .write_all_at(&bytes, (self.written_entries * E::BYTES) as u64)
            .map_err(|e| Error::io("write index", &self.path, e))?;
        self.written_entries = self.entries.len();
        Ok(())
    }

    /// Writes pending entries and fsyncs the file (Kafka's `flush`).
    pub fn flush(&mut self) -> Result<()> {
        self.write_pending()?;
        self.file.sync_data().map_err(|e| Error::io("fsync index", &self.path, e))
    }

    /// Sets the file length to `bytes` rounded down to whole entries, keeping the entries that fit.
    /// Returns false when the length did not change (Kafka's `resize`).
    pub fn resize(&mut self, bytes: u64) -> Result<bool> {
        let len = rounded(bytes, E::BYTES);
        let new_max = (len / E::BYTES as u64) as usize;
        if self.sealed.is_some() && new_max != self.max_entries {
            self.unseal()?;
        }
        if new_max < self.n_entries() {
            self.truncate_entries(new_max)?;
        }
        self.write_pending()?;
        let current = self.file.len().map_err(|e| Error::io("stat index", &self.path, e))?;
        self.max_entries = new_max;
        if current == len {
            return Ok(false);
        }
        self.file.set_len(len).map_err(|e| Error::io("resize index", &self.path, e))?;
        Ok(true)
    }

    /// Shrinks the file to its valid entries; afterwards the index is full (Kafka's
    /// `trimToValidSize`, run when the segment becomes inactive and on close).
    pub fn trim_to_valid_size(&mut self) -> Result<bool> {
        // A trimmed index takes no more entries until it is resized: give back the vector's
        // growth room (up to as much again as the entries).
        self.entries.shrink_to_fit();
        self.resize(self.size_bytes())
    }

    /// Grows the file back to its preallocated size, for a segment that becomes active again.
    pub fn resize_to_max(&mut self) -> Result<bool> {
        self.resize(self.index_bytes_max)
    }

    /// Removes all entries and preallocates again (Kafka's `reset`).
    pub fn reset(&mut self) -> Result<()> {
        self.truncate_entries(0)?;
        self.resize(self.index_bytes_max)?;
        Ok(())
    }

    /// Trims and fsyncs.
    pub fn close(&mut self) -> Result<()> {
        self.trim_to_valid_size()?;
        self.flush()
    }
}

/// Largest slot in `[lo, hi]` whose key is <= `target`, given that `key(lo) <= target`.
/// Kafka's `AbstractIndex.largestLowerBoundSlotFor` over `n_slots` entries of `entry_bytes`
/// each, whose keys `key_at` gives (reading them may fail): the slots of the last
/// [`WARM_SECTION_BYTES`] are searched first, since nearly every lookup lands there, then the
/// rest. `Ok(None)` when the first key already exceeds `target`.
pub fn largest_lower_bound_slot<Err>(
    n_slots: usize,
    entry_bytes: usize,
    target: i64,
    mut key_at: impl FnMut(usize) -> std::result::Result<i64, Err>,
) -> std::result::Result<Option<usize>, Err> {
    if n_slots == 0 {
        return Ok(None);
    }
    let warm = WARM_SECTION_BYTES / entry_bytes;
    let first_hot = n_slots.saturating_sub(1 + warm);
    if key_at(first_hot)? < target {
        return binary_search(first_hot, n_slots - 1, target, key_at).map(Some);
    }
    if key_at(0)? > target {
        return Ok(None);
    }
    binary_search(0, first_hot, target, key_at).map(Some)
}

fn binary_search<Err>(
    mut lo: usize,
    mut hi: usize,
    target: i64,
    mut key: impl FnMut(usize) -> std::result::Result<i64, Err>,
) -> std::result::Result<usize, Err> {
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        match key(mid)?.cmp(&target) {
            std::cmp::Ordering::Greater => hi = mid - 1,
            std::cmp::Ordering::Less => lo = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Ok(lo)
}
