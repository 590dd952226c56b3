//! The damage matrix: a log directory damaged in every way a disk or a hand can damage it (a
//! flipped byte anywhere, a zeroed page, a truncated file, a missing or garbage index, a
//! checkpoint pointing past the end, a mangled file name) is reopened. Each case ends in either
//! a clean recovery that keeps every record before the damage, or a typed error; never a panic,
//! never silent loss of intact earlier data.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Batches, Compression, DecodeLimits, FileKind, RecordBatchBuilder};

use crate::config::{BrokerLogConfig, LogConfig};
use crate::io::{Fs, OpenMode, SimFs, read_all};
use crate::log::partition_log::{Isolation, TopicPartition};
use crate::log::validator::AppendOrigin;
use crate::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManualClock};
use crate::segment::segment_path;

const DIR: &str = "/damage";

fn config() -> BrokerLogConfig {
    let default_log_config = LogConfig {
        segment_bytes: 4096,
        segment_index_bytes: 4096,
        index_interval_bytes: 256,
        ..LogConfig::default()
    };
    BrokerLogConfig {
        log_dirs: vec![PathBuf::from(DIR)],
        default_log_config,
        ..BrokerLogConfig::default()
    }
}

fn open(fs: &SimFs) -> crate::error::Result<LogManager> {
    LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(10_000)), config())
        .map(|(m, _)| m)
}

fn tp(partition: i32) -> TopicPartition {
    TopicPartition { topic: "d".into(), partition }
}

/// Every record of a partition as (offset, value), or the error reading it.
fn records(manager: &LogManager, tp: &TopicPartition) -> crate::error::Result<Vec<(i64, Vec<u8>)>> {
    let mut out = Vec::new();
    read_into(manager, tp, &mut out)?;
    Ok(out)
}

/// Reads records into `out` until the end or the first error (which is returned).
fn read_into(
    manager: &LogManager,
    tp: &TopicPartition,
    out: &mut Vec<(i64, Vec<u8>)>,
) -> crate::error::Result<()> {
    let log = manager.get_log(tp)?;
    let mut next = log.log_start_offset()?;
    while next < log.log_end_offset()? {
        let fetch = log.read(next, 1 << 20, Isolation::LogEnd, true)?;
        if fetch.records.is_empty() {
            break;
        }
        for item in Batches::new(&fetch.records) {
            let batch =
                item.map_err(|e| crate::error::Error::InvalidArgument(e.to_string()))?.batch;
            // As a Kafka consumer with check.crcs: the broker does not verify on fetch.
            batch.validate().map_err(|e| crate::error::Error::InvalidArgument(e.to_string()))?;
            let decoded = batch
                .records(DecodeLimits::default())
                .map_err(|e| crate::error::Error::InvalidArgument(e.to_string()))?;
            for record in &decoded {
                let record =
                    record.map_err(|e| crate::error::Error::InvalidArgument(e.to_string()))?;
                if record.offset >= next {
                    out.push((record.offset, record.value.unwrap_or_default().to_vec()));
                }
            }
            next = next.max(batch.next_offset());
        }
    }
    Ok(())
}

/// A directory with two partitions of several segments, cleanly shut down.
fn build(fs: &SimFs) -> BTreeMap<i32, Vec<(i64, Vec<u8>)>> {
    let manager = open(fs).unwrap();
    manager.create_topic("d", 2, BTreeMap::new()).unwrap();
    for round in 0..60 {
        for partition in 0..2 {
            let codec = Compression::ALL[(round + partition as usize) % 5];
            let mut builder = RecordBatchBuilder::new(codec);
            for idx in 0..3 {
                builder
                    .push(
                        1_000 + round as i64,
                        Some(b"k"),
                        Some(
                            format!("p{partition}-r{round}-{idx}-{}", "v".repeat(round % 40))
                                .as_bytes(),
                        ),
                        &[],
                    )
                    .unwrap();
            }
            manager
                .get_log(&tp(partition))
                .unwrap()
                .append_as_leader(&builder.build().unwrap(), 0, AppendOrigin::Client, 1_000)
                .unwrap();
        }
    }
    let originals = (0..2).map(|p| (p, records(&manager, &tp(p)).unwrap())).collect();
    manager.shutdown().unwrap();
    originals
}

