//! The controller's decisions (Kafka's `QuorumController` with its `ClusterControlManager`,
//! `BrokerHeartbeatManager`, `ReplicationControlManager` and `PartitionChangeBuilder`), as a
//! state machine without I/O: each operation reads the committed [`MetadataImage`] and returns
//! the records that carry it out, or Kafka's error. The caller commits the records through the
//! quorum and hands them back to [`Controller::replay`] before it asks for the next operation,
//! so a decision never rests on an uncommitted record. Only broker liveness (the last
//! heartbeat of each broker) lives outside the log, as in Kafka.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;

use super::image::{BrokerState, MetadataImage, PartitionState, ReplayError, TopicState};
use super::partition_change::{Assignment, ChangeBuilder};
use super::placement::{self, PlacementBroker};
use super::records::{
    BrokerRegistrationChange, CONFIG_RESOURCE_TOPIC, Endpoint, METADATA_VERSION_LEVEL,
    MetadataRecord, NO_LEADER, PartitionChange, PartitionRecord, RegisterBroker,
};

/// The controller's settings (Kafka's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerConfig {
    /// `broker.session.timeout.ms`: a broker silent this long is fenced.
    pub session_timeout_ms: i64,
    /// `eligible.leader.replicas.enable`: KIP-966's eligible leader replicas
    /// (`partition_change`); seglog's default is on.
    pub eligible_leader_replicas: bool,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        Self { session_timeout_ms: 9_000, eligible_leader_replicas: true }
    }
}

/// A broker's change that moves leaderships and ISRs (`leader_and_isr_updates`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BrokerChange {
    /// Fenced, shutting down or re-registered: it leaves the ISRs and cannot lead.
    Remove(i32),
    /// Restarted without a clean shutdown: it leaves the ISRs and the ELRs.
    UncleanShutdown(i32),
    /// Unfenced: it may lead partitions without a leader.
    Add(i32),
}

/// BrokerRegistration's request, as the controller uses it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BrokerRegistrationRequest {
    pub broker_id: i32,
    /// A new id for every start of the broker process.
    pub incarnation_id: [u8; 16],
    pub endpoints: Vec<Endpoint>,
    pub rack: Option<String>,
    /// Every log directory held the clean-shutdown marker when this incarnation opened them
    /// (Kafka sends the broker epoch the marker holds, `PreviousBrokerEpoch`): an unclean
    /// restart leaves every ISR and ELR it was in.
    #[serde(default)]
    pub clean_shutdown: bool,
}

/// BrokerHeartbeat's request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeartbeatRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The highest metadata offset the broker has applied.
    pub current_metadata_offset: i64,
    pub want_fence: bool,
    pub want_shutdown: bool,
}

/// BrokerHeartbeat's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HeartbeatReply {
    /// Whether the broker has applied the metadata up to its registration.
    pub is_caught_up: bool,
    pub is_fenced: bool,
    /// A controlled shutdown is done: the broker leads nothing and may stop.
    pub should_shutdown: bool,
}

/// AlterPartition's data for one partition (from its leader).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AlterPartitionRequest {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub topic_id: [u8; 16],
    pub partition_id: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<i32>,
}

/// One partition's ElectLeaders result: topic, partition, Kafka's error code.
pub type ElectionResult = (String, i32, i16);

/// Kafka's `Topic.validate`: 1 to 249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// How many producer ids a broker gets at once (Kafka's `ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`).
pub const PRODUCER_ID_BLOCK_SIZE: i64 = 1000;

/// The controller: the committed image and the brokers' last heartbeats.
#[derive(Debug, Clone)]
pub struct Controller {
    config: ControllerConfig,
    image: MetadataImage,
    /// Each registered broker's last contact (ms), in memory only.
    last_contact_ms: BTreeMap<i32, i64>,
}

impl Controller {
    /// A controller over an empty metadata log.
    pub fn new(config: ControllerConfig) -> Self {
        Self { config, image: MetadataImage::empty(), last_contact_ms: BTreeMap::new() }
    }

    /// Replaces the image (a snapshot installed from the leader).
    pub fn reset(&mut self, image: MetadataImage) {
        self.image = image;
    }

    /// The committed metadata.
    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// Applies a committed record (its own or, after a failover, its predecessor's).
    pub fn replay(&mut self, offset: i64, record: &MetadataRecord) -> Result<(), ReplayError> {
        self.image.replay(offset, record)
    }

