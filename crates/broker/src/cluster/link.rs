//! `ClusterLink`: a broker's side of its cluster (Kafka's `KRaftMetadataCache`, the broker's
//! `ForwardingManager`, and the part of `ReplicaManager.applyDelta` that makes local logs).
//!
//! - **Metadata.** Handlers read the committed [`MetadataImage`] that the broker's
//!   [`BrokerMember`] applies; nothing uncommitted is ever read.
//! - **Replicas.** The applier task makes a local log for each partition the image places on
//!   this broker, in partition order, takes leadership at the image's leader epoch, and deletes
//!   the local logs of a topic that the image removed. A pass runs whenever the topics change.
//! - **Forwarding.** CreateTopics, CreatePartitions and DeleteTopics go to the active
//!   controller (following NOT_CONTROLLER's hint), and the answer waits until this broker has
//!   applied the change and made its replicas, so that the client's next request here sees it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::manager::LogManager;

use super::broker_member::BrokerMember;
use super::controller::BrokerRegistrationRequest;
use super::controller::PRODUCER_ID_BLOCK_SIZE;
use super::image::{MetadataImage, TopicState};
use super::peers::{PeerError, Peers};
use super::raft::network::{AdminReply, AdminRequest, Refusal, send_admin};
use super::raft::node::{MetadataNode, QuorumError};
use super::records::Endpoint;
use super::records::{CONFIG_RESOURCE_BROKER, CONFIG_RESOURCE_TOPIC};
use crate::config::SecurityProtocol;

