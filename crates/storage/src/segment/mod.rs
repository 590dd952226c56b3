//! One segment of a partition log (Kafka's `LogSegment`): a `.log` file of batches with its
//! sparse `.index` and `.timeindex`, named by the segment's 20-digit base offset.

mod recent;
mod scan;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Batch, DecodeLimits, FileKind, SegmentFileName};

pub use scan::{EntryFrame, EntryHeader, Frame, HeaderScan, ScanEnd};

use crate::error::{Error, Result};
use crate::index::{
    INDEX_BYTES_MAX_DEFAULT, OffsetIndex, TimeIndex, TimestampOffset, TransactionIndex,
    TxnIndexSearchResult,
};
use crate::io::{File, Fs, OpenMode};
use seglog_format::AbortedTxn;

/// Kafka's default `index.interval.bytes`.
pub const INDEX_INTERVAL_BYTES_DEFAULT: u32 = 4096;
/// A `.log` file may not exceed `i32::MAX` bytes (Kafka's `FileRecords` limit).
pub const SEGMENT_BYTES_LIMIT: u64 = i32::MAX as u64;

/// Per-segment settings taken from the topic configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentConfig {
    /// `index.interval.bytes`: bytes of batches between offset index entries.
    pub index_interval_bytes: u32,
    /// `segment.index.bytes`: the size both indexes are preallocated to.
    pub index_bytes_max: u64,
    /// This segment's share of `segment.jitter.ms`, fixed when it is created.
    pub roll_jitter_ms: i64,
    /// Bounds for decompressing batches (timestamp search reads records).
    pub decode_limits: DecodeLimits,
    /// `preallocate`: bytes a new `.log` is extended to up front (0: off, Kafka's default). The
    /// file is trimmed to its contents when the segment becomes inactive or closes.
    pub preallocate_bytes: u32,
}

impl Default for SegmentConfig {
    fn default() -> Self {
        Self {
            index_interval_bytes: INDEX_INTERVAL_BYTES_DEFAULT,
            index_bytes_max: INDEX_BYTES_MAX_DEFAULT,
            roll_jitter_ms: 0,
            decode_limits: DecodeLimits::default(),
            preallocate_bytes: 0,
        }
    }
}

/// Where an offset sits in the log (Kafka's `LogOffsetMetadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetMetadata {
    /// The offset asked for.
    pub message_offset: i64,
    /// The base offset of the segment holding it.
    pub segment_base_offset: i64,
    /// The byte position of its batch in that segment.
    pub relative_position: u32,
}

/// The batch that holds (or follows) an offset (Kafka's `LogOffsetPosition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogOffsetPosition {
    /// The batch's last offset.
    pub offset: i64,
    /// Its position.
    pub position: u32,
    /// Its size.
    pub size_bytes: u32,
}

/// The result of a segment read (Kafka's `FetchDataInfo`): whole batches, from a position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchData {
    /// Where the read starts.
    pub metadata: LogOffsetMetadata,
    /// The position of the first byte returned.
    pub position: u32,
    /// The bytes: whole batches, unless `first_entry_incomplete`.
    pub records: Vec<u8>,
    /// The first batch was larger than the size allowed (and `min_one_message` was off).
    pub first_entry_incomplete: bool,
}

/// A range of a segment's `.log`, whole batches to be sent as they are on disk (Kafka's
/// `FileRecords.slice`): a fetch answered from the file, not from a copy in memory.
#[derive(Debug, Clone)]
pub struct FileSlice {
    file: Arc<dyn File>,
    path: PathBuf,
    position: u64,
    len: usize,
}

impl FileSlice {
    /// The slice's length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the slice holds no byte.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the slice starts in its `.log`.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The slice's bytes, copied into memory (for a connection that must encrypt them).
    pub fn read(&self) -> Result<Vec<u8>> {
        let mut bytes = vec![0; self.len];
        self.file
            .read_exact_at(&mut bytes, self.position)
            .map_err(|e| Error::io("read", &self.path, e))?;
        Ok(bytes)
    }

    /// Sends the slice's bytes from `from` (an offset within the slice) to `out`, as much as
    /// `out` takes at once ([`File::send_at`]); returns how many were sent. A file that ends
    /// before the slice does (truncated since the read) is an `UnexpectedEof` error: the
    /// response's size is already promised, so the connection must be closed (as Kafka's
    /// `FileRecords.writeTo` does).
    pub fn send_to(&self, out: std::os::fd::BorrowedFd<'_>, from: usize) -> std::io::Result<usize> {
        let left = self.len.saturating_sub(from);
        if left == 0 {
            return Ok(0);
        }
        let sent = self.file.send_at(out, self.position + from as u64, left)?;
        if sent == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!(
                    "{} ended before the {} bytes at position {} being sent",
                    self.path.display(),
                    self.len,
                    self.position
                ),
            ));
        }
        Ok(sent)
    }
}

/// The bytes a segment read covers: `position..end` of the `.log`.
#[derive(Debug, Clone, Copy)]
struct ReadRange {
    metadata: LogOffsetMetadata,
    position: u32,
    end: u32,
    first_entry_incomplete: bool,
}

/// A record found by timestamp (Kafka's `TimestampAndOffset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampAndOffset {
    /// The record's timestamp.
    pub timestamp: i64,
    /// The record's offset.
    pub offset: i64,
    /// The batch's leader epoch, when it has one (magic 2 and >= 0).
    pub leader_epoch: Option<i32>,
}

