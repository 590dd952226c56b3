//! The consumer group protocol of KIP-848 (Kafka's `ConsumerGroup` and its part of
//! `GroupMetadataManager`): members heartbeat with their subscription, the broker computes the
//! target assignment with a server-side assignor and hands each member its partitions, revoking
//! before it assigns so that no partition ever has two owners. `group.rs` holds the group and
//! its members, `assignor.rs` the assignors, `reconcile.rs` each member's reconciliation, and
//! `protocol.rs` ConsumerGroupHeartbeat and ConsumerGroupDescribe on the coordinator.

pub(super) mod assignor;
pub(super) mod group;
pub(super) mod protocol;
mod reconcile;
