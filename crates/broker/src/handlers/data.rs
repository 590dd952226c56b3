//! Fetch, ListOffsets and OffsetForLeaderEpoch: the data path's reads (Produce is `produce.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ProducerId,
};
use seglog_format::Batches;
use seglog_storage::log::local_log::FetchedRecords;
use seglog_storage::log::partition_log::{
    EARLIEST_LOCAL_TIMESTAMP, Isolation, LATEST_TIERED_TIMESTAMP, LogReadInfo, PartitionLog,
    TopicPartition,
};
use seglog_storage::segment::FileSlice;

use super::{TopicIds, blocking, cluster_allowed, now_ms, str_bytes, topic_allowed};
use crate::Broker;
use crate::error::{Error, NONE, check_leader_epoch, storage_error};
use crate::fetch_session::SessionContext;
use crate::file_send::{FileResponse, placeholder};
use crate::request::{Reply, encode};
use crate::security::Session;
use crate::security::acl::AclOperation;

/// Kafka's broker `fetch.max.bytes` default: the most one Fetch response carries.
const FETCH_RESPONSE_BYTES_MAX: i32 = 57_671_680;

pub(super) fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition { topic: topic.to_owned(), partition }
}

/// One partition of a Fetch, as read.
struct PartitionRead {
    topic_idx: usize,
    data: PartitionData,
    bytes: usize,
    /// The records, when they stay in their file until sent: `data.records` is then a
    /// placeholder of the same length.
    file: Option<FileSlice>,
    /// The offset is below the partition's local segments: the records come from the bucket.
    remote: Option<RemoteFetch>,
    /// A follower's read of a partition under the leader's replication throttle: its bytes
    /// count toward `leader.replication.throttled.rate`.
    leader_throttled: bool,
}

impl PartitionRead {
    /// A partition answered without records (an error).
    fn without_records(topic_idx: usize, data: PartitionData) -> Self {
        Self { topic_idx, data, bytes: 0, file: None, remote: None, leader_throttled: false }
    }
}

/// A partition's read from remote storage, done after the local reads.
struct RemoteFetch {
    tp: TopicPartition,
    offset: i64,
    max_bytes: usize,
    isolation: Isolation,
}

/// The first local batches of a partition whose remote log holds nothing at or after the
/// offset asked for (a compacted remote tail): what a read of the whole log returns there.
async fn read_first_local(broker: &Broker, remote: &RemoteFetch) -> Option<Bytes> {
    let log = broker.manager.get_log(&remote.tp).ok()?;
    let (max_bytes, isolation) =
        (u32::try_from(remote.max_bytes).unwrap_or(u32::MAX), remote.isolation);
    let offset = remote.offset;
    tokio::task::spawn_blocking(move || {
        let local_start = log.local_log_start_offset().ok()?;
        (local_start > offset).then_some(())?;
        let read = log.read(local_start, max_bytes, isolation, true).ok()?;
        Some(Bytes::from(read.records))
    })
    .await
    .ok()
    .flatten()
}

/// Reads from the bucket the partitions that asked for offsets below their local segments
/// (Kafka's `DelayedRemoteFetch`), each within `remote.fetch.max.wait.ms`: records, or empty
/// records when the wait ran out (the consumer asks again), OFFSET_OUT_OF_RANGE when the
/// remote log does not hold the offset, and KAFKA_STORAGE_ERROR, which clients retry, when the
/// bucket failed (Kafka answers UNKNOWN_SERVER_ERROR, which some clients give up on).
async fn read_remote(broker: &Broker, reads: &mut [PartitionRead]) {
    let Some(tiering) = broker.tiering.as_ref() else { return };
    for read in reads.iter_mut() {
        let Some(remote) = read.remote.take() else { continue };
        match tiering.read(broker, &remote.tp, remote.offset, remote.max_bytes).await {
            Ok(Some(records)) => {
                if remote.isolation == Isolation::TxnCommitted {
                    // The aborted transactions among them, from the bucket's `.txnindex`
                    // objects (and the local ones after).
                    let upper = Batches::new(&records)
                        .filter_map(Result::ok)
                        .last()
                        .map_or(remote.offset, |last| last.batch.next_offset());
                    let aborted = tiering
                        .aborted_transactions(broker, &remote.tp, remote.offset, upper)
                        .await;
                    match aborted {
                        Ok(aborted) => {
                            read.data.aborted_transactions = Some(
                                aborted
                                    .into_iter()
                                    .map(|(producer_id, first_offset)| {
                                        AbortedTransaction::default()
                                            .with_producer_id(ProducerId(producer_id))
                                            .with_first_offset(first_offset)
                                    })
                                    .collect(),
                            );
                        }
                        Err(error) => {
                            tracing::warn!(partition = %remote.tp, %error, "remote aborted transactions");
                            read.data.error_code = ResponseError::KafkaStorageError.code();
                            continue;
                        }
                    }
                }
                read.bytes = records.len();
                read.data.records = Some(records);
            }
            Ok(None) => match read_first_local(broker, &remote).await {
                Some(records) => {
                    read.bytes = records.len();
                    read.data.records = Some(records);
                }
                None => read.data.error_code = ResponseError::OffsetOutOfRange.code(),
            },
            Err(error) => {
                tracing::warn!(partition = %remote.tp, offset = remote.offset, %error, "remote fetch failed");
                read.data.error_code = ResponseError::KafkaStorageError.code();
            }
        }
    }
}

