//! Replication (issue 22, docs/replication.md) on the three-node cluster of `scripts/cluster.sh`,
//! checked by [`Checker`]: every acknowledged record read back once, at its acknowledged
//! offset, by a read_committed consumer, and the replicas' logs byte-identical up to the high
//! watermark.
//!
//! - Scenario 1: RF=3, `min.insync.replicas`=2, idempotent acks=all records; after a clean stop
//!   the three replicas' batch streams agree byte for byte up to the high watermark and
//!   `seglog verify` is clean on each node.
//! - Scenario 2: the leader of the partitions killed with SIGKILL again and again while a
//!   producer runs: a new leader each time (the time is printed), and the checker clean.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::admin::{NewTopic, TopicReplication};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Message, Offset, TopicPartitionList};

use crate::cluster::poll_until;
use crate::cluster_clients::{Cluster, create_topics};

const SEGLOG: &str = env!("CARGO_BIN_EXE_seglog");

/// What the producers had acknowledged, and what a consumer read back.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    /// Payload id -> (partition, offset) as acknowledged.
    acked: BTreeMap<u64, (i32, i64)>,
}

/// The checker's counts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) acked: usize,
    pub(crate) read: usize,
    /// Acknowledged and never read.
    pub(crate) lost: usize,
    /// Read more than once.
    pub(crate) duplicated: usize,
    /// Read at another offset than acknowledged.
    pub(crate) moved: usize,
}

impl Report {
    fn clean(&self) -> bool {
        self.lost == 0 && self.duplicated == 0 && self.moved == 0
    }
}

impl Checker {
    pub(crate) fn ack(&mut self, id: u64, partition: i32, offset: i64) {
        self.acked.insert(id, (partition, offset));
    }

    /// Reads `topic` back (read_committed, every partition from its start to its high
    /// watermark) through `bootstrap`, and counts.
    pub(crate) fn check(&self, bootstrap: &str, topic: &str, partitions: i32) -> Report {
        let read = read_all(bootstrap, topic, partitions);
        let mut seen: BTreeMap<u64, Vec<(i32, i64)>> = BTreeMap::new();
        for (partition, offset, id) in &read {
            seen.entry(*id).or_default().push((*partition, *offset));
        }
        let lost = self.acked.keys().filter(|id| !seen.contains_key(id)).count();
        let duplicated = seen.values().filter(|places| places.len() > 1).count();
        let moved = self
            .acked
            .iter()
            .filter(|(id, at)| seen.get(id).is_some_and(|places| !places.contains(at)))
            .count();
        Report { acked: self.acked.len(), read: read.len(), lost, duplicated, moved }
    }
}

/// Every record of `topic` up to each partition's high watermark: (partition, offset, id).
fn read_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<(i32, i64, u64)> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "replication-checker")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .unwrap();
    let mut ends = BTreeMap::new();
    let mut assignment = TopicPartitionList::new();
    for p in 0..partitions {
        let (_, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(30)).unwrap();
        ends.insert(p, high);
        assignment.add_partition_offset(topic, p, Offset::Beginning).unwrap();
    }
    consumer.assign(&assignment).unwrap();
    let mut read = Vec::new();
    let mut done: BTreeSet<i32> =
        ends.iter().filter(|(_, end)| **end <= 0).map(|(p, _)| *p).collect();
    let deadline = Instant::now() + Duration::from_mins(2);
    while done.len() < ends.len() {
        assert!(
            Instant::now() < deadline,
            "read back {} records, not to the ends {ends:?}",
            read.len()
        );
        let Some(message) = consumer.poll(Duration::from_millis(500)) else { continue };
        let message = message.unwrap();
        let id: u64 =
            String::from_utf8_lossy(message.payload().unwrap_or_default()).parse().unwrap();
        read.push((message.partition(), message.offset(), id));
        if message.offset() + 1 >= ends[&message.partition()] {
            done.insert(message.partition());
        }
    }
    read
}

/// Produces ids `from..to` to `topic` idempotently with acks=all through `bootstrap`, noting
/// each acknowledged one in `checker`; returns how many were not acknowledged.
pub(crate) async fn produce_acked(
    bootstrap: &str,
    topic: &str,
    (from, to): (u64, u64),
    checker: &std::sync::Mutex<Checker>,
) -> usize {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "60000")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .unwrap();
    let mut deliveries = Vec::new();
    for id in from..to {
        let payload = id.to_string();
        let record = FutureRecord::to(topic).key(&payload).payload(&payload);
        let delivery = producer.send_result(record).map_err(|(error, _)| error).unwrap();
        deliveries.push((id, delivery));
    }
    let mut failed = 0;
    for (id, delivery) in deliveries {
        match delivery.await.unwrap() {
            Ok(delivered) => checker.lock().unwrap().ack(id, delivered.partition, delivered.offset),
            Err(_) => failed += 1,
        }
    }
    failed
}

