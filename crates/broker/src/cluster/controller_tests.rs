//! Tests of `controller.rs`.

use super::*;

/// A new active controller has replayed the registrations but heard no heartbeat: without
/// `touch_all` it would fence every broker at its first check; with it, none until a whole
/// session passes in silence.
#[test]
fn a_new_active_controller_gives_every_broker_a_fresh_session() {
    let config = ControllerConfig { session_timeout_ms: 1_000, ..ControllerConfig::default() };
    let mut old = Controller::new(config);
    let mut offset = 0;
    let mut commit = |controller: &mut Controller,
                      records: Vec<MetadataRecord>,
                      log: &mut Vec<MetadataRecord>| {
        for record in records {
            controller.replay(offset, &record).unwrap();
            log.push(record);
            offset += 1;
        }
    };
    let mut log = Vec::new();
    for id in [1, 2] {
        let request = BrokerRegistrationRequest {
            broker_id: id,
            incarnation_id: [u8::try_from(id).unwrap(); 16],
            endpoints: Vec::new(),
            rack: None,
            clean_shutdown: false,
        };
        let records = old.register_broker(&request, i64::try_from(log.len()).unwrap(), 0).unwrap();
        commit(&mut old, records, &mut log);
        let epoch = old.image().brokers[&id].epoch;
        let beat = HeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: i64::MAX,
            want_fence: false,
            want_shutdown: false,
        };
        let (_, records) = old.heartbeat(&beat, 0).unwrap();
        commit(&mut old, records, &mut log);
    }
    let replay = |controller: &mut Controller| {
        for (at, record) in (0..).zip(&log) {
            controller.replay(at, record).unwrap();
        }
    };
    let mut without = Controller::new(config);
    replay(&mut without);
    assert!(!without.fence_stale_broker(500).is_empty(), "no session: fenced at once");
    let mut with = Controller::new(config);
    replay(&mut with);
    with.touch_all(500);
    assert!(with.fence_stale_broker(1_400).is_empty(), "a fresh session holds");
    assert!(!with.fence_stale_broker(1_600).is_empty(), "a silent session still ends");
}

/// A controller with its committed log: what a change's records do once replayed.
struct World {
    controller: Controller,
    offset: i64,
}

impl World {
    /// Brokers 1 to 3 registered and unfenced, topic `t` with one partition on all three
    /// (1 leads); `configs` are the topic's; the ELR on (the default).
    fn new(configs: &[(&str, &str)]) -> Self {
        Self::with(true, configs)
    }

    /// [`World::new`] with the ELR on or off.
    fn with(elr: bool, configs: &[(&str, &str)]) -> Self {
        let config =
            ControllerConfig { eligible_leader_replicas: elr, ..ControllerConfig::default() };
        let mut world = Self { controller: Controller::new(config), offset: 0 };
        for id in 1..=3 {
            world.add_broker(id);
        }
        let configs: Vec<(String, String)> =
            configs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let records = world
            .controller
            .create_topic_assigned("t", &[vec![1, 2, 3]], &configs, [9; 16])
            .unwrap();
        world.commit(records);
        world
    }

    /// A new incarnation of broker `id` registers (fenced until its heartbeat), after a
    /// clean shutdown or not.
    fn register_again(&mut self, id: i32, clean_shutdown: bool) {
        let incarnation = self.controller.image().brokers[&id].incarnation_id[0] + 10;
        let request = BrokerRegistrationRequest {
            broker_id: id,
            incarnation_id: [incarnation; 16],
            endpoints: Vec::new(),
            rack: None,
            clean_shutdown,
        };
        // Its old session is over (the tests' clock stands still at 0).
        let now_ms = ControllerConfig::default().session_timeout_ms + 1;
        let records = self.controller.register_broker(&request, self.offset, now_ms).unwrap();
        self.commit(records);
    }

    /// Registers broker `id` (a first incarnation) and unfences it.
    fn add_broker(&mut self, id: i32) {
        let request = BrokerRegistrationRequest {
            broker_id: id,
            incarnation_id: [u8::try_from(id).unwrap(); 16],
            endpoints: Vec::new(),
            rack: None,
            clean_shutdown: false,
        };
        let records = self.controller.register_broker(&request, self.offset, 0).unwrap();
        self.commit(records);
        self.beat(id, false);
    }

    /// AlterPartitionReassignments of `t-0` (`None` cancels): its code.
    fn reassign(&mut self, target: Option<&[i32]>, allow_rf_change: bool) -> i16 {
        let asked = [("t".to_owned(), 0, target.map(<[i32]>::to_vec))];
        let (records, results) =
            self.controller.alter_partition_reassignments(&asked, allow_rf_change);
        self.commit(records);
        results[0].2
    }

