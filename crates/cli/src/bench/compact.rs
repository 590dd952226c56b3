//! `seglog bench --workload compact`: the log cleaner, through `LogManager` as a broker runs it,
//! next to the hardware in the same run.
//!
//! 1. A compacted topic gets `--total-mib` of keyed records in which each key is written about
//!    20 times (5% of the records are live at the end); one more batch rolls the log so all of
//!    it is cleanable.
//! 2. `clean_partition_now` runs until idle; its MB/s (the dirty bytes over the wall time) is
//!    set against raw `write_all` + fsync and read of the same bytes, combined (read then
//!    write: `1 / (1/read + 1/write)`); the peak RSS against the offset map plus 64 MiB.
//! 3. A second manager, its cleaner throttled: a producer appends at a paced rate to another,
//!    non-compacted topic for `--producer-secs` without the cleaner, then while a freshly
//!    dirtied compacted log (sized for its throttled cleaning to last about as long) is cleaned
//!    in another thread; the p99 append latencies compared.

#![expect(clippy::cast_precision_loss, reason = "throughput, latency and memory figures")]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use seglog_format::{Batches, Compression, RecordBatchBuilder};
use seglog_storage::cleaner::CleanerConfig;
use seglog_storage::config::{BrokerLogConfig, CleanupPolicy, DurabilityMode, LogConfig, topic};
use seglog_storage::io::StdFs;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{CleanOutcome, LogManager, SystemClock};

use super::{
    BenchArgs, Row, mb_per_s, nanos_since, pace, peak_rss_mib, producer_batch, raw_read, raw_write,
    run_dir, write_rows,
};
use crate::common::now_ms;

/// Percent of the records whose key is not written again later (the live ones).
const LIVE_PERCENT: u64 = 5;
/// `segment.bytes` of the compacted topics.
const SEGMENT_BYTES: u32 = 64 << 20;
/// What the process may hold beyond the offset map (the target: within).
const RSS_HEADROOM_MIB: f64 = 64.0;
/// The producer with the cleaner runs at most this many times `--producer-secs`; a cleaning
/// still going then is stopped.
const CONCURRENT_WINDOW_FACTOR: f64 = 4.0;
/// The producer's rate when `--rate-mb-per-s` is not given.
const PRODUCER_RATE_DEFAULT: f64 = 50.0;
/// The compacted topic and the producer's.
const COMPACTED: &str = "compacted";
const PRODUCER: &str = "producer";

/// Figures by name, for the JSON file and the ratio line.
type Figures = BTreeMap<&'static str, f64>;

/// What every phase works from.
struct Plan<'a> {
    args: &'a BenchArgs,
    codec: Compression,
    root: PathBuf,
    value: Vec<u8>,
    records_per_batch: usize,
    /// The compacted log of the cleaner's measurement.
    shape: Shape,
    /// The producer's batch (keyless), also the raw reference's write unit.
    batch: Vec<u8>,
}

/// The records of one compacted log.
#[derive(Debug, Clone, Copy)]
struct Shape {
    batches: u64,
    records: u64,
    /// Record `i` has key `key-{i % keys}`: [`LIVE_PERCENT`] of the records.
    keys: u64,
}

impl Shape {
    fn new(n_batches: u64, records_per_batch: usize) -> Self {
        let batches = n_batches.max(1);
        let records = batches * records_per_batch as u64;
        Self { batches, records, keys: (records * LIVE_PERCENT / 100).max(1) }
    }
}

impl Plan<'_> {
    /// Records per second at `mb_per_s` of whole batches.
    fn records_per_s(&self, mb_per_s: f64) -> f64 {
        mb_per_s * 1e6 / self.batch.len() as f64 * self.records_per_batch as f64
    }

    /// The keyed batch of records `first..first + records_per_batch` of `shape`.
    fn keyed_batch(&self, shape: Shape, first: u64, timestamp: i64) -> Result<Vec<u8>> {
        let mut builder = RecordBatchBuilder::new(self.codec);
        for record in first..first + self.records_per_batch as u64 {
            let key = format!("key-{}", record % shape.keys);
            builder.push(timestamp, Some(key.as_bytes()), Some(&self.value), &[])?;
        }
        Ok(builder.build()?)
    }
}

