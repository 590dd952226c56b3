//! Followers' fetchers (Kafka's `ReplicaFetcherManager` and `ReplicaFetcherThread`): for each
//! leader, `num.replica.fetchers` tasks, each with its own connection on the inter-broker
//! listener, fetching the partitions it follows from there.
//!
//! A partition joins a fetcher truncating (Kafka's KIP-101/279 path): the fetcher asks the
//! leader OffsetForLeaderEpoch for this log's latest epoch and truncates to the answer, epoch by
//! epoch until the log agrees with the leader's. Then it fetches from its log end with its
//! replica id (Fetch v12, `replica_id`), appends what comes through `PartitionLog`'s follower
//! path (offsets and epochs kept), makes it durable as the topic's durability mode says before
//! the next fetch reports the new end, and takes the leader's high watermark and log start.
//! Every append and truncation runs under the partition's role lock as the follower of that
//! leader and epoch; a role change ends it.
//!
//! A partition under the follower replication throttle (`quota.rs`) that is not caught up is
//! left out of a fetch while `follower.replication.throttled.rate` is exceeded (Kafka's
//! `RemoteLeaderEndPoint.buildFetch`); when every partition is left out, the fetcher waits
//! `replica.fetch.backoff.ms`.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use seglog_storage::config::DurabilityMode;
use seglog_storage::log::partition_log::{PartitionLog, TopicPartition};

use crate::Broker;
use crate::wire::Client;

/// The Fetch version followers send: topics by name, `replica_id` in the request.
const FETCH_VERSION: i16 = 12;
/// The OffsetForLeaderEpoch version followers send (`replica_id`, KIP-320).
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
/// How long one fetcher call may take beyond the fetch's own wait.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One partition as its fetcher follows it.
#[derive(Debug, Clone, Copy)]
struct FetchState {
    leader_epoch: i32,
    /// The log must be reconciled with the leader's by OffsetForLeaderEpoch first.
    truncating: bool,
    /// Not fetched before this (after an error).
    delayed_until: Option<Instant>,
    /// How far behind the leader's high watermark the last append left this log (Kafka's
    /// `PartitionFetchState.lag`); unknown until the first fetch of this leadership.
    lag: Option<i64>,
}

impl FetchState {
    /// Kafka's `isReplicaInSync`: caught up with the leader's high watermark.
    fn in_sync(&self) -> bool {
        self.lag.is_some_and(|lag| lag <= 0)
    }
}

/// One fetcher: its partitions and its wake-up.
#[derive(Debug, Default)]
struct Fetcher {
    partitions: Mutex<BTreeMap<TopicPartition, FetchState>>,
    changed: tokio::sync::Notify,
}

/// Every fetcher of this broker, by (leader, index).
#[derive(Debug, Default)]
pub(crate) struct Fetchers {
    by_leader: Mutex<HashMap<(i32, u32), Arc<Fetcher>>>,
}

impl Fetchers {
    /// Follows `tp` from `leader_id` at `leader_epoch`, truncating first; stops any other
    /// fetcher's following of it. Starts the fetcher if it is new.
    pub(crate) fn follow(
        &self,
        broker: &Arc<Broker>,
        tp: &TopicPartition,
        leader_id: i32,
        leader_epoch: i32,
    ) {
        self.unfollow(tp);
        let n = broker.replication.config().num_fetchers.max(1);
        let index = (seglog_format::java::string_hash(&tp.topic).unsigned_abs() % n)
            .wrapping_add(tp.partition.unsigned_abs() % n)
            % n;
        let key = (leader_id, index);
        let mut by_leader = self.by_leader.lock().unwrap_or_else(PoisonError::into_inner);
        let fetcher = by_leader.entry(key).or_insert_with(|| {
            let fetcher = Arc::new(Fetcher::default());
            let task = run(Arc::downgrade(broker), leader_id, Arc::clone(&fetcher));
            tokio::runtime::Handle::current().spawn(task);
            fetcher
        });
        fetcher.partitions.lock().unwrap_or_else(PoisonError::into_inner).insert(
            tp.clone(),
            FetchState { leader_epoch, truncating: true, delayed_until: None, lag: None },
        );
        fetcher.changed.notify_one();
    }

