//! A process with `process.roles=controller` (Kafka's `ControllerServer`): a voter of the
//! metadata quorum on its controller listener, over a formatted metadata log directory.
//!
//! With the static `controller.quorum.voters`, the voter with the lowest id bootstraps a new
//! quorum alone (only on an empty log, so never twice), then, while it leads, adds each other
//! voter as it comes up (a learner that catches up, then a membership change) and writes the
//! bootstrap records once every voter is in. The voters are never initialised together.

use std::sync::Arc;
use std::time::Duration;

use seglog_storage::dirs::meta::MetaProperties;
use seglog_storage::io::Fs;
use tokio::net::TcpListener;

use super::controller::{Controller, ControllerConfig};
use super::kraft_config::KraftConfig;
use super::raft::NodeId;
use super::raft::node::{MetadataNode, QuorumError};
use super::raft::transport::QuorumTransport;
use super::records::MetadataRecord;

/// How often the bootstrapping voter looks for voters to add.
const JOIN_RETRY: Duration = Duration::from_millis(500);
/// How often the leader looks for brokers to fence.
const FENCE_CHECK: Duration = Duration::from_secs(1);
/// How often a voter looks whether a snapshot is due.
const SNAPSHOT_CHECK: Duration = Duration::from_secs(1);
/// The longest one attempt to add a voter may take.
const JOIN_TIMEOUT: Duration = Duration::from_secs(10);

/// A running controller.
#[derive(Debug)]
pub struct ControllerProcess {
    node: Arc<MetadataNode>,
    joiner: Option<tokio::task::JoinHandle<()>>,
    idle_writer: Option<tokio::task::JoinHandle<()>>,
    snapshotter: tokio::task::JoinHandle<()>,
    fencer: tokio::task::JoinHandle<()>,
    cluster_id: String,
}

