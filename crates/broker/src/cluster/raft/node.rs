//! A metadata quorum member (Kafka's `KafkaRaftManager` with its `QuorumController` when it
//! leads): openraft over the metadata log, the state machine and the TCP transport. The leader
//! decides each controller operation from the committed image and proposes its records as one
//! entry, one operation at a time, so every decision rests on committed metadata only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::ResponseError;
use openraft::{BasicNode, Config, SnapshotPolicy};
use seglog_storage::io::Fs;
use tokio::net::TcpListener;

use super::log_store::MetadataLogStore;
use super::network::{MetadataNetworkFactory, serve};
use super::state_machine::MetadataStateMachine;
use super::transport::QuorumTransport;
use super::{MetadataCommand, MetadataRaft, NodeId};
use crate::cluster::controller::{Controller, ControllerConfig};
use crate::cluster::records::MetadataRecord;

/// Why a quorum operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QuorumError {
    #[error("metadata log: {0}")]
    Storage(String),
    #[error("raft: {0}")]
    Raft(String),
    #[error("the controller refused: {0:?}")]
    Refused(ResponseError),
    #[error("cannot bind the controller listener: {0}")]
    Bind(std::io::Error),
}

/// The wall clock in milliseconds (the proposing leader's batch timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// How one voter sees the quorum (Kafka's DescribeQuorum, and the image's brokers).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuorumStatus {
    pub node_id: NodeId,
    pub leader: Option<NodeId>,
    pub term: u64,
    pub voters: Vec<NodeId>,
    pub learners: Vec<NodeId>,
    pub last_log_index: Option<u64>,
    pub applied_index: Option<u64>,
    /// Each registered broker: id, epoch, fenced.
    pub brokers: Vec<(i32, i64, bool)>,
    pub topics: usize,
    /// The `metadata.version` level, once bootstrapped.
    pub metadata_version: Option<i16>,
    /// On the leader: the committed end offset (Kafka's high watermark), else -1.
    #[serde(default = "no_offset")]
    pub high_watermark: i64,
    /// On the leader: each member's (voters' and learners') log end offset as the leader
    /// knows it (the end of its last matched entry; -1 when unknown); the leader's own too.
    #[serde(default)]
    pub progress: Vec<(NodeId, i64)>,
    /// Each member's Raft address, for DescribeQuorum's nodes.
    #[serde(default)]
    pub addresses: Vec<(NodeId, String)>,
    /// How many partitions have an ISR smaller than their replicas, or no leader.
    #[serde(default)]
    pub under_replicated_count: usize,
    /// The first [`UNDER_REPLICATED_LISTED_MAX`] of them: topic, partition, leader, replicas,
    /// ISR, eligible leader replicas (KIP-966).
    #[serde(default)]
    pub under_replicated: Vec<UnderReplicated>,
    /// How many followers of the partitions this node's broker leads are behind its log end.
    #[serde(default)]
    pub lagging_count: usize,
    /// The first [`UNDER_REPLICATED_LISTED_MAX`] of them, most behind first: topic, partition,
    /// follower, records behind.
    #[serde(default)]
    pub lagging: Vec<ReplicaLag>,
}

/// A follower behind its leader, as `cluster status` lists it: topic, partition, follower,
/// records behind the leader's log end (the whole log end while it has not fetched).
pub type ReplicaLag = (String, i32, i32, i64);

/// Where a node's status finds its broker's followers' lags: how many lag, and the most behind
/// (at most the given count).
pub type LagSource = Arc<dyn Fn(usize) -> (usize, Vec<ReplicaLag>) + Send + Sync>;

/// An under-replicated partition as `cluster status` lists it: topic, partition, leader,
/// replicas, ISR, ELR.
pub type UnderReplicated = (String, i32, i32, Vec<i32>, Vec<i32>, Vec<i32>);

/// The most under-replicated partitions a status lists (the count covers them all).
pub const UNDER_REPLICATED_LISTED_MAX: usize = 100;

fn no_offset() -> i64 {
    -1
}