    /// The records a new cluster's log starts with (Kafka's bootstrap metadata).
    pub fn bootstrap_records() -> Vec<MetadataRecord> {
        vec![MetadataRecord::FeatureLevel {
            name: "metadata.version".to_owned(),
            level: METADATA_VERSION_LEVEL,
        }]
    }

    /// Gives every registered broker a fresh session (Kafka's new active controller does: the
    /// last heartbeats went to its predecessor).
    pub fn touch_all(&mut self, now_ms: i64) {
        let ids: Vec<i32> = self.image.brokers.keys().copied().collect();
        for id in ids {
            self.last_contact_ms.insert(id, now_ms);
        }
    }

    fn has_valid_session(&self, broker_id: i32, now_ms: i64) -> bool {
        // A fenced broker has no session (Kafka's heartbeat manager untracks it), so a new
        // incarnation registers at once after a controlled shutdown.
        let fenced = self.image.brokers.get(&broker_id).is_none_or(|b| b.fenced);
        !fenced
            && self
                .last_contact_ms
                .get(&broker_id)
                .is_some_and(|last| now_ms - last < self.config.session_timeout_ms)
    }

    /// BrokerRegistration: a registration at `next_offset` (its broker epoch), fenced until the
    /// broker catches up. Another incarnation of a broker id whose session is alive is refused.
    pub fn register_broker(
        &mut self,
        request: &BrokerRegistrationRequest,
        next_offset: i64,
        now_ms: i64,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        if let Some(existing) = self.image.brokers.get(&request.broker_id)
            && existing.incarnation_id != request.incarnation_id
            && self.has_valid_session(request.broker_id, now_ms)
        {
            return Err(ResponseError::DuplicateBrokerRegistration);
        }
        self.last_contact_ms.insert(request.broker_id, now_ms);
        let mut records = Vec::new();
        // A re-registration replaces the old one, whose partitions first lose it; a restart
        // without a clean shutdown (Kafka's `ClusterControlManager.registerBroker` with
        // KAFKA-18635's rule) also takes it out of every ELR (`handleBrokerUncleanShutdown`).
        let existing = self.image.brokers.get(&request.broker_id);
        let unclean = existing
            .is_none_or(|b| b.incarnation_id != request.incarnation_id && !request.clean_shutdown);
        if existing.is_some() || (unclean && self.config.eligible_leader_replicas) {
            let change = if unclean {
                BrokerChange::UncleanShutdown(request.broker_id)
            } else {
                BrokerChange::Remove(request.broker_id)
            };
            records.extend(self.leader_and_isr_updates(change));
        }
        records.push(MetadataRecord::RegisterBroker(RegisterBroker {
            broker_id: request.broker_id,
            incarnation_id: request.incarnation_id,
            broker_epoch: next_offset + i64::try_from(records.len()).unwrap_or(0),
            endpoints: request.endpoints.clone(),
            rack: request.rack.clone(),
            fenced: true,
            in_controlled_shutdown: false,
        }));
        Ok(records)
    }

    /// The registration of `broker_id` at `broker_epoch`, or Kafka's error for it.
    fn check_broker_epoch(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<&BrokerState, ResponseError> {
        match self.image.brokers.get(&broker_id) {
            None => Err(ResponseError::BrokerIdNotRegistered),
            Some(broker) if broker.epoch != broker_epoch => Err(ResponseError::StaleBrokerEpoch),
            Some(broker) => Ok(broker),
        }
    }

    /// Partitions led by `broker_id`.
    fn leaderships(&self, broker_id: i32) -> usize {
        self.image
            .topics
            .values()
            .flat_map(|t| t.partitions.values())
            .filter(|p| p.leader == broker_id)
            .count()
    }

    /// BrokerHeartbeat (Kafka's `BrokerHeartbeatManager.calculateNextBrokerState` and
    /// `ReplicationControlManager.processBrokerHeartbeat`): a fenced broker that has caught up
    /// is unfenced; one that wants to stop enters controlled shutdown, which moves its
    /// leaderships away, and is told to stop (and fenced) once it leads nothing.
    pub fn heartbeat(
        &mut self,
        request: &HeartbeatRequest,
        now_ms: i64,
    ) -> Result<(HeartbeatReply, Vec<MetadataRecord>), ResponseError> {
        let broker = self.check_broker_epoch(request.broker_id, request.broker_epoch)?.clone();
        self.last_contact_ms.insert(request.broker_id, now_ms);
        let is_caught_up = request.current_metadata_offset >= broker.epoch;
        let id = broker.id;
        let change = |fenced: i8, in_controlled_shutdown: i8| {
            MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChange {
                broker_id: id,
                broker_epoch: broker.epoch,
                fenced,
                in_controlled_shutdown,
            })
        };
        let mut records = Vec::new();
        let mut reply =
            HeartbeatReply { is_caught_up, is_fenced: broker.fenced, should_shutdown: false };
        if broker.fenced {
            if request.want_shutdown {
                reply.should_shutdown = true;
            } else if !request.want_fence && is_caught_up {
                records.push(change(-1, 0));
                records.extend(self.leader_and_isr_updates(BrokerChange::Add(id)));
                reply.is_fenced = false;
            }
        } else if broker.in_controlled_shutdown {
            if self.leaderships(id) == 0 {
                records.extend(self.fence(id));
                reply.is_fenced = true;
                reply.should_shutdown = true;
            }
        } else if request.want_fence {
            records.extend(self.fence(id));
            reply.is_fenced = true;
        } else if request.want_shutdown {
            records.push(change(0, 1));
            records.extend(self.leader_and_isr_updates(BrokerChange::Remove(id)));
            // The next heartbeat finds it leading nothing and tells it to stop.
        }
        Ok((reply, records))
    }