/// The fewest record bytes of one partition that are sent from their file rather than read
/// into the response: below it one read into memory costs less than the extra writes of the
/// pieces around a file range.
const SENDFILE_BYTES_MIN: usize = 16 << 10;

/// Fetch with long polling: reads every partition, and while fewer than `min_bytes` came back
/// and no partition failed, waits for an append (or `max_wait_ms`) and reads again. Fetch
/// sessions (KIP-227) are served by `FetchSessionCache`: an incremental fetch reads its
/// session's partitions and answers those with news. On a plaintext listener without quotas, a
/// partition's records of [`SENDFILE_BYTES_MIN`] or more are sent from their file.
///
/// Versions: from v13 (KIP-516) topics are named by id, in the request and the response; an id
/// no topic has is UNKNOWN_TOPIC_ID for each of its partitions. From v16 (KIP-951) a partition
/// answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carries its current leader and epoch,
/// and the response that leader's endpoint. v15 (KIP-903: the replica id moves into
/// `replica_state`), v17 (KIP-853: the follower's directory id) and v18 (KIP-1166: the
/// follower's high watermark) change only what followers send; this broker has none, and
/// serves every fetcher as a consumer.
pub(crate) async fn fetch(
    broker: &Arc<Broker>,
    session: &Session,
    request: FetchRequest,
    version: i16,
) -> Result<Reply, Error> {
    let mut response = FetchResponse::default();
    // KIP-227: a full fetch (opening a session or not), or an incremental one of a session.
    let context = broker.fetch_sessions().begin(&request, version, Instant::now());
    let (session_id, incremental, request) = match context {
        SessionContext::Full { session_id } => (session_id, false, request),
        SessionContext::Incremental { session_id, effective } => (session_id, true, *effective),
        SessionContext::Error(code) => {
            response.error_code = code;
            return encode(&response, version);
        }
    };
    response.session_id = session_id;
    let wait_ms =
        u64::try_from(request.max_wait_ms.max(0)).unwrap_or(0).min(broker.config.fetch_wait_max_ms);
    let deadline = Instant::now() + Duration::from_millis(wait_ms);
    let min_bytes = usize::try_from(request.min_bytes.max(0)).unwrap_or(0);
    // Records go from their files to the socket on a plaintext listener, unless quotas may
    // rewrite the response (Kafka's `PlaintextTransportLayer.transferFrom`).
    let send_files =
        broker.security.tls(session.listener).is_none() && !broker.security.quotas_configured();
    // A follower's fetch (KIP-903 moved its id into `replica_state` at v15) reads to the log
    // end and moves the leader's view of it; it needs CLUSTER_ACTION (Kafka's
    // `handleFetchRequest`).
    let replica_id =
        if version >= 15 { request.replica_state.replica_id.0 } else { request.replica_id.0 };
    let follower = (replica_id >= 0 && broker.cluster().is_some()).then_some(replica_id);
    let follower_refused =
        follower.is_some() && !cluster_allowed(broker, session, AclOperation::ClusterAction);
    let request = Arc::new(request);
    let shared_session = Arc::new(session.clone());
    // Each topic's name (or the error of all its partitions), resolved and authorized once (by
    // the first read) and kept across the long poll.
    let mut names: Option<Arc<Vec<Result<String, i16>>>> = None;
    let reads = loop {
        let appended = broker.appended.notified();
        tokio::pin!(appended);
        appended.as_mut().enable();
        let (broker_for_read, request_for_read) = (Arc::clone(broker), Arc::clone(&request));
        let session_for_read = Arc::clone(&shared_session);
        let known = names.take();
        let (resolved, reads) = blocking(move || {
            let resolved = known.unwrap_or_else(|| {
                let names = fetch_topic_names(
                    &broker_for_read,
                    &session_for_read,
                    &request_for_read,
                    version,
                );
                let names = if follower_refused {
                    let refused = ResponseError::TopicAuthorizationFailed.code();
                    names.into_iter().map(|_| Err(refused)).collect()
                } else {
                    names
                };
                Arc::new(names)
            });
            let reads = read_partitions(
                &broker_for_read,
                (&request_for_read, follower),
                &resolved,
                version,
                send_files,
            );
            (resolved, reads)
        })
        .await?;
        let total: usize = reads.iter().map(|read| read.bytes).sum();
        let failed = reads.iter().any(|read| read.data.error_code != NONE);
        let remote = reads.iter().any(|read| read.remote.is_some());
        let news = follower.is_some_and(|replica_id| {
            high_watermark_news(broker, &request, &resolved, &reads, replica_id)
        });
        names = Some(resolved);
        let now = Instant::now();
        if total >= min_bytes || failed || remote || news || now >= deadline {
            break reads;
        }
        let _ = tokio::time::timeout(deadline - now, appended).await;
    };
    for (idx, topic) in request.topics.iter().enumerate() {
        let mut out = FetchableTopicResponse::default();
        if version >= 13 {
            out.topic_id = topic.topic_id;
        } else {
            out.topic = topic.topic.clone();
        }
        response.responses.push(out);
        debug_assert_eq!(response.responses.len(), idx + 1);
    }
    record_leader_throttled(broker, follower, &reads);
    let mut reads = reads;
    read_remote(broker, &mut reads).await;
    if session_id != 0 {
        let responses: Vec<(usize, &PartitionData)> =
            reads.iter().map(|read| (read.topic_idx, &read.data)).collect();
        let mut sessions = broker.fetch_sessions();
        if incremental {
            let keep = sessions.finish_incremental(session_id, version, &request, &responses);
            drop(sessions);
            let mut keep = keep.into_iter();
            reads.retain(|_| keep.next().unwrap_or(true));
        } else {
            sessions.finish_full(session_id, version, &request, &responses);
        }
    }
    respond(broker, session, response, reads, incremental, version)
}

