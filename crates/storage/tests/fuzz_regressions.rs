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
use seglog_storage::segment::{LogSegment, SegmentConfig, segment_path};

const DIR: &str = "/d/t-0";
/// The largest base offset the fuzz targets try.
const HUGE_BASE: i64 = i64::MAX - 100;

fn sim_with_dir() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    fs
}

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
    let fs = sim_with_dir();
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
    let fs = sim_with_dir();
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
    let fs = sim_with_dir();
    write(&fs, &path("a.index"), &[0x00, 0x0c, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x0c]);
    let index = OffsetIndex::open(&fs, &path("a.index"), HUGE_BASE, 0x200).unwrap();
    assert_eq!(index.last_offset(), HUGE_BASE);
    assert_eq!(index.lookup(i64::MAX), OffsetPosition { offset: HUGE_BASE, position: 0 });
    assert_eq!(index.n_entries(), 0);
    assert!(index.sanity_check().is_err());

    let mut entry = 5i64.to_be_bytes().to_vec();
    entry.extend_from_slice(&0xc0000u32.to_be_bytes());
    write(&fs, &path("a.timeindex"), &entry);
    let time = TimeIndex::open(&fs, &path("a.timeindex"), HUGE_BASE, 0x200).unwrap();
    assert_eq!(time.last_entry(), TimestampOffset { timestamp: -1, offset: HUGE_BASE });
    assert_eq!(time.lookup(i64::MAX), TimestampOffset { timestamp: -1, offset: HUGE_BASE });
    assert_eq!(time.n_entries(), 0);
    assert!(time.sanity_check().is_err());
}
