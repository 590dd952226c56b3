//! `ReplicaManager` (Kafka's `ReplicaManager.appendRecords`): the one place where "append to a
//! partition as its leader, with these acks" happens, for Produce and the group coordinator
//! and the transaction coordinator. A single node is the only replica of every partition, so an
//! append moves the high watermark to the log end in the same locked storage call, and acks=-1
//! waits only for the topic's durability mode. A cluster's broker appends through
//! `Replication` (the partition's role and ISR), and acks=-1 waits for the in-sync replicas
//! too.

use std::sync::Arc;

use seglog_storage::config::DurabilityMode;
use seglog_storage::log::partition_log::{AppendInfo, PartitionLog, TopicPartition};
use seglog_storage::log::validator::AppendOrigin;
use seglog_storage::manager::LogManager;
use seglog_storage::{Error, Result};

/// The internal topics only their coordinators write (Kafka's `Topic.isInternal`).
pub(crate) const INTERNAL_TOPICS: [&str; 2] = [crate::group::OFFSETS_TOPIC, "__transaction_state"];

/// Creates a coordinator's internal topic as Kafka does (`cleanup.policy=compact`, the given
/// compression and `segment.bytes`), returning its partition count; COORDINATOR_NOT_AVAILABLE if
/// it cannot be created.
/// A coordinator's topic's settings: compacted, with its compression and segment size.
pub(crate) fn internal_topic_overrides(
    compression: seglog_storage::config::BrokerCompressionType,
    segment_bytes: u64,
) -> std::collections::BTreeMap<String, String> {
    use seglog_storage::config::{CleanupPolicy, topic as key};
    std::collections::BTreeMap::from([
        (key::CLEANUP_POLICY.to_owned(), CleanupPolicy::Compact.name().to_owned()),
        (key::COMPRESSION_TYPE.to_owned(), compression.name().to_owned()),
        (key::SEGMENT_BYTES.to_owned(), segment_bytes.to_string()),
    ])
}

pub(crate) fn create_internal_topic(
    manager: &LogManager,
    topic: &str,
    partitions: i32,
    compression: seglog_storage::config::BrokerCompressionType,
    segment_bytes: u64,
) -> std::result::Result<i32, kafka_protocol::ResponseError> {
    let overrides = internal_topic_overrides(compression, segment_bytes);
    match manager.create_topic(topic, partitions, overrides) {
        Ok(_) => {
            tracing::info!(partitions, "created {topic}");
            Ok(partitions)
        }
        Err(error) => {
            tracing::warn!(%error, "cannot create {topic}");
            Err(kafka_protocol::ResponseError::CoordinatorNotAvailable)
        }
    }
}

/// What a producer waits for (Kafka's `acks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acks {
    /// `acks=0`: nothing (the request gets no response).
    None,
    /// `acks=1`: the leader's append.
    Leader,
    /// `acks=-1` (`all`): every in-sync replica, which on one node means the topic's durability
    /// mode: at once for `page-cache` (Kafka's meaning on one replica) and
    /// `fsync-every-append`, after the covering fsync for `group-commit`.
    All,
}

impl Acks {
    /// Kafka's wire value, or `None` for one outside -1..=1 (INVALID_REQUIRED_ACKS).
    pub(crate) fn from_wire(acks: i16) -> Option<Self> {
        match acks {
            0 => Some(Self::None),
            1 => Some(Self::Leader),
            -1 => Some(Self::All),
            _ => None,
        }
    }
}

/// Appends as leader and waits as the acks say (Kafka's `ReplicaManager`, the part one node
/// needs).
#[derive(Debug)]
pub(crate) struct ReplicaManager {
    manager: Arc<LogManager>,
    /// Woken after every append, so that waiting fetches look again.
    appended: Arc<tokio::sync::Notify>,
    /// A cluster's replication, set once when the broker joins it: appends then go through
    /// each partition's role and ISR. Without it, every partition is led alone.
    replication: std::sync::OnceLock<Arc<crate::replication::Replication>>,
}

