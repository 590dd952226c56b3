//! DescribeLogDirs and AlterReplicaLogDirs on a broker with two log directories, in-process on
//! `127.0.0.1:0`: sizes at every version, Kafka's error codes, and a partition moved while a
//! producer keeps producing, after which every acknowledged record is fetchable from the new
//! directory.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{Client, batch, records, start};
use kafka_protocol::messages::alter_replica_log_dirs_request::{
    AlterReplicaLogDir, AlterReplicaLogDirTopic,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::describe_log_dirs_response::DescribeLogDirsResult;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterReplicaLogDirsRequest, BrokerId, CreateTopicsRequest, DescribeLogDirsRequest,
    FetchRequest, ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_format::Compression;

const LOG_DIR_NOT_FOUND: i16 = 57;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_owned()))
}

/// A broker over `root/a` and `root/b`, with `extra` keys.
async fn start_two_dirs(
    root: &Path,
    extra: &[(&str, &str)],
) -> (seglog_broker::Server, [PathBuf; 2]) {
    let dirs = [root.join("a"), root.join("b")];
    let log_dirs = format!("{},{}", dirs[0].display(), dirs[1].display());
    let mut keys = vec![("log.dirs", log_dirs.as_str())];
    keys.extend_from_slice(extra);
    (start(root, &keys).await, dirs)
}

async fn create_topic(client: &mut Client, topic: &str, partitions: i32) {
    let request = CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        CreatableTopic::default()
            .with_name(name(topic))
            .with_num_partitions(partitions)
            .with_replication_factor(1),
    ]);
    let response = client.send(&request, 7).await;
    assert_eq!(response.topics[0].error_code, 0, "create {topic}");
}

/// Produces `records` to `topic`-`partition` with acks=-1; returns the base offset.
async fn produce(client: &mut Client, topic: &str, partition: i32, records: Bytes) -> i64 {
    let request =
        ProduceRequest::default().with_acks(-1).with_timeout_ms(5000).with_topic_data(vec![
            TopicProduceData::default().with_name(name(topic)).with_partition_data(vec![
                PartitionProduceData::default().with_index(partition).with_records(Some(records)),
            ]),
        ]);
    let response = client.send(&request, 9).await;
    let result = &response.responses[0].partition_responses[0];
    assert_eq!(result.error_code, 0, "produce to {topic}-{partition}: {:?}", result.error_message);
    result.base_offset
}

/// Every record of `topic`-0 from `offset` to the high watermark.
async fn fetch_all(client: &mut Client, topic: &str) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    loop {
        let offset = out.last().map_or(0, |(offset, _)| offset + 1);
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(50 << 20)
            .with_topics(vec![FetchTopic::default().with_topic(name(topic)).with_partitions(
                vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ],
            )]);
        let response = client.send(&request, 12).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "fetch at {offset}");
        let fetched: Vec<(i64, String)> = records(partition.records.as_deref().unwrap_or_default())
            .into_iter()
            .filter(|(record_offset, _)| *record_offset >= offset)
            .collect();
        if fetched.is_empty() {
            assert_eq!(offset, partition.high_watermark, "fetched up to the high watermark");
            return out;
        }
        out.extend(fetched);
    }
}

async fn describe(client: &mut Client, version: i16) -> Vec<DescribeLogDirsResult> {
    let response = client.send(&DescribeLogDirsRequest::default().with_topics(None), version).await;
    assert_eq!(response.error_code, 0);
    response.results
}

/// The `(partition_size, offset_lag, is_future)` of each replica of `topic`-`partition` in
/// `results`, by log directory.
fn replicas(
    results: &[DescribeLogDirsResult],
    topic: &str,
    partition: i32,
) -> Vec<(String, i64, i64, bool)> {
    let mut found = Vec::new();
    for result in results {
        for t in result.topics.iter().filter(|t| t.name.0.as_str() == topic) {
            for p in t.partitions.iter().filter(|p| p.partition_index == partition) {
                found.push((
                    result.log_dir.to_string(),
                    p.partition_size,
                    p.offset_lag,
                    p.is_future_key,
                ));
            }
        }
    }
    found
}

/// The bytes of the `.log` files in a partition directory.
fn segment_bytes(partition_dir: &Path) -> i64 {
    std::fs::read_dir(partition_dir)
        .expect("partition dir")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
        .map(|path| i64::try_from(std::fs::metadata(&path).expect("stat").len()).expect("size"))
        .sum()
}

