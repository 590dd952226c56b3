//! Segment benchmarks: append throughput on a real directory (next to plain positional writes of
//! the same bytes), offset and timestamp lookup latency on a full index covering 1 GiB of log (with
//! p50/p99 printed), in memory (an active segment's) and sealed (an inactive segment's, read
//! from its file in the page cache), and recovery (validate + rebuild indexes) throughput from the page cache.
//! Run: `cargo bench -p seglog-storage`.

#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout, clippy::cast_precision_loss)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use seglog_format::RecordBatch;
use seglog_storage::index::{OffsetIndex, TimeIndex};
use seglog_storage::io::{Fs, OpenMode, SimFs, StdFs};
use seglog_storage::segment::{LogSegment, SegmentConfig};
use seglog_storage::testing::filled_batch;

const BATCH_BYTES: usize = 16 * 1024;

/// 16 KiB batches of `record_bytes` records, offsets from 0.
fn batches(record_bytes: usize, total_bytes: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut offset = 0i64;
    let mut size = 0;
    while size < total_bytes {
        let bytes = filled_batch(offset, record_bytes, BATCH_BYTES);
        offset = RecordBatch::new(&bytes).unwrap().last_offset() + 1;
        size += bytes.len();
        out.push(bytes);
    }
    out
}

fn append_all(segment: &mut LogSegment, batches: &[Vec<u8>]) {
    for bytes in batches {
        let batch = RecordBatch::new(bytes).unwrap();
        segment
            .append(batch.last_offset(), batch.max_timestamp(), batch.last_offset(), bytes)
            .unwrap();
    }
}

