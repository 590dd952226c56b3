//! `seglog bench`: seglog's hot paths measured next to the same work done by the `commitlog`
//! crate and by the hardware (plain sequential writes and reads) in the same run, reported as
//! ratios, because shared machines are noisy.
//!
//! - `append.rs`: the default workload (append, read, tail consume, lookups, restart, the
//!   `commitlog` peer), one function per phase.
//! - `compact.rs`: `--workload compact`, the log cleaner: its throughput next to raw read +
//!   write of the same bytes, its peak memory next to its offset map, and a producer's append
//!   latency with and without it.
//! - `txn.rs`: `--workload transactional`, produce through the in-process broker with
//!   transactions of 100 and 1,000 records next to the same produce without transactions.
//! - `tiered.rs`: `--workload tiered`, tiered storage over a simulated S3: a producer's p99
//!   with and without uploads, upload throughput and cold remote reads next to the simulated
//!   bandwidth.
//! - `console.rs`: `--workload console`, the web console's pages under load (10,000
//!   partitions, 1,000 groups) next to the 500 ms goal, and a producer's p99 with and without
//!   the console loaded.
//! - this file: the arguments and what the workloads share (the raw disk references, the
//!   table, timing helpers).

mod append;
mod compact;
mod console;
mod loops;
mod tiered;
mod txn;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use seglog_format::{Compression, RecordBatchBuilder};

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
    /// measured below saturation, as published latency figures are (0: unpaced). Default: 0
    /// for `append`; 50 for `compact` (its producer next to the cleaner).
    #[arg(long)]
    rate_mb_per_s: Option<f64>,
    /// What to measure: `append` (append, read, lookups, restart, next to raw disk and
    /// `commitlog`), `compact` (the log cleaner next to raw read + write, its memory, and a
    /// producer's latency while it runs), `transactional` (produce through the broker in
    /// transactions of 100 and 1,000 records, next to the same produce without) or `tiered`
    /// (tiered storage over a simulated S3: producer p99 with and without uploads, upload and
    /// cold-read throughput next to the simulated bandwidth) or `console` (the web console's
    /// pages under load, and a producer's p99 with and without them).
    #[arg(long, value_enum, default_value_t = Workload::Append)]
    workload: Workload,
    /// With `--workload compact`: the cleaner's I/O limit while the producer runs
    /// (`log.cleaner.io.max.bytes.per.second`, in MB/s; 0: none).
    #[arg(long, default_value_t = 100.0)]
    cleaner_io_mb_per_s: f64,
    /// With `--workload compact`: seconds the producer runs without the cleaner, then again
    /// with it (or until the cleaning ends).
    #[arg(long, default_value_t = 5.0)]
    producer_secs: f64,
    /// With `--workload compact`: the cleaner's offset map (`log.cleaner.dedupe.buffer.size`),
    /// in MiB.
    #[arg(long, default_value_t = 128)]
    dedupe_buffer_mib: u64,
    /// With `--workload console`: the partitions of the wide topic.
    #[arg(long, default_value_t = 10_000)]
    wide_partitions: i32,
    /// With `--workload console`: the consumer groups, each with committed offsets.
    #[arg(long, default_value_t = 1000)]
    groups: usize,
    /// With `--workload console`: pages loaded a second while the producer runs (0: back to
    /// back, a stress; a few people browsing load about 2).
    #[arg(long, default_value_t = 0.0)]
    console_pages_per_sec: f64,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// What `seglog bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Workload {
    /// Append, read, lookups, restart (`append.rs`).
    Append,
    /// The log cleaner (`compact.rs`).
    Compact,
    /// Produce with and without transactions, through the broker (`txn.rs`).
    Transactional,
    /// Tiered storage over a simulated S3 (`tiered.rs`).
    Tiered,
    /// The web console's pages under load, next to a producer's p99 (`console.rs`).
    Console,
    /// The append loops of seglog and `commitlog` alone, for instruction counts
    /// (`loops.rs`, `scripts/instructions.sh`).
    Loops,
}

impl BenchArgs {
    /// `--rate-mb-per-s`, or the workload's default.
    fn rate_mb_per_s_or(&self, default: f64) -> f64 {
        self.rate_mb_per_s.unwrap_or(default)
    }
}

