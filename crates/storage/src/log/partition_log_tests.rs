//! `UnifiedLogTest`'s storage behaviours (spec §11.8), durability modes, poisoning, and readers
//! racing a writer, on the simulated file system.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use seglog_format::{
    Batches, Compression, DecodeLimits, FileKind, FileState, ProducerSnapshotEntry,
    RecordBatchBuilder, SegmentFileName, decode_producer_snapshot, encode_producer_snapshot,
};

use super::load::{LoadParams, LoadReport};
use super::partition_log::{
    AppendInfo, EARLIEST_TIMESTAMP, Isolation, LATEST_TIMESTAMP, MAX_TIMESTAMP, PartitionLog,
    TopicPartition,
};
use super::validator::AppendOrigin;
use crate::config::{DurabilityMode, LogConfig};
use crate::error::Error;
use crate::io::{FaultKind, FaultPlan, Fs, OpenMode, SimFs, StdFs, read_all};
use crate::testing::producer_batch;

fn dir() -> PathBuf {
    PathBuf::from("/logs/orders-0")
}

fn open_with(fs: &SimFs, config: LogConfig, params: LoadParams) -> PartitionLog {
    fs.create_dir_all(&dir()).unwrap();
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).unwrap();
    }
    let tp = TopicPartition { topic: "orders".into(), partition: 0 };
    PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config, params).unwrap().0
}

fn fresh(params_clean: bool) -> LoadParams {
    LoadParams {
        had_clean_shutdown: params_clean,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: 0,
        now_ms: 0,
    }
}

fn open(fs: &SimFs, config: LogConfig) -> PartitionLog {
    open_with(fs, config, fresh(true))
}

/// A producer batch (base offset 0) of `n` records with timestamps `ts..`.
fn batch_of(n: usize, ts: i64) -> Vec<u8> {
    producer_batch((0..n).map(|idx| (ts + idx as i64, Some(b"key"), format!("value-{idx}"))))
}

fn append(log: &PartitionLog, n: usize, ts: i64) -> AppendInfo {
    log.append_as_leader(&batch_of(n, ts), 0, AppendOrigin::Client, ts).unwrap()
}

fn read_offsets(log: &PartitionLog, from: i64, isolation: Isolation) -> Vec<i64> {
    let mut offsets = Vec::new();
    let mut next = from;
    loop {
        let fetch = log.read(next, u32::MAX, isolation, true).unwrap();
        if fetch.records.is_empty() {
            return offsets;
        }
        for item in Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            let records = batch.records(DecodeLimits::default()).unwrap();
            offsets.extend(records.iter().map(|r| r.unwrap().offset));
            next = batch.next_offset();
        }
    }
}

fn small_segments(records_per_segment: usize) -> LogConfig {
    let batch_bytes = batch_of(1, 0).len() as u32;
    LogConfig {
        segment_bytes: batch_bytes * records_per_segment as u32,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

/// `testAppendInfoFirstOffset`.
#[test]
fn append_info_first_offsets() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    assert_eq!(append(&log, 3, 0).first_offset, 0);
    assert_eq!(append(&log, 3, 0).first_offset, 3);
    assert_eq!(append(&log, 3, 0).last_offset, 8);
    assert_eq!(log.log_end_offset().unwrap(), 9);
    assert_eq!(read_offsets(&log, 0, Isolation::LogEnd), (0..9).collect::<Vec<_>>());
}

/// `testHighWatermarkMaintenance` and `testFetchUpToHighWatermark`.
#[test]
fn high_watermark_bounds_reads() {
    let fs = SimFs::new();
    let log = open(&fs, small_segments(2));
    for _ in 0..5 {
        append(&log, 1, 0);
    }
    assert_eq!(log.high_watermark().unwrap(), 0, "appends do not move it");
    assert!(read_offsets(&log, 0, Isolation::HighWatermark).is_empty());
    assert_eq!(log.update_high_watermark(3).unwrap(), 3);
    assert_eq!(read_offsets(&log, 0, Isolation::HighWatermark), [0, 1, 2]);
    assert_eq!(log.update_high_watermark(100).unwrap(), 5, "clamped to the log end");
    assert_eq!(read_offsets(&log, 0, Isolation::HighWatermark), [0, 1, 2, 3, 4]);
    log.truncate_to(2, 0).unwrap();
    assert_eq!(log.high_watermark().unwrap(), 2, "lowered by truncation");
    log.truncate_fully_and_start_at(7, 0).unwrap();
    assert_eq!((log.high_watermark().unwrap(), log.log_end_offset().unwrap()), (7, 7));
}

/// A read left in its file ([`PartitionLog::read_info_file_slice`]) has the bytes and offsets
/// of the read into memory, from every offset, with every limit and isolation; the usual read
/// (records at the start offset, below the bound) is a slice, the rest read into memory.
#[test]
fn reads_left_in_their_file_match_reads_into_memory() {
    use super::local_log::FetchedRecords;
    let fs = SimFs::new();
    let log = open(&fs, small_segments(3));
    for n in 1..=8 {
        append(&log, n, 0);
    }
    log.update_high_watermark(20).unwrap();
    let log_end = log.log_end_offset().unwrap();
    let mut sliced = 0;
    for isolation in [Isolation::LogEnd, Isolation::HighWatermark] {
        for from in 0..=log_end {
            for max_bytes in [0, 1, 100, 300, u32::MAX] {
                for min_one in [false, true] {
                    let context = format!("{isolation:?} from {from} max {max_bytes} {min_one}");
                    let memory = log.read_info(from, max_bytes, isolation, min_one).unwrap();
                    let file = log.read_info_file_slice(from, max_bytes, isolation, min_one);
                    let file = file.unwrap();
                    assert_eq!(file.high_watermark, memory.high_watermark, "{context}");
                    assert_eq!(file.log_start_offset, memory.log_start_offset, "{context}");
                    let memory = memory.data.unwrap();
                    let bytes = match file.data.unwrap() {
                        FetchedRecords::Memory(fetch) => {
                            assert_eq!(fetch, memory, "{context}");
                            continue;
                        }
                        FetchedRecords::File { metadata, slice, .. } => {
                            sliced += 1;
                            assert_eq!(metadata, memory.metadata, "{context}");
                            assert_eq!(slice.position(), u64::from(memory.position), "{context}");
                            slice.read().unwrap()
                        }
                    };
                    assert!(bytes == memory.records, "{context}: the slice's bytes");
                    assert!(!bytes.is_empty() && !memory.first_entry_incomplete, "{context}");
                }
            }
        }
    }
    // At least every unlimited read that starts below its bound (the high watermark, 20, or
    // the log end, 36), with min_one on and off, is a slice.
    assert_eq!(log_end, 36);
    assert!(sliced >= 2 * (20 + 36), "only {sliced} reads were slices");
}

/// `testSizeBasedLogRoll` and `testReadOutOfRange`.
#[test]
fn size_based_roll_and_out_of_range_reads() {
    let fs = SimFs::new();
    let batch_bytes = batch_of(1, 0).len() as u32;
    let log =
        open(&fs, LogConfig { segment_bytes: 10 * (batch_bytes - 1), ..LogConfig::default() });
    for _ in 0..11 {
        append(&log, 1, 0);
    }
    assert_eq!(log.segment_base_offsets().unwrap().len(), 2);
    assert!(
        log.read(11, 100, Isolation::LogEnd, false).unwrap().records.is_empty(),
        "at the end: empty"
    );
    assert!(matches!(
        log.read(12, 100, Isolation::LogEnd, false),
        Err(Error::OffsetOutOfRange { requested: 12, log_start: 0, log_end: 11 })
    ));
}

/// `testTimeBasedLogRollDuringAppend`: record time decides; an empty segment never rolls.
#[test]
fn time_based_roll_uses_record_time() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig { segment_ms: 1000, ..LogConfig::default() });
    append(&log, 1, 10_000);
    append(&log, 1, 10_500);
    assert_eq!(log.segment_base_offsets().unwrap(), [0]);
    append(&log, 1, 11_001);
    assert_eq!(log.segment_base_offsets().unwrap(), [0, 2]);
}

