//! A partition log's segments as figures, read under one read lock without touching a file:
//! what the broker's web console draws as the partition's timeline (each segment to scale,
//! its offsets, times, index fill, and whether it is active, tiered or being deleted).

use super::{PartitionLog, last_stable_offset};
use crate::error::Result;

/// A log's offsets, size and segment count, read under one read lock (a row of the console's
/// partition tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogFigures {
    /// The log start offset.
    pub log_start_offset: i64,
    /// The first local offset.
    pub local_log_start_offset: i64,
    /// The high watermark.
    pub high_watermark: i64,
    /// The last stable offset.
    pub last_stable_offset: i64,
    /// The log end offset.
    pub log_end_offset: i64,
    /// Bytes of the local segments.
    pub size_bytes: u64,
    /// Local segments.
    pub segments: usize,
}

/// One segment of a log, as the console shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentSummary {
    /// Its base offset (the 20-digit file name).
    pub base_offset: i64,
    /// One past its last offset: the next segment's base offset, or the log end for the active
    /// segment; `None` for a segment being deleted.
    pub end_offset: Option<i64>,
    /// Bytes of its `.log`.
    pub size_bytes: u32,
    /// The first batch's largest timestamp, when it has one (Kafka's rolling-based
    /// timestamp, what `segment.ms` counts from).
    pub first_timestamp_ms: Option<i64>,
    /// Its largest record timestamp, when any batch carried one.
    pub largest_timestamp_ms: Option<i64>,
    /// Entries in its `.index`, and how many `segment.index.bytes` allows.
    pub offset_index_entries: u64,
    /// `segment.index.bytes` / 8.
    pub offset_index_entries_max: u64,
    /// Entries in its `.timeindex`, and how many `segment.index.bytes` allows.
    pub time_index_entries: u64,
    /// `segment.index.bytes` / 12.
    pub time_index_entries_max: u64,
    /// The segment appends go to.
    pub active: bool,
    /// Renamed `.deleted` and waiting for `file.delete.delay.ms`.
    pub deleting: bool,
}

/// [`PartitionLog::summary`]: the log's offsets and every segment, at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSummary {
    /// The log start offset (the remote part's first offset on a tiered log).
    pub log_start_offset: i64,
    /// The first local offset.
    pub local_log_start_offset: i64,
    /// The high watermark.
    pub high_watermark: i64,
    /// The log end offset.
    pub log_end_offset: i64,
    /// The recovery point: offsets below it are on disk for sure.
    pub recovery_point: i64,
    /// The last offset the bucket holds, -1 when none (or not tiered).
    pub highest_offset_in_remote_storage: i64,
    /// The local segments in offset order, then the ones being deleted.
    pub segments: Vec<SegmentSummary>,
}

/// Entries of a `.index` that `segment.index.bytes` allows.
const OFFSET_ENTRY_BYTES: u64 = 8;
/// Entries of a `.timeindex` that `segment.index.bytes` allows.
const TIME_ENTRY_BYTES: u64 = 12;

impl PartitionLog {
    /// The log's offsets, size and segment count, under one read lock, without an allocation.
    pub fn figures(&self) -> Result<LogFigures> {
        let state = self.read_state()?;
        Ok(LogFigures {
            log_start_offset: state.log_start_offset,
            local_log_start_offset: state.local_log_start_offset,
            high_watermark: state.high_watermark.message_offset,
            last_stable_offset: last_stable_offset(&state),
            log_end_offset: state.local.log_end_offset(),
            size_bytes: state.local.segments().size_bytes(),
            segments: state.local.segments().len(),
        })
    }

    /// The log's offsets and its segments, local and being deleted, under one read lock: no
    /// file is read (an unloaded log is loaded first, as any read does).
    pub fn summary(&self) -> Result<LogSummary> {
        let state = self.read_state()?;
        let index_bytes = u64::from(state.config.segment_index_bytes);
        let segments: Vec<_> = state.local.segments().iter().collect();
        let ends = segments
            .iter()
            .skip(1)
            .map(|next| next.base_offset())
            .chain(std::iter::once(state.local.log_end_offset()));
        let n_segments = segments.len();
        let mut summaries: Vec<SegmentSummary> = segments
            .iter()
            .zip(ends)
            .enumerate()
            .map(|(i, (segment, end))| {
                let first = segment.first_batch_timestamp_or_max();
                SegmentSummary {
                    base_offset: segment.base_offset(),
                    end_offset: Some(end),
                    size_bytes: segment.size_bytes(),
                    first_timestamp_ms: (first != i64::MAX && first >= 0).then_some(first),
                    largest_timestamp_ms: segment.largest_record_timestamp(),
                    offset_index_entries: segment.offset_index().n_entries() as u64,
                    offset_index_entries_max: index_bytes / OFFSET_ENTRY_BYTES,
                    time_index_entries: segment.time_index().n_entries() as u64,
                    time_index_entries_max: index_bytes / TIME_ENTRY_BYTES,
                    active: i + 1 == n_segments,
                    deleting: false,
                }
            })
            .collect();
        let mut deleting = state.local.pending_deletes();
        deleting.sort_unstable();
        summaries.extend(deleting.into_iter().map(|(base_offset, size_bytes)| SegmentSummary {
            base_offset,
            end_offset: None,
            size_bytes,
            first_timestamp_ms: None,
            largest_timestamp_ms: None,
            offset_index_entries: 0,
            offset_index_entries_max: index_bytes / OFFSET_ENTRY_BYTES,
            time_index_entries: 0,
            time_index_entries_max: index_bytes / TIME_ENTRY_BYTES,
            active: false,
            deleting: true,
        }));
        Ok(LogSummary {
            log_start_offset: state.log_start_offset,
            local_log_start_offset: state.local_log_start_offset,
            high_watermark: state.high_watermark.message_offset,
            log_end_offset: state.local.log_end_offset(),
            recovery_point: state.local.recovery_point(),
            highest_offset_in_remote_storage: state.highest_offset_in_remote_storage,
            segments: summaries,
        })
    }
}
