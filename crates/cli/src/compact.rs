//! `seglog compact`: cleans a stopped broker's partitions now, as the log cleaner would (Kafka has
//! no such tool), with a progress bar and a summary per partition: bytes and records before and
//! after, keys kept, time.
//!
//! The topic is cleaned as `cleanup.policy=compact` whatever its stored config (a directory
//! written by Kafka keeps its topic configs elsewhere); the other settings are the topic's. A
//! non-empty active segment is rolled first, so that all the data can be cleaned (the cleaner
//! never touches the active segment).

use std::collections::BTreeSet;
use std::io::Write;
use std::time::Instant;

use anyhow::{Context, Result};
use seglog_storage::config::CleanupPolicy;
use seglog_storage::log::partition_log::{Isolation, TopicPartition};
use seglog_storage::manager::CleanOutcome;

use crate::common::{LogDirArgs, now_ms, open_existing};

/// Arguments of `seglog compact`.
#[derive(Debug, clap::Args)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    log_dir: LogDirArgs,
    /// The topic to clean.
    #[arg(long)]
    topic: String,
    /// Only this partition.
    #[arg(long)]
    partition: Option<i32>,
}

/// Records, distinct keys (by 64-bit hash) and bytes of a partition from its log start.
fn census(log: &seglog_storage::log::partition_log::PartitionLog) -> Result<(u64, u64, u64)> {
    let mut keys = BTreeSet::new();
    let mut records = 0u64;
    let mut next = log.log_start_offset()?;
    let end = log.log_end_offset()?;
    while next < end {
        let fetch = log.read(next, 8 << 20, Isolation::LogEnd, true)?;
        if fetch.records.is_empty() {
            break;
        }
        for batch in seglog_format::Batches::new(&fetch.records) {
            let batch = batch.context("reading a batch")?.batch;
            next = batch.next_offset();
            if batch.is_control_batch() {
                continue;
            }
            for record in &batch.records(seglog_format::DecodeLimits::default())? {
                let record = record?;
                records += 1;
                if let Some(key) = record.key {
                    // 8 bytes a key, not the key itself.
                    let mut hasher = std::hash::DefaultHasher::new();
                    std::hash::Hash::hash(key, &mut hasher);
                    keys.insert(std::hash::Hasher::finish(&hasher));
                }
            }
        }
    }
    Ok((records, keys.len() as u64, log.size_bytes()?))
}

pub(crate) fn run(args: &CompactArgs) -> Result<()> {
    let dirs = &args.log_dir.log_dir;
    let (manager, _) = open_existing(dirs)?;
    let partitions: Vec<TopicPartition> = manager
        .partitions()
        .into_iter()
        .filter(|tp| tp.topic == args.topic && args.partition.is_none_or(|p| p == tp.partition))
        .collect();
    anyhow::ensure!(
        !partitions.is_empty(),
        "no partition of topic {}{} in {}",
        args.topic,
        args.partition.map_or_else(String::new, |p| format!(" numbered {p}")),
        crate::common::show(dirs)
    );
    let mut out = std::io::stdout().lock();
    let progress = crate::progress::bar(partitions.len() as u64, "compacting partitions");
    let mut cleaner = manager.new_cleaner();
    for tp in &partitions {
        let log = manager.get_log(tp)?;
        // What a broker does at start: everything it holds is committed (one replica).
        log.maybe_increment_leader_high_watermark()?;
        let mut config = log.config()?;
        config.cleanup_policy = [CleanupPolicy::Compact].into();
        log.set_config(config)?;
        // The active segment is never cleaned: a new, empty one makes all the data cleanable.
        log.roll(now_ms())?;
        let (records_before, _, bytes_before) = census(&log)?;
        let started = Instant::now();
        let mut rounds = 0;
        loop {
            match manager.clean_partition_now(&mut cleaner, tp, now_ms())? {
                CleanOutcome::Cleaned { from, to, .. } => {
                    rounds += 1;
                    anyhow::ensure!(to > from, "cleaning {tp} made no progress at offset {from}");
                }
                CleanOutcome::Idle => break,
                CleanOutcome::Aborted(_) => anyhow::bail!("cleaning {tp} was aborted"),
                CleanOutcome::Failed(failure) => {
                    anyhow::bail!("cannot clean {tp}: {}", failure.reason)
                }
            }
        }
        let (records_after, keys, bytes_after) = census(&log)?;
        progress.inc(1);
        writeln!(
            out,
            "{tp}: {bytes_before} -> {bytes_after} bytes, {records_before} -> {records_after} \
             records, {keys} keys, {rounds} rounds in {:.3} s",
            started.elapsed().as_secs_f64()
        )?;
    }
    progress.finish_and_clear();
    manager.shutdown().context("closing the log directory")?;
    Ok(())
}
