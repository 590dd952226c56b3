//! Seeded simulations of the coordinator with model clients.
//!
//! KIP-848: up to five members join, heartbeat (reporting what they own, or nothing), change
//! subscriptions, leave, or go silent, while time jumps and topics grow. After every step no
//! partition is held (assigned or pending revocation) by two members, and no two members the
//! coordinator knows at their current epoch believe they own the same partition. When the
//! chaos stops and the live members keep heartbeating, the group becomes Stable with every
//! subscribed partition owned exactly once.
//!
//! Classic: members join (two-step ids), sync, heartbeat, leave or go silent; every JoinGroup
//! and SyncGroup that waits is answered once the clients stop and time passes, and a member
//! that is answered Stable has the generation the group has.
//!
//! Reproduce a failure with `SEED=<n> ITERATIONS=1 cargo test -p seglog-broker group_sim`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use seglog_storage::config::BrokerLogConfig;
use seglog_storage::io::SimFs;
use seglog_storage::manager::{LogManager, ManualClock};
use seglog_storage::testing::Rng;
use tokio::sync::{Notify, oneshot};

use super::classic::group::GroupState;
use super::*;
use crate::error::NONE;

/// A coordinator with Kafka's default timings and one partition of `__consumer_offsets` (the
/// simulation is about membership).
fn coordinator() -> (GroupCoordinator, Arc<LogManager>) {
    let config = GroupConfig { offsets_topic_partitions: 1, ..GroupConfig::default() };
    let fs = SimFs::new();
    let log_config =
        BrokerLogConfig { log_dirs: vec![PathBuf::from("/data")], ..BrokerLogConfig::default() };
    let manager = Arc::new(
        LogManager::open(Arc::new(fs), Arc::new(ManualClock::new(0)), log_config).unwrap().0,
    );
    (GroupCoordinator::new(Arc::clone(&manager), config, Arc::new(Notify::new())), manager)
}

