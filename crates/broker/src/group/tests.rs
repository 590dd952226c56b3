//! The coordinator's rules driven directly, with a manual clock (explicit `now_ms`) and an
//! in-memory file system: joins, the initial delay, rebalances, sessions, static members,
//! offsets, persistence across restarts and crashes, and the bound on `__consumer_offsets`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::SimFs;
use seglog_storage::log::partition_log::TopicPartition;
use seglog_storage::manager::{LogManager, ManualClock};
use tokio::sync::{Notify, oneshot};

use super::store::partition_for;
use super::*;
use crate::error::NONE;

fn manager(fs: &SimFs) -> Arc<LogManager> {
    let config =
        BrokerLogConfig { log_dirs: vec![PathBuf::from("/data")], ..BrokerLogConfig::default() };
    Arc::new(
        LogManager::open(Arc::new(fs.clone()), Arc::new(ManualClock::new(0)), config).unwrap().0,
    )
}

fn coordinator(manager: &Arc<LogManager>, config: GroupConfig) -> GroupCoordinator {
    GroupCoordinator::new(Arc::clone(manager), config, Arc::new(Notify::new()))
}

/// A clean restart: the logs are shut down and opened again, with a new coordinator (not
/// loaded yet).
fn restart(
    fs: &SimFs,
    old_manager: Arc<LogManager>,
    old_coordinator: GroupCoordinator,
    config: GroupConfig,
) -> (Arc<LogManager>, GroupCoordinator) {
    old_manager.shutdown().unwrap();
    drop((old_coordinator, old_manager));
    let manager = manager(fs);
    let coordinator = coordinator(&manager, config);
    (manager, coordinator)
}

/// An offset to commit with no leader epoch and no metadata.
fn offset_to_commit(topic: &str, partition: i32, offset: i64) -> OffsetToCommit {
    OffsetToCommit {
        topic: topic.to_owned(),
        partition,
        offset,
        leader_epoch: -1,
        metadata: String::new(),
    }
}

fn small_config() -> GroupConfig {
    GroupConfig { offsets_topic_partitions: 3, ..GroupConfig::default() }
}

fn join_request(member_id: &str, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        group_id: "g".to_owned(),
        member_id: member_id.to_owned(),
        group_instance_id: None,
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 60_000,
        protocol_type: "consumer".to_owned(),
        protocols: protocols
            .iter()
            .map(|name| ((*name).to_owned(), Bytes::from(format!("meta-{name}"))))
            .collect(),
        require_known_member_id: true,
    }
}

fn ready<T>(receiver: &mut oneshot::Receiver<T>) -> Option<T> {
    receiver.try_recv().ok()
}

/// KIP-394: the first join gets an id with MEMBER_ID_REQUIRED; the second is the real join.
fn join_new(
    coordinator: &GroupCoordinator,
    now_ms: i64,
) -> (String, oneshot::Receiver<JoinResult>) {
    let mut first = coordinator.join(join_request("", &["range"]), now_ms);
    let result = ready(&mut first).expect("answered at once");
    assert_eq!(result.error_code, ResponseError::MemberIdRequired.code());
    assert!(result.member_id.starts_with("client-"), "{}", result.member_id);
    let receiver = coordinator.join(join_request(&result.member_id, &["range"]), now_ms);
    (result.member_id, receiver)
}

fn sync(
    coordinator: &GroupCoordinator,
    member_id: &str,
    generation_id: i32,
    assignments: &[(&str, &str)],
    now_ms: i64,
) -> oneshot::Receiver<SyncResult> {
    coordinator.sync(
        SyncRequest {
            group_id: "g".to_owned(),
            generation_id,
            member_id: member_id.to_owned(),
            group_instance_id: None,
            protocol_type: Some("consumer".to_owned()),
            protocol_name: Some("range".to_owned()),
            assignments: assignments
                .iter()
                .map(|(member, assignment)| {
                    ((*member).to_owned(), Bytes::from(assignment.to_string()))
                })
                .collect(),
        },
        now_ms,
    )
}

fn commit(
    coordinator: &GroupCoordinator,
    generation_id: i32,
    member_id: &str,
    offset: i64,
    now_ms: i64,
) -> Vec<i16> {
    let offsets = [OffsetToCommit {
        leader_epoch: 0,
        metadata: "m".to_owned(),
        ..offset_to_commit("t", 0, offset)
    }];
    coordinator.commit_offsets("g", generation_id, member_id, None, &offsets, now_ms)
}