/// Whether a follower's fetch of `tp` is under the leader's replication throttle, and whether
/// it is over it now (Kafka's `shouldLeaderThrottle`: a follower out of the ISR, of a
/// throttled partition, while the leader's rate is over its bound, gets no records; the
/// offsets are still answered).
fn leader_throttle(broker: &Broker, tp: &TopicPartition, replica_id: i32) -> (bool, bool) {
    let quota = &broker.replication.quotas.leader;
    let throttled = quota.is_throttled(tp);
    let over = throttled
        && !broker.replication.in_isr(tp, replica_id)
        && quota.is_quota_exceeded(now_ms());
    (throttled, over)
}

/// Counts a follower's response toward the leader's replication throttle (Kafka's
/// `sizeOfThrottledPartitions`): what it carries of throttled partitions, in sync or not (the
/// ones over the rate carry nothing).
fn record_leader_throttled(broker: &Broker, follower: Option<i32>, reads: &[PartitionRead]) {
    if follower.is_none() {
        return;
    }
    let throttled: usize =
        reads.iter().filter(|read| read.leader_throttled).map(|read| read.bytes).sum();
    broker.replication.quotas.leader.record(throttled, now_ms());
}

/// Whether a follower's reads carry a high watermark it does not know yet (each partition's
/// is noted as sent).
fn high_watermark_news(
    broker: &Broker,
    request: &FetchRequest,
    names: &[Result<String, i16>],
    reads: &[PartitionRead],
    replica_id: i32,
) -> bool {
    let mut news = false;
    let partitions = request.topics.iter().enumerate().flat_map(|(topic_idx, topic)| {
        topic.partitions.iter().map(move |p| (topic_idx, p.partition))
    });
    for (read, (topic_idx, partition)) in reads.iter().zip(partitions) {
        let Some(Ok(name)) = names.get(topic_idx) else { continue };
        if read.data.error_code == NONE && read.data.high_watermark >= 0 {
            news |= broker.replication.high_watermark_news(
                &tp(name, partition),
                replica_id,
                read.data.high_watermark,
            );
        }
    }
    news
}

