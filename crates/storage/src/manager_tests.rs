//! `LogManager` on the simulated file system: topics, restarts clean and unclean, crash points
//! of topic deletion and checkpoint writes, the directory lock, and a failed directory going
//! offline while the others keep working.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use seglog_format::{Compression, RecordBatchBuilder};

use crate::config::BrokerLogConfig;
use crate::dirs::meta::PartitionMetadata;
use crate::error::Error;
use crate::io::{FaultKind, FaultPlan, Fs, SimFs};
use crate::log::partition_log::{Isolation, TopicPartition};
use crate::log::validator::AppendOrigin;
use crate::manager::{CLEAN_SHUTDOWN_FILE, LogManager, ManualClock};

fn dirs() -> Vec<PathBuf> {
    vec![PathBuf::from("/data/a"), PathBuf::from("/data/b")]
}

fn open(fs: &SimFs) -> LogManager {
    let config = BrokerLogConfig { log_dirs: dirs(), ..BrokerLogConfig::default() };
    LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(1_000)), config).unwrap().0
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition { topic: topic.into(), partition }
}

fn produce(manager: &LogManager, tp: &TopicPartition, n: usize) {
    let mut builder = RecordBatchBuilder::new(Compression::Lz4);
    for idx in 0..n {
        builder.push(1_000 + idx as i64, None, Some(b"payload"), &[]).unwrap();
    }
    let log = manager.get_log(tp).unwrap();
    log.append_as_leader(&builder.build().unwrap(), 0, AppendOrigin::Client, 1_000).unwrap();
}

#[test]
fn topics_are_created_spread_over_dirs_and_survive_a_clean_restart() {
    let fs = SimFs::new();
    let manager = open(&fs);
    let created = manager.create_topic("orders", 4, BTreeMap::new()).unwrap();
    assert_eq!(created.len(), 4);
    let in_a = fs
        .list(Path::new("/data/a"))
        .unwrap()
        .iter()
        .filter(|p| p.to_string_lossy().contains("orders-"))
        .count();
    assert_eq!(in_a, 2, "partitions go to the directory with the fewest");
    assert!(matches!(
        manager.create_topic("orders", 1, BTreeMap::new()),
        Err(Error::TopicAlreadyExists { .. })
    ));
    for bad in ["../etc", "a/b", "", ".."] {
        assert!(manager.create_topic(bad, 1, BTreeMap::new()).is_err(), "{bad:?}");
    }
    for partition in 0..4 {
        produce(&manager, &tp("orders", partition), 10 + partition as usize);
    }
    manager.get_log(&tp("orders", 1)).unwrap().update_high_watermark(11).unwrap();
    manager.shutdown().unwrap();
    drop(manager);
    assert!(fs.exists(&PathBuf::from("/data/a").join(CLEAN_SHUTDOWN_FILE)).unwrap());
    fs.crash(3); // a clean shutdown made everything durable
    let config = BrokerLogConfig { log_dirs: dirs(), ..BrokerLogConfig::default() };
    let (manager, report) =
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(2_000)), config).unwrap();
    assert_eq!(report.clean_dirs.len(), 2);
    assert!(
        report.partitions.values().all(|load| load.segments_recovered == 0),
        "no scan after a clean shutdown"
    );
    for partition in 0..4 {
        let log = manager.get_log(&tp("orders", partition)).unwrap();
        assert_eq!(log.log_end_offset().unwrap(), 10 + i64::from(partition));
    }
    assert_eq!(
        manager.get_log(&tp("orders", 1)).unwrap().high_watermark().unwrap(),
        11,
        "HW from the checkpoint"
    );
    assert!(
        !fs.exists(&PathBuf::from("/data/a").join(CLEAN_SHUTDOWN_FILE)).unwrap(),
        "the marker is consumed"
    );
}

#[test]
fn an_unclean_restart_recovers_from_the_checkpointed_recovery_point() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 1, BTreeMap::new()).unwrap();
    produce(&manager, &tp("t", 0), 5);
    manager.get_log(&tp("t", 0)).unwrap().flush(1_000).unwrap();
    manager.checkpoint().unwrap();
    produce(&manager, &tp("t", 0), 5);
    drop(manager);
    fs.crash(9);
    let config = BrokerLogConfig { log_dirs: dirs(), ..BrokerLogConfig::default() };
    let (manager, report) =
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(2_000)), config).unwrap();
    assert!(report.clean_dirs.is_empty());
    let log = manager.get_log(&tp("t", 0)).unwrap();
    let end = log.log_end_offset().unwrap();
    assert!((5..=10).contains(&end), "flushed records survive; unflushed may: {end}");
}

