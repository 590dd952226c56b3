//! What tiered storage reads and sets of a log (Kafka's `UnifiedLog` as the
//! `RemoteLogManager` uses it): the local log start, the highest offset in the bucket, the
//! closed segments to upload, and a log rebuilt at the end of its remote part.

use super::{
    AbortedTransaction, PartitionLog, State, aborted_transactions_below, last_stable_offset,
    offset_metadata, poison, set_high_watermark,
};
use crate::error::{Error, Result};
use crate::segment::LogSegment;

/// A closed local segment that may be uploaded: below the last stable offset, not active.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClosedSegment {
    /// Its base offset.
    pub base_offset: i64,
    /// The next segment's base offset: one past its last offset.
    pub end_offset: i64,
    /// Bytes of its `.log`.
    pub size_bytes: u32,
    /// Its largest record timestamp, or its `.log`'s mtime when no batch carried one.
    pub largest_timestamp_ms: i64,
}

impl PartitionLog {
    /// The first offset of the local segments (Kafka's `localLogStartOffset`).
    pub fn local_log_start_offset(&self) -> Result<i64> {
        Ok(self.read_state()?.local_log_start_offset)
    }

    /// The last offset the bucket holds as far as this log knows, -1 before the tiering said
    /// (Kafka's `highestOffsetInRemoteStorage`).
    pub fn highest_offset_in_remote_storage(&self) -> Result<i64> {
        Ok(self.read_state()?.highest_offset_in_remote_storage)
    }

    /// Records that the bucket holds every offset up to `offset`, after the manifest naming it
    /// was committed (Kafka's `updateHighestOffsetInRemoteStorage`): local retention may then
    /// delete the segments below. It never moves back.
    pub fn update_highest_offset_in_remote_storage(&self, offset: i64) -> Result<i64> {
        let mut state = self.write_state()?;
        state.highest_offset_in_remote_storage = state.highest_offset_in_remote_storage.max(offset);
        Ok(state.highest_offset_in_remote_storage)
    }

    /// The closed segments from `from_offset` on, in offset order, that are wholly below the
    /// last stable offset (Kafka's `RemoteLogManager.candidateLogSegments`): the active segment
    /// never is.
    pub fn closed_segments_from(&self, from_offset: i64) -> Result<Vec<ClosedSegment>> {
        let state = self.read_state()?;
        let stable = last_stable_offset(&state);
        let segments: Vec<&LogSegment> = state.local.segments().iter().collect();
        let mut closed = Vec::new();
        for pair in segments.windows(2) {
            let (segment, next) = (pair[0], pair[1]);
            let end_offset = next.base_offset();
            if end_offset > stable {
                break;
            }
            if end_offset <= from_offset {
                continue;
            }
            closed.push(ClosedSegment {
                base_offset: segment.base_offset(),
                end_offset,
                size_bytes: segment.size_bytes(),
                largest_timestamp_ms: segment.largest_timestamp()?,
            });
        }
        Ok(closed)
    }

    /// Bytes of the local segments at or after `from_offset` that the bucket does not hold yet:
    /// what keeps local disk from shrinking while uploads cannot proceed.
    pub fn bytes_not_in_remote_storage(&self) -> Result<u64> {
        let state = self.read_state()?;
        let uploaded_below = state.highest_offset_in_remote_storage.saturating_add(1);
        let segments: Vec<&LogSegment> = state.local.segments().iter().collect();
        // A segment ends where the next begins (the last at the log end): no file is read.
        let ends = segments
            .iter()
            .skip(1)
            .map(|next| next.base_offset())
            .chain(std::iter::once(state.local.log_end_offset()));
        Ok(segments
            .iter()
            .zip(ends)
            .filter(|(_, end)| *end > uploaded_below)
            .map(|(segment, _)| u64::from(segment.size_bytes()))
            .sum())
    }

    /// The aborted transactions of the local segments that a read_committed read of
    /// [`start_offset`, `upper_bound_offset`) skips, from the segment holding `start_offset`
    /// (or the first local one, when it is below them: a read that began in the bucket) on
    /// (Kafka's `collectAbortedTransactions` over the local segments).
    pub fn aborted_transactions_from(
        &self,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTransaction>> {
        let state = self.read_state()?;
        Ok(aborted_transactions_below(&state.local, start_offset, upper_bound_offset))
    }

    /// Starts an empty tiered log again at the end of its remote part (a broker with an empty
    /// disk and the same bucket): the local log moves to `remote_end_offset`, the log start to
    /// `remote_log_start_offset`, and the bucket holds everything below. A log that already
    /// holds records above its remote part's start is left as it is (`false`); one whose local
    /// records end below the remote end but are not empty is an error, as the two disagree.
    pub fn start_at_remote_end(
        &self,
        remote_log_start_offset: i64,
        remote_end_offset: i64,
        now_ms: i64,
    ) -> Result<bool> {
        let mut state = self.write_state()?;
        let log_end_offset = state.local.log_end_offset();
        if log_end_offset >= remote_end_offset {
            return Ok(false);
        }
        if log_end_offset > state.local_log_start_offset {
            return Err(Error::InvalidArgument(format!(
                "the local log [{}, {log_end_offset}) ends below the remote log's end \
                 {remote_end_offset}",
                state.local_log_start_offset
            )));
        }
        self.segments_changed_if(true);
        let result = (|| {
            let state: &mut State = &mut state;
            state.local.truncate_fully_and_start_at(remote_end_offset, now_ms)?;
            state.epoch_cache.clear()?;
            state.producers.truncate_fully_and_start_at(remote_end_offset)?;
            state.log_start_offset = remote_log_start_offset.min(remote_end_offset);
            state.local_log_start_offset = remote_end_offset;
            state.highest_offset_in_remote_storage = remote_end_offset - 1;
            let metadata = offset_metadata(&state.local, remote_end_offset)?;
            set_high_watermark(state, metadata);
            Ok(true)
        })();
        poison(&mut state, result)
    }
}