/// The response of the reads that answer: each partition under its topic, the endpoint of
/// their leader (this node), records in memory or left in their files.
fn respond(
    broker: &Broker,
    session: &Session,
    mut response: FetchResponse,
    reads: Vec<PartitionRead>,
    incremental: bool,
    version: i16,
) -> Result<Reply, Error> {
    let mut bytes_out = 0;
    let mut files = Vec::new();
    let mut answered = vec![0usize; response.responses.len()];
    for read in &reads {
        if let Some(n) = answered.get_mut(read.topic_idx) {
            *n += 1;
        }
    }
    for (topic, n) in response.responses.iter_mut().zip(answered) {
        topic.partitions.reserve_exact(n);
    }
    for read in reads {
        bytes_out += read.bytes;
        files.extend(read.file);
        if read.data.current_leader.leader_id.0 >= 0 && response.node_endpoints.is_empty() {
            // Every partition's leader is this node: one endpoint covers them all.
            response.node_endpoints.push(
                NodeEndpoint::default()
                    .with_node_id(BrokerId(broker.config.node_id))
                    .with_host(str_bytes(broker.advertised(session).0))
                    .with_port(broker.advertised(session).1),
            );
        }
        if let Some(topic) = response.responses.get_mut(read.topic_idx) {
            topic.partitions.push(read.data);
        }
    }
    if incremental {
        // An incremental response names only the topics with a partition to report.
        response.responses.retain(|topic| !topic.partitions.is_empty());
    }
    ::metrics::counter!("seglog_fetch_bytes_total").increment(bytes_out as u64);
    let file_bytes: usize = files.iter().map(FileSlice::len).sum();
    ::metrics::counter!("seglog_fetch_file_bytes_total").increment(file_bytes as u64);
    if files.is_empty() {
        return encode(&response, version);
    }
    // Partitions are encoded in the order they were read, so the placeholders meet their
    // files in `files`' order.
    FileResponse::encode_fetch(&mut response, version, files).map(Reply::Files)
}

/// The name of each fetched topic: as sent before v13, found by its id from v13 (UNKNOWN_TOPIC_ID
/// for an id no topic has); TOPIC_AUTHORIZATION_FAILED for a topic the session may not READ
/// (Kafka's `handleFetchRequest`).
fn fetch_topic_names(
    broker: &Broker,
    session: &Session,
    request: &FetchRequest,
    version: i16,
) -> Vec<Result<String, i16>> {
    let ids = (version >= 13).then(|| TopicIds::new(broker));
    request
        .topics
        .iter()
        .map(|topic| {
            let name = match &ids {
                None => topic.topic.0.to_string(),
                Some(ids) => ids
                    .name(&topic.topic_id)
                    .map(str::to_owned)
                    .ok_or(ResponseError::UnknownTopicId.code())?,
            };
            if topic_allowed(broker, session, AclOperation::Read, &name) {
                Ok(name)
            } else {
                Err(ResponseError::TopicAuthorizationFailed.code())
            }
        })
        .collect()
}