#[test]
fn two_managers_cannot_share_a_directory() {
    let fs = SimFs::new();
    let first = open(&fs);
    let config = BrokerLogConfig { log_dirs: dirs(), ..BrokerLogConfig::default() };
    let error =
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(0)), config.clone())
            .unwrap_err();
    assert!(error.to_string().contains("lock"), "{error}");
    first.shutdown().unwrap();
    drop(first);
    assert!(LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(0)), config).is_ok());
}

#[test]
fn topic_delete_renames_then_removes_and_survives_a_crash_at_each_step() {
    for crash_after_ops in 0..12u64 {
        let fs = SimFs::new();
        let manager = open(&fs);
        manager.create_topic("gone", 2, BTreeMap::new()).unwrap();
        manager.create_topic("kept", 1, BTreeMap::new()).unwrap();
        produce(&manager, &tp("gone", 0), 3);
        produce(&manager, &tp("kept", 0), 3);
        manager.shutdown().unwrap();
        drop(manager);
        let manager = open(&fs);
        let before = fs.op_count();
        fs.set_fault_plan(FaultPlan::FailNth { n: crash_after_ops + 1, kind: FaultKind::Eio });
        let deleted = manager.delete_topic("gone");
        fs.set_fault_plan(FaultPlan::None);
        if deleted.is_ok() {
            manager.tick(1_000_000);
        }
        let ran_ops = fs.op_count() - before;
        drop(manager);
        fs.crash(crash_after_ops);
        let manager = open(&fs);
        let remaining = manager.partitions();
        // The kept topic is always whole; the deleted one is either whole or entirely gone
        // partition by partition, never half a directory.
        assert!(remaining.contains(&tp("kept", 0)), "step {crash_after_ops}");
        assert_eq!(manager.get_log(&tp("kept", 0)).unwrap().log_end_offset().unwrap(), 3);
        if let Ok(log) = manager.get_log(&tp("gone", 0)) {
            assert_eq!(
                log.log_end_offset().unwrap(),
                3,
                "step {crash_after_ops}: a surviving partition is intact"
            );
        }
        let leftovers: Vec<_> = dirs()
            .iter()
            .flat_map(|dir| fs.list(dir).unwrap())
            .filter(|p| p.to_string_lossy().ends_with("-delete"))
            .collect();
        assert!(
            leftovers.is_empty(),
            "step {crash_after_ops} ({ran_ops} ops): -delete dirs are removed at open: {leftovers:?}"
        );
    }
}

/// One partition deleted (a replica a reassignment moved away): the others, the topic's id
/// and its configs stay, and a restart does not bring it back; the last one takes the id.
#[test]
fn a_partition_is_deleted_alone() {
    let fs = SimFs::new();
    let manager = open(&fs);
    let overrides = BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]);
    manager.create_topic("t", 2, overrides.clone()).unwrap();
    produce(&manager, &tp("t", 0), 3);
    produce(&manager, &tp("t", 1), 3);
    let id = manager.topic_id("t");
    assert_eq!(manager.delete_partition(&tp("t", 1)).unwrap(), 1);
    manager.tick(1_000_000);
    assert_eq!(manager.partitions(), vec![tp("t", 0)]);
    assert_eq!((manager.topic_id("t"), manager.topic_overrides("t")), (id, overrides));
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&fs);
    assert_eq!(manager.partitions(), vec![tp("t", 0)], "gone for good");
    assert_eq!(manager.get_log(&tp("t", 0)).unwrap().log_end_offset().unwrap(), 3);
    assert_eq!(manager.delete_partition(&tp("t", 0)).unwrap(), 1);
    assert_eq!(manager.topic_id("t"), None, "the last partition takes the topic's id");
    assert!(manager.delete_partition(&tp("t", 0)).is_err(), "nothing left to delete");
}

#[test]
fn a_failed_directory_goes_offline_and_the_other_keeps_working() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 2, BTreeMap::new()).unwrap();
    // Partition 0 is in /data/a, partition 1 in /data/b.
    let in_a = manager.get_log(&tp("t", 0)).unwrap().dir().starts_with("/data/a");
    let (failing, healthy) = if in_a { (tp("t", 0), tp("t", 1)) } else { (tp("t", 1), tp("t", 0)) };
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    let log = manager.get_log(&failing).unwrap();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(1, None, Some(b"x"), &[]).unwrap();
    assert!(log.append_as_leader(&builder.build().unwrap(), 0, AppendOrigin::Client, 1).is_err());
    fs.set_fault_plan(FaultPlan::None);
    manager.tick(2_000);
    assert!(matches!(manager.get_log(&failing), Err(Error::Offline { .. })));
    produce(&manager, &healthy, 4);
    let read =
        manager.get_log(&healthy).unwrap().read(0, 10_000, Isolation::LogEnd, false).unwrap();
    assert!(!read.records.is_empty());
}

