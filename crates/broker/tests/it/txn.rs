//! Transactions over the wire, through `kafka-protocol`'s codecs: every transaction API at every
//! advertised version, KIP-890's verification of transactional produces, fencing by a second
//! producer with the same transactional id, TxnOffsetCommit with `require_stable`, and the
//! shape of a read_committed Fetch (last stable offset, aborted transactions).

#![allow(clippy::too_many_lines, reason = "each test walks one API through its cases")]
use crate::common::{Client, start};

use bytes::Bytes;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, CreateTopicsRequest,
    DescribeProducersRequest, DescribeTransactionsRequest, EndTxnRequest, FetchRequest,
    FindCoordinatorRequest, GroupId, InitProducerIdRequest, ListTransactionsRequest,
    OffsetFetchRequest, ProduceRequest, ProducerId, TopicName, TransactionalId,
    TxnOffsetCommitRequest, WriteTxnMarkersRequest,
};
use kafka_protocol::protocol::StrBytes;
use seglog_broker::{SUPPORTED_APIS, Server, TXN_APIS};
use seglog_format::{Compression, RecordBatchBuilder};

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn txn_id(text: &str) -> TransactionalId {
    TransactionalId(s(text))
}

const TOPIC: &str = "txn-topic";

async fn broker(dir: &std::path::Path) -> Server {
    // Small internal topics keep the test quick.
    start(
        dir,
        &[
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
            ("transaction.abort.timed.out.transaction.cleanup.interval.ms", "100"),
        ],
    )
    .await
}

async fn create_topic(client: &mut Client, partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(s(TOPIC)))
                .with_num_partitions(partitions)
                .with_replication_factor(1),
        ])
        .with_timeout_ms(10_000);
    let response = client.send(&request, 7).await;
    assert_eq!(response.topics[0].error_code, 0);
}

async fn init(client: &mut Client, id: &str, version: i16) -> (i64, i16) {
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn_id(id)))
        .with_transaction_timeout_ms(60_000)
        .with_producer_id(ProducerId(-1))
        .with_producer_epoch(-1);
    // A first InitProducerId of an id whose transaction is open answers CONCURRENT_TRANSACTIONS
    // while it aborts it: retry as clients do.
    for _ in 0..100 {
        let response = client.send(&request, version).await;
        if response.error_code == 51 {
            tokio::task::yield_now().await;
            continue;
        }
        assert_eq!(response.error_code, 0, "InitProducerId v{version} of {id}");
        return (response.producer_id.0, response.producer_epoch);
    }
    panic!("InitProducerId of {id} kept answering CONCURRENT_TRANSACTIONS");
}

async fn add_partitions(
    client: &mut Client,
    id: &str,
    producer: (i64, i16),
    partitions: &[i32],
) -> i16 {
    let request = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn_id(id))
        .with_v3_and_below_producer_id(ProducerId(producer.0))
        .with_v3_and_below_producer_epoch(producer.1)
        .with_v3_and_below_topics(vec![
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(s(TOPIC)))
                .with_partitions(partitions.to_vec()),
        ]);
    let response = client.send(&request, 3).await;
    let codes: Vec<i16> = response.results_by_topic_v3_and_below[0]
        .results_by_partition
        .iter()
        .map(|partition| partition.partition_error_code)
        .collect();
    assert!(codes.windows(2).all(|pair| pair[0] == pair[1]), "{codes:?}");
    codes[0]
}

/// AddOffsetsToTxn for `group`.
fn add_offsets_request(id: &str, producer: (i64, i16), group: &str) -> AddOffsetsToTxnRequest {
    AddOffsetsToTxnRequest::default()
        .with_transactional_id(txn_id(id))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_group_id(GroupId(s(group)))
}

/// TxnOffsetCommit of `offset` for partition `partition` of the topic, with no member.
fn txn_offset_commit_request(
    id: &str,
    producer: (i64, i16),
    group: &str,
    partition: i32,
    offset: i64,
) -> TxnOffsetCommitRequest {
    TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id(id))
        .with_group_id(GroupId(s(group)))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_generation_id(-1)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default().with_name(TopicName(s(TOPIC))).with_partitions(
                vec![
                    TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(partition)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(-1),
                ],
            ),
        ])
}

