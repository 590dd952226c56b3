//! What an inactive segment costs in heap while it exists: the memory of a topic that keeps its
//! segments (a long retention) grows by this much per partition at every roll, so it is held
//! to a bound. Its own test binary, because it counts every allocation of the process through
//! a global allocator.
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
/// the directory's path).
const INACTIVE_SEGMENT_HEAP_BYTES_MAX: isize = 1_800;

#[test]
fn an_inactive_segment_holds_a_bounded_heap() {
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