fn committed(coordinator: &GroupCoordinator) -> i64 {
    let fetched = coordinator.fetch_offsets("g", Some(vec![("t".to_owned(), vec![0])])).unwrap();
    fetched[0].1[0].1.as_ref().map_or(-1, |committed| committed.offset)
}

#[test]
fn two_members_join_one_after_the_other_and_share_the_group() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let coordinator = coordinator(&manager, small_config());
    // First member: the initial delay (3 s) holds the join.
    let (m1, mut join1) = join_new(&coordinator, 0);
    coordinator.tick(2_999);
    assert!(ready(&mut join1).is_none(), "answered before group.initial.rebalance.delay.ms");
    coordinator.tick(3_000);
    let joined = ready(&mut join1).expect("answered at the end of the delay");
    assert_eq!((joined.error_code, joined.generation_id), (NONE, 1));
    assert_eq!(joined.leader, m1);
    assert_eq!(joined.members.len(), 1);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    let mut synced = sync(&coordinator, &m1, 1, &[(&m1, "all")], 3_010);
    assert_eq!(ready(&mut synced).unwrap().assignment, Bytes::from("all"));
    assert_eq!(coordinator.describe_group("g").unwrap().state, "Stable");

    // Second member: a rebalance; the first learns of it from its heartbeat.
    let (m2, mut join2) = join_new(&coordinator, 5_000);
    assert!(ready(&mut join2).is_none());
    assert_eq!(
        coordinator.heartbeat("g", 1, &m1, None, 5_100),
        ResponseError::RebalanceInProgress.code()
    );
    let mut rejoin1 = coordinator.join(join_request(&m1, &["range"]), 5_200);
    // Every member is in: the join completes at once, without waiting for a timer.
    let leader = ready(&mut rejoin1).expect("completed when all members joined");
    let follower = ready(&mut join2).expect("completed when all members joined");
    assert_eq!((leader.generation_id, follower.generation_id), (2, 2));
    assert_eq!(leader.members.len(), 2);
    assert!(follower.members.is_empty(), "only the leader gets the members");
    assert_eq!(follower.leader, m1);
    // The follower's sync waits for the leader's assignment.
    let mut follower_sync = sync(&coordinator, &m2, 2, &[], 5_300);
    assert!(ready(&mut follower_sync).is_none());
    assert_eq!(coordinator.heartbeat("g", 2, &m2, None, 5_350), NONE);
    let mut leader_sync = sync(&coordinator, &m1, 2, &[(&m1, "p0"), (&m2, "p1")], 5_400);
    assert_eq!(ready(&mut leader_sync).unwrap().assignment, Bytes::from("p0"));
    assert_eq!(ready(&mut follower_sync).unwrap().assignment, Bytes::from("p1"));
    let summary = coordinator.describe_group("g").unwrap();
    assert_eq!((summary.state, summary.members.len()), ("Stable", 2));
    assert_eq!(
        coordinator.list_groups(&[], &[]),
        vec![("g".to_owned(), "consumer".to_owned(), "Stable", "classic")]
    );

    // A member leaves: the other rejoins alone, in a new generation.
    assert_eq!(coordinator.leave("g", &[(m2.clone(), None)], 6_000), (NONE, vec![NONE]));
    assert_eq!(
        coordinator.heartbeat("g", 2, &m1, None, 6_100),
        ResponseError::RebalanceInProgress.code()
    );
    let mut alone = coordinator.join(join_request(&m1, &["range"]), 6_200);
    assert_eq!(ready(&mut alone).unwrap().generation_id, 3);
}

#[test]
fn the_initial_delay_extends_while_members_keep_coming() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let coordinator = coordinator(&manager, small_config());
    let (_, mut join1) = join_new(&coordinator, 0);
    let (_, mut join2) = join_new(&coordinator, 2_000);
    coordinator.tick(3_000);
    // A member came during the delay: it is extended by another delay.
    assert!(ready(&mut join1).is_none());
    coordinator.tick(6_000);
    let (first, second) = (ready(&mut join1).unwrap(), ready(&mut join2).unwrap());
    assert_eq!((first.generation_id, second.generation_id), (1, 1));
    assert_eq!(first.members.len() + second.members.len(), 2, "one leader sees both");
}

/// A coordinator without the initial rebalance delay, and group "g" Stable at generation 1
/// with one member (joined and synced at 0 ms), whose id is returned.
fn one_stable_member(manager: &Arc<LogManager>) -> (GroupCoordinator, String) {
    let config = GroupConfig { initial_rebalance_delay_ms: 0, ..small_config() };
    let coordinator = coordinator(manager, config);
    let (m1, mut join1) = join_new(&coordinator, 0);
    assert_eq!(ready(&mut join1).unwrap().generation_id, 1);
    let mut synced = sync(&coordinator, &m1, 1, &[(&m1, "a")], 0);
    assert!(ready(&mut synced).is_some());
    (coordinator, m1)
}