fn files(fs: &SimFs, kind: FileKind) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for partition in 0..2 {
        let dir = Path::new(DIR).join(format!("d-{partition}"));
        for path in fs.list(&dir).unwrap() {
            if path.to_string_lossy().ends_with(kind.suffix()) {
                out.push(path);
            }
        }
    }
    out
}

/// Reads a file, lets `damage` change its bytes, writes it back.
fn mutate(fs: &SimFs, path: &Path, damage: impl FnOnce(&mut Vec<u8>)) {
    let file = fs.open(path, OpenMode::ReadWrite).unwrap();
    let mut bytes = read_all(file.as_ref()).unwrap();
    damage(&mut bytes);
    file.set_len(0).unwrap();
    file.write_all_at(&bytes, 0).unwrap();
    file.sync_data().unwrap();
}

/// The records a damaged `.log` must still yield: every batch that ends before `position`.
fn intact_before(fs: &SimFs, log: &Path, position: usize) -> i64 {
    let bytes = read_all(fs.open(log, OpenMode::Read).unwrap().as_ref()).unwrap();
    let mut next = None;
    for item in Batches::new(&bytes) {
        let item = item.unwrap();
        if item.position as usize + item.batch.size_bytes() > position {
            break;
        }
        next = Some(item.batch.next_offset());
    }
    next.unwrap_or(0)
}

