//! A real client: the `rdkafka` crate (librdkafka, built from source) against the broker
//! in-process, unchanged: every codec, ListOffsets by timestamp, DeleteRecords, topic admin,
//! config changes, and a broker restart in the middle of producing with nothing acknowledged
//! lost.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, NewPartitions, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use seglog_broker::Server;

const TIMEOUT: Duration = Duration::from_secs(30);

fn config(server: &Server) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", server.local_addr().to_string());
    config.set("broker.address.family", "v4");
    config
}

fn producer(server: &Server, codec: &str) -> FutureProducer {
    config(server)
        .set("compression.type", codec)
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000")
        .create()
        .expect("producer")
}

fn consumer(server: &Server) -> BaseConsumer {
    config(server)
        .set("group.id", "seglog-test")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "false")
        .create()
        .expect("consumer")
}

fn admin(server: &Server) -> AdminClient<DefaultClientContext> {
    config(server).create().expect("admin client")
}

fn opts() -> AdminOptions {
    AdminOptions::new().operation_timeout(Some(TIMEOUT))
}

async fn create_topic(server: &Server, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
    let mut new_topic = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (key, value) in configs {
        new_topic = new_topic.set(key, value);
    }
    let results = admin(server).create_topics([&new_topic], &opts()).await.expect("create topics");
    assert_eq!(results.len(), 1);
    for result in results {
        result.expect("topic created");
    }
}

