//! Inputs the storage fuzz targets in `fuzz/` (`recover_segment`, `index_load`, `checkpoints`)
//! found to panic, reduced to the files they put on disk and kept byte for byte so they never
//! panic again. Each test names the target that found it.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::FileKind;
use seglog_storage::Error;
use seglog_storage::index::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};
use seglog_storage::io::{Fs, OpenMode, SimFs};
use seglog_storage::log::load::{LoadParams, load};
use seglog_storage::log::local_log::LocalLogConfig;
use seglog_storage::segment::{LogSegment, SegmentConfig, segment_path};
use seglog_storage::testing::sim_with_dir;

const DIR: &str = "/d/t-0";
/// The largest base offset the fuzz targets try.
const HUGE_BASE: i64 = i64::MAX - 100;

fn write(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let file = fs.open(path, OpenMode::CreateNew).unwrap();
    file.write_all_at(bytes, 0).unwrap();
}

fn path(name: &str) -> PathBuf {
    Path::new(DIR).join(name)
}

fn config() -> SegmentConfig {
    SegmentConfig { index_bytes_max: 4096, ..SegmentConfig::default() }
}

/// recover_segment: an empty `.log` whose `.index` holds one entry at position 0x6500 (a `.log`
/// whose tail was lost while its index entry survived). The index passes its sanity check, so the
/// segment opens without recovery, and scans from the entry's position started past the end of
/// the `.log`: `HeaderScan` computed `end - position` and overflowed in `read_next_offset` and
/// `find_offset_by_timestamp`. A scan that starts past the end now finds nothing, as Kafka's.
#[test]
fn index_entry_past_the_end_of_a_torn_log() {
    let fs = sim_with_dir(DIR);
    let dir = Path::new(DIR);
    write(&fs, &segment_path(dir, 0, FileKind::Log), &[]);
    write(&fs, &segment_path(dir, 0, FileKind::Index), &[0, 0, 0x65, 0, 0, 0, 0x65, 0]);
    write(&fs, &segment_path(dir, 0, FileKind::TimeIndex), &[]);
    let (mut segment, report) =
        LogSegment::open(Arc::new(fs.clone()), dir, 0, config(), 0).unwrap();
    assert_eq!(report, None, "the index looks sane, so nothing is recovered");
    assert_eq!(segment.read_next_offset().unwrap(), 0);
    assert_eq!(segment.find_offset_by_timestamp(0, 0).unwrap(), None);
    assert_eq!(segment.translate_offset(0x6500, 0).unwrap(), None);
    segment.truncate_to(0x10, 0).unwrap();
    assert_eq!(segment.recover().unwrap().valid_bytes, 0);
}

/// index_load: appending an offset far below a base offset near `i64::MAX` computed
/// `offset - base_offset` and overflowed, in both `OffsetIndex::append` and
/// `TimeIndex::maybe_append`. It is the documented out-of-range error now.
#[test]
fn append_far_below_a_huge_base_offset() {
    let fs = sim_with_dir(DIR);
    let offset = i64::from_be_bytes([0xc2, 0xc2, 0xc2, 0xc2, 0xc2, 0x00, 0xc2, 0xc2]);
    let mut index = OffsetIndex::create(&fs, &path("a.index"), HUGE_BASE, 0x6e05).unwrap();
    assert!(matches!(index.append(offset, 0), Err(Error::InvalidArgument(_))));
    assert_eq!(index.n_entries(), 0);
    let mut time = TimeIndex::create(&fs, &path("a.timeindex"), HUGE_BASE, 0x6e05).unwrap();
    assert!(matches!(time.maybe_append(1, offset, false), Err(Error::InvalidArgument(_))));
    assert_eq!(time.n_entries(), 0);
    // And above: a relative offset past 31 bits.
    assert!(matches!(index.append(i64::MIN + 5, 0), Err(Error::InvalidArgument(_))));
    let mut low = OffsetIndex::create(&fs, &path("b.index"), 10, 4096).unwrap();
    assert!(matches!(low.append(i64::MIN, 0), Err(Error::InvalidArgument(_))));
}

/// index_load: an entry whose relative offset (0xc0000) added to a base offset near `i64::MAX`
/// overflows. Opening loaded it, and every lookup overflowed turning it into an absolute offset.
/// Such an entry now ends the valid prefix (and fails the sanity check, so a segment rebuilds
/// the index).
#[test]
fn index_entry_beyond_i64_max() {
    let fs = sim_with_dir(DIR);
    write(&fs, &path("a.index"), &[0x00, 0x0c, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x0c]);
    let index = OffsetIndex::open(&fs, &path("a.index"), HUGE_BASE, 0x200).unwrap();
    assert_eq!(index.last_offset(), HUGE_BASE);
    assert_eq!(index.lookup(i64::MAX).unwrap(), OffsetPosition { offset: HUGE_BASE, position: 0 });
    assert_eq!(index.n_entries(), 0);
    assert!(index.sanity_check().is_err());

    let mut entry = 5i64.to_be_bytes().to_vec();
    entry.extend_from_slice(&0xc0000u32.to_be_bytes());
    write(&fs, &path("a.timeindex"), &entry);
    let time = TimeIndex::open(&fs, &path("a.timeindex"), HUGE_BASE, 0x200).unwrap();
    assert_eq!(time.last_entry(), TimestampOffset { timestamp: -1, offset: HUGE_BASE });
    assert_eq!(
        time.lookup(i64::MAX).unwrap(),
        TimestampOffset { timestamp: -1, offset: HUGE_BASE }
    );
    assert_eq!(time.n_entries(), 0);
    assert!(time.sanity_check().is_err());
}

