//! Transactions with a real client, the `rdkafka` crate (librdkafka) in-process: a
//! transactional producer commits and aborts, read_committed consumers see exactly the
//! committed records (each once, none of an aborted transaction), read_uncommitted ones see
//! both, `send_offsets_to_transaction` commits a group's offsets with the transaction, and a
//! second producer with the same transactional id fences the first.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::util::Timeout;
use rdkafka::{Offset, TopicPartitionList};
use seglog_broker::Server;

const TIMEOUT: Duration = Duration::from_secs(30);

fn config(server: &Server) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", server.local_addr().to_string());
    config.set("broker.address.family", "v4");
    config
}

fn transactional_producer(server: &Server, id: &str) -> ThreadedProducer<DefaultProducerContext> {
    let producer: ThreadedProducer<DefaultProducerContext> = config(server)
        .set("transactional.id", id)
        .set("linger.ms", "5")
        .create()
        .expect("producer");
    producer.init_transactions(TIMEOUT).expect("init_transactions");
    producer
}

fn send(
    producer: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    partition: i32,
    value: &str,
) {
    producer
        .send(BaseRecord::<(), str>::to(topic).partition(partition).payload(value))
        .map_err(|(error, _)| error)
        .expect("queued");
}

/// Every value of `topic`'s `partitions` from the start with `isolation`, read until the
/// consumer reaches each partition's end (the LSO for read_committed).
fn read_all(server: &Server, topic: &str, partitions: i32, isolation: &str) -> Vec<String> {
    let consumer: BaseConsumer = config(server)
        .set("group.id", format!("reader-{isolation}"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", isolation)
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment.add_partition_offset(topic, partition, Offset::Beginning).expect("assignment");
    }
    consumer.assign(&assignment).expect("assign");
    let mut values = Vec::new();
    let mut at_end = BTreeSet::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while at_end.len() < usize::try_from(partitions).expect("small") {
        assert!(std::time::Instant::now() < deadline, "read {values:?}, at end {at_end:?}");
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => values
                .push(String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned()),
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
            }
            Some(Err(error)) => panic!("consume error: {error}"),
            None => {}
        }
    }
    values
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_sees_exactly_the_committed_transactions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = common::start(
        dir.path(),
        &[
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
            ("num.partitions", "3"),
        ],
    )
    .await;
    let producer = transactional_producer(&server, "rdkafka-txn");
    let mut committed = BTreeSet::new();
    let mut aborted = BTreeSet::new();
    for round in 0..6 {
        producer.begin_transaction().expect("begin");
        let commit = round % 3 != 1;
        for i in 0..30 {
            let value = format!("{}-{round}-{i}", if commit { "c" } else { "a" });
            send(&producer, "txn-data", i % 3, &value);
            if commit {
                committed.insert(value)
            } else {
                aborted.insert(value)
            };
        }
        if commit {
            producer.commit_transaction(TIMEOUT).expect("commit");
        } else {
            // Delivered first: an abort purges what is still queued, and the test wants the
            // aborted records in the log.
            producer.flush(TIMEOUT).expect("flush");
            producer.abort_transaction(TIMEOUT).expect("abort");
        }
    }
    let read = read_all(&server, "txn-data", 3, "read_committed");
    let read_set: BTreeSet<String> = read.iter().cloned().collect();
    assert_eq!(read.len(), read_set.len(), "no record read twice");
    assert_eq!(read_set, committed, "exactly the committed records");
    let uncommitted: BTreeSet<String> =
        read_all(&server, "txn-data", 3, "read_uncommitted").into_iter().collect();
    assert_eq!(uncommitted, committed.union(&aborted).cloned().collect());
    drop(producer);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_commit_with_the_transaction_and_a_new_producer_fences_the_old() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = common::start(
        dir.path(),
        &[
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
            ("num.partitions", "3"),
        ],
    )
    .await;
    // Input for the group to "consume".
    let seed = transactional_producer(&server, "seed");
    seed.begin_transaction().expect("begin");
    for i in 0..10 {
        send(&seed, "txn-in", 0, &format!("in-{i}"));
    }
    seed.commit_transaction(TIMEOUT).expect("commit");
    let consumer: BaseConsumer = config(&server)
        .set("group.id", "txn-group")
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .expect("consumer");
    let producer = transactional_producer(&server, "txn-eos");
    for (round, commit) in [(4, false), (7, true)] {
        producer.begin_transaction().expect("begin");
        send(&producer, "txn-out", 0, &format!("out-{round}"));
        let mut offsets = TopicPartitionList::new();
        offsets.add_partition_offset("txn-in", 0, Offset::Offset(round)).expect("offset");
        let metadata = consumer.group_metadata().expect("group metadata");
        producer.send_offsets_to_transaction(&offsets, &metadata, TIMEOUT).expect("send offsets");
        if commit {
            producer.commit_transaction(TIMEOUT).expect("commit");
        } else {
            producer.abort_transaction(TIMEOUT).expect("abort");
        }
    }
    let mut asked = TopicPartitionList::new();
    asked.add_partition("txn-in", 0);
    let committed = consumer.committed_offsets(asked, Timeout::After(TIMEOUT)).expect("committed");
    let offset = committed.find_partition("txn-in", 0).expect("partition").offset();
    assert_eq!(
        offset,
        Offset::Offset(7),
        "the committed transaction's offset, not the aborted one's"
    );
    // A new producer with the same transactional id fences the first.
    let zombie = producer;
    let fresh = transactional_producer(&server, "txn-eos");
    zombie.begin_transaction().expect("begin is local");
    send(&zombie, "txn-out", 0, "zombie");
    let error = zombie.commit_transaction(TIMEOUT).expect_err("the fenced producer cannot commit");
    assert!(
        error.to_string().contains("fenced") || error.to_string().contains("Fenced"),
        "a fencing error: {error}"
    );
    fresh.begin_transaction().expect("begin");
    send(&fresh, "txn-out", 0, "fresh");
    fresh.commit_transaction(TIMEOUT).expect("commit");
    let out = read_all(&server, "txn-out", 1, "read_committed");
    assert_eq!(out, vec!["out-7".to_owned(), "fresh".to_owned()]);
    drop((zombie, fresh, seed));
    server.shutdown().await.expect("clean shutdown");
}
