//! A seeded simulation of one partition log against a model, with power-loss crashes, on the
//! simulated file system. Every step checks: the log holds exactly the model's records from its
//! log start to its log end, offsets are contiguous, nothing flushed is ever lost, no record
//! appears that was never appended, checkpoints never point past durable data, reopening is
//! idempotent, and every idempotent producer whose last batch is in the log is known with that
//! batch (through snapshots, replays, truncations and crashes), so its retry is recognised. Long
//! runs: `SEED=<n> ITERATIONS=<n> cargo test --release -p seglog-storage
//! partition_log_sim`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};

use super::load::LoadParams;
use super::partition_log::{Isolation, PartitionLog, TopicPartition};
use super::producer_state::BatchMetadata;
use super::validator::AppendOrigin;
use crate::config::{DurabilityMode, LogConfig};
use crate::io::{BudgetFs, Fs, SimFs};
use crate::testing::Rng;

fn dir() -> PathBuf {
    PathBuf::from("/sim/p-0")
}

/// What the log must hold.
#[derive(Debug, Default)]
struct Model {
    /// Every value ever appended at each offset (offsets are never reused: truncation only cuts
    /// the tail, and the tail is rewritten with new values the model records again).
    values: Vec<Vec<u8>>,
    log_end_offset: i64,
    log_start_offset: i64,
    high_watermark: i64,
    /// Every offset below this is fsynced.
    durable_offset: i64,
    /// Checkpointed recovery point and log start offset, as a log manager would have written.
    checkpoint_recovery_point: i64,
    checkpoint_log_start_offset: i64,
    /// Per idempotent producer (epoch 0), its batches still in the log or below its start, in
    /// order, with the bytes sent.
    producers: BTreeMap<i64, Vec<(BatchMetadata, Vec<u8>)>>,
    /// The highest log start offset so far. A producer whose last batch lies below it may be
    /// forgotten (Kafka drops such producers when it reloads its state), even when a crash moves
    /// the log start back to its checkpoint.
    log_start_offset_max: i64,
}

impl Model {
    /// Whether `producer_id`'s last batch must be known to the log, and if so which it is.
    fn known_last_batch(&self, producer_id: i64) -> Option<&(BatchMetadata, Vec<u8>)> {
        self.producers
            .get(&producer_id)
            .and_then(|batches| batches.last())
            .filter(|(batch, _)| batch.last_offset >= self.log_start_offset_max)
    }

    /// The log start offset is now `log_start_offset`.
    fn set_log_start_offset(&mut self, log_start_offset: i64) {
        self.log_start_offset = log_start_offset;
        self.log_start_offset_max = self.log_start_offset_max.max(log_start_offset);
    }

    /// The log now ends at `log_end_offset`: batches at or after it are gone.
    fn cut_producers(&mut self, log_end_offset: i64) {
        for batches in self.producers.values_mut() {
            batches.retain(|(batch, _)| batch.last_offset < log_end_offset);
        }
    }
}

/// Opens the log on `fs`, through a `BudgetFs` of `open_files_max` descriptors if given (every
/// other seed: 1 to 4, fewer than the files of two segments).
fn open(
    fs: &SimFs,
    config: &LogConfig,
    params: LoadParams,
    open_files_max: Option<usize>,
) -> PartitionLog {
    let tp = TopicPartition { topic: "p".into(), partition: 0 };
    let fs: Arc<dyn Fs> = match open_files_max {
        Some(max) => Arc::new(BudgetFs::new(Arc::new(fs.clone()), max)),
        None => Arc::new(fs.clone()),
    };
    PartitionLog::open(fs, &dir(), tp, config.clone(), params).unwrap().0
}

/// Reads every record from the log start to the log end, as (offset, value).
fn read_all(log: &PartitionLog) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset().unwrap();
    let end = log.log_end_offset().unwrap();
    while next < end {
        let fetch = log.read(next, 64 * 1024, Isolation::LogEnd, true).unwrap();
        if fetch.records.is_empty() {
            break;
        }
        for item in Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            batch.validate().unwrap();
            let records = batch.records(DecodeLimits::default()).unwrap();
            for record in &records {
                let record = record.unwrap();
                if record.offset >= next {
                    out.push((record.offset, record.value.unwrap_or_default().to_vec()));
                }
            }
            next = next.max(batch.next_offset());
        }
    }
    out
}

