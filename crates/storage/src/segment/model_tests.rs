//! A segment driven by seeded random operations against a simple model (a list of batches), with
//! crashes on the simulated file system. Run long with `SEED=<n> ITERATIONS=<n> cargo test -p
//! seglog-storage segment_model`; a failure prints the seed that reproduces it.

use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{Compression, RecordBatch, RecordBatchBuilder};

use super::*;
use crate::io::{FaultKind, FaultPlan, SimFs};
use crate::testing::Rng;

#[derive(Debug, Clone)]
struct ModelBatch {
    bytes: Vec<u8>,
    last_offset: i64,
    /// (offset, timestamp) of each record.
    records: Vec<(i64, i64)>,
}

fn dir() -> PathBuf {
    PathBuf::from("/data/t-0")
}

const BASE: i64 = 1000;

fn make_batch(rng: &mut Rng, next_offset: i64) -> ModelBatch {
    let codec = Compression::ALL[rng.below(5) as usize];
    let n_records = 1 + rng.below(8) as i64;
    let first = next_offset + rng.below(3) as i64; // sometimes a gap, as compaction leaves
    let mut builder = RecordBatchBuilder::new(codec).base_offset(first);
    let mut records = Vec::new();
    for idx in 0..n_records {
        let timestamp = 1_000_000 + rng.below(5_000) as i64;
        let value = vec![(idx as u8).wrapping_mul(7); rng.below(300) as usize];
        builder.append(first + idx, timestamp, Some(b"k"), Some(&value), &[]).unwrap();
        records.push((first + idx, timestamp));
    }
    let bytes = builder.build().unwrap();
    ModelBatch { last_offset: first + n_records - 1, bytes, records }
}

fn append_batch(segment: &mut LogSegment, batch: &ModelBatch) -> Result<()> {
    let view = RecordBatch::new(&batch.bytes).unwrap();
    segment.append(view.last_offset(), view.max_timestamp(), view.last_offset(), &batch.bytes)
}

fn open(fs: &SimFs, interval: u32) -> (LogSegment, Option<RecoveryReport>) {
    let config = SegmentConfig {
        index_interval_bytes: interval,
        index_bytes_max: 4096,
        ..SegmentConfig::default()
    };
    let (mut segment, report) =
        LogSegment::open(Arc::new(fs.clone()), &dir(), BASE, config, 0).unwrap();
    segment.resize_indexes_to_max().unwrap();
    (segment, report)
}

/// Checks every observable of the segment against the model.
fn check(segment: &LogSegment, model: &[ModelBatch], seed: u64, step: usize) {
    let context = format!("seed {seed} step {step}: reproduce with SEED={seed} ITERATIONS=1");
    let size: usize = model.iter().map(|b| b.bytes.len()).sum();
    assert_eq!(segment.size_bytes() as usize, size, "{context}");
    let next = model.last().map_or(BASE, |b| b.last_offset + 1);
    assert_eq!(segment.read_next_offset().unwrap(), next, "{context}");
    let mut position = 0u32;
    let mut expected_by_offset = Vec::new();
    for batch in model {
        expected_by_offset.push((batch.last_offset, position, batch.bytes.len() as u32));
        position += batch.bytes.len() as u32;
    }
    for offset in BASE..next + 2 {
        let expected = expected_by_offset.iter().find(|(last, _, _)| *last >= offset).map(
            |&(offset, position, size_bytes)| LogOffsetPosition { offset, position, size_bytes },
        );
        assert_eq!(
            segment.translate_offset(offset, 0).unwrap(),
            expected,
            "{context}: translate {offset}"
        );
    }
    // Reads return whole batches from the right one.
    if let Some(first) = model.first() {
        let read =
            segment.read(BASE, u32::MAX, Some(segment.size_bytes()), false).unwrap().unwrap();
        let all: Vec<u8> = model.iter().flat_map(|b| b.bytes.clone()).collect();
        assert_eq!(read.records, all, "{context}");
        let read =
            segment.read(first.last_offset, 1, Some(segment.size_bytes()), true).unwrap().unwrap();
        assert_eq!(read.records, first.bytes, "{context}");
    }
    // Timestamp search agrees with a brute-force scan in log order.
    for target in [999_999, 1_000_500, 1_002_500, 1_004_999, 1_005_000] {
        for starting in [BASE, BASE + 5] {
            let expected = model
                .iter()
                .flat_map(|b| b.records.iter())
                .find(|(offset, timestamp)| *timestamp >= target && *offset >= starting)
                .map(|&(offset, timestamp)| (offset, timestamp));
            let found = segment
                .find_offset_by_timestamp(target, starting)
                .unwrap()
                .map(|f| (f.offset, f.timestamp));
            assert_eq!(found, expected, "{context}: timestamp {target} from {starting}");
        }
    }
    segment.offset_index().sanity_check().unwrap();
}

/// Makes the directory chain down to the segment durable, as creating a log directory does.
fn sync_ancestors(fs: &SimFs) {
    for dir in dir().ancestors() {
        fs.sync_dir(dir).unwrap();
    }
}

