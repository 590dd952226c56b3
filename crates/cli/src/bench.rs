//! `seglog bench`: seglog's hot paths measured next to the same work done by the `commitlog`
//! crate and by the hardware (plain sequential writes and reads) in the same run, reported as
//! ratios, because shared machines are noisy.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use commitlog::message::{MessageBuf, MessageSet};
use commitlog::{CommitLog, LogOptions, ReadLimit};
use hdrhistogram::Histogram;
use seglog_format::{Batches, Compression, RecordBatchBuilder};
use seglog_storage::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use seglog_storage::io::StdFs;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, SystemClock};

/// Appends a group-commit run lets run ahead of the durability waiter.
const DURABILITY_WAITS_MAX: usize = 4096;

/// Arguments of `seglog bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Where to write (a fresh subdirectory is made and removed).
    #[arg(long, default_value = "./seglog-bench")]
    dir: PathBuf,
    /// Bytes per record value.
    #[arg(long, default_value_t = 1024)]
    record_bytes: usize,
    /// Bytes per batch.
    #[arg(long, default_value_t = 16 * 1024)]
    batch_bytes: usize,
    /// Total bytes to append, in MiB.
    #[arg(long, default_value_t = 1024)]
    total_mib: u64,
    /// Partitions to spread the appends over.
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Batch codec: none, gzip, snappy, lz4, zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    /// Durability: page-cache, group-commit, fsync-every-append.
    #[arg(long, default_value = "page-cache")]
    durability: String,
    /// With `--durability group-commit`: the background fsync interval
    /// (`seglog.group.commit.interval.ms`).
    #[arg(long, default_value_t = 5)]
    group_commit_interval_ms: i64,
    /// Paces the appends to this rate (MB/s) instead of as fast as possible: latency is then
    /// measured below saturation, as published latency figures are (0: unpaced).
    #[arg(long, default_value_t = 0.0)]
    rate_mb_per_s: f64,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[expect(clippy::cast_precision_loss, reason = "a throughput figure")]
fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9)
}

/// Peak resident memory of this process, in MiB (Linux `VmHWM`).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")
                    .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// One producer batch of `record_bytes`-sized values filling `batch_bytes`, and its record count.