#[test]
fn expired_sessions_and_missing_rejoins_are_removed() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let (coordinator, m1) = one_stable_member(&manager);
    let (m2, mut join2) = join_new(&coordinator, 1_000);
    // m1 heartbeats but never rejoins: after the rebalance timeout (60 s from the rebalance's
    // start) m2 goes on alone.
    for now_ms in (5_000..=60_000).step_by(5_000) {
        assert_eq!(
            coordinator.heartbeat("g", 1, &m1, None, now_ms),
            ResponseError::RebalanceInProgress.code()
        );
        coordinator.tick(now_ms);
    }
    coordinator.tick(60_999);
    assert!(ready(&mut join2).is_none());
    coordinator.tick(61_000);
    let alone = ready(&mut join2).unwrap();
    assert_eq!(
        (alone.generation_id, alone.leader.as_str(), alone.members.len()),
        (2, m2.as_str(), 1)
    );
    assert_eq!(
        coordinator.heartbeat("g", 2, &m1, None, 61_001),
        ResponseError::UnknownMemberId.code()
    );
    let mut synced = sync(&coordinator, &m2, 2, &[(&m2, "a")], 61_002);
    assert!(ready(&mut synced).is_some());
    // m2 stops heartbeating: its session (10 s) ends and the group empties.
    coordinator.tick(71_002);
    assert_eq!(coordinator.describe_group("g").unwrap().state, "Stable");
    coordinator.tick(71_003);
    assert_eq!(coordinator.describe_group("g").unwrap().state, "Empty");
    assert_eq!(
        coordinator.heartbeat("g", 2, &m2, None, 71_004),
        ResponseError::UnknownMemberId.code()
    );
}

/// A session ends on its millisecond for a request that looks at the group, not at the next
/// tick (Kafka's heartbeat purgatory fires on time): DeleteGroups one millisecond after the
/// last member's session ran out deletes the group with no tick in between (librdkafka's 0081
/// deletes 6 s after closing static members with 6 s sessions).
#[test]
fn delete_groups_sees_a_session_that_ran_out_since_the_last_tick() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let (coordinator, m1) = one_stable_member(&manager);
    assert_eq!(coordinator.heartbeat("g", 1, &m1, None, 5_000), NONE);
    coordinator.tick(14_999);
    assert_eq!(coordinator.delete_group("g", 15_000), ResponseError::NonEmptyGroup.code());
    assert_eq!(coordinator.delete_group("g", 15_001), NONE, "the session (10 s) ran out at 15,000");
    assert!(coordinator.describe_group("g").is_none_or(|group| group.state == "Dead"));
}

#[test]
fn protocol_generation_and_membership_errors() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let config = GroupConfig { initial_rebalance_delay_ms: 0, ..small_config() };
    let coordinator = coordinator(&manager, config);
    let mut bad = coordinator
        .join(JoinRequest { session_timeout_ms: 5_999, ..join_request("", &["range"]) }, 0);
    assert_eq!(ready(&mut bad).unwrap().error_code, ResponseError::InvalidSessionTimeout.code());
    let mut bad = coordinator
        .join(JoinRequest { group_id: String::new(), ..join_request("", &["range"]) }, 0);
    assert_eq!(ready(&mut bad).unwrap().error_code, ResponseError::InvalidGroupId.code());
    let mut bad = coordinator.join(join_request("nobody", &["range"]), 0);
    assert_eq!(ready(&mut bad).unwrap().error_code, ResponseError::UnknownMemberId.code());
    assert!(coordinator.describe_group("g").is_none(), "a failed join leaves no group");

    let (m1, mut join1) = join_new(&coordinator, 0);
    assert_eq!(ready(&mut join1).unwrap().generation_id, 1);
    // A member with no protocol in common is refused.
    let mut other = coordinator.join(join_request("", &["roundrobin"]), 10);
    assert_eq!(
        ready(&mut other).unwrap().error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    // Commits during CompletingRebalance wait for the assignment; wrong generations fail.
    assert_eq!(
        commit(&coordinator, 1, &m1, 5, 20),
        vec![ResponseError::RebalanceInProgress.code()]
    );
    let mut synced = sync(&coordinator, &m1, 7, &[], 30);
    assert_eq!(ready(&mut synced).unwrap().error_code, ResponseError::IllegalGeneration.code());
    let mut synced = sync(&coordinator, &m1, 1, &[(&m1, "a")], 40);
    assert_eq!(ready(&mut synced).unwrap().error_code, NONE);
    assert_eq!(commit(&coordinator, 0, &m1, 5, 50), vec![ResponseError::IllegalGeneration.code()]);
    assert_eq!(
        commit(&coordinator, 1, "stranger", 5, 50),
        vec![ResponseError::UnknownMemberId.code()]
    );
    assert_eq!(commit(&coordinator, -1, "", 5, 50), vec![ResponseError::UnknownMemberId.code()]);
    assert_eq!(commit(&coordinator, 1, &m1, 5, 60), vec![NONE]);
    assert_eq!(committed(&coordinator), 5);
    let big = OffsetToCommit { metadata: "x".repeat(4097), ..offset_to_commit("t", 1, 1) };
    assert_eq!(
        coordinator.commit_offsets("g", 1, &m1, None, &[big], 70),
        vec![ResponseError::OffsetMetadataTooLarge.code()]
    );
    // A group with members cannot be deleted; its subscribed topic's offsets stay.
    assert_eq!(coordinator.delete_group("g", 80), ResponseError::NonEmptyGroup.code());
    assert_eq!(coordinator.delete_group("nope", 80), ResponseError::GroupIdNotFound.code());
    assert_eq!(
        coordinator.delete_offsets("nope", &[], 80).0,
        ResponseError::GroupIdNotFound.code()
    );
}