#[expect(clippy::too_many_lines, reason = "one partition read after another, in request order")]
fn read_partitions(
    broker: &Broker,
    (request, follower): (&FetchRequest, Option<i32>),
    names: &[Result<String, i16>],
    version: i16,
    send_files: bool,
) -> Vec<PartitionRead> {
    let isolation = if follower.is_some() {
        Isolation::LogEnd
    } else if request.isolation_level == 1 {
        Isolation::TxnCommitted
    } else {
        Isolation::HighWatermark
    };
    let mut remaining =
        usize::try_from(request.max_bytes.clamp(0, FETCH_RESPONSE_BYTES_MAX)).unwrap_or(0);
    let mut min_one_message = true;
    // Sized once: a fetch of thousands of partitions would otherwise grow it by reallocation,
    // each step a fresh large block (and page faults) for the allocator.
    let mut reads =
        Vec::with_capacity(request.topics.iter().map(|topic| topic.partitions.len()).sum());
    for (topic_idx, topic) in request.topics.iter().enumerate() {
        let name =
            names.get(topic_idx).cloned().unwrap_or(Err(ResponseError::UnknownTopicId.code()));
        for partition in &topic.partitions {
            let mut data = PartitionData::default();
            data.partition_index = partition.partition;
            data.high_watermark = -1;
            data.last_stable_offset = -1;
            data.log_start_offset = -1;
            data.preferred_read_replica = BrokerId(-1);
            data.aborted_transactions = (request.isolation_level == 1).then(Vec::new);
            data.records = Some(Bytes::new());
            let mut bytes = 0;
            let mut file = None;
            let mut remote = None;
            let (mut leader_throttled, mut over_throttle) = (false, false);
            let name = match &name {
                Ok(name)
                    if !not_led_here(broker, name, partition.partition, version, &mut data) =>
                {
                    name
                }
                Ok(_) => {
                    reads.push(PartitionRead::without_records(topic_idx, data));
                    continue;
                }
                Err(code) => {
                    data.error_code = *code;
                    reads.push(PartitionRead::without_records(topic_idx, data));
                    continue;
                }
            };
            if let Some(replica_id) = follower {
                let fetched = broker.replication.follower_fetched(
                    &tp(name, partition.partition),
                    replica_id,
                    partition.current_leader_epoch,
                    partition.fetch_offset,
                    now_ms(),
                );
                if let Err(code) = fetched {
                    data.error_code = code.code();
                    reads.push(PartitionRead::without_records(topic_idx, data));
                    continue;
                }
                (leader_throttled, over_throttle) =
                    leader_throttle(broker, &tp(name, partition.partition), replica_id);
            }
            match broker.manager.get_log(&tp(name, partition.partition)) {
                Err(error) => data.error_code = storage_error(&error).code(),
                Ok(log) => {
                    let limit = usize::try_from(partition.partition_max_bytes.max(0))
                        .unwrap_or(0)
                        .min(remaining);
                    // The records and the offsets that bounded them, under one lock.
                    let read = read_partition(
                        &log,
                        partition.fetch_offset,
                        u32::try_from(limit).unwrap_or(u32::MAX),
                        isolation,
                        min_one_message,
                        send_files,
                    );
                    let read = match read {
                        Ok(read) => read,
                        Err(error) => {
                            data.error_code = storage_error(&error).code();
                            if follower.is_some() {
                                // A follower out of range restarts at the log start, or
                                // reconciles by epochs when it is ahead.
                                data.log_start_offset = log.log_start_offset().unwrap_or(-1);
                                data.high_watermark = log.high_watermark().unwrap_or(-1);
                            }
                            reads.push(PartitionRead::without_records(topic_idx, data));
                            continue;
                        }
                    };
                    let leader_epoch = read.leader_epoch.unwrap_or(0).max(0);
                    let epoch_check =
                        check_leader_epoch(partition.current_leader_epoch, leader_epoch);
                    set_read_offsets(&mut data, &read, request.isolation_level, version);
                    if epoch_check == NONE {
                        match read.data {
                            // Read and dropped, as Kafka's `checkFetchDataInfo` does.
                            Ok(_) if over_throttle => {}
                            Ok(records) => {
                                bytes = records.len();
                                if bytes > 0 {
                                    min_one_message = false;
                                }
                                remaining = remaining.saturating_sub(bytes);
                                match records {
                                    Records::Memory(records) => data.records = Some(records),
                                    Records::File(slice, placeholder) => {
                                        data.records = Some(placeholder);
                                        file = Some(slice);
                                    }
                                }
                            }
                            Err(seglog_storage::Error::OffsetNotLocal { requested, .. })
                                if broker.tiering.is_some() =>
                            {
                                remote = Some(RemoteFetch {
                                    tp: tp(name, partition.partition),
                                    offset: requested,
                                    max_bytes: limit,
                                    isolation,
                                });
                                min_one_message = false;
                            }
                            Err(error) => data.error_code = storage_error(&error).code(),
                        }
                    } else {
                        // A fenced or unknown epoch gets no records (read under the same lock).
                        data.error_code = epoch_check;
                    }
                    set_current_leader(broker, &mut data, leader_epoch, version);
                }
            }
            reads.push(PartitionRead { topic_idx, data, bytes, file, remote, leader_throttled });
        }
    }
    reads
}

/// A cluster's broker answers a partition it does not lead with NOT_LEADER_OR_FOLLOWER and,
/// from v12, the current leader; returns whether it did.
fn not_led_here(
    broker: &Broker,
    topic: &str,
    partition: i32,
    version: i16,
    data: &mut PartitionData,
) -> bool {
    let Some((code, leader)) = broker.not_led_here(topic, partition) else { return false };
    data.error_code = code;
    if let Some((leader_id, leader_epoch)) = leader.filter(|_| version >= 12) {
        data.current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(leader_id))
            .with_leader_epoch(leader_epoch);
    }
    true
}