fn producer_batch(
    codec: Compression,
    record_bytes: usize,
    batch_bytes: usize,
) -> Result<(Vec<u8>, usize, Vec<u8>)> {
    let value: Vec<u8> = (0..record_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let mut builder = RecordBatchBuilder::new(codec);
    let mut uncompressed = 0;
    while uncompressed + record_bytes + 16 <= batch_bytes || builder.n_records() == 0 {
        builder.push(1_700_000_000_000, None, Some(&value), &[])?;
        uncompressed += record_bytes + 16;
    }
    let n = builder.n_records() as usize;
    Ok((builder.build()?, n, value))
}

/// A row of the result table.
struct Row {
    name: String,
    mb_per_s: f64,
    records_per_s: f64,
    note: String,
}

#[expect(clippy::too_many_lines, reason = "one benchmark run, reported in order")]
#[expect(clippy::cast_precision_loss, reason = "throughput and latency figures")]
pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    let codec = Compression::from_name(&args.compression)
        .with_context(|| format!("unknown compression {:?}", args.compression))?;
    let durability = DurabilityMode::from_name(&args.durability)
        .with_context(|| format!("unknown durability {:?}", args.durability))?;
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    let root = args.dir.join(format!("run-{}", std::process::id()));
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let _cleanup = Cleanup(root.clone());
    let (batch, records_per_batch, value) =
        producer_batch(codec, args.record_bytes, args.batch_bytes)?;
    let total_bytes = args.total_mib << 20;
    let n_batches = (total_bytes / batch.len() as u64).max(1);
    let n_records = n_batches * records_per_batch as u64;
    let payload_bytes = n_records * args.record_bytes as u64;
    let mut rows = Vec::new();
    let mut figures: BTreeMap<&str, f64> = BTreeMap::new();
    let progress = crate::progress::bar(7, "bench");
    eprintln!(
        "seglog bench: {} MiB, {} B records, {} records per {} B batch, {} partitions, {codec}, {durability}",
        args.total_mib,
        args.record_bytes,
        records_per_batch,
        batch.len(),
        args.partitions
    );

    // 1. The hardware: the same bytes with write_all, then one fsync; and read back.
    let raw_path = root.join("raw.bin");
    let started = Instant::now();
    {
        let mut file = std::fs::File::create(&raw_path)?;
        for _ in 0..n_batches {
            file.write_all(&batch)?;
        }
        file.sync_data()?;
    }
    let raw_write = mb_per_s(n_batches * batch.len() as u64, started.elapsed());
    // With group commit, the hardware reference is the same writes with an fsync every interval.
    let raw_periodic = if durability == DurabilityMode::GroupCommit {
        let interval = Duration::from_millis(args.group_commit_interval_ms.unsigned_abs());
        let started = Instant::now();
        let mut file = std::fs::File::create(&raw_path)?;
        let mut last_sync = Instant::now();
        let mut fsyncs = Histogram::<u64>::new(3)?;
        for batch_idx in 0..n_batches {
            if args.rate_mb_per_s > 0.0 {
                let due = (batch_idx * batch.len() as u64) as f64 / (args.rate_mb_per_s * 1e6);
                let wait = Duration::from_secs_f64(due).saturating_sub(started.elapsed());
                if !wait.is_zero() {
                    std::thread::sleep(wait);
                }
            }
            file.write_all(&batch)?;
            if last_sync.elapsed() >= interval {
                let begun = Instant::now();
                file.sync_data()?;
                fsyncs.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
                last_sync = Instant::now();
            }
        }
        file.sync_data()?;
        Some((mb_per_s(n_batches * batch.len() as u64, started.elapsed()), fsyncs))
    } else {
        None
    };
    let started = Instant::now();
    let raw_read_bytes = {
        let mut file = std::fs::File::open(&raw_path)?;
        let mut buffer = vec![0u8; 1 << 20];
        let mut read = 0u64;
        loop {
            let n = std::io::Read::read(&mut file, &mut buffer)?;
            if n == 0 {
                break read;
            }
            read += n as u64;
        }
    };
    let raw_read = mb_per_s(raw_read_bytes, started.elapsed());
    std::fs::remove_file(&raw_path)?;
    rows.push(Row {
        name: "raw write_all + fsync".into(),
        mb_per_s: raw_write,
        records_per_s: raw_write * 1e6 / batch.len() as f64 * records_per_batch as f64,
        note: String::new(),
    });
    if let Some((raw_periodic, fsyncs)) = &raw_periodic {
        rows.push(Row {
            name: format!("raw write + fsync every {} ms", args.group_commit_interval_ms),
            mb_per_s: *raw_periodic,
            records_per_s: raw_periodic * 1e6 / batch.len() as f64 * records_per_batch as f64,
            note: format!(
                "the group-commit reference; fsync p50 {:.1} us, p99 {:.1} us",
                fsyncs.value_at_quantile(0.5) as f64 / 1e3,
                fsyncs.value_at_quantile(0.99) as f64 / 1e3
            ),
        });
        figures.insert("raw_fsync_p99_us", fsyncs.value_at_quantile(0.99) as f64 / 1e3);
    }
    rows.push(Row {
        name: "raw read (page cache)".into(),
        mb_per_s: raw_read,
        records_per_s: 0.0,
        note: String::new(),
    });
    progress.inc(1);

    // 2. seglog: append, with a latency histogram, then one flush (as raw's fsync).
    let config = BrokerLogConfig {
        log_dirs: vec![root.join("seglog")],
        default_log_config: LogConfig {
            durability,
            group_commit_interval_ms: args.group_commit_interval_ms,
            ..LogConfig::default()
        },
        ..BrokerLogConfig::default()
    };
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config.clone())?;
    let manager = Arc::new(manager);
    manager.create_topic("bench", args.partitions, BTreeMap::new())?;
    let logs: Vec<Arc<PartitionLog>> = (0..args.partitions)
        .map(|partition| manager.get_log(&TopicPartition { topic: "bench".into(), partition }))
        .collect::<std::result::Result<_, _>>()?;
    let background = manager.start_background(Duration::from_millis(1))?;
    let mut latency = Histogram::<u64>::new(3)?;
    // Group commit: a pipelined producer (as a broker serving many requests is), and a waiter
    // that records each append's append-to-durable latency; the queue between them is bounded.
    let (waits, waiter) = if durability == DurabilityMode::GroupCommit {
        let (send, receive) =
            std::sync::mpsc::sync_channel::<(usize, i64, Instant)>(DURABILITY_WAITS_MAX);
        let waiter_logs = logs.clone();
        let waiter = std::thread::spawn(move || -> Result<Histogram<u64>> {
            let mut durable = Histogram::<u64>::new(3)?;
            for (log_idx, offset, begun) in receive {
                waiter_logs[log_idx].sync_to(offset, 0)?;
                durable.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
            }
            Ok(durable)
        });
        (Some(send), Some(waiter))
    } else {
        (None, None)
    };
    let started = Instant::now();
    for batch_idx in 0..n_batches {
        let log_idx = (batch_idx % logs.len() as u64) as usize;
        if args.rate_mb_per_s > 0.0 {
            let due = (batch_idx * batch.len() as u64) as f64 / (args.rate_mb_per_s * 1e6);
            let wait = Duration::from_secs_f64(due).saturating_sub(started.elapsed());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
        }
        let begun = Instant::now();
        let info = logs[log_idx].append_as_leader(&batch, 0, AppendOrigin::Client, 0)?;
        match &waits {
            Some(waits) => waits.send((log_idx, info.last_offset + 1, begun))?,
            None => {
                latency.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
            }
        }
    }
    drop(waits);
    if let Some(waiter) = waiter {
        latency =
            waiter.join().map_err(|_| anyhow::anyhow!("the durability waiter panicked"))??;
    }
    // In the page cache: the state commitlog's appends end in (its flush() does not fsync).
    let page_cache_elapsed = started.elapsed();
    for log in &logs {
        log.flush(0)?;
    }
    // Durable: the state raw write_all + fsync ends in.
    let append_elapsed = started.elapsed();
    drop(background);
    let append_mb = mb_per_s(n_batches * batch.len() as u64, append_elapsed);
    let append_records = n_records as f64 / append_elapsed.as_secs_f64();
    let page_cache_records = n_records as f64 / page_cache_elapsed.as_secs_f64();
    let (p50, p99, p999) = (
        latency.value_at_quantile(0.5),
        latency.value_at_quantile(0.99),
        latency.value_at_quantile(0.999),
    );
    rows.push(Row {
        name: "seglog append (page cache)".into(),
        mb_per_s: mb_per_s(n_batches * batch.len() as u64, page_cache_elapsed),
        records_per_s: page_cache_records,
        note: "before the final fsync, as commitlog".into(),
    });
    rows.push(Row {
        name: "seglog append + fsync".into(),
        mb_per_s: append_mb,
        records_per_s: append_records,
        note: format!(
            "{} latency p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us",
            if durability == DurabilityMode::GroupCommit { "append-to-durable" } else { "append" },
            p50 as f64 / 1e3,
            p99 as f64 / 1e3,
            p999 as f64 / 1e3
        ),
    });
    progress.inc(1);

    // 3. seglog: read everything back from the page cache, 1 MiB fetches.
    let started = Instant::now();
    let mut read_bytes = 0u64;
    for log in &logs {
        let (mut next, end) = (log.log_start_offset()?, log.log_end_offset()?);
        while next < end {
            let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true)?;
            read_bytes += fetch.records.len() as u64;
            let Some(last) = Batches::new(&fetch.records).last() else { break };
            next = last?.batch.next_offset();
        }
    }
    let read_mb = mb_per_s(read_bytes, started.elapsed());
    rows.push(Row {
        name: "seglog read (page cache)".into(),
        mb_per_s: read_mb,
        records_per_s: read_mb * 1e6 / batch.len() as f64 * records_per_batch as f64,
        note: String::new(),
    });
    progress.inc(1);

    // 4. Offset and timestamp lookups at random offsets (metadata-only reads: index + scan).
    let mut lookups = Histogram::<u64>::new(3)?;
    let mut ts_lookups = Histogram::<u64>::new(3)?;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let first_log = &logs[0];
    let end = first_log.log_end_offset()?.max(1);
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let target = (state % end.unsigned_abs()) as i64;
        let begun = Instant::now();
        let _ = first_log.read(target, 0, Isolation::LogEnd, false)?;
        lookups.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
        let begun = Instant::now();
        let _ = first_log.fetch_offset_by_timestamp(1_700_000_000_000)?;
        ts_lookups.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
    }
    progress.inc(1);

    // 5. Mixed: a producer appending while a consumer tails the log.
    let mixed_log = Arc::clone(&logs[0]);
    let mixed_start = mixed_log.log_end_offset()?;
    let n_mixed = (n_batches / 4).max(1);
    let started = Instant::now();
    let consumer = {
        let log = Arc::clone(&mixed_log);
        let expected_end = mixed_start + (n_mixed * records_per_batch as u64) as i64;
        std::thread::spawn(move || -> Result<u64> {
            let mut next = mixed_start;
            let mut bytes = 0u64;
            while next < expected_end {
                let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true)?;
                match Batches::new(&fetch.records).last() {
                    Some(last) => {
                        next = last?.batch.next_offset();
                        bytes += fetch.records.len() as u64;
                    }
                    None => std::thread::yield_now(),
                }
            }
            Ok(bytes)
        })
    };
    for _ in 0..n_mixed {
        mixed_log.append_as_leader(&batch, 0, AppendOrigin::Client, 0)?;
    }
    let tail_bytes =
        consumer.join().map_err(|_| anyhow::anyhow!("the consumer thread panicked"))??;
    let mixed_mb = mb_per_s(tail_bytes, started.elapsed());
    rows.push(Row {
        name: "seglog produce + tail consume".into(),
        mb_per_s: mixed_mb,
        records_per_s: 0.0,
        note: "consumer MB/s".into(),
    });
    progress.inc(1);

    // 6. Restart after a clean shutdown.
    drop(logs);
    drop(mixed_log);
    manager.shutdown()?;
    drop(manager);
    let started = Instant::now();
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config)?;
    let restart = started.elapsed();
    manager.shutdown()?;
    drop(manager);
    progress.inc(1);

    // 7. The peer: the commitlog crate, the same payloads in batches of the same record count.
    let mut options = LogOptions::new(root.join("commitlog"));
    options.message_max_bytes(args.batch_bytes * 2);
    let mut peer = CommitLog::new(options).context("cannot open the commitlog peer")?;
    let mut message_batch = MessageBuf::default();
    for _ in 0..records_per_batch {
        message_batch.push(&value).map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
    }
    // Each append gets a fresh copy of the serialized batch (one memcpy, as seglog's validator
    // copies the producer's batch).
    let serialized = message_batch.into_bytes();
    let started = Instant::now();
    for _ in 0..n_batches {
        let mut buffer = MessageBuf::from_bytes(serialized.clone())
            .map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
        peer.append(&mut buffer).map_err(|e| anyhow::anyhow!("commitlog append: {e:?}"))?;
    }
    peer.flush()?;
    let peer_elapsed = started.elapsed();
    let peer_append_mb_per_s = mb_per_s(payload_bytes, peer_elapsed);
    let peer_records = n_records as f64 / peer_elapsed.as_secs_f64();
    let started = Instant::now();
    let (mut next, mut peer_read) = (0u64, 0u64);
    while next < peer.next_offset() {
        let messages = peer
            .read(next, ReadLimit::max_bytes(1 << 20))
            .map_err(|e| anyhow::anyhow!("commitlog read: {e:?}"))?;
        if messages.len() == 0 {
            break;
        }
        peer_read += messages.bytes().len() as u64;
        next += messages.len() as u64;
    }
    let peer_read_mb_per_s = mb_per_s(peer_read, started.elapsed());
    let mut peer_lookups = Histogram::<u64>::new(3)?;
    let peer_end = peer.next_offset().max(1);
    for _ in 0..20_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let target = state % peer_end;
        let begun = Instant::now();
        let _ = peer
            .read(target, ReadLimit::max_bytes(args.record_bytes + 64))
            .map_err(|e| anyhow::anyhow!("commitlog read: {e:?}"))?;
        peer_lookups.record(u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX))?;
    }
    drop(peer);
    rows.push(Row {
        name: "commitlog append".into(),
        mb_per_s: peer_append_mb_per_s,
        records_per_s: peer_records,
        note: "payload MB/s; its flush() does not fsync".into(),
    });
    rows.push(Row {
        name: "commitlog read (page cache)".into(),
        mb_per_s: peer_read_mb_per_s,
        records_per_s: 0.0,
        note: String::new(),
    });
    progress.inc(1);
    progress.finish_and_clear();

    // The table, the ratios, the machine-readable line.
    let mut out = std::io::stdout().lock();
    writeln!(out, "{:<34} {:>12} {:>14}  note", "workload", "MB/s", "records/s")?;
    for row in &rows {
        writeln!(
            out,
            "{:<34} {:>12.1} {:>14.0}  {}",
            row.name, row.mb_per_s, row.records_per_s, row.note
        )?;
    }
    writeln!(
        out,
        "offset lookup: p50 {:.2} us, p99 {:.2} us (commitlog: p50 {:.2} us, p99 {:.2} us); timestamp lookup: p50 {:.2} us, p99 {:.2} us",
        lookups.value_at_quantile(0.5) as f64 / 1e3,
        lookups.value_at_quantile(0.99) as f64 / 1e3,
        peer_lookups.value_at_quantile(0.5) as f64 / 1e3,
        peer_lookups.value_at_quantile(0.99) as f64 / 1e3,
        ts_lookups.value_at_quantile(0.5) as f64 / 1e3,
        ts_lookups.value_at_quantile(0.99) as f64 / 1e3
    )?;
    writeln!(
        out,
        "restart after a clean shutdown ({} partitions): {:.3} s; peak RSS {:.1} MiB",
        args.partitions,
        restart.as_secs_f64(),
        peak_rss_mib()
    )?;
    figures.insert("append_mb_per_s", append_mb);
    figures.insert("append_records_per_s", append_records);
    figures.insert("read_mb_per_s", read_mb);
    figures.insert("raw_write_mb_per_s", raw_write);
    figures.insert("raw_read_mb_per_s", raw_read);
    figures.insert("commitlog_append_records_per_s", peer_records);
    figures.insert("commitlog_read_mb_per_s", peer_read_mb_per_s);
    figures.insert("append_p50_us", p50 as f64 / 1e3);
    figures.insert("append_p99_us", p99 as f64 / 1e3);
    figures.insert("append_p999_us", p999 as f64 / 1e3);
    figures.insert("offset_lookup_p99_us", lookups.value_at_quantile(0.99) as f64 / 1e3);
    figures.insert("restart_s", restart.as_secs_f64());
    figures.insert("peak_rss_mib", peak_rss_mib());
    // Group commit is compared with writes fsynced at the same interval; the rest with
    // write_all and one fsync.
    let raw_reference = raw_periodic.as_ref().map_or(raw_write, |(mb, _)| *mb);
    figures.insert("ratio_vs_raw_write", append_mb / raw_reference);
    figures.insert("page_cache_append_records_per_s", page_cache_records);
    figures.insert("ratio_vs_commitlog_records", page_cache_records / peer_records);
    figures.insert("ratio_read_vs_commitlog", read_mb / peer_read_mb_per_s);
    figures.insert("ratio_read_vs_raw", read_mb / raw_read);
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&figures)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    writeln!(
        out,
        "ratio_vs_raw_write={:.2} ratio_vs_commitlog_records={:.2} ratio_read_vs_commitlog={:.2} ratio_read_vs_raw={:.2}",
        figures["ratio_vs_raw_write"],
        figures["ratio_vs_commitlog_records"],
        figures["ratio_read_vs_commitlog"],
        figures["ratio_read_vs_raw"]
    )?;
    Ok(())
}

/// Removes the run directory, whatever happens.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_dir(self.0.parent().unwrap_or(Path::new(".")));
    }
}