/// Reads every message of `topic` partition `partition` from the start until `expected` are in.
fn consume(server: &Server, topic: &str, partition: i32, expected: usize) -> Vec<(i64, String)> {
    let consumer = consumer(server);
    let mut assignment = TopicPartitionList::new();
    assignment.add_partition_offset(topic, partition, Offset::Beginning).expect("assignment");
    consumer.assign(&assignment).expect("assign");
    let mut out = Vec::new();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while out.len() < expected && std::time::Instant::now() < deadline {
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => out.push((
                message.offset(),
                String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned(),
            )),
            Some(Err(error)) => panic!("consume error: {error}"),
            None => {}
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_and_consume_with_every_codec() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = common::start(dir.path(), &[]).await;
    create_topic(&server, "codecs", 1, &[]).await;
    let mut expected = Vec::new();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let producer = producer(&server, codec);
        let mut deliveries = Vec::new();
        for i in 0..200 {
            let value = format!("{codec}-{i}");
            let key = i.to_string();
            deliveries.push(
                producer
                    .send_result(FutureRecord::to("codecs").key(&key).payload(&value))
                    .expect("queued"),
            );
            expected.push(value);
        }
        for delivery in deliveries {
            delivery.await.expect("delivered").expect("acknowledged");
        }
    }
    let got = consume(&server, "codecs", 0, expected.len());
    let offsets: Vec<i64> = got.iter().map(|(offset, _)| *offset).collect();
    let values: Vec<String> = got.into_iter().map(|(_, value)| value).collect();
    assert_eq!(values, expected);
    assert_eq!(offsets, (0..1000).collect::<Vec<i64>>());
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_offsets_by_timestamp_and_delete_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = common::start(dir.path(), &[]).await;
    create_topic(&server, "times", 1, &[]).await;
    let producer = producer(&server, "none");
    let base = 1_800_000_000_000_i64;
    for i in 0..10 {
        let value = format!("t{i}");
        producer
            .send(
                FutureRecord::<(), _>::to("times").payload(&value).timestamp(base + i * 1000),
                TIMEOUT,
            )
            .await
            .expect("acknowledged");
    }
    let consumer = consumer(&server);
    let mut query = TopicPartitionList::new();
    query.add_partition_offset("times", 0, Offset::Offset(base + 4500)).expect("query");
    let answer = consumer.offsets_for_times(query, TIMEOUT).expect("offsets for times");
    let found = answer.find_partition("times", 0).expect("partition");
    assert_eq!(found.offset(), Offset::Offset(5));
    let (low, high) = consumer.fetch_watermarks("times", 0, TIMEOUT).expect("watermarks");
    assert_eq!((low, high), (0, 10));

    let mut delete = TopicPartitionList::new();
    delete.add_partition_offset("times", 0, Offset::Offset(7)).expect("delete");
    let result = admin(&server).delete_records(&delete, &opts()).await.expect("delete records");
    let partition = result.find_partition("times", 0).expect("partition");
    assert_eq!(partition.error(), Ok(()));
    assert_eq!(partition.offset(), Offset::Offset(7));
    let (low, high) = consumer.fetch_watermarks("times", 0, TIMEOUT).expect("watermarks");
    assert_eq!((low, high), (7, 10));
    let values: Vec<String> = consume(&server, "times", 0, 3).into_iter().map(|(_, v)| v).collect();
    assert_eq!(values, vec!["t7", "t8", "t9"]);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_admin_and_config_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = common::start(dir.path(), &[]).await;
    let admin = admin(&server);
    create_topic(&server, "admin", 2, &[("retention.ms", "3600000")]).await;

    let described = admin
        .describe_configs([&ResourceSpecifier::Topic("admin")], &opts())
        .await
        .expect("describe");
    let resource = described.into_iter().next().expect("one result").expect("described");
    assert_eq!(
        resource.get("retention.ms").and_then(|e| e.value.clone()).as_deref(),
        Some("3600000")
    );
    assert_eq!(
        resource.get("segment.bytes").and_then(|e| e.value.clone()).as_deref(),
        Some("1073741824")
    );

    let alter = AlterConfig::new(ResourceSpecifier::Topic("admin")).set("segment.bytes", "1048576");
    let results = admin.alter_configs([&alter], &opts()).await.expect("alter");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let log = server
        .broker()
        .manager()
        .get_log(&seglog_storage::log::partition_log::TopicPartition {
            topic: "admin".into(),
            partition: 1,
        })
        .expect("log");
    assert_eq!(log.config().expect("config").segment_bytes, 1_048_576, "applied live");

    let results =
        admin.create_partitions([&NewPartitions::new("admin", 4)], &opts()).await.expect("grow");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(server.broker().manager().topic_partition_counts().get("admin"), Some(&4));
    // Errors come back as Kafka's codes.
    let duplicate = NewTopic::new("admin", 1, TopicReplication::Fixed(1));
    let results = admin.create_topics([&duplicate], &opts()).await.expect("create");
    let error = results.into_iter().next().expect("one").expect_err("already exists");
    assert_eq!(error.1, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists);

    let results = admin.delete_topics(&["admin"], &opts()).await.expect("delete");
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert!(!server.broker().manager().topic_partition_counts().contains_key("admin"));
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_restart_loses_no_acknowledged_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = [("seglog.durability", "group-commit")];
    let server = common::start(dir.path(), &extra).await;
    let addr = server.local_addr();
    create_topic(&server, "restart", 1, &[]).await;
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", addr.to_string())
        .set("broker.address.family", "v4")
        .set("acks", "all")
        .set("message.timeout.ms", "60000")
        .set("reconnect.backoff.ms", "50")
        .set("reconnect.backoff.max.ms", "200")
        .create()
        .expect("producer");
    let mut acknowledged = BTreeSet::new();
    for i in 0..100 {
        let value = format!("before-{i}");
        producer
            .send(FutureRecord::<(), _>::to("restart").payload(&value), TIMEOUT)
            .await
            .expect("acknowledged");
        acknowledged.insert(value);
    }
    // Messages in flight while the broker stops and comes back on the same port.
    let mut in_flight = Vec::new();
    for i in 0..100 {
        let value = format!("during-{i}");
        in_flight.push((
            value.clone(),
            producer
                .send_result(FutureRecord::<(), _>::to("restart").payload(&value))
                .expect("queued"),
        ));
    }
    server.shutdown().await.expect("clean shutdown");
    let mut properties = vec![("listeners", format!("PLAINTEXT://{addr}"))];
    properties.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    let pairs: Vec<(&str, &str)> = properties.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = common::start(dir.path(), &pairs).await;
    assert_eq!(server.local_addr(), addr);
    for (value, delivery) in in_flight {
        if let Ok(Ok(_)) = delivery.await {
            acknowledged.insert(value);
        }
    }
    for i in 0..100 {
        let value = format!("after-{i}");
        producer
            .send(FutureRecord::<(), _>::to("restart").payload(&value), TIMEOUT)
            .await
            .expect("acknowledged");
        acknowledged.insert(value);
    }
    let log_end = server
        .broker()
        .manager()
        .get_log(&seglog_storage::log::partition_log::TopicPartition {
            topic: "restart".into(),
            partition: 0,
        })
        .expect("log")
        .log_end_offset()
        .expect("log end");
    let got: BTreeSet<String> =
        consume(&server, "restart", 0, usize::try_from(log_end).expect("small"))
            .into_iter()
            .map(|(_, value)| value)
            .collect();
    let lost: Vec<&String> = acknowledged.difference(&got).collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    assert!(acknowledged.len() >= 200, "{}", acknowledged.len());
    server.shutdown().await.expect("clean shutdown");
}
