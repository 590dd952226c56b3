//! Seeded model tests of the controller (issue 21's "unit and model tests"): random broker
//! joins, deaths, restarts and controlled shutdowns, topic creation and deletion, ISR changes by
//! AlterPartition (stale ones too) and preferred elections. After every step the records are
//! committed as bytes, replayed by the controller and, decoded from those bytes, by a follower,
//! and the invariants are checked: the two images are equal; every partition has a non-empty
//! ISR within its replicas and a leader in its ISR or none; a fenced or stopping broker leads
//! nothing; leader, partition and broker epochs only grow; and no two leaders ever share a
//! partition's leader epoch. A failure names its seed; `SEGLOG_SEED=<n>` runs that one alone.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use seglog_storage::testing::Rng;

use super::controller::{
    AlterPartitionRequest, BrokerRegistrationRequest, Controller, ControllerConfig,
    HeartbeatRequest,
};
use super::image::{BrokerState, MetadataImage};
use super::records::{Endpoint, MetadataRecord, NO_LEADER};

const SESSION_MS: i64 = 9_000;

#[derive(Debug, Clone)]
struct SimBroker {
    epoch: i64,
    alive: bool,
    stopping: bool,
}

struct Sim {
    seed: u64,
    step: usize,
    rng: Rng,
    now_ms: i64,
    controller: Controller,
    follower: MetadataImage,
    log: Vec<Vec<u8>>,
    brokers: BTreeMap<i32, SimBroker>,
    /// (topic id, partition, leader epoch) -> the leader seen at that epoch.
    leaders: BTreeMap<([u8; 16], i32, i32), i32>,
    /// (topic id, partition) -> the last (leader epoch, partition epoch) seen.
    epochs: BTreeMap<([u8; 16], i32), (i32, i32)>,
    broker_epochs: BTreeMap<i32, i64>,
    /// Each broker's last heartbeat or registration, as the model knows it.
    last_contact: BTreeMap<i32, i64>,
    next_topic: u8,
    counts: BTreeMap<&'static str, usize>,
}

impl Sim {
    fn new(seed: u64) -> Self {
        let mut sim = Self {
            seed,
            step: 0,
            rng: Rng(seed),
            now_ms: 1_000_000,
            // KIP-966's ELR on for half the seeds.
            controller: Controller::new(ControllerConfig {
                session_timeout_ms: SESSION_MS,
                eligible_leader_replicas: seed % 2 == 1,
            }),
            follower: MetadataImage::empty(),
            log: Vec::new(),
            brokers: BTreeMap::new(),
            leaders: BTreeMap::new(),
            epochs: BTreeMap::new(),
            broker_epochs: BTreeMap::new(),
            last_contact: BTreeMap::new(),
            next_topic: 0,
            counts: BTreeMap::new(),
        };
        sim.commit(Controller::bootstrap_records());
        sim
    }

    fn ctx(&self) -> String {
        format!("seed {} step {} (SEGLOG_SEED={} to repeat)", self.seed, self.step, self.seed)
    }

    fn next_offset(&self) -> i64 {
        i64::try_from(self.log.len()).unwrap_or(i64::MAX)
    }

    /// Commits records as the quorum would: bytes in the log, replayed in order by the
    /// controller and, from the bytes, by a follower.
    fn commit(&mut self, records: Vec<MetadataRecord>) {
        for record in records {
            let offset = self.next_offset();
            let bytes = record.encode();
            let decoded = MetadataRecord::decode(&bytes)
                .unwrap_or_else(|e| panic!("{}: {record:?} does not decode: {e}", self.ctx()));
            self.controller
                .replay(offset, &record)
                .unwrap_or_else(|e| panic!("{}: controller replay: {e}", self.ctx()));
            self.follower
                .replay(offset, &decoded)
                .unwrap_or_else(|e| panic!("{}: follower replay: {e}", self.ctx()));
            self.log.push(bytes);
        }
        self.check();
    }

