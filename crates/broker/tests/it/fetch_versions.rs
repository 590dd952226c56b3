//! Fetch, Produce and ListOffsets by version, beside `protocol.rs`: topics named by id (v13+),
//! the current leader of a fenced epoch (Fetch v16), ListOffsets' special timestamps and the
//! versions they need, and KIP-227 fetch sessions.

use crate::common;

use std::time::{Duration, Instant};

use common::{Client, batch, records, start};
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{BrokerId, DeleteRecordsRequest, FetchResponse, ProduceRequest};
use seglog_format::Compression;

use crate::protocol::{
    create_topic_request, fetch_request, fetch_request_by_id, list_offsets_request, name, produce,
    produce_request, produce_request_by_id,
};

#[tokio::test]
async fn fetch_and_produce_name_topics_by_id_from_v13() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let created = client.send(&create_topic_request("ids", 2, &[]), 7).await;
    let id = created.topics[0].topic_id;
    assert!(!id.is_nil());
    let unknown = uuid::Uuid::from_u128(0x5e91_0000_0000_4000_8000_0000_0000_0001);

    // Produce v13 by id appends; an unknown id is UNKNOWN_TOPIC_ID, a known id with a partition
    // it lacks UNKNOWN_TOPIC_OR_PARTITION, each partition on its own.
    let by_id = batch(Compression::Zstd, &["by-id-0", "by-id-1"], 1_700_000_000_000);
    let response = client.send(&produce_request_by_id(id, 1, by_id.clone(), -1), 13).await;
    let partition = &response.responses[0].partition_responses[0];
    assert_eq!((partition.error_code, partition.base_offset), (0, 0), "{partition:?}");
    let request = ProduceRequest::default().with_acks(1).with_timeout_ms(5000).with_topic_data(
        [(unknown, 0), (uuid::Uuid::nil(), 0), (id, 7)]
            .into_iter()
            .map(|(topic_id, partition)| {
                TopicProduceData::default().with_topic_id(topic_id).with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(by_id.clone())),
                ])
            })
            .collect(),
    );
    let response = client.send(&request, 13).await;
    let answers: Vec<(uuid::Uuid, i16, i64)> = response
        .responses
        .iter()
        .map(|t| {
            (t.topic_id, t.partition_responses[0].error_code, t.partition_responses[0].base_offset)
        })
        .collect();
    assert_eq!(answers, vec![(unknown, 100, -1), (uuid::Uuid::nil(), 100, -1), (id, 3, -1)]);
    assert!(response.node_endpoints.is_empty(), "no leader hints for these errors");

    // Fetch v13..=18 by id returns what was produced, under the topic's id.
    for version in 13..=18 {
        let response = client.send(&fetch_request_by_id(id, 1, 0), version).await;
        let topic = &response.responses[0];
        assert_eq!(topic.topic_id, id, "v{version}");
        let partition = &topic.partitions[0];
        assert_eq!((partition.error_code, partition.high_watermark), (0, 2), "v{version}");
        assert_eq!(
            records(partition.records.as_deref().unwrap_or_default()),
            vec![(0, "by-id-0".to_owned()), (1, "by-id-1".to_owned())],
            "v{version}"
        );
    }
    // Before v13 the same partition is fetched by name.
    let response = client.send(&fetch_request("ids", 1, 0), 12).await;
    assert_eq!(
        records(response.responses[0].partitions[0].records.as_deref().unwrap_or_default()).len(),
        2
    );

    // An unknown id (and the nil id) is UNKNOWN_TOPIC_ID for each of its partitions, at once
    // even for a long poll, while the known topic in the same request is still read.
    let mut request =
        fetch_request_by_id(id, 1, 0).with_min_bytes(1 << 20).with_max_wait_ms(60_000);
    for topic_id in [unknown, uuid::Uuid::nil()] {
        request.topics.push(FetchTopic::default().with_topic_id(topic_id).with_partitions(vec![
            FetchPartition::default().with_partition(0).with_partition_max_bytes(1024),
            FetchPartition::default().with_partition(1).with_partition_max_bytes(1024),
        ]));
    }
    let started = Instant::now();
    let response = client.send(&request, 18).await;
    assert!(started.elapsed() < Duration::from_secs(30), "an error ends the long poll");
    let answers: Vec<_> = response
        .responses
        .iter()
        .map(|t| {
            let partitions: Vec<(i32, i16, i64)> = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.error_code, p.high_watermark))
                .collect();
            (t.topic_id, partitions)
        })
        .collect();
    assert_eq!(
        answers,
        vec![
            (id, vec![(1, 0, 2)]),
            (unknown, vec![(0, 100, -1), (1, 100, -1)]),
            (uuid::Uuid::nil(), vec![(0, 100, -1), (1, 100, -1)]),
        ]
    );
    assert_eq!(
        records(response.responses[0].partitions[0].records.as_deref().unwrap_or_default()).len(),
        2
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn fetch_v16_names_the_current_leader_when_the_epoch_is_fenced() {
    use seglog_storage::log::partition_log::TopicPartition;
    use seglog_storage::log::validator::AppendOrigin;
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let created = client.send(&create_topic_request("epochs", 1, &[]), 7).await;
    let id = created.topics[0].topic_id;
    // Records written under leader epoch 3, as a log from a Kafka cluster may hold.
    let log = server
        .broker()
        .manager()
        .get_log(&TopicPartition { topic: "epochs".into(), partition: 0 })
        .expect("log");
    let info = log
        .append_as_leader(&batch(Compression::None, &["e3"], 1), 3, AppendOrigin::Client, 1)
        .expect("append");
    log.update_high_watermark(info.last_offset + 1).expect("high watermark");

    let ask = |current_leader_epoch: i32| {
        let mut request = fetch_request_by_id(id, 0, 0);
        for partition in &mut request.topics[0].partitions {
            partition.current_leader_epoch = current_leader_epoch;
        }
        request
    };
    let address = server.local_addr();
    // Fenced (an older epoch): from v16 the partition names this node at epoch 3, and the
    // response carries its endpoint (KIP-951).
    for version in 16..=18 {
        let response = client.send(&ask(1), version).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, 74, "v{version}");
        assert_eq!(
            (partition.current_leader.leader_id, partition.current_leader.leader_epoch),
            (BrokerId(1), 3),
            "v{version}"
        );
        let endpoints: Vec<(i32, String, i32)> = response
            .node_endpoints
            .iter()
            .map(|node| (node.node_id.0, node.host.to_string(), node.port))
            .collect();
        assert_eq!(
            endpoints,
            vec![(1, address.ip().to_string(), i32::from(address.port()))],
            "v{version}"
        );
    }
    // Before v16 the same error carries no leader; the current epoch reads; a newer epoch
    // (UNKNOWN_LEADER_EPOCH) is not a stale leader, so it carries none either.
    for (version, epoch, code) in [(15, 1, 74), (16, 3, 0), (18, -1, 0), (18, 4, 75)] {
        let response = client.send(&ask(epoch), version).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, code, "v{version} epoch {epoch}");
        assert_eq!(partition.current_leader.leader_id, BrokerId(-1), "v{version} epoch {epoch}");
        assert!(response.node_endpoints.is_empty(), "v{version} epoch {epoch}");
        if code == 0 {
            let fetched = records(partition.records.as_deref().unwrap_or_default());
            assert_eq!(fetched, vec![(0, "e3".to_owned())]);
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn list_offsets_special_timestamps_need_their_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("special", 1, &[]), 7).await;
    // Recent timestamps, so that time retention leaves the segment alone after DeleteRecords.
    let now_ms = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("fits");
    produce(&mut client, "special", batch(Compression::None, &["a", "b", "c"], now_ms)).await;
    let delete = DeleteRecordsRequest::default().with_topics(vec![
        DeleteRecordsTopic::default().with_name(name("special")).with_partitions(vec![
            DeleteRecordsPartition::default().with_partition_index(0).with_offset(1),
        ]),
    ]);
    assert_eq!(client.send(&delete, 2).await.topics[0].partitions[0].low_watermark, 1);
    let mut answers = Vec::new();
    for (timestamp, version) in
        [(-3, 6), (-3, 7), (-4, 7), (-4, 8), (-5, 8), (-5, 9), (-5, 10), (-6, 10), (-7, 1)]
    {
        let response = client.send(&list_offsets_request("special", timestamp), version).await;
        let p = &response.topics[0].partitions[0];
        answers.push((timestamp, version, p.error_code, p.offset, p.leader_epoch));
    }
    assert_eq!(
        answers,
        vec![
            (-3, 6, 35, -1, -1),
            (-3, 7, 0, 2, 0),
            (-4, 7, 35, -1, -1),
            // The earliest local offset is the log start: every segment is local.
            (-4, 8, 0, 1, 0),
            (-5, 8, 35, -1, -1),
            // Nothing is tiered: offset -1 at epoch -1, without error (Kafka's answer).
            (-5, 9, 0, -1, -1),
            (-5, 10, 0, -1, -1),
            (-6, 10, 35, -1, -1),
            (-7, 1, 35, -1, -1),
        ]
    );
    // v10's timeout (for remote storage) changes nothing here.
    let response = client.send(&list_offsets_request("special", -1).with_timeout_ms(1), 10).await;
    assert_eq!(response.topics[0].partitions[0].offset, 3);
    server.shutdown().await.expect("clean shutdown");
}

