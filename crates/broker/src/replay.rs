//! The replay of a coordinator's internal topic at start (`__consumer_offsets` for the group
//! coordinator, `__transaction_state` for the transaction coordinator): one partition read from
//! its log start to its log end, batch by batch, each data record and each control batch handed
//! to the coordinator once, in offset order.

use seglog_format::{Batch, Batches, DecodeLimits, Record};
use seglog_storage::log::partition_log::{Isolation, PartitionLog};

use crate::error::{Cause, Error};

/// How much of a partition one read during a replay returns.
const READ_BYTES_MAX: u32 = 8 << 20;

/// What a replay hands over.
pub(crate) enum Replayed<'b> {
    /// A data record of its batch (records below the log start are not handed over).
    Record(&'b Batch<'b>, Record<'b>),
    /// A control batch (a transaction marker).
    Control(&'b Batch<'b>),
}

/// Replays `topic`-`partition` through `on`. A read or decode error names the partition; an
/// error `on` returns stops the replay and is returned as it is.
pub(crate) fn replay_partition(
    log: &PartitionLog,
    topic: &'static str,
    partition: i32,
    mut on: impl FnMut(Replayed<'_>) -> Result<(), Error>,
) -> Result<(), Error> {
    let failed =
        |error: Cause| Error::GroupLoad { at: format!("{topic}-{partition}"), source: error };
    let end = log.log_end_offset().map_err(|error| failed(error.into()))?;
    let mut next = log.log_start_offset().map_err(|error| failed(error.into()))?;
    let limits = DecodeLimits::default();
    while next < end {
        let data = log
            .read(next, READ_BYTES_MAX, Isolation::LogEnd, true)
            .map_err(|error| failed(error.into()))?;
        if data.records.is_empty() {
            break;
        }
        let before = next;
        for entry in Batches::new(&data.records) {
            let entry = entry.map_err(|error| failed(error.into()))?;
            let batch = entry.batch;
            next = next.max(batch.last_offset() + 1);
            if batch.last_offset() < before {
                continue;
            }
            if batch.is_control_batch() {
                on(Replayed::Control(&batch))?;
                continue;
            }
            let records = batch.records(limits).map_err(|error| failed(error.into()))?;
            for record in &records {
                let record = record.map_err(|error| failed(error.into()))?;
                if record.offset >= before {
                    on(Replayed::Record(&batch, record))?;
                }
            }
        }
        if next <= before {
            return Err(Error::GroupLoadStalled { topic, partition, offset: before });
        }
    }
    Ok(())
}