    fn check(&mut self) {
        let ctx = self.ctx();
        let image = self.controller.image();
        assert_eq!(&self.follower, image, "{ctx}: the follower's image differs");
        for (id, broker) in &image.brokers {
            let last = self.broker_epochs.insert(*id, broker.epoch).unwrap_or(-1);
            assert!(broker.epoch >= last, "{ctx}: broker {id} epoch {last} -> {}", broker.epoch);
        }
        for topic in image.topics.values() {
            for (partition_id, p) in &topic.partitions {
                let at = format!("{ctx}: {}-{partition_id} {p:?}", topic.name);
                let elr_on = self.seed % 2 == 1;
                assert!(!p.isr.is_empty() || (elr_on && p.leader == NO_LEADER), "{at}: empty ISR");
                assert!(elr_on || p.elr.is_empty(), "{at}: an ELR with the ELR off");
                assert!(
                    p.elr.iter().all(|r| p.replicas.contains(r) && !p.isr.contains(r)),
                    "{at}: ELR"
                );
                let min_isr = image
                    .configs
                    .get(&(crate::cluster::records::CONFIG_RESOURCE_TOPIC, topic.name.clone()))
                    .and_then(|c| c.get("min.insync.replicas"))
                    .and_then(|v| v.parse::<usize>().ok())
                    .unwrap_or(1)
                    .min(p.replicas.len());
                assert!(p.elr.is_empty() || p.isr.len() < min_isr, "{at}: ELR with a full ISR");
                assert!(p.last_known_elr.len() <= 1, "{at}: more than one last known leader");
                let distinct: std::collections::BTreeSet<&i32> = p.replicas.iter().collect();
                assert_eq!(distinct.len(), p.replicas.len(), "{at}: a replica twice");
                assert!(
                    p.adding_replicas
                        .iter()
                        .chain(&p.removing_replicas)
                        .all(|r| p.replicas.contains(r))
                        && !p.adding_replicas.iter().any(|r| p.removing_replicas.contains(r)),
                    "{at}: adding and removing"
                );
                assert!(p.isr.iter().all(|r| p.replicas.contains(r)), "{at}: ISR not in replicas");
                if p.leader != NO_LEADER {
                    assert!(p.isr.contains(&p.leader), "{at}: leader outside the ISR");
                    let broker = image.brokers.get(&p.leader);
                    assert!(broker.is_some_and(BrokerState::is_active), "{at}: leader {broker:?}");
                }
                let key = (topic.id, *partition_id);
                let (leader_epoch, partition_epoch) =
                    self.epochs.get(&key).copied().unwrap_or((p.leader_epoch, p.partition_epoch));
                assert!(p.leader_epoch >= leader_epoch, "{at}: leader epoch went back");
                assert!(p.partition_epoch >= partition_epoch, "{at}: partition epoch went back");
                self.epochs.insert(key, (p.leader_epoch, p.partition_epoch));
                let seen = *self
                    .leaders
                    .entry((topic.id, *partition_id, p.leader_epoch))
                    .or_insert(p.leader);
                assert_eq!(seen, p.leader, "{at}: two leaders in leader epoch {}", p.leader_epoch);
            }
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_default() += 1;
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> Option<T> {
        let len = u64::try_from(items.len()).ok().filter(|n| *n > 0)?;
        items.get(usize::try_from(self.rng.below(len)).ok()?).cloned()
    }

    fn start_broker(&mut self, id: i32) {
        let mut incarnation = [0u8; 16];
        incarnation[..8].copy_from_slice(&self.rng.next_u64().to_be_bytes());
        let rack = Some(format!("rack-{}", id % 3));
        let request = BrokerRegistrationRequest {
            broker_id: id,
            incarnation_id: incarnation,
            endpoints: vec![Endpoint {
                name: "PLAINTEXT".to_owned(),
                host: "127.0.0.1".to_owned(),
                port: 9092 + u16::try_from(id).unwrap_or(0),
                security_protocol: 0,
            }],
            rack,
            clean_shutdown: self.rng.below(2) == 0,
        };
        // A fenced registration has no session (Kafka's heartbeat manager untracks it).
        let old_session_alive = self.brokers.get(&id).is_some_and(|b| !b.alive)
            && self.controller.image().brokers.get(&id).is_some_and(|b| !b.fenced)
            && self.last_contact_fresh(id);
        let next_offset = self.next_offset();
        match self.controller.register_broker(&request, next_offset, self.now_ms) {
            Ok(records) => {
                assert!(!old_session_alive, "{}: a live session's id was taken", self.ctx());
                let epoch = records
                    .iter()
                    .find_map(|r| match r {
                        MetadataRecord::RegisterBroker(r) => Some(r.broker_epoch),
                        _ => None,
                    })
                    .unwrap_or(-1);
                self.commit(records);
                let registered = self.controller.image().brokers.get(&id).map(|b| b.epoch);
                assert_eq!(
                    registered,
                    Some(epoch),
                    "{}: the epoch is the record's offset",
                    self.ctx()
                );
                self.brokers.insert(id, SimBroker { epoch, alive: true, stopping: false });
                self.last_contact.insert(id, self.now_ms);
                self.count("registered");
            }
            Err(ResponseError::DuplicateBrokerRegistration) => {
                assert!(old_session_alive, "{}: refused without a live session", self.ctx());
                self.count("duplicate refused");
            }
            Err(error) => panic!("{}: register {id}: {error:?}", self.ctx()),
        }
    }

    /// Whether the controller still counts broker `id`'s session (the model's own clock).
    fn last_contact_fresh(&self, id: i32) -> bool {
        self.last_contact.get(&id).is_some_and(|t| self.now_ms - t < SESSION_MS)
    }

    fn heartbeat_all(&mut self) {
        let ids: Vec<i32> =
            self.brokers.iter().filter(|(_, b)| b.alive).map(|(id, _)| *id).collect();
        for id in ids {
            let Some(broker) = self.brokers.get(&id).cloned() else { continue };
            let request = HeartbeatRequest {
                broker_id: id,
                broker_epoch: broker.epoch,
                current_metadata_offset: self.next_offset() - 1,
                want_fence: false,
                want_shutdown: broker.stopping,
            };
            match self.controller.heartbeat(&request, self.now_ms) {
                Ok((reply, records)) => {
                    self.last_contact.insert(id, self.now_ms);
                    assert!(reply.is_caught_up, "{}: broker {id} applied everything", self.ctx());
                    self.commit(records);
                    if reply.should_shutdown {
                        let leads = self
                            .controller
                            .image()
                            .topics
                            .values()
                            .flat_map(|t| t.partitions.values())
                            .any(|p| p.leader == id);
                        assert!(!leads, "{}: broker {id} told to stop while leading", self.ctx());
                        if let Some(b) = self.brokers.get_mut(&id) {
                            b.alive = false;
                        }
                        self.count("controlled shutdowns");
                    }
                }
                // Fenced and re-registered elsewhere in the model: this process is gone.
                Err(ResponseError::StaleBrokerEpoch) => {
                    if let Some(b) = self.brokers.get_mut(&id) {
                        b.alive = false;
                    }
                }
                Err(error) => panic!("{}: heartbeat {id}: {error:?}", self.ctx()),
            }
        }
    }

    fn create_topic(&mut self) {
        let name = format!("t{}", self.next_topic);
        self.next_topic = self.next_topic.wrapping_add(1);
        let partitions = i32::try_from(1 + self.rng.below(4)).unwrap_or(1);
        let rf = i16::try_from(1 + self.rng.below(3)).unwrap_or(1);
        let mut topic_id = [0u8; 16];
        topic_id[..8].copy_from_slice(&self.rng.next_u64().to_be_bytes());
        topic_id[15] = 1;
        let start = usize::try_from(self.rng.below(1000)).unwrap_or(0);
        let active = self.controller.image().brokers.values().filter(|b| b.is_active()).count();
        let configs = [("min.insync.replicas".to_owned(), (1 + self.rng.below(3)).to_string())];
        match self.controller.create_topic(&name, partitions, rf, &configs, topic_id, start) {
            Ok(records) => {
                self.commit(records);
                self.count("topics created");
            }
            Err(ResponseError::InvalidReplicationFactor) => {
                assert!(
                    usize::try_from(rf).unwrap_or(0) > active,
                    "{}: rf {rf} with {active} active",
                    self.ctx()
                );
                self.count("too few brokers");
            }
            Err(error) => panic!("{}: create {name}: {error:?}", self.ctx()),
        }
    }

    /// AlterPartitionReassignments of a random partition: a new replica set of registered
    /// brokers (its factor kept, or not), or a cancel.
    fn reassign(&mut self) {
        let image = self.controller.image().clone();
        let partitions: Vec<(String, i32, usize)> = image
            .topics
            .values()
            .flat_map(|t| {
                t.partitions.iter().map(|(id, p)| (t.name.clone(), *id, p.replicas.len()))
            })
            .collect();
        let Some((name, partition_id, rf)) = self.pick(&partitions) else { return };
        let registered: Vec<i32> = image.brokers.keys().copied().collect();
        let target = (self.rng.below(4) != 0).then(|| {
            let mut target = Vec::new();
            for _ in 0..rf + usize::try_from(self.rng.below(2)).unwrap_or(0) {
                if let Some(b) = self.pick(&registered)
                    && !target.contains(&b)
                {
                    target.push(b);
                }
            }
            target
        });
        let asked = [(name, partition_id, target)];
        let (records, results) = self.controller.alter_partition_reassignments(&asked, true);
        self.commit(records);
        self.count(match results[0].2 {
            0 => "reassigned",
            _ => "reassignment refused",
        });
    }

    fn alter_partition(&mut self) {
        let image = self.controller.image().clone();
        let led: Vec<([u8; 16], i32)> = image
            .topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|(_, p)| p.leader != NO_LEADER)
                    .map(move |(id, _)| (t.id, *id))
            })
            .collect();
        let Some((topic_id, partition_id)) = self.pick(&led) else { return };
        let Some(p) = image.topics.get(&topic_id).and_then(|t| t.partitions.get(&partition_id))
        else {
            return;
        };
        let Some(leader) = image.brokers.get(&p.leader) else { return };
        // The leader's new ISR: itself and some replicas, active or not.
        let mut new_isr = vec![p.leader];
        for r in &p.replicas {
            if *r != p.leader && self.rng.coin() {
                new_isr.push(*r);
            }
        }
        let stale = self.rng.below(4) == 0 && p.partition_epoch > 0;
        let request = AlterPartitionRequest {
            broker_id: p.leader,
            broker_epoch: leader.epoch,
            topic_id,
            partition_id,
            leader_epoch: p.leader_epoch,
            partition_epoch: if stale { p.partition_epoch - 1 } else { p.partition_epoch },
            new_isr: new_isr.clone(),
        };
        let result = self.controller.alter_partition(&request);
        if stale {
            assert_eq!(
                result,
                Err(ResponseError::InvalidUpdateVersion),
                "{}: a stale compare-and-set",
                self.ctx()
            );
            self.count("stale AlterPartition refused");
            return;
        }
        let ineligible = new_isr.iter().any(|r| *r != p.leader && !image.is_active(*r));
        match result {
            Ok(records) => {
                assert!(!ineligible, "{}: an inactive replica joined the ISR", self.ctx());
                self.commit(records);
                let after = self
                    .controller
                    .image()
                    .topics
                    .get(&topic_id)
                    .and_then(|t| t.partitions.get(&partition_id))
                    .cloned();
                // A reassignment completed by this ISR drops the replicas being removed.
                let expected: Vec<i32> = if p.reassigning()
                    && after.as_ref().is_some_and(|a| !a.reassigning())
                {
                    new_isr.iter().copied().filter(|r| !p.removing_replicas.contains(r)).collect()
                } else {
                    new_isr
                };
                assert_eq!(after.map(|a| a.isr), Some(expected), "{}", self.ctx());
                self.count("AlterPartition");
            }
            Err(ResponseError::IneligibleReplica) => {
                assert!(ineligible, "{}: refused an eligible ISR", self.ctx());
                self.count("ineligible refused");
            }
            Err(error) => panic!("{}: AlterPartition: {error:?}", self.ctx()),
        }
    }

    fn step(&mut self) {
        self.step += 1;
        let ids: Vec<i32> = (0..6).collect();
        match self.rng.below(20) {
            0..=2 => {
                if let Some(id) = self.pick(&ids)
                    && !self.brokers.get(&id).is_some_and(|b| b.alive)
                {
                    self.start_broker(id);
                }
            }
            3 => {
                let alive: Vec<i32> =
                    self.brokers.iter().filter(|(_, b)| b.alive).map(|(id, _)| *id).collect();
                if let Some(id) = self.pick(&alive)
                    && let Some(b) = self.brokers.get_mut(&id)
                {
                    b.alive = false;
                    self.count("killed");
                }
            }
            4 => {
                let alive: Vec<i32> =
                    self.brokers.iter().filter(|(_, b)| b.alive).map(|(id, _)| *id).collect();
                if let Some(id) = self.pick(&alive)
                    && let Some(b) = self.brokers.get_mut(&id)
                {
                    b.stopping = true;
                }
            }
            5..=7 => self.create_topic(),
            8..=11 => self.alter_partition(),
            12 => {
                let names: Vec<String> =
                    self.controller.image().topic_ids.keys().cloned().collect();
                if let Some(name) = self.pick(&names) {
                    let records = self
                        .controller
                        .delete_topic(&name)
                        .unwrap_or_else(|e| panic!("{}: {e:?}", self.ctx()));
                    self.commit(records);
                    self.count("topics deleted");
                }
            }
            13 => {
                let records = self.controller.elect_preferred_leaders();
                self.commit(records);
            }
            14 => self.reassign(),
            _ => {
                self.now_ms += i64::try_from(self.rng.below(4_000)).unwrap_or(0);
                self.heartbeat_all();
                loop {
                    let records = self.controller.fence_stale_broker(self.now_ms);
                    if records.is_empty() {
                        break;
                    }
                    self.count("fenced by session");
                    self.commit(records);
                }
            }
        }
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("SEGLOG_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => (1..=200).map(|n| n * 0x9e37_79b9).collect(),
    }
}

#[test]
fn random_joins_deaths_restarts_and_isr_changes_keep_the_invariants() {
    let mut totals: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in seeds() {
        let mut sim = Sim::new(seed);
        for _ in 0..400 {
            sim.step();
        }
        for (what, n) in sim.counts {
            *totals.entry(what).or_default() += n;
        }
    }
    // Every path was taken, so the invariants were checked across each of them.
    for what in [
        "registered",
        "duplicate refused",
        "killed",
        "controlled shutdowns",
        "topics created",
        "too few brokers",
        "AlterPartition",
        "stale AlterPartition refused",
        "ineligible refused",
        "topics deleted",
        "fenced by session",
        "reassigned",
        "reassignment refused",
    ] {
        assert!(totals.get(what).copied().unwrap_or(0) > 0, "never: {what} ({totals:?})");
    }
    println!("{totals:?}");
}
