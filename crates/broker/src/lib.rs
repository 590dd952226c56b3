//! seglog-broker: a single-node broker that speaks Kafka's wire protocol over seglog's log
//! directories, so that unchanged Kafka clients (librdkafka, kafka-python, the JVM client)
//! produce to and fetch from them.
//!
//! Every message codec comes from the `kafka-protocol` crate; record sets stay opaque bytes,
//! validated by `seglog-storage`'s `LogValidator` on the way in and returned as stored on the
//! way out. See ARCHITECTURE.md for where this crate sits.

mod apis;
pub mod cluster;
pub mod config;
pub mod console;
mod dispatch;
pub mod error;
mod fetch_session;
mod file_send;
pub mod group;
mod handlers;
mod metrics;
mod replay;
mod replica;
mod replication;
mod request;
mod security;
pub mod server;
mod tiering;
pub mod txn;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

pub use security::client::{ClientSecurity, ClientSecurityError};

use seglog_storage::log::partition_log::{PartitionLog, TopicPartition};
use seglog_storage::manager::LogManager;

/// Handles one request frame (without its 4-byte size) as a connection would, and returns the
/// response frame (with its size), or `None` when the connection would send nothing (acks=0)
/// or be closed. For the fuzz target and tools; servers use [`Server`].
#[doc(hidden)]
pub async fn handle_frame(broker: &Arc<Broker>, frame: bytes::Bytes) -> Option<bytes::Bytes> {
    handle_frame_as(broker, frame, security::ANONYMOUS).await
}

/// [`handle_frame`] as `principal` (`User:alice`), as if it had authenticated: for the fuzz
/// target of an authenticated but unauthorized connection.
#[doc(hidden)]
pub async fn handle_frame_as(
    broker: &Arc<Broker>,
    frame: bytes::Bytes,
    principal: &str,
) -> Option<bytes::Bytes> {
    handle_frame_in(broker, frame, security::Session::local(principal)).await
}

/// [`handle_frame`] in `session` (the console's calls, as their logged-in user).
pub(crate) async fn handle_frame_in(
    broker: &Arc<Broker>,
    frame: bytes::Bytes,
    session: security::Session,
) -> Option<bytes::Bytes> {
    let session = Arc::new(session);
    match dispatch::handle(broker, frame, &session).await {
        dispatch::Outcome::Respond(prefix, body) => {
            let mut frame = bytes::BytesMut::with_capacity(prefix.len() + body.len());
            frame.extend_from_slice(&prefix);
            frame.extend_from_slice(&body);
            Some(frame.freeze())
        }
        dispatch::Outcome::RespondPieces(pieces) => file_send::pieces_into_bytes(pieces).ok(),
        dispatch::Outcome::NoResponse | dispatch::Outcome::Close(_) => None,
    }
}

pub use apis::{GROUP_APIS, SUPPORTED_APIS, TXN_APIS, supported_versions};
pub use config::BrokerConfig;
pub use security::SecurityError;
/// Offline edits of the ACLs and SCRAM users of a stopped broker's directory.
pub use security::admin as security_admin;
pub use security::fuzzing;
/// The object store crate tiered storage speaks through (for [`Server::start_with_remote_store`]).
pub use seglog_remote::object_store;
pub use server::{ServeError, Server};
pub use tiering::TieringStartError;

