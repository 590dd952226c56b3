//! One cleaning round of one log (Kafka's `Cleaner.doClean`): build the key map over the dirty
//! section, then rewrite the log from its start to the map's end, group by group, each group
//! into one `.cleaned` segment swapped in for the group.
//!
//! The rules are Kafka's (spec §8.3 and §8.4, `LogCleaner.scala`, `MemoryRecords.filterTo`),
//! with two differences, both on the safe side:
//! - the last batch of every group is kept (as an empty header if none of its records is), not
//!   only the last of the round, so each cleaned segment ends where its group did: a crash in
//!   the middle of a swap then always finds every old segment inside the new one's range;
//! - a compressed v0/v1 wrapper of which only some messages survive is kept whole (seglog has
//!   no legacy batch builder); one of which none survives is dropped, as in Kafka.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use seglog_format::{
    Batch, Batches, Compression, DecodeLimits, EmptyHeader, Record, RecordBatchBuilder,
};

use super::offset_map::SkimpyOffsetMap;
use super::throttle::Throttler;
use super::txn::CleanedTransactionMetadata;
use super::{CleanerStats, LogToClean};
use crate::error::{Error, Result};
use crate::io::File;
use crate::log::local_log::CLEANED_SUFFIX;
use crate::log::partition_log::{CleanerView, SegmentView};
use crate::segment::LogSegment;

/// A cleaner thread's buffers and map (Kafka's `Cleaner`); [`crate::manager::LogManager::new_cleaner`]
/// makes one, and each call of `clean_once` uses it.
#[derive(Debug)]
pub struct Cleaner {
    map: SkimpyOffsetMap,
    load_factor: f64,
    io: IoBuffers,
}

/// The read buffer and its bounds, and the shared throttle.
#[derive(Debug)]
struct IoBuffers {
    io_buffer_bytes: usize,
    io_buffer_bytes_max: usize,
    throttler: Arc<Throttler>,
    read_buffer: Vec<u8>,
}

/// What [`Cleaner::clean`] asks between batches: go on, or stop the round.
pub(crate) type CheckDone<'a> = &'a dyn Fn() -> Result<()>;

/// The fate of one batch before its records are looked at (Kafka's `BatchRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchRetention {
    /// Drop the batch without looking at its records.
    Delete,
    /// Keep the batch even if no record survives (as an empty header).
    RetainEmpty,
    /// Drop the batch if no record survives.
    DeleteEmpty,
}

impl Cleaner {
    /// A cleaner with a map of `map_bytes`, I/O buffers of `io_buffer_bytes` growing to
    /// `io_buffer_bytes_max`, and the shared `throttler`.
    pub(crate) fn new(
        map_bytes: usize,
        load_factor: f64,
        io_buffer_bytes: usize,
        io_buffer_bytes_max: usize,
        throttler: Arc<Throttler>,
    ) -> Self {
        let io_buffer_bytes = io_buffer_bytes.max(1024);
        Self {
            map: SkimpyOffsetMap::new(map_bytes),
            load_factor,
            io: IoBuffers {
                io_buffer_bytes,
                io_buffer_bytes_max: io_buffer_bytes_max.max(io_buffer_bytes),
                throttler,
                read_buffer: Vec::new(),
            },
        }
    }

    /// The keys the map takes before a round stops (Kafka's `maxDesiredMapSize`).
    pub fn map_capacity(&self) -> usize {
        (self.map.slots() as f64 * self.load_factor) as usize
    }

