//! Arbitrary segment files on the simulated file system: a segment opened, used and recovered,
//! or a whole partition directory loaded. Nothing may panic, and whatever recovery keeps must be
//! whole, valid batches.
//!
//! Byte 0 picks the mode. Bit 3 sets `index.interval.bytes` to 64 (else Kafka's 4096), so that
//! small inputs get index entries.
//!
//! Offsets near `i64::MAX` are where offset arithmetic overflows, but mutation rarely builds such
//! an 8-byte big-endian value inside a length-framed entry. So a flag moves every entry of a
//! `.log` part up there: its offset field becomes `i64::MAX - (its low byte)`. Offsets are not
//! covered by the CRC, so valid batches stay valid.
//!
//! Segment mode (bit 0 clear), one segment at base offset 0 in `/d/t-0`:
//!
//! ```text
//! byte  size  field
//!    0     1  flags: bit 1 no .index file, bit 2 no .timeindex file, bit 4 the .timeindex part
//!             is written as .txnindex as well, bit 5 offsets near the top
//!    1     2  length of the .log part (big-endian, modulo what is left + 1)
//!    3     2  length of the .index part (likewise)
//!    5     1  the offset truncate_to cuts at
//!    6     -  the .log part, the .index part, and the rest as the .timeindex
//! ```
//!
//! Load mode (bit 0 set), `log::load::load` over `/d/t-0`:
//!
//! ```text
//! byte  size  field
//!    0     1  flags: bit 1 had_clean_shutdown
//!    1     1  recovery-point checkpoint, modulo 100 (below every base offset but the first)
//!    2     1  log-start-offset checkpoint
//!    3     -  files, each: a descriptor byte (bits 0-1 base offset 0, 100, 10000 or
//!             i64::MAX - 100; bits 2-3 .log, .index, .timeindex, .txnindex; bits 4-5 live,
//!             .deleted, .swap, .cleaned; bit 6 offsets near the top), a 2-byte length (modulo
//!             what is left + 1), the bytes
//! ```
//!
//! After an unclean load with such a recovery point every segment has been recovered, so every
//! batch read back must validate.

#![no_main]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use seglog_format::{Batches, FileKind, FileState, SegmentFileName};
use seglog_storage::io::{Fs, OpenMode, SimFs, read_all};
use seglog_storage::log::load::{LoadParams, load};
use seglog_storage::log::local_log::{LocalLog, LocalLogConfig};
use seglog_storage::segment::{LogSegment, SegmentConfig, segment_path};

const DIR: &str = "/d/t-0";
const BASES: [i64; 4] = [0, 100, 10_000, i64::MAX - 100];
const FILES_MAX: usize = 6;

/// Takes `len` (modulo what is left + 1) bytes off the front of `rest`.
fn take<'a>(rest: &mut &'a [u8], len: usize) -> &'a [u8] {
    let len = len % (rest.len() + 1);
    let (head, tail) = rest.split_at(len);
    *rest = tail;
    head
}

fn u16_at(data: &[u8], at: usize) -> usize {
    usize::from(u16::from_be_bytes([
        data.get(at).copied().unwrap_or(0),
        data.get(at + 1).copied().unwrap_or(0),
    ]))
}

fn write_file(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let file = fs.open(path, OpenMode::CreateOrOpen).expect("create a file on SimFs");
    file.set_len(0).expect("set_len on SimFs");
    file.write_all_at(bytes, 0).expect("write on SimFs");
}

/// `log` with the offset field of every entry set to `i64::MAX - (its low byte)`.
fn offsets_near_the_top(log: &[u8]) -> Vec<u8> {
    let mut out = log.to_vec();
    let mut position = 0usize;
    while let Some(header) = out.get_mut(position..position + 12) {
        let distance = i64::from(header[7]);
        header[..8].copy_from_slice(&(i64::MAX - distance).to_be_bytes());
        let size = i32::from_be_bytes([header[8], header[9], header[10], header[11]]);
        match usize::try_from(size) {
            Ok(size) if size >= 14 => position += 12 + size,
            _ => break,
        }
    }
    out
}

fn segment_config(flags: u8) -> SegmentConfig {
    let index_interval_bytes = if flags & 8 != 0 { 64 } else { 4096 };
    SegmentConfig { index_bytes_max: 4096, index_interval_bytes, ..SegmentConfig::default() }
}

