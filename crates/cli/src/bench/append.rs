//! `seglog bench --workload append` (the default): the raw disk, seglog's append (with its
//! latency), read, lookups, produce with a tailing consumer and restart, then the `commitlog`
//! crate with the same payloads; one function per phase, in the order they run.

#![expect(clippy::cast_precision_loss, reason = "throughput and latency figures")]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use commitlog::message::{MessageBuf, MessageSet};
use commitlog::{CommitLog, LogOptions, ReadLimit};
use hdrhistogram::Histogram;
use seglog_format::{Batches, Compression};
use seglog_storage::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use seglog_storage::io::StdFs;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, SystemClock};

use super::{
    BenchArgs, Row, mb_per_s, nanos_since, pace, peak_rss_mib, producer_batch, raw_read, raw_write,
    run_dir, write_rows,
};

/// Appends a group-commit run lets run ahead of the durability waiter.
const DURABILITY_WAITS_MAX: usize = 4096;

/// What the durability waiter is sent per append: the log, the offset to be durable, and when
/// the append began.
type DurabilityWait = (usize, i64, Instant);

/// Random lookups per measurement.
const LOOKUPS: usize = 20_000;

/// Figures by name, for the JSON file and the ratio line.
type Figures = BTreeMap<&'static str, f64>;

/// What every phase works from: the arguments and the one producer batch repeated.
struct Plan<'a> {
    args: &'a BenchArgs,
    durability: DurabilityMode,
    root: PathBuf,
    batch: Vec<u8>,
    records_per_batch: usize,
    value: Vec<u8>,
    n_batches: u64,
    n_records: u64,
    payload_bytes: u64,
}

impl Plan<'_> {
    /// Records per second at `mb_per_s` of whole batches.
    fn records_per_s(&self, mb_per_s: f64) -> f64 {
        mb_per_s * 1e6 / self.batch.len() as f64 * self.records_per_batch as f64
    }

    /// Bytes of all the batches.
    fn batch_bytes(&self) -> u64 {
        self.n_batches * self.batch.len() as u64
    }
}

/// The raw disk references.
struct Raw {
    write: f64,
    /// The same writes timed before the fsync: the page cache's limit.
    page_cache_write: f64,
    /// With group commit: the same writes fsynced every interval, and those fsyncs' latency.
    periodic: Option<(f64, Histogram<u64>)>,
    read: f64,
}

/// What the append phase measured.
struct Appended {
    /// MB/s until durable.
    mb_per_s: f64,
    /// Records/s until durable.
    records_per_s: f64,
    /// Records/s until in the page cache.
    page_cache_records_per_s: f64,
    /// p50, p99, p99.9 of the append (or append-to-durable) latency, ns.
    latency: (u64, u64, u64),
}

/// What the `commitlog` peer measured.
struct Peer {
    records_per_s: f64,
    read_mb_per_s: f64,
    lookups: Histogram<u64>,
}