/// A cleaning until idle (or until stopped).
struct Cleaned {
    /// How long `new_cleaner` (the offset map's allocation) took, before the rounds.
    setup: Duration,
    rounds: u64,
    /// Of `elapsed`, the time spent building the offset map.
    mapping: Duration,
    bytes_read: u64,
    bytes_written: u64,
    elapsed: Duration,
    /// Idle reached (not stopped first).
    finished: bool,
}

/// A paced producer run.
struct Produced {
    latency: Histogram<u64>,
    mb_per_s: f64,
    appends: u64,
    elapsed: Duration,
}

impl Produced {
    fn p99_us(&self) -> f64 {
        self.latency.value_at_quantile(0.99) as f64 / 1e3
    }

    fn note(&self) -> String {
        format!(
            "append p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us; {} appends in {:.1} s",
            self.latency.value_at_quantile(0.5) as f64 / 1e3,
            self.p99_us(),
            self.latency.value_at_quantile(0.999) as f64 / 1e3,
            self.appends,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Runs the compaction workload.
pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let codec = Compression::from_name(&args.compression)
        .with_context(|| format!("unknown compression {:?}", args.compression))?;
    let durability = DurabilityMode::from_name(&args.durability)
        .with_context(|| format!("unknown durability {:?}", args.durability))?;
    anyhow::ensure!(
        args.partitions == 1 && durability == DurabilityMode::PageCache,
        "--workload compact runs one partition with page-cache durability"
    );
    anyhow::ensure!(args.producer_secs > 0.0, "--producer-secs must be positive");
    let (root, _cleanup) = run_dir(args)?;
    let (batch, records_per_batch, value) =
        producer_batch(codec, args.record_bytes, args.batch_bytes)?;
    let shape = Shape::new((args.total_mib << 20) / batch.len() as u64, records_per_batch);
    let Shape { records: n_records, keys: n_keys, .. } = shape;
    let plan = Plan { args, codec, root, value, records_per_batch, shape, batch };
    eprintln!(
        "seglog bench --workload compact: {} MiB, {} B records, {records_per_batch} records per \
         batch, {n_records} records over {n_keys} keys ({LIVE_PERCENT}% live), {codec}",
        args.total_mib, args.record_bytes
    );
    let progress = crate::progress::bar(6, "bench compact");
    let mut rows = Vec::new();
    let mut figures = Figures::new();
    clean_phase(&plan, &mut rows, &mut figures, &|| progress.inc(1))?;
    producer_phase(&plan, &mut rows, &mut figures, &|| progress.inc(1))?;
    progress.finish_and_clear();
    report(&plan, &rows, &mut figures)
}

/// A manager over a fresh log directory `dir` with these cleaner settings.
fn open_manager(dir: &Path, cleaner: CleanerConfig) -> Result<Arc<LogManager>> {
    let config = BrokerLogConfig { log_dirs: vec![dir.to_owned()], cleaner, ..Default::default() };
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config)?;
    Ok(Arc::new(manager))
}

/// The cleaner settings of the run (`throttle_mb_per_s`: the I/O limit, 0 for none).
fn cleaner_config(args: &BenchArgs, throttle_mb_per_s: f64) -> CleanerConfig {
    CleanerConfig {
        dedupe_buffer_bytes: args.dedupe_buffer_mib << 20,
        io_bytes_per_second_max: if throttle_mb_per_s > 0.0 {
            throttle_mb_per_s * 1e6
        } else {
            f64::MAX
        },
        ..CleanerConfig::default()
    }
}

/// The single partition of the new topic `topic` (`compact`: `cleanup.policy=compact` and
/// 64 MiB segments; else the defaults).
fn create_topic(manager: &LogManager, topic: &str, compact: bool) -> Result<Arc<PartitionLog>> {
    let overrides = if compact {
        BTreeMap::from([
            (topic::CLEANUP_POLICY.to_owned(), CleanupPolicy::Compact.name().to_owned()),
            (topic::SEGMENT_BYTES.to_owned(), SEGMENT_BYTES.to_string()),
        ])
    } else {
        BTreeMap::new()
    };
    manager.create_topic(topic, 1, overrides)?;
    Ok(manager.get_log(&TopicPartition { topic: topic.into(), partition: 0 })?)
}

/// Fills the compacted `log` with the plan's keyed records, then appends one more batch after
/// lowering `segment.bytes` so that the log rolls and every record before it is cleanable.
/// The bytes before that batch (the dirty section).
fn fill(plan: &Plan<'_>, shape: Shape, log: &PartitionLog) -> Result<u64> {
    for batch_idx in 0..shape.batches {
        let now = now_ms();
        let batch = plan.keyed_batch(shape, batch_idx * plan.records_per_batch as u64, now)?;
        log.append_as_sole_leader(&batch, AppendOrigin::Client, now)?;
    }
    let dirty_bytes = log.size_bytes()?;
    // A segment holding anything rolls before a batch as large as `segment.bytes`.
    let now = now_ms();
    let last = plan.keyed_batch(shape, shape.records, now)?;
    let config = log.config()?;
    let segment_bytes = u32::try_from(last.len())?;
    log.set_config(LogConfig { segment_bytes, ..config.clone() })?;
    log.append_as_sole_leader(&last, AppendOrigin::Client, now)?;
    log.set_config(config)?;
    let active_base = log.segment_base_offsets()?.last().copied();
    anyhow::ensure!(
        active_base == Some(shape.records as i64),
        "the log did not roll before its last batch (active segment at {active_base:?})"
    );
    Ok(dirty_bytes)
}

/// `clean_partition_now` on `tp` until idle, or until `stop` is set (a round aborted for it is
/// then no error).
fn clean_until_idle(
    manager: &LogManager,
    tp: &TopicPartition,
    stop: &AtomicBool,
) -> Result<Cleaned> {
    let begun = Instant::now();
    let mut cleaner = manager.new_cleaner();
    let mut totals = Cleaned {
        setup: begun.elapsed(),
        rounds: 0,
        mapping: Duration::ZERO,
        bytes_read: 0,
        bytes_written: 0,
        elapsed: Duration::ZERO,
        finished: false,
    };
    let started = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        match manager.clean_partition_now(&mut cleaner, tp, now_ms())? {
            CleanOutcome::Cleaned { from, to, stats, .. } => {
                anyhow::ensure!(to > from, "cleaning {tp} made no progress at offset {from}");
                totals.rounds += 1;
                totals.mapping += stats.map_done.map_or(Duration::ZERO, |at| at - stats.start);
                totals.bytes_read += stats.bytes_read;
                totals.bytes_written += stats.bytes_written;
            }
            CleanOutcome::Idle => {
                totals.finished = !stop.load(Ordering::SeqCst);
                break;
            }
            CleanOutcome::Aborted(_) if stop.load(Ordering::SeqCst) => break,
            CleanOutcome::Aborted(_) => anyhow::bail!("cleaning {tp} was aborted"),
            CleanOutcome::Failed(failure) => anyhow::bail!("cannot clean {tp}: {}", failure.reason),
        }
    }
    totals.elapsed = started.elapsed();
    Ok(totals)
}

