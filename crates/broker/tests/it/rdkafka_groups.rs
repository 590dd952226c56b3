//! Consumer groups with a real client: the `rdkafka` crate (librdkafka 2.12, built from source)
//! subscribing through the broker's group coordinator, unchanged and with default group
//! timings: three members joining one after another and leaving, the cooperative-sticky
//! assignor's incremental rebalances, committed offsets across a broker restart, and
//! `auto.offset.reset`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use seglog_broker::Server;

const TIMEOUT: Duration = Duration::from_mins(1);

fn config(addr: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", addr);
    config.set("broker.address.family", "v4");
    config
}

async fn produce(addr: &str, topic: &str, partitions: i32, count: usize, prefix: &str) {
    let producer: FutureProducer =
        config(addr).set("acks", "all").set("linger.ms", "5").create().expect("producer");
    let mut pending = Vec::new();
    for i in 0..count {
        let value = format!("{prefix}-{i}");
        let partition = i32::try_from(i).expect("small") % partitions;
        pending.push(
            producer
                .send_result(FutureRecord::<(), _>::to(topic).payload(&value).partition(partition))
                .expect("queued"),
        );
    }
    for delivery in pending {
        delivery.await.expect("delivered").expect("acknowledged");
    }
}

/// What a member saw: every `(partition, offset)` it consumed and its latest assignment.
#[derive(Default)]
struct Seen {
    records: BTreeSet<(i32, i64)>,
    assignment: BTreeSet<i32>,
}

/// A group member polling on its own thread until told to stop (then it closes, leaving the
/// group as librdkafka does).
struct Member {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Member {
    fn start(addr: &str, group: &str, topic: &str, extra: &[(&str, &str)]) -> Self {
        let mut config = config(addr);
        config
            .set("group.id", group)
            .set("auto.offset.reset", "earliest")
            .set("enable.partition.eof", "false");
        for (key, value) in extra {
            config.set(*key, *value);
        }
        let consumer: BaseConsumer = config.create().expect("consumer");
        consumer.subscribe(&[topic]).expect("subscribe");
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen_by_thread, stop_by_thread) = (Arc::clone(&seen), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            while !stop_by_thread.load(Ordering::SeqCst) {
                let message = consumer.poll(Duration::from_millis(100));
                let assignment: BTreeSet<i32> = consumer
                    .assignment()
                    .map(|list| {
                        list.elements()
                            .iter()
                            .map(rdkafka::topic_partition_list::TopicPartitionListElem::partition)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut seen = seen_by_thread.lock().expect("lock");
                seen.assignment = assignment;
                match message {
                    Some(Ok(message)) => {
                        seen.records.insert((message.partition(), message.offset()));
                    }
                    Some(Err(error)) => panic!("consumer error: {error}"),
                    None => {}
                }
            }
            consumer.unsubscribe();
            drop(consumer);
        });
        Self { seen, stop, thread: Some(thread) }
    }

    fn assignment(&self) -> BTreeSet<i32> {
        self.seen.lock().expect("lock").assignment.clone()
    }

    fn records(&self) -> BTreeSet<(i32, i64)> {
        self.seen.lock().expect("lock").records.clone()
    }

