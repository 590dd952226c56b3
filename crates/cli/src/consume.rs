//! `seglog consume`: records of a topic to stdout, in offset order per partition, formatted as
//! kcat does (`%o %k %v %T ...`). `--isolation read-committed` reads as a read_committed
//! consumer does: up to the last stable offset, skipping the records of aborted transactions
//! (the aborted list of each read, as Kafka's consumer `Fetcher` applies it).

use std::io::Write;

use anyhow::{Context, Result, bail};
use seglog_format::{Batches, DecodeLimits, Record};
use seglog_storage::error::Error;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};

use crate::common::{LogDirArgs, open_existing};

/// Arguments of `seglog consume`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConsumeArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Only this partition (default: every partition, one after another).
    #[arg(long)]
    partition: Option<i32>,
    /// Where to start: earliest, latest, an offset, or ts:<ms> (the first record at or after
    /// that timestamp).
    #[arg(long, default_value = "earliest")]
    from: String,
    /// Stop after this many records.
    #[arg(long)]
    max: Option<u64>,
    /// Output format, kcat's: %t topic, %p partition, %o offset, %k key, %v value, %T
    /// timestamp, %K key length, %S value length, %h headers, \n \t escapes.
    #[arg(long, default_value = "%v\\n")]
    format: String,
    /// read-uncommitted: every record up to the log end; read-committed: up to the last stable
    /// offset, without the records of aborted transactions.
    #[arg(long, value_enum, default_value_t = IsolationArg::ReadUncommitted)]
    isolation: IsolationArg,
}

/// `--isolation` (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum IsolationArg {
    ReadUncommitted,
    ReadCommitted,
}

/// Where a partition's read begins.
fn start_offset(log: &PartitionLog, from: &str) -> Result<Option<i64>> {
    Ok(match from {
        "earliest" => Some(log.log_start_offset()?),
        "latest" => Some(log.log_end_offset()?),
        text if text.starts_with("ts:") => {
            let timestamp: i64 = text[3..]
                .parse()
                .with_context(|| format!("--from {text}: not a timestamp in ms"))?;
            log.fetch_offset_by_timestamp(timestamp)?.map(|found| found.offset)
        }
        text => {
            let offset: i64 = text.parse().with_context(|| {
                format!("--from {text:?}: use earliest, latest, an offset or ts:<ms>")
            })?;
            let (start, end) = (log.log_start_offset()?, log.log_end_offset()?);
            if offset < start || offset > end {
                bail!(
                    "offset {offset} is out of range for {}: the log holds [{start}, {end})",
                    log.topic_partition()
                );
            }
            Some(offset)
        }
    })
}

fn write_format(
    out: &mut impl Write,
    format: &str,
    tp: &TopicPartition,
    record: &Record<'_>,
) -> std::io::Result<()> {
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' => match chars.next() {
                Some('t') => out.write_all(tp.topic.as_bytes())?,
                Some('p') => write!(out, "{}", tp.partition)?,
                Some('o') => write!(out, "{}", record.offset)?,
                Some('k') => out.write_all(record.key.unwrap_or_default())?,
                Some('v') => out.write_all(record.value.unwrap_or_default())?,
                Some('T') => write!(out, "{}", record.timestamp)?,
                Some('K') => write!(out, "{}", record.key.map_or(-1, |k| k.len() as i64))?,
                Some('S') => write!(out, "{}", record.value.map_or(-1, |v| v.len() as i64))?,
                Some('h') => {
                    let headers: Vec<String> = record
                        .headers
                        .iter()
                        .map(|h| {
                            format!(
                                "{}={}",
                                h.key_str(),
                                String::from_utf8_lossy(h.value.unwrap_or_default())
                            )
                        })
                        .collect();
                    out.write_all(headers.join(",").as_bytes())?;
                }
                Some('%') | None => out.write_all(b"%")?,
                Some(other) => write!(out, "%{other}")?,
            },
            '\\' => match chars.next() {
                Some('n') => out.write_all(b"\n")?,
                Some('t') => out.write_all(b"\t")?,
                Some('\\') | None => out.write_all(b"\\")?,
                Some(other) => write!(out, "\\{other}")?,
            },
            c => write!(out, "{c}")?,
        }
    }
    Ok(())
}

pub(crate) fn run(args: &ConsumeArgs) -> Result<()> {
    let (manager, _) = open_existing(&args.log_dir.log_dir)?;
    let partitions: Vec<TopicPartition> =
        manager.partitions().into_iter().filter(|tp| tp.topic == args.topic).collect();
    if partitions.is_empty() {
        bail!("unknown topic {:?} in {}", args.topic, crate::common::show(&args.log_dir.log_dir));
    }
    let selected: Vec<TopicPartition> = match args.partition {
        Some(partition) => {
            let tp = TopicPartition { topic: args.topic.clone(), partition };
            anyhow::ensure!(
                partitions.contains(&tp),
                "topic {} has no partition {partition}",
                args.topic
            );
            vec![tp]
        }
        None => partitions,
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut printed = 0u64;
    'partitions: for tp in &selected {
        let log = manager.get_log(tp)?;
        let Some(mut next) = start_offset(&log, &args.from)? else { continue };
        let (isolation, end) = match args.isolation {
            IsolationArg::ReadUncommitted => (Isolation::LogEnd, log.log_end_offset()?),
            IsolationArg::ReadCommitted => (Isolation::TxnCommitted, log.last_stable_offset()?),
        };
        let mut filter = seglog_storage::log::read_committed::AbortedFilter::default();
        while next < end {
            let read = log.read_info(next, 1 << 20, isolation, true)?;
            filter.add(read.aborted_transactions.as_deref().unwrap_or_default());
            let fetch = match read.data {
                Ok(fetch) => fetch,
                Err(Error::OffsetOutOfRange { .. }) => break,
                Err(error) => {
                    return Err(error)
                        .with_context(|| format!("cannot read {tp} at offset {next}"));
                }
            };
            if fetch.records.is_empty() {
                break;
            }
            for item in Batches::at_position(&fetch.records, u64::from(fetch.position)) {
                let item = item.with_context(|| format!("corrupt batch in {tp}"))?;
                // Check every batch's CRC, as Kafka consumers do (check.crcs).
                item.batch.validate().with_context(|| {
                    format!("corrupt batch in {tp} at position {}", item.position)
                })?;
                if args.isolation == IsolationArg::ReadCommitted && filter.skips(&item.batch) {
                    next = next.max(item.batch.next_offset());
                    continue;
                }
                let records = item.batch.records(DecodeLimits::default()).with_context(|| {
                    format!("corrupt batch in {tp} at position {}", item.position)
                })?;
                for record in &records {
                    let record = record.with_context(|| {
                        format!("corrupt record in {tp} at position {}", item.position)
                    })?;
                    if record.offset < next || item.batch.is_control_batch() {
                        continue;
                    }
                    write_format(&mut out, &args.format, tp, &record)?;
                    printed += 1;
                    if args.max.is_some_and(|max| printed >= max) {
                        break 'partitions;
                    }
                }
                next = next.max(item.batch.next_offset());
            }
        }
    }
    out.flush()?;
    drop(out);
    manager.shutdown()?;
    Ok(())
}
