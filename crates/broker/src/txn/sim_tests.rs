//! Seeded simulations of the transaction coordinator with model producers, over `SimFs` with
//! every topic in `fsync-every-append` (so that what was acknowledged survives a power loss):
//! InitProducerId (a second instance of an id fences the first), AddPartitionsToTxn,
//! transactional produces (verified as the broker verifies them), AddOffsetsToTxn with
//! TxnOffsetCommit, EndTxn commit or abort, zombies (fenced instances) that keep trying, time
//! passing (timeouts abort under a bumped epoch), clean restarts, power losses, and crashes in
//! the middle of EndTxn (after PrepareCommit/PrepareAbort is durable, or after some markers).
//!
//! After every step, for each data partition: a read_committed reader (the records up to the
//! last stable offset, minus the aborted transactions the reads list, as Kafka's consumer skips
//! them) sees exactly the committed transactions' records, each once, and never a record of an
//! aborted or open transaction; the last stable offset never passes an open transaction's
//! first record; the group's offset is that of the last committed transaction; and no fenced
//! instance ever has a produce or an end accepted.
//!
//! Reproduce a failure with `SEED=<n> ITERATIONS=1 cargo test -p seglog-broker txn_sim`
//! (`TRACE=1` prints each step).

#![allow(clippy::too_many_lines, reason = "one match arm per operation of the model client")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use seglog_storage::config::{BrokerLogConfig, DurabilityMode, LogConfig};
use seglog_storage::io::SimFs;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::{LogManager, ManualClock};
use seglog_storage::testing::{Rng, read_committed_records, txn_batch};
use tokio::sync::Notify;

use super::coordinator::{FailPoint, ProducerIdAndEpoch};
use super::{TransactionCoordinator, TxnConfig};
use crate::group::{GroupConfig, GroupCoordinator, OFFSETS_TOPIC, OffsetToCommit};
use crate::replica::{Acks, ReplicaManager};

const TOPIC: &str = "data";
const PARTITIONS: i32 = 2;
const GROUP: &str = "g";
const TXN_TIMEOUT_MS: i32 = 5_000;

struct World {
    manager: Arc<LogManager>,
    groups: GroupCoordinator,
    txns: TransactionCoordinator,
    replicas: ReplicaManager,
}

fn open(fs: &SimFs, now_ms: i64) -> World {
    let default_log_config =
        LogConfig { durability: DurabilityMode::FsyncEveryAppend, ..LogConfig::default() };
    let config = BrokerLogConfig {
        log_dirs: vec![PathBuf::from("/data")],
        default_log_config,
        ..BrokerLogConfig::default()
    };
    let manager = Arc::new(
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(now_ms)), config)
            .expect("logs open")
            .0,
    );
    // As `Server::start` does: leader of every partition, the high watermark at the log end.
    for tp in manager.partitions() {
        manager.get_log(&tp).expect("log").maybe_increment_leader_high_watermark().expect("hw");
    }
    if !manager.topic_partition_counts().contains_key(TOPIC) {
        manager.create_topic(TOPIC, PARTITIONS, BTreeMap::new()).expect("topic");
    }
    let appended = Arc::new(Notify::new());
    let groups = GroupCoordinator::new(
        Arc::clone(&manager),
        GroupConfig { offsets_topic_partitions: 1, ..GroupConfig::default() },
        Arc::clone(&appended),
    );
    let txns = TransactionCoordinator::new(
        Arc::clone(&manager),
        TxnConfig {
            state_log_partitions: 2,
            abort_timed_out_interval_ms: 1,
            ..TxnConfig::default()
        },
        Arc::clone(&appended),
    );
    groups.load(now_ms).expect("groups load");
    txns.load(&groups, now_ms).expect("transactions load");
    let replicas = ReplicaManager::new(Arc::clone(&manager), appended);
    World { manager, groups, txns, replicas }
}