#[test]
fn static_members_rejoin_without_a_rebalance_and_fence_their_old_id() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let config = GroupConfig { initial_rebalance_delay_ms: 0, ..small_config() };
    let coordinator = coordinator(&manager, config);
    let static_join = |member_id: &str| JoinRequest {
        group_instance_id: Some("instance-1".to_owned()),
        ..join_request(member_id, &["range"])
    };
    // Static members skip MEMBER_ID_REQUIRED.
    let mut first = coordinator.join(static_join(""), 0);
    let joined = ready(&mut first).unwrap();
    assert_eq!((joined.error_code, joined.generation_id), (NONE, 1));
    let old_id = joined.member_id;
    let mut synced = sync(&coordinator, &old_id, 1, &[(&old_id, "mine")], 10);
    assert!(ready(&mut synced).is_some());
    // A restart of the same instance: a new member id, same generation, same assignment.
    let mut again = coordinator.join(static_join(""), 1_000);
    let rejoined = ready(&mut again).expect("no rebalance for a known static member");
    assert_eq!((rejoined.error_code, rejoined.generation_id), (NONE, 1));
    assert_ne!(rejoined.member_id, old_id);
    let mut synced = sync(&coordinator, &rejoined.member_id, 1, &[], 1_010);
    assert_eq!(ready(&mut synced).unwrap().assignment, Bytes::from("mine"));
    assert_eq!(
        coordinator.heartbeat("g", 1, &old_id, Some("instance-1"), 1_020),
        ResponseError::FencedInstanceId.code()
    );
    assert_eq!(coordinator.describe_group("g").unwrap().state, "Stable");
}

#[test]
fn offsets_and_groups_survive_a_restart_and_a_crash() {
    let fs = SimFs::new();
    let manager1 = manager(&fs);
    let config = GroupConfig { initial_rebalance_delay_ms: 0, ..small_config() };
    let coordinator1 = coordinator(&manager1, config.clone());
    // A simple (standalone) consumer commits with generation -1.
    assert_eq!(commit(&coordinator1, -1, "", 41, 0), vec![NONE]);
    assert_eq!(commit(&coordinator1, -1, "", 42, 1), vec![NONE]);
    let mut other = coordinator1
        .join(JoinRequest { group_id: "h".to_owned(), ..join_request("", &["range"]) }, 2);
    let member = ready(&mut other).unwrap().member_id;
    let mut joined = coordinator1
        .join(JoinRequest { group_id: "h".to_owned(), ..join_request(&member, &["range"]) }, 2);
    assert_eq!(ready(&mut joined).unwrap().generation_id, 1);
    let mut synced = coordinator1.sync(
        SyncRequest {
            group_id: "h".to_owned(),
            generation_id: 1,
            member_id: member.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: vec![(member.clone(), Bytes::from_static(b"a"))],
        },
        3,
    );
    assert!(ready(&mut synced).is_some());

    // A clean restart: offsets and the stable group come back.
    let (manager2, coordinator2) = restart(&fs, manager1, coordinator1, config.clone());
    assert_eq!(coordinator2.load(10).unwrap(), 2);
    assert_eq!(committed(&coordinator2), 42);
    let summary = coordinator2.describe_group("h").unwrap();
    assert_eq!((summary.state, summary.members.len()), ("Stable", 1));
    assert_eq!(summary.members[0].5, Bytes::from_static(b"a"));
    assert_eq!(coordinator2.heartbeat("h", 1, &member, None, 11), NONE);
    // Commit, flush, commit more: a power loss keeps at least the flushed commit.
    assert_eq!(commit(&coordinator2, -1, "", 50, 20), vec![NONE]);
    for log in manager2.partitions() {
        manager2.get_log(&log).unwrap().flush(21).unwrap();
    }
    assert_eq!(commit(&coordinator2, -1, "", 60, 22), vec![NONE]);
    drop((coordinator2, manager2));
    for seed in 0..8 {
        let crashed = fs.clone();
        crashed.crash(seed);
        let manager3 = manager(&crashed);
        let coordinator3 = coordinator(&manager3, config.clone());
        coordinator3.load(30).unwrap_or_else(|error| panic!("seed {seed}: {error}"));
        let offset = committed(&coordinator3);
        assert!(
            offset == 50 || offset == 60,
            "seed {seed}: committed offset went back to {offset}"
        );
        drop((coordinator3, manager3));
    }
}

