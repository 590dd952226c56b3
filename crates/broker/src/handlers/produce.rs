//! Produce: the data path's writes, through `ReplicaManager`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{BrokerId, ProduceRequest, ProduceResponse};
use seglog_storage::Error as StorageError;
use seglog_storage::log::validator::AppendOrigin;

use super::data::tp;
use super::{TopicIds, blocking, now_ms, str_bytes, topic_allowed, txn_id_allowed};
use crate::Broker;
use crate::error::{Error, NONE, storage_error};
use crate::replica::{Acks, AppendError};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::AclOperation;

/// Produce: each partition's record set is validated and appended on its own blocking task,
/// so a request for many partitions appends them concurrently. acks=-1 waits until the
/// topic's durability mode makes the append durable: at once for `page-cache` (Kafka's
/// meaning of "all in-sync replicas have it" on one node) and `fsync-every-append`, after the
/// covering fsync for `group-commit`. acks=0 gets no response.
///
/// Versions: v10 (KIP-951) adds the current leader and its endpoint for NOT_LEADER_OR_FOLLOWER
/// answers, which this node, leader of every partition it has, never gives (a partition on an
/// offline directory is KAFKA_STORAGE_ERROR, as in Kafka), so both stay empty and unsent; v11
/// (KIP-890) lets a transactional produce answer TRANSACTION_ABORTABLE, and v12 (transactions
/// version 2) is not used, since no `transaction.version` feature is advertised; v13 (KIP-516) names topics by
/// id, and an id no topic has is UNKNOWN_TOPIC_ID.
pub(crate) async fn produce(
    broker: &Arc<Broker>,
    session: &Session,
    request: ProduceRequest,
    version: i16,
) -> Result<Reply, Error> {
    let acks = request.acks;
    let timeout = Duration::from_millis(u64::try_from(request.timeout_ms.max(0)).unwrap_or(0));
    let transactional_id: Option<Arc<str>> =
        request.transactional_id.as_ref().map(|id| Arc::from(id.0.as_str()));
    let ids = if version >= 13 {
        let broker = Arc::clone(broker);
        Some(blocking(move || TopicIds::new(&broker)).await?)
    } else {
        None
    };
    // Kafka's `handleProduceRequest`: transactional records need WRITE on the transactional
    // id, or the whole request is refused; each topic needs WRITE, checked before existence.
    let txn_refused = transactional_id.as_deref().is_some_and(|id| {
        has_transactional_records(&request)
            && !txn_id_allowed(broker, session, AclOperation::Write, id)
    });
    let mut pending = Vec::new();
    for topic in request.topic_data {
        let name = match &ids {
            Some(ids) => ids.name(&topic.topic_id).map(str::to_owned),
            None => Some(topic.name.0.to_string()),
        };
        let refusal = if txn_refused {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        } else {
            name.as_deref()
                .filter(|name| !topic_allowed(broker, session, AclOperation::Write, name))
                .map(|_| ResponseError::TopicAuthorizationFailed)
        };
        let mut partitions = Vec::new();
        for partition in topic.partition_data {
            let broker = Arc::clone(broker);
            let name = name.clone();
            let transactional_id = transactional_id.clone();
            partitions.push(tokio::task::spawn_blocking(move || {
                let response = if let Some(refusal) = refusal {
                    produce_error(partition.index, refusal.code(), refusal_message(refusal))
                } else if let Some(name) = name {
                    let target = Target { topic: &name, partition: partition.index };
                    append_partition(
                        &broker,
                        target,
                        partition.records,
                        (acks, timeout),
                        transactional_id.as_deref(),
                        version,
                    )
                } else {
                    produce_error(
                        partition.index,
                        ResponseError::UnknownTopicId.code(),
                        "This server does not host this topic ID.",
                    )
                };
                response.for_version(version)
            }));
        }
        pending.push((topic.name, topic.topic_id, partitions));
    }
    let mut response = ProduceResponse::default();
    for (name, topic_id, partitions) in pending {
        let mut topic = TopicProduceResponse::default();
        if version >= 13 {
            topic.topic_id = topic_id;
        } else {
            topic.name = name;
        }
        for handle in partitions {
            topic
                .partition_responses
                .push(handle.await.map_err(|source| Error::Task { what: "produce task", source })?);
        }
        response.responses.push(topic);
    }
    if acks == 0 {
        // No response; but when a partition failed, Kafka closes the connection so that the
        // client notices and refreshes its metadata (KafkaApis.handleProduceRequest).
        let failed = response
            .responses
            .iter()
            .flat_map(|topic| &topic.partition_responses)
            .find(|partition| partition.error_code != NONE);
        if let Some(failed) = failed {
            return Err(Error::AcksZeroFailed { code: failed.error_code, partition: failed.index });
        }
        return Ok(Reply::None);
    }
    encode(&response, version)
}