/// The partitions of a fetch response with their high watermarks and record counts, sorted.
fn fetched_partitions(response: &FetchResponse) -> Vec<(String, i32, i64, usize)> {
    let mut out: Vec<_> = response
        .responses
        .iter()
        .flat_map(|topic| {
            topic.partitions.iter().map(move |p| {
                let n = records(p.records.as_deref().unwrap_or_default()).len();
                (topic.topic.0.to_string(), p.partition_index, p.high_watermark, n)
            })
        })
        .collect();
    out.sort();
    out
}

/// KIP-227: a session opened by a full fetch; incremental fetches answer only the partitions
/// with news (records, a moved high watermark), take added and forgotten partitions, and
/// refuse a wrong epoch; epoch -1 closes the session.
#[tokio::test]
async fn fetch_sessions_send_only_what_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    for topic in ["s1", "s2"] {
        client.send(&create_topic_request(topic, 3, &[]), 7).await;
    }
    let ts = 1_700_000_000_000;
    let send = |topic: &str, partition: i32, values: &[&str]| {
        produce_request(topic, partition, batch(Compression::None, values, ts), -1)
    };
    client.send(&send("s1", 0, &["a"]), 9).await;
    let partitions = |topic: &str, offsets: &[(i32, i64)]| {
        FetchTopic::default().with_topic(name(topic)).with_partitions(
            offsets
                .iter()
                .map(|(partition, offset)| {
                    FetchPartition::default()
                        .with_partition(*partition)
                        .with_fetch_offset(*offset)
                        .with_partition_max_bytes(1 << 20)
                })
                .collect(),
        )
    };
    let base = fetch_request("s1", 0, 0);
    let full = base.clone().with_session_epoch(0).with_topics(vec![
        partitions("s1", &[(0, 0), (1, 0), (2, 0)]),
        partitions("s2", &[(0, 0), (1, 0)]),
    ]);
    let response = client.send(&full, 12).await;
    let session = response.session_id;
    assert_ne!(session, 0, "a full fetch at epoch 0 opens a session");
    assert_eq!(
        fetched_partitions(&response),
        vec![
            ("s1".into(), 0, 1, 1),
            ("s1".into(), 1, 0, 0),
            ("s1".into(), 2, 0, 0),
            ("s2".into(), 0, 0, 0),
            ("s2".into(), 1, 0, 0)
        ],
        "the full response names every partition"
    );

    // Epoch 1, the client moved s1-0 past its record: nothing new anywhere, so nothing is sent.
    let incremental = |epoch: i32, topics: Vec<FetchTopic>| {
        base.clone().with_session_id(session).with_session_epoch(epoch).with_topics(topics)
    };
    let response = client.send(&incremental(1, vec![partitions("s1", &[(0, 1)])]), 12).await;
    assert_eq!((response.error_code, response.session_id), (0, session));
    assert_eq!(fetched_partitions(&response), vec![], "no partition has news");

    // Records on s2-1 and s1-2: only those two come back, with their records.
    client.send(&send("s2", 1, &["x", "y"]), 9).await;
    client.send(&send("s1", 2, &["z"]), 9).await;
    let response = client.send(&incremental(2, vec![]), 12).await;
    assert_eq!(
        fetched_partitions(&response),
        vec![("s1".into(), 2, 1, 1), ("s2".into(), 1, 2, 2)],
        "only the partitions with records"
    );

    // The client moves those offsets on and adds s2-2; it forgets s1-1 and s1-0.
    let mut request =
        incremental(3, vec![partitions("s1", &[(2, 1)]), partitions("s2", &[(1, 2), (2, 0)])]);
    request.forgotten_topics_data = vec![
        kafka_protocol::messages::fetch_request::ForgottenTopic::default()
            .with_topic(name("s1"))
            .with_partitions(vec![0, 1]),
    ];
    let response = client.send(&request, 12).await;
    assert_eq!(
        fetched_partitions(&response),
        vec![("s2".into(), 2, 0, 0)],
        "the added partition is answered once (its watermark is news), the moved ones are quiet"
    );
    client.send(&send("s1", 0, &["gone"]), 9).await;
    client.send(&send("s2", 2, &["new"]), 9).await;
    let response = client.send(&incremental(4, vec![]), 12).await;
    assert_eq!(
        fetched_partitions(&response),
        vec![("s2".into(), 2, 1, 1)],
        "a forgotten partition is not fetched"
    );

    // A replayed or skipped epoch is refused; the session survives it.
    let response = client.send(&incremental(4, vec![]), 12).await;
    assert_eq!(response.error_code, 71, "INVALID_FETCH_SESSION_EPOCH");
    let response = client.send(&incremental(5, vec![]), 12).await;
    assert_eq!(response.error_code, 0);

    // Epoch -1 closes it: a sessionless full fetch, and the id is gone.
    let response =
        client.send(&base.clone().with_session_id(session).with_session_epoch(-1), 12).await;
    assert_eq!((response.error_code, response.session_id), (0, 0));
    assert_eq!(fetched_partitions(&response).len(), 1, "the sessionless full fetch is served");
    let response = client.send(&incremental(6, vec![]), 12).await;
    assert_eq!(response.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    server.shutdown().await.expect("clean shutdown");
}

/// `max.incremental.fetch.session.cache.slots=0` turns sessions off: a full fetch at epoch 0
/// is answered in full with session id 0.
#[tokio::test]
async fn fetch_sessions_off_with_zero_slots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("max.incremental.fetch.session.cache.slots", "0")]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("z", 1, &[]), 7).await;
    produce(&mut client, "z", batch(Compression::None, &["a"], 1_700_000_000_000)).await;
    let response = client.send(&fetch_request("z", 0, 0).with_session_epoch(0), 12).await;
    assert_eq!((response.error_code, response.session_id), (0, 0));
    assert_eq!(fetched_partitions(&response), vec![("z".into(), 0, 1, 1)]);
    server.shutdown().await.expect("clean shutdown");
}
