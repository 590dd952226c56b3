//! The admin APIs in-process, through the `kafka-protocol` crate: topic create/delete and
//! partitions, DeleteRecords, configs (topic and broker), DescribeCluster, with their errors.

#![allow(clippy::too_many_lines, reason = "each test walks one API through its cases")]

use crate::common;

use crate::protocol::{
    create_topic_request, fetch_all, fetch_request, list_offsets_request, name, produce,
    produce_request, s,
};
use common::{Client, batch, start};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource as IncrementalResource, AlterableConfig as IncrementalConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    AlterConfigsRequest, CreatePartitionsRequest, CreateTopicsRequest, DeleteRecordsRequest,
    DeleteTopicsRequest, DescribeClusterRequest, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;
use seglog_format::Compression;

#[tokio::test]
async fn topic_admin_and_its_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("num.partitions", "2")]).await;
    let mut client = Client::connect(&server).await;
    let code = |r: &kafka_protocol::messages::CreateTopicsResponse| r.topics[0].error_code;

    let validate = create_topic_request("v", 3, &[]).with_validate_only(true);
    let response = client.send(&validate, 7).await;
    assert_eq!((code(&response), response.topics[0].num_partitions), (0, 3));
    let metadata = client.send(&MetadataRequest::default().with_topics(None), 12).await;
    assert!(metadata.topics.is_empty(), "validate_only created nothing");

    assert_eq!(
        code(&client.send(&create_topic_request("t", 3, &[("retention.ms", "1000")]), 7).await),
        0
    );
    assert_eq!(code(&client.send(&create_topic_request("t", 3, &[]), 7).await), 36);
    assert_eq!(code(&client.send(&create_topic_request("bad/name", 1, &[]), 7).await), 17);
    assert_eq!(code(&client.send(&create_topic_request("z", 0, &[]), 7).await), 37);
    assert_eq!(code(&client.send(&create_topic_request("z", 20_000, &[]), 7).await), 37);
    assert_eq!(
        code(&client.send(&create_topic_request("z", 1, &[("no.such.key", "1")]), 7).await),
        40
    );
    assert_eq!(
        code(&client.send(&create_topic_request("z", 1, &[("retention.ms", "-7")]), 7).await),
        40
    );
    let replicated = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(name("z"))
            .with_num_partitions(1)
            .with_replication_factor(3),
    ]);
    assert_eq!(code(&client.send(&replicated, 7).await), 38);
    let defaults = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(name("d"))
            .with_num_partitions(-1)
            .with_replication_factor(-1),
    ]);
    let response = client.send(&defaults, 7).await;
    assert_eq!((code(&response), response.topics[0].num_partitions), (0, 2));
    let configs = response.topics[0].configs.clone().unwrap_or_default();
    assert!(configs.iter().any(|c| c.name.as_str() == "segment.bytes" && c.config_source == 5));

    // CreatePartitions grows; shrinking or keeping the count is refused.
    let grow = |count| {
        CreatePartitionsRequest::default().with_topics(vec![
            CreatePartitionsTopic::default().with_name(name("t")).with_count(count),
        ])
    };
    assert_eq!(client.send(&grow(5), 3).await.results[0].error_code, 0);
    assert_eq!(client.send(&grow(5), 3).await.results[0].error_code, 37);
    assert_eq!(client.send(&grow(2), 3).await.results[0].error_code, 37);
    let metadata = client
        .send(
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("t"))),
            ])),
            12,
        )
        .await;
    assert_eq!(metadata.topics[0].partitions.len(), 5);
    assert!(!metadata.topics[0].topic_id.is_nil());
    // The new partitions take appends.
    let response =
        client.send(&produce_request("t", 4, batch(Compression::None, &["p4"], 1), 1), 9).await;
    assert_eq!(response.responses[0].partition_responses[0].error_code, 0);

    // DeleteTopics.
    let delete = DeleteTopicsRequest::default().with_topic_names(vec![name("t"), name("missing")]);
    let response = client.send(&delete, 5).await;
    let codes: Vec<i16> = response.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![0, 3]);

    // Metadata: unknown topic without auto-creation, invalid name, auto-creation.
    let ask = |topic: &str, auto| {
        MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default().with_name(Some(name(topic)))]))
            .with_allow_auto_topic_creation(auto)
    };
    assert_eq!(client.send(&ask("t", false), 12).await.topics[0].error_code, 3);
    assert_eq!(client.send(&ask("bad name", true), 12).await.topics[0].error_code, 17);
    let created = client.send(&ask("auto", true), 12).await;
    assert_eq!((created.topics[0].error_code, created.topics[0].partitions.len()), (0, 2));
    // With no authorizer, every operation is authorized, as in Kafka.
    let with_operations = ask("auto", false)
        .with_include_topic_authorized_operations(true)
        .with_include_cluster_authorized_operations(true);
    let response = client.send(&with_operations, 10).await;
    assert_eq!(response.topics[0].topic_authorized_operations, 3576, "8 topic operations");
    assert_eq!(response.cluster_authorized_operations, 8096, "7 cluster operations");
    let request =
        DescribeClusterRequest::default().with_include_cluster_authorized_operations(true);
    assert_eq!(client.send(&request, 1).await.cluster_authorized_operations, 8096);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn delete_records_raises_the_log_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("dr", 1, &[]), 7).await;
    for i in 0..4 {
        // Recent timestamps, so that time retention leaves the segment alone.
        let now_ms = i64::try_from(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_millis(),
        )
        .expect("fits");
        produce(&mut client, "dr", batch(Compression::None, &[&format!("r{i}")], now_ms + i)).await;
    }
    let delete = |offset| {
        DeleteRecordsRequest::default().with_topics(vec![
            DeleteRecordsTopic::default().with_name(name("dr")).with_partitions(vec![
                DeleteRecordsPartition::default().with_partition_index(0).with_offset(offset),
            ]),
        ])
    };
    let response = client.send(&delete(2), 2).await;
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, 2));
    let response = client.send(&delete(9), 2).await;
    assert_eq!(response.topics[0].partitions[0].error_code, 1, "past the high watermark");
    let response = client.send(&list_offsets_request("dr", -2), 7).await;
    assert_eq!(response.topics[0].partitions[0].offset, 2);
    let response = client.send(&fetch_request("dr", 0, 0), 12).await;
    assert_eq!(response.responses[0].partitions[0].error_code, 1, "below the log start");
    assert_eq!(fetch_all(&mut client, "dr", 2).await.first().map(|r| r.0), Some(2));
    let response = client.send(&delete(-1), 2).await;
    assert_eq!(response.topics[0].partitions[0].low_watermark, 4, "-1 means the high watermark");
    server.shutdown().await.expect("clean shutdown");
}