/// The inputs of a roll decision (Kafka's `RollParams`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollParams {
    /// `segment.ms` (or the compaction lag bound).
    pub segment_ms_max: i64,
    /// `segment.bytes`.
    pub segment_bytes_max: u32,
    /// The largest timestamp of the append.
    pub max_timestamp_in_messages: i64,
    /// The last offset of the append.
    pub max_offset_in_messages: i64,
    /// Bytes of the append.
    pub messages_bytes: u32,
    /// The clock.
    pub now_ms: i64,
}

/// What recovery found and did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    /// Bytes of valid batches kept.
    pub valid_bytes: u32,
    /// Bytes removed from the end of the `.log`.
    pub truncated_bytes: u64,
    /// Valid batches found.
    pub n_batches: usize,
    /// Why the scan stopped early, when it did (a corrupt or invalid batch, or its position).
    pub stopped_at: Option<(u32, String)>,
    /// `(leader epoch, base offset)` each time a batch carried a larger epoch than any before.
    pub leader_epochs: Vec<(i32, i64)>,
    /// The offset after the last valid batch (the base offset when none).
    pub next_offset: i64,
}

/// The file handles of one segment to fsync, taken by [`LogSegment::prepare_sync`].
#[derive(Debug)]
pub struct SegmentSync {
    log: (Arc<dyn File>, PathBuf),
    indexes: Vec<(Arc<dyn File>, PathBuf)>,
}

impl SegmentSync {
    /// Fsyncs the `.log` first, then each index.
    pub fn sync(&self) -> Result<()> {
        let (log, log_path) = &self.log;
        log.sync_data().map_err(|e| Error::io("fsync", log_path, e))?;
        for (file, path) in &self.indexes {
            file.sync_data().map_err(|e| Error::io("fsync index", path, e))?;
        }
        Ok(())
    }
}

/// A segment: `.log`, `.index` and `.timeindex` (Kafka's `LogSegment`).
///
/// Appends, truncation and recovery take `&mut self`; reads take `&self` and use positional
/// reads only, so a caller may run them concurrently under a read lock.
#[derive(Debug)]
pub struct LogSegment {
    fs: Arc<dyn Fs>,
    base_offset: i64,
    config: SegmentConfig,
    log_path: PathBuf,
    log: Arc<dyn File>,
    /// Logical size: bytes of batches appended (the file may be longer when preallocated).
    size: u32,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    bytes_since_last_index_entry: u32,
    /// Largest timestamp so far and the last offset of the batch that carried it.
    max_timestamp_so_far: TimestampOffset,
    /// The first batch's max timestamp: the base of time-based rolling.
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    /// The last batches appended, for lookups of hot offsets (`recent.rs`).
    recent: recent::RecentBatches,
}

/// The path of a segment file.
pub fn segment_path(dir: &Path, base_offset: i64, kind: FileKind) -> PathBuf {
    dir.join(SegmentFileName::new(base_offset, kind).to_name())
}

impl LogSegment {
    /// Creates a new, empty segment at `base_offset` in `dir`.
    pub fn create(
        fs: Arc<dyn Fs>,
        dir: &Path,
        base_offset: i64,
        config: SegmentConfig,
        now_ms: i64,
    ) -> Result<Self> {
        Self::create_with_suffix(fs, dir, base_offset, config, now_ms, "")
    }

