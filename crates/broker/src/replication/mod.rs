//! `Replication`: a cluster's broker's partitions as replicas (Kafka's `Partition` objects in
//! `ReplicaManager.allPartitions`, with the ISR bookkeeping of `Partition` and
//! `AlterPartitionManager`). docs/replication.md describes the protocol.
//!
//! - **Roles.** The metadata applier makes each partition placed here a leader or a follower at
//!   the image's leader epoch ([`Replication::make_leader`], [`Replication::make_follower`]).
//!   A role changes under the partition's write lock, and every append (a client's, a
//!   coordinator's, a fetcher's) holds its read lock and checks the role it appends as, so no
//!   append of an old role lands after a new one began.
//! - **The leader** appends without moving the high watermark, notes each follower's fetch
//!   offset and time, and raises the high watermark to the minimum log end offset of the
//!   in-sync replicas (Kafka's `maximalIsr`: the ISR and an expansion in flight). A follower
//!   that reached the high watermark joins the ISR, one that was not caught up for
//!   `replica.lag.time.max.ms` leaves it, each through the controller's AlterPartition.
//! - **acks=all** waits until the high watermark passes the append, and answers
//!   NOT_ENOUGH_REPLICAS before an append when the ISR is below `min.insync.replicas`,
//!   NOT_ENOUGH_REPLICAS_AFTER_APPEND when it shrank below it meanwhile.
//! - **Followers** fetch from their leaders (`fetcher.rs`).
//!
//! A single node (no `process.roles`) has no replication: every partition is led alone
//! (`ReplicaManager`'s sole-leader path).