/// One xorshift64 step (the random lookup targets).
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Runs the append workload.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let codec = Compression::from_name(&args.compression)
        .with_context(|| format!("unknown compression {:?}", args.compression))?;
    let durability = DurabilityMode::from_name(&args.durability)
        .with_context(|| format!("unknown durability {:?}", args.durability))?;
    anyhow::ensure!(args.partitions >= 1, "--partitions must be at least 1");
    let (root, _cleanup) = run_dir(args)?;
    let (batch, records_per_batch, value) =
        producer_batch(codec, args.record_bytes, args.batch_bytes)?;
    let total_bytes = args.total_mib << 20;
    let n_batches = (total_bytes / batch.len() as u64).max(1);
    let n_records = n_batches * records_per_batch as u64;
    let payload_bytes = n_records * args.record_bytes as u64;
    let plan = Plan {
        args,
        durability,
        root,
        batch,
        records_per_batch,
        value,
        n_batches,
        n_records,
        payload_bytes,
    };
    let mut rows = Vec::new();
    let mut figures = Figures::new();
    let progress = crate::progress::bar(7, "bench");
    eprintln!(
        "seglog bench: {} MiB, {} B records, {} records per {} B batch, {} partitions, {codec}, {durability}",
        args.total_mib,
        args.record_bytes,
        records_per_batch,
        plan.batch.len(),
        args.partitions
    );
    let raw = raw_phase(&plan, &mut rows, &mut figures)?;
    progress.inc(1);
    let (config, manager, logs) = open_seglog(&plan)?;
    let appended = append_phase(&plan, &manager, &logs, &mut rows)?;
    progress.inc(1);
    let read_mb = read_phase(&plan, &logs, &mut rows)?;
    progress.inc(1);
    let Lookups { random: lookups, hot, by_timestamp: ts_lookups, state } = lookup_phase(&logs[0])?;
    progress.inc(1);
    mixed_phase(&plan, &logs, &mut rows)?;
    progress.inc(1);
    let restart = restart_phase(logs, manager, config)?;
    progress.inc(1);
    let peer = peer_phase(&plan, state, &mut rows)?;
    progress.inc(1);
    progress.finish_and_clear();
    let mut out = std::io::stdout().lock();
    write_rows(&mut out, &rows)?;
    writeln!(
        out,
        "offset lookup: p50 {:.2} us, p99 {:.2} us (commitlog: p50 {:.2} us, p99 {:.2} us); timestamp lookup: p50 {:.2} us, p99 {:.2} us",
        lookups.value_at_quantile(0.5) as f64 / 1e3,
        lookups.value_at_quantile(0.99) as f64 / 1e3,
        peer.lookups.value_at_quantile(0.5) as f64 / 1e3,
        peer.lookups.value_at_quantile(0.99) as f64 / 1e3,
        ts_lookups.value_at_quantile(0.5) as f64 / 1e3,
        ts_lookups.value_at_quantile(0.99) as f64 / 1e3
    )?;
    writeln!(
        out,
        "hot offset lookup (the last {HOT_OFFSETS} offsets): p50 {:.2} us, p99 {:.2} us",
        hot.value_at_quantile(0.5) as f64 / 1e3,
        hot.value_at_quantile(0.99) as f64 / 1e3
    )?;
    writeln!(
        out,
        "restart after a clean shutdown ({} partitions): {:.3} s; peak RSS {:.1} MiB",
        args.partitions,
        restart.as_secs_f64(),
        peak_rss_mib()
    )?;
    figures.insert("offset_lookup_p99_us", lookups.value_at_quantile(0.99) as f64 / 1e3);
    figures.insert("hot_offset_lookup_p99_us", hot.value_at_quantile(0.99) as f64 / 1e3);
    figures.insert("restart_s", restart.as_secs_f64());
    report(&plan, &raw, &appended, read_mb, &peer, figures, &mut out)
}