    /// Cleans `to_clean` at `now_ms`; returns the round's end (the next first dirty offset).
    pub(crate) fn clean(
        &mut self,
        to_clean: &LogToClean,
        now_ms: i64,
        check_done: CheckDone<'_>,
    ) -> Result<(i64, CleanerStats)> {
        let view = &to_clean.view;
        let mut stats = CleanerStats::started();
        // The horizon for tombstones of v0/v1 segments: `delete.retention.ms` before the mtime
        // of the last segment already clean.
        let legacy_delete_horizon_ms = view
            .segments_in(0, to_clean.first_dirty_offset)
            .filter(|s| s.base_offset < to_clean.first_dirty_offset)
            .last()
            .map_or(0, |s| s.last_modified_ms - view.config.delete_retention_ms);
        let upper_bound = to_clean.first_uncleanable_offset;
        self.build_offset_map(
            view,
            to_clean.first_dirty_offset,
            upper_bound,
            &mut stats,
            check_done,
        )?;
        let end_offset = (self.map.latest_offset() + 1).max(to_clean.first_dirty_offset);
        stats.map_done = Some(Instant::now());
        let to_group: Vec<&SegmentView> = view.segments_in(0, end_offset).collect();
        let groups = group_segments_by_size(
            &to_group,
            view.config.segment_bytes,
            view.config.segment_index_bytes,
            upper_bound,
        );
        let mut transactions = CleanedTransactionMetadata::new(&view.aborted_txns);
        let mut generation = view.generation;
        for group in groups {
            self.clean_segments(
                to_clean,
                &mut generation,
                &group,
                now_ms,
                &mut stats,
                &mut transactions,
                legacy_delete_horizon_ms,
                upper_bound,
                check_done,
            )?;
        }
        stats.buffer_utilization = self.map.utilization();
        stats.end = Some(Instant::now());
        self.io.read_buffer = Vec::new();
        // The map's grown buffer is given back between rounds, as the read buffer is.
        self.map.clear();
        Ok((end_offset, stats))
    }

    /// Fills the map from the dirty segments in `[start, end)` (Kafka's `buildOffsetMap`); it
    /// stops early when the map is full, and its latest offset then says how far it got.
    fn build_offset_map(
        &mut self,
        view: &CleanerView,
        start: i64,
        end: i64,
        stats: &mut CleanerStats,
        check_done: CheckDone<'_>,
    ) -> Result<()> {
        self.map.clear();
        let dirty: Vec<&SegmentView> = view.segments_in(start, end).collect();
        let capacity = self.map_capacity();
        let mut transactions = CleanedTransactionMetadata::new(&view.aborted_txns);
        let buffer_bytes_max =
            self.io.io_buffer_bytes_max.max(view.config.max_message_bytes as usize);
        for (segment_idx, segment) in dirty.iter().enumerate() {
            let next_start = dirty.get(segment_idx + 1).map_or(end, |next| next.base_offset);
            let mut full = false;
            let map = &mut self.map;
            let bytes = walk_batches(
                segment,
                &mut self.io.read_buffer,
                self.io.io_buffer_bytes,
                buffer_bytes_max,
                &self.io.throttler,
                check_done,
                |positioned| {
                    let batch = positioned.batch;
                    let at = positioned.position;
                    if batch.last_offset() < start {
                        return Ok(true);
                    }
                    if batch.is_control_batch() {
                        transactions.on_control_batch_read(&batch, limits())?;
                        stats.map_messages_read += 1;
                    } else if transactions.on_batch_read(&batch) {
                        // An aborted transaction's records never enter the map.
                        stats.map_messages_read +=
                            u64::try_from(batch.records_count().unwrap_or(0)).unwrap_or(0);
                    } else {
                        let records =
                            batch.records(limits()).map_err(|e| corrupt(segment, at, e))?;
                        for record in &records {
                            let record = record.map_err(|e| corrupt(segment, at, e))?;
                            if let Some(key) = record.key
                                && record.offset >= start
                            {
                                if map.len() >= capacity {
                                    full = true;
                                    return Ok(false);
                                }
                                map.put(key, record.offset);
                            }
                            stats.map_messages_read += 1;
                        }
                    }
                    map.update_latest_offset(batch.last_offset());
                    Ok(true)
                },
            )?;
            stats.map_bytes_read += bytes;
            if full {
                return Ok(());
            }
            // Past any offset gap at the segment's end.
            self.map.update_latest_offset(next_start - 1);
        }
        Ok(())
    }

