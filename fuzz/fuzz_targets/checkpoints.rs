//! The input as the text of every small file storage reads: the offset checkpoints,
//! `leader-epoch-checkpoint`, `meta.properties`, `partition.metadata`, and topic and broker
//! configuration. Nothing may panic, and wherever a writer exists, parse then write then parse
//! gives the same value back.

#![no_main]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use seglog_format::checkpoint::{
    parse_leader_epoch_checkpoint, parse_offset_checkpoint, write_leader_epoch_checkpoint,
    write_offset_checkpoint,
};
use seglog_storage::config::{BrokerLogConfig, LogConfig, parse_properties, write_properties};
use seglog_storage::dirs::checkpoint::{OffsetCheckpointFile, RECOVERY_POINT_CHECKPOINT_FILE};
use seglog_storage::dirs::meta::{
    META_PROPERTIES_FILE, MetaProperties, PARTITION_METADATA_FILE, PartitionMetadata,
};
use seglog_storage::io::{Fs, OpenMode, SimFs};
use seglog_storage::log::epoch_cache::{LEADER_EPOCH_CHECKPOINT_FILE, LeaderEpochFileCache};

fn write_file(fs: &SimFs, path: &Path, bytes: &[u8]) {
    let file = fs.open(path, OpenMode::CreateNew).expect("create a file on SimFs");
    file.write_all_at(bytes, 0).expect("write on SimFs");
}

fn log_config_round_trip(config: &LogConfig) {
    let properties = config.to_properties();
    let again = LogConfig::from_properties(&properties).expect("to_properties parses back");
    assert_eq!(&again, config, "LogConfig through to_properties");
    let text = write_properties(&properties);
    let parsed = parse_properties(&text).expect("write_properties parses back");
    assert_eq!(parsed, properties, "LogConfig properties through text");
    black_box((config.max_segment_ms(), config.init_file_bytes(), config.is_compact()));
    black_box((config.segment_jitter_ms_for(u64::MAX), config.segment_jitter_ms_for(7)));
}

fn checkpoints(text: &str) {
    if let Ok(entries) = parse_offset_checkpoint(text) {
        let written = write_offset_checkpoint(&entries);
        assert_eq!(parse_offset_checkpoint(&written).as_ref(), Ok(&entries), "{written:?}");
    }
    if let Ok(entries) = parse_leader_epoch_checkpoint(text) {
        let written = write_leader_epoch_checkpoint(&entries);
        assert_eq!(parse_leader_epoch_checkpoint(&written).as_ref(), Ok(&entries), "{written:?}");
    }
}

fn metadata(text: &str) {
    if let Ok(meta) = MetaProperties::parse(text) {
        let written = meta.to_text();
        let again = MetaProperties::parse(&written).expect("meta.properties parses back");
        assert_eq!(again, meta, "meta.properties through {written:?}");
    }
    if let Ok(partition) = PartitionMetadata::parse(text) {
        let written = partition.to_text();
        let again = PartitionMetadata::parse(&written).expect("partition.metadata parses back");
        assert_eq!(again, partition, "partition.metadata through {written:?}");
    }
}

fn config(text: &str) {
    if let Ok(properties) = parse_properties(text) {
        let written = write_properties(&properties);
        let again = parse_properties(&written).expect("write_properties parses back");
        assert_eq!(again, properties, "properties through {written:?}");
        if let Ok(config) = LogConfig::from_properties(&properties) {
            log_config_round_trip(&config);
            if let Ok(overridden) = config.with_overrides(&properties) {
                assert_eq!(overridden, config, "overriding with the same keys changes nothing");
            }
        }
        let broker = BrokerLogConfig::from_properties(&properties);
        assert_eq!(broker, BrokerLogConfig::from_server_properties(text), "the two broker paths");
        if let Ok(broker) = broker {
            log_config_round_trip(&broker.default_log_config);
        }
    } else {
        let _ = black_box(BrokerLogConfig::from_server_properties(text));
    }
}

