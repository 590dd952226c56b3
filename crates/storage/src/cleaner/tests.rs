//! The cleaner's behaviours from Kafka's `LogCleanerTest`, `LogCleanerManagerTest` and
//! `LogCleanerIntegrationTest` that concern storage, on the simulated file system with a manual
//! clock; and one test per error path (each leaves its partition uncleanable, counted, reported).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use seglog_format::{Batch, Batches, Compression, RecordBatchBuilder};

use super::CleanerConfig;
use crate::config::BrokerLogConfig;
use crate::error::Error;
use crate::io::{FaultKind, FaultPlan, Fs, SimFs};
use crate::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use crate::log::validator::AppendOrigin;
use crate::manager::{CleanOutcome, LogManager, ManualClock};

/// The cleaner settings of these tests: Kafka's, with a 1 MiB offset map (43,690 keys).
pub(crate) fn small_map() -> CleanerConfig {
    CleanerConfig { dedupe_buffer_bytes: 1 << 20, ..CleanerConfig::default() }
}

/// A broker over `SimFs` with one compacted topic `t` of one partition.
pub(crate) struct Harness {
    pub(crate) fs: SimFs,
    pub(crate) clock: Arc<ManualClock>,
    pub(crate) manager: LogManager,
    pub(crate) tp: TopicPartition,
}

pub(crate) const NOW_MS: i64 = 1_700_000_000_000;

pub(crate) fn harness(topic: &[(&str, &str)], cleaner: CleanerConfig) -> Harness {
    let fs = crate::testing::sim_with_dir("/data");
    harness_on(fs, topic, cleaner)
}

pub(crate) fn harness_on(fs: SimFs, topic: &[(&str, &str)], cleaner: CleanerConfig) -> Harness {
    // Files get real-looking mtimes (the legacy tombstone horizon reads them).
    fs.set_now_ms(NOW_MS);
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let manager = open_manager(&fs, &clock, cleaner);
    let mut config: BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("segment.bytes", "1024"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("file.delete.delay.ms", "0"),
        // SimFs fills preallocated indexes with real zeros: keep them small.
        ("segment.index.bytes", "65536"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    for (key, value) in topic {
        config.insert((*key).to_owned(), (*value).to_owned());
    }
    manager.create_topic("t", 1, config).expect("create the compacted topic");
    Harness { fs, clock, manager, tp: TopicPartition { topic: "t".into(), partition: 0 } }
}

pub(crate) fn open_manager(
    fs: &SimFs,
    clock: &Arc<ManualClock>,
    cleaner: CleanerConfig,
) -> LogManager {
    let config = BrokerLogConfig {
        log_dirs: vec![PathBuf::from("/data")],
        cleaner,
        ..BrokerLogConfig::default()
    };
    LogManager::open(Arc::new(fs.clone()), clock.clone(), config).expect("open the log manager").0
}

/// A record as read back: offset, key, value.
pub(crate) type Read = (i64, Option<Vec<u8>>, Option<Vec<u8>>);

impl Harness {
    pub(crate) fn log(&self) -> Arc<PartitionLog> {
        self.manager.get_log(&self.tp).expect("the log")
    }

    /// Appends one batch of `(key, value)` records with `compression`; returns its first offset.
    pub(crate) fn append(
        &self,
        records: &[(Option<&str>, Option<&str>)],
        compression: Compression,
    ) -> i64 {
        let mut builder = RecordBatchBuilder::new(compression);
        for (key, value) in records {
            builder
                .push(self.clock_ms(), key.map(str::as_bytes), value.map(str::as_bytes), &[])
                .expect("push");
        }
        let batch = builder.build().expect("build");
        self.log()
            .append_as_sole_leader(&batch, AppendOrigin::Client, self.clock_ms())
            .expect("append")
            .first_offset
    }

    /// Appends one record per key, `value-<key>-<round>`.
    pub(crate) fn put(&self, key: &str, value: Option<&str>) -> i64 {
        self.append(&[(Some(key), value)], Compression::None)
    }

    pub(crate) fn clock_ms(&self) -> i64 {
        crate::manager::Clock::now_ms(self.clock.as_ref())
    }

    /// One pass of the cleaner at the clock's time.
    pub(crate) fn clean(&self) -> CleanOutcome {
        let mut cleaner = self.manager.new_cleaner();
        self.manager.clean_once(&mut cleaner, self.clock_ms())
    }

    /// Passes until nothing is due (at most `rounds`); returns the rounds that cleaned.
    pub(crate) fn clean_fully(&self, rounds: usize) -> usize {
        let mut cleaned = 0;
        for _ in 0..rounds {
            match self.clean() {
                CleanOutcome::Cleaned { .. } => cleaned += 1,
                CleanOutcome::Idle => return cleaned,
                other => panic!("unexpected {other:?}"),
            }
        }
        cleaned
    }

    /// Every record from the log start, in offset order.
    pub(crate) fn records(&self) -> Vec<Read> {
        read_all(&self.log())
    }

    /// The batches' raw bytes from the log start.
    pub(crate) fn batch_bytes(&self) -> Vec<Vec<u8>> {
        all_batches(&self.log())
    }

    pub(crate) fn segment_count(&self) -> usize {
        self.log().segment_base_offsets().expect("bases").len()
    }
}

/// Every batch's bytes from the log start, in offset order.
pub(crate) fn all_batches(log: &PartitionLog) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut next = log.log_start_offset().expect("start");
    let end = log.log_end_offset().expect("end");
    while next < end {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).expect("read");
        if fetch.records.is_empty() {
            break;
        }
        for batch in Batches::new(&fetch.records) {
            let batch = batch.expect("batch").batch;
            next = batch.next_offset();
            out.push(batch.as_bytes().to_vec());
        }
    }
    out
}