    /// Kafka's `handleBrokerFenced`: the broker leaves every ISR it can and leads nothing.
    fn fence(&self, broker_id: i32) -> Vec<MetadataRecord> {
        let Some(broker) = self.image.brokers.get(&broker_id) else { return Vec::new() };
        let mut records = self.leader_and_isr_updates(BrokerChange::Remove(broker_id));
        records.push(MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChange {
            broker_id,
            broker_epoch: broker.epoch,
            fenced: 1,
            in_controlled_shutdown: 0,
        }));
        records
    }

    /// Fences the first broker (by id) whose session expired, as Kafka's
    /// `maybeFenceOneStaleBroker` does once per call.
    pub fn fence_stale_broker(&mut self, now_ms: i64) -> Vec<MetadataRecord> {
        let stale = self
            .image
            .brokers
            .values()
            .find(|b| !b.fenced && !self.has_valid_session(b.id, now_ms));
        stale.map(|b| self.fence(b.id)).unwrap_or_default()
    }

    /// Kafka's `generateLeaderAndIsrUpdates` over every partition the change touches: a
    /// removed broker leaves each ISR (the last member too when the ELR is on: the partition
    /// then has no leader and an empty ISR) and cannot lead; an uncleanly restarted one leaves
    /// the ELRs too; an added one may lead partitions without a leader though it is not active
    /// yet. Each partition's change is [`ChangeBuilder`]'s.
    fn leader_and_isr_updates(&self, change: BrokerChange) -> Vec<MetadataRecord> {
        let (removed, added, unclean_shutdown) = match change {
            BrokerChange::Remove(id) => (Some(id), None, None),
            BrokerChange::UncleanShutdown(id) => (Some(id), None, Some(id)),
            BrokerChange::Add(id) => (None, Some(id), None),
        };
        let acceptable =
            |r: i32| Some(r) != removed && (Some(r) == added || self.image.is_active(r));
        let mut records = Vec::new();
        for topic in self.image.topics.values() {
            // An unclean restart costs nothing under the fsync durability modes: a replica's
            // log end counted only what it had fsynced, so its log still holds every record
            // it helped commit (docs/replication.md).
            let unclean_shutdown = unclean_shutdown.filter(|_| !self.fsyncs(&topic.name));
            for (partition_id, p) in &topic.partitions {
                let touches = match change {
                    BrokerChange::Remove(r) => p.isr.contains(&r),
                    BrokerChange::UncleanShutdown(r) => p.isr.contains(&r) || p.elr.contains(&r),
                    BrokerChange::Add(_) => p.leader == NO_LEADER,
                };
                if !touches {
                    continue;
                }
                let builder = ChangeBuilder {
                    topic_id: topic.id,
                    partition_id: *partition_id,
                    partition: p,
                    target_isr: p.isr.iter().copied().filter(|r| Some(*r) != removed).collect(),
                    acceptable: &acceptable,
                    min_isr: self.min_isr(topic, p),
                    elr_enabled: self.config.eligible_leader_replicas,
                    unclean_allowed: self.unclean_election_enabled(&topic.name),
                    unclean_shutdown,
                    target_assignment: None,
                };
                if let Some(change) = builder.build() {
                    records.push(MetadataRecord::PartitionChange(change));
                }
            }
        }
        records
    }

    /// A topic config, else the cluster's broker default.
    fn topic_config(&self, topic: &str, key: &str) -> Option<&String> {
        let of = |kind: i8, name: &str| {
            self.image.configs.get(&(kind, name.to_owned())).and_then(|c| c.get(key))
        };
        of(CONFIG_RESOURCE_TOPIC, topic).or_else(|| of(super::records::CONFIG_RESOURCE_BROKER, ""))
    }

    /// The topic's `min.insync.replicas` (else the cluster default, else 1), at most the
    /// partition's replication factor (Kafka's `getTopicEffectiveMinIsr`).
    fn min_isr(&self, topic: &TopicState, p: &PartitionState) -> usize {
        let min_isr = self
            .topic_config(&topic.name, "min.insync.replicas")
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(1);
        min_isr.min(p.replicas.len())
    }

    /// Whether the topic's `seglog.durability` (its own, else the cluster's dynamic default)
    /// fsyncs what its replicas acknowledge: `group-commit` or `fsync-every-append`. A
    /// broker's static default is not in the metadata, so a topic without either is taken as
    /// `page-cache`.
    fn fsyncs(&self, topic: &str) -> bool {
        self.topic_config(topic, "seglog.durability")
            .is_some_and(|mode| mode == "group-commit" || mode == "fsync-every-append")
    }

    /// `unclean.leader.election.enable` of `topic`: its own config, else the cluster's broker
    /// default, else Kafka's default (false).
    fn unclean_election_enabled(&self, topic: &str) -> bool {
        self.topic_config(topic, "unclean.leader.election.enable")
            .is_some_and(|value| value.eq_ignore_ascii_case("true"))
    }

    /// ElectLeaders (Kafka's `ReplicationControlManager.electLeaders`) for the partitions named
    /// (every partition when `None`): a preferred election (type 0) makes the first replica
    /// lead when it is in the ISR and active; an unclean one (type 1) gives a leaderless
    /// partition a leader from its ISR, else any active replica (then its ISR alone). Returns
    /// the records and each partition's result: 0, ELECTION_NOT_NEEDED,
    /// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or
    /// UNKNOWN_TOPIC_OR_PARTITION (ELECTION_NOT_NEEDED left out when every partition is asked,
    /// as Kafka does).
    pub fn elect_leaders(
        &self,
        election_type: i8,
        partitions: Option<&[(String, i32)]>,
    ) -> Result<(Vec<MetadataRecord>, Vec<ElectionResult>), ResponseError> {
        if !(0..=1).contains(&election_type) {
            return Err(ResponseError::InvalidRequest);
        }
        let all: Vec<(String, i32)> = if partitions.is_none() {
            self.image
                .topics
                .values()
                .flat_map(|t| t.partitions.keys().map(|p| (t.name.clone(), *p)))
                .collect()
        } else {
            Vec::new()
        };
        let asked = partitions.unwrap_or(&all);
        let mut records = Vec::new();
        let mut results = Vec::new();
        for (name, partition_id) in asked {
            let found =
                self.image.topic(name).and_then(|t| t.partitions.get(partition_id).map(|p| (t, p)));
            let outcome = match found {
                None => Err(ResponseError::UnknownTopicOrPartition),
                Some((topic, p)) => self.elect_one(topic, *partition_id, p, election_type),
            };
            let code = match outcome {
                Ok(change) => {
                    records.push(MetadataRecord::PartitionChange(change));
                    0
                }
                Err(ResponseError::ElectionNotNeeded) if partitions.is_none() => continue,
                Err(error) => error.code(),
            };
            results.push((name.clone(), *partition_id, code));
        }
        Ok((records, results))
    }

    /// One partition's election: a preferred one (type 0) moves leadership to the first
    /// replica, in the ISR and active; an unclean one (type 1) gives a leaderless partition a
    /// leader: an ISR member, else an ELR member, else the last known leader, else any active
    /// replica (then its ISR alone).
    fn elect_one(
        &self,
        topic: &TopicState,
        partition_id: i32,
        p: &PartitionState,
        election_type: i8,
    ) -> Result<PartitionChange, ResponseError> {
        let active = |r: i32| self.image.is_active(r);
        if election_type == 0 {
            let preferred = p.replicas.first().copied().unwrap_or(NO_LEADER);
            if p.leader == preferred {
                return Err(ResponseError::ElectionNotNeeded);
            }
            if !p.isr.contains(&preferred) || !active(preferred) {
                return Err(ResponseError::PreferredLeaderNotAvailable);
            }
            let mut change = PartitionChange::new(topic.id, partition_id);
            change.leader = preferred;
            return Ok(change);
        }
        if p.leader != NO_LEADER {
            return Err(ResponseError::ElectionNotNeeded);
        }
        let builder = ChangeBuilder {
            topic_id: topic.id,
            partition_id,
            partition: p,
            target_isr: p.isr.clone(),
            acceptable: &active,
            min_isr: self.min_isr(topic, p),
            elr_enabled: self.config.eligible_leader_replicas,
            unclean_allowed: true,
            unclean_shutdown: None,
            target_assignment: None,
        };
        builder
            .build()
            .filter(|change| change.leader >= 0)
            .ok_or(ResponseError::EligibleLeadersNotAvailable)
    }

    /// AlterPartitionReassignments (Kafka's `ReplicationControlManager.alterPartitionReassignments`,
    /// KIP-455): for each asked partition a new replica set (started, or replacing one under
    /// way), or `None` to cancel. Returns the records of every partition that succeeded (one
    /// batch) and each partition's code: 0, INVALID_REPLICA_ASSIGNMENT, INVALID_REPLICATION_FACTOR
    /// (a factor change that `allow_replication_factor_change` forbids, KIP-860),
    /// NO_REASSIGNMENT_IN_PROGRESS or UNKNOWN_TOPIC_OR_PARTITION.
    pub fn alter_partition_reassignments(
        &self,
        asked: &[(String, i32, Option<Vec<i32>>)],
        allow_replication_factor_change: bool,
    ) -> (Vec<MetadataRecord>, Vec<ElectionResult>) {
        let mut records = Vec::new();
        let mut results = Vec::new();
        for (name, partition_id, target) in asked {
            let found =
                self.image.topic(name).and_then(|t| t.partitions.get(partition_id).map(|p| (t, p)));
            let outcome = match (found, target) {
                (None, _) => Err(ResponseError::UnknownTopicOrPartition),
                (Some((topic, p)), None) => self.cancel_reassignment(topic, *partition_id, p),
                (Some((topic, p)), Some(target)) => {
                    self.reassign(topic, *partition_id, p, target, allow_replication_factor_change)
                }
            };
            let code = match outcome {
                Ok(change) => {
                    records.extend(change.map(MetadataRecord::PartitionChange));
                    0
                }
                Err(error) => error.code(),
            };
            results.push((name.clone(), *partition_id, code));
        }
        (records, results)
    }

    /// Kafka's `changePartitionReassignment`: the target validated (non-empty, distinct,
    /// registered brokers), then the replicas become the target and the ones it drops, the
    /// new ones being added. Completes at once when the ISR already holds the target.
    fn reassign(
        &self,
        topic: &TopicState,
        partition_id: i32,
        p: &PartitionState,
        target: &[i32],
        allow_replication_factor_change: bool,
    ) -> Result<Option<PartitionChange>, ResponseError> {
        let distinct: std::collections::BTreeSet<&i32> = target.iter().collect();
        if target.is_empty()
            || distinct.len() != target.len()
            || target.iter().any(|b| !self.image.brokers.contains_key(b))
        {
            return Err(ResponseError::InvalidReplicaAssignment);
        }
        if !allow_replication_factor_change
            && target.len() != p.replicas.len() - p.removing_replicas.len()
        {
            return Err(ResponseError::InvalidReplicationFactor);
        }
        let active = |r: i32| self.image.is_active(r);
        let builder = ChangeBuilder {
            topic_id: topic.id,
            partition_id,
            partition: p,
            target_isr: p.isr.clone(),
            acceptable: &active,
            min_isr: self.min_isr(topic, p),
            elr_enabled: self.config.eligible_leader_replicas,
            unclean_allowed: false,
            unclean_shutdown: None,
            target_assignment: Some(Assignment::moving(&p.replicas, target)),
        };
        Ok(builder.build())
    }

    /// Kafka's `cancelPartitionReassignment` with `PartitionReassignmentRevert`: the replicas
    /// and ISR without the ones being added (in their order); when no ISR member is left, the
    /// first replica alone, which needs an unclean election the topic allows.
    fn cancel_reassignment(
        &self,
        topic: &TopicState,
        partition_id: i32,
        p: &PartitionState,
    ) -> Result<Option<PartitionChange>, ResponseError> {
        if !p.reassigning() {
            return Err(ResponseError::NoReassignmentInProgress);
        }
        let kept = |r: &i32| !p.adding_replicas.contains(r);
        let replicas: Vec<i32> = p.replicas.iter().copied().filter(kept).collect();
        let mut isr: Vec<i32> = p.isr.iter().copied().filter(kept).collect();
        let unclean_allowed = self.unclean_election_enabled(&topic.name);
        if isr.is_empty() {
            if !unclean_allowed {
                return Err(ResponseError::InvalidReplicaAssignment);
            }
            isr = replicas.first().copied().into_iter().collect();
        }
        let active = |r: i32| self.image.is_active(r);
        let builder = ChangeBuilder {
            topic_id: topic.id,
            partition_id,
            partition: p,
            target_isr: isr,
            acceptable: &active,
            min_isr: self.min_isr(topic, p),
            elr_enabled: self.config.eligible_leader_replicas,
            unclean_allowed,
            unclean_shutdown: None,
            target_assignment: Some(Assignment {
                replicas,
                adding: Vec::new(),
                removing: Vec::new(),
            }),
        };
        Ok(builder.build())
    }

    /// The brokers new replicas may go to: registered, unfenced, not shutting down.
    fn usable_brokers(&self) -> Vec<PlacementBroker> {
        self.image
            .brokers
            .values()
            .filter(|b| b.is_active())
            .map(|b| PlacementBroker { id: b.id, rack: b.rack.clone() })
            .collect()
    }

    /// CreateTopics for one topic: the topic, its configs and its partitions, each led by its
    /// first replica with every replica in the ISR. `start` seeds placement (Kafka's random
    /// start index); `topic_id` is the new topic's id.
    pub fn create_topic(
        &self,
        name: &str,
        n_partitions: i32,
        replication_factor: i16,
        configs: &[(String, String)],
        topic_id: [u8; 16],
        start: usize,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        if !valid_topic_name(name) {
            return Err(ResponseError::InvalidTopicException);
        }
        if self.image.topic_ids.contains_key(name) {
            return Err(ResponseError::TopicAlreadyExists);
        }
        // A random id that collides (or Kafka's reserved zero) is drawn again by the caller.
        if self.image.topics.contains_key(&topic_id) || topic_id == [0; 16] {
            return Err(ResponseError::InvalidRequest);
        }
        let count = usize::try_from(n_partitions).ok().filter(|n| *n > 0);
        let count = count.ok_or(ResponseError::InvalidPartitions)?;
        let placed = placement::place(&self.usable_brokers(), 0, count, replication_factor, start)
            .map_err(|_| ResponseError::InvalidReplicationFactor)?;
        let mut records = vec![MetadataRecord::Topic { name: name.to_owned(), topic_id }];
        for (key, value) in configs {
            records.push(MetadataRecord::Config {
                resource_type: CONFIG_RESOURCE_TOPIC,
                resource_name: name.to_owned(),
                name: key.clone(),
                value: Some(value.clone()),
            });
        }
        for (partition_id, replicas) in (0..).zip(placed) {
            records.push(new_partition(topic_id, partition_id, replicas));
        }
        Ok(records)
    }

    /// CreateTopics with a manual assignment (Kafka's `ReplicationControlManager` for
    /// `assignments`): `replicas[p]` are partition p's replicas, each a registered broker
    /// (else INVALID_REPLICA_ASSIGNMENT), the first its leader.
    pub fn create_topic_assigned(
        &self,
        name: &str,
        replicas: &[Vec<i32>],
        configs: &[(String, String)],
        topic_id: [u8; 16],
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        // The checks of name, existence and id are `create_topic`'s, with one placed partition.
        let mut records = self.create_topic(name, 1, 1, configs, topic_id, 0)?;
        records.retain(|r| !matches!(r, MetadataRecord::Partition(_)));
        if replicas.is_empty() {
            return Err(ResponseError::InvalidReplicaAssignment);
        }
        for (partition_id, set) in (0..).zip(replicas) {
            let distinct: std::collections::BTreeSet<&i32> = set.iter().collect();
            if set.is_empty()
                || distinct.len() != set.len()
                || set.iter().any(|b| !self.image.brokers.contains_key(b))
            {
                return Err(ResponseError::InvalidReplicaAssignment);
            }
            records.push(new_partition(topic_id, partition_id, set.clone()));
        }
        Ok(records)
    }

    /// CreatePartitions (Kafka's `ReplicationControlManager.createPartitions`): raises `name`'s
    /// partition count to `total`, the new partitions placed, or assigned by `assignments` (one
    /// replica set per new partition, each of the topic's replication factor, of distinct
    /// registered brokers: else INVALID_REPLICA_ASSIGNMENT, as
    /// `validateManualPartitionAssignment`).
    pub fn create_partitions(
        &self,
        name: &str,
        total: i32,
        assignments: Option<&[Vec<i32>]>,
        start: usize,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        let topic = self.image.topic(name).ok_or(ResponseError::UnknownTopicOrPartition)?;
        let existing = topic.partitions.len();
        let total = usize::try_from(total).unwrap_or(0);
        if total <= existing {
            return Err(ResponseError::InvalidPartitions);
        }
        let rf = topic.partitions.values().next().map_or(1, |p| p.replicas.len());
        let placed = if let Some(assignments) = assignments {
            let valid = |set: &Vec<i32>| {
                let distinct: std::collections::BTreeSet<&i32> = set.iter().collect();
                set.len() == rf
                    && distinct.len() == set.len()
                    && set.iter().all(|b| self.image.brokers.contains_key(b))
            };
            if assignments.len() != total - existing || !assignments.iter().all(valid) {
                return Err(ResponseError::InvalidReplicaAssignment);
            }
            assignments.to_vec()
        } else {
            let rf = i16::try_from(rf).unwrap_or(i16::MAX);
            placement::place(&self.usable_brokers(), existing, total - existing, rf, start)
                .map_err(|_| ResponseError::InvalidReplicationFactor)?
        };
        let first = i32::try_from(existing).unwrap_or(i32::MAX);
        Ok((first..)
            .zip(placed)
            .map(|(id, replicas)| new_partition(topic.id, id, replicas))
            .collect())
    }

    /// UnregisterBroker (Kafka's `ClusterControlManager.unregisterBroker` with
    /// `ReplicationControlManager.handleBrokerUnregistered`): the broker leaves every ISR it can
    /// and leads nothing, then its registration goes.
    pub fn unregister_broker(&self, broker_id: i32) -> Result<Vec<MetadataRecord>, ResponseError> {
        let broker =
            self.image.brokers.get(&broker_id).ok_or(ResponseError::BrokerIdNotRegistered)?;
        let mut records = self.leader_and_isr_updates(BrokerChange::Remove(broker_id));
        records.push(MetadataRecord::UnregisterBroker { broker_id, broker_epoch: broker.epoch });
        Ok(records)
    }

    /// AllocateProducerIds (Kafka's `ProducerIdControlManager`): the next block of
    /// [`PRODUCER_ID_BLOCK_SIZE`] ids for a registered broker; returns the block's first id.
    pub fn allocate_producer_ids(
        &self,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<(i64, Vec<MetadataRecord>), ResponseError> {
        self.check_broker_epoch(broker_id, broker_epoch)?;
        let start = self.image.next_producer_id.max(0);
        let next_producer_id =
            start.checked_add(PRODUCER_ID_BLOCK_SIZE).ok_or(ResponseError::UnknownServerError)?;
        Ok((start, vec![MetadataRecord::ProducerIds { broker_id, broker_epoch, next_producer_id }]))
    }

    /// A forwarded ACL, SCRAM or client quota change as records (`SecurityImage::records_for`).
    pub fn security_change(
        &self,
        change: &super::security_image::SecurityChange,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        self.image.security.records_for(change)
    }

    /// AlterConfigs and IncrementalAlterConfigs of a topic (Kafka's `ConfigurationControlManager`):
    /// `overrides` is the topic's whole new set; a `ConfigRecord` for each key set or changed,
    /// and one without a value for each key removed.
    pub fn set_topic_configs(
        &self,
        name: &str,
        overrides: &BTreeMap<String, String>,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        if !self.image.topic_ids.contains_key(name) {
            return Err(ResponseError::UnknownTopicOrPartition);
        }
        Ok(self.config_records(CONFIG_RESOURCE_TOPIC, name, overrides))
    }

    /// AlterConfigs and IncrementalAlterConfigs of a BROKER resource: `layer` is the whole new
    /// layer of broker `name` (an id) or of the cluster default (empty), as Config records.
    pub fn set_broker_configs(
        &self,
        name: &str,
        layer: &BTreeMap<String, String>,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        if !name.is_empty() && name.parse::<i32>().is_err() {
            return Err(ResponseError::InvalidRequest);
        }
        Ok(self.config_records(super::records::CONFIG_RESOURCE_BROKER, name, layer))
    }

    /// The Config records that turn a resource's overrides into `overrides`.
    fn config_records(
        &self,
        resource_type: i8,
        name: &str,
        overrides: &BTreeMap<String, String>,
    ) -> Vec<MetadataRecord> {
        let empty = BTreeMap::new();
        let current = self.image.configs.get(&(resource_type, name.to_owned())).unwrap_or(&empty);
        let config = |key: &String, value: Option<&String>| MetadataRecord::Config {
            resource_type,
            resource_name: name.to_owned(),
            name: key.clone(),
            value: value.cloned(),
        };
        let mut records: Vec<MetadataRecord> = overrides
            .iter()
            .filter(|(key, value)| current.get(*key) != Some(*value))
            .map(|(key, value)| config(key, Some(value)))
            .collect();
        records.extend(
            current.keys().filter(|key| !overrides.contains_key(*key)).map(|key| config(key, None)),
        );
        records
    }

    /// DeleteTopics for one topic.
    pub fn delete_topic(&self, name: &str) -> Result<Vec<MetadataRecord>, ResponseError> {
        let topic_id =
            *self.image.topic_ids.get(name).ok_or(ResponseError::UnknownTopicOrPartition)?;
        Ok(vec![MetadataRecord::RemoveTopic { topic_id }])
    }

    /// AlterPartition from a partition's leader, a compare-and-set on the partition epoch, with
    /// Kafka's checks in Kafka's order (`validateAlterPartitionData`). No record when the ISR
    /// is already the one asked for.
    pub fn alter_partition(
        &self,
        request: &AlterPartitionRequest,
    ) -> Result<Vec<MetadataRecord>, ResponseError> {
        self.check_broker_epoch(request.broker_id, request.broker_epoch)?;
        let topic =
            self.image.topics.get(&request.topic_id).ok_or(ResponseError::UnknownTopicId)?;
        let p = topic
            .partitions
            .get(&request.partition_id)
            .ok_or(ResponseError::UnknownTopicOrPartition)?;
        if request.leader_epoch > p.leader_epoch || request.partition_epoch > p.partition_epoch {
            return Err(ResponseError::NotController);
        }
        if request.leader_epoch < p.leader_epoch {
            return Err(ResponseError::FencedLeaderEpoch);
        }
        if request.broker_id != p.leader {
            return Err(ResponseError::InvalidRequest);
        }
        if request.partition_epoch < p.partition_epoch {
            return Err(ResponseError::InvalidUpdateVersion);
        }
        let mut seen = std::collections::BTreeSet::new();
        let valid = !request.new_isr.is_empty()
            && request.new_isr.iter().all(|r| p.replicas.contains(r) && seen.insert(*r))
            && request.new_isr.contains(&p.leader);
        if !valid {
            return Err(ResponseError::InvalidRequest);
        }
        if request.new_isr.iter().any(|r| *r != p.leader && !self.image.is_active(*r)) {
            return Err(ResponseError::IneligibleReplica);
        }
        if request.new_isr == p.isr {
            return Ok(Vec::new());
        }
        // The leader stays (it is in the ISR it asks for); a shrink below the minimum moves
        // the members it drops into the ELR.
        let acceptable = |r: i32| r == p.leader || self.image.is_active(r);
        let builder = ChangeBuilder {
            topic_id: request.topic_id,
            partition_id: request.partition_id,
            partition: p,
            target_isr: request.new_isr.clone(),
            acceptable: &acceptable,
            min_isr: self.min_isr(topic, p),
            elr_enabled: self.config.eligible_leader_replicas,
            unclean_allowed: false,
            unclean_shutdown: None,
            target_assignment: None,
        };
        Ok(builder.build().into_iter().map(MetadataRecord::PartitionChange).collect())
    }

    /// Preferred leader election: every partition whose first replica is in its ISR, active
    /// and not leading it gets it back as leader.
    pub fn elect_preferred_leaders(&self) -> Vec<MetadataRecord> {
        let mut records = Vec::new();
        for topic in self.image.topics.values() {
            for (partition_id, p) in &topic.partitions {
                let Some(preferred) = p.replicas.first().copied() else { continue };
                if p.leader != preferred
                    && p.isr.contains(&preferred)
                    && self.image.is_active(preferred)
                {
                    let mut change = PartitionChange::new(topic.id, *partition_id);
                    change.leader = preferred;
                    records.push(MetadataRecord::PartitionChange(change));
                }
            }
        }
        records
    }
}

fn new_partition(topic_id: [u8; 16], partition_id: i32, replicas: Vec<i32>) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        topic_id,
        partition_id,
        leader: replicas.first().copied().unwrap_or(NO_LEADER),
        isr: replicas.clone(),
        replicas,
        leader_epoch: 0,
        partition_epoch: 0,
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
    })
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
