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
    reassign_partition(bootstrap, TOPIC, target).await
}

/// AlterPartitionReassignments v1 of partition 0 of `topic`: the partition's code.
async fn reassign_partition(bootstrap: &str, topic: &str, target: Option<&[i32]>) -> i16 {
    let mut client = Client::connect(bootstrap).await.unwrap();
    let partition = ReassignablePartition::default()
        .with_partition_index(0)
        .with_replicas(target.map(|t| t.iter().map(|b| BrokerId(*b)).collect()));
    let request = AlterPartitionReassignmentsRequest::default()
        .with_allow_replication_factor_change(true)
        .with_topics(vec![
            ReassignableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.to_owned())))
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

/// IncrementalAlterConfigs v1 through `bootstrap`: `key` of the resource (2 a topic, 4 a
/// broker) set to `value`, or deleted.
async fn set_config(bootstrap: &str, (kind, name): (i8, &str), key: &str, value: Option<&str>) {
    use kafka_protocol::messages::IncrementalAlterConfigsRequest;
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let text = |s: &str| StrBytes::from_string(s.to_owned());
    let config = AlterableConfig::default()
        .with_name(text(key))
        .with_config_operation(i8::from(value.is_none()))
        .with_value(value.map(text));
    let resource = AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(text(name))
        .with_configs(vec![config]);
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
    let mut client = Client::connect(bootstrap).await.unwrap();
    let response = client.send(&request, 1).await.unwrap();
    assert_eq!(response.responses[0].error_code, 0, "{key}={value:?}: {response:?}");
}

/// `count` records of `size` bytes each, acknowledged by all replicas, to partition 0 of
/// `topic`.
async fn produce_bytes(bootstrap: &str, topic: &str, count: usize, size: usize) {
    use rdkafka::ClientConfig;
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "15000")
        .create()
        .unwrap();
    let payload = vec![b'x'; size];
    let mut deliveries = Vec::with_capacity(count);
    for _ in 0..count {
        let record = FutureRecord::<(), _>::to(topic).partition(0).payload(&payload);
        deliveries.push(producer.send_result(record).map_err(|(error, _)| error).unwrap());
    }
    for delivery in deliveries {
        delivery.await.unwrap().unwrap();
    }
}

/// Partition 0 of `topic` reassigned to `target` through `bootstrap`, and the time until the
/// reassignment completed with `target` as the ISR.
fn move_and_time(
    cluster: &Cluster,
    runtime: &tokio::runtime::Runtime,
    topic: &str,
    target: &[i32],
) -> Duration {
    let bootstrap = cluster.bootstrap(2);
    let start = std::time::Instant::now();
    assert_eq!(runtime.block_on(reassign_partition(&bootstrap, topic, Some(target))), 0);
    poll_until(
        &format!("{topic} moved to {target:?}"),
        Duration::from_mins(1),
        || cluster.logs(),
        || {
            runtime.block_on(under_way(&bootstrap)).is_empty()
                && isrs(&bootstrap, topic).get(&0).is_some_and(|(_, isr)| {
                    let mut isr = isr.clone();
                    isr.sort_unstable();
                    isr == target
                })
        },
    );
    start.elapsed()
}

/// The replication throttles of a reassignment, as `kafka-reassign-partitions --throttle`
/// sets them. 6 MiB move between brokers three times: unthrottled (the control), under the
/// leader's throttle alone (`leader.replication.throttled.rate` 1 MiB/s on node 1, the
/// topic's `leader.replication.throttled.replicas` naming node 1's replica), and under the
/// follower's alone (`follower.replication.throttled.rate` on node 3, the follower list naming
/// node 3's replica). Each throttled move takes at least the time its rate allows (the first
/// window and one fetch of 1 MiB may pass at once), acks=all writes to an in-sync follower
/// pass a leader throttle of 1 byte/s, and every record arrives.
#[test]
fn a_throttled_reassignment_moves_no_faster_than_its_rate() {
    const MIB: usize = 1 << 20;
    let root = tempfile::tempdir().unwrap();
    let (cluster, _) = Cluster::up_with(root.path(), &[]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let control = NewTopic::new("control", 1, TopicReplication::Variable(&[&[1]]));
    let throttled = NewTopic::new("throttled", 1, TopicReplication::Variable(&[&[1]]));
    create_topics(&runtime, &cluster.bootstrap(1), &[&control, &throttled]);
    for topic in ["control", "throttled"] {
        runtime.block_on(produce_bytes(&cluster.bootstrap(1), topic, 6 * 1024, 1024));
    }
    let unthrottled = move_and_time(&cluster, &runtime, "control", &[1, 2]);
    let via = cluster.bootstrap(1);
    let rate = MIB.to_string();
    runtime.block_on(async {
        set_config(&via, (4, "1"), "leader.replication.throttled.rate", Some(&rate)).await;
        let list = Some("0:1");
        set_config(&via, (2, "throttled"), "leader.replication.throttled.replicas", list).await;
    });
    let by_leader = move_and_time(&cluster, &runtime, "throttled", &[1, 2]);
    // Node 2 is in the ISR now: in-sync replication is never throttled. At 1 byte/s, with
    // megabytes counted in the window, a throttled follower would get nothing, and these
    // acks=all writes would time out instead.
    runtime.block_on(async {
        set_config(&via, (4, "1"), "leader.replication.throttled.rate", Some("1")).await;
        produce_bytes(&via, "throttled", 1024, 1024).await;
        set_config(&via, (4, "1"), "leader.replication.throttled.rate", None).await;
        set_config(&via, (4, "3"), "follower.replication.throttled.rate", Some(&rate)).await;
        let list = Some("0:3");
        set_config(&via, (2, "throttled"), "follower.replication.throttled.replicas", list).await;
    });
    let by_follower = move_and_time(&cluster, &runtime, "throttled", &[1, 2, 3]);
    println!(
        "throttles: 6 MiB moved unthrottled in {unthrottled:?}, at 1 MiB/s by the leader's \
         throttle in {by_leader:?}, by the follower's in {by_follower:?}"
    );
    // 6 MiB at 1 MiB/s: at most 2 MiB pass in the first second (its window and one fetch).
    for (side, took) in [("leader", by_leader), ("follower", by_follower)] {
        assert!(
            took >= Duration::from_secs(3),
            "the {side}'s throttle let 6 MiB through in {took:?}"
        );
        assert!(took > unthrottled * 2, "{side}: {took:?} against {unthrottled:?} unthrottled");
    }
    // Every record reached each replica: their batch streams are the leader's, byte for byte.
    let logs: Vec<Vec<u8>> = (1..=3)
        .map(|node| {
            let data = cluster.dir.join(format!("node-{node}/data"));
            crate::replication::replica_log(&data, "throttled", 0)
        })
        .collect();
    assert!(logs[0].len() > 6 * MIB, "{} bytes on the leader", logs[0].len());
    assert!(logs.iter().all(|log| *log == logs[0]), "the replicas differ\n{}", cluster.logs());
}