/// Every data record from the log start, in offset order.
pub(crate) fn read_all(log: &PartitionLog) -> Vec<Read> {
    let log_start = log.log_start_offset().expect("start");
    let mut out = Vec::new();
    for bytes in all_batches(log) {
        let batch = Batch::new(&bytes).expect("batch");
        if batch.is_control_batch() {
            continue;
        }
        for record in &batch.records(seglog_format::DecodeLimits::default()).expect("records") {
            let record = record.expect("record");
            if record.offset >= log_start {
                out.push((
                    record.offset,
                    record.key.map(<[u8]>::to_vec),
                    record.value.map(<[u8]>::to_vec),
                ));
            }
        }
    }
    out
}

/// The last value of each key in `records`, with its offset.
pub(crate) fn key_view(records: &[Read]) -> BTreeMap<Vec<u8>, (i64, Option<Vec<u8>>)> {
    let mut view = BTreeMap::new();
    for (offset, key, value) in records {
        if let Some(key) = key {
            view.insert(key.clone(), (*offset, value.clone()));
        }
    }
    view
}

#[expect(clippy::unnecessary_wraps, reason = "compared with records' optional values")]
fn s(text: &str) -> Option<Vec<u8>> {
    Some(text.as_bytes().to_vec())
}

/// Kafka's `testCleanSegments` / `LogCleanerIntegrationTest.cleanerTest`: after cleaning, each
/// key keeps only its last value, every record keeps its offset, and the active segment is
/// untouched.
#[test]
fn cleaning_keeps_the_last_value_of_each_key_at_its_offset() {
    let h = harness(&[], small_map());
    for round in 0..20 {
        for key in ["a", "b", "c", "d"] {
            h.put(key, Some(&format!("{key}{round}")));
        }
    }
    let before = h.records();
    let segments_before = h.segment_count();
    assert!(segments_before > 3, "{segments_before}");
    assert!(h.clean_fully(10) >= 1);
    let after = h.records();
    assert_eq!(key_view(&after), key_view(&before), "the key view is unchanged");
    assert!(after.len() < before.len() / 2, "{} of {}", after.len(), before.len());
    for record in &after {
        assert!(before.contains(record), "{record:?} kept at its offset");
    }
    let offsets: Vec<i64> = after.iter().map(|r| r.0).collect();
    assert!(offsets.windows(2).all(|w| w[0] < w[1]), "offsets strictly increase");
    // The active segment is never cleaned: its records are all there.
    let active_base = *h.log().segment_base_offsets().unwrap().last().unwrap();
    let active_before: Vec<&Read> = before.iter().filter(|r| r.0 >= active_base).collect();
    let active_after: Vec<&Read> = after.iter().filter(|r| r.0 >= active_base).collect();
    assert_eq!(active_before, active_after);
    // The checkpoint holds the round's end, in Kafka's file format.
    let checkpoint =
        h.fs.open(&PathBuf::from("/data/cleaner-offset-checkpoint"), crate::io::OpenMode::Read)
            .unwrap();
    let text = String::from_utf8(crate::io::read_all(checkpoint.as_ref()).unwrap()).unwrap();
    assert!(text.starts_with("0\n1\nt 0 "), "{text}");
    assert_eq!(text.trim_end().rsplit(' ').next().unwrap().parse::<i64>().unwrap(), active_base);
}