/// The read-only calls, whose results only have to not panic.
fn exercise(segment: &LogSegment) {
    for offset in [-1, 0, 1, 5, 100, i64::from(i32::MAX), i64::MAX] {
        let _ = black_box(segment.translate_offset(offset, 0));
    }
    let _ = black_box(segment.read(0, 4096, Some(segment.size_bytes()), true));
    let _ = black_box(segment.read(3, 10, Some(segment.size_bytes() / 2), false));
    let _ = black_box(segment.read(0, 4096, None, true));
    let _ = black_box(segment.find_offset_by_timestamp(0, 0));
    let _ = black_box(segment.find_offset_by_timestamp(i64::MAX, 0));
    let _ = black_box(segment.read_next_offset());
    let _ = black_box(segment.has_overflow());
    let _ = black_box(segment.collect_aborted_txns(0, i64::MAX));
    let _ = black_box((segment.largest_timestamp(), segment.first_batch_timestamp_or_max()));
}

/// Every entry of `bytes` parses and validates, and they end exactly at `len`; returns how many.
fn assert_all_valid(bytes: &[u8], len: u64, what: &str) -> usize {
    let mut batches = Batches::new(bytes);
    let mut n_batches = 0;
    for item in batches.by_ref() {
        let positioned =
            item.unwrap_or_else(|error| panic!("{what}: entry does not parse: {error}"));
        if let Err(error) = positioned.batch.validate() {
            panic!("{what}: batch at {} does not validate: {error}", positioned.position);
        }
        n_batches += 1;
    }
    assert_eq!(batches.next_position(), len, "{what}: entries end before the end");
    n_batches
}

fn segment_mode(data: &[u8]) {
    let flags = data.first().copied().unwrap_or(0);
    let mut rest = data.get(6..).unwrap_or_default();
    let log = take(&mut rest, u16_at(data, 1));
    let index = take(&mut rest, u16_at(data, 3));
    let time_index = rest;
    let truncate_at = i64::from(data.get(5).copied().unwrap_or(0));

    let fs = SimFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).expect("mkdir on SimFs");
    let log = if flags & 32 != 0 { offsets_near_the_top(log) } else { log.to_vec() };
    write_file(&fs, &segment_path(dir, 0, FileKind::Log), &log);
    if flags & 2 == 0 {
        write_file(&fs, &segment_path(dir, 0, FileKind::Index), index);
    }
    if flags & 4 == 0 {
        write_file(&fs, &segment_path(dir, 0, FileKind::TimeIndex), time_index);
    }
    if flags & 16 != 0 {
        write_file(&fs, &segment_path(dir, 0, FileKind::TxnIndex), time_index);
    }

    let config = segment_config(flags);
    let Ok((mut segment, _report)) = LogSegment::open(Arc::new(fs.clone()), dir, 0, config, 0)
    else {
        return;
    };
    // As a clean-shutdown load leaves it: indexes trusted, nothing validated.
    exercise(&segment);

    let Ok(first) = segment.recover() else { return };
    let log_path = segment_path(dir, 0, FileKind::Log);
    let file = fs.open(&log_path, OpenMode::Read).expect("the .log is still there");
    let bytes = read_all(file.as_ref()).expect("read the .log");
    assert_eq!(bytes.len() as u64, u64::from(first.valid_bytes), "recovery truncates to valid");
    assert_eq!(segment.size_bytes(), first.valid_bytes);
    let n_batches = assert_all_valid(&bytes, u64::from(first.valid_bytes), "recovered .log");
    assert_eq!(n_batches, first.n_batches);

    let second = segment.recover().expect("a recovered segment recovers again");
    assert_eq!(second.valid_bytes, first.valid_bytes, "recovery is idempotent");
    assert_eq!(second.n_batches, first.n_batches);
    assert_eq!(second.next_offset, first.next_offset);
    assert_eq!(second.truncated_bytes, 0);
    assert_eq!(second.stopped_at, None);

    exercise(&segment);
    for offset in [0, 1, 2, first.next_offset / 2, first.next_offset - 1, first.next_offset] {
        let found = segment.translate_offset(offset, 0).expect("translate a recovered segment");
        if offset < 0 {
            continue;
        }
        if offset < first.next_offset {
            let found = found.unwrap_or_else(|| panic!("offset {offset} is below the end"));
            assert!(found.offset >= offset, "translate_offset({offset}) gave {found:?}");
        } else {
            assert_eq!(found, None, "offset {offset} is past the end");
        }
    }
    let fetch = segment.read(0, 4096, Some(segment.size_bytes()), true);
    if let Some(fetch) = fetch.expect("read a recovered segment") {
        // The end may cut the last batch short: the walk ends quietly there.
        for item in Batches::new(&fetch.records) {
            let positioned = item.expect("a fetched entry parses");
            positioned.batch.validate().expect("a fetched batch validates");
        }
    }
    let _ = black_box(segment.find_offset_by_timestamp(0, 0));
    let next = segment.read_next_offset().expect("read_next_offset of a recovered segment");
    assert_eq!(next, first.next_offset, "read_next_offset agrees with recovery");

    if segment.truncate_to(truncate_at, 0).is_ok() {
        let next = segment.read_next_offset().expect("read_next_offset after truncate_to");
        assert!(next <= truncate_at.max(0), "truncate_to({truncate_at}) left offset {next}");
        let third = segment.recover().expect("a truncated segment recovers");
        assert_eq!(third.truncated_bytes, 0, "truncate_to leaves whole valid batches");
        assert_eq!(third.next_offset, next);
    }
}