/// `testMessageSizeCheck` and `testMessageSetSizeCheck`.
#[test]
fn size_limits_are_typed_errors_and_write_nothing() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig { max_message_bytes: 200, ..LogConfig::default() });
    let error = log.append_as_leader(&batch_of(20, 0), 0, AppendOrigin::Client, 0).unwrap_err();
    let Error::Validation(validation) = &error else { panic!("{error}") };
    assert_eq!(validation.error_code(), 10, "MESSAGE_TOO_LARGE");
    assert_eq!(log.log_end_offset().unwrap(), 0);
    let log2_fs = SimFs::new();
    let log2 = open(&log2_fs, LogConfig { segment_bytes: 100, ..LogConfig::default() });
    let error = log2.append_as_leader(&batch_of(20, 0), 0, AppendOrigin::Client, 0).unwrap_err();
    let Error::Validation(validation) = &error else { panic!("{error}") };
    assert_eq!(validation.error_code(), 18, "RECORD_LIST_TOO_LARGE");
}

/// The retention examples of spec §7.9: 15 single-record batches in 5-record segments.
#[test]
fn retention_by_bytes_time_and_log_start() {
    let batch_bytes = i64::from(batch_of(1, 0).len() as u32);
    let setup = |config: LogConfig| {
        let fs = SimFs::new();
        let log = open(&fs, LogConfig { segment_bytes: 5 * batch_bytes as u32, ..config });
        for idx in 0..15 {
            append(&log, 1, 1_000 + idx);
        }
        log.update_high_watermark(15).unwrap();
        (fs, log)
    };
    let (_fs, log) = setup(LogConfig { retention_bytes: 10 * batch_bytes, ..LogConfig::default() });
    assert_eq!(log.delete_old_segments(2_000).unwrap(), 1);
    assert_eq!(log.segment_base_offsets().unwrap().len(), 2);
    assert_eq!(log.log_start_offset().unwrap(), 5);
    let (_fs, log) = setup(LogConfig { retention_bytes: 15 * batch_bytes, ..LogConfig::default() });
    assert_eq!(log.delete_old_segments(2_000).unwrap(), 0);
    assert_eq!(log.segment_base_offsets().unwrap().len(), 3);
    let (_fs, log) = setup(LogConfig { retention_ms: 100, ..LogConfig::default() });
    assert_eq!(log.delete_old_segments(1_000_000).unwrap(), 3);
    assert_eq!(log.segment_base_offsets().unwrap(), [15], "one new empty segment");
    assert_eq!((log.log_start_offset().unwrap(), log.log_end_offset().unwrap()), (15, 15));
    assert_eq!(append(&log, 1, 0).first_offset, 15, "offsets continue");
    let (_fs, log) = setup(LogConfig::default());
    log.maybe_increment_log_start_offset(6).unwrap();
    assert_eq!(log.delete_old_segments(2_000).unwrap(), 1);
    assert_eq!(log.segment_base_offsets().unwrap(), [5, 10]);
    assert_eq!(log.log_start_offset().unwrap(), 6);
    assert!(matches!(
        log.read(5, 100, Isolation::LogEnd, false),
        Err(Error::OffsetOutOfRange { .. })
    ));
}