/// Kafka's `testCleanSegmentsWithAbort`-like keyless rule: records without a key are dropped
/// from the cleaned section (compacted topics refuse them, but old data may hold some).
#[test]
fn keyless_records_in_the_cleaned_section_are_dropped() {
    let h = harness(&[], small_map());
    // Written while the topic was not compacted.
    h.log()
        .set_config(crate::config::LogConfig {
            cleanup_policy: [crate::config::CleanupPolicy::Delete].into(),
            ..h.log().config().unwrap()
        })
        .unwrap();
    for idx in 0..40 {
        h.append(&[(None, Some(&format!("keyless-{idx}")))], Compression::None);
        h.put("k", Some(&format!("v{idx}")));
    }
    h.log()
        .set_config(crate::config::LogConfig {
            cleanup_policy: [crate::config::CleanupPolicy::Compact].into(),
            ..h.log().config().unwrap()
        })
        .unwrap();
    h.clean_fully(10);
    let active_base = *h.log().segment_base_offsets().unwrap().last().unwrap();
    let records = h.records();
    assert!(records.iter().filter(|r| r.0 < active_base).all(|r| r.1.is_some()), "{records:?}");
    assert_eq!(key_view(&records).get(b"k".as_slice()).unwrap().1, s("v39"));
}

/// Kafka's `testDeleteHorizon...` / KIP-534: the first rewrite of a batch holding a tombstone
/// stores `now + delete.retention.ms` in it (attribute bit 6); the tombstone stays until that
/// time has passed, and a later round removes it.
#[test]
fn tombstones_get_a_delete_horizon_and_go_after_it() {
    let h = harness(&[("delete.retention.ms", "1000")], small_map());
    for idx in 0..30 {
        h.put("gone", Some(&format!("v{idx}")));
        h.put("kept", Some(&format!("v{idx}")));
    }
    let tombstone_offset = h.put("gone", None);
    for idx in 0..30 {
        h.put("filler", Some(&format!("f{idx}")));
    }
    let now = h.clock_ms();
    h.clean_fully(10);
    let records = h.records();
    assert!(records.contains(&(tombstone_offset, s("gone"), None)), "kept before its horizon");
    let batches = h.batch_bytes();
    let with_horizon: Vec<Option<i64>> = batches
        .iter()
        .filter_map(|bytes| match Batch::new(bytes).unwrap() {
            Batch::V2(v2) => v2.delete_horizon_ms(),
            Batch::Legacy(_) => None,
        })
        .map(Some)
        .collect();
    assert_eq!(with_horizon, [Some(now + 1000)], "one batch, the tombstone's, has a horizon");
    // Dirty the log again so another round runs, before and after the horizon.
    for idx in 0..30 {
        h.put("filler", Some(&format!("g{idx}")));
    }
    h.clock.set(now + 999);
    h.clean_fully(10);
    assert!(h.records().contains(&(tombstone_offset, s("gone"), None)), "not yet");
    for idx in 0..30 {
        h.put("filler", Some(&format!("h{idx}")));
    }
    h.clock.set(now + 1000);
    h.clean_fully(10);
    let view = key_view(&h.records());
    assert!(!view.contains_key(b"gone".as_slice()), "the tombstone is gone: {view:?}");
    assert_eq!(view.get(b"kept".as_slice()).unwrap().1, s("v29"));
}