/// Issue 14, point 2: records with 1970 timestamps (as some clients' tests write them) are far
/// past `retention.ms`, yet DeleteRecords up to 2 of 4 removes exactly offsets 0 and 1: it moves
/// the log start and deletes only segments wholly below it, leaving time and size retention to
/// the background check. The answered low watermark is what ListOffsets earliest says next.
/// Before the fix the request ran the whole retention pass and deleted all four.
#[tokio::test]
async fn delete_records_deletes_only_below_the_requested_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    // Small segments, so that each batch of one record is a segment of its own.
    client.send(&create_topic_request("old", 1, &[("segment.bytes", "100")]), 7).await;
    for i in 0..4 {
        produce(&mut client, "old", batch(Compression::None, &[&format!("r{i}")], i)).await;
    }
    let segments = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir.join("old-0"))
            .expect("partition dir")
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| std::path::Path::new(name).extension().is_some_and(|e| e == "log"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(segments(dir.path()).len(), 4, "{:?}", segments(dir.path()));
    let request = DeleteRecordsRequest::default().with_topics(vec![
        DeleteRecordsTopic::default().with_name(name("old")).with_partitions(vec![
            DeleteRecordsPartition::default().with_partition_index(0).with_offset(2),
        ]),
    ]);
    let response = client.send(&request, 2).await;
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, 2));
    let earliest = client.send(&list_offsets_request("old", -2), 7).await;
    assert_eq!(earliest.topics[0].partitions[0].offset, p.low_watermark, "low watermark is true");
    let latest = client.send(&list_offsets_request("old", -1), 7).await;
    assert_eq!(latest.topics[0].partitions[0].offset, 4);
    // A fetch reads one segment at a time, as Kafka's does.
    let mut values: Vec<(i64, String)> = fetch_all(&mut client, "old", 2).await;
    values.extend(fetch_all(&mut client, "old", 3).await);
    assert_eq!(values, vec![(2, "r2".to_owned()), (3, "r3".to_owned())]);
    assert_eq!(
        segments(dir.path()),
        vec!["00000000000000000002.log".to_owned(), "00000000000000000003.log".to_owned()],
        "the two segments wholly below offset 2 went, the others stayed"
    );
    server.shutdown().await.expect("clean shutdown");
}