/// An open transaction of a producer instance, as the model sees it.
#[derive(Debug, Default, Clone)]
struct OpenTxn {
    added: BTreeSet<i32>,
    /// (partition, value, offset of its batch's first record).
    records: Vec<(i32, String, i64)>,
    offsets_added: bool,
    group_offset: Option<i64>,
}

/// A producer instance of a transactional id.
#[derive(Debug, Clone)]
struct Producer {
    id: String,
    granted: ProducerIdAndEpoch,
    sequences: [i32; 2],
    open: Option<OpenTxn>,
}

#[derive(Debug, Default)]
struct Model {
    producers: BTreeMap<String, Producer>,
    /// Fenced instances, which must never be accepted again.
    zombies: Vec<Producer>,
    /// Committed records per partition, with their offsets.
    committed: BTreeMap<i32, BTreeMap<String, i64>>,
    aborted: BTreeSet<String>,
    group_offset: Option<i64>,
    next_value: u64,
}

impl Model {
    fn abort(&mut self, txn: OpenTxn) {
        self.aborted.extend(txn.records.into_iter().map(|(_, value, _)| value));
    }

    fn commit(&mut self, txn: OpenTxn) {
        for (partition, value, offset) in txn.records {
            self.committed.entry(partition).or_default().insert(value, offset);
        }
        if txn.group_offset.is_some() {
            self.group_offset = txn.group_offset;
        }
    }
}

fn tp(partition: i32) -> TopicPartition {
    TopicPartition { topic: TOPIC.to_owned(), partition }
}

fn init(world: &World, model: &mut Model, id: &str, now_ms: i64) {
    let answer = loop {
        match world.txns.init_producer_id(&world.groups, id, TXN_TIMEOUT_MS, None, now_ms) {
            Err(ResponseError::ConcurrentTransactions) => {
                // The open transaction was aborted under a bumped epoch: its instance is fenced.
                if let Some(mut old) = model.producers.remove(id) {
                    if let Some(txn) = old.open.take() {
                        model.abort(txn);
                    }
                    model.zombies.push(old);
                }
            }
            other => break other.expect("InitProducerId"),
        }
    };
    if let Some(mut old) = model.producers.remove(id) {
        if let Some(txn) = old.open.take() {
            model.abort(txn);
        }
        model.zombies.push(old);
    }
    let producer = Producer { id: id.to_owned(), granted: answer, sequences: [0; 2], open: None };
    model.producers.insert(id.to_owned(), producer);
}

/// A transactional produce as the broker makes it: verified, then appended as a client.
fn produce(
    world: &World,
    producer: &Producer,
    partition: i32,
    values: &[String],
    now_ms: i64,
) -> Result<i64, String> {
    let sequence = producer.sequences[usize::try_from(partition).unwrap_or(0)];
    let batch =
        txn_batch(producer.granted.producer_id, producer.granted.epoch, sequence, values, now_ms);
    let tp = tp(partition);
    let appended = world.txns.with_verified(
        &producer.id,
        producer.granted.producer_id,
        producer.granted.epoch,
        &tp,
        || world.replicas.append(&tp, &batch, AppendOrigin::Client, Acks::All, now_ms),
    );
    match appended {
        Err(error) => Err(format!("verification: {error:?}")),
        Ok(Err(error)) => Err(format!("append: {error}")),
        Ok(Ok((_, info))) => Ok(info.first_offset),
    }
}

/// The read_committed view of a partition: records up to the last stable offset, without those
/// of the aborted transactions the reads list (Kafka's consumer `Fetcher`).
fn read_committed(world: &World, partition: i32) -> (Vec<String>, i64) {
    let log = world.manager.get_log(&tp(partition)).expect("log");
    let values = read_committed_records(&log)
        .into_iter()
        .map(|(_, _, value)| String::from_utf8_lossy(&value.unwrap_or_default()).into_owned())
        .collect();
    (values, log.last_stable_offset().expect("lso"))
}