fn run(seed: u64) {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let interval = [0u32, 100, 1000, 4096][rng.below(4) as usize];
    let config = SegmentConfig {
        index_interval_bytes: interval,
        index_bytes_max: 4096,
        ..SegmentConfig::default()
    };
    let mut segment = LogSegment::create(Arc::new(fs.clone()), &dir(), BASE, config, 0).unwrap();
    // A new file is durable only once its directory is (the log fsyncs it when it rolls).
    sync_ancestors(&fs);
    let mut model: Vec<ModelBatch> = Vec::new();
    let mut flushed = 0usize;
    for step in 0..60 {
        match rng.below(100) {
            0..=54 => {
                let next = model.last().map_or(BASE, |b| b.last_offset + 1);
                let batch = make_batch(&mut rng, next);
                let params = RollParams {
                    segment_ms_max: i64::MAX,
                    segment_bytes_max: i32::MAX as u32,
                    max_timestamp_in_messages: 0,
                    max_offset_in_messages: batch.last_offset,
                    messages_bytes: batch.bytes.len() as u32,
                    now_ms: 0,
                };
                if segment.should_roll(&params) {
                    continue; // The index is full: the log would roll here.
                }
                append_batch(&mut segment, &batch).unwrap();
                model.push(batch);
            }
            55..=64 => {
                let next = model.last().map_or(BASE, |b| b.last_offset + 1);
                let target = BASE + rng.below((next - BASE + 2) as u64) as i64;
                segment.truncate_to(target, 0).unwrap();
                model.retain(|b| b.last_offset < target);
                flushed = flushed.min(model.len());
            }
            65..=79 => {
                segment.flush().unwrap();
                flushed = model.len();
            }
            80..=89 => {
                segment.close().unwrap();
                flushed = model.len();
                let (reopened, report) = open(&fs, interval);
                assert!(
                    report.is_none(),
                    "seed {seed} step {step}: a closed segment needs no recovery"
                );
                segment = reopened;
            }
            _ => {
                // Power loss: synced bytes survive, unsynced ones may partly survive.
                drop(segment);
                fs.crash(rng.next_u64());
                let (mut reopened, _) = open(&fs, interval);
                let report = reopened.recover().unwrap();
                assert!(
                    report.n_batches >= flushed,
                    "seed {seed} step {step}: lost flushed batches ({} < {flushed})",
                    report.n_batches
                );
                assert!(
                    report.n_batches <= model.len(),
                    "seed {seed} step {step}: batches appeared"
                );
                model.truncate(report.n_batches);
                flushed = model.len();
                reopened.resize_indexes_to_max().unwrap();
                segment = reopened;
            }
        }
        check(&segment, &model, seed, step);
    }
}

fn seeds() -> Vec<u64> {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(200);
    let start = seed.unwrap_or(1);
    (start..start + iterations).collect()
}

#[test]
fn segment_model_random_operations_and_crashes() {
    for seed in seeds() {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed)) {
            eprintln!(
                "segment_model failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-storage segment_model"
            );
            std::panic::resume_unwind(panic);
        }
    }
}

#[test]
fn a_failed_write_returns_an_error_and_changes_nothing() {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let mut segment =
        LogSegment::create(Arc::new(fs.clone()), &dir(), BASE, SegmentConfig::default(), 0)
            .unwrap();
    let mut rng = Rng(5);
    let first = make_batch(&mut rng, BASE);
    append_batch(&mut segment, &first).unwrap();
    let second = make_batch(&mut rng, first.last_offset + 1);
    for kind in [FaultKind::Eio, FaultKind::Enospc] {
        fs.set_fault_plan(FaultPlan::FailNth { n: 0, kind });
        let error = append_batch(&mut segment, &second).unwrap_err();
        assert!(matches!(error, Error::Io { op: "append", .. }), "{error}");
        fs.set_fault_plan(FaultPlan::None);
        assert_eq!(segment.size_bytes() as usize, first.bytes.len());
        assert_eq!(segment.read_next_offset().unwrap(), first.last_offset + 1);
    }
    append_batch(&mut segment, &second).unwrap();
    assert_eq!(segment.read_next_offset().unwrap(), second.last_offset + 1);
}

#[test]
fn a_failed_fsync_is_reported_and_the_data_is_not_durable() {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    let mut segment =
        LogSegment::create(Arc::new(fs.clone()), &dir(), BASE, SegmentConfig::default(), 0)
            .unwrap();
    sync_ancestors(&fs);
    let mut rng = Rng(6);
    let batch = make_batch(&mut rng, BASE);
    append_batch(&mut segment, &batch).unwrap();
    fs.set_fault_plan(FaultPlan::FailNth { n: 0, kind: FaultKind::Eio });
    let error = segment.flush().unwrap_err();
    assert!(matches!(error, Error::Io { op: "fsync", .. }), "{error}");
    fs.set_fault_plan(FaultPlan::None);
    drop(segment);
    // Whatever survives the crash is a valid prefix; nothing was promised.
    fs.crash(1);
    let (mut reopened, _) = open(&fs, 4096);
    let report = reopened.recover().unwrap();
    assert!(report.n_batches <= 1);
}