/// KIP-951 (v16+): a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH tells the
/// client who leads now, so that it need not ask Metadata.
fn set_current_leader(broker: &Broker, data: &mut PartitionData, leader_epoch: i32, version: i16) {
    let stale_leader = data.error_code == ResponseError::NotLeaderOrFollower.code()
        || data.error_code == ResponseError::FencedLeaderEpoch.code();
    if version >= 16 && stale_leader {
        data.current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(BrokerId(broker.config.node_id))
            .with_leader_epoch(leader_epoch);
    }
}

/// The offsets a partition's read answers with (high watermark, last stable offset, log start
/// from v5) and, for read_committed, the aborted transactions (Kafka's
/// `collectAbortedTransactions`, for the consumer to skip them).
fn set_read_offsets(
    data: &mut PartitionData,
    read: &LogReadInfo<Records>,
    isolation_level: i8,
    version: i16,
) {
    data.high_watermark = read.high_watermark;
    data.last_stable_offset = read.last_stable_offset;
    if isolation_level == 1 {
        data.aborted_transactions =
            Some(aborted_transactions(read.aborted_transactions.as_deref()));
    }
    if version >= 5 {
        data.log_start_offset = read.log_start_offset;
    }
}

/// One partition's records for a Fetch response.
enum Records {
    Memory(Bytes),
    /// Left in their file, with the placeholder that stands for them in the response.
    File(FileSlice, Bytes),
}

impl Records {
    fn len(&self) -> usize {
        match self {
            Self::Memory(bytes) => bytes.len(),
            Self::File(slice, _) => slice.len(),
        }
    }
}

/// Reads one partition: into memory, or, with `send_files`, left in the segment's file when
/// the slice is at least [`SENDFILE_BYTES_MIN`] (a smaller one is read in).
fn read_partition(
    log: &PartitionLog,
    fetch_offset: i64,
    max_bytes: u32,
    isolation: Isolation,
    min_one_message: bool,
    send_files: bool,
) -> seglog_storage::Result<LogReadInfo<Records>> {
    if !send_files {
        let read = log.read_info(fetch_offset, max_bytes, isolation, min_one_message)?;
        return Ok(read.map_data(|fetched| Ok(Records::Memory(Bytes::from(fetched.records)))));
    }
    let read = log.read_info_file_slice(fetch_offset, max_bytes, isolation, min_one_message)?;
    Ok(read.map_data(|fetched| match fetched {
        FetchedRecords::Memory(fetched) => Ok(Records::Memory(Bytes::from(fetched.records))),
        FetchedRecords::File { slice, .. } => match placeholder(slice.len()) {
            Some(placeholder) if slice.len() >= SENDFILE_BYTES_MIN => {
                Ok(Records::File(slice, placeholder))
            }
            _ => slice.read().map(|records| Records::Memory(Bytes::from(records))),
        },
    }))
}

/// The aborted transactions of a read_committed read, as Fetch carries them.
fn aborted_transactions(
    aborted: Option<&[seglog_storage::log::partition_log::AbortedTransaction]>,
) -> Vec<AbortedTransaction> {
    aborted
        .unwrap_or_default()
        .iter()
        .map(|txn| {
            AbortedTransaction::default()
                .with_producer_id(ProducerId(txn.producer_id))
                .with_first_offset(txn.first_offset)
        })
        .collect()
}

