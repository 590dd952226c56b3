//! A cluster's metadata (issue 21, the first part): Kafka's KRaft metadata model without the
//! quorum. [`records`] types the metadata records (Kafka's bytes, through `seglog-format`),
//! [`image`] is what replaying them builds (`MetadataImage`), [`controller`] decides what to
//! write (`QuorumController`: registration, heartbeats and fencing, topic creation with
//! [`placement`], leader election, AlterPartition's compare-and-set, controlled shutdown).
//! docs/cluster.md describes the model.

pub mod broker_member;
pub mod controller;
pub mod controller_process;
pub mod image;
pub mod kraft_config;
pub mod link;
mod partition_change;
pub mod peers;
pub mod placement;
pub mod raft;
pub mod records;
pub mod security_image;

#[cfg(test)]
mod model_tests;
