//! `seglog produce`: lines (or length-delimited records) from stdin into a topic, batched and
//! appended as a Kafka producer's batches would be.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use seglog_format::{Compression, RecordBatchBuilder};
use seglog_storage::config::DurabilityMode;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;

use crate::common::{LogDirArgs, now_ms, open_manager, partition_for_key};

/// Arguments of `seglog produce`.
#[derive(Debug, clap::Args)]
pub(crate) struct ProduceArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    /// The topic (created when missing).
    #[arg(long)]
    topic: String,
    /// Append every record to this partition (default: by key hash, else round robin).
    #[arg(long)]
    partition: Option<i32>,
    /// Partitions of the topic when it is created.
    #[arg(long, default_value_t = 1)]
    partitions: i32,
    /// Split each line into key and value at the first occurrence of this separator.
    #[arg(long)]
    key_separator: Option<String>,
    /// The batch codec: none, gzip, snappy, lz4 or zstd.
    #[arg(long, default_value = "none")]
    compression: String,
    /// Bytes of records per batch before it is appended.
    #[arg(long, default_value_t = 16 * 1024)]
    batch_bytes: usize,
    /// `seglog.durability` of a topic this command creates, or to set on an existing one:
    /// page-cache, group-commit or fsync-every-append.
    #[arg(long)]
    durability: Option<String>,
    /// Read records as a 4-byte big-endian length followed by that many bytes.
    #[arg(long)]
    binary: bool,
    /// Write `<records durable>` to this file (rewritten) each time the durable count moves.
    #[arg(long)]
    report_durable: Option<PathBuf>,
}

/// One partition's batch in the making.
struct Pending {
    builder: RecordBatchBuilder,
    first_record_idx: u64,
}

fn records(args: &ProduceArgs) -> Box<dyn Iterator<Item = Result<Vec<u8>>>> {
    let stdin = std::io::stdin();
    if args.binary {
        let mut input = std::io::BufReader::new(stdin);
        Box::new(std::iter::from_fn(move || {
            let mut len = [0u8; 4];
            match input.read_exact(&mut len) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => return None,
                Err(error) => return Some(Err(error.into())),
            }
            let mut record = vec![0u8; u32::from_be_bytes(len) as usize];
            Some(
                input.read_exact(&mut record).map(|()| record).context("truncated record on stdin"),
            )
        }))
    } else {
        Box::new(stdin.lock().split(b'\n').map(|line| {
            let mut line = line.context("cannot read stdin")?;
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            Ok(line)
        }))
    }
}

fn split_key(record: &[u8], separator: Option<&str>) -> (Option<Vec<u8>>, Vec<u8>) {
    let Some(separator) = separator.map(str::as_bytes).filter(|s| !s.is_empty()) else {
        return (None, record.to_vec());
    };
    match record.windows(separator.len()).position(|window| window == separator) {
        Some(at) => (Some(record[..at].to_vec()), record[at + separator.len()..].to_vec()),
        None => (None, record.to_vec()),
    }
}

