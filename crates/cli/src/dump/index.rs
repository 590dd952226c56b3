//! `.index`, `.timeindex` and `.txnindex` files: their entries, checked against the `.log` as
//! Kafka's `dumpIndex` and `dumpTimeIndex` do.

use std::io::{self, Write};
use std::path::PathBuf;

use seglog_format::batch::LAST_OFFSET_DELTA_OFFSET;
use seglog_format::index::{ABORTED_TXN_BYTES, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES};
use seglog_format::legacy::RECORD_OVERHEAD_V0;
use seglog_format::{AbortedTxn, OffsetIndexEntry, TimeIndexEntry};
use seglog_storage::index::{IndexEntry, IndexSlots};
use seglog_storage::io::{File, Fs, OpenMode, StdFs};
use seglog_storage::segment::{EntryFrame, Frame, HeaderScan};

use super::log::parse_entry;
use super::records::entry_records;
use super::{Dumper, JavaFile, Problem, Step, Stop};

/// An offset index slot as (absolute offset, position).
fn offset_slot(index: &IndexSlots<OffsetIndexEntry>, slot_idx: u64) -> Result<(i64, u32), String> {
    let entry = index.slot(slot_idx).map_err(|error| error.to_string())?;
    Ok((index.absolute(&entry), entry.position))
}

/// A time index slot as (timestamp, absolute offset).
fn time_slot(index: &IndexSlots<TimeIndexEntry>, slot_idx: u64) -> Result<(i64, i64), String> {
    let entry = index.slot(slot_idx).map_err(|error| error.to_string())?;
    Ok((entry.timestamp, index.absolute(&entry)))
}

/// Kafka's `OffsetIndex.lookup` on a read-only index: the position of the largest entry at or
/// below `target` (storage's warm-section search over every slot, zero-filled ones included,
/// as Kafka searches), or 0.
fn lookup_position(index: &IndexSlots<OffsetIndexEntry>, target: i64) -> Result<u32, String> {
    let base_offset = index.base_offset();
    let slot = index
        .largest_lower_bound(target, |entry| base_offset + i64::from(entry.relative_offset))
        .map_err(|error| error.to_string())?;
    match slot {
        None => Ok(0),
        Some(slot) => offset_slot(index, slot).map(|(_, position)| position),
    }
}

/// A segment's `.log`, read where an index points (Kafka's `FileRecords.slice` and its first
/// batch), through storage's [`HeaderScan`].
pub(super) struct LogProbe {
    pub(super) file: Box<dyn File>,
    pub(super) len: u64,
    pub(super) path: PathBuf,
}

/// A position as the `u32` a scan takes (`open_records` refused files above 2 GiB - 1).
fn scan_position(position: u64) -> u32 {
    u32::try_from(position).unwrap_or(u32::MAX)
}

impl LogProbe {
    /// The entry framed next by `scan`, with its last offset; `Ok(None)` where Kafka's stream
    /// ends; `Err` where Kafka throws.
    fn next(&self, scan: &mut HeaderScan<'_>) -> Result<Option<(EntryFrame, i64)>, String> {
        match scan.next_frame(&self.path).map_err(|error| error.to_string())? {
            Frame::End => Ok(None),
            Frame::TooSmall { size, .. } => Err(format!(
                "Found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})"
            )),
            Frame::Entry(frame) => Ok(Some((frame, self.last_offset(&frame)?))),
        }
    }

    /// Kafka's `lastOffset` of a framed entry: a legacy message's offset, or a v2 batch's base
    /// offset plus its `lastOffsetDelta`, read from the file (past the slice if need be, as
    /// Kafka's `loadBatchHeader` does).
    fn last_offset(&self, frame: &EntryFrame) -> Result<i64, String> {
        if frame.magic < 2 {
            return Ok(frame.base_offset);
        }
        let mut delta = [0u8; 4];
        let at = u64::from(frame.position) + LAST_OFFSET_DELTA_OFFSET as u64;
        match self.file.read_exact_at(&mut delta, at) {
            Ok(()) => Ok(frame.base_offset.wrapping_add(i64::from(i32::from_be_bytes(delta)))),
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => {
                Err("Failed to read `record batch header` from file channel: end of file"
                    .to_owned())
            }
            Err(error) => Err(error.to_string()),
        }
    }

    /// The last offset of the entry at `position`, if it lies whole before `end`.
    pub(super) fn last_offset_at(&self, position: u64, end: u64) -> Result<Option<i64>, String> {
        let mut scan =
            HeaderScan::new(self.file.as_ref(), scan_position(position), scan_position(end));
        Ok(self.next(&mut scan)?.map(|(_, last_offset)| last_offset))
    }
}

