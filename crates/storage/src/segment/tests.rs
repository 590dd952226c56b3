//! `LogSegmentTest`'s behaviours (spec §11.5), on the simulated file system.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{
    AbortedTxn, Compression, DecodeLimits, FileKind, RecordBatch, RecordBatchBuilder,
};

use super::*;
use crate::io::SimFs;

fn dir() -> PathBuf {
    PathBuf::from("/data/topic-0")
}

fn fs() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(&dir()).unwrap();
    fs
}

fn config(index_interval_bytes: u32) -> SegmentConfig {
    SegmentConfig { index_interval_bytes, index_bytes_max: 1000 * 8, ..SegmentConfig::default() }
}

fn segment(fs: &SimFs, base_offset: i64, index_interval_bytes: u32) -> LogSegment {
    LogSegment::create(Arc::new(fs.clone()), &dir(), base_offset, config(index_interval_bytes), 0)
        .unwrap()
}

/// A batch of records at `offsets` with timestamp `offset * 10` each.
fn batch_at(offsets: std::ops::RangeInclusive<i64>) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(*offsets.start());
    for offset in offsets {
        builder
            .append(offset, offset * 10, None, Some(format!("value-{offset}").as_bytes()), &[])
            .unwrap();
    }
    builder.build().unwrap()
}

/// Appends one batch as the log does: its last offset and max timestamp.
fn append(segment: &mut LogSegment, bytes: &[u8]) {
    let batch = RecordBatch::new(bytes).unwrap();
    segment.append(batch.last_offset(), batch.max_timestamp(), batch.last_offset(), bytes).unwrap();
}

fn offsets_in(bytes: &[u8]) -> Vec<i64> {
    seglog_format::Batches::new(bytes)
        .flat_map(|item| {
            let batch = item.unwrap().batch;
            let records = batch.records(DecodeLimits::default()).unwrap();
            records.iter().map(|r| r.unwrap().offset).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn append_offset_overflow_is_rejected() {
    for (base, largest) in [
        (0, -(1i64 << 31)),
        (0, 1i64 << 31),
        (1, 0),
        (100, 10),
        (1i64 << 31, 0),
        (1i64 << 31, 1i64 << 32),
    ] {
        let fs = fs();
        let mut seg = segment(&fs, base, 4096);
        let error = seg.append(largest, 10, largest, &batch_at(0..=0)).unwrap_err();
        assert!(matches!(error, Error::OffsetOverflow { .. }), "({base}, {largest}): {error}");
        assert_eq!(seg.size_bytes(), 0, "nothing written");
    }
    // A segment cannot start at a negative offset at all.
    let fs = fs();
    assert!(LogSegment::create(Arc::new(fs), &dir(), -(1i64 << 31), config(4096), 0).is_err());
}

#[test]
fn read_on_empty_segment_is_none() {
    let fs = fs();
    let seg = segment(&fs, 40, 4096);
    assert_eq!(seg.read(40, 300, Some(seg.size_bytes()), false).unwrap(), None);
}

#[test]
fn read_before_first_offset_returns_everything() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    let bytes = batch_at(50..=51);
    append(&mut seg, &bytes);
    let read = seg.read(41, 300, Some(seg.size_bytes()), false).unwrap().unwrap();
    assert_eq!(read.records, bytes);
    assert_eq!(offsets_in(&read.records), [50, 51]);
}

#[test]
fn read_after_last_is_none() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    append(&mut seg, &batch_at(50..=51));
    assert_eq!(seg.read(52, 200, Some(seg.size_bytes()), false).unwrap(), None);
}

#[test]
fn read_from_gap_returns_the_next_batch() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    append(&mut seg, &batch_at(50..=51));
    let second = batch_at(60..=61);
    append(&mut seg, &second);
    let read = seg.read(55, 200, Some(seg.size_bytes()), false).unwrap().unwrap();
    assert_eq!(read.records, second);
}

