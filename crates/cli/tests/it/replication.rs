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
    /// The first and last lost records and what was read at their offsets.
    pub(crate) lost_detail: Option<String>,
}

impl Report {
    pub(crate) fn clean(&self) -> bool {
        self.lost == 0 && self.duplicated == 0 && self.moved == 0
    }
}

impl Checker {
    pub(crate) fn ack(&mut self, id: u64, partition: i32, offset: i64) {
        self.acked.insert(id, (partition, offset));
    }

    pub(crate) fn acked_count(&self) -> usize {
        self.acked.len()
    }

    /// Reads `topic` back (read_committed, every partition from its start to its high
    /// watermark) through `bootstrap`, and counts.
    pub(crate) fn check(&self, bootstrap: &str, topic: &str, partitions: i32) -> Report {
        let read = read_all(bootstrap, topic, partitions);
        let mut seen: BTreeMap<u64, Vec<(i32, i64)>> = BTreeMap::new();
        for (partition, offset, id) in &read {
            seen.entry(*id).or_default().push((*partition, *offset));
        }
        let lost_ids: Vec<(&u64, &(i32, i64))> =
            self.acked.iter().filter(|(id, _)| !seen.contains_key(id)).collect();
        let lost = lost_ids.len();
        let lost_detail = lost_ids.first().zip(lost_ids.last()).map(|(first, last)| {
            let at =
                |place: (i32, i64)| read.iter().find(|(p, o, _)| (*p, *o) == place).map(|r| r.2);
            format!(
                "lost from {first:?} to {last:?}; read at their offsets: {:?} and {:?}",
                at(*first.1),
                at(*last.1)
            )
        });
        let duplicated = seen.values().filter(|places| places.len() > 1).count();
        let moved = self
            .acked
            .iter()
            .filter(|(id, at)| seen.get(id).is_some_and(|places| !places.contains(at)))
            .count();
        Report { acked: self.acked.len(), read: read.len(), lost, duplicated, moved, lost_detail }
    }
}