    /// The partition's (replicas, adding, removing, leader, ISR).
    fn assignment(&self) -> (Vec<i32>, Vec<i32>, Vec<i32>, i32, Vec<i32>) {
        let p = self.partition();
        (p.replicas, p.adding_replicas, p.removing_replicas, p.leader, p.isr)
    }

    /// The partition's (leader, ISR, ELR, last known leader).
    fn state(&self) -> (i32, Vec<i32>, Vec<i32>, Vec<i32>) {
        let p = self.partition();
        (p.leader, p.isr, p.elr, p.last_known_elr)
    }

    fn commit(&mut self, records: Vec<MetadataRecord>) {
        for record in records {
            self.controller.replay(self.offset, &record).unwrap();
            self.offset += 1;
        }
    }

    /// A heartbeat of broker `id`, caught up; `fence` asks to be fenced.
    fn beat(&mut self, id: i32, fence: bool) {
        let beat = HeartbeatRequest {
            broker_id: id,
            broker_epoch: self.controller.image().brokers[&id].epoch,
            current_metadata_offset: i64::MAX,
            want_fence: fence,
            want_shutdown: false,
        };
        let (_, records) = self.controller.heartbeat(&beat, 0).unwrap();
        self.commit(records);
    }

    /// The partition's ISR set by its leader through AlterPartition.
    fn set_isr(&mut self, isr: &[i32]) {
        let p = self.partition();
        let request = AlterPartitionRequest {
            broker_id: p.leader,
            broker_epoch: self.controller.image().brokers[&p.leader].epoch,
            topic_id: [9; 16],
            partition_id: 0,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            new_isr: isr.to_vec(),
        };
        let records = self.controller.alter_partition(&request).unwrap();
        self.commit(records);
    }

    fn partition(&self) -> PartitionState {
        self.controller.image().topic("t").unwrap().partitions[&0].clone()
    }

    fn elect(&mut self, election_type: i8, named: bool) -> Vec<(String, i32, i16)> {
        let asked = [("t".to_owned(), 0)];
        let (records, results) =
            self.controller.elect_leaders(election_type, named.then_some(&asked[..])).unwrap();
        self.commit(records);
        results
    }
}

/// The last ISR member fenced leaves the partition without a leader; a replica outside the
/// ISR leads only when `unclean.leader.election.enable` says so, or when an operator asks
/// an unclean ElectLeaders.
#[test]
fn an_unclean_election_needs_the_topic_config_or_an_operator() {
    let mut clean = World::with(false, &[]);
    clean.set_isr(&[1]);
    clean.beat(1, true);
    let p = clean.partition();
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![1]), "the ISR keeps its last member");
    assert_eq!(clean.elect(0, true), vec![("t".to_owned(), 0, 80)], "1 is not active");
    assert_eq!(clean.elect(1, true), vec![("t".to_owned(), 0, 0)]);
    let p = clean.partition();
    assert_eq!((p.leader, p.isr), (2, vec![2]), "an operator's unclean election");
    assert_eq!(clean.elect(1, true), vec![("t".to_owned(), 0, 84)], "it has a leader");

    let mut unclean = World::with(false, &[("unclean.leader.election.enable", "true")]);
    unclean.set_isr(&[1]);
    let epoch = unclean.partition().leader_epoch;
    unclean.beat(1, true);
    let p = unclean.partition();
    assert_eq!((p.leader, p.isr, p.leader_epoch), (2, vec![2], epoch + 1), "at once");
}

/// KIP-966: with `min.insync.replicas`=2, the members an ISR loses below the minimum stay
/// eligible. When the last ISR member is lost too, the partition has no leader and an empty
/// ISR, and the first ELR member back leads: the window in which only the last member
/// standing could lead (and, back from a power loss, lose what the others had) is closed.
/// Without the ELR the same steps wait for broker 1.
#[test]
fn an_eligible_replica_leads_when_the_last_isr_member_is_lost() {
    let min_isr = [("min.insync.replicas", "2")];
    let mut world = World::new(&min_isr);
    world.set_isr(&[1, 2]);
    assert_eq!(world.state(), (1, vec![1, 2], vec![], vec![]), "at the minimum: no ELR");
    world.beat(2, true);
    assert_eq!(world.state(), (1, vec![1], vec![2], vec![]), "below it: 2 stays eligible");
    let epoch = world.partition().leader_epoch;
    world.beat(1, true);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![1, 2], vec![1]));
    assert_eq!(world.partition().leader_epoch, epoch + 1);
    world.beat(2, false);
    assert_eq!(world.state(), (2, vec![2], vec![1], vec![]), "2 leads from the ELR");
    // The ELR empties once the ISR reaches the minimum again.
    world.beat(1, false);
    world.set_isr(&[2, 1]);
    assert_eq!(world.state(), (2, vec![2, 1], vec![], vec![]));

    let mut without = World::with(false, &min_isr);
    without.set_isr(&[1, 2]);
    without.beat(2, true);
    without.beat(1, true);
    without.beat(2, false);
    assert_eq!(without.state(), (NO_LEADER, vec![1], vec![], vec![]), "waits for 1");
}