    /// Rewrites one group of segments into one `.cleaned` segment and swaps it in (Kafka's
    /// `cleanSegments`).
    #[expect(clippy::too_many_arguments, reason = "Kafka's cleanSegments, one round's state")]
    fn clean_segments(
        &mut self,
        to_clean: &LogToClean,
        generation: &mut u64,
        group: &[&SegmentView],
        now_ms: i64,
        stats: &mut CleanerStats,
        transactions: &mut CleanedTransactionMetadata,
        legacy_delete_horizon_ms: i64,
        upper_bound: i64,
        check_done: CheckDone<'_>,
    ) -> Result<()> {
        let view = &to_clean.view;
        let Some(first) = group.first() else { return Ok(()) };
        let base_offset = first.base_offset;
        remove_leftover_cleaned(view, base_offset)?;
        let mut cleaned = LogSegment::create_with_suffix(
            Arc::clone(&view.fs),
            &view.dir,
            base_offset,
            view.local_config.segment_config(&view.dir, base_offset),
            now_ms,
            CLEANED_SUFFIX,
        )?;
        let result = (|| {
            for (segment_idx, segment) in group.iter().enumerate() {
                let retain_legacy_deletes = segment.last_modified_ms > legacy_delete_horizon_ms;
                let is_last_of_group = segment_idx + 1 == group.len();
                clean_into(
                    &mut self.io,
                    view,
                    segment,
                    &mut cleaned,
                    &mut Filter {
                        map: &mut self.map,
                        transactions: &mut *transactions,
                        retain_legacy_deletes,
                        now_ms,
                        delete_retention_ms: view.config.delete_retention_ms,
                        upper_bound,
                        is_last_of_group,
                    },
                    stats,
                    check_done,
                )?;
            }
            cleaned.on_become_inactive()?;
            cleaned.flush()?;
            let last_modified_ms = group.last().map_or(now_ms, |s| s.last_modified_ms);
            cleaned.set_last_modified_ms(last_modified_ms)?;
            Ok(())
        })();
        if let Err(error) = result {
            // Best effort: a `.cleaned` left behind is removed by the next round or load.
            let _ = cleaned.delete_files();
            return Err(error);
        }
        check_done()?;
        let old: Vec<(i64, u32)> = group.iter().map(|s| (s.base_offset, s.size_bytes)).collect();
        if to_clean.log.replace_cleaned(cleaned, &old, generation, now_ms)? {
            Ok(())
        } else {
            Err(Error::CleaningAborted {
                partition: to_clean.topic_partition.to_string(),
                reason: "its segments changed during the round",
            })
        }
    }
}

/// Copies what survives of `segment` into `dest` (Kafka's `cleanInto`).
fn clean_into(
    io: &mut IoBuffers,
    view: &CleanerView,
    segment: &SegmentView,
    dest: &mut LogSegment,
    filter: &mut Filter<'_>,
    stats: &mut CleanerStats,
    check_done: CheckDone<'_>,
) -> Result<()> {
    let max_message_bytes = view.config.max_message_bytes as usize;
    let last_batch_position = if filter.is_last_of_group {
        last_batch_position(
            segment,
            &mut io.read_buffer,
            io.io_buffer_bytes,
            io.io_buffer_bytes_max.max(max_message_bytes),
            check_done,
        )?
    } else {
        None
    };
    let mut out = Vec::new();
    let active_producers = &view.active_producers;
    let bytes = walk_batches(
        segment,
        &mut io.read_buffer,
        io.io_buffer_bytes,
        io.io_buffer_bytes_max.max(max_message_bytes),
        &io.throttler,
        check_done,
        |batch| {
            let ends_group = filter.is_last_of_group && Some(batch.position) == last_batch_position;
            let at = batch.position;
            let batch = batch.batch;
            stats.bytes_read += batch.size_bytes() as u64;
            out.clear();
            let retained = filter
                .filter_batch(&batch, ends_group, active_producers, &mut out)
                .map_err(|e| match e {
                    FilterError::Decode(e) => corrupt(segment, at, e),
                    FilterError::Storage(e) => e,
                })?;
            stats.messages_read += retained.read;
            if !out.is_empty() {
                stats.messages_written += retained.kept;
                stats.bytes_written += out.len() as u64;
                io.throttler.maybe_throttle(out.len() as u64);
                dest.append(
                    retained.max_offset,
                    retained.max_timestamp,
                    retained.offset_of_max_timestamp,
                    &out,
                )?;
            }
            Ok(true)
        },
    )?;
    debug_assert!(bytes <= u64::from(segment.size_bytes));
    for txn in filter.transactions.take_retained_aborted() {
        dest.append_aborted_txn(txn)?;
    }
    Ok(())
}

