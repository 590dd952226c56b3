//! Replication's rules driven directly on an in-memory file system: the leader's high
//! watermark as the ISR's minimum, acks=all and `min.insync.replicas`, a retried duplicate,
//! the ISR's expansion and shrink.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use seglog_format::{Compression, RecordBatchBuilder};
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::SimFs;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, ManualClock};
use tokio::sync::Notify;

use super::*;
use crate::replica::{Acks, AppendError, ReplicaManager};

const WAIT: Duration = Duration::from_millis(50);

struct World {
    replication: Arc<Replication>,
    replicas: ReplicaManager,
    tp: TopicPartition,
    log: Arc<PartitionLog>,
}

/// Broker 1 leading `t-0` at epoch 0 with `replicas` and `isr`, the topic's
/// `min.insync.replicas` as given.
fn world(replicas: &[i32], isr: &[i32], min_isr: u32) -> World {
    let fs = SimFs::new();
    let config =
        BrokerLogConfig { log_dirs: vec![PathBuf::from("/data")], ..BrokerLogConfig::default() };
    let manager =
        Arc::new(LogManager::open(Arc::new(fs), Arc::new(ManualClock::new(0)), config).unwrap().0);
    let overrides = BTreeMap::from([("min.insync.replicas".to_owned(), min_isr.to_string())]);
    manager.create_topic("t", 1, overrides).unwrap();
    let tp = TopicPartition { topic: "t".to_owned(), partition: 0 };
    let log = manager.get_log(&tp).unwrap();
    let appended = Arc::new(Notify::new());
    let config = ReplicationConfig { lag_time_max_ms: 1000, ..ReplicationConfig::default() };
    let replication = Arc::new(Replication::new(1, config, Arc::clone(&appended)));
    let state = LeaderAndIsr {
        topic_id: [7; 16],
        leader_epoch: 0,
        partition_epoch: 0,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
    };
    assert!(replication.make_leader(&tp, &log, state, 0).unwrap());
    let replicas = ReplicaManager::new(manager, appended);
    replicas.use_replication(Arc::clone(&replication));
    World { replication, replicas, tp, log }
}

/// An idempotent producer's batch of `n` records from `sequence`.
fn batch(sequence: i32, n: i32) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None).producer(42, 0, sequence);
    for i in 0..n {
        builder.push(0, None, Some(format!("v{i}").as_bytes()), &[]).unwrap();
    }
    builder.build().unwrap()
}

impl World {
    fn produce(&self, records: &[u8]) -> Result<i64, AppendError> {
        self.replicas
            .append_within(&self.tp, records, (AppendOrigin::Client, None), Acks::All, WAIT, 0)
            .map(|(_, info)| info.first_offset)
    }

    fn refused(&self, records: &[u8]) -> ResponseError {
        match self.produce(records) {
            Err(AppendError::Replication(code)) => code,
            other => panic!("not refused by replication: {other:?}"),
        }
    }
}

#[test]
fn the_high_watermark_is_the_minimum_log_end_of_the_isr() {
    let w = world(&[1, 2, 3], &[1, 2, 3], 1);
    w.replicas
        .append_within(&w.tp, &batch(0, 10), (AppendOrigin::Client, None), Acks::Leader, WAIT, 0)
        .unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 0, "no follower has fetched");
    w.replication.follower_fetched(&w.tp, 2, 0, 10, 0).unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 0, "follower 3 has not fetched");
    w.replication.follower_fetched(&w.tp, 3, 0, 4, 0).unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 4, "the slowest in-sync follower");
    w.replication.follower_fetched(&w.tp, 3, 0, 10, 0).unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 10);
    // A fetch of an older epoch is fenced; of a newer one, unknown; of a non-replica, refused.
    let fetched = |replica, epoch| w.replication.follower_fetched(&w.tp, replica, epoch, 10, 0);
    assert_eq!(fetched(2, 1), Err(ResponseError::UnknownLeaderEpoch));
    assert_eq!(fetched(4, 0), Err(ResponseError::NotLeaderOrFollower));
}

/// `cluster status`'s lags: each follower of a led partition behind the leader's log end,
/// most behind first; one that has not fetched counts the whole log end; a caught-up one none.
#[test]
fn follower_lags_count_the_records_behind_the_leaders_log_end() {
    let w = world(&[1, 2, 3], &[1, 2, 3], 1);
    w.replicas
        .append_within(&w.tp, &batch(0, 10), (AppendOrigin::Client, None), Acks::Leader, WAIT, 0)
        .unwrap();
    assert_eq!(
        w.replication.follower_lags(10),
        (2, vec![("t".to_owned(), 0, 2, 10), ("t".to_owned(), 0, 3, 10)])
    );
    w.replication.follower_fetched(&w.tp, 2, 0, 7, 0).unwrap();
    w.replication.follower_fetched(&w.tp, 3, 0, 10, 0).unwrap();
    assert_eq!(w.replication.follower_lags(10), (1, vec![("t".to_owned(), 0, 2, 3)]));
    assert_eq!(w.replication.follower_lags(0), (1, vec![]), "the count beyond the list");
}

