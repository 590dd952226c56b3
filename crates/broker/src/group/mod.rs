//! The group coordinator (Kafka's `GroupCoordinator` with its `GroupMetadataManager`): consumer
//! groups of both protocols, their committed offsets, and their durable form in the internal
//! topic `__consumer_offsets`, written and replayed through seglog's own log with Kafka's record
//! schemas (`seglog_format::group`).
//!
//! Every group lives in one partition of `__consumer_offsets`, chosen as Kafka chooses it
//! (`abs(groupId.hashCode) % partitions`). A single node coordinates every group. State is one
//! map under one mutex; JoinGroup and SyncGroup answers that must wait for other members are
//! `oneshot` channels completed by later requests or by [`GroupCoordinator::tick`], which the
//! server runs every 100 ms for session timeouts, the initial rebalance delay, rebalance
//! timeouts and pending syncs.
//!
//! - `coordinator.rs`: the coordinator, its entry points shared by both protocols and its timers;
//! - `store.rs`: loading from and writing to `__consumer_offsets`, and its bound;
//! - `offsets.rs`: committed offsets (OffsetCommit, OffsetFetch, OffsetDelete);
//! - `classic/`: the classic group and its join/sync/heartbeat/leave rebalance protocol;
//! - `consumer/`: the KIP-848 group, its assignors, reconciliation and heartbeat.

mod classic;
mod consumer;
mod coordinator;
mod offsets;
mod store;

pub(crate) use classic::group::{JoinResult, SyncResult};
pub(crate) use classic::protocol::{JoinRequest, SyncRequest};
pub(crate) use consumer::group::Partition;
pub(crate) use consumer::protocol::ConsumerHeartbeat;
pub use coordinator::GroupCoordinator;
pub(crate) use offsets::{Committed, FetchedOffsets, OffsetToCommit, TopicPartitions};

/// The internal topic of committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The coordinator's settings, with Kafka's keys and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `offsets.topic.num.partitions` (50).
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.segment.bytes` (104857600); also the size past which a partition of
    /// `__consumer_offsets` is rewritten to its live state.
    pub offsets_topic_segment_bytes: u64,
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: i64,
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: i32,
    /// `offset.metadata.max.bytes` (4096).
    pub offset_metadata_max_bytes: usize,
    /// `offsets.retention.minutes` (10080) in milliseconds: offsets of an empty group are
    /// deleted this long after it became empty.
    pub offsets_retention_ms: i64,
    /// `group.consumer.heartbeat.interval.ms` (5000): KIP-848 members' heartbeat interval.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms` (45000): KIP-848 members' session timeout.
    pub consumer_session_timeout_ms: i32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            offsets_topic_partitions: 50,
            offsets_topic_segment_bytes: 104_857_600,
            initial_rebalance_delay_ms: 3000,
            min_session_timeout_ms: 6000,
            max_session_timeout_ms: 1_800_000,
            offset_metadata_max_bytes: 4096,
            offsets_retention_ms: 10080 * 60 * 1000,
            consumer_heartbeat_interval_ms: 5000,
            consumer_session_timeout_ms: 45_000,
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod sim_tests;