/// How long a coordinator's acks=all append waits for the in-sync replicas (Kafka's
/// `offsets.commit.timeout.ms`).
pub(crate) const COORDINATOR_ACKS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Why an append was refused before storage saw it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppendError {
    /// A client wrote to an internal topic (Kafka's INVALID_TOPIC_EXCEPTION).
    #[error("Cannot append to internal topic {0}")]
    InternalTopic(String),
    /// Storage refused or failed (its error carries the code).
    #[error(transparent)]
    Storage(#[from] Error),
    /// Replication refused or did not complete it: NOT_LEADER_OR_FOLLOWER,
    /// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT.
    #[error("{0:?}")]
    Replication(kafka_protocol::ResponseError),
}

impl ReplicaManager {
    pub(crate) fn new(manager: Arc<LogManager>, appended: Arc<tokio::sync::Notify>) -> Self {
        Self { manager, appended, replication: std::sync::OnceLock::new() }
    }

    /// A cluster's replication, once the broker joined it.
    pub(crate) fn replication(&self) -> Option<&Arc<crate::replication::Replication>> {
        self.replication.get()
    }

    /// Waits until `info`'s append is in the ISR of `tp` (a coordinator's acks=-1 write made
    /// with acks=1 first, so that its lock is not held meanwhile): at once on a single node.
    pub(crate) fn await_replicated(
        &self,
        tp: &TopicPartition,
        info: &AppendInfo,
    ) -> std::result::Result<(), kafka_protocol::ResponseError> {
        let Some(replication) = self.replication.get() else { return Ok(()) };
        let epoch = replication.leader_epoch(tp);
        replication.wait_for_high_watermark(
            tp,
            epoch,
            info.last_offset + 1,
            COORDINATOR_ACKS_TIMEOUT,
        )
    }

    /// Appends through `replication` from now on (a cluster's broker).
    pub(crate) fn use_replication(&self, replication: Arc<crate::replication::Replication>) {
        let _ = self.replication.set(replication);
    }

    /// Appends `records` to `tp` as its leader (one locked storage call: leader epoch,
    /// validation, offsets, high watermark), wakes waiting fetches, then waits as `acks` and the
    /// topic's durability mode say. Clients may not write the internal topics.
    pub(crate) fn append(
        &self,
        tp: &TopicPartition,
        records: &[u8],
        origin: AppendOrigin,
        acks: Acks,
        now_ms: i64,
    ) -> std::result::Result<(Arc<PartitionLog>, AppendInfo), AppendError> {
        self.append_verified(tp, records, (origin, None), acks, now_ms)
    }

    /// [`append`](Self::append) of a transactional write verified with a remote coordinator
    /// under a KIP-890 guard (`PartitionLog::start_verification`), `None` for any other.
    pub(crate) fn append_verified(
        &self,
        tp: &TopicPartition,
        records: &[u8],
        (origin, guard): (AppendOrigin, Option<u64>),
        acks: Acks,
        now_ms: i64,
    ) -> std::result::Result<(Arc<PartitionLog>, AppendInfo), AppendError> {
        self.append_within(tp, records, (origin, guard), acks, COORDINATOR_ACKS_TIMEOUT, now_ms)
    }

    /// [`append_verified`](Self::append_verified) whose acks=all waits at most `timeout` for
    /// the in-sync replicas (a Produce's `timeout_ms`).
    pub(crate) fn append_within(
        &self,
        tp: &TopicPartition,
        records: &[u8],
        (origin, guard): (AppendOrigin, Option<u64>),
        acks: Acks,
        timeout: std::time::Duration,
        now_ms: i64,
    ) -> std::result::Result<(Arc<PartitionLog>, AppendInfo), AppendError> {
        if origin == AppendOrigin::Client && INTERNAL_TOPICS.contains(&tp.topic.as_str()) {
            return Err(AppendError::InternalTopic(tp.topic.clone()));
        }
        let Some(replication) = self.replication.get() else {
            let log = self.manager.get_log(tp)?;
            let info = log.append_as_sole_leader_verified(records, origin, now_ms, guard)?;
            self.appended.notify_waiters();
            Self::await_acks(&log, &info, acks, now_ms)?;
            return Ok((log, info));
        };
        let acks_all = acks == Acks::All;
        let (log, info) = replication
            .append(tp, records, (origin, guard), acks_all, now_ms)
            .map_err(|refused| match refused {
                crate::replication::AppendRefused::Code(code) => AppendError::Replication(code),
                crate::replication::AppendRefused::Storage(error) => AppendError::Storage(error),
            })?;
        self.appended.notify_waiters();
        Self::await_acks(&log, &info, acks, now_ms)?;
        // A retried batch answered as a duplicate (no record written) waits too: its original
        // offsets must be in the high watermark before it is acknowledged (Kafka's
        // `DelayedProduce` waits for the append's last offset either way). Otherwise a leader
        // cut off from its followers acknowledges the retry of a write it alone has.
        if acks_all {
            let epoch = replication.leader_epoch(tp);
            replication
                .wait_for_high_watermark(tp, epoch, info.last_offset + 1, timeout)
                .map_err(AppendError::Replication)?;
        }
        Ok((log, info))
    }

    /// Waits until `info`'s append satisfies `acks`: the one place the durability decision
    /// is made. `fsync-every-append` is durable when the append returns and `page-cache`
    /// acknowledges the page cache; `group-commit` shares the next fsync with every append
    /// made meanwhile (`PartitionLog::sync_to`).
    pub(crate) fn await_acks(
        log: &PartitionLog,
        info: &AppendInfo,
        acks: Acks,
        now_ms: i64,
    ) -> Result<()> {
        let durable = info.durable_offset > info.last_offset;
        if acks == Acks::All && !durable && info.durability == DurabilityMode::GroupCommit {
            log.sync_to(info.last_offset + 1, now_ms)?;
        }
        Ok(())
    }
}