/// Why a controller cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerStartError {
    #[error(
        "No `meta.properties` found in {0} (have you run `seglog format` to format the directory?)"
    )]
    NotFormatted(String),
    #[error("Stored node id {stored} doesn't match previous node id {configured} in {dir}")]
    NodeIdMismatch { stored: i32, configured: i32, dir: String },
    #[error("{0}")]
    Storage(#[from] seglog_storage::Error),
    #[error("{0}")]
    Quorum(#[from] QuorumError),
}

impl ControllerProcess {
    /// Starts the voter, its quorum connections carried by `transport` (the controller
    /// listener's security, [`QuorumTransport::from_properties`]).
    pub async fn start(
        config: &KraftConfig,
        fs: Arc<dyn Fs>,
        transport: &Arc<QuorumTransport>,
    ) -> Result<Self, ControllerStartError> {
        let dir = &config.metadata_log_dir;
        let meta = MetaProperties::read(fs.as_ref(), dir)?
            .filter(|meta| meta.cluster_id.is_some())
            .ok_or_else(|| ControllerStartError::NotFormatted(dir.display().to_string()))?;
        if meta.node_id != Some(config.node_id) {
            return Err(ControllerStartError::NodeIdMismatch {
                stored: meta.node_id.unwrap_or(-1),
                configured: config.node_id,
                dir: dir.display().to_string(),
            });
        }
        let (host, port) = config.controller_listener.clone().unwrap_or_default();
        let host =
            if host.is_empty() || host == "localhost" { "127.0.0.1".to_owned() } else { host };
        let listener = TcpListener::bind((host.as_str(), port))
            .await
            .map_err(|e| ControllerStartError::Quorum(QuorumError::Bind(e)))?;
        let controller = ControllerConfig {
            session_timeout_ms: config.broker_session_timeout_ms,
            eligible_leader_replicas: config.eligible_leader_replicas,
        };
        let id = NodeId::try_from(config.node_id).unwrap_or_default();
        let transport = (listener, Arc::clone(transport));
        let node = MetadataNode::start(id, fs, dir, transport, config.timings, controller).await?;
        let node = Arc::new(node);
        let first_voter = config.voters.keys().next() == Some(&config.node_id);
        // From the files, not Raft's metrics, which may not be filled in yet.
        if first_voter && node.log().is_pristine() {
            node.bootstrap().await?;
        }
        let joiner = first_voter.then(|| {
            let voters: Vec<(NodeId, String)> = config
                .voters
                .values()
                .map(|v| (NodeId::try_from(v.id).unwrap_or_default(), v.address()))
                .collect();
            tokio::spawn(join_voters(Arc::clone(&node), voters))
        });
        let idle_writer = (config.metadata_max_idle_interval_ms > 0).then(|| {
            let interval = Duration::from_millis(config.metadata_max_idle_interval_ms);
            tokio::spawn(write_when_idle(Arc::clone(&node), interval))
        });
        let snapshotter = tokio::spawn(take_snapshots(
            Arc::clone(&node),
            config.snapshot_after_bytes,
            Duration::from_millis(config.snapshot_interval_ms),
        ));
        let fencer = tokio::spawn(fence_silent_brokers(Arc::clone(&node)));
        let cluster_id = meta.cluster_id.unwrap_or_default();
        Ok(Self { node, joiner, idle_writer, snapshotter, fencer, cluster_id })
    }

    /// The voter.
    pub fn node(&self) -> &MetadataNode {
        &self.node
    }

    /// The voter, shared (a combined node's broker reads the metadata through it).
    pub fn node_handle(&self) -> Arc<MetadataNode> {
        Arc::clone(&self.node)
    }

    /// The cluster id from `meta.properties`.
    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    /// Stops the voter.
    pub async fn shutdown(mut self) {
        for task in [self.joiner.take(), self.idle_writer.take()].into_iter().flatten() {
            task.abort();
        }
        self.snapshotter.abort();
        self.fencer.abort();
        self.node.shutdown().await;
    }
}

/// On the leader, each second: fences the brokers whose session expired (Kafka's
/// `maybeFenceOneStaleBroker`, one per call, repeated while there are more). A voter that has
/// just become leader first gives every broker a fresh session: their last heartbeats went to
/// its predecessor.
async fn fence_silent_brokers(node: Arc<MetadataNode>) {
    let mut ticks = tokio::time::interval(FENCE_CHECK);
    let mut leading = false;
    loop {
        ticks.tick().await;
        let operator = node.operator();
        if !operator.is_leader() {
            leading = false;
            continue;
        }
        let now = crate::cluster::raft::node::now_ms();
        if !leading {
            operator.state().with_controller(|c, _| c.touch_all(now));
            leading = true;
        }
        loop {
            let fenced = operator
                .operate_with(now, |c, _| {
                    let records = c.fence_stale_broker(now);
                    Ok((!records.is_empty(), records))
                })
                .await;
            match fenced {
                Ok(true) => tracing::info!("fenced a broker whose session expired"),
                Ok(false) => break,
                Err(error) => {
                    tracing::debug!(%error, "fencing check failed");
                    break;
                }
            }
        }
    }
}

/// Every voter's own snapshots, by bytes and by time (checked each second).
async fn take_snapshots(node: Arc<MetadataNode>, bytes_max: u64, interval: Duration) {
    let mut last = std::time::Instant::now();
    let mut ticks = tokio::time::interval(SNAPSHOT_CHECK);
    loop {
        ticks.tick().await;
        node.maybe_snapshot(bytes_max, interval, &mut last).await;
    }
}

/// Kafka's `metadata.max.idle.interval.ms`: while this voter leads, a `NoOpRecord` every
/// `interval`, so the log (and every voter's applied offset) advances even when nothing
/// changes, and a voter that stopped hearing from the leader can tell.
async fn write_when_idle(node: Arc<MetadataNode>, interval: Duration) {
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let status = node.status();
        if status.leader != Some(node.id()) || status.metadata_version.is_none() {
            continue;
        }
        let now = crate::cluster::raft::node::now_ms();
        let wrote = tokio::time::timeout(
            interval * 4,
            node.operate(now, |_, _| Ok(vec![MetadataRecord::NoOp])),
        )
        .await;
        if let Ok(Err(error)) = wrote {
            tracing::debug!(%error, "no NoOpRecord this time");
        }
    }
}

/// On the bootstrapping voter: while it leads, adds the voters not yet in the quorum, then
/// writes the bootstrap records once; retries until both are done.
async fn join_voters(node: Arc<MetadataNode>, voters: Vec<(NodeId, String)>) {
    let mut bootstrapped = false;
    loop {
        let status = node.status();
        if status.leader == Some(node.id()) {
            for (id, addr) in &voters {
                if status.voters.contains(id) {
                    continue;
                }
                match tokio::time::timeout(JOIN_TIMEOUT, node.add_voter(*id, addr)).await {
                    Ok(Ok(())) => tracing::info!(voter = id, %addr, "voter joined the quorum"),
                    Ok(Err(error)) => tracing::debug!(voter = id, %error, "voter not added yet"),
                    Err(_) => tracing::debug!(voter = id, "voter not reachable yet"),
                }
            }
            let status = node.status();
            let all_in = voters.iter().all(|(id, _)| status.voters.contains(id));
            if all_in && status.metadata_version.is_none() && !bootstrapped {
                let now = crate::cluster::raft::node::now_ms();
                match node.operate(now, |_, _| Ok(Controller::bootstrap_records())).await {
                    Ok(()) => bootstrapped = true,
                    Err(error) => tracing::warn!(%error, "bootstrap records not written yet"),
                }
            }
            if all_in && (bootstrapped || status.metadata_version.is_some()) {
                return;
            }
        }
        tokio::time::sleep(JOIN_RETRY).await;
    }
}
