//! A broker's membership in a cluster (Kafka's `BrokerLifecycleManager` with the broker's
//! `KafkaRaftManager` as an observer): it replicates the committed metadata as a learner of
//! the quorum (openraft's non-voting member), registers with the active controller, and
//! heartbeats with the metadata offset it has applied, so that the controller unfences it once
//! it has caught up and fences it when it goes silent. A refusal names the leader, which the
//! next call goes to; a stale epoch registers again.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use seglog_storage::io::Fs;
use tokio::net::TcpListener;

use super::controller::{BrokerRegistrationRequest, ControllerConfig, HeartbeatRequest};
use super::image::MetadataImage;
use super::raft::NodeId;
use super::raft::network::{RegisterBrokerRpc, send_heartbeat, send_registration};
use super::raft::node::{MetadataNode, QuorumError, QuorumTimings};
use super::raft::transport::QuorumTransport;

/// How long one registration or heartbeat may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long to wait before trying the next voter after a failure.
const RETRY: Duration = Duration::from_millis(200);

/// A broker in a cluster.
#[derive(Debug)]
pub struct BrokerMember {
    node: Arc<MetadataNode>,
    lifecycle: tokio::task::JoinHandle<()>,
    epoch: Arc<AtomicI64>,
    fenced: Arc<AtomicBool>,
    shutdown: Arc<Shutdown>,
    /// Whether the learner is this member's own (a combined node's is the controller's).
    owns_node: bool,
    voters: Vec<String>,
}

/// What the lifecycle task shares with the member.
#[derive(Debug, Clone)]
struct Shared {
    node: Arc<MetadataNode>,
    voters: Vec<String>,
    registration: BrokerRegistrationRequest,
    heartbeat_interval: Duration,
    epoch: Arc<AtomicI64>,
    fenced: Arc<AtomicBool>,
    shutdown: Arc<Shutdown>,
}

/// A controlled shutdown (Kafka's `BrokerLifecycleManager.beginControlledShutdown`): asked for
/// by the broker, granted by the controller once the broker leads nothing.
#[derive(Debug, Default)]
struct Shutdown {
    wanted: AtomicBool,
    granted: AtomicBool,
    changed: tokio::sync::Notify,
}

impl BrokerMember {
    /// Starts the learner (its metadata log under `metadata_dir`, Raft's RPCs on `listener`,
    /// connections carried by `transport`) and the lifecycle: register with the voters at
    /// `voters` (`host:port`), then heartbeat every `heartbeat_interval`
    /// (`broker.heartbeat.interval.ms`).
    pub async fn start(
        fs: Arc<dyn Fs>,
        metadata_dir: &Path,
        listener: (TcpListener, Arc<QuorumTransport>),
        voters: Vec<String>,
        registration: BrokerRegistrationRequest,
        heartbeat_interval: Duration,
    ) -> Result<Self, QuorumError> {
        let id = NodeId::try_from(registration.broker_id)
            .map_err(|_| QuorumError::Raft("a negative broker id".to_owned()))?;
        let timings = QuorumTimings { snapshot_after_entries: None, ..QuorumTimings::default() };
        let node = MetadataNode::start(
            id,
            fs,
            metadata_dir,
            listener,
            timings,
            ControllerConfig::default(),
        )
        .await?;
        Ok(Self::start_on(Arc::new(node), voters, registration, heartbeat_interval, true))
    }

    /// The lifecycle over a quorum member already running: a combined node's voter, which
    /// holds the metadata itself, registers its broker with its own Raft address.
    pub fn start_on(
        node: Arc<MetadataNode>,
        voters: Vec<String>,
        registration: BrokerRegistrationRequest,
        heartbeat_interval: Duration,
        owns_node: bool,
    ) -> Self {
        let epoch = Arc::new(AtomicI64::new(-1));
        let fenced = Arc::new(AtomicBool::new(true));
        let shutdown = Arc::new(Shutdown::default());
        let shared = Shared {
            node: Arc::clone(&node),
            voters: voters.clone(),
            registration,
            heartbeat_interval,
            epoch: Arc::clone(&epoch),
            fenced: Arc::clone(&fenced),
            shutdown: Arc::clone(&shutdown),
        };
        let lifecycle = tokio::spawn(lifecycle(shared));
        Self { node, lifecycle, epoch, fenced, shutdown, owns_node, voters }
    }

    /// The quorum member that holds this broker's metadata.
    pub fn node(&self) -> &Arc<MetadataNode> {
        &self.node
    }