/// How often the applier looks for a new image.
const APPLY_CHECK: Duration = Duration::from_millis(50);
/// How long one forwarded call to a controller may take.
const FORWARD_CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a forwarded change may take in all, redirects and retries included (Kafka's
/// CreateTopics `timeout_ms` bounds it further).
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait before asking the next voter after a failure.
const FORWARD_RETRY: Duration = Duration::from_millis(100);

/// A broker's link to its cluster.
#[derive(Debug)]
pub struct ClusterLink {
    broker_id: i32,
    member: BrokerMember,
    /// The image offset up to which the applier has made this broker's replicas.
    materialized_offset: Arc<AtomicI64>,
    applier: tokio::task::JoinHandle<()>,
    /// The producer ids this broker may hand out: (next, end).
    producer_ids: tokio::sync::Mutex<Option<(i64, i64)>>,
    /// The connections to the other brokers.
    peers: Peers,
}

impl ClusterLink {
    /// Starts the applier over `manager` for the broker of `member`.
    /// `inter_broker_listener` names the listener other brokers are reached on, with
    /// `security` as this broker's client side of it.
    pub(crate) fn start(
        member: BrokerMember,
        broker: &Arc<crate::Broker>,
        inter_broker_listener: String,
        security: crate::ClientSecurity,
    ) -> Self {
        let broker_id = broker.config.node_id;
        let replication = Arc::downgrade(&broker.replication);
        member.node().operator().set_lag_source(Arc::new(move |listed_max| {
            replication.upgrade().map(|r| r.follower_lags(listed_max)).unwrap_or_default()
        }));
        let materialized_offset = Arc::new(AtomicI64::new(-1));
        let applier = tokio::spawn(apply_images(
            broker_id,
            Arc::clone(member.node()),
            (Arc::clone(&broker.manager), Arc::downgrade(broker)),
            Arc::clone(&materialized_offset),
            member.fenced_flag(),
        ));
        Self {
            broker_id,
            member,
            materialized_offset,
            applier,
            producer_ids: tokio::sync::Mutex::new(None),
            peers: Peers::new(inter_broker_listener, security),
        }
    }

    /// Waits until the controller has unfenced this broker (it caught up with the metadata up
    /// to its registration) and the applier has made its replicas from the image it had then:
    /// Kafka's `BrokerServer.startup` waits for the catch-up and the unfencing before it
    /// enables request processing, so that no client is answered from stale metadata. Waits as
    /// long as the quorum takes, saying so every few seconds.
    pub async fn wait_until_ready(&self) {
        const SAY_EVERY: Duration = Duration::from_secs(5);
        let started = Instant::now();
        let mut say_at = started + SAY_EVERY;
        let mut unfenced_at: Option<i64> = None;
        loop {
            if unfenced_at.is_none() && !self.member.is_fenced() {
                unfenced_at = Some(self.member.node().state().applied_offset());
            }
            if let Some(offset) = unfenced_at
                && self.materialized_offset.load(Ordering::SeqCst) >= offset
            {
                tracing::info!(waited = ?started.elapsed(), "broker unfenced and caught up");
                return;
            }
            if Instant::now() >= say_at {
                tracing::info!(
                    waited = ?started.elapsed(),
                    fenced = unfenced_at.is_none(),
                    "waiting for the controller to unfence this broker and for its replicas"
                );
                say_at += SAY_EVERY;
            }
            tokio::time::sleep(APPLY_CHECK).await;
        }
    }

    /// The leader and leader epoch of `tp` in the committed image: `None` when the partition
    /// does not exist, a leader of -1 while it has none.
    pub fn leader_of(&self, tp: &TopicPartition) -> Option<(i32, i32)> {
        self.with_image(|image| {
            image
                .topic(&tp.topic)
                .and_then(|topic| topic.partitions.get(&tp.partition))
                .map(|partition| (partition.leader, partition.leader_epoch))
        })
    }

    /// `inter.broker.listener.name`.
    pub fn inter_broker_listener(&self) -> &str {
        self.peers.listener()
    }

    /// Sends `request` to broker `broker_id` on the inter-broker listener.
    pub(crate) async fn call_broker<R: kafka_protocol::protocol::Request>(
        &self,
        broker_id: i32,
        request: &R,
        version: i16,
    ) -> Result<R::Response, PeerError> {
        let endpoints = self.with_image(|image| {
            image.brokers.get(&broker_id).filter(|b| !b.fenced).map(|b| b.endpoints.clone())
        });
        self.peers.call(broker_id, endpoints, request, version).await
    }

    /// A connection of its own to broker `broker_id` on the inter-broker listener.
    pub(crate) async fn connect_broker(
        &self,
        broker_id: i32,
    ) -> Result<crate::wire::Client, PeerError> {
        let endpoints = self.with_image(|image| {
            image.brokers.get(&broker_id).filter(|b| !b.fenced).map(|b| b.endpoints.clone())
        });
        self.peers.connect(broker_id, endpoints).await
    }

    /// This broker's id.
    pub fn broker_id(&self) -> i32 {
        self.broker_id
    }

    /// The broker's membership (its epoch, whether it is fenced).
    pub fn member(&self) -> &BrokerMember {
        &self.member
    }

    /// Reads the committed image.
    pub fn with_image<T>(&self, read: impl FnOnce(&MetadataImage) -> T) -> T {
        self.member.node().state().with_image(read)
    }

    /// Sends a topic change to the active controller and waits until this broker has applied
    /// it and made its replicas. A refusal is the controller's (Kafka's code and message); a
    /// controller that cannot be reached within the timeout is REQUEST_TIMED_OUT (7).
    pub async fn forward(&self, request: AdminRequest) -> Result<AdminReply, Refusal> {
        let deadline = Instant::now() + FORWARD_TIMEOUT;
        let voters = self.member.voters().to_vec();
        let mut voter = 0usize;
        let timed_out = |what: &str| Refusal {
            code: 7,
            message: format!("the active controller did not {what} within {FORWARD_TIMEOUT:?}"),
            leader: None,
        };
        let reply = loop {
            if Instant::now() >= deadline {
                return Err(timed_out("answer"));
            }
            let Some(addr) = voters.get(voter % voters.len().max(1)) else {
                return Err(timed_out("answer"));
            };
            let transport = self.member.node().transport();
            match send_admin(addr, request.clone(), FORWARD_CALL_TIMEOUT, transport).await {
                Ok(Ok(reply)) => break reply,
                // NOT_CONTROLLER: ask the leader it names, else the next voter.
                Ok(Err(refusal)) if refusal.code == 41 => {
                    voter = refusal
                        .leader
                        .as_deref()
                        .and_then(|leader| voters.iter().position(|v| v == leader))
                        .unwrap_or(voter + 1);
                }
                Ok(Err(refusal)) => return Err(refusal),
                Err(_) => voter += 1,
            }
            tokio::time::sleep(FORWARD_RETRY).await;
        };
        while self.materialized_offset.load(Ordering::SeqCst) < reply.offset {
            if Instant::now() >= deadline {
                return Err(timed_out("reach this broker"));
            }
            tokio::time::sleep(APPLY_CHECK).await;
        }
        Ok(reply)
    }

    /// A producer id never handed out in the cluster: from this broker's block, and a new block
    /// from the controller when it is used up (Kafka's `RPCProducerIdManager`).
    pub async fn allocate_producer_id(&self) -> Result<i64, Refusal> {
        let mut block = self.producer_ids.lock().await;
        if let Some((next, end)) = *block
            && next < end
        {
            *block = Some((next + 1, end));
            return Ok(next);
        }
        let request = AdminRequest::AllocateProducerIds {
            broker_id: self.broker_id,
            broker_epoch: self.member.epoch(),
        };
        let reply = self.forward(request).await?;
        let start = reply.producer_id_start.ok_or_else(|| Refusal {
            code: -1,
            message: "the controller answered without producer ids".to_owned(),
            leader: None,
        })?;
        *block = Some((start + 1, start + PRODUCER_ID_BLOCK_SIZE));
        Ok(start)
    }

    /// Stops the applier and the membership.
    pub async fn shutdown(&self) {
        self.applier.abort();
        self.member.shutdown().await;
    }
}

/// Where a broker's metadata comes from.
#[derive(Debug)]
pub enum MetadataSource {
    /// A learner of its own (`process.roles=broker`): its metadata log under `metadata_dir`,
    /// Raft's RPCs on `raft_listener`, its quorum connections carried by `transport` (the
    /// controller listener's security).
    Learner {
        fs: Arc<dyn seglog_storage::io::Fs>,
        metadata_dir: std::path::PathBuf,
        raft_listener: tokio::net::TcpListener,
        transport: Arc<super::raft::transport::QuorumTransport>,
    },
    /// The node's own voter (`process.roles=broker,controller`).
    Voter(Arc<MetadataNode>),
}

/// What a broker needs to join its cluster, given to [`crate::Server::start_in_cluster`].
#[derive(Debug)]
pub struct ClusterJoin {
    pub source: MetadataSource,
    /// The voters' quorum addresses, `host:port`.
    pub voters: Vec<String>,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `inter.broker.listener.name`: the listener other brokers reach this one on.
    pub inter_broker_listener: String,
    /// How this broker connects to the others on that listener
    /// ([`crate::ClientSecurity::inter_broker`]).
    pub inter_broker_security: crate::ClientSecurity,
}

impl ClusterJoin {
    /// Registers `broker` with the endpoints of its bound listeners (`bound`, in `listeners`
    /// order) and starts the link.
    pub(crate) async fn start(
        self,
        broker: &Arc<crate::Broker>,
        bound: &[std::net::SocketAddr],
        clean_shutdown: bool,
    ) -> Result<ClusterLink, QuorumError> {
        let broker_id = broker.config.node_id;
        let endpoints = broker
            .config
            .listeners
            .iter()
            .zip(bound)
            .enumerate()
            .map(|(index, (listener, addr))| {
                let (host, port) = broker
                    .advertised
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| (addr.ip().to_string(), i32::from(addr.port())));
                Endpoint {
                    name: listener.name.clone(),
                    host,
                    port: u16::try_from(port).unwrap_or(addr.port()),
                    security_protocol: match listener.protocol {
                        SecurityProtocol::Plaintext => 0,
                        SecurityProtocol::Ssl => 1,
                        SecurityProtocol::SaslPlaintext => 2,
                        SecurityProtocol::SaslSsl => 3,
                    },
                }
            })
            .collect();
        let mut incarnation_id = [0u8; 16];
        getrandom::fill(&mut incarnation_id).map_err(|e| QuorumError::Raft(e.to_string()))?;
        let registration = BrokerRegistrationRequest {
            broker_id,
            incarnation_id,
            endpoints,
            rack: self.rack,
            clean_shutdown,
        };
        let member = match self.source {
            MetadataSource::Learner { fs, metadata_dir, raft_listener, transport } => {
                BrokerMember::start(
                    fs,
                    &metadata_dir,
                    (raft_listener, transport),
                    self.voters,
                    registration,
                    self.heartbeat_interval,
                )
                .await?
            }
            MetadataSource::Voter(node) => BrokerMember::start_on(
                node,
                self.voters,
                registration,
                self.heartbeat_interval,
                false,
            ),
        };
        Ok(ClusterLink::start(
            member,
            broker,
            self.inter_broker_listener,
            self.inter_broker_security,
        ))
    }
}

