//! End-to-end benchmarks of the partition log and log manager on a real directory, each next to
//! the hardware doing the same work in the same run (ratios are what count on shared machines):
//! - append 1 KiB records in 16 KiB batches, Kafka's page-cache durability and group commit,
//!   against a plain `write_all` of the same bytes plus one fsync;
//! - 100 B records per second;
//! - reads from the page cache against a plain read of the same files;
//! - restart of a directory with 1,000 partitions, after a clean shutdown and after a kill.
//!
//! Run: `cargo bench -p seglog-storage --bench log` (`SEGLOG_BENCH_MIB`, default 512, sizes the
//! append and read runs; `SEGLOG_BENCH_RESTART_MIB`, default 1024, the restart data).

#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]
#![allow(clippy::too_many_lines, reason = "one benchmark run, reported in order")]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use seglog_storage::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use seglog_storage::io::{Fs, OpenMode, StdFs};
use seglog_storage::log::load::LoadParams;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, SystemClock};
use seglog_storage::testing::filled_batch;

const BATCH_BYTES: usize = 16 * 1024;

fn env_mib(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn open_log(dir: &Path, config: LogConfig) -> PartitionLog {
    StdFs.create_dir_all(dir).unwrap();
    let tp = TopicPartition { topic: "bench".into(), partition: 0 };
    let params = LoadParams {
        had_clean_shutdown: true,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: 0,
        now_ms: 0,
    };
    PartitionLog::open(Arc::new(StdFs), dir, tp, config, params).unwrap().0
}

fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

/// Raw hardware: the same bytes written in order to one file, then one fsync.
fn raw_write(path: &Path, batch: &[u8], total_bytes: u64) -> Duration {
    let start = Instant::now();
    let file = StdFs.open(path, OpenMode::CreateNew).unwrap();
    let mut position = 0u64;
    while position < total_bytes {
        file.write_all_at(batch, position).unwrap();
        position += batch.len() as u64;
    }
    file.sync_data().unwrap();
    start.elapsed()
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted
        .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default()
}

fn main() {
    let temp = tempfile::tempdir().unwrap();
    let total_bytes = env_mib("SEGLOG_BENCH_MIB", 512) << 20;
    let batch = filled_batch(0, 1024, BATCH_BYTES);
    let n_batches = total_bytes / batch.len() as u64;
    let records_per_batch = seglog_format::RecordBatch::new(&batch).unwrap().records_count() as u64;
    println!(
        "bench: {} MiB of 1 KiB records in {} B batches ({n_batches} batches)",
        total_bytes >> 20,
        batch.len()
    );

    let raw = raw_write(&temp.path().join("raw.bin"), &batch, n_batches * batch.len() as u64);
    let raw_mb = mb_per_s(n_batches * batch.len() as u64, raw);
    println!("raw write_all + fsync:            {raw_mb:8.1} MB/s");

    // Kafka's default durability: page cache, plus one flush at the end as raw does.
    let log = open_log(&temp.path().join("page-0"), LogConfig::default());
    let start = Instant::now();
    for _ in 0..n_batches {
        log.append_as_leader(&batch, 0, AppendOrigin::Client, 0).unwrap();
    }
    log.flush(0).unwrap();
    let page_mb = mb_per_s(n_batches * batch.len() as u64, start.elapsed());
    println!(
        "append, page-cache (+1 fsync):    {page_mb:8.1} MB/s   ratio to raw {:.2}",
        page_mb / raw_mb
    );

    // Read back from the page cache, 1 MiB fetches, against a plain read of the same file.
    let start = Instant::now();
    let mut next = 0i64;
    let mut read_bytes = 0u64;
    let end = log.log_end_offset().unwrap();
    while next < end {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        read_bytes += fetch.records.len() as u64;
        let last = seglog_format::Batches::new(&fetch.records).last().unwrap().unwrap();
        next = last.batch.next_offset();
    }
    let read_mb = mb_per_s(read_bytes, start.elapsed());
    let raw_read = {
        let file = StdFs.open(&temp.path().join("raw.bin"), OpenMode::Read).unwrap();
        let len = file.len().unwrap();
        let mut buffer = vec![0u8; 1 << 20];
        let start = Instant::now();
        let mut position = 0u64;
        while position < len {
            let n = (len - position).min(buffer.len() as u64) as usize;
            file.read_exact_at(&mut buffer[..n], position).unwrap();
            position += n as u64;
        }
        mb_per_s(len, start.elapsed())
    };
    println!(
        "read, page cache (1 MiB fetches): {read_mb:8.1} MB/s   raw read {raw_read:.1} MB/s, ratio {:.2}",
        read_mb / raw_read
    );
    drop(log);

    // Group commit: a flusher every 2 ms. The producer pipelines (as a Kafka producer with
    // requests in flight does); a watcher records each append's time to durability.
    let config = LogConfig {
        durability: DurabilityMode::GroupCommit,
        group_commit_interval_ms: 2,
        ..LogConfig::default()
    };
    let log = Arc::new(open_log(&temp.path().join("group-0"), config));
    let stop = Arc::new(AtomicBool::new(false));
    let flusher = {
        let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
        std::thread::spawn(move || {
            let clock = Instant::now();
            while !stop.load(Ordering::SeqCst) {
                let _ = log.flush_if_due(clock.elapsed().as_millis() as i64);
                std::thread::park_timeout(Duration::from_millis(1));
            }
        })
    };
    // (append start, offset after it) in order; the watcher pops what became durable.
    let pending: Arc<Mutex<std::collections::VecDeque<(Instant, i64)>>> = Arc::default();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(n_batches as usize)));
    let start = Instant::now();
    let watcher = {
        let (log, pending, latencies) =
            (Arc::clone(&log), Arc::clone(&pending), Arc::clone(&latencies));
        std::thread::spawn(move || {
            let mut done = 0u64;
            while done < n_batches {
                let next = pending.lock().unwrap().front().copied();
                let Some((begun, end_offset)) = next else {
                    std::thread::yield_now();
                    continue;
                };
                assert!(log.wait_durable(end_offset, Duration::from_mins(1)).unwrap());
                let now = Instant::now();
                let durable = log.recovery_point().unwrap();
                let mut queue = pending.lock().unwrap();
                while let Some(&(begun_at, offset)) = queue.front() {
                    if offset > durable {
                        break;
                    }
                    queue.pop_front();
                    latencies.lock().unwrap().push(now - begun_at);
                    done += 1;
                }
                let _ = begun;
            }
        })
    };
    for _ in 0..n_batches {
        let begun = Instant::now();
        let info = log.append_as_leader(&batch, 0, AppendOrigin::Client, 0).unwrap();
        pending.lock().unwrap().push_back((begun, info.last_offset + 1));
    }
    watcher.join().unwrap();
    let elapsed = start.elapsed();
    stop.store(true, Ordering::SeqCst);
    flusher.join().unwrap();
    let mut latencies = Arc::try_unwrap(latencies).unwrap().into_inner().unwrap();
    latencies.sort();
    // The hardware doing the same: write_all with an fsync every 2 ms.
    let raw_periodic = {
        let file = StdFs.open(&temp.path().join("raw-periodic.bin"), OpenMode::CreateNew).unwrap();
        let begun = Instant::now();
        let mut last_sync = Instant::now();
        let mut position = 0u64;
        for _ in 0..n_batches {
            file.write_all_at(&batch, position).unwrap();
            position += batch.len() as u64;
            if last_sync.elapsed() >= Duration::from_millis(2) {
                file.sync_data().unwrap();
                last_sync = Instant::now();
            }
        }
        file.sync_data().unwrap();
        mb_per_s(position, begun.elapsed())
    };
    let group_bytes = latencies.len() as u64 * batch.len() as u64;
    let group_mb = mb_per_s(group_bytes, elapsed);
    println!(
        "append, group commit (2 ms):       {group_mb:8.1} MB/s   raw write + fsync every 2 ms {raw_periodic:.1} MB/s, ratio {:.2}; append-to-durable p50 {:?} p99 {:?}",
        group_mb / raw_periodic,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );

    // 100 B records.
    let small = filled_batch(0, 100, BATCH_BYTES);
    let small_records = seglog_format::RecordBatch::new(&small).unwrap().records_count() as u64;
    let log = open_log(&temp.path().join("small-0"), LogConfig::default());
    let n_small = (total_bytes / 4) / small.len() as u64;
    let start = Instant::now();
    for _ in 0..n_small {
        log.append_as_leader(&small, 0, AppendOrigin::Client, 0).unwrap();
    }
    let elapsed = start.elapsed();
    println!(
        "append, 100 B records:            {:8.0} records/s ({:.1} MB/s); 1 KiB: {:.0} records/s",
        (n_small * small_records) as f64 / elapsed.as_secs_f64(),
        mb_per_s(n_small * small.len() as u64, elapsed),
        page_mb * 1e6 / batch.len() as f64 * records_per_batch as f64
    );
    drop(log);

    // Restart of 1,000 partitions.
    let restart_bytes = env_mib("SEGLOG_BENCH_RESTART_MIB", 1024) << 20;
    let dir = temp.path().join("restart");
    let config = BrokerLogConfig { log_dirs: vec![dir.clone()], ..BrokerLogConfig::default() };
    let (manager, _) =
        LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config.clone()).unwrap();
    manager.create_topic("many", 1000, BTreeMap::new()).unwrap();
    let per_partition = (restart_bytes / 1000 / batch.len() as u64).max(1);
    for partition in 0..1000 {
        let log = manager.get_log(&TopicPartition { topic: "many".into(), partition }).unwrap();
        for _ in 0..per_partition {
            log.append_as_leader(&batch, 0, AppendOrigin::Client, 0).unwrap();
        }
    }
    manager.shutdown().unwrap();
    drop(manager);
    let start = Instant::now();
    let (manager, report) =
        LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config.clone()).unwrap();
    let clean = start.elapsed();
    assert_eq!(report.partitions.len(), 1000);
    println!(
        "restart, clean, 1,000 partitions, {} MiB: {clean:?}",
        (per_partition * batch.len() as u64 * 1000) >> 20
    );
    // A kill: checkpoints written, then one more unflushed batch per partition, no shutdown.
    manager.checkpoint().unwrap();
    for partition in 0..1000 {
        let log = manager.get_log(&TopicPartition { topic: "many".into(), partition }).unwrap();
        log.append_as_leader(&batch, 0, AppendOrigin::Client, 0).unwrap();
    }
    drop(manager);
    let start = Instant::now();
    let (_manager, report) =
        LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config).unwrap();
    let killed = start.elapsed();
    let recovered: usize = report.partitions.values().map(|r| r.segments_recovered).sum();
    println!(
        "restart, after a kill (tail of 16 KiB per partition, {recovered} segments scanned): {killed:?}"
    );
    println!(
        "result ratio_vs_raw_write={:.2} ratio_group_commit_vs_raw_periodic_fsync={:.2} ratio_read_vs_raw={:.2} restart_clean_s={:.3} restart_kill_s={:.3}",
        page_mb / raw_mb,
        group_mb / raw_periodic,
        read_mb / raw_read,
        clean.as_secs_f64(),
        killed.as_secs_f64()
    );
}
