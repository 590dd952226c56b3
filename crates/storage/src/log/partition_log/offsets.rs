//! Offsets by timestamp (Kafka's `UnifiedLog.fetchOffsetByTimestamp`): the answers to
//! `ListOffsets` for the special timestamps and for a real one (spec §7.7).

use super::{
    EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP, LATEST_TIMESTAMP,
    MAX_TIMESTAMP, OffsetAndTimestamp, PartitionLog,
};
use crate::error::{Error, Result};
use crate::segment::LogSegment;

impl PartitionLog {
    /// The offset for a `ListOffsets` timestamp: -1 latest, -2 earliest, -3 the record with the
    /// largest timestamp, -4 the first local offset, -5 the last offset in remote storage (-1
    /// with epoch -1 for an untiered log, as Kafka answers), or the first record at or after a
    /// real timestamp (spec §7.7).
    pub fn fetch_offset_by_timestamp(&self, target: i64) -> Result<Option<OffsetAndTimestamp>> {
        let state = self.read_state()?;
        let log_end_offset = state.local.log_end_offset();
        match target {
            LATEST_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                timestamp: -1,
                offset: log_end_offset,
                leader_epoch: state.epoch_cache.latest_epoch(),
            })),
            EARLIEST_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                timestamp: -1,
                offset: state.log_start_offset,
                leader_epoch: state
                    .epoch_cache
                    .earliest_entry()
                    .filter(|entry| entry.start_offset <= state.log_start_offset)
                    .map(|entry| entry.epoch),
            })),
            EARLIEST_LOCAL_TIMESTAMP => Ok(Some(OffsetAndTimestamp {
                timestamp: -1,
                offset: state.local_log_start_offset,
                leader_epoch: state.epoch_cache.epoch_for_offset(state.local_log_start_offset),
            })),
            LATEST_TIERED_TIMESTAMP if !state.config.remote_storage_enable => {
                Ok(Some(OffsetAndTimestamp { timestamp: -1, offset: -1, leader_epoch: Some(-1) }))
            }
            LATEST_TIERED_TIMESTAMP => {
                let highest = state.highest_offset_in_remote_storage;
                Ok(Some(OffsetAndTimestamp {
                    timestamp: -1,
                    offset: highest,
                    leader_epoch: state.epoch_cache.epoch_for_offset(highest),
                }))
            }
            MAX_TIMESTAMP => {
                let best = state
                    .local
                    .segments()
                    .iter()
                    .filter_map(|segment| {
                        segment.largest_record_timestamp().map(|ts| (ts, segment))
                    })
                    .fold(None, |best: Option<(i64, &LogSegment)>, (ts, segment)| match best {
                        Some((best_ts, _)) if best_ts >= ts => best,
                        _ => Some((ts, segment)),
                    });
                let Some((timestamp, segment)) = best else { return Ok(None) };
                let found = segment.find_offset_by_timestamp(timestamp, state.log_start_offset)?;
                Ok(found.map(|found| OffsetAndTimestamp {
                    timestamp: found.timestamp,
                    offset: found.offset,
                    leader_epoch: found.leader_epoch,
                }))
            }
            target if target >= 0 => {
                for segment in state.local.segments().iter() {
                    if segment.largest_timestamp()? < target {
                        continue;
                    }
                    if let Some(found) =
                        segment.find_offset_by_timestamp(target, state.log_start_offset)?
                    {
                        return Ok(Some(OffsetAndTimestamp {
                            timestamp: found.timestamp,
                            offset: found.offset,
                            leader_epoch: found.leader_epoch,
                        }));
                    }
                }
                Ok(None)
            }
            other => {
                Err(Error::InvalidArgument(format!("unsupported ListOffsets timestamp {other}")))
            }
        }
    }
}