/// The status of the node running `raft` over `state`.
pub fn quorum_status(raft: &MetadataRaft, state: &MetadataStateMachine) -> QuorumStatus {
    let metrics = raft.metrics().borrow().clone();
    let membership = metrics.membership_config.membership();
    let voters: Vec<NodeId> = membership.voter_ids().collect();
    let learners: Vec<NodeId> = membership.learner_ids().collect();
    let image = state.image();
    let leading = metrics.current_leader == Some(metrics.id);
    let end_of = |index: Option<u64>| index.and_then(|i| state.end_offset_of(i)).unwrap_or(-1);
    let mut progress = Vec::new();
    if leading {
        progress.push((metrics.id, end_of(metrics.last_log_index)));
        if let Some(replication) = &metrics.replication {
            progress.extend(
                replication
                    .iter()
                    .filter(|(id, _)| **id != metrics.id)
                    .map(|(id, matched)| (*id, end_of(matched.map(|m| m.index)))),
            );
        }
    }
    let addresses = membership.nodes().map(|(id, node)| (*id, node.addr.clone())).collect();
    let mut under_replicated_count = 0;
    let mut under_replicated = Vec::new();
    for topic in image.topics.values() {
        for (partition, p) in &topic.partitions {
            if p.isr.len() < p.replicas.len() || p.leader < 0 {
                under_replicated_count += 1;
                if under_replicated.len() < UNDER_REPLICATED_LISTED_MAX {
                    under_replicated.push((
                        topic.name.clone(),
                        *partition,
                        p.leader,
                        p.replicas.clone(),
                        p.isr.clone(),
                        p.elr.clone(),
                    ));
                }
            }
        }
    }
    QuorumStatus {
        node_id: metrics.id,
        leader: metrics.current_leader,
        term: metrics.current_term,
        voters,
        learners,
        last_log_index: metrics.last_log_index,
        applied_index: state.last_applied_index(),
        brokers: image.brokers.values().map(|b| (b.id, b.epoch, b.fenced)).collect(),
        topics: image.topics.len(),
        metadata_version: image.features.get("metadata.version").copied(),
        high_watermark: if leading { state.applied_offset() + 1 } else { -1 },
        progress,
        addresses,
        under_replicated_count,
        under_replicated,
        lagging_count: 0,
        lagging: Vec::new(),
    }
}

/// Raft's timings (Kafka's `controller.quorum.*` keys play this part).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuorumTimings {
    pub heartbeat_interval_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    /// A snapshot is taken after this many entries since the last one; `None` leaves it to
    /// [`MetadataNode::maybe_snapshot`] (bytes and time, as Kafka does).
    pub snapshot_after_entries: Option<u64>,
    /// Entries kept below a snapshot (for followers a little behind); older ones are purged.
    pub entries_kept_after_snapshot: u64,
}

impl QuorumTimings {
    /// These timings for the voter at `place` (0-based, in id order) of `voters`: an election
    /// timeout range of its own. openraft 0.9 draws a node's election timeout once, at start,
    /// from [min, max); two voters that drew close values time out together after every split
    /// vote, and an election took up to 27 s in the fault tests. Disjoint ranges (from `min`
    /// up to twice it, a slot each, half of it used) make one voter always time out first.
    #[must_use]
    pub fn for_voter(self, place: usize, voters: usize) -> Self {
        let base = self.election_timeout_min_ms;
        let slot = base / u64::try_from(voters.max(1)).unwrap_or(1);
        let min = base + u64::try_from(place).unwrap_or(0) * slot;
        Self {
            election_timeout_min_ms: min,
            election_timeout_max_ms: min + (slot / 2).max(1),
            ..self
        }
    }
}

impl Default for QuorumTimings {
    fn default() -> Self {
        Self {
            heartbeat_interval_ms: 100,
            election_timeout_min_ms: 500,
            election_timeout_max_ms: 1_000,
            snapshot_after_entries: Some(1_000),
            entries_kept_after_snapshot: 100,
        }
    }
}

/// One member of the metadata quorum.
pub struct MetadataNode {
    id: NodeId,
    addr: String,
    raft: MetadataRaft,
    log: MetadataLogStore,
    state: MetadataStateMachine,
    server: tokio::task::JoinHandle<()>,
    operator: Operator,
    transport: Arc<QuorumTransport>,
}

/// What runs controller operations on the leader, shared by the node and the RPCs that
/// brokers send: one operation at a time (decide on the committed image, propose, apply).
#[derive(Clone)]
pub struct Operator {
    raft: MetadataRaft,
    state: MetadataStateMachine,
    one_at_a_time: Arc<tokio::sync::Mutex<()>>,
    /// The lags of the followers of what this node's broker leads (set once it runs).
    lags: Arc<std::sync::OnceLock<LagSource>>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").finish_non_exhaustive()
    }
}