/// What the applier wants of one partition placed on this broker.
struct Placed {
    tp: TopicPartition,
    topic_id: [u8; 16],
    /// The partition's leader (-1: none), epochs, replicas and ISR.
    leader: i32,
    leader_epoch: i32,
    partition_epoch: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    overrides: BTreeMap<String, String>,
}

/// What a cluster's broker takes from the image besides its replicas: the ACLs, SCRAM
/// credentials and quotas, and the broker config layers (the cluster default, its own).
struct BrokerLevel {
    /// The security part's `changed_at` last given to the broker (`i64::MIN`: none yet, so the
    /// first image is always given and a local store's contents never stand in a cluster).
    last_security: i64,
    /// The config layers last applied (none yet: the first image's are always applied).
    last_broker_configs: Option<(BTreeMap<String, String>, BTreeMap<String, String>)>,
}

impl BrokerLevel {
    /// Applies what changed; returns the image offset it looked at.
    async fn apply(
        &mut self,
        node: &MetadataNode,
        broker_id: i32,
        broker: &std::sync::Weak<crate::Broker>,
    ) -> i64 {
        let own = broker_id.to_string();
        let (security_offset, security, configs) = node.state().with_image(|image| {
            let changed = image.security.changed_at != self.last_security;
            // Compared in place: most ticks change nothing, and copy nothing.
            let empty = BTreeMap::new();
            let layer = |name: &str| {
                image.configs.get(&(CONFIG_RESOURCE_BROKER, name.to_owned())).unwrap_or(&empty)
            };
            let (cluster_default, per_broker) = (layer(""), layer(&own));
            let configs_changed = self
                .last_broker_configs
                .as_ref()
                .is_none_or(|(default, own)| default != cluster_default || own != per_broker);
            let configs = configs_changed.then(|| (cluster_default.clone(), per_broker.clone()));
            (image.offset, changed.then(|| image.security.clone()), configs)
        });
        if let Some(security) = security {
            if let Some(broker) = broker.upgrade() {
                broker.security.apply_image(&security);
            }
            self.last_security = security.changed_at;
        }
        if let Some(configs) = configs {
            if let Some(broker) = broker.upgrade() {
                let (cluster_default, per_broker) = configs.clone();
                let applied = tokio::task::spawn_blocking(move || {
                    crate::handlers::apply_from_metadata(&broker, cluster_default, per_broker);
                });
                if let Err(error) = applied.await {
                    tracing::error!(%error, "applying the cluster's broker configs failed to run");
                }
            }
            self.last_broker_configs = Some(configs);
        }
        security_offset
    }
}