/// Whether any partition of a Produce carries transactional data (Kafka's
/// `RequestUtils.hasTransactionalRecords`).
fn has_transactional_records(request: &ProduceRequest) -> bool {
    request.topic_data.iter().flat_map(|topic| &topic.partition_data).any(|partition| {
        partition
            .records
            .as_deref()
            .is_some_and(|records| transactional_producer(records).is_some())
    })
}

/// The message of an authorization refusal.
fn refusal_message(refusal: ResponseError) -> &'static str {
    if refusal == ResponseError::TransactionalIdAuthorizationFailed {
        "Transactional Id authorization failed."
    } else {
        "Topic authorization failed."
    }
}

/// Clears the fields a response version does not carry (the codec refuses to drop a set
/// field silently).
trait ForVersion {
    fn for_version(self, version: i16) -> Self;
}

impl ForVersion for PartitionProduceResponse {
    fn for_version(mut self, version: i16) -> Self {
        if version < 5 {
            self.log_start_offset = -1;
        }
        if version < 8 {
            self.record_errors.clear();
            self.error_message = None;
        }
        self
    }
}

fn produce_error(partition: i32, code: i16, message: &str) -> PartitionProduceResponse {
    let mut response = PartitionProduceResponse::default();
    response.index = partition;
    response.error_code = code;
    response.base_offset = -1;
    response.log_append_time_ms = -1;
    response.log_start_offset = -1;
    response.error_message = Some(str_bytes(message));
    response
}

/// The partition a produce appends to.
#[derive(Clone, Copy)]
struct Target<'a> {
    topic: &'a str,
    partition: i32,
}

/// The producer of a record set's first batch, if it is transactional data (not a marker).
fn transactional_producer(records: &[u8]) -> Option<(i64, i16)> {
    let batch = seglog_format::Batch::new(records).ok()?;
    (batch.is_transactional() && !batch.is_control_batch())
        .then(|| (batch.producer_id(), batch.producer_epoch()))
}

/// Appends one partition's record set. Transactional data is appended only once the
/// transaction coordinator confirms the partition is in the producer's open transaction
/// (KIP-890 part 1), under the transaction's gate, so that no write lands after its end.
/// A produce to a partition led elsewhere: the error, with the current leader (KIP-951) when
/// given.
fn produce_not_led_here(
    partition: i32,
    code: i16,
    leader: Option<(i32, i32)>,
) -> PartitionProduceResponse {
    let mut response = produce_error(partition, code, "this broker does not lead the partition");
    if let Some((leader_id, leader_epoch)) = leader {
        response.current_leader =
            kafka_protocol::messages::produce_response::LeaderIdAndEpoch::default()
                .with_leader_id(BrokerId(leader_id))
                .with_leader_epoch(leader_epoch);
    }
    response
}

