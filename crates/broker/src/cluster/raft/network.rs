//! Raft's RPCs between metadata voters over TCP (Kafka's controller listener): a frame is a
//! big-endian u32 length and a JSON body, at most [`FRAME_BYTES_MAX`]; a connection carries one
//! request at a time. A frame too long, or a body that does not parse, closes the connection.
//! Connections are plain or TLS with client certificates, by the controller listener's
//! protocol ([`QuorumTransport`]).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

use super::node::{Operator, QuorumError, QuorumStatus};
use super::transport::{QuorumStream, QuorumTransport};
use super::{MetadataRaftConfig, NodeId};
use crate::cluster::controller::{BrokerRegistrationRequest, HeartbeatReply, HeartbeatRequest};

/// The longest frame read (a snapshot chunk or a batch of entries fits well within it).
pub const FRAME_BYTES_MAX: u32 = 64 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The most quorum connections served at once (voters, tools).
pub const CONNECTIONS_MAX: usize = 64;
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

#[derive(Debug, Serialize, Deserialize)]
enum Request {
    Append(AppendEntriesRequest<MetadataRaftConfig>),
    Vote(VoteRequest<NodeId>),
    Snapshot(InstallSnapshotRequest<MetadataRaftConfig>),
    /// `seglog cluster status` (Kafka's DescribeQuorum, for the tools).
    Status,
    /// A broker's BrokerRegistration: it joins the quorum as a learner (it replicates the
    /// committed metadata) and is registered.
    RegisterBroker(RegisterBrokerRpc),
    /// A broker's BrokerHeartbeat.
    Heartbeat(HeartbeatRequest),
    /// A topic change a broker forwards (Kafka's `ForwardingManager` to the controller).
    Admin(AdminRequest),
}

/// A topic change a broker forwards to the active controller: CreateTopics, CreatePartitions
/// and DeleteTopics for one topic each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminRequest {
    CreateTopic {
        name: String,
        partitions: i32,
        replication_factor: i16,
        configs: Vec<(String, String)>,
        /// A manual assignment: each partition's replicas (then `partitions` and
        /// `replication_factor` are not used).
        #[serde(default)]
        assignments: Option<Vec<Vec<i32>>>,
        /// Decide, but commit nothing (CreateTopics' `validate_only`).
        validate_only: bool,
    },
    CreatePartitions {
        name: String,
        total: i32,
        /// A manual assignment: each new partition's replicas.
        #[serde(default)]
        assignments: Option<Vec<Vec<i32>>>,
        validate_only: bool,
    },
    DeleteTopic {
        name: String,
    },
    /// AlterConfigs/IncrementalAlterConfigs of a topic: its whole new set of overrides.
    SetTopicConfigs {
        name: String,
        overrides: std::collections::BTreeMap<String, String>,
    },
    /// UnregisterBroker: the broker's registration goes (and its learner, unless it votes).
    UnregisterBroker {
        broker_id: i32,
    },
    /// AllocateProducerIds: a block of producer ids for the broker.
    AllocateProducerIds {
        broker_id: i32,
        broker_epoch: i64,
    },
    /// CreateAcls, DeleteAcls, AlterUserScramCredentials, AlterClientQuotas.
    Security(crate::cluster::security_image::SecurityChange),
    /// AlterConfigs/IncrementalAlterConfigs of a BROKER resource (`name` a broker id, or
    /// empty for the cluster default): its whole new layer.
    SetBrokerConfigs {
        name: String,
        layer: std::collections::BTreeMap<String, String>,
    },
    /// AlterPartition from a partition's leader: its new ISR.
    AlterPartition(crate::cluster::controller::AlterPartitionRequest),
    /// ElectLeaders: 0 preferred, 1 unclean; the partitions named, or all.
    ElectLeaders {
        election_type: i8,
        partitions: Option<Vec<(String, i32)>>,
    },
    /// AlterPartitionReassignments: each partition's new replicas, or `None` to cancel.
    AlterPartitionReassignments {
        partitions: Vec<(String, i32, Option<Vec<i32>>)>,
        allow_replication_factor_change: bool,
    },
}

