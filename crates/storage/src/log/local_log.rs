//! The segments of one partition directory and its local offsets (Kafka's `LocalLog`): append to
//! the active segment, roll, read across segments, truncate, flush, and delete segments by first
//! renaming them `.deleted` and removing the files after `file.delete.delay.ms`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{AbortedTxn, FileKind};

use super::segments::LogSegments;
use crate::error::{Error, Result};
use crate::io::{Fs, OpenMode};
use crate::segment::{
    FetchData, FileSlice, LogOffsetMetadata, LogSegment, SegmentConfig, SegmentSync, segment_path,
};

/// The suffix of files scheduled for deletion.
pub const DELETED_SUFFIX: &str = ".deleted";
/// The suffix of the log cleaner's output while it is written (Kafka's `CleanedFileSuffix`).
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// The suffix of a cleaned segment that is being swapped in (Kafka's `SwapFileSuffix`).
pub const SWAP_SUFFIX: &str = ".swap";

/// Whether the batches of `fetch` hold at least one record (an empty v2 batch holds none; a v0/v1
/// entry always holds one). Undecodable bytes count as records: the client is to see them.
fn holds_a_record(fetch: &FetchData) -> bool {
    seglog_format::Batches::new(&fetch.records).any(|batch| {
        batch.map_or(true, |positioned| positioned.batch.records_count().is_none_or(|n| n > 0))
    })
}

/// The length of the whole batches at the start of `records` (a batch cut short ends them).
fn whole_batches_len(records: &[u8]) -> usize {
    let mut batches = seglog_format::Batches::new(records);
    for batch in batches.by_ref() {
        if batch.is_err() {
            return 0;
        }
    }
    usize::try_from(batches.next_position()).unwrap_or(0)
}

/// How far into `segment` a read bounded by `max_offset_metadata` may go: all of a segment
/// below the bound's, up to the bound in its own, nothing past it.
fn max_position_in(segment: &LogSegment, max_offset_metadata: LogOffsetMetadata) -> Option<u32> {
    match segment.base_offset().cmp(&max_offset_metadata.segment_base_offset) {
        std::cmp::Ordering::Less => Some(segment.size_bytes()),
        std::cmp::Ordering::Equal => Some(max_offset_metadata.relative_position),
        std::cmp::Ordering::Greater => None,
    }
}

/// A read's records: in memory, or left in a segment's file to be sent from there (Kafka's
/// `FetchDataInfo` over `MemoryRecords` or a `FileRecords` slice).
#[derive(Debug, Clone)]
pub enum FetchedRecords {
    /// Read into memory, as [`LocalLog::read`] returns them.
    Memory(FetchData),
    /// Whole batches of one segment, starting with one that holds a record, not read.
    File {
        /// Where the read starts.
        metadata: LogOffsetMetadata,
        /// The bytes.
        slice: FileSlice,
        /// An offset at or past the last of the slice's batches, below every offset after
        /// them: what a read_committed read collects aborted transactions below.
        upper_bound_offset: i64,
    },
}

/// Settings of a local log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLogConfig {
    /// Settings for every segment.
    pub segment: SegmentConfig,
    /// `file.delete.delay.ms`: how long `.deleted` files stay before removal.
    pub file_delete_delay_ms: i64,
    /// `min(segment.jitter.ms, segment.ms)`: each new segment's roll jitter is drawn below it
    /// (0: no jitter).
    pub segment_jitter_bound_ms: i64,
}

impl Default for LocalLogConfig {
    fn default() -> Self {
        Self {
            segment: SegmentConfig::default(),
            file_delete_delay_ms: 60_000,
            segment_jitter_bound_ms: 0,
        }
    }
}

/// The fsyncs of one flush, taken under the log's lock and run outside it.
#[derive(Debug)]
pub struct FlushPlan {
    segments: Vec<SegmentSync>,
    /// Other files of the directory, fsynced after the segments (producer snapshots).
    files: Vec<PathBuf>,
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    /// Entries were created in the directory since its last fsync.
    sync_dir: bool,
    offset: i64,
}

impl FlushPlan {
    /// The offset the recovery point moves to once this plan has run.
    pub fn offset(&self) -> i64 {
        self.offset
    }

    /// Adds files written into the partition directory without an fsync (a roll's producer
    /// snapshot), to be fsynced after the segments, and then the directory. They are opened by
    /// name when the plan runs (so no handle is held meanwhile); one deleted by then is skipped.
    pub fn sync_files_too(&mut self, files: Vec<PathBuf>) {
        if !files.is_empty() {
            self.files.extend(files);
            self.sync_dir = true;
        }
    }