impl Operator {
    /// This node's status ([`quorum_status`]), with its broker's followers' lags.
    pub fn status(&self) -> QuorumStatus {
        let mut status = quorum_status(&self.raft, &self.state);
        if let Some(lags) = self.lags.get() {
            (status.lagging_count, status.lagging) = lags(UNDER_REPLICATED_LISTED_MAX);
        }
        status
    }

    /// Where [`status`](Self::status) finds the followers' lags: the broker of this node
    /// (combined, or a broker's learner), once.
    pub fn set_lag_source(&self, source: LagSource) {
        let _ = self.lags.set(source);
    }

    /// The Raft handle.
    pub fn raft(&self) -> &MetadataRaft {
        &self.raft
    }

    /// The state machine.
    pub fn state(&self) -> &MetadataStateMachine {
        &self.state
    }

    /// The leader's address when another voter leads (for a NOT_CONTROLLER answer's hint).
    pub fn leader_addr(&self) -> Option<String> {
        let metrics = self.raft.metrics().borrow().clone();
        let leader = metrics.current_leader?;
        metrics.membership_config.membership().get_node(&leader).map(|node| node.addr.clone())
    }

    /// Whether this node leads.
    pub fn is_leader(&self) -> bool {
        let metrics = self.raft.metrics().borrow().clone();
        metrics.current_leader == Some(metrics.id)
    }

    /// One operation whose decision also answers the caller: `decide` returns the answer and
    /// the records, which are committed (and applied here) before the answer is returned.
    pub async fn operate_with<T>(
        &self,
        now_ms: i64,
        decide: impl FnOnce(&mut Controller, i64) -> Result<(T, Vec<MetadataRecord>), ResponseError>,
    ) -> Result<T, QuorumError> {
        let _one_at_a_time = self.one_at_a_time.lock().await;
        self.raft.ensure_linearizable().await.map_err(|e| QuorumError::Raft(e.to_string()))?;
        let (answer, records) = self.state.with_controller(decide).map_err(QuorumError::Refused)?;
        if !records.is_empty() {
            let command = MetadataCommand {
                records: records.iter().map(MetadataRecord::encode).collect(),
                timestamp_ms: now_ms,
            };
            self.raft.client_write(command).await.map_err(|e| QuorumError::Raft(e.to_string()))?;
        }
        Ok(answer)
    }
}

