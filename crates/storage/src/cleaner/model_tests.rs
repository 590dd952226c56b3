//! The cleaner against a model: seeded random workloads (keys with overwrites and tombstones,
//! every codec, idempotent producers, a manual clock crossing `delete.retention.ms`) with many
//! cleaning rounds interleaved with appends, retention and reopens. After every round and
//! reopen:
//! - each key's last record from the log start is the model's (a tombstone may be gone once its
//!   horizon can have passed);
//! - every record is one the model appended, at its offset, and offsets strictly increase;
//! - nothing at or above the round's first uncleanable offset changed;
//! - each idempotent producer's retry of its last batch is still answered as a duplicate.
//!
//! `SEGLOG_CLEANER_SEEDS` sets how many seeds run (CI: 24); a failure names its seed, and
//! `SEGLOG_CLEANER_SEED` reruns one.

use std::collections::BTreeMap;
use std::sync::Arc;

use seglog_format::{Compression, RecordBatchBuilder};

use super::CleanerConfig;
use super::tests::{Harness, Read, harness_on, key_view, open_manager, read_all};
use crate::log::validator::AppendOrigin;
use crate::manager::{CleanOutcome, ManualClock};
use crate::testing::Rng;

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];
const DELETE_RETENTION_MS: i64 = 5_000;

/// A record the model appended: key, value, append time.
type Appended = (Vec<u8>, Option<Vec<u8>>, i64);

/// What the model knows.
#[derive(Default)]
struct Model {
    /// Every record appended, by offset: key, value, append time.
    records: BTreeMap<i64, Appended>,
    /// Each producer's last batch: its bytes and first offset.
    producers: BTreeMap<i64, (Vec<u8>, i64, i32)>,
}

fn run_seed(seed: u64) {
    let mut rng = Rng(seed);
    let fs = crate::testing::sim_with_dir("/data");
    let segment_bytes = 300 + rng.below(1500);
    let map_slots = if rng.coin() { 1_000_000 } else { 5 + rng.below(60) };
    let cleaner = CleanerConfig {
        dedupe_buffer_bytes: map_slots * super::SLOT_BYTES as u64,
        ..CleanerConfig::default()
    };
    let segment_bytes_text = segment_bytes.to_string();
    let retention = DELETE_RETENTION_MS.to_string();
    let topic = [
        ("segment.bytes", segment_bytes_text.as_str()),
        ("delete.retention.ms", retention.as_str()),
        ("cleanup.policy", if rng.coin() { "compact" } else { "compact,delete" }),
    ];
    let mut h = harness_on(fs, &topic, cleaner.clone());
    let mut model = Model::default();
    let n_keys = 3 + rng.below(40);
    let steps = 60 + rng.below(120);
    for step in 0..steps {
        let context = format!("seed {seed} step {step}");
        match rng.below(20) {
            0..=13 => append(&h, &mut model, &mut rng, n_keys),
            14..=16 => {
                let before = read_all(&h.log());
                let uncleanable = h
                    .manager
                    .partition_cleaner_state(&h.tp)
                    .expect("state")
                    .map_or(i64::MAX, |s| s.first_uncleanable_offset);
                match h.clean() {
                    CleanOutcome::Cleaned { .. } | CleanOutcome::Idle => {}
                    other => panic!("{context}: {other:?}"),
                }
                let after = read_all(&h.log());
                let tail = |records: &[Read]| -> Vec<Read> {
                    records.iter().filter(|r| r.0 >= uncleanable).cloned().collect()
                };
                assert_eq!(tail(&after), tail(&before), "{context}: the uncleanable tail changed");
                check(&h, &model, &format!("{context} after a round"));
            }
            17 => {
                // Time passes: some tombstones' horizons go by.
                let ms = rng.below(3 * DELETE_RETENTION_MS as u64) as i64;
                h.clock.set(h.clock_ms() + ms);
            }
            18 => {
                // Retention: the log start moves up (DeleteRecords), whole segments go.
                let log = h.log();
                let start = log.log_start_offset().expect("start");
                let end = log.high_watermark().expect("hw");
                if end > start && rng.below(3) == 0 {
                    let new_start = start + rng.below((end - start) as u64 / 4 + 1) as i64;
                    log.maybe_increment_log_start_offset(new_start).expect("log start");
                    log.delete_segments_below_log_start(h.clock_ms()).expect("retention");
                    check(&h, &model, &format!("{context} after retention"));
                }
            }
            _ => {
                // A clean restart; half the time as if it had crashed after its flush and lost
                // the producer snapshots, so that the producers' state is rebuilt from the
                // (cleaned) log itself, as it is after a crash before the first snapshot.
                h.manager.shutdown().expect("shutdown");
                if rng.coin() {
                    let marker =
                        std::path::Path::new("/data").join(crate::manager::CLEAN_SHUTDOWN_FILE);
                    crate::io::Fs::remove(&h.fs, &marker).expect("remove the marker");
                    let dir = std::path::Path::new("/data/t-0");
                    for path in crate::io::Fs::list(&h.fs, dir).expect("list") {
                        if path.to_string_lossy().ends_with(".snapshot") {
                            crate::io::Fs::remove(&h.fs, &path).expect("remove a snapshot");
                        }
                    }
                }
                let clock = Arc::new(ManualClock::new(h.clock_ms()));
                let manager = open_manager(&h.fs, &clock, cleaner.clone());
                h = Harness { fs: h.fs.clone(), clock, manager, tp: h.tp.clone() };
                h.log().maybe_increment_leader_high_watermark().expect("hw");
                check(&h, &model, &format!("{context} after a reopen"));
            }
        }
    }
    // Finally everything is cleaned as far as it can be, and still right.
    h.clock.set(h.clock_ms() + 3 * DELETE_RETENTION_MS);
    for _ in 0..200 {
        if matches!(h.clean(), CleanOutcome::Idle) {
            break;
        }
    }
    check(&h, &model, &format!("seed {seed} at the end"));
}