/// Phase 1, the hardware: the same bytes with write_all, then one fsync (with group commit also
/// an fsync every interval); and read back.
fn raw_phase(plan: &Plan<'_>, rows: &mut Vec<Row>, figures: &mut Figures) -> Result<Raw> {
    let raw_path = plan.root.join("raw.bin");
    let raw_write = raw_write(&raw_path, &plan.batch, plan.n_batches)?;
    let (write, page_cache_write) = (raw_write.durable_mb_per_s, raw_write.page_cache_mb_per_s);
    // With group commit, the hardware reference is the same writes with an fsync every interval.
    let periodic = if plan.durability == DurabilityMode::GroupCommit {
        Some(raw_periodic(plan, &raw_path)?)
    } else {
        None
    };
    let read = raw_read(&raw_path)?;
    std::fs::remove_file(&raw_path)?;
    rows.push(Row {
        name: "raw write_all + fsync".into(),
        mb_per_s: write,
        records_per_s: plan.records_per_s(write),
        note: String::new(),
    });
    rows.push(Row {
        name: "raw write_all (page cache)".into(),
        mb_per_s: page_cache_write,
        records_per_s: plan.records_per_s(page_cache_write),
        note: "the same writes before the fsync: any append's ceiling".into(),
    });
    if let Some((raw_periodic, fsyncs)) = &periodic {
        rows.push(Row {
            name: format!("raw write + fsync every {} ms", plan.args.group_commit_interval_ms),
            mb_per_s: *raw_periodic,
            records_per_s: plan.records_per_s(*raw_periodic),
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
        mb_per_s: read,
        records_per_s: 0.0,
        note: String::new(),
    });
    Ok(Raw { write, page_cache_write, periodic, read })
}

/// The group-commit reference: the batches written (paced as the seglog run is), an fsync
/// every interval; MB/s and the fsyncs' latency.
fn raw_periodic(plan: &Plan<'_>, raw_path: &std::path::Path) -> Result<(f64, Histogram<u64>)> {
    let interval = Duration::from_millis(plan.args.group_commit_interval_ms.unsigned_abs());
    let started = Instant::now();
    let mut file = std::fs::File::create(raw_path)?;
    let mut last_sync = Instant::now();
    let mut fsyncs = Histogram::<u64>::new(3)?;
    for batch_idx in 0..plan.n_batches {
        pace(started, batch_idx * plan.batch.len() as u64, plan.args.rate_mb_per_s_or(0.0));
        file.write_all(&plan.batch)?;
        if last_sync.elapsed() >= interval {
            let begun = Instant::now();
            file.sync_data()?;
            fsyncs.record(nanos_since(begun))?;
            last_sync = Instant::now();
        }
    }
    file.sync_data()?;
    Ok((mb_per_s(plan.batch_bytes(), started.elapsed()), fsyncs))
}

/// A fresh seglog directory with the topic `bench`: its config, manager and partition logs.
fn open_seglog(
    plan: &Plan<'_>,
) -> Result<(BrokerLogConfig, Arc<LogManager>, Vec<Arc<PartitionLog>>)> {
    let config = BrokerLogConfig {
        log_dirs: vec![plan.root.join("seglog")],
        default_log_config: LogConfig {
            durability: plan.durability,
            group_commit_interval_ms: plan.args.group_commit_interval_ms,
            ..LogConfig::default()
        },
        ..BrokerLogConfig::default()
    };
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config.clone())?;
    let manager = Arc::new(manager);
    manager.create_topic("bench", plan.args.partitions, BTreeMap::new())?;
    let logs: Vec<Arc<PartitionLog>> = (0..plan.args.partitions)
        .map(|partition| manager.get_log(&TopicPartition { topic: "bench".into(), partition }))
        .collect::<std::result::Result<_, _>>()?;
    Ok((config, manager, logs))
}

/// Group commit: a waiter that records each append's append-to-durable latency (the producer
/// pipelines, as a broker serving many requests does); the queue between them is bounded.
fn spawn_durability_waiter(
    logs: &[Arc<PartitionLog>],
) -> (SyncSender<DurabilityWait>, JoinHandle<Result<Histogram<u64>>>) {
    let (send, receive) = std::sync::mpsc::sync_channel::<DurabilityWait>(DURABILITY_WAITS_MAX);
    let waiter_logs = logs.to_vec();
    let waiter = std::thread::spawn(move || -> Result<Histogram<u64>> {
        let mut durable = Histogram::<u64>::new(3)?;
        for (log_idx, offset, begun) in receive {
            waiter_logs[log_idx].sync_to(offset, 0)?;
            durable.record(nanos_since(begun))?;
        }
        Ok(durable)
    });
    (send, waiter)
}