#[test]
fn read_without_max_position_returns_metadata_only() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    let first = batch_at(50..=50);
    append(&mut seg, &first);
    append(&mut seg, &batch_at(51..=51));
    let read = seg.read(48, 200, None, false).unwrap().unwrap();
    assert_eq!(
        read.metadata,
        LogOffsetMetadata { message_offset: 48, segment_base_offset: 40, relative_position: 0 }
    );
    assert!(read.records.is_empty());
    let read = seg.read(51, 200, None, false).unwrap().unwrap();
    assert_eq!(read.metadata.relative_position, first.len() as u32);
    assert!(read.records.is_empty());
    assert_eq!(seg.read(52, 200, None, false).unwrap(), None);
    assert_eq!(seg.read(53, 200, None, false).unwrap(), None);
}

#[test]
fn min_one_message_returns_a_whole_oversized_batch() {
    let fs = fs();
    let mut seg = segment(&fs, 0, 4096);
    let bytes = batch_at(0..=9);
    append(&mut seg, &bytes);
    let short = seg.read(0, 10, Some(seg.size_bytes()), false).unwrap().unwrap();
    assert_eq!(short.records.len(), 10);
    assert!(short.first_entry_incomplete);
    let whole = seg.read(0, 10, Some(seg.size_bytes()), true).unwrap().unwrap();
    assert_eq!(whole.records, bytes);
    assert!(!whole.first_entry_incomplete);
}

#[test]
fn repeated_append_two_truncate_one_keeps_the_first() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 1);
    let mut offset = 40;
    for _ in 0..30 {
        let first = batch_at(offset..=offset);
        append(&mut seg, &first);
        append(&mut seg, &batch_at(offset + 1..=offset + 1));
        seg.truncate_to(offset + 1, 0).unwrap();
        let read = seg.read(offset, 10_000, Some(seg.size_bytes()), false).unwrap().unwrap();
        assert_eq!(offsets_in(&read.records).last(), Some(&offset));
        offset += 1;
    }
    assert_eq!(seg.read_next_offset().unwrap(), offset);
}

#[test]
fn truncating_an_empty_reopened_segment_resizes_the_indexes() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    seg.close().unwrap();
    let (mut seg, _) = LogSegment::open(Arc::new(fs.clone()), &dir(), 40, config(4096), 0).unwrap();
    assert!(seg.offset_index().is_full(), "a closed, reopened index is trimmed");
    seg.truncate_to(40, 0).unwrap();
    assert!(!seg.offset_index().is_full());
    assert!(!seg.time_index().is_full());
    let params = RollParams {
        segment_ms_max: 10,
        segment_bytes_max: 1 << 20,
        max_timestamp_in_messages: 1_000_000,
        max_offset_in_messages: 40,
        messages_bytes: 100,
        now_ms: 1_000_000,
    };
    assert!(!seg.should_roll(&params), "time alone never rolls an empty segment");
    assert!(seg.should_roll(&RollParams { max_offset_in_messages: 40 + (1i64 << 31), ..params }));
}

#[test]
fn largest_timestamp_and_next_offset_reload_after_truncation() {
    let fs = fs();
    let size = batch_at(40..=40).len() as u32;
    let mut seg = segment(&fs, 40, size);
    for offset in 40..70 {
        append(&mut seg, &batch_at(offset..=offset));
    }
    assert_eq!(seg.time_index().n_entries(), 14);
    seg.truncate_to(41, 0).unwrap();
    assert_eq!(seg.time_index().n_entries(), 0);
    assert_eq!(seg.largest_record_timestamp(), Some(400));
    assert_eq!(seg.read_next_offset().unwrap(), 41);
}

#[test]
fn truncating_everything_resets_the_roll_timer() {
    let fs = fs();
    let mut seg = LogSegment::create(Arc::new(fs.clone()), &dir(), 40, config(4096), 0).unwrap();
    append(&mut seg, &batch_at(40..=42));
    let params = RollParams {
        segment_ms_max: 100,
        segment_bytes_max: 1 << 20,
        max_timestamp_in_messages: 10_000,
        max_offset_in_messages: 43,
        messages_bytes: 10,
        now_ms: 500,
    };
    assert!(seg.should_roll(&params), "record time says the segment is old");
    seg.truncate_to(0, 450).unwrap();
    assert_eq!(seg.size_bytes(), 0);
    assert_eq!(seg.first_batch_timestamp_or_max(), i64::MAX);
    assert!(!seg.should_roll(&params));
    append(&mut seg, &batch_at(40..=42));
    assert_eq!(seg.read_next_offset().unwrap(), 43);
}