/// An unclean restart (no clean-shutdown marker) leaves the ELR, as Kafka's
/// `handleBrokerUncleanShutdown`; a clean one keeps the broker eligible. Under an fsync
/// durability mode an unclean restart keeps it eligible too: its log still holds every
/// record it helped commit. With the ISR and ELR empty, the last known leader leads once
/// it is back (an election counted unclean).
#[test]
fn an_unclean_restart_leaves_the_elr_unless_the_topic_fsyncs() {
    let min_isr = ("min.insync.replicas", "2");
    let lost = |world: &mut World| {
        world.set_isr(&[1, 2]);
        world.beat(2, true);
        world.beat(1, true);
        assert_eq!(world.state(), (NO_LEADER, vec![], vec![1, 2], vec![1]));
    };
    let mut world = World::new(&[min_isr]);
    lost(&mut world);
    world.register_again(1, false);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![2], vec![1]), "1 restarted uncleanly");
    world.register_again(2, true);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![2], vec![1]), "2 cleanly");
    world.register_again(2, false);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![], vec![1]), "2 uncleanly");
    world.beat(2, false);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![], vec![1]), "2 is not eligible");
    world.beat(1, false);
    assert_eq!(world.state(), (1, vec![1], vec![], vec![]), "the last known leader");

    let mut durable = World::new(&[min_isr, ("seglog.durability", "group-commit")]);
    lost(&mut durable);
    durable.register_again(1, false);
    durable.register_again(2, false);
    assert_eq!(durable.state(), (NO_LEADER, vec![], vec![1, 2], vec![1]), "both eligible");
    durable.beat(2, false);
    assert_eq!(durable.state(), (2, vec![2], vec![1], vec![]));
}

/// A replica that left an ISR already below the minimum stays eligible: with
/// `min.insync.replicas`=3, 3 leaves first, then 1 and 2 are lost; 3 leads when it is back.
#[test]
fn a_replica_that_left_below_the_minimum_stays_eligible() {
    let mut world = World::new(&[("min.insync.replicas", "3")]);
    world.set_isr(&[1, 2]);
    assert_eq!(world.state(), (1, vec![1, 2], vec![3], vec![]), "3 left below the minimum");
    world.beat(3, true);
    world.beat(1, true);
    assert_eq!(world.state(), (2, vec![2], vec![1, 3], vec![]));
    world.beat(2, true);
    assert_eq!(world.state(), (NO_LEADER, vec![], vec![1, 2, 3], vec![2]));
    assert_eq!(world.elect(1, true), vec![("t".to_owned(), 0, 83)], "none is active");
    world.beat(3, false);
    assert_eq!(world.state(), (3, vec![3], vec![1, 2], vec![]), "clean, from the ELR");
    assert_eq!(world.elect(1, true), vec![("t".to_owned(), 0, 84)], "it has a leader");
}

/// KIP-455: a reassignment first adds the new replicas (the target, then the ones being
/// removed), and completes once every new replica is in the ISR: the removed ones leave
/// the replicas and the ISR, a removed leader hands over to the target's first ISR member,
/// and the leader epoch goes up.
#[test]
fn a_reassignment_adds_then_drops_replicas() {
    let mut world = World::new(&[]);
    world.add_broker(4);
    let epoch = world.partition().leader_epoch;
    assert_eq!(world.reassign(Some(&[2, 3, 4]), false), 0);
    assert_eq!(world.assignment(), (vec![2, 3, 4, 1], vec![4], vec![1], 1, vec![1, 2, 3]));
    assert_eq!(world.partition().leader_epoch, epoch, "nothing left yet: the leader stays");
    assert_eq!(world.reassign(Some(&[2, 3, 4]), false), 0, "the same target again");
    world.set_isr(&[1, 2, 3, 4]);
    assert_eq!(world.assignment(), (vec![2, 3, 4], vec![], vec![], 2, vec![2, 3, 4]));
    assert_eq!(world.partition().leader_epoch, epoch + 1);
    assert_eq!(world.reassign(None, false), 85, "nothing under way to cancel");
}

