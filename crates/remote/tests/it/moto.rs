//! The bucket side against S3's API, served by moto on 127.0.0.1 (a test bed: moto honours
//! If-None-Match and If-Match on PUT). Under CI a missing moto fails the test; elsewhere it says
//! loudly that it skipped.

#![allow(clippy::print_stderr, reason = "a skipped test says so on stderr")]

use std::sync::Arc;

use bytes::Bytes;
use object_store::ObjectStoreExt;
use seglog_format::{Batches, Compression, DecodeLimits, RecordBatchBuilder};
use seglog_remote::moto::{Moto, python_with_moto};
use seglog_remote::{
    Change, ManifestWriter, ObjectKind, PartitionLayout, RemoteError, RemoteReader,
    probe_conditional_put, read_manifest, upload_segment,
};

/// Three batches of a few records each, as a `.log` holds them from offset `base`.
fn segment_log(base: i64) -> Bytes {
    let mut log = Vec::new();
    let mut offset = base;
    for batch_idx in 0..3_i64 {
        let mut builder = RecordBatchBuilder::new(Compression::None).base_offset(offset);
        for _ in 0..=batch_idx {
            builder.push(1_000 + offset, Some(b"k"), Some(b"value"), &[]).expect("a record");
            offset += 1;
        }
        log.extend_from_slice(&builder.build().expect("a batch"));
    }
    Bytes::from(log)
}

#[test]
fn against_s3s_api_the_probe_passes_a_zombie_writer_is_fenced_and_segments_read_back() {
    let Some(python) = python_with_moto() else { return };
    let moto = Moto::start(&python);
    moto.create_bucket("seglog");
    let store = moto.store("seglog");
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        probe_conditional_put(store.as_ref(), "tiered").await.unwrap();
        let layout = PartitionLayout::new("tiered", "orders", 0, "AAAAAAAAAAAAAAAAAAAAAQ");
        let mut zombie = ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
        let mut leader = ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
        // Segments of 6 offsets each (1 + 2 + 3 records), uploaded and committed by the leader.
        for base in [0_i64, 6, 12] {
            let log = segment_log(base);
            let objects = [(ObjectKind::Log, log.clone())];
            let entry =
                upload_segment(store.as_ref(), &layout, base, base + 5, 0, &objects).await.unwrap();
            let key = layout.object_key(base, entry.id, ObjectKind::Log);
            let stored = store.get(&key).await.unwrap().bytes().await.unwrap();
            assert_eq!(stored, log, "{key} is not byte-identical");
            leader.commit(&Change::Add(entry)).await.unwrap();
        }
        let late = upload_segment(
            store.as_ref(),
            &layout,
            18,
            23,
            0,
            &[(ObjectKind::Log, segment_log(18))],
        )
        .await
        .unwrap();
        let fenced = zombie.commit(&Change::Add(late)).await.unwrap_err();
        let RemoteError::Fenced { writer_epoch, stored_epoch, .. } = fenced else {
            panic!("the zombie was not fenced: {fenced}");
        };
        assert_eq!((writer_epoch, stored_epoch), (1, 2));
        let manifest = read_manifest(store.as_ref(), &layout).await.unwrap().unwrap();
        assert_eq!((manifest.log_start_offset, manifest.end_offset()), (0, 18));
        let reader = RemoteReader::new(layout.clone(), 1 << 20);
        for offset in 0..18 {
            let read = reader.read(store.as_ref(), &manifest, offset, 1).await.unwrap().unwrap();
            let batches: Vec<_> = Batches::new(&read.records).map(Result::unwrap).collect();
            assert_eq!(batches.len(), 1, "offset {offset}: one batch");
            let batch = &batches[0].batch;
            assert!(
                batch.base_offset(DecodeLimits::default()).unwrap() <= offset
                    && offset <= batch.last_offset()
            );
        }
    });
}