#[test]
fn find_offset_by_timestamp_matches_kafka_examples() {
    let fs = fs();
    let interval = 2 * batch_at(40..=40).len() as u32 - 1;
    let mut seg = segment(&fs, 40, interval);
    for offset in 40..50 {
        append(&mut seg, &batch_at(offset..=offset));
    }
    let find = |ts| seg.find_offset_by_timestamp(ts, 0).unwrap().map(|found| found.offset);
    assert_eq!(find(420), Some(42));
    assert_eq!(find(421), Some(43));
    assert_eq!(find(430), Some(43));
    assert_eq!(find(431), Some(44));
    assert_eq!(find(491), None);
    assert_eq!(find(401), Some(41));
    assert_eq!(find(399), Some(40));
    assert_eq!(seg.find_offset_by_timestamp(0, 45).unwrap().map(|f| f.offset), Some(45));
}

#[test]
fn next_offset_calculation() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    assert_eq!(seg.read_next_offset().unwrap(), 40);
    append(&mut seg, &batch_at(50..=52));
    assert_eq!(seg.read_next_offset().unwrap(), 53);
}

fn write_garbage(fs: &SimFs, path: &Path, seed: u64) {
    let file = fs.open(path, OpenMode::ReadWrite).unwrap();
    let len = file.len().unwrap();
    let mut state = seed;
    let garbage: Vec<u8> = (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 56) as u8
        })
        .collect();
    file.write_all_at(&garbage, 0).unwrap();
}

#[test]
fn recovery_fixes_corrupt_indexes() {
    for kind in [FileKind::Index, FileKind::TimeIndex] {
        let fs = fs();
        let mut seg = segment(&fs, 0, 1);
        for offset in 0..100 {
            append(&mut seg, &batch_at(offset..=offset));
        }
        let before: Vec<_> = (0..100).map(|o| seg.translate_offset(o, 0).unwrap()).collect();
        let found_before = seg.find_offset_by_timestamp(555, 0).unwrap();
        seg.flush().unwrap();
        write_garbage(&fs, &segment_path(&dir(), 0, kind), 7);
        let (mut reopened, report) =
            LogSegment::open(Arc::new(fs.clone()), &dir(), 0, config(1), 0).unwrap();
        let report = report.expect("garbage fails the sanity check, so the segment is recovered");
        assert_eq!((report.n_batches, report.truncated_bytes), (100, 0));
        let after: Vec<_> = (0..100).map(|o| reopened.translate_offset(o, 0).unwrap()).collect();
        assert_eq!(after, before, "{kind:?}");
        assert_eq!(reopened.find_offset_by_timestamp(555, 0).unwrap(), found_before);
        reopened.offset_index().sanity_check().unwrap();
        reopened.time_index().sanity_check().unwrap();
        // And an explicit recover on garbage indexes repairs them too.
        reopened.flush().unwrap();
        write_garbage(&fs, &segment_path(&dir(), 0, kind), 9);
        assert_eq!(reopened.recover().unwrap().n_batches, 100);
    }
}

#[test]
fn recovery_with_a_corrupt_batch_keeps_the_batches_before_it() {
    for corrupt_idx in [0usize, 1, 17, 49] {
        let fs = fs();
        let mut seg = segment(&fs, 0, 100);
        let mut positions = Vec::new();
        for offset in 0..50 {
            positions.push(seg.size_bytes());
            append(&mut seg, &batch_at(offset..=offset));
        }
        seg.flush().unwrap();
        let file = fs.open(&segment_path(&dir(), 0, FileKind::Log), OpenMode::ReadWrite).unwrap();
        let at = u64::from(positions[corrupt_idx]) + 40;
        file.write_all_at(&[0xAB, 0xCD, 0xEF], at).unwrap();
        let report = seg.recover().unwrap();
        assert_eq!(report.n_batches, corrupt_idx);
        assert_eq!(report.valid_bytes, positions[corrupt_idx]);
        assert_eq!(report.stopped_at.as_ref().map(|s| s.0), Some(positions[corrupt_idx]));
        assert_eq!(seg.read_next_offset().unwrap(), corrupt_idx as i64);
        assert_eq!(file.len().unwrap(), u64::from(positions[corrupt_idx]));
    }
}