/// The position of the last batch of `segment` (headers only), or `None` when it is empty.
fn last_batch_position(
    segment: &SegmentView,
    buffer: &mut Vec<u8>,
    buffer_bytes: usize,
    buffer_bytes_max: usize,
    check_done: CheckDone<'_>,
) -> Result<Option<u64>> {
    let mut last = None;
    let unthrottled = Throttler::unlimited();
    walk_batches(segment, buffer, buffer_bytes, buffer_bytes_max, &unthrottled, check_done, |b| {
        last = Some(b.position);
        Ok(true)
    })?;
    Ok(last)
}

fn limits() -> DecodeLimits {
    DecodeLimits::default()
}

/// A decode error in `segment`, at the position it names or else `position` (its batch's).
fn corrupt(segment: &SegmentView, position: u64, source: seglog_format::DecodeError) -> Error {
    let position = match &source {
        seglog_format::DecodeError::At { position, .. } => *position,
        _ => position,
    };
    Error::Corrupt { path: segment.log_path.clone(), position, source }
}

/// Deletes `.cleaned` files of `base_offset` left by an earlier failed round (Kafka's
/// `LogSegment.deleteIfExists` before `createNewCleanedSegment`).
fn remove_leftover_cleaned(view: &CleanerView, base_offset: i64) -> Result<()> {
    use seglog_format::FileKind;
    for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex] {
        let live = crate::segment::segment_path(&view.dir, base_offset, kind);
        let path = std::path::PathBuf::from(format!("{}{CLEANED_SUFFIX}", live.display()));
        match view.fs.remove(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(Error::io("delete leftover cleaned file", &path, error)),
        }
    }
    Ok(())
}

/// Calls `visit` with every whole batch of `segment`, in order, reading through a buffer of
/// `buffer_bytes` that doubles (to at most `buffer_bytes_max`) when a batch does not fit
/// (Kafka's `growBuffersOrFail`). `visit` returns whether to go on. Every batch's checksum is
/// verified: the cleaner never rewrites bytes it cannot trust. Returns the bytes walked.
fn walk_batches(
    segment: &SegmentView,
    buffer: &mut Vec<u8>,
    buffer_bytes: usize,
    buffer_bytes_max: usize,
    throttler: &Throttler,
    check_done: CheckDone<'_>,
    mut visit: impl FnMut(seglog_format::PositionedBatch<'_>) -> Result<bool>,
) -> Result<u64> {
    let end = u64::from(segment.size_bytes);
    let mut position = 0u64;
    let mut window = buffer_bytes;
    while position < end {
        check_done()?;
        let want = usize::try_from(end - position).unwrap_or(usize::MAX).min(window);
        buffer.resize(want, 0);
        read_at(segment.log.as_ref(), &segment.log_path, buffer, position)?;
        throttler.maybe_throttle(want as u64);
        let mut batches = Batches::at_position(buffer, position);
        for item in batches.by_ref() {
            let positioned = item.map_err(|e| corrupt(segment, position, e))?;
            positioned.batch.validate().map_err(|e| corrupt(segment, positioned.position, e))?;
            if !visit(positioned)? {
                return Ok(positioned_end(&positioned));
            }
        }
        let next = batches.next_position();
        if next == position {
            // Not one whole batch in the window: its size says how much it needs.
            let size = buffer
                .get(8..12)
                .map(|bytes| i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]));
            let needed = size.map_or(0, |size| i64::from(size) + 12);
            if needed <= 0 || position + needed as u64 > end {
                return Err(Error::CorruptLog {
                    path: segment.log_path.clone(),
                    position,
                    reason: format!(
                        "a batch of {needed} bytes does not fit the {} bytes left in the segment",
                        end - position
                    ),
                });
            }
            let needed = needed as usize;
            if needed > buffer_bytes_max {
                return Err(Error::CorruptLog {
                    path: segment.log_path.clone(),
                    position,
                    reason: format!(
                        "a batch of {needed} bytes is larger than the cleaner's largest buffer \
                         ({buffer_bytes_max} bytes: max.message.bytes)"
                    ),
                });
            }
            window = needed.max(window.saturating_mul(2)).min(buffer_bytes_max);
            continue;
        }
        position = next;
        window = buffer_bytes;
    }
    Ok(end)
}

