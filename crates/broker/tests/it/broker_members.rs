//! Brokers in a cluster, their side of it: three controller processes' worth of voters
//! (`ControllerProcess`) and two brokers (`BrokerMember`) in this process on 127.0.0.1. Each
//! broker replicates the committed metadata as a learner, registers, and is unfenced once its
//! heartbeat shows it caught up; a broker that stops heartbeating is fenced after
//! `broker.session.timeout.ms`, on the voters and in the other broker's own copy of the
//! metadata; and killing the active controller fences nobody (the new one gives every broker a
//! fresh session and the brokers follow it).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use seglog_broker::cluster::broker_member::BrokerMember;
use seglog_broker::cluster::controller_process::ControllerProcess;
use seglog_broker::cluster::kraft_config::{KraftConfig, ProcessRole, Voter};
use seglog_broker::cluster::raft::node::QuorumTimings;
use seglog_broker::cluster::raft::transport::QuorumTransport;
use seglog_storage::dirs::meta::MetaProperties;
use seglog_storage::io::StdFs;
use tokio::net::TcpListener;

const SESSION_MS: i64 = 3_000;
const HEARTBEAT: Duration = Duration::from_millis(300);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn config(id: i32, voters: &BTreeMap<i32, Voter>, dir: &std::path::Path) -> KraftConfig {
    let port = voters[&id].port;
    KraftConfig {
        roles: [ProcessRole::Controller].into(),
        node_id: id,
        voters: voters.clone(),
        bootstrap_servers: Vec::new(),
        controller_listener: Some(("127.0.0.1".to_owned(), port)),
        metadata_log_dir: dir.to_owned(),
        broker_session_timeout_ms: SESSION_MS,
        eligible_leader_replicas: true,
        metadata_max_idle_interval_ms: 500,
        snapshot_after_bytes: 1 << 20,
        snapshot_interval_ms: 3_600_000,
        timings: QuorumTimings { snapshot_after_entries: None, ..QuorumTimings::default() },
    }
}

async fn start_controller(config: &KraftConfig) -> ControllerProcess {
    ControllerProcess::start(config, Arc::new(StdFs), &QuorumTransport::plaintext()).await.unwrap()
}

async fn start_broker(
    id: i32,
    dir: &std::path::Path,
    voters: &BTreeMap<i32, Voter>,
) -> BrokerMember {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let registration = crate::quorum::registration(id);
    let addrs = voters.values().map(Voter::address).collect();
    let listener = (listener, QuorumTransport::plaintext());
    BrokerMember::start(Arc::new(StdFs), dir, listener, addrs, registration, HEARTBEAT)
        .await
        .unwrap()
}

/// Waits (polling the images, at most 30 s) until `check` holds.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "{what}: not within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn fenced(image: &seglog_broker::cluster::image::MetadataImage, id: i32) -> Option<bool> {
    image.brokers.get(&id).map(|b| b.fenced)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_register_catch_up_and_are_fenced_when_silent() {
    let root = tempfile::tempdir().unwrap();
    let voters: BTreeMap<i32, Voter> = (1..=3)
        .map(|id| (id, Voter { id, host: "127.0.0.1".to_owned(), port: free_port() }))
        .collect();
    let mut controllers = Vec::new();
    for id in 1..=3 {
        let dir = root.path().join(format!("controller-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let meta = MetaProperties {
            version: 1,
            node_id: Some(id),
            cluster_id: Some("AAAAAAAAAAAAAAAAAAAAAQ".to_owned()),
            ..MetaProperties::default()
        };
        meta.write(&StdFs, &dir).unwrap();
        controllers.push(Some(start_controller(&config(id, &voters, &dir)).await));
    }
    let status = |c: &Option<ControllerProcess>| c.as_ref().map(|c| c.node().status());
    until("the quorum with metadata.version", || {
        status(&controllers[0]).is_some_and(|s| s.voters.len() == 3 && s.metadata_version.is_some())
    })
    .await;

    let b1 = start_broker(101, &root.path().join("broker-101"), &voters).await;
    let b2 = start_broker(102, &root.path().join("broker-102"), &voters).await;
    until("both brokers registered and unfenced, on the voters and in their own metadata", || {
        let image = controllers[0].as_ref().unwrap().node().state().image();
        [101, 102].iter().all(|id| fenced(&image, *id) == Some(false))
            && !b1.is_fenced()
            && !b2.is_fenced()
            && [101, 102].iter().all(|id| fenced(&b1.image(), *id) == Some(false))
    })
    .await;
    let learners = status(&controllers[0]).unwrap().learners;
    assert_eq!(learners, vec![101, 102], "the brokers replicate as learners");

    // The active controller dies: nobody is fenced for it, and the brokers follow the new one.
    let leader = status(&controllers[0]).unwrap().leader.unwrap();
    let index = usize::try_from(leader - 1).unwrap();
    controllers[index].take().unwrap().shutdown().await;
    let survivor = controllers.iter().position(Option::is_some).unwrap();
    until("a new active controller", || {
        status(&controllers[survivor]).is_some_and(|s| s.leader.is_some_and(|l| l != leader))
    })
    .await;
    let epoch_before = b1.epoch();
    // Two sessions' time under the new controller, the brokers heartbeating throughout.
    let watched = tokio::time::Instant::now();
    until("two sessions under the new controller", || {
        watched.elapsed() > Duration::from_millis(2 * SESSION_MS as u64)
    })
    .await;
    let image = controllers[survivor].as_ref().unwrap().node().state().image();
    assert_eq!(fenced(&image, 101), Some(false), "a live broker was fenced by the failover");
    assert_eq!(fenced(&image, 102), Some(false));
    assert_eq!(b1.epoch(), epoch_before, "the broker did not need to register again");

    // A broker that stops heartbeating is fenced after its session, everywhere.
    b2.shutdown().await;
    until("the silent broker fenced, in the voters' and the other broker's metadata", || {
        fenced(&controllers[survivor].as_ref().unwrap().node().state().image(), 102) == Some(true)
            && fenced(&b1.image(), 102) == Some(true)
            && fenced(&b1.image(), 101) == Some(false)
    })
    .await;

    b1.shutdown().await;
    for controller in controllers.into_iter().flatten() {
        controller.shutdown().await;
    }
}