/// Phase 2, seglog: append, with a latency histogram, then one flush (as raw's fsync).
fn append_phase(
    plan: &Plan<'_>,
    manager: &Arc<LogManager>,
    logs: &[Arc<PartitionLog>],
    rows: &mut Vec<Row>,
) -> Result<Appended> {
    let background = manager.start_background(Duration::from_millis(1))?;
    let mut latency = Histogram::<u64>::new(3)?;
    let (waits, waiter) = if plan.durability == DurabilityMode::GroupCommit {
        let (waits, waiter) = spawn_durability_waiter(logs);
        (Some(waits), Some(waiter))
    } else {
        (None, None)
    };
    let started = Instant::now();
    for batch_idx in 0..plan.n_batches {
        let log_idx = (batch_idx % logs.len() as u64) as usize;
        pace(started, batch_idx * plan.batch.len() as u64, plan.args.rate_mb_per_s_or(0.0));
        let begun = Instant::now();
        let info = logs[log_idx].append_as_leader(&plan.batch, 0, AppendOrigin::Client, 0)?;
        match &waits {
            Some(waits) => waits.send((log_idx, info.last_offset + 1, begun))?,
            None => latency.record(nanos_since(begun))?,
        }
    }
    drop(waits);
    if let Some(waiter) = waiter {
        latency =
            waiter.join().map_err(|_| anyhow::anyhow!("the durability waiter panicked"))??;
    }
    // In the page cache: the state commitlog's appends end in (its flush() does not fsync).
    let page_cache_elapsed = started.elapsed();
    for log in logs {
        log.flush(0)?;
    }
    // Durable: the state raw write_all + fsync ends in.
    let append_elapsed = started.elapsed();
    drop(background);
    let appended = Appended {
        mb_per_s: mb_per_s(plan.batch_bytes(), append_elapsed),
        records_per_s: plan.n_records as f64 / append_elapsed.as_secs_f64(),
        page_cache_records_per_s: plan.n_records as f64 / page_cache_elapsed.as_secs_f64(),
        latency: (
            latency.value_at_quantile(0.5),
            latency.value_at_quantile(0.99),
            latency.value_at_quantile(0.999),
        ),
    };
    let (p50, p99, p999) = appended.latency;
    rows.push(Row {
        name: "seglog append (page cache)".into(),
        mb_per_s: mb_per_s(plan.batch_bytes(), page_cache_elapsed),
        records_per_s: appended.page_cache_records_per_s,
        note: "before the final fsync, as commitlog".into(),
    });
    rows.push(Row {
        name: "seglog append + fsync".into(),
        mb_per_s: appended.mb_per_s,
        records_per_s: appended.records_per_s,
        note: format!(
            "{} latency p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us",
            if plan.durability == DurabilityMode::GroupCommit {
                "append-to-durable"
            } else {
                "append"
            },
            p50 as f64 / 1e3,
            p99 as f64 / 1e3,
            p999 as f64 / 1e3
        ),
    });
    Ok(appended)
}

/// Phase 3, seglog: read everything back from the page cache, 1 MiB fetches; MB/s.
fn read_phase(plan: &Plan<'_>, logs: &[Arc<PartitionLog>], rows: &mut Vec<Row>) -> Result<f64> {
    let started = Instant::now();
    let mut read_bytes = 0u64;
    for log in logs {
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
        records_per_s: plan.records_per_s(read_mb),
        note: String::new(),
    });
    Ok(read_mb)
}

/// Phase 4: offset and timestamp lookups at random offsets (metadata-only reads: index +
/// scan); their latencies, and the random state for the peer's lookups.
fn lookup_phase(first_log: &PartitionLog) -> Result<Lookups> {
    let mut lookups = Histogram::<u64>::new(3)?;
    let mut hot = Histogram::<u64>::new(3)?;
    let mut ts_lookups = Histogram::<u64>::new(3)?;
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let end = first_log.log_end_offset()?.max(1);
    let hot_span = end.min(HOT_OFFSETS);
    for _ in 0..LOOKUPS {
        let target = (xorshift(&mut state) % end.unsigned_abs()) as i64;
        let begun = Instant::now();
        let _ = first_log.read(target, 0, Isolation::LogEnd, false)?;
        lookups.record(nanos_since(begun))?;
        let target = end - 1 - (xorshift(&mut state) % hot_span.unsigned_abs()) as i64;
        let begun = Instant::now();
        let _ = first_log.read(target, 0, Isolation::LogEnd, false)?;
        hot.record(nanos_since(begun))?;
        let begun = Instant::now();
        let _ = first_log.fetch_offset_by_timestamp(1_700_000_000_000)?;
        ts_lookups.record(nanos_since(begun))?;
    }
    Ok(Lookups { random: lookups, hot, by_timestamp: ts_lookups, state })
}

