//! Micro-benchmarks of the format hot paths, reported as throughput: CRC-32C, batch validation,
//! record iteration, batch build, and compression and decompression with every codec.
//! Run: `cargo bench -p seglog-format`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use seglog_format::{Compression, DecodeLimits, RecordBatch, RecordBatchBuilder, compression};

/// A 16 KiB batch of `record_bytes`-sized values, with keys, as a producer would send it.
fn batch(codec: Compression, record_bytes: usize) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec);
    let value: Vec<u8> = (0..record_bytes).map(|i| (i * 31 % 251) as u8).collect();
    let mut idx = 0u64;
    while builder.estimated_size_bytes() + record_bytes + 32 <= 16 * 1024 {
        let key = idx.to_be_bytes();
        builder.push(1_700_000_000_000 + idx as i64, Some(&key), Some(&value), &[]).unwrap();
        idx += 1;
    }
    builder.build().unwrap()
}

fn crc(c: &mut Criterion) {
    let mut group = c.benchmark_group("crc32c");
    let data = vec![0xA5u8; 16 * 1024];
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.bench_function("16KiB", |b| b.iter(|| crc32c::crc32c(black_box(&data))));
    group.finish();
}

fn validate(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate");
    for record_bytes in [100, 1024] {
        let bytes = batch(Compression::None, record_bytes);
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("16KiB_none_{record_bytes}B_records"), |b| {
            b.iter(|| RecordBatch::new(black_box(&bytes)).unwrap().validate().unwrap());
        });
    }
    group.finish();
}

fn iterate(c: &mut Criterion) {
    let mut group = c.benchmark_group("iterate_records");
    for codec in Compression::ALL {
        let bytes = batch(codec, 100);
        let uncompressed = batch(Compression::None, 100).len();
        group.throughput(Throughput::Bytes(uncompressed as u64));
        group.bench_function(format!("16KiB_{codec}_100B_records"), |b| {
            b.iter(|| {
                let batch = RecordBatch::new(black_box(&bytes)).unwrap();
                let records = batch.records(DecodeLimits::default()).unwrap();
                let mut total = 0usize;
                for record in &records {
                    total += record.unwrap().value.map_or(0, <[u8]>::len);
                }
                total
            });
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("build");
    for codec in Compression::ALL {
        let size = batch(Compression::None, 100).len();
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_function(format!("16KiB_{codec}_100B_records"), |b| {
            b.iter(|| batch(black_box(codec), 100));
        });
    }
    group.finish();
}

fn codecs(c: &mut Criterion) {
    // Records-like input: repetitive structure with varying bytes, as real payloads are.
    let input: Vec<u8> = batch(Compression::None, 100).repeat(4);
    let mut group = c.benchmark_group("codec");
    group.throughput(Throughput::Bytes(input.len() as u64));
    for codec in Compression::ALL.into_iter().skip(1) {
        let compressed = compression::compress(codec, &input).unwrap();
        group.bench_function(format!("{codec}_compress_64KiB"), |b| {
            b.iter(|| compression::compress(codec, black_box(&input)).unwrap());
        });
        group.bench_function(format!("{codec}_decompress_64KiB"), |b| {
            b.iter(|| {
                compression::decompress(codec, black_box(&compressed), DecodeLimits::default())
                    .unwrap()
            });
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = crc, validate, iterate, build, codecs
}
criterion_main!(benches);