/// Applies each new image to the local logs, its ACLs, credentials and quotas to the broker's
/// security, and its broker config layers to the broker's dynamic configs, for as long as the
/// broker runs.
async fn apply_images(
    broker_id: i32,
    node: Arc<MetadataNode>,
    (manager, broker): (Arc<LogManager>, std::sync::Weak<crate::Broker>),
    materialized_offset: Arc<AtomicI64>,
    fenced: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut broker_level = BrokerLevel { last_security: i64::MIN, last_broker_configs: None };
    // Local topics the metadata does not have are moved aside once, when this broker has
    // caught up (the controller unfences it then), as Kafka's `isStrayKraftReplica`.
    let mut strays_checked = false;
    // What the last complete pass applied: the image's offset, topics and topic configs.
    let mut last_offset: Option<i64> = None;
    let mut last_topics: BTreeMap<[u8; 16], TopicState> = BTreeMap::new();
    let mut last_configs: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    // Topics this applier has seen in the image, by id: when one goes, its local logs go.
    let mut seen: BTreeMap<[u8; 16], String> = BTreeMap::new();
    loop {
        let security_offset = broker_level.apply(&node, broker_id, &broker).await;
        let pass = node.state().with_image(|image| {
            if last_offset == Some(image.offset) {
                return None;
            }
            let topic_configs: BTreeMap<&String, &BTreeMap<String, String>> = image
                .configs
                .iter()
                .filter(|((kind, _), _)| *kind == CONFIG_RESOURCE_TOPIC)
                .map(|((_, name), configs)| (name, configs))
                .collect();
            // Most new offsets are the leader's NoOpRecords: nothing to do but note them.
            if last_topics == image.topics
                && topic_configs.iter().map(|(k, v)| (*k, *v)).eq(&last_configs)
            {
                return Some((image.offset, None));
            }
            let mut placed = Vec::new();
            // Replicas placed elsewhere (a reassignment moved them away): their local logs go.
            let mut elsewhere = Vec::new();
            for topic in image.topics.values() {
                for (partition, state) in &topic.partitions {
                    if !state.replicas.contains(&broker_id) {
                        let tp =
                            TopicPartition { topic: topic.name.clone(), partition: *partition };
                        elsewhere.push((tp, topic.id));
                        continue;
                    }
                    placed.push(Placed {
                        tp: TopicPartition { topic: topic.name.clone(), partition: *partition },
                        topic_id: topic.id,
                        leader: state.leader,
                        leader_epoch: state.leader_epoch,
                        partition_epoch: state.partition_epoch,
                        replicas: state.replicas.clone(),
                        isr: state.isr.clone(),
                        overrides: topic_configs
                            .get(&topic.name)
                            .map(|c| (*c).clone())
                            .unwrap_or_default(),
                    });
                }
            }
            let removed: Vec<(String, [u8; 16])> = seen
                .iter()
                .filter(|(id, _)| !image.topics.contains_key(*id))
                .map(|(id, name)| (name.clone(), *id))
                .collect();
            let applied = (
                image.topics.clone(),
                topic_configs.iter().map(|(k, v)| ((*k).clone(), (*v).clone())).collect(),
            );
            Some((image.offset, Some((placed, (removed, elsewhere), applied))))
        });
        let offset = match pass {
            None => last_offset.unwrap_or(-1),
            Some((offset, None)) => {
                last_offset = Some(offset);
                offset
            }
            Some((offset, Some((placed, removed, (topics, configs))))) => {
                let (manager, broker_for_pass) = (Arc::clone(&manager), broker.clone());
                let applied = tokio::task::spawn_blocking(move || {
                    let broker = broker_for_pass;
                    apply(broker_id, (&manager, &broker), &placed, (&removed.0, &removed.1))
                })
                .await;
                let complete = applied.unwrap_or_else(|error| {
                    tracing::error!(%error, "the metadata applier's pass failed to run");
                    false
                });
                // An incomplete pass is tried again whole at the next tick, removals included.
                if complete {
                    let quotas = broker.upgrade();
                    quotas.inspect(|b| b.replication.quotas.update_topics(&configs, broker_id));
                    seen = topics.iter().map(|(id, t)| (*id, t.name.clone())).collect();
                    last_topics = topics;
                    last_configs = configs;
                    last_offset = Some(offset);
                }
                // A forwarded change waits for its replicas, not for a failed pass.
                last_offset.unwrap_or(-1)
            }
        };
        if !strays_checked && !fenced.load(Ordering::SeqCst) {
            let known: BTreeSet<[u8; 16]> =
                node.state().with_image(|image| image.topics.keys().copied().collect());
            let manager = Arc::clone(&manager);
            let moved = tokio::task::spawn_blocking(move || move_strays_aside(&manager, &known));
            strays_checked = moved.await.unwrap_or(false);
        }
        // A forwarded security change waits for the security pass too, which saw the image
        // at `security_offset`.
        materialized_offset.fetch_max(offset.min(security_offset), Ordering::SeqCst);
        tokio::time::sleep(APPLY_CHECK).await;
    }
}