/// A forwarded change's answer: the metadata offset it is applied at on the controller, for
/// AllocateProducerIds the block's first id, for ElectLeaders and AlterPartitionReassignments
/// each partition's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdminReply {
    pub offset: i64,
    pub producer_id_start: Option<i64>,
    #[serde(default)]
    pub elections: Vec<(String, i32, i16)>,
}

/// A broker's registration, with where its learner answers Raft's RPCs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RegisterBrokerRpc {
    pub request: BrokerRegistrationRequest,
    pub raft_addr: String,
}

/// A broker RPC the controller refused: Kafka's error code and message, and for
/// NOT_CONTROLLER the leader's address when known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("error {code}: {message}")]
pub struct Refusal {
    pub code: i16,
    pub message: String,
    pub leader: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
enum Response {
    Append(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    Snapshot(Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>),
    Status(QuorumStatus),
    Registered(Result<i64, Refusal>),
    Heartbeat(Result<HeartbeatReply, Refusal>),
    /// The metadata offset the change is applied at on the controller.
    Admin(Result<AdminReply, Refusal>),
}

async fn write_frame(stream: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| io::Error::other("frame too long"))?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(body).await?;
    stream.flush().await
}

async fn read_frame(stream: &mut (impl AsyncRead + Unpin)) -> io::Result<Vec<u8>> {
    let len = stream.read_u32().await?;
    // A TLS record's header (an alert or a handshake, version 3.x) where a length should be:
    // the other side's controller listener is SSL and this one's is not.
    if matches!(len >> 16, 0x1503 | 0x1603) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the other side speaks TLS: its controller listener is SSL (give this side the \
             listener's ssl settings, e.g. `cluster status --command-config`)",
        ));
    }
    if len > FRAME_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, above {FRAME_BYTES_MAX}"),
        ));
    }
    let mut body = vec![0; len as usize];
    stream.read_exact(&mut body).await?;
    Ok(body)
}

/// Makes a client per target voter.
#[derive(Debug, Clone)]
pub struct MetadataNetworkFactory {
    pub transport: Arc<QuorumTransport>,
}

/// A client to one voter, reconnecting after a failure.
pub struct MetadataNetwork {
    target: NodeId,
    addr: String,
    transport: Arc<QuorumTransport>,
    stream: Option<QuorumStream>,
}

impl std::fmt::Debug for MetadataNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataNetwork")
            .field("target", &self.target)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl RaftNetworkFactory<MetadataRaftConfig> for MetadataNetworkFactory {
    type Network = MetadataNetwork;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> MetadataNetwork {
        MetadataNetwork::new(target, &node.addr, &self.transport)
    }
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl MetadataNetwork {
    fn new(target: NodeId, addr: &str, transport: &Arc<QuorumTransport>) -> Self {
        Self { target, addr: addr.to_owned(), transport: Arc::clone(transport), stream: None }
    }

    /// Sends one request and reads its answer within `ttl`; any failure drops the connection.
    async fn call(&mut self, request: &Request, ttl: Duration) -> Result<Response, io::Error> {
        let body = serde_json::to_vec(request).map_err(io::Error::other)?;
        let result = tokio::time::timeout(ttl, async {
            if self.stream.is_none() {
                self.stream = Some(self.transport.connect(&self.addr, CONNECT_TIMEOUT).await?);
            }
            let stream = self.stream.as_mut().ok_or_else(|| io::Error::other("no connection"))?;
            write_frame(stream, &body).await?;
            let answer = read_frame(stream).await?;
            serde_json::from_slice(&answer).map_err(io::Error::other)
        })
        .await
        .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "rpc timed out")));
        if result.is_err() {
            self.stream = None;
        }
        result
    }

    fn unreachable<E: std::error::Error>(error: &io::Error) -> RPCError<NodeId, BasicNode, E> {
        if matches!(error.kind(), io::ErrorKind::ConnectionRefused | io::ErrorKind::TimedOut) {
            RPCError::Unreachable(Unreachable::new(error))
        } else {
            RPCError::Network(NetworkError::new(error))
        }
    }
}

