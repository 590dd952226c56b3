//! Real Kafka log directories opened by `LogManager`: every fixture set loads (copied to a temp
//! dir), every partition reads back from its log start to its log end with contiguous offsets,
//! offsets by timestamp agree with a brute-force scan, and the `-delete` directory is removed.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr, clippy::pedantic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Batches, DecodeLimits};
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::{Fs, StdFs};
use seglog_storage::log::partition_log::{Isolation, TopicPartition};
use seglog_storage::manager::{LogManager, ManualClock};

fn kafka_real() -> Option<PathBuf> {
    seglog_storage::testing::kafka_real_fixtures()
}

/// Copies a directory tree (fixtures are read-only and never modified).
fn copy_tree(_fs: &StdFs, from: &Path, to: &Path) {
    seglog_storage::testing::copy_tree(from, to);
}

/// The log directories inside a fixture set (a set may hold several, as the KRaft one does).
fn log_dirs_in(fs: &StdFs, set: &Path) -> Vec<PathBuf> {
    let has_partitions = fs.list(set).unwrap().iter().any(|p| {
        fs.list(p).is_ok()
            && seglog_format::PartitionDir::parse(&p.file_name().unwrap().to_string_lossy()).is_ok()
    });
    if has_partitions {
        return vec![set.to_owned()];
    }
    fs.list(set)
        .unwrap()
        .into_iter()
        .filter(|p| fs.list(p).is_ok())
        .flat_map(|p| log_dirs_in(fs, &p))
        .collect()
}

/// Every record of a partition: (offset, timestamp).
fn read_everything(manager: &LogManager, tp: &TopicPartition) -> Vec<(i64, i64)> {
    let log = manager.get_log(tp).unwrap();
    let mut next = log.log_start_offset().unwrap();
    let end = log.log_end_offset().unwrap();
    let mut records = Vec::new();
    while next < end {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true).unwrap();
        if fetch.records.is_empty() {
            break;
        }
        for item in Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            let decoded = batch.records(DecodeLimits::default()).unwrap();
            for record in &decoded {
                let record = record.unwrap();
                if record.offset >= next {
                    records.push((record.offset, record.timestamp));
                }
            }
            next = next.max(batch.next_offset());
        }
    }
    records
}

#[test]
fn every_fixture_set_opens_and_reads_back() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let temp = tempfile::tempdir().unwrap();
    let mut sets: Vec<PathBuf> =
        fs.list(&root).unwrap().into_iter().filter(|p| fs.list(p).is_ok()).collect();
    sets.sort();
    let (mut n_partitions, mut n_records, mut n_dirs) = (0usize, 0usize, 0usize);
    let mut ends = std::collections::BTreeMap::new();
    for set in &sets {
        let name = set.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("wire-") || name == "apache-kafka-0.7-magic0" {
            continue;
        }
        for (dir_idx, log_dir) in log_dirs_in(&fs, set).into_iter().enumerate() {
            let copy = temp.path().join(format!("{name}-{dir_idx}"));
            copy_tree(&fs, &log_dir, &copy);
            let had_delete_dir =
                fs.list(&copy).unwrap().iter().any(|p| p.to_string_lossy().ends_with("-delete"));
            let config =
                BrokerLogConfig { log_dirs: vec![copy.clone()], ..BrokerLogConfig::default() };
            let clock = Arc::new(ManualClock::new(1_800_000_000_000));
            let (manager, report) = LogManager::open(Arc::new(StdFs), clock, config)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                report.deleted_dirs.is_empty(),
                !had_delete_dir,
                "{name}: -delete dirs are removed"
            );
            n_dirs += 1;
            for tp in manager.partitions() {
                let log = manager.get_log(&tp).unwrap();
                let records = read_everything(&manager, &tp);
                for pair in records.windows(2) {
                    assert!(pair[1].0 > pair[0].0, "{name} {tp}: offsets must increase");
                }
                // Without compaction offsets are contiguous; compacted topics may have gaps.
                let compacted = tp.topic.starts_with('_') || tp.topic.contains("changelog");
                if !compacted && let (Some(first), Some(last)) = (records.first(), records.last()) {
                    assert_eq!(
                        last.0 - first.0 + 1,
                        records.len() as i64,
                        "{name} {tp}: contiguous offsets"
                    );
                }
                // Offset for timestamp agrees with a brute-force scan.
                for &(_, timestamp) in records.iter().step_by(records.len() / 7 + 1) {
                    if timestamp < 0 {
                        continue;
                    }
                    let expected =
                        records.iter().find(|(_, ts)| *ts >= timestamp).map(|(offset, _)| *offset);
                    let found = log.fetch_offset_by_timestamp(timestamp).unwrap().map(|f| f.offset);
                    assert_eq!(found, expected, "{name} {tp}: offset for timestamp {timestamp}");
                }
                ends.insert(
                    format!("{name}/{tp}"),
                    (log.log_start_offset().unwrap(), log.log_end_offset().unwrap()),
                );
                n_partitions += 1;
                n_records += records.len();
            }
            manager.shutdown().unwrap();
        }
    }
    println!(
        "opened {n_dirs} Kafka log dirs: {n_partitions} partitions, {n_records} records read back"
    );
    // Offsets the fixtures README states.
    for (key, expected) in [
        ("william0423-indexed-offsets/__consumer_offsets-28", (0, 8_202)),
        ("william0423-indexed-offsets/debug_topic-0", (0, 40)),
        ("williamjie-kafka-1.x/test-0", (0, 2_032)),
        ("seanorth-snappy/some-topic-0", (0, 9)),
        ("biggerbrain-gzip/lsx1-0", (0, 14)),
        ("nikhil-kafka-setup/__consumer_offsets-12", (0, 869)),
        ("erickimm-multisegment/stock-trades-0", (0, 5_579)),
    ] {
        let found = ends.iter().find(|(name, _)| {
            name.starts_with(key.split('/').next().unwrap())
                && name.ends_with(key.split('/').nth(1).unwrap())
        });
        assert_eq!(found.map(|(_, v)| *v), Some(expected), "{key}");
    }
    assert!(n_partitions >= 300, "{n_partitions}");
}