    /// The voters' addresses, `host:port`.
    pub fn voters(&self) -> &[String] {
        &self.voters
    }

    /// The broker epoch of the current registration, -1 before one.
    pub fn epoch(&self) -> i64 {
        self.epoch.load(Ordering::SeqCst)
    }

    /// The flag behind [`Self::is_fenced`], for tasks that watch it.
    pub fn fenced_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.fenced)
    }

    /// Whether the last heartbeat's answer said fenced.
    pub fn is_fenced(&self) -> bool {
        self.fenced.load(Ordering::SeqCst)
    }

    /// The committed metadata as this broker has applied it.
    pub fn image(&self) -> MetadataImage {
        self.node.state().image()
    }

    /// Controlled shutdown: heartbeats ask to stop, the controller moves this broker's
    /// leaderships away (a partition with no other in-sync replica is left without a leader,
    /// its ISR kept) and fences it; returns whether that happened within `timeout`. A broker
    /// never registered, or already fenced, has nothing to hand over.
    pub async fn controlled_shutdown(&self, timeout: Duration) -> bool {
        if self.epoch() < 0 || self.is_fenced() {
            return true;
        }
        self.shutdown.wanted.store(true, Ordering::SeqCst);
        self.shutdown.changed.notify_one();
        let granted = async {
            while !self.shutdown.granted.load(Ordering::SeqCst) {
                let changed = self.shutdown.changed.notified();
                if self.shutdown.granted.load(Ordering::SeqCst) {
                    break;
                }
                changed.await;
            }
        };
        tokio::time::timeout(timeout, granted).await.is_ok()
    }

    /// Stops heartbeating and the learner (the controller fences it after its session).
    pub async fn shutdown(&self) {
        self.lifecycle.abort();
        if self.owns_node {
            self.node.shutdown().await;
        }
    }
}

/// Registers, then heartbeats, for as long as the broker runs.
async fn lifecycle(shared: Shared) {
    let mut voter = 0;
    loop {
        let Some(addr) = shared.voters.get(voter % shared.voters.len().max(1)).cloned() else {
            return;
        };
        if shared.epoch.load(Ordering::SeqCst) < 0 {
            let rpc = RegisterBrokerRpc {
                request: shared.registration.clone(),
                raft_addr: shared.node.addr().to_owned(),
            };
            match send_registration(&addr, rpc, CALL_TIMEOUT, shared.node.transport()).await {
                Ok(Ok(epoch)) => {
                    tracing::info!(epoch, controller = %addr, "broker registered");
                    shared.epoch.store(epoch, Ordering::SeqCst);
                    continue;
                }
                Ok(Err(refusal)) => voter = next_voter(&shared, voter, refusal.leader.as_deref()),
                Err(_) => voter += 1,
            }
            tokio::time::sleep(RETRY).await;
            continue;
        }
        let request = HeartbeatRequest {
            broker_id: shared.registration.broker_id,
            broker_epoch: shared.epoch.load(Ordering::SeqCst),
            current_metadata_offset: shared.node.state().applied_offset(),
            want_fence: false,
            want_shutdown: shared.shutdown.wanted.load(Ordering::SeqCst),
        };
        match send_heartbeat(&addr, request, CALL_TIMEOUT, shared.node.transport()).await {
            Ok(Ok(reply)) => {
                shared.fenced.store(reply.is_fenced, Ordering::SeqCst);
                if reply.should_shutdown {
                    shared.shutdown.granted.store(true, Ordering::SeqCst);
                    shared.shutdown.changed.notify_waiters();
                    return;
                }
                // Shutting down, the broker asks again soon, as Kafka's does.
                let wait = if request.want_shutdown { RETRY } else { shared.heartbeat_interval };
                let asked = shared.shutdown.changed.notified();
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = asked => {}
                }
            }
            // STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED: register again.
            Ok(Err(refusal)) if refusal.code == 77 || refusal.code == 102 => {
                shared.epoch.store(-1, Ordering::SeqCst);
                shared.fenced.store(true, Ordering::SeqCst);
            }
            Ok(Err(refusal)) => {
                voter = next_voter(&shared, voter, refusal.leader.as_deref());
                tokio::time::sleep(RETRY).await;
            }
            Err(_) => {
                voter += 1;
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

/// The voter to ask next: the leader named in a refusal when it is one of the voters, else the
/// following voter.
fn next_voter(shared: &Shared, voter: usize, leader: Option<&str>) -> usize {
    leader.and_then(|addr| shared.voters.iter().position(|v| v == addr)).unwrap_or(voter + 1)
}
