//! What the log cleaner reads of a [`PartitionLog`] and how it swaps its output in: one
//! consistent view taken under the read lock, and one checked swap under the write lock.
//!
//! The cleaner reads the segments of the view through their file handles, without the lock: a
//! segment below the active one never changes until it leaves the log, and an open handle keeps
//! reading a file that was renamed `.deleted`. Leaving the log bumps the segments generation, and
//! [`PartitionLog::replace_cleaned`] swaps in only when the generation is still the view's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{PartitionLog, State, poison};
use crate::config::LogConfig;
use crate::error::Result;
use seglog_format::AbortedTxn;

use crate::io::{File, Fs};
use crate::log::local_log::LocalLogConfig;
use crate::log::producer_state::LastRecord;
use crate::segment::LogSegment;

/// One segment as the cleaner sees it.
#[derive(Debug, Clone)]
pub(crate) struct SegmentView {
    /// The segment's base offset.
    pub(crate) base_offset: i64,
    /// Bytes of batches in its `.log`.
    pub(crate) size_bytes: u32,
    /// The `.log`'s handle.
    pub(crate) log: Arc<dyn File>,
    /// The `.log`'s path, for messages.
    pub(crate) log_path: PathBuf,
    /// Bytes of valid offset index entries (Kafka's `offsetIndex.sizeInBytes`).
    pub(crate) offset_index_bytes: u64,
    /// Bytes of valid time index entries.
    pub(crate) time_index_bytes: u64,
    /// The largest timestamp of the segment, or its mtime when it has none (Kafka's
    /// `largestTimestamp`).
    pub(crate) largest_timestamp: i64,
    /// The first batch's max timestamp, or `i64::MAX` when unknown (Kafka's
    /// `getFirstBatchTimestamp`).
    pub(crate) first_batch_timestamp: i64,
    /// The `.log`'s last-modified time.
    pub(crate) last_modified_ms: i64,
}

/// A partition as the cleaner sees it, taken under one read lock.
#[derive(Debug, Clone)]
pub(crate) struct CleanerView {
    /// The file system the log is on.
    pub(crate) fs: Arc<dyn Fs>,
    /// The partition directory.
    pub(crate) dir: PathBuf,
    /// The segment settings, for the cleaned segments.
    pub(crate) local_config: LocalLogConfig,
    /// The topic's configuration.
    pub(crate) config: LogConfig,
    /// The log start offset.
    pub(crate) log_start_offset: i64,
    /// The log end offset.
    pub(crate) log_end_offset: i64,
    /// The last stable offset: nothing at or above it is cleaned.
    pub(crate) last_stable_offset: i64,
    /// Every segment in offset order, the active one last.
    pub(crate) segments: Vec<SegmentView>,
    /// The last batch of each idempotent producer (kept by the cleaner, emptied if need be).
    pub(crate) active_producers: BTreeMap<i64, LastRecord>,
    /// The aborted transactions of every segment's `.txnindex`.
    pub(crate) aborted_txns: Vec<AbortedTxn>,
    /// The segments generation at the view.
    pub(crate) generation: u64,
}

impl CleanerView {
    /// The active segment's base offset.
    pub(crate) fn active_base_offset(&self) -> i64 {
        self.segments.last().map_or(self.log_end_offset, |segment| segment.base_offset)
    }

    /// The segments below the active one from the one holding `from` (Kafka's
    /// `nonActiveLogSegmentsFrom`).
    /// Empty when `from` lies in the active segment.
    pub(crate) fn non_active_from(&self, from: i64) -> impl Iterator<Item = &SegmentView> {
        let n_non_active = self.segments.len().saturating_sub(1);
        let first = self.segments.iter().rposition(|s| s.base_offset <= from).unwrap_or(0);
        self.segments[first.min(n_non_active)..n_non_active].iter()
    }

    /// The segments that hold offsets in `[from, to)` (Kafka's `logSegments(from, to)`): from the
    /// one holding `from` (or the first) to the last based below `to`.
    pub(crate) fn segments_in(&self, from: i64, to: i64) -> impl Iterator<Item = &SegmentView> {
        let first = self.segments.iter().rposition(|s| s.base_offset <= from).unwrap_or(0);
        self.segments[first..].iter().take_while(move |s| s.base_offset < to)
    }
}

impl PartitionLog {
    /// The cleaner's view of this log.
    pub(crate) fn cleaner_view(&self) -> Result<CleanerView> {
        let state = self.read_state()?;
        let generation = self.segments_generation.load(Ordering::SeqCst);
        let mut segments = Vec::with_capacity(state.local.segments().len());
        let mut aborted_txns = Vec::new();
        for segment in state.local.segments().iter() {
            aborted_txns.extend_from_slice(segment.txn_index().all_aborted_txns());
            segments.push(SegmentView {
                base_offset: segment.base_offset(),
                size_bytes: segment.size_bytes(),
                log: segment.log_file(),
                log_path: segment.log_path().to_owned(),
                offset_index_bytes: segment.offset_index().size_bytes(),
                time_index_bytes: segment.time_index().file().size_bytes(),
                largest_timestamp: segment.largest_timestamp()?,
                first_batch_timestamp: segment.first_batch_timestamp_or_max(),
                last_modified_ms: segment.last_modified_ms()?,
            });
        }
        Ok(CleanerView {
            fs: state.local.fs(),
            dir: self.dir(),
            local_config: *state.local.config(),
            config: state.config.clone(),
            log_start_offset: state.log_start_offset,
            log_end_offset: state.local.log_end_offset(),
            last_stable_offset: super::last_stable_offset(&state),
            segments,
            active_producers: state.producers.last_records_of_active_producers(),
            aborted_txns,
            generation,
        })
    }

    /// Swaps `cleaned` (flushed, its files named `.cleaned`) in for the segments at `old_bases`
    /// if no segment left or shrank since the view of `generation` and every old segment is
    /// still there with `old_sizes`. Returns `false`, having deleted `cleaned`'s files, when the
    /// log changed; an I/O error poisons the log (the next load completes or undoes the swap).
    ///
    /// On success `generation` becomes the one after the swap, for the round's next group.
    pub(crate) fn replace_cleaned(
        &self,
        cleaned: LogSegment,
        old: &[(i64, u32)],
        generation: &mut u64,
        now_ms: i64,
    ) -> Result<bool> {
        let mut state = self.write_state()?;
        let unchanged = self.segments_generation.load(Ordering::SeqCst) == *generation
            && old.iter().all(|(base, size)| {
                state.local.segments().get(*base).is_some_and(|s| s.size_bytes() == *size)
            });
        if !unchanged {
            drop(state);
            cleaned.delete_files()?;
            return Ok(false);
        }
        self.segments_changed_if(true);
        *generation = self.segments_generation.load(Ordering::SeqCst);
        let bases: Vec<i64> = old.iter().map(|(base, _)| *base).collect();
        let result = swap_in(&mut state, cleaned, &bases, now_ms);
        poison(&mut state, result).map(|()| true)
    }
}

fn swap_in(state: &mut State, cleaned: LogSegment, old_bases: &[i64], now_ms: i64) -> Result<()> {
    state.local.replace_segments(cleaned, old_bases, now_ms)
}