/// The records (of data batches) from the log start to the end.
fn count_records(log: &PartitionLog) -> Result<u64> {
    let (mut next, end) = (log.log_start_offset()?, log.log_end_offset()?);
    let mut records = 0u64;
    while next < end {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true)?;
        let mut last_next = None;
        for batch in Batches::new(&fetch.records) {
            let batch = batch?.batch;
            if !batch.is_control_batch() {
                records += u64::try_from(batch.records_count().unwrap_or(0)).unwrap_or(0);
            }
            last_next = Some(batch.next_offset());
        }
        let Some(last_next) = last_next else { break };
        next = last_next;
    }
    Ok(records)
}

/// Raw `write_all` + fsync of `bytes` bytes (in producer-batch writes) and their read back:
/// both MB/s.
fn raw_reference(plan: &Plan<'_>, bytes: u64) -> Result<(f64, f64)> {
    let path = plan.root.join("raw.bin");
    let n_chunks = bytes.div_ceil(plan.batch.len() as u64).max(1);
    let write = raw_write(&path, &plan.batch, n_chunks)?.durable_mb_per_s;
    let read = raw_read(&path)?;
    std::fs::remove_file(&path)?;
    Ok((write, read))
}

/// Phases 1 and 2: fill a compacted log, clean it (unthrottled) until idle, the raw
/// reference of the same bytes, and the peak RSS.
fn clean_phase(
    plan: &Plan<'_>,
    rows: &mut Vec<Row>,
    figures: &mut Figures,
    advance: &dyn Fn(),
) -> Result<()> {
    let dir = plan.root.join("compact");
    let manager = open_manager(&dir, cleaner_config(plan.args, 0.0))?;
    let log = create_topic(&manager, COMPACTED, true)?;
    let dirty_bytes = fill(plan, plan.shape, &log)?;
    let records_before = count_records(&log)?;
    advance();
    let tp = TopicPartition { topic: COMPACTED.into(), partition: 0 };
    let cleaned = clean_until_idle(&manager, &tp, &AtomicBool::new(false))?;
    let peak_rss_clean = peak_rss_mib();
    let bytes_after = log.size_bytes()?;
    let records_after = count_records(&log)?;
    let expected = plan.shape.keys + plan.records_per_batch as u64;
    anyhow::ensure!(
        records_after == expected,
        "the cleaned log holds {records_after} records, not {expected} (one per key, and the \
         last batch)"
    );
    advance();
    drop(log);
    manager.shutdown()?;
    drop(manager);
    std::fs::remove_dir_all(&dir)?;
    let (raw_write, raw_read) = raw_reference(plan, dirty_bytes)?;
    let raw_read_write = 1.0 / (1.0 / raw_read + 1.0 / raw_write);
    let cleaner_mb = mb_per_s(dirty_bytes, cleaned.elapsed);
    rows.push(Row {
        name: "raw write_all + fsync".into(),
        mb_per_s: raw_write,
        records_per_s: plan.records_per_s(raw_write),
        note: "the dirty section's bytes".into(),
    });
    rows.push(Row {
        name: "raw read (page cache)".into(),
        mb_per_s: raw_read,
        records_per_s: 0.0,
        note: String::new(),
    });
    rows.push(Row {
        name: "raw read + write".into(),
        mb_per_s: raw_read_write,
        records_per_s: plan.records_per_s(raw_read_write),
        note: "1 / (1/read + 1/write): the cleaner's reference".into(),
    });
    rows.push(Row {
        name: "seglog cleaner".into(),
        mb_per_s: cleaner_mb,
        records_per_s: plan.shape.records as f64 / cleaned.elapsed.as_secs_f64().max(1e-9),
        note: format!(
            "dirty MB/s, unthrottled; {} rounds in {:.2} s ({:.2} s mapping; {:.3} s of setup \
             before), read {:.1} MB, wrote {:.1} MB",
            cleaned.rounds,
            cleaned.elapsed.as_secs_f64(),
            cleaned.mapping.as_secs_f64(),
            cleaned.setup.as_secs_f64(),
            cleaned.bytes_read as f64 / 1e6,
            cleaned.bytes_written as f64 / 1e6
        ),
    });
    advance();
    figures.insert("compact_bytes_before", dirty_bytes as f64);
    figures.insert("compact_bytes_after", bytes_after as f64);
    figures.insert("compact_records_before", records_before as f64);
    figures.insert("compact_records_after", records_after as f64);
    figures.insert("compact_keys", plan.shape.keys as f64);
    figures.insert("cleaner_rounds", cleaned.rounds as f64);
    figures.insert("cleaner_bytes_read", cleaned.bytes_read as f64);
    figures.insert("cleaner_bytes_written", cleaned.bytes_written as f64);
    figures.insert("cleaner_secs", cleaned.elapsed.as_secs_f64());
    figures.insert("cleaner_setup_secs", cleaned.setup.as_secs_f64());
    figures.insert("cleaner_map_secs", cleaned.mapping.as_secs_f64());
    figures.insert("cleaner_mb_per_s", cleaner_mb);
    figures.insert("raw_write_mb_per_s", raw_write);
    figures.insert("raw_read_mb_per_s", raw_read);
    figures.insert("raw_read_write_mb_per_s", raw_read_write);
    figures.insert("ratio_cleaner_vs_raw_read_write", cleaner_mb / raw_read_write);
    figures.insert("peak_rss_clean_mib", peak_rss_clean);
    Ok(())
}