fn positioned_end(positioned: &seglog_format::PositionedBatch<'_>) -> u64 {
    positioned.position + positioned.batch.size_bytes() as u64
}

fn read_at(file: &dyn File, path: &Path, buffer: &mut [u8], position: u64) -> Result<()> {
    file.read_exact_at(buffer, position).map_err(|e| Error::io("read segment", path, e))
}

/// Kafka's `groupSegmentsBySize`: consecutive segments whose summed `.log` size stays within
/// `segment_bytes`, whose summed index sizes stay within `index_bytes_max`, and whose offsets
/// still fit 31-bit relative offsets from the group's first base.
pub(crate) fn group_segments_by_size<'a>(
    segments: &[&'a SegmentView],
    segment_bytes: u32,
    index_bytes_max: u32,
    first_uncleanable_offset: i64,
) -> Vec<Vec<&'a SegmentView>> {
    let mut groups = Vec::new();
    let mut segment_idx = 0;
    while segment_idx < segments.len() {
        let head = segments[segment_idx];
        let mut group = vec![head];
        let mut log_bytes = u64::from(head.size_bytes);
        let mut index_bytes = head.offset_index_bytes;
        let mut time_index_bytes = head.time_index_bytes;
        segment_idx += 1;
        while let Some(next) = segments.get(segment_idx) {
            // The last offset the next segment can hold: the one after it's base - 1, or
            // for the last segment the first uncleanable offset - 1.
            let last_offset_of_next = segments
                .get(segment_idx + 1)
                .map_or(first_uncleanable_offset - 1, |after| after.base_offset - 1);
            let fits = log_bytes + u64::from(next.size_bytes) <= u64::from(segment_bytes)
                && index_bytes + next.offset_index_bytes <= u64::from(index_bytes_max)
                && time_index_bytes + next.time_index_bytes <= u64::from(index_bytes_max)
                && (next.size_bytes == 0
                    || last_offset_of_next - head.base_offset <= i64::from(i32::MAX));
            if !fits {
                break;
            }
            group.push(next);
            log_bytes += u64::from(next.size_bytes);
            index_bytes += next.offset_index_bytes;
            time_index_bytes += next.time_index_bytes;
            segment_idx += 1;
        }
        groups.push(group);
    }
    groups
}

/// What survived of one batch.
#[derive(Debug, Default)]
struct Retained {
    read: u64,
    kept: u64,
    max_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
}

#[derive(Debug)]
enum FilterError {
    Decode(seglog_format::DecodeError),
    Storage(Error),
}

impl From<seglog_format::DecodeError> for FilterError {
    fn from(error: seglog_format::DecodeError) -> Self {
        Self::Decode(error)
    }
}