    /// The slow part: fsyncs every segment (data before indexes), the other files, then the
    /// directory.
    pub fn execute(&self) -> Result<()> {
        for segment in &self.segments {
            segment.sync()?;
        }
        for path in &self.files {
            let file = match self.fs.open(path, OpenMode::ReadWrite) {
                Ok(file) => file,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(Error::io("open", path, error)),
            };
            file.sync_data().map_err(|e| Error::io("fsync", path, e))?;
        }
        if self.sync_dir {
            self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))?;
        }
        Ok(())
    }
}

/// Files renamed `.deleted`, to be removed at `due_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PendingDelete {
    due_ms: i64,
    files: Vec<PathBuf>,
    /// The segment's base offset and `.log` bytes when it was retired (what the console draws).
    base_offset: i64,
    size_bytes: u32,
}

/// The local part of a partition log (Kafka's `LocalLog`).
#[derive(Debug)]
pub struct LocalLog {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    config: LocalLogConfig,
    segments: LogSegments,
    recovery_point: i64,
    next_offset_metadata: LogOffsetMetadata,
    /// A segment was created since the directory was last fsynced.
    dir_needs_sync: bool,
    last_flush_ms: i64,
    pending_deletes: Vec<PendingDelete>,
}

fn metadata_at_end(segment: &LogSegment, log_end_offset: i64) -> LogOffsetMetadata {
    LogOffsetMetadata {
        message_offset: log_end_offset,
        segment_base_offset: segment.base_offset(),
        relative_position: segment.size_bytes(),
    }
}