/// `testCannotDeleteSegmentsAtOrAboveHighWatermark` and
/// `testCannotIncrementLogStartOffsetPastHighWatermark`.
#[test]
fn nothing_at_or_above_the_high_watermark_is_deleted() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig { retention_ms: 1, ..small_segments(2) });
    for _ in 0..6 {
        append(&log, 1, 0);
    }
    assert_eq!(log.delete_old_segments(1_000_000).unwrap(), 0, "no high watermark yet");
    log.update_high_watermark(3).unwrap();
    assert_eq!(log.delete_old_segments(1_000_000).unwrap(), 1, "only the segment below 3");
    assert!(log.maybe_increment_log_start_offset(4).is_err());
}

/// `testAsyncDelete`: deleted segments become `.deleted` at once and go after the delay.
#[test]
fn deleted_segments_linger_as_dot_deleted() {
    let fs = SimFs::new();
    let log =
        open(&fs, LogConfig { retention_ms: 1, file_delete_delay_ms: 500, ..small_segments(2) });
    for _ in 0..4 {
        append(&log, 1, 0);
    }
    log.update_high_watermark(4).unwrap();
    log.delete_old_segments(10_000).unwrap();
    let deleted = dir().join("00000000000000000000.log.deleted");
    assert!(fs.exists(&deleted).unwrap());
    assert_eq!(log.delete_expired(10_499).unwrap(), 0);
    assert!(log.delete_expired(10_500).unwrap() >= 1);
    assert!(!fs.exists(&deleted).unwrap());
}

/// `testFetchOffsetByTimestampIncludesLeaderEpoch` and the special timestamps of §7.7.
#[test]
fn offsets_by_timestamp() {
    let fs = SimFs::new();
    let log = open(&fs, small_segments(3));
    for (idx, epoch) in [(0, 0), (1, 0), (2, 1), (3, 1), (4, 2)] {
        let batch = batch_of(1, 100 + idx * 10);
        log.append_as_leader(&batch, epoch, AppendOrigin::Client, 0).unwrap();
    }
    let found = log.fetch_offset_by_timestamp(125).unwrap().unwrap();
    assert_eq!((found.offset, found.timestamp, found.leader_epoch), (3, 130, Some(1)));
    assert!(log.fetch_offset_by_timestamp(200).unwrap().is_none());
    let latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).unwrap().unwrap();
    assert_eq!((latest.offset, latest.timestamp, latest.leader_epoch), (5, -1, Some(2)));
    let earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).unwrap().unwrap();
    assert_eq!((earliest.offset, earliest.leader_epoch), (0, Some(0)));
    let max = log.fetch_offset_by_timestamp(MAX_TIMESTAMP).unwrap().unwrap();
    assert_eq!((max.offset, max.timestamp), (4, 140));
    assert_eq!(log.leader_epochs().unwrap(), [(0, 0), (1, 2), (2, 4)]);
}

/// `testTruncateTo` and `shouldTruncateLeaderEpochCheckpointFileWhenTruncatingLog`.
#[test]
fn truncation() {
    let fs = SimFs::new();
    let log = open(&fs, small_segments(3));
    for epoch in 0..9 {
        log.append_as_leader(&batch_of(1, 0), epoch / 3, AppendOrigin::Client, 0).unwrap();
    }
    assert!(!log.truncate_to(9, 0).unwrap(), "to the end: nothing");
    assert!(log.truncate_to(4, 0).unwrap());
    assert_eq!(log.log_end_offset().unwrap(), 4);
    assert_eq!(read_offsets(&log, 0, Isolation::LogEnd), [0, 1, 2, 3]);
    assert_eq!(log.leader_epochs().unwrap(), [(0, 0), (1, 3)]);
    assert_eq!(append(&log, 1, 0).first_offset, 4);
}

/// Durability: fsync-every-append makes each append durable before it returns; page-cache does
/// not; group commit makes it durable once the flusher runs, and waiters wake.
fn idempotent_batch(producer_id: i64, epoch: i16, first_seq: i32, n: usize) -> Vec<u8> {
    let mut builder =
        RecordBatchBuilder::new(Compression::None).producer(producer_id, epoch, first_seq);
    for i in 0..n {
        builder.push(1_000, None, Some(format!("v{i}").as_bytes()), &[]).unwrap();
    }
    builder.build().unwrap()
}

#[test]
fn idempotent_producer_retries_get_their_offsets_and_gaps_are_refused() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    append(&log, 2, 0);
    let leader = |bytes: &[u8]| log.append_as_leader(bytes, 0, AppendOrigin::Client, 0);
    let first = leader(&idempotent_batch(42, 0, 0, 3)).unwrap();
    assert_eq!((first.first_offset, first.last_offset), (2, 4));
    // The same batch again (a retry): the original offsets, nothing written.
    let retry = leader(&idempotent_batch(42, 0, 0, 3)).unwrap();
    assert_eq!((retry.first_offset, retry.last_offset, retry.n_records), (2, 4, 0));
    assert_eq!(log.log_end_offset().unwrap(), 5);
    // A gap in the sequence is OUT_OF_ORDER_SEQUENCE_NUMBER (45), and writes nothing.
    let error = leader(&idempotent_batch(42, 0, 5, 1)).unwrap_err();
    let Error::Validation(validation) = &error else { panic!("{error}") };
    assert_eq!(validation.error_code(), 45, "{error}");
    assert_eq!(log.log_end_offset().unwrap(), 5);
    // In sequence: appended.
    let next = leader(&idempotent_batch(42, 0, 3, 2)).unwrap();
    assert_eq!((next.first_offset, next.last_offset), (5, 6));
    // An older epoch is INVALID_PRODUCER_EPOCH (47); a newer one starts at sequence 0.
    leader(&idempotent_batch(42, 1, 0, 1)).unwrap();
    let error = leader(&idempotent_batch(42, 0, 5, 1)).unwrap_err();
    let Error::Validation(validation) = &error else { panic!("{error}") };
    assert_eq!(validation.error_code(), 47, "{error}");
    // Truncation forgets the batches it removed: the same sequence may be written again.
    log.truncate_to(7, 0).unwrap();
    let again = leader(&idempotent_batch(42, 1, 0, 1)).unwrap();
    assert_eq!((again.first_offset, again.n_records), (7, 1));
}