/// Moves aside every local topic whose id the metadata does not have (or that has no id);
/// returns whether that went without a failure.
fn move_strays_aside(manager: &LogManager, known: &BTreeSet<[u8; 16]>) -> bool {
    let mut complete = true;
    for topic in manager.topics() {
        if manager.topic_id(&topic).is_some_and(|id| known.contains(&id)) {
            continue;
        }
        match manager.move_topic_aside(&topic) {
            Ok(n) => tracing::warn!(
                %topic,
                partitions = n,
                "not in the cluster's metadata: its logs are marked stray and kept aside"
            ),
            Err(error) => {
                tracing::error!(%topic, %error, "cannot move a stray topic aside");
                complete = false;
            }
        }
    }
    complete
}

/// One pass: local logs for the placed partitions, leadership at the image's epochs, the
/// removed topics' logs deleted. A local topic of a placed name with another topic id is an
/// older incarnation (deleted and created again while this broker was away): its logs go
/// before the new ones are made. Failures are logged; returns whether there were none.
/// A topic the metadata no longer has: its name and id.
type RemovedTopic = (String, [u8; 16]);
/// A partition of a topic (by id) whose replicas no longer include this broker.
type PlacedElsewhere = (TopicPartition, [u8; 16]);

fn apply(
    broker_id: i32,
    (manager, broker): (&LogManager, &std::sync::Weak<crate::Broker>),
    placed: &[Placed],
    (removed, elsewhere): (&[RemovedTopic], &[PlacedElsewhere]),
) -> bool {
    let Some(broker) = broker.upgrade() else { return false };
    // The shutdown waits for this pass, and none starts after it: no replica is made in a
    // closing log manager.
    let Some(_pass) = broker.replication.begin_pass() else { return false };
    let mut complete = true;
    let mut checked = BTreeSet::new();
    for want in placed {
        if !checked.insert(want.tp.topic.as_str()) {
            continue;
        }
        let Some(local_id) = manager.topic_id(&want.tp.topic) else { continue };
        if local_id != want.topic_id {
            tracing::warn!(topic = %want.tp.topic, "local logs of an older topic id: deleted");
            if let Err(error) = manager.delete_topic(&want.tp.topic) {
                tracing::error!(topic = %want.tp.topic, %error, "cannot delete an older topic");
                complete = false;
            }
        }
    }
    for (name, id) in removed {
        for tp in manager.partitions().into_iter().filter(|tp| tp.topic == *name) {
            broker.replication.fetchers.unfollow(&tp);
            broker.replication.remove(&tp);
        }
        if manager.topic_id(name) == Some(*id) {
            match manager.delete_topic(name) {
                Ok(n) => {
                    tracing::info!(topic = %name, partitions = n, "deleted, as the metadata says");
                }
                Err(error) => {
                    tracing::error!(topic = %name, %error, "cannot delete a removed topic");
                    complete = false;
                }
            }
        }
    }
    if !remove_replicas_placed_elsewhere((manager, &broker), elsewhere) {
        complete = false;
    }
    let local: BTreeSet<TopicPartition> = manager.partitions().into_iter().collect();
    // Config changes of the topics with replicas here.
    let mut configured = BTreeSet::new();
    for want in placed {
        if local.contains(&want.tp)
            && configured.insert(want.tp.topic.clone())
            && manager.topic_overrides(&want.tp.topic) != want.overrides
            && let Err(error) = manager.set_topic_overrides(&want.tp.topic, want.overrides.clone())
        {
            tracing::error!(topic = %want.tp.topic, %error, "cannot apply the topic's configs");
            complete = false;
        }
    }
    for want in placed {
        if !local.contains(&want.tp) {
            match manager.create_replica(&want.tp, want.topic_id, want.overrides.clone()) {
                Ok(()) => tracing::info!(partition = %want.tp, broker_id, "replica created"),
                Err(error) => {
                    tracing::error!(partition = %want.tp, %error, "cannot create a replica");
                    complete = false;
                    continue;
                }
            }
        }
        if let Err(error) = take_role(&broker, want) {
            tracing::error!(partition = %want.tp, %error, "cannot take the partition's role");
            complete = false;
        }
    }
    complete
}

