//! A partition log's closed segments uploaded from its files and read back from the bucket:
//! every object byte-identical to the file it came from, and every offset read from the bucket
//! giving the batch the local log gives.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};
use seglog_format::{Batches, Compression, RecordBatchBuilder};
use seglog_storage::config::LogConfig;
use seglog_storage::io::{Fs, OpenMode};
use seglog_storage::log::load::LoadParams;
use seglog_storage::log::partition_log::{Isolation, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::testing::sim_with_dir;

use crate::layout::{ObjectKind, PartitionLayout};
use crate::local::read_segment_files;
use crate::manifest::Change;
use crate::reader::RemoteReader;
use crate::writer::{ManifestWriter, upload_segment};

fn dir() -> PathBuf {
    PathBuf::from("/logs/orders-0")
}

/// A log of about 40 segments: 400 batches of 1 to 7 records with keys, values of 20 to 300
/// bytes and a header, in segments of 4 KiB with an index entry every 512 bytes.
fn written_log(fs: &seglog_storage::io::SimFs) -> PartitionLog {
    let config =
        LogConfig { segment_bytes: 4096, index_interval_bytes: 512, ..LogConfig::default() };
    let tp = TopicPartition { topic: "orders".into(), partition: 0 };
    let params = LoadParams {
        had_clean_shutdown: true,
        log_start_offset_checkpoint: 0,
        recovery_point_checkpoint: 0,
        now_ms: 1_000,
    };
    let log = PartitionLog::open(Arc::new(fs.clone()), &dir(), tp, config, params).unwrap().0;
    for batch_idx in 0..400_usize {
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for record_idx in 0..=batch_idx % 7 {
            let value = vec![b'v'; 20 + (batch_idx * 37 + record_idx * 11) % 280];
            let key = format!("k{batch_idx}-{record_idx}");
            let header = seglog_format::HeaderRef { key: "h", value: Some(b"x") };
            builder
                .push(1_000 + batch_idx as i64, Some(key.as_bytes()), Some(&value), &[header])
                .unwrap();
        }
        log.append_as_leader(&builder.build().unwrap(), 3, AppendOrigin::Client, 1_000).unwrap();
    }
    log.flush(1_000).unwrap();
    log
}

fn local_bytes(fs: &dyn Fs, path: &Path) -> Vec<u8> {
    let file = fs.open(path, OpenMode::Read).unwrap();
    let mut bytes = vec![0; file.len().unwrap() as usize];
    file.read_exact_at(&mut bytes, 0).unwrap();
    bytes
}

#[test]
fn closed_segments_go_up_byte_identical_and_every_offset_reads_back_as_locally() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        let fs = sim_with_dir("/logs/orders-0");
        let log = written_log(&fs);
        let bases = log.segment_base_offsets().unwrap();
        assert!(bases.len() > 20, "{} segments", bases.len());
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let layout = PartitionLayout::new("tiered", "orders", 0, "AAAAAAAAAAAAAAAAAAAAAQ");
        let mut writer = ManifestWriter::acquire(Arc::clone(&store), layout.clone()).await.unwrap();
        // Every closed segment (all but the active one), in order.
        log.maybe_increment_leader_high_watermark().unwrap();
        let closed = log.closed_segments_from(0).unwrap();
        assert_eq!(closed.len(), bases.len() - 1);
        for (pair, segment) in bases.windows(2).zip(&closed) {
            let (base, next) = (pair[0], pair[1]);
            let largest_timestamp_ms = segment.largest_timestamp_ms;
            let objects = read_segment_files(&fs, &dir(), base, next).unwrap();
            let kinds: Vec<ObjectKind> = objects.iter().map(|(kind, _)| *kind).collect();
            assert!(kinds.starts_with(&[
                ObjectKind::Log,
                ObjectKind::Index,
                ObjectKind::TimeIndex
            ]));
            let entry = upload_segment(
                store.as_ref(),
                &layout,
                base,
                next - 1,
                largest_timestamp_ms,
                &objects,
            )
            .await
            .unwrap();
            for (kind, _) in &objects {
                // Files are named by the segment's base offset (the producer snapshot by its
                // end) and the object's suffix.
                let offset = if *kind == ObjectKind::ProducerSnapshot { next } else { base };
                let local =
                    local_bytes(&fs, &dir().join(format!("{offset:020}.{}", kind.suffix())));
                let key = layout.object_key(base, entry.id, *kind);
                let remote = store.get(&key).await.unwrap().bytes().await.unwrap();
                assert_eq!(remote.as_ref(), local.as_slice(), "{key} differs from its file");
            }
            writer.commit(&Change::Add(entry)).await.unwrap();
        }
        let manifest = writer.manifest().clone();
        let remote_end = manifest.end_offset();
        // By timestamp: the bucket answers as the local segments do, for every timestamp the
        // remote part holds (batch i has timestamp 1000 + i), and not past its end.
        for target in (990..1_410).step_by(7) {
            let local = log.fetch_offset_by_timestamp(target).unwrap();
            let remote = RemoteReader::new(layout.clone(), 1 << 20)
                .find_offset_by_timestamp(store.as_ref(), &manifest, target, 0)
                .await
                .unwrap();
            match local.filter(|found| found.offset < remote_end) {
                Some(found) => {
                    let remote = remote.unwrap_or_else(|| panic!("timestamp {target}"));
                    assert_eq!((remote.offset, remote.timestamp), (found.offset, found.timestamp));
                    assert_eq!(remote.leader_epoch, found.leader_epoch, "timestamp {target}");
                }
                None => assert_eq!(remote, None, "timestamp {target}: past the remote part"),
            }
        }
        assert_eq!(remote_end, *bases.last().unwrap());
        // A cache of 64 bytes holds at most 8 index entries: reads evict and fetch again; the
        // second reader also reads the .log objects in 1000-byte chunks, at most 8 kept.
        let plain = RemoteReader::new(layout.clone(), 64);
        let chunked = RemoteReader::new(layout.clone(), 64)
            .with_chunk_cache(Arc::new(crate::RemoteChunkCache::new(1000, 8000)));
        for (reader, offset) in
            [&plain, &chunked].into_iter().flat_map(|r| (0..remote_end).map(move |o| (r, o)))
        {
            for max_bytes in [1, 3000] {
                let read = reader.read(store.as_ref(), &manifest, offset, max_bytes).await.unwrap();
                let read = read.unwrap_or_else(|| panic!("offset {offset} is not read remotely"));
                let local = log.read(offset, max_bytes as u32, Isolation::LogEnd, true).unwrap();
                let remote_batches: Vec<&[u8]> = Batches::new(&read.records)
                    .map(|entry| entry.unwrap().batch.as_bytes())
                    .collect();
                let local_batches: Vec<&[u8]> = Batches::new(&local.records)
                    .map(|entry| entry.unwrap().batch.as_bytes())
                    .collect();
                assert!(!remote_batches.is_empty(), "offset {offset}: no batch");
                // The remote read stops at its segment's end; the local one may go on.
                assert_eq!(
                    remote_batches[..],
                    local_batches[..remote_batches.len()],
                    "offset {offset}, max {max_bytes}"
                );
                if max_bytes == 1 {
                    assert_eq!(remote_batches.len(), 1, "offset {offset}: one batch at least");
                }
            }
            assert!(reader.index_cache_bytes() <= 64);
        }
        // Nothing remote holds the active segment's offsets, nor any below the log start.
        assert_eq!(chunked.read(store.as_ref(), &manifest, remote_end, 100).await.unwrap(), None);
        let (expired, _) = manifest.apply(&Change::Expire { log_start_offset: 50 }).unwrap();
        assert_eq!(chunked.read(store.as_ref(), &expired, 49, 100).await.unwrap(), None);
        assert!(chunked.read(store.as_ref(), &expired, 50, 100).await.unwrap().is_some());
    });
}