/// Every record of `topic` up to each partition's high watermark: (partition, offset, id).
pub(crate) fn read_all(bootstrap: &str, topic: &str, partitions: i32) -> Vec<(i32, i64, u64)> {
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
pub(crate) fn isrs(bootstrap: &str, topic: &str) -> BTreeMap<i32, (i32, Vec<i32>)> {
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
fn replica_stream(data: &Path, topic: &str, partition: i32) -> (Vec<u8>, i64) {
    let node = data.display();
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

/// Every batch of a partition on a node, its `.log` files concatenated.
pub(crate) fn replica_log(data: &Path, topic: &str, partition: i32) -> Vec<u8> {
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
            stream.extend_from_slice(item.unwrap().batch.as_bytes());
        }
    }
    stream
}

/// `scripts/cluster.sh down`, then waits until the three processes are gone (the last one's
/// controlled shutdown waits for a quorum that has stopped, longer than `down` waits).
fn stop_and_wait(cluster: &Cluster) {
    let pids: Vec<String> = (1..=3)
        .filter_map(|n| std::fs::read_to_string(cluster.dir.join(format!("node-{n}/pid"))).ok())
        .map(|pid| pid.trim().to_owned())
        .collect();
    let (ok, text) = cluster.run(&["down"]);
    assert!(ok, "{text}");
    poll_until("the nodes gone", Duration::from_mins(2), String::new, || {
        pids.iter().all(|pid| !Path::new(&format!("/proc/{pid}")).exists())
    });
}

/// Properties that fence a dead broker after 2 s without a heartbeat (Kafka's default is 9 s).
pub(crate) const FAST_FENCING: &str =
    "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n";

/// The three nodes of `scripts/cluster.sh` with `extra` properties, and `topic` created through
/// node 1 with `partitions` partitions at RF=3 and `min.insync.replicas`=2, every ISR full.
pub(crate) fn rf3_cluster(
    root: &Path,
    extra: &str,
    topic: &str,
    partitions: i32,
) -> (Cluster, tokio::runtime::Runtime) {
    let extra = properties(root, extra);
    let (cluster, _) = Cluster::up_with(root, &["--extra-properties", extra.to_str().unwrap()]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(3))
        .set("min.insync.replicas", "2");
    create_topics(&runtime, &cluster.bootstrap(1), &[&new_topic]);
    wait_for_full_isrs(&cluster, topic, partitions);
    (cluster, runtime)
}

/// Waits until each of `topic`'s `partitions` partitions has three replicas in its ISR.
pub(crate) fn wait_for_full_isrs(cluster: &Cluster, topic: &str, partitions: i32) {
    poll_until(
        "every partition's ISR has three replicas",
        Duration::from_secs(30),
        || cluster.logs(),
        || {
            let isrs = isrs(&cluster.bootstrap(2), topic);
            isrs.len() == usize::try_from(partitions).unwrap()
                && isrs.values().all(|(_, isr)| isr.len() == 3)
        },
    );
}

pub(crate) fn properties(root: &Path, lines: &str) -> std::path::PathBuf {
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
    let (cluster, runtime) =
        rf3_cluster(root.path(), "log.segment.bytes=1048576\n", TOPIC, PARTITIONS);
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
    stop_and_wait(&cluster);
    let mut per_partition = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let streams: Vec<(Vec<u8>, i64)> = (1..=3)
            .map(|node| {
                replica_stream(&cluster.dir.join(format!("node-{node}/data")), TOPIC, partition)
            })
            .collect();
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
    let (cluster, _runtime) = rf3_cluster(root.path(), FAST_FENCING, TOPIC, PARTITIONS);
    let full_isrs = |skip: i32| {
        let isrs = leaders_via(&cluster, TOPIC, skip);
        isrs.len() == 3 && isrs.values().all(|(leader, isr)| *leader >= 0 && isr.len() == 3)
    };
    poll_until("full ISRs", Duration::from_secs(30), || cluster.logs(), || full_isrs(0));
    let checker = std::sync::Arc::new(std::sync::Mutex::new(Checker::default()));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let bootstraps = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let writer = {
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
        let acked_before = checker.lock().unwrap().acked.len();
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
        // The producer goes on through the new leader.
        poll_until(
            "writes acknowledged after the kill",
            Duration::from_mins(1),
            || cluster.logs(),
            || checker.lock().unwrap().acked.len() > acked_before,
        );
        if kill == 0 {
            // `cluster status` shows the dead follower falling behind the new leader.
            let behind = format!("follower {leader} behind");
            poll_until(
                "cluster status lists the killed node's lag",
                Duration::from_secs(30),
                || cluster.run(&["status"]).1,
                || cluster.run(&["status"]).1.lines().any(|l| l.contains(&behind)),
            );
        }
        let (ok, text) = cluster.run(&["start", &leader.to_string()]);
        assert!(ok, "{text}");
        poll_until(
            "the killed node back in every ISR",
            Duration::from_mins(1),
            || cluster.logs(),
            || full_isrs(0),
        );
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (produced, unacknowledged) = writer.join().unwrap();
    let report = checker.lock().unwrap().check(&bootstraps, TOPIC, PARTITIONS);
    println!(
        "scenario 2: {KILLS} leader kills; new leader after {failovers:?}; {produced} records sent, \
         {unacknowledged} not acknowledged; checker {report:?}"
    );
    assert!(report.clean(), "{report:?}\n{}", cluster.logs());
    assert!(report.acked > 0, "{report:?}");
}

/// [`producing`] from id 0 under a checker of its own, until [`Producing::finish`].
pub(crate) struct Producing {
    pub(crate) checker: std::sync::Arc<std::sync::Mutex<Checker>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    writer: std::thread::JoinHandle<(u64, usize)>,
}

impl Producing {
    pub(crate) fn start(bootstrap: String, topic: &'static str) -> Self {
        let checker = std::sync::Arc::new(std::sync::Mutex::new(Checker::default()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let shared = (std::sync::Arc::clone(&checker), std::sync::Arc::clone(&stop));
        let writer = producing(bootstrap, topic, 0, shared);
        Self { checker, stop, writer }
    }

    /// Stops the producer: the next id and how many were not acknowledged.
    pub(crate) fn finish(self) -> (u64, usize) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        self.writer.join().unwrap()
    }
}

/// Produces ids from `first` in chunks of 1000 until `stop`, through `bootstrap`; returns the
/// next id and how many were not acknowledged.
pub(crate) fn producing(
    bootstrap: String,
    topic: &'static str,
    first: u64,
    (checker, stop): (
        std::sync::Arc<std::sync::Mutex<Checker>>,
        std::sync::Arc<std::sync::atomic::AtomicBool>,
    ),
) -> std::thread::JoinHandle<(u64, usize)> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (mut next, mut unacknowledged) = (first, 0);
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            unacknowledged +=
                runtime.block_on(produce_acked(&bootstrap, topic, (next, next + 1000), &checker));
            next += 1000;
        }
        (next, unacknowledged)
    })
}