impl std::fmt::Debug for MetadataNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataNode")
            .field("id", &self.id)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetadataNode {
    /// Opens the metadata log under `metadata_dir` and starts Raft, answering its RPCs on
    /// `listener`; its connections, both ways, are `transport`'s.
    pub async fn start(
        id: NodeId,
        fs: Arc<dyn Fs>,
        metadata_dir: &Path,
        (listener, transport): (TcpListener, Arc<QuorumTransport>),
        timings: QuorumTimings,
        controller: ControllerConfig,
    ) -> Result<Self, QuorumError> {
        let addr = listener.local_addr().map_err(QuorumError::Bind)?.to_string();
        let config = Config {
            cluster_name: "seglog".to_owned(),
            heartbeat_interval: timings.heartbeat_interval_ms,
            election_timeout_min: timings.election_timeout_min_ms,
            election_timeout_max: timings.election_timeout_max_ms,
            snapshot_policy: timings
                .snapshot_after_entries
                .map_or(SnapshotPolicy::Never, SnapshotPolicy::LogsSinceLast),
            max_in_snapshot_log_to_keep: timings.entries_kept_after_snapshot,
            ..Config::default()
        };
        let config = Arc::new(config.validate().map_err(|e| QuorumError::Raft(e.to_string()))?);
        let dir = metadata_dir.to_owned();
        let log = tokio::task::spawn_blocking(move || MetadataLogStore::open(fs, &dir))
            .await
            .map_err(|e| QuorumError::Storage(e.to_string()))?
            .map_err(QuorumError::Storage)?;
        let files = log.snapshot_files();
        let state = MetadataStateMachine::open(controller, log.clone(), files)
            .map_err(QuorumError::Storage)?;
        let network = MetadataNetworkFactory { transport: Arc::clone(&transport) };
        let raft = MetadataRaft::new(id, config, network, log.clone(), state.clone())
            .await
            .map_err(|e| QuorumError::Raft(e.to_string()))?;
        let operator = Operator {
            raft: raft.clone(),
            state: state.clone(),
            one_at_a_time: Arc::new(tokio::sync::Mutex::new(())),
            lags: Arc::default(),
        };
        let server = tokio::spawn(serve(listener, operator.clone(), Arc::clone(&transport)));
        Ok(Self { id, addr, raft, log, state, server, operator, transport })
    }

    /// How this node's quorum connections are carried (a broker's calls to the voters use it
    /// too).
    pub fn transport(&self) -> &Arc<QuorumTransport> {
        &self.transport
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// Where it answers Raft's RPCs.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The Raft handle (metrics, waits).
    pub fn raft(&self) -> &MetadataRaft {
        &self.raft
    }

    /// The metadata log.
    pub fn log(&self) -> &MetadataLogStore {
        &self.log
    }

    /// The committed metadata as this node has applied it.
    pub fn state(&self) -> &MetadataStateMachine {
        &self.state
    }

    /// Starts a new cluster with this node its only voter. Only the first node of a cluster
    /// does this, once; the others join through [`add_voter`](Self::add_voter).
    pub async fn bootstrap(&self) -> Result<(), QuorumError> {
        let members = BTreeMap::from([(self.id, BasicNode { addr: self.addr.clone() })]);
        self.raft.initialize(members).await.map_err(|e| QuorumError::Raft(e.to_string()))?;
        Ok(())
    }

    /// Adds a voter (on the leader): first a learner that catches up, then a membership change.
    pub async fn add_voter(&self, id: NodeId, addr: &str) -> Result<(), QuorumError> {
        let node = BasicNode { addr: addr.to_owned() };
        self.raft
            .add_learner(id, node, true)
            .await
            .map_err(|e| QuorumError::Raft(e.to_string()))?;
        let mut voters: BTreeSet<NodeId> =
            self.raft.metrics().borrow().membership_config.membership().voter_ids().collect();
        voters.insert(id);
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| QuorumError::Raft(e.to_string()))?;
        Ok(())
    }

    /// Removes a voter (on the leader).
    pub async fn remove_voter(&self, id: NodeId) -> Result<(), QuorumError> {
        let mut voters: BTreeSet<NodeId> =
            self.raft.metrics().borrow().membership_config.membership().voter_ids().collect();
        voters.remove(&id);
        self.raft
            .change_membership(voters, false)
            .await
            .map_err(|e| QuorumError::Raft(e.to_string()))?;
        Ok(())
    }

    /// One controller operation on the leader: `decide` reads the committed image (and the
    /// offset its records would start at) and returns the records, which are committed before
    /// the next operation is decided.
    pub async fn operate(
        &self,
        now_ms: i64,
        decide: impl FnOnce(&mut Controller, i64) -> Result<Vec<MetadataRecord>, ResponseError>,
    ) -> Result<(), QuorumError> {
        self.operator.operate_with(now_ms, |c, next| decide(c, next).map(|r| ((), r))).await
    }

    /// The operator (for the RPCs and the controller's tasks).
    pub fn operator(&self) -> &Operator {
        &self.operator
    }

    /// Stops Raft and the RPC listener (as a process death would, but for the files' state).
    pub async fn shutdown(&self) {
        self.server.abort();
        let _ = self.raft.shutdown().await;
    }

    /// Takes a snapshot when the log holds `bytes_max` bytes after the last one, or when
    /// `interval` has passed since `last` and something was applied since the last one
    /// (Kafka's `metadata.log.max.record.bytes.between.snapshots` and
    /// `metadata.log.max.snapshot.interval.ms`). Returns whether it asked for one.
    pub async fn maybe_snapshot(
        &self,
        bytes_max: u64,
        interval: Duration,
        last: &mut std::time::Instant,
    ) -> bool {
        let snapshot = self.raft.metrics().borrow().snapshot.map(|id| id.index);
        let applied = self.state.last_applied_index();
        if applied <= snapshot {
            return false;
        }
        let due = self.log.bytes_after(snapshot) >= bytes_max || last.elapsed() >= interval;
        if due && self.raft.trigger().snapshot().await.is_ok() {
            *last = std::time::Instant::now();
            return true;
        }
        false
    }

    /// How this node sees the quorum.
    pub fn status(&self) -> QuorumStatus {
        self.operator.status()
    }

    /// How long to wait for a quorum event in tests and tools.
    pub const WAIT: Duration = Duration::from_secs(20);
}
