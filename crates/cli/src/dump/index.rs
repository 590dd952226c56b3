//! `.index`, `.timeindex` and `.txnindex` files: their entries, checked against the `.log` as
//! Kafka's `dumpIndex` and `dumpTimeIndex` do.

use std::io::{self, Write};

use seglog_format::batch::{HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD};
use seglog_format::index::{ABORTED_TXN_BYTES, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES};
use seglog_format::legacy::RECORD_OVERHEAD_V0;
use seglog_format::{AbortedTxn, OffsetIndexEntry, TimeIndexEntry};
use seglog_storage::index::WARM_SECTION_BYTES;
use seglog_storage::io::{File, Fs, OpenMode, StdFs};

use super::log::Entry;
use super::records::entry_records;
use super::{Dumper, JavaFile, Problem, Step, Stop};

/// An index file read as Kafka reads a read-only index: `entries = length / entry size`,
/// zero-filled preallocation included.
pub(super) struct IndexReader {
    pub(super) file: Box<dyn File>,
    pub(super) len: u64,
    pub(super) entry_bytes: u64,
    pub(super) base_offset: i64,
}

impl IndexReader {
    pub(super) fn entries(&self) -> u64 {
        self.len / self.entry_bytes
    }

    pub(super) fn raw(&self, entry_idx: u64) -> io::Result<[u8; 12]> {
        let mut bytes = [0u8; 12];
        let slot = bytes.get_mut(..self.entry_bytes as usize).unwrap_or_default();
        self.file.read_exact_at(slot, entry_idx * self.entry_bytes)?;
        Ok(bytes)
    }

    /// Offset index entry `entry_idx` as (absolute offset, position).
    pub(super) fn offset_entry(&self, entry_idx: u64) -> Result<(i64, u32), String> {
        let bytes = self.raw(entry_idx).map_err(|error| error.to_string())?;
        let entry = OffsetIndexEntry::read(&bytes, 0).map_err(|error| error.to_string())?;
        Ok((self.base_offset + i64::from(entry.relative_offset), entry.position))
    }

    /// Time index entry `entry_idx` as (timestamp, absolute offset).
    pub(super) fn time_entry(&self, entry_idx: u64) -> Result<(i64, i64), String> {
        let bytes = self.raw(entry_idx).map_err(|error| error.to_string())?;
        let entry = TimeIndexEntry::read(&bytes, 0).map_err(|error| error.to_string())?;
        Ok((entry.timestamp, self.base_offset + i64::from(entry.relative_offset)))
    }

    /// Kafka's `OffsetIndex.lookup`: the position of the largest entry at or below `target`
    /// found by `AbstractIndex`'s warm-section binary search (over every slot, as Kafka does,
    /// zero-filled ones included), or 0.
    pub(super) fn lookup_position(&self, target: i64) -> Result<u32, String> {
        let entries = self.entries();
        if entries == 0 {
            return Ok(0);
        }
        let offset_at = |slot: u64| self.offset_entry(slot).map(|(offset, _)| offset);
        let warm_entries = WARM_SECTION_BYTES as u64 / self.entry_bytes;
        let first_hot = entries.saturating_sub(1).saturating_sub(warm_entries);
        let slot = if offset_at(first_hot)? < target {
            Some(self.binary_search(target, first_hot, entries - 1)?)
        } else if offset_at(0)? > target {
            None
        } else {
            Some(self.binary_search(target, 0, first_hot)?)
        };
        match slot {
            None => Ok(0),
            Some(slot) => self.offset_entry(slot).map(|(_, position)| position),
        }
    }