/// Appends the producer batch to `log` at `rate_mb_per_s` for `window`, or until `until` is
/// set, each append timed.
fn produce(
    plan: &Plan<'_>,
    log: &PartitionLog,
    window: Duration,
    until: Option<&AtomicBool>,
) -> Result<Produced> {
    let rate = plan.args.rate_mb_per_s_or(PRODUCER_RATE_DEFAULT);
    let mut latency = Histogram::<u64>::new(3)?;
    let started = Instant::now();
    let mut sent = 0u64;
    while started.elapsed() < window && !until.is_some_and(|done| done.load(Ordering::SeqCst)) {
        pace(started, sent, rate);
        let begun = Instant::now();
        log.append_as_sole_leader(&plan.batch, AppendOrigin::Client, now_ms())?;
        latency.record(nanos_since(begun))?;
        sent += plan.batch.len() as u64;
    }
    let elapsed = started.elapsed();
    Ok(Produced { appends: latency.len(), latency, mb_per_s: mb_per_s(sent, elapsed), elapsed })
}

/// Resets the peak RSS to the current RSS (Linux `clear_refs` 5), so the next phase's own peak
/// can be read; where that is refused the peak stays the whole run's.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The second compacted log: sized so that its throttled cleaning (each dirty byte read twice,
/// for the map and for the rewrite) lasts about `--producer-secs`, at most the first log's
/// size; the first log's size without a throttle.
fn concurrent_shape(plan: &Plan<'_>) -> Shape {
    let throttle = plan.args.cleaner_io_mb_per_s;
    if throttle <= 0.0 {
        return plan.shape;
    }
    let bytes = throttle * 1e6 * plan.args.producer_secs / 2.0;
    let n_batches = ((bytes / plan.batch.len() as f64) as u64).min(plan.shape.batches);
    Shape::new(n_batches, plan.records_per_batch)
}