fn append_partition(
    broker: &Broker,
    target: Target<'_>,
    records: Option<Bytes>,
    (acks, timeout): (i16, Duration),
    transactional_id: Option<&str>,
    version: i16,
) -> PartitionProduceResponse {
    let Target { topic, partition } = target;
    let Some(acks) = Acks::from_wire(acks) else {
        return produce_error(
            partition,
            ResponseError::InvalidRequiredAcks.code(),
            "acks must be -1, 0 or 1",
        );
    };
    let Some(records) = records else {
        return produce_error(
            partition,
            ResponseError::CorruptMessage.code(),
            "the record set is null",
        );
    };
    if let Some((code, leader)) = broker.not_led_here(topic, partition) {
        return produce_not_led_here(partition, code, leader.filter(|_| version >= 10));
    }
    let started = Instant::now();
    let tp = tp(topic, partition);
    let append = |guard| {
        broker.replicas.append_within(
            &tp,
            &records,
            (AppendOrigin::Client, guard),
            acks,
            timeout,
            now_ms(),
        )
    };
    let appended = match (transactional_producer(&records), transactional_id) {
        (None, _) => append(None),
        (Some(_), None) => {
            return produce_error(
                partition,
                ResponseError::InvalidTxnState.code(),
                "transactional records need the producer's transactional id",
            );
        }
        (Some((producer_id, producer_epoch)), Some(transactional_id)) => {
            match super::txn::with_verified(
                broker,
                transactional_id,
                producer_id,
                producer_epoch,
                &tp,
                append,
            ) {
                Ok(appended) => appended,
                Err(error) => {
                    let message = format!(
                        "the transaction of {transactional_id} (producer {producer_id}, epoch \
                         {producer_epoch}) does not accept writes to {tp}: {error:?}"
                    );
                    return produce_error(
                        partition,
                        crate::txn::TransactionCoordinator::produce_error(error, version),
                        &message,
                    );
                }
            }
        }
    };
    let info = match appended {
        Ok((_, info)) => info,
        Err(error) => return append_refused(broker, (topic, partition), error, version),
    };
    ::metrics::counter!("seglog_records_in_total").increment(info.n_records as u64);
    broker.console.traffic.records_in(info.n_records as u64);
    ::metrics::histogram!("seglog_produce_durable_seconds").record(started.elapsed().as_secs_f64());
    let mut response = PartitionProduceResponse::default();
    response.index = partition;
    response.base_offset = info.first_offset;
    response.log_append_time_ms = info.log_append_time;
    response.log_start_offset = info.log_start_offset;
    response
}

/// A produce partition's answer to a refused or failed append.
fn append_refused(
    broker: &Broker,
    (topic, partition): (&str, i32),
    error: AppendError,
    version: i16,
) -> PartitionProduceResponse {
    match error {
        AppendError::InternalTopic(_) => {
            // Only the coordinators write the internal topics (Kafka's ReplicaManager).
            let message = format!("Cannot append to internal topic {topic}");
            produce_error(partition, ResponseError::InvalidTopicException.code(), &message)
        }
        AppendError::Replication(code) => {
            tracing::debug!(topic, partition, ?code, "produce not replicated");
            if code == ResponseError::NotLeaderOrFollower
                && let Some((code, leader)) = broker.not_led_here(topic, partition)
            {
                return produce_not_led_here(partition, code, leader.filter(|_| version >= 10));
            }
            let message = match code {
                ResponseError::NotEnoughReplicas => {
                    "Messages are rejected since there are fewer in-sync replicas than required."
                }
                ResponseError::NotEnoughReplicasAfterAppend => {
                    "Messages are written to the log, but to fewer in-sync replicas than required."
                }
                ResponseError::RequestTimedOut => {
                    "the in-sync replicas did not confirm the records within the request's timeout"
                }
                _ => "this broker does not lead the partition",
            };
            produce_error(partition, code.code(), message)
        }
        AppendError::Storage(error) => {
            tracing::debug!(topic, partition, %error, "produce refused");
            let mut response =
                produce_error(partition, storage_error(&error).code(), &error.to_string());
            if let StorageError::Validation(validation) = &error {
                response.record_errors = validation
                    .record_errors()
                    .iter()
                    .map(|record| {
                        BatchIndexAndErrorMessage::default()
                            .with_batch_index(i32::try_from(record.batch_idx).unwrap_or(i32::MAX))
                            .with_batch_index_error_message(Some(str_bytes(&record.message)))
                    })
                    .collect();
            }
            response
        }
    }
}