/// Runs `seglog bench`.
pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    match args.workload {
        Workload::Append => append::run(args),
        Workload::Compact => compact::run(args),
        Workload::Transactional => txn::run(args),
        Workload::Tiered => tiered::run(args),
        Workload::Console => console::run(args),
        Workload::Loops => loops::run(args),
    }
}

#[expect(clippy::cast_precision_loss, reason = "a throughput figure")]
fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9)
}

/// Nanoseconds since `begun`, for a latency histogram.
fn nanos_since(begun: Instant) -> u64 {
    u64::try_from(begun.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Sleeps until byte `sent` is due at `rate_mb_per_s` from `started` (no pacing at 0).
#[expect(clippy::cast_precision_loss, reason = "a pacing schedule")]
fn pace(started: Instant, sent: u64, rate_mb_per_s: f64) {
    if rate_mb_per_s > 0.0 {
        let due = sent as f64 / (rate_mb_per_s * 1e6);
        let wait = Duration::from_secs_f64(due).saturating_sub(started.elapsed());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
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

/// The hardware's sequential write limit: `chunk` written `n_chunks` times with `write_all` to
/// a new file at `path`, then one `fsync`; timed to the last write and to the fsync.
fn raw_write(path: &Path, chunk: &[u8], n_chunks: u64) -> Result<RawWrite> {
    let started = Instant::now();
    let page_cache_elapsed = {
        let mut file = std::fs::File::create(path)?;
        for _ in 0..n_chunks {
            file.write_all(chunk)?;
        }
        let page_cache_elapsed = started.elapsed();
        file.sync_data()?;
        page_cache_elapsed
    };
    let bytes = n_chunks * chunk.len() as u64;
    Ok(RawWrite {
        durable_mb_per_s: mb_per_s(bytes, started.elapsed()),
        page_cache_mb_per_s: mb_per_s(bytes, page_cache_elapsed),
    })
}

/// What [`raw_write`] measured, MB/s.
struct RawWrite {
    /// Until the final fsync returned.
    durable_mb_per_s: f64,
    /// Until the last `write_all` returned: the page cache's limit for any append.
    page_cache_mb_per_s: f64,
}

/// The file at `path` read back (from the page cache) in 1 MiB reads; MB/s.
fn raw_read(path: &Path) -> Result<f64> {
    let started = Instant::now();
    let raw_read_bytes = {
        let mut file = std::fs::File::open(path)?;
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
    Ok(mb_per_s(raw_read_bytes, started.elapsed()))
}

/// A row of the result table.
struct Row {
    name: String,
    mb_per_s: f64,
    records_per_s: f64,
    note: String,
}

/// The result table.
fn write_rows(out: &mut impl Write, rows: &[Row]) -> Result<()> {
    writeln!(out, "{:<34} {:>12} {:>14}  note", "workload", "MB/s", "records/s")?;
    for row in rows {
        writeln!(
            out,
            "{:<34} {:>12.1} {:>14.0}  {}",
            row.name, row.mb_per_s, row.records_per_s, row.note
        )?;
    }
    Ok(())
}

/// The run directory under `--dir`, made fresh, and its remover.
/// The in-process broker's config for a workload: on 127.0.0.1:0 over `root`, with
/// `--durability`, `/metrics` and the console off unless `keys` say otherwise.
fn broker_config(
    args: &BenchArgs,
    root: &Path,
    keys: &[(&str, &str)],
) -> Result<seglog_broker::BrokerConfig> {
    let mut properties: std::collections::BTreeMap<String, String> = [
        ("listeners", "PLAINTEXT://127.0.0.1:0"),
        ("seglog.metrics.listener", ""),
        ("seglog.console.listener", ""),
    ]
    .iter()
    .chain(keys)
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    properties.insert("log.dirs".to_owned(), root.display().to_string());
    properties.insert("seglog.durability".to_owned(), args.durability.clone());
    Ok(seglog_broker::BrokerConfig::from_properties(&properties)?)
}

fn run_dir(args: &BenchArgs) -> Result<(PathBuf, Cleanup)> {
    let root = args.dir.join(format!("run-{}", std::process::id()));
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    Ok((root.clone(), Cleanup(root)))
}

/// Removes the run directory, whatever happens.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_dir(self.0.parent().unwrap_or(Path::new(".")));
    }
}