/// The record filter of one segment's rewrite (Kafka's `RecordFilter` in `cleanInto`).
struct Filter<'a> {
    map: &'a mut SkimpyOffsetMap,
    transactions: &'a mut CleanedTransactionMetadata,
    retain_legacy_deletes: bool,
    now_ms: i64,
    delete_retention_ms: i64,
    /// The round's first uncleanable offset: the batch ending there is kept.
    upper_bound: i64,
    is_last_of_group: bool,
}

type ActiveProducers = std::collections::BTreeMap<i64, crate::log::producer_state::LastRecord>;

impl Filter<'_> {
    /// Kafka's `checkBatchRetention`: the batch's fate, whether it is the marker of a
    /// transaction none of whose batches is left, and whether its records are all discarded.
    fn check_batch_retention(
        &mut self,
        batch: &Batch<'_>,
        ends_group: bool,
        active_producers: &ActiveProducers,
    ) -> std::result::Result<(BatchRetention, bool, bool), FilterError> {
        let can_discard_batch = if batch.is_control_batch() {
            self.transactions
                .on_control_batch_read(batch, limits())
                .map_err(FilterError::Storage)?
        } else {
            self.transactions.on_batch_read(batch)
        };
        let discard_batch_records = if batch.is_control_batch() {
            can_discard_batch && batch_delete_horizon(batch).is_some_and(|h| h <= self.now_ms)
        } else {
            can_discard_batch
        };
        let is_last_of_producer = batch.producer_id() >= 0
            && active_producers.get(&batch.producer_id()).is_some_and(|last| {
                match last.last_data_offset {
                    Some(offset) => batch.last_offset() == offset,
                    None => {
                        batch.is_control_batch() && batch.producer_epoch() == last.producer_epoch
                    }
                }
            });
        let retention =
            if is_last_of_producer || batch.next_offset() == self.upper_bound || ends_group {
                BatchRetention::RetainEmpty
            } else if discard_batch_records {
                BatchRetention::Delete
            } else {
                BatchRetention::DeleteEmpty
            };
        Ok((retention, can_discard_batch && batch.is_control_batch(), discard_batch_records))
    }

    /// Kafka's `shouldRetainRecord`.
    fn should_retain_record(&mut self, batch: &Batch<'_>, record: &Record<'_>) -> bool {
        if record.offset > self.map.latest_offset() {
            return true;
        }
        let Some(key) = record.key else { return false };
        let latest_for_key = record.offset >= self.map.get(key);
        let retain_deletes = if batch.magic() >= 2 {
            batch_delete_horizon(batch).is_none_or(|horizon| self.now_ms < horizon)
        } else {
            self.retain_legacy_deletes
        };
        latest_for_key && (record.value.is_some() || retain_deletes)
    }

    /// Kafka's `filterTo` for one batch: writes what survives of `batch` to `out` (its bytes
    /// as they are, a rebuilt batch, an empty header, or nothing).
    fn filter_batch(
        &mut self,
        batch: &Batch<'_>,
        ends_group: bool,
        active_producers: &ActiveProducers,
        out: &mut Vec<u8>,
    ) -> std::result::Result<Retained, FilterError> {
        let (retention, marker_for_empty_txn, discard_records) =
            self.check_batch_retention(batch, ends_group, active_producers)?;
        let mut result = Retained { max_offset: -1, max_timestamp: -1, ..Retained::default() };
        if retention == BatchRetention::Delete {
            return Ok(result);
        }
        let records = batch.records(limits())?;
        let mut kept: Vec<Record<'_>> = Vec::new();
        let mut write_original = true;
        let mut contains_tombstones = false;
        for record in &records {
            let record = record?;
            result.read += 1;
            let retain = !discard_records
                && (batch.is_control_batch() || self.should_retain_record(batch, &record));
            if retain {
                contains_tombstones |= record.value.is_none();
                kept.push(record);
            } else {
                write_original = false;
            }
        }
        result.kept = kept.len() as u64;
        let legacy_wrapper_partly_kept = batch.magic() < 2 && !kept.is_empty() && !write_original;
        if !kept.is_empty() {
            let needs_horizon = batch.magic() >= 2
                && (contains_tombstones || marker_for_empty_txn)
                && batch_delete_horizon(batch).is_none();
            if (write_original && !needs_horizon) || legacy_wrapper_partly_kept {
                out.extend_from_slice(batch.as_bytes());
            } else {
                let horizon = if needs_horizon {
                    Some(self.now_ms.saturating_add(self.delete_retention_ms))
                } else {
                    batch_delete_horizon(batch)
                };
                out.extend_from_slice(&rebuild(batch, &kept, horizon)?);
            }
            set_shallow(&mut result, batch, &kept);
        } else if retention == BatchRetention::RetainEmpty {
            if let Batch::V2(v2) = batch {
                let empty = EmptyHeader {
                    base_offset: v2.base_offset(),
                    last_offset: v2.last_offset(),
                    producer_id: v2.producer_id(),
                    producer_epoch: v2.producer_epoch(),
                    base_sequence: v2.base_sequence(),
                    timestamp_type: v2.timestamp_type(),
                    timestamp: v2.max_timestamp(),
                    is_transactional: v2.is_transactional(),
                    is_control: v2.is_control_batch(),
                    partition_leader_epoch: v2.partition_leader_epoch(),
                };
                out.extend_from_slice(&empty.encode()?);
            } else {
                // No empty header exists below v2: the entry stays as it is.
                out.extend_from_slice(batch.as_bytes());
            }
            result.max_offset = batch.last_offset();
            result.max_timestamp = batch.max_timestamp();
            result.offset_of_max_timestamp = batch.last_offset();
        }
        Ok(result)
    }
}