/// ListOffsets: -1 is the high watermark (or the last stable offset for read_committed), -2
/// the log start (the remote part's, for a tiered topic), -3 (v7+) the record with the largest
/// timestamp, -4 (v8+, KIP-405's earliest local offset) the first local offset, -5 (v9+, the
/// latest tiered offset) the last offset in the bucket (offset -1 with epoch -1 for a topic
/// without remote storage, as Kafka answers), and a real timestamp the first record at or
/// after it below the high watermark, among the local segments. A
/// special timestamp older than the request's version, or unknown, is UNSUPPORTED_VERSION
/// (Kafka's `ReplicaManager.isListOffsetsTimestampUnsupported`). v10's `timeout_ms` bounds
/// reads from remote storage, which seglog has not: it is not needed.
pub(crate) async fn list_offsets(
    broker: &Arc<Broker>,
    session: &Session,
    request: ListOffsetsRequest,
    version: i16,
) -> Result<Reply, Error> {
    let by_timestamp: Vec<(usize, usize, String, i32, i64)> = request
        .topics
        .iter()
        .enumerate()
        .flat_map(|(topic_idx, topic)| {
            topic.partitions.iter().enumerate().filter(|(_, p)| p.timestamp >= 0).map(
                move |(idx, p)| {
                    (topic_idx, idx, topic.name.0.to_string(), p.partition_index, p.timestamp)
                },
            )
        })
        .collect();
    let for_blocking = Arc::clone(broker);
    let session = session.clone();
    let mut response = blocking(move || {
        let broker = for_blocking;
        let mut response = ListOffsetsResponse::default();
        for topic in &request.topics {
            let name = topic.name.0.to_string();
            let mut out = ListOffsetsTopicResponse::default();
            out.name = topic.name.clone();
            // Kafka's `handleListOffsetRequest`: DESCRIBE on the topic.
            let allowed = topic_allowed(&broker, &session, AclOperation::Describe, &name);
            for partition in &topic.partitions {
                if !allowed {
                    out.partitions.push(
                        ListOffsetsPartitionResponse::default()
                            .with_partition_index(partition.partition_index)
                            .with_error_code(ResponseError::TopicAuthorizationFailed.code())
                            .with_timestamp(-1)
                            .with_offset(-1)
                            .with_leader_epoch(-1),
                    );
                    continue;
                }
                out.partitions.push(list_offset(
                    &broker,
                    &name,
                    partition.partition_index,
                    partition.current_leader_epoch,
                    partition.timestamp,
                    request.isolation_level == 1,
                    version,
                ));
            }
            response.topics.push(out);
        }
        response
    })
    .await?;
    for (topic_idx, idx, topic, partition, timestamp) in by_timestamp {
        let Some(out) = response.topics.get_mut(topic_idx).and_then(|t| t.partitions.get_mut(idx))
        else {
            continue;
        };
        if out.error_code == NONE {
            remote_offset_for_timestamp(broker, &tp(&topic, partition), timestamp, out, version)
                .await;
        }
    }
    encode(&response, version)
}

/// How long ListOffsets waits for a lookup by timestamp in the bucket (Kafka's
/// `remote.list.offsets.request.timeout.ms` default).
const REMOTE_LIST_OFFSETS_TIMEOUT: Duration = Duration::from_secs(30);

/// ListOffsets by timestamp on a tiered partition: the bucket answers when the first record
/// at or after the timestamp is below the local segments (Kafka's
/// `RemoteLogManager.findOffsetByTimestamp`); otherwise the local answer stands.
async fn remote_offset_for_timestamp(
    broker: &Broker,
    tp: &TopicPartition,
    timestamp: i64,
    out: &mut ListOffsetsPartitionResponse,
    version: i16,
) {
    let Some(tiering) = &broker.tiering else { return };
    let Ok(log) = broker.manager.get_log(tp) else { return };
    let starts = tokio::task::spawn_blocking(move || {
        let tiered = log.config().is_ok_and(|config| config.remote_storage_enable);
        Some((tiered, log.log_start_offset().ok()?, log.local_log_start_offset().ok()?))
    })
    .await;
    let Ok(Some((true, log_start, local_start))) = starts else { return };
    if local_start <= log_start {
        return;
    }
    let lookup = tiering.offset_for_timestamp(broker, tp, timestamp, log_start);
    match tokio::time::timeout(REMOTE_LIST_OFFSETS_TIMEOUT, lookup).await {
        Ok(Ok(Some(found))) if found.offset < local_start => {
            out.offset = found.offset;
            out.timestamp = found.timestamp;
            if version >= 4 {
                out.leader_epoch = found.leader_epoch.unwrap_or(-1);
            }
        }
        Ok(Ok(_)) => {}
        Ok(Err(error)) => {
            tracing::warn!(partition = %tp, timestamp, %error, "remote lookup by timestamp failed");
            out.error_code = ResponseError::KafkaStorageError.code();
        }
        Err(_) => out.error_code = ResponseError::RequestTimedOut.code(),
    }
}

/// The first ListOffsets version that knows a special (negative) timestamp.
fn special_timestamp_version(timestamp: i64) -> Option<i16> {
    match timestamp {
        -1 | -2 => Some(1),
        -3 => Some(7),
        EARLIEST_LOCAL_TIMESTAMP => Some(8),
        LATEST_TIERED_TIMESTAMP => Some(9),
        _ => None,
    }
}