impl MetadataNetwork {
    /// A voter's answer as openraft wants it: `pick` takes the expected kind of answer (its
    /// result), any other kind or a transport failure is the target being unreachable.
    #[expect(clippy::result_large_err, reason = "openraft's RaftNetwork returns its RPCError")]
    fn answer<T, E: std::error::Error>(
        &self,
        result: io::Result<Response>,
        pick: impl FnOnce(Response) -> Option<Result<T, RaftError<NodeId, E>>>,
    ) -> RpcResult<T, E> {
        let response = result.map_err(|error| Self::unreachable(&error))?;
        match pick(response) {
            Some(Ok(answer)) => Ok(answer),
            Some(Err(error)) => Err(RPCError::RemoteError(RemoteError::new(self.target, error))),
            None => Err(Self::unreachable(&io::Error::other("an answer of another kind"))),
        }
    }
}

impl RaftNetwork<MetadataRaftConfig> for MetadataNetwork {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<MetadataRaftConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let result = self.call(&Request::Append(rpc), option.hard_ttl()).await;
        self.answer(result, |r| if let Response::Append(answer) = r { Some(answer) } else { None })
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<MetadataRaftConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let result = self.call(&Request::Snapshot(rpc), option.hard_ttl()).await;
        self.answer(
            result,
            |r| if let Response::Snapshot(answer) = r { Some(answer) } else { None },
        )
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let result = self.call(&Request::Vote(rpc), option.hard_ttl()).await;
        self.answer(result, |r| if let Response::Vote(answer) = r { Some(answer) } else { None })
    }
}

/// Asks the voter at `addr` how it sees the quorum.
pub async fn fetch_status(
    addr: &str,
    timeout: Duration,
    transport: &Arc<QuorumTransport>,
) -> io::Result<QuorumStatus> {
    let mut client = MetadataNetwork::new(0, addr, transport);
    match client.call(&Request::Status, timeout).await? {
        Response::Status(status) => Ok(status),
        _ => Err(io::Error::other("an answer of another kind")),
    }
}

/// Answers Raft's RPCs on `listener` until the task is aborted, one task per connection and
/// at most [`CONNECTIONS_MAX`] connections (more wait in the listen backlog).
pub async fn serve(listener: TcpListener, operator: Operator, transport: Arc<QuorumTransport>) {
    let permits = Arc::new(tokio::sync::Semaphore::new(CONNECTIONS_MAX));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok(permit) = Arc::clone(&permits).acquire_owned().await else { return };
        let (stream, _) = loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => break accepted,
                    // Out of descriptors, say: try again shortly rather than spin.
                    Err(_) => tokio::time::sleep(ACCEPT_RETRY).await,
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        };
        let operator = operator.clone();
        let transport = Arc::clone(&transport);
        connections.spawn(async move {
            if let Ok(stream) = transport.accept(stream).await {
                serve_connection(stream, operator).await;
            }
            drop(permit);
        });
    }
}

async fn serve_connection(mut stream: QuorumStream, operator: Operator) {
    let raft = operator.raft().clone();
    loop {
        let Ok(body) = read_frame(&mut stream).await else { return };
        let Ok(request) = serde_json::from_slice::<Request>(&body) else { return };
        let response = match request {
            Request::Append(rpc) => Response::Append(raft.append_entries(rpc).await),
            Request::Vote(rpc) => Response::Vote(raft.vote(rpc).await),
            Request::Snapshot(rpc) => Response::Snapshot(raft.install_snapshot(rpc).await),
            Request::Status => Response::Status(operator.status()),
            Request::RegisterBroker(rpc) => {
                Response::Registered(register_broker(&operator, rpc).await)
            }
            Request::Heartbeat(request) => Response::Heartbeat(heartbeat(&operator, request).await),
            Request::Admin(request) => Response::Admin(admin(&operator, request).await),
        };
        let Ok(answer) = serde_json::to_vec(&response) else { return };
        if write_frame(&mut stream, &answer).await.is_err() {
            return;
        }
    }
}

fn refusal(operator: &Operator, error: QuorumError) -> Refusal {
    match error {
        QuorumError::Refused(error) => {
            Refusal { code: error.code(), message: format!("{error:?}"), leader: None }
        }
        other => not_controller(operator, other.to_string()),
    }
}

