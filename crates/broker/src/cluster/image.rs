//! `MetadataImage` (Kafka's `MetadataImage`: `ClusterImage`, `TopicsImage`, `ConfigurationsImage`,
//! `FeaturesImage`): the cluster's state as the committed metadata records leave it. Every node
//! builds it the same way, by [`MetadataImage::replay`] of the records in log order, and never
//! from a record that is not committed.

use super::security_image::SecurityImage;
use std::collections::BTreeMap;

use super::records::{
    BrokerRegistrationChange, Endpoint, MetadataRecord, NO_LEADER_CHANGE, PartitionChange,
    PartitionRecord, RegisterBroker,
};

/// A registered broker (Kafka's `BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerState {
    pub id: i32,
    /// The offset of its registration record.
    pub epoch: i64,
    pub incarnation_id: [u8; 16],
    pub endpoints: Vec<Endpoint>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
}

impl BrokerState {
    /// Whether it may lead or join an ISR (Kafka's `isActive`: unfenced, not shutting down).
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
}

/// A partition (Kafka's `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// The leader, or -1.
    pub leader: i32,
    /// Bumped by every leader change.
    pub leader_epoch: i32,
    /// Bumped by every change (AlterPartition's compare-and-set).
    pub partition_epoch: i32,
    /// KIP-966's eligible leader replicas: members of an ISR that fell below
    /// `min.insync.replicas`, which hold every committed record and may lead when the ISR is
    /// empty.
    pub elr: Vec<i32>,
    /// KIP-966's last known leader (one replica), kept while the ISR and ELR are empty.
    pub last_known_elr: Vec<i32>,
    /// A reassignment under way (KIP-455): `replicas` is the target then the replicas being
    /// removed; these are the ones being added and removed.
    pub adding_replicas: Vec<i32>,
    pub removing_replicas: Vec<i32>,
}

impl PartitionState {
    /// Whether a reassignment is under way.
    pub fn reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }
}

/// A topic and its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicState {
    pub name: String,
    pub id: [u8; 16],
    pub partitions: BTreeMap<i32, PartitionState>,
}

/// A record that does not fit the image: the log and the image disagree, which a replica must
/// not paper over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    #[error("offset {offset}: the metadata record names unknown topic id {topic_id:02x?}")]
    UnknownTopic { offset: i64, topic_id: [u8; 16] },
    #[error("offset {offset}: topic {name} is created twice")]
    DuplicateTopic { offset: i64, name: String },
    #[error("offset {offset}: topic {name} takes the id {topic_id:02x?} of another topic")]
    DuplicateTopicId { offset: i64, name: String, topic_id: [u8; 16] },
    #[error("offset {offset}: partition {partition_id} of topic {name} is not there")]
    UnknownPartition { offset: i64, name: String, partition_id: i32 },
    #[error("offset {offset}: broker {broker_id} epoch {broker_epoch} is not registered")]
    UnknownBroker { offset: i64, broker_id: i32, broker_epoch: i64 },
    #[error("offset {offset} is not after the last replayed offset {last}")]
    OutOfOrder { offset: i64, last: i64 },
}

/// The cluster's metadata at one offset of the metadata log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetadataImage {
    /// The offset of the last record replayed, -1 before any.
    pub offset: i64,
    pub brokers: BTreeMap<i32, BrokerState>,
    pub topics: BTreeMap<[u8; 16], TopicState>,
    pub topic_ids: BTreeMap<String, [u8; 16]>,
    /// Dynamic configs by (resource type, resource name).
    pub configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
    pub features: BTreeMap<String, i16>,
    /// The first producer id not yet handed out.
    pub next_producer_id: i64,
    /// The ACLs, SCRAM credentials and client quotas.
    pub security: SecurityImage,
}

impl MetadataImage {
    /// An image of an empty log.
    pub fn empty() -> Self {
        Self { offset: -1, security: SecurityImage::empty(), ..Self::default() }
    }

    /// The topic named `name`.
    pub fn topic(&self, name: &str) -> Option<&TopicState> {
        self.topics.get(self.topic_ids.get(name)?)
    }

    /// Whether `broker_id` is registered, unfenced and not shutting down.
    pub fn is_active(&self, broker_id: i32) -> bool {
        self.brokers.get(&broker_id).is_some_and(BrokerState::is_active)
    }