/// `__consumer_offsets` is compacted by the log cleaner (no rewrite of the live state): 2,000
/// commits of one group stay within a few segments, and a replay restores the last commit.
#[test]
fn the_log_cleaner_keeps_the_offsets_topic_small_and_a_replay_restores_it() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let config = GroupConfig { offsets_topic_segment_bytes: 16 * 1024, ..small_config() };
    let coordinator = coordinator(&manager, config.clone());
    let partition = partition_for("g", 3);
    let tp = TopicPartition { topic: OFFSETS_TOPIC.to_owned(), partition };
    let mut cleaner = manager.new_cleaner();
    let mut largest = 0;
    let mut rounds = 0;
    for offset in 0..2_000 {
        assert_eq!(commit(&coordinator, -1, "", offset, offset), vec![NONE]);
        coordinator.tick(offset);
        if offset % 50 == 49
            && matches!(
                manager.clean_once(&mut cleaner, offset),
                seglog_storage::manager::CleanOutcome::Cleaned { .. }
            )
        {
            rounds += 1;
        }
        largest = largest.max(manager.get_log(&tp).unwrap().size_bytes().unwrap());
    }
    let log = manager.get_log(&tp).unwrap();
    assert!(rounds >= 5, "{rounds} cleaning rounds");
    assert!(largest <= 4 * 16 * 1024 + 4096, "grew to {largest} bytes");
    assert!(log.segment_base_offsets().unwrap().len() <= 4);
    manager.shutdown().unwrap();
    drop((coordinator, manager, log));
    let manager = self::manager(&fs);
    let coordinator = self::coordinator(&manager, config);
    coordinator.load(0).unwrap();
    assert_eq!(committed(&coordinator), 1_999);
}

#[test]
fn delete_group_and_offsets_write_tombstones() {
    let fs = SimFs::new();
    let manager1 = manager(&fs);
    let coordinator1 = coordinator(&manager1, small_config());
    assert_eq!(commit(&coordinator1, -1, "", 7, 0), vec![NONE]);
    let offsets = [offset_to_commit("u", 2, 9)];
    assert_eq!(coordinator1.commit_offsets("g", -1, "", None, &offsets, 1), vec![NONE]);
    assert_eq!(coordinator1.delete_offsets("g", &[("u".to_owned(), 2)], 2), (NONE, vec![NONE]));
    let all = coordinator1.fetch_offsets("g", None).unwrap();
    assert_eq!(all.len(), 1, "only t is left: {all:?}");
    assert_eq!(coordinator1.delete_group("g", 3), NONE);
    assert_eq!(committed(&coordinator1), -1);
    let (_manager2, coordinator2) = restart(&fs, manager1, coordinator1, small_config());
    assert_eq!(coordinator2.load(10).unwrap(), 0, "the tombstones hold after a restart");
    assert_eq!(committed(&coordinator2), -1);
}

fn consumer_heartbeat(member_id: &str, member_epoch: i32) -> ConsumerHeartbeat {
    ConsumerHeartbeat {
        group_id: "k".to_owned(),
        member_id: member_id.to_owned(),
        member_epoch,
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: if member_epoch == 0 { 30_000 } else { -1 },
        subscribed_topics: (member_epoch == 0).then(|| vec!["t".to_owned()]),
        subscribed_regex: None,
        server_assignor: None,
        owned: None,
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    }
}

fn topics(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs.iter().map(|(name, count)| ((*name).to_owned(), *count)).collect()
}