/// Issue 14, point 7: a client cannot create the internal topics through CreateTopics (Kafka
/// refuses `__cluster_metadata` with these words; seglog refuses its coordinators' topics as
/// well). `__consumer_offsets` asked for through Metadata is created as the coordinator creates
/// it: `offsets.topic.num.partitions` partitions, compacted.
#[tokio::test]
async fn internal_topics_are_not_created_by_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("offsets.topic.num.partitions", "3")]).await;
    let mut client = Client::connect(&server).await;
    for topic in ["__consumer_offsets", "__transaction_state", "__cluster_metadata"] {
        let request = create_topic_request(topic, 1, &[("cleanup.policy", "delete")]);
        for validate_only in [true, false] {
            let response = client.send(&request.clone().with_validate_only(validate_only), 7).await;
            let result = &response.topics[0];
            assert_eq!(result.error_code, 42, "{topic}: INVALID_REQUEST");
            assert_eq!(
                result.error_message.as_deref(),
                Some(format!("Creation of internal topic {topic} is prohibited.").as_str())
            );
        }
    }
    assert_eq!(server.broker().manager().topic_partition_counts().len(), 0, "nothing created");
    let metadata = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name("__consumer_offsets"))),
        ]))
        .with_allow_auto_topic_creation(true);
    let response = client.send(&metadata, 12).await;
    assert_eq!(response.topics[0].error_code, 0);
    assert!(response.topics[0].is_internal);
    assert_eq!(response.topics[0].partitions.len(), 3, "offsets.topic.num.partitions");
    let config = server.broker().manager().topic_config("__consumer_offsets").expect("config");
    assert!(!config.is_delete(), "compacted, not deleted by retention");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn configs_are_described_altered_and_applied_live() {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("c", 1, &[("segment.bytes", "1048576")]), 7).await;
    let describe = |keys: Option<Vec<StrBytes>>| {
        DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("c"))
                .with_configuration_keys(keys),
        ])
    };
    let response =
        client.send(&describe(Some(vec![s("segment.bytes"), s("retention.ms")])), 4).await;
    let configs: Vec<(String, Option<String>, i8)> = response.results[0]
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(ToString::to_string), c.config_source))
        .collect();
    assert_eq!(
        configs,
        vec![
            ("retention.ms".into(), Some("604800000".into()), 5),
            ("segment.bytes".into(), Some("1048576".into()), 1)
        ]
    );

    // Incremental: set segment.bytes small, append to cleanup.policy; applied to the live log.
    let incremental = IncrementalAlterConfigsRequest::default().with_resources(vec![
        IncrementalResource::default()
            .with_resource_type(2)
            .with_resource_name(s("c"))
            .with_configs(vec![
                IncrementalConfig::default()
                    .with_name(s("segment.bytes"))
                    .with_config_operation(0)
                    .with_value(Some(s("16384"))),
                IncrementalConfig::default()
                    .with_name(s("cleanup.policy"))
                    .with_config_operation(2)
                    .with_value(Some(s("compact"))),
            ]),
    ]);
    assert_eq!(client.send(&incremental, 1).await.responses[0].error_code, 0);
    let response =
        client.send(&describe(Some(vec![s("cleanup.policy"), s("segment.bytes")])), 4).await;
    let values: Vec<String> = response.results[0]
        .configs
        .iter()
        .map(|c| c.value.as_ref().map(ToString::to_string).unwrap_or_default())
        .collect();
    assert_eq!(values, vec!["compact,delete".to_owned(), "16384".to_owned()]);
    let log = server
        .broker()
        .manager()
        .get_log(&seglog_storage::log::partition_log::TopicPartition {
            topic: "c".into(),
            partition: 0,
        })
        .expect("log");
    assert_eq!(log.config().expect("config").segment_bytes, 16384, "applied live");
    // Appending to a non-list key is refused, and so is an unknown key or a bad value.
    let bad = |key: &str, op: i8, value: &str| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            IncrementalResource::default()
                .with_resource_type(2)
                .with_resource_name(s("c"))
                .with_configs(vec![
                    IncrementalConfig::default()
                        .with_name(s(key))
                        .with_config_operation(op)
                        .with_value(Some(s(value))),
                ]),
        ])
    };
    assert_eq!(client.send(&bad("retention.ms", 2, "5"), 1).await.responses[0].error_code, 40);
    assert_eq!(client.send(&bad("bogus", 0, "5"), 1).await.responses[0].error_code, 40);
    assert_eq!(client.send(&bad("segment.bytes", 0, "x"), 1).await.responses[0].error_code, 40);

    // AlterConfigs replaces every override: segment.bytes goes back to its default.
    let alter = AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("c"))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(s("seglog.durability"))
                    .with_value(Some(s("group-commit"))),
            ]),
    ]);
    assert_eq!(client.send(&alter, 2).await.responses[0].error_code, 0);
    let config = log.config().expect("config");
    assert_eq!((config.segment_bytes, config.durability.name()), (1 << 30, "group-commit"));
    // acks=-1 on a group-commit topic returns once durable.
    produce(&mut client, "c", batch(Compression::None, &["durable"], 1)).await;
    assert!(log.recovery_point().expect("recovery point") >= 1);

    // Broker configs are described, and static.
    let broker = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default().with_resource_type(4).with_resource_name(s("1")),
    ]);
    let response = client.send(&broker, 4).await;
    assert!(response.results[0].configs.iter().any(|c| c.name.as_str() == "log.dirs"));
    let response = client
        .send(
            &describe(None).with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("nope")),
            ]),
            4,
        )
        .await;
    assert_eq!(response.results[0].error_code, 3);
    server.shutdown().await.expect("clean shutdown");
}