#[test]
fn checkpoint_writes_are_atomic_under_crashes() {
    for step in 0..10u64 {
        let fs = SimFs::new();
        let manager = open(&fs);
        manager.create_topic("c", 1, BTreeMap::new()).unwrap();
        produce(&manager, &tp("c", 0), 4);
        manager.get_log(&tp("c", 0)).unwrap().flush(1).unwrap();
        manager.checkpoint().unwrap();
        produce(&manager, &tp("c", 0), 4);
        manager.get_log(&tp("c", 0)).unwrap().flush(2).unwrap();
        fs.set_fault_plan(FaultPlan::FailNth { n: step + 1, kind: FaultKind::Eio });
        let _ = manager.checkpoint();
        fs.set_fault_plan(FaultPlan::None);
        drop(manager);
        fs.crash(step);
        let manager = open(&fs);
        let log = manager.get_log(&tp("c", 0)).unwrap();
        assert!(log.recovery_point().unwrap() <= log.log_end_offset().unwrap(), "step {step}");
        assert!(log.log_end_offset().unwrap() >= 4, "step {step}: flushed records survive");
    }
}

#[test]
fn topic_overrides_persist_and_apply_live() {
    let fs = SimFs::new();
    let manager = open(&fs);
    let overrides = BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]);
    manager.create_topic("short", 1, overrides.clone()).unwrap();
    assert_eq!(manager.get_log(&tp("short", 0)).unwrap().config().unwrap().retention_ms, 1000);
    let bad = BTreeMap::from([("segment.bytes".to_owned(), "1".to_owned())]);
    assert!(manager.set_topic_overrides("short", bad).is_err(), "Kafka's ranges are enforced");
    let longer = BTreeMap::from([("retention.ms".to_owned(), "5000".to_owned())]);
    manager.set_topic_overrides("short", longer.clone()).unwrap();
    assert_eq!(manager.get_log(&tp("short", 0)).unwrap().config().unwrap().retention_ms, 5000);
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&fs);
    assert_eq!(manager.topic_overrides("short"), longer);
    assert_eq!(manager.get_log(&tp("short", 0)).unwrap().config().unwrap().retention_ms, 5000);
}

#[test]
fn partition_metadata_is_written_before_data() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("ids", 2, BTreeMap::new()).unwrap();
    let ids: Vec<[u8; 16]> = (0..2)
        .map(|p| {
            let dir = manager.get_log(&tp("ids", p)).unwrap().dir();
            PartitionMetadata::read(&fs, &dir).unwrap().unwrap().topic_id
        })
        .collect();
    assert_eq!(ids[0], ids[1], "one id per topic");
    assert_ne!(ids[0], [0; 16]);
}

/// Group commit through the background thread: an append becomes durable without anyone
/// calling flush, and a waiter wakes when it does.
#[test]
fn background_thread_makes_group_commit_appends_durable() {
    let fs = SimFs::new();
    let default_log_config = crate::config::LogConfig {
        durability: crate::config::DurabilityMode::GroupCommit,
        group_commit_interval_ms: 1,
        ..crate::config::LogConfig::default()
    };
    let config =
        BrokerLogConfig { log_dirs: dirs(), default_log_config, ..BrokerLogConfig::default() };
    let manager = Arc::new(
        LogManager::open(Arc::new(fs.clone()), Arc::new(crate::manager::SystemClock), config)
            .unwrap()
            .0,
    );
    manager.create_topic("gc", 1, BTreeMap::new()).unwrap();
    let background = manager.start_background(std::time::Duration::from_millis(1)).unwrap();
    produce(&manager, &tp("gc", 0), 5);
    let log = manager.get_log(&tp("gc", 0)).unwrap();
    assert!(log.wait_durable(5, std::time::Duration::from_secs(30)).unwrap());
    assert_eq!(log.recovery_point().unwrap(), 5);
    drop(background);
    drop(log);
    drop(manager);
    fs.crash(4);
    let manager = open(&fs);
    assert_eq!(manager.get_log(&tp("gc", 0)).unwrap().log_end_offset().unwrap(), 5);
}

#[test]
fn new_directories_get_meta_properties_and_existing_ones_are_kept() {
    let fs = SimFs::new();
    let manager = open(&fs);
    let meta = crate::dirs::meta::MetaProperties::read(&fs, Path::new("/data/a")).unwrap().unwrap();
    assert_eq!((meta.version, meta.node_id), (1, Some(1)));
    let cluster_id = meta.cluster_id.clone().unwrap();
    assert_eq!(cluster_id.len(), 22);
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open(&fs);
    let again =
        crate::dirs::meta::MetaProperties::read(&fs, Path::new("/data/a")).unwrap().unwrap();
    assert_eq!(again.cluster_id, Some(cluster_id), "an existing identity is never rewritten");
    drop(manager);
}