#[test]
fn idempotent_producer_state_survives_a_clean_restart() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    let leader = |log: &PartitionLog, bytes: &[u8]| {
        log.append_as_leader(bytes, 0, AppendOrigin::Client, 0).unwrap()
    };
    leader(&log, &idempotent_batch(9, 2, 0, 2));
    leader(&log, &idempotent_batch(9, 2, 2, 3));
    log.close(0).unwrap();
    drop(log);
    let reopened = open_with(&fs, LogConfig::default(), fresh(true));
    // The retry of the last batch is still recognised after the restart.
    let retry = leader(&reopened, &idempotent_batch(9, 2, 2, 3));
    assert_eq!((retry.first_offset, retry.last_offset, retry.n_records), (2, 4, 0));
    // And the sequence continues where it was.
    let error = reopened
        .append_as_leader(&idempotent_batch(9, 2, 7, 1), 0, AppendOrigin::Client, 0)
        .unwrap_err();
    let Error::Validation(validation) = &error else { panic!("{error}") };
    assert_eq!(validation.error_code(), 45);
    let next = leader(&reopened, &idempotent_batch(9, 2, 5, 1));
    assert_eq!(next.first_offset, 5);
}

#[test]
fn sync_to_shares_fsyncs_and_survives_power_loss() {
    let fs = SimFs::new();
    let config = LogConfig { durability: DurabilityMode::GroupCommit, ..LogConfig::default() };
    let log = Arc::new(open(&fs, config));
    append(&log, 3, 0);
    assert_eq!(log.sync_to(3, 10).unwrap(), 3);
    append(&log, 2, 0);
    // Offset 3 is durable already: no flush, the recovery point stays.
    assert_eq!(log.sync_to(3, 20).unwrap(), 3);
    assert_eq!(log.recovery_point().unwrap(), 3);
    // Concurrent callers: every one returns with its offset durable.
    let mut waiters = Vec::new();
    for _ in 0..4 {
        let log = Arc::clone(&log);
        waiters.push(std::thread::spawn(move || {
            let info = append(&log, 1, 0);
            log.sync_to(info.last_offset + 1, 30).unwrap() > info.last_offset
        }));
    }
    for waiter in waiters {
        assert!(waiter.join().unwrap());
    }
    assert_eq!(log.sync_to(5, 40).unwrap(), 9);
    drop(log);
    fs.crash(7);
    let reopened = open_with(&fs, LogConfig::default(), fresh(false));
    assert_eq!(reopened.log_end_offset().unwrap(), 9, "everything synced survived");
}

#[test]
fn durability_modes() {
    for mode in DurabilityMode::ALL {
        let fs = SimFs::new();
        let log = open(&fs, LogConfig { durability: mode, ..LogConfig::default() });
        let info = append(&log, 3, 0);
        match mode {
            DurabilityMode::FsyncEveryAppend => assert_eq!(info.durable_offset, 3),
            DurabilityMode::PageCache | DurabilityMode::GroupCommit => {
                assert_eq!(info.durable_offset, 0);
            }
        }
        if mode == DurabilityMode::GroupCommit {
            let log = Arc::new(log);
            let waiter = {
                let log = Arc::clone(&log);
                std::thread::spawn(move || log.wait_durable(3, Duration::from_secs(30)).unwrap())
            };
            assert!(log.flush_if_due(1_000).unwrap());
            assert!(waiter.join().unwrap(), "the waiter saw offset 3 become durable");
            drop(log);
        } else {
            drop(log);
        }
        fs.crash(11);
        let reopened = open_with(&fs, LogConfig::default(), fresh(false));
        let kept = reopened.log_end_offset().unwrap();
        if mode != DurabilityMode::PageCache {
            assert_eq!(kept, 3, "{mode}: durable records survive power loss");
        }
    }
}

/// A failed write or fsync takes the log offline: later calls fail with `Offline`, and nothing
/// is retried.
#[test]
fn io_errors_take_the_log_offline() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    append(&log, 1, 0);
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    let error = log.append_as_leader(&batch_of(1, 0), 0, AppendOrigin::Client, 0).unwrap_err();
    assert!(matches!(error, Error::Io { .. }), "{error}");
    fs.set_fault_plan(FaultPlan::None);
    assert!(log.is_offline());
    assert!(matches!(log.read(0, 100, Isolation::LogEnd, false), Err(Error::Offline { .. })));
    assert!(matches!(log.flush(0), Err(Error::Offline { .. })));

    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    append(&log, 1, 0);
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    assert!(log.flush(0).is_err());
    fs.set_fault_plan(FaultPlan::None);
    assert!(matches!(log.flush(0), Err(Error::Offline { .. })), "a failed fsync is never retried");
}

/// Readers running while a writer appends and rolls see whole batches with increasing offsets.
#[test]
fn readers_race_a_writer() {
    let fs = SimFs::new();
    let log = Arc::new(open(&fs, small_segments(7)));
    let writer = {
        let log = Arc::clone(&log);
        std::thread::spawn(move || {
            for idx in 0..300 {
                log.append_as_leader(
                    &batch_of(1 + idx % 3, idx as i64),
                    0,
                    AppendOrigin::Client,
                    0,
                )
                .unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut next = 0;
                let mut seen = 0usize;
                while seen < 300 {
                    let fetch = log.read(next, 4096, Isolation::LogEnd, true).unwrap();
                    for item in Batches::new(&fetch.records) {
                        let batch = item.unwrap().batch;
                        batch.validate().unwrap();
                        assert_eq!(
                            batch.base_offset(DecodeLimits::default()).unwrap(),
                            next,
                            "contiguous"
                        );
                        next = batch.next_offset();
                        seen += 1;
                    }
                    std::thread::yield_now();
                }
                next
            })
        })
        .collect();
    writer.join().unwrap();
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
}