/// A described config: name, source, synonyms (name, value, source).
type Described = (String, i8, Vec<(String, Option<String>, i8)>);

/// Issue 14, point 3: DescribeConfigs for the broker lists Kafka's broker keys (before: 12),
/// at every version, each with its value, source and, when asked, synonyms and documentation;
/// the keys clients and tools read are there, and every `log.*` key seglog knows.
#[tokio::test]
async fn broker_configs_list_every_kafka_key_with_sources_and_synonyms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server =
        start(dir.path(), &[("log.retention.hours", "24"), ("log.flush.interval.messages", "10")])
            .await;
    let mut client = Client::connect(&server).await;
    let request = |synonyms: bool, version: i16| {
        DescribeConfigsRequest::default()
            .with_resources(vec![
                DescribeConfigsResource::default().with_resource_type(4).with_resource_name(s("1")),
            ])
            .with_include_synonyms(synonyms)
            .with_include_documentation(version >= 3)
    };
    let wanted = [
        "advertised.listeners",
        "log.flush.interval.messages",
        "offsets.topic.replication.factor",
        "group.initial.rebalance.delay.ms",
        "listeners",
        "log.dirs",
        "log.retention.ms",
        "log.retention.hours",
        "log.segment.bytes",
        "log.cleanup.policy",
        "message.max.bytes",
        "min.insync.replicas",
        "num.partitions",
        "default.replication.factor",
        "transaction.state.log.replication.factor",
        "seglog.durability",
    ];
    for version in 1..=4 {
        let response = client.send(&request(true, version), version).await;
        let result = &response.results[0];
        assert_eq!(result.error_code, 0, "v{version}");
        let names: Vec<&str> = result.configs.iter().map(|c| c.name.as_str()).collect();
        assert!(names.len() >= 150, "v{version}: {} keys", names.len());
        for key in wanted {
            assert!(names.contains(&key), "v{version}: {key} missing");
        }
        for key in seglog_storage::config::TOPIC_CONFIGS {
            for (broker_key, _) in key.synonyms {
                assert!(names.contains(broker_key), "v{version}: {broker_key} missing");
            }
        }
        let find =
            |name: &str| result.configs.iter().find(|c| c.name.as_str() == name).expect("listed");
        let flush = find("log.flush.interval.messages");
        assert_eq!(flush.value.as_deref(), Some("10"));
        assert_eq!(flush.config_source, 4, "STATIC_BROKER_CONFIG");
        assert!(!flush.read_only, "a topic default: dynamic, applied live");
        assert!(find("log.dirs").read_only, "not dynamic in Kafka");
        assert!(find("max.connections").read_only, "seglog applies it only at start");
        assert!(!find("background.threads").read_only, "dynamic, kept (not acted on)");
        let replication = find("offsets.topic.replication.factor");
        assert_eq!((replication.value.as_deref(), replication.config_source), (Some("3"), 5));
        let retention = find("log.retention.ms");
        let synonyms: Vec<(&str, Option<&str>, i8)> = retention
            .synonyms
            .iter()
            .map(|syn| (syn.name.as_str(), syn.value.as_deref(), syn.source))
            .collect();
        assert_eq!(
            synonyms,
            vec![("log.retention.hours", Some("24"), 4), ("log.retention.hours", Some("168"), 5)],
            "v{version}"
        );
        if version >= 3 {
            assert_eq!(find("log.segment.bytes").config_type, 3, "INT");
            assert_eq!(find("log.retention.ms").config_type, 5, "LONG");
            let ignored = find("auto.leader.rebalance.enable");
            assert!(ignored.documentation.as_deref().is_some_and(|d| d.contains("does not act")));
            assert_eq!(find("min.insync.replicas").config_type, 3, "INT: a topic default");
        }
        let sensitive = find("ssl.keystore.password");
        assert!(sensitive.is_sensitive && sensitive.value.is_none());
    }
    let response = client.send(&request(false, 4), 4).await;
    assert!(response.results[0].configs.iter().all(|c| c.synonyms.is_empty()));
    // A topic key's synonyms, as Kafka lists them: the override, the broker keys set, the
    // broker default; a key the broker sets is STATIC_BROKER_CONFIG, not DEFAULT_CONFIG.
    client.send(&create_topic_request("syn", 1, &[("segment.bytes", "1048576")]), 7).await;
    let topic = DescribeConfigsRequest::default()
        .with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("syn"))
                .with_configuration_keys(Some(vec![s("retention.ms"), s("segment.bytes")])),
        ])
        .with_include_synonyms(true);
    let response = client.send(&topic, 4).await;
    let described: Vec<Described> = response.results[0]
        .configs
        .iter()
        .map(|c| {
            let synonyms = c
                .synonyms
                .iter()
                .map(|syn| {
                    (syn.name.to_string(), syn.value.as_ref().map(ToString::to_string), syn.source)
                })
                .collect();
            (c.name.to_string(), c.config_source, synonyms)
        })
        .collect();
    let own =
        |name: &str, value: &str, source: i8| (name.to_owned(), Some(value.to_owned()), source);
    assert_eq!(
        described,
        vec![
            (
                "retention.ms".to_owned(),
                4,
                vec![own("log.retention.hours", "24", 4), own("log.retention.hours", "168", 5)]
            ),
            (
                "segment.bytes".to_owned(),
                1,
                vec![own("segment.bytes", "1048576", 1), own("log.segment.bytes", "1073741824", 5)]
            ),
        ]
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn delete_topics_v6_by_name_or_id_and_its_refusals() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let mut ids = Vec::new();
    for topic in ["d1", "d2", "d3"] {
        ids.push(client.send(&create_topic_request(topic, 1, &[]), 7).await.topics[0].topic_id);
    }
    let unknown = uuid::Uuid::from_u128(0xdead_beef_0000_4000_8000_0000_0000_0002);
    let by = |topic: Option<&str>, id: uuid::Uuid| {
        DeleteTopicState::default().with_name(topic.map(name)).with_topic_id(id)
    };
    let request = DeleteTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
        by(Some("d1"), uuid::Uuid::nil()),
        by(None, ids[1]),
        by(None, unknown),
        by(None, uuid::Uuid::nil()),
        by(Some("d3"), ids[2]),
        by(None, ids[2]),
        by(None, ids[2]),
        by(Some("missing"), uuid::Uuid::nil()),
    ]);
    let response = client.send(&request, 6).await;
    let results: Vec<(Option<String>, uuid::Uuid, i16, Option<String>)> = response
        .responses
        .iter()
        .map(|r| {
            (
                r.name.as_ref().map(|n| n.0.to_string()),
                r.topic_id,
                r.error_code,
                r.error_message.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    let nil = uuid::Uuid::nil();
    assert_eq!(results[0], (Some("d1".into()), ids[0], 0, None), "by name: its id is named");
    assert_eq!(results[1], (Some("d2".into()), ids[1], 0, None), "by id: its name is named");
    assert_eq!(
        results[2..6],
        [
            (None, unknown, 100, Some("This server does not host this topic ID.".into())),
            (None, nil, 42, Some("Neither topic name nor id were specified.".into())),
            (
                Some("d3".into()),
                ids[2],
                42,
                Some("You may not specify both topic name and topic id.".into())
            ),
            (None, ids[2], 42, Some("Duplicate topic id.".into())),
        ]
    );
    assert_eq!((results[6].2, results.len()), (3, 7), "a duplicate is answered once");
    assert_eq!(server.broker().manager().topics(), vec!["d3".to_owned()]);
    // Before v6, a name given twice is refused the same way, once.
    let request = DeleteTopicsRequest::default().with_topic_names(vec![name("d3"), name("d3")]);
    let response = client.send(&request, 5).await;
    let codes: Vec<i16> = response.responses.iter().map(|r| r.error_code).collect();
    assert_eq!(codes, vec![42]);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn describe_cluster_refuses_controller_and_unknown_endpoint_types() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    for version in 1..=2 {
        for (endpoint_type, code) in [(1, 0), (2, 114), (7, 115)] {
            let request = DescribeClusterRequest::default().with_endpoint_type(endpoint_type);
            let response = client.send(&request, version).await;
            assert_eq!(response.error_code, code, "v{version} type {endpoint_type}");
            let n_brokers = usize::from(code == 0);
            assert_eq!(response.brokers.len(), n_brokers, "v{version} type {endpoint_type}");
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

/// An IncrementalAlterConfigs of one BROKER resource.
fn broker_incremental(
    name: &str,
    configs: &[(&str, i8, Option<&str>)],
) -> IncrementalAlterConfigsRequest {
    IncrementalAlterConfigsRequest::default().with_resources(vec![
        IncrementalResource::default()
            .with_resource_type(4)
            .with_resource_name(s(name))
            .with_configs(
                configs
                    .iter()
                    .map(|(key, op, value)| {
                        IncrementalConfig::default()
                            .with_name(s(key))
                            .with_config_operation(*op)
                            .with_value(value.map(s))
                    })
                    .collect(),
            ),
    ])
}

/// The replication throttles' keys as Kafka takes and lists them: the rates are dynamic
/// broker keys, at least 0, listed only when set (read-only, as Kafka's `ConfigHelper` marks
/// them); the topics' throttled-replica lists pass Kafka's validator or are INVALID_CONFIG
/// with its message.
#[tokio::test]
async fn replication_throttle_keys_are_validated_and_described_as_in_kafka() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    let rate = "leader.replication.throttled.rate";
    let set = broker_incremental("1", &[(rate, 0, Some("1048576"))]);
    assert_eq!(client.send(&set, 1).await.responses[0].error_code, 0);
    let all = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default().with_resource_type(4).with_resource_name(s("1")),
    ]);
    let response = client.send(&all, 4).await;
    let listed: Vec<_> = response.results[0]
        .configs
        .iter()
        .filter(|c| c.name.as_str().ends_with(".replication.throttled.rate"))
        .map(|c| (c.name.as_str(), c.value.as_deref(), c.config_source, c.read_only, c.config_type))
        .collect();
    assert_eq!(listed, vec![(rate, Some("1048576"), 2, true, 5)], "LONG, DYNAMIC_BROKER_CONFIG");
    let negative =
        broker_incremental("", &[("follower.replication.throttled.rate", 0, Some("-1"))]);
    let response = client.send(&negative, 1).await;
    let refused = &response.responses[0];
    assert_eq!(refused.error_code, 42, "INVALID_REQUEST");
    assert_eq!(
        refused.error_message.as_deref(),
        Some(
            "Invalid value -1 for configuration follower.replication.throttled.rate: Value must \
             be at least 0"
        )
    );

    let key = "leader.replication.throttled.replicas";
    let created = client.send(&create_topic_request("moving", 2, &[(key, "0:1,1:2")]), 7).await;
    assert_eq!(created.topics[0].error_code, 0, "{created:?}");
    let topic_set = |value: &str| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            IncrementalResource::default()
                .with_resource_type(2)
                .with_resource_name(s("moving"))
                .with_configs(vec![
                    IncrementalConfig::default()
                        .with_name(s(key))
                        .with_config_operation(0)
                        .with_value(Some(s(value))),
                ]),
        ])
    };
    for ok in ["*", "", "0:1"] {
        assert_eq!(client.send(&topic_set(ok), 1).await.responses[0].error_code, 0, "{ok:?}");
    }
    let response = client.send(&topic_set("0:1,x"), 1).await;
    assert_eq!(response.responses[0].error_code, 40, "INVALID_CONFIG");
    assert_eq!(
        response.responses[0].error_message.as_deref(),
        Some(
            "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: \
             leader.replication.throttled.replicas must be the literal '*' or a list of \
             replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
        )
    );
    let topic = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("moving"))
            .with_configuration_keys(Some(vec![s(key)])),
    ]);
    let response = client.send(&topic, 4).await;
    let described = &response.results[0].configs[0];
    assert_eq!((described.value.as_deref(), described.config_source), (Some("0:1"), 1));
}