/// Kafka's `ReplicaManager.applyDelta` for `localChanges.deletes`: a local replica of a topic
/// the image still has (same id) but places elsewhere stops (fetcher, role, coordinators) and
/// its log is deleted. Returns whether that went without a failure.
fn remove_replicas_placed_elsewhere(
    (manager, broker): (&LogManager, &Arc<crate::Broker>),
    elsewhere: &[PlacedElsewhere],
) -> bool {
    let local: BTreeSet<TopicPartition> = manager.partitions().into_iter().collect();
    let mut complete = true;
    for (tp, topic_id) in elsewhere {
        if !local.contains(tp) || manager.topic_id(&tp.topic) != Some(*topic_id) {
            continue;
        }
        broker.replication.fetchers.unfollow(tp);
        coordinators_resigned(broker, tp);
        broker.replication.remove(tp);
        match manager.delete_partition(tp) {
            Ok(_) => tracing::info!(partition = %tp, "replica moved away: its log deleted"),
            Err(error) => {
                tracing::error!(partition = %tp, %error, "cannot delete a replica moved away");
                complete = false;
            }
        }
    }
    complete
}

/// Makes this broker `want`'s leader or follower as the image says (Kafka's
/// `ReplicaManager.applyDelta`: `makeLeaders`, `makeFollowers`).
fn take_role(broker: &Arc<crate::Broker>, want: &Placed) -> seglog_storage::Result<()> {
    let log = broker.manager.get_log(&want.tp)?;
    let replication = &broker.replication;
    if want.leader == broker.config.node_id {
        let state = crate::replication::LeaderAndIsr {
            topic_id: want.topic_id,
            leader_epoch: want.leader_epoch,
            partition_epoch: want.partition_epoch,
            replicas: want.replicas.clone(),
            isr: want.isr.clone(),
        };
        if replication.make_leader(&want.tp, &log, state, crate::handlers::now_ms())? {
            replication.fetchers.unfollow(&want.tp);
            tracing::info!(partition = %want.tp, leader_epoch = want.leader_epoch, isr = ?want.isr, "leading");
            coordinators_elected(broker, &want.tp);
        }
    } else if replication.make_follower(&want.tp, &log, want.leader, want.leader_epoch) {
        coordinators_resigned(broker, &want.tp);
        if want.leader >= 0 {
            replication.fetchers.follow(broker, &want.tp, want.leader, want.leader_epoch);
            tracing::info!(partition = %want.tp, leader = want.leader, leader_epoch = want.leader_epoch, "following");
        } else {
            replication.fetchers.unfollow(&want.tp);
        }
    }
    Ok(())
}