#[test]
fn consumer_protocol_members_join_reconcile_fence_and_leave() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let coordinator = coordinator(&manager, small_config());
    let meta = topics(&[("t", 4), ("other", 2)]);
    let a = coordinator.consumer_heartbeat(&consumer_heartbeat("", 0), &meta, 0);
    assert_eq!((a.error_code, a.member_epoch), (NONE, 1));
    assert_eq!(a.assignment.as_ref().map(BTreeSet::len), Some(4));
    assert_eq!(a.heartbeat_interval_ms, 5000);
    let b = coordinator.consumer_heartbeat(&consumer_heartbeat("member-b", 0), &meta, 10);
    assert_eq!((b.member_id.as_str(), b.member_epoch), ("member-b", 2));
    assert_eq!(b.assignment.as_ref().map(BTreeSet::len), Some(0), "a owns all");
    // a's next heartbeat takes two partitions away, at its old epoch.
    let a2 = coordinator.consumer_heartbeat(&consumer_heartbeat(&a.member_id, 1), &meta, 20);
    assert_eq!(a2.member_epoch, 1);
    let kept = a2.assignment.clone().expect("a changed assignment");
    assert_eq!(kept.len(), 2);
    // Unchanged since: no assignment in the answer.
    let a3 = coordinator.consumer_heartbeat(&consumer_heartbeat(&a.member_id, 1), &meta, 25);
    assert_eq!((a3.member_epoch, a3.assignment), (1, None));
    // It confirms by sending what it owns: now at epoch 2, and b gets the two freed.
    let confirm =
        ConsumerHeartbeat { owned: Some(kept.clone()), ..consumer_heartbeat(&a.member_id, 1) };
    assert_eq!(coordinator.consumer_heartbeat(&confirm, &meta, 30).member_epoch, 2);
    let b2 = coordinator.consumer_heartbeat(&consumer_heartbeat("member-b", 2), &meta, 40);
    let got = b2.assignment.expect("b's partitions");
    assert_eq!(got.len(), 2);
    assert!(got.is_disjoint(&kept));
    assert_eq!(coordinator.consumer_group_state("k"), Some(("Stable", 2)));
    // Commits carry the member epoch.
    let offsets = [offset_to_commit("t", 0, 1)];
    assert_eq!(coordinator.commit_offsets("k", 2, "member-b", None, &offsets, 41), vec![NONE]);
    assert_eq!(
        coordinator.commit_offsets("k", 1, "member-b", None, &offsets, 41),
        vec![ResponseError::StaleMemberEpoch.code()]
    );
    // An old epoch is fenced; an unknown member is unknown; a classic join is refused.
    assert_eq!(
        coordinator.consumer_heartbeat(&consumer_heartbeat("member-b", 1), &meta, 50).error_code,
        ResponseError::FencedMemberEpoch.code()
    );
    assert_eq!(
        coordinator.consumer_heartbeat(&consumer_heartbeat("stranger", 3), &meta, 50).error_code,
        ResponseError::UnknownMemberId.code()
    );
    let mut classic = coordinator
        .join(JoinRequest { group_id: "k".to_owned(), ..join_request("", &["range"]) }, 50);
    assert_eq!(
        ready(&mut classic).unwrap().error_code,
        ResponseError::InconsistentGroupProtocol.code()
    );
    assert_eq!(coordinator.delete_group("k", 50), ResponseError::NonEmptyGroup.code());
    // b leaves (epoch -1): a gets everything back at the next epoch.
    let left = coordinator.consumer_heartbeat(&consumer_heartbeat("member-b", -1), &meta, 60);
    assert_eq!((left.error_code, left.member_epoch), (NONE, -1));
    let a4 = coordinator.consumer_heartbeat(&consumer_heartbeat(&a.member_id, 2), &meta, 70);
    assert_eq!((a4.member_epoch, a4.assignment.map(|set| set.len())), (3, Some(4)));
    // a stops heartbeating: after the session timeout (45 s) the group is empty.
    coordinator.tick(45_070);
    assert_eq!(coordinator.consumer_group_state("k"), Some(("Stable", 1)));
    coordinator.tick(45_071);
    assert_eq!(coordinator.consumer_group_state("k"), Some(("Empty", 0)));
}

