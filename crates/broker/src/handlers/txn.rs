//! The transaction APIs (Kafka's `KafkaApis.handle*` for transactions): InitProducerId,
//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, DescribeTransactions,
//! ListTransactions and DescribeProducers, each a thin layer over the transaction coordinator
//! (`crate::txn`), the group coordinator (TxnOffsetCommit) or storage (DescribeProducers).
//!
//! Versions: seglog advertises no `transaction.version` feature, so clients run transactions
//! version 1 (KIP-890 part 1: the broker verifies each transactional produce against the
//! coordinator) and never the per-transaction epoch bump of part 2. AddPartitionsToTxn v4 and
//! v5 are the broker-to-broker batch form (with `verify_only`); they are served too.
//! WriteTxnMarkers is the brokers' own (CLUSTER_ACTION): on one node the coordinator writes its
//! markers in-process; in a cluster it sends them to the leaders of the other partitions.

use std::collections::BTreeSet;
use std::sync::Arc;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedState;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, DescribeProducersRequest, DescribeProducersResponse,
    DescribeTransactionsRequest, DescribeTransactionsResponse, EndTxnRequest, EndTxnResponse,
    InitProducerIdRequest, InitProducerIdResponse, ListTransactionsRequest,
    ListTransactionsResponse, ProducerId, TransactionalId, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use seglog_storage::log::partition_log::TopicPartition;

use super::{
    blocking, cluster_allowed, group_allowed, now_ms, str_bytes, topic_allowed, topic_name,
    txn_id_allowed,
};
use crate::Broker;
use crate::error::{Error, NONE, storage_error};
use crate::group::{OFFSETS_TOPIC, OffsetToCommit};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::{AclOperation, ResourceType};
use crate::txn::ProducerIdAndEpoch;

fn text(value: &kafka_protocol::protocol::StrBytes) -> String {
    value.as_str().to_owned()
}

/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED's code.
const TXN_ID_DENIED: i16 = ResponseError::TransactionalIdAuthorizationFailed.code();
/// TOPIC_AUTHORIZATION_FAILED's code.
const TOPIC_DENIED: i16 = ResponseError::TopicAuthorizationFailed.code();

/// InitProducerId. Without a transactional id: a producer id never handed out before, at
/// epoch 0 (an idempotent producer). With one: the transaction coordinator's answer (Kafka's
/// `handleInitProducerId`), including KIP-360's `producer_id`/`producer_epoch` (v3+) for a
/// producer that recovers from an abortable error with its current id and epoch. v6 (KIP-939
/// two-phase commit) is unstable in Kafka 4.1 and not advertised.
pub(crate) async fn init_producer_id(
    broker: &Arc<Broker>,
    session: &Session,
    request: &InitProducerIdRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = InitProducerIdResponse::default();
    response.producer_id = ProducerId(-1);
    response.producer_epoch = -1;
    // Kafka's `handleInitProducerIdRequest`: WRITE on the transactional id; without one,
    // IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    let refusal = match &request.transactional_id {
        Some(id) => (!txn_id_allowed(broker, session, AclOperation::Write, id.0.as_str()))
            .then_some(TXN_ID_DENIED),
        None => (!cluster_allowed(broker, session, AclOperation::IdempotentWrite)
            && !broker.security.authorize_by_resource_type(
                session,
                AclOperation::Write,
                ResourceType::Topic,
            ))
        .then_some(ResponseError::ClusterAuthorizationFailed.code()),
    };
    if let Some(code) = refusal {
        response.error_code = code;
        return encode(&response, version);
    }
    let Some(transactional_id) = request.transactional_id.as_ref().map(|id| text(&id.0)) else {
        if let Some(link) = broker.cluster() {
            // Producer ids are the cluster's: blocks from the controller.
            match link.allocate_producer_id().await {
                Ok(producer_id) => {
                    response.producer_id = ProducerId(producer_id);
                    response.producer_epoch = 0;
                }
                Err(refusal) => {
                    tracing::warn!(%refusal, "no producer id from the controller");
                    response.error_code = ResponseError::CoordinatorNotAvailable.code();
                }
            }
            return encode(&response, version);
        }
        let manager = Arc::clone(broker.manager());
        match blocking(move || manager.allocate_producer_id()).await? {
            Ok(producer_id) => {
                response.producer_id = ProducerId(producer_id);
                response.producer_epoch = 0;
            }
            Err(error) => response.error_code = storage_error(&error).code(),
        }
        return encode(&response, version);
    };
    if transactional_id.is_empty() {
        // Kafka's TransactionCoordinator answers an empty transactional id this way.
        response.error_code = ResponseError::InvalidRequest.code();
        return encode(&response, version);
    }
    let expected = (version >= 3 && request.producer_id.0 >= 0).then_some(ProducerIdAndEpoch {
        producer_id: request.producer_id.0,
        epoch: request.producer_epoch,
    });
    let timeout_ms = request.transaction_timeout_ms;
    let broker = Arc::clone(broker);
    let answer = blocking(move || {
        broker.txns.init_producer_id(
            &broker.groups,
            &transactional_id,
            timeout_ms,
            expected,
            now_ms(),
        )
    })
    .await?;
    match answer {
        Ok(granted) => {
            response.producer_id = ProducerId(granted.producer_id);
            response.producer_epoch = granted.epoch;
        }
        Err(error) => response.error_code = fence_code(error, version),
    }
    encode(&response, version)
}

