//! The last batches appended to a segment by this process, so that a lookup of a hot offset
//! (a consumer at the tail, a producer's just-acknowledged offset) finds its batch without
//! reading the offset index or scanning the file. Bounded, and emptied whenever the segment
//! changes other than by an append.

use std::collections::VecDeque;

use super::LogOffsetPosition;

/// Batches a segment remembers, at most (16 bytes each).
pub(super) const RECENT_BATCHES_MAX: usize = 32;

/// Consecutive batches ending at the segment's end, newest last.
#[derive(Debug, Default)]
pub(super) struct RecentBatches {
    entries: VecDeque<LogOffsetPosition>,
    /// The last offset before the first entry: the entries answer for offsets above it. `None`
    /// until an append gives one (the first append after an open or a change only sets it).
    floor: Option<i64>,
}

impl RecentBatches {
    /// Records an append of exactly one batch ending at `last_offset`; anything else
    /// (`one_batch` false) empties the cache, which the next one-batch append starts again.
    pub(super) fn appended(&mut self, one_batch: bool, batch: LogOffsetPosition) {
        if !one_batch {
            self.clear();
            return;
        }
        if self.floor.is_none() {
            // Its own start is unknown here; the batches after it are covered.
            self.floor = Some(batch.offset);
            return;
        }
        if self.entries.len() == RECENT_BATCHES_MAX
            && let Some(oldest) = self.entries.pop_front()
        {
            self.floor = Some(oldest.offset);
        }
        self.entries.push_back(batch);
    }

    /// The first remembered batch whose last offset is at least `offset`, if the cache covers
    /// `offset`.
    pub(super) fn lookup(&self, offset: i64) -> Option<LogOffsetPosition> {
        if offset <= self.floor? {
            return None;
        }
        let idx = self.entries.partition_point(|entry| entry.offset < offset);
        self.entries.get(idx).copied()
    }

    /// Forgets everything (a truncation, a recovery).
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.floor = None;
    }
}