fn alter_request(dir: &Path, topic: &str, partition: i32) -> AlterReplicaLogDirsRequest {
    AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default()
            .with_path(StrBytes::from_string(dir.display().to_string()))
            .with_topics(vec![
                AlterReplicaLogDirTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![partition]),
            ]),
    ])
}

#[tokio::test]
async fn describe_log_dirs_lists_both_dirs_with_their_partition_sizes_at_every_version() {
    let root = tempfile::tempdir().expect("tempdir");
    let (server, dirs) = start_two_dirs(root.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, "sizes", 2).await;
    for round in 0..5 {
        for partition in 0..2 {
            let values: Vec<String> = (0..=round + partition).map(|i| format!("v{i}")).collect();
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            produce(&mut client, "sizes", partition, batch(Compression::None, &values, 1_000))
                .await;
        }
    }
    for version in 1..=4 {
        let results = describe(&mut client, version).await;
        assert_eq!(results.len(), 2, "v{version}: both directories");
        for (result, dir) in results.iter().zip(&dirs) {
            assert_eq!(result.error_code, 0, "v{version}");
            assert_eq!(result.log_dir.as_str(), dir.display().to_string(), "v{version}");
            if version >= 4 {
                assert!(result.total_bytes > 0, "v{version}: {}", result.total_bytes);
                assert!(result.usable_bytes > 0 && result.usable_bytes <= result.total_bytes);
            } else {
                assert_eq!((result.total_bytes, result.usable_bytes), (-1, -1), "v{version}");
            }
        }
        let mut seen = 0;
        for partition in 0..2 {
            let found = replicas(&results, "sizes", partition);
            assert_eq!(found.len(), 1, "v{version}: one replica of sizes-{partition}: {found:?}");
            let (dir, size, lag, is_future) = &found[0];
            let on_disk = segment_bytes(&Path::new(dir).join(format!("sizes-{partition}")));
            assert!(on_disk > 0);
            assert_eq!(*size, on_disk, "v{version}: size is the segments' bytes");
            assert_eq!((*lag, *is_future), (0, false), "v{version}");
            seen += 1;
        }
        assert_eq!(seen, 2);
        assert_ne!(
            replicas(&results, "sizes", 0)[0].0,
            replicas(&results, "sizes", 1)[0].0,
            "the partitions are spread over the two directories"
        );
        // A topic list names what to describe; both directories are still listed.
        let request = DescribeLogDirsRequest::default().with_topics(Some(vec![
            DescribableLogDirTopic::default().with_topic(name("sizes")).with_partitions(vec![1]),
        ]));
        let response = client.send(&request, version).await;
        assert_eq!(response.results.len(), 2);
        assert!(replicas(&response.results, "sizes", 0).is_empty(), "v{version}");
        assert_eq!(replicas(&response.results, "sizes", 1).len(), 1, "v{version}");
    }
    for version in 1..=2 {
        let in_dir = PathBuf::from(&replicas(&describe(&mut client, 4).await, "sizes", 0)[0].0);
        let cases = [
            (root.path().join("c"), "sizes", LOG_DIR_NOT_FOUND),
            (dirs[1].clone(), "nope", UNKNOWN_TOPIC_OR_PARTITION),
            (in_dir, "sizes", 0),
        ];
        for (dir, topic, expected) in cases {
            let response = client.send(&alter_request(&dir, topic, 0), version).await;
            assert_eq!(response.results.len(), 1, "v{version}");
            assert_eq!(response.results[0].topic_name.0.as_str(), topic);
            let code = response.results[0].partitions[0].error_code;
            assert_eq!(code, expected, "v{version}: {topic} to {}", dir.display());
        }
    }
    // Moving to the directory a partition is in changes nothing.
    let results = describe(&mut client, 4).await;
    assert_eq!(replicas(&results, "sizes", 0).len(), 1);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn alter_replica_log_dirs_moves_a_partition_while_a_producer_keeps_producing() {
    let root = tempfile::tempdir().expect("tempdir");
    let (server, dirs) = start_two_dirs(
        root.path(),
        &[("replica.fetch.max.bytes", "16384"), ("log.segment.bytes", "65536")],
    )
    .await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, "moving", 1).await;
    let mut acked: Vec<(i64, String)> = Vec::new();
    // About 2 MB first, so that the copy takes many steps.
    let payload = "x".repeat(1000);
    for batch_idx in 0..200 {
        let values: Vec<String> = (0..10).map(|i| format!("{batch_idx}-{i}-{payload}")).collect();
        let refs: Vec<&str> = values.iter().map(String::as_str).collect();
        let base = produce(&mut client, "moving", 0, batch(Compression::None, &refs, 1_000)).await;
        acked.extend(values.into_iter().enumerate().map(|(i, v)| (base + i as i64, v)));
    }
    let before = replicas(&describe(&mut client, 4).await, "moving", 0);
    assert_eq!(before.len(), 1);
    let source = PathBuf::from(&before[0].0);
    let target = dirs.iter().find(|dir| **dir != source).expect("another directory").clone();

    // A producer on its own connection, until told to stop.
    let stop = Arc::new(AtomicBool::new(false));
    let mut producer_client = Client::connect(&server).await;
    let producer = tokio::spawn({
        let stop = Arc::clone(&stop);
        async move {
            let mut acked = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let values: Vec<String> = (0..5).map(|i| format!("p{n}-{i}")).collect();
                let refs: Vec<&str> = values.iter().map(String::as_str).collect();
                let records = batch(Compression::Lz4, &refs, 2_000);
                let base = produce(&mut producer_client, "moving", 0, records).await;
                acked.extend(values.into_iter().enumerate().map(|(i, v)| (base + i as i64, v)));
                n += 1;
            }
            acked
        }
    });

    let response = client.send(&alter_request(&target, "moving", 0), 2).await;
    assert_eq!(response.results[0].partitions[0].error_code, 0);
    let deadline = Instant::now() + Duration::from_mins(2);
    let mut saw_future = false;
    let mut polls = 0;
    loop {
        assert!(Instant::now() < deadline, "the move finishes ({polls} polls)");
        polls += 1;
        let found = replicas(&describe(&mut client, 4).await, "moving", 0);
        if let Some((dir, _, lag, _)) = found.iter().find(|(_, _, _, is_future)| *is_future) {
            assert_eq!(PathBuf::from(dir), target, "the future replica is in the target");
            assert!(*lag >= 0, "offset lag {lag}");
            saw_future = true;
            // Reads go on during the move.
            let fetched = fetch_all(&mut client, "moving").await;
            assert!(fetched.len() >= acked.len());
            continue;
        }
        assert_eq!(found.len(), 1, "{found:?}");
        if Path::new(&found[0].0) == target {
            break;
        }
    }
    assert!(saw_future, "DescribeLogDirs showed the future replica");
    stop.store(true, Ordering::SeqCst);
    let from_producer = producer.await.expect("producer task");
    assert!(!from_producer.is_empty(), "the producer produced during the move");
    acked.extend(from_producer);
    acked.sort();

    let fetched = fetch_all(&mut client, "moving").await;
    assert_eq!(fetched.len(), acked.len(), "every acknowledged record, nothing else");
    assert_eq!(fetched, acked, "same offsets, same values");

    // The old directory was renamed `-delete` at the swap and goes with a later background
    // round; the size is the new segments'.
    let leftovers = || -> Vec<String> {
        std::fs::read_dir(&source)
            .expect("source dir")
            .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("moving-"))
            .collect()
    };
    assert!(!source.join("moving-0").exists(), "the old directory is no longer live");
    let deadline = Instant::now() + Duration::from_mins(1);
    while !leftovers().is_empty() {
        assert!(Instant::now() < deadline, "the old directory is removed: {:?}", leftovers());
        describe(&mut client, 4).await;
    }
    let found = replicas(&describe(&mut client, 4).await, "moving", 0);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1, segment_bytes(&target.join("moving-0")));
    server.shutdown().await.expect("clean shutdown");

    // After a restart the partition is in the new directory, whole.
    let (server, _) = start_two_dirs(root.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let found = replicas(&describe(&mut client, 4).await, "moving", 0);
    assert_eq!(found.len(), 1);
    assert_eq!(PathBuf::from(&found[0].0), target);
    assert_eq!(fetch_all(&mut client, "moving").await, acked);
    server.shutdown().await.expect("clean shutdown");
}