#[test]
fn producer_ids_are_never_handed_out_twice_even_after_a_crash() {
    let fs = SimFs::new();
    let manager = open(&fs);
    let first: Vec<i64> = (0..3).map(|_| manager.allocate_producer_id().unwrap()).collect();
    assert_eq!(first, vec![0, 1, 2]);
    drop(manager);
    // Power loss: the block reservation was durable before any id of it was used.
    fs.crash(3);
    let manager = open(&fs);
    let next = manager.allocate_producer_id().unwrap();
    assert_eq!(next, crate::manager::PRODUCER_ID_BLOCK_IDS, "a fresh block after the first");
    for _ in 1..crate::manager::PRODUCER_ID_BLOCK_IDS {
        manager.allocate_producer_id().unwrap();
    }
    assert_eq!(manager.allocate_producer_id().unwrap(), 2 * crate::manager::PRODUCER_ID_BLOCK_IDS);
}

/// The config of the creation tests, which open managers hundreds of times: no cleaner, and
/// 4 KiB indexes (SimFs holds a preallocated 10 MiB index in memory, zeroed).
fn creation_config() -> BrokerLogConfig {
    let cleaner =
        crate::cleaner::CleanerConfig { enable: false, ..crate::cleaner::CleanerConfig::default() };
    let default_log_config = crate::config::LogConfig {
        segment_index_bytes: 4096,
        ..crate::config::LogConfig::default()
    };
    BrokerLogConfig { log_dirs: dirs(), cleaner, default_log_config, ..BrokerLogConfig::default() }
}

fn open_for_creation(fs: &SimFs) -> LogManager {
    LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(1_000)), creation_config())
        .unwrap()
        .0
}

/// The live partition directories of `topic` in every log directory.
fn partition_dirs(fs: &SimFs, topic: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in dirs() {
        for entry in fs.list(&dir).unwrap() {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if let Some(partition) = name.strip_prefix(&format!("{topic}-"))
                && partition.parse::<i32>().is_ok()
            {
                found.push(entry);
            }
        }
    }
    found
}

/// The entries for `topic` on disk (partition directories and creation markers) in every log
/// directory.
fn topic_on_disk(fs: &SimFs, topic: &str) -> Vec<String> {
    let mut names = Vec::new();
    for dir in dirs() {
        for entry in fs.list(&dir).unwrap() {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(&format!("{topic}-")) || name.contains(&format!("creating-{topic}"))
            {
                names.push(name);
            }
        }
    }
    names
}

#[test]
fn a_topic_whose_creation_fails_is_rolled_back_whole() {
    // An I/O error at each operation of a 3-partition creation in turn: the call fails, no
    // partition of the topic is served, and after a restart none is on disk either (the failed
    // directory went offline, so its half is removed by the next open's rollback).
    let mut n = 1;
    loop {
        let fs = SimFs::new();
        let manager = open_for_creation(&fs);
        manager.create_topic("kept", 2, BTreeMap::new()).unwrap();
        fs.set_fault_plan(FaultPlan::FailNth { n, kind: FaultKind::Eio });
        let result = manager.create_topic("orders", 3, BTreeMap::new());
        fs.set_fault_plan(FaultPlan::None);
        let Err(error) = result else {
            // n is past the creation's last operation: it succeeded whole.
            assert_eq!(manager.partitions().iter().filter(|tp| tp.topic == "orders").count(), 3);
            assert!(n > 20, "a creation of 3 partitions takes more than {n} operations");
            break;
        };
        assert!(
            manager.partitions().iter().all(|tp| tp.topic != "orders"),
            "op {n}: {error}: a half-made topic is served"
        );
        drop(manager);
        let reopened = open_for_creation(&fs);
        assert!(
            reopened.partitions().iter().all(|tp| tp.topic != "orders"),
            "op {n}: after a restart the half-made topic is back"
        );
        assert_eq!(topic_on_disk(&fs, "orders"), Vec::<String>::new(), "op {n}");
        assert_eq!(reopened.partitions().len(), 2, "op {n}: the other topic stays");
        // The name is free again.
        reopened.create_topic("orders", 3, BTreeMap::new()).unwrap();
        n += 1;
    }
}

