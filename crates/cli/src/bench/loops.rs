//! `seglog bench --workload loops`: the two append loops alone, for counting instructions
//! (`scripts/instructions.sh` runs it under callgrind, collecting inside one loop at a time, and
//! divides by the records). seglog's loop appends the producer's batch with `append_as_leader`
//! (every record checked, the batch stamped and written, in the page cache); `commitlog`'s
//! builds its message buffer from the same records' bytes and appends it, as the default
//! workload's peer phase does. Nothing else runs between them, so wall time means little here.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use anyhow::{Context, Result};
use commitlog::message::MessageBuf;
use commitlog::{CommitLog, LogOptions};
use seglog_format::Compression;
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::StdFs;
use seglog_storage::log::partition_log::{PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, SystemClock};

use super::{BenchArgs, producer_batch, run_dir};

pub(super) fn run(args: &BenchArgs) -> Result<()> {
    let codec = Compression::from_name(&args.compression)
        .with_context(|| format!("unknown compression {:?}", args.compression))?;
    let (root, _cleanup) = run_dir(args)?;
    let (batch, records_per_batch, value) =
        producer_batch(codec, args.record_bytes, args.batch_bytes)?;
    let n_batches = ((args.total_mib << 20) / batch.len() as u64).max(1);
    let n_records = n_batches * records_per_batch as u64;
    let config =
        BrokerLogConfig { log_dirs: vec![root.join("seglog")], ..BrokerLogConfig::default() };
    let (manager, _) = LogManager::open(Arc::new(StdFs), Arc::new(SystemClock), config)?;
    manager.create_topic("bench", 1, BTreeMap::new())?;
    let log = manager.get_log(&TopicPartition { topic: "bench".into(), partition: 0 })?;
    seglog_append_loop(&log, &batch, n_batches)?;
    let mut options = LogOptions::new(root.join("commitlog"));
    options.message_max_bytes(args.batch_bytes * 2);
    let mut peer = CommitLog::new(options).context("cannot open the commitlog peer")?;
    let mut message_batch = MessageBuf::default();
    for _ in 0..records_per_batch {
        message_batch.push(&value).map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
    }
    commitlog_append_loop(&mut peer, &message_batch.into_bytes(), n_batches)?;
    manager.shutdown()?;
    writeln!(
        std::io::stdout().lock(),
        "loops records={n_records} batches={n_batches} records_per_batch={records_per_batch} record_bytes={} batch_bytes={}",
        args.record_bytes,
        batch.len()
    )?;
    Ok(())
}

/// seglog's loop: `callgrind --toggle-collect` names it.
#[inline(never)]
fn seglog_append_loop(log: &PartitionLog, batch: &[u8], n_batches: u64) -> Result<()> {
    for _ in 0..n_batches {
        log.append_as_leader(batch, 0, AppendOrigin::Client, 0)?;
    }
    Ok(())
}

/// `commitlog`'s loop: a fresh copy of the serialized records per append (as seglog's
/// validator reads the producer's batch), then the append.
#[inline(never)]
fn commitlog_append_loop(peer: &mut CommitLog, serialized: &[u8], n_batches: u64) -> Result<()> {
    for _ in 0..n_batches {
        let mut buffer = MessageBuf::from_bytes(serialized.to_vec())
            .map_err(|e| anyhow::anyhow!("commitlog: {e:?}"))?;
        peer.append(&mut buffer).map_err(|e| anyhow::anyhow!("commitlog append: {e:?}"))?;
    }
    peer.flush()?;
    Ok(())
}