    pub(super) fn binary_search(&self, target: i64, begin: u64, end: u64) -> Result<u64, String> {
        let (mut lo, mut hi) = (begin, end);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let (found, _) = self.offset_entry(mid)?;
            match found.cmp(&target) {
                std::cmp::Ordering::Greater => hi = mid - 1,
                std::cmp::Ordering::Less => lo = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Ok(lo)
    }
}

/// Reads entry headers of a `.log` at arbitrary positions (Kafka's `FileRecords.slice` plus
/// `FileLogInputStream`), for index verification.
pub(super) struct LogProbe {
    pub(super) file: Box<dyn File>,
    pub(super) len: u64,
}

/// An entry found by [`LogProbe::entry_at`].
pub(super) struct ProbedEntry {
    pub(super) last_offset: i64,
    pub(super) size_bytes: u64,
}

impl LogProbe {
    /// The entry at `position` if it lies whole before `end`; `Ok(None)` where Kafka's stream
    /// ends; `Err` where Kafka throws.
    pub(super) fn entry_at(&self, position: u64, end: u64) -> Result<Option<ProbedEntry>, String> {
        if position + HEADER_SIZE_UP_TO_MAGIC as u64 >= end {
            return Ok(None);
        }
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        let header_len = (self.len - position).min(RECORD_BATCH_OVERHEAD as u64) as usize;
        let header = header.get_mut(..header_len).unwrap_or_default();
        self.file.read_exact_at(header, position).map_err(|error| error.to_string())?;
        let field = |at: usize| header.get(at..at + 8).and_then(|b| b.first_chunk::<8>()).copied();
        let size = header
            .get(8..12)
            .and_then(|bytes| bytes.first_chunk::<4>())
            .map_or(0, |bytes| i32::from_be_bytes(*bytes));
        if size < RECORD_OVERHEAD_V0 as i32 {
            return Err(format!(
                "Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
            ));
        }
        let size_bytes = LOG_OVERHEAD as u64 + size as u64;
        if position + size_bytes > end {
            return Ok(None);
        }
        let offset = field(0).map_or(0, i64::from_be_bytes);
        let magic = header.get(16).map_or(0, |&byte| byte as i8);
        let last_offset = if magic < 2 {
            offset
        } else {
            let delta = header
                .get(23..27)
                .and_then(|bytes| bytes.first_chunk::<4>())
                .map(|bytes| i32::from_be_bytes(*bytes))
                .ok_or("Failed to read `record batch header` from file channel: end of file")?;
            offset.wrapping_add(i64::from(delta))
        };
        Ok(Some(ProbedEntry { last_offset, size_bytes }))
    }

    pub(super) fn read(&self, position: u64, size_bytes: u64) -> Result<Vec<u8>, String> {
        let mut bytes = vec![0u8; usize::try_from(size_bytes).map_err(|error| error.to_string())?];
        self.file.read_exact_at(&mut bytes, position).map_err(|error| error.to_string())?;
        Ok(bytes)
    }
}

impl Dumper<'_> {
    pub(super) fn open_index(
        file: &JavaFile,
        entry_bytes: u64,
        base_offset: i64,
    ) -> Result<IndexReader, Problem> {
        let handle = Self::open(file)?;
        let len = handle.len().map_err(|error| Problem::io(file, &error))?;
        Ok(IndexReader { file: handle, len, entry_bytes, base_offset })
    }