impl LocalLogConfig {
    /// The settings of the segment at `base_offset` in `dir`, with its own roll jitter (Kafka
    /// draws it at random once per segment; here it is a hash of the segment's identity, so a
    /// simulation stays deterministic).
    pub fn segment_config(&self, dir: &Path, base_offset: i64) -> SegmentConfig {
        if self.segment_jitter_bound_ms <= 0 {
            return self.segment;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in dir.to_string_lossy().bytes().chain(base_offset.to_be_bytes()) {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        let roll_jitter_ms = (hash % self.segment_jitter_bound_ms.unsigned_abs()) as i64;
        SegmentConfig { roll_jitter_ms, ..self.segment }
    }
}

impl LocalLog {
    /// A local log over already loaded `segments` (at least one), whose log end offset is
    /// `log_end_offset`.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: LocalLogConfig,
        segments: LogSegments,
        recovery_point: i64,
        log_end_offset: i64,
        now_ms: i64,
    ) -> Result<Self> {
        let active = segments.active_segment().ok_or_else(|| {
            Error::InvalidArgument(format!("a log needs at least one segment: {}", dir.display()))
        })?;
        let next_offset_metadata = metadata_at_end(active, log_end_offset);
        Ok(Self {
            fs,
            dir: dir.to_owned(),
            config,
            segments,
            recovery_point: recovery_point.min(log_end_offset),
            next_offset_metadata,
            dir_needs_sync: false,
            last_flush_ms: now_ms,
            pending_deletes: Vec::new(),
        })
    }

    /// A new, empty log starting at `start_offset` in the existing directory `dir`. The new
    /// segment file is made durable (the directory is fsynced).
    pub fn create(
        fs: Arc<dyn Fs>,
        dir: &Path,
        config: LocalLogConfig,
        start_offset: i64,
        now_ms: i64,
    ) -> Result<Self> {
        // Every segment draws its roll jitter, the first included (Kafka's
        // `randomSegmentJitter` for each `LogSegment`): else partitions created together
        // all roll together the first time, whatever `segment.jitter.ms` says.
        let segment_config = config.segment_config(dir, start_offset);
        let segment = LogSegment::create(fs.clone(), dir, start_offset, segment_config, now_ms)?;
        fs.sync_dir(dir).map_err(|e| Error::io("fsync dir", dir, e))?;
        let mut segments = LogSegments::new();
        segments.add(segment);
        Self::new(fs, dir, config, segments, start_offset, start_offset, now_ms)
    }

    /// The file system the log is on.
    pub fn fs(&self) -> Arc<dyn Fs> {
        Arc::clone(&self.fs)
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The settings.
    pub fn config(&self) -> &LocalLogConfig {
        &self.config
    }

    /// Replaces the settings; new segments use them.
    pub fn set_config(&mut self, config: LocalLogConfig) {
        self.config = config;
    }

    /// The segments.
    pub fn segments(&self) -> &LogSegments {
        &self.segments
    }

    fn active(&self) -> &LogSegment {
        // Invariant: a local log always has a segment (`new` checks it; nothing removes the last).
        self.segments.active_segment().unwrap_or_else(|| unreachable!("a local log has no segment"))
    }

    fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .active_segment_mut()
            .unwrap_or_else(|| unreachable!("a local log has no segment"))
    }

    /// The active segment.
    pub fn active_segment(&self) -> &LogSegment {
        self.active()
    }

    /// The offset of the next record appended (the log end offset).
    pub fn log_end_offset(&self) -> i64 {
        self.next_offset_metadata.message_offset
    }

    /// Where the log end offset is.
    pub fn next_offset_metadata(&self) -> LogOffsetMetadata {
        self.next_offset_metadata
    }

    /// The first offset not known to be flushed.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    /// When the log was last flushed.
    pub fn last_flush_ms(&self) -> i64 {
        self.last_flush_ms
    }

    fn update_log_end_offset(&mut self, log_end_offset: i64) {
        self.next_offset_metadata = metadata_at_end(self.active(), log_end_offset);
        self.recovery_point = self.recovery_point.min(log_end_offset);
    }

    /// Appends validated `records` to the active segment and advances the log end offset.
    pub fn append(
        &mut self,
        last_offset: i64,
        max_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        records: &[u8],
    ) -> Result<()> {
        self.append_parts(last_offset, max_timestamp, shallow_offset_of_max_timestamp, &[records])
    }

    /// [`LocalLog::append`] of the concatenation of `parts`, with one vectored write.
    pub fn append_parts(
        &mut self,
        last_offset: i64,
        max_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        parts: &[&[u8]],
    ) -> Result<()> {
        self.active_mut().append_parts(
            last_offset,
            max_timestamp,
            shallow_offset_of_max_timestamp,
            parts,
        )?;
        self.update_log_end_offset(last_offset + 1);
        Ok(())
    }

    /// Records an aborted transaction whose marker was just appended, in the active segment's
    /// `.txnindex` (Kafka's `LogSegment.updateTxnIndex`).
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> Result<()> {
        self.active_mut().append_aborted_txn(txn)
    }

    /// Records an aborted transaction in the `.txnindex` of the segment holding its marker,
    /// unless that index already has it or a later one (the recovery of a segment rebuilds its
    /// index this way). Returns whether it was added.
    pub fn restore_aborted_txn(&mut self, txn: AbortedTxn) -> Result<bool> {
        let Some(base) = self.segments.floor_segment(txn.last_offset).map(LogSegment::base_offset)
        else {
            return Ok(false);
        };
        let Some(segment) = self.segments.get_mut(base) else { return Ok(false) };
        let indexed = segment
            .txn_index()
            .all_aborted_txns()
            .last()
            .is_some_and(|last| last.last_offset >= txn.last_offset);
        if indexed {
            return Ok(false);
        }
        segment.append_aborted_txn(txn)?;
        Ok(true)
    }

    /// Rolls to a new active segment at `max(expected_next_offset, log end offset)` (Kafka's
    /// `LocalLog.roll`). Returns the new segment's base offset.
    pub fn roll(&mut self, expected_next_offset: Option<i64>, now_ms: i64) -> Result<i64> {
        let log_end_offset = self.log_end_offset();
        let new_base = expected_next_offset.unwrap_or(0).max(log_end_offset);
        let active_base = self.active().base_offset();
        if self.segments.contains(new_base) {
            if new_base == active_base && self.active().size_bytes() == 0 {
                // An empty active segment at the same offset is replaced by a fresh one.
                let old = self.segments.remove(new_base).unwrap_or_else(|| unreachable!("checked"));
                old.delete()?;
            } else {
                return Err(Error::InvalidArgument(format!(
                    "trying to roll a new log segment with start offset {new_base} =max(provided offset = {expected_next_offset:?}, LEO = {log_end_offset}) while it already exists in {}",
                    self.dir.display()
                )));
            }
        } else if new_base < active_base {
            return Err(Error::InvalidArgument(format!(
                "trying to roll a new log segment for {} with start offset {new_base} lower than start offset of the active segment {active_base}",
                self.dir.display()
            )));
        } else {
            self.active_mut().on_become_inactive()?;
        }
        for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex] {
            let stray = segment_path(&self.dir, new_base, kind);
            if self.fs.exists(&stray).map_err(|e| Error::io("stat", &stray, e))? {
                self.fs.remove(&stray).map_err(|e| Error::io("remove stray file", &stray, e))?;
            }
        }
        let segment = LogSegment::create(
            self.fs.clone(),
            &self.dir,
            new_base,
            self.config.segment_config(&self.dir, new_base),
            now_ms,
        )?;
        self.segments.add(segment);
        self.dir_needs_sync = true;
        self.update_log_end_offset(log_end_offset);
        Ok(new_base)
    }