#[test]
fn a_zero_filled_preallocated_tail_is_truncated_by_recovery() {
    let fs = fs();
    let mut seg = segment(&fs, 0, 4096);
    let bytes = batch_at(0..=4);
    append(&mut seg, &bytes);
    seg.flush().unwrap();
    let file = fs.open(&segment_path(&dir(), 0, FileKind::Log), OpenMode::ReadWrite).unwrap();
    file.set_len(64 * 1024).unwrap();
    fs.remove(&segment_path(&dir(), 0, FileKind::Index)).unwrap();
    let (reopened, report) =
        LogSegment::open(Arc::new(fs.clone()), &dir(), 0, config(4096), 0).unwrap();
    let report = report.expect("a missing index triggers recovery");
    assert_eq!(report.valid_bytes as usize, bytes.len());
    assert_eq!(report.truncated_bytes, 64 * 1024 - bytes.len() as u64);
    assert_eq!(reopened.size_bytes() as usize, bytes.len());
    assert_eq!(reopened.read_next_offset().unwrap(), 5);
}

#[test]
fn truncate_even_if_offset_points_to_a_gap() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    let first = batch_at(40..=40);
    append(&mut seg, &first);
    append(&mut seg, &batch_at(43..=43));
    seg.truncate_to(41, 0).unwrap();
    assert_eq!(seg.size_bytes() as usize, first.len());
    assert_eq!(seg.read_next_offset().unwrap(), 41);
}

#[test]
fn first_batch_timestamp() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    assert_eq!(seg.first_batch_timestamp_or_max(), i64::MAX);
    append(&mut seg, &batch_at(40..=41));
    assert_eq!(seg.first_batch_timestamp_or_max(), 410);
}

#[test]
fn close_trims_and_reopen_sees_the_same_segment() {
    let fs = fs();
    let mut seg = segment(&fs, 0, 100);
    for offset in 0..20 {
        append(&mut seg, &batch_at(offset..=offset));
    }
    let size = seg.size_bytes();
    let entries = seg.offset_index().n_entries();
    seg.close().unwrap();
    let index_len =
        fs.open(&segment_path(&dir(), 0, FileKind::Index), OpenMode::Read).unwrap().len().unwrap();
    assert_eq!(index_len, entries as u64 * 8, "the index file is trimmed to its entries");
    let (reopened, report) =
        LogSegment::open(Arc::new(fs.clone()), &dir(), 0, config(100), 0).unwrap();
    assert!(report.is_none(), "a clean segment needs no recovery");
    assert_eq!(reopened.size_bytes(), size);
    assert_eq!(reopened.offset_index().n_entries(), entries);
    assert_eq!(reopened.largest_record_timestamp(), Some(190));
}

#[test]
fn delete_tolerates_a_missing_txn_index() {
    let fs = fs();
    let seg = segment(&fs, 0, 4096);
    seg.delete().unwrap();
    for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
        assert!(!fs.exists(&segment_path(&dir(), 0, kind)).unwrap());
    }
}

#[test]
fn index_entries_point_at_the_append_start_with_its_last_offset() {
    let fs = fs();
    let mut seg = segment(&fs, 0, 0);
    let mut positions = Vec::new();
    for offset in (0..30).step_by(3) {
        positions.push(seg.size_bytes());
        append(&mut seg, &batch_at(offset..=offset + 2));
    }
    // Interval 0: every append but the first gets an entry naming its last offset.
    let entries: Vec<_> =
        (0..seg.offset_index().n_entries()).map(|i| seg.offset_index().entry(i).unwrap()).collect();
    assert_eq!(entries.len(), 9);
    for (entry_idx, entry) in entries.iter().enumerate() {
        assert_eq!(entry.offset, (entry_idx as i64 + 1) * 3 + 2);
        assert_eq!(entry.position, positions[entry_idx + 1]);
    }
}