    fn stop(mut self) -> BTreeSet<(i32, i64)> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("member thread");
        }
        self.records()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits (polling, up to `TIMEOUT`) until `condition` holds; says what it waited for if not.
fn wait_until(what: &str, mut condition: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < TIMEOUT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

fn all_offsets(partitions: i32, per_partition: i64) -> BTreeSet<(i32, i64)> {
    (0..partitions).flat_map(|p| (0..per_partition).map(move |o| (p, o))).collect()
}

fn balanced(members: &[&Member], partitions: i32) -> bool {
    let assignments: Vec<BTreeSet<i32>> = members.iter().map(|m| m.assignment()).collect();
    let total: usize = assignments.iter().map(BTreeSet::len).sum();
    let union: BTreeSet<i32> = assignments.iter().flatten().copied().collect();
    let fair = usize::try_from(partitions).expect("small") / members.len();
    total == union.len()
        && union.len() == usize::try_from(partitions).expect("small")
        && assignments.iter().all(|a| a.len() >= fair)
}

async fn start_broker(dir: &std::path::Path) -> Server {
    // Kafka's defaults, group.initial.rebalance.delay.ms = 3000 included.
    common::start(dir, &[("offsets.topic.num.partitions", "5")]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_members_join_leave_and_consume_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_broker(dir.path()).await;
    let addr = server.local_addr().to_string();
    common_topic(&server, "orders", 6);
    produce(&addr, "orders", 6, 600, "a").await;
    let check = tokio::task::spawn_blocking(move || {
        let first = Member::start(&addr, "three", "orders", &[]);
        wait_until("the first member's assignment", || first.assignment().len() == 6);
        let second = Member::start(&addr, "three", "orders", &[]);
        let joined = wait_until("two balanced members", || balanced(&[&first, &second], 6));
        let third = Member::start(&addr, "three", "orders", &[]);
        wait_until("three balanced members", || balanced(&[&first, &second, &third], 6));
        let union = |members: &[&Member]| -> BTreeSet<(i32, i64)> {
            members.iter().flat_map(|m| m.records()).collect()
        };
        wait_until("all 600 records", || union(&[&first, &second, &third]).len() == 600);
        // One leaves; the other two take its partitions over.
        let left = third.stop();
        wait_until("two balanced members after a leave", || balanced(&[&first, &second], 6));
        (addr, first, second, left, joined)
    });
    let (addr, first, second, left, joined) = check.await.expect("members");
    assert!(joined < Duration::from_secs(10), "the second member took {joined:?} to be balanced");
    produce(&addr, "orders", 6, 600, "b").await;
    let (first_seen, second_seen) = tokio::task::spawn_blocking(move || {
        wait_until("all 1,200 records", || {
            first.records().len() + second.records().len() + left.len() >= 1_200
                && first.records().union(&second.records()).count() + left.len() >= 1_200
        });
        (first.stop(), second.stop())
    })
    .await
    .expect("members");
    let mut all: BTreeSet<(i32, i64)> = first_seen;
    all.extend(second_seen);
    let missing: Vec<_> = all_offsets(6, 200).difference(&all).copied().collect();
    assert!(missing.is_empty(), "never consumed: {missing:?}");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_sticky_members_rebalance_incrementally() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_broker(dir.path()).await;
    let addr = server.local_addr().to_string();
    common_topic(&server, "coop", 4);
    produce(&addr, "coop", 4, 400, "c").await;
    let sticky = [("partition.assignment.strategy", "cooperative-sticky")];
    let (first_seen, second_seen, kept) = tokio::task::spawn_blocking(move || {
        let first = Member::start(&addr, "coop-group", "coop", &sticky);
        wait_until("the first member's assignment", || first.assignment().len() == 4);
        let before = first.assignment();
        let second = Member::start(&addr, "coop-group", "coop", &sticky);
        wait_until("two balanced members", || balanced(&[&first, &second], 4));
        // Sticky: what the first member kept is a subset of what it had.
        let kept = first.assignment().is_subset(&before);
        wait_until("all 400 records", || first.records().union(&second.records()).count() == 400);
        (first.stop(), second.stop(), kept)
    })
    .await
    .expect("members");
    assert!(kept, "the first member's partitions moved instead of being split");
    let all: BTreeSet<_> = first_seen.union(&second_seen).copied().collect();
    assert_eq!(all, all_offsets(4, 100));
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_a_restart_and_auto_offset_reset_applies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_broker(dir.path()).await;
    let addr = server.local_addr();
    let addr_text = addr.to_string();
    common_topic(&server, "resume", 1);
    produce(&addr_text, "resume", 1, 200, "r").await;
    // Consume 100 records and commit synchronously.
    let for_thread = addr_text.clone();
    tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = config(&for_thread)
            .set("group.id", "resumer")
            .set("enable.auto.commit", "false")
            .set("auto.offset.reset", "earliest")
            .create()
            .expect("consumer");
        consumer.subscribe(&["resume"]).expect("subscribe");
        let mut last = -1;
        let started = Instant::now();
        while last < 99 {
            assert!(started.elapsed() < TIMEOUT, "no records");
            if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                last = message.expect("record").offset();
            }
        }
        let mut offsets = TopicPartitionList::new();
        offsets.add_partition_offset("resume", 0, Offset::Offset(100)).expect("offset");
        consumer.commit(&offsets, CommitMode::Sync).expect("commit");
        consumer.unsubscribe();
    })
    .await
    .expect("consumer");
    server.shutdown().await.expect("clean shutdown");
    let server = common::start(
        dir.path(),
        &[("listeners", &format!("PLAINTEXT://{addr}")), ("offsets.topic.num.partitions", "5")],
    )
    .await;
    produce(&addr_text, "resume", 1, 50, "late").await;
    let firsts = tokio::task::spawn_blocking(move || {
        let first_offset = |group: &str, reset: &str| -> (i64, BTreeMap<i32, i64>) {
            let consumer: BaseConsumer = config(&addr_text)
                .set("group.id", group)
                .set("auto.offset.reset", reset)
                .create()
                .expect("consumer");
            let mut asked = TopicPartitionList::new();
            asked.add_partition("resume", 0);
            let committed = consumer
                .committed_offsets(asked, Duration::from_secs(10))
                .expect("committed offsets")
                .elements()
                .iter()
                .filter_map(|e| match e.offset() {
                    Offset::Offset(offset) => Some((e.partition(), offset)),
                    _ => None,
                })
                .collect();
            consumer.subscribe(&["resume"]).expect("subscribe");
            let started = Instant::now();
            loop {
                assert!(started.elapsed() < TIMEOUT, "no record for {group}");
                if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                    return (message.expect("record").offset(), committed);
                }
            }
        };
        (first_offset("resumer", "latest"), first_offset("newcomer-earliest", "earliest"))
    });
    let ((resumed_at, committed), (earliest_at, _)) = firsts.await.expect("consumers");
    assert_eq!(committed.get(&0), Some(&100), "the committed offset after the restart");
    assert_eq!(resumed_at, 100, "a committed offset wins over auto.offset.reset");
    assert_eq!(earliest_at, 0);
    // "latest" for a new group starts at the log end: it sees none of the 250 records there,
    // only those produced while it waits (one every 200 ms until it has one).
    let addr_text = addr.to_string();
    let latest = tokio::task::spawn_blocking({
        let addr = addr_text.clone();
        move || {
            let consumer: BaseConsumer = config(&addr)
                .set("group.id", "newcomer-latest")
                .set("auto.offset.reset", "latest")
                .create()
                .expect("consumer");
            consumer.subscribe(&["resume"]).expect("subscribe");
            let started = Instant::now();
            loop {
                assert!(started.elapsed() < TIMEOUT, "no record for the latest group");
                if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                    return message.expect("record").offset();
                }
            }
        }
    });
    while !latest.is_finished() {
        produce(&addr_text, "resume", 1, 1, "newest").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let offset = latest.await.expect("latest consumer");
    assert!(offset >= 250, "auto.offset.reset=latest started at {offset}, before the log end");
    server.shutdown().await.expect("clean shutdown");
}