    /// Fsyncs every segment holding offsets in `[recovery point, offset)` (and the directory when
    /// segments were created since its last fsync), then moves the recovery point to `offset`
    /// (Kafka's `LocalLog.flush`). A caller holding a lock should instead use
    /// [`LocalLog::prepare_flush`], fsync outside the lock, and finish with
    /// [`LocalLog::complete_flush`].
    pub fn flush(&mut self, offset: i64, now_ms: i64) -> Result<()> {
        let plan = self.prepare_flush(offset)?;
        plan.execute()?;
        self.complete_flush(&plan, now_ms);
        Ok(())
    }

    /// The first phase of a flush: pending index entries written, file handles collected. Cheap.
    pub fn prepare_flush(&mut self, offset: i64) -> Result<FlushPlan> {
        let offset = offset.min(self.log_end_offset());
        let from = self.recovery_point;
        let mut bases: Vec<i64> =
            self.segments.values(from, offset.max(from))?.iter().map(|s| s.base_offset()).collect();
        // `values` stops before the active segment's base; include it when the flush reaches it.
        let active_base = self.active().base_offset();
        if offset > active_base && !bases.contains(&active_base) {
            bases.push(active_base);
        }
        let mut segments = Vec::with_capacity(bases.len());
        for base in bases {
            if let Some(segment) = self.segments.get_mut(base) {
                segments.push(segment.prepare_sync()?);
            }
        }
        let sync_dir = std::mem::take(&mut self.dir_needs_sync);
        Ok(FlushPlan {
            segments,
            files: Vec::new(),
            fs: Arc::clone(&self.fs),
            dir: self.dir.clone(),
            sync_dir,
            offset,
        })
    }

    /// The last phase of a flush: the recovery point moves (never backwards).
    pub fn complete_flush(&mut self, plan: &FlushPlan, now_ms: i64) {
        if plan.offset > self.recovery_point {
            self.recovery_point = plan.offset.min(self.log_end_offset());
        }
        self.last_flush_ms = now_ms;
    }

