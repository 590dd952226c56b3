//! The metadata quorum on openraft, three voters in this process on 127.0.0.1: bootstrap one,
//! join two, run controller operations through the leader, kill the leader, go on with two of
//! three, bring it back. The voters' `__cluster_metadata-0` batches are byte-identical up to the
//! committed index and every voter applies the same image. (The network faults in namespaces
//! come with the cluster's broker side.)

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use seglog_broker::cluster::controller::{
    BrokerRegistrationRequest, ControllerConfig, HeartbeatRequest,
};
use seglog_broker::cluster::raft::NodeId;
use seglog_broker::cluster::raft::node::{MetadataNode, QuorumTimings};
use seglog_broker::cluster::raft::transport::QuorumTransport;
use seglog_broker::cluster::records::Endpoint;
use seglog_storage::io::StdFs;
use tokio::net::TcpListener;

struct Member {
    id: NodeId,
    dir: tempfile::TempDir,
    addr: String,
    node: Option<MetadataNode>,
}

async fn start(id: NodeId, dir: &std::path::Path, listener: TcpListener) -> MetadataNode {
    start_over(id, dir, listener, QuorumTransport::plaintext()).await
}

async fn start_over(
    id: NodeId,
    dir: &std::path::Path,
    listener: TcpListener,
    transport: Arc<QuorumTransport>,
) -> MetadataNode {
    // Snapshots and purges early, so a voter that comes back catches up from a snapshot.
    let timings = QuorumTimings {
        snapshot_after_entries: Some(20),
        entries_kept_after_snapshot: 2,
        ..QuorumTimings::default()
    }
    .for_voter(usize::try_from(id - 1).unwrap(), 3);
    let config = ControllerConfig::default();
    MetadataNode::start(id, Arc::new(StdFs), dir, (listener, transport), timings, config)
        .await
        .unwrap()
}

async fn members() -> Vec<Member> {
    let mut out = Vec::new();
    for id in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let node = start(id, dir.path(), listener).await;
        out.push(Member { id, dir, addr, node: Some(node) });
    }
    out
}

/// Waits until some running member leads, other than `not`; returns its id.
async fn leader(members: &[Member], not: Option<NodeId>) -> NodeId {
    let node = members.iter().find_map(|m| m.node.as_ref()).unwrap();
    let metrics = node
        .raft()
        .wait(Some(MetadataNode::WAIT))
        .metrics(|m| m.current_leader.is_some() && m.current_leader != not, "a leader")
        .await
        .unwrap();
    metrics.current_leader.unwrap()
}

fn node(members: &[Member], id: NodeId) -> &MetadataNode {
    members.iter().find(|m| m.id == id).and_then(|m| m.node.as_ref()).unwrap()
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis(),
    )
    .unwrap()
}

/// A broker's registration as the tests send it: one PLAINTEXT listener, no rack.
pub(crate) fn registration(id: i32) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest {
        broker_id: id,
        incarnation_id: [u8::try_from(id).unwrap(); 16],
        endpoints: vec![Endpoint {
            name: "PLAINTEXT".to_owned(),
            host: "127.0.0.1".to_owned(),
            port: 9092,
            security_protocol: 0,
        }],
        rack: None,
        clean_shutdown: false,
    }
}

/// Registers brokers 1..=3 (as the voters' own brokers would) and unfences them.
async fn register_brokers(leader: &MetadataNode) {
    for id in 1..=3i32 {
        let request = registration(id);
        let now = now_ms();
        leader.operate(now, |c, next| c.register_broker(&request, next, now)).await.unwrap();
        let epoch = leader.state().image().brokers[&id].epoch;
        let heartbeat = HeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: i64::MAX,
            want_fence: false,
            want_shutdown: false,
        };
        leader
            .operate(now, |c, _| c.heartbeat(&heartbeat, now).map(|(_, records)| records))
            .await
            .unwrap();
    }
}

async fn create_topic(leader: &MetadataNode, name: &str) {
    // A topic id from the name (unique here); the broker side draws random ones.
    let mut id = [0xA5; 16];
    for (slot, byte) in id.iter_mut().zip(name.bytes()) {
        *slot = byte;
    }
    leader
        .operate(now_ms(), |c, next| c.create_topic(name, 3, 3, &[], id, next as usize))
        .await
        .unwrap();
}

/// (base offset, Raft index, term, bytes) of each batch, for a failure's message.
fn summary(log: &[u8]) -> Vec<(i64, i64, i32, usize)> {
    seglog_format::Batches::new(log)
        .map(|item| {
            let batch = item.unwrap().batch;
            let seglog_format::Batch::V2(v2) = &batch else { return (-1, -1, -1, 0) };
            (
                batch.base_offset(seglog_format::DecodeLimits::default()).unwrap(),
                v2.producer_id(),
                v2.partition_leader_epoch(),
                batch.as_bytes().len(),
            )
        })
        .collect()
}