/// Kafka's `testPartialSegmentClean` / `testCleaningWithDeletes` with a tiny map: when the map
/// fills up the round cleans as far as it got, the checkpoint moves that far, and later rounds
/// finish the job; a segment with more keys than the map holds is cleaned in several passes.
#[test]
fn a_full_map_cleans_part_of_the_log_and_later_rounds_finish() {
    // 10 slots: 9 keys per round at the load factor.
    let cleaner = CleanerConfig {
        dedupe_buffer_bytes: 10 * super::SLOT_BYTES as u64,
        ..CleanerConfig::default()
    };
    let h = harness(&[("segment.bytes", "100000")], cleaner);
    for round in 0..3 {
        let records: Vec<(String, String)> =
            (0..40).map(|k| (format!("key{k}"), format!("v{round}-{k}"))).collect();
        let refs: Vec<(Option<&str>, Option<&str>)> =
            records.iter().map(|(k, v)| (Some(k.as_str()), Some(v.as_str()))).collect();
        h.append(&refs, Compression::None);
    }
    h.put("last", Some("x"));
    // Roll so that the big segment can be cleaned.
    h.log()
        .set_config(crate::config::LogConfig { segment_bytes: 100, ..h.log().config().unwrap() })
        .unwrap();
    h.put("roll", Some("y"));
    let before = h.records();
    let mut ends = Vec::new();
    for _ in 0..40 {
        match h.clean() {
            CleanOutcome::Cleaned { to, .. } => ends.push(to),
            CleanOutcome::Idle => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(ends.len() >= 10, "several partial rounds: {ends:?}");
    assert!(ends.windows(2).all(|w| w[0] < w[1]), "each round moves on: {ends:?}");
    let after = h.records();
    assert_eq!(key_view(&after), key_view(&before));
    assert!(after.len() <= 42 + 2, "{} records left", after.len());
}

/// Kafka's `testSegmentGrouping`: groups stay within `segment.bytes`, the index size limit, and
/// 31-bit relative offsets.
#[test]
fn segments_group_within_size_index_and_offset_limits() {
    use super::group_segments_by_size;
    let log: Arc<dyn crate::io::File> =
        Arc::from(SimFs::new().open(&PathBuf::from("/x"), crate::io::OpenMode::CreateNew).unwrap());
    let segment = |base: i64, size: u32, index: u64| crate::log::partition_log::SegmentView {
        base_offset: base,
        size_bytes: size,
        log: Arc::clone(&log),
        log_path: PathBuf::from("/x"),
        offset_index_bytes: index,
        time_index_bytes: index,
        largest_timestamp: 0,
        first_batch_timestamp: 0,
        last_modified_ms: 0,
    };
    let bases = |groups: Vec<Vec<&crate::log::partition_log::SegmentView>>| -> Vec<Vec<i64>> {
        groups.iter().map(|g| g.iter().map(|s| s.base_offset).collect()).collect()
    };
    let segments: Vec<_> = (0..10).map(|i| segment(i * 10, 400, 8)).collect();
    let refs: Vec<_> = segments.iter().collect();
    // 1000 bytes: two segments of 400 per group.
    assert_eq!(
        bases(group_segments_by_size(&refs, 1000, 1 << 20, 100)),
        [vec![0, 10], vec![20, 30], vec![40, 50], vec![60, 70], vec![80, 90]]
    );
    // The index limit: 24 bytes, three segments of 8.
    assert_eq!(bases(group_segments_by_size(&refs, u32::MAX, 24, 100))[0], [0, 10, 20]);
    // Offsets: a segment whose last offset would not fit 31 bits from the group's base starts
    // a new group.
    let far = [segment(0, 10, 8), segment(1, 10, 8), segment(i64::from(i32::MAX) + 1, 10, 8)];
    let far_refs: Vec<_> = far.iter().collect();
    assert_eq!(
        bases(group_segments_by_size(&far_refs, u32::MAX, u32::MAX, i64::from(i32::MAX) + 10)),
        // Kafka's rule measures from the group's first base to the next segment's last offset
        // (the base after it - 1): segment 1 ends at 2^31 - 1 and joins the group of 0.
        [vec![0, 1], vec![i64::from(i32::MAX) + 1]]
    );
}

/// `LogCleanerManagerTest.testCleanableOffsetsActiveSegment`, `...ForTime` and
/// `...NeedsCheckpointReset`: the active segment, the high watermark and
/// `min.compaction.lag.ms` bound the cleanable section; a checkpoint past the log end resets.
#[test]
fn the_uncleanable_offset_follows_kafkas_rules() {
    let h = harness(&[("min.compaction.lag.ms", "60000")], small_map());
    for idx in 0..20 {
        h.put("k", Some(&format!("v{idx}")));
    }
    let bases = h.log().segment_base_offsets().unwrap();
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    // Every segment is younger than the lag: nothing is cleanable.
    assert_eq!((state.first_dirty_offset, state.first_uncleanable_offset), (0, 0));
    assert!(matches!(h.clean(), CleanOutcome::Idle));
    h.clock.set(NOW_MS + 60_001);
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    assert_eq!(state.first_uncleanable_offset, *bases.last().unwrap(), "the active segment");
    // The high watermark bounds it too: the segment holding it is the limit.
    let log = h.log();
    let mid = bases[bases.len() / 2];
    log.update_high_watermark(mid + 1).unwrap();
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    assert_eq!(state.first_uncleanable_offset, mid);
    log.maybe_increment_leader_high_watermark().unwrap();
    // A checkpoint past the log end resets to the log start.
    let file = crate::dirs::checkpoint::OffsetCheckpointFile::in_dir(
        &PathBuf::from("/data"),
        crate::dirs::checkpoint::CLEANER_OFFSET_CHECKPOINT_FILE,
    );
    file.write(&h.fs, &[(("t".to_owned(), 0), 10_000)].into()).unwrap();
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    assert_eq!(state.first_dirty_offset, 0);
    // `max.compaction.lag.ms` makes a log due whatever its ratio.
    let h = harness(
        &[("min.cleanable.dirty.ratio", "0.9"), ("max.compaction.lag.ms", "1000")],
        small_map(),
    );
    for idx in 0..100 {
        h.put(&format!("c{idx}"), Some("v"));
    }
    assert!(h.clean_fully(10) >= 1, "all dirty: due by ratio");
    for idx in 0..20 {
        h.put(&format!("k{idx}"), Some("v"));
    }
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    assert!(state.dirty_ratio > 0.0 && state.dirty_ratio <= 0.9, "{state:?}");
    assert!(matches!(h.clean(), CleanOutcome::Idle), "not dirty enough, not late");
    h.clock.set(NOW_MS + 2_000);
    assert!(matches!(h.clean(), CleanOutcome::Cleaned { .. }), "late");
}

/// Kafka's `testDuplicateCheckAfterCleaning`: the last batch of an idempotent producer survives
/// cleaning (as an empty header when its records are superseded), so a retry of it is still
/// answered as a duplicate with its original offsets.
#[test]
fn a_producers_last_batch_is_kept_empty_and_its_retry_is_a_duplicate() {
    let h = harness(&[], small_map());
    let batch = |seq: i32, value: &str| {
        let mut builder = RecordBatchBuilder::new(Compression::None).producer(7, 0, seq);
        builder.push(NOW_MS, Some(b"k"), Some(value.as_bytes()), &[]).unwrap();
        builder.build().unwrap()
    };
    let last = batch(2, "p2");
    for (seq, value) in [(0, "p0"), (1, "p1")] {
        h.log().append_as_sole_leader(&batch(seq, value), AppendOrigin::Client, NOW_MS).unwrap();
    }
    let first = h.log().append_as_sole_leader(&last, AppendOrigin::Client, NOW_MS).unwrap();
    // Other writers supersede the producer's key.
    for idx in 0..40 {
        h.put("k", Some(&format!("other{idx}")));
    }
    h.clean_fully(10);
    let empty: Vec<Vec<u8>> = h
        .batch_bytes()
        .into_iter()
        .filter(
            |bytes| matches!(Batch::new(bytes).unwrap(), Batch::V2(v2) if v2.producer_id() == 7),
        )
        .collect();
    assert_eq!(empty.len(), 1, "only the producer's last batch stays");
    let Batch::V2(kept) = Batch::new(&empty[0]).unwrap() else { panic!("v2") };
    assert_eq!(
        (kept.records_count(), kept.base_offset(), kept.last_offset(), kept.base_sequence()),
        (0, first.first_offset, first.first_offset, 2)
    );
    let retry = h.log().append_as_sole_leader(&last, AppendOrigin::Client, NOW_MS).unwrap();
    assert_eq!(retry.first_offset, first.first_offset, "answered as the duplicate it is");
}

/// A `.swap` left by a crash between the swap's steps completes at load, a `.cleaned` is
/// dropped (Kafka's `LogLoaderTest` swap cases): power is lost after every file-system operation
/// of a round in turn (the operation fails, then `SimFs` keeps only what was durable), and each
/// reopened log reads as exactly the log before the round or after it, with no leftover file.
/// Workload 0 is fixed; `SEGLOG_CLEANER_CRASH_WORKLOADS=N` adds seeded ones (keys, values,
/// tombstones, codecs, segment sizes), each crashed after every operation of its round.
#[test]
fn a_round_interrupted_after_any_operation_reloads_as_before_or_after() {
    let workloads: u64 = std::env::var("SEGLOG_CLEANER_CRASH_WORKLOADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let mut cycles = 0;
    for seed in 0..workloads {
        cycles += crash_after_every_operation(seed);
    }
    eprintln!("{cycles} crash cycles over {workloads} workloads");
}

/// A compacted log of workload `seed`, flushed, with one group to clean.
fn crash_workload(seed: u64) -> Harness {
    let mut rng = crate::testing::Rng(seed);
    let segment_bytes = if seed == 0 { 1024 } else { 200 + rng.below(1500) };
    let h = harness(&[("segment.bytes", &segment_bytes.to_string())], small_map());
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    if seed == 0 {
        for round in 0..8 {
            for key in ["a", "b", "c"] {
                h.put(key, Some(&format!("{key}{round}")));
            }
        }
    } else {
        let n_keys = 2 + rng.below(10);
        for _ in 0..10 + rng.below(50) {
            let records: Vec<(String, Option<String>)> = (0..=rng.below(4))
                .map(|_| {
                    let key = format!("k{}", rng.below(n_keys));
                    let value = (rng.below(6) != 0).then(|| format!("v{}", rng.next_u64()));
                    (key, value)
                })
                .collect();
            let refs: Vec<(Option<&str>, Option<&str>)> =
                records.iter().map(|(k, v)| (Some(k.as_str()), v.as_deref())).collect();
            h.append(&refs, codecs[rng.below(5) as usize]);
        }
    }
    // One group: the round swaps one segment in.
    h.log()
        .set_config(crate::config::LogConfig {
            segment_bytes: 1 << 20,
            ..h.log().config().unwrap()
        })
        .unwrap();
    h.log().flush(h.clock_ms()).unwrap();
    h
}

/// Crashes workload `seed`'s round after each of its operations; returns the cycles run.
fn crash_after_every_operation(seed: u64) -> u64 {
    let reference = crash_workload(seed);
    let before = reference.records();
    let start = reference.fs.op_count();
    if !matches!(reference.clean(), CleanOutcome::Cleaned { .. }) {
        return 0;
    }
    let n_ops = reference.fs.op_count() - start;
    let after = reference.records();
    if seed == 0 {
        assert_ne!(before, after);
        assert!(n_ops > 10, "the round had {n_ops} operations");
    }
    let mut interrupted = 0;
    for op in 1..=n_ops {
        let h = crash_workload(seed);
        h.fs.set_fault_plan(FaultPlan::FailNth { n: op, kind: FaultKind::Eio });
        let outcome = h.clean();
        interrupted += u64::from(!matches!(outcome, CleanOutcome::Cleaned { .. }));
        h.fs.set_fault_plan(FaultPlan::None);
        h.fs.crash(op ^ (seed << 20));
        drop(h.manager);
        let clock = Arc::new(ManualClock::new(NOW_MS));
        let manager = open_manager(&h.fs, &clock, small_map());
        let records = read_all(&manager.get_log(&h.tp).unwrap());
        assert!(
            records == before || records == after,
            "workload {seed}: power lost after operation {op} of {n_ops} of the round: \
             {outcome:?}\n{records:?}"
        );
        let leftovers: Vec<PathBuf> =
            h.fs.list(&PathBuf::from("/data/t-0"))
                .unwrap()
                .into_iter()
                .filter(|p| {
                    let n = p.to_string_lossy();
                    n.ends_with(".cleaned") || n.ends_with(".swap")
                })
                .collect();
        assert!(leftovers.is_empty(), "workload {seed}, operation {op}: {leftovers:?}");
    }
    if seed == 0 {
        assert!(interrupted > 10, "{interrupted} of {n_ops} faults stopped the round");
    }
    n_ops
}

/// An I/O error during a round: the partition is marked uncleanable with the cause, counted,
/// reported once, and the other compacted partitions are still cleaned; a change of its
/// topic's configuration retries it.
#[test]
fn an_io_error_makes_the_partition_uncleanable_and_the_others_go_on() {
    let h = harness(&[], small_map());
    for round in 0..20 {
        h.put("k", Some(&format!("v{round}")));
    }
    // The round's first write (to the `.cleaned` segment) fails.
    h.fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::ShortWrite });
    let CleanOutcome::Failed(failure) = h.clean() else { panic!("the round fails") };
    assert_eq!(failure.topic_partition, h.tp);
    assert!(failure.reason.contains("failed on"), "{}", failure.reason);
    assert_eq!(h.manager.take_cleaner_failures(), std::slice::from_ref(&failure), "reported once");
    assert!(h.manager.take_cleaner_failures().is_empty());
    let metrics = h.manager.cleaner_metrics();
    assert_eq!((metrics.uncleanable_partitions_count, metrics.failed_rounds), (1, 1));
    assert!(metrics.uncleanable_bytes > 0);
    let state = h.manager.partition_cleaner_state(&h.tp).unwrap().unwrap();
    assert_eq!(state.uncleanable.as_deref(), Some(failure.reason.as_str()));
    // Another compacted topic is cleaned while `t` stays marked.
    let mut other = BTreeMap::new();
    other.insert("cleanup.policy".to_owned(), "compact".to_owned());
    other.insert("segment.bytes".to_owned(), "1024".to_owned());
    other.insert("min.cleanable.dirty.ratio".to_owned(), "0.01".to_owned());
    h.manager.create_topic("u", 1, other).unwrap();
    let u = h.manager.get_log(&TopicPartition { topic: "u".into(), partition: 0 }).unwrap();
    for round in 0..20 {
        let batch = crate::testing::producer_batch([(NOW_MS, Some("k"), format!("v{round}"))]);
        u.append_as_sole_leader(&batch, AppendOrigin::Client, NOW_MS).unwrap();
    }
    let CleanOutcome::Cleaned { topic_partition, .. } = h.clean() else { panic!("u is cleaned") };
    assert_eq!(topic_partition.topic, "u");
    assert!(matches!(h.clean(), CleanOutcome::Idle), "t is not retried");
    // A config change retries it.
    h.log()
        .set_config(crate::config::LogConfig {
            min_cleanable_dirty_ratio: 0.02,
            ..h.log().config().unwrap()
        })
        .unwrap();
    assert!(matches!(h.clean(), CleanOutcome::Cleaned { .. }));
    assert_eq!(h.manager.cleaner_metrics().uncleanable_partitions_count, 0);
}

/// A corrupt batch in the dirty section: the cleaner never rewrites bytes it cannot trust; the
/// partition is uncleanable, and its data is untouched.
#[test]
fn a_corrupt_batch_makes_the_partition_uncleanable_and_changes_nothing() {
    let h = harness(&[], small_map());
    for round in 0..20 {
        h.put("k", Some(&format!("value-{round}")));
    }
    let before = h.records();
    // Flip a byte inside the first batch's records, behind the log's back.
    let path = PathBuf::from("/data/t-0/00000000000000000000.log");
    let file = h.fs.open(&path, crate::io::OpenMode::ReadWrite).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, 70).unwrap();
    file.write_all_at(&[byte[0] ^ 0xff], 70).unwrap();
    let CleanOutcome::Failed(failure) = h.clean() else { panic!("the round fails") };
    assert!(failure.reason.contains("corrupt"), "{}", failure.reason);
    assert!(failure.reason.contains("00000000000000000000.log"), "{}", failure.reason);
    assert_eq!(h.manager.cleaner_metrics().uncleanable_partitions_count, 1);
    assert_eq!(h.segment_count(), h.log().segment_base_offsets().unwrap().len());
    let after: Vec<Read> = h.records().into_iter().filter(|r| r.0 > 0).collect();
    assert_eq!(after, before.into_iter().filter(|r| r.0 > 0).collect::<Vec<_>>());
}