#[expect(clippy::too_many_lines, reason = "one linear procedure: set up, batch, append, report")]
#[expect(clippy::cast_precision_loss, reason = "throughput figures")]
pub(crate) fn run(args: &ProduceArgs) -> Result<()> {
    let Some(codec) = Compression::from_name(&args.compression) else {
        bail!("unknown compression {:?}: use none, gzip, snappy, lz4 or zstd", args.compression);
    };
    if let Some(durability) = &args.durability {
        anyhow::ensure!(
            DurabilityMode::from_name(durability).is_some(),
            "unknown durability {durability:?}: use page-cache, group-commit or fsync-every-append"
        );
    }
    let (manager, _) = open_manager(&args.log_dir.log_dir)?;
    let mut overrides = manager.topic_overrides(&args.topic);
    if let Some(durability) = &args.durability {
        overrides.insert(
            seglog_storage::config::topic::SEGLOG_DURABILITY.to_owned(),
            durability.clone(),
        );
    }
    let existing = manager.partitions().into_iter().filter(|tp| tp.topic == args.topic).count();
    let n_partitions = if existing == 0 {
        manager
            .create_topic(&args.topic, args.partitions, overrides)
            .with_context(|| format!("cannot create topic {}", args.topic))?
            .len()
    } else {
        if args.durability.is_some() {
            manager.set_topic_overrides(&args.topic, overrides)?;
        }
        existing
    } as i32;
    if let Some(partition) = args.partition {
        anyhow::ensure!(
            (0..n_partitions).contains(&partition),
            "topic {} has no partition {partition} (it has {n_partitions})",
            args.topic
        );
    }
    // The background work: group commit's fsyncs, flush.ms, checkpoints.
    let background = manager.start_background(std::time::Duration::from_millis(1))?;
    let started = Instant::now();
    let mut pending: BTreeMap<i32, Pending> = BTreeMap::new();
    let mut ranges: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    let (mut n_records, mut n_bytes, mut round_robin) = (0u64, 0u64, 0i32);
    let mut durable_reported = 0u64;
    let mut appended_records: BTreeMap<i32, Vec<(i64, u64)>> = BTreeMap::new();
    let flush = |partition: i32,
                 batch: Pending,
                 ranges: &mut BTreeMap<i32, (i64, i64)>,
                 appended: &mut BTreeMap<i32, Vec<(i64, u64)>>|
     -> Result<()> {
        let bytes = batch.builder.build()?;
        let tp = TopicPartition { topic: args.topic.clone(), partition };
        let log = manager.get_log(&tp)?;
        // The only replica leads: what it appends is committed (the high watermark moves with
        // it), and the high-watermark checkpoint written at close says so, as the broker's would.
        let info = log
            .append_as_sole_leader(&bytes, AppendOrigin::Client, now_ms())
            .with_context(|| format!("cannot append to {tp}"))?;
        let range = ranges.entry(partition).or_insert((info.first_offset, info.last_offset));
        range.1 = info.last_offset;
        appended.entry(partition).or_default().push((info.last_offset + 1, batch.first_record_idx));
        Ok(())
    };
    for record in records(args) {
        let record = record?;
        let (key, value) = split_key(&record, args.key_separator.as_deref());
        let partition = args.partition.unwrap_or_else(|| {
            if let Some(key) = &key {
                partition_for_key(key, n_partitions)
            } else {
                round_robin = (round_robin + 1) % n_partitions;
                round_robin
            }
        });
        let batch = pending.entry(partition).or_insert_with(|| Pending {
            builder: RecordBatchBuilder::new(codec),
            first_record_idx: n_records,
        });
        batch.builder.push(now_ms(), key.as_deref(), Some(&value), &[])?;
        n_records += 1;
        n_bytes += record.len() as u64;
        if batch.builder.estimated_size_bytes() >= args.batch_bytes {
            let batch = pending.remove(&partition).unwrap_or_else(|| unreachable!("just inserted"));
            flush(partition, batch, &mut ranges, &mut appended_records)?;
            if let Some(path) = &args.report_durable {
                // Records still in a builder are not durable: the prefix ends at the first one.
                let upper = pending.values().map(|p| p.first_record_idx).min().unwrap_or(n_records);
                durable_reported = report_durable(
                    &manager,
                    &args.topic,
                    &mut appended_records,
                    upper,
                    durable_reported,
                    path,
                )?;
            }
        }
    }
    for (partition, batch) in std::mem::take(&mut pending) {
        flush(partition, batch, &mut ranges, &mut appended_records)?;
    }
    drop(background);
    // A clean shutdown flushes everything: all of it is durable once this returns.
    manager.shutdown().context("cannot shut down cleanly")?;
    if let Some(path) = &args.report_durable {
        write_report(path, n_records)?;
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    let offsets: Vec<String> = ranges
        .iter()
        .map(|(p, (first, last))| format!("{}-{p}: {first}..{last}", args.topic))
        .collect();
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "produced {n_records} records ({:.1} MB) to {} in {elapsed:.2} s: {:.0} records/s, {:.1} MB/s; offsets {}",
        n_bytes as f64 / 1e6,
        args.topic,
        n_records as f64 / elapsed,
        n_bytes as f64 / 1e6 / elapsed,
        if offsets.is_empty() { "none".to_owned() } else { offsets.join(", ") }
    )?;
    Ok(())
}

/// Records whose offsets every partition has made durable, written to `path` when it grows.
fn report_durable(
    manager: &seglog_storage::manager::LogManager,
    topic: &str,
    appended: &mut BTreeMap<i32, Vec<(i64, u64)>>,
    upper: u64,
    reported: u64,
    path: &std::path::Path,
) -> Result<u64> {
    // Records are numbered in input order. A batch is durable once its partition's recovery
    // point passed its end; the durable prefix of the input ends at the first record of the
    // earliest batch that is not.
    let mut durable = upper;
    for (partition, batches) in appended.iter_mut() {
        let log =
            manager.get_log(&TopicPartition { topic: topic.to_owned(), partition: *partition })?;
        let recovery_point = log.recovery_point()?;
        batches.retain(|(end_offset, _)| *end_offset > recovery_point);
        if let Some((_, first_record_idx)) = batches.first() {
            durable = durable.min(*first_record_idx);
        }
    }
    if durable > reported {
        write_report(path, durable)?;
        return Ok(durable);
    }
    Ok(reported)
}

fn write_report(path: &std::path::Path, n_durable: u64) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, format!("{n_durable}\n"))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
}
