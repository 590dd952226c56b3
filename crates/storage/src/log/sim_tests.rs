//! A seeded simulation of one partition log against a model, with power-loss crashes, on the
//! simulated file system. Every step checks: the log holds exactly the model's records from its
//! log start to its log end, offsets are contiguous, nothing flushed is ever lost, no record
//! appears that was never appended, checkpoints never point past durable data, and reopening is
//! idempotent. Long runs: `SEED=<n> ITERATIONS=<n> cargo test --release -p seglog-storage
//! partition_log_sim`.

use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};

use super::load::LoadParams;
use super::partition_log::{Isolation, PartitionLog, TopicPartition};
use super::validator::AppendOrigin;
use crate::config::{DurabilityMode, LogConfig};
use crate::io::{Fs, SimFs};
use crate::test_rng::Rng;

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
}

fn open(fs: &SimFs, config: &LogConfig, params: LoadParams) -> PartitionLog {
    let tp = TopicPartition { topic: "p".into(), partition: 0 };
    PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config.clone(), params).unwrap().0
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
    let mut log = open(&fs, &config, clean);
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
                let mut builder = RecordBatchBuilder::new(codec);
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
                let info = log
                    .append_as_leader(
                        &builder.build().unwrap(),
                        1,
                        AppendOrigin::Client,
                        step as i64,
                    )
                    .unwrap();
                assert_eq!(info.first_offset, model.log_end_offset, "{context}");
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
                    model.log_start_offset = log.maybe_increment_log_start_offset(target).unwrap();
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
                model.log_start_offset = start;
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
                log = open(&fs, &config, params);
                log.update_high_watermark(model.high_watermark).unwrap();
                model.durable_offset = model.log_end_offset;
            }
            _ => {
                drop(log);
                fs.crash(rng.next());
                let params = LoadParams {
                    had_clean_shutdown: false,
                    log_start_offset_checkpoint: model.checkpoint_log_start_offset,
                    recovery_point_checkpoint: model
                        .checkpoint_recovery_point
                        .min(model.durable_offset),
                    now_ms: step as i64,
                };
                log = open(&fs, &config, params);
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
                model.durable_offset = model.durable_offset.min(end);
                // The log start may move back to the checkpoint (retention renames are not yet
                // durable); the records it exposes again are the ones appended there.
                model.log_start_offset = log.log_start_offset().unwrap();
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
                log = open(&fs, &config, params);
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