/// The producer while `tp` is cleaned in another thread (until idle, or stopped after
/// [`CONCURRENT_WINDOW_FACTOR`] times `--producer-secs`).
fn produce_while_cleaning(
    plan: &Plan<'_>,
    manager: &Arc<LogManager>,
    tp: &TopicPartition,
    producer: &PartitionLog,
) -> Result<(Produced, Cleaned)> {
    let (stop, done) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let cleaning = {
        let (manager, stop, done, tp) =
            (Arc::clone(manager), Arc::clone(&stop), Arc::clone(&done), tp.clone());
        std::thread::spawn(move || {
            let cleaned = clean_until_idle(&manager, &tp, &stop);
            done.store(true, Ordering::SeqCst);
            cleaned
        })
    };
    let window = Duration::from_secs_f64(plan.args.producer_secs * CONCURRENT_WINDOW_FACTOR);
    let with = produce(plan, producer, window, Some(&done))?;
    if !done.load(Ordering::SeqCst) {
        stop.store(true, Ordering::SeqCst);
        manager.abort_and_pause_cleaning(tp);
        manager.resume_cleaning(tp);
    }
    let cleaned = cleaning.join().map_err(|_| anyhow::anyhow!("the cleaner thread panicked"))??;
    Ok((with, cleaned))
}

