//! Real Kafka segments: for every fixture segment that has a `.index`, our lookup of every offset
//! returns the batch a scan of the `.log` finds, and indexes rebuilt from the `.log` agree with
//! the ones Kafka wrote.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr, clippy::pedantic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{
    Batches, FileKind, FileState, OffsetIndexEntry, SegmentFileName, TimeIndexEntry,
};
use seglog_storage::io::{Fs, OpenMode, StdFs, read_all};
use seglog_storage::segment::{LogSegment, SegmentConfig};

fn kafka_real() -> Option<PathBuf> {
    seglog_storage::testing::kafka_real_fixtures()
}

/// Every `.index` under `dir`, with a non-empty `.log` beside it.
fn indexed_segments(fs: &StdFs, dir: &Path, out: &mut Vec<PathBuf>) {
    for path in fs.list(dir).unwrap() {
        if fs.list(&path).is_ok() {
            indexed_segments(fs, &path, out);
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Ok(parsed) = SegmentFileName::parse(&name)
            && parsed.kind == FileKind::Index
            && parsed.state == FileState::Live
        {
            let log = path.with_extension("log");
            let log_len = fs.open(&log, OpenMode::Read).and_then(|f| f.len()).unwrap_or(0);
            if log_len > 0 {
                out.push(path);
            }
        }
    }
}

fn copy(fs: &StdFs, from: &Path, to: &Path) {
    let bytes = read_all(fs.open(from, OpenMode::Read).unwrap().as_ref()).unwrap();
    let file = fs.open(to, OpenMode::CreateNew).unwrap();
    file.write_all_at(&bytes, 0).unwrap();
}

fn entries<const N: usize, T>(bytes: &[u8], decode: impl Fn(&[u8; N]) -> T) -> Vec<T> {
    bytes.chunks_exact(N).map(|chunk| decode(chunk.try_into().unwrap())).collect()
}

#[test]
fn index_lookups_agree_with_a_scan_of_every_indexed_fixture_segment() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let mut indexes = Vec::new();
    indexed_segments(&fs, &root, &mut indexes);
    indexes.sort();
    assert!(indexes.len() >= 20, "only {} indexed segments", indexes.len());
    let temp = tempfile::tempdir().unwrap();
    let (mut n_offsets, mut n_identical_offset, mut n_identical_time) = (0usize, 0, 0);
    for (segment_idx, index_path) in indexes.iter().enumerate() {
        let name =
            SegmentFileName::parse(&index_path.file_name().unwrap().to_string_lossy()).unwrap();
        let base_offset = name.offset;
        let dir = temp.path().join(format!("seg{segment_idx}-0"));
        fs.create_dir_all(&dir).unwrap();
        let kafka_index = read_all(fs.open(index_path, OpenMode::Read).unwrap().as_ref()).unwrap();
        let time_path = index_path.with_extension("timeindex");
        let kafka_time = fs
            .open(&time_path, OpenMode::Read)
            .map(|f| read_all(f.as_ref()).unwrap())
            .unwrap_or_default();
        for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
            let from = index_path.with_extension(&kind.suffix()[1..]);
            if fs.exists(&from).unwrap() {
                copy(&fs, &from, &dir.join(from.file_name().unwrap()));
            }
        }
        let log_bytes =
            read_all(fs.open(&index_path.with_extension("log"), OpenMode::Read).unwrap().as_ref())
                .unwrap();
        let max_timestamps: Vec<(i64, i64)> = Batches::new(&log_bytes)
            .map(|item| {
                let batch = item.unwrap().batch;
                (batch.base_offset(Default::default()).unwrap(), batch.max_timestamp())
            })
            .collect();
        let batches: Vec<(i64, i64, u32)> = Batches::new(&log_bytes)
            .map(|item| {
                let item = item.unwrap();
                let base = item.batch.base_offset(Default::default()).unwrap();
                (base, item.batch.last_offset(), item.position as u32)
            })
            .collect();
        let shown = index_path.strip_prefix(&root).unwrap().display().to_string();

        let fs_arc: Arc<dyn Fs> = Arc::new(StdFs);
        let (segment, report) =
            LogSegment::open(fs_arc, &dir, base_offset, SegmentConfig::default(), 0).unwrap();
        assert!(
            report.is_none() || report.as_ref().unwrap().truncated_bytes == 0,
            "{shown}: {report:?}"
        );
        // Every offset of every batch maps to the batch holding it (lookup, then scan).
        let first = batches.first().unwrap().0;
        let last = batches.last().unwrap().1;
        for offset in first..=last {
            let expected = batches.iter().find(|(_, last, _)| *last >= offset).unwrap();
            let found = segment.translate_offset(offset, 0).unwrap().unwrap();
            assert_eq!(
                (found.offset, found.position),
                (expected.1, expected.2),
                "{shown} offset {offset}"
            );
            n_offsets += 1;
        }
        assert!(segment.translate_offset(last + 1, 0).unwrap().is_none());

        // Kafka's entries all point at batch starts covering their offset.
        let kafka_entries = entries(&kafka_index, OffsetIndexEntry::decode);
        let kafka_entries: Vec<_> = kafka_entries.into_iter().map(Result::unwrap).collect();
        for entry in &kafka_entries {
            let offset = base_offset + i64::from(entry.relative_offset);
            let batch = batches.iter().find(|b| b.2 == entry.position).unwrap();
            assert!((batch.0..=batch.1).contains(&offset), "{shown}: {entry:?}");
        }

        // Rebuilt from the log, our indexes follow Kafka's rule exactly: an entry at the first
        // batch that starts more than 4096 bytes after the last entry, naming that batch's last
        // offset. Kafka's own file follows the same rule at append time, but its byte counter
        // (`bytesSinceLastIndexEntry`) is not persisted and restarts at 0 whenever the broker
        // restarts, which delays the next entry: erickimm's first entry is at 6399 instead of
        // 4817 because that broker restarted between positions 2016 and 2302. So the files are
        // identical only for segments written without a restart; for the others we check that
        // Kafka's entries obey the rule as delayed by restarts (every gap > 4096 bytes), and
        // that the time index entries name the running maximum timestamp at their offset.
        let fs_arc: Arc<dyn Fs> = Arc::new(StdFs);
        let (mut rebuilt, _) =
            LogSegment::open(fs_arc, &dir, base_offset, SegmentConfig::default(), 0).unwrap();
        rebuilt.recover().unwrap();
        let ours: Vec<_> = (0..rebuilt.offset_index().n_entries())
            .map(|i| rebuilt.offset_index().entry(i).unwrap())
            .map(|e| OffsetIndexEntry {
                relative_offset: (e.offset - base_offset) as u32,
                position: e.position,
            })
            .collect();
        let mut last_position = 0u32;
        for (entry, batch) in
            ours.iter().map(|e| (e, batches.iter().position(|b| b.2 == e.position).unwrap()))
        {
            let previous_batch_start = batches[batch - 1].2;
            assert!(entry.position - last_position > 4096, "{shown}: {entry:?}");
            assert!(
                previous_batch_start - last_position <= 4096,
                "{shown}: {entry:?} is not the first batch past 4096"
            );
            assert_eq!(base_offset + i64::from(entry.relative_offset), batches[batch].1, "{shown}");
            last_position = entry.position;
        }
        let mut last_position = 0u32;
        for entry in &kafka_entries {
            assert!(
                entry.position - last_position > 4096,
                "{shown}: Kafka entry {entry:?} closer than 4096 bytes"
            );
            last_position = entry.position;
        }
        if ours == kafka_entries {
            n_identical_offset += 1;
        }
        let kafka_time: Vec<_> =
            entries(&kafka_time, TimeIndexEntry::decode).into_iter().map(Result::unwrap).collect();
        let ours_time: Vec<_> = (0..rebuilt.time_index().n_entries())
            .map(|i| rebuilt.time_index().entry(i).unwrap())
            .map(|e| TimeIndexEntry {
                timestamp: e.timestamp,
                relative_offset: (e.offset - base_offset) as u32,
            })
            .collect();
        for entry in kafka_time.iter().chain(&ours_time) {
            let offset = base_offset + i64::from(entry.relative_offset);
            let running_max = max_timestamps
                .iter()
                .filter(|(first, _)| *first <= offset)
                .map(|(_, ts)| *ts)
                .max()
                .unwrap();
            assert_eq!(entry.timestamp, running_max, "{shown}: time index entry {entry:?}");
        }
        if ours_time == kafka_time {
            n_identical_time += 1;
        }
    }
    println!(
        "{} indexed fixture segments: {n_offsets} offsets looked up, offset index identical after rebuild in {n_identical_offset}, time index identical in {n_identical_time}",
        indexes.len()
    );
}