/// Crash points of a roll and of a retention delete: fail the N-th I/O operation of the step for
/// every N in turn, then lose power and reopen. Flushed records are always there, and the log is
/// a contiguous prefix of what was appended.
#[test]
fn crash_after_each_step_of_roll_and_segment_delete() {
    for (name, step) in [("roll", 0u8), ("segment delete", 1u8)] {
        for fail_at in 1..40u64 {
            let fs = SimFs::new();
            let log = open(&fs, LogConfig { retention_ms: 1, ..small_segments(4) });
            for _ in 0..6 {
                append(&log, 1, 0);
            }
            log.flush(0).unwrap();
            log.update_high_watermark(6).unwrap();
            fs.set_fault_plan(FaultPlan::FailNth { n: fail_at, kind: FaultKind::Eio });
            let outcome = match step {
                // Two appends: the second one rolls (4 records per segment, 6 already in).
                0 => log.append_as_leader(&batch_of(1, 0), 0, AppendOrigin::Client, 0).and_then(
                    |_| log.append_as_leader(&batch_of(1, 0), 0, AppendOrigin::Client, 0),
                ),
                _ => log
                    .delete_old_segments(1_000_000)
                    .map(|_| log.log_end_offset().unwrap_or(0))
                    .map(|_| AppendInfo {
                        first_offset: 0,
                        last_offset: 0,
                        max_timestamp: 0,
                        log_append_time: 0,
                        log_start_offset: 0,
                        n_records: 0,
                        durable_offset: 0,
                        high_watermark: 0,
                        durability: DurabilityMode::PageCache,
                    }),
            };
            fs.set_fault_plan(FaultPlan::None);
            drop(log);
            fs.crash(fail_at);
            let reopened = open_with(
                &fs,
                small_segments(4),
                LoadParams { recovery_point_checkpoint: 6, ..fresh(false) },
            );
            let start = reopened.log_start_offset().unwrap();
            let offsets = read_offsets(&reopened, start, Isolation::LogEnd);
            let end = reopened.log_end_offset().unwrap();
            assert!(
                end >= 6,
                "{name} fail_at {fail_at} ({outcome:?}): flushed records lost, end {end}"
            );
            assert_eq!(
                offsets,
                (start..end).collect::<Vec<_>>(),
                "{name} fail_at {fail_at}: contiguous prefix"
            );
            if fail_at > 30 && outcome.is_ok() {
                break;
            }
        }
    }
}

/// `testTimeBasedLogRollJitter`: with jitter, a segment rolls only after `segment.ms` minus its
/// own jitter, which lies below `min(segment.jitter.ms, segment.ms)`.
#[test]
fn time_based_roll_jitter() {
    let fs = SimFs::new();
    let log = open(
        &fs,
        LogConfig {
            segment_ms: 1000,
            segment_jitter_ms: 400,
            segment_index_bytes: 4096,
            ..LogConfig::default()
        },
    );
    append(&log, 1, 10_000);
    // Never before segment.ms - 400, always by segment.ms.
    append(&log, 1, 10_600);
    assert_eq!(log.segment_base_offsets().unwrap().len(), 1, "600 ms < 1000 - 400");
    append(&log, 1, 11_001);
    assert_eq!(log.segment_base_offsets().unwrap().len(), 2, "past segment.ms, jitter or not");
}

/// The first segment of a new log draws its jitter too (Kafka gives every `LogSegment` one):
/// partitions created together with `segment.jitter.ms` do not all roll at the same moment.
#[test]
fn first_segments_of_logs_created_together_roll_at_spread_times() {
    let fs = SimFs::new();
    let config = LogConfig {
        segment_ms: 10_000,
        segment_jitter_ms: 8_000,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    };
    let mut first_roll_ms = Vec::new();
    for partition in 0..20 {
        let dir = PathBuf::from(format!("/data/orders-{partition}"));
        fs.create_dir_all(&dir).unwrap();
        for ancestor in dir.ancestors() {
            fs.sync_dir(ancestor).unwrap();
        }
        let tp = TopicPartition { topic: "orders".into(), partition };
        let log = PartitionLog::open(Arc::new(fs.clone()), &dir, tp, config.clone(), fresh(true))
            .unwrap()
            .0;
        append(&log, 1, 0);
        let rolled_at = (1..=10).map(|second| second * 1_000).find(|&ts| {
            append(&log, 1, ts);
            log.segment_base_offsets().unwrap().len() > 1
        });
        first_roll_ms.push(rolled_at.expect("rolled by segment.ms"));
    }
    first_roll_ms.sort_unstable();
    first_roll_ms.dedup();
    assert!(
        first_roll_ms.len() >= 4,
        "20 first segments rolled at only {first_roll_ms:?} (ms): their jitter was not drawn"
    );
}

// ---------------------------------------------------------------------------------------------
// Producer-state snapshots (Kafka's `ProducerStateManagerTest` and the snapshot cases of
// `UnifiedLogTest` / `LogLoaderTest`)
// ---------------------------------------------------------------------------------------------

/// The offsets of the live `.snapshot` files in the partition directory.
fn snapshot_files(fs: &dyn Fs, dir: &Path) -> Vec<i64> {
    fs.list(dir)
        .unwrap()
        .iter()
        .filter_map(|path| SegmentFileName::parse(&path.file_name()?.to_string_lossy()).ok())
        .filter(|name| name.kind == FileKind::Snapshot && name.state == FileState::Live)
        .map(|name| name.offset)
        .collect()
}