/// The offset field of a `.log` entry set to `i64::MAX` (the fuzz target's "offsets near the
/// top" flag does this; offsets are not covered by the CRC).
const OFFSET_I64_MAX: [u8; 8] = [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];

/// `OFFSET_I64_MAX` followed by `rest`.
fn entry_at_i64_max(rest: &[u8]) -> Vec<u8> {
    let mut entry = OFFSET_I64_MAX.to_vec();
    entry.extend_from_slice(rest);
    entry
}

/// recover_segment: a `.swap` segment (base offset `i64::MAX - 100`) holding a v0 entry at offset
/// `i64::MAX`. To find the offsets a completed swap replaces, the loader computed the offset
/// after its last entry and overflowed. It is a corrupt-log error now.
#[test]
fn swap_segment_ending_at_i64_max() {
    let fs = sim_with_dir(DIR);
    let entry = entry_at_i64_max(&[
        0x00, 0x00, 0x00, 0x16, 0x6e, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01,
        0x01, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0x01,
    ]);
    write(&fs, &path("09223372036854775707.log.swap"), &entry);
    let params = LoadParams {
        had_clean_shutdown: false,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: 0,
        now_ms: 0,
    };
    let loaded = load(Arc::new(fs.clone()), Path::new(DIR), LocalLogConfig::default(), params);
    assert!(matches!(loaded, Err(Error::CorruptLog { position: 0, .. })), "{loaded:?}");
}

/// recover_segment: a segment whose indexes look sane (empty) opens without recovery; its `.log`
/// holds an entry at offset `i64::MAX` (and a torn tail). `read_next_offset`, which the loader
/// calls for the log end offset after a clean shutdown, overflowed computing the offset after
/// it. It is a corrupt-log error now, and recovery cuts the entry (its CRC is wrong).
#[test]
fn read_next_offset_after_an_entry_at_i64_max() {
    let fs = sim_with_dir(DIR);
    let dir = Path::new(DIR);
    let log = entry_at_i64_max(&[
        0x00, 0x00, 0x00, 0x0f, 0xfc, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x2e,
        0x2a, 0x6e, 0x64, 0x65, 0x78, 0x00, 0x00, 0x00, 0x00,
    ]);
    write(&fs, &segment_path(dir, 0, FileKind::Log), &log);
    write(&fs, &segment_path(dir, 0, FileKind::Index), &[]);
    write(&fs, &segment_path(dir, 0, FileKind::TimeIndex), &[]);
    let config = SegmentConfig { index_interval_bytes: 64, ..config() };
    let (mut segment, report) = LogSegment::open(Arc::new(fs.clone()), dir, 0, config, 0).unwrap();
    assert_eq!(report, None);
    let next = segment.read_next_offset();
    assert!(matches!(next, Err(Error::CorruptLog { position: 0, .. })), "{next:?}");
    assert_eq!(segment.recover().unwrap().valid_bytes, 0);
    assert_eq!(segment.read_next_offset().unwrap(), 0);
}

/// recover_segment: a valid v0 message (kafka-python's, CRC intact) moved to offset `i64::MAX`
/// in a segment based at `i64::MAX - 100`, without indexes, so opening recovers it. It fits the
/// segment's 31-bit range, and recovery overflowed computing the next offset. A batch that ends
/// at `i64::MAX` now ends the valid prefix, like any other impossible offset.
#[test]
fn recovery_of_a_batch_ending_at_i64_max() {
    let fs = sim_with_dir(DIR);
    let dir = Path::new(DIR);
    let mut message =
        vec![0x00, 0x00, 0x00, 0x42, 0x5f, 0xfb, 0x3a, 0xea, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08];
    message.extend_from_slice(b"l0-key-0");
    message.extend_from_slice(&[0x00, 0x00, 0x00, 0x2c]);
    message.extend_from_slice(b"l0-value-0 l0-value-0 l0-value-0 l0-value-0 ");
    let log = entry_at_i64_max(&message);
    assert_eq!(log.len(), 78);
    write(&fs, &segment_path(dir, HUGE_BASE, FileKind::Log), &log);
    let config = SegmentConfig { index_interval_bytes: 64, ..config() };
    let (segment, report) =
        LogSegment::open(Arc::new(fs.clone()), dir, HUGE_BASE, config, 0).unwrap();
    let report = report.expect("missing indexes are rebuilt");
    assert_eq!((report.valid_bytes, report.n_batches, report.next_offset), (0, 0, HUGE_BASE));
    assert_eq!(report.stopped_at.map(|(position, _)| position), Some(0));
    assert_eq!(segment.size_bytes(), 0);
}