/// Phase 3: a producer on a non-compacted topic, for `--producer-secs` without the cleaner,
/// then while a freshly dirtied compacted log of the same manager is cleaned (throttled) in
/// another thread.
fn producer_phase(
    plan: &Plan<'_>,
    rows: &mut Vec<Row>,
    figures: &mut Figures,
    advance: &dyn Fn(),
) -> Result<()> {
    reset_peak_rss();
    let throttle = plan.args.cleaner_io_mb_per_s;
    let manager = open_manager(&plan.root.join("concurrent"), cleaner_config(plan.args, throttle))?;
    let compacted = create_topic(&manager, COMPACTED, true)?;
    let producer = create_topic(&manager, PRODUCER, false)?;
    let dirty_bytes = fill(plan, concurrent_shape(plan), &compacted)?;
    // Written out first, so that neither producer run shares the disk with this writeback.
    compacted.flush(now_ms())?;
    advance();
    let alone = produce(plan, &producer, Duration::from_secs_f64(plan.args.producer_secs), None)?;
    advance();
    let tp = TopicPartition { topic: COMPACTED.into(), partition: 0 };
    let (with, cleaned) = produce_while_cleaning(plan, &manager, &tp, &producer)?;
    let peak_rss_concurrent = peak_rss_mib();
    drop((compacted, producer));
    manager.shutdown()?;
    advance();
    rows.push(Row {
        name: "producer append, no cleaner".into(),
        mb_per_s: alone.mb_per_s,
        records_per_s: plan.records_per_s(alone.mb_per_s),
        note: alone.note(),
    });
    rows.push(Row {
        name: "producer append, cleaner running".into(),
        mb_per_s: with.mb_per_s,
        records_per_s: plan.records_per_s(with.mb_per_s),
        note: format!(
            "{}; the cleaner ({throttle} MB/s limit, {:.3} s of setup) {} after {:.1} s, {:.1} \
             MB dirty{}",
            with.note(),
            cleaned.setup.as_secs_f64(),
            if cleaned.finished { "finished" } else { "was stopped" },
            cleaned.elapsed.as_secs_f64(),
            dirty_bytes as f64 / 1e6,
            if cleaned.finished {
                format!(", {:.1} MB/s", mb_per_s(dirty_bytes, cleaned.elapsed))
            } else {
                String::new()
            }
        ),
    });
    figures.insert("producer_mb_per_s_without_cleaner", alone.mb_per_s);
    figures.insert("producer_mb_per_s_with_cleaner", with.mb_per_s);
    figures.insert("append_p99_us_without_cleaner", alone.p99_us());
    figures.insert("append_p99_us_with_cleaner", with.p99_us());
    figures.insert("ratio_append_p99_with_cleaner", with.p99_us() / alone.p99_us().max(1e-3));
    figures.insert("producer_appends_with_cleaner", with.appends as f64);
    figures.insert("producer_secs_with_cleaner", with.elapsed.as_secs_f64());
    figures.insert("cleaner_concurrent_bytes", dirty_bytes as f64);
    figures.insert("cleaner_concurrent_secs", cleaned.elapsed.as_secs_f64());
    figures.insert("cleaner_concurrent_setup_secs", cleaned.setup.as_secs_f64());
    figures.insert("cleaner_concurrent_finished", if cleaned.finished { 1.0 } else { 0.0 });
    figures.insert("cleaner_io_mb_per_s_max", throttle);
    figures.insert("peak_rss_concurrent_mib", peak_rss_concurrent);
    Ok(())
}

/// The table, the summary lines, the JSON file and the machine-readable ratio line.
fn report(plan: &Plan<'_>, rows: &[Row], figures: &mut Figures) -> Result<()> {
    let dedupe_mib = plan.args.dedupe_buffer_mib as f64;
    let budget = dedupe_mib + RSS_HEADROOM_MIB;
    let peak_rss = figures["peak_rss_clean_mib"].max(figures["peak_rss_concurrent_mib"]);
    figures.insert("peak_rss_mib", peak_rss);
    figures.insert("rss_budget_mib", budget);
    figures.insert("dedupe_buffer_mib", dedupe_mib);
    let mut out = std::io::stdout().lock();
    write_rows(&mut out, rows)?;
    writeln!(
        out,
        "compaction: {:.0} -> {:.0} bytes, {:.0} -> {:.0} records ({:.0} keys), {:.0} rounds",
        figures["compact_bytes_before"],
        figures["compact_bytes_after"],
        figures["compact_records_before"],
        figures["compact_records_after"],
        figures["compact_keys"],
        figures["cleaner_rounds"]
    )?;
    writeln!(
        out,
        "peak RSS {:.1} MiB while cleaning, {:.1} MiB with the producer (budget: dedupe buffer \
         {dedupe_mib:.0} MiB + {RSS_HEADROOM_MIB:.0} MiB = {budget:.0} MiB)",
        figures["peak_rss_clean_mib"], figures["peak_rss_concurrent_mib"]
    )?;
    writeln!(
        out,
        "producer append p99: {:.1} us without the cleaner, {:.1} us with it",
        figures["append_p99_us_without_cleaner"], figures["append_p99_us_with_cleaner"]
    )?;
    if let Some(path) = &plan.args.json {
        let json = serde_json::to_string_pretty(&*figures)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    writeln!(
        out,
        "ratio_cleaner_vs_raw_read_write={:.2} peak_rss_mib={:.0} rss_budget_mib={:.0} ratio_append_p99_with_cleaner={:.2}",
        figures["ratio_cleaner_vs_raw_read_write"],
        peak_rss,
        budget,
        figures["ratio_append_p99_with_cleaner"]
    )?;
    Ok(())
}