fn read_snapshot(fs: &dyn Fs, dir: &Path, offset: i64) -> Vec<ProducerSnapshotEntry> {
    let path = dir.join(format!("{offset:020}.snapshot"));
    decode_producer_snapshot(&read_all(fs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap())
        .unwrap()
}

fn leader(log: &PartitionLog, bytes: &[u8]) -> AppendInfo {
    log.append_as_leader(bytes, 0, AppendOrigin::Client, 0).unwrap()
}

/// Segments of `n` one-record idempotent batches.
fn idempotent_segments(n: usize) -> LogConfig {
    LogConfig {
        segment_bytes: (idempotent_batch(1, 0, 0, 1).len() * n) as u32,
        segment_index_bytes: 4096,
        ..LogConfig::default()
    }
}

fn open_reporting(fs: &SimFs, config: LogConfig, params: LoadParams) -> (PartitionLog, LoadReport) {
    let tp = TopicPartition { topic: "orders".into(), partition: 0 };
    PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config, params).unwrap()
}

/// `testTakeSnapshotOnRoll` and the snapshot of `close`: `<new base offset>.snapshot` at each
/// roll, `<log end offset>.snapshot` at a clean close, each with the producer's last batch; a
/// clean reopen keeps the close's snapshot (the newest stray above every segment) and writes
/// none.
#[test]
fn producer_snapshots_are_taken_at_each_roll_and_at_clean_close() {
    let fs = SimFs::new();
    let config = idempotent_segments(3);
    let log = open(&fs, config.clone());
    for seq in 0..7 {
        leader(&log, &idempotent_batch(5, 0, seq, 1));
    }
    assert_eq!(log.segment_base_offsets().unwrap(), [0, 3, 6]);
    assert_eq!(snapshot_files(&fs, &dir()), [3, 6]);
    assert_eq!(log.producer_snapshot_offsets().unwrap(), [3, 6]);
    let at_3 = read_snapshot(&fs, &dir(), 3);
    assert_eq!(at_3.len(), 1);
    let entry = at_3[0];
    assert_eq!(
        (entry.producer_id, entry.producer_epoch, entry.last_sequence, entry.last_offset),
        (5, 0, 2, 2)
    );
    assert_eq!((entry.offset_delta, entry.timestamp), (0, 1_000));
    assert_eq!((entry.coordinator_epoch, entry.current_txn_first_offset), (-1, -1));
    log.close(0).unwrap();
    drop(log);
    assert_eq!(snapshot_files(&fs, &dir()), [3, 6, 7]);
    assert_eq!(read_snapshot(&fs, &dir(), 7)[0].last_sequence, 6);
    let log = open(&fs, config);
    assert_eq!(snapshot_files(&fs, &dir()), [3, 6, 7]);
    assert_eq!(log.producer_snapshot_offsets().unwrap(), [3, 6, 7]);
    let retry = leader(&log, &idempotent_batch(5, 0, 6, 1));
    assert_eq!((retry.first_offset, retry.n_records), (6, 0));
}

/// A roll's snapshot is written without an fsync (off the append path) and made durable by the
/// next flush: after a power loss it is there, and whole.
#[test]
fn a_rolls_snapshot_becomes_durable_with_the_next_flush() {
    for seed in 0..8 {
        let fs = SimFs::new();
        let log = open(&fs, idempotent_segments(2));
        for seq in 0..3 {
            leader(&log, &idempotent_batch(9, 1, seq, 1));
        }
        assert_eq!(log.segment_base_offsets().unwrap(), [0, 2]);
        log.flush(0).unwrap();
        drop(log);
        fs.crash(seed);
        assert_eq!(snapshot_files(&fs, &dir()), [2], "seed {seed}");
        assert_eq!(read_snapshot(&fs, &dir(), 2)[0].last_offset, 1, "seed {seed}");
    }
}

/// The case the snapshots exist for: a producer whose last batch lies in an older segment (not
/// the active one) still has its retry recognised after a clean restart. Without the snapshots
/// only the active segment is replayed, the producer is unknown, and the retry is written twice.
#[test]
fn a_retry_is_recognised_after_a_restart_though_its_producer_last_wrote_in_an_older_segment() {
    let fs = SimFs::new();
    let config = small_segments(3);
    let log = open(&fs, config.clone());
    let original = leader(&log, &idempotent_batch(42, 0, 0, 2));
    assert_eq!((original.first_offset, original.last_offset), (0, 1));
    // Other, non-idempotent producers fill the later segments.
    for _ in 0..7 {
        append(&log, 1, 0);
    }
    let bases = log.segment_base_offsets().unwrap();
    assert!(
        bases.len() >= 3 && bases[1] >= 2,
        "producer 42 is in the first segment only: {bases:?}"
    );
    log.close(0).unwrap();
    drop(log);

    let log = open(&fs, config.clone());
    let retry = leader(&log, &idempotent_batch(42, 0, 0, 2));
    assert_eq!((retry.first_offset, retry.last_offset, retry.n_records), (0, 1, 0));
    log.close(0).unwrap();
    drop(log);

    // The same restart without snapshots.
    for offset in snapshot_files(&fs, &dir()) {
        fs.remove(&dir().join(format!("{offset:020}.snapshot"))).unwrap();
    }
    let log = open(&fs, config);
    let again = leader(&log, &idempotent_batch(42, 0, 0, 2));
    assert_eq!(again.n_records, 2, "without snapshots the retry is appended again");
}