/// Lookups at the tail: offsets among the last `HOT_OFFSETS`, as tailing consumers and
/// producers' acknowledgements ask.
const HOT_OFFSETS: i64 = 256;

/// What the lookup phase measured.
struct Lookups {
    random: Histogram<u64>,
    hot: Histogram<u64>,
    by_timestamp: Histogram<u64>,
    /// The random state, for the peer's lookups.
    state: u64,
}

/// Phase 5, mixed: a producer appending while a consumer tails the log.
fn mixed_phase(plan: &Plan<'_>, logs: &[Arc<PartitionLog>], rows: &mut Vec<Row>) -> Result<()> {
    let mixed_log = Arc::clone(&logs[0]);
    let mixed_start = mixed_log.log_end_offset()?;
    let n_mixed = (plan.n_batches / 4).max(1);
    let started = Instant::now();
    let consumer = {
        let log = Arc::clone(&mixed_log);
        let expected_end = mixed_start + (n_mixed * plan.records_per_batch as u64) as i64;
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
        mixed_log.append_as_leader(&plan.batch, 0, AppendOrigin::Client, 0)?;
    }
    let tail_bytes =
        consumer.join().map_err(|_| anyhow::anyhow!("the consumer thread panicked"))??;
    rows.push(Row {
        name: "seglog produce + tail consume".into(),
        mb_per_s: mb_per_s(tail_bytes, started.elapsed()),
        records_per_s: 0.0,
        note: "consumer MB/s".into(),
    });
    Ok(())
}

/// Phase 6: restart after a clean shutdown; how long `LogManager::open` took.
fn restart_phase(
    logs: Vec<Arc<PartitionLog>>,
    manager: Arc<LogManager>,
    config: BrokerLogConfig,
) -> Result<Duration> {
    drop(logs);
    manager.shutdown()?;
    drop(manager);
    let started = Instant::now();
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config)?;
    let restart = started.elapsed();
    manager.shutdown()?;
    drop(manager);
    Ok(restart)
}

/// Phase 7, the peer: the commitlog crate, the same payloads in batches of the same record
/// count.
fn peer_phase(plan: &Plan<'_>, mut state: u64, rows: &mut Vec<Row>) -> Result<Peer> {
    let mut options = LogOptions::new(plan.root.join("commitlog"));
    options.message_max_bytes(plan.args.batch_bytes * 2);
    let mut peer = CommitLog::new(options).context("cannot open the commitlog peer")?;
    let mut message_batch = MessageBuf::default();
    for _ in 0..plan.records_per_batch {
        message_batch.push(&plan.value).map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
    }
    // Each append gets a fresh copy of the serialized batch (one memcpy, as seglog's validator
    // copies the producer's batch).
    let serialized = message_batch.into_bytes();
    let started = Instant::now();
    for _ in 0..plan.n_batches {
        let mut buffer = MessageBuf::from_bytes(serialized.clone())
            .map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
        peer.append(&mut buffer).map_err(|e| anyhow::anyhow!("commitlog append: {e:?}"))?;
    }
    peer.flush()?;
    let peer_elapsed = started.elapsed();
    let append_mb_per_s = mb_per_s(plan.payload_bytes, peer_elapsed);
    let records_per_s = plan.n_records as f64 / peer_elapsed.as_secs_f64();
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
    let read_mb_per_s = mb_per_s(peer_read, started.elapsed());
    let mut lookups = Histogram::<u64>::new(3)?;
    let peer_end = peer.next_offset().max(1);
    for _ in 0..LOOKUPS {
        let target = xorshift(&mut state) % peer_end;
        let begun = Instant::now();
        let _ = peer
            .read(target, ReadLimit::max_bytes(plan.args.record_bytes + 64))
            .map_err(|e| anyhow::anyhow!("commitlog read: {e:?}"))?;
        lookups.record(nanos_since(begun))?;
    }
    drop(peer);
    rows.push(Row {
        name: "commitlog append".into(),
        mb_per_s: append_mb_per_s,
        records_per_s,
        note: "payload MB/s; its flush() does not fsync".into(),
    });
    rows.push(Row {
        name: "commitlog read (page cache)".into(),
        mb_per_s: read_mb_per_s,
        records_per_s: 0.0,
        note: String::new(),
    });
    Ok(Peer { records_per_s, read_mb_per_s, lookups })
}