/// Reads the whole log from its first segment; with `check`, every batch must validate and
/// every read succeed.
fn read_everything(local: &LocalLog, check: bool) {
    let end = local.log_end_offset();
    let mut next = local.segments().first_segment().map_or(end, LogSegment::base_offset);
    for _ in 0..64 {
        if next >= end {
            return;
        }
        let fetch = match local.read(next, 1 << 16, true, local.next_offset_metadata()) {
            Ok(fetch) => fetch,
            Err(error) => {
                assert!(!check, "read at {next} of a recovered log failed: {error}");
                return;
            }
        };
        let mut advanced = false;
        for item in Batches::new(&fetch.records) {
            match item {
                Ok(positioned) => {
                    if check && let Err(error) = positioned.batch.validate() {
                        panic!("read at {next}: an invalid batch: {error}");
                    }
                    let after = positioned.batch.next_offset();
                    if after > next {
                        next = after;
                        advanced = true;
                    }
                }
                Err(error) => {
                    assert!(!check, "read at {next}: an entry does not parse: {error}");
                    return;
                }
            }
        }
        if !advanced {
            return;
        }
    }
}

fn load_mode(data: &[u8]) {
    let flags = data.first().copied().unwrap_or(0);
    let had_clean_shutdown = flags & 2 != 0;
    let recovery_point = i64::from(data.get(1).copied().unwrap_or(0) % 100);
    let log_start = i64::from(data.get(2).copied().unwrap_or(0));
    let fs = SimFs::new();
    let dir = Path::new(DIR);
    fs.create_dir_all(dir).expect("mkdir on SimFs");
    let mut rest = data.get(3..).unwrap_or_default();
    for _ in 0..FILES_MAX {
        let Some((&descriptor, tail)) = rest.split_first() else { break };
        let len = u16_at(tail, 0);
        rest = tail.get(2..).unwrap_or_default();
        let bytes = take(&mut rest, len);
        let kind = [FileKind::Log, FileKind::Index, FileKind::TimeIndex, FileKind::TxnIndex]
            [usize::from(descriptor >> 2 & 3)];
        let state = [FileState::Live, FileState::Deleted, FileState::Swap, FileState::Cleaned]
            [usize::from(descriptor >> 4 & 3)];
        let name = SegmentFileName { offset: BASES[usize::from(descriptor & 3)], kind, state };
        let bytes = if descriptor & 64 != 0 { offsets_near_the_top(bytes) } else { bytes.to_vec() };
        write_file(&fs, &dir.join(name.to_name()), &bytes);
    }
    let config = LocalLogConfig { segment: segment_config(flags), ..LocalLogConfig::default() };
    let params = LoadParams {
        had_clean_shutdown,
        log_start_offset_checkpoint: log_start,
        recovery_point_checkpoint: recovery_point,
        now_ms: 0,
    };
    let Ok(mut loaded) = load(Arc::new(fs.clone()), dir, config, params) else { return };
    black_box(&loaded.report);
    assert!(loaded.log_start_offset >= log_start);
    for segment in loaded.local.segments().iter() {
        exercise(segment);
    }
    read_everything(&loaded.local, !had_clean_shutdown);
    let _ = black_box(loaded.local.close());
}

fuzz_target!(|data: &[u8]| {
    if data.first().is_some_and(|flags| flags & 1 != 0) {
        load_mode(data);
    } else {
        segment_mode(data);
    }
});
