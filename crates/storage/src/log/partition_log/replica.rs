//! What ISR replication asks of a partition log (Kafka's `UnifiedLog` as `Partition` drives it
//! with followers): a leader's append that leaves the high watermark to the in-sync replicas,
//! leadership without moving the high watermark, the high watermark raised to the minimum log
//! end of the in-sync replicas, and a follower's high watermark and log start from its leader.

use super::txn::set_high_watermark;
use super::{AppendInfo, PartitionLog, offset_metadata};
use crate::error::Result;
use crate::log::validator::AppendOrigin;

impl PartitionLog {
    /// A replicated leader's append (Kafka's `Partition.appendRecordsToLeader`): validated,
    /// offsets assigned and stamped with the latest leader epoch (the one
    /// [`become_replicated_leader`](Self::become_replicated_leader) assigned), as
    /// [`append_as_sole_leader_verified`](Self::append_as_sole_leader_verified) does, but the
    /// high watermark stays: it moves when the in-sync replicas have the records
    /// ([`maybe_raise_high_watermark`](Self::maybe_raise_high_watermark)).
    pub fn append_as_replicated_leader(
        &self,
        records: &[u8],
        origin: AppendOrigin,
        now_ms: i64,
        guard: Option<u64>,
    ) -> Result<AppendInfo> {
        self.append_at_latest_epoch(records, (origin, guard), now_ms, false)
    }

    /// A leader's append stamped with the latest leader epoch (0 for a new log), under one
    /// lock; `sole` (the ISR is this replica alone) moves the high watermark to the log end in
    /// the same lock. The durability mode is applied after it.
    pub(super) fn append_at_latest_epoch(
        &self,
        records: &[u8],
        (origin, guard): (AppendOrigin, Option<u64>),
        now_ms: i64,
        sole: bool,
    ) -> Result<AppendInfo> {
        let (info, flush_messages) = {
            let mut state = self.write_state()?;
            let leader_epoch = state.epoch_cache.latest_epoch().unwrap_or(0).max(0);
            let mut info =
                Self::append_locked(&mut state, records, leader_epoch, (origin, guard), now_ms)?;
            if sole && state.high_watermark.message_offset < state.local.log_end_offset() {
                let log_end = state.local.next_offset_metadata();
                set_high_watermark(&mut state, log_end);
            }
            info.high_watermark = state.high_watermark.message_offset;
            (info, state.config.flush_messages)
        };
        self.after_append(info, flush_messages, now_ms)
    }

    /// Takes leadership at `leader_epoch` with followers (Kafka's `Partition.makeLeader`): an
    /// epoch above the latest starts at the log end; the high watermark stays where the last
    /// leader or this replica's checkpoint left it. Returns the log end offset, where the
    /// epoch starts.
    pub fn become_replicated_leader(&self, leader_epoch: i32) -> Result<i64> {
        let mut state = self.write_state()?;
        let log_end = state.local.log_end_offset();
        if state.epoch_cache.latest_epoch().is_none_or(|latest| leader_epoch > latest) {
            let result = state.epoch_cache.assign(leader_epoch, log_end);
            super::poison(&mut state, result)?;
        }
        Ok(log_end)
    }

    /// Raises the high watermark to `candidate` (the minimum log end offset of the in-sync
    /// replicas), never past the log end and never down (Kafka's `maybeIncrementHighWatermark`).
    /// Returns the high watermark.
    pub fn maybe_raise_high_watermark(&self, candidate: i64) -> Result<i64> {
        {
            let state = self.read_state()?;
            let target = candidate.min(state.local.log_end_offset());
            if target <= state.high_watermark.message_offset {
                return Ok(state.high_watermark.message_offset);
            }
        }
        let mut state = self.write_state()?;
        let target = candidate.min(state.local.log_end_offset());
        if target > state.high_watermark.message_offset {
            let metadata = offset_metadata(&state.local, target)?;
            set_high_watermark(&mut state, metadata);
        }
        Ok(state.high_watermark.message_offset)
    }

    /// A follower's offsets after a fetch (Kafka's `ReplicaFetcherThread.processPartitionData`):
    /// the high watermark is the leader's, bounded by this log's end; the log start moves up to
    /// the leader's, bounded by the new high watermark. Returns the high watermark.
    pub fn follow_leader_offsets(
        &self,
        leader_high_watermark: i64,
        leader_log_start: i64,
    ) -> Result<i64> {
        let mut state = self.write_state()?;
        let target =
            leader_high_watermark.clamp(state.local_log_start_offset, state.local.log_end_offset());
        if target != state.high_watermark.message_offset {
            let metadata = offset_metadata(&state.local, target)?;
            set_high_watermark(&mut state, metadata);
        }
        let new_start = leader_log_start.min(target);
        if new_start > state.log_start_offset {
            state.log_start_offset = new_start;
            state.local_log_start_offset = state.local_log_start_offset.max(new_start);
            state.producers.on_log_start_offset_incremented(new_start);
            let result = state.epoch_cache.truncate_from_start(new_start);
            super::poison(&mut state, result)?;
        }
        Ok(state.high_watermark.message_offset)
    }
}