/// Creates `topic` (one partition, RF=3, `min.insync.replicas`=2) through `bootstrap` as soon
/// as the cluster takes it.
fn create_when_ready(runtime: &tokio::runtime::Runtime, bootstrap: &str, topic: &str) {
    poll_until("the cluster takes a replicated topic", Duration::from_mins(1), String::new, || {
        runtime.block_on(async {
            let admin: rdkafka::admin::AdminClient<rdkafka::client::DefaultClientContext> =
                ClientConfig::new().set("bootstrap.servers", bootstrap).create().unwrap();
            let new =
                NewTopic::new(topic, 1, TopicReplication::Fixed(3)).set("min.insync.replicas", "2");
            let options =
                rdkafka::admin::AdminOptions::new().request_timeout(Some(Duration::from_secs(5)));
            let created = admin.create_topics([&new], &options).await;
            created.is_ok_and(|results| {
                results.iter().all(|r| {
                    r.as_ref().is_ok()
                        || r.as_ref().is_err_and(|(_, e)| {
                            *e == rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists
                        })
                })
            })
        })
    });
}

/// A producer that knows only `address` (idempotent, acks=all, each record given up after
/// `timeout_ms`).
fn producer_of_one(address: &str, timeout_ms: u32) -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", address)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("message.timeout.ms", timeout_ms.to_string())
        .create()
        .unwrap()
}

/// Sends `ids` through `producer`: the ones acknowledged, and how many failed.
fn send_all(
    runtime: &tokio::runtime::Runtime,
    producer: &FutureProducer,
    topic: &str,
    ids: std::ops::Range<u64>,
) -> (Checker, usize) {
    runtime.block_on(async {
        let mut deliveries = Vec::new();
        for id in ids {
            let payload = id.to_string();
            let record = FutureRecord::to(topic).key(&payload).payload(&payload);
            deliveries.push((id, producer.send_result(record).map_err(|(e, _)| e).unwrap()));
        }
        let (mut acked, mut failed) = (Checker::default(), 0);
        for (id, delivery) in deliveries {
            match delivery.await.unwrap() {
                Ok(d) => acked.ack(id, d.partition, d.offset),
                Err(_) => failed += 1,
            }
        }
        (acked, failed)
    })
}