fn list_offset(
    broker: &Broker,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
    timestamp: i64,
    read_committed: bool,
    version: i16,
) -> ListOffsetsPartitionResponse {
    let mut out = ListOffsetsPartitionResponse::default();
    out.partition_index = partition;
    out.timestamp = -1;
    out.offset = -1;
    out.leader_epoch = -1;
    if timestamp < 0 && special_timestamp_version(timestamp).is_none_or(|since| version < since) {
        out.error_code = ResponseError::UnsupportedVersion.code();
        return out;
    }
    if let Some((code, _)) = broker.not_led_here(topic, partition) {
        out.error_code = code;
        return out;
    }
    let log = match broker.manager.get_log(&tp(topic, partition)) {
        Ok(log) => log,
        Err(error) => {
            out.error_code = storage_error(&error).code();
            return out;
        }
    };
    out.error_code = check_leader_epoch(current_leader_epoch, Broker::leader_epoch(&log));
    if out.error_code != NONE {
        return out;
    }
    // The last fetchable offset: the high watermark, or for read_committed (v2+) the last
    // stable offset (Kafka's `fetchOffsetForTimestamp` with its isolation level).
    let bound = if read_committed && version >= 2 {
        log.last_stable_offset()
    } else {
        log.high_watermark()
    };
    let high_watermark = match bound {
        Ok(high_watermark) => high_watermark,
        Err(error) => {
            out.error_code = storage_error(&error).code();
            return out;
        }
    };
    let target = timestamp;
    match log.fetch_offset_by_timestamp(target) {
        Ok(Some(found)) => {
            let offset = if target == -1 { high_watermark } else { found.offset };
            let special = [-2, EARLIEST_LOCAL_TIMESTAMP, LATEST_TIERED_TIMESTAMP].contains(&target);
            if target == -1 || special || offset < high_watermark {
                out.offset = offset;
                out.timestamp = found.timestamp;
                if version >= 4 {
                    out.leader_epoch = found.leader_epoch.unwrap_or(-1);
                }
            }
        }
        Ok(None) => {}
        Err(error) => out.error_code = storage_error(&error).code(),
    }
    out
}

/// OffsetForLeaderEpoch, from the leader-epoch cache (Kafka's `LeaderEpochFileCache.endOffsetFor`):
/// the latest epoch ends at the log end; an older epoch ends where the next one starts; an
/// epoch above the latest, or any epoch of an empty cache, is undefined (-1, -1).
pub(crate) async fn offset_for_leader_epoch(
    broker: &Arc<Broker>,
    session: &Session,
    request: OffsetForLeaderEpochRequest,
    version: i16,
) -> Result<Reply, Error> {
    let broker = Arc::clone(broker);
    let session = session.clone();
    let response = blocking(move || {
        let mut response = OffsetForLeaderEpochResponse::default();
        // Kafka's `handleOffsetForLeaderEpochRequest`: CLUSTER_ACTION on the cluster (a
        // follower) covers every topic; a client needs DESCRIBE on each.
        let cluster_action = cluster_allowed(&broker, &session, AclOperation::ClusterAction);
        for topic in &request.topics {
            let name = topic.topic.0.to_string();
            let mut out = OffsetForLeaderTopicResult::default();
            out.topic = topic.topic.clone();
            let allowed =
                cluster_action || topic_allowed(&broker, &session, AclOperation::Describe, &name);
            for partition in &topic.partitions {
                let mut end = EpochEndOffset::default();
                end.partition = partition.partition;
                end.leader_epoch = -1;
                end.end_offset = -1;
                if !allowed {
                    end.error_code = ResponseError::TopicAuthorizationFailed.code();
                    out.partitions.push(end);
                    continue;
                }
                if let Some((code, _)) = broker.not_led_here(&name, partition.partition) {
                    end.error_code = code;
                    out.partitions.push(end);
                    continue;
                }
                match broker.manager.get_log(&tp(&name, partition.partition)) {
                    Err(error) => end.error_code = storage_error(&error).code(),
                    Ok(log) => {
                        end.error_code = check_leader_epoch(
                            partition.current_leader_epoch,
                            Broker::leader_epoch(&log),
                        );
                        if end.error_code == NONE {
                            match log.end_offset_for_epoch(partition.leader_epoch) {
                                Ok((epoch, offset)) => {
                                    end.leader_epoch = epoch;
                                    end.end_offset = offset;
                                }
                                Err(error) => end.error_code = storage_error(&error).code(),
                            }
                        }
                    }
                }
                out.partitions.push(end);
            }
            response.topics.push(out);
        }
        response
    })
    .await?;
    encode(&response, version)
}