    /// Reads whole batches from `start_offset`, never at or past `max_offset_metadata` (Kafka's
    /// `LocalLog.read`).
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u32,
        min_one_message: bool,
        max_offset_metadata: LogOffsetMetadata,
    ) -> Result<FetchData> {
        let log_end_offset = self.log_end_offset();
        let first = self.segments.first_segment().map_or(log_end_offset, LogSegment::base_offset);
        let out_of_range = || Error::OffsetOutOfRange {
            requested: start_offset,
            log_start: first,
            log_end: log_end_offset,
        };
        if start_offset > log_end_offset {
            return Err(out_of_range());
        }
        let Some(floor) = self.segments.floor_segment(start_offset) else {
            return Err(out_of_range());
        };
        let empty = |metadata| FetchData {
            metadata,
            position: 0,
            records: Vec::new(),
            first_entry_incomplete: false,
        };
        if start_offset == max_offset_metadata.message_offset {
            return Ok(empty(max_offset_metadata));
        }
        if start_offset > max_offset_metadata.message_offset {
            let position =
                floor.translate_offset(start_offset, 0)?.map_or(floor.size_bytes(), |p| p.position);
            return Ok(empty(LogOffsetMetadata {
                message_offset: start_offset,
                segment_base_offset: floor.base_offset(),
                relative_position: position,
            }));
        }
        let floor_base = floor.base_offset();
        // What was read so far, when it held batches but no record (a compacted segment may
        // keep only an idempotent producer's empty batch): the read goes on into the next
        // segments, within `max_bytes`, so that a fetch is never all empty batches while records
        // follow. Kafka's read stops at the first segment with data, and older librdkafka
        // (2.0, Debian's kcat) then grows its fetch size at every such answer until it gives up
        // ("might be too large to fetch").
        let mut pending: Option<FetchData> = None;
        for segment in std::iter::once(floor).chain(self.segments.higher_segments(floor_base)) {
            let max_position = max_position_in(segment, max_offset_metadata);
            let (offset, budget, min_one) = match &pending {
                None => (start_offset, max_bytes, min_one_message),
                Some(so_far) => (
                    segment.base_offset(),
                    max_bytes.saturating_sub(so_far.records.len() as u32),
                    false,
                ),
            };
            if pending.is_some() && (budget == 0 || max_position.is_none()) {
                break;
            }
            let Some(fetch) = segment.read(offset, budget, max_position, min_one)? else {
                continue;
            };
            let fetch = match pending.take() {
                None => fetch,
                Some(mut so_far) => {
                    // Only whole batches are added; one cut by the byte limit ends the read.
                    let whole = whole_batches_len(&fetch.records);
                    so_far.records.extend_from_slice(&fetch.records[..whole]);
                    if whole < fetch.records.len() || fetch.first_entry_incomplete {
                        return Ok(so_far);
                    }
                    so_far
                }
            };
            // Cheapest first: the usual read holds a record in its first batch, and only a read
            // of empty batches alone pays for the walk to its end.
            if fetch.records.is_empty()
                || fetch.first_entry_incomplete
                || holds_a_record(&fetch)
                || whole_batches_len(&fetch.records) < fetch.records.len()
            {
                return Ok(fetch);
            }
            pending = Some(fetch);
        }
        Ok(pending.unwrap_or_else(|| empty(self.next_offset_metadata)))
    }

    /// [`read`](Self::read), answered where it can be without reading the records: a read
    /// that starts in a segment with a batch holding a record (the usual read) is that
    /// segment's range of its file; any other (empty, a cut first batch, empty batches to read
    /// past) is read into memory by `read`. The bytes either way are the same.
    pub fn read_file_slice(
        &self,
        start_offset: i64,
        max_bytes: u32,
        min_one_message: bool,
        max_offset_metadata: LogOffsetMetadata,
    ) -> Result<FetchedRecords> {
        let in_memory = || {
            self.read(start_offset, max_bytes, min_one_message, max_offset_metadata)
                .map(FetchedRecords::Memory)
        };
        if start_offset >= max_offset_metadata.message_offset
            || start_offset > self.log_end_offset()
        {
            return in_memory();
        }
        let Some(floor) = self.segments.floor_segment(start_offset) else { return in_memory() };
        let Some(max_position) = max_position_in(floor, max_offset_metadata) else {
            return in_memory();
        };
        let Some((metadata, slice, first_entry_incomplete)) =
            floor.read_slice(start_offset, max_bytes, Some(max_position), min_one_message)?
        else {
            return in_memory();
        };
        if slice.is_empty()
            || first_entry_incomplete
            || !floor.batch_holds_a_record(metadata.relative_position)?
        {
            return in_memory();
        }
        let end = slice.position() + slice.len() as u64;
        let next_segment_base = || {
            self.segments
                .higher_segment(floor.base_offset())
                .map_or(self.log_end_offset(), LogSegment::base_offset)
        };
        let upper_bound_offset = if end == u64::from(max_position)
            && floor.base_offset() == max_offset_metadata.segment_base_offset
        {
            max_offset_metadata.message_offset
        } else if end >= u64::from(floor.size_bytes()) {
            next_segment_base()
        } else {
            // Cut by the byte limit: Kafka's bound, the first indexed offset at or past the
            // slice's end.
            let len = u32::try_from(slice.len()).unwrap_or(u32::MAX);
            floor
                .offset_index()
                .fetch_upper_bound_offset(metadata.relative_position, len)?
                .map_or_else(next_segment_base, |entry| entry.offset)
        };
        Ok(FetchedRecords::File { metadata, slice, upper_bound_offset })
    }

    /// Renames a removed segment's files `.deleted` and queues them for removal at `due_ms`.
    fn retire(&mut self, mut segment: LogSegment, due_ms: i64) -> Result<()> {
        let base = segment.base_offset();
        let size_bytes = segment.size_bytes();
        segment.change_file_suffixes("", DELETED_SUFFIX)?;
        let files = [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex]
            .iter()
            .map(|kind| {
                PathBuf::from(format!(
                    "{}{DELETED_SUFFIX}",
                    segment_path(&self.dir, base, *kind).display()
                ))
            })
            .collect();
        self.pending_deletes.push(PendingDelete { due_ms, files, base_offset: base, size_bytes });
        Ok(())
    }

    /// Removes the segments at `base_offsets` from the log: their files are renamed `.deleted`
    /// at once and removed after `file.delete.delay.ms` (or now, with `delay = false`). The
    /// active segment cannot be removed this way.
    pub fn remove_and_delete_segments(
        &mut self,
        base_offsets: &[i64],
        delay: bool,
        now_ms: i64,
    ) -> Result<()> {
        let active_base = self.active().base_offset();
        let mut renamed_unsynced = false;
        for &base in base_offsets {
            if base == active_base {
                return Err(Error::InvalidArgument(format!(
                    "cannot delete the active segment {base} of {}",
                    self.dir.display()
                )));
            }
            let Some(segment) = self.segments.remove(base) else { continue };
            // Each segment's renames are durable before the next one's start: unsynced renames
            // survive a crash in any combination, and were an older deleted segment to come back
            // while a newer one stayed deleted, the log would have a hole in it. The last
            // one's need no fsync (Kafka syncs none): a crash before they reach the disk brings
            // back a whole segment below the log start, which the next retention pass deletes
            // again. A directory fsync waits behind every flush of the file system's journal,
            // and this runs under the log's lock.
            if renamed_unsynced {
                self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))?;
            }
            let due_ms = if delay { now_ms + self.config.file_delete_delay_ms } else { now_ms };
            self.retire(segment, due_ms)?;
            renamed_unsynced = true;
        }
        if !delay {
            self.delete_expired(now_ms)?;
        }
        Ok(())
    }

    /// Swaps `cleaned`, a flushed segment whose files end in `.cleaned`, in for the segments at
    /// `old_bases` (Kafka's `LocalLog.replaceSegments`), with the directory fsynced after each
    /// of three steps so that a crash at any point loads as either the old segments or the new
    /// one (`load` completes or drops a swap):
    /// 1. `.cleaned` becomes `.swap` (from here on, a load completes the swap);
    /// 2. the old segments are renamed `.deleted`, removed after `file.delete.delay.ms`;
    /// 3. `.swap` becomes the live name.
    ///
    /// An error leaves the in-memory map part-way; the caller poisons the log, and the next
    /// load finishes or undoes the swap from the files.
    pub fn replace_segments(
        &mut self,
        mut cleaned: LogSegment,
        old_bases: &[i64],
        now_ms: i64,
    ) -> Result<()> {
        let active_base = self.active().base_offset();
        if old_bases.contains(&active_base) {
            return Err(Error::InvalidArgument(format!(
                "cannot replace the active segment {active_base} of {}",
                self.dir.display()
            )));
        }
        cleaned.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)?;
        self.sync_dir()?;
        let due_ms = now_ms + self.config.file_delete_delay_ms;
        for base in old_bases {
            if let Some(segment) = self.segments.remove(*base) {
                self.retire(segment, due_ms)?;
            }
        }
        self.sync_dir()?;
        cleaned.change_file_suffixes(SWAP_SUFFIX, "")?;
        self.sync_dir()?;
        self.segments.add(cleaned);
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))
    }

    /// Removes `.deleted` files whose delay has passed; returns how many segments went.
    pub fn delete_expired(&mut self, now_ms: i64) -> Result<usize> {
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending_deletes)
            .into_iter()
            .partition(|pending| pending.due_ms <= now_ms);
        self.pending_deletes = waiting;
        for pending in &due {
            for file in &pending.files {
                match self.fs.remove(file) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(Error::io("delete segment file", file, error)),
                }
            }
        }
        Ok(due.len())
    }

    /// Segments waiting for their files to be removed.
    pub fn n_pending_deletes(&self) -> usize {
        self.pending_deletes.len()
    }

    /// The base offset and `.log` bytes of each segment renamed `.deleted` and not yet removed.
    pub fn pending_deletes(&self) -> Vec<(i64, u32)> {
        self.pending_deletes.iter().map(|p| (p.base_offset, p.size_bytes)).collect()
    }

    /// Removes every batch holding an offset >= `target` (Kafka's `LocalLog.truncateTo`);
    /// segments entirely above it are deleted. Returns the removed segments' count.
    pub fn truncate_to(&mut self, target: i64, now_ms: i64) -> Result<usize> {
        let above: Vec<i64> =
            self.segments.higher_segments(target).map(LogSegment::base_offset).collect();
        let keep = self.segments.floor_segment(target).map(LogSegment::base_offset);
        let Some(keep) = keep else {
            return Err(Error::InvalidArgument(format!(
                "cannot truncate {} to {target}: below its first segment",
                self.dir.display()
            )));
        };
        // Remove the higher segments, newest first, so the kept one becomes active. Truncation
        // is durable on return: the renames must survive a crash, or the truncated segments
        // would come back; and each segment's are durable before the next one's start, since
        // unsynced renames survive in any combination and a newer segment coming back while an
        // older one stayed deleted would leave a hole.
        for base in above.iter().rev() {
            if let Some(segment) = self.segments.remove(*base) {
                self.retire(segment, now_ms + self.config.file_delete_delay_ms)?;
                self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))?;
            }
        }
        let segment =
            self.segments.get_mut(keep).unwrap_or_else(|| unreachable!("floor segment exists"));
        segment.truncate_to(target, now_ms)?;
        segment.resize_indexes_to_max()?;
        // Truncation removes whole batches. Kafka sets the log end offset to the target even when
        // that cuts a batch (its callers truncate at boundaries); seglog never claims offsets
        // whose records are gone, so a cut batch brings the end down to its start.
        let next_offset = segment.read_next_offset()?;
        self.update_log_end_offset(next_offset.min(target));
        Ok(above.len())
    }

    /// Deletes every segment and starts again, empty, at `new_offset` (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, new_offset: i64, now_ms: i64) -> Result<()> {
        for segment in self.segments.clear() {
            self.retire(segment, now_ms + self.config.file_delete_delay_ms)?;
        }
        let segment = LogSegment::create(
            self.fs.clone(),
            &self.dir,
            new_offset,
            self.config.segment_config(&self.dir, new_offset),
            now_ms,
        )?;
        self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))?;
        self.segments.add(segment);
        self.recovery_point = new_offset;
        self.next_offset_metadata = metadata_at_end(self.active(), new_offset);
        Ok(())
    }

    /// Closes every segment: final time index entries, trimmed files, fsync.
    pub fn close(&mut self) -> Result<()> {
        for segment in self.segments.iter_mut() {
            segment.close()?;
        }
        if self.dir_needs_sync {
            self.fs.sync_dir(&self.dir).map_err(|e| Error::io("fsync dir", &self.dir, e))?;
            self.dir_needs_sync = false;
        }
        self.recovery_point = self.log_end_offset();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use seglog_format::{Compression, RecordBatch, RecordBatchBuilder};

    use super::*;
    use crate::io::SimFs;

    fn dir() -> PathBuf {
        PathBuf::from("/logs/t-0")
    }

    fn log(fs: &SimFs) -> LocalLog {
        fs.create_dir_all(&dir()).unwrap();
        // Creating a partition directory makes the chain durable (the log manager's job).
        for ancestor in dir().ancestors() {
            fs.sync_dir(ancestor).unwrap();
        }
        let config = LocalLogConfig {
            segment: SegmentConfig { index_bytes_max: 1024, ..SegmentConfig::default() },
            file_delete_delay_ms: 1000,
            segment_jitter_bound_ms: 0,
        };
        LocalLog::create(Arc::new(fs.clone()), &dir(), config, 0, 0).unwrap()
    }

    fn append(log: &mut LocalLog, n_records: i64) -> Vec<u8> {
        let base = log.log_end_offset();
        let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(base);
        for offset in base..base + n_records {
            builder.append(offset, offset, None, Some(b"value"), &[]).unwrap();
        }
        let bytes = builder.build().unwrap();
        let batch = RecordBatch::new(&bytes).unwrap();
        log.append(batch.last_offset(), batch.max_timestamp(), batch.last_offset(), &bytes)
            .unwrap();
        bytes
    }

    fn read_all(log: &LocalLog, from: i64) -> Vec<u8> {
        log.read(from, u32::MAX, false, log.next_offset_metadata()).unwrap().records
    }

    /// `testRollEmptyActiveSegment` / `testRollSegmentThatAlreadyExists`.
    #[test]
    fn rolling_an_empty_active_segment_recreates_it() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        assert_eq!(log.roll(None, 0).unwrap(), 0);
        assert_eq!(log.segments().len(), 1);
        append(&mut log, 2);
        assert_eq!(log.log_end_offset(), 2);
        assert_eq!(log.roll(Some(0), 0).unwrap(), 2);
        // The new active segment is empty: rolling at its offset again recreates it.
        assert_eq!(log.roll(Some(2), 0).unwrap(), 2);
        assert_eq!(log.segments().base_offsets(), [0, 2]);
        append(&mut log, 1);
        assert_eq!(log.log_end_offset(), 3);
        assert_eq!(log.active_segment().read_next_offset().unwrap(), 3);
    }

    /// `testNewSegmentsAfterRoll` and `testRollSegmentErrorWhenNextOffsetIsIllegal`.
    #[test]
    fn roll_base_is_the_larger_of_expected_and_log_end() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        append(&mut log, 2);
        assert_eq!(log.roll(Some(1), 0).unwrap(), 2);
        assert_eq!(log.segments().base_offsets(), [0, 2]);
        append(&mut log, 1);
        assert_eq!(log.roll(Some(10), 0).unwrap(), 10);
        assert_eq!(log.active_segment().base_offset(), 10);
        // A roll below the active segment is refused (only possible with a stale log end).
        log.next_offset_metadata.message_offset = 4;
        let error = log.roll(Some(4), 0).unwrap_err();
        assert!(
            error.to_string().contains("lower than start offset of the active segment 10"),
            "{error}"
        );
    }

    /// `testTruncateTo`.
    #[test]
    fn truncate_to_deletes_higher_segments() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        for _ in 0..4 {
            for _ in 0..3 {
                append(&mut log, 1);
            }
            log.roll(None, 0).unwrap();
        }
        assert_eq!(log.segments().base_offsets(), [0, 3, 6, 9, 12]);
        log.truncate_to(7, 0).unwrap();
        assert_eq!(log.segments().base_offsets(), [0, 3, 6]);
        assert_eq!(log.log_end_offset(), 7);
        append(&mut log, 1);
        assert_eq!(log.log_end_offset(), 8);
        assert_eq!(log.active_segment().read_next_offset().unwrap(), 8);
    }

    /// `testTruncateFullyAndStartAt` and `testCreateAndDeleteSegment`.
    #[test]
    fn truncate_fully_and_start_at() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        append(&mut log, 5);
        log.roll(None, 0).unwrap();
        append(&mut log, 5);
        log.truncate_fully_and_start_at(100, 0).unwrap();
        assert_eq!(log.segments().base_offsets(), [100]);
        assert_eq!((log.log_end_offset(), log.recovery_point()), (100, 100));
        assert!(fs.exists(&PathBuf::from("/logs/t-0/00000000000000000000.log.deleted")).unwrap());
        append(&mut log, 1);
        assert_eq!(log.log_end_offset(), 101);
    }

    /// `testWhenFetchOffsetHigherThanMaxOffset` and reads across segments.
    #[test]
    fn reads_are_bounded_by_the_max_offset_metadata() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        let first = append(&mut log, 3);
        log.roll(None, 0).unwrap();
        let second = append(&mut log, 3);
        assert_eq!(read_all(&log, 0), first, "one segment at a time");
        assert_eq!(read_all(&log, 3), second);
        let bound =
            LogOffsetMetadata { message_offset: 3, segment_base_offset: 3, relative_position: 0 };
        // start == max: empty, with the max metadata.
        let fetch = log.read(3, 1000, false, bound).unwrap();
        assert!(fetch.records.is_empty());
        assert_eq!(fetch.metadata, bound);
        // start > max: empty with the start's own metadata.
        let fetch = log.read(4, 1000, false, bound).unwrap();
        assert!(fetch.records.is_empty());
        assert_eq!(fetch.metadata.message_offset, 4);
        // A bound inside the first segment stops the read there.
        let mid =
            LogOffsetMetadata { message_offset: 2, segment_base_offset: 0, relative_position: 0 };
        assert!(log.read(0, 1000, false, mid).unwrap().records.is_empty());
        // Out of range above the end.
        assert!(matches!(
            log.read(7, 10, false, log.next_offset_metadata()),
            Err(Error::OffsetOutOfRange { requested: 7, .. })
        ));
        // At the end: empty.
        assert!(read_all(&log, 6).is_empty());
    }

    /// `testRemoveAndDeleteSegmentsAsync` / `testDeleteSegmentFilesSync`.
    #[test]
    fn deleted_segments_are_renamed_then_removed_after_the_delay() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        append(&mut log, 3);
        log.roll(None, 0).unwrap();
        append(&mut log, 3);
        log.remove_and_delete_segments(&[0], true, 5_000).unwrap();
        let deleted = PathBuf::from("/logs/t-0/00000000000000000000.log.deleted");
        assert!(fs.exists(&deleted).unwrap());
        assert!(!fs.exists(&dir().join("00000000000000000000.log")).unwrap());
        assert_eq!(log.delete_expired(5_999).unwrap(), 0);
        assert!(fs.exists(&deleted).unwrap());
        assert_eq!(log.delete_expired(6_000).unwrap(), 1);
        assert!(!fs.exists(&deleted).unwrap());
        assert!(
            log.remove_and_delete_segments(&[3], false, 0).is_err(),
            "the active segment stays"
        );
    }

    /// `testLogFlush`: the recovery point and the last flush time move with a flush.
    #[test]
    fn flush_moves_the_recovery_point() {
        let fs = SimFs::new();
        let mut log = log(&fs);
        append(&mut log, 3);
        assert_eq!(log.recovery_point(), 0);
        log.flush(log.log_end_offset(), 42).unwrap();
        assert_eq!((log.recovery_point(), log.last_flush_ms()), (3, 42));
        // After a crash the flushed records survive.
        drop(log);
        fs.crash(7);
        let (segment, _) =
            LogSegment::open(Arc::new(fs.clone()), &dir(), 0, SegmentConfig::default(), 0).unwrap();
        assert_eq!(segment.read_next_offset().unwrap(), 3);
    }
}