#[test]
fn consumer_protocol_requests_are_checked_and_patterns_follow_new_topics() {
    let fs = SimFs::new();
    let manager = manager(&fs);
    let coordinator = coordinator(&manager, small_config());
    let meta = topics(&[("orders-eu", 2), ("orders-us", 2), ("other", 1)]);
    let no_subscription =
        ConsumerHeartbeat { subscribed_topics: None, ..consumer_heartbeat("", 0) };
    assert_eq!(
        coordinator.consumer_heartbeat(&no_subscription, &meta, 0).error_code,
        ResponseError::InvalidRequest.code()
    );
    let bad_assignor = ConsumerHeartbeat {
        server_assignor: Some("sticky-ish".to_owned()),
        ..consumer_heartbeat("", 0)
    };
    assert_eq!(
        coordinator.consumer_heartbeat(&bad_assignor, &meta, 0).error_code,
        ResponseError::UnsupportedAssignor.code()
    );
    let bad_regex = ConsumerHeartbeat {
        subscribed_regex: Some("orders-(".to_owned()),
        ..consumer_heartbeat("", 0)
    };
    assert_eq!(
        coordinator.consumer_heartbeat(&bad_regex, &meta, 0).error_code,
        ResponseError::InvalidRegularExpression.code()
    );
    // A classic group with members is not a consumer group.
    let mut joined = coordinator.join(
        JoinRequest {
            group_id: "k".to_owned(),
            require_known_member_id: false,
            ..join_request("", &["range"])
        },
        0,
    );
    assert!(ready(&mut joined).is_none(), "initial delay");
    assert_eq!(
        coordinator.consumer_heartbeat(&consumer_heartbeat("", 0), &meta, 1).error_code,
        ResponseError::GroupIdNotFound.code()
    );

    let by_pattern = ConsumerHeartbeat {
        group_id: "p".to_owned(),
        subscribed_topics: None,
        subscribed_regex: Some("orders-.*".to_owned()),
        server_assignor: Some("range".to_owned()),
        ..consumer_heartbeat("", 0)
    };
    let first = coordinator.consumer_heartbeat(&by_pattern, &meta, 2);
    assert_eq!(first.error_code, NONE);
    let names: Vec<String> =
        first.assignment.unwrap().into_iter().map(|(t, p)| format!("{t}-{p}")).collect();
    assert_eq!(names, ["orders-eu-0", "orders-eu-1", "orders-us-0", "orders-us-1"]);
    // A topic created later that matches is picked up by the next heartbeat.
    let grown = topics(&[("orders-eu", 2), ("orders-us", 2), ("orders-jp", 1), ("other", 1)]);
    let next = coordinator.consumer_heartbeat(
        &ConsumerHeartbeat {
            group_id: "p".to_owned(),
            ..consumer_heartbeat(&first.member_id, first.member_epoch)
        },
        &grown,
        3,
    );
    assert_eq!(next.member_epoch, first.member_epoch + 1);
    assert_eq!(next.assignment.map(|set| set.len()), Some(5));
}

#[test]
fn groups_holding_nothing_are_cleaned_up() {
    let fs = SimFs::new();
    let manager1 = manager(&fs);
    let config = GroupConfig { initial_rebalance_delay_ms: 0, ..small_config() };
    let coordinator1 = coordinator(&manager1, config.clone());
    // A member id handed out and never used: gone after its session timeout.
    let mut first = coordinator1
        .join(JoinRequest { group_id: "ghost".to_owned(), ..join_request("", &["range"]) }, 0);
    assert_eq!(ready(&mut first).unwrap().error_code, ResponseError::MemberIdRequired.code());
    coordinator1.tick(5_000);
    assert!(coordinator1.describe_group("ghost").is_some());
    coordinator1.tick(10_001);
    assert!(coordinator1.describe_group("ghost").is_none());
    // A group that had a generation and no offsets: removed (with a tombstone) by the
    // retention check, which runs every 10 minutes.
    let (member, mut join) = join_new(&coordinator1, 20_000);
    assert_eq!(ready(&mut join).unwrap().generation_id, 1);
    assert_eq!(coordinator1.leave("g", &[(member, None)], 20_001).0, NONE);
    assert_eq!(coordinator1.describe_group("g").unwrap().state, "Empty");
    coordinator1.tick(600_000);
    assert!(coordinator1.describe_group("g").is_some(), "not before the check");
    coordinator1.tick(610_001);
    assert!(coordinator1.describe_group("g").is_none());
    let (_manager2, coordinator2) = restart(&fs, manager1, coordinator1, config);
    assert_eq!(coordinator2.load(0).unwrap(), 0, "the tombstone holds after a restart");
}