/// The ISR of each partition of `topic`, as Metadata through `bootstrap` shows it.
fn isrs(bootstrap: &str, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>)> {
    let consumer: BaseConsumer =
        ClientConfig::new().set("bootstrap.servers", bootstrap).create().unwrap();
    let Ok(metadata) = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)) else {
        return BTreeMap::new();
    };
    metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic && t.error().is_none())
        .flat_map(|t| t.partitions().iter().map(|p| (p.id(), (p.leader(), p.isr().to_vec()))))
        .collect()
}

/// A partition's batches on `node` up to its checkpointed high watermark: the concatenated
/// `.log` files' batches below it, byte for byte (segment boundaries may differ between
/// replicas), and the high watermark.
fn replica_stream(dir: &Path, node: usize, topic: &str, partition: i32) -> (Vec<u8>, i64) {
    let data = dir.join(format!("node-{node}/data"));
    let checkpoint = std::fs::read_to_string(data.join("replication-offset-checkpoint")).unwrap();
    let high_watermark = checkpoint
        .lines()
        .skip(2)
        .find_map(|line| {
            let mut fields = line.split(' ');
            let (t, p, o) = (fields.next()?, fields.next()?, fields.next()?);
            (t == topic && p == partition.to_string()).then(|| o.parse::<i64>().ok())?
        })
        .unwrap_or_else(|| panic!("node {node} has no high watermark for {topic}-{partition}"));
    let mut logs: Vec<_> = std::fs::read_dir(data.join(format!("{topic}-{partition}")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut stream = Vec::new();
    for log in logs {
        let bytes = std::fs::read(&log).unwrap();
        for item in seglog_format::Batches::new(&bytes) {
            let batch = item.unwrap().batch;
            if batch.last_offset() < high_watermark {
                stream.extend_from_slice(batch.as_bytes());
            }
        }
    }
    (stream, high_watermark)
}

fn properties(root: &Path, lines: &str) -> std::path::PathBuf {
    let path = root.join("extra.properties");
    std::fs::write(&path, lines).unwrap();
    path
}

/// Scenario 1: RF=3, `min.insync.replicas`=2, 100,000 idempotent acks=all records, a clean
/// stop; the replicas agree byte for byte up to the high watermark, and verify is clean.
#[test]
fn replicas_are_byte_identical_after_acks_all_produce() {
    const TOPIC: &str = "replicated";
    const PARTITIONS: i32 = 3;
    const RECORDS: u64 = 100_000;
    let root = tempfile::tempdir().unwrap();
    // Small segments, so that each replica rolls on its own.
    let extra = properties(root.path(), "log.segment.bytes=1048576\n");
    let (cluster, _) =
        Cluster::up_with(root.path(), &["--extra-properties", extra.to_str().unwrap()]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(3))
        .set("min.insync.replicas", "2");
    create_topics(&runtime, &cluster.bootstrap(1), &[&topic]);
    poll_until(
        "every partition's ISR has three replicas",
        Duration::from_secs(30),
        || cluster.logs(),
        || {
            let isrs = isrs(&cluster.bootstrap(2), TOPIC);
            isrs.len() == 3 && isrs.values().all(|(_, isr)| isr.len() == 3)
        },
    );
    let checker = std::sync::Mutex::new(Checker::default());
    let started = Instant::now();
    let failed =
        runtime.block_on(produce_acked(&cluster.bootstrap(1), TOPIC, (0, RECORDS), &checker));
    let elapsed = started.elapsed();
    assert_eq!(failed, 0, "every record acknowledged\n{}", cluster.logs());
    let report = checker.lock().unwrap().check(&cluster.bootstrap(3), TOPIC, PARTITIONS);
    println!("scenario 1: {RECORDS} acks=all records in {elapsed:?}; checker {report:?}");
    assert!(report.clean(), "{report:?}");
    assert_eq!((report.acked, report.read), (RECORDS as usize, RECORDS as usize), "{report:?}");
    // Every replica stayed in sync (the followers learn the last high watermark with their
    // next fetch, long before the read-back ends).
    let isrs_after = isrs(&cluster.bootstrap(1), TOPIC);
    assert!(isrs_after.values().all(|(_, isr)| isr.len() == 3), "{isrs_after:?}");
    let (ok, text) = cluster.run(&["down"]);
    assert!(ok, "{text}");
    let mut per_partition = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let streams: Vec<(Vec<u8>, i64)> =
            (1..=3).map(|node| replica_stream(&cluster.dir, node, TOPIC, partition)).collect();
        let acked = checker.lock().unwrap().acked.values().filter(|(p, _)| *p == partition).count();
        for (node, (stream, high_watermark)) in (1..).zip(&streams) {
            assert_eq!(
                *high_watermark,
                i64::try_from(acked).unwrap(),
                "node {node}'s high watermark of partition {partition}"
            );
            assert!(
                stream == &streams[0].0,
                "partition {partition}: node {node}'s {} bytes differ from node 1's {}",
                stream.len(),
                streams[0].0.len()
            );
        }
        per_partition.insert(partition, (acked, streams[0].0.len()));
    }
    println!("scenario 1: per partition (records, identical bytes): {per_partition:?}");
    for node in 1..=3 {
        let data = cluster.dir.join(format!("node-{node}/data"));
        let output = std::process::Command::new(SEGLOG)
            .args(["verify", "--log-dir"])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "seglog verify of node {node}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Each partition's leader of `topic` through the first answering node but `skip`.
fn leaders_via(cluster: &Cluster, topic: &str, skip: i32) -> BTreeMap<i32, (i32, Vec<i32>)> {
    for node in (1..=3).filter(|n| *n != skip) {
        let isrs = isrs(&cluster.bootstrap(usize::try_from(node).unwrap()), topic);
        if !isrs.is_empty() {
            return isrs;
        }
    }
    BTreeMap::new()
}

/// Scenario 2: the leader of partition 0 is killed with SIGKILL ten times while a producer runs
/// (idempotent, acks=all); each time another replica leads within seconds, the killed node
/// comes back and rejoins the ISR, and at the end the checker is clean.
#[test]
fn killed_leaders_lose_no_acknowledged_record() {
    const TOPIC: &str = "failover";
    const PARTITIONS: i32 = 3;
    const KILLS: usize = 10;
    let root = tempfile::tempdir().unwrap();
    // A dead broker is fenced after 2 s without a heartbeat (Kafka's default is 9 s).
    let extra = properties(
        root.path(),
        "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n",
    );
    let (cluster, _) =
        Cluster::up_with(root.path(), &["--extra-properties", extra.to_str().unwrap()]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(3))
        .set("min.insync.replicas", "2");
    create_topics(&runtime, &cluster.bootstrap(1), &[&topic]);
    let full_isrs = |skip: i32| {
        let isrs = leaders_via(&cluster, TOPIC, skip);
        isrs.len() == 3 && isrs.values().all(|(leader, isr)| *leader >= 0 && isr.len() == 3)
    };
    poll_until("full ISRs", Duration::from_secs(30), || cluster.logs(), || full_isrs(0));
    let checker = std::sync::Arc::new(std::sync::Mutex::new(Checker::default()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bootstraps = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let producer = {
        let (checker, stop, bootstraps) =
            (std::sync::Arc::clone(&checker), std::sync::Arc::clone(&stop), bootstraps.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let mut next = 0u64;
            let mut unacknowledged = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let chunk = (next, next + 2000);
                unacknowledged +=
                    runtime.block_on(produce_acked(&bootstraps, TOPIC, chunk, &checker));
                next += 2000;
            }
            (next, unacknowledged)
        })
    };
    let mut failovers = Vec::new();
    for kill in 0..KILLS {
        let leader = leaders_via(&cluster, TOPIC, 0)[&0].0;
        assert!(leader > 0, "partition 0 has a leader before kill {kill}");
        let (ok, text) = cluster.run(&["kill", &leader.to_string()]);
        assert!(ok, "{text}");
        let killed_at = Instant::now();
        poll_until(
            "a new leader of partition 0",
            Duration::from_secs(30),
            || cluster.logs(),
            || {
                leaders_via(&cluster, TOPIC, leader)
                    .get(&0)
                    .is_some_and(|(l, _)| *l > 0 && *l != leader)
            },
        );
        failovers.push(killed_at.elapsed());
        let (ok, text) = cluster.run(&["start", &leader.to_string()]);
        assert!(ok, "{text}");
        poll_until(
            "the killed node back in every ISR",
            Duration::from_secs(60),
            || cluster.logs(),
            || full_isrs(0),
        );
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (produced, unacknowledged) = producer.join().unwrap();
    let report = checker.lock().unwrap().check(&bootstraps, TOPIC, PARTITIONS);
    println!(
        "scenario 2: {KILLS} leader kills; new leader after {failovers:?}; {produced} records sent, \
         {unacknowledged} not acknowledged; checker {report:?}"
    );
    assert!(report.clean(), "{report:?}\n{}", cluster.logs());
    assert!(report.acked > 10_000, "{report:?}");
}