    /// The records that rebuild this image from nothing (a metadata snapshot's body): features,
    /// brokers, topics with their configs and partitions, other configs, the producer ids.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut records: Vec<MetadataRecord> = self
            .features
            .iter()
            .map(|(name, level)| MetadataRecord::FeatureLevel { name: name.clone(), level: *level })
            .collect();
        for b in self.brokers.values() {
            records.push(MetadataRecord::RegisterBroker(RegisterBroker {
                broker_id: b.id,
                incarnation_id: b.incarnation_id,
                broker_epoch: b.epoch,
                endpoints: b.endpoints.clone(),
                rack: b.rack.clone(),
                fenced: b.fenced,
                in_controlled_shutdown: b.in_controlled_shutdown,
            }));
        }
        for topic in self.topics.values() {
            records.push(MetadataRecord::Topic { name: topic.name.clone(), topic_id: topic.id });
            for (partition_id, p) in &topic.partitions {
                records.push(MetadataRecord::Partition(PartitionRecord {
                    topic_id: topic.id,
                    partition_id: *partition_id,
                    replicas: p.replicas.clone(),
                    isr: p.isr.clone(),
                    leader: p.leader,
                    leader_epoch: p.leader_epoch,
                    partition_epoch: p.partition_epoch,
                    elr: p.elr.clone(),
                    last_known_elr: p.last_known_elr.clone(),
                    adding_replicas: p.adding_replicas.clone(),
                    removing_replicas: p.removing_replicas.clone(),
                }));
            }
        }
        for ((resource_type, resource_name), configs) in &self.configs {
            for (name, value) in configs {
                records.push(MetadataRecord::Config {
                    resource_type: *resource_type,
                    resource_name: resource_name.clone(),
                    name: name.clone(),
                    value: Some(value.clone()),
                });
            }
        }
        if self.next_producer_id > 0 {
            records.push(MetadataRecord::ProducerIds {
                broker_id: -1,
                broker_epoch: -1,
                next_producer_id: self.next_producer_id,
            });
        }
        records.extend(self.security.to_records());
        records
    }

    /// The image a snapshot's records build, standing at `offset`.
    pub fn from_records(records: &[MetadataRecord], offset: i64) -> Result<Self, ReplayError> {
        let mut image = Self::empty();
        for (at, record) in (0..).zip(records) {
            image.replay(at, record)?;
        }
        image.offset = offset;
        if image.security.changed_at >= 0 {
            image.security.changed_at = offset;
        }
        Ok(image)
    }

    /// Applies the committed record at `offset`.
    pub fn replay(&mut self, offset: i64, record: &MetadataRecord) -> Result<(), ReplayError> {
        if offset <= self.offset {
            return Err(ReplayError::OutOfOrder { offset, last: self.offset });
        }
        match record {
            MetadataRecord::RegisterBroker(r) => self.register(r),
            MetadataRecord::UnregisterBroker { broker_id, broker_epoch } => {
                self.broker_mut(offset, *broker_id, *broker_epoch)?;
                self.brokers.remove(broker_id);
            }
            MetadataRecord::Topic { name, topic_id } => {
                if self.topic_ids.contains_key(name) {
                    return Err(ReplayError::DuplicateTopic { offset, name: name.clone() });
                }
                if self.topics.contains_key(topic_id) {
                    let name = name.clone();
                    return Err(ReplayError::DuplicateTopicId {
                        offset,
                        name,
                        topic_id: *topic_id,
                    });
                }
                self.topic_ids.insert(name.clone(), *topic_id);
                let topic =
                    TopicState { name: name.clone(), id: *topic_id, partitions: BTreeMap::new() };
                self.topics.insert(*topic_id, topic);
            }
            MetadataRecord::Partition(p) => self.partition(offset, p)?,
            MetadataRecord::PartitionChange(c) => self.partition_change(offset, c)?,
            MetadataRecord::Config { resource_type, resource_name, name, value } => {
                let key = (*resource_type, resource_name.clone());
                let configs = self.configs.entry(key.clone()).or_default();
                if let Some(value) = value {
                    configs.insert(name.clone(), value.clone());
                } else {
                    configs.remove(name);
                    if configs.is_empty() {
                        self.configs.remove(&key);
                    }
                }
            }
            MetadataRecord::RemoveTopic { topic_id } => {
                let topic = self
                    .topics
                    .remove(topic_id)
                    .ok_or(ReplayError::UnknownTopic { offset, topic_id: *topic_id })?;
                self.topic_ids.remove(&topic.name);
                self.configs.remove(&(super::records::CONFIG_RESOURCE_TOPIC, topic.name));
            }
            MetadataRecord::FeatureLevel { name, level } => {
                self.features.insert(name.clone(), *level);
            }
            MetadataRecord::BrokerRegistrationChange(c) => self.registration_change(offset, c)?,
            MetadataRecord::FenceBroker { broker_id, broker_epoch, fenced } => {
                self.broker_mut(offset, *broker_id, *broker_epoch)?.fenced = *fenced;
            }
            MetadataRecord::ProducerIds { next_producer_id, .. } => {
                self.next_producer_id = *next_producer_id;
            }
            MetadataRecord::AccessControlEntry(_)
            | MetadataRecord::RemoveAccessControlEntry { .. }
            | MetadataRecord::UserScramCredential(_)
            | MetadataRecord::RemoveUserScramCredential { .. }
            | MetadataRecord::ClientQuota(_) => {
                self.security.replay(offset, record);
            }
            MetadataRecord::NoOp | MetadataRecord::Other { .. } => {}
        }
        self.offset = offset;
        Ok(())
    }

    fn register(&mut self, r: &RegisterBroker) {
        self.brokers.insert(
            r.broker_id,
            BrokerState {
                id: r.broker_id,
                epoch: r.broker_epoch,
                incarnation_id: r.incarnation_id,
                endpoints: r.endpoints.clone(),
                rack: r.rack.clone(),
                fenced: r.fenced,
                in_controlled_shutdown: r.in_controlled_shutdown,
            },
        );
    }

    fn broker_mut(
        &mut self,
        offset: i64,
        broker_id: i32,
        broker_epoch: i64,
    ) -> Result<&mut BrokerState, ReplayError> {
        self.brokers
            .get_mut(&broker_id)
            .filter(|broker| broker.epoch == broker_epoch)
            .ok_or(ReplayError::UnknownBroker { offset, broker_id, broker_epoch })
    }

    fn registration_change(
        &mut self,
        offset: i64,
        c: &BrokerRegistrationChange,
    ) -> Result<(), ReplayError> {
        let broker = self.broker_mut(offset, c.broker_id, c.broker_epoch)?;
        match c.fenced {
            1 => broker.fenced = true,
            -1 => broker.fenced = false,
            _ => {}
        }
        match c.in_controlled_shutdown {
            1 => broker.in_controlled_shutdown = true,
            -1 => broker.in_controlled_shutdown = false,
            _ => {}
        }
        Ok(())
    }

    fn topic_mut(
        &mut self,
        offset: i64,
        topic_id: [u8; 16],
    ) -> Result<&mut TopicState, ReplayError> {
        self.topics.get_mut(&topic_id).ok_or(ReplayError::UnknownTopic { offset, topic_id })
    }

    fn partition(&mut self, offset: i64, p: &PartitionRecord) -> Result<(), ReplayError> {
        let topic = self.topic_mut(offset, p.topic_id)?;
        topic.partitions.insert(
            p.partition_id,
            PartitionState {
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                partition_epoch: p.partition_epoch,
                elr: p.elr.clone(),
                last_known_elr: p.last_known_elr.clone(),
                adding_replicas: p.adding_replicas.clone(),
                removing_replicas: p.removing_replicas.clone(),
            },
        );
        Ok(())
    }

    /// Kafka's `PartitionRegistration.merge`: a leader change bumps the leader epoch; every
    /// change bumps the partition epoch.
    fn partition_change(&mut self, offset: i64, c: &PartitionChange) -> Result<(), ReplayError> {
        let topic = self.topic_mut(offset, c.topic_id)?;
        let name = topic.name.clone();
        let partition = topic
            .partitions
            .get_mut(&c.partition_id)
            .ok_or(ReplayError::UnknownPartition { offset, name, partition_id: c.partition_id })?;
        if let Some(isr) = &c.isr {
            partition.isr.clone_from(isr);
        }
        if let Some(replicas) = &c.replicas {
            partition.replicas.clone_from(replicas);
        }
        if let Some(elr) = &c.elr {
            partition.elr.clone_from(elr);
        }
        if let Some(last_known_elr) = &c.last_known_elr {
            partition.last_known_elr.clone_from(last_known_elr);
        }
        if let Some(adding) = &c.adding_replicas {
            partition.adding_replicas.clone_from(adding);
        }
        if let Some(removing) = &c.removing_replicas {
            partition.removing_replicas.clone_from(removing);
        }
        if c.leader != NO_LEADER_CHANGE {
            partition.leader = c.leader;
            partition.leader_epoch += 1;
        }
        partition.partition_epoch += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use seglog_format::{Batches, DecodeLimits};

    /// Kafka's own `__cluster_metadata` logs (the fixtures) replay into an image: every broker
    /// registered and unfenced by its registration changes, the bootstrap's metadata.version.
    #[test]
    fn kafkas_metadata_logs_replay() {
        let Some(root) = seglog_storage::testing::kafka_real_fixtures() else { return };
        let dirs = std::fs::read_dir(root.join("apache-kafka-kraft-testdirs")).unwrap();
        let mut replayed = 0;
        for dir in dirs {
            let log = dir.unwrap().path().join("__cluster_metadata-0/00000000000000000000.log");
            let Ok(bytes) = std::fs::read(&log) else { continue };
            let mut records = Vec::new();
            for item in Batches::new(&bytes) {
                let batch = item.unwrap().batch;
                if batch.is_control_batch() {
                    continue;
                }
                for record in &batch.records(DecodeLimits::default()).unwrap() {
                    let record = record.unwrap();
                    records.push((record.offset, MetadataRecord::decode(record.value.unwrap())));
                }
            }
            // Logs of the October 2023 trunk build hold PartitionRecords no release reads; some
            // logs are empty.
            if records.is_empty() || records.iter().any(|(_, r)| r.is_err()) {
                continue;
            }
            let mut image = MetadataImage::empty();
            for (offset, record) in records {
                image
                    .replay(offset, &record.unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", log.display()));
            }
            assert!(!image.brokers.is_empty(), "{}", log.display());
            assert!(
                image.brokers.values().all(|b| !b.fenced),
                "{}: {:?}",
                log.display(),
                image.brokers
            );
            assert!(image.features.contains_key("metadata.version"), "{}", log.display());
            replayed += 1;
        }
        assert_eq!(replayed, 3);
    }

    /// KIP-966's fields: a PartitionRecord with an ELR or a last known leader is version 2
    /// and reads back whole; without, it keeps version 0's bytes. A PartitionChange carries
    /// them as tags (version 2); a snapshot of the image holds them.
    #[test]
    fn eligible_leader_replicas_round_trip() {
        let version = |record: &MetadataRecord| {
            seglog_format::schema::metadata::read_record(&record.encode()).unwrap().version
        };
        let mut p = PartitionRecord {
            topic_id: [1; 16],
            partition_id: 0,
            replicas: vec![1, 2, 3],
            isr: Vec::new(),
            leader: super::super::records::NO_LEADER,
            leader_epoch: 3,
            partition_epoch: 5,
            elr: vec![1, 2],
            last_known_elr: vec![1],
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
        };
        let record = MetadataRecord::Partition(p.clone());
        assert_eq!(MetadataRecord::decode(&record.encode()).unwrap(), record);
        assert_eq!(version(&record), 2);
        p.elr.clear();
        p.last_known_elr.clear();
        assert_eq!(version(&MetadataRecord::Partition(p.clone())), 0);
        let mut change = PartitionChange::new([1; 16], 0);
        change.elr = Some(vec![2]);
        change.last_known_elr = Some(Vec::new());
        let record = MetadataRecord::PartitionChange(change.clone());
        assert_eq!(MetadataRecord::decode(&record.encode()).unwrap(), record);
        assert_eq!(version(&record), 2);
        let mut image = MetadataImage::empty();
        image
            .replay(0, &MetadataRecord::Topic { name: "t".to_owned(), topic_id: [1; 16] })
            .unwrap();
        image.replay(1, &MetadataRecord::Partition(p)).unwrap();
        image.replay(2, &record).unwrap();
        assert_eq!(image.topic("t").unwrap().partitions[&0].elr, vec![2]);
        // A reassignment's fields are version 0's (tags 3 and 4 of the change).
        let mut moving = PartitionChange::new([1; 16], 0);
        moving.replicas = Some(vec![2, 3, 4, 1]);
        moving.adding_replicas = Some(vec![4]);
        moving.removing_replicas = Some(vec![1]);
        let moving = MetadataRecord::PartitionChange(moving);
        assert_eq!(MetadataRecord::decode(&moving.encode()).unwrap(), moving);
        assert_eq!(version(&moving), 0);
        image.replay(3, &moving).unwrap();
        assert!(image.topic("t").unwrap().partitions[&0].reassigning());
        let mut copy = MetadataImage::empty();
        for (offset, record) in (0..).zip(image.to_records()) {
            copy.replay(offset, &record).unwrap();
        }
        assert_eq!(
            copy.topic("t").unwrap().partitions[&0],
            image.topic("t").unwrap().partitions[&0]
        );
    }
}