fn check(world: &World, model: &Model, step: usize) {
    for partition in 0..PARTITIONS {
        let (values, lso) = read_committed(world, partition);
        let seen: BTreeSet<String> = values.iter().cloned().collect();
        assert_eq!(seen.len(), values.len(), "step {step}: a record read twice in {partition}");
        let leaked: Vec<&String> = seen.intersection(&model.aborted).collect();
        assert!(leaked.is_empty(), "step {step}: aborted records read: {leaked:?}");
        // Committed records below the last stable offset are visible; those after an earlier
        // transaction still open wait for it, as in Kafka.
        let committed: BTreeSet<String> = model
            .committed
            .get(&partition)
            .into_iter()
            .flatten()
            .filter(|(_, offset)| **offset < lso)
            .map(|(value, _)| value.clone())
            .collect();
        let log = world.manager.get_log(&tp(partition)).expect("log");
        assert_eq!(
            seen,
            committed,
            "step {step}: partition {partition} read_committed (LSO {lso}, high watermark {:?}, \
             log end {:?}, producers {:?})",
            log.high_watermark(),
            log.log_end_offset().expect("leo"),
            log.active_producers()
        );
        for producer in model.producers.values() {
            let Some(txn) = &producer.open else { continue };
            if let Some((_, _, first)) = txn.records.iter().find(|(p, _, _)| *p == partition) {
                assert!(
                    lso <= *first,
                    "step {step}: LSO {lso} passed an open transaction at {first}"
                );
            }
        }
    }
    let fetched = world
        .groups
        .fetch_offsets(GROUP, Some(vec![(TOPIC.to_owned(), vec![0])]))
        .expect("offsets");
    let offset = fetched
        .first()
        .and_then(|(_, partitions)| partitions.first())
        .and_then(|(_, c)| c.as_ref())
        .map(|c| c.offset);
    assert_eq!(offset, model.group_offset, "step {step}: the group's committed offset");
}

