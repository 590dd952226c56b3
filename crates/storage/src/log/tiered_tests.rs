//! A tiered log (`remote.storage.enable`): local retention waits for the bucket, the log start
//! stays where the remote part begins, reads below the local segments say so, and a log with an
//! empty disk starts again at its remote end.

use std::path::PathBuf;
use std::sync::Arc;

use super::load::LoadParams;
use super::partition_log::{
    ClosedSegment, EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, Isolation,
    LATEST_TIERED_TIMESTAMP, PartitionLog, TopicPartition,
};
use super::validator::AppendOrigin;
use crate::config::{LogConfig, topic};
use crate::error::Error;
use crate::io::{Fs, SimFs};
use crate::testing::producer_batch;

fn dir() -> PathBuf {
    PathBuf::from("/logs/tiered-0")
}

fn open(fs: &SimFs, config: LogConfig, log_start_offset_checkpoint: i64) -> PartitionLog {
    fs.create_dir_all(&dir()).expect("mkdir");
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).expect("sync");
    }
    let tp = TopicPartition { topic: "tiered".into(), partition: 0 };
    let params = LoadParams {
        had_clean_shutdown: true,
        log_start_offset_checkpoint,
        recovery_point_checkpoint: 0,
        now_ms: 0,
    };
    PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config, params).expect("open").0
}

fn one_record(ts: i64) -> Vec<u8> {
    producer_batch([(ts, Some(b"key".as_slice()), "value".to_owned())])
}

/// Five one-record segments (the last active) of a tiered topic whose local retention would delete them all.
fn tiered_log(fs: &SimFs) -> PartitionLog {
    let batch_bytes = one_record(0).len() as u32;
    let config = LogConfig {
        segment_bytes: batch_bytes,
        segment_index_bytes: 4096,
        remote_storage_enable: true,
        local_retention_ms: 10,
        ..LogConfig::default()
    };
    let log = open(fs, config, 0);
    for ts in 0..5 {
        log.append_as_leader(&one_record(ts), 0, AppendOrigin::Client, ts).expect("append");
    }
    log.maybe_increment_leader_high_watermark().expect("hw");
    log
}

#[test]
fn local_retention_deletes_only_what_the_bucket_holds_and_keeps_the_log_start() {
    let fs = SimFs::new();
    let log = tiered_log(&fs);
    assert_eq!(log.segment_base_offsets().expect("bases"), [0, 1, 2, 3, 4]);
    assert_eq!(log.delete_old_segments(1_000_000).expect("retention"), 0, "nothing uploaded");
    assert_eq!(log.bytes_not_in_remote_storage().expect("lag"), 5 * one_record(0).len() as u64);

    log.update_highest_offset_in_remote_storage(2).expect("uploaded");
    assert_eq!(log.delete_old_segments(1_000_000).expect("retention"), 3, "0, 1 and 2 go");
    assert_eq!(log.segment_base_offsets().expect("bases"), [3, 4]);
    assert_eq!(log.log_start_offset().expect("start"), 0, "the remote part starts at 0");
    assert_eq!(log.local_log_start_offset().expect("local start"), 3);
    assert_eq!(log.update_highest_offset_in_remote_storage(1).expect("never back"), 2);
    let offset_for = |timestamp| {
        log.fetch_offset_by_timestamp(timestamp).expect("list offsets").map(|found| found.offset)
    };
    assert_eq!(offset_for(EARLIEST_TIMESTAMP), Some(0));
    assert_eq!(offset_for(EARLIEST_LOCAL_TIMESTAMP), Some(3));
    assert_eq!(offset_for(LATEST_TIERED_TIMESTAMP), Some(2));

    let below = log.read(1, 1024, Isolation::HighWatermark, true);
    let Err(Error::OffsetNotLocal { requested, local_log_start }) = below else {
        panic!("a read below the local segments: {below:?}")
    };
    assert_eq!((requested, local_log_start), (1, 3));
    let local = log.read(3, 1024, Isolation::HighWatermark, true).expect("local read");
    assert!(!local.records.is_empty());
    assert_eq!(
        log.checkpoint_offsets().expect("checkpoints").log_start_offset,
        Some(0),
        "a tiered log always checkpoints its log start"
    );

    // Remote retention raises the log start; DeleteRecords-like past the local start too.
    assert_eq!(log.maybe_increment_log_start_offset(2).expect("remote expiry"), 2);
    assert_eq!(log.local_log_start_offset().expect("local start"), 3);
    let gone = log.read(1, 1024, Isolation::HighWatermark, true);
    assert!(matches!(gone, Err(Error::OffsetOutOfRange { log_start: 2, .. })), "{gone:?}");
}