/// Dynamic broker configs (Kafka's `DynamicBrokerConfig`): a topic default set on the broker
/// applies to every log at once, under topic overrides, and is described with Kafka's sources;
/// Kafka's refusals and messages; the cluster default; legacy AlterConfigs replaces the layer;
/// and everything survives a restart.
#[tokio::test]
async fn dynamic_broker_configs_apply_live_persist_and_are_refused_as_in_kafka() {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[]).await;
    let mut client = Client::connect(&server).await;
    client.send(&create_topic_request("plain", 1, &[]), 7).await;
    client.send(&create_topic_request("kept", 1, &[("retention.ms", "5000")]), 7).await;
    let config_of = |server: &seglog_broker::Server, topic: &str| {
        server
            .broker()
            .manager()
            .get_log(&seglog_storage::log::partition_log::TopicPartition {
                topic: topic.into(),
                partition: 0,
            })
            .expect("log")
            .config()
            .expect("config")
    };
    let codes = |response: &kafka_protocol::messages::IncrementalAlterConfigsResponse| {
        response
            .responses
            .iter()
            .map(|r| (r.error_code, r.error_message.as_ref().map(ToString::to_string)))
            .collect::<Vec<_>>()
    };

    let set = broker_incremental(
        "1",
        &[
            ("log.retention.ms", 0, Some("1234")),
            ("background.threads", 0, Some("9")),
            ("log.cleanup.policy", 2, Some("compact")),
        ],
    );
    assert_eq!(codes(&client.send(&set, 1).await)[0].0, 0);
    let plain = config_of(&server, "plain");
    assert_eq!(plain.retention_ms, 1234, "applied live to a topic without overrides");
    assert!(
        plain.is_compact() && plain.is_delete(),
        "APPEND starts from Kafka's default: delete,compact"
    );
    assert_eq!(config_of(&server, "kept").retention_ms, 5000, "the topic's override wins");

    // Described as Kafka does: the topic's value with DYNAMIC_BROKER_CONFIG first.
    let topic = DescribeConfigsRequest::default()
        .with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("plain"))
                .with_configuration_keys(Some(vec![s("retention.ms")])),
        ])
        .with_include_synonyms(true);
    let response = client.send(&topic, 4).await;
    let retention = &response.results[0].configs[0];
    assert_eq!((retention.value.as_deref(), retention.config_source), (Some("1234"), 2));
    assert_eq!(
        (retention.synonyms[0].name.as_str(), retention.synonyms[0].value.as_deref()),
        ("log.retention.ms", Some("1234"))
    );
    let broker_keys = |name: &str, keys: &[&str]| {
        DescribeConfigsRequest::default().with_resources(vec![
            DescribeConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s(name))
                .with_configuration_keys(Some(keys.iter().map(|k| s(k)).collect())),
        ])
    };
    let response = client.send(&broker_keys("1", &["background.threads"]), 4).await;
    let threads = &response.results[0].configs[0];
    assert_eq!(
        (threads.value.as_deref(), threads.config_source, threads.read_only),
        (Some("9"), 2, false)
    );

    // Kafka's refusals, with its messages (INVALID_REQUEST), and nothing changes.
    let refused = [
        ("1", "broker.id", "7", "Cannot update these configs dynamically: Set(broker.id)"),
        ("2", "background.threads", "7", "Unexpected broker id, expected 1, but received 2"),
        ("x", "background.threads", "7", "Node id must be an integer, but it is: x"),
        (
            "1",
            "ssl.keystore.location",
            "/k.pem",
            "These security configs can be dynamically updated only per-listener",
        ),
        (
            "",
            "sasl.kerberos.min.time.before.relogin",
            "7",
            "Cannot update these configs at default cluster level",
        ),
        ("1", "max.connections", "7", "seglog applies these configs only at start"),
        (
            "1",
            "log.segment.bytes",
            "x",
            "Invalid value x for configuration log.segment.bytes: Not a number of type INT",
        ),
        (
            "1",
            "log.segment.bytes",
            "12",
            "invalid value \"12\" for configuration log.segment.bytes",
        ),
    ];
    for (name, key, value, message) in refused {
        let response = client.send(&broker_incremental(name, &[(key, 0, Some(value))]), 1).await;
        let (code, text) = codes(&response).remove(0);
        assert_eq!(code, 42, "{name}/{key}: INVALID_REQUEST ({text:?})");
        assert!(text.as_deref().is_some_and(|t| t.starts_with(message)), "{name}/{key}: {text:?}");
    }
    let append = broker_incremental("1", &[("background.threads", 2, Some("1"))]);
    assert_eq!(client.send(&append, 1).await.responses[0].error_code, 40, "INVALID_CONFIG");
    assert_eq!(config_of(&server, "plain").retention_ms, 1234);

    // The cluster default: set, described alone under the empty name; this broker's wins.
    let default = broker_incremental(
        "",
        &[("log.segment.bytes", 0, Some("2097152")), ("log.retention.ms", 0, Some("99"))],
    );
    assert_eq!(codes(&client.send(&default, 1).await)[0].0, 0);
    let response = client.send(&broker_keys("", &[]), 4).await;
    let described: Vec<(&str, Option<&str>, i8)> = response.results[0]
        .configs
        .iter()
        .map(|c| (c.name.as_str(), c.value.as_deref(), c.config_source))
        .collect();
    assert_eq!(
        described,
        vec![("log.retention.ms", Some("99"), 3), ("log.segment.bytes", Some("2097152"), 3)]
    );
    let plain = config_of(&server, "plain");
    assert_eq!((plain.segment_bytes, plain.retention_ms), (2_097_152, 1234));

    // Legacy AlterConfigs replaces this broker's whole layer.
    let legacy = AlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s("1"))
            .with_configs(vec![
                AlterableConfig::default()
                    .with_name(s("sasl.kerberos.min.time.before.relogin"))
                    .with_value(Some(s("58000"))),
            ]),
    ]);
    assert_eq!(client.send(&legacy, 2).await.responses[0].error_code, 0);
    let plain = config_of(&server, "plain");
    assert_eq!(plain.retention_ms, 99, "this broker's 1234 is gone: the default's 99 shows");
    assert!(!plain.is_compact(), "and so is its cleanup.policy");
    server.shutdown().await.expect("clean shutdown");

    // A restart reads them back and applies them to the logs it loads.
    let server = start(dir.path(), &[]).await;
    let plain = config_of(&server, "plain");
    assert_eq!((plain.segment_bytes, plain.retention_ms), (2_097_152, 99));
    let mut client = Client::connect(&server).await;
    let response = client.send(&broker_keys("", &["log.segment.bytes"]), 4).await;
    assert_eq!(response.results[0].configs[0].value.as_deref(), Some("2097152"));
    server.shutdown().await.expect("clean shutdown");
}
