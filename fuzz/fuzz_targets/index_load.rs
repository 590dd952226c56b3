//! Arbitrary `.index`, `.timeindex` and `.txnindex` files opened and then driven by a short
//! list of operations. Nothing may panic; lookups agree with a brute-force search over the
//! loaded entries, entries strictly increase, and a trimmed index reopens with the same entries.
//!
//! Input layout (missing bytes read as zero):
//!
//! ```text
//! byte  size  field
//!    0     1  base offset: bits 0-1 pick 0, 45, 10000 or i64::MAX - 100
//!    1     2  index_bytes_max (big-endian)
//!    3     2  length of the .index part (modulo what is left + 1)
//!    5     2  length of the .timeindex part (likewise)
//!    7    16  two targets (big-endian i64): offsets, timestamps, positions
//!   23     8  operations, one a byte (see `run`)
//!   31     -  the .index part, the .timeindex part, and the rest as the .txnindex
//! ```

#![no_main]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use seglog_format::AbortedTxn;
use seglog_storage::index::{
    OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset, TransactionIndex,
};
use seglog_storage::io::{Fs, OpenMode, SimFs};

const BASES: [i64; 4] = [0, 45, 10_000, i64::MAX - 100];
const HEADER_BYTES: usize = 31;

fn field<const N: usize>(data: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = data.get(at + i).copied().unwrap_or(0);
    }
    out
}

fn take<'a>(rest: &mut &'a [u8], len: usize) -> &'a [u8] {
    let len = len % (rest.len() + 1);
    let (head, tail) = rest.split_at(len);
    *rest = tail;
    head
}

fn write_file(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let file = fs.open(path, OpenMode::CreateNew).expect("create a file on SimFs");
    file.write_all_at(bytes, 0).expect("write on SimFs");
}

fn offset_entries(index: &OffsetIndex) -> Vec<OffsetPosition> {
    let entries: Vec<OffsetPosition> =
        (0..index.n_entries()).map(|i| index.entry(i).expect("entry below n_entries")).collect();
    assert!(index.entry(entries.len()).is_err(), "an entry past the end");
    for pair in entries.windows(2) {
        assert!(pair[0].offset < pair[1].offset, "offsets increase: {pair:?}");
        assert!(pair[0].position <= pair[1].position, "positions never decrease: {pair:?}");
    }
    assert_eq!(index.last_entry(), entries.last().copied());
    entries
}

fn time_entries(index: &TimeIndex) -> Vec<TimestampOffset> {
    let entries: Vec<TimestampOffset> =
        (0..index.n_entries()).map(|i| index.entry(i).expect("entry below n_entries")).collect();
    assert!(index.entry(entries.len()).is_err(), "an entry past the end");
    for pair in entries.windows(2) {
        assert!(pair[0].timestamp < pair[1].timestamp, "timestamps increase: {pair:?}");
        assert!(pair[0].offset <= pair[1].offset, "offsets never decrease: {pair:?}");
    }
    entries
}

fn check_offset_lookup(index: &OffsetIndex, base: i64, target: i64) {
    let entries = offset_entries(index);
    let expected = entries
        .iter()
        .rev()
        .find(|entry| entry.offset <= target)
        .copied()
        .unwrap_or(OffsetPosition { offset: base, position: 0 });
    assert_eq!(index.lookup(target), expected, "offset lookup of {target}");
    let _ = black_box(index.fetch_upper_bound_offset(target as u32, 4096));
}

fn check_time_lookup(index: &TimeIndex, base: i64, target: i64) {
    let entries = time_entries(index);
    let expected = entries
        .iter()
        .rev()
        .find(|entry| entry.timestamp <= target)
        .copied()
        .unwrap_or(TimestampOffset { timestamp: -1, offset: base });
    assert_eq!(index.lookup(target), expected, "time lookup of {target}");
}

/// Every key of every entry, and one on either side.
fn probe_all(offset: &OffsetIndex, time: &TimeIndex, base: i64) {
    let offsets: Vec<i64> = offset_entries(offset).iter().map(|entry| entry.offset).collect();
    for key in offsets.iter().take(64) {
        for target in [key.saturating_sub(1), *key, key.saturating_add(1)] {
            check_offset_lookup(offset, base, target);
        }
    }
    let timestamps: Vec<i64> = time_entries(time).iter().map(|entry| entry.timestamp).collect();
    for key in timestamps.iter().take(64) {
        for target in [key.saturating_sub(1), *key, key.saturating_add(1)] {
            check_time_lookup(time, base, target);
        }
    }
}

fn check_txns(txn: &TransactionIndex, fs: &Arc<dyn Fs>, path: &Path, base: i64, a: i64, b: i64) {
    let result = txn.collect_aborted_txns(a, b);
    for aborted in &result.aborted {
        assert!(txn.all_aborted_txns().contains(aborted), "a collected txn is an entry");
        assert!(aborted.last_offset >= a && aborted.first_offset < b, "it overlaps the range");
    }
    let _ = black_box(txn.sanity_check());
    // What is in memory is what is in the file.
    let reopened = TransactionIndex::open(Arc::clone(fs), path, base).expect("reopen a txn index");
    assert_eq!(reopened.all_aborted_txns(), txn.all_aborted_txns(), "txn index reopened");
}