/// NOT_CONTROLLER (41), with the leader's address when this voter knows it.
fn not_controller(operator: &Operator, message: String) -> Refusal {
    Refusal { code: 41, message, leader: operator.leader_addr() }
}

/// BrokerRegistration on the leader: the broker becomes a learner (if it is not one yet), then
/// its registration is committed; the answer is its broker epoch.
async fn register_broker(operator: &Operator, rpc: RegisterBrokerRpc) -> Result<i64, Refusal> {
    if !operator.is_leader() {
        return Err(not_controller(operator, "not the active controller".to_owned()));
    }
    let id = NodeId::try_from(rpc.request.broker_id).map_err(|_| Refusal {
        code: 42,
        message: "a negative broker id".to_owned(),
        leader: None,
    })?;
    let known =
        operator.raft().metrics().borrow().membership_config.membership().get_node(&id).cloned();
    if known.as_ref().is_none_or(|node| node.addr != rpc.raft_addr) {
        let node = BasicNode { addr: rpc.raft_addr.clone() };
        operator
            .raft()
            .add_learner(id, node, false)
            .await
            .map_err(|e| not_controller(operator, e.to_string()))?;
    }
    let now = super::node::now_ms();
    let request = rpc.request;
    operator
        .operate_with(now, |c, next| c.register_broker(&request, next, now).map(|r| ((), r)))
        .await
        .map_err(|e| refusal(operator, e))?;
    operator
        .state()
        .image()
        .brokers
        .get(&request.broker_id)
        .map(|b| b.epoch)
        .ok_or_else(|| Refusal { code: 102, message: "not registered".to_owned(), leader: None })
}

/// BrokerHeartbeat on the leader.
async fn heartbeat(
    operator: &Operator,
    request: HeartbeatRequest,
) -> Result<HeartbeatReply, Refusal> {
    if !operator.is_leader() {
        return Err(not_controller(operator, "not the active controller".to_owned()));
    }
    let now = super::node::now_ms();
    operator
        .operate_with(now, |c, _| c.heartbeat(&request, now))
        .await
        .map_err(|e| refusal(operator, e))
}

/// A forwarded topic change on the leader: decided on the committed image, committed, applied;
/// the answer is the applied offset, which the broker waits for before it answers its client.
async fn admin(operator: &Operator, request: AdminRequest) -> Result<AdminReply, Refusal> {
    if !operator.is_leader() {
        return Err(not_controller(operator, "not the active controller".to_owned()));
    }
    let now = super::node::now_ms();
    let mut random = [0u8; 24];
    getrandom::fill(&mut random).map_err(|e| Refusal {
        code: -1,
        message: e.to_string(),
        leader: None,
    })?;
    let (id, start) = random.split_at(16);
    let mut topic_id = [0u8; 16];
    topic_id.copy_from_slice(id);
    let start = start.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
    let producer_id_start = operator
        .operate_with(now, |c, _| {
            let (records, validate_only) = match &request {
                AdminRequest::CreateTopic {
                    name,
                    assignments: Some(assignments),
                    configs,
                    validate_only,
                    ..
                } => {
                    (c.create_topic_assigned(name, assignments, configs, topic_id)?, *validate_only)
                }
                AdminRequest::CreateTopic {
                    name,
                    partitions,
                    replication_factor,
                    configs,
                    validate_only,
                    assignments: None,
                } => (
                    c.create_topic(
                        name,
                        *partitions,
                        *replication_factor,
                        configs,
                        topic_id,
                        start,
                    )?,
                    *validate_only,
                ),
                AdminRequest::CreatePartitions { name, total, assignments, validate_only } => (
                    c.create_partitions(name, *total, assignments.as_deref(), start)?,
                    *validate_only,
                ),
                AdminRequest::DeleteTopic { name } => (c.delete_topic(name)?, false),
                AdminRequest::SetTopicConfigs { name, overrides } => {
                    (c.set_topic_configs(name, overrides)?, false)
                }
                AdminRequest::UnregisterBroker { broker_id } => {
                    (c.unregister_broker(*broker_id)?, false)
                }
                AdminRequest::Security(change) => (c.security_change(change)?, false),
                AdminRequest::SetBrokerConfigs { name, layer } => {
                    (c.set_broker_configs(name, layer)?, false)
                }
                AdminRequest::AlterPartition(change) => (c.alter_partition(change)?, false),
                AdminRequest::ElectLeaders { election_type, partitions } => {
                    let (records, results) =
                        c.elect_leaders(*election_type, partitions.as_deref())?;
                    return Ok(((None, results), records));
                }
                AdminRequest::AlterPartitionReassignments {
                    partitions,
                    allow_replication_factor_change,
                } => {
                    let (records, results) = c.alter_partition_reassignments(
                        partitions,
                        *allow_replication_factor_change,
                    );
                    return Ok(((None, results), records));
                }
                AdminRequest::AllocateProducerIds { broker_id, broker_epoch } => {
                    let (start, records) = c.allocate_producer_ids(*broker_id, *broker_epoch)?;
                    return Ok(((Some(start), Vec::new()), records));
                }
            };
            Ok(((None, Vec::new()), if validate_only { Vec::new() } else { records }))
        })
        .await
        .map_err(|e| refusal(operator, e))?;
    if let AdminRequest::UnregisterBroker { broker_id } = request {
        remove_learner(operator, broker_id).await?;
    }
    let (producer_id_start, elections) = producer_id_start;
    Ok(AdminReply { offset: operator.state().applied_offset(), producer_id_start, elections })
}

