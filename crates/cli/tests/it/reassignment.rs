//! Partition reassignment (KIP-455) on the three nodes of `scripts/cluster.sh`, driven by
//! Kafka's AlterPartitionReassignments and ListPartitionReassignments as
//! `kafka-reassign-partitions.sh` sends them: a partition moves from node 1 alone to nodes 2
//! and 3 with its records, its log leaves node 1, and a consumer reads every acknowledged
//! record from the new leader.

#![allow(clippy::unwrap_used, reason = "a test: a failed call is the failure")]

use std::time::Duration;

use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId, ListPartitionReassignmentsRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use rdkafka::admin::{NewTopic, TopicReplication};
use seglog_broker::wire::Client;

use crate::cluster::poll_until;
use crate::cluster_clients::{Cluster, create_topics};
use crate::replication::{Checker, isrs, produce_acked};

const TOPIC: &str = "moving";

/// AlterPartitionReassignments v1 of `moving-0` through `bootstrap` (`None` cancels): the
/// partition's code.
async fn reassign(bootstrap: &str, target: Option<&[i32]>) -> i16 {
    let mut client = Client::connect(bootstrap).await.unwrap();
    let partition = ReassignablePartition::default()
        .with_partition_index(0)
        .with_replicas(target.map(|t| t.iter().map(|b| BrokerId(*b)).collect()));
    let request = AlterPartitionReassignmentsRequest::default()
        .with_allow_replication_factor_change(true)
        .with_topics(vec![
            ReassignableTopic::default()
                .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![partition]),
        ]);
    let response = client.send(&request, 1).await.unwrap();
    assert_eq!(response.error_code, 0, "{response:?}");
    response.responses[0].partitions[0].error_code
}

/// The reassignments under way, as ListPartitionReassignments through `bootstrap` lists them:
/// (partition, replicas, adding, removing).
async fn under_way(bootstrap: &str) -> Vec<(i32, Vec<i32>, Vec<i32>, Vec<i32>)> {
    let mut client = Client::connect(bootstrap).await.unwrap();
    let response = client.send(&ListPartitionReassignmentsRequest::default(), 0).await.unwrap();
    assert_eq!(response.error_code, 0, "{response:?}");
    let ids = |ids: &[BrokerId]| ids.iter().map(|b| b.0).collect::<Vec<_>>();
    response
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| {
            (
                p.partition_index,
                ids(&p.replicas),
                ids(&p.adding_replicas),
                ids(&p.removing_replicas),
            )
        })
        .collect()
}

/// AlterReplicaLogDirs v2 of `moving-0` to `dir` through `bootstrap`: the partition's code.
async fn move_between_dirs(bootstrap: &str, dir: &std::path::Path) -> i16 {
    use kafka_protocol::messages::AlterReplicaLogDirsRequest;
    use kafka_protocol::messages::alter_replica_log_dirs_request::{
        AlterReplicaLogDir, AlterReplicaLogDirTopic,
    };
    let mut client = Client::connect(bootstrap).await.unwrap();
    let request = AlterReplicaLogDirsRequest::default().with_dirs(vec![
        AlterReplicaLogDir::default()
            .with_path(StrBytes::from_string(dir.display().to_string()))
            .with_topics(vec![
                AlterReplicaLogDirTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
                    .with_partitions(vec![0]),
            ]),
    ]);
    let response = client.send(&request, 2).await.unwrap();
    response.results[0].partitions[0].error_code
}

/// A partition of node 1 alone, with 5,000 acknowledged records, reassigned to nodes 2 and 3:
/// the new replicas catch up, the reassignment completes (ListPartitionReassignments empties,
/// Metadata names 2 and 3 only), node 1's log of it is deleted, and every acknowledged record
/// is read from the new leader. A second cancel has nothing to cancel (85), and node 1 answers
/// AlterReplicaLogDirs of it with REPLICA_NOT_AVAILABLE.
#[test]
fn a_partition_moves_to_other_brokers_with_its_records() {
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up_with(root.path(), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let topic = NewTopic::new(TOPIC, 1, TopicReplication::Variable(&[&[1]]));
    create_topics(&runtime, &cluster.bootstrap(1), &[&topic]);
    let checker = std::sync::Mutex::new(Checker::default());
    let failed = runtime.block_on(produce_acked(&cluster.bootstrap(1), TOPIC, (0, 5000), &checker));
    assert_eq!(failed, 0, "{}", cluster.logs());
    assert_eq!(isrs(&cluster.bootstrap(2), TOPIC)[&0], (1, vec![1]));
    let bootstrap = cluster.bootstrap(2);
    assert_eq!(runtime.block_on(reassign(&bootstrap, Some(&[2, 3]))), 0);
    let moved = poll_until(
        "the reassignment done",
        Duration::from_mins(1),
        || cluster.logs(),
        || {
            runtime.block_on(under_way(&bootstrap)).is_empty()
                && isrs(&bootstrap, TOPIC).get(&0).is_some_and(|(leader, isr)| {
                    [2, 3].contains(leader) && {
                        let mut isr = isr.clone();
                        isr.sort_unstable();
                        isr == [2, 3]
                    }
                })
        },
    );
    let old_log = cluster.dir.join(format!("node-1/data/{TOPIC}-0"));
    poll_until(
        "node 1's log of it gone",
        Duration::from_secs(30),
        || cluster.logs(),
        || !old_log.exists(),
    );
    assert_eq!(runtime.block_on(reassign(&bootstrap, None)), 85, "nothing to cancel");
    // Node 1 holds no replica of it now: moving it between node 1's directories is
    // REPLICA_NOT_AVAILABLE (9), as Kafka answers while a replica is not created yet.
    let data = std::path::absolute(cluster.dir.join("node-1/data")).unwrap();
    assert_eq!(runtime.block_on(move_between_dirs(&cluster.bootstrap(1), &data)), 9);
    let report = checker.lock().unwrap().check(&cluster.bootstrap(3), TOPIC, 1);
    println!(
        "reassignment: 5,000 records moved from [1] to [2, 3] in {moved:?}; checker {report:?}"
    );
    assert!(report.clean(), "{report:?}");
    assert_eq!((report.acked, report.read), (5000, 5000));
}