/// A reorder keeps the leader and its epoch; a shrink completes at once; a cancel reverts
/// to the replicas without the ones being added, in their order.
#[test]
fn reorders_shrinks_and_cancels_of_reassignments() {
    let mut world = World::new(&[]);
    world.add_broker(4);
    let epoch = world.partition().leader_epoch;
    assert_eq!(world.reassign(Some(&[3, 2, 1]), false), 0);
    assert_eq!(world.assignment(), (vec![3, 2, 1], vec![], vec![], 1, vec![1, 2, 3]));
    assert_eq!(world.partition().leader_epoch, epoch);
    assert_eq!(world.reassign(Some(&[2, 4, 3]), false), 0);
    assert_eq!(world.assignment(), (vec![2, 4, 3, 1], vec![4], vec![1], 1, vec![1, 2, 3]));
    assert_eq!(world.reassign(None, false), 0);
    assert_eq!(world.assignment(), (vec![2, 3, 1], vec![], vec![], 1, vec![1, 2, 3]));
    assert_eq!(world.partition().leader_epoch, epoch + 1, "4 left the replicas");
    assert_eq!(world.reassign(Some(&[2, 3]), true), 0, "a shrink");
    assert_eq!(world.assignment(), (vec![2, 3], vec![], vec![], 2, vec![2, 3]));
}

/// Kafka's refusals: INVALID_REPLICA_ASSIGNMENT for an empty, repeated or unregistered
/// target, INVALID_REPLICATION_FACTOR for a factor change v1 forbids,
/// UNKNOWN_TOPIC_OR_PARTITION; a refused partition changes nothing.
#[test]
fn reassignment_refusals() {
    let mut world = World::new(&[]);
    let before = world.assignment();
    for (target, code) in [(vec![], 39), (vec![1, 1, 2], 39), (vec![1, 2, 9], 39), (vec![1, 2], 38)]
    {
        assert_eq!(world.reassign(Some(&target), false), code, "{target:?}");
    }
    assert_eq!(world.assignment(), before);
    let asked = [("u".to_owned(), 0, None), ("t".to_owned(), 7, Some(vec![1]))];
    let (records, results) = world.controller.alter_partition_reassignments(&asked, true);
    assert!(records.is_empty());
    assert_eq!(results.iter().map(|r| r.2).collect::<Vec<_>>(), vec![3, 3]);
}

/// A preferred election gives the first replica its leadership back once it is in the ISR.
#[test]
fn a_preferred_election_moves_leadership_back_to_the_first_replica() {
    let mut world = World::new(&[]);
    assert!(world.elect(0, false).is_empty(), "not needed: left out when all are asked");
    assert_eq!(world.elect(0, true), vec![("t".to_owned(), 0, 84)]);
    world.beat(1, true);
    assert_eq!(world.partition().leader, 2);
    world.beat(1, false);
    assert_eq!(world.elect(0, true), vec![("t".to_owned(), 0, 80)], "1 is not in the ISR");
    world.set_isr(&[2, 3, 1]);
    assert_eq!(world.elect(0, false), vec![("t".to_owned(), 0, 0)]);
    assert_eq!(world.partition().leader, 1);
    let (_, unknown) = world.controller.elect_leaders(0, Some(&[("u".to_owned(), 0)])).unwrap();
    assert_eq!(unknown, vec![("u".to_owned(), 0, 3)]);
}

/// CreatePartitions with a manual assignment: one replica set per new partition, of the
/// topic's replication factor and of distinct registered brokers, the first its leader;
/// anything else is INVALID_REPLICA_ASSIGNMENT and changes nothing.
#[test]
fn create_partitions_takes_a_manual_assignment_of_the_topics_replication_factor() {
    let mut world = World::new(&[]);
    let refused = |world: &World, total: i32, sets: &[Vec<i32>]| {
        world.controller.create_partitions("t", total, Some(sets), 0).unwrap_err()
    };
    for (total, sets) in [
        (3, vec![vec![2, 3, 1]]), // two partitions added, one set
        (2, vec![vec![2, 3]]),    // not the topic's replication factor
        (2, vec![vec![2, 2, 1]]), // a broker twice
        (2, vec![vec![2, 3, 9]]), // broker 9 is not registered
    ] {
        assert_eq!(
            refused(&world, total, &sets),
            ResponseError::InvalidReplicaAssignment,
            "{total} {sets:?}"
        );
    }
    let records =
        world.controller.create_partitions("t", 3, Some(&[vec![2, 3, 1], vec![3, 1, 2]]), 0);
    world.commit(records.unwrap());
    let topic = world.controller.image().topic("t").unwrap().clone();
    let placed: Vec<(i32, Vec<i32>, Vec<i32>)> =
        topic.partitions.values().map(|p| (p.leader, p.replicas.clone(), p.isr.clone())).collect();
    assert_eq!(
        placed,
        vec![
            (1, vec![1, 2, 3], vec![1, 2, 3]),
            (2, vec![2, 3, 1], vec![2, 3, 1]),
            (3, vec![3, 1, 2], vec![3, 1, 2]),
        ]
    );
}
