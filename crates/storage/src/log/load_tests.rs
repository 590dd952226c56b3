//! `LogLoaderTest`'s behaviours (spec §11.9) on the simulated file system.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Compression, FileKind, RecordBatch, RecordBatchBuilder};

use super::load::{LoadParams, load};
use super::local_log::{LocalLog, LocalLogConfig};
use crate::io::{Fs, OpenMode, SimFs};
use crate::segment::{SegmentConfig, segment_path};

fn dir() -> PathBuf {
    PathBuf::from("/logs/t-0")
}

fn config() -> LocalLogConfig {
    LocalLogConfig {
        segment: SegmentConfig {
            index_interval_bytes: 100,
            index_bytes_max: 4096,
            ..SegmentConfig::default()
        },
        file_delete_delay_ms: 1000,
        segment_jitter_bound_ms: 0,
    }
}

fn fresh(fs: &SimFs) -> LocalLog {
    fs.create_dir_all(&dir()).unwrap();
    for ancestor in dir().ancestors() {
        fs.sync_dir(ancestor).unwrap();
    }
    LocalLog::create(Arc::new(fs.clone()), &dir(), config(), 0, 0).unwrap()
}

/// Appends `n` single-record batches with timestamp `offset * 10`, rolling every `per_segment`.
fn fill(log: &mut LocalLog, n: i64, per_segment: i64) {
    for _ in 0..n {
        let offset = log.log_end_offset();
        if offset > 0 && offset % per_segment == 0 {
            log.roll(None, 0).unwrap();
        }
        let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(offset);
        builder
            .append(offset, offset * 10, Some(b"k"), Some(format!("v{offset}").as_bytes()), &[])
            .unwrap();
        let bytes = builder.build().unwrap();
        let batch = RecordBatch::new(&bytes).unwrap();
        log.append(batch.last_offset(), batch.max_timestamp(), batch.last_offset(), &bytes)
            .unwrap();
    }
}

fn params(clean: bool, recovery_point: i64) -> LoadParams {
    LoadParams {
        had_clean_shutdown: clean,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: recovery_point,
        now_ms: 0,
    }
}

fn reload(fs: &SimFs, params: LoadParams) -> super::load::LoadedLog {
    load(Arc::new(fs.clone()), &dir(), config(), params).unwrap()
}

fn offsets(log: &LocalLog) -> Vec<i64> {
    let mut out = Vec::new();
    let mut next = log.segments().first_segment().unwrap().base_offset();
    while next < log.log_end_offset() {
        let fetch = log.read(next, u32::MAX, true, log.next_offset_metadata()).unwrap();
        if fetch.records.is_empty() {
            break;
        }
        for item in seglog_format::Batches::new(&fetch.records) {
            let batch = item.unwrap().batch;
            out.push(batch.last_offset());
            next = batch.next_offset();
        }
    }
    out
}

/// `testLogRecoveryIsCalledUponBrokerCrash` / `testLogRecoversToCorrectOffset`: an unclean
/// shutdown recovers only from the recovery point; offsets and time indexes come back the same.
#[test]
fn unclean_shutdown_recovers_from_the_recovery_point_only() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 50, 10);
    log.flush(30, 0).unwrap();
    let last_time_entry = log.active_segment().time_index().last_entry();
    log.flush(log.log_end_offset(), 0).unwrap();
    drop(log);
    let loaded = reload(&fs, params(false, 30));
    assert_eq!(loaded.report.segments_recovered, 2, "segments 30 and 40 only");
    assert_eq!(loaded.local.log_end_offset(), 50);
    assert_eq!(loaded.local.recovery_point(), 30, "the recovery point stays until the next flush");
    assert_eq!(offsets(&loaded.local), (0..50).collect::<Vec<_>>());
    assert_eq!(loaded.local.active_segment().max_timestamp_so_far().timestamp, 490);
    assert!(last_time_entry.timestamp <= 490);
}

