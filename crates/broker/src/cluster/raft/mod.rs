//! The metadata quorum on `openraft` (issue 21, the second part): Raft's log kept as the seglog
//! partition `__cluster_metadata-0` ([`log_store`]), the [`Controller`](super::controller)'s
//! image as Raft's state machine ([`state_machine`]), Raft's three RPCs over TCP ([`network`], plain or TLS by [`transport`]),
//! and a node that starts them ([`node`]).
//!
//! openraft provides leader election, log replication, commitment and membership changes
//! (joint consensus); seglog provides the storage, the records and what they mean. One leader
//! per term (`single-term-leader`), so Raft's term is KRaft's epoch and each batch's partition
//! leader epoch.

pub mod log_store;
pub mod network;
pub mod node;
pub mod snapshot_file;
pub mod state_machine;
pub mod transport;

use std::io::Cursor;

use serde::{Deserialize, Serialize};

/// One proposal: the framed metadata records of one controller operation, committed together
/// in one entry (one record batch), so an operation is never half applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataCommand {
    /// Each a framed metadata record (`MetadataRecord::encode`).
    pub records: Vec<Vec<u8>>,
    /// The proposing leader's clock, the batch's timestamp on every voter.
    pub timestamp_ms: i64,
}

/// What applying a command gave: the metadata offset of its first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CommandApplied {
    pub first_offset: i64,
}

openraft::declare_raft_types!(
    /// openraft's types for the metadata quorum.
    pub MetadataRaftConfig:
        D = MetadataCommand,
        R = CommandApplied,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<MetadataRaftConfig>,
        SnapshotData = Cursor<Vec<u8>>,
);

/// A Raft node id (Kafka's `node.id`, as openraft's `u64`).
pub type NodeId = u64;
/// The metadata quorum's Raft handle.
pub type MetadataRaft = openraft::Raft<MetadataRaftConfig>;