#[test]
fn a_failed_classic_join_leaves_an_empty_consumer_group_as_replay_would() {
    let fs = SimFs::new();
    let manager1 = manager(&fs);
    let coordinator1 = coordinator(&manager1, small_config());
    let meta = topics(&[("t", 4)]);
    // A KIP-848 group whose only member left: empty, its epoch kept in its records.
    let a = coordinator1.consumer_heartbeat(&consumer_heartbeat("member-a", 0), &meta, 0);
    let leave = consumer_heartbeat("member-a", -1);
    assert_eq!(coordinator1.consumer_heartbeat(&leave, &meta, 1).error_code, NONE);
    assert_eq!(a.member_epoch, 1);
    assert_eq!(coordinator1.consumer_group_state("k"), Some(("Empty", 0)));
    // A classic JoinGroup with a member id the group does not know fails; the group stays.
    let mut join = coordinator1
        .join(JoinRequest { group_id: "k".to_owned(), ..join_request("stranger", &["range"]) }, 2);
    assert_eq!(ready(&mut join).unwrap().error_code, ResponseError::UnknownMemberId.code());
    assert_eq!(coordinator1.consumer_group_state("k"), Some(("Empty", 0)));
    coordinator1.tick(3);
    assert_eq!(coordinator1.consumer_group_state("k"), Some(("Empty", 0)));
    // A restart replays the same group.
    let (_manager2, coordinator2) = restart(&fs, manager1, coordinator1, small_config());
    assert_eq!(coordinator2.load(10).unwrap(), 1);
    assert_eq!(coordinator2.consumer_group_state("k"), Some(("Empty", 0)));
}

#[test]
fn consumer_protocol_groups_survive_a_restart_in_kafkas_records() {
    let fs = SimFs::new();
    let manager1 = manager(&fs);
    manager1.create_topic("t", 4, BTreeMap::new()).unwrap();
    let coordinator1 = coordinator(&manager1, small_config());
    let meta = topics(&[("t", 4)]);
    let a = coordinator1.consumer_heartbeat(&consumer_heartbeat("member-a", 0), &meta, 0);
    let b = coordinator1.consumer_heartbeat(&consumer_heartbeat("member-b", 0), &meta, 1);
    let a2 =
        coordinator1.consumer_heartbeat(&consumer_heartbeat("member-a", a.member_epoch), &meta, 2);
    let kept = a2.assignment.unwrap();
    let confirm =
        ConsumerHeartbeat { owned: Some(kept.clone()), ..consumer_heartbeat("member-a", 1) };
    assert_eq!(coordinator1.consumer_heartbeat(&confirm, &meta, 3).member_epoch, 2);
    let b2 =
        coordinator1.consumer_heartbeat(&consumer_heartbeat("member-b", b.member_epoch), &meta, 4);
    assert_eq!(b2.assignment.as_ref().map(BTreeSet::len), Some(2));
    let offsets = [offset_to_commit("t", 1, 9)];
    assert_eq!(coordinator1.commit_offsets("k", 2, "member-b", None, &offsets, 5), vec![NONE]);

    let (manager2, coordinator2) = restart(&fs, manager1, coordinator1, small_config());
    assert_eq!(coordinator2.load(100).unwrap(), 1);
    assert_eq!(coordinator2.consumer_group_state("k"), Some(("Stable", 2)));
    {
        let inner = coordinator2.lock();
        let consumer = inner.groups["k"].consumer.as_ref().unwrap();
        assert_eq!((consumer.group_epoch, consumer.assignment_epoch), (2, 2));
        assert_eq!(consumer.members["member-a"].assigned, kept);
        assert_eq!(consumer.members["member-b"].assigned, b2.assignment.clone().unwrap());
    }
    // The members go on at their epochs, without rejoining; nothing moves.
    let a3 = coordinator2.consumer_heartbeat(&consumer_heartbeat("member-a", 2), &meta, 101);
    assert_eq!((a3.error_code, a3.member_epoch), (NONE, 2));
    assert_eq!(
        a3.assignment,
        Some(kept),
        "the first answer after a restart carries the assignment"
    );
    let fetched = coordinator2.fetch_offsets("k", Some(vec![("t".to_owned(), vec![1])])).unwrap();
    assert_eq!(fetched[0].1[0].1.as_ref().map(|c| c.offset), Some(9));
    // Leaving writes tombstones: after another restart only member-a is there.
    coordinator2.consumer_heartbeat(&consumer_heartbeat("member-b", -1), &meta, 102);
    let (_manager3, coordinator3) = restart(&fs, manager2, coordinator2, small_config());
    coordinator3.load(200).unwrap();
    let inner = coordinator3.lock();
    let consumer = inner.groups["k"].consumer.as_ref().unwrap();
    assert_eq!(consumer.members.keys().collect::<Vec<_>>(), ["member-a"]);
    assert_eq!(consumer.group_epoch, 3);
}