/// After a power loss (no clean close), the state is the newest snapshot at or below the
/// recovered log end plus a replay of the batches after it; a corrupt newest snapshot is
/// reported, deleted, and an older one used (Kafka's `testLoadFromCorruptSnapshotFile`).
#[test]
fn an_unclean_restart_rebuilds_producers_from_the_newest_snapshot_and_the_tail() {
    for corrupt_newest in [false, true] {
        let fs = SimFs::new();
        let config = idempotent_segments(3);
        let log = open(&fs, config.clone());
        leader(&log, &idempotent_batch(1, 0, 0, 1)); // offset 0: producer 1's last batch
        for seq in 0..4 {
            leader(&log, &idempotent_batch(2, 3, seq, 1)); // offsets 1..=4
        }
        for seq in 0..3 {
            leader(&log, &idempotent_batch(3, 0, seq, 1)); // offsets 5..=7
        }
        assert_eq!(log.segment_base_offsets().unwrap(), [0, 3, 6]);
        log.flush(0).unwrap();
        drop(log);
        fs.crash(11);
        if corrupt_newest {
            let newest = dir().join("00000000000000000006.snapshot");
            let file = fs.open(&newest, OpenMode::ReadWrite).unwrap();
            let len = file.len().unwrap();
            file.write_all_at(&[0xAA], len - 1).unwrap();
        }
        let params = LoadParams { recovery_point_checkpoint: 0, ..fresh(false) };
        let (log, report) = open_reporting(&fs, config, params);
        assert_eq!(log.log_end_offset().unwrap(), 8);
        if corrupt_newest {
            assert_eq!(report.corrupt_snapshots.len(), 1, "{report:?}");
            assert_eq!(
                report.corrupt_snapshots[0].path,
                dir().join("00000000000000000006.snapshot")
            );
        } else {
            assert!(report.corrupt_snapshots.is_empty(), "{report:?}");
        }
        // Rebuilt snapshots at the segment bases passed, and one at the log end.
        assert_eq!(snapshot_files(&fs, &dir()), [3, 6, 8]);
        for (producer_id, epoch, seq, offset) in [(1, 0, 0, 0), (2, 3, 3, 4), (3, 0, 2, 7)] {
            let retry = leader(&log, &idempotent_batch(producer_id, epoch, seq, 1));
            assert_eq!(
                (retry.first_offset, retry.n_records),
                (offset, 0),
                "producer {producer_id}, corrupt newest {corrupt_newest}"
            );
        }
    }
}

/// `testTruncateAndReloadRemovesOutOfRangeSnapshots` through the log: a truncation deletes the
/// snapshots above the new end (durably: a crash does not bring them back), reloads the state
/// from the newest one left plus the batches after it, and takes one at the new end.
#[test]
fn truncation_deletes_later_snapshots_and_reloads_producers() {
    let fs = SimFs::new();
    let log = open(&fs, idempotent_segments(3));
    for seq in 0..8 {
        leader(&log, &idempotent_batch(7, 0, seq, 1));
    }
    assert_eq!(snapshot_files(&fs, &dir()), [3, 6]);
    assert!(log.truncate_to(5, 0).unwrap());
    assert_eq!(snapshot_files(&fs, &dir()), [3, 5]);
    assert_eq!(read_snapshot(&fs, &dir(), 5)[0].last_offset, 4);
    let retry = leader(&log, &idempotent_batch(7, 0, 4, 1));
    assert_eq!((retry.first_offset, retry.n_records), (4, 0));
    assert!(log.truncate_to(2, 0).unwrap());
    assert_eq!(snapshot_files(&fs, &dir()), [2]);
    assert_eq!(log.producer_last_entry(7).unwrap().unwrap().1.unwrap().last_seq, 1);
    // The truncated sequences are written again at the new offsets.
    let rewritten = leader(&log, &idempotent_batch(7, 0, 2, 1));
    assert_eq!((rewritten.first_offset, rewritten.n_records), (2, 1));
    drop(log);
    fs.crash(5);
    assert!(snapshot_files(&fs, &dir()).iter().all(|offset| *offset <= 2));
    // Truncating below the first segment deletes every snapshot.
    let log = open_with(&fs, idempotent_segments(3), fresh(false));
    log.truncate_fully_and_start_at(100, 0).unwrap();
    assert!(snapshot_files(&fs, &dir()).is_empty());
    assert_eq!(log.producer_last_entry(7).unwrap(), None);
}

/// `testDeleteSnapshotsWithRetention`-like: retention deletes the snapshots of the segments it
/// deletes (those below the new log start); the producers stay known in memory, as in Kafka.
#[test]
fn retention_deletes_the_snapshots_below_the_log_start() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig { retention_ms: 1, ..idempotent_segments(3) });
    for seq in 0..8 {
        leader(&log, &idempotent_batch(7, 0, seq, 1));
    }
    assert_eq!(snapshot_files(&fs, &dir()), [3, 6]);
    log.update_high_watermark(7).unwrap();
    assert_eq!(log.delete_old_segments(1_000_000).unwrap(), 2);
    assert_eq!(log.log_start_offset().unwrap(), 6);
    assert_eq!(snapshot_files(&fs, &dir()), [6]);
    let retry = leader(&log, &idempotent_batch(7, 0, 7, 1));
    assert_eq!((retry.first_offset, retry.n_records), (7, 0));
    // Retention that deletes every segment rolls first, and keeps the new segment's snapshot.
    log.update_high_watermark(8).unwrap();
    log.delete_old_segments(2_000_000).unwrap();
    assert_eq!(log.segment_base_offsets().unwrap(), [8]);
    assert_eq!(snapshot_files(&fs, &dir()), [8]);
}

/// Every producer snapshot a real Kafka broker wrote decodes, and re-encodes byte for byte.
#[test]
fn real_kafka_snapshots_decode_and_re_encode_byte_for_byte() {
    let Some(root) = crate::testing::kafka_real_fixtures() else { return };
    let mut snapshots = Vec::new();
    let mut pending = vec![root];
    while let Some(next) = pending.pop() {
        for path in StdFs.list(&next).unwrap() {
            if StdFs.list(&path).is_ok() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "snapshot") {
                snapshots.push(path);
            }
        }
    }
    assert!(snapshots.len() >= 90, "only {} snapshots", snapshots.len());
    let mut n_entries = 0;
    for path in &snapshots {
        let bytes = read_all(StdFs.open(path, OpenMode::Read).unwrap().as_ref()).unwrap();
        let entries = decode_producer_snapshot(&bytes)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        assert_eq!(encode_producer_snapshot(&entries).unwrap(), bytes, "{}", path.display());
        n_entries += entries.len();
    }
    assert!(n_entries >= 20, "{n_entries} producer entries");
}

