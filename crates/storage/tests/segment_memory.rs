//! The heap a log holds as it lives: what an inactive segment costs while it exists (the memory
//! of a topic that keeps its segments grows by this much per partition at every roll), what a
//! created-then-deleted topic leaves behind, and what retention at a steady segment count adds
//! (nothing, both: the soak's topic churn and retention). Its own test binary, because it
//! counts every allocation of the process through a global allocator; its tests run one at a
//! time.
//!
//! The logs are opened as the broker opens them: on the real file system through a
//! descriptor budget (`BudgetedStdFs`) far smaller than the segments' files, so that inactive
//! segments' files are closed as in a broker with many partitions. Every segment gets a few
//! batches and is rolled by `roll`, then flushed (what the broker's roll flush does in
//! the background).

#![allow(clippy::unwrap_used, clippy::print_stderr, clippy::pedantic)]

use std::alloc::System;
use std::collections::BTreeMap;
use std::sync::Arc;

use seglog_format::{Compression, RecordBatchBuilder};
use seglog_storage::config::{BrokerLogConfig, LogConfig};
use seglog_storage::io::BudgetedStdFs;
use seglog_storage::log::partition_log::PartitionLog;
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, ManualClock};
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static ALLOCATOR: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const PARTITIONS: i32 = 20;
const ROLLS: usize = 100;
const DESCRIPTORS_MAX: u32 = 256;
const BATCHES_PER_SEGMENT: usize = 4;
/// The bound on the heap one inactive segment holds, its files closed (bytes requested; the
/// allocator's rounding comes on top). Measured 2026-12-03 with this test: 2,616 bytes in 22
/// blocks before inactive segments were made lighter, 1,561 in 16 after (the segment boxed in
/// the segment map, one path shared by a descriptor-budget handle and its map key, the
/// recent-batches cache and the indexes' growth room given back at a roll, no second copy of
/// the directory's path); 1,598 in 15 with sealed indexes (an entry count and a last entry
/// inline instead of an entries vector: these segments have one or two entries each, where a
/// 1 GiB segment's sealed indexes save about 5 MiB).
const INACTIVE_SEGMENT_HEAP_BYTES_MAX: isize = 1_800;

/// Serialises the tests of this binary: each counts every allocation of the process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn an_inactive_segment_holds_a_bounded_heap() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("data");
    let fs = BudgetedStdFs::new(DESCRIPTORS_MAX).fs;
    let config = BrokerLogConfig {
        log_dirs: vec![dir.clone()],
        default_log_config: LogConfig::default(),
        ..BrokerLogConfig::default()
    };
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let (manager, _) = LogManager::open(fs, clock, config).unwrap();
    let partitions = manager.create_topic("memory", PARTITIONS, BTreeMap::new()).unwrap();
    let logs: Vec<_> = partitions.iter().map(|tp| manager.get_log(tp).unwrap()).collect();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(1_700_000_000_000, None, Some(&b"value"[..]), &[]).unwrap();
    let batch = builder.build().unwrap();
    let mut now_ms = 1_700_000_000_000;
    let mut round = |logs: &[Arc<PartitionLog>]| {
        for log in logs {
            for _ in 0..BATCHES_PER_SEGMENT {
                log.append_as_leader(&batch, 0, AppendOrigin::Client, now_ms).unwrap();
            }
            log.roll(now_ms).unwrap();
            log.flush(now_ms).unwrap();
        }
        now_ms += 1;
    };
    // Warm-up: the first rolls grow the maps and pools that every later roll reuses.
    for _ in 0..10 {
        round(&logs);
    }
    let region = Region::new(ALLOCATOR);
    for _ in 0..ROLLS {
        round(&logs);
    }
    let change = region.change();
    // A realloc counts its growth in bytes_allocated (or its shrink in bytes_deallocated).
    let grown = change.bytes_allocated as isize - change.bytes_deallocated as isize;
    let blocks = change.allocations as isize - change.deallocations as isize;
    let per_segment = grown / (ROLLS as isize * PARTITIONS as isize);
    eprintln!(
        "{} rolls of {PARTITIONS} partitions: heap grew {grown} bytes in {blocks} blocks, {per_segment} bytes per inactive segment (bound {INACTIVE_SEGMENT_HEAP_BYTES_MAX})",
        ROLLS
    );
    assert_eq!(
        logs[0].segment_base_offsets().unwrap().len(),
        ROLLS + 11,
        "every roll made a segment"
    );
    assert!(
        per_segment <= INACTIVE_SEGMENT_HEAP_BYTES_MAX,
        "an inactive segment holds {per_segment} bytes of heap, over the bound of {INACTIVE_SEGMENT_HEAP_BYTES_MAX}"
    );
    drop(logs);
    manager.shutdown().unwrap();
}

/// Topics created and deleted: what the soak's churn-topics does (a topic of 10 partitions with
/// 16 KiB segments every 10 s, written, then deleted).
const CHURN_TOPICS: usize = 40;
const CHURN_PARTITIONS: i32 = 10;
const CHURN_BATCHES: usize = 30;
/// The heap a created-then-deleted topic may leave behind, in bytes (what maps keep of it).
/// Measured 2026-12-03: 13,625 bytes a topic before the descriptor budget's clocks dropped
/// the entries of dropped handles (a pool under its budget never swept them), -106 after.
const DELETED_TOPIC_HEAP_BYTES_MAX: isize = 256;

fn one_batch(now_ms: i64, value_bytes: usize) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(now_ms, None, Some(&vec![b'v'; value_bytes][..]), &[]).unwrap();
    builder.build().unwrap()
}