/// An unregistered broker's learner stops getting the metadata; a voter (a combined node)
/// stays one.
async fn remove_learner(operator: &Operator, broker_id: i32) -> Result<(), Refusal> {
    if let Ok(id) = NodeId::try_from(broker_id) {
        // Its learner stops getting the metadata; a voter (a combined node) stays one.
        let learner = operator
            .raft()
            .metrics()
            .borrow()
            .membership_config
            .membership()
            .learner_ids()
            .any(|l| l == id);
        if learner {
            let remove =
                openraft::ChangeMembers::RemoveNodes(std::collections::BTreeSet::from([id]));
            operator
                .raft()
                .change_membership(remove, false)
                .await
                .map_err(|e| not_controller(operator, e.to_string()))?;
        }
    }
    Ok(())
}

/// Sends a broker RPC to the voter at `addr` within `timeout`.
async fn broker_call(
    addr: &str,
    request: &Request,
    timeout: Duration,
    transport: &Arc<QuorumTransport>,
) -> io::Result<Response> {
    let mut client = MetadataNetwork::new(0, addr, transport);
    client.call(request, timeout).await
}

/// BrokerRegistration sent to the voter at `addr`: the broker epoch, or the refusal.
pub async fn send_registration(
    addr: &str,
    rpc: RegisterBrokerRpc,
    timeout: Duration,
    transport: &Arc<QuorumTransport>,
) -> io::Result<Result<i64, Refusal>> {
    match broker_call(addr, &Request::RegisterBroker(rpc), timeout, transport).await? {
        Response::Registered(answer) => Ok(answer),
        _ => Err(io::Error::other("an answer of another kind")),
    }
}

/// BrokerHeartbeat sent to the voter at `addr`.
pub async fn send_heartbeat(
    addr: &str,
    request: HeartbeatRequest,
    timeout: Duration,
    transport: &Arc<QuorumTransport>,
) -> io::Result<Result<HeartbeatReply, Refusal>> {
    match broker_call(addr, &Request::Heartbeat(request), timeout, transport).await? {
        Response::Heartbeat(answer) => Ok(answer),
        _ => Err(io::Error::other("an answer of another kind")),
    }
}

/// A topic change sent to the voter at `addr`: the metadata offset it is applied at.
pub async fn send_admin(
    addr: &str,
    request: AdminRequest,
    timeout: Duration,
    transport: &Arc<QuorumTransport>,
) -> io::Result<Result<AdminReply, Refusal>> {
    match broker_call(addr, &Request::Admin(request), timeout, transport).await? {
        Response::Admin(answer) => Ok(answer),
        _ => Err(io::Error::other("an answer of another kind")),
    }
}