fn txn_batch(producer: (i64, i16), first_seq: i32, values: &[&str]) -> Bytes {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(producer.0, producer.1, first_seq)
        .transactional(true);
    for value in values {
        // Now: a timestamp days older than the markers' would roll the segment by time.
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX));
        builder.push(now_ms, None, Some(value.as_bytes()), &[]).expect("record");
    }
    Bytes::from(builder.build().expect("batch"))
}

async fn produce(
    client: &mut Client,
    id: Option<&str>,
    partition: i32,
    batch: Bytes,
    version: i16,
) -> i16 {
    let request = ProduceRequest::default()
        .with_transactional_id(id.map(txn_id))
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default().with_name(TopicName(s(TOPIC))).with_partition_data(vec![
                PartitionProduceData::default().with_index(partition).with_records(Some(batch)),
            ]),
        ]);
    let response = client.send(&request, version).await;
    response.responses[0].partition_responses[0].error_code
}

async fn end(
    client: &mut Client,
    id: &str,
    producer: (i64, i16),
    commit: bool,
    version: i16,
) -> i16 {
    let request = EndTxnRequest::default()
        .with_transactional_id(txn_id(id))
        .with_producer_id(ProducerId(producer.0))
        .with_producer_epoch(producer.1)
        .with_committed(commit);
    client.send(&request, version).await.error_code
}

/// A read_committed (or read_uncommitted) fetch of one partition from offset 0: the records,
/// the last stable offset, the high watermark and the aborted transactions.
async fn fetch(
    client: &mut Client,
    partition: i32,
    read_committed: bool,
) -> (Vec<(i64, String)>, i64, i64, Option<Vec<(i64, i64)>>) {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(i8::from(read_committed))
        .with_topics(vec![FetchTopic::default().with_topic(TopicName(s(TOPIC))).with_partitions(
            vec![
                FetchPartition::default()
                    .with_partition(partition)
                    .with_fetch_offset(0)
                    .with_partition_max_bytes(1 << 20),
            ],
        )]);
    let response = client.send(&request, 12).await;
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, 0);
    let aborted = data
        .aborted_transactions
        .as_ref()
        .map(|list| list.iter().map(|txn| (txn.producer_id.0, txn.first_offset)).collect());
    let records = data_records(data.records.as_deref().unwrap_or_default());
    (records, data.last_stable_offset, data.high_watermark, aborted)
}

/// The records of the data batches of a record set (markers left out): (offset, value).
fn data_records(bytes: &[u8]) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for positioned in seglog_format::Batches::new(bytes) {
        let batch = positioned.expect("fetched batch decodes").batch;
        if batch.is_control_batch() {
            continue;
        }
        let records = batch.records(seglog_format::DecodeLimits::default()).expect("records");
        for record in &records {
            let record = record.expect("record decodes");
            let value = String::from_utf8_lossy(record.value.unwrap_or_default()).into_owned();
            out.push((record.offset, value));
        }
    }
    out
}