/// The state every request handler shares (the role of Kafka's `KafkaApis` with its
/// `ReplicaManager`, for one node that leads every partition).
#[derive(Debug)]
pub struct Broker {
    config: BrokerConfig,
    manager: Arc<LogManager>,
    /// Woken after every append, so that waiting fetches look again.
    appended: Arc<tokio::sync::Notify>,
    /// The one append path (Produce; the coordinator holds its own over the same logs).
    replicas: replica::ReplicaManager,
    /// A cluster's partitions as replicas: roles, ISRs, the followers' fetchers (unused on a
    /// single node).
    replication: Arc<replication::Replication>,
    /// The group coordinator (every group: a single node coordinates them all).
    groups: group::GroupCoordinator,
    /// The transaction coordinator (every transactional id).
    txns: txn::TransactionCoordinator,
    /// TLS, SASL, ACLs and quotas.
    security: security::Security,
    /// The dynamic broker configs (`config/dynamic.rs`), over `config`'s static ones; held
    /// across a change's check, write and apply, so that changes never interleave.
    dynamic_configs: std::sync::Mutex<config::dynamic::DynamicConfigs>,
    cluster_id: String,
    /// What each listener tells clients to connect to (host, port), in `listeners` order.
    advertised: Vec<(String, i32)>,
    /// The logs' file system, within `seglog.open.files.max` descriptors.
    log_files: Arc<seglog_storage::io::BudgetFs>,
    /// KIP-227 fetch sessions (`max.incremental.fetch.session.cache.slots`).
    fetch_sessions: std::sync::Mutex<fetch_session::FetchSessionCache>,
    /// Tiered storage, when `remote.log.storage.system.enable` is on.
    tiering: Option<Arc<tiering::Tiering>>,
    /// What the web console counts and remembers of the start.
    console: console::ConsoleState,
    /// The cluster, when `process.roles` makes this node a cluster's broker; set once at
    /// start. Without it, this node is the whole cluster.
    cluster: std::sync::OnceLock<Arc<cluster::link::ClusterLink>>,
}