#[test]
fn a_crash_during_a_topic_creation_leaves_all_of_it_or_none() {
    // Power loss after each operation of a creation in turn (the operation after it fails, then
    // the crash): the next open serves all 3 partitions or none, never a part, and a topic
    // growing by CreatePartitions keeps its old partitions either way.
    let mut n = 1;
    let mut seen = [false; 2];
    loop {
        let fs = SimFs::new();
        let manager = open_for_creation(&fs);
        manager.create_topic("grown", 1, BTreeMap::new()).unwrap();
        manager.shutdown().unwrap();
        drop(manager);
        let manager = open_for_creation(&fs);
        fs.set_fault_plan(FaultPlan::FailNth { n, kind: FaultKind::Eio });
        let created = manager.create_topic("orders", 3, BTreeMap::new()).is_ok();
        let grew = created && manager.create_partitions("grown", 2).is_ok();
        fs.set_fault_plan(FaultPlan::None);
        drop(manager);
        fs.crash(n);
        let (reopened, report) = LogManager::open(
            Arc::new(fs.clone()),
            Arc::new(ManualClock::new(5_000)),
            creation_config(),
        )
        .unwrap();
        let count =
            |topic: &str| reopened.partitions().iter().filter(|tp| tp.topic == topic).count();
        let orders = count("orders");
        assert!(
            orders == 0 || orders == 3,
            "crash at op {n}: {orders} of 3 partitions: {report:?}"
        );
        let grown = count("grown");
        assert!(grown == 1 || grown == 2, "crash at op {n}: grown has {grown} partitions");
        // A partition that survived has its partition.metadata, with its topic's one id.
        for topic in ["orders", "grown"] {
            let ids: Vec<_> = partition_dirs(&fs, topic)
                .iter()
                .map(|dir| PartitionMetadata::read(&fs, dir).unwrap().map(|meta| meta.topic_id))
                .collect();
            assert!(
                ids.iter().all(|id| id.is_some() && *id == ids[0]),
                "crash at op {n}: the topic ids of {topic}: {ids:?}"
            );
        }
        if created && grew {
            // Both calls returned: both are durable.
            assert_eq!((orders, grown), (3, 2), "crash at op {n}");
            assert!(seen[0] && seen[1], "both outcomes were seen before success");
            break;
        }
        seen[usize::from(orders == 3)] = true;
        assert!(
            topic_on_disk(&fs, "orders").iter().all(|name| !name.contains("creating")),
            "crash at op {n}: a marker is left after the open"
        );
        n += 1;
    }
}

#[test]
fn concurrent_creations_of_one_topic_make_it_once_and_fail_nothing_else() {
    // Found by librdkafka's suite: two CreateTopics of one name at once both passed the
    // existence check, wrote the same creation marker, and the second rename of its temporary
    // file failed, taking the log directory offline.
    let fs = SimFs::new();
    let manager = Arc::new(open_for_creation(&fs));
    for round in 0..20 {
        let topic = format!("race-{round}");
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let manager = Arc::clone(&manager);
                let topic = topic.clone();
                std::thread::spawn(move || manager.create_topic(&topic, 2, BTreeMap::new()))
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let created = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(created, 1, "round {round}: {results:?}");
        assert!(
            results.iter().all(|r| matches!(r, Ok(_) | Err(Error::TopicAlreadyExists { .. }))),
            "round {round}: {results:?}"
        );
        assert!(manager.offline_dirs().is_empty(), "round {round}");
    }
}

#[test]
fn ticks_visit_only_the_logs_with_background_work() {
    // 300 idle partitions: after the first tick (every log is queued at open), ticks visit
    // none of them; an append queues its log for one visit; a group-commit log with unflushed
    // data stays until its flush; a retention pass visits every log once.
    let fs = SimFs::new();
    let clock = Arc::new(ManualClock::new(1_000));
    let mut config = creation_config();
    config.retention_check_interval_ms = 60_000;
    let manager = LogManager::open(Arc::new(fs.clone()), clock, config).unwrap().0;
    manager.create_topic("idle", 300, BTreeMap::new()).unwrap();
    let group_commit =
        BTreeMap::from([("seglog.durability".to_owned(), "group-commit".to_owned())]);
    manager.create_topic("gc", 1, group_commit).unwrap();
    manager.tick(1_001);
    let visits = |manager: &LogManager| manager.background_visits();
    let after_first = visits(&manager);
    assert!(after_first >= 301, "the first tick visits every new log: {after_first}");
    for now in 1_002..1_012 {
        manager.tick(now);
    }
    assert_eq!(visits(&manager), after_first, "idle ticks visit nothing");
    produce(&manager, &tp("idle", 7), 3);
    manager.tick(1_012);
    assert_eq!(visits(&manager), after_first + 1, "an append queues its log once");
    manager.tick(1_013);
    assert_eq!(visits(&manager), after_first + 1, "then it leaves (nothing can become due)");
    produce(&manager, &tp("gc", 0), 3);
    let gc = manager.get_log(&tp("gc", 0)).unwrap();
    let before = visits(&manager);
    let mut now = 1_014;
    while gc.recovery_point().unwrap() < 3 {
        manager.tick(now);
        now += 1;
        assert!(now < 2_000, "the group commit never flushed");
    }
    assert!(visits(&manager) > before, "the group-commit log was visited until its flush");
    let flushed = visits(&manager);
    manager.tick(now);
    manager.tick(now + 1);
    assert_eq!(visits(&manager), flushed, "the tick that flushed it released it");
    manager.tick(61_001);
    assert_eq!(visits(&manager), flushed + 301, "a retention pass visits every log");
    manager.tick(61_002);
    assert_eq!(visits(&manager), flushed + 301, "and queues none again");
}