/// PRODUCER_FENCED is new in InitProducerId/AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v4 (Kafka's
/// `maybeDowngradeProducerFenced`): older clients get INVALID_PRODUCER_EPOCH.
fn fence_code(error: ResponseError, version: i16) -> i16 {
    if error == ResponseError::ProducerFenced && version < 4 {
        ResponseError::InvalidProducerEpoch.code()
    } else {
        error.code()
    }
}

/// The named partitions, and those of topics this broker does not have.
fn known_partitions(
    broker: &Broker,
    topics: impl Iterator<Item = (String, Vec<i32>)>,
) -> (BTreeSet<TopicPartition>, BTreeSet<TopicPartition>) {
    let counts = broker.topic_counts();
    let mut known = BTreeSet::new();
    let mut unknown = BTreeSet::new();
    for (topic, partitions) in topics {
        for partition in partitions {
            let tp = TopicPartition { topic: topic.clone(), partition };
            let exists =
                counts.get(&topic).is_some_and(|count| partition >= 0 && partition < *count);
            if exists {
                known.insert(tp)
            } else {
                unknown.insert(tp)
            };
        }
    }
    (known, unknown)
}

/// AddPartitionsToTxn. v0-v3: one transaction from a producer; v4+: a batch of transactions
/// (the broker-to-broker form), each possibly `verify_only` (KIP-890's check, answered without
/// adding anything). Unknown partitions are UNKNOWN_TOPIC_OR_PARTITION and the others of the
/// same request OPERATION_NOT_ATTEMPTED, as Kafka answers.
pub(crate) async fn add_partitions_to_txn(
    broker: &Arc<Broker>,
    session: &Session,
    request: AddPartitionsToTxnRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = AddPartitionsToTxnResponse::default();
    if version >= 4 && !cluster_allowed(broker, session, AclOperation::ClusterAction) {
        // The batch form is broker-to-broker: CLUSTER_ACTION on the cluster (Kafka's
        // `authorizeClusterOperation`), else the request's error code.
        response.error_code = ResponseError::ClusterAuthorizationFailed.code();
        return encode(&response, version);
    }
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        if version < 4 {
            let transactional_id = text(&request.v3_and_below_transactional_id.0);
            let topics: Vec<(String, Vec<i32>)> = request
                .v3_and_below_topics
                .iter()
                .map(|topic| (text(&topic.name.0), topic.partitions.clone()))
                .collect();
            response.results_by_topic_v3_and_below =
                match add_refusals(&broker, &session, &transactional_id, &topics) {
                    Some(codes) => results_of(codes),
                    None => add_one(
                        &broker,
                        &transactional_id,
                        request.v3_and_below_producer_id.0,
                        request.v3_and_below_producer_epoch,
                        topics,
                        false,
                        version,
                    ),
                };
        } else {
            for txn in &request.transactions {
                let topics =
                    txn.topics.iter().map(|topic| (text(&topic.name.0), topic.partitions.clone()));
                let results = add_one(
                    &broker,
                    &text(&txn.transactional_id.0),
                    txn.producer_id.0,
                    txn.producer_epoch,
                    topics.collect(),
                    txn.verify_only,
                    version,
                );
                response.results_by_transaction.push(
                    AddPartitionsToTxnResult::default()
                        .with_transactional_id(txn.transactional_id.clone())
                        .with_topic_results(results),
                );
            }
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// Kafka's checks of a client's AddPartitionsToTxn (v0-v3): WRITE on the transactional id,
/// else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic (never
/// granted on an internal topic), else TOPIC_AUTHORIZATION_FAILED, and then the other
/// partitions are UNKNOWN_TOPIC_OR_PARTITION or OPERATION_NOT_ATTEMPTED. `None` when allowed.
fn add_refusals(
    broker: &Broker,
    session: &Session,
    transactional_id: &str,
    topics: &[(String, Vec<i32>)],
) -> Option<Vec<(TopicPartition, i16)>> {
    let (known, unknown) = known_partitions(broker, topics.iter().cloned());
    if !txn_id_allowed(broker, session, AclOperation::Write, transactional_id) {
        return Some(known.into_iter().chain(unknown).map(|tp| (tp, TXN_ID_DENIED)).collect());
    }
    let denied: BTreeSet<&str> = topics
        .iter()
        .map(|(topic, _)| topic.as_str())
        .filter(|topic| {
            crate::replica::INTERNAL_TOPICS.contains(topic)
                || !topic_allowed(broker, session, AclOperation::Write, topic)
        })
        .collect();
    if denied.is_empty() {
        return None;
    }
    let code_of = |tp: &TopicPartition| {
        if denied.contains(tp.topic.as_str()) {
            TOPIC_DENIED
        } else if unknown.contains(tp) {
            ResponseError::UnknownTopicOrPartition.code()
        } else {
            ResponseError::OperationNotAttempted.code()
        }
    };
    Some(known.iter().chain(&unknown).map(|tp| (tp.clone(), code_of(tp))).collect())
}

fn add_one(
    broker: &Broker,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    topics: Vec<(String, Vec<i32>)>,
    verify_only: bool,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let (known, unknown) = known_partitions(broker, topics.into_iter());
    let mut codes: Vec<(TopicPartition, i16)> = Vec::new();
    if transactional_id.is_empty() {
        codes.extend(
            known
                .iter()
                .chain(&unknown)
                .map(|tp| (tp.clone(), ResponseError::InvalidRequest.code())),
        );
    } else if !unknown.is_empty() {
        codes.extend(
            unknown.iter().map(|tp| (tp.clone(), ResponseError::UnknownTopicOrPartition.code())),
        );
        codes.extend(
            known.iter().map(|tp| (tp.clone(), ResponseError::OperationNotAttempted.code())),
        );
    } else if verify_only {
        for tp in &known {
            let code = match broker.txns.with_verified(
                transactional_id,
                producer_id,
                producer_epoch,
                tp,
                || (),
            ) {
                Ok(()) => NONE,
                Err(error) => error.code(),
            };
            codes.push((tp.clone(), code));
        }
    } else {
        let code = match broker.txns.add_partitions(
            transactional_id,
            producer_id,
            producer_epoch,
            &known,
            now_ms(),
        ) {
            Ok(()) => NONE,
            Err(error) => fence_code(error, version),
        };
        codes.extend(known.iter().map(|tp| (tp.clone(), code)));
    }
    results_of(codes)
}

/// Each partition's code, grouped by topic as AddPartitionsToTxn answers.
fn results_of(mut codes: Vec<(TopicPartition, i16)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut results: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    codes.sort();
    for (tp, code) in codes {
        let partition = AddPartitionsToTxnPartitionResult::default()
            .with_partition_index(tp.partition)
            .with_partition_error_code(code);
        match results.last_mut() {
            Some(last) if last.name.0.as_str() == tp.topic => {
                last.results_by_partition.push(partition);
            }
            _ => results.push(
                AddPartitionsToTxnTopicResult::default()
                    .with_name(topic_name(&tp.topic))
                    .with_results_by_partition(vec![partition]),
            ),
        }
    }
    results
}

/// The refusal of an AddOffsetsToTxn or TxnOffsetCommit: WRITE on the transactional id, else
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED; READ on the group, else GROUP_AUTHORIZATION_FAILED.
fn txn_group_refusal(
    broker: &Broker,
    session: &Session,
    transactional_id: &TransactionalId,
    group_id: &kafka_protocol::messages::GroupId,
) -> Option<i16> {
    if !txn_id_allowed(broker, session, AclOperation::Write, transactional_id.0.as_str()) {
        Some(TXN_ID_DENIED)
    } else if !group_allowed(broker, session, AclOperation::Read, group_id.0.as_str()) {
        Some(ResponseError::GroupAuthorizationFailed.code())
    } else {
        None
    }
}

/// The topics of `names` the session may READ.
fn readable_topics<'a>(
    broker: &Broker,
    session: &Session,
    names: impl Iterator<Item = &'a kafka_protocol::protocol::StrBytes>,
) -> BTreeSet<String> {
    names
        .filter(|name| topic_allowed(broker, session, AclOperation::Read, name.as_str()))
        .map(text)
        .collect()
}

/// AddOffsetsToTxn: adds the group's partition of `__consumer_offsets` to the transaction.
pub(crate) async fn add_offsets_to_txn(
    broker: &Arc<Broker>,
    session: &Session,
    request: AddOffsetsToTxnRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka's `handleAddOffsetsToTxnRequest`: WRITE on the transactional id, READ on the group.
    let refusal = txn_group_refusal(broker, session, &request.transactional_id, &request.group_id);
    if let Some(code) = refusal {
        return encode(&AddOffsetsToTxnResponse::default().with_error_code(code), version);
    }
    let broker = Arc::clone(broker);
    let code = blocking(move || {
        let transactional_id = text(&request.transactional_id.0);
        if transactional_id.is_empty() {
            return ResponseError::InvalidRequest.code();
        }
        let partition = match broker.groups.offsets_partition(&text(&request.group_id.0)) {
            Ok(partition) => partition,
            Err(error) => return error.code(),
        };
        let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
        match broker.txns.add_partitions(
            &transactional_id,
            request.producer_id.0,
            request.producer_epoch,
            &BTreeSet::from([tp]),
            now_ms(),
        ) {
            Ok(()) => NONE,
            Err(error) => fence_code(error, version),
        }
    })
    .await?;
    let mut response = AddOffsetsToTxnResponse::default();
    response.error_code = code;
    encode(&response, version)
}

/// EndTxn: commit or abort (Kafka's `handleEndTransaction`). Answered once the decision is
/// durable and, on this node, once the markers are written too (a marker that cannot be
/// written is retried by the coordinator's timer; the answer is still NONE, as Kafka's).
/// v5's `producer_id`/`producer_epoch` in the response belong to transactions version 2; they
/// carry the producer's unchanged id and epoch.
pub(crate) async fn end_txn(
    broker: &Arc<Broker>,
    session: &Session,
    request: EndTxnRequest,
    version: i16,
) -> Result<Reply, Error> {
    let for_txn = Arc::clone(broker);
    let transactional_id = text(&request.transactional_id.0);
    let (producer_id, producer_epoch) = (request.producer_id.0, request.producer_epoch);
    // Kafka's `handleEndTxnRequest`: WRITE on the transactional id.
    let allowed = txn_id_allowed(broker, session, AclOperation::Write, &transactional_id);
    let code = blocking(move || {
        if !allowed {
            return TXN_ID_DENIED;
        }
        if transactional_id.is_empty() {
            return ResponseError::InvalidRequest.code();
        }
        match for_txn.txns.end_txn(
            &for_txn.groups,
            &transactional_id,
            producer_id,
            producer_epoch,
            request.committed,
            now_ms(),
        ) {
            Ok(()) => NONE,
            Err(error) => fence_code(error, version),
        }
    })
    .await?;
    let mut response = EndTxnResponse::default();
    response.error_code = code;
    if version >= 5 {
        let ok = code == NONE;
        response.producer_id = ProducerId(if ok { producer_id } else { -1 });
        response.producer_epoch = if ok { producer_epoch } else { -1 };
    }
    encode(&response, version)
}

/// TxnOffsetCommit: the offsets join the transaction, visible once it commits. The group's
/// partition of `__consumer_offsets` must have been added (AddOffsetsToTxn): the commit is
/// verified against the coordinator as a produce is, else INVALID_TXN_STATE (v0-v3) or
/// TRANSACTION_ABORTABLE. v3 adds the member and generation, which fence a zombie consumer.
pub(crate) async fn txn_offset_commit(
    broker: &Arc<Broker>,
    session: &Session,
    request: TxnOffsetCommitRequest,
    version: i16,
) -> Result<Reply, Error> {
    // Kafka's `handleTxnOffsetCommitRequest`: WRITE on the transactional id, READ on the
    // group (else every partition has that code), READ on each topic.
    let refusal = txn_group_refusal(broker, session, &request.transactional_id, &request.group_id);
    let readable = readable_topics(broker, session, request.topics.iter().map(|t| &t.name.0));
    let broker = Arc::clone(broker);
    let response = blocking(move || {
        let group_id = text(&request.group_id.0);
        let transactional_id = text(&request.transactional_id.0);
        let offsets: Vec<OffsetToCommit> = request
            .topics
            .iter()
            .flat_map(|topic| {
                topic.partitions.iter().map(|partition| OffsetToCommit {
                    topic: text(&topic.name.0),
                    partition: partition.partition_index,
                    offset: partition.committed_offset,
                    leader_epoch: partition.committed_leader_epoch,
                    metadata: partition.committed_metadata.as_ref().map(text).unwrap_or_default(),
                })
            })
            .collect();
        let (generation_id, member_id, instance_id) = if version >= 3 {
            (
                request.generation_id,
                text(&request.member_id),
                request.group_instance_id.as_ref().map(text),
            )
        } else {
            (-1, String::new(), None)
        };
        let (offsets, denied): (Vec<OffsetToCommit>, Vec<OffsetToCommit>) = if refusal.is_some() {
            (Vec::new(), offsets)
        } else {
            offsets.into_iter().partition(|offset| readable.contains(&offset.topic))
        };
        // Nothing to commit (all refused): the coordinator is not asked, nor its topic made.
        let partition = (!offsets.is_empty()).then(|| broker.groups.offsets_partition(&group_id));
        let codes: Vec<i16> = match partition {
            None => Vec::new(),
            Some(Err(error)) => vec![error.code(); offsets.len()],
            Some(Ok(partition)) => {
                let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
                let committed = with_verified(
                    &broker,
                    &transactional_id,
                    request.producer_id.0,
                    request.producer_epoch,
                    &tp,
                    |guard| {
                        broker.groups.txn_commit_offsets(
                            &group_id,
                            request.producer_id.0,
                            request.producer_epoch,
                            generation_id,
                            &member_id,
                            instance_id.as_deref(),
                            &offsets,
                            (now_ms(), guard),
                        )
                    },
                );
                match committed {
                    Ok(codes) => codes,
                    Err(error) => {
                        let code = match error {
                            ResponseError::TransactionAbortable if version < 5 => {
                                ResponseError::InvalidTxnState.code()
                            }
                            ResponseError::ProducerFenced => {
                                ResponseError::InvalidProducerEpoch.code()
                            }
                            other => other.code(),
                        };
                        vec![code; offsets.len()]
                    }
                }
            }
        };
        let mut response = TxnOffsetCommitResponse::default();
        let denied_code = refusal.unwrap_or(TOPIC_DENIED);
        let answered = offsets.iter().zip(codes).chain(denied.iter().map(|o| (o, denied_code)));
        for (offset, code) in answered {
            let partition = TxnOffsetCommitResponsePartition::default()
                .with_partition_index(offset.partition)
                .with_error_code(code);
            match response.topics.last_mut() {
                Some(last) if last.name.0.as_str() == offset.topic => {
                    last.partitions.push(partition);
                }
                _ => response.topics.push(
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(topic_name(&offset.topic))
                        .with_partitions(vec![partition]),
                ),
            }
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// DescribeTransactions: each id's state, producer, timeout, start and partitions.
pub(crate) async fn describe_transactions(
    broker: &Arc<Broker>,
    session: &Session,
    request: DescribeTransactionsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = DescribeTransactionsResponse::default();
        for id in &request.transactional_ids {
            let mut state = TransactionState::default()
                .with_transactional_id(id.clone())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
                .with_transaction_start_time_ms(-1);
            // Kafka's `handleDescribeTransactionsRequest`: DESCRIBE on the transactional id;
            // only the partitions of topics the client may DESCRIBE.
            if !txn_id_allowed(&broker, &session, AclOperation::Describe, id.0.as_str()) {
                state.error_code = TXN_ID_DENIED;
                response.transaction_states.push(state);
                continue;
            }
            match broker.txns.describe(id.0.as_str()) {
                Err(error) => state.error_code = error.code(),
                Ok(found) => {
                    state.transaction_state = str_bytes(found.state);
                    state.transaction_timeout_ms = found.timeout_ms;
                    state.transaction_start_time_ms = found.start_time_ms;
                    state.producer_id = ProducerId(found.producer_id);
                    state.producer_epoch = found.producer_epoch;
                    let partitions = found.partitions.into_iter().filter(|tp| {
                        topic_allowed(&broker, &session, AclOperation::Describe, &tp.topic)
                    });
                    for tp in partitions {
                        match state.topics.last_mut() {
                            Some(last) if last.topic.0.as_str() == tp.topic => {
                                last.partitions.push(tp.partition);
                            }
                            _ => state.topics.push(
                                TopicData::default()
                                    .with_topic(topic_name(&tp.topic))
                                    .with_partitions(vec![tp.partition]),
                            ),
                        }
                    }
                }
            }
            response.transaction_states.push(state);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// Kafka's `TransactionState` names, for ListTransactions' unknown filters.
const STATE_NAMES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

/// ListTransactions: every transactional id, filtered by state, producer id, (v1) how long
/// the transaction has been open and (v2, KIP-1152) a regular expression its id must match
/// (an empty pattern matches all; one that does not compile is INVALID_REGULAR_EXPRESSION).
pub(crate) async fn list_transactions(
    broker: &Arc<Broker>,
    session: &Session,
    request: ListTransactionsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = ListTransactionsResponse::default();
        let states: Vec<String> = request.state_filters.iter().map(text).collect();
        response.unknown_state_filters = states
            .iter()
            .filter(|state| !STATE_NAMES.contains(&state.as_str()))
            .map(|state| str_bytes(state))
            .collect();
        let producer_ids: Vec<i64> = request.producer_id_filters.iter().map(|id| id.0).collect();
        let duration = if version >= 1 { request.duration_filter } else { -1 };
        let asked =
            request.transactional_id_pattern.as_ref().filter(|p| version >= 2 && !p.is_empty());
        let pattern = match asked.map(|pattern| regex::Regex::new(&format!("^(?:{pattern})$"))) {
            None => None,
            Some(Ok(pattern)) => Some(pattern),
            Some(Err(_)) => {
                response.error_code = ResponseError::InvalidRegularExpression.code();
                return response;
            }
        };
        match broker.txns.list(&states, &producer_ids, duration, now_ms()) {
            Err(error) => response.error_code = error.code(),
            Ok(listed) => {
                response.transaction_states = listed
                    .into_iter()
                    .filter(|listing| {
                        pattern
                            .as_ref()
                            .is_none_or(|pattern| pattern.is_match(&listing.transactional_id))
                    })
                    // Kafka's `handleListTransactionsRequest`: only the ids the client may
                    // DESCRIBE.
                    .filter(|listing| {
                        txn_id_allowed(
                            &broker,
                            &session,
                            AclOperation::Describe,
                            &listing.transactional_id,
                        )
                    })
                    .map(|listing| {
                        ListedState::default()
                            .with_transactional_id(TransactionalId(str_bytes(
                                &listing.transactional_id,
                            )))
                            .with_producer_id(ProducerId(listing.producer_id))
                            .with_transaction_state(str_bytes(listing.state))
                    })
                    .collect();
            }
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// DescribeProducers: each partition's active producers, from its producer state.
pub(crate) async fn describe_producers(
    broker: &Arc<Broker>,
    session: &Session,
    request: DescribeProducersRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = DescribeProducersResponse::default();
        for topic in &request.topics {
            let mut out = TopicResponse::default().with_name(topic.name.clone());
            // Kafka's `handleDescribeProducersRequest`: READ on the topic, before existence.
            let allowed =
                topic_allowed(&broker, &session, AclOperation::Read, topic.name.0.as_str());
            for partition in &topic.partition_indexes {
                let mut answer = PartitionResponse::default().with_partition_index(*partition);
                if !allowed {
                    answer.error_code = TOPIC_DENIED;
                    answer.error_message = Some(str_bytes("Topic authorization failed."));
                    out.partitions.push(answer);
                    continue;
                }
                let tp = TopicPartition { topic: text(&topic.name.0), partition: *partition };
                match broker.manager.get_log(&tp).and_then(|log| log.active_producers()) {
                    Err(error) => {
                        answer.error_code = storage_error(&error).code();
                        answer.error_message = Some(str_bytes(&error.to_string()));
                    }
                    Ok(producers) => {
                        answer.active_producers = producers
                            .into_iter()
                            .map(|producer| {
                                ProducerState::default()
                                    .with_producer_id(ProducerId(producer.producer_id))
                                    .with_producer_epoch(i32::from(producer.producer_epoch))
                                    .with_last_sequence(producer.last_sequence)
                                    .with_last_timestamp(producer.last_timestamp)
                                    .with_coordinator_epoch(producer.coordinator_epoch)
                                    .with_current_txn_start_offset(
                                        producer.current_txn_start_offset,
                                    )
                            })
                            .collect();
                    }
                }
                out.partitions.push(answer);
            }
            response.topics.push(out);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// Runs `append` once the transaction coordinator has confirmed that `tp` is in the producer's
/// open transaction (KIP-890 part 1), on a blocking thread: in-process under the transaction's
/// gate when this broker coordinates `transactional_id`, else (a cluster) through the
/// coordinator's broker with AddPartitionsToTxn `verify_only` (Kafka's
/// `AddPartitionsToTxnManager`), `append` then given the partition's verification guard.
pub(super) fn with_verified<T>(
    broker: &Broker,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    tp: &TopicPartition,
    append: impl FnOnce(Option<u64>) -> T,
) -> Result<T, ResponseError> {
    let Some(coordinator) = broker.txns.coordinator_of(transactional_id)? else {
        return broker.txns.with_verified(
            transactional_id,
            producer_id,
            producer_epoch,
            tp,
            || append(None),
        );
    };
    // KIP-890's guard, taken before asking: a marker that ends the producer's transaction
    // here before the append makes the append INVALID_TXN_STATE instead of opening a
    // transaction the coordinator no longer knows.
    let guard =
        broker.manager.get_log(tp).ok().and_then(|log| log.start_verification(producer_id).ok());
    let link = broker.cluster().ok_or(ResponseError::CoordinatorNotAvailable)?;
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(str_bytes(transactional_id)))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_verify_only(true)
            .with_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(topic_name(&tp.topic))
                    .with_partitions(vec![tp.partition]),
            ]),
    ]);
    let response = tokio::runtime::Handle::current()
        .block_on(link.call_broker(coordinator, &request, 5))
        .map_err(|error| {
            tracing::warn!(%error, transactional_id, "cannot verify a transactional write");
            ResponseError::NetworkException
        })?;
    let code_error =
        |code: i16| ResponseError::try_from_code(code).unwrap_or(ResponseError::UnknownServerError);
    match response.error_code {
        NONE => {}
        // The client never sees the brokers' own authorization (Kafka's words: "the
        // verification did not complete").
        code if code == ResponseError::ClusterAuthorizationFailed.code() => {
            return Err(ResponseError::InvalidTxnState);
        }
        code => return Err(code_error(code)),
    }
    let refusal = response
        .results_by_transaction
        .iter()
        .flat_map(|txn| &txn.topic_results)
        .flat_map(|topic| &topic.results_by_partition)
        .map(|partition| partition.partition_error_code)
        .find(|code| *code != NONE);
    match refusal {
        Some(code) => Err(code_error(code)),
        None => Ok(append(guard)),
    }
}

/// WriteTxnMarkers (Kafka's `handleWriteTxnMarkersRequest`): the transaction coordinator of a
/// cluster asks the leader of each partition of a transaction to append its COMMIT or ABORT
/// marker. Brokers only: CLUSTER_ACTION on the cluster, else every partition is
/// CLUSTER_AUTHORIZATION_FAILED. A partition this broker does not lead is
/// NOT_LEADER_OR_FOLLOWER; the coordinator retries it.
pub(crate) async fn write_txn_markers(
    broker: &Arc<Broker>,
    session: &Session,
    request: WriteTxnMarkersRequest,
    version: i16,
) -> Result<Reply, Error> {
    let allowed = cluster_allowed(broker, session, AclOperation::ClusterAction);
    let broker = Arc::clone(broker);
    let response = blocking(move || {
        let mut response = WriteTxnMarkersResponse::default();
        for marker in &request.markers {
            let end = crate::txn::TxnEnd {
                producer_id: marker.producer_id.0,
                producer_epoch: marker.producer_epoch,
                commit: marker.transaction_result,
                coordinator_epoch: marker.coordinator_epoch,
            };
            let mut result =
                WritableTxnMarkerResult::default().with_producer_id(marker.producer_id);
            for topic in &marker.topics {
                let mut partitions = Vec::new();
                for &partition in &topic.partition_indexes {
                    let tp = TopicPartition { topic: text(&topic.name.0), partition };
                    let code = if allowed {
                        write_one_marker(&broker, &tp, end)
                    } else {
                        ResponseError::ClusterAuthorizationFailed.code()
                    };
                    partitions.push(
                        WritableTxnMarkerPartitionResult::default()
                            .with_partition_index(partition)
                            .with_error_code(code),
                    );
                }
                result.topics.push(
                    WritableTxnMarkerTopicResult::default()
                        .with_name(topic.name.clone())
                        .with_partitions(partitions),
                );
            }
            response.markers.push(result);
        }
        response
    })
    .await?;
    encode(&response, version)
}

/// One partition of a WriteTxnMarkers: its code.
fn write_one_marker(broker: &Broker, tp: &TopicPartition, end: crate::txn::TxnEnd) -> i16 {
    if let Some((code, _)) = broker.not_led_here(&tp.topic, tp.partition) {
        return code;
    }
    match crate::txn::append_marker(&broker.replicas, &broker.groups, tp, end, now_ms()) {
        Ok(()) => NONE,
        Err(crate::txn::MarkerError::Append(crate::replica::AppendError::Storage(error))) => {
            tracing::debug!(%tp, %error, "a transaction marker was refused");
            storage_error(&error).code()
        }
        Err(error) => {
            tracing::warn!(%tp, %error, "cannot write a transaction marker");
            ResponseError::UnknownServerError.code()
        }
    }
}