fn append(h: &Harness, model: &mut Model, rng: &mut Rng, n_keys: u64) {
    let compression = CODECS[rng.below(5) as usize];
    let n = 1 + rng.below(6);
    let producer = (rng.below(3) == 0).then(|| 100 + rng.below(3) as i64);
    let mut records = Vec::new();
    for _ in 0..n {
        let key = format!("key-{}", rng.below(n_keys)).into_bytes();
        let value = (rng.below(8) != 0).then(|| format!("v{}", rng.next_u64()).into_bytes());
        records.push((key, value));
    }
    let base_sequence =
        producer.map_or(-1, |id| model.producers.get(&id).map_or(0, |(_, _, next)| *next));
    let mut builder = RecordBatchBuilder::new(compression);
    if let Some(id) = producer {
        builder = builder.producer(id, 0, base_sequence);
    }
    let now = h.clock_ms();
    for (key, value) in &records {
        builder.push(now, Some(key), value.as_deref(), &[]).expect("push");
    }
    let batch = builder.build().expect("build");
    let info = h.log().append_as_sole_leader(&batch, AppendOrigin::Client, now).expect("append");
    for (idx, (key, value)) in records.into_iter().enumerate() {
        model.records.insert(info.first_offset + idx as i64, (key, value, now));
    }
    if let Some(id) = producer {
        model.producers.insert(id, (batch, info.first_offset, base_sequence + n as i32));
    }
}

fn check(h: &Harness, model: &Model, context: &str) {
    let log = h.log();
    let log_start = log.log_start_offset().expect("start");
    let records = read_all(&log);
    let offsets: Vec<i64> = records.iter().map(|r| r.0).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{context}: offsets {offsets:?}");
    for (offset, key, value) in &records {
        let expected = model.records.get(offset).map(|(k, v, _)| (Some(k.clone()), v.clone()));
        assert_eq!(expected, Some((key.clone(), value.clone())), "{context}: record at {offset}");
    }
    // Each key's last record from the log start, in the model.
    let mut model_last: BTreeMap<&[u8], (i64, &Appended)> = BTreeMap::new();
    for (offset, appended) in model.records.range(log_start..) {
        model_last.insert(appended.0.as_slice(), (*offset, appended));
    }
    let view = key_view(&records);
    for (key, (offset, (_, value, appended))) in &model_last {
        match view.get(*key) {
            Some((found, found_value)) => {
                assert_eq!((*found, found_value), (*offset, value), "{context}: key {key:?}");
            }
            None => assert!(
                value.is_none() && h.clock_ms() >= appended + DELETE_RETENTION_MS,
                "{context}: key {key:?} (last at {offset}) is missing"
            ),
        }
    }
    assert!(view.keys().all(|key| model_last.contains_key(key.as_slice())), "{context}");
    // A retry of each producer's last batch is a duplicate, answered with its offsets.
    let log_end = log.log_end_offset().expect("end");
    for (id, (batch, first_offset, _)) in &model.producers {
        if *first_offset < log_start {
            continue;
        }
        let retry =
            log.append_as_sole_leader(batch, AppendOrigin::Client, h.clock_ms()).expect("retry");
        assert_eq!(retry.first_offset, *first_offset, "{context}: producer {id}'s retry");
        assert_eq!(log.log_end_offset().expect("end"), log_end, "{context}: nothing appended");
    }
}

fn seeds() -> Vec<u64> {
    if let Some(seed) = std::env::var("SEGLOG_CLEANER_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![seed];
    }
    let n = std::env::var("SEGLOG_CLEANER_SEEDS").ok().and_then(|s| s.parse().ok()).unwrap_or(24);
    (0..n).collect()
}

#[test]
fn the_cleaner_matches_the_model_over_seeded_workloads() {
    for seed in seeds() {
        let result = std::panic::catch_unwind(|| run_seed(seed));
        assert!(result.is_ok(), "seed {seed} failed (rerun with SEGLOG_CLEANER_SEED={seed})");
    }
}