fn open_lazily(fs: &SimFs) -> LogManager {
    let config =
        BrokerLogConfig { log_dirs: dirs(), load_lazily: true, ..BrokerLogConfig::default() };
    let (manager, report) =
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(2_000)), config).unwrap();
    assert!(report.partitions.is_empty(), "a lazy open loads nothing");
    manager
}

/// The offset checkpoint files of both directories, as bytes.
fn checkpoint_bytes(fs: &SimFs) -> Vec<Vec<u8>> {
    let mut files = Vec::new();
    for dir in dirs() {
        for name in [
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
            "replication-offset-checkpoint",
        ] {
            let file = fs.open(&dir.join(name), crate::io::OpenMode::Read).unwrap();
            files.push(crate::io::read_all(file.as_ref()).unwrap());
        }
    }
    files
}

#[test]
fn a_lazy_open_lists_every_partition_and_loads_each_at_first_use_or_in_the_background() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 3, BTreeMap::new()).unwrap();
    produce(&manager, &tp("t", 0), 4);
    produce(&manager, &tp("t", 1), 6);
    manager.get_log(&tp("t", 1)).unwrap().update_high_watermark(5).unwrap();
    manager.get_log(&tp("t", 1)).unwrap().maybe_increment_log_start_offset(2).unwrap();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(1_000, None, Some(b"epoch 7"), &[]).unwrap();
    let batch = builder.build().unwrap();
    let log = manager.get_log(&tp("t", 2)).unwrap();
    log.append_as_leader(&batch, 7, AppendOrigin::Client, 1_000).unwrap();
    drop(log);
    manager.shutdown().unwrap();
    drop(manager);
    let before = checkpoint_bytes(&fs);

    let manager = open_lazily(&fs);
    assert_eq!(manager.partitions().len(), 3);
    assert_eq!(manager.unloaded_partitions(), 3);
    // A checkpoint of unloaded logs writes what they were opened with, and loads none.
    manager.checkpoint().unwrap();
    assert_eq!(checkpoint_bytes(&fs), before);
    // Metadata's leader epochs come from what the clean shutdown recorded, loading nothing.
    let epoch = |partition| manager.get_log(&tp("t", partition)).unwrap().metadata_leader_epoch();
    assert_eq!((epoch(0).unwrap(), epoch(2).unwrap()), (Some(0), Some(7)));
    assert_eq!(manager.unloaded_partitions(), 3);
    // First use loads one log.
    assert_eq!(manager.get_log(&tp("t", 0)).unwrap().log_end_offset().unwrap(), 4);
    assert_eq!(manager.unloaded_partitions(), 2);
    // The rest load in the background, each once.
    let loaded = manager.load_unloaded();
    assert!(loaded.failed.is_empty(), "{:?}", loaded.failed);
    assert_eq!(loaded.partitions.keys().cloned().collect::<Vec<_>>(), vec![tp("t", 1), tp("t", 2)]);
    assert_eq!(epoch(2).unwrap(), Some(7), "the same epoch once loaded");
    assert!(loaded.partitions.values().all(|load| load.segments_recovered == 0));
    assert_eq!(manager.unloaded_partitions(), 0);
    let log = manager.get_log(&tp("t", 1)).unwrap();
    assert_eq!(log.log_end_offset().unwrap(), 6);
    assert_eq!(log.high_watermark().unwrap(), 5, "HW from the checkpoint, applied at load");
    assert_eq!(log.log_start_offset().unwrap(), 2, "log start from the checkpoint");
    manager.checkpoint().unwrap();
    assert_eq!(checkpoint_bytes(&fs), before, "loaded logs checkpoint the same offsets");
}