/// Waits until every running member has applied `index` (the leader's state machine's: Raft's
/// metrics may trail it), then checks they agree: the same image and the same batches up to it.
async fn converged(members: &[Member], index: u64) {
    let mut images = Vec::new();
    let mut logs = Vec::new();
    for m in members {
        let Some(node) = &m.node else { continue };
        node.raft()
            .wait(Some(MetadataNode::WAIT))
            .applied_index_at_least(Some(index), "applied")
            .await
            .unwrap();
        images.push((m.id, node.state().image()));
        logs.push((m.id, node.log().batches_up_to(index).unwrap()));
    }
    for (id, image) in &images[1..] {
        assert_eq!(image, &images[0].1, "voter {id}'s image differs from voter {}'s", images[0].0);
    }
    // Logs compare from the first index every voter still holds (snapshots purge prefixes).
    let shortest = logs.iter().map(|(_, log)| log.len()).min().unwrap();
    assert!(shortest > 0, "no batch to compare");
    for (id, log) in &logs {
        let tail = &log[log.len() - shortest..];
        let reference = &logs[0].1[logs[0].1.len() - shortest..];
        assert!(
            tail == reference,
            "voter {id}'s __cluster_metadata-0 differs: {:?} against {:?}",
            summary(log),
            summary(&logs[0].1)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_survive_the_loss_of_their_leader() {
    // RUST_LOG=openraft=debug shows the elections.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .try_init();
    }
    let mut members = members().await;
    node(&members, 1).bootstrap().await.unwrap();
    assert_eq!(leader(&members, None).await, 1);
    let addrs: Vec<(NodeId, String)> = members.iter().map(|m| (m.id, m.addr.clone())).collect();
    for (id, addr) in &addrs[1..] {
        node(&members, 1).add_voter(*id, addr).await.unwrap();
    }
    let first = node(&members, 1);
    first
        .operate(now_ms(), |_, _| {
            Ok(seglog_broker::cluster::controller::Controller::bootstrap_records())
        })
        .await
        .unwrap();
    register_brokers(first).await;
    create_topic(first, "before").await;
    let committed = first.state().last_applied_index().unwrap();
    converged(&members, committed).await;
    let image = first.state().image();
    assert_eq!(image.brokers.len(), 3);
    assert!(image.brokers.values().all(|b| !b.fenced));
    assert_eq!(image.topic("before").unwrap().partitions.len(), 3);

    // Kill the leader: the other two elect one and go on.
    let killed_at = Instant::now();
    members[0].node.take().unwrap().shutdown().await;
    println!("shutdown took {:?}", killed_at.elapsed());
    let new_leader = leader(&members, Some(1)).await;
    let failover = killed_at.elapsed();
    println!("failover after killing the leader: {failover:?} (new leader {new_leader})");
    assert!(failover < Duration::from_secs(10), "{failover:?}");
    let second = node(&members, new_leader);
    create_topic(second, "during").await;
    // Enough entries for a snapshot and a purge on the two live voters.
    for n in 0..30 {
        create_topic(second, &format!("t{n}")).await;
    }
    let committed = second.state().last_applied_index().unwrap();
    converged(&members, committed).await;

    // Back from the dead: its log ends before the leader's first entry, so it catches up from a
    // snapshot, and agrees.
    let listener = TcpListener::bind(&members[0].addr).await.unwrap();
    let restarted = start(1, members[0].dir.path(), listener).await;
    members[0].node = Some(restarted);
    create_topic(node(&members, new_leader), "after").await;
    let committed = node(&members, new_leader).state().last_applied_index().unwrap();
    converged(&members, committed).await;
    let purged = node(&members, new_leader).raft().metrics().borrow().purged.map(|id| id.index);
    assert!(purged.is_some_and(|p| p > 20), "the leader purged up to {purged:?}");
    let snapshot = node(&members, 1).raft().metrics().borrow().snapshot;
    assert!(snapshot.is_some(), "the restarted voter caught up without a snapshot");
    let image = node(&members, 1).state().image();
    assert!(image.topic("during").is_some() && image.topic("after").is_some());
    assert_eq!(image.topic_ids.len(), 33);

    // A voter whose log was purged below its snapshots restarts from its newest `.checkpoint`
    // (the log alone no longer holds the early records) and agrees again.
    let purged_voter = members.iter().position(|m| m.id != 1 && m.id != new_leader).unwrap();
    let purged_dir = members[purged_voter].dir.path().join("__cluster_metadata-0");
    let checkpoints = std::fs::read_dir(&purged_dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".checkpoint"))
        .count();
    assert!(checkpoints >= 1, "no .checkpoint in {}", purged_dir.display());
    members[purged_voter].node.take().unwrap().shutdown().await;
    let listener = TcpListener::bind(&members[purged_voter].addr).await.unwrap();
    let id = members[purged_voter].id;
    members[purged_voter].node = Some(start(id, members[purged_voter].dir.path(), listener).await);
    create_topic(node(&members, new_leader), "last").await;
    let committed = node(&members, new_leader).state().last_applied_index().unwrap();
    converged(&members, committed).await;
    assert_eq!(node(&members, id).state().image().topic_ids.len(), 34);
    for m in &mut members {
        if let Some(node) = m.node.take() {
            node.shutdown().await;
        }
    }
}

/// A hostile peer on the quorum port: a frame longer than the limit and a body that is not an
/// RPC each close that connection, and the voter goes on answering others.
#[tokio::test]
async fn hostile_frames_close_the_connection_only() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let voter = start(1, dir.path(), listener).await;
    voter.bootstrap().await.unwrap();
    for frame in [u32::MAX.to_be_bytes().to_vec(), [&5u32.to_be_bytes()[..], b"{oops"].concat()] {
        let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
        stream.write_all(&frame).await.unwrap();
        let mut buf = [0u8; 16];
        let read =
            tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.unwrap();
        assert_eq!(read.unwrap_or(0), 0, "the connection is closed without an answer");
    }
    let plaintext = QuorumTransport::plaintext();
    let status = seglog_broker::cluster::raft::network::fetch_status(
        &addr,
        Duration::from_secs(5),
        &plaintext,
    )
    .await
    .unwrap();
    assert_eq!(status.node_id, 1);
    voter.shutdown().await;
}