    /// Creates a new, empty segment whose files carry `suffix` after their names, such as
    /// `.cleaned` for the log cleaner's output (Kafka's `LogSegment.open` with a file suffix).
    pub fn create_with_suffix(
        fs: Arc<dyn Fs>,
        dir: &Path,
        base_offset: i64,
        config: SegmentConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Self> {
        let suffixed = |kind| {
            PathBuf::from(format!("{}{suffix}", segment_path(dir, base_offset, kind).display()))
        };
        if base_offset < 0 {
            return Err(Error::InvalidArgument(format!(
                "a segment cannot start at offset {base_offset}"
            )));
        }
        let log_path = suffixed(FileKind::Log);
        let log: Arc<dyn File> = Arc::from(
            fs.open(&log_path, OpenMode::CreateNew)
                .map_err(|e| Error::io("create segment", &log_path, e))?,
        );
        if config.preallocate_bytes > 0 {
            log.set_len(u64::from(config.preallocate_bytes))
                .map_err(|e| Error::io("preallocate segment", &log_path, e))?;
        }
        let txn_path = suffixed(FileKind::TxnIndex);
        let txn_index = TransactionIndex::open(fs.clone(), &txn_path, base_offset)?;
        let offset_index = OffsetIndex::create(
            fs.as_ref(),
            &suffixed(FileKind::Index),
            base_offset,
            config.index_bytes_max,
        )?;
        let time_index = TimeIndex::create(
            fs.as_ref(),
            &suffixed(FileKind::TimeIndex),
            base_offset,
            config.index_bytes_max,
        )?;
        Ok(Self {
            fs,
            base_offset,
            config,
            log_path,
            log,
            size: 0,
            offset_index,
            time_index,
            txn_index,
            bytes_since_last_index_entry: 0,
            recent: recent::RecentBatches::default(),
            max_timestamp_so_far: TimestampOffset { timestamp: -1, offset: base_offset },
            rolling_based_timestamp: None,
            created_ms: now_ms,
        })
    }

    /// Opens an existing segment. Its indexes are loaded as they are; when either is missing or
    /// fails its sanity check, the segment is recovered (both rebuilt from the `.log`, and a torn
    /// tail truncated) and the report returned. As in Kafka, the indexes of an opened segment are
    /// trimmed (full); call [`LogSegment::resize_indexes_to_max`] before appending to it.
    pub fn open(
        fs: Arc<dyn Fs>,
        dir: &Path,
        base_offset: i64,
        config: SegmentConfig,
        now_ms: i64,
    ) -> Result<(Self, Option<RecoveryReport>)> {
        let log_path = segment_path(dir, base_offset, FileKind::Log);
        let log: Arc<dyn File> = Arc::from(
            fs.open(&log_path, OpenMode::ReadWrite)
                .map_err(|e| Error::io("open segment", &log_path, e))?,
        );
        let len = log.len().map_err(|e| Error::io("stat segment", &log_path, e))?;
        if len > SEGMENT_BYTES_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "{} is {len} bytes, larger than the segment limit of {SEGMENT_BYTES_LIMIT}",
                log_path.display()
            )));
        }
        let mut needs_recovery = false;
        let mut open_index = |kind: FileKind| -> Result<bool> {
            let path = segment_path(dir, base_offset, kind);
            let exists = fs.exists(&path).map_err(|e| Error::io("stat index", &path, e))?;
            needs_recovery |= !exists;
            Ok(exists)
        };
        let offset_exists = open_index(FileKind::Index)?;
        let time_exists = open_index(FileKind::TimeIndex)?;
        let index_path = segment_path(dir, base_offset, FileKind::Index);
        let time_path = segment_path(dir, base_offset, FileKind::TimeIndex);
        let offset_index = if offset_exists {
            OffsetIndex::open(fs.as_ref(), &index_path, base_offset, config.index_bytes_max)?
        } else {
            OffsetIndex::create(fs.as_ref(), &index_path, base_offset, config.index_bytes_max)?
        };
        let time_index = if time_exists {
            TimeIndex::open(fs.as_ref(), &time_path, base_offset, config.index_bytes_max)?
        } else {
            TimeIndex::create(fs.as_ref(), &time_path, base_offset, config.index_bytes_max)?
        };
        let txn_path = segment_path(dir, base_offset, FileKind::TxnIndex);
        let txn_index = TransactionIndex::open(fs.clone(), &txn_path, base_offset)?;
        needs_recovery |=
            offset_index.sanity_check().is_err() || time_index.sanity_check().is_err();
        let mut segment = Self {
            fs,
            base_offset,
            config,
            log_path,
            log,
            size: len as u32,
            offset_index,
            time_index,
            txn_index,
            bytes_since_last_index_entry: 0,
            recent: recent::RecentBatches::default(),
            max_timestamp_so_far: TimestampOffset { timestamp: -1, offset: base_offset },
            rolling_based_timestamp: None,
            created_ms: now_ms,
        };
        if needs_recovery {
            let report = segment.recover()?;
            return Ok((segment, Some(report)));
        }
        segment.max_timestamp_so_far = segment.time_index.last_entry();
        segment.rolling_based_timestamp = segment.first_batch_timestamp()?;
        Ok((segment, None))
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes of batches in the `.log`.
    pub fn size_bytes(&self) -> u32 {
        self.size
    }

    /// The directory holding the segment.
    pub fn dir(&self) -> &Path {
        // The `.log` is in it: one path kept, not two.
        self.log_path.parent().unwrap_or_else(|| Path::new(""))
    }

    /// The `.log` path.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The offset index.
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }

    /// The time index.
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    /// The largest timestamp so far and the last offset of its batch, or `(-1, base_offset)`.
    pub fn max_timestamp_so_far(&self) -> TimestampOffset {
        self.max_timestamp_so_far
    }

    /// The largest record timestamp, when any batch carried one.
    pub fn largest_record_timestamp(&self) -> Option<i64> {
        (self.max_timestamp_so_far.timestamp >= 0).then_some(self.max_timestamp_so_far.timestamp)
    }

    /// The largest timestamp, or the `.log` mtime when no batch carried one (retention's view).
    pub fn largest_timestamp(&self) -> Result<i64> {
        match self.largest_record_timestamp() {
            Some(timestamp) => Ok(timestamp),
            None => self.last_modified_ms(),
        }
    }

    /// The first batch's max timestamp, or `i64::MAX` when the segment is empty (Kafka's
    /// `getFirstBatchTimestamp`).
    pub fn first_batch_timestamp_or_max(&self) -> i64 {
        self.rolling_based_timestamp.unwrap_or(i64::MAX)
    }

    /// Calls `visit` with the header of every whole batch in the segment, in order, reading
    /// headers only (a torn tail ends the walk).
    pub fn for_each_batch_header(&self, mut visit: impl FnMut(&EntryHeader)) -> Result<()> {
        let mut scan = HeaderScan::new(self.log.as_ref(), 0, self.size);
        while let Some(header) = scan.next_header(&self.log_path)? {
            visit(&header);
        }
        Ok(())
    }

    fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        let mut scan = HeaderScan::new(self.log.as_ref(), 0, self.size);
        Ok(scan.next_header(&self.log_path)?.map(|header| header.max_timestamp))
    }

    fn check_relative(&self, offset: i64) -> Result<()> {
        let relative = offset.checked_sub(self.base_offset);
        if relative.is_none_or(|relative| !(0..=i64::from(i32::MAX)).contains(&relative)) {
            return Err(Error::OffsetOverflow { base_offset: self.base_offset, offset });
        }
        Ok(())
    }

    /// Appends `records` (one or more whole batches, written as they are), whose largest offset
    /// is `largest_offset` and largest timestamp `largest_timestamp`, found in the batch whose
    /// last offset is `shallow_offset_of_max_timestamp` (Kafka's `LogSegment.append`).
    pub fn append(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        records: &[u8],
    ) -> Result<()> {
        self.append_parts(
            largest_offset,
            largest_timestamp,
            shallow_offset_of_max_timestamp,
            &[records],
        )
    }

    /// [`LogSegment::append`] of the concatenation of `parts`, written with one vectored write
    /// (a stamped batch header, then the producer's records after it).
    pub fn append_parts(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        shallow_offset_of_max_timestamp: i64,
        parts: &[&[u8]],
    ) -> Result<()> {
        let records_len: usize = parts.iter().map(|part| part.len()).sum();
        if records_len == 0 {
            return Ok(());
        }
        self.check_relative(largest_offset)?;
        let position = self.size;
        let new_size = u64::from(position) + records_len as u64;
        if new_size > SEGMENT_BYTES_LIMIT {
            return Err(Error::InvalidArgument(format!(
                "appending {records_len} bytes to {} would exceed the segment limit of {SEGMENT_BYTES_LIMIT} bytes",
                self.log_path.display()
            )));
        }
        self.log
            .write_all_vectored_at(parts, u64::from(position))
            .map_err(|e| Error::io("append", &self.log_path, e))?;
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp);
        }
        if largest_timestamp > self.max_timestamp_so_far.timestamp {
            self.max_timestamp_so_far = TimestampOffset {
                timestamp: largest_timestamp,
                offset: shallow_offset_of_max_timestamp,
            };
        }
        if self.bytes_since_last_index_entry > self.config.index_interval_bytes {
            self.offset_index.append(largest_offset, position)?;
            let max = self.max_timestamp_so_far;
            self.time_index.maybe_append(max.timestamp, max.offset, false)?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += records_len as u32;
        self.size = new_size as u32;
        // One v2 batch exactly (its length field and magic, in the first part): remembered.
        let head = parts.first().copied().unwrap_or_default();
        let one_batch = head.get(16) == Some(&2)
            && head.get(8..12).and_then(|b| b.try_into().ok()).map(i32::from_be_bytes)
                == i32::try_from(records_len.saturating_sub(12)).ok();
        self.recent.appended(
            one_batch,
            LogOffsetPosition { offset: largest_offset, position, size_bytes: records_len as u32 },
        );
        Ok(())
    }

    /// The first batch whose last offset is >= `offset`, scanning from the index's lower bound or
    /// `starting_position`, whichever is later (Kafka's `translateOffset`).
    pub fn translate_offset(
        &self,
        offset: i64,
        starting_position: u32,
    ) -> Result<Option<LogOffsetPosition>> {
        if let Some(hit) = self.recent.lookup(offset)
            && hit.position >= starting_position
        {
            return Ok(Some(hit));
        }
        let from = self.offset_index.lookup(offset)?.position.max(starting_position);
        let mut scan = HeaderScan::new(self.log.as_ref(), from.min(self.size), self.size);
        while let Some(header) = scan.next_header(&self.log_path)? {
            if header.last_offset >= offset {
                return Ok(Some(LogOffsetPosition {
                    offset: header.last_offset,
                    position: header.position,
                    size_bytes: header.size_bytes,
                }));
            }
        }
        if let Some(ScanEnd::Corrupt { position, reason }) = scan.ended() {
            return Err(Error::CorruptLog {
                path: self.log_path.clone(),
                position: u64::from(*position),
                reason: reason.clone(),
            });
        }
        Ok(None)
    }

    /// Reads whole batches from the one holding `start_offset`: at most `max_bytes` (or the first
    /// batch whole, with `min_one_message`), never past `max_position` (Kafka's `read`). `None`
    /// means the offset is past this segment; a `None` `max_position` returns only metadata.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: Option<u32>,
        min_one_message: bool,
    ) -> Result<Option<FetchData>> {
        let Some(range) =
            self.read_range(start_offset, max_bytes, max_position, min_one_message)?
        else {
            return Ok(None);
        };
        let mut records = vec![0u8; (range.end - range.position) as usize];
        self.log
            .read_exact_at(&mut records, u64::from(range.position))
            .map_err(|e| Error::io("read", &self.log_path, e))?;
        Ok(Some(FetchData {
            metadata: range.metadata,
            position: range.position,
            records,
            first_entry_incomplete: range.first_entry_incomplete,
        }))
    }

    /// [`read`](Self::read) without reading: the same bytes as a range of the `.log`, with
    /// where the read starts and whether its first batch was cut.
    pub fn read_slice(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: Option<u32>,
        min_one_message: bool,
    ) -> Result<Option<(LogOffsetMetadata, FileSlice, bool)>> {
        let Some(range) =
            self.read_range(start_offset, max_bytes, max_position, min_one_message)?
        else {
            return Ok(None);
        };
        let slice = FileSlice {
            file: Arc::clone(&self.log),
            path: self.log_path.clone(),
            position: u64::from(range.position),
            len: (range.end - range.position) as usize,
        };
        Ok(Some((range.metadata, slice, range.first_entry_incomplete)))
    }

    /// Whether the batch at `position` (a batch boundary below the segment's size) holds a
    /// record: a v2 batch's record count is read from its header (one 61-byte read), a
    /// magic 0 or 1 entry always holds one.
    pub fn batch_holds_a_record(&self, position: u32) -> Result<bool> {
        use seglog_format::batch::{MAGIC_OFFSET, RECORD_BATCH_OVERHEAD, RECORDS_COUNT_OFFSET};
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        let available = self.size.saturating_sub(position) as usize;
        let Some(header) = header.get_mut(..available.min(RECORD_BATCH_OVERHEAD)) else {
            return Ok(false);
        };
        self.log
            .read_exact_at(header, u64::from(position))
            .map_err(|e| Error::io("read", &self.log_path, e))?;
        let count = header.get(RECORDS_COUNT_OFFSET..RECORD_BATCH_OVERHEAD);
        Ok(match (header.get(MAGIC_OFFSET).map(|&m| m as i8), count) {
            (Some(seglog_format::batch::MAGIC_V2), Some(&[a, b, c, d])) => {
                i32::from_be_bytes([a, b, c, d]) != 0
            }
            // A v2 header cut short (or no byte at all): the read into memory judges it.
            (Some(seglog_format::batch::MAGIC_V2) | None, _) => false,
            (Some(_), _) => true,
        })
    }

    /// What a read from `start_offset` covers (Kafka's `LogSegment.read` up to its slice).
    fn read_range(
        &self,
        start_offset: i64,
        max_bytes: u32,
        max_position: Option<u32>,
        min_one_message: bool,
    ) -> Result<Option<ReadRange>> {
        let Some(start) = self.translate_offset(start_offset, 0)? else { return Ok(None) };
        let metadata = LogOffsetMetadata {
            message_offset: start_offset,
            segment_base_offset: self.base_offset,
            relative_position: start.position,
        };
        let adjusted_max =
            if min_one_message { max_bytes.max(start.size_bytes) } else { max_bytes };
        let empty = ReadRange {
            metadata,
            position: start.position,
            end: start.position,
            first_entry_incomplete: false,
        };
        let Some(max_position) = max_position else { return Ok(Some(empty)) };
        if adjusted_max == 0 {
            return Ok(Some(empty));
        }
        let fetch_bytes = max_position.saturating_sub(start.position).min(adjusted_max);
        let end = (start.position + fetch_bytes).min(self.size);
        Ok(Some(ReadRange {
            metadata,
            position: start.position,
            end,
            first_entry_incomplete: adjusted_max < start.size_bytes,
        }))
    }

    /// Reads the whole entry described by `header`.
    /// The bytes of the entry `header` describes (read from this segment's `.log`).
    pub fn read_entry(&self, header: &EntryHeader) -> Result<Vec<u8>> {
        let mut bytes = vec![0u8; header.size_bytes as usize];
        self.log
            .read_exact_at(&mut bytes, u64::from(header.position))
            .map_err(|e| Error::io("read", &self.log_path, e))?;
        Ok(bytes)
    }

    /// The first record with `timestamp >= target` and `offset >= starting_offset` (Kafka's
    /// `findOffsetByTimestamp`).
    pub fn find_offset_by_timestamp(
        &self,
        target: i64,
        starting_offset: i64,
    ) -> Result<Option<TimestampAndOffset>> {
        let indexed = self.time_index.lookup(target)?;
        let from = self.offset_index.lookup(indexed.offset.max(starting_offset))?.position;
        let mut scan = HeaderScan::new(self.log.as_ref(), from, self.size);
        while let Some(header) = scan.next_header(&self.log_path)? {
            if header.max_timestamp < target {
                continue;
            }
            let bytes = self.read_entry(&header)?;
            let corrupt = |source: seglog_format::DecodeError| Error::Corrupt {
                path: self.log_path.clone(),
                position: u64::from(header.position),
                source,
            };
            let batch = Batch::new(&bytes).map_err(corrupt)?;
            let records = batch.records(self.config.decode_limits).map_err(corrupt)?;
            for record in &records {
                let record = record.map_err(corrupt)?;
                if record.timestamp >= target && record.offset >= starting_offset {
                    let epoch = batch.partition_leader_epoch();
                    return Ok(Some(TimestampAndOffset {
                        timestamp: record.timestamp,
                        offset: record.offset,
                        leader_epoch: (batch.magic() >= 2 && epoch >= 0).then_some(epoch),
                    }));
                }
            }
        }
        Ok(None)
    }

    /// The offset after the last batch, or the base offset when empty (Kafka's
    /// `readNextOffset`).
    pub fn read_next_offset(&self) -> Result<i64> {
        let from = self.offset_index.last_entry().map_or(0, |entry| entry.position);
        let mut scan = HeaderScan::new(self.log.as_ref(), from, self.size);
        let mut next = self.base_offset;
        while let Some(header) = scan.next_header(&self.log_path)? {
            next = header.last_offset.checked_add(1).ok_or_else(|| Error::CorruptLog {
                path: self.log_path.clone(),
                position: u64::from(header.position),
                reason: format!("last offset {} leaves no next offset", header.last_offset),
            })?;
        }
        Ok(next)
    }

    /// Removes every batch holding an offset >= `offset`; returns the bytes removed (Kafka's
    /// `truncateTo`). The granularity is a whole batch. Unlike Kafka, the truncation is durable
    /// when this returns (the `.log` is fsynced), so a crash cannot bring truncated batches back.
    pub fn truncate_to(&mut self, offset: i64, now_ms: i64) -> Result<u64> {
        let mapping = self.translate_offset(offset, 0)?;
        self.recent.clear();
        self.offset_index.truncate_to(offset)?;
        self.time_index.truncate_to(offset)?;
        self.txn_index.truncate_to(offset)?;
        // The zeroed entries are made durable too: a stale entry surviving a crash would point
        // past the truncated log.
        self.offset_index.file_mut().flush()?;
        self.time_index.file_mut().flush()?;
        self.txn_index.flush()?;
        self.offset_index.file_mut().resize_to_max()?;
        self.time_index.file_mut().resize_to_max()?;
        let old_size = self.size;
        if let Some(mapping) = mapping
            && mapping.position < self.size
        {
            self.log
                .set_len(u64::from(mapping.position))
                .map_err(|e| Error::io("truncate", &self.log_path, e))?;
            self.log.sync_data().map_err(|e| Error::io("fsync", &self.log_path, e))?;
            self.size = mapping.position;
        }
        if self.size == 0 {
            self.created_ms = now_ms;
            self.rolling_based_timestamp = None;
        }
        self.bytes_since_last_index_entry = 0;
        if self.max_timestamp_so_far.timestamp >= 0 {
            self.max_timestamp_so_far = self.time_index.last_entry();
            let from = self.offset_index.lookup(self.max_timestamp_so_far.offset)?.position;
            let mut scan = HeaderScan::new(self.log.as_ref(), from, self.size);
            while let Some(header) = scan.next_header(&self.log_path)? {
                if header.max_timestamp > self.max_timestamp_so_far.timestamp {
                    self.max_timestamp_so_far = TimestampOffset {
                        timestamp: header.max_timestamp,
                        offset: header.last_offset,
                    };
                }
            }
        }
        Ok(u64::from(old_size - self.size))
    }

    /// Whether the next append of `params` must go to a new segment (Kafka's `shouldRoll`).
    pub fn should_roll(&self, params: &RollParams) -> bool {
        let too_big = i64::from(self.size)
            > i64::from(params.segment_bytes_max) - i64::from(params.messages_bytes);
        let waited = match self.rolling_based_timestamp {
            Some(timestamp) if timestamp >= 0 => params.max_timestamp_in_messages - timestamp,
            _ => params.now_ms - self.created_ms,
        };
        let too_old = self.size > 0 && waited > params.segment_ms_max - self.config.roll_jitter_ms;
        let overflow = params
            .max_offset_in_messages
            .checked_sub(self.base_offset)
            .is_none_or(|relative| !(0..=i64::from(i32::MAX)).contains(&relative));
        too_big || too_old || self.offset_index.is_full() || self.time_index.is_full() || overflow
    }

    /// Seals the segment when the log rolls past it: the final time index entry, and the indexes
    /// and the `.log` trimmed to their contents (Kafka's `onBecomeInactiveSegment`).
    pub fn on_become_inactive(&mut self) -> Result<()> {
        // The last appends are looked up at the log's end, which is past this segment now.
        self.recent = recent::RecentBatches::default();
        let max = self.max_timestamp_so_far;
        self.time_index.maybe_append(max.timestamp, max.offset, true)?;
        self.offset_index.file_mut().trim_to_valid_size()?;
        self.time_index.file_mut().trim_to_valid_size()?;
        let len = self.log.len().map_err(|e| Error::io("stat segment", &self.log_path, e))?;
        if len > u64::from(self.size) {
            self.log
                .set_len(u64::from(self.size))
                .map_err(|e| Error::io("trim segment", &self.log_path, e))?;
        }
        self.seal_indexes()
    }

    /// Seals both indexes, as an inactive segment's are: their entries leave the heap and
    /// lookups read the files (`index/file.rs`). [`LogSegment::resize_indexes_to_max`] and
    /// every index mutation unseal them.
    pub fn seal_indexes(&mut self) -> Result<()> {
        self.offset_index.file_mut().seal()?;
        self.time_index.file_mut().seal()
    }

    /// Grows the indexes back to their full size, for a segment that is active again.
    pub fn resize_indexes_to_max(&mut self) -> Result<()> {
        self.offset_index.file_mut().unseal()?;
        self.time_index.file_mut().unseal()?;
        self.offset_index.file_mut().resize_to_max()?;
        self.time_index.file_mut().resize_to_max()?;
        Ok(())
    }

    /// Fsyncs the `.log`, then the indexes (Kafka's `flush`). Data first: an index entry must
    /// never be durable before the bytes it points at.
    pub fn flush(&mut self) -> Result<()> {
        self.prepare_sync()?.sync()
    }

    /// Writes pending index entries (no fsync) and returns the file handles to fsync, so that a
    /// caller can release its lock before the slow part: readers and appenders then never wait
    /// for an fsync. Entries written here point only at bytes already written to the `.log`.
    pub fn prepare_sync(&mut self) -> Result<SegmentSync> {
        self.offset_index.file_mut().write_pending()?;
        self.time_index.file_mut().write_pending()?;
        let mut files = vec![
            (self.offset_index.file().handle(), self.offset_index.file().path().to_owned()),
            (self.time_index.file().handle(), self.time_index.file().path().to_owned()),
        ];
        if let Some(txn) = self.txn_index.handle() {
            files.push((txn, self.txn_index.path().to_owned()));
        }
        Ok(SegmentSync { log: (Arc::clone(&self.log), self.log_path.clone()), indexes: files })
    }

    /// Writes the final time index entry, trims and fsyncs everything (Kafka's `close`).
    pub fn close(&mut self) -> Result<()> {
        if self.max_timestamp_so_far.timestamp >= 0 {
            let max = self.max_timestamp_so_far;
            self.time_index.maybe_append(max.timestamp, max.offset, true)?;
        }
        self.on_become_inactive()?;
        self.flush()
    }

    /// Deletes the segment's files; missing index files are not an error.
    pub fn delete(self) -> Result<()> {
        for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex] {
            let path = segment_path(self.dir(), self.base_offset, kind);
            match self.fs.remove(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io("delete segment", &path, error)),
            }
        }
        Ok(())
    }

    /// Deletes the segment's files at the names they have now (any suffix); missing files are
    /// not an error. For an unfinished segment that never joined a log (the cleaner's output).
    pub fn delete_files(self) -> Result<()> {
        for path in [
            self.log_path.as_path(),
            self.offset_index.file().path(),
            self.time_index.file().path(),
            self.txn_index.path(),
        ] {
            match self.fs.remove(path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(Error::io("delete segment", path, error)),
            }
        }
        Ok(())
    }

    /// The `.log` file's last-modified time.
    pub fn last_modified_ms(&self) -> Result<i64> {
        self.log.modified_ms().map_err(|e| Error::io("stat segment", &self.log_path, e))
    }

    /// Sets the last-modified time of the `.log` and both indexes.
    pub fn set_last_modified_ms(&self, ms: i64) -> Result<()> {
        self.log.set_modified_ms(ms).map_err(|e| Error::io("touch segment", &self.log_path, e))?;
        for (file, path) in [
            (self.offset_index.file().handle(), self.offset_index.file().path()),
            (self.time_index.file().handle(), self.time_index.file().path()),
        ] {
            file.set_modified_ms(ms).map_err(|e| Error::io("touch index", path, e))?;
        }
        Ok(())
    }

    /// Whether the last offset no longer fits this segment's relative range (Kafka's
    /// `hasOverflow`).
    pub fn has_overflow(&self) -> Result<bool> {
        let next = self.read_next_offset()?;
        Ok(next > self.base_offset && self.check_relative(next - 1).is_err())
    }

    /// The `.log` file's handle, for readers that work without the log's lock on a segment that
    /// no longer changes (the log cleaner).
    pub fn log_file(&self) -> Arc<dyn File> {
        Arc::clone(&self.log)
    }

    /// The transaction index.
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }

    /// Records an aborted transaction whose marker is in this segment (Kafka's
    /// `updateTxnIndex` for an aborted `CompletedTxn`).
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> Result<()> {
        self.txn_index.append(txn)
    }

    /// The aborted transactions overlapping `[fetch_offset, upper_bound_offset)`.
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> TxnIndexSearchResult {
        self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)
    }

    /// Renames every file of the segment from suffix `old` to `new`, e.g. `""` to `".deleted"`
    /// (Kafka's `changeFileSuffixes`). Open handles keep working; a missing txn index is skipped.
    pub fn change_file_suffixes(&mut self, old: &str, new: &str) -> Result<()> {
        let renamed = |path: &Path| -> Result<PathBuf> {
            let text = path.to_string_lossy();
            let stem = text.strip_suffix(old).ok_or_else(|| {
                Error::InvalidArgument(format!("{} does not end with {old:?}", path.display()))
            })?;
            Ok(PathBuf::from(format!("{stem}{new}")))
        };
        let log_path = renamed(&self.log_path)?;
        self.fs
            .rename(&self.log_path, &log_path)
            .map_err(|e| Error::io("rename segment", &self.log_path, e))?;
        self.log_path = log_path;
        let offset_path = renamed(self.offset_index.file().path())?;
        self.offset_index.file_mut().rename_to(self.fs.as_ref(), &offset_path)?;
        let time_path = renamed(self.time_index.file().path())?;
        self.time_index.file_mut().rename_to(self.fs.as_ref(), &time_path)?;
        let txn_path = renamed(self.txn_index.path())?;
        self.txn_index.rename_to(&txn_path)
    }

    /// Whether every file of the segment ends with `suffix`.
    pub fn has_suffix(&self, suffix: &str) -> bool {
        [
            self.log_path.as_path(),
            self.offset_index.file().path(),
            self.time_index.file().path(),
            self.txn_index.path(),
        ]
        .iter()
        .all(|path| path.to_string_lossy().ends_with(suffix))
    }

    /// Copies whole batches from `source` (a `.log` at `source_path`), starting at position
    /// `start` and ending before `end`, in chunks of about 1 MiB, for as long as their offsets fit
    /// this segment. Returns the bytes copied (Kafka's `appendFromFile`, used to split a segment).
    pub fn append_from_file(
        &mut self,
        source: &dyn File,
        source_path: &Path,
        start: u32,
        end: u32,
    ) -> Result<u32> {
        const CHUNK_BYTES: u32 = 1024 * 1024;
        let mut scan = HeaderScan::new(source, start, end);
        let mut copied = 0u32;
        let mut pending: Option<(u32, u32, i64, i64, i64)> = None; // (start, len, last, max ts, its offset)
        loop {
            let header = scan.next_header(source_path)?;
            let fits = header.is_some_and(|h| self.check_relative(h.last_offset).is_ok());
            let flush_now = match (&pending, header) {
                (Some((_, len, ..)), Some(h)) => !fits || len + h.size_bytes > CHUNK_BYTES,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if flush_now
                && let Some((chunk_start, len, last, max_timestamp, max_offset)) = pending.take()
            {
                let mut bytes = vec![0u8; len as usize];
                source
                    .read_exact_at(&mut bytes, u64::from(chunk_start))
                    .map_err(|e| Error::io("read", source_path, e))?;
                self.append(last, max_timestamp, max_offset, &bytes)?;
                copied += len;
            }
            let Some(header) = header.filter(|_| fits) else { return Ok(copied) };
            let entry = pending.get_or_insert((
                header.position,
                0,
                header.last_offset,
                header.max_timestamp,
                header.last_offset,
            ));
            entry.1 += header.size_bytes;
            entry.2 = header.last_offset;
            if header.max_timestamp > entry.3 {
                entry.3 = header.max_timestamp;
                entry.4 = header.last_offset;
            }
        }
    }

    /// Validates every batch from the start, rebuilds both indexes, empties the `.txnindex`
    /// (which `PartitionLog::open` refills from a replay of the producers), and truncates
    /// whatever follows the last valid batch (Kafka's `LogSegment.recover`).
    pub fn recover(&mut self) -> Result<RecoveryReport> {
        self.recent.clear();
        self.offset_index.file_mut().reset()?;
        self.time_index.file_mut().reset()?;
        // Kafka's reset, then `updateProducerState` per batch: here the partition log refills
        // the index after recovery, replaying the producers' transactions over the recovered
        // segments (`LocalLog::restore_aborted_txn`).
        self.txn_index.reset()?;
        self.max_timestamp_so_far = TimestampOffset { timestamp: -1, offset: self.base_offset };
        let mut report =
            RecoveryReport { next_offset: self.base_offset, ..RecoveryReport::default() };
        let mut valid_bytes: u32 = 0;
        let mut last_index_entry: u32 = 0;
        let mut latest_epoch = -1;
        let mut scan = HeaderScan::new(self.log.as_ref(), 0, self.size);
        while let Some(header) = scan.next_header(&self.log_path)? {
            let bytes = self.read_entry(&header)?;
            let checked = Batch::new(&bytes).and_then(|batch| batch.validate().map(|()| batch));
            let batch = match checked {
                Ok(batch) => batch,
                Err(error) => {
                    report.stopped_at = Some((header.position, error.to_string()));
                    break;
                }
            };
            // Offsets are not covered by the CRC: a batch that starts below the segment or below
            // the end of the previous batch is damage, and ends the valid prefix.
            if header.base_offset < report.next_offset || header.last_offset < header.base_offset {
                report.stopped_at = Some((
                    header.position,
                    format!(
                        "batch offsets {}..={} do not follow offset {}",
                        header.base_offset, header.last_offset, report.next_offset
                    ),
                ));
                break;
            }
            // Nothing can follow offset i64::MAX, so no batch can end there either.
            let Some(next_offset) = header.last_offset.checked_add(1) else {
                report.stopped_at = Some((
                    header.position,
                    format!("batch last offset {} leaves no next offset", header.last_offset),
                ));
                break;
            };
            if self.check_relative(batch.last_offset()).is_err() {
                return Err(Error::OffsetOverflow {
                    base_offset: self.base_offset,
                    offset: batch.last_offset(),
                });
            }
            if header.max_timestamp > self.max_timestamp_so_far.timestamp {
                self.max_timestamp_so_far =
                    TimestampOffset { timestamp: header.max_timestamp, offset: header.last_offset };
            }
            if valid_bytes - last_index_entry > self.config.index_interval_bytes {
                self.offset_index.append(header.last_offset, valid_bytes)?;
                let max = self.max_timestamp_so_far;
                self.time_index.maybe_append(max.timestamp, max.offset, false)?;
                last_index_entry = valid_bytes;
            }
            valid_bytes += header.size_bytes;
            report.n_batches += 1;
            report.next_offset = next_offset;
            if header.magic >= 2 && header.partition_leader_epoch > latest_epoch {
                latest_epoch = header.partition_leader_epoch;
                report.leader_epochs.push((latest_epoch, header.base_offset));
            }
        }
        if report.stopped_at.is_none()
            && let Some(ScanEnd::Corrupt { position, reason }) = scan.ended()
        {
            report.stopped_at = Some((*position, reason.clone()));
        }
        report.valid_bytes = valid_bytes;
        report.truncated_bytes = u64::from(self.size - valid_bytes);
        let file_len = self.log.len().map_err(|e| Error::io("stat segment", &self.log_path, e))?;
        if file_len > u64::from(valid_bytes) {
            self.log
                .set_len(u64::from(valid_bytes))
                .map_err(|e| Error::io("truncate", &self.log_path, e))?;
            self.log.sync_data().map_err(|e| Error::io("fsync", &self.log_path, e))?;
        }
        self.size = valid_bytes;
        self.bytes_since_last_index_entry = valid_bytes - last_index_entry;
        self.offset_index.file_mut().trim_to_valid_size()?;
        let max = self.max_timestamp_so_far;
        self.time_index.maybe_append(max.timestamp, max.offset, true)?;
        self.time_index.file_mut().trim_to_valid_size()?;
        self.rolling_based_timestamp = self.first_batch_timestamp()?;
        Ok(report)
    }
}
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;