/// `testCleanShutdownFile`: with the marker nothing is scanned, even at recovery point 0.
#[test]
fn clean_shutdown_skips_recovery() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 30, 10);
    log.close().unwrap();
    drop(log);
    let loaded = reload(&fs, params(true, 0));
    assert_eq!(loaded.report.segments_recovered, 0);
    assert_eq!((loaded.local.log_end_offset(), loaded.local.recovery_point()), (30, 30));
}

/// `testIndexRebuild` and `testCorruptIndexRebuild`: missing or garbage indexes are rebuilt, and
/// reads and timestamp lookups work afterwards.
#[test]
fn missing_and_corrupt_indexes_are_rebuilt() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 30, 10);
    log.close().unwrap();
    drop(log);
    fs.remove(&segment_path(&dir(), 0, FileKind::Index)).unwrap();
    fs.remove(&segment_path(&dir(), 10, FileKind::TimeIndex)).unwrap();
    let corrupt = fs.open(&segment_path(&dir(), 20, FileKind::Index), OpenMode::ReadWrite).unwrap();
    corrupt.set_len(2).unwrap();
    let loaded = reload(&fs, params(true, 30));
    assert_eq!(loaded.report.segments_recovered, 3);
    assert_eq!(offsets(&loaded.local), (0..30).collect::<Vec<_>>());
    let segment = loaded.local.segments().get(10).unwrap();
    assert_eq!(segment.find_offset_by_timestamp(155, 0).unwrap().map(|f| f.offset), Some(16));
    assert!(segment.time_index().n_entries() > 0);
}

/// `testBogusIndexSegmentsAreRemoved` and `testOpenDeletesObsoleteFiles`.
#[test]
fn orphan_indexes_and_deleted_files_are_removed() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 10, 100);
    log.close().unwrap();
    drop(log);
    let orphan = segment_path(&dir(), 77, FileKind::Index);
    fs.open(&orphan, OpenMode::CreateNew).unwrap().write_all_at(&[0; 8], 0).unwrap();
    let leftover = PathBuf::from("/logs/t-0/00000000000000000005.log.deleted");
    fs.open(&leftover, OpenMode::CreateNew).unwrap();
    let loaded = reload(&fs, params(true, 10));
    assert_eq!(loaded.report.files_cleaned, 2);
    assert!(!fs.exists(&orphan).unwrap() && !fs.exists(&leftover).unwrap());
    assert_eq!(loaded.local.log_end_offset(), 10);
}

/// `testCorruptLog`: garbage after the last valid batch of the active segment is truncated
/// away; every valid record survives.
#[test]
fn garbage_at_the_end_of_the_active_segment_is_truncated() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 25, 10);
    log.flush(25, 0).unwrap();
    drop(log);
    let active = fs.open(&segment_path(&dir(), 20, FileKind::Log), OpenMode::ReadWrite).unwrap();
    let len = active.len().unwrap();
    active.write_all_at(&[0xA5; 300], len).unwrap();
    let loaded = reload(&fs, params(false, 20));
    assert_eq!(loaded.report.bytes_truncated, 300);
    assert_eq!(offsets(&loaded.local), (0..25).collect::<Vec<_>>());
}

/// A torn segment in the middle: everything after it is deleted, the prefix kept.
#[test]
fn segments_after_a_torn_one_are_deleted() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 30, 10);
    log.close().unwrap();
    drop(log);
    let middle = fs.open(&segment_path(&dir(), 10, FileKind::Log), OpenMode::ReadWrite).unwrap();
    let len = middle.len().unwrap();
    middle.write_all_at(&[0xFF; 4], len / 2).unwrap();
    let loaded = reload(&fs, params(false, 0));
    assert_eq!(loaded.report.segments_deleted, 1);
    let kept = offsets(&loaded.local);
    assert!(kept.len() >= 10 && kept.len() < 20, "{kept:?}");
    assert_eq!(kept, (0..kept.len() as i64).collect::<Vec<_>>());
}