pub(crate) mod fetcher;
pub(crate) mod quota;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;
use seglog_storage::log::partition_log::{AppendInfo, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;

/// The replication keys of `server.properties` (Kafka's `ReplicationConfigs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `replica.lag.time.max.ms` (30000): a follower not caught up for this long leaves the ISR.
    pub lag_time_max_ms: i64,
    /// `num.replica.fetchers` (1): fetchers per source broker.
    pub num_fetchers: u32,
    /// `replica.fetch.wait.max.ms` (500): a follower's Fetch `max_wait_ms`.
    pub fetch_wait_max_ms: i32,
    /// `replica.fetch.min.bytes` (1).
    pub fetch_min_bytes: i32,
    /// `replica.fetch.backoff.ms` (1000): the pause after a failed fetch.
    pub fetch_backoff_ms: u64,
    /// `replica.fetch.max.bytes` (1048576): per partition.
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes` (10485760): per response.
    pub fetch_response_max_bytes: i32,
    /// `default.replication.factor` (1): a CreateTopics or auto-creation that names none.
    pub default_replication_factor: i16,
    /// `offsets.topic.replication.factor` (3): `__consumer_offsets`' replicas; its creation
    /// fails (COORDINATOR_NOT_AVAILABLE) until the cluster has that many brokers, as Kafka's.
    pub offsets_topic_replication_factor: i16,
    /// `transaction.state.log.replication.factor` (3): `__transaction_state`'s replicas.
    pub transaction_state_log_replication_factor: i16,
    /// `transaction.state.log.min.isr` (2): `__transaction_state`'s `min.insync.replicas`.
    pub transaction_state_log_min_isr: u32,
    /// `replication.quota.window.num` (11): the samples of the replication throttles' rates.
    pub quota_window_num: u32,
    /// `replication.quota.window.size.seconds` (1): each sample's span.
    pub quota_window_size_seconds: u32,
}

impl Default for ReplicationConfig {
    fn default() -> Self {
        Self {
            lag_time_max_ms: 30_000,
            num_fetchers: 1,
            fetch_wait_max_ms: 500,
            fetch_min_bytes: 1,
            fetch_backoff_ms: 1000,
            fetch_max_bytes: 1_048_576,
            fetch_response_max_bytes: 10_485_760,
            default_replication_factor: 1,
            offsets_topic_replication_factor: 3,
            transaction_state_log_replication_factor: 3,
            transaction_state_log_min_isr: 2,
            quota_window_num: 11,
            quota_window_size_seconds: 1,
        }
    }
}

/// What the image says of a partition this broker leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaderAndIsr {
    pub(crate) topic_id: [u8; 16],
    pub(crate) leader_epoch: i32,
    pub(crate) partition_epoch: i32,
    pub(crate) replicas: Vec<i32>,
    pub(crate) isr: Vec<i32>,
}

/// A follower as its leader sees it (Kafka's `Replica` state).
#[derive(Debug, Clone, Copy)]
struct FollowerState {
    /// Its log end offset: the offset of its last fetch, -1 before one.
    log_end_offset: i64,
    /// When it was last caught up with the leader's log end (Kafka's `lastCaughtUpTimeMs`).
    last_caught_up_ms: i64,
    /// When it last fetched, and the leader's log end then.
    last_fetch_ms: i64,
    last_fetch_leader_log_end: i64,
    /// The high watermark last sent to it.
    high_watermark_sent: i64,
}

/// A leader's view of its partition.
#[derive(Debug)]
struct Leadership {
    state: LeaderAndIsr,
    /// The log end when this epoch began: a follower joins the ISR only past it.
    epoch_start_offset: i64,
    followers: Mutex<Followers>,
}

#[derive(Debug, Default)]
struct Followers {
    by_id: BTreeMap<i32, FollowerState>,
    /// The ISR asked of the controller and not yet in the image (Kafka's
    /// `PendingPartitionChange`): at most one at a time.
    pending_isr: Option<Vec<i32>>,
}

/// A partition's role on this broker.
#[derive(Debug)]
enum Role {
    /// Not made yet, or no longer a replica here.
    None,
    Leader(Leadership),
    Follower {
        leader_id: i32,
        leader_epoch: i32,
    },
}

/// One partition replicated here (Kafka's `Partition`).
#[derive(Debug)]
pub(crate) struct Partition {
    tp: TopicPartition,
    log: Arc<PartitionLog>,
    role: RwLock<Role>,
    /// The high watermark as last published, and its waiters (acks=all).
    high_watermark: Mutex<i64>,
    moved: Condvar,
}

/// An ISR change to ask the controller for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IsrChange {
    pub(crate) tp: TopicPartition,
    pub(crate) topic_id: [u8; 16],
    pub(crate) leader_epoch: i32,
    pub(crate) partition_epoch: i32,
    pub(crate) new_isr: Vec<i32>,
}

/// Why an append or a wait was refused: Kafka's code.
pub(crate) type Refused = ResponseError;

impl Partition {
    fn new(tp: TopicPartition, log: Arc<PartitionLog>) -> Self {
        let high_watermark = log.high_watermark().unwrap_or(0);
        Self {
            tp,
            log,
            role: RwLock::new(Role::None),
            high_watermark: Mutex::new(high_watermark),
            moved: Condvar::new(),
        }
    }

    fn publish_high_watermark(&self, high_watermark: i64) {
        let mut published = self.high_watermark.lock().unwrap_or_else(PoisonError::into_inner);
        if high_watermark != *published {
            *published = high_watermark;
            self.moved.notify_all();
        }
    }

    /// Wakes the acks=all waiters to look at the role again.
    fn wake(&self) {
        let _published = self.high_watermark.lock().unwrap_or_else(PoisonError::into_inner);
        self.moved.notify_all();
    }

    /// The leader's high watermark candidate: the minimum log end offset of the maximal ISR
    /// (the ISR and an expansion in flight), the leader's own log end included; `None` while
    /// an in-sync follower has not fetched in this epoch.
    fn high_watermark_candidate(
        leadership: &Leadership,
        self_id: i32,
        log_end: i64,
    ) -> Option<i64> {
        let followers = leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
        let mut members: Vec<i32> = leadership.state.isr.clone();
        if let Some(pending) = &followers.pending_isr {
            members.extend(pending.iter().filter(|r| !leadership.state.isr.contains(r)));
        }
        let mut candidate = log_end;
        for id in members.into_iter().filter(|id| *id != self_id) {
            let known = followers.by_id.get(&id).map_or(-1, |f| f.log_end_offset);
            if known < 0 {
                return None;
            }
            candidate = candidate.min(known);
        }
        Some(candidate)
    }

    /// Raises the leader's high watermark as far as the ISR allows, and publishes it.
    fn maybe_raise(&self, leadership: &Leadership, self_id: i32) -> seglog_storage::Result<i64> {
        // KAFKA-15583: the high watermark stands still while the ISR is smaller than
        // `min.insync.replicas` (at most the replication factor), so that every member the ISR
        // lost below the minimum (KIP-966's eligible leader replicas) holds every committed
        // record. acks=1 records written meanwhile become visible once the ISR recovers.
        let min_isr = self.log.min_insync_replicas().unwrap_or(1);
        let min_isr = usize::try_from(min_isr).unwrap_or(usize::MAX);
        if leadership.state.isr.len() < min_isr.min(leadership.state.replicas.len()) {
            let high_watermark = self.log.high_watermark()?;
            self.publish_high_watermark(high_watermark);
            return Ok(high_watermark);
        }
        let log_end = self.log.log_end_offset()?;
        let high_watermark = match Self::high_watermark_candidate(leadership, self_id, log_end) {
            Some(candidate) => self.log.maybe_raise_high_watermark(candidate)?,
            None => self.log.high_watermark()?,
        };
        self.publish_high_watermark(high_watermark);
        Ok(high_watermark)
    }
}

/// Every partition replicated on this broker.
#[derive(Debug)]
pub(crate) struct Replication {
    broker_id: i32,
    config: ReplicationConfig,
    partitions: RwLock<HashMap<TopicPartition, Arc<Partition>>>,
    /// Woken when a high watermark moves, so that long-polling fetches read again.
    appended: Arc<tokio::sync::Notify>,
    /// The ISR changes the leader wants sent to the controller.
    isr_changes: Mutex<Vec<IsrChange>>,
    isr_changed: tokio::sync::Notify,
    /// The followers' fetchers.
    pub(crate) fetchers: fetcher::Fetchers,
    /// The replication throttles, as leader and as follower.
    pub(crate) quotas: quota::ReplicationQuotas,
    /// Set at shutdown: no role is made any more.
    stopped: std::sync::atomic::AtomicBool,
    /// Held by each pass of the metadata applier (replicas made, roles taken), and by the
    /// shutdown, which so waits for a pass under way before the logs close.
    applying: Mutex<()>,
}

impl Replication {
    /// The followers of the partitions this broker leads that are behind its log end (Kafka's
    /// per-follower `FetcherLagMetrics`, seen from the leader): how many, and the
    /// `listed_max` most behind (topic, partition, follower, records behind; a follower that
    /// has not fetched in this epoch counts the whole log end).
    pub(crate) fn follower_lags(
        &self,
        listed_max: usize,
    ) -> (usize, Vec<crate::cluster::raft::node::ReplicaLag>) {
        let partitions: Vec<Arc<Partition>> = self
            .partitions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let mut lags = Vec::new();
        for partition in partitions {
            let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
            let Role::Leader(leadership) = &*role else { continue };
            let Ok(log_end) = partition.log.log_end_offset() else { continue };
            let followers = leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
            for (id, follower) in &followers.by_id {
                let behind = log_end - follower.log_end_offset.max(0);
                if *id != self.broker_id && behind > 0 {
                    lags.push((partition.tp.topic.clone(), partition.tp.partition, *id, behind));
                }
            }
        }
        let count = lags.len();
        lags.sort_by(|a, b| b.3.cmp(&a.3).then_with(|| (&a.0, a.1, a.2).cmp(&(&b.0, b.1, b.2))));
        lags.truncate(listed_max);
        (count, lags)
    }

    pub(crate) fn new(
        broker_id: i32,
        config: ReplicationConfig,
        appended: Arc<tokio::sync::Notify>,
    ) -> Self {
        let quotas = quota::ReplicationQuotas::new(
            config.quota_window_num,
            u64::from(config.quota_window_size_seconds) * 1000,
        );
        Self {
            broker_id,
            config,
            quotas,
            partitions: RwLock::new(HashMap::new()),
            appended,
            isr_changes: Mutex::new(Vec::new()),
            isr_changed: tokio::sync::Notify::new(),
            fetchers: fetcher::Fetchers::default(),
            stopped: std::sync::atomic::AtomicBool::new(false),
            applying: Mutex::new(()),
        }
    }

    pub(crate) fn config(&self) -> &ReplicationConfig {
        &self.config
    }

    pub(crate) fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// The partition `tp`, if it is replicated here.
    pub(crate) fn get(&self, tp: &TopicPartition) -> Option<Arc<Partition>> {
        self.partitions.read().unwrap_or_else(PoisonError::into_inner).get(tp).cloned()
    }

    fn get_or_insert(&self, tp: &TopicPartition, log: &Arc<PartitionLog>) -> Arc<Partition> {
        let mut partitions = self.partitions.write().unwrap_or_else(PoisonError::into_inner);
        let partition = partitions
            .entry(tp.clone())
            .or_insert_with(|| Arc::new(Partition::new(tp.clone(), Arc::clone(log))));
        if !Arc::ptr_eq(&partition.log, log) {
            // The topic was deleted and made again: a new log.
            *partition = Arc::new(Partition::new(tp.clone(), Arc::clone(log)));
        }
        Arc::clone(partition)
    }

    /// Forgets `tp` (its topic was deleted, or it moved away).
    pub(crate) fn remove(&self, tp: &TopicPartition) {
        let removed = self.partitions.write().unwrap_or_else(PoisonError::into_inner).remove(tp);
        if let Some(partition) = removed {
            *partition.role.write().unwrap_or_else(PoisonError::into_inner) = Role::None;
            partition.wake();
        }
    }

    /// The partitions replicated here.
    pub(crate) fn partitions(&self) -> Vec<Arc<Partition>> {
        self.partitions.read().unwrap_or_else(PoisonError::into_inner).values().cloned().collect()
    }

    /// Makes this broker `tp`'s leader as the image says (Kafka's `Partition.makeLeader`): a new
    /// epoch starts at the log end and every follower's state starts afresh (in-sync ones
    /// caught up now); the same epoch takes the image's ISR and partition epoch. Returns
    /// whether leadership is new (the fetcher must stop following).
    pub(crate) fn make_leader(
        &self,
        tp: &TopicPartition,
        log: &Arc<PartitionLog>,
        state: LeaderAndIsr,
        now_ms: i64,
    ) -> seglog_storage::Result<bool> {
        let partition = self.get_or_insert(tp, log);
        let mut role = partition.role.write().unwrap_or_else(PoisonError::into_inner);
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        let new_leadership = match &mut *role {
            Role::Leader(leadership) if leadership.state.leader_epoch == state.leader_epoch => {
                let mut followers =
                    leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
                if state.partition_epoch > leadership.state.partition_epoch {
                    followers.pending_isr = None;
                }
                for id in state.replicas.iter().filter(|id| **id != self.broker_id) {
                    followers.by_id.entry(*id).or_insert(FollowerState {
                        log_end_offset: -1,
                        last_caught_up_ms: 0,
                        last_fetch_ms: 0,
                        last_fetch_leader_log_end: -1,
                        high_watermark_sent: -1,
                    });
                }
                followers.by_id.retain(|id, _| state.replicas.contains(id));
                drop(followers);
                leadership.state = state;
                false
            }
            _ => {
                let epoch_start_offset = log.become_replicated_leader(state.leader_epoch)?;
                let by_id = state
                    .replicas
                    .iter()
                    .filter(|id| **id != self.broker_id)
                    .map(|id| {
                        let in_sync = state.isr.contains(id);
                        let follower = FollowerState {
                            log_end_offset: -1,
                            last_caught_up_ms: if in_sync { now_ms } else { 0 },
                            last_fetch_ms: 0,
                            last_fetch_leader_log_end: -1,
                            high_watermark_sent: -1,
                        };
                        (*id, follower)
                    })
                    .collect();
                *role = Role::Leader(Leadership {
                    state,
                    epoch_start_offset,
                    followers: Mutex::new(Followers { by_id, pending_isr: None }),
                });
                true
            }
        };
        if let Role::Leader(leadership) = &*role {
            partition.maybe_raise(leadership, self.broker_id)?;
        }
        drop(role);
        partition.wake();
        self.appended.notify_waiters();
        Ok(new_leadership)
    }

    /// Makes this broker a follower of `leader_id` at `leader_epoch` (Kafka's
    /// `Partition.makeFollower`). Returns whether the leader or epoch is new (the fetcher must
    /// truncate and follow).
    pub(crate) fn make_follower(
        &self,
        tp: &TopicPartition,
        log: &Arc<PartitionLog>,
        leader_id: i32,
        leader_epoch: i32,
    ) -> bool {
        let partition = self.get_or_insert(tp, log);
        let mut role = partition.role.write().unwrap_or_else(PoisonError::into_inner);
        if self.stopped.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let same = matches!(
            &*role,
            Role::Follower { leader_id: l, leader_epoch: e } if *l == leader_id && *e == leader_epoch
        );
        if !same {
            *role = Role::Follower { leader_id, leader_epoch };
        }
        drop(role);
        partition.wake();
        !same
    }

    /// Ends every role before the logs close (a clean shutdown): each waits for the appends
    /// under it, and none starts after, so no fetcher's append lands in a closed log.
    pub(crate) fn shutdown(&self) {
        self.stopped.store(true, std::sync::atomic::Ordering::SeqCst);
        // A pass of the applier under way (making replicas) ends first.
        let _passes = self.applying.lock().unwrap_or_else(PoisonError::into_inner);
        for partition in self.partitions() {
            *partition.role.write().unwrap_or_else(PoisonError::into_inner) = Role::None;
            partition.wake();
        }
    }

    /// Starts a pass of the metadata applier: `None` once the broker is stopping (no replica
    /// is made or role taken any more).
    pub(crate) fn begin_pass(&self) -> Option<std::sync::MutexGuard<'_, ()>> {
        let pass = self.applying.lock().unwrap_or_else(PoisonError::into_inner);
        (!self.stopped.load(std::sync::atomic::Ordering::SeqCst)).then_some(pass)
    }

    /// Whether this broker leads `tp` now (its role, not the image): `Some(leader epoch)`.
    pub(crate) fn leader_epoch(&self, tp: &TopicPartition) -> Option<i32> {
        let partition = self.get(tp)?;
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        match &*role {
            Role::Leader(leadership) => Some(leadership.state.leader_epoch),
            _ => None,
        }
    }

    /// Whether this broker leads `tp` and `replica_id` is in its ISR (Kafka's
    /// `Partition.inSyncReplicaIds`): an in-sync follower is never throttled.
    pub(crate) fn in_isr(&self, tp: &TopicPartition, replica_id: i32) -> bool {
        let Some(partition) = self.get(tp) else { return false };
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        match &*role {
            Role::Leader(leadership) => leadership.state.isr.contains(&replica_id),
            _ => false,
        }
    }

    /// A leader's append (Kafka's `Partition.appendRecordsToLeader`) under the role's read
    /// lock: NOT_LEADER_OR_FOLLOWER unless this broker leads `tp`; for acks=all,
    /// NOT_ENOUGH_REPLICAS when the ISR is below the topic's `min.insync.replicas`. The high
    /// watermark is raised as far as the ISR allows.
    pub(crate) fn append(
        &self,
        tp: &TopicPartition,
        records: &[u8],
        (origin, guard): (AppendOrigin, Option<u64>),
        acks_all: bool,
        now_ms: i64,
    ) -> Result<(Arc<PartitionLog>, AppendInfo), AppendRefused> {
        let partition =
            self.get(tp).ok_or(AppendRefused::Code(ResponseError::NotLeaderOrFollower))?;
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        let Role::Leader(leadership) = &*role else {
            return Err(AppendRefused::Code(ResponseError::NotLeaderOrFollower));
        };
        if acks_all {
            let min_isr = partition.log.min_insync_replicas()?;
            if leadership.state.isr.len() < usize::try_from(min_isr).unwrap_or(usize::MAX) {
                return Err(AppendRefused::Code(ResponseError::NotEnoughReplicas));
            }
        }
        let mut info = partition.log.append_as_replicated_leader(records, origin, now_ms, guard)?;
        info.high_watermark = partition.maybe_raise(leadership, self.broker_id)?;
        Ok((Arc::clone(&partition.log), info))
    }

    /// Waits until the high watermark of `tp` reaches `required` (an acks=all append's end),
    /// at most `timeout` (Kafka's `DelayedProduce`): REQUEST_TIMED_OUT after it,
    /// NOT_LEADER_OR_FOLLOWER when leadership moved, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the
    /// ISR shrank below `min.insync.replicas` meanwhile. Blocks: call it on a blocking thread.
    pub(crate) fn wait_for_high_watermark(
        &self,
        tp: &TopicPartition,
        leader_epoch: Option<i32>,
        required: i64,
        timeout: Duration,
    ) -> Result<(), Refused> {
        let Some(partition) = self.get(tp) else { return Err(ResponseError::NotLeaderOrFollower) };
        let deadline = Instant::now() + timeout;
        let mut published = partition.high_watermark.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *published >= required {
                break;
            }
            if self.leader_epoch(tp) != leader_epoch {
                return Err(ResponseError::NotLeaderOrFollower);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ResponseError::RequestTimedOut);
            }
            published = partition
                .moved
                .wait_timeout(published, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(published);
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        let Role::Leader(leadership) = &*role else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        let min_isr = partition.log.min_insync_replicas().unwrap_or(1);
        if leadership.state.isr.len() < usize::try_from(min_isr).unwrap_or(usize::MAX) {
            return Err(ResponseError::NotEnoughReplicasAfterAppend);
        }
        Ok(())
    }

    /// A follower's fetch at `fetch_offset` reached the leader (Kafka's
    /// `Partition.updateFollowerFetchState`): its log end and caught-up time, an ISR expansion
    /// when it reached the high watermark in this epoch, and the high watermark raised.
    /// NOT_LEADER_OR_FOLLOWER unless this broker leads `tp` and `replica_id` is a replica;
    /// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a fetch of another epoch.
    pub(crate) fn follower_fetched(
        &self,
        tp: &TopicPartition,
        replica_id: i32,
        current_leader_epoch: i32,
        fetch_offset: i64,
        now_ms: i64,
    ) -> Result<(), Refused> {
        let Some(partition) = self.get(tp) else { return Err(ResponseError::NotLeaderOrFollower) };
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        let Role::Leader(leadership) = &*role else {
            return Err(ResponseError::NotLeaderOrFollower);
        };
        let epoch = leadership.state.leader_epoch;
        if current_leader_epoch >= 0 && current_leader_epoch < epoch {
            return Err(ResponseError::FencedLeaderEpoch);
        }
        if current_leader_epoch > epoch {
            return Err(ResponseError::UnknownLeaderEpoch);
        }
        let log_end =
            partition.log.log_end_offset().map_err(|_| ResponseError::KafkaStorageError)?;
        let high_watermark =
            partition.log.high_watermark().map_err(|_| ResponseError::KafkaStorageError)?;
        let expand = {
            let mut followers = leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(follower) = followers.by_id.get_mut(&replica_id) else {
                return Err(ResponseError::NotLeaderOrFollower);
            };
            if fetch_offset >= log_end {
                follower.last_caught_up_ms = follower.last_caught_up_ms.max(now_ms);
            } else if fetch_offset >= follower.last_fetch_leader_log_end {
                follower.last_caught_up_ms = follower.last_caught_up_ms.max(follower.last_fetch_ms);
            }
            follower.log_end_offset = fetch_offset;
            follower.last_fetch_ms = now_ms;
            follower.last_fetch_leader_log_end = log_end;
            // Kafka's `isFollowerInSync`: at the high watermark, and past this epoch's start.
            let joins = !leadership.state.isr.contains(&replica_id)
                && followers.pending_isr.is_none()
                && fetch_offset >= high_watermark
                && fetch_offset >= leadership.epoch_start_offset;
            joins.then(|| {
                let mut new_isr = leadership.state.isr.clone();
                new_isr.push(replica_id);
                followers.pending_isr = Some(new_isr.clone());
                new_isr
            })
        };
        if let Some(new_isr) = expand {
            self.ask_isr(&partition.tp, &leadership.state, new_isr);
        }
        let before = *partition.high_watermark.lock().unwrap_or_else(PoisonError::into_inner);
        let after = partition
            .maybe_raise(leadership, self.broker_id)
            .map_err(|_| ResponseError::KafkaStorageError)?;
        if after != before {
            self.appended.notify_waiters();
        }
        Ok(())
    }

    /// Whether `high_watermark` is news to follower `replica_id` of `tp` (above the one last
    /// sent to it), noting it as sent: a follower's fetch answers at once with a high watermark
    /// it does not know, so that followers learn where the ISR stands without waiting out
    /// `replica.fetch.wait.max.ms` (KIP-1166 sends the follower's own from Fetch v18).
    pub(crate) fn high_watermark_news(
        &self,
        tp: &TopicPartition,
        replica_id: i32,
        high_watermark: i64,
    ) -> bool {
        let Some(partition) = self.get(tp) else { return false };
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        let Role::Leader(leadership) = &*role else { return false };
        let mut followers = leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(follower) = followers.by_id.get_mut(&replica_id) else { return false };
        let news = high_watermark > follower.high_watermark_sent;
        follower.high_watermark_sent = follower.high_watermark_sent.max(high_watermark);
        news
    }

    /// Kafka's `maybeShrinkIsr` over every partition led here: followers of the ISR not caught
    /// up for `replica.lag.time.max.ms` leave it (never the leader; one change in flight per
    /// partition).
    pub(crate) fn shrink_isrs(&self, now_ms: i64) {
        for partition in self.partitions() {
            let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
            let Role::Leader(leadership) = &*role else { continue };
            let shrink = {
                let mut followers =
                    leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
                if followers.pending_isr.is_some() {
                    continue;
                }
                let lagging: Vec<i32> = leadership
                    .state
                    .isr
                    .iter()
                    .copied()
                    .filter(|id| *id != self.broker_id)
                    .filter(|id| {
                        followers.by_id.get(id).is_none_or(|f| {
                            now_ms - f.last_caught_up_ms > self.config.lag_time_max_ms
                        })
                    })
                    .collect();
                if lagging.is_empty() {
                    continue;
                }
                let new_isr: Vec<i32> = leadership
                    .state
                    .isr
                    .iter()
                    .copied()
                    .filter(|id| !lagging.contains(id))
                    .collect();
                tracing::info!(
                    partition = %partition.tp,
                    ?lagging,
                    isr = ?leadership.state.isr,
                    ?new_isr,
                    lag_time_max_ms = self.config.lag_time_max_ms,
                    "shrinking the ISR: followers out of sync"
                );
                followers.pending_isr = Some(new_isr.clone());
                new_isr
            };
            self.ask_isr(&partition.tp, &leadership.state, shrink);
        }
    }

    fn ask_isr(&self, tp: &TopicPartition, state: &LeaderAndIsr, new_isr: Vec<i32>) {
        let change = IsrChange {
            tp: tp.clone(),
            topic_id: state.topic_id,
            leader_epoch: state.leader_epoch,
            partition_epoch: state.partition_epoch,
            new_isr,
        };
        self.isr_changes.lock().unwrap_or_else(PoisonError::into_inner).push(change);
        self.isr_changed.notify_one();
    }

    /// Waits for ISR changes to send, and takes them.
    pub(crate) async fn next_isr_changes(&self) -> Vec<IsrChange> {
        loop {
            let notified = self.isr_changed.notified();
            let changes = std::mem::take(
                &mut *self.isr_changes.lock().unwrap_or_else(PoisonError::into_inner),
            );
            if !changes.is_empty() {
                return changes;
            }
            notified.await;
        }
    }

    /// An ISR change was answered (applied here, refused, or not sent): the partition may ask
    /// again (its image state is the controller's answer).
    pub(crate) fn isr_change_done(&self, change: &IsrChange) {
        let Some(partition) = self.get(&change.tp) else { return };
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        if let Role::Leader(leadership) = &*role {
            let mut followers = leadership.followers.lock().unwrap_or_else(PoisonError::into_inner);
            if followers.pending_isr.as_ref() == Some(&change.new_isr) {
                followers.pending_isr = None;
            }
        }
    }

    /// Runs `work` on `tp`'s log while this broker follows `leader_id` at `leader_epoch`, under
    /// the role's read lock (a fetcher's append or truncation never lands after a role
    /// change); `None` when it no longer does.
    pub(crate) fn as_follower<T>(
        &self,
        tp: &TopicPartition,
        (leader_id, leader_epoch): (i32, i32),
        work: impl FnOnce(&PartitionLog) -> T,
    ) -> Option<T> {
        let partition = self.get(tp)?;
        let role = partition.role.read().unwrap_or_else(PoisonError::into_inner);
        match &*role {
            Role::Follower { leader_id: l, leader_epoch: e }
                if *l == leader_id && *e == leader_epoch =>
            {
                Some(work(&partition.log))
            }
            _ => None,
        }
    }
}

/// Why a replicated append was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendRefused {
    #[error("{0:?}")]
    Code(ResponseError),
    #[error(transparent)]
    Storage(#[from] seglog_storage::Error),
}

/// `server.properties`' replication keys, with Kafka's defaults and lower bounds.
pub(crate) fn replication_config(
    properties: &BTreeMap<String, String>,
    log: &seglog_storage::config::BrokerLogConfig,
) -> Result<ReplicationConfig, seglog_storage::config::ConfigError> {
    use seglog_storage::config::{Reader, Validator};
    let reader = Reader::new(properties);
    let d = ReplicationConfig::default();
    let factor = |key: &str, default: i16| -> Result<i16, seglog_storage::config::ConfigError> {
        let value: i32 = reader.value(key, &i32::from(default), Validator::AtLeast(1))?;
        Ok(i16::try_from(value).unwrap_or(i16::MAX))
    };
    Ok(ReplicationConfig {
        lag_time_max_ms: reader.value(
            "replica.lag.time.max.ms",
            &d.lag_time_max_ms,
            Validator::AtLeast(1),
        )?,
        num_fetchers: reader.value(
            "num.replica.fetchers",
            &d.num_fetchers,
            Validator::AtLeast(1),
        )?,
        fetch_wait_max_ms: reader.value(
            "replica.fetch.wait.max.ms",
            &d.fetch_wait_max_ms,
            Validator::AtLeast(0),
        )?,
        fetch_min_bytes: reader.value(
            "replica.fetch.min.bytes",
            &d.fetch_min_bytes,
            Validator::AtLeast(0),
        )?,
        fetch_backoff_ms: reader.value(
            "replica.fetch.backoff.ms",
            &d.fetch_backoff_ms,
            Validator::AtLeast(0),
        )?,
        fetch_max_bytes: i32::try_from(log.replica_fetch_max_bytes).unwrap_or(i32::MAX),
        fetch_response_max_bytes: i32::try_from(log.replica_fetch_response_max_bytes)
            .unwrap_or(i32::MAX),
        default_replication_factor: factor(
            "default.replication.factor",
            d.default_replication_factor,
        )?,
        offsets_topic_replication_factor: factor(
            "offsets.topic.replication.factor",
            d.offsets_topic_replication_factor,
        )?,
        transaction_state_log_replication_factor: factor(
            "transaction.state.log.replication.factor",
            d.transaction_state_log_replication_factor,
        )?,
        transaction_state_log_min_isr: reader.value(
            "transaction.state.log.min.isr",
            &d.transaction_state_log_min_isr,
            Validator::AtLeast(1),
        )?,
        quota_window_num: reader.value(
            "replication.quota.window.num",
            &d.quota_window_num,
            Validator::AtLeast(1),
        )?,
        quota_window_size_seconds: reader.value(
            "replication.quota.window.size.seconds",
            &d.quota_window_size_seconds,
            Validator::AtLeast(1),
        )?,
    })
}

/// Sends the leaders' ISR changes to the controller (Kafka's `AlterPartitionManager`), and
/// looks for followers out of sync every half `replica.lag.time.max.ms` (Kafka's
/// `isr-expiration` task), for as long as the broker runs.
pub(crate) async fn run_isr_changes(broker: std::sync::Weak<crate::Broker>) {
    let period = {
        let Some(strong) = broker.upgrade() else { return };
        let lag = strong.replication.config().lag_time_max_ms;
        Duration::from_millis(u64::try_from(lag / 2).unwrap_or(1).max(1))
    };
    let mut shrink = tokio::time::interval(period);
    shrink.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let Some(strong) = broker.upgrade() else { return };
        let replication = Arc::clone(&strong.replication);
        drop(strong);
        let changes = tokio::select! {
            _ = shrink.tick() => {
                replication.shrink_isrs(crate::handlers::now_ms());
                continue;
            }
            changes = replication.next_isr_changes() => changes,
        };
        let Some(strong) = broker.upgrade() else { return };
        let Some(link) = strong.cluster().cloned() else { continue };
        drop(strong);
        for change in changes {
            let request = crate::cluster::controller::AlterPartitionRequest {
                broker_id: link.broker_id(),
                broker_epoch: link.member().epoch(),
                topic_id: change.topic_id,
                partition_id: change.tp.partition,
                leader_epoch: change.leader_epoch,
                partition_epoch: change.partition_epoch,
                new_isr: change.new_isr.clone(),
            };
            let answer = link
                .forward(crate::cluster::raft::network::AdminRequest::AlterPartition(request))
                .await;
            match answer {
                Ok(_) => {
                    tracing::info!(partition = %change.tp, isr = ?change.new_isr, "ISR changed");
                }
                Err(refusal) => {
                    tracing::info!(partition = %change.tp, isr = ?change.new_isr, %refusal, "ISR change refused");
                }
            }
            replication.isr_change_done(&change);
        }
    }
}

#[cfg(test)]
mod tests;