#[tokio::test]
async fn every_transaction_api_answers_at_every_advertised_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 2).await;
    let advertised: Vec<_> =
        SUPPORTED_APIS.iter().filter(|(key, _, _)| TXN_APIS.contains(key)).collect();
    assert_eq!(advertised.len(), TXN_APIS.len(), "every transaction API is advertised");
    // One transactional id per version of the APIs that need an open transaction.
    for &(api, min, max) in advertised {
        for version in min..=max {
            let id = format!("{api:?}-v{version}");
            match api {
                ApiKey::InitProducerId => {
                    let (producer_id, epoch) = init(&mut client, &id, version).await;
                    assert!(producer_id >= 0 && epoch == 0, "v{version}");
                    // Again: the next epoch, older producers fenced.
                    let (again, epoch) = init(&mut client, &id, version).await;
                    assert_eq!((again, epoch), (producer_id, 1), "v{version}");
                }
                ApiKey::AddPartitionsToTxn => {
                    let producer = init(&mut client, &id, 3).await;
                    let topic = AddPartitionsToTxnTopic::default()
                        .with_name(TopicName(s(TOPIC)))
                        .with_partitions(vec![0, 1]);
                    if version < 4 {
                        let request = AddPartitionsToTxnRequest::default()
                            .with_v3_and_below_transactional_id(txn_id(&id))
                            .with_v3_and_below_producer_id(ProducerId(producer.0))
                            .with_v3_and_below_producer_epoch(producer.1)
                            .with_v3_and_below_topics(vec![topic]);
                        let response = client.send(&request, version).await;
                        let result = &response.results_by_topic_v3_and_below[0];
                        assert_eq!(result.results_by_partition.len(), 2);
                        assert!(
                            result.results_by_partition.iter().all(|p| p.partition_error_code == 0)
                        );
                    } else {
                        // The batch form: verify first (not added yet), add, verify again.
                        let mut codes = Vec::new();
                        for verify_only in [true, false, true] {
                            let request =
                                AddPartitionsToTxnRequest::default().with_transactions(vec![
                                    AddPartitionsToTxnTransaction::default()
                                        .with_transactional_id(txn_id(&id))
                                        .with_producer_id(ProducerId(producer.0))
                                        .with_producer_epoch(producer.1)
                                        .with_verify_only(verify_only)
                                        .with_topics(vec![topic.clone()]),
                                ]);
                            let response = client.send(&request, version).await;
                            let result = &response.results_by_transaction[0].topic_results[0];
                            codes.push(result.results_by_partition[0].partition_error_code);
                        }
                        // TRANSACTION_ABORTABLE (120) before the add, NONE after.
                        assert_eq!(codes, vec![120, 0, 0], "v{version}");
                    }
                }
                ApiKey::AddOffsetsToTxn => {
                    let producer = init(&mut client, &id, 3).await;
                    let request = add_offsets_request(&id, producer, &id);
                    assert_eq!(client.send(&request, version).await.error_code, 0, "v{version}");
                }
                ApiKey::EndTxn => {
                    let producer = init(&mut client, &id, 3).await;
                    assert_eq!(add_partitions(&mut client, &id, producer, &[0]).await, 0);
                    assert_eq!(end(&mut client, &id, producer, version % 2 == 0, version).await, 0);
                    // Ending an ended transaction the other way is INVALID_TXN_STATE (48).
                    assert_eq!(
                        end(&mut client, &id, producer, version % 2 == 1, version).await,
                        48
                    );
                }
                ApiKey::TxnOffsetCommit => {
                    let producer = init(&mut client, &id, 3).await;
                    let request = add_offsets_request(&id, producer, &id);
                    assert_eq!(client.send(&request, 3).await.error_code, 0);
                    let request = txn_offset_commit_request(&id, producer, &id, 1, 42);
                    let response = client.send(&request, version).await;
                    assert_eq!(response.topics[0].partitions[0].error_code, 0, "v{version}");
                }
                ApiKey::DescribeTransactions => {
                    let producer = init(&mut client, &id, 3).await;
                    assert_eq!(add_partitions(&mut client, &id, producer, &[1]).await, 0);
                    let request = DescribeTransactionsRequest::default()
                        .with_transactional_ids(vec![txn_id(&id), txn_id("no-such-id")]);
                    let response = client.send(&request, version).await;
                    let state = &response.transaction_states[0];
                    assert_eq!(state.error_code, 0);
                    assert_eq!(state.transaction_state.as_str(), "Ongoing");
                    assert_eq!(state.producer_id.0, producer.0);
                    assert_eq!(state.topics[0].partitions, vec![1]);
                    // TRANSACTIONAL_ID_NOT_FOUND (105).
                    assert_eq!(response.transaction_states[1].error_code, 105);
                }
                ApiKey::ListTransactions => {
                    let producer = init(&mut client, &id, 3).await;
                    assert_eq!(add_partitions(&mut client, &id, producer, &[0]).await, 0);
                    let request = ListTransactionsRequest::default()
                        .with_state_filters(vec![s("Ongoing"), s("NoSuchState")])
                        .with_producer_id_filters(vec![ProducerId(producer.0)])
                        .with_duration_filter(-1)
                        .with_transactional_id_pattern((version >= 2).then(|| s("List.*")));
                    let response = client.send(&request, version).await;
                    assert_eq!(response.error_code, 0);
                    assert_eq!(response.unknown_state_filters.len(), 1);
                    let ids: Vec<&str> = response
                        .transaction_states
                        .iter()
                        .map(|state| state.transactional_id.0.as_str())
                        .collect();
                    assert_eq!(ids, vec![id.as_str()], "v{version}");
                    if version >= 2 {
                        let none = request.clone().with_transactional_id_pattern(Some(s("x.*")));
                        assert!(client.send(&none, version).await.transaction_states.is_empty());
                        let bad = request.clone().with_transactional_id_pattern(Some(s("(")));
                        // INVALID_REGULAR_EXPRESSION (128).
                        assert_eq!(client.send(&bad, version).await.error_code, 128);
                    }
                }
                ApiKey::DescribeProducers => {
                    let producer = init(&mut client, &id, 3).await;
                    assert_eq!(add_partitions(&mut client, &id, producer, &[0]).await, 0);
                    assert_eq!(
                        produce(&mut client, Some(&id), 0, txn_batch(producer, 0, &["x"]), 9).await,
                        0
                    );
                    let request = DescribeProducersRequest::default().with_topics(vec![
                        TopicRequest::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partition_indexes(vec![0]),
                    ]);
                    let response = client.send(&request, version).await;
                    let partition = &response.topics[0].partitions[0];
                    assert_eq!(partition.error_code, 0);
                    let found = partition
                        .active_producers
                        .iter()
                        .find(|state| state.producer_id.0 == producer.0)
                        .expect("the producer is active");
                    assert!(found.current_txn_start_offset >= 0, "its transaction is open");
                }
                ApiKey::WriteTxnMarkers => {
                    let producer = init(&mut client, &id, 3).await;
                    assert_eq!(add_partitions(&mut client, &id, producer, &[0]).await, 0);
                    assert_eq!(
                        produce(&mut client, Some(&id), 0, txn_batch(producer, 0, &["x"]), 9).await,
                        0
                    );
                    // The coordinator's broker ends the transaction in partition 0; a topic that
                    // does not exist is UNKNOWN_TOPIC_OR_PARTITION (3).
                    let marker = |topic: &str| {
                        WritableTxnMarker::default()
                            .with_producer_id(ProducerId(producer.0))
                            .with_producer_epoch(producer.1)
                            .with_transaction_result(true)
                            .with_coordinator_epoch(0)
                            .with_topics(vec![
                                WritableTxnMarkerTopic::default()
                                    .with_name(TopicName(s(topic)))
                                    .with_partition_indexes(vec![0]),
                            ])
                    };
                    let request = WriteTxnMarkersRequest::default()
                        .with_markers(vec![marker(TOPIC), marker("no-such-topic")]);
                    let response = client.send(&request, version).await;
                    let codes: Vec<i16> = response
                        .markers
                        .iter()
                        .map(|m| m.topics[0].partitions[0].error_code)
                        .collect();
                    assert_eq!(codes, vec![0, 3]);
                    let request = DescribeProducersRequest::default().with_topics(vec![
                        TopicRequest::default()
                            .with_name(TopicName(s(TOPIC)))
                            .with_partition_indexes(vec![0]),
                    ]);
                    let described = client.send(&request, 0).await;
                    let open = described.topics[0].partitions[0]
                        .active_producers
                        .iter()
                        .find(|state| state.producer_id.0 == producer.0)
                        .map(|state| state.current_txn_start_offset);
                    assert_eq!(open, Some(-1), "the marker closed the transaction");
                }
                other => panic!("no case for {other:?}"),
            }
        }
    }
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn produce_is_verified_and_a_second_producer_fences_the_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 1).await;
    let find =
        FindCoordinatorRequest::default().with_key_type(1).with_coordinator_keys(vec![s("t1")]);
    let found = client.send(&find, 4).await;
    assert_eq!(found.coordinators[0].error_code, 0);
    let first = init(&mut client, "t1", 4).await;
    // A transactional produce to a partition not added (KIP-890): INVALID_TXN_STATE (48) for
    // Produce before v11, TRANSACTION_ABORTABLE (120) from v11. Nothing is written.
    assert_eq!(produce(&mut client, Some("t1"), 0, txn_batch(first, 0, &["a"]), 9).await, 48);
    assert_eq!(produce(&mut client, Some("t1"), 0, txn_batch(first, 0, &["a"]), 11).await, 120);
    // Without the transactional id: INVALID_TXN_STATE.
    assert_eq!(produce(&mut client, None, 0, txn_batch(first, 0, &["a"]), 9).await, 48);
    let (written, _, high_watermark, _) = fetch(&mut client, 0, false).await;
    assert!(written.is_empty() && high_watermark == 0, "refused produces wrote nothing");
    assert_eq!(add_partitions(&mut client, "t1", first, &[0]).await, 0);
    assert_eq!(produce(&mut client, Some("t1"), 0, txn_batch(first, 0, &["a", "b"]), 9).await, 0);
    // A second producer with the same id: its InitProducerId aborts the open transaction under a
    // bumped epoch and then gets the next one.
    let second = init(&mut client, "t1", 4).await;
    assert_eq!(second.0, first.0);
    assert!(second.1 > first.1 + 1, "the fence bumped once, the init again: {second:?}");
    // The first producer is fenced everywhere: PRODUCER_FENCED (90) from v4, else
    // INVALID_PRODUCER_EPOCH (47); its produce INVALID_PRODUCER_EPOCH.
    assert_eq!(end(&mut client, "t1", first, true, 4).await, 90);
    assert_eq!(end(&mut client, "t1", first, true, 3).await, 47);
    assert_eq!(add_partitions(&mut client, "t1", first, &[0]).await, 47);
    assert_eq!(produce(&mut client, Some("t1"), 0, txn_batch(first, 2, &["c"]), 9).await, 47);
    // The second producer commits a transaction of its own.
    assert_eq!(add_partitions(&mut client, "t1", second, &[0]).await, 0);
    assert_eq!(produce(&mut client, Some("t1"), 0, txn_batch(second, 0, &["d", "e"]), 9).await, 0);
    let (_, lso_open, hw_open, _) = fetch(&mut client, 0, true).await;
    assert!(lso_open < hw_open, "an open transaction holds the LSO back: {lso_open} {hw_open}");
    assert_eq!(end(&mut client, "t1", second, true, 4).await, 0);
    // read_committed: the aborted "a", "b" are listed as aborted, "d", "e" committed; the
    // LSO is the high watermark once no transaction is open.
    let (fetched, lso, high_watermark, aborted) = fetch(&mut client, 0, true).await;
    assert_eq!(lso, high_watermark);
    assert_eq!(aborted, Some(vec![(first.0, 0)]), "the aborted transaction, from offset 0");
    let values: Vec<&str> = fetched.iter().map(|(_, value)| value.as_str()).collect();
    assert_eq!(
        values,
        vec!["a", "b", "d", "e"],
        "batches are returned whole; the client skips aborted ones"
    );
    // read_uncommitted carries no aborted list.
    let (_, _, _, uncommitted) = fetch(&mut client, 0, false).await;
    assert_eq!(uncommitted, None);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn transactional_offsets_are_unstable_until_the_commit_and_dropped_on_abort() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 1).await;
    let producer = init(&mut client, "t-offsets", 4).await;
    let mut committed = Vec::new();
    for (round, commit) in [(1, false), (2, true)] {
        let add = add_offsets_request("t-offsets", producer, "g");
        assert_eq!(client.send(&add, 3).await.error_code, 0);
        let request = txn_offset_commit_request("t-offsets", producer, "g", 0, 100 * round);
        assert_eq!(client.send(&request, 3).await.topics[0].partitions[0].error_code, 0);
        let fetch_offsets = |require_stable: bool| {
            OffsetFetchRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_require_stable(require_stable)
                .with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(TopicName(s(TOPIC)))
                        .with_partition_indexes(vec![0]),
                ]))
        };
        let stable = client.send(&fetch_offsets(true), 7).await;
        // UNSTABLE_OFFSET_COMMIT (88) while the transaction is open.
        assert_eq!(stable.topics[0].partitions[0].error_code, 88, "round {round}");
        assert_eq!(end(&mut client, "t-offsets", producer, commit, 3).await, 0);
        let after = client.send(&fetch_offsets(true), 7).await;
        assert_eq!(after.topics[0].partitions[0].error_code, 0);
        committed.push(after.topics[0].partitions[0].committed_offset);
    }
    // The aborted 100 was dropped; the committed 200 stands.
    assert_eq!(committed, vec![-1, 200]);
    server.shutdown().await.expect("clean shutdown");
    // After a restart the replay keeps the committed offset and not the aborted one.
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    let request =
        OffsetFetchRequest::default().with_group_id(GroupId(s("g"))).with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(TopicName(s(TOPIC)))
                .with_partition_indexes(vec![0]),
        ]));
    let after = client.send(&request, 7).await;
    assert_eq!(after.topics[0].partitions[0].committed_offset, 200);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_transaction_open_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = broker(dir.path()).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 1).await;
    let request = InitProducerIdRequest::default()
        .with_transactional_id(Some(txn_id("slow")))
        .with_transaction_timeout_ms(200);
    let response = client.send(&request, 4).await;
    assert_eq!(response.error_code, 0);
    let producer = (response.producer_id.0, response.producer_epoch);
    assert_eq!(add_partitions(&mut client, "slow", producer, &[0]).await, 0);
    assert_eq!(
        produce(&mut client, Some("slow"), 0, txn_batch(producer, 0, &["late"]), 9).await,
        0
    );
    // The coordinator's timer aborts it (checked every 100 ms here): wait for the LSO to reach
    // the high watermark, by polling the broker, not by sleeping a guess.
    let mut aborted = None;
    for _ in 0..600 {
        let (_, lso, high_watermark, list) = fetch(&mut client, 0, true).await;
        if lso == high_watermark && high_watermark > 1 {
            aborted = list;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(aborted, Some(vec![(producer.0, 0)]), "the timed-out transaction was aborted");
    // Its producer is fenced: PRODUCER_FENCED (90).
    assert_eq!(end(&mut client, "slow", producer, true, 4).await, 90);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn an_idle_transactional_id_expires() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(
        dir.path(),
        &[
            ("transaction.state.log.num.partitions", "1"),
            ("transactional.id.expiration.ms", "300"),
            ("transaction.remove.expired.transaction.cleanup.interval.ms", "100"),
        ],
    )
    .await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 1).await;
    let producer = init(&mut client, "idle", 4).await;
    assert_eq!(add_partitions(&mut client, "idle", producer, &[0]).await, 0);
    assert_eq!(end(&mut client, "idle", producer, false, 4).await, 0);
    let describe =
        DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id("idle")]);
    assert_eq!(client.send(&describe, 0).await.transaction_states[0].error_code, 0);
    // Idle for `transactional.id.expiration.ms`: the coordinator's timer writes a tombstone and
    // forgets it (TRANSACTIONAL_ID_NOT_FOUND, 105). Polled, not slept on a guess.
    let mut code = 0;
    for _ in 0..500 {
        code = client.send(&describe, 0).await.transaction_states[0].error_code;
        if code != 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(code, 105);
    server.shutdown().await.expect("clean shutdown");
    // The tombstone holds across a restart: the id stays forgotten.
    let server = start(dir.path(), &[("transaction.state.log.num.partitions", "1")]).await;
    let mut client = Client::connect(&server).await;
    assert_eq!(client.send(&describe, 0).await.transaction_states[0].error_code, 105);
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_corrupt_transaction_state_record_fails_the_start_naming_where() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &[("transaction.state.log.num.partitions", "1")]).await;
    let mut client = Client::connect(&server).await;
    create_topic(&mut client, 1).await;
    init(&mut client, "fine", 4).await;
    // A record with a good key and a value no version of TransactionLogValue decodes.
    let tp = seglog_storage::log::partition_log::TopicPartition {
        topic: "__transaction_state".to_owned(),
        partition: 0,
    };
    let log = server.broker().manager().get_log(&tp).expect("log");
    let key = seglog_format::schema::transaction::encode_key("broken").expect("key");
    let mut builder = RecordBatchBuilder::new(Compression::None);
    builder.push(0, Some(&key), Some(&[0, 1, 0xff, 0xff][..]), &[]).expect("record");
    let appended = log
        .append_as_sole_leader(
            &builder.build().expect("batch"),
            seglog_storage::log::validator::AppendOrigin::Coordinator,
            0,
        )
        .expect("append");
    server.shutdown().await.expect("clean shutdown");
    let mut properties = std::collections::BTreeMap::new();
    properties.insert("listeners".to_owned(), "PLAINTEXT://127.0.0.1:0".to_owned());
    properties.insert("log.dirs".to_owned(), dir.path().display().to_string());
    properties.insert("seglog.metrics.listener".to_owned(), String::new());
    properties.insert("seglog.console.listener".to_owned(), String::new());
    properties.insert("transaction.state.log.num.partitions".to_owned(), "1".to_owned());
    let config = seglog_broker::BrokerConfig::from_properties(&properties).expect("config");
    let Err(error) = Server::start(config).await else {
        panic!("a corrupt __transaction_state must not be served");
    };
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    assert!(chain.starts_with("cannot load the transaction state"), "{chain}");
    let place = format!("__transaction_state-0: offset {}", appended.first_offset);
    assert!(chain.contains(&place), "{chain}");
    assert!(chain.ends_with("the record ends inside a field"), "{chain}");
}