    pub(super) fn dump_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let log_file = file.sibling(".log");
        let (log, log_len) = Self::open_records(&log_file)?;
        let index = Self::open_index(file, OFFSET_INDEX_ENTRY_BYTES as u64, base_offset)?;
        let entries = index.entries();
        if entries == 0 {
            writeln!(self.out, "{} is empty.", file.shown)?;
            return Ok(());
        }
        if self.options.index_sanity_only {
            let (last_offset, _) = index.offset_entry(entries - 1).map_err(Problem::new)?;
            if last_offset < base_offset {
                return Err(Problem::new(format!(
                    "Corrupt index found, index file {} has non-zero size but the last offset is \
                     {last_offset} which is less than the base offset {base_offset}",
                    file.absolute
                ))
                .into());
            }
            if !index.len.is_multiple_of(OFFSET_INDEX_ENTRY_BYTES as u64) {
                return Err(Problem::new(format!(
                    "Index file {} is corrupt, found {} bytes which is neither positive nor a \
                     multiple of {OFFSET_INDEX_ENTRY_BYTES}",
                    file.absolute, index.len
                ))
                .into());
            }
            writeln!(self.out, "{} passed sanity check.", file.shown)?;
            return Ok(());
        }
        if self.options.max_message_size < 0 {
            return Err(
                Problem::new(format!("Invalid size: {}", self.options.max_message_size)).into()
            );
        }
        let probe = LogProbe { file: log, len: log_len };
        for entry_idx in 0..entries {
            let at = entry_idx * OFFSET_INDEX_ENTRY_BYTES as u64;
            let (offset, position) =
                index.offset_entry(entry_idx).map_err(|message| Problem::at(at, message))?;
            // A preallocated index ends in zero entries; Kafka stops at the first one.
            if offset == base_offset && entry_idx > 0 {
                return Ok(());
            }
            let position = u64::from(position);
            if position > log_len {
                return Err(Problem::at(
                    at,
                    format!(
                        "Slice from position {position} exceeds end position of {}",
                        log_file.shown
                    ),
                )
                .into());
            }
            let end = (position + self.options.max_message_size as u64).min(log_len);
            let first = probe
                .entry_at(position, end)
                .map_err(|message| Problem::at(at, format!("{message} (log position {position})")))?
                .ok_or_else(|| {
                    Problem::at(
                        at,
                        format!("java.util.NoSuchElementException: no whole batch at log position {position} within --max-message-size"),
                    )
                })?;
            if first.last_offset != offset {
                self.index_mismatches.push(&file.absolute, (offset, first.last_offset));
            }
            if !self.options.verify_only {
                writeln!(self.out, "offset: {offset} position: {position}")?;
            }
        }
        Ok(())
    }

    pub(super) fn dump_time_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let (log, log_len) = Self::open_records(&file.sibling(".log"))?;
        let offset_index = Self::open_index(
            &file.sibling(".index"),
            OFFSET_INDEX_ENTRY_BYTES as u64,
            base_offset,
        )?;
        let time_index = Self::open_index(file, TIME_INDEX_ENTRY_BYTES as u64, base_offset)?;
        let entries = time_index.entries();
        if self.options.index_sanity_only {
            Self::time_index_sanity_check(file, &time_index)?;
            writeln!(self.out, "{} passed sanity check.", file.shown)?;
            return Ok(());
        }
        let probe = LogProbe { file: log, len: log_len };
        let mut previous_timestamp = -1i64;
        for entry_idx in 0..entries {
            let at = entry_idx * TIME_INDEX_ENTRY_BYTES as u64;
            let (timestamp, offset) =
                time_index.time_entry(entry_idx).map_err(|message| Problem::at(at, message))?;
            if offset == base_offset && entry_idx > 0 {
                return Ok(());
            }
            let position =
                offset_index.lookup_position(offset).map_err(|message| Problem::at(at, message))?;
            self.check_time_entry(
                file,
                &probe,
                u64::from(position),
                timestamp,
                offset,
                previous_timestamp,
            )
            .map_err(|message| Problem::at(at, message))?;
            if !self.options.verify_only {
                writeln!(self.out, "timestamp: {timestamp} offset: {offset}")?;
            }
            previous_timestamp = timestamp;
        }
        Ok(())
    }

    pub(super) fn time_index_sanity_check(
        file: &JavaFile,
        index: &IndexReader,
    ) -> Result<(), Problem> {
        let entries = index.entries();
        if entries != 0 {
            let (last_timestamp, last_offset) =
                index.time_entry(entries - 1).map_err(Problem::new)?;
            let (first_timestamp, _) = index.time_entry(0).map_err(Problem::new)?;
            if last_timestamp < first_timestamp {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     timestamp is {last_timestamp} which is less than the first timestamp \
                     {first_timestamp}",
                    file.absolute
                )));
            }
            if last_offset < index.base_offset {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     offset is {last_offset} which is less than the first offset {}",
                    file.absolute, index.base_offset
                )));
            }
        }
        if !index.len.is_multiple_of(TIME_INDEX_ENTRY_BYTES as u64) {
            return Err(Problem::new(format!(
                "Time index file {} is corrupt, found {} bytes which is neither positive nor a \
                 multiple of {TIME_INDEX_ENTRY_BYTES}",
                file.absolute, index.len
            )));
        }
        Ok(())
    }

    /// Checks one time index entry against the log, as Kafka's `dumpTimeIndex` does.
    pub(super) fn check_time_entry(
        &mut self,
        file: &JavaFile,
        probe: &LogProbe,
        start: u64,
        timestamp: i64,
        offset: i64,
        previous_timestamp: i64,
    ) -> Result<(), String> {
        if start > probe.len {
            return Err(format!("Slice from position {start} exceeds the end of the log"));
        }
        let mut position = start;
        let found = loop {
            match probe.entry_at(position, probe.len)? {
                None => break None,
                Some(entry) if entry.last_offset >= offset => break Some((position, entry)),
                Some(entry) => position += entry.size_bytes,
            }
        };
        let errors = &mut self.time_index_errors;
        match found {
            None => errors.shallow_offset_not_found.push(&file.absolute, (offset, -1)),
            Some((_, entry)) if entry.last_offset != offset => {
                errors.shallow_offset_not_found.push(&file.absolute, (offset, entry.last_offset));
            }
            Some((position, entry)) => {
                if entry.size_bytes > self.options.batch_bytes_max as u64 {
                    return Err(format!(
                        "batch of {} bytes at log position {position} is larger than the {} bytes \
                         read at once (raise --max-message-size)",
                        entry.size_bytes, self.options.batch_bytes_max
                    ));
                }
                let bytes = probe.read(position, entry.size_bytes)?;
                let log_entry = Entry::new(&bytes)?;
                let mut max_timestamp = -1i64;
                entry_records(&log_entry, self.options.limits, &mut |dump| {
                    max_timestamp = max_timestamp.max(dump.record.timestamp);
                    Ok(())
                })
                .map_err(|stop| match stop {
                    Stop::Problem(problem) => {
                        format!("log position {position}: {}", problem.message)
                    }
                    Stop::Output(error) => error.to_string(),
                })?;
                if max_timestamp != timestamp {
                    errors.mismatches.push(&file.absolute, (timestamp, max_timestamp));
                }
                if previous_timestamp >= timestamp {
                    errors.out_of_order.push(&file.absolute, (timestamp, previous_timestamp));
                }
            }
        }
        Ok(())
    }
}