/// `testLogEndLessThanStartAfterReopen`: everything is deleted and one empty segment starts at
/// the checkpointed log start offset.
#[test]
fn log_end_below_log_start_starts_over() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 10, 100);
    log.close().unwrap();
    drop(log);
    let loaded = reload(&fs, LoadParams { log_start_offset_checkpoint: 100, ..params(true, 10) });
    assert_eq!(loaded.local.segments().base_offsets(), [100]);
    assert_eq!((loaded.local.log_end_offset(), loaded.log_start_offset), (100, 100));
    assert!(fs.exists(&segment_path(&dir(), 100, FileKind::Index)).unwrap());
}

/// `testRecoverWithEmptyActiveSegment`: an empty active segment without index files loads.
#[test]
fn empty_active_segment_without_indexes_loads() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 10, 100);
    log.roll(None, 0).unwrap();
    log.flush(10, 0).unwrap();
    drop(log);
    fs.remove(&segment_path(&dir(), 10, FileKind::Index)).unwrap();
    fs.remove(&segment_path(&dir(), 10, FileKind::TimeIndex)).unwrap();
    let mut loaded = reload(&fs, params(false, 10));
    assert_eq!(loaded.local.segments().base_offsets(), [0, 10]);
    fill(&mut loaded.local, 1, 100);
    assert_eq!(loaded.local.log_end_offset(), 11);
}

/// The swap protocol (spec §7.12): `.cleaned` files always go; a `.swap` below every `.cleaned`
/// replaces the old segment it covers; one at or above a `.cleaned` is an incomplete split.
#[test]
fn swap_files_complete_or_roll_back() {
    let fs = SimFs::new();
    let mut log = fresh(&fs);
    fill(&mut log, 20, 10);
    log.close().unwrap();
    drop(log);
    let copy = |from: &Path, to: &Path| {
        let bytes = crate::io::read_all(fs.open(from, OpenMode::Read).unwrap().as_ref()).unwrap();
        fs.open(to, OpenMode::CreateNew).unwrap().write_all_at(&bytes, 0).unwrap();
    };
    // A completed swap of segment 0 (same content) plus a stray .cleaned at 10.
    let first_log = segment_path(&dir(), 0, FileKind::Log);
    copy(&first_log, &PathBuf::from(format!("{}.swap", first_log.display())));
    let second_log = segment_path(&dir(), 10, FileKind::Log);
    copy(&second_log, &PathBuf::from(format!("{}.cleaned", second_log.display())));
    let loaded = reload(&fs, params(true, 20));
    assert_eq!(offsets(&loaded.local), (0..20).collect::<Vec<_>>());
    assert!(!fs.exists(&PathBuf::from(format!("{}.swap", first_log.display()))).unwrap());
    assert!(!fs.exists(&PathBuf::from(format!("{}.cleaned", second_log.display()))).unwrap());
    drop(loaded);
    // A swap at or above a .cleaned offset is dropped: the old segment stays.
    copy(&second_log, &PathBuf::from(format!("{}.swap", second_log.display())));
    let first_cleaned = PathBuf::from(format!("{}.cleaned", first_log.display()));
    copy(&first_log, &first_cleaned);
    let loaded = reload(&fs, params(true, 20));
    assert_eq!(offsets(&loaded.local), (0..20).collect::<Vec<_>>());
    assert!(!fs.exists(&PathBuf::from(format!("{}.swap", second_log.display()))).unwrap());
}

/// Crash after every step: reload always yields a prefix of what was appended, with every
/// flushed record present.
#[test]
fn crash_at_random_points_keeps_every_flushed_record() {
    for seed in 0..200u64 {
        let fs = SimFs::new();
        let mut log = fresh(&fs);
        fill(&mut log, 5 + (seed as i64 % 7), 4);
        let flushed = log.log_end_offset();
        log.flush(flushed, 0).unwrap();
        fill(&mut log, 1 + (seed as i64 % 5), 4);
        drop(log);
        fs.crash(seed);
        let loaded = reload(&fs, params(false, flushed));
        let kept = offsets(&loaded.local);
        assert!(kept.len() as i64 >= flushed, "seed {seed}: lost flushed records: {kept:?}");
        assert_eq!(kept, (0..kept.len() as i64).collect::<Vec<_>>(), "seed {seed}");
    }
}