/// A map too small for even one key (`log.cleaner.dedupe.buffer.size` below one slot at the load
/// factor): Kafka's thread dies at start; here each compacted partition is marked uncleanable
/// with the reason, and nothing else stops.
#[test]
fn a_map_too_small_for_one_key_makes_the_partition_uncleanable() {
    let cleaner = CleanerConfig { dedupe_buffer_bytes: 0, ..CleanerConfig::default() };
    let h = harness(&[], cleaner);
    for round in 0..20 {
        h.put("k", Some(&format!("v{round}")));
    }
    let CleanOutcome::Failed(failure) = h.clean() else { panic!("the round fails") };
    assert!(failure.reason.contains("offset map holds no key"), "{}", failure.reason);
    assert_eq!(h.manager.cleaner_metrics().uncleanable_partitions_count, 1);
}

/// Deleting a topic while its partition is being cleaned waits for the round to stop, and the
/// round changes nothing after; the cleaner checkpoint forgets the partition.
#[test]
fn deleting_a_topic_aborts_its_round() {
    let h = harness(&[], small_map());
    for round in 0..20 {
        h.put("k", Some(&format!("v{round}")));
    }
    h.manager.abort_and_pause_cleaning(&h.tp);
    assert!(matches!(h.clean(), CleanOutcome::Idle), "a paused partition is not cleaned");
    h.manager.resume_cleaning(&h.tp);
    assert!(matches!(h.clean(), CleanOutcome::Cleaned { .. }));
    h.manager.delete_topic("t").unwrap();
    let checkpoint = crate::dirs::checkpoint::OffsetCheckpointFile::in_dir(
        &PathBuf::from("/data"),
        crate::dirs::checkpoint::CLEANER_OFFSET_CHECKPOINT_FILE,
    );
    assert!(checkpoint.read(&h.fs).unwrap().is_empty());
    assert!(matches!(
        h.manager.partition_cleaner_state(&h.tp),
        Err(Error::UnknownTopicOrPartition { .. })
    ));
}