/// A read_committed fetch of offsets in the bucket lists the aborted transactions there, from
/// the uploaded `.txnindex` objects, as it does for local segments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_from_the_bucket_lists_the_aborted_transactions_there() {
    use seglog_broker::object_store::memory::InMemory;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = std::sync::Arc::new(InMemory::new());
    let extra =
        [("transaction.state.log.num.partitions", "3"), ("offsets.topic.num.partitions", "3")];
    let server = crate::tiered::start_tiered_with(dir.path(), store, &extra).await;
    let mut client = Client::connect(&server).await;
    let configs = [
        ("remote.storage.enable", "true"),
        ("segment.bytes", "1024"),
        ("local.retention.bytes", "1024"),
    ];
    let created = client.send(&crate::protocol::create_topic_request(TOPIC, 1, &configs), 7).await;
    assert_eq!(created.topics[0].error_code, 0);
    let producer = init(&mut client, "tiered-txn", 4).await;
    assert_eq!(add_partitions(&mut client, "tiered-txn", producer, &[0]).await, 0);
    let batch = txn_batch(producer, 0, &["aborted-1", "aborted-2"]);
    assert_eq!(produce(&mut client, Some("tiered-txn"), 0, batch, 9).await, 0);
    assert_eq!(end(&mut client, "tiered-txn", producer, false, 3).await, 0);
    assert_eq!(add_partitions(&mut client, "tiered-txn", producer, &[0]).await, 0);
    let batch = txn_batch(producer, 2, &["committed"]);
    assert_eq!(produce(&mut client, Some("tiered-txn"), 0, batch, 9).await, 0);
    assert_eq!(end(&mut client, "tiered-txn", producer, true, 3).await, 0);
    // Plain records after them roll the segments, so that the transactions go to the bucket
    // and leave the disk.
    let filler = ["f".repeat(400)];
    let filler: Vec<&str> = filler.iter().map(String::as_str).collect();
    for _ in 0..12 {
        let batch = crate::common::batch(Compression::None, &filler, 1);
        assert_eq!(produce(&mut client, None, 0, batch, 9).await, 0);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let listed = client.send(&crate::protocol::list_offsets_request(TOPIC, -4), 9).await;
        if listed.topics[0].partitions[0].offset > 4 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the transactions never left the disk");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let (records, _, _, aborted) = fetch(&mut client, 0, true).await;
    assert_eq!(records.first().map(|(offset, _)| *offset), Some(0), "read from the bucket");
    assert_eq!(aborted, Some(vec![(producer.0, 0)]), "the aborted transaction, from the bucket");
    server.shutdown().await.expect("clean shutdown");
}