/// What each node's log says of leadership, following, truncation, the ISR and fencing.
pub(crate) fn story(nodes: &[crate::cluster_faults::Voter]) -> String {
    nodes
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(n.dir.join("controller.log")).unwrap_or_default();
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| {
                    ["leading", "following", "truncat", "ISR", "fenc"].iter().any(|w| l.contains(w))
                })
                .collect();
            format!("== {}\n{}", n.dir.display(), lines.join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Scenario 3: the leader cut off from the other two nodes, both ways, for 30 s (its clients
/// still reach it). A producer that only knows the old leader has none of its acks=all writes
/// acknowledged; the majority fences it and elects a leader, and a producer through the
/// majority goes on; healed, the old leader truncates what it alone had (by
/// OffsetForLeaderEpoch) and rejoins the ISR. The checker is clean, none of the minority's
/// writes is visible, and the replicas agree byte for byte.
#[test]
fn a_partitioned_leader_is_fenced_and_truncates_its_writes() {
    const TOPIC: &str = "partitioned";
    const CUT: Duration = Duration::from_secs(30);
    const MINORITY_FIRST: u64 = 1_000_000_000;
    let extra = "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n\
                 replica.lag.time.max.ms=5000\n";
    let Some(mut cluster) = Namespaced::up(TOPIC, extra) else { return };
    let writer = Producing::start(cluster.bootstrap.clone(), TOPIC);
    let checker = std::sync::Arc::clone(&writer.checker);
    poll_until("acknowledged writes before the cut", Duration::from_secs(30), String::new, || {
        checker.lock().unwrap().acked.len() >= 2000
    });
    let old = isr_of(&cluster.bootstrap, TOPIC).0;
    let old_id = u32::try_from(old).unwrap();
    let others: Vec<u32> = (1..=3).filter(|n| *n != old_id).collect();
    cluster.net.cut_from(old_id, &others);
    let cut_at = Instant::now();
    let majority = cluster.majority(old);
    let elected_after =
        poll_until("the majority elects a leader", Duration::from_secs(30), String::new, || {
            let (leader, _) = isr_of(&majority, TOPIC);
            leader > 0 && leader != old
        });
    // A producer that knows only the old leader: none of its writes may be acknowledged, and
    // each gives up before the heal, so none is retried to the majority.
    let minority_producer = producer_of_one(&cluster.address(old), 15_000);
    let (minority, minority_failed) =
        send_all(&cluster.runtime, &minority_producer, TOPIC, MINORITY_FIRST..MINORITY_FIRST + 100);
    // The fault lasts its whole length.
    std::thread::sleep(CUT.saturating_sub(cut_at.elapsed()));
    cluster.net.heal(old_id);
    let healed_at = Instant::now();
    // Through the majority: the old leader's own metadata may still be the one it was cut off
    // with.
    poll_until(
        "the old leader back in the ISR",
        Duration::from_mins(1),
        || story(&cluster.nodes),
        || {
            let (leader, isr) = isr_of(&majority, TOPIC);
            leader > 0 && leader != old && isr.len() == 3
        },
    );
    let rejoined = healed_at.elapsed();
    let (produced, unacknowledged) = writer.finish();
    let report = checker.lock().unwrap().check(&cluster.bootstrap, TOPIC, 1);
    let zombies = read_all(&cluster.bootstrap, TOPIC, 1)
        .iter()
        .filter(|(_, _, id)| *id >= MINORITY_FIRST)
        .count();
    println!(
        "scenario 3: leader {old} cut off for {CUT:?}; the majority's leader within {elected_after:?}; \
         the minority's producer: {} acknowledged, {minority_failed} failed; healed, back in the ISR \
         after {rejoined:?}; {produced} records sent, {unacknowledged} not acknowledged; checker \
         {report:?}; minority writes visible: {zombies}",
        minority.acked.len()
    );
    if !report.clean() || !minority.acked.is_empty() || zombies > 0 {
        println!("{}", story(&cluster.nodes));
    }
    assert_eq!(minority.acked.len(), 0, "the minority acknowledged writes");
    assert!(report.clean(), "{report:?}");
    assert_eq!(zombies, 0, "the minority's writes are visible");
    // Healed and caught up, the old leader's log is the others' whole: what it alone had is
    // gone.
    let high_watermark = cluster.stop_and_compare(TOPIC);
    assert_eq!(high_watermark, i64::try_from(report.acked).unwrap(), "every record acknowledged");
}

/// Three combined nodes in network namespaces, the test's clients linked to them, and one
/// replicated topic (one partition, RF=3, `min.insync.replicas`=2) with a full ISR.
pub(crate) struct Namespaced {
    pub(crate) net: crate::cluster_faults::Net,
    pub(crate) nodes: Vec<crate::cluster_faults::Voter>,
    pub(crate) bootstrap: String,
    pub(crate) runtime: tokio::runtime::Runtime,
    _root: tempfile::TempDir,
}

impl Namespaced {
    /// `None` when namespaces cannot be made here (outside CI).
    pub(crate) fn up(topic: &str, extra: &str) -> Option<Self> {
        use crate::cluster_faults::{Net, netns_available, voters_with};
        if !netns_available() {
            return None;
        }
        let mut net = Net::new();
        net.link_clients();
        let root = tempfile::tempdir().unwrap();
        let mut nodes = voters_with(&net, root.path(), extra);
        for node in &mut nodes {
            node.start();
        }
        let bootstrap =
            (1..=3).map(|id| format!("{}:9092", net.ip(id))).collect::<Vec<_>>().join(",");
        let runtime = tokio::runtime::Runtime::new().unwrap();
        create_when_ready(&runtime, &bootstrap, topic);
        let cluster = Self { net, nodes, bootstrap, runtime, _root: root };
        poll_until(
            "a full ISR",
            Duration::from_secs(30),
            || story(&cluster.nodes),
            || isr_of(&cluster.bootstrap, topic).1.len() == 3,
        );
        Some(cluster)
    }

    fn address(&self, id: i32) -> String {
        format!("{}:9092", self.net.ip(u32::try_from(id).unwrap()))
    }

    /// The two nodes but `old`, as a bootstrap list.
    pub(crate) fn majority(&self, old: i32) -> String {
        (1..=3).filter(|n| *n != old).map(|n| self.address(n)).collect::<Vec<_>>().join(",")
    }

    /// Stops every node cleanly; then each node's whole log of partition 0 must be node 1's.
    fn stop_and_compare(&mut self, topic: &str) -> i64 {
        for node in &mut self.nodes {
            node.stop();
        }
        let logs: Vec<Vec<u8>> =
            self.nodes.iter().map(|n| replica_log(&n.dir.join("data"), topic, 0)).collect();
        for (node, log) in (1..).zip(&logs) {
            assert!(
                *log == logs[0],
                "node {node}'s log ({} bytes) differs from node 1's ({} bytes)",
                log.len(),
                logs[0].len()
            );
        }
        replica_stream(&self.nodes[0].dir.join("data"), topic, 0).1
    }
}

/// Scenario 4: the leader stopped with SIGSTOP past `replica.lag.time.max.ms` and the session
/// timeout, then continued. Produce requests that reached its socket while it was stopped are
/// appended when it continues, under its old leader epoch: none is acknowledged (the
/// followers follow the new leader's epoch), and the old leader truncates them when it learns
/// of that epoch, so none reaches a consumer. The checker is clean and the logs agree.
#[test]
fn a_paused_leader_is_fenced_and_its_late_writes_never_reach_a_consumer() {
    const TOPIC: &str = "paused";
    const PAUSE: Duration = Duration::from_secs(12);
    const ZOMBIE_FIRST: u64 = 2_000_000_000;
    let extra = "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n\
                 replica.lag.time.max.ms=5000\n";
    let Some(mut cluster) = Namespaced::up(TOPIC, extra) else { return };
    let writer = Producing::start(cluster.bootstrap.clone(), TOPIC);
    let checker = std::sync::Arc::clone(&writer.checker);
    poll_until(
        "acknowledged writes before the pause",
        Duration::from_secs(30),
        String::new,
        || checker.lock().unwrap().acked.len() >= 2000,
    );
    let old = isr_of(&cluster.bootstrap, TOPIC).0;
    // A producer of the old leader alone, with its connection and metadata made before the
    // pause (one acknowledged record), whose later records give up after 5 s.
    let zombie_producer = producer_of_one(&cluster.address(old), 5000);
    let (warm, _) =
        send_all(&cluster.runtime, &zombie_producer, TOPIC, ZOMBIE_FIRST - 1..ZOMBIE_FIRST);
    for (id, (partition, offset)) in &warm.acked {
        checker.lock().unwrap().ack(*id, *partition, *offset);
    }
    cluster.nodes[usize::try_from(old - 1).unwrap()].signal("STOP");
    let paused_at = Instant::now();
    let late_writes = std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        send_all(&runtime, &zombie_producer, TOPIC, ZOMBIE_FIRST..ZOMBIE_FIRST + 100)
    });
    let majority = cluster.majority(old);
    let elected_after =
        poll_until("the others elect a leader", Duration::from_secs(30), String::new, || {
            let (leader, _) = isr_of(&majority, TOPIC);
            leader > 0 && leader != old
        });
    let (late, late_failed) = late_writes.join().unwrap();
    std::thread::sleep(PAUSE.saturating_sub(paused_at.elapsed()));
    cluster.nodes[usize::try_from(old - 1).unwrap()].signal("CONT");
    let continued_at = Instant::now();
    poll_until(
        "the old leader back in the ISR",
        Duration::from_mins(1),
        || story(&cluster.nodes),
        || {
            let (leader, isr) = isr_of(&majority, TOPIC);
            leader != old && isr.len() == 3
        },
    );
    let rejoined = continued_at.elapsed();
    let (produced, unacknowledged) = writer.finish();
    let report = checker.lock().unwrap().check(&cluster.bootstrap, TOPIC, 1);
    let zombies = read_all(&cluster.bootstrap, TOPIC, 1)
        .iter()
        .filter(|(_, _, id)| *id >= ZOMBIE_FIRST)
        .count();
    println!(
        "scenario 4: leader {old} stopped for {PAUSE:?}; a new leader within {elected_after:?}; \
         late writes to the stopped leader: {} acknowledged, {late_failed} failed; continued, \
         back in the ISR after {rejoined:?}; {produced} records sent, {unacknowledged} not \
         acknowledged; checker {report:?}; late writes visible: {zombies}",
        late.acked.len()
    );
    if !report.clean() || zombies > 0 || !late.acked.is_empty() {
        println!("{}", story(&cluster.nodes));
    }
    assert!(late.acked.is_empty(), "a stopped leader's late writes were acknowledged");
    assert!(report.clean(), "{report:?}");
    assert_eq!(zombies, 0, "a stopped leader's late writes reached a consumer");
    let high_watermark = cluster.stop_and_compare(TOPIC);
    assert_eq!(high_watermark, i64::try_from(report.read).unwrap());
}