impl Dumper<'_> {
    pub(super) fn open_index<E: IndexEntry>(
        file: &JavaFile,
        base_offset: i64,
    ) -> Result<IndexSlots<E>, Problem> {
        let handle = Self::open(file)?;
        IndexSlots::new(handle, base_offset).map_err(|error| Problem::io(file, &error))
    }

    pub(super) fn dump_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let log_file = file.sibling(".log");
        let (log, log_len) = Self::open_records(&log_file)?;
        let index = Self::open_index::<OffsetIndexEntry>(file, base_offset)?;
        let entries = index.n_slots();
        if entries == 0 {
            writeln!(self.out, "{} is empty.", file.shown)?;
            return Ok(());
        }
        if self.options.index_sanity_only {
            let (last_offset, _) = offset_slot(&index, entries - 1).map_err(Problem::new)?;
            if last_offset < base_offset {
                return Err(Problem::new(format!(
                    "Corrupt index found, index file {} has non-zero size but the last offset is \
                     {last_offset} which is less than the base offset {base_offset}",
                    file.absolute
                ))
                .into());
            }
            if !index.len_bytes().is_multiple_of(OFFSET_INDEX_ENTRY_BYTES as u64) {
                return Err(Problem::new(format!(
                    "Index file {} is corrupt, found {} bytes which is neither positive nor a \
                     multiple of {OFFSET_INDEX_ENTRY_BYTES}",
                    file.absolute,
                    index.len_bytes()
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
        let probe = LogProbe { file: log, len: log_len, path: log_file.path.clone() };
        for entry_idx in 0..entries {
            let at = entry_idx * OFFSET_INDEX_ENTRY_BYTES as u64;
            let (offset, position) =
                offset_slot(&index, entry_idx).map_err(|message| Problem::at(at, message))?;
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
                .last_offset_at(position, end)
                .map_err(|message| Problem::at(at, format!("{message} (log position {position})")))?
                .ok_or_else(|| {
                    Problem::at(
                        at,
                        format!("java.util.NoSuchElementException: no whole batch at log position {position} within --max-message-size"),
                    )
                })?;
            if first != offset {
                self.index_mismatches.push(&file.absolute, (offset, first));
            }
            if !self.options.verify_only {
                writeln!(self.out, "offset: {offset} position: {position}")?;
            }
        }
        Ok(())
    }

    pub(super) fn dump_time_index(&mut self, file: &JavaFile) -> Step {
        let base_offset = file.base_offset()?;
        let log_file = file.sibling(".log");
        let (log, log_len) = Self::open_records(&log_file)?;
        let offset_index =
            Self::open_index::<OffsetIndexEntry>(&file.sibling(".index"), base_offset)?;
        let time_index = Self::open_index::<TimeIndexEntry>(file, base_offset)?;
        let entries = time_index.n_slots();
        if self.options.index_sanity_only {
            Self::time_index_sanity_check(file, &time_index)?;
            writeln!(self.out, "{} passed sanity check.", file.shown)?;
            return Ok(());
        }
        let probe = LogProbe { file: log, len: log_len, path: log_file.path.clone() };
        let mut previous_timestamp = -1i64;
        for entry_idx in 0..entries {
            let at = entry_idx * TIME_INDEX_ENTRY_BYTES as u64;
            let (timestamp, offset) =
                time_slot(&time_index, entry_idx).map_err(|message| Problem::at(at, message))?;
            if offset == base_offset && entry_idx > 0 {
                return Ok(());
            }
            let position = lookup_position(&offset_index, offset)
                .map_err(|message| Problem::at(at, message))?;
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
        index: &IndexSlots<TimeIndexEntry>,
    ) -> Result<(), Problem> {
        let entries = index.n_slots();
        if entries != 0 {
            let (last_timestamp, last_offset) =
                time_slot(index, entries - 1).map_err(Problem::new)?;
            let (first_timestamp, _) = time_slot(index, 0).map_err(Problem::new)?;
            if last_timestamp < first_timestamp {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     timestamp is {last_timestamp} which is less than the first timestamp \
                     {first_timestamp}",
                    file.absolute
                )));
            }
            if last_offset < index.base_offset() {
                return Err(Problem::new(format!(
                    "Corrupt time index found, time index file ({}) has non-zero size but the last \
                     offset is {last_offset} which is less than the first offset {}",
                    file.absolute,
                    index.base_offset()
                )));
            }
        }
        if !index.len_bytes().is_multiple_of(TIME_INDEX_ENTRY_BYTES as u64) {
            return Err(Problem::new(format!(
                "Time index file {} is corrupt, found {} bytes which is neither positive nor a \
                 multiple of {TIME_INDEX_ENTRY_BYTES}",
                file.absolute,
                index.len_bytes()
            )));
        }
        Ok(())
    }

    /// Checks one time index entry against the log, as Kafka's `dumpTimeIndex` does: the first
    /// batch from `start` whose last offset reaches `offset` must end at it, and its largest
    /// record timestamp must be the entry's.
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
        let mut scan =
            HeaderScan::new(probe.file.as_ref(), scan_position(start), scan_position(probe.len));
        let found = loop {
            match probe.next(&mut scan)? {
                None => break None,
                Some((frame, last_offset)) if last_offset >= offset => {
                    break Some((frame, last_offset));
                }
                Some(_) => {}
            }
        };
        let errors = &mut self.time_index_errors;
        let frame = match found {
            None => {
                errors.shallow_offset_not_found.push(&file.absolute, (offset, -1));
                return Ok(());
            }
            Some((_, last_offset)) if last_offset != offset => {
                errors.shallow_offset_not_found.push(&file.absolute, (offset, last_offset));
                return Ok(());
            }
            Some((frame, _)) => frame,
        };
        let position = frame.position;
        if frame.size_bytes as usize > self.options.batch_bytes_max {
            return Err(format!(
                "batch of {} bytes at log position {position} is larger than the {} bytes read at \
                 once (raise --max-message-size)",
                frame.size_bytes, self.options.batch_bytes_max
            ));
        }
        let bytes = scan.entry_bytes(frame, &probe.path).map_err(|error| error.to_string())?;
        let mut max_timestamp = -1i64;
        entry_records(&parse_entry(bytes)?, self.options.limits, &mut |dump| {
            max_timestamp = max_timestamp.max(dump.record.timestamp);
            Ok(())
        })
        .map_err(|stop| match stop {
            Stop::Problem(problem) => format!("log position {position}: {}", problem.message),
            Stop::Output(error) => error.to_string(),
        })?;
        if max_timestamp != timestamp {
            errors.mismatches.push(&file.absolute, (timestamp, max_timestamp));
        }
        if previous_timestamp >= timestamp {
            errors.out_of_order.push(&file.absolute, (timestamp, previous_timestamp));
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