fn common_topic(server: &Server, topic: &str, partitions: i32) {
    server
        .broker()
        .manager()
        .create_topic(topic, partitions, BTreeMap::new())
        .expect("topic created");
}

/// KIP-848 (`group.protocol=consumer`): the broker assigns (uniform, then range); members
/// joining and leaving rebalance incrementally, and everything is consumed once assigned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_consumer_protocol_assigns_on_the_broker() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_broker(dir.path()).await;
    let addr = server.local_addr().to_string();
    common_topic(&server, "kip848", 4);
    produce(&addr, "kip848", 4, 400, "k").await;
    let for_members = addr.clone();
    let (first, second) = tokio::task::spawn_blocking(move || {
        let consumer_protocol = [("group.protocol", "consumer")];
        let first = Member::start(&for_members, "kip848-group", "kip848", &consumer_protocol);
        wait_until("the first member's assignment", || first.assignment().len() == 4);
        let second = Member::start(&for_members, "kip848-group", "kip848", &consumer_protocol);
        let joined = wait_until("two balanced members", || balanced(&[&first, &second], 4));
        wait_until("all 400 records", || first.records().union(&second.records()).count() == 400);
        assert!(joined < Duration::from_secs(15), "the second member took {joined:?}");
        (first, second)
    })
    .await
    .expect("members");
    let described = server.broker().groups().consumer_group_state("kip848-group");
    assert_eq!(described, Some(("Stable", 2)));
    let left = tokio::task::spawn_blocking(move || {
        let left = second.stop();
        wait_until("the remaining member's four partitions", || first.assignment().len() == 4);
        (first, left)
    })
    .await
    .expect("leave");
    produce(&addr, "kip848", 4, 400, "l").await;
    let (first, left) = left;
    tokio::task::spawn_blocking(move || {
        wait_until("all 800 records", || first.records().union(&left).count() == 800);
        first.stop()
    })
    .await
    .expect("member");
    server.shutdown().await.expect("clean shutdown");
}
