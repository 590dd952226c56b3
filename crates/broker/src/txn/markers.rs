//! The transaction markers (Kafka's `TransactionMarkerChannelManager` and `WriteTxnMarkers`): a
//! COMMIT or ABORT control batch with the transaction's producer id and epoch and the
//! coordinator epoch, appended through the one append path with acks=-1 by the partition's
//! leader. On a single node, and in a cluster for the partitions this broker leads, the
//! coordinator appends them itself; a partition led by another broker gets them in one
//! WriteTxnMarkers request to that broker. A marker to a group's partition of
//! `__consumer_offsets` also tells the group coordinator to make the transaction's offsets
//! visible, or drop them. A partition whose topic is gone is skipped, as Kafka drops markers
//! for partitions it no longer has.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use seglog_format::{ControlRecordType, end_transaction_marker_batch};
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::log::validator::AppendOrigin;

use super::coordinator::TransactionCoordinator;
use crate::cluster::link::ClusterLink;
use crate::cluster::peers::PeerError;
use crate::group::{GroupCoordinator, OFFSETS_TOPIC};
use crate::replica::{Acks, AppendError, ReplicaManager};

/// The coordinator epoch markers carry on a single node, where the leader epoch of a
/// `__transaction_state` partition never changes from 0.
pub(crate) const COORDINATOR_EPOCH: i32 = 0;

/// Why a marker was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MarkerError {
    #[error("cannot encode the marker: {0}")]
    Encode(#[from] seglog_format::DecodeError),
    #[error(transparent)]
    Append(#[from] AppendError),
    #[error("{tp} has no leader")]
    NoLeader { tp: TopicPartition },
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// The simulation's crash point (`sim_tests.rs`); never outside it.
    #[error("a simulated crash after {0} markers")]
    Crashed(usize),
    #[error("broker {broker_id} refused the marker for {tp}: error {code}")]
    Refused { broker_id: i32, tp: TopicPartition, code: i16 },
}

/// One transaction's end, as its markers carry it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TxnEnd {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) commit: bool,
    pub(crate) coordinator_epoch: i32,
}

/// Appends one marker to a partition this broker leads (Kafka's `WriteTxnMarkers` handling
/// for one partition, `ReplicaManager.appendRecords` with `AppendOrigin.Coordinator`).
pub(crate) fn append_marker(
    replicas: &ReplicaManager,
    groups: &GroupCoordinator,
    tp: &TopicPartition,
    end: TxnEnd,
    now_ms: i64,
) -> Result<(), MarkerError> {
    let marker = if end.commit { ControlRecordType::Commit } else { ControlRecordType::Abort };
    let batch = end_transaction_marker_batch(
        0,
        now_ms,
        0,
        end.producer_id,
        end.producer_epoch,
        marker,
        end.coordinator_epoch,
    )?;
    replicas.append(tp, &batch, AppendOrigin::Coordinator, Acks::All, now_ms)?;
    if tp.topic == OFFSETS_TOPIC {
        groups.complete_transaction(tp.partition, end.producer_id, end.commit);
    }
    Ok(())
}

impl TransactionCoordinator {
    /// Writes the markers of one transaction to `partitions` (all of them, or an error).
    pub(super) fn write_markers(
        &self,
        groups: &GroupCoordinator,
        partitions: &BTreeSet<TopicPartition>,
        end: TxnEnd,
        now_ms: i64,
    ) -> Result<(), MarkerError> {
        let Some(link) = self.cluster.get() else {
            for (written, tp) in partitions.iter().enumerate() {
                if self.hit(super::coordinator::FailPoint::AfterMarkers(written)) {
                    return Err(MarkerError::Crashed(written));
                }
                self.write_local_marker(groups, tp, end, now_ms)?;
            }
            return Ok(());
        };
        let mut remote: BTreeMap<i32, Vec<TopicPartition>> = BTreeMap::new();
        for tp in partitions {
            match link.leader_of(tp) {
                None => tracing::info!(%tp, "a transaction marker's partition is gone"),
                Some((leader, _)) if leader == link.broker_id() => {
                    self.write_local_marker(groups, tp, end, now_ms)?;
                }
                Some((leader, _)) if leader >= 0 => {
                    remote.entry(leader).or_default().push(tp.clone());
                }
                Some(_) => return Err(MarkerError::NoLeader { tp: tp.clone() }),
            }
        }
        for (broker_id, partitions) in remote {
            send_markers(link, broker_id, &partitions, end)?;
        }
        Ok(())
    }

    /// Appends one marker here; a partition whose topic is gone is skipped.
    fn write_local_marker(
        &self,
        groups: &GroupCoordinator,
        tp: &TopicPartition,
        end: TxnEnd,
        now_ms: i64,
    ) -> Result<(), MarkerError> {
        match append_marker(&self.replicas, groups, tp, end, now_ms) {
            Err(MarkerError::Append(AppendError::Storage(
                seglog_storage::Error::UnknownTopicOrPartition { .. },
            ))) => {
                tracing::info!(%tp, producer_id = end.producer_id, "a transaction marker's partition is gone");
                Ok(())
            }
            other => other,
        }
    }
}

/// WriteTxnMarkers to `broker_id` for `partitions` (one request, called on a blocking thread
/// of the runtime). A partition the peer no longer has is skipped; any other refusal is an
/// error, and the coordinator's timer tries again.
fn send_markers(
    link: &ClusterLink,
    broker_id: i32,
    partitions: &[TopicPartition],
    end: TxnEnd,
) -> Result<(), MarkerError> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in partitions {
        topics.entry(tp.topic.as_str()).or_default().push(tp.partition);
    }
    let marker = WritableTxnMarker::default()
        .with_producer_id(ProducerId(end.producer_id))
        .with_producer_epoch(end.producer_epoch)
        .with_transaction_result(end.commit)
        .with_coordinator_epoch(end.coordinator_epoch)
        .with_topics(
            topics
                .into_iter()
                .map(|(name, partitions)| {
                    WritableTxnMarkerTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name.to_owned())))
                        .with_partition_indexes(partitions)
                })
                .collect(),
        );
    let request = WriteTxnMarkersRequest::default().with_markers(vec![marker]);
    let response =
        tokio::runtime::Handle::current().block_on(link.call_broker(broker_id, &request, 1))?;
    let unknown = kafka_protocol::ResponseError::UnknownTopicOrPartition.code();
    for result in response.markers {
        for topic in result.topics {
            for partition in topic.partitions {
                let tp = TopicPartition {
                    topic: topic.name.0.as_str().to_owned(),
                    partition: partition.partition_index,
                };
                match partition.error_code {
                    0 => {}
                    code if code == unknown && link.leader_of(&tp).is_none() => {
                        tracing::info!(%tp, "a transaction marker's partition is gone");
                    }
                    code => return Err(MarkerError::Refused { broker_id, tp, code }),
                }
            }
        }
    }
    Ok(())
}