/// `testChangeFileSuffixes`: every file is renamed; handles keep working.
#[test]
fn change_file_suffixes_renames_every_file() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    append(&mut seg, &batch_at(40..=41));
    seg.append_aborted_txn(AbortedTxn {
        producer_id: 1,
        first_offset: 40,
        last_offset: 41,
        last_stable_offset: 40,
    })
    .unwrap();
    seg.change_file_suffixes("", ".deleted").unwrap();
    assert!(seg.has_suffix(".deleted"));
    for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex] {
        let live = segment_path(&dir(), 40, kind);
        assert!(!fs.exists(&live).unwrap(), "{kind:?}");
        assert!(
            fs.exists(&PathBuf::from(format!("{}.deleted", live.display()))).unwrap(),
            "{kind:?}"
        );
    }
    assert_eq!(seg.read_next_offset().unwrap(), 42, "the handle follows the rename");
    seg.change_file_suffixes(".deleted", "").unwrap();
    assert!(fs.exists(&segment_path(&dir(), 40, FileKind::Log)).unwrap());
    assert!(seg.change_file_suffixes(".swap", "").is_err());
}

/// `testAppendFromFile`: copying stops at the first batch that overflows the segment, and the
/// remainder fits a segment based at `i32::MAX`.
#[test]
fn append_from_file_stops_at_offset_overflow() {
    let fs = fs();
    let source_path = dir().join("source.log");
    let source = fs.open(&source_path, OpenMode::CreateNew).unwrap();
    let mut bytes = Vec::new();
    for offset in [0, 1, 2] {
        bytes.extend_from_slice(&batch_at(offset..=offset));
    }
    let first_part = bytes.len();
    // Relative offset i32::MAX still fits a segment based at 0; one more does not.
    let high = i64::from(i32::MAX);
    for offset in [high + 1, high + 2] {
        let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(offset);
        builder.append(offset, 5, None, Some(b"x"), &[]).unwrap();
        bytes.extend_from_slice(&builder.build().unwrap());
    }
    source.write_all_at(&bytes, 0).unwrap();
    let end = bytes.len() as u32;
    let mut low = segment(&fs, 0, 4096);
    let copied = low.append_from_file(source.as_ref(), &source_path, 0, end).unwrap();
    assert_eq!(copied as usize, first_part);
    assert_eq!(low.read_next_offset().unwrap(), 3);
    let mut upper = segment(&fs, high, 4096);
    let copied_high = upper.append_from_file(source.as_ref(), &source_path, copied, end).unwrap();
    assert_eq!((copied + copied_high) as usize, bytes.len());
    assert_eq!(upper.read_next_offset().unwrap(), high + 3);
}

/// `testCreateWithInitFileSizeAppendMessage` / `...ClearShutdown`: a preallocated `.log`
/// works, close trims it, and a reopen sees the same size.
#[test]
fn preallocated_segment_is_trimmed_on_close() {
    let fs = fs();
    let config = SegmentConfig { preallocate_bytes: 512 * 1024, ..config(4096) };
    let mut seg = LogSegment::create(Arc::new(fs.clone()), &dir(), 40, config, 0).unwrap();
    let log = fs.open(&segment_path(&dir(), 40, FileKind::Log), OpenMode::Read).unwrap();
    assert_eq!(log.len().unwrap(), 512 * 1024);
    append(&mut seg, &batch_at(40..=41));
    append(&mut seg, &batch_at(42..=43));
    let size = seg.size_bytes();
    let read = seg.read(40, 10_000, Some(size), false).unwrap().unwrap();
    assert_eq!(offsets_in(&read.records), [40, 41, 42, 43]);
    seg.close().unwrap();
    assert_eq!(log.len().unwrap(), u64::from(size));
    let (reopened, report) = LogSegment::open(Arc::new(fs.clone()), &dir(), 40, config, 0).unwrap();
    assert!(report.is_none());
    assert_eq!(reopened.size_bytes(), size);
    assert_eq!(reopened.read_next_offset().unwrap(), 44);
}