/// The checker of scenario 3 found this: a leader cut off from its followers answered a
/// producer's retry of an unreplicated batch, a duplicate, with its original offsets at once.
#[test]
fn a_retried_duplicate_waits_for_the_isr_as_its_first_append_did() {
    let w = world(&[1, 2], &[1, 2], 1);
    let records = batch(0, 5);
    assert_eq!(w.refused(&records), ResponseError::RequestTimedOut, "the follower is away");
    assert_eq!(w.refused(&records), ResponseError::RequestTimedOut, "the retry waits too");
    assert_eq!(w.log.log_end_offset().unwrap(), 5, "the retry wrote nothing");
    w.replication.follower_fetched(&w.tp, 2, 0, 5, 0).unwrap();
    assert_eq!(w.produce(&records).unwrap(), 0, "replicated: the original offsets");
}

#[test]
fn acks_all_needs_min_insync_replicas() {
    let w = world(&[1, 2, 3], &[1], 2);
    assert_eq!(w.refused(&batch(0, 1)), ResponseError::NotEnoughReplicas);
    assert_eq!(w.log.log_end_offset().unwrap(), 0, "refused before the append");
    // acks=1 is taken.
    w.replicas
        .append_within(&w.tp, &batch(0, 1), (AppendOrigin::Client, None), Acks::Leader, WAIT, 0)
        .unwrap();
    // Below `min.insync.replicas` the high watermark stands still (KAFKA-15583), so that the
    // replicas the ISR lost (KIP-966's ELR) hold every committed record.
    assert_eq!(w.log.high_watermark().unwrap(), 0);
    // The ISR back at the minimum (the controller's answer, applied): it moves again.
    let state = LeaderAndIsr {
        topic_id: [7; 16],
        leader_epoch: 0,
        partition_epoch: 1,
        replicas: vec![1, 2, 3],
        isr: vec![1, 2],
    };
    w.replication.make_leader(&w.tp, &w.log, state, 0).unwrap();
    w.replication.follower_fetched(&w.tp, 2, 0, 1, 0).unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 1);
}

#[test]
fn a_caught_up_follower_joins_the_isr_and_a_lagging_one_leaves() {
    let w = world(&[1, 2, 3], &[1, 2], 1);
    w.replicas
        .append_within(&w.tp, &batch(0, 3), (AppendOrigin::Client, None), Acks::Leader, WAIT, 0)
        .unwrap();
    w.replication.follower_fetched(&w.tp, 2, 0, 3, 100).unwrap();
    assert_eq!(w.log.high_watermark().unwrap(), 3);
    // Follower 3, outside the ISR, below the high watermark: no expansion yet.
    w.replication.follower_fetched(&w.tp, 3, 0, 1, 100).unwrap();
    assert!(w.replication.isr_changes.lock().unwrap().is_empty());
    w.replication.follower_fetched(&w.tp, 3, 0, 3, 200).unwrap();
    let asked: Vec<Vec<i32>> =
        w.replication.isr_changes.lock().unwrap().drain(..).map(|c| c.new_isr).collect();
    assert_eq!(asked, vec![vec![1, 2, 3]], "3 reached the high watermark");
    // The change is answered (refused here): follower 2, silent past the lag time, leaves.
    let change = IsrChange {
        tp: w.tp.clone(),
        topic_id: [7; 16],
        leader_epoch: 0,
        partition_epoch: 0,
        new_isr: vec![1, 2, 3],
    };
    w.replication.isr_change_done(&change);
    w.replication.shrink_isrs(1000);
    let early: Vec<Vec<i32>> =
        w.replication.isr_changes.lock().unwrap().iter().map(|c| c.new_isr.clone()).collect();
    assert!(early.is_empty(), "2 was caught up at 100: {early:?}");
    w.replication.shrink_isrs(1101);
    let asked: Vec<Vec<i32>> =
        w.replication.isr_changes.lock().unwrap().drain(..).map(|c| c.new_isr).collect();
    assert_eq!(asked, vec![vec![1]], "2 lagged past replica.lag.time.max.ms");
}