    /// Stops following `tp`.
    pub(crate) fn unfollow(&self, tp: &TopicPartition) {
        let by_leader = self.by_leader.lock().unwrap_or_else(PoisonError::into_inner);
        for fetcher in by_leader.values() {
            fetcher.partitions.lock().unwrap_or_else(PoisonError::into_inner).remove(tp);
        }
    }
}

/// Why a round of a fetcher failed as a whole (its connection is dropped).
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("the broker is stopping")]
    Stopped,
    #[error(transparent)]
    Peer(#[from] crate::cluster::peers::PeerError),
    #[error(transparent)]
    Wire(#[from] crate::wire::WireError),
    #[error("no answer within {CALL_TIMEOUT:?}")]
    Timeout,
    #[error("a blocking task failed: {0}")]
    Task(String),
}

/// A fetcher's loop, for as long as the broker runs.
async fn run(broker: Weak<Broker>, leader_id: i32, fetcher: Arc<Fetcher>) {
    let mut client: Option<Client> = None;
    let mut failures = 0u32;
    loop {
        let wait = {
            let partitions = fetcher.partitions.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            if partitions.is_empty() {
                Some(Duration::from_secs(1))
            } else {
                // Sleep until the first delayed partition is due when all are delayed.
                partitions
                    .values()
                    .map(|s| {
                        s.delayed_until
                            .map_or(Duration::ZERO, |at| at.saturating_duration_since(now))
                    })
                    .min()
                    .filter(|d| !d.is_zero())
            }
        };
        if let Some(wait) = wait {
            let changed = fetcher.changed.notified();
            let _ = tokio::time::timeout(wait, changed).await;
            if broker.strong_count() == 0 {
                return;
            }
            continue;
        }
        match round(&broker, leader_id, &fetcher, &mut client).await {
            Ok(true) => failures = 0,
            Ok(false) => {
                // Nothing could be fetched (every partition throttled, or none followed any
                // more at its epoch): Kafka's `maybeFetch` waits the backoff.
                failures = 0;
                let backoff =
                    broker.upgrade().map_or(1000, |b| b.replication.config().fetch_backoff_ms);
                let changed = fetcher.changed.notified();
                let _ = tokio::time::timeout(Duration::from_millis(backoff), changed).await;
            }
            Err(RoundError::Stopped) => return,
            Err(error) => {
                client = None;
                failures += 1;
                let backoff =
                    broker.upgrade().map_or(1000, |b| b.replication.config().fetch_backoff_ms);
                if failures == 1 || failures.is_multiple_of(30) {
                    tracing::warn!(leader = leader_id, %error, failures, "replica fetcher failed");
                }
                let changed = fetcher.changed.notified();
                let _ = tokio::time::timeout(Duration::from_millis(backoff), changed).await;
            }
        }
    }
}

/// One round: truncations first, then one Fetch. `Ok(false)`: nothing was asked of the
/// leader.
async fn round(
    broker: &Weak<Broker>,
    leader_id: i32,
    fetcher: &Fetcher,
    client: &mut Option<Client>,
) -> Result<bool, RoundError> {
    let strong = broker.upgrade().ok_or(RoundError::Stopped)?;
    let Some(link) = strong.cluster().cloned() else { return Err(RoundError::Stopped) };
    if client.is_none() {
        *client = Some(link.connect_broker(leader_id).await?);
    }
    let Some(connection) = client.as_mut() else { return Err(RoundError::Stopped) };
    let now = Instant::now();
    let due: Vec<(TopicPartition, FetchState)> = fetcher
        .partitions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter(|(_, s)| s.delayed_until.is_none_or(|at| at <= now))
        .map(|(tp, s)| (tp.clone(), *s))
        .collect();
    let truncating: Vec<(TopicPartition, i32)> = due
        .iter()
        .filter(|(_, s)| s.truncating)
        .map(|(tp, s)| (tp.clone(), s.leader_epoch))
        .collect();
    if !truncating.is_empty() {
        truncate(&strong, leader_id, fetcher, connection, &truncating).await?;
        return Ok(true);
    }
    let quota = &strong.replication.quotas.follower;
    let now_ms = crate::handlers::now_ms();
    let fetching: Vec<(TopicPartition, i32)> = due
        .iter()
        .filter(|(tp, s)| {
            s.in_sync() || !quota.is_throttled(tp) || !quota.is_quota_exceeded(now_ms)
        })
        .map(|(tp, s)| (tp.clone(), s.leader_epoch))
        .collect();
    fetch(&strong, leader_id, fetcher, connection, &fetching).await
}

/// Marks `tp` in `fetcher` (if it is still followed at `leader_epoch`).
fn mark(
    fetcher: &Fetcher,
    tp: &TopicPartition,
    leader_epoch: i32,
    change: impl FnOnce(&mut FetchState),
) {
    let mut partitions = fetcher.partitions.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(state) = partitions.get_mut(tp).filter(|s| s.leader_epoch == leader_epoch) {
        change(state);
    }
}

fn delay(broker: &Broker) -> Instant {
    Instant::now() + Duration::from_millis(broker.replication.config().fetch_backoff_ms)
}

/// OffsetForLeaderEpoch for each truncating partition, and the truncation its answer asks for
/// (Kafka's `AbstractFetcherThread.getOffsetTruncationState`).
async fn truncate(
    broker: &Arc<Broker>,
    leader_id: i32,
    fetcher: &Fetcher,
    client: &mut Client,
    partitions: &[(TopicPartition, i32)],
) -> Result<(), RoundError> {
    let replication = &broker.replication;
    // This log's latest epoch, asked of the leader.
    let mut asked: BTreeMap<String, Vec<(i32, i32, i32)>> = BTreeMap::new();
    for (tp, leader_epoch) in partitions {
        let latest = replication
            .as_follower(tp, (leader_id, *leader_epoch), PartitionLog::latest_leader_epoch)
            .and_then(Result::ok);
        match latest {
            Some(Some(epoch)) => {
                asked.entry(tp.topic.clone()).or_default().push((
                    tp.partition,
                    *leader_epoch,
                    epoch,
                ));
            }
            // An empty epoch cache: nothing of an epoch to reconcile (a new replica, or an empty
            // log); fetch from the log end.
            Some(None) => mark(fetcher, tp, *leader_epoch, |s| s.truncating = false),
            None => {}
        }
    }
    if asked.is_empty() {
        return Ok(());
    }
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(replication.broker_id()))
        .with_topics(
            asked
                .iter()
                .map(|(topic, parts)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic.clone())))
                        .with_partitions(
                            parts
                                .iter()
                                .map(|(partition, current, epoch)| {
                                    OffsetForLeaderPartition::default()
                                        .with_partition(*partition)
                                        .with_current_leader_epoch(*current)
                                        .with_leader_epoch(*epoch)
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let call = client.send(&request, OFFSET_FOR_LEADER_EPOCH_VERSION);
    let response =
        tokio::time::timeout(CALL_TIMEOUT, call).await.map_err(|_| RoundError::Timeout)??;
    let mut answers = Vec::new();
    for topic in response.topics {
        for p in topic.partitions {
            let tp = TopicPartition { topic: topic.topic.0.to_string(), partition: p.partition };
            let Some((_, current)) = partitions.iter().find(|(t, _)| *t == tp) else { continue };
            answers.push((tp, *current, p.error_code, p.leader_epoch, p.end_offset));
        }
    }
    let broker_for_work = Arc::clone(broker);
    let outcomes = tokio::task::spawn_blocking(move || {
        answers
            .into_iter()
            .map(|(tp, current, code, epoch, end_offset)| {
                let outcome = if code == 0 {
                    broker_for_work.replication.as_follower(&tp, (leader_id, current), |log| {
                        truncate_to_answer(log, &tp, epoch, end_offset)
                    })
                } else {
                    tracing::debug!(partition = %tp, leader = leader_id, code, "OffsetForLeaderEpoch refused");
                    Some(Err(code))
                };
                (tp, current, outcome)
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|error| RoundError::Task(error.to_string()))?;
    for (tp, current, outcome) in outcomes {
        match outcome {
            Some(Ok(true)) => mark(fetcher, &tp, current, |s| s.truncating = false),
            Some(Err(_)) => mark(fetcher, &tp, current, |s| s.delayed_until = Some(delay(broker))),
            // One more epoch to reconcile, or no longer followed.
            Some(Ok(false)) | None => {}
        }
    }
    Ok(())
}

/// Truncates `log` by the leader's answer for its latest epoch: `Ok(true)` when it now agrees
/// with the leader, `Ok(false)` when an earlier epoch must be asked about too, `Err(code)` on
/// a storage failure.
fn truncate_to_answer(
    log: &PartitionLog,
    tp: &TopicPartition,
    leader_epoch: i32,
    leader_end_offset: i64,
) -> Result<bool, i16> {
    let storage = |error: seglog_storage::Error| {
        tracing::error!(partition = %tp, %error, "follower truncation failed");
        ResponseError::KafkaStorageError.code()
    };
    let log_end = log.log_end_offset().map_err(storage)?;
    let (target, complete) = if leader_end_offset < 0 {
        // The leader knows no such epoch or offset: keep what the high watermark vouches for.
        (log.high_watermark().map_err(storage)?, true)
    } else if leader_epoch < 0 {
        (leader_end_offset.min(log_end), true)
    } else {
        let (epoch, end) = log.end_offset_for_epoch(leader_epoch).map_err(storage)?;
        if epoch == leader_epoch {
            (leader_end_offset.min(end), true)
        } else if epoch >= 0 {
            // This log never had the leader's epoch: cut to where its own earlier one ends and ask
            // again.
            (end.min(log_end), false)
        } else {
            (leader_end_offset.min(log_end), true)
        }
    };
    if target < log_end {
        let high_watermark = log.high_watermark().map_err(storage)?;
        if target < high_watermark {
            tracing::error!(
                partition = %tp,
                target,
                high_watermark,
                "truncating below the high watermark: the leader does not have records this replica saw committed (an unclean election?)"
            );
        } else {
            tracing::info!(partition = %tp, from = log_end, to = target, leader_epoch, "follower truncating to the leader's log");
        }
        log.truncate_to(target, crate::handlers::now_ms()).map_err(storage)?;
    }
    Ok(complete)
}

/// One Fetch of `partitions` from the leader, and its records appended.
async fn fetch(
    broker: &Arc<Broker>,
    leader_id: i32,
    fetcher: &Fetcher,
    client: &mut Client,
    partitions: &[(TopicPartition, i32)],
) -> Result<bool, RoundError> {
    let replication = &broker.replication;
    let config = replication.config().clone();
    let mut by_topic: BTreeMap<String, Vec<FetchPartition>> = BTreeMap::new();
    for (tp, leader_epoch) in partitions {
        let offsets = replication.as_follower(tp, (leader_id, *leader_epoch), |log| {
            Ok::<_, seglog_storage::Error>((log.log_end_offset()?, log.log_start_offset()?))
        });
        let Some(Ok((log_end, log_start))) = offsets else { continue };
        by_topic.entry(tp.topic.clone()).or_default().push(
            FetchPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(*leader_epoch)
                .with_fetch_offset(log_end)
                .with_last_fetched_epoch(-1)
                .with_log_start_offset(log_start)
                .with_partition_max_bytes(config.fetch_max_bytes),
        );
    }
    if by_topic.is_empty() {
        return Ok(false);
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(replication.broker_id()))
        .with_max_wait_ms(config.fetch_wait_max_ms)
        .with_min_bytes(config.fetch_min_bytes)
        .with_max_bytes(config.fetch_response_max_bytes)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, parts)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(parts)
                })
                .collect(),
        );
    let call = client.send(&request, FETCH_VERSION);
    let wait = Duration::from_millis(u64::try_from(config.fetch_wait_max_ms).unwrap_or(0));
    let response: FetchResponse = tokio::time::timeout(CALL_TIMEOUT + wait, call)
        .await
        .map_err(|_| RoundError::Timeout)??;
    if response.error_code != 0 {
        return Err(RoundError::Wire(crate::wire::WireError::Decode(format!(
            "the leader refused the fetch with error {}",
            response.error_code
        ))));
    }
    let mut received = Vec::new();
    for topic in response.responses {
        for p in topic.partitions {
            let tp =
                TopicPartition { topic: topic.topic.0.to_string(), partition: p.partition_index };
            let Some((_, epoch)) = partitions.iter().find(|(t, _)| *t == tp) else { continue };
            received.push(Received {
                tp,
                leader_epoch: *epoch,
                error_code: p.error_code,
                high_watermark: p.high_watermark,
                log_start_offset: p.log_start_offset,
                records: p.records.unwrap_or_default(),
            });
        }
    }
    let broker_for_work = Arc::clone(broker);
    let outcomes = tokio::task::spawn_blocking(move || {
        received
            .into_iter()
            .map(|r| {
                let outcome = process(&broker_for_work, leader_id, &r);
                (r.tp, r.leader_epoch, outcome)
            })
            .collect::<Vec<_>>()
    })
    .await
    .map_err(|error| RoundError::Task(error.to_string()))?;
    for (tp, epoch, outcome) in outcomes {
        match outcome {
            // Kafka takes the lag after an append of records, or when none is known yet.
            Outcome::Appended { lag, appended } => mark(fetcher, &tp, epoch, |s| {
                if appended || s.lag.is_none() {
                    s.lag = Some(lag);
                }
            }),
            Outcome::Gone => {}
            Outcome::Truncate => mark(fetcher, &tp, epoch, |s| s.truncating = true),
            Outcome::Delay => mark(fetcher, &tp, epoch, |s| s.delayed_until = Some(delay(broker))),
        }
    }
    Ok(true)
}

/// One partition of a Fetch response.
struct Received {
    tp: TopicPartition,
    leader_epoch: i32,
    error_code: i16,
    high_watermark: i64,
    log_start_offset: i64,
    records: Bytes,
}

enum Outcome {
    /// Taken: `lag` records below the leader's high watermark after it, `appended` when there
    /// were records.
    Appended { lag: i64, appended: bool },
    /// No longer followed at that epoch.
    Gone,
    /// Reconcile with the leader again.
    Truncate,
    /// Try again after the backoff.
    Delay,
}

/// Appends one partition's records as the follower (Kafka's `processPartitionData`), makes
/// them durable as the topic's mode says, and takes the leader's high watermark and log start.
fn process(broker: &Broker, leader_id: i32, r: &Received) -> Outcome {
    let code = r.error_code;
    if code == ResponseError::OffsetOutOfRange.code() {
        // Below the leader's log start (its retention passed this log): start again there.
        // Above its end: reconcile by epochs.
        let done = broker.replication.as_follower(&r.tp, (leader_id, r.leader_epoch), |log| {
            let log_end = log.log_end_offset().ok()?;
            if r.log_start_offset > log_end {
                tracing::info!(partition = %r.tp, log_end, leader_log_start = r.log_start_offset, "follower behind the leader's log start: starting there");
                log.truncate_fully_and_start_at(r.log_start_offset, crate::handlers::now_ms()).ok()
            } else {
                None
            }
        });
        return match done {
            None => Outcome::Gone,
            Some(Some(())) => Outcome::Appended { lag: 0, appended: false },
            Some(None) => Outcome::Truncate,
        };
    }
    if code != 0 {
        tracing::debug!(partition = %r.tp, leader = leader_id, code, "the leader refused a follower's fetch");
        return Outcome::Delay;
    }
    let now_ms = crate::handlers::now_ms();
    let quota = &broker.replication.quotas.follower;
    if quota.is_throttled(&r.tp) {
        quota.record(r.records.len(), now_ms);
    }
    let done = broker.replication.as_follower(&r.tp, (leader_id, r.leader_epoch), |log| {
        if !r.records.is_empty() {
            log.append_as_follower(&r.records, now_ms)?;
            if log.durability()? != DurabilityMode::PageCache {
                // The next fetch reports this log end to the leader as in sync: durable first.
                log.flush(now_ms)?;
            }
        }
        log.follow_leader_offsets(r.high_watermark, r.log_start_offset)?;
        log.log_end_offset()
    });
    match done {
        None => Outcome::Gone,
        Some(Ok(log_end)) => Outcome::Appended {
            lag: (r.high_watermark - log_end).max(0),
            appended: !r.records.is_empty(),
        },
        Some(Err(seglog_storage::Error::Validation(error))) => {
            tracing::warn!(partition = %r.tp, leader = leader_id, %error, "records from the leader do not follow this log: reconciling");
            Outcome::Truncate
        }
        Some(Err(error)) => {
            tracing::error!(partition = %r.tp, %error, "follower append failed");
            Outcome::Delay
        }
    }
}