fn check(log: &PartitionLog, model: &Model, context: &str) {
    assert_eq!(log.log_end_offset().unwrap(), model.log_end_offset, "{context}: log end");
    assert_eq!(log.log_start_offset().unwrap(), model.log_start_offset, "{context}: log start");
    assert!(log.high_watermark().unwrap() <= model.log_end_offset, "{context}: high watermark");
    assert!(log.recovery_point().unwrap() <= model.log_end_offset, "{context}: recovery point");
    let records = read_all(log);
    let expected: Vec<(i64, Vec<u8>)> = (model.log_start_offset..model.log_end_offset)
        .map(|offset| (offset, model.values[offset as usize].clone()))
        .collect();
    assert_eq!(records.len(), expected.len(), "{context}: record count");
    assert_eq!(records, expected, "{context}: contents");
    for producer_id in model.producers.keys() {
        if let Some((last, _)) = model.known_last_batch(*producer_id) {
            assert_eq!(
                log.producer_last_entry(*producer_id).unwrap(),
                Some((0, Some(*last))),
                "{context}: producer {producer_id}"
            );
        }
    }
}

#[expect(clippy::too_many_lines, reason = "one match over every operation reads best in one place")]
fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).unwrap();
    }
    let durability = DurabilityMode::ALL[rng.below(3) as usize];
    let config = LogConfig {
        segment_bytes: 600 + rng.below(2000) as u32,
        segment_index_bytes: 4096,
        index_interval_bytes: [0, 100, 4096][rng.below(3) as usize],
        durability,
        ..LogConfig::default()
    };
    let clean = LoadParams {
        had_clean_shutdown: true,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: 0,
        now_ms: 0,
    };
    let open_files_max = (seed % 2 == 1).then(|| 1 + usize::try_from(seed % 4).unwrap_or(0));
    let mut log = open(&fs, &config, clean, open_files_max);
    let mut model = Model::default();
    for step in 0..steps {
        let context = format!(
            "seed {seed} step {step} ({durability}); reproduce: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage partition_log_sim"
        );
        let op = rng.below(100);
        if std::env::var_os("SIM_TRACE").is_some() {
            eprintln!(
                "step {step}: op {op} leo {} start {} hw {} durable {} segments {:?}",
                model.log_end_offset,
                model.log_start_offset,
                model.high_watermark,
                model.durable_offset,
                log.segment_base_offsets().unwrap()
            );
        }
        match op {
            0..=44 => {
                let codec = Compression::ALL[rng.below(5) as usize];
                let n = 1 + rng.below(6) as usize;
                // A third of the batches are plain; the others come from one of three idempotent
                // producers, which sometimes retry their last batch.
                let producer_id = rng.below(3) as i64;
                if producer_id > 0
                    && let Some((original, bytes)) = model.known_last_batch(producer_id)
                    && rng.below(4) == 0
                {
                    let info =
                        log.append_as_leader(bytes, 1, AppendOrigin::Client, step as i64).unwrap();
                    assert_eq!(
                        (info.first_offset, info.last_offset, info.n_records),
                        (original.first_offset, original.last_offset, 0),
                        "{context}: retry of producer {producer_id}"
                    );
                    check(&log, &model, &context);
                    continue;
                }
                // The sequence after the producer's last batch, known to the log or not (an
                // unknown producer may start anywhere).
                let first_seq = model
                    .producers
                    .get(&producer_id)
                    .and_then(|batches| batches.last())
                    .map_or(0, |(batch, _)| batch.last_seq + 1);
                let mut builder = RecordBatchBuilder::new(codec);
                if producer_id > 0 {
                    builder = builder.producer(producer_id, 0, first_seq);
                }
                let mut values = Vec::new();
                for idx in 0..n {
                    let value = format!(
                        "s{seed}-o{}-{}",
                        model.log_end_offset + idx as i64,
                        "x".repeat(rng.below(80) as usize)
                    )
                    .into_bytes();
                    builder.push(1_000 + step as i64, Some(b"k"), Some(&value), &[]).unwrap();
                    values.push(value);
                }
                let bytes = builder.build().unwrap();
                let info =
                    log.append_as_leader(&bytes, 1, AppendOrigin::Client, step as i64).unwrap();
                assert_eq!(info.first_offset, model.log_end_offset, "{context}");
                if producer_id > 0 {
                    let batch = BatchMetadata {
                        first_seq,
                        last_seq: first_seq + n as i32 - 1,
                        first_offset: info.first_offset,
                        last_offset: info.last_offset,
                        timestamp: 1_000 + step as i64,
                    };
                    model.producers.entry(producer_id).or_default().push((batch, bytes));
                }
                model.values.truncate(model.log_end_offset as usize);
                model.values.extend(values);
                model.log_end_offset = info.last_offset + 1;
                if durability == DurabilityMode::FsyncEveryAppend {
                    assert_eq!(info.durable_offset, model.log_end_offset, "{context}");
                }
                model.durable_offset = model.durable_offset.max(info.durable_offset);
            }
            45..=54 => {
                model.durable_offset = log.flush(step as i64).unwrap();
                assert_eq!(model.durable_offset, model.log_end_offset, "{context}");
            }
            55..=62 => {
                let hw = model.log_start_offset
                    + rng.below((model.log_end_offset - model.log_start_offset + 1) as u64) as i64;
                model.high_watermark = log.update_high_watermark(hw).unwrap();
            }
            63..=67 => {
                let target = model.log_start_offset
                    + rng.below((model.high_watermark - model.log_start_offset + 1).max(1) as u64)
                        as i64;
                if target <= model.high_watermark {
                    let start = log.maybe_increment_log_start_offset(target).unwrap();
                    model.set_log_start_offset(start);
                }
            }
            68..=72 => {
                log.delete_old_segments(step as i64).unwrap();
                let start = log.log_start_offset().unwrap();
                assert!(
                    start >= model.log_start_offset
                        && start <= model.high_watermark.max(model.log_start_offset),
                    "{context}: retention"
                );
                model.set_log_start_offset(start);
            }
            73..=77 => {
                // Truncate to a batch boundary at or above the high watermark, as a follower would.
                let boundaries: Vec<i64> = {
                    let mut out = vec![model.log_end_offset];
                    let mut next = model.log_start_offset;
                    while next < model.log_end_offset {
                        let fetch = log.read(next, 1, Isolation::LogEnd, true).unwrap();
                        let Some(item) = Batches::new(&fetch.records).next() else { break };
                        let batch = item.unwrap().batch;
                        let base = batch.base_offset(DecodeLimits::default()).unwrap();
                        if base >= model.high_watermark && base >= model.log_start_offset {
                            out.push(base);
                        }
                        next = batch.next_offset();
                    }
                    out
                };
                let target = boundaries[rng.below(boundaries.len() as u64) as usize];
                log.truncate_to(target, step as i64).unwrap();
                model.log_end_offset = model.log_end_offset.min(target);
                model.cut_producers(model.log_end_offset);
                model.durable_offset = model.durable_offset.min(model.log_end_offset);
                model.high_watermark = model.high_watermark.min(model.log_end_offset);
            }
            78..=84 => {
                // What a log manager checkpoints: only durable offsets.
                model.checkpoint_recovery_point = log.recovery_point().unwrap();
                model.checkpoint_log_start_offset = model.log_start_offset;
                assert!(
                    model.checkpoint_recovery_point
                        <= model.durable_offset.max(model.checkpoint_recovery_point),
                    "{context}"
                );
            }
            85..=89 => {
                log.close(step as i64).unwrap();
                drop(log);
                let params = LoadParams {
                    had_clean_shutdown: true,
                    log_start_offset_checkpoint: model.log_start_offset,
                    recovery_point_checkpoint: model.log_end_offset,
                    now_ms: step as i64,
                };
                log = open(&fs, &config, params, open_files_max);
                log.update_high_watermark(model.high_watermark).unwrap();
                model.durable_offset = model.log_end_offset;
            }
            _ => {
                drop(log);
                fs.crash(rng.next_u64());
                let params = LoadParams {
                    had_clean_shutdown: false,
                    log_start_offset_checkpoint: model.checkpoint_log_start_offset,
                    recovery_point_checkpoint: model
                        .checkpoint_recovery_point
                        .min(model.durable_offset),
                    now_ms: step as i64,
                };
                log = open(&fs, &config, params, open_files_max);
                let end = log.log_end_offset().unwrap();
                assert!(
                    end >= model.durable_offset,
                    "{context}: lost flushed records: end {end} < durable {}",
                    model.durable_offset
                );
                assert!(
                    end <= model.log_end_offset,
                    "{context}: records appeared: end {end} > {}",
                    model.log_end_offset
                );
                model.log_end_offset = end;
                model.cut_producers(end);
                model.durable_offset = model.durable_offset.min(end);
                // The log start may move back to the checkpoint (retention renames are not yet
                // durable); the records it exposes again are the ones appended there.
                model.set_log_start_offset(log.log_start_offset().unwrap());
                assert!(
                    model.log_start_offset >= model.checkpoint_log_start_offset.min(end),
                    "{context}: log start"
                );
                model.high_watermark =
                    log.update_high_watermark(model.high_watermark.min(end)).unwrap();
                // Reopening again without a crash changes nothing.
                let before = read_all(&log);
                drop(log);
                let params = LoadParams { recovery_point_checkpoint: 0, ..params };
                log = open(&fs, &config, params, open_files_max);
                assert_eq!(read_all(&log), before, "{context}: reopen is idempotent");
                log.update_high_watermark(model.high_watermark).unwrap();
            }
        }
        check(&log, &model, &context);
    }
}

#[test]
fn partition_log_sim() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let start = seed.unwrap_or(1);
    for seed in start..start + iterations {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed, 80)) {
            eprintln!(
                "partition_log_sim failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage partition_log_sim"
            );
            std::panic::resume_unwind(panic);
        }
    }
}