#[test]
fn a_reopened_tiered_log_starts_at_its_checkpoint_below_the_local_segments() {
    let fs = SimFs::new();
    let log = tiered_log(&fs);
    log.update_highest_offset_in_remote_storage(3).expect("uploaded");
    assert_eq!(log.delete_old_segments(1_000_000).expect("retention"), 4);
    log.close(0).expect("close");
    drop(log);
    let config = LogConfig { remote_storage_enable: true, ..LogConfig::default() };
    let log = open(&fs, config.clone(), 0);
    assert_eq!(log.log_start_offset().expect("start"), 0);
    assert_eq!(log.local_log_start_offset().expect("local"), 4);
    assert_eq!(log.highest_offset_in_remote_storage().expect("remote"), -1, "until told");
    drop(log);
    // The same files as an untiered log: the log start is its first segment's.
    let untiered = open(&fs, LogConfig::default(), 0);
    assert_eq!(untiered.log_start_offset().expect("start"), 4);
    let latest_tiered = untiered.fetch_offset_by_timestamp(LATEST_TIERED_TIMESTAMP).expect("-5");
    assert_eq!(
        latest_tiered.map(|found| (found.offset, found.leader_epoch)),
        Some((-1, Some(-1))),
        "Kafka's answer for a log without remote storage"
    );
}

#[test]
fn closed_segments_are_those_wholly_below_the_high_watermark() {
    let fs = SimFs::new();
    let log = tiered_log(&fs);
    let bases: Vec<i64> =
        log.closed_segments_from(0).expect("closed").iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, [0, 1, 2, 3], "not the active segment at 4");
    let from_three = log.closed_segments_from(3).expect("closed");
    assert_eq!(
        from_three.first().map(|s: &ClosedSegment| (s.base_offset, s.end_offset)),
        Some((3, 4))
    );
    log.update_high_watermark(2).expect("hw");
    let bases: Vec<i64> =
        log.closed_segments_from(0).expect("closed").iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, [0, 1], "segment 2 ends above the high watermark");
}

#[test]
fn an_empty_tiered_log_starts_again_at_its_remote_end() {
    let fs = SimFs::new();
    let config = LogConfig { remote_storage_enable: true, ..LogConfig::default() };
    let log = open(&fs, config, 0);
    assert!(log.start_at_remote_end(100, 250, 0).expect("restore"));
    assert_eq!(log.log_start_offset().expect("start"), 100);
    assert_eq!(log.local_log_start_offset().expect("local"), 250);
    assert_eq!(log.log_end_offset().expect("end"), 250);
    assert_eq!(log.high_watermark().expect("hw"), 250);
    assert_eq!(log.highest_offset_in_remote_storage().expect("remote"), 249);
    let info =
        log.append_as_leader(&one_record(0), 0, AppendOrigin::Client, 0).expect("append after");
    assert_eq!(info.first_offset, 250);
    assert!(!log.start_at_remote_end(100, 250, 0).expect("again"), "already past it");
}

#[test]
fn a_log_with_records_below_the_remote_end_is_not_overwritten() {
    let fs = SimFs::new();
    let log = tiered_log(&fs);
    let refused = log.start_at_remote_end(0, 50, 0);
    assert!(matches!(refused, Err(Error::InvalidArgument(_))), "{refused:?}");
    assert_eq!(log.log_end_offset().expect("end"), 5, "untouched");
}

#[test]
fn local_retention_may_not_exceed_the_logs_retention_for_a_tiered_topic() {
    let props = |pairs: &[(&str, &str)]| {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    };
    let too_long = LogConfig::from_properties(&props(&[
        (topic::REMOTE_STORAGE_ENABLE, "true"),
        (topic::RETENTION_MS, "1000"),
        (topic::LOCAL_RETENTION_MS, "2000"),
    ]))
    .expect_err("local longer than total");
    assert_eq!(too_long.key(), Some(topic::LOCAL_RETENTION_MS));
    let forever = LogConfig::from_properties(&props(&[
        (topic::REMOTE_STORAGE_ENABLE, "true"),
        (topic::RETENTION_BYTES, "1000"),
        (topic::LOCAL_RETENTION_BYTES, "-1"),
    ]))
    .expect_err("local forever, total bounded");
    assert_eq!(forever.key(), Some(topic::LOCAL_RETENTION_BYTES));
    let fine = LogConfig::from_properties(&props(&[
        (topic::REMOTE_STORAGE_ENABLE, "true"),
        (topic::RETENTION_MS, "1000"),
        (topic::LOCAL_RETENTION_MS, "500"),
    ]))
    .expect("local shorter than total");
    assert_eq!(fine.local_retention_ms_resolved(), 500);
    assert_eq!(fine.local_retention_bytes_resolved(), -1, "-2 takes retention.bytes");
    let untiered = LogConfig::from_properties(&props(&[
        (topic::RETENTION_MS, "1000"),
        (topic::LOCAL_RETENTION_MS, "2000"),
    ]));
    assert!(untiered.is_ok(), "checked only for tiered topics: {untiered:?}");
}