/// The coordinator of `group` as FindCoordinator through `bootstrap` names it, and the sum of
/// its committed offsets of `topic`'s `partitions` there (`None` while either fails).
fn coordinator_and_committed(
    runtime: &tokio::runtime::Runtime,
    bootstrap: &str,
    group: &str,
    (topic, partitions): (&str, i32),
) -> Option<(i32, i64)> {
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{
        FindCoordinatorRequest, GroupId, OffsetFetchRequest, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    use seglog_broker::wire::Client;
    runtime.block_on(async {
        // The first broker of the list that answers.
        let mut client = None;
        for address in bootstrap.split(',') {
            if let Ok(connected) = Client::connect(address).await {
                client = Some(connected);
                break;
            }
        }
        let mut client = client?;
        let find =
            FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_owned()));
        let found = client.send(&find, 3).await.ok()?;
        if found.error_code != 0 {
            return None;
        }
        let mut coordinator =
            Client::connect(format!("{}:{}", found.host.as_str(), found.port)).await.ok()?;
        let fetch = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
                    .with_partition_indexes((0..partitions).collect()),
            ]));
        let fetched = coordinator.send(&fetch, 7).await.ok()?;
        if fetched.error_code != 0 {
            return None;
        }
        let committed = fetched
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.committed_offset.max(0))
            .sum();
        Some((found.node_id.0, committed))
    })
}