#[test]
fn an_unloaded_log_that_needs_recovery_is_recovered_before_a_clean_shutdown_vouches_for_it() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 1, BTreeMap::new()).unwrap();
    produce(&manager, &tp("t", 0), 5);
    let log = manager.get_log(&tp("t", 0)).unwrap();
    log.flush(1_000).unwrap();
    let size = log.size_bytes().unwrap();
    let segment = log.dir().join("00000000000000000000.log");
    drop(log);
    manager.checkpoint().unwrap();
    drop(manager); // no shutdown: the next open is unclean
    fs.crash(1);
    // A torn write at the end of the segment, which only recovery removes.
    let file = fs.open(&segment, crate::io::OpenMode::ReadWrite).unwrap();
    file.write_all_at(&[0xFF; 100], size).unwrap();
    file.sync_data().unwrap();
    drop(file);

    let manager = open_lazily(&fs);
    let epoch = manager.get_log(&tp("t", 0)).unwrap().metadata_leader_epoch().unwrap();
    assert_eq!(epoch, Some(0), "the epoch at the checkpointed recovery point, after a crash too");
    assert_eq!(manager.unloaded_partitions(), 1);
    manager.shutdown().unwrap(); // never used: the shutdown loads, so recovers, it first
    drop(manager);
    let config = BrokerLogConfig { log_dirs: dirs(), ..BrokerLogConfig::default() };
    let (manager, report) =
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(3_000)), config).unwrap();
    assert_eq!(report.clean_dirs.len(), 2, "the shutdown was clean");
    let log = manager.get_log(&tp("t", 0)).unwrap();
    assert_eq!(log.size_bytes().unwrap(), size, "the torn tail is gone");
    assert_eq!(log.log_end_offset().unwrap(), 5);
}

#[test]
fn a_lazy_log_whose_load_fails_goes_offline_with_its_error_and_the_others_serve() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 2, BTreeMap::new()).unwrap();
    produce(&manager, &tp("t", 0), 3);
    produce(&manager, &tp("t", 1), 3);
    let broken = manager.get_log(&tp("t", 0)).unwrap().dir();
    let broken_dir = dirs().into_iter().position(|d| broken.starts_with(&d)).unwrap();
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open_lazily(&fs);
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Eio });
    let error = manager.get_log(&tp("t", 0)).unwrap().log_end_offset().unwrap_err();
    fs.set_fault_plan(FaultPlan::None);
    assert!(matches!(error, Error::Io { .. }), "the load's own error, once: {error}");
    let log = manager.get_log(&tp("t", 0));
    assert!(matches!(log, Err(Error::Offline { .. })), "then offline: {log:?}");
    let offline = manager.offline_dirs();
    assert_eq!(offline, vec![dirs()[broken_dir].clone()], "its directory goes offline, as Kafka's");
    // The other directory's partition still serves.
    assert_eq!(manager.get_log(&tp("t", 1)).unwrap().log_end_offset().unwrap(), 3);
}

/// EMFILE injected at an open: the creation that hit it fails with that error and is rolled
/// back whole; the directory stays online and the other topic keeps serving. Through a
/// `BudgetFs`, the same EMFILE is absorbed (it closes handles and opens again).
#[test]
fn emfile_fails_only_the_call_that_hit_it_and_leaves_no_half_made_topic() {
    let fs = SimFs::new();
    let manager = open_for_creation(&fs);
    manager.create_topic("a", 2, BTreeMap::new()).unwrap();
    produce(&manager, &tp("a", 0), 3);
    for n in [1, 3, 6, 10] {
        fs.set_fault_plan(FaultPlan::FailNth { n, kind: FaultKind::Emfile });
        let result = manager.create_topic("b", 4, BTreeMap::new());
        fs.set_fault_plan(FaultPlan::None);
        let Err(Error::Io { source, .. }) = &result else {
            panic!("open {n}: expected the EMFILE, got {result:?}");
        };
        assert_eq!(source.raw_os_error(), Some(24), "open {n}: {source}");
        assert!(manager.partitions().iter().all(|p| p.topic != "b"), "open {n}: half made");
        assert!(topic_on_disk(&fs, "b").is_empty(), "open {n}: {:?}", topic_on_disk(&fs, "b"));
        assert!(manager.offline_dirs().is_empty(), "open {n}: a directory went offline");
        produce(&manager, &tp("a", 0), 1);
    }
    assert_eq!(manager.get_log(&tp("a", 0)).unwrap().log_end_offset().unwrap(), 7);
    manager.create_topic("b", 4, BTreeMap::new()).unwrap();
    drop(manager);

    let budget = Arc::new(crate::io::BudgetFs::new(Arc::new(fs.clone()), 64));
    let config = creation_config();
    let manager =
        LogManager::open(budget.clone(), Arc::new(ManualClock::new(5_000)), config).unwrap().0;
    fs.set_fault_plan(FaultPlan::FailNth { n: 1, kind: FaultKind::Emfile });
    manager.create_topic("c", 2, BTreeMap::new()).unwrap();
    fs.set_fault_plan(FaultPlan::None);
    assert_eq!(budget.stats().emfile_retries, 1);
    assert_eq!(manager.partitions().iter().filter(|p| p.topic == "c").count(), 2);
}