impl Broker {
    #[expect(
        clippy::too_many_arguments,
        reason = "each part is opened in turn by Server::start_with, which alone calls this"
    )]
    fn new(
        config: BrokerConfig,
        manager: Arc<LogManager>,
        bound: &[SocketAddr],
        security: security::Security,
        dynamic_configs: config::dynamic::DynamicConfigs,
        log_files: Arc<seglog_storage::io::BudgetFs>,
        tiering: Option<Arc<tiering::Tiering>>,
        recovery: Arc<std::sync::Mutex<console::Recovery>>,
    ) -> Self {
        let cluster_id = manager.cluster_id().unwrap_or_else(|| "seglog".to_owned());
        let advertised = config
            .listeners
            .iter()
            .zip(bound)
            .map(|(listener, bound)| {
                let host = listener.advertised_host.clone().unwrap_or_else(|| {
                    if bound.ip().is_unspecified() {
                        "localhost".to_owned()
                    } else {
                        bound.ip().to_string()
                    }
                });
                (host, i32::from(listener.advertised_port.unwrap_or(bound.port())))
            })
            .collect();
        let appended = Arc::new(tokio::sync::Notify::new());
        let groups = group::GroupCoordinator::new(
            Arc::clone(&manager),
            config.groups.clone(),
            Arc::clone(&appended),
        );
        let replicas = replica::ReplicaManager::new(Arc::clone(&manager), Arc::clone(&appended));
        let txns = txn::TransactionCoordinator::new(
            Arc::clone(&manager),
            config.txns.clone(),
            Arc::clone(&appended),
        );
        let fetch_sessions =
            fetch_session::FetchSessionCache::new(config.fetch_session_cache_slots);
        let replication = Arc::new(replication::Replication::new(
            config.node_id,
            config.replication.clone(),
            Arc::clone(&appended),
        ));
        Self {
            config,
            manager,
            appended,
            replicas,
            replication,
            groups,
            txns,
            security,
            dynamic_configs: std::sync::Mutex::new(dynamic_configs),
            cluster_id,
            advertised,
            log_files,
            fetch_sessions: std::sync::Mutex::new(fetch_sessions),
            tiering,
            console: console::ConsoleState { traffic: console::Traffic::default(), recovery },
            cluster: std::sync::OnceLock::new(),
        }
    }

    /// The cluster this broker belongs to, if it is a cluster's broker.
    pub fn cluster(&self) -> Option<&Arc<cluster::link::ClusterLink>> {
        self.cluster.get()
    }

    /// Every topic's partition count: the cluster's metadata for a cluster's broker, else the
    /// local logs.
    fn topic_counts(&self) -> std::collections::BTreeMap<String, i32> {
        match self.cluster() {
            Some(link) => link.with_image(|image| {
                image
                    .topics
                    .values()
                    .map(|t| (t.name.clone(), i32::try_from(t.partitions.len()).unwrap_or(0)))
                    .collect()
            }),
            None => self.manager.topic_partition_counts(),
        }
    }

    /// A topic's config overrides: the cluster's metadata for a cluster's broker (every broker
    /// answers for every topic), else the local ones.
    fn topic_overrides_of(&self, topic: &str) -> std::collections::BTreeMap<String, String> {
        match self.cluster() {
            Some(link) => link.with_image(|image| {
                image
                    .configs
                    .get(&(cluster::records::CONFIG_RESOURCE_TOPIC, topic.to_owned()))
                    .cloned()
                    .unwrap_or_default()
            }),
            None => self.manager.topic_overrides(topic),
        }
    }

    /// A topic's id: the cluster's metadata for a cluster's broker, else the local logs.
    fn topic_id(&self, topic: &str) -> Option<[u8; 16]> {
        match self.cluster() {
            Some(link) => link.with_image(|image| image.topic_ids.get(topic).copied()),
            None => self.manager.topic_id(topic),
        }
    }

    /// For a cluster's broker, why it does not serve `topic`'s `partition` as leader: the error
    /// code (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE) and the
    /// current leader and its epoch, for KIP-951's hint. `None`: this broker leads it, or this
    /// node is the whole cluster.
    fn not_led_here(&self, topic: &str, partition: i32) -> Option<(i16, Option<(i32, i32)>)> {
        let link = self.cluster()?;
        // The partition's role here decides (an append holds it); the image names the leader
        // for the hint.
        let tp = TopicPartition { topic: topic.to_owned(), partition };
        if self.replication.leader_epoch(&tp).is_some() {
            return None;
        }
        link.with_image(|image| {
            let Some(state) = image.topic(topic).and_then(|t| t.partitions.get(&partition)) else {
                return Some((kafka_protocol::ResponseError::UnknownTopicOrPartition.code(), None));
            };
            if state.leader < 0 || state.leader == link.broker_id() {
                // No leader, or this broker's leadership is not made yet.
                Some((kafka_protocol::ResponseError::LeaderNotAvailable.code(), None))
            } else {
                Some((
                    kafka_protocol::ResponseError::NotLeaderOrFollower.code(),
                    Some((state.leader, state.leader_epoch)),
                ))
            }
        })
    }

    /// The logs' file system and its descriptor budget (`seglog.open.files.max`).
    pub fn log_files(&self) -> &Arc<seglog_storage::io::BudgetFs> {
        &self.log_files
    }

    /// The fetch session cache, locked (held only to look up or note a session, never across
    /// a read).
    pub(crate) fn fetch_sessions(
        &self,
    ) -> std::sync::MutexGuard<'_, fetch_session::FetchSessionCache> {
        self.fetch_sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The host and port that the listener of `session` advertises (Kafka answers Metadata
    /// with the endpoints of the listener the request came through).
    fn advertised(&self, session: &security::Session) -> (&str, i32) {
        self.advertised
            .get(session.listener)
            .or_else(|| self.advertised.first())
            .map_or(("localhost", 9092), |(host, port)| (host.as_str(), *port))
    }

    /// The dynamic broker configs now.
    fn dynamic_configs(&self) -> config::dynamic::DynamicConfigs {
        self.dynamic_configs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The log manager, for tests and tools in the same process.
    pub fn manager(&self) -> &Arc<LogManager> {
        &self.manager
    }

    /// The group coordinator.
    pub fn groups(&self) -> &group::GroupCoordinator {
        &self.groups
    }

    /// The transaction coordinator.
    pub fn txns(&self) -> &txn::TransactionCoordinator {
        &self.txns
    }

    /// The tiered partitions whose manifest another broker took over: this broker no longer
    /// tiers them (empty without tiered storage).
    pub fn fenced_tiered_partitions(&self) -> Vec<TopicPartition> {
        self.tiering.as_ref().map_or_else(Vec::new, |tiering| tiering.fenced_partitions())
    }

    /// The broker's settings.
    pub fn config(&self) -> &BrokerConfig {
        &self.config
    }

    /// The leader epoch of a partition: the latest epoch of its leader-epoch cache, or 0 for a
    /// partition that has none yet. A single node never changes leader, so it never grows.
    fn leader_epoch(log: &PartitionLog) -> i32 {
        log.latest_leader_epoch().ok().flatten().unwrap_or(0).max(0)
    }

    /// [`Broker::leader_epoch`] as Metadata shows it, without loading an unloaded log
    /// ([`PartitionLog::metadata_leader_epoch`]).
    fn metadata_leader_epoch(log: &PartitionLog) -> i32 {
        log.metadata_leader_epoch().ok().flatten().unwrap_or(0).max(0)
    }
}