impl Dumper<'_> {
    pub(super) fn dump_txn_index(&mut self, file: &JavaFile) -> Step {
        // Kafka's `offsetFromFile` parses the name first.
        file.base_offset()?;
        // A missing transaction index has no entries (Kafka opens it only if it exists).
        let handle = match StdFs.open(&file.path, OpenMode::Read) {
            Ok(handle) => handle,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(error) => return Err(Problem::io(file, &error).into()),
        };
        let len = handle.len().map_err(|error| Problem::io(file, &error))?;
        let mut position = 0u64;
        let mut bytes = [0u8; ABORTED_TXN_BYTES];
        while len - position >= ABORTED_TXN_BYTES as u64 {
            handle
                .read_exact_at(&mut bytes, position)
                .map_err(|error| Problem::io(file, &error))?;
            // Kafka reads the version as one byte.
            let version = bytes[0] as i8;
            if version > 0 {
                return Err(Problem::at(
                    position,
                    format!(
                        "Unexpected aborted transaction version {version} in transaction index {}, \
                         current version is 0",
                        file.absolute
                    ),
                )
                .into());
            }
            let mut current = bytes;
            current[0] = 0;
            let txn = AbortedTxn::decode(&current)
                .map_err(|error| Problem::at(position, error.to_string()))?;
            writeln!(
                self.out,
                "version: {version} producerId: {} firstOffset: {} lastOffset: {} lastStableOffset: {}",
                txn.producer_id, txn.first_offset, txn.last_offset, txn.last_stable_offset
            )?;
            position += ABORTED_TXN_BYTES as u64;
        }
        Ok(())
    }
}