/// One keyed v0/v1 message at `offset` (a tombstone when `value` is `None`).
fn legacy_message(magic: i8, offset: i64, key: &[u8], value: Option<&[u8]>) -> Vec<u8> {
    let mut body = vec![magic as u8, 0];
    if magic == 1 {
        body.extend_from_slice(&NOW_MS.to_be_bytes());
    }
    body.extend_from_slice(&(key.len() as i32).to_be_bytes());
    body.extend_from_slice(key);
    match value {
        Some(value) => {
            body.extend_from_slice(&(value.len() as i32).to_be_bytes());
            body.extend_from_slice(value);
        }
        None => body.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    let mut entry = offset.to_be_bytes().to_vec();
    entry.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    entry.extend_from_slice(&0u32.to_be_bytes());
    entry.extend_from_slice(&body);
    let crc = seglog_format::LegacyEntry::new(&entry).unwrap().compute_crc();
    entry[12..16].copy_from_slice(&crc.to_be_bytes());
    entry
}

/// Kafka's `testCleaningWithDeletes` on magic v0 and v1 segments: legacy entries are kept byte
/// for byte or dropped, never rewritten; a tombstone stays while its segment is newer than the
/// legacy horizon (the last clean segment's mtime minus `delete.retention.ms`), and goes in a
/// later round once it is not.
#[test]
fn legacy_segments_are_cleaned_entry_by_entry_and_keep_their_magic() {
    for magic in [0i8, 1] {
        let h = harness(&[("delete.retention.ms", "0")], small_map());
        let log = h.log();
        let mut entries = Vec::new();
        let writes: [(&[u8], Option<&[u8]>); 8] = [
            (b"a", Some(b"a0")),
            (b"b", Some(b"b0")),
            (b"a", Some(b"a1")),
            (b"c", Some(b"c0")),
            (b"b", None),
            (b"a", Some(b"a2")),
            (b"d", Some(b"d0")),
            (b"d", Some(b"d1")),
        ];
        for (offset, (key, value)) in writes.iter().enumerate() {
            entries.push(legacy_message(magic, offset as i64, key, *value));
        }
        log.append_as_follower(&entries[..6].concat(), NOW_MS).unwrap();
        log.roll(NOW_MS).unwrap();
        log.maybe_increment_leader_high_watermark().unwrap();
        assert!(matches!(h.clean(), CleanOutcome::Cleaned { .. }), "magic {magic}");
        let records = h.records();
        let offsets: Vec<i64> = records.iter().map(|r| r.0).collect();
        assert_eq!(offsets, [3, 4, 5], "magic {magic}: c0, b's tombstone, a2");
        assert_eq!(records[1], (4, s("b"), None), "magic {magic}: no clean segment, no horizon");
        for bytes in h.batch_bytes() {
            assert_eq!(Batch::new(&bytes).unwrap().magic(), magic);
            assert!(entries.contains(&bytes), "magic {magic}: an entry kept byte for byte");
        }
        // A second round: the tombstone's segment is now clean and not newer than the horizon.
        log.append_as_follower(&entries[6..].concat(), NOW_MS).unwrap();
        log.roll(NOW_MS).unwrap();
        log.maybe_increment_leader_high_watermark().unwrap();
        assert!(matches!(h.clean(), CleanOutcome::Cleaned { .. }), "magic {magic}");
        let offsets: Vec<i64> = h.records().iter().map(|r| r.0).collect();
        assert_eq!(offsets, [3, 5, 7], "magic {magic}: the tombstone went");
    }
}

/// A compacted log whose cleaned segments keep only empty batches (an idempotent producer's
/// records all superseded later): one read from the log start goes past them to the first
/// records, so that no fetch answers with empty batches alone while records follow (older
/// librdkafka grows its fetch size at each such answer until it gives up).
#[test]
fn a_read_goes_past_segments_that_hold_only_empty_batches() {
    let h = harness(&[], small_map());
    for i in 0..400 {
        let mut builder = RecordBatchBuilder::new(Compression::None).producer(3, 0, i);
        builder.push(NOW_MS, Some(format!("k{}", i % 5).as_bytes()), Some(b"value"), &[]).unwrap();
        let batch = builder.build().unwrap();
        h.log().append_as_sole_leader(&batch, AppendOrigin::Client, NOW_MS).unwrap();
    }
    h.clean_fully(10);
    let log = h.log();
    let bases = log.segment_base_offsets().unwrap();
    assert!(bases.len() > 5, "{bases:?}");
    let first = log.read(0, 1 << 20, Isolation::LogEnd, true).unwrap();
    let batches: Vec<Batch<'_>> = Batches::new(&first.records).map(|b| b.unwrap().batch).collect();
    let empty = batches.iter().take_while(|b| b.records_count() == Some(0)).count();
    assert!(empty >= 2, "the cleaned segments hold empty batches: {empty}");
    assert!(batches.len() > empty, "and the one read reaches the first records");
    // The whole log is still read record by record, in order.
    assert_eq!(key_view(&h.records()).len(), 5);
    // Whatever the byte limit, what a read adds past the first segment is whole batches: a
    // batch cut by the limit ends the read, never followed by another segment's bytes.
    for max_bytes in (61..2_000).step_by(7) {
        let fetch = log.read(0, max_bytes, Isolation::LogEnd, true).unwrap();
        let mut walk = Batches::new(&fetch.records);
        for batch in walk.by_ref() {
            let batch = batch.unwrap();
            batch.batch.validate().unwrap_or_else(|e| panic!("max {max_bytes}: {e}"));
        }
        let trailing = fetch.records.len() - walk.next_position() as usize;
        let segment_end = bases.get(1).copied().unwrap_or(i64::MAX);
        if trailing > 0 {
            // A cut batch is allowed only within the first segment's own bytes (as Kafka's).
            let last = Batches::new(&fetch.records).filter_map(Result::ok).last();
            assert!(
                last.is_none_or(|b| b.batch.last_offset() < segment_end),
                "max {max_bytes}: a cut batch after the first segment"
            );
        }
    }
}