struct Indexes {
    offset: OffsetIndex,
    time: TimeIndex,
    txn: Option<TransactionIndex>,
}

fn run(data: &[u8]) {
    let base = BASES[usize::from(data.first().copied().unwrap_or(0) & 3)];
    let index_bytes_max = u64::from(u16::from_be_bytes(field(data, 1)));
    let targets = [i64::from_be_bytes(field(data, 7)), i64::from_be_bytes(field(data, 15))];
    let ops: [u8; 8] = field(data, 23);
    let mut rest = data.get(HEADER_BYTES..).unwrap_or_default();
    let index_part = take(&mut rest, usize::from(u16::from_be_bytes(field(data, 3))));
    let time_part = take(&mut rest, usize::from(u16::from_be_bytes(field(data, 5))));
    let txn_part = rest;

    let sim = SimFs::new();
    let dir = PathBuf::from("/d/t-0");
    sim.create_dir_all(&dir).expect("mkdir on SimFs");
    let index_path = dir.join("00000000000000000000.index");
    let time_path = dir.join("00000000000000000000.timeindex");
    let txn_path = dir.join("00000000000000000000.txnindex");
    write_file(&sim, &index_path, index_part);
    write_file(&sim, &time_path, time_part);
    if !txn_part.is_empty() {
        write_file(&sim, &txn_path, txn_part);
    }
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());

    let Ok(offset) = OffsetIndex::open(&sim, &index_path, base, index_bytes_max) else { return };
    let Ok(time) = TimeIndex::open(&sim, &time_path, base, index_bytes_max) else { return };
    let txn = TransactionIndex::open(Arc::clone(&fs), &txn_path, base).ok();
    let mut ix = Indexes { offset, time, txn };
    let _ = black_box((ix.offset.sanity_check(), ix.time.sanity_check()));
    let _ = black_box((ix.offset.is_full(), ix.time.is_full(), ix.offset.last_offset()));
    let _ = black_box((ix.time.last_entry(), ix.offset.size_bytes(), ix.offset.max_entries()));
    probe_all(&ix.offset, &ix.time, base);
    for target in targets {
        check_offset_lookup(&ix.offset, base, target);
        check_time_lookup(&ix.time, base, target);
    }
    if let Some(txn) = &ix.txn {
        check_txns(txn, &fs, &txn_path, base, targets[0], targets[1]);
    }

    for (op_idx, op) in ops.iter().enumerate() {
        let target = targets[op_idx % 2];
        let other = targets[(op_idx + 1) % 2];
        match op % 8 {
            0 => {
                check_offset_lookup(&ix.offset, base, target);
                check_time_lookup(&ix.time, base, target);
            }
            1 => {
                if ix.offset.truncate_to(target).is_ok()
                    && let Some(kept) = ix.offset.last_entry()
                {
                    assert!(kept.offset < target, "truncate_to({target}) kept {kept:?}");
                }
                let _ = ix.time.truncate_to(target);
            }
            2 => {
                let position = (other & i64::from(i32::MAX)) as u32;
                let _ = ix.offset.append(target, position);
                let _ = ix.time.maybe_append(other, target, op & 8 != 0);
            }
            3 => {
                let _ = ix.offset.file_mut().trim_to_valid_size();
                let _ = ix.time.file_mut().trim_to_valid_size();
            }
            4 => {
                let _ = ix.offset.file_mut().resize_to_max();
                let _ = ix.time.file_mut().resize_to_max();
            }
            5 => {
                // Trimmed and flushed, the file holds exactly the entries in memory.
                if ix.offset.file_mut().trim_to_valid_size().is_ok()
                    && ix.offset.file_mut().flush().is_ok()
                {
                    let reopened = OffsetIndex::open(&sim, &index_path, base, index_bytes_max)
                        .expect("reopen a trimmed offset index");
                    assert_eq!(offset_entries(&reopened), offset_entries(&ix.offset));
                    reopened.sanity_check().expect("a trimmed offset index is sane");
                }
                if ix.time.file_mut().trim_to_valid_size().is_ok()
                    && ix.time.file_mut().flush().is_ok()
                {
                    let reopened = TimeIndex::open(&sim, &time_path, base, index_bytes_max)
                        .expect("reopen a trimmed time index");
                    assert_eq!(time_entries(&reopened), time_entries(&ix.time));
                    reopened.sanity_check().expect("a trimmed time index is sane");
                }
            }
            6 => {
                let _ = black_box((ix.offset.sanity_check(), ix.time.sanity_check()));
                probe_all(&ix.offset, &ix.time, base);
            }
            _ => {
                if let Some(txn) = &mut ix.txn {
                    if op & 8 != 0 {
                        let _ = txn.truncate_to(target);
                    } else {
                        let _ = txn.append(AbortedTxn {
                            producer_id: other,
                            first_offset: other.min(target),
                            last_offset: target,
                            last_stable_offset: other,
                        });
                    }
                    check_txns(txn, &fs, &txn_path, base, target, other);
                }
            }
        }
    }
    probe_all(&ix.offset, &ix.time, base);
}

fuzz_target!(|data: &[u8]| run(data));