fn runs(name: &str, steps: usize, run: fn(u64, usize)) {
    let seed = std::env::var("SEED").ok().and_then(|s| s.parse().ok());
    let iterations: u64 =
        std::env::var("ITERATIONS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let start = seed.unwrap_or(1);
    for seed in start..start + iterations {
        if let Err(panic) = std::panic::catch_unwind(|| run(seed, steps)) {
            eprintln!("{name} failed: SEED={seed} ITERATIONS=1 cargo test -p seglog-broker {name}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// A KIP-848 client as librdkafka behaves: it owns what the last assignment said, reports it
/// when it changed, and rejoins from nothing when fenced or unknown.
#[derive(Debug, Default, Clone)]
struct Client {
    member_id: String,
    epoch: i32,
    owned: BTreeSet<Partition>,
    report_owned: bool,
    joined: bool,
    silent: bool,
    topics: Vec<String>,
}

fn heartbeat(
    coordinator: &GroupCoordinator,
    client: &mut Client,
    topics: &BTreeMap<String, i32>,
    send_owned: bool,
    now_ms: i64,
) {
    let joining = !client.joined;
    let request = ConsumerHeartbeat {
        group_id: "sim".to_owned(),
        member_id: client.member_id.clone(),
        member_epoch: if joining { 0 } else { client.epoch },
        instance_id: None,
        rack_id: None,
        rebalance_timeout_ms: if joining { 30_000 } else { -1 },
        subscribed_topics: Some(client.topics.clone()),
        subscribed_regex: None,
        server_assignor: None,
        owned: (send_owned || client.report_owned).then(|| client.owned.clone()),
        client_id: "sim".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    };
    let result = coordinator.consumer_heartbeat(&request, topics, now_ms);
    if result.error_code == NONE {
        client.joined = true;
        client.member_id = result.member_id;
        client.epoch = result.member_epoch;
        client.report_owned = false;
        if let Some(assignment) = result.assignment {
            client.report_owned = assignment != client.owned;
            client.owned = assignment;
        }
    } else {
        assert!(
            [ResponseError::FencedMemberEpoch.code(), ResponseError::UnknownMemberId.code()]
                .contains(&result.error_code),
            "unexpected error {} {:?}",
            result.error_code,
            result.error_message
        );
        *client = Client { topics: client.topics.clone(), ..Client::default() };
    }
}

fn check_consumer_invariants(coordinator: &GroupCoordinator, clients: &[Client], context: &str) {
    let inner = coordinator.lock();
    let Some(consumer) = inner.groups.get("sim").and_then(|group| group.consumer.as_ref()) else {
        return;
    };
    let mut held: BTreeMap<&Partition, &str> = BTreeMap::new();
    for member in consumer.members.values() {
        for partition in member.assigned.iter().chain(&member.pending_revocation) {
            if let Some(other) = held.insert(partition, &member.member_id) {
                panic!("{context}: {partition:?} held by {other} and {}", member.member_id);
            }
        }
    }
    let mut believed: BTreeMap<&Partition, &str> = BTreeMap::new();
    for client in clients.iter().filter(|client| client.joined) {
        let current = consumer
            .members
            .get(&client.member_id)
            .is_some_and(|member| member.member_epoch == client.epoch);
        if !current {
            continue;
        }
        for partition in &client.owned {
            if let Some(other) = believed.insert(partition, &client.member_id) {
                panic!(
                    "{context}: {partition:?} owned by clients {other} and {}",
                    client.member_id
                );
            }
        }
    }
}

fn run_consumer(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let (coordinator, _manager) = coordinator();
    let mut topics: BTreeMap<String, i32> = [("t".to_owned(), 6), ("u".to_owned(), 3)].into();
    let mut clients: Vec<Client> = (0..5)
        .map(|idx| Client {
            member_id: format!("m{idx}"),
            topics: if idx % 2 == 0 { vec!["t".into()] } else { vec!["t".into(), "u".into()] },
            silent: true,
            ..Client::default()
        })
        .collect();
    let mut now_ms = 0;
    for step in 0..steps {
        let idx = usize::try_from(rng.below(5)).unwrap_or(0);
        let client = &mut clients[idx];
        match rng.below(12) {
            0..=6 if !client.silent => {
                let send_owned = rng.below(3) == 0;
                heartbeat(&coordinator, client, &topics, send_owned, now_ms);
            }
            7 => {
                client.silent = false;
                if !client.joined {
                    heartbeat(&coordinator, client, &topics, false, now_ms);
                }
            }
            8 if client.joined => {
                let request = ConsumerHeartbeat {
                    group_id: "sim".to_owned(),
                    member_id: client.member_id.clone(),
                    member_epoch: -1,
                    instance_id: None,
                    rack_id: None,
                    rebalance_timeout_ms: -1,
                    subscribed_topics: None,
                    subscribed_regex: None,
                    server_assignor: None,
                    owned: None,
                    client_id: "sim".to_owned(),
                    client_host: "/127.0.0.1".to_owned(),
                };
                coordinator.consumer_heartbeat(&request, &topics, now_ms);
                *client =
                    Client { topics: client.topics.clone(), silent: true, ..Client::default() };
                client.member_id = format!("m{idx}-{step}");
            }
            9 => client.silent = true,
            10 => {
                client.topics = if client.topics.len() == 1 {
                    vec!["t".into(), "u".into()]
                } else {
                    vec!["u".into()]
                };
            }
            _ => {
                now_ms += i64::try_from(rng.below(20_000)).unwrap_or(0);
                if rng.below(10) == 0 {
                    *topics.entry("u".to_owned()).or_insert(3) += 1;
                }
                coordinator.tick(now_ms);
            }
        }
        check_consumer_invariants(&coordinator, &clients, &format!("seed {seed} step {step}"));
    }
    // Calm: every live client heartbeats, reporting what it owns, until the group settles.
    for client in &mut clients {
        client.silent = client.silent && !client.joined;
    }
    for round in 0..20 {
        now_ms += 1_000;
        coordinator.tick(now_ms);
        for client in clients.iter_mut().filter(|client| !client.silent) {
            heartbeat(&coordinator, client, &topics, true, now_ms);
        }
        check_consumer_invariants(
            &coordinator,
            &clients,
            &format!("seed {seed} calm round {round}"),
        );
    }
    check_settled(&coordinator, &topics, seed);
}

/// After the calm: Stable, every subscribed partition owned once, and (with one subscription
/// everywhere) members within one partition of each other.
fn check_settled(coordinator: &GroupCoordinator, topics: &BTreeMap<String, i32>, seed: u64) {
    let inner = coordinator.lock();
    let Some(consumer) = inner.groups.get("sim").and_then(|group| group.consumer.as_ref()) else {
        return;
    };
    if consumer.members.is_empty() {
        return;
    }
    assert_eq!(consumer.state(), "Stable", "seed {seed}: not stable after the calm");
    let subscribed: BTreeSet<&String> =
        consumer.members.values().flat_map(|member| &member.resolved_topics).collect();
    let expected: usize =
        subscribed.iter().map(|topic| usize::try_from(topics[*topic]).unwrap_or(0)).sum();
    let owned: usize = consumer.members.values().map(|member| member.assigned.len()).sum();
    assert_eq!(owned, expected, "seed {seed}: every subscribed partition owned once");
    // With the same subscription everywhere, members end within one partition of each other.
    let first = consumer.members.values().next().map(|member| &member.resolved_topics);
    if consumer.members.values().all(|member| Some(&member.resolved_topics) == first) {
        let sizes: Vec<usize> = consumer.members.values().map(|m| m.assigned.len()).collect();
        let (least, most) = (sizes.iter().min(), sizes.iter().max());
        assert!(
            most.zip(least).is_some_and(|(most, least)| most - least <= 1),
            "seed {seed}: {sizes:?}"
        );
    }
}

#[test]
fn group_sim_consumer_protocol() {
    runs("group_sim_consumer_protocol", 300, run_consumer);
}

/// A classic client: it answers MEMBER_ID_REQUIRED by rejoining, syncs after a join (the
/// leader assigns every member something), and rejoins when told to.
#[derive(Debug, Default)]
struct ClassicClient {
    member_id: String,
    generation: i32,
    join: Option<oneshot::Receiver<JoinResult>>,
    sync: Option<oneshot::Receiver<SyncResult>>,
    active: bool,
}

fn classic_join(
    coordinator: &GroupCoordinator,
    member_id: &str,
    now_ms: i64,
) -> oneshot::Receiver<JoinResult> {
    coordinator.join(
        JoinRequest {
            group_id: "classic".to_owned(),
            member_id: member_id.to_owned(),
            group_instance_id: None,
            client_id: "sim".to_owned(),
            client_host: "/127.0.0.1".to_owned(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 20_000,
            protocol_type: "consumer".to_owned(),
            protocols: vec![("range".to_owned(), Bytes::from_static(b"m"))],
            require_known_member_id: true,
        },
        now_ms,
    )
}

/// Drives one client by what its pending requests answered.
fn classic_step(coordinator: &GroupCoordinator, client: &mut ClassicClient, now_ms: i64) {
    if let Some(result) = client.join.as_mut().and_then(|join| join.try_recv().ok()) {
        client.join = None;
        match ResponseError::try_from_code(result.error_code) {
            None => {
                client.member_id = result.member_id.clone();
                client.generation = result.generation_id;
                let assignments = result
                    .members
                    .iter()
                    .map(|(member, _, _)| (member.clone(), Bytes::from(member.clone())))
                    .collect();
                client.sync = Some(coordinator.sync(
                    SyncRequest {
                        group_id: "classic".to_owned(),
                        generation_id: result.generation_id,
                        member_id: result.member_id,
                        group_instance_id: None,
                        protocol_type: None,
                        protocol_name: None,
                        assignments,
                    },
                    now_ms,
                ));
            }
            Some(ResponseError::MemberIdRequired) => {
                client.member_id = result.member_id;
                client.join = Some(classic_join(coordinator, &client.member_id, now_ms));
            }
            _ => {
                client.member_id.clear();
                client.join = Some(classic_join(coordinator, "", now_ms));
            }
        }
        return;
    }
    if let Some(result) = client.sync.as_mut().and_then(|sync| sync.try_recv().ok()) {
        client.sync = None;
        if result.error_code != NONE {
            let member_id = client.member_id.clone();
            client.join = Some(classic_join(coordinator, &member_id, now_ms));
        }
        return;
    }
    if client.join.is_none() && client.sync.is_none() {
        let code =
            coordinator.heartbeat("classic", client.generation, &client.member_id, None, now_ms);
        match ResponseError::try_from_code(code) {
            None => {}
            Some(ResponseError::RebalanceInProgress | ResponseError::IllegalGeneration) => {
                let member_id = client.member_id.clone();
                client.join = Some(classic_join(coordinator, &member_id, now_ms));
            }
            _ => {
                client.member_id.clear();
                client.join = Some(classic_join(coordinator, "", now_ms));
            }
        }
    }
}

fn run_classic(seed: u64, steps: usize) {
    let mut rng = Rng(seed);
    let (coordinator, _manager) = coordinator();
    let mut clients: Vec<ClassicClient> = (0..4).map(|_| ClassicClient::default()).collect();
    let mut now_ms = 0;
    for _ in 0..steps {
        let client = &mut clients[usize::try_from(rng.below(4)).unwrap_or(0)];
        match rng.below(10) {
            0..=5 if client.active => classic_step(&coordinator, client, now_ms),
            6 if !client.active => {
                client.active = true;
                client.join = Some(classic_join(&coordinator, "", now_ms));
            }
            7 if client.active && rng.below(3) == 0 => {
                if !client.member_id.is_empty() {
                    coordinator.leave("classic", &[(client.member_id.clone(), None)], now_ms);
                }
                *client = ClassicClient::default();
            }
            8 => client.active = false,
            _ => {
                now_ms += i64::try_from(rng.below(4_000)).unwrap_or(0);
                coordinator.tick(now_ms);
            }
        }
    }
    // Calm: active clients keep going; silent ones are expired. Every wait ends.
    for client in &mut clients {
        if !client.active {
            client.join = None;
            client.sync = None;
        }
    }
    for _ in 0..200 {
        now_ms += 500;
        coordinator.tick(now_ms);
        for client in clients.iter_mut().filter(|client| client.active) {
            classic_step(&coordinator, client, now_ms);
        }
    }
    let waiting =
        clients.iter().filter(|c| c.active && (c.join.is_some() || c.sync.is_some())).count();
    assert_eq!(waiting, 0, "seed {seed}: requests still waiting after the calm");
    let active = clients.iter().filter(|client| client.active).count();
    let inner = coordinator.lock();
    if active > 0 {
        let group = inner.groups.get("classic").unwrap_or_else(|| panic!("seed {seed}: no group"));
        assert_eq!(group.state, GroupState::Stable, "seed {seed}");
        assert_eq!(group.members.len(), active, "seed {seed}: only live members remain");
        for client in clients.iter().filter(|client| client.active) {
            assert_eq!(client.generation, group.generation_id, "seed {seed}");
            let member = group.members.get(&client.member_id).expect("a member");
            assert_eq!(member.assignment, Bytes::from(client.member_id.clone()), "seed {seed}");
        }
    }
}

#[test]
fn group_sim_classic_protocol() {
    runs("group_sim_classic_protocol", 300, run_classic);
}