fn append(c: &mut Criterion) {
    let total = 64 << 20;
    let mut group = c.benchmark_group("segment_append_64MiB");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Bytes(total as u64));
    let temp = tempfile::tempdir().unwrap();
    for record_bytes in [100, 1024] {
        let input = batches(record_bytes, total);
        let mut run = 0;
        group.bench_function(format!("{record_bytes}B_records"), |b| {
            b.iter_batched(
                || {
                    run += 1;
                    let dir = temp.path().join(format!("t-{record_bytes}-{run}"));
                    StdFs.create_dir_all(&dir).unwrap();
                    dir
                },
                |dir| {
                    let mut segment =
                        LogSegment::create(Arc::new(StdFs), &dir, 0, SegmentConfig::default(), 0)
                            .unwrap();
                    append_all(&mut segment, &input);
                    segment.delete().unwrap();
                },
                BatchSize::PerIteration,
            );
        });
    }
    // The hardware's view of the same work: the same bytes written in order to one file with
    // plain positional writes (`StdFs` is a thin wrapper over the syscalls; no engine code runs).
    let input = batches(1024, total);
    let mut run = 0;
    group.bench_function("raw_write_all", |b| {
        b.iter_batched(
            || {
                run += 1;
                temp.path().join(format!("raw-{run}"))
            },
            |path| {
                let file = StdFs.open(&path, OpenMode::CreateNew).unwrap();
                let mut position = 0u64;
                for bytes in &input {
                    file.write_all_at(bytes, position).unwrap();
                    position += bytes.len() as u64;
                }
                drop(file);
                StdFs.remove(&path).unwrap();
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// A full index: 1 GiB of log at one entry per 4 KiB is 262,144 entries.
const ENTRIES: i64 = 262_144;

fn full_indexes() -> (OffsetIndex, TimeIndex) {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/b")).unwrap();
    fill(&fs, Path::new("/b"))
}

fn fill(fs: &dyn Fs, dir: &Path) -> (OffsetIndex, TimeIndex) {
    let mut offset_index = OffsetIndex::create(fs, &dir.join("0.index"), 0, 10 << 20).unwrap();
    let mut time_index = TimeIndex::create(fs, &dir.join("0.timeindex"), 0, 10 << 20).unwrap();
    for entry_idx in 0..ENTRIES {
        offset_index.append(entry_idx * 40, (entry_idx * 4100) as u32).unwrap();
        time_index.maybe_append(1_700_000_000_000 + entry_idx * 10, entry_idx * 40, false).unwrap();
    }
    (offset_index, time_index)
}

/// p50 and p99 of single lookups at pseudo-random targets, printed beside criterion's mean.
fn percentiles(name: &str, mut lookup: impl FnMut(i64) -> i64, span: i64) {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut samples = Vec::with_capacity(200_000);
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let target = (state % span as u64) as i64;
        let start = Instant::now();
        black_box(lookup(black_box(target)));
        samples.push(start.elapsed());
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    println!(
        "{name}: p50 {:?} p99 {:?} p99.9 {:?} over {} lookups",
        at(0.5),
        at(0.99),
        at(0.999),
        samples.len()
    );
}

fn lookups(c: &mut Criterion) {
    let (offset_index, time_index) = full_indexes();
    let mut group = c.benchmark_group("lookup_full_index_1GiB");
    let mut target = 0i64;
    group.bench_function("offset", |b| {
        b.iter(|| {
            target = (target + 7_919_993) % (ENTRIES * 40);
            offset_index.lookup(black_box(target))
        });
    });
    group.bench_function("timestamp", |b| {
        b.iter(|| {
            target = (target + 7_919_993) % (ENTRIES * 10);
            time_index.lookup(black_box(1_700_000_000_000 + target))
        });
    });
    group.finish();
    percentiles("offset lookup", |t| offset_index.lookup(t).unwrap().offset, ENTRIES * 40);
    percentiles(
        "timestamp lookup",
        |t| time_index.lookup(1_700_000_000_000 + t).unwrap().offset,
        ENTRIES * 10,
    );
    // The same indexes sealed, as an inactive segment's: every probe reads the file.
    let temp = tempfile::tempdir().unwrap();
    let (mut offset_index, mut time_index) = fill(&StdFs, temp.path());
    offset_index.file_mut().trim_to_valid_size().unwrap();
    offset_index.file_mut().seal().unwrap();
    time_index.file_mut().trim_to_valid_size().unwrap();
    time_index.file_mut().seal().unwrap();
    let mut group = c.benchmark_group("lookup_sealed_index_1GiB");
    group.bench_function("offset", |b| {
        b.iter(|| {
            target = (target + 7_919_993) % (ENTRIES * 40);
            offset_index.lookup(black_box(target)).unwrap()
        });
    });
    group.finish();
    percentiles("sealed offset lookup", |t| offset_index.lookup(t).unwrap().offset, ENTRIES * 40);
    percentiles(
        "sealed timestamp lookup",
        |t| time_index.lookup(1_700_000_000_000 + t).unwrap().offset,
        ENTRIES * 10,
    );
}

fn recovery(c: &mut Criterion) {
    let total = 256 << 20;
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("r-0");
    StdFs.create_dir_all(&dir).unwrap();
    let fs: Arc<dyn Fs> = Arc::new(StdFs);
    let mut segment = LogSegment::create(fs.clone(), &dir, 0, SegmentConfig::default(), 0).unwrap();
    append_all(&mut segment, &batches(1024, total));
    segment.close().unwrap();
    let size = u64::from(segment.size_bytes());
    let mut group = c.benchmark_group("recover_256MiB_page_cache");
    group.sample_size(10).measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Bytes(size));
    group.bench_function("validate_and_rebuild", |b| {
        b.iter(|| {
            let report = segment.recover().unwrap();
            assert_eq!(u64::from(report.valid_bytes), size);
        });
    });
    // The hardware's view: read the same file once, in 1 MiB reads, from the page cache.
    let path = segment.log_path().to_owned();
    group.bench_function("raw_read", |b| {
        b.iter(|| {
            let file = StdFs.open(&path, OpenMode::Read).unwrap();
            let len = file.len().unwrap();
            let mut buffer = vec![0u8; 1 << 20];
            let mut position = 0u64;
            while position < len {
                let n = (len - position).min(buffer.len() as u64) as usize;
                file.read_exact_at(&mut buffer[..n], position).unwrap();
                position += n as u64;
            }
            position
        });
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().warm_up_time(Duration::from_secs(1));
    targets = append, lookups, recovery
}
criterion_main!(benches);