/// A real Kafka partition (two segments, an idempotent producer whose last batch is at offset
/// 3526, in the first segment, and Kafka's clean-shutdown snapshot at the log end 5579) opens
/// with that producer known: its retry gets the original offset.
#[test]
fn a_real_kafka_partition_loads_its_producers_from_the_snapshot() {
    let Some(root) = crate::testing::kafka_real_fixtures() else { return };
    let source = root.join("erickimm-multisegment/stock-trades-0");
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    for path in StdFs.list(&source).unwrap() {
        let bytes = read_all(StdFs.open(&path, OpenMode::Read).unwrap().as_ref()).unwrap();
        let copy = fs.open(&dir().join(path.file_name().unwrap()), OpenMode::CreateNew).unwrap();
        copy.write_all_at(&bytes, 0).unwrap();
    }
    let log = open(&fs, LogConfig::default());
    assert_eq!(log.segment_base_offsets().unwrap(), [0, 3586]);
    assert_eq!(log.log_end_offset().unwrap(), 5579);
    assert_eq!(log.producer_snapshot_offsets().unwrap(), [3586, 5579]);
    let (epoch, last) = log.producer_last_entry(6000).unwrap().unwrap();
    let last = last.unwrap();
    assert_eq!((epoch, last.last_seq, last.first_offset, last.last_offset), (0, 2859, 3526, 3526));
    // Producer 6000's batch at 3526 (sequence 2859) sent again: Kafka's clients build the same
    // header; the retry is answered with its original offset.
    let retry = leader(&log, &idempotent_batch(6000, 0, 2859, 1));
    assert_eq!((retry.first_offset, retry.last_offset, retry.n_records), (3526, 3526, 0));
}

/// The sole leader's append: one locked call validates, appends at the log end under the
/// latest leader epoch and moves the high watermark there; the result says so, with the
/// durability mode, so the broker takes no lock again.
#[test]
fn a_sole_leaders_append_moves_the_high_watermark_in_the_same_call() {
    let fs = SimFs::new();
    let config = LogConfig { durability: DurabilityMode::GroupCommit, ..LogConfig::default() };
    let log = open(&fs, config);
    append(&log, 3, 1_000);
    assert_eq!(log.high_watermark().unwrap(), 0, "a plain leader append leaves it");
    let info = log.append_as_sole_leader(&batch_of(2, 2_000), AppendOrigin::Client, 2_000);
    let info = info.unwrap();
    assert_eq!((info.first_offset, info.last_offset), (3, 4));
    assert_eq!(info.high_watermark, 5);
    assert_eq!(log.high_watermark().unwrap(), 5);
    assert_eq!(info.durability, DurabilityMode::GroupCommit);
    assert_eq!(log.latest_leader_epoch().unwrap(), Some(0));
}

/// `read_info` answers the records with the offsets that bounded them; an offset out of range
/// is in `data`, the offsets still answered.
#[test]
fn read_info_returns_the_records_with_the_watermarks_of_the_same_moment() {
    let fs = SimFs::new();
    let log = open(&fs, LogConfig::default());
    log.append_as_sole_leader(&batch_of(4, 1_000), AppendOrigin::Client, 1_000).unwrap();
    append(&log, 2, 2_000);
    let read = log.read_info(0, u32::MAX, Isolation::HighWatermark, true).unwrap();
    assert_eq!((read.high_watermark, read.last_stable_offset), (4, 4));
    assert_eq!((read.log_start_offset, read.log_end_offset), (0, 6));
    assert_eq!(read.leader_epoch, Some(0));
    let records = read.data.unwrap().records;
    let n_records: usize = Batches::new(&records)
        .map(|item| item.unwrap().batch.records(DecodeLimits::default()).unwrap().iter().count())
        .sum();
    assert_eq!(n_records, 4, "bounded by the high watermark it reports");
    let past = log.read_info(7, u32::MAX, Isolation::HighWatermark, true).unwrap();
    assert_eq!(past.high_watermark, 4);
    let Err(Error::OffsetOutOfRange { requested, log_start, log_end }) = past.data else {
        panic!("an offset past the end is out of range: {:?}", past.data.map(|d| d.records.len()))
    };
    assert_eq!((requested, log_start, log_end), (7, 0, 6));
    assert_eq!(log.end_offset_for_epoch(0).unwrap(), (0, 6));
    assert_eq!(log.end_offset_for_epoch(1).unwrap(), (-1, -1));
}

#[test]
fn a_roll_has_the_background_flush_the_segments_before_it() {
    // Kafka's `roll` schedules a flush of everything before the new segment: with the default
    // flush settings (never by count or time), rolled segments still become durable, and the
    // recovery point (where an unclean restart starts) follows the rolls.
    let fs = SimFs::new();
    let log = open(&fs, small_segments(3));
    for ts in 0..9 {
        append(&log, 1, ts);
    }
    let bases = log.segment_base_offsets().unwrap();
    assert_eq!(bases, vec![0, 3, 6], "two rolls");
    assert_eq!(log.recovery_point().unwrap(), 0, "nothing flushed at the rolls themselves");
    assert!(log.flush_if_due(1_000).unwrap(), "the roll left a flush to do");
    assert_eq!(log.recovery_point().unwrap(), 6, "flushed up to the newest segment, not into it");
    assert!(!log.flush_if_due(2_000).unwrap(), "nothing left to do until the next roll");
    drop(log);
    fs.crash(5);
    let reopened = open_with(&fs, small_segments(3), fresh(false));
    assert!(reopened.log_end_offset().unwrap() >= 6, "the rolled segments survived power loss");
}