/// The offsets and timestamps a retained batch gives its segment's indexes (Kafka's
/// `updateRetainedBatchMetadata`): the batch's last offset, and the largest timestamp kept.
fn set_shallow(result: &mut Retained, batch: &Batch<'_>, kept: &[Record<'_>]) {
    result.max_offset = batch.last_offset();
    result.max_timestamp = match batch {
        Batch::V2(v2) if v2.timestamp_type() == seglog_format::TimestampType::LogAppendTime => {
            v2.max_timestamp()
        }
        _ => kept.iter().map(|r| r.timestamp).max().unwrap_or(-1),
    };
    result.offset_of_max_timestamp = batch.last_offset();
}

/// A v2 batch's delete horizon (attribute bit 6), if it has one.
fn batch_delete_horizon(batch: &Batch<'_>) -> Option<i64> {
    match batch {
        Batch::V2(v2) => v2.delete_horizon_ms(),
        Batch::Legacy(_) => None,
    }
}

/// Kafka's `buildRetainedRecordsInto` for v2: the same codec, producer fields, base offset,
/// leader epoch and timestamp type, the kept records at their offsets, and the original last
/// offset (`overrideLastOffset`), with `delete_horizon_ms` if any.
fn rebuild(
    batch: &Batch<'_>,
    kept: &[Record<'_>],
    delete_horizon_ms: Option<i64>,
) -> std::result::Result<Vec<u8>, FilterError> {
    let Batch::V2(v2) = batch else {
        return Err(FilterError::Storage(Error::InvalidArgument(
            "only v2 batches are rebuilt".to_owned(),
        )));
    };
    let compression = v2.compression().unwrap_or(Compression::None);
    let mut builder = RecordBatchBuilder::new(compression)
        .base_offset(v2.base_offset())
        .partition_leader_epoch(v2.partition_leader_epoch())
        .producer(v2.producer_id(), v2.producer_epoch(), v2.base_sequence())
        .transactional(v2.is_transactional())
        .control(v2.is_control_batch());
    if v2.timestamp_type() == seglog_format::TimestampType::LogAppendTime {
        builder = builder.log_append_time(v2.max_timestamp());
    }
    if let Some(horizon) = delete_horizon_ms {
        builder = builder.delete_horizon_ms(horizon);
    }
    for record in kept {
        builder.append_record(record)?;
    }
    builder.override_last_offset(v2.last_offset())?;
    Ok(builder.build()?)
}