/// The periodic checkpoint writes only when something it records changed: an idle manager's
/// ticks touch no file, and an append makes the next due tick write again.
#[test]
fn an_idle_manager_rewrites_no_checkpoint() {
    let fs = SimFs::new();
    let manager = open(&fs);
    manager.create_topic("t", 3, BTreeMap::new()).unwrap();
    produce(&manager, &tp("t", 0), 2);
    let interval = BrokerLogConfig::default().high_watermark_checkpoint_interval_ms;
    let mut now_ms = 10_000;
    manager.tick(now_ms); // the first due tick writes
    let recovery_points = PathBuf::from("/data/a").join("recovery-point-offset-checkpoint");
    let written = checkpoint_bytes(&fs);
    for _ in 0..3 {
        now_ms += interval;
        let ops = fs.op_count();
        manager.tick(now_ms);
        assert_eq!(fs.op_count(), ops, "an idle tick at {now_ms} did I/O");
    }
    assert_eq!(checkpoint_bytes(&fs), written);
    produce(&manager, &tp("t", 1), 5);
    manager.get_log(&tp("t", 1)).unwrap().flush(now_ms).unwrap(); // moves its recovery point
    now_ms += interval;
    manager.tick(now_ms);
    assert_ne!(checkpoint_bytes(&fs), written, "a change is checkpointed at the next due tick");
    assert!(fs.exists(&recovery_points).unwrap());
}

/// A cluster's broker makes only the partitions the metadata places on it (here 1 and 4 of a
/// six-partition topic), with the cluster's topic id and configs; they survive a restart, the
/// metadata log's directory beside them is never opened as a partition, and leadership at a
/// new epoch starts that epoch at the log end.
#[test]
fn a_cluster_broker_creates_the_replicas_it_is_given() {
    let fs = SimFs::new();
    let manager = open_for_creation(&fs);
    let topic_id = [7; 16];
    let overrides = BTreeMap::from([("retention.ms".to_owned(), "60000".to_owned())]);
    manager.create_replica(&tp("orders", 1), topic_id, overrides.clone()).unwrap();
    manager.create_replica(&tp("orders", 4), topic_id, BTreeMap::new()).unwrap();
    let refused = manager.create_replica(&tp("orders", 4), topic_id, BTreeMap::new());
    assert!(refused.is_err_and(|e| e.to_string().contains("exists")));
    let refused = manager.create_replica(&tp("orders", 2), topic_id, BTreeMap::new());
    assert!(refused.is_err_and(|e| e.to_string().contains("partition order")));
    assert_eq!(manager.partitions(), vec![tp("orders", 1), tp("orders", 4)]);
    assert_eq!(manager.topic_id("orders"), Some(topic_id));
    assert_eq!(manager.topic_config("orders").unwrap().retention_ms, 60_000);
    produce(&manager, &tp("orders", 4), 3);
    let log = manager.get_log(&tp("orders", 4)).unwrap();
    assert!(log.become_leader(5).unwrap(), "a new epoch");
    assert!(!log.become_leader(5).unwrap(), "the same epoch again");
    assert_eq!(log.leader_epochs().unwrap().last(), Some(&(5, 3)));
    assert_eq!(log.high_watermark().unwrap(), 3);
    drop(log);
    fs.create_dir_all(Path::new("/data/a/__cluster_metadata-0")).unwrap();
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open_for_creation(&fs);
    assert_eq!(manager.partitions(), vec![tp("orders", 1), tp("orders", 4)]);
    assert_eq!(manager.topic_id("orders"), Some(topic_id));
    assert_eq!(manager.topic_config("orders").unwrap().retention_ms, 60_000);
}

/// A topic moved aside as stray leaves the broker's logs, stays on disk under Kafka's
/// `-stray` name, and is neither opened nor deleted by the next start.
#[test]
fn a_stray_topic_is_moved_aside_and_kept() {
    let fs = SimFs::new();
    let manager = open_for_creation(&fs);
    manager.create_topic("old", 2, BTreeMap::new()).unwrap();
    produce(&manager, &tp("old", 1), 3);
    assert_eq!(manager.move_topic_aside("old").unwrap(), 2);
    assert!(manager.partitions().is_empty());
    assert_eq!(manager.topic_id("old"), None);
    manager.tick(10_000_000);
    manager.shutdown().unwrap();
    drop(manager);
    let manager = open_for_creation(&fs);
    assert!(manager.partitions().is_empty());
    let strays: Vec<String> = topic_on_disk(&fs, "old");
    assert_eq!(strays.len(), 2, "{strays:?}");
    assert!(strays.iter().all(|n| n.ends_with("-stray")), "{strays:?}");
}
