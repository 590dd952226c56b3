//! Reads where the batches are larger than a ranged GET's window, without an offset index.

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use seglog_format::{Batches, Compression, RecordBatchBuilder};

use super::{RemoteChunkCache, RemoteReader};
use crate::layout::{ObjectKind, PartitionLayout};
use crate::manifest::{Change, Manifest};
use crate::writer::upload_segment;

/// A reader without a chunk cache, and readers through chunk caches small enough that reads
/// join several chunks and evict them.
fn readers(layout: &PartitionLayout) -> Vec<RemoteReader> {
    let chunked = |chunk_bytes, bytes_max| {
        RemoteReader::new(layout.clone(), 1 << 20)
            .with_chunk_cache(Arc::new(RemoteChunkCache::new(chunk_bytes, bytes_max)))
    };
    vec![RemoteReader::new(layout.clone(), 1 << 20), chunked(1000, 5000), chunked(70_000, 150_000)]
}

#[test]
fn batches_larger_than_the_window_are_read_whole_and_skipped_whole() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let layout = PartitionLayout::new("t", "big", 0, "id");
        // Three batches of 2 records of 60 KiB each (about 120 KiB a batch, past the 64 KiB
        // window), offsets 10..=15; no offset index, so every read starts at position 0.
        let mut log = Vec::new();
        let mut sizes = Vec::new();
        for batch_idx in 0..3_i64 {
            let mut builder =
                RecordBatchBuilder::new(Compression::None).base_offset(10 + 2 * batch_idx);
            for _ in 0..2 {
                builder.push(1_000, None, Some(&vec![b'x'; 60 * 1024]), &[]).unwrap();
            }
            let batch = builder.build().unwrap();
            sizes.push(batch.len());
            log.extend_from_slice(&batch);
        }
        let objects = [(ObjectKind::Log, Bytes::from(log.clone()))];
        let entry = upload_segment(store.as_ref(), &layout, 10, 15, 1_000, &objects).await.unwrap();
        let (manifest, _) = Manifest::empty("big", 0, "id").apply(&Change::Add(entry)).unwrap();
        for reader in readers(&layout) {
            for offset in 10..=15_i64 {
                let batch_idx = ((offset - 10) / 2) as usize;
                let start: usize = sizes[..batch_idx].iter().sum();
                for max_bytes in [1, 200 * 1024] {
                    let read =
                        reader.read(store.as_ref(), &manifest, offset, max_bytes).await.unwrap();
                    let records = read.unwrap().records;
                    let first = Batches::new(&records).next().unwrap().unwrap();
                    assert_eq!(
                        first.batch.as_bytes(),
                        &log[start..start + sizes[batch_idx]],
                        "offset {offset}, max {max_bytes}: the batch that holds it, whole"
                    );
                }
            }
        }
    });
}

/// One batch of `n` records from `base`.
fn batch_at(base: i64, n: i64) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(base);
    for _ in 0..n {
        builder.push(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
    }
    builder.build().unwrap()
}

#[test]
fn an_offset_compaction_removed_is_served_from_the_next_batch_even_in_the_next_segment() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let layout = PartitionLayout::new("t", "compacted", 0, "id");
        // Segment [0, 9] keeps offsets 0..=2 and 5..=6 after cleaning (3, 4, 7, 8, 9 gone);
        // segment [10, 19] keeps 12..=13.
        let first: Vec<u8> = [batch_at(0, 3), batch_at(5, 2)].concat();
        let second = batch_at(12, 2);
        let mut manifest = Manifest::empty("compacted", 0, "id");
        for (base, last, log) in [(0, 9, first), (10, 19, second)] {
            let objects = [(ObjectKind::Log, Bytes::from(log))];
            let entry =
                upload_segment(store.as_ref(), &layout, base, last, 1_000, &objects).await.unwrap();
            manifest = manifest.apply(&Change::Add(entry)).unwrap().0;
        }
        let first_offset_read = |records: Bytes| {
            let first = Batches::new(&records).next().unwrap().unwrap();
            first.batch.base_offset(seglog_format::DecodeLimits::default()).unwrap()
        };
        for reader in readers(&layout) {
            for (offset, served_from) in
                [(0, 0), (3, 5), (4, 5), (7, 12), (9, 12), (10, 12), (13, 12)]
            {
                let read = reader.read(store.as_ref(), &manifest, offset, 1).await.unwrap();
                let records = read.unwrap_or_else(|| panic!("offset {offset} is remote"));
                assert_eq!(first_offset_read(records.records), served_from, "offset {offset}");
            }
            assert_eq!(reader.read(store.as_ref(), &manifest, 20, 1).await.unwrap(), None);
        }
    });
}