/// One run: `steps` random operations from `seed`.
fn run(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let fs = SimFs::new();
    let mut now_ms = 1_000_000;
    let mut world = open(&fs, now_ms);
    let mut model = Model::default();
    let ids = ["t0", "t1", "t2"];
    for step in 0..steps {
        now_ms += 1;
        let id = ids[usize::try_from(rng.below(3)).unwrap_or(0)];
        let op = rng.below(100);
        if std::env::var_os("TRACE").is_some() {
            eprintln!("step {step}: op {op} on {id}; model {:?}", model.producers.get(id));
        }
        match op {
            0..=9 => init(&world, &mut model, id, now_ms),
            10..=39 => {
                // Produce; half the time to a partition the producer may not have added.
                let Some(producer) = model.producers.get(id).cloned() else { continue };
                let partition = i32::try_from(rng.below(2)).unwrap_or(0);
                if rng.coin()
                    && producer.open.as_ref().is_none_or(|txn| !txn.added.contains(&partition))
                {
                    let added = BTreeSet::from([tp(partition)]);
                    let p = producer.granted;
                    if world.txns.add_partitions(id, p.producer_id, p.epoch, &added, now_ms).is_ok()
                    {
                        let entry = model.producers.get_mut(id).expect("producer");
                        entry.open.get_or_insert_with(OpenTxn::default).added.insert(partition);
                    }
                }
                let producer = model.producers.get(id).cloned().expect("producer");
                let n = 1 + rng.below(3);
                let values: Vec<String> = (0..n)
                    .map(|_| {
                        model.next_value += 1;
                        format!("{id}-{}", model.next_value)
                    })
                    .collect();
                let added =
                    producer.open.as_ref().is_some_and(|txn| txn.added.contains(&partition));
                match produce(&world, &producer, partition, &values, now_ms) {
                    Ok(first_offset) => {
                        assert!(
                            added,
                            "seed {seed} step {step}: a produce to a partition not added was accepted"
                        );
                        let entry = model.producers.get_mut(id).expect("producer");
                        entry.sequences[usize::try_from(partition).unwrap_or(0)] +=
                            i32::try_from(n).unwrap_or(0);
                        let txn = entry.open.as_mut().expect("open");
                        for (idx, value) in values.into_iter().enumerate() {
                            let offset = first_offset + i64::try_from(idx).unwrap_or(0);
                            txn.records.push((partition, value, offset));
                        }
                    }
                    Err(error) => {
                        assert!(
                            !added,
                            "seed {seed} step {step}: a verified produce failed: {error}"
                        );
                    }
                }
            }
            40..=49 => {
                // Offsets in the transaction.
                let Some(producer) = model.producers.get(id).cloned() else { continue };
                let p = producer.granted;
                let partition = world.groups.offsets_partition(GROUP).expect("offsets partition");
                let offsets_tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
                if world
                    .txns
                    .add_partitions(
                        id,
                        p.producer_id,
                        p.epoch,
                        &BTreeSet::from([offsets_tp.clone()]),
                        now_ms,
                    )
                    .is_err()
                {
                    continue;
                }
                let value = i64::try_from(rng.below(1_000_000)).unwrap_or(0);
                let offsets = [OffsetToCommit {
                    topic: TOPIC.to_owned(),
                    partition: 0,
                    offset: value,
                    leader_epoch: -1,
                    metadata: String::new(),
                }];
                let codes = world
                    .txns
                    .with_verified(id, p.producer_id, p.epoch, &offsets_tp, || {
                        world.groups.txn_commit_offsets(
                            GROUP,
                            p.producer_id,
                            p.epoch,
                            -1,
                            "",
                            None,
                            &offsets,
                            (now_ms, None),
                        )
                    })
                    .expect("verified");
                assert_eq!(codes, vec![0], "seed {seed} step {step}");
                let entry = model.producers.get_mut(id).expect("producer");
                let txn = entry.open.get_or_insert_with(OpenTxn::default);
                txn.offsets_added = true;
                txn.group_offset = Some(value);
            }
            50..=69 => {
                // End, sometimes crashing in the middle.
                let Some(producer) = model.producers.get(id).cloned() else { continue };
                let Some(txn) = producer.open.clone() else { continue };
                let commit = rng.below(3) != 0;
                let crash = match rng.below(6) {
                    0 => Some(FailPoint::AfterPrepare),
                    1 => Some(FailPoint::AfterMarkers(0)),
                    2 => Some(FailPoint::AfterMarkers(1)),
                    _ => None,
                };
                *world.txns.fail_point.lock().expect("fail point") = crash;
                let p = producer.granted;
                world
                    .txns
                    .end_txn(&world.groups, id, p.producer_id, p.epoch, commit, now_ms)
                    .unwrap_or_else(|error| panic!("seed {seed} step {step}: EndTxn {error:?}"));
                let entry = model.producers.get_mut(id).expect("producer");
                entry.open = None;
                if commit {
                    model.commit(txn);
                } else {
                    model.abort(txn);
                }
                if crash.is_some() {
                    let fired = world.txns.fail_point.lock().expect("fail point").take().is_none();
                    if fired {
                        // The process dies where the fail point stopped it; power is lost too.
                        drop(world);
                        fs.crash(rng.next_u64());
                        world = open(&fs, now_ms);
                    }
                }
            }
            70..=79 => {
                // A zombie tries to produce and to end: both must be refused.
                let Some(zombie) = model.zombies.last().cloned() else { continue };
                let partition = i32::try_from(rng.below(2)).unwrap_or(0);
                let values = vec![format!("zombie-{step}")];
                if let Ok(offset) = produce(&world, &zombie, partition, &values, now_ms) {
                    panic!("seed {seed} step {step}: a fenced producer wrote at {offset}");
                }
                let z = zombie.granted;
                let current = model.producers.get(&zombie.id).map(|p| p.granted);
                if current.is_none_or(|current| current.epoch != z.epoch) {
                    let ended = world.txns.end_txn(
                        &world.groups,
                        &zombie.id,
                        z.producer_id,
                        z.epoch,
                        true,
                        now_ms,
                    );
                    assert!(
                        ended.is_err(),
                        "seed {seed} step {step}: a fenced producer ended a transaction"
                    );
                }
            }
            80..=89 => {
                // Time passes; transactions past their timeout are aborted and their producers
                // fenced.
                now_ms += i64::try_from(rng.below(u64::try_from(TXN_TIMEOUT_MS).unwrap_or(1) * 2))
                    .unwrap_or(0);
                world.txns.tick(&world.groups, now_ms);
                for id in ids {
                    let Some(producer) = model.producers.get(id) else { continue };
                    let described = world.txns.describe(id).expect("describe");
                    if described.producer_epoch != producer.granted.epoch {
                        let mut fenced = model.producers.remove(id).expect("producer");
                        if let Some(txn) = fenced.open.take() {
                            model.abort(txn);
                        }
                        model.zombies.push(fenced);
                    }
                }
            }
            90..=94 => {
                // A clean restart.
                world.manager.shutdown().expect("shutdown");
                drop(world);
                world = open(&fs, now_ms);
            }
            _ => {
                // A power loss: acknowledged data is durable (fsync-every-append).
                drop(world);
                fs.crash(rng.next_u64());
                world = open(&fs, now_ms);
            }
        }
        check(&world, &model, step);
    }
}

