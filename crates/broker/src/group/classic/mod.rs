//! The classic consumer group protocol (Kafka's `GroupMetadata` and the classic half of its
//! `GroupCoordinator`): `group.rs` holds one group with its members and the pure rules,
//! `protocol.rs` the JoinGroup/SyncGroup/Heartbeat/LeaveGroup rebalance protocol.

pub(super) mod group;
pub(super) mod protocol;