/// The same bytes as files on the simulated file system, read by storage's readers.
fn files(data: &[u8], text: Option<&str>) {
    let sim = SimFs::new();
    let dir = Path::new("/d/t-0");
    let other = Path::new("/d/copy");
    sim.create_dir_all(dir).expect("mkdir on SimFs");
    sim.create_dir_all(other).expect("mkdir on SimFs");
    for name in [
        RECOVERY_POINT_CHECKPOINT_FILE,
        LEADER_EPOCH_CHECKPOINT_FILE,
        META_PROPERTIES_FILE,
        PARTITION_METADATA_FILE,
    ] {
        write_file(&sim, &dir.join(name), data);
    }
    let fs: Arc<dyn Fs> = Arc::new(sim.clone());

    let checkpoint = OffsetCheckpointFile::in_dir(dir, RECOVERY_POINT_CHECKPOINT_FILE);
    if let Ok(offsets) = checkpoint.read(&sim) {
        let copy = OffsetCheckpointFile::in_dir(other, RECOVERY_POINT_CHECKPOINT_FILE);
        // Writing refuses topics that are not legal names; anything written reads back.
        if copy.write(&sim, &offsets).is_ok() {
            assert_eq!(copy.read(&sim).expect("a written checkpoint reads"), offsets);
        }
    }

    if let Ok(mut cache) = LeaderEpochFileCache::load(Arc::clone(&fs), dir) {
        let entries = cache.entries().to_vec();
        for pair in entries.windows(2) {
            assert!(pair[0].epoch < pair[1].epoch, "epochs increase: {pair:?}");
            assert!(pair[0].start_offset < pair[1].start_offset, "offsets increase: {pair:?}");
        }
        let written = write_leader_epoch_checkpoint(&entries);
        write_file(&sim, &other.join(LEADER_EPOCH_CHECKPOINT_FILE), written.as_bytes());
        let again = LeaderEpochFileCache::load(Arc::clone(&fs), other).expect("a written cache");
        assert_eq!(again.entries(), entries.as_slice(), "leader epochs through {written:?}");
        let probe = entries.first().map_or(0, |entry| entry.start_offset);
        let epoch = entries.last().map_or(0, |entry| entry.epoch);
        black_box((cache.epoch_for_offset(probe), cache.epoch_for_offset(probe.saturating_add(1))));
        black_box((cache.end_offset_for(epoch, i64::MAX), cache.end_offset_for(epoch - 1, 0)));
        black_box((cache.latest_entry(), cache.earliest_entry(), cache.latest_epoch()));
        let _ = black_box(cache.truncate_from_end(probe.saturating_add(1)));
        let _ = black_box(cache.truncate_from_start(probe));
        let _ = black_box(cache.assign(epoch, probe));
    }

    let meta = MetaProperties::read(&sim, dir);
    let partition = PartitionMetadata::read(&sim, dir);
    if let Some(text) = text {
        // The file readers agree with the text parsers.
        let parsed = MetaProperties::parse(text);
        assert_eq!(meta.as_ref().ok().cloned().flatten(), parsed.as_ref().ok().cloned());
        let parsed = PartitionMetadata::parse(text);
        assert_eq!(partition.as_ref().ok().copied().flatten(), parsed.as_ref().ok().copied());
    }
    if let Ok(Some(meta)) = meta
        && meta.write(&sim, other).is_ok()
    {
        let again = MetaProperties::read(&sim, other).expect("a written meta.properties");
        assert_eq!(again, Some(meta));
    }
    if let Ok(Some(partition)) = partition
        && partition.write(&sim, other).is_ok()
    {
        let again = PartitionMetadata::read(&sim, other).expect("a written partition.metadata");
        assert_eq!(again, Some(partition));
    }
}

fuzz_target!(|data: &[u8]| {
    let text = std::str::from_utf8(data).ok();
    let lossy = String::from_utf8_lossy(data);
    checkpoints(&lossy);
    metadata(&lossy);
    config(&lossy);
    files(data, text);
});