/// Part 4: `__consumer_offsets` is replicated (RF=3). A group commits; its coordinator's
/// broker is killed; another broker becomes the coordinator with every committed offset, and a
/// new member of the group goes on from them.
#[test]
fn committed_offsets_survive_their_coordinators_death() {
    const TOPIC: &str = "events";
    const GROUP: &str = "survivors";
    const PARTITIONS: i32 = 3;
    let root = tempfile::tempdir().unwrap();
    let extra = properties(
        root.path(),
        "broker.session.timeout.ms=2000\nbroker.heartbeat.interval.ms=250\n",
    );
    let (cluster, _) =
        Cluster::up_with(root.path(), &["--extra-properties", extra.to_str().unwrap()]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let topic = NewTopic::new(TOPIC, PARTITIONS, TopicReplication::Fixed(3));
    create_topics(&runtime, &cluster.bootstrap(1), &[&topic]);
    let all = (1..=3).map(|n| cluster.bootstrap(n)).collect::<Vec<_>>().join(",");
    let checker = std::sync::Mutex::new(Checker::default());
    assert_eq!(runtime.block_on(produce_acked(&all, TOPIC, (0, 3000), &checker)), 0);
    let consume = |n: usize| -> usize {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &all)
            .set("group.id", GROUP)
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        consumer.subscribe(&[TOPIC]).unwrap();
        let mut seen = 0;
        let deadline = Instant::now() + Duration::from_mins(1);
        while seen < n && Instant::now() < deadline {
            if let Some(Ok(_)) = consumer.poll(Duration::from_millis(200)) {
                seen += 1;
            }
        }
        consumer.commit_consumer_state(rdkafka::consumer::CommitMode::Sync).unwrap();
        seen
    };
    assert_eq!(consume(1500), 1500);
    let (coordinator, committed) =
        coordinator_and_committed(&runtime, &all, GROUP, (TOPIC, PARTITIONS)).unwrap();
    assert_eq!(committed, 1500, "the first member's commits");
    let (ok, text) = cluster.run(&["kill", &coordinator.to_string()]);
    assert!(ok, "{text}");
    let killed_at = Instant::now();
    let others = (1..=3)
        .filter(|n| *n != usize::try_from(coordinator).unwrap())
        .map(|n| cluster.bootstrap(n))
        .collect::<Vec<_>>()
        .join(",");
    let mut moved = None;
    poll_until(
        "another coordinator with the commits",
        Duration::from_secs(30),
        || cluster.logs(),
        || {
            moved = coordinator_and_committed(&runtime, &others, GROUP, (TOPIC, PARTITIONS))
                .filter(|(c, _)| *c != coordinator);
            moved.is_some()
        },
    );
    let (new_coordinator, committed) = moved.unwrap();
    println!(
        "part 4: coordinator {coordinator} killed; broker {new_coordinator} coordinates after \
         {:?} with {committed} committed",
        killed_at.elapsed()
    );
    assert_eq!(committed, 1500, "every commit survives its coordinator");
    assert_eq!(consume(1500), 1500, "the rest, from the committed offsets");
    let (_, committed) =
        coordinator_and_committed(&runtime, &others, GROUP, (TOPIC, PARTITIONS)).unwrap();
    assert_eq!(committed, 3000);
}

/// Partition 0's leader and ISR as the brokers of `bootstrap` see it.
pub(crate) fn isr_of(bootstrap: &str, topic: &str) -> (i32, Vec<i32>) {
    isrs(bootstrap, topic).remove(&0).unwrap_or((-1, Vec::new()))
}