fn open_manager(dir: &std::path::Path) -> (LogManager, Arc<ManualClock>) {
    let fs = BudgetedStdFs::new(DESCRIPTORS_MAX).fs;
    let config = BrokerLogConfig {
        log_dirs: vec![dir.to_path_buf()],
        default_log_config: LogConfig::default(),
        retention_check_interval_ms: 1,
        ..BrokerLogConfig::default()
    };
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let (manager, _) = LogManager::open(fs, Arc::clone(&clock) as _, config).unwrap();
    (manager, clock)
}

#[test]
fn a_deleted_topic_leaves_no_heap_behind() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let temp = tempfile::tempdir().unwrap();
    let (manager, clock) = open_manager(&temp.path().join("data"));
    let mut now_ms = 1_700_000_000_000;
    let batch = one_batch(now_ms, 1_000);
    let mut churn = |i: usize| {
        let name = format!("churn-{i}");
        let overrides = BTreeMap::from([("segment.bytes".to_owned(), "16384".to_owned())]);
        let partitions = manager.create_topic(&name, CHURN_PARTITIONS, overrides).unwrap();
        for tp in &partitions {
            let log = manager.get_log(tp).unwrap();
            for _ in 0..CHURN_BATCHES {
                log.append_as_leader(&batch, 0, AppendOrigin::Client, now_ms).unwrap();
            }
            assert!(log.segment_base_offsets().unwrap().len() > 1, "the topic rolled");
        }
        now_ms += 10_000;
        clock.set(now_ms);
        manager.tick(now_ms);
        manager.delete_topic(&name).unwrap();
        manager.tick(now_ms);
    };
    for i in 0..5 {
        churn(i);
    }
    let region = Region::new(ALLOCATOR);
    for i in 5..5 + CHURN_TOPICS {
        churn(i);
    }
    let change = region.change();
    let grown = change.bytes_allocated as isize - change.bytes_deallocated as isize;
    let blocks = change.allocations as isize - change.deallocations as isize;
    let per_topic = grown / CHURN_TOPICS as isize;
    eprintln!(
        "{CHURN_TOPICS} topics created, written and deleted: heap grew {grown} bytes in {blocks} blocks, {per_topic} bytes per topic (bound {DELETED_TOPIC_HEAP_BYTES_MAX})"
    );
    assert!(manager.topics().is_empty(), "every churned topic is gone");
    assert!(
        per_topic <= DELETED_TOPIC_HEAP_BYTES_MAX,
        "a deleted topic left {per_topic} bytes of heap behind, over the bound of {DELETED_TOPIC_HEAP_BYTES_MAX}"
    );
    manager.shutdown().unwrap();
}

/// Rounds of the retention test: each appends to every partition, rolls, and lets retention
/// delete what fell out of `retention.ms`, so the number of segments is steady.
const RETENTION_ROUNDS: usize = 200;
/// The heap the whole retention run may gain once the segment count is steady, in bytes.
/// Measured 2026-12-03: 29,856 bytes (253 blocks) over 4,000 deleted segments before the
/// clocks dropped dropped handles' entries, 6,624 (31 blocks: maps' capacity) after.
const RETENTION_HEAP_GROWTH_BYTES_MAX: isize = 16 << 10;

#[test]
fn retention_at_a_steady_segment_count_keeps_the_heap_flat() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let temp = tempfile::tempdir().unwrap();
    let (manager, clock) = open_manager(&temp.path().join("data"));
    let overrides = BTreeMap::from([("retention.ms".to_owned(), "100000".to_owned())]);
    let partitions = manager.create_topic("kept", PARTITIONS, overrides).unwrap();
    let logs: Vec<_> = partitions.iter().map(|tp| manager.get_log(tp).unwrap()).collect();
    let mut now_ms = 1_700_000_000_000;
    // Each round is 10 s: retention keeps the last 10 rounds' segments.
    let mut round = || {
        let batch = one_batch(now_ms, 100);
        for log in &logs {
            for _ in 0..BATCHES_PER_SEGMENT {
                log.append_as_leader(&batch, 0, AppendOrigin::Client, now_ms).unwrap();
            }
            log.roll(now_ms).unwrap();
            log.flush(now_ms).unwrap();
            // Retention deletes only below the high watermark (a single replica's is its end).
            log.update_high_watermark(log.log_end_offset().unwrap()).unwrap();
        }
        now_ms += 10_000;
        clock.set(now_ms);
        manager.tick(now_ms);
    };
    for _ in 0..20 {
        round();
    }
    let segments_before = logs[0].segment_base_offsets().unwrap().len();
    let region = Region::new(ALLOCATOR);
    for _ in 0..RETENTION_ROUNDS {
        round();
    }
    let change = region.change();
    let grown = change.bytes_allocated as isize - change.bytes_deallocated as isize;
    let blocks = change.allocations as isize - change.deallocations as isize;
    let segments_after = logs[0].segment_base_offsets().unwrap().len();
    eprintln!(
        "{RETENTION_ROUNDS} rounds of roll and retention over {PARTITIONS} partitions ({segments_before} then {segments_after} segments each): heap grew {grown} bytes in {blocks} blocks (bound {RETENTION_HEAP_GROWTH_BYTES_MAX})"
    );
    assert_eq!(segments_before, segments_after, "retention kept the segment count steady");
    assert!(logs[0].log_start_offset().unwrap() > 0, "retention deleted segments");
    assert!(
        grown <= RETENTION_HEAP_GROWTH_BYTES_MAX,
        "the heap grew {grown} bytes at a steady segment count, over the bound of {RETENTION_HEAP_GROWTH_BYTES_MAX}"
    );
    drop(logs);
    manager.shutdown().unwrap();
}