/// The figures, the JSON file and the machine-readable ratio line.
fn report(
    plan: &Plan<'_>,
    raw: &Raw,
    appended: &Appended,
    read_mb: f64,
    peer: &Peer,
    mut figures: Figures,
    out: &mut impl Write,
) -> Result<()> {
    let (p50, p99, p999) = appended.latency;
    figures.insert("append_mb_per_s", appended.mb_per_s);
    figures.insert("append_records_per_s", appended.records_per_s);
    figures.insert("read_mb_per_s", read_mb);
    figures.insert("raw_write_mb_per_s", raw.write);
    figures.insert("raw_page_cache_write_mb_per_s", raw.page_cache_write);
    figures.insert("raw_read_mb_per_s", raw.read);
    figures.insert("commitlog_append_records_per_s", peer.records_per_s);
    figures.insert("commitlog_read_mb_per_s", peer.read_mb_per_s);
    figures.insert("append_p50_us", p50 as f64 / 1e3);
    figures.insert("append_p99_us", p99 as f64 / 1e3);
    figures.insert("append_p999_us", p999 as f64 / 1e3);
    figures.insert("peak_rss_mib", peak_rss_mib());
    // Group commit is compared with writes fsynced at the same interval; the rest with
    // write_all and one fsync.
    let raw_reference = raw.periodic.as_ref().map_or(raw.write, |(mb, _)| *mb);
    figures.insert("ratio_vs_raw_write", appended.mb_per_s / raw_reference);
    figures.insert("page_cache_append_records_per_s", appended.page_cache_records_per_s);
    figures.insert(
        "ratio_vs_commitlog_records",
        appended.page_cache_records_per_s / peer.records_per_s,
    );
    figures.insert(
        "ratio_page_cache_append_vs_raw",
        appended.page_cache_records_per_s / plan.records_per_s(raw.page_cache_write),
    );
    figures.insert(
        "ratio_commitlog_vs_raw_page_cache",
        peer.records_per_s / plan.records_per_s(raw.page_cache_write),
    );
    figures.insert("ratio_read_vs_commitlog", read_mb / peer.read_mb_per_s);
    figures.insert("ratio_read_vs_raw", read_mb / raw.read);
    if let Some(path) = &plan.args.json {
        let json = serde_json::to_string_pretty(&figures)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    writeln!(
        out,
        "ratio_vs_raw_write={:.2} ratio_vs_commitlog_records={:.2} ratio_page_cache_append_vs_raw={:.2} ratio_commitlog_vs_raw_page_cache={:.2} ratio_read_vs_commitlog={:.2} ratio_read_vs_raw={:.2}",
        figures["ratio_vs_raw_write"],
        figures["ratio_vs_commitlog_records"],
        figures["ratio_page_cache_append_vs_raw"],
        figures["ratio_commitlog_vs_raw_page_cache"],
        figures["ratio_read_vs_commitlog"],
        figures["ratio_read_vs_raw"]
    )?;
    Ok(())
}
