//! Real Kafka metadata files: every checkpoint, `partition.metadata`, `meta.properties` and
//! clean-shutdown marker in the fixtures reads, and the ones seglog writes are byte for byte
//! Kafka's.

#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr, clippy::pedantic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::checkpoint::{
    parse_leader_epoch_checkpoint, parse_offset_checkpoint, write_leader_epoch_checkpoint,
    write_offset_checkpoint,
};
use seglog_storage::dirs::checkpoint::{
    CLEANER_OFFSET_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE, OffsetCheckpointFile,
    RECOVERY_POINT_CHECKPOINT_FILE, REPLICATION_OFFSET_CHECKPOINT_FILE,
};
use seglog_storage::dirs::meta::{
    CLEAN_SHUTDOWN_FILE, CleanShutdownFile, META_PROPERTIES_FILE, MetaProperties,
    PARTITION_METADATA_FILE, PartitionMetadata,
};
use seglog_storage::io::{Fs, OpenMode, StdFs, read_all};
use seglog_storage::log::epoch_cache::{LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochFileCache};

fn kafka_real() -> Option<PathBuf> {
    seglog_storage::testing::kafka_real_fixtures()
}

/// Every file under `dir` whose name satisfies `wanted`, sorted.
fn files_named(fs: &StdFs, dir: &Path, wanted: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in fs.list(&dir).unwrap() {
            if fs.list(&path).is_ok() {
                pending.push(path);
            } else if wanted(&path.file_name().unwrap().to_string_lossy()) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn read_text(fs: &StdFs, path: &Path) -> String {
    String::from_utf8(read_all(fs.open(path, OpenMode::Read).unwrap().as_ref()).unwrap()).unwrap()
}

#[test]
fn every_fixture_checkpoint_parses() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let paths = files_named(&fs, &root, &|name| name.ends_with("-checkpoint"));
    let (mut n_offset_files, mut n_epoch_files, mut n_offsets, mut n_epochs) = (0, 0, 0, 0);
    for path in &paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = read_text(&fs, path);
        match name.as_str() {
            LEADER_EPOCH_CHECKPOINT_FILE => {
                let entries = parse_leader_epoch_checkpoint(&text)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                let cache = LeaderEpochFileCache::load(Arc::new(StdFs), path.parent().unwrap())
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                // Kafka's own files are already in order, so loading keeps every entry.
                assert_eq!(cache.entries(), entries.as_slice(), "{}", path.display());
                if !text.is_empty() {
                    assert_eq!(write_leader_epoch_checkpoint(&entries), text, "{}", path.display());
                }
                n_epoch_files += 1;
                n_epochs += entries.len();
            }
            RECOVERY_POINT_CHECKPOINT_FILE
            | LOG_START_OFFSET_CHECKPOINT_FILE
            | REPLICATION_OFFSET_CHECKPOINT_FILE
            | CLEANER_OFFSET_CHECKPOINT_FILE => {
                let entries = parse_offset_checkpoint(&text)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                let offsets = OffsetCheckpointFile::new(path)
                    .read(&fs)
                    .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
                assert_eq!(offsets.len(), entries.len(), "{}: no duplicates", path.display());
                for entry in &entries {
                    let key = (entry.topic.clone(), entry.partition);
                    assert_eq!(offsets.get(&key), Some(&entry.offset), "{}", path.display());
                }
                if !text.is_empty() {
                    assert_eq!(write_offset_checkpoint(&entries), text, "{}", path.display());
                }
                n_offset_files += 1;
                n_offsets += entries.len();
            }
            other => panic!("{}: unknown checkpoint {other:?}", path.display()),
        }
    }
    println!(
        "{n_offset_files} offset checkpoints ({n_offsets} entries), \
         {n_epoch_files} leader-epoch checkpoints ({n_epochs} entries)"
    );
    assert!(n_offset_files >= 100, "only {n_offset_files} offset checkpoints");
    assert!(n_epoch_files >= 300, "only {n_epoch_files} leader-epoch checkpoints");
    assert!(n_offsets >= 500 && n_epochs >= 100, "{n_offsets} offsets, {n_epochs} epochs");
}

#[test]
fn leftover_tmp_checkpoints_in_the_fixtures_are_ignored() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let tmps = files_named(&fs, &root, &|name| name.ends_with("-checkpoint.tmp"));
    assert!(!tmps.is_empty());
    for tmp in tmps {
        let target = tmp.with_extension("");
        assert!(target.to_string_lossy().ends_with("-checkpoint"), "{}", target.display());
        // The target reads on its own whatever the temp file holds (here the target may be
        // missing or empty, as Kafka left it).
        OffsetCheckpointFile::new(&target).read(&fs).unwrap();
    }
}

#[test]
fn every_fixture_partition_metadata_round_trips_byte_for_byte() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let paths = files_named(&fs, &root, &|name| name == PARTITION_METADATA_FILE);
    assert!(paths.len() >= 100, "only {} partition.metadata files", paths.len());
    for path in &paths {
        let text = read_text(&fs, path);
        let metadata = PartitionMetadata::read(&fs, path.parent().unwrap())
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .unwrap();
        assert_eq!(metadata.version, 0);
        assert_eq!(metadata.to_text(), text, "{}", path.display());
        assert_eq!(PartitionMetadata::parse(&text).unwrap(), metadata);
    }
}

#[test]
fn every_fixture_meta_properties_parses() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let paths = files_named(&fs, &root, &|name| name == META_PROPERTIES_FILE);
    assert!(paths.len() >= 20, "only {} meta.properties files", paths.len());
    let mut n_v1 = 0;
    for path in &paths {
        let meta = MetaProperties::read(&fs, path.parent().unwrap())
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .unwrap();
        assert!(meta.node_id.is_some(), "{}", path.display());
        assert!(meta.other.is_empty(), "{}: {:?}", path.display(), meta.other);
        if meta.version == 1 {
            assert!(meta.cluster_id.is_some() && meta.directory_id.is_some());
            n_v1 += 1;
        }
        assert_eq!(MetaProperties::parse(&meta.to_text()).unwrap(), meta);
    }
    assert!(n_v1 > 0, "no KRaft meta.properties");
}

#[test]
fn every_fixture_clean_shutdown_marker_reads() {
    let Some(root) = kafka_real() else { return };
    let fs = StdFs;
    let paths = files_named(&fs, &root, &|name| name == CLEAN_SHUTDOWN_FILE);
    assert!(paths.len() >= 3, "only {} markers", paths.len());
    let mut epochs = Vec::new();
    for path in &paths {
        let dir = path.parent().unwrap();
        assert!(CleanShutdownFile::exists(&fs, dir).unwrap());
        epochs.push(CleanShutdownFile::broker_epoch(&fs, dir).unwrap());
    }
    // Kafka 3.7+ writes the JSON form (-1 before registration); older brokers an empty file.
    assert!(epochs.contains(&Some(-1)), "{epochs:?}");
    assert!(epochs.contains(&None), "{epochs:?}");
}