/// A coordinator's partition (`__consumer_offsets`, `__transaction_state`) led here now: its
/// groups or transactional ids are loaded (Kafka's `onElection`). Before the broker has joined
/// (its first image), the start's own load does it.
fn coordinators_elected(broker: &Arc<crate::Broker>, tp: &TopicPartition) {
    if broker.cluster().is_none() {
        return;
    }
    let now_ms = crate::handlers::now_ms();
    let loaded = if tp.topic == crate::group::OFFSETS_TOPIC {
        broker.groups.load_partition(tp.partition, now_ms)
    } else if tp.topic == crate::txn::TRANSACTION_STATE_TOPIC {
        broker.txns.load_partition(&broker.groups, tp.partition, now_ms)
    } else {
        return;
    };
    if let Err(error) = loaded {
        tracing::error!(partition = %tp, %error, "cannot load the coordinator's partition");
    }
}

/// A coordinator's partition led elsewhere now: its groups or ids leave this broker's memory
/// (Kafka's `onResignation`).
fn coordinators_resigned(broker: &crate::Broker, tp: &TopicPartition) {
    if tp.topic == crate::group::OFFSETS_TOPIC {
        broker.groups.unload_partition(tp.partition);
    } else if tp.topic == crate::txn::TRANSACTION_STATE_TOPIC {
        broker.txns.unload_partition(tp.partition);
    }
}
