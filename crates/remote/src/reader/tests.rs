//! Reads where the batches are larger than a ranged GET's window, without an offset index.

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use seglog_format::{Batches, Compression, RecordBatchBuilder};

use super::RemoteReader;
use crate::layout::{ObjectKind, PartitionLayout};
use crate::manifest::{Change, Manifest};
use crate::writer::upload_segment;

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
        let reader = RemoteReader::new(layout, 1 << 20);
        for offset in 10..=15_i64 {
            let batch_idx = ((offset - 10) / 2) as usize;
            let start: usize = sizes[..batch_idx].iter().sum();
            for max_bytes in [1, 200 * 1024] {
                let read = reader.read(store.as_ref(), &manifest, offset, max_bytes).await.unwrap();
                let records = read.unwrap().records;
                let first = Batches::new(&records).next().unwrap().unwrap();
                assert_eq!(
                    first.batch.as_bytes(),
                    &log[start..start + sizes[batch_idx]],
                    "offset {offset}, max {max_bytes}: the batch that holds it, whole"
                );
            }
        }
    });
}