#[test]
#[expect(clippy::too_many_lines, reason = "one table of damage kinds and one set of checks")]
fn every_kind_of_damage_recovers_the_intact_prefix_or_fails_typed() {
    let mut state = 0x00C0_FFEEu64;
    let mut random = move |n: usize| {
        state =
            state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 33) as usize) % n.max(1)
    };
    let mut outcomes: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for case in 0..120 {
        let fs = SimFs::new();
        let originals = build(&fs);
        let logs = files(&fs, FileKind::Log);
        let log = logs[random(logs.len())].clone();
        let partition = i32::from(!log.to_string_lossy().contains("/d-0/"));
        let base: i64 = log.file_name().unwrap().to_string_lossy()[..20].parse().unwrap();
        let log_len = fs.open(&log, OpenMode::Read).unwrap().len().unwrap() as usize;
        // The fewest records of this partition that must survive (segments before the damaged
        // one are untouched), and the damage itself.
        let (kind, must_keep) = match case % 8 {
            0 => {
                let at = random(log_len);
                let keep = intact_before(&fs, &log, at);
                mutate(&fs, &log, |b| b[at] ^= 1 << random(8));
                ("flipped byte", keep.max(base))
            }
            1 => {
                let at = random(log_len) / 4096 * 4096;
                let keep = intact_before(&fs, &log, at);
                mutate(&fs, &log, |b| b[at..(at + 4096).min(log_len)].fill(0));
                ("zeroed page", keep.max(base))
            }
            2 => {
                let at = random(log_len);
                let keep = intact_before(&fs, &log, at);
                mutate(&fs, &log, |b| b.truncate(at));
                ("truncated log", keep.max(base))
            }
            3 => {
                let index = segment_path(log.parent().unwrap(), base, FileKind::Index);
                fs.remove(&index).unwrap();
                ("missing index", i64::MAX)
            }
            4 => {
                let index = segment_path(
                    log.parent().unwrap(),
                    base,
                    if random(2) == 0 { FileKind::Index } else { FileKind::TimeIndex },
                );
                let junk: Vec<u8> = (0..=random(300)).map(|_| random(256) as u8).collect();
                mutate(&fs, &index, |b| *b = junk);
                ("garbage index", i64::MAX)
            }
            5 => {
                let name = [
                    "recovery-point-offset-checkpoint",
                    "log-start-offset-checkpoint",
                    "replication-offset-checkpoint",
                ][random(3)];
                let text = if random(2) == 0 {
                    "0\n2\nd 0 999999\nd 1 999999\n".to_owned()
                } else {
                    "garbage\n\u{1}\n".to_owned()
                };
                crate::dirs::checkpoint::write_atomically(
                    &fs,
                    &Path::new(DIR).join(name),
                    text.as_bytes(),
                )
                .unwrap();
                // A log start past the end empties the log, as Kafka's loader does.
                (
                    "checkpoint past the end",
                    if name.starts_with("log-start") { 0 } else { i64::MAX },
                )
            }
            6 => {
                let mangled = log.with_file_name(format!(
                    "{}.lgo",
                    &log.file_name().unwrap().to_string_lossy()[..20]
                ));
                fs.rename(&log, &mangled).unwrap();
                fs.sync_dir(log.parent().unwrap()).unwrap();
                ("mangled file name", base)
            }
            _ => {
                let index = segment_path(log.parent().unwrap(), base, FileKind::Index);
                mutate(&fs, &index, |b| b.truncate(b.len().saturating_sub(3)));
                ("truncated index", i64::MAX)
            }
        };
        // Data damage is what an unclean shutdown finds. Every other case also loses the
        // recovery point, so recovery scans all of it; otherwise damage below the recovery point
        // is found by reads (a typed error) and by `verify`, as in Kafka.
        let full_recovery = case % 16 < 8;
        if case % 8 <= 2 {
            fs.remove(&Path::new(DIR).join(CLEAN_SHUTDOWN_FILE)).unwrap();
            if full_recovery {
                fs.remove(&Path::new(DIR).join("recovery-point-offset-checkpoint")).unwrap();
            }
        }
        let context = format!("case {case} ({kind}) in {}", log.display());
        let outcome = outcomes.entry(kind).or_default();
        let manager = match open(&fs) {
            Ok(manager) => manager,
            Err(error) => {
                // A typed error naming what is wrong is acceptable; a panic is not.
                assert!(!error.to_string().is_empty(), "{context}");
                outcome.1 += 1;
                continue;
            }
        };
        outcome.0 += 1;
        let outcome = outcomes.get_mut(kind).unwrap_or_else(|| unreachable!("inserted above"));
        for p in 0..2 {
            let original = &originals[&p];
            let mut kept = Vec::new();
            if let Err(error) = read_into(&manager, &tp(p), &mut kept) {
                // Only unscanned damage may fail a read, and only typed, after the intact prefix.
                assert!(
                    p == partition && !full_recovery && case % 8 <= 2,
                    "{context}: partition {p} does not read: {error}"
                );
                outcome.1 += 1;
            }
            // Every record kept is the one appended at its offset: nothing foreign, nothing altered.
            let by_offset: BTreeMap<i64, &Vec<u8>> =
                original.iter().map(|(o, v)| (*o, v)).collect();
            for (offset, value) in &kept {
                assert_eq!(
                    by_offset.get(offset).copied(),
                    Some(value),
                    "{context}: partition {p} offset {offset} was never appended"
                );
            }
            let start = manager.get_log(&tp(p)).unwrap().log_start_offset().unwrap();
            let kept_offsets: std::collections::BTreeSet<i64> =
                kept.iter().map(|(o, _)| *o).collect();
            // Everything before the damage is still there (from the log start on).
            let minimum = match must_keep {
                0 => start,
                i64::MAX => original.len() as i64,
                keep => keep,
            };
            let wanted_end = if p == partition {
                minimum
            } else if must_keep == 0 {
                start
            } else {
                original.len() as i64
            };
            let missing: Vec<i64> =
                (start..wanted_end).filter(|o| !kept_offsets.contains(o)).take(3).collect();
            assert!(
                missing.is_empty(),
                "{context}: partition {p} lost intact records, e.g. {missing:?}"
            );
        }
    }
    // Every kind of damage was exercised. (recovered opens, typed errors) per kind:
    println!("damage matrix: {outcomes:?}");
    assert_eq!(outcomes.len(), 8, "{outcomes:?}");
}