/// `testRecoveryRebuildsEpochCache`: recovery reports where each new leader epoch began.
#[test]
fn recovery_reports_leader_epochs() {
    let fs = fs();
    let mut seg = segment(&fs, 100, 4096);
    for (offset, epoch) in [(104, 0), (105, 0), (106, 1), (107, 1), (108, 1), (110, 2), (111, 2)] {
        let mut builder = RecordBatchBuilder::new(Compression::None)
            .base_offset(offset)
            .partition_leader_epoch(epoch);
        builder.append(offset, offset * 10, None, Some(b"v"), &[]).unwrap();
        append(&mut seg, &builder.build().unwrap());
    }
    let report = seg.recover().unwrap();
    assert_eq!(report.leader_epochs, vec![(0, 104), (1, 106), (2, 110)]);
    assert_eq!(report.next_offset, 112);
}

/// Truncation removes aborted transactions whose marker is cut off.
#[test]
fn truncation_truncates_the_txn_index() {
    let fs = fs();
    let mut seg = segment(&fs, 40, 4096);
    for offset in 40..50 {
        append(&mut seg, &batch_at(offset..=offset));
    }
    for (first, last) in [(40, 42), (43, 45), (46, 48)] {
        seg.append_aborted_txn(AbortedTxn {
            producer_id: 7,
            first_offset: first,
            last_offset: last,
            last_stable_offset: first,
        })
        .unwrap();
    }
    seg.truncate_to(45, 0).unwrap();
    assert_eq!(seg.txn_index().all_aborted_txns().len(), 1);
    assert_eq!(seg.collect_aborted_txns(40, 50).aborted.len(), 1);
}

/// The recent-batches cache answers exactly as the index and a scan do: every offset of a
/// segment looked up through it matches a reopened segment (which has none), before and after a
/// truncation, across more batches than it keeps, and with a multi-batch append in between.
#[test]
fn lookups_through_the_recent_batches_match_the_index_and_scan() {
    let fs = fs();
    let mut segment = segment(&fs, 0, 64);
    let mut next = 0;
    let append_batches = |segment: &mut LogSegment, n: usize, next: &mut i64| {
        for idx in 0..n {
            let count = 1 + (idx % 4) as i64;
            append(segment, &batch_at(*next..=*next + count - 1));
            *next += count;
        }
    };
    let check = |segment: &LogSegment, end: i64, context: &str| {
        let reopened = LogSegment::open(Arc::new(fs.clone()), &dir(), 0, config(64), 0).unwrap().0;
        // From the start, and from a batch boundary in the middle (as a read from a position).
        let middle = reopened.translate_offset(end / 2, 0).unwrap().map_or(0, |m| m.position);
        for offset in 0..=end + 1 {
            for starting_position in [0, middle] {
                assert_eq!(
                    segment.translate_offset(offset, starting_position).unwrap(),
                    reopened.translate_offset(offset, starting_position).unwrap(),
                    "{context}: offset {offset} from position {starting_position}"
                );
            }
        }
    };
    append_batches(&mut segment, 10, &mut next);
    check(&segment, next, "ten batches");
    append_batches(&mut segment, 3 * recent::RECENT_BATCHES_MAX, &mut next);
    check(&segment, next, "more batches than the cache keeps");
    // Two batches in one append: the cache forgets, and starts again after it.
    let two = [batch_at(next..=next + 1), batch_at(next + 2..=next + 2)].concat();
    segment.append(next + 2, (next + 2) * 10, next + 2, &two).unwrap();
    next += 3;
    append_batches(&mut segment, 5, &mut next);
    check(&segment, next, "after a two-batch append");
    segment.truncate_to(next / 2, 0).unwrap();
    let end = segment.read_next_offset().unwrap();
    check(&segment, end, "after a truncation");
    let mut next = end;
    append_batches(&mut segment, 7, &mut next);
    check(&segment, next, "appends after the truncation");
}