/// EndTxn and the tick may both try to complete a prepared transaction: while one writes its
/// markers the other stays out, and once it is complete no second marker is written (a late one
/// would end the producer's next transaction under the same epoch).
#[test]
fn a_prepared_transaction_has_one_completer_at_a_time() {
    let fs = SimFs::new();
    let now_ms = 1_000_000;
    let world = open(&fs, now_ms);
    let mut model = Model::default();
    init(&world, &mut model, "t0", now_ms);
    let producer = model.producers["t0"].clone();
    let p = producer.granted;
    let added = BTreeSet::from([tp(0)]);
    world.txns.add_partitions("t0", p.producer_id, p.epoch, &added, now_ms).expect("added");
    produce(&world, &producer, 0, &["v".to_owned()], now_ms).expect("produced");
    *world.txns.fail_point.lock().expect("fail point") = Some(FailPoint::AfterPrepare);
    world.txns.end_txn(&world.groups, "t0", p.producer_id, p.epoch, false, now_ms).expect("end");
    let log = world.manager.get_log(&tp(0)).expect("log");
    let end = log.log_end_offset().expect("leo");
    assert_eq!(log.last_stable_offset().expect("lso"), 0, "prepared, no marker yet");

    world.txns.lock().txns.get_mut("t0").expect("entry").completing = true;
    assert!(!world.txns.complete_prepared(&world.groups, "t0", now_ms), "another completes it");
    assert_eq!(log.log_end_offset().expect("leo"), end, "no marker from the second completer");

    world.txns.lock().txns.get_mut("t0").expect("entry").completing = false;
    assert!(world.txns.complete_prepared(&world.groups, "t0", now_ms), "the completer finishes");
    assert_eq!(log.log_end_offset().expect("leo"), end + 1, "one ABORT marker");
    assert_eq!(log.last_stable_offset().expect("lso"), end + 1);
    assert!(!world.txns.complete_prepared(&world.groups, "t0", now_ms), "nothing left to do");
    assert_eq!(log.log_end_offset().expect("leo"), end + 1, "and no second marker");
}

#[test]
fn txn_sim() {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(4);
    let steps: usize = std::env::var("STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let start = seed.unwrap_or(1);
    for seed in start..start + iterations {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed, steps)) {
            eprintln!(
                "txn_sim failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-broker txn_sim"
            );
            std::panic::resume_unwind(panic);
        }
    }
}
